//! Appending to a results file, safely with any number of writers: each
//! record one `write` of one whole line on an `O_APPEND` descriptor, under
//! an exclusive advisory lock; what is not an append (cutting a torn last
//! line, undoing a failed write) only under that lock.

use super::file::{FileError, MAX_LINE, parse_record, read_lines};
use std::collections::HashSet;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

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
        use std::os::unix::fs::OpenOptionsExt;
        let io = |e| FileError::Io(path.to_path_buf(), e);
        // Without blocking: a FIFO with no reader would hang a plain open.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(create)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EISDIR) | Some(libc::ENXIO) => FileError::NotAFile(path.to_path_buf()),
                _ => io(e),
            })?;
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
