//! Value parsers for flags several commands share: page sizes, kernels,
//! output formats. Each error names the bad value and the choices.

use crate::kernels::KernelId;
use crate::memory::Hugepages;
use crate::report::export::formats_for;
use crate::report::view::Format;

/// `--hugepages` values: `auto`, `thp`, `never`, `2M`, `1G`.
pub(crate) fn parse_hugepages(text: &str) -> std::result::Result<Hugepages, String> {
    Hugepages::parse(text)
        .ok_or_else(|| format!("unknown page size '{text}' (auto, thp, never, 2M, 1G)"))
}

pub(crate) fn parse_kernel(name: &str) -> std::result::Result<KernelId, String> {
    KernelId::parse(name).ok_or_else(|| {
        let names: Vec<&str> = crate::kernels::KERNELS.iter().map(|k| k.name).collect();
        format!("unknown kernel '{name}' (choose from {})", names.join(", "))
    })
}

/// `--kernels`: kernel and group names, comma-separated; each kernel once,
/// in the kernel table's order (the order the plan runs them in, so that
/// records of `copy,triad` and `triad,copy` have one key).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub(crate) struct KernelList(pub(crate) Vec<KernelId>);

pub(crate) fn parse_kernel_list(text: &str) -> std::result::Result<KernelList, String> {
    let mut kernels = Vec::new();
    for name in text.split(',') {
        kernels.extend(crate::kernels::parse_selection(name).ok_or_else(|| {
            format!(
                "unknown kernel or group '{}' (choose from {}; membw kernels lists their loops and bytes)",
                name.trim(),
                crate::kernels::selection_names()
            )
        })?);
    }
    kernels.sort();
    kernels.dedup();
    Ok(KernelList(kernels))
}

/// `--format`'s values: the formats `command` has a form for, as `--help`
/// lists them and as a typed [`Format`].
pub(crate) fn format_parser(command: &str) -> FormatParser {
    FormatParser(formats_for(command))
}

/// The formats one `--format` takes; every format until
/// `cli::per_command` narrows it to its command's.
#[derive(Clone)]
pub(crate) struct FormatParser(Vec<Format>);

impl FormatParser {
    pub(crate) fn any() -> FormatParser {
        FormatParser(Format::ALL.to_vec())
    }
}

impl clap::builder::TypedValueParser for FormatParser {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<Format, clap::Error> {
        let names: Vec<&str> = self.0.iter().map(|f| f.name()).collect();
        let name = clap::builder::PossibleValuesParser::new(names).parse_ref(cmd, arg, value)?;
        Format::from_name(&name.to_ascii_lowercase())
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.0
                .iter()
                .map(|f| clap::builder::PossibleValue::new(f.name())),
        ))
    }
}

/// A whole number in `min..=max` counting `what`. Clap's line already names
/// the flag and the value as typed; this says what is accepted.
pub(crate) fn count(
    text: &str,
    what: &str,
    min: u32,
    max: u32,
) -> std::result::Result<u32, String> {
    let accepted = if max == u32::MAX {
        format!("a whole number of {what}, {min} or more")
    } else {
        format!("a whole number of {what} from {min} to {max}")
    };
    match text.trim().parse::<u64>() {
        Ok(n) if (u64::from(min)..=u64::from(max)).contains(&n) => Ok(n as u32),
        Ok(_) => Err(format!("out of range: {accepted}")),
        Err(_) => Err(format!("expected {accepted}")),
    }
}

/// `run`'s (and `exec`'s) `--threads`: one count; a list or range is a
/// study, pointed to `sweep`.
pub(crate) fn parse_threads(text: &str) -> std::result::Result<u32, String> {
    count(text, "threads", 1, u32::MAX).map_err(|e| {
        if text.contains([',', '-', ':']) && !text.trim_start().starts_with('-') {
            format!("{e}; to measure several thread counts, membw sweep --threads {text}")
        } else {
            e
        }
    })
}

