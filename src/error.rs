//! Errors and the exit codes they map to.
//!
//! Anything the user can get wrong is a [`Error::Usage`] (exit 2, one line,
//! naming the bad part). Failures of the machine or of the measurement are
//! [`Error::Runtime`] or [`Error::Validation`] (exit 1).

use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// Bad flag, size, placement string, policy or file: exit code 2.
    Usage(String),
    /// The system refused something we needed (mmap, affinity, ...): exit code 1.
    Runtime(String),
    /// The kernels ran but their results are wrong: exit code 1.
    Validation(String),
    /// Stopped by Ctrl-C after saving what was done: exit code 130.
    Interrupted(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Runtime(_) | Error::Validation(_) => 1,
            Error::Interrupted(_) => 130,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Runtime(m) | Error::Validation(m) | Error::Interrupted(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for a usage error built with `format!`.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => { $crate::error::Error::Usage(format!($($arg)*)) };
}
