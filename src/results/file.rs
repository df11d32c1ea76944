//! Results files: JSON Lines, one [`Record`] per line, appended and flushed
//! as each point completes so that a crash loses nothing that completed.

use super::Record;
use std::collections::HashSet;
use std::fmt;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

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
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Exists(p) => write!(f, "{}: already exists", p.display()),
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

/// Reads a results file; a line that is not a record is an error naming it.
pub fn read_records(path: &Path) -> Result<Vec<Record>, FileError> {
    let io = |e| FileError::Io(path.to_path_buf(), e);
    let file = std::fs::File::open(path).map_err(io)?;
    let mut records = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = serde_json::from_str(&line).map_err(|e| FileError::NotARecord {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        records.push(record);
    }
    Ok(records)
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

    /// An existing file, to continue: its points count as done.
    pub fn resume(path: &Path) -> Result<ResultsFile, FileError> {
        let done = read_records(path)?.iter().map(|r| r.point.key()).collect();
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| FileError::Io(path.to_path_buf(), e))?;
        Ok(ResultsFile {
            path: path.to_path_buf(),
            file,
            done,
        })
    }

    /// Appends one record as one line and flushes it.
    pub fn append(&mut self, record: &Record) -> std::io::Result<()> {
        let mut line = serde_json::to_string(record).expect("plain data serializes");
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.flush()
    }
}
