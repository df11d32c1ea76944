//! `--resume FILE`: the study a results file keeps ([`SweepStudy`], typed
//! by `results`) against the one this command line describes. Alone it
//! continues the study in FILE; given with a different study it is
//! refused, naming each setting that differs, so one file never mixes two
//! studies.

use super::SweepArgs;
use crate::error::{Error, Result};
use crate::results::study::{Study, SweepStudy};
use std::path::Path;

/// The study stored in a results file (its first record that has one).
fn stored_study(path: &Path) -> Option<Study> {
    let records = crate::results::file::read(path).ok()?;
    records.records.into_iter().find_map(|r| r.study)
}

/// A stored study, typed. Files from before typed studies kept the
/// command line's arguments: those are read once, by the CLI's own parser
/// (the conversion of schema 1 on read).
fn stored_settings(path: &Path, study: &Study, defaults: &SweepStudy) -> Result<SweepStudy> {
    let unreadable = |why: String| {
        Error::Usage(format!(
            "--resume {}: the stored study does not read: {why}",
            path.display()
        ))
    };
    if let Some(settings) = SweepStudy::read(study, defaults) {
        return settings.map_err(unreadable);
    }
    let Study::Args(args) = study else {
        return Err(unreadable("no settings".into()));
    };
    let argv = ["membw", "sweep"].into_iter().map(String::from);
    let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(argv.chain(args.iter().cloned()))
        .map_err(|e| unreadable(e.kind().to_string()))?;
    match cli.command {
        crate::cli::Command::Sweep(args) => args.study(),
        _ => Err(unreadable("not a sweep".into())),
    }
}

impl SweepArgs {
    /// The study these flags describe, as results files keep it: every
    /// field that defines the points. The two types name the same
    /// settings (a study refuses a setting it does not know), which the
    /// test below holds for every flag.
    pub(crate) fn study(&self) -> Result<SweepStudy> {
        SweepStudy::from_settings(self)
            .map_err(|e| Error::Runtime(format!("membw's sweep flags and its study differ: {e}")))
    }

    /// The flags a stored study stands for (where results go and how they
    /// are shown: their defaults).
    pub(crate) fn from_study(study: &SweepStudy) -> Result<SweepArgs> {
        study
            .settings()
            .map_err(|e| Error::Runtime(format!("a study does not read as sweep flags: {e}")))
    }
}

/// A sweep given with `--resume FILE`: the study to run. With no study
/// settings of its own (`membw sweep --resume FILE`, presentation flags
/// aside) it is FILE's; with the same study as FILE's, its own; with
/// another, refused.
pub(crate) fn resumed(path: &Path, given: SweepArgs, defaults: &SweepArgs) -> Result<SweepArgs> {
    let Some(stored) = stored_study(path) else {
        // A file from before studies were stored: points alone decide.
        return Ok(given);
    };
    let defaults = defaults.study()?;
    let there = stored_settings(path, &stored, &defaults)?;
    let here = given.study()?;
    if here == defaults {
        return Ok(given.with_study_of(SweepArgs::from_study(&there)?));
    }
    let differ: Vec<String> = here
        .differences(&there)
        .into_iter()
        .map(|d| {
            format!(
                "--{} {} here, {} in the file",
                d.setting.replace('_', "-"),
                d.here,
                d.there
            )
        })
        .collect();
    if differ.is_empty() {
        return Ok(given);
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

    fn parsed(args: &[&str]) -> SweepArgs {
        let argv = ["membw", "sweep"].iter().chain(args);
        match <crate::cli::Cli as clap::Parser>::try_parse_from(argv) {
            Ok(crate::cli::Cli {
                command: crate::cli::Command::Sweep(args),
                ..
            }) => args,
            Ok(_) => panic!("not a sweep"),
            Err(e) => panic!("{e}"),
        }
    }

    /// Every setting of a sweep's flags is a setting of its typed study
    /// and back: a flag added to one and not the other fails here (and
    /// `study()` names it).
    #[test]
    fn the_flags_and_the_typed_study_name_the_same_settings() {
        for line in [
            &[][..],
            &[
                "--threads", "1,2", "--threads", "4", "--strategy", "compact,spread", "--smt",
            ],
            &[
                "--cpus", "0-1", "--cpus", "2", "--mem", "bind:0", "--stores", "nt,regular",
            ],
            &[
                "--places", "{0}:2:1", "--bind", "close", "--ntimes", "4", "--repeat", "3",
            ],
            &[
                "--sizes", "1MiB,2MiB", "--kernels", "triad,dot", "--hugepages", "never,thp",
            ],
            &[
                "--numa-matrix", "both", "--backend", "sim:1", "--isa", "scalar",
            ],
            &[
                "--far-share", "0,25", "--far-node", "1", "--exec", "membw", "-o", "x.jsonl",
            ],
        ] {
            let args = parsed(line);
            let study = args.study().unwrap();
            let again = SweepArgs::from_study(&study).unwrap().study().unwrap();
            assert_eq!(again, study, "{line:?}");
        }
        let study = parsed(&["--threads", "1,2", "--kernels", "copy", "--size", "2M"])
            .study()
            .unwrap();
        assert_eq!(study.threads, ["1,2"]);
        assert_eq!(study.kernels, [crate::kernels::KernelId::Copy]);
        // Where results go is not part of the study.
        let elsewhere = parsed(&["-o", "y.jsonl", "--format", "jsonl"])
            .study()
            .unwrap();
        assert_eq!(elsewhere, parsed(&[]).study().unwrap());
    }
}
