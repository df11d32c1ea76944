//! Results files: JSON Lines, one [`Record`] per line, appended and flushed
//! as each point completes so that a crash loses nothing that completed.

use super::{Record, SCHEMA_VERSION};
use std::collections::HashSet;
use std::fmt;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

/// The longest line a results file may hold; a record is a few kB.
const MAX_LINE: u64 = 16 << 20;

/// Why a results file could not be used.
#[derive(Debug)]
pub enum FileError {
    /// A new results file would overwrite an existing one.
    Exists(PathBuf),
    Io(PathBuf, std::io::Error),
    /// A line that is not a record.
    NotARecord {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A FIFO, a device or a directory: nothing membw should read or append to.
    NotAFile(PathBuf),
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Exists(p) => write!(f, "{}: already exists", p.display()),
            FileError::NotAFile(p) => write!(f, "{}: not a regular file", p.display()),
            FileError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            FileError::NotARecord {
                path,
                line,
                message,
            } => write!(
                f,
                "{}: line {line} is not a membw result record: {message}",
                path.display()
            ),
        }
    }
}

/// The records of a results file, and what was wrong with its end.
#[derive(Debug, Default)]
pub struct Records {
    pub records: Vec<Record>,
    /// The last line, cut short by a crash or a full disk: its number and
    /// its byte offset (where the complete lines end).
    pub torn: Option<(usize, u64)>,
}

fn regular_file(path: &Path) -> Result<std::fs::File, FileError> {
    let meta = std::fs::metadata(path).map_err(|e| FileError::Io(path.to_path_buf(), e))?;
    if !meta.is_file() {
        return Err(FileError::NotAFile(path.to_path_buf()));
    }
    std::fs::File::open(path).map_err(|e| FileError::Io(path.to_path_buf(), e))
}

/// Reads a results file. A line that is not a record is an error naming
/// it, unless it is the last one and has no newline: a write cut short,
/// reported in [`Records::torn`]. Records of another schema version are
/// refused.
pub fn read(path: &Path) -> Result<Records, FileError> {
    let lines = read_lines(path, parse_record)?;
    Ok(Records {
        records: lines.items,
        torn: lines.torn,
    })
}

/// The items of a JSON Lines file of any record type.
#[derive(Debug)]
pub struct Lines<T> {
    pub items: Vec<T>,
    /// As [`Records::torn`].
    pub torn: Option<(usize, u64)>,
}

/// [`read`] for any record type: `parse` turns one line into one item.
pub fn read_lines<T>(
    path: &Path,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Lines<T>, FileError> {
    let io = |e| FileError::Io(path.to_path_buf(), e);
    let mut reader = std::io::BufReader::new(regular_file(path)?);
    let mut out = Lines {
        items: Vec::new(),
        torn: None,
    };
    let mut line = Vec::new();
    let (mut number, mut offset) = (0usize, 0u64);
    loop {
        line.clear();
        let n = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)
            .map_err(io)?;
        if n == 0 {
            break;
        }
        number += 1;
        let complete = line.last() == Some(&b'\n');
        if !complete && n as u64 > MAX_LINE {
            return Err(FileError::NotARecord {
                path: path.to_path_buf(),
                line: number,
                message: format!("longer than {} MiB", MAX_LINE >> 20),
            });
        }
        let text = String::from_utf8_lossy(&line);
        if !text.trim().is_empty() {
            match parse(&text) {
                Ok(r) => out.items.push(r),
                Err(_) if !complete => {
                    out.torn = Some((number, offset));
                    break;
                }
                Err(message) => {
                    return Err(FileError::NotARecord {
                        path: path.to_path_buf(),
                        line: number,
                        message,
                    });
                }
            }
        }
        offset += n as u64;
    }
    Ok(out)
}

