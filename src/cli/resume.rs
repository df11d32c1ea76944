//! A sweep's study, as its results file remembers it: the arguments that
//! define the points (axes, sizes, kernels, stores, repeats), without
//! where the results go or how the summary is shown. `--resume FILE` alone
//! continues the study in FILE; given with a different study it is
//! refused, naming what differs, so one file never mixes two studies.

use crate::error::{Error, Result};
use clap::CommandFactory;
use std::collections::BTreeMap;
use std::path::Path;

/// Flags that say where results go or how they are shown, with whether
/// they take a value: not part of the study.
const NOT_STUDY: [(&str, bool); 5] = [
    ("--resume", true),
    ("--output", true),
    ("-o", true),
    ("--format", true),
    ("--markdown", false),
];

/// The study's arguments among a sweep's (everything after `sweep`).
pub(crate) fn study_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let flag = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
        match NOT_STUDY.iter().find(|(f, _)| *f == flag) {
            Some((_, takes_value)) => {
                if *takes_value && !a.contains('=') {
                    it.next();
                }
            }
            None => out.push(a.clone()),
        }
    }
    out
}

/// The arguments after `sweep` in this process's command line.
pub(crate) fn sweep_args() -> Vec<String> {
    let all: Vec<String> = std::env::args().collect();
    let at = all
        .iter()
        .position(|a| a == "sweep")
        .map_or(all.len(), |i| i + 1);
    all[at..].to_vec()
}

/// The study stored in a results file (its first record that has one).
pub(crate) fn stored_study(path: &Path) -> Option<Vec<String>> {
    let records = crate::results::file::read(path).ok()?;
    records.records.into_iter().find_map(|r| r.study)
}

/// Every study setting of a sweep command line, defaults included, by
/// flag: what two studies are compared on.
fn settings(study: &[String]) -> Result<BTreeMap<String, Vec<String>>> {
    let argv = ["membw", "sweep"]
        .into_iter()
        .map(String::from)
        .chain(study.iter().cloned());
    let command = super::Cli::command();
    // Arguments only: flattened structs also show up as groups of them.
    let arguments: Vec<String> = command
        .find_subcommand("sweep")
        .map(|c| c.get_arguments().map(|a| a.get_id().to_string()).collect())
        .unwrap_or_default();
    let matches = command
        .try_get_matches_from(argv)
        .map_err(|e| Error::Usage(format!("the stored study does not parse: {}", e.kind())))?;
    let Some(("sweep", m)) = matches.subcommand() else {
        return Ok(BTreeMap::new());
    };
    Ok(m.ids()
        .filter(|id| arguments.iter().any(|a| a == id.as_str()))
        .filter_map(|id| {
            let raw = m.try_get_raw(id.as_str()).ok()??;
            let values = raw.map(|v| v.to_string_lossy().into_owned()).collect();
            Some((id.as_str().replace('_', "-"), values))
        })
        .collect())
}

/// Checks a sweep given with `--resume FILE` against the study in FILE.
/// Returns the study arguments to run: FILE's when none were given.
pub(crate) fn check(path: &Path, given: &[String]) -> Result<Option<Vec<String>>> {
    let Some(stored) = stored_study(path) else {
        // A file from before studies were stored: points alone decide.
        return Ok(None);
    };
    let given = study_args(given);
    if given.is_empty() {
        return Ok(Some(stored));
    }
    let (here, there) = (settings(&given)?, settings(&stored)?);
    let keys: std::collections::BTreeSet<&String> = here.keys().chain(there.keys()).collect();
    let none = Vec::new();
    let differ: Vec<String> = keys
        .into_iter()
        .filter_map(|k| {
            let (a, b) = (here.get(k).unwrap_or(&none), there.get(k).unwrap_or(&none));
            (a != b).then(|| {
                let show = |v: &Vec<String>| {
                    if v.is_empty() {
                        "(none)".to_string()
                    } else {
                        v.join(",")
                    }
                };
                format!("--{k} {} here, {} in the file", show(a), show(b))
            })
        })
        .collect();
    if differ.is_empty() {
        return Ok(None);
    }
    Err(Error::Usage(format!(
        "--resume {}: a different study ({}); continue the file's with `membw sweep --resume {}` alone, or write this one to a new file with -o",
        path.display(),
        differ.join("; "),
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn where_results_go_is_not_part_of_the_study() {
        let args = strings(&[
            "--threads",
            "1,2",
            "--resume",
            "f.jsonl",
            "-o",
            "x",
            "--format=jsonl",
            "--markdown",
            "--repeat",
            "3",
        ]);
        assert_eq!(
            study_args(&args),
            strings(&["--threads", "1,2", "--repeat", "3"])
        );
    }

    #[test]
    fn studies_compare_with_their_defaults() {
        let a = settings(&strings(&["--threads", "1", "--repeat", "1"])).unwrap();
        let b = settings(&strings(&["--threads", "1"])).unwrap();
        assert_eq!(a, b, "--repeat 1 is the default");
        let c = settings(&strings(&["--threads", "2"])).unwrap();
        assert_ne!(a.get("threads"), c.get("threads"));
    }
}
