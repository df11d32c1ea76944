//! What every command of the CLI shares: reading the topology, reading a
//! result document given on the command line, writing to stdout, wording
//! file errors, progress, and the notes a study ends with (trust, unused
//! arrays). Signals live in `signals.rs`, `--backend` in `flags/`; commands
//! import these from here, never from each other.

use crate::engine::Job;
use crate::error::{Error, Result};
use crate::kernels::KernelId;
use crate::results::RunResult;
use crate::results::file::FileError;
use crate::results::read::{self, Document};
use crate::topology::Topology;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) use super::signals::{signal_name, stop_flag, with_weights};
pub(crate) use super::writing::{check_png, check_writable, write_atomic, write_file, write_plots};

/// Reads the machine (or a fixture tree) and warns about impossible contents.
pub(crate) fn read_topology(sysroot: Option<&PathBuf>) -> Result<Topology> {
    let topo = read_topology_quietly(sysroot)?;
    for w in &topo.warnings {
        crate::say!("membw: warning: {w}");
    }
    Ok(topo)
}

pub(crate) fn read_topology_quietly(sysroot: Option<&PathBuf>) -> Result<Topology> {
    match sysroot {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(Error::Usage(format!(
                    "--sysroot {}: not a directory",
                    dir.display()
                )));
            }
            Topology::read(dir).map_err(|e| Error::Usage(format!("--sysroot: {e}")))
        }
        None => Topology::live().map_err(Error::Runtime),
    }
}

