//! A sweep's study, as its results file remembers it: `SweepArgs`
//! serialized (every field that defines the points, typed, defaults
//! included; where results go and how they are shown are `serde(skip)`).
//! `--resume FILE` alone continues the study in FILE; given with a
//! different study it is refused, naming each setting that differs, so
//! one file never mixes two studies.

use super::sweep::SweepArgs;
use crate::error::{Error, Result};
use crate::results::settings::Study;
use std::path::Path;

/// The study stored in a results file (its first record that has one).
fn stored_study(path: &Path) -> Option<Study> {
    let records = crate::results::file::read(path).ok()?;
    records.records.into_iter().find_map(|r| r.study)
}

/// The settings of a stored study. Files from before typed studies kept
/// the command line's arguments: those are read once, by the CLI's own
/// parser (the conversion of schema 1 on read).
fn stored_settings(path: &Path, study: &Study, defaults: &SweepArgs) -> Result<SweepArgs> {
    let unreadable = |why: String| {
        Error::Usage(format!(
            "--resume {}: the stored study does not read: {why}",
            path.display()
        ))
    };
    // A setting added since the file was written takes today's default.
    let study = &study.over(&Study::of(defaults));
    match (study.settings::<SweepArgs>(), study) {
        (Some(settings), _) => settings.map_err(unreadable),
        (None, Study::Args(args)) => {
            let argv = ["membw", "sweep"].into_iter().map(String::from);
            let cli =
                <super::Cli as clap::Parser>::try_parse_from(argv.chain(args.iter().cloned()))
                    .map_err(|e| unreadable(e.kind().to_string()))?;
            match cli.command {
                super::Command::Sweep(args) => Ok(args),
                _ => Err(unreadable("not a sweep".into())),
            }
        }
        (None, Study::Settings(_)) => Err(unreadable("no settings".into())),
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
    let there = stored_settings(path, &stored, defaults)?;
    let here = Study::of(&given);
    if here == Study::of(defaults) {
        return Ok(given.with_study_of(there));
    }
    let differ: Vec<String> = here
        .differences(&Study::of(&there))
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