/// Refuses a line written by another schema version, by name.
pub fn check_version(text: &str) -> Result<(), String> {
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u32,
    }
    match serde_json::from_str::<Version>(text) {
        Ok(v) if v.schema_version != SCHEMA_VERSION => Err(format!(
            "schema_version {} is not the version {SCHEMA_VERSION} this membw reads",
            v.schema_version
        )),
        _ => Ok(()),
    }
}

/// The `experiment` a line says it belongs to (`sweep`, `latency`, ...).
pub fn experiment_of(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Experiment {
        experiment: String,
    }
    serde_json::from_str::<Experiment>(text)
        .ok()
        .map(|e| e.experiment)
}

fn parse_record(text: &str) -> Result<Record, String> {
    check_version(text)?;
    let record: Record = serde_json::from_str(text).map_err(|e| e.to_string())?;
    // Rates outside what any memory system does (a hand-edited or corrupt
    // file) would only break the plots' axes.
    let rates = record
        .stats
        .values()
        .flat_map(|s| [s.mean, s.sd, s.min, s.max])
        .chain(record.peak_gb_s);
    for v in rates {
        if !(v.is_finite() && (0.0..=1e7).contains(&v)) {
            return Err(format!("a rate of {v:e} GB/s is not a measurement"));
        }
    }
    Ok(record)
}

/// A results file open for appending, and the points already in it.
pub struct ResultsFile {
    pub path: PathBuf,
    file: std::fs::File,
    /// Keys of the points already recorded (non-empty only when resuming).
    pub done: HashSet<String>,
}

impl ResultsFile {
    /// A new file; an existing one is never overwritten.
    pub fn create(path: &Path) -> Result<ResultsFile, FileError> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => FileError::Exists(path.to_path_buf()),
                _ => FileError::Io(path.to_path_buf(), e),
            })?;
        Ok(ResultsFile {
            path: path.to_path_buf(),
            file,
            done: HashSet::new(),
        })
    }

    /// An existing file, to continue: its points count as done. A torn
    /// last line (a write cut short) is cut off; the line number is
    /// returned so the caller can say so.
    pub fn resume(path: &Path) -> Result<(ResultsFile, Option<usize>), FileError> {
        Self::resume_with(path, |text| parse_record(text).map(|r| r.point.key()))
    }

    /// [`resume`](Self::resume) for any record type: `key` reads one line
    /// and returns the key of the point it holds.
    pub fn resume_with(
        path: &Path,
        key: impl Fn(&str) -> Result<String, String>,
    ) -> Result<(ResultsFile, Option<usize>), FileError> {
        let read = read_lines(path, key)?;
        let done = read.items.into_iter().collect();
        let io = |e| FileError::Io(path.to_path_buf(), e);
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(io)?;
        if let Some((_, complete)) = read.torn {
            file.set_len(complete).map_err(io)?;
        }
        Ok((
            ResultsFile {
                path: path.to_path_buf(),
                file,
                done,
            },
            read.torn.map(|t| t.0),
        ))
    }

    /// Appends one record as one line and flushes it. A write that fails
    /// (a full disk, a file too large) leaves no partial line behind.
    pub fn append(&mut self, record: &impl serde::Serialize) -> std::io::Result<()> {
        let mut line = serde_json::to_string(record).expect("plain data serializes");
        line.push('\n');
        let before = self.file.metadata()?.len();
        let written = self
            .file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush());
        if let Err(e) = written {
            let _ = self.file.set_len(before);
            return Err(e);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_line_is_refused_without_reading_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.jsonl");
        std::fs::write(&path, vec![b'x'; (MAX_LINE + 10) as usize]).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 1") && err.contains("longer than 16 MiB"),
            "{err}"
        );
    }

    #[test]
    fn only_a_last_line_without_newline_counts_as_torn() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "{\"cut\n{}\n").unwrap();
        assert!(matches!(
            read(&path),
            Err(FileError::NotARecord { line: 1, .. })
        ));
        std::fs::write(&path, "\n{\"cut").unwrap();
        let r = read(&path).unwrap();
        assert_eq!((r.records.len(), r.torn), (0, Some((2, 1))));
    }
}
