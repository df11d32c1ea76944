//! Results files: JSON Lines, one [`Record`] per line, appended and flushed
//! as each point completes so that a crash loses nothing that completed.

use super::Record;
use std::fmt;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// The longest line a results file may hold; a record is a few kB.
pub(super) const MAX_LINE: u64 = 16 << 20;

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
    /// A document larger than any membw writes (the limit, bytes).
    TooLarge(PathBuf, u64),
    /// A file with no record in it.
    Empty(PathBuf),
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Exists(p) => write!(f, "{}: already exists", p.display()),
            FileError::NotAFile(p) => write!(f, "{}: not a regular file", p.display()),
            FileError::TooLarge(p, limit) => write!(
                f,
                "{}: larger than the {} MiB any membw document takes",
                p.display(),
                limit >> 20
            ),
            FileError::Empty(p) => write!(f, "{}: no records", p.display()),
            FileError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            FileError::NotARecord {
                path,
                line,
                message,
            } if *line == 1
                && message.contains(" column ")
                && !message.contains("schema_version") =>
            {
                write!(
                    f,
                    "{}: not a file membw reads ({message}); it reads the JSON Lines of run -o, sweep, tune, latency -o and exec -o, and the JSON of --format json (one document per file); a STREAM program's printout goes through `membw exec -- ./stream`",
                    path.display()
                )
            }
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

/// Opens a file for reading only if it is a regular file. The open does not
/// block (a FIFO with no writer would hang a plain open), and the check is
/// made on the opened descriptor, so nothing can swap the file in between.
pub fn open_regular(path: &Path) -> Result<std::fs::File, FileError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |e| FileError::Io(path.to_path_buf(), e);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(FileError::NotAFile(path.to_path_buf()));
    }
    Ok(file)
}

/// The whole of a regular file of at most `limit` bytes (a baseline, a
/// document): more is refused without reading it all.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    use std::io::Read;
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::Io(path.to_path_buf(), e))?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge(path.to_path_buf(), limit));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(FileError::Empty(path.to_path_buf()));
    }
    Ok(bytes)
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

/// Where the items of a JSON Lines file go as they are read: a list of
/// every line, or a fold that keeps what a report needs.
pub(super) trait Collect<T> {
    fn push(&mut self, item: T);
    /// The last line was cut short: its number and where it starts.
    fn torn(&mut self, at: (usize, u64));
}

impl<T> Collect<T> for Lines<T> {
    fn push(&mut self, item: T) {
        self.items.push(item);
    }
    fn torn(&mut self, at: (usize, u64)) {
        self.torn = Some(at);
    }
}

/// One line of a JSON Lines file, read with a bounded buffer.
pub(super) struct LineReader<R> {
    path: PathBuf,
    reader: std::io::BufReader<R>,
    buf: Vec<u8>,
    /// The number of the line last read, from 1.
    pub number: usize,
    /// Where the line last read starts.
    pub offset: u64,
    next_offset: u64,
}

impl<R: Read> LineReader<R> {
    pub(super) fn new(path: &Path, reader: std::io::BufReader<R>) -> Self {
        LineReader {
            path: path.to_path_buf(),
            reader,
            buf: Vec::new(),
            number: 0,
            offset: 0,
            next_offset: 0,
        }
    }

    /// Reads the next line and says whether it had its newline; None at
    /// the end. A line longer than [`MAX_LINE`] is refused after reading at
    /// most that much of it. [`text`](Self::text) is the line.
    pub(super) fn next_line(&mut self) -> Result<Option<bool>, FileError> {
        self.buf.clear();
        let n = (&mut self.reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| FileError::Io(self.path.clone(), e))?;
        if n == 0 {
            return Ok(None);
        }
        self.number += 1;
        self.offset = self.next_offset;
        self.next_offset += n as u64;
        let complete = self.buf.last() == Some(&b'\n');
        if !complete && n as u64 > MAX_LINE {
            return Err(self.not_a_record(format!("longer than {} MiB", MAX_LINE >> 20)));
        }
        if complete {
            self.buf.pop();
        }
        match std::str::from_utf8(&self.buf) {
            Ok(_) => Ok(Some(complete)),
            // A write cut inside a character is torn like any other.
            Err(_) if !complete => {
                self.buf = "\u{fffd}".into();
                Ok(Some(false))
            }
            Err(e) => Err(self.not_a_record(format!("not UTF-8 text ({e})"))),
        }
    }

    /// The line last read, without its newline.
    pub(super) fn text(&self) -> &str {
        std::str::from_utf8(&self.buf).unwrap_or("")
    }

    pub(super) fn not_a_record(&self, message: String) -> FileError {
        FileError::NotARecord {
            path: self.path.clone(),
            line: self.number,
            message,
        }
    }

    /// The rest of the file after the lines read so far, at most `limit` bytes.
    pub(super) fn rest(mut self, limit: u64) -> Result<Vec<u8>, FileError> {
        let mut rest = Vec::new();
        (&mut self.reader)
            .take(limit + 1)
            .read_to_end(&mut rest)
            .map_err(|e| FileError::Io(self.path.clone(), e))?;
        if rest.len() as u64 > limit {
            return Err(FileError::TooLarge(self.path, limit));
        }
        Ok(rest)
    }
}

/// Parses the lines of a JSON Lines file after those `lines` has read
/// already: each non-blank line through `parse`. A torn last line ends
/// the reading; any other line that does not parse is an error naming it.
pub(super) fn parse_lines<R: Read, T>(
    lines: &mut LineReader<R>,
    parse: impl Fn(&str) -> Result<T, String>,
    out: &mut impl Collect<T>,
) -> Result<(), FileError> {
    while let Some(complete) = lines.next_line()? {
        if !take_line(lines, &parse, lines.text(), complete, out)? {
            break;
        }
    }
    Ok(())
}

/// One line just read by `lines`, through `parse` into `out`; false when
/// it is a torn last line (noted in `out`), and reading ends.
pub(super) fn take_line<R: Read, T>(
    lines: &LineReader<R>,
    parse: &impl Fn(&str) -> Result<T, String>,
    text: &str,
    complete: bool,
    out: &mut impl Collect<T>,
) -> Result<bool, FileError> {
    if text.trim().is_empty() {
        return Ok(true);
    }
    match parse(text) {
        Ok(r) => out.push(r),
        Err(_) if !complete => {
            out.torn((lines.number, lines.offset));
            return Ok(false);
        }
        Err(message) => return Err(lines.not_a_record(message)),
    }
    Ok(true)
}

/// [`read`] for any record type: `parse` turns one line into one item.
pub fn read_lines<T>(
    path: &Path,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Lines<T>, FileError> {
    let mut lines = LineReader::new(path, std::io::BufReader::new(open_regular(path)?));
    let mut out = Lines {
        items: Vec::new(),
        torn: None,
    };
    parse_lines(&mut lines, parse, &mut out)?;
    Ok(out)
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

pub fn parse_record(text: &str) -> Result<Record, String> {
    super::schema::check_version(text)?;
    if experiment_of(text).as_deref() == Some(super::latency_record::EXPERIMENT) {
        return Err("a latency record among bandwidth records".into());
    }
    let mut record: Record = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let bandwidth = &mut record.payload;
    if let (Some(s), Some(run)) = (bandwidth.reproduce.as_mut(), bandwidth.runs.first()) {
        s.refresh(&run.cpus);
    }
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
