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
    out: &mut Lines<T>,
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
    out: &mut Lines<T>,
) -> Result<bool, FileError> {
    if text.trim().is_empty() {
        return Ok(true);
    }
    match parse(text) {
        Ok(r) => out.items.push(r),
        Err(_) if !complete => {
            out.torn = Some((lines.number, lines.offset));
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

/// Refuses a line written by another schema version, by name.
pub fn check_version(text: &str) -> Result<(), String> {
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u32,
    }
    match serde_json::from_str::<Version>(text) {
        Ok(v) => known_version(v.schema_version),
        _ => Ok(()),
    }
}

/// Refuses a document of another schema version, by name.
pub fn known_version(version: u32) -> Result<(), String> {
    if version == SCHEMA_VERSION {
        Ok(())
    } else {
        Err(format!(
            "schema_version {version} is not the version {SCHEMA_VERSION} this membw reads"
        ))
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

pub fn parse_record(text: &str) -> Result<Record, String> {
    check_version(text)?;
    if experiment_of(text).as_deref() == Some(super::latency::EXPERIMENT) {
        return Err("a latency record among bandwidth records".into());
    }
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

/// How long an append waits for another writer's lock before it gives up
/// with an error: a writer holds it for one `write`, so only a dead NFS
/// server or a stopped process holds it this long.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Something a results file did that the user should hear of.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// The last line had no newline (a writer killed mid-line, a full
    /// disk): it was cut off, under the lock, before appending.
    DroppedTornLine { bytes: u64 },
    /// The filesystem takes no locks: appends are single `O_APPEND`
    /// writes, whole on a local filesystem, not guaranteed on NFS.
    NoLocks(String),
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::DroppedTornLine { bytes } => write!(
                f,
                "dropped a last line of {bytes} bytes without its newline, cut short by a crash or a full disk"
            ),
            Notice::NoLocks(why) => write!(
                f,
                "the filesystem takes no locks ({why}): each record is still one O_APPEND write, whole on a local filesystem, but writers on several NFS clients may tear each other's lines; give each node its own file"
            ),
        }
    }
}

/// A results file open for appending, and the points already in it.
///
/// Any number of processes, on any number of nodes, may append to one
/// file: the descriptor is `O_APPEND`, each record is one `write` of one
/// whole line under an exclusive advisory lock, and the only changes that
/// are not appends (cutting a torn last line, undoing a failed write) are
/// made under that lock, where no other writer's line can be in flight.
pub struct ResultsFile {
    pub path: PathBuf,
    file: std::fs::File,
    /// Keys of the points already recorded (non-empty only when resuming).
    pub done: HashSet<String>,
    /// What happened that the user should hear of, oldest first; the
    /// caller takes them.
    pub notices: Vec<Notice>,
    /// Set once the filesystem refused a lock: later appends do not ask.
    unlocked: bool,
}

impl ResultsFile {
    /// A new file; an existing one is never overwritten.
    pub fn create(path: &Path) -> Result<ResultsFile, FileError> {
        // Read too: the torn-tail check reads the end of the file.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => FileError::Exists(path.to_path_buf()),
                _ => FileError::Io(path.to_path_buf(), e),
            })?;
        Ok(ResultsFile::opened(path, file))
    }

    fn opened(path: &Path, file: std::fs::File) -> ResultsFile {
        ResultsFile {
            path: path.to_path_buf(),
            file,
            done: HashSet::new(),
            notices: Vec::new(),
            unlocked: false,
        }
    }

    /// An existing file, to continue: its points count as done. A torn
    /// last line (a write cut short) is cut off; the line number is
    /// returned so the caller can say so.
    pub fn resume(path: &Path) -> Result<(ResultsFile, Option<usize>), FileError> {
        Self::resume_with(path, |text| parse_record(text).map(|r| r.point.key()))
    }

    /// A file to append to whether or not it exists yet (`run -o`): many
    /// processes started at once may all find it missing, and all of them
    /// append to the one that the first creates.
    pub fn open_or_create(
        path: &Path,
        key: impl Fn(&str) -> Result<String, String>,
    ) -> Result<(ResultsFile, Option<usize>), FileError> {
        Self::open_with(path, true, key)
    }

    /// [`resume`](Self::resume) for any record type: `key` reads one line
    /// and returns the key of the point it holds.
    pub fn resume_with(
        path: &Path,
        key: impl Fn(&str) -> Result<String, String>,
    ) -> Result<(ResultsFile, Option<usize>), FileError> {
        Self::open_with(path, false, key)
    }

    /// Opens for appending and reads the points in the file under the
    /// lock, so that no other writer's line is half written while it
    /// decides whether the last line is torn.
    fn open_with(
        path: &Path,
        create: bool,
        key: impl Fn(&str) -> Result<String, String>,
    ) -> Result<(ResultsFile, Option<usize>), FileError> {
        let io = |e| FileError::Io(path.to_path_buf(), e);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(create)
            .open(path)
            .map_err(io)?;
        if !file.metadata().map_err(io)?.is_file() {
            return Err(FileError::NotAFile(path.to_path_buf()));
        }
        let mut out = ResultsFile::opened(path, file);
        let lock = lock(&out.file, &mut out.unlocked, &mut out.notices).map_err(io)?;
        let read = read_lines(path, key)?;
        if let Some((_, complete)) = read.torn {
            // Without a lock the tail may be another writer's line in flight.
            if lock.is_some() {
                out.file.set_len(complete).map_err(io)?;
            }
        }
        drop(lock);
        out.done = read.items.into_iter().collect();
        Ok((out, read.torn.map(|t| t.0)))
    }

    /// Appends one record as one line, written whole by one `write` under
    /// the lock. A write that fails (a full disk, a file too large) leaves
    /// no partial line behind.
    pub fn append(&mut self, record: &impl serde::Serialize) -> std::io::Result<()> {
        let mut line = serde_json::to_string(record).map_err(std::io::Error::other)?;
        line.push('\n');
        let lock = lock(&self.file, &mut self.unlocked, &mut self.notices)?;
        let mut file = &self.file;
        // Without a lock the tail may be another writer's line in flight.
        let dropped = match lock {
            Some(_) => cut_torn_tail(file)?,
            None => None,
        };
        let before = file.metadata()?.len();
        if let Err(e) = file.write_all(line.as_bytes()) {
            // Under the lock the end of the file past `before` is ours alone.
            if lock.is_some() {
                let _ = file.set_len(before);
            }
            return Err(e);
        }
        drop(lock);
        if let Some(bytes) = dropped {
            self.notices.push(Notice::DroppedTornLine { bytes });
        }
        Ok(())
    }
}

