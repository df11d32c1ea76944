//! Advisory locks on whole files, for results files that many processes
//! (ranks, nodes, shells) append to at once. Open file description locks
//! (`F_OFD_SETLK`): held by the descriptor, not the process, so two threads
//! or a forked child never share one by accident, and on NFS the kernel
//! turns them into POSIX locks, which lockd serves across nodes.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Why a lock was not taken.
#[derive(Debug)]
pub enum LockError {
    /// The filesystem does not lock (no lockd on an NFS mount mounted
    /// `nolock`, some FUSE filesystems): the error the kernel gave.
    Unsupported(io::Error),
    /// Another process held it for the whole wait.
    TimedOut(Duration),
    Io(io::Error),
}

/// An exclusive lock on the whole file, released when dropped.
pub struct FileLock<'a> {
    file: &'a File,
}

fn set_lock(file: &File, kind: libc::c_short) -> io::Result<()> {
    // SAFETY: an all-zero flock is a valid value (start 0, length 0 = the
    // whole file, pid 0 as F_OFD_* requires); fcntl only reads it.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: a valid descriptor owned by `file` and a pointer to a live flock.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &mut lock) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Takes an exclusive lock on `file`, waiting at most `wait` for another
/// holder (polling, so that a holder stuck on a dead NFS server ends in an
/// error, not a hang).
pub fn lock_exclusive(file: &File, wait: Duration) -> Result<FileLock<'_>, LockError> {
    let start = Instant::now();
    let mut pause = Duration::from_micros(50);
    loop {
        match set_lock(file, libc::F_WRLCK as libc::c_short) {
            Ok(()) => return Ok(FileLock { file }),
            Err(e) => match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EACCES) | Some(libc::EINTR) => {}
                Some(libc::ENOLCK) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => {
                    return Err(LockError::Unsupported(e));
                }
                _ => return Err(LockError::Io(e)),
            },
        }
        if start.elapsed() >= wait {
            return Err(LockError::TimedOut(wait));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        // Closing the descriptor would release it too; an unlock that fails
        // leaves nothing to do.
        let _ = set_lock(self.file, libc::F_UNLCK as libc::c_short);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_description_waits_for_the_first_and_then_gets_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let a = File::create(&path).unwrap();
        let b = File::options().append(true).open(&path).unwrap();
        let held = lock_exclusive(&a, Duration::ZERO).unwrap();
        assert!(matches!(
            lock_exclusive(&b, Duration::from_millis(30)),
            Err(LockError::TimedOut(_))
        ));
        drop(held);
        assert!(lock_exclusive(&b, Duration::ZERO).is_ok());
    }
}