/// Writes what a command printed; a closed pipe (`| head`) is not an error.
pub(crate) fn print(out: impl AsRef<[u8]>) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_ref()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::Runtime(format!("writing to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// Words a results-file error for the flag that named the file.
pub(crate) fn file_error(e: FileError, flag: &str) -> Error {
    match e {
        FileError::Exists(p) => Error::Usage(format!(
            "{flag} {}: already exists; to add the missing points to it use --resume {}, else choose another file",
            p.display(),
            p.display()
        )),
        other => match input_file_error(other) {
            Error::Usage(why) => Error::Usage(format!("{flag} {why}")),
            system => system,
        },
    }
}

/// Reads a result document named on the command line: a run document or a
/// results file of either kind. A torn last line is left out with a
/// warning; what cannot be read ends in one line naming the file (exit 2,
/// or 1 when the system failed to read a file that is there).
pub(crate) fn read_document(path: &Path) -> Result<Document> {
    let read = read::read(path).map_err(input_file_error)?;
    if let Some(line) = read.torn {
        crate::say!(
            "membw: warning: {}: line {line} is cut short (a crash or full disk while writing); using the {} complete records",
            path.display(),
            read.document.len()
        );
    }
    Ok(read.document)
}

/// A file the user named that cannot be opened or read: their input (exit
/// 2) where the path is at fault (missing, not a directory on the way, a
/// link loop, no permission, read-only), unless the system failed to read
/// a file that is there (exit 1).
pub(crate) fn input_file_error(e: FileError) -> Error {
    use std::io::ErrorKind;
    match &e {
        FileError::Io(_, io)
            if !(matches!(
                io.kind(),
                ErrorKind::NotFound
                    | ErrorKind::PermissionDenied
                    | ErrorKind::IsADirectory
                    | ErrorKind::NotADirectory
                    | ErrorKind::ReadOnlyFilesystem
                    | ErrorKind::InvalidFilename
            ) || io.raw_os_error() == Some(libc::ELOOP)) =>
        {
            Error::Runtime(e.to_string())
        }
        _ => Error::Usage(e.to_string()),
    }
}

pub(crate) fn progress(total: u64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:28.cyan/blue}] {pos}/{len} runs · ETA {eta} · {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

pub(crate) fn run_message(job: &Job, r: &RunResult) -> String {
    let (k, v) = r
        .best_gb_s
        .get_key_value(&KernelId::Triad)
        .or_else(|| r.best_gb_s.iter().next())
        .map_or(("-".to_string(), 0.0), |(k, v)| (k.to_string(), *v));
    format!("{} → {k} {v:.1} GB/s", job.label)
}

/// Refuses a program that cannot be started, before anything runs.
pub(crate) fn check_program(name: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let candidates: Vec<std::path::PathBuf> = if name.contains('/') {
        vec![name.into()]
    } else {
        std::env::var("PATH")
            .unwrap_or_default()
            .split(':')
            .map(|d| Path::new(d).join(name))
            .collect()
    };
    let Some(found) = candidates.iter().find(|p| p.is_file()) else {
        return Err(Error::Usage(format!("{name}: no such program")));
    };
    let mode = std::fs::metadata(found)
        .map(|m| m.permissions().mode())
        .unwrap_or(0);
    if mode & 0o111 == 0 {
        return Err(Error::Usage(format!("{}: not executable", found.display())));
    }
    Ok(())
}

/// The document in `format` (`--format`, which offers the formats that
/// render the command's documents; `report` reads several kinds, and not
/// every format renders each: the user asked for one that does not).
pub(crate) fn render_as(
    format: crate::report::view::Format,
    doc: &crate::report::view::View,
) -> Result<Vec<u8>> {
    use crate::report::export::{EXPORTERS, exporter};
    let missing = || {
        // Only on the way out: which formats render it, by rendering it.
        let fit: Vec<&str> = (EXPORTERS.iter())
            .filter(|e| e.commands().contains(&doc.command()) && e.export(doc).is_some())
            .map(|e| e.format().name())
            .collect();
        Error::Usage(format!(
            "--format {format}: membw {} has no {format} form for {} (it has {})",
            doc.command(),
            doc.what(),
            fit.join(", ")
        ))
    };
    let exporter = exporter(format).ok_or_else(missing)?;
    exporter.export(doc).unwrap_or_else(|| Err(missing()))
}

/// Warns when `--mem` gives a policy to an array no kernel of the run
/// uses (`d=` without striad): the user may think it applies.
pub(crate) fn note_unused_arrays(mem: &str, used: &[crate::kernels::ArrayId]) {
    for id in crate::memory::written::named_arrays(mem) {
        if !used.contains(&id) {
            crate::say!(
                "membw: warning: --mem '{mem}' gives array {} a policy, but no kernel of this run uses it (d is striad's; a, b, c the others')",
                id.name()
            );
        }
    }
}

/// One line on the points measured this time that cannot be trusted for
/// the study's kernel (no run of it trusted), or that had runs left out,
/// with the first one's finding; none when every run of every point is.
pub(crate) fn trust_summary(records: &[crate::results::Record]) -> Option<String> {
    let kernel = crate::report::study::primary_kernel(records)?;
    let judged: Vec<_> = (records.iter())
        .map(|r| (r, r.kernel_trust(kernel)))
        .filter(|(_, t)| !t.whole())
        .collect();
    let (first, trust) = judged.first()?;
    let untrusted = judged.iter().filter(|(_, t)| t.none()).count();
    let partly = judged.len() - untrusted;
    let mut counts = Vec::new();
    if untrusted > 0 {
        counts.push(format!(
            "NOT TRUSTED for {kernel}: {untrusted} of {} points measured this time",
            records.len()
        ));
    }
    if partly > 0 {
        counts.push(format!(
            "{} with runs left out of their figures",
            crate::units::plural(partly, "point")
        ));
    }
    Some(format!(
        "{} (their records carry interference.findings); {}: {}",
        counts.join("; "),
        first.point.label(),
        trust.doubt.as_deref().unwrap_or("")
    ))
}

/// `sweep --dry-run`, `tune --dry-run`: every point's plan, nothing run.
pub(crate) fn print_plan(
    command: &str,
    topo: &crate::topology::Topology,
    sysroot: Option<&PathBuf>,
    jobs: &[&crate::engine::Job],
) -> Result<()> {
    let view = crate::report::plan::PlanView {
        command,
        topo,
        node: sysroot.map_or("this node".into(), |d| d.display().to_string()),
        placement: None,
        jobs: jobs
            .iter()
            .map(|j| crate::report::plan::PlannedJob {
                label: j.label.clone(),
                plan: &j.plan,
                stores_reason: String::new(),
            })
            .collect(),
        reproduce: None,
    };
    print(crate::report::plan::render(&view))
}

/// `run -o FILE`, opened before anything is measured: a new file, or an
/// existing one to append to (a torn last line from a crash is dropped
/// first). The run becomes one record, the same shape as a sweep's, so
/// that `report` and `compare` read it.
pub(crate) fn open_run_output(
    path: &std::path::Path,
) -> Result<crate::results::append::ResultsFile> {
    use crate::results::append::ResultsFile;
    use crate::results::file::parse_record;
    let (mut file, torn) =
        ResultsFile::open_or_create(path, |text| parse_record(text).map(|r| r.point.key()))
            .map_err(|e| file_error(e, "--output"))?;
    if let Some(line) = torn {
        crate::say!(
            "membw: {}: dropped line {line}, cut short by an earlier crash or full disk",
            path.display()
        );
    }
    for notice in file.notices.drain(..) {
        crate::say!("membw: {}: {notice}", path.display());
    }
    Ok(file)
}