/// The exclusive lock on `file`, or None where the filesystem takes none
/// (noted once in `notices`, and not asked again).
fn lock<'f>(
    file: &'f std::fs::File,
    unlocked: &mut bool,
    notices: &mut Vec<Notice>,
) -> std::io::Result<Option<crate::sys::FileLock<'f>>> {
    use crate::sys::LockError;
    if *unlocked {
        return Ok(None);
    }
    match crate::sys::lock_exclusive(file, LOCK_WAIT) {
        Ok(lock) => Ok(Some(lock)),
        Err(LockError::Unsupported(e)) => {
            *unlocked = true;
            notices.push(Notice::NoLocks(e.to_string()));
            Ok(None)
        }
        Err(LockError::TimedOut(wait)) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "another process held the file's lock for {} s",
                wait.as_secs()
            ),
        )),
        Err(LockError::Io(e)) => Err(e),
    }
}

/// Cuts what follows the last newline of `file` (a line another writer
/// left without its end when it died); the number of bytes cut. Called
/// only under the lock, where no whole line can be in flight.
fn cut_torn_tail(file: &std::fs::File) -> std::io::Result<Option<u64>> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let mut end = len;
    let mut chunk = [0u8; 4096];
    let keep = loop {
        if end == 0 {
            break 0;
        }
        if len - end > MAX_LINE {
            // No record is this long: leave it for the reader to name.
            return Ok(None);
        }
        let start = end.saturating_sub(chunk.len() as u64);
        let buf = &mut chunk[..(end - start) as usize];
        file.read_exact_at(buf, start)?;
        if let Some(i) = buf.iter().rposition(|&b| b == b'\n') {
            break start + i as u64 + 1;
        }
        end = start;
    };
    if keep == len {
        return Ok(None);
    }
    file.set_len(keep)?;
    Ok(Some(len - keep))
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
