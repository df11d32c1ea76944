//! Writing what the user asked for: plots (SVG, PNG), files replaced at
//! once (a reader never sees half of one), and the checks, before any
//! measurement, that the destination can be written.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// A plot as PNG, twice its SVG size.
#[cfg(feature = "png")]
fn png_of(plot: &crate::report::Plot) -> Result<Vec<u8>> {
    crate::report::png::render(&plot.svg, 2.0)
        .map_err(|e| Error::Runtime(format!("rendering {} as PNG: {e}", plot.file)))
}

#[cfg(not(feature = "png"))]
fn png_of(_: &crate::report::Plot) -> Result<Vec<u8>> {
    Err(png_missing())
}

/// Refuses `--png` in a build without the `png` feature, before anything
/// is read.
pub(crate) fn check_png(asked: bool) -> Result<()> {
    if asked && !cfg!(feature = "png") {
        return Err(png_missing());
    }
    Ok(())
}

fn png_missing() -> Error {
    Error::Usage(
        "--png: this membw was built without PNG output (cargo build --release, whose default features include png)".into(),
    )
}

/// Writes a report's plots into `dir` (created if missing) as SVG, and as
/// PNG beside them when asked; says where they went.
pub(crate) fn write_plots(dir: &Path, plots: &[crate::report::Plot], png: bool) -> Result<()> {
    if plots.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::Runtime(format!("{}: {e}", dir.display())))?;
    for p in plots {
        write_file(&dir.join(&p.file), p.svg.as_bytes())?;
        if png {
            write_file(&dir.join(&p.file).with_extension("png"), &png_of(p)?)?;
        }
    }
    crate::say!(
        "membw: {} in {}",
        crate::units::plural(plots.len(), "plot"),
        dir.display()
    );
    Ok(())
}

/// Refuses, before anything is measured, an output the command could not
/// write at the end: an existing baseline, anything but a regular file
/// (`--prom /dev/null` as root would otherwise turn the device into a
/// file), or a directory that is missing or not writable.
pub(crate) fn check_writable(path: &Path, flag: &str, replace: bool) -> Result<()> {
    let target = regular_destination(path, flag)?;
    if !replace && target.exists() {
        return Err(Error::Usage(format!(
            "{flag} {}: already exists; remove it or choose another file",
            path.display()
        )));
    }
    let dir = parent_dir(&target);
    let probe = dir.join(format!(".membw-probe-{}", std::process::id()));
    match create_new(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(Error::Usage(format!(
            "{flag} {}: cannot write in {}: {e}",
            path.display(),
            dir.display()
        ))),
    }
}

/// Where a file written by replacement goes: `path` itself, or the file a
/// symbolic link at `path` names (the link is kept). Anything there that
/// is not a regular file (a device, a FIFO, a socket, a directory) is
/// refused: replacing it would destroy it.
pub(crate) fn regular_destination(path: &Path, flag: &str) -> Result<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(t) => t,
            // A dangling link: the new file takes the link's place.
            Err(_) => return Ok(path.to_path_buf()),
        },
        _ => path.to_path_buf(),
    };
    let kind = match std::fs::metadata(&target) {
        Ok(m) if m.is_file() => return Ok(target),
        Err(_) => return Ok(target),
        Ok(m) => {
            let t = m.file_type();
            if t.is_dir() {
                "a directory"
            } else if t.is_char_device() {
                "a character device"
            } else if t.is_block_device() {
                "a block device"
            } else if t.is_fifo() {
                "a FIFO"
            } else if t.is_socket() {
                "a socket"
            } else {
                "a special file"
            }
        }
    };
    Err(Error::Usage(format!(
        "{flag} {}: is {kind}, not a regular file; give the path of a file to write",
        path.display()
    )))
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A new file, never one that is there already (nor whatever a link at
/// that name points to).
fn create_new(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

/// Replaces `path` at once with `bytes`: written to a temporary file in
/// the same directory, flushed, then renamed over it, so that a reader
/// (node_exporter, a health checker) never sees half a file, and a crash
/// leaves the old one. Only a regular file is ever replaced (through a
/// link, the file it names): what is at `path` is looked at again just
/// before the rename, since the measurement took time. `flag` names the
/// destination in the error.
pub(crate) fn write_atomic(path: &Path, flag: &str, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let target = regular_destination(path, flag)?;
    let name = target
        .file_name()
        .map_or("membw".into(), |n| n.to_string_lossy().into_owned());
    let tmp = target.with_file_name(format!(".{name}.tmp.{}", std::process::id()));
    let fail = |e: std::io::Error| Error::Runtime(format!("{flag} {}: {e}", path.display()));
    let written = create_new(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    let replaced = written.map_err(fail).and_then(|()| {
        regular_destination(path, flag)?;
        std::fs::rename(&tmp, &target).map_err(fail)
    });
    if replaced.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    replaced
}

/// Writes a file the user asked for; a failure names it (exit 1).
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::Runtime(format!("{}: {e}", path.display())))
}