/// `--array-size`: one size; a list is sweep's (as working sets).
pub(crate) fn parse_one_array_size(
    text: &str,
) -> std::result::Result<crate::units::ArraySize, String> {
    if text.contains(',') {
        let groups: Vec<&str> = text.trim().split(',').collect();
        let thousands = groups[0].len() <= 3
            && groups
                .iter()
                .all(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()))
            && groups[1..].iter().all(|g| g.len() == 3);
        if thousands {
            return Err(format!(
                "'{text}' has thousands separators: write {}",
                groups.concat()
            ));
        }
        let each = groups.join(" ");
        return Err(format!(
            "one size per array here; to measure several: for s in {each}; do membw run --size $s -o sizes.jsonl; done (then membw report sizes.jsonl)"
        ));
    }
    crate::units::parse_array_size(text)
}

/// `--ntimes` of `run`, `sweep` and `tune`: the first repetition is not
/// counted, so at least 2.
/// `baseline --rounds`.
pub(crate) fn parse_rounds(text: &str) -> std::result::Result<u32, String> {
    count(text, "rounds", 1, 100)
}

/// `--repeat` of `sweep`, `tune` and `exec`: independent runs.
pub(crate) fn parse_runs(text: &str) -> std::result::Result<u32, String> {
    count(text, "runs", 1, u32::MAX)
}

/// `--channels`: memory channels per socket.
pub(crate) fn parse_channels(text: &str) -> std::result::Result<u32, String> {
    count(text, "memory channels per socket", 1, 64)
}

/// `--mts`: the DIMMs' transfer rate, a bare number or with `MT/s`
/// (`3200`, `3200MT/s`). MHz is refused: DDR's clock is half its transfer
/// rate, and tools disagree on which they print.
pub(crate) fn parse_mts(text: &str) -> std::result::Result<u32, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let number = lower
        .strip_suffix("mt/s")
        .or_else(|| lower.strip_suffix("mts"))
        .unwrap_or(&lower)
        .trim();
    if lower.ends_with("mhz") {
        return Err(
            "give the transfer rate in MT/s, not MHz (3200 for DDR4-3200; `dmidecode -t memory` prints it as Speed)".into(),
        );
    }
    count(number, "MT/s (3200 for DDR4-3200)", 100, 100_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_say_what_they_accept() {
        assert_eq!(parse_threads("8"), Ok(8));
        assert_eq!(
            parse_threads("1-2").unwrap_err(),
            "expected a whole number of threads, 1 or more; to measure several thread counts, membw sweep --threads 1-2"
        );
        assert_eq!(
            parse_threads("0").unwrap_err(),
            "out of range: a whole number of threads, 1 or more"
        );
        assert_eq!(
            parse_threads("-3").unwrap_err(),
            "expected a whole number of threads, 1 or more"
        );
        assert_eq!(parse_mts("3200"), Ok(3200));
        assert_eq!(parse_mts("4800 MT/s"), Ok(4800));
        assert!(parse_mts("3200MHz").unwrap_err().contains("not MHz"));
        assert!(parse_mts("32").unwrap_err().contains("from 100 to 100000"));
        assert_eq!(parse_rounds("1"), Ok(1));
        assert!(parse_channels("0").is_err() && parse_runs("0").is_err());
    }
}

/// `--cpunode`: one definition for every command that places threads
/// (run, tune's measure, sweep's every point).
#[derive(clap::Args, Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct CpuNodeArg {
    /// Only CPUs of these NUMA nodes, like numactl --cpunodebind
    #[arg(long, value_name = "NODES", help_heading = "Placement")]
    pub(crate) cpunode: Option<String>,
}

impl CpuNodeArg {
    /// The node set it names, parsed (the topology checks it later).
    pub(crate) fn nodes(&self) -> crate::error::Result<Option<crate::topology::cpulist::IdSet>> {
        self.cpunode
            .as_ref()
            .map(|t| {
                crate::topology::cpulist::parse_list(t)
                    .map(crate::topology::cpulist::IdSet::new)
                    .map_err(|e| crate::error::Error::Usage(format!("--cpunode '{t}': {e}")))
            })
            .transpose()
    }
}

/// More than this per working set says nothing new and takes minutes.
const MAX_WORKING_SET: u64 = 64 << 30;
/// Points (or curves) a working-set axis may have in all.
const MAX_WORKING_SETS: usize = 64;

/// `--working-sets` (sweep's and latency's axis): one flag's sizes,
/// parsed and bounded; a range doubles from its first to its last.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WorkingSets(pub(crate) Vec<u64>);

