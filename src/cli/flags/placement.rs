//! Where threads run: one definition of each placement flag. `run`,
//! `exec` and `place` measure one placement (`cli::args::PlacementArgs`
//! takes exactly one value of one of them); `sweep` measures each value
//! as a point (`cli::axes::PlacementAxes`). One list convention: repeat a
//! flag for several values; `--strategy`, whose values never hold a comma,
//! also takes them comma-separated.

use crate::error::{Error, Result};
use crate::placement::omp::Bind;
use clap::Args;

#[derive(Args, Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct PlacementFlags {
    /// Number of threads [default: OMP_NUM_THREADS, else one per physical core of the allowed
    /// CPUs, or one per place]; sweep: counts as 1-12, 1,2,4,8,16, 2-16:2, or cores (1 to all),
    /// repeat to join lists
    #[arg(long, allow_negative_numbers = true, help_heading = "Placement")]
    #[serde(default)]
    pub(crate) threads: Vec<String>,

    /// compact, spread, per-socket=K, per-numa=K, per-l3=K, stride=S, or unpinned (threads not
    /// bound: the scheduler's placement; sweep: several, comma-separated or repeated, e.g.
    /// spread,unpinned side by side)
    #[arg(long, value_delimiter = ',', help_heading = "Placement")]
    #[serde(default)]
    pub(crate) strategy: Vec<String>,

    /// Leave the threads unbound, as an OpenMP program with OMP_PROC_BIND=false (or no binding)
    /// runs: the scheduler places and moves them, and the record says how often each moved. The
    /// same as --strategy unpinned; OMP_PROC_BIND=false in the environment asks for it too
    #[arg(long, help_heading = "Placement")]
    #[serde(default)]
    pub(crate) no_pin: bool,

    /// CPUs to pin thread 0, 1, ... to, in order (0,2,4-10:2; sweep: one list per flag, repeat
    /// for several)
    #[arg(long, help_heading = "Placement")]
    #[serde(default)]
    pub(crate) cpus: Vec<String>,

    /// OpenMP places: '{0}:64:2', '{0:4}:8:4', '{0,1},{2,3}', cores, sockets(1), ll_caches,
    /// numa_domains (sweep: repeat for several)
    #[arg(long, help_heading = "Placement")]
    #[serde(default)]
    pub(crate) places: Vec<String>,

    /// OMP_PROC_BIND for --places (every --places of a sweep): close, spread, primary (master)
    #[arg(long, requires = "places", value_parser = parse_bind, help_heading = "Placement")]
    pub(crate) bind: Option<Bind>,

    /// likwid-pin expression: N:0-23, S0:0-7@S1:0-7, M1:0-3, C0:0-3, E:N:8:1:2, M:scatter
    /// (sweep: repeat for several)
    #[arg(long, help_heading = "Placement")]
    #[serde(default)]
    pub(crate) pin: Vec<String>,

    /// GNU libgomp's GOMP_CPU_AFFINITY list: '0 2 4-10:2' (sweep: repeat for several)
    #[arg(long, value_name = "LIST", help_heading = "Placement")]
    #[serde(default)]
    pub(crate) gomp_affinity: Vec<String>,

    /// Intel's KMP_AFFINITY: compact, scatter, 'granularity=fine,explicit,proclist=[0,2,4]', with
    /// permute and offset (sweep: repeat for several)
    #[arg(long, value_name = "SPEC", help_heading = "Placement")]
    #[serde(default)]
    pub(crate) kmp_affinity: Vec<String>,
}

/// The flags that say where threads run, as clap names their arguments.
pub(crate) const WHERE: [&str; 7] = [
    "no_pin", "cpus", "places", "pin", "strategy", "gomp_affinity", "kmp_affinity",
];

/// `--no-pin`, as the strategy it stands for.
pub(crate) const UNPINNED: &str = "unpinned";

pub(crate) fn parse_bind(text: &str) -> std::result::Result<Bind, String> {
    Bind::parse(text).ok_or_else(|| format!("unknown binding '{text}' (close, spread, primary)"))
}

/// One value, or none, of a flag that a single placement takes once.
fn one<'a>(flag: &str, values: &'a [String]) -> Result<Option<&'a str>> {
    match values {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        many => Err(Error::Usage(format!(
            "--{flag} {}: one placement here; membw sweep --{flag} measures each",
            many.join(&format!(" --{flag} "))
        ))),
    }
}

impl PlacementFlags {
    /// The one value of each placement flag, for a command that measures
    /// one placement.
    pub(crate) fn single(&self) -> Result<SinglePlacement<'_>> {
        let threads = one("threads", &self.threads)?
            .map(|t| {
                super::super::values::parse_threads(t)
                    .map_err(|e| Error::Usage(format!("--threads '{t}': {e}")))
            })
            .transpose()?;
        Ok(SinglePlacement {
            threads,
            strategy: match self.strategy.as_slice() {
                [] if self.no_pin => Some(UNPINNED),
                [] => None,
                [one] => Some(one),
                many => {
                    return Err(Error::Usage(format!(
                        "--strategy '{}': one placement here; membw sweep --strategy {} measures several",
                        many.join(","),
                        many.join(",")
                    )));
                }
            },
            cpus: one("cpus", &self.cpus)?,
            places: one("places", &self.places)?,
            pin: one("pin", &self.pin)?,
            gomp_affinity: one("gomp-affinity", &self.gomp_affinity)?,
            kmp_affinity: one("kmp-affinity", &self.kmp_affinity)?,
            bind: self.bind,
        })
    }
}

/// The placement flags of a command that measures one placement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SinglePlacement<'a> {
    pub(crate) threads: Option<u32>,
    pub(crate) strategy: Option<&'a str>,
    pub(crate) cpus: Option<&'a str>,
    pub(crate) places: Option<&'a str>,
    pub(crate) pin: Option<&'a str>,
    pub(crate) gomp_affinity: Option<&'a str>,
    pub(crate) kmp_affinity: Option<&'a str>,
    pub(crate) bind: Option<Bind>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(f: impl FnOnce(&mut PlacementFlags)) -> PlacementFlags {
        let mut flags = PlacementFlags::default();
        f(&mut flags);
        flags
    }

    #[test]
    fn a_single_placement_takes_one_value_and_points_to_sweep_for_more() {
        let two_pins = flags(|f| f.pin = vec!["N:0".into(), "N:1".into()]);
        let e = two_pins.single().unwrap_err().to_string();
        assert!(
            e.contains("--pin N:0 --pin N:1: one placement here; membw sweep"),
            "{e}"
        );
        let e = flags(|f| f.strategy = vec!["compact".into(), "spread".into()])
            .single()
            .unwrap_err()
            .to_string();
        assert!(e.contains("membw sweep --strategy compact,spread"), "{e}");
        let e = flags(|f| f.threads = vec!["1,2".into()])
            .single()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--threads '1,2'") && e.contains("membw sweep --threads 1,2"),
            "{e}"
        );
        let one = flags(|f| (f.threads, f.cpus) = (vec!["4".into()], vec!["0-3".into()]));
        let single = one.single().unwrap();
        assert_eq!((single.threads, single.cpus), (Some(4), Some("0-3")));
    }
}
