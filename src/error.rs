//! Errors and the exit codes they map to.
//!
//! Anything the user can get wrong is exit code 2, in one line naming the bad
//! part. Domain modules do not know how an input was given (a flag today, an
//! environment variable or a sweep axis tomorrow): they return
//! [`Error::Input`] naming the [`Input`] and its value, and only the CLI
//! turns that into a flag name. Failures of the machine or of the
//! measurement are [`Error::Runtime`] or [`Error::Validation`] (exit 1).

use std::fmt;

/// A user-given input a domain module can find fault with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Explicit CPU list, thread i on the i-th CPU.
    Cpus,
    /// OpenMP places.
    Places,
    /// likwid-pin expression.
    Pin,
    /// Named placement strategy.
    Strategy,
    /// GNU libgomp's CPU list.
    Gomp,
    /// Intel's affinity specification.
    Kmp,
    /// Thread count (or a list of them for a sweep).
    Threads,
    /// Permission to use SMT siblings.
    Smt,
    /// numactl-style CPU node restriction.
    CpuNode,
    /// Memory policy.
    Mem,
    /// Array size.
    Size,
    /// A health check's arrays under STREAM's rule, labelled as such.
    Small,
    /// Working-set sizes of a size sweep.
    Sizes,
    Kernels,
    Isa,
    Stores,
    Hugepages,
    /// Weighted-interleave weights to set for the run.
    Weights,
    /// Threads left unbound (`--no-pin`).
    NoPin,
    /// STREAM's OFFSET between the arrays.
    Offset,
    /// A GPU kernel's launch shape.
    Shape,
    /// Where a GPU's arrays live.
    GpuMemory,
}

impl Input {
    /// A neutral name, for the rare message printed without the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Input::Cpus => "cpus",
            Input::Places => "places",
            Input::Pin => "pin",
            Input::Strategy => "strategy",
            Input::Gomp => "gomp-affinity",
            Input::Kmp => "kmp-affinity",
            Input::Threads => "threads",
            Input::Smt => "smt",
            Input::CpuNode => "cpunode",
            Input::Mem => "mem",
            Input::Size => "size",
            Input::Small => "small",
            Input::Sizes => "sizes",
            Input::Kernels => "kernels",
            Input::Isa => "isa",
            Input::Stores => "stores",
            Input::Hugepages => "hugepages",
            Input::Weights => "weights",
            Input::NoPin => "no-pin",
            Input::Offset => "offset",
            Input::Shape => "shape",
            Input::GpuMemory => "gpu-memory",
        }
    }
}

/// What a failed input might need: "add <input> <why>".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    pub input: Input,
    pub why: &'static str,
}

#[derive(Debug)]
pub enum Error {
    /// A user input is wrong: exit code 2. `value` is the text as given,
    /// when quoting it helps.
    Input {
        input: Input,
        value: Option<String>,
        message: String,
        hint: Option<Hint>,
    },
    /// Bad flag combination or file, already worded for the user: exit code 2.
    Usage(String),
    /// The system refused something we needed (mmap, affinity, ...): exit code 1.
    Runtime(String),
    /// The kernels ran but their results are wrong: exit code 1.
    Validation(String),
    /// Stopped by a signal (SIGINT, SIGTERM, SIGHUP) after saving what was
    /// done: exit code 128 + the signal (130, 143, 129).
    Interrupted { signal: i32, message: String },
    /// `membw check` found the node unhealthy: exit code 1, with the one
    /// line a health checker puts in its drain reason.
    Unhealthy(String),
}

impl Error {
    /// An input error quoting the value the user gave.
    pub fn input(input: Input, value: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Input {
            input,
            value: Some(value.into()),
            message: message.into(),
            hint: None,
        }
    }

    /// An input error that needs no quoted value.
    pub fn about(input: Input, message: impl Into<String>) -> Error {
        Error::Input {
            input,
            value: None,
            message: message.into(),
            hint: None,
        }
    }

    /// The same error, suggesting another input.
    pub fn with_hint(self, input: Input, why: &'static str) -> Error {
        match self {
            Error::Input {
                input: i,
                value,
                message,
                ..
            } => Error::Input {
                input: i,
                value,
                message,
                hint: Some(Hint { input, why }),
            },
            other => other,
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input { .. } | Error::Usage(_) => 2,
            Error::Runtime(_) | Error::Validation(_) | Error::Unhealthy(_) => 1,
            Error::Interrupted { signal, .. } => 128 + signal,
        }
    }

    /// Renders an input error with the caller's names for inputs; other
    /// errors as they are.
    pub fn render(&self, name: impl Fn(Input) -> String) -> String {
        match self {
            Error::Input {
                input,
                value,
                message,
                hint,
            } => {
                let mut s = match value {
                    Some(v) => format!("{} '{v}': {message}", name(*input)),
                    None => format!("{}: {message}", name(*input)),
                };
                if let Some(h) = hint {
                    s.push_str(&format!(" (add {} {})", name(h.input), h.why));
                }
                s
            }
            Error::Usage(m)
            | Error::Runtime(m)
            | Error::Validation(m)
            | Error::Unhealthy(m)
            | Error::Interrupted { message: m, .. } => m.clone(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(|i| i.name().to_string()))
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Writes a line to stderr. Unlike `eprintln!`, a closed or full stderr is
/// not a panic: there is nowhere left to report it, so it is dropped.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_errors_render_with_the_callers_names() {
        let e = Error::input(Input::Strategy, "per-l3=9", "too few CPUs")
            .with_hint(Input::Smt, "to use hardware threads");
        assert_eq!(
            e.render(|i| format!("--{}", i.name())),
            "--strategy 'per-l3=9': too few CPUs (add --smt to use hardware threads)"
        );
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            Error::about(Input::Size, "too large").render(|_| "X".into()),
            "X: too large"
        );
    }
}