pub(crate) fn parse_working_sets(text: &str) -> std::result::Result<WorkingSets, String> {
    let sizes = crate::engine::sweep::parse_sizes(text)?;
    if let Some(&bad) = sizes
        .iter()
        .find(|&&s| !(128..=MAX_WORKING_SET).contains(&s))
    {
        return Err(format!(
            "{}: each working set must be between 128 B and {}",
            crate::units::Bytes(bad),
            crate::units::Bytes(MAX_WORKING_SET)
        ));
    }
    if sizes.len() > MAX_WORKING_SETS {
        return Err(format!("at most {MAX_WORKING_SETS} working sets"));
    }
    Ok(WorkingSets(sizes))
}

impl WorkingSets {
    /// Every flag's sizes, in order: the axis (repeats join, as for every axis).
    pub(crate) fn joined(lists: &[WorkingSets]) -> crate::error::Result<Vec<u64>> {
        let all: Vec<u64> = lists.iter().flat_map(|l| l.0.iter().copied()).collect();
        if all.len() > MAX_WORKING_SETS {
            return Err(crate::error::Error::Usage(format!(
                "--working-sets: {} working sets in all; at most {MAX_WORKING_SETS}",
                all.len()
            )));
        }
        Ok(all)
    }
}

/// A stored study keeps the working-set axis as one list of bytes (null
/// when there is none), however many flags gave it.
pub(crate) mod working_sets_joined {
    use super::WorkingSets;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(lists: &[WorkingSets], s: S) -> Result<S::Ok, S::Error> {
        let all: Vec<u64> = lists.iter().flat_map(|l| l.0.iter().copied()).collect();
        match all.is_empty() {
            true => s.serialize_none(),
            false => s.collect_seq(all),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<WorkingSets>, D::Error> {
        Ok(Option::<Vec<u64>>::deserialize(d)?
            .filter(|v| !v.is_empty())
            .map(|v| vec![WorkingSets(v)])
            .unwrap_or_default())
    }
}

/// A typographic character a web page or a word processor put in place of
/// a plain one (`“{0}”`, `0–3`): the character, its name and what to type.
pub(crate) fn typographic(text: &str) -> Option<(char, &'static str, &'static str)> {
    const TABLE: [(char, &str, &str); 9] = [
        ('\u{2018}', "LEFT SINGLE QUOTATION MARK", "' (or no quote)"),
        ('\u{2019}', "RIGHT SINGLE QUOTATION MARK", "' (or no quote)"),
        ('\u{201C}', "LEFT DOUBLE QUOTATION MARK", "\" (or no quote)"),
        (
            '\u{201D}',
            "RIGHT DOUBLE QUOTATION MARK",
            "\" (or no quote)",
        ),
        ('\u{2013}', "EN DASH", "-"),
        ('\u{2014}', "EM DASH", "-"),
        ('\u{2212}', "MINUS SIGN", "-"),
        ('\u{00A0}', "NO-BREAK SPACE", "a space"),
        ('\u{2009}', "THIN SPACE", "a space"),
    ];
    text.chars().find_map(|c| {
        TABLE
            .iter()
            .find(|(t, _, _)| *t == c)
            .map(|&(t, name, plain)| (t, name, plain))
    })
}

/// The one-line error for a typographic character in `what` (a flag or
/// a variable) whose value is `text`.
pub(crate) fn typographic_error(what: &str, text: &str) -> Option<String> {
    let (c, name, plain) = typographic(text)?;
    Some(format!(
        "{what} '{text}': '{c}' (U+{:04X} {name}) is a typographic character, pasted from a web page or a word processor: type {plain} instead",
        c as u32
    ))
}

#[cfg(test)]
mod typographic_tests {
    #[test]
    fn pasted_quotes_and_dashes_are_named_and_plain_text_passes() {
        let e = super::typographic_error("OMP_PLACES", "\u{201C}{0}:2\u{201D}").unwrap();
        assert!(
            e.contains("U+201C LEFT DOUBLE QUOTATION MARK") && e.contains("type \""),
            "{e}"
        );
        let e = super::typographic_error("--cpus", "0\u{2013}3").unwrap();
        assert!(e.contains("U+2013 EN DASH") && e.contains("type -"), "{e}");
        assert!(super::typographic_error("--cpus", "0-3,'x'").is_none());
    }
}
