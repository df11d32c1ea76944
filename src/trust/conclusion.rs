//! What every observer of one window concluded, together: a finding, a
//! clean window (and what each observer saw of it), or a window none of
//! them could judge, which is never "trusted".

use super::{HeldBack, Interference};

/// What the observers of one window concluded, together.
#[derive(Debug, Clone, PartialEq)]
pub enum Trust<'a> {
    /// Something was found: the figures are doubtful (each finding).
    Untrusted(Vec<&'a str>),
    /// Every observer that could judge the window found nothing: what
    /// each saw (`no other work on CPU 0 and no steal`), over how long,
    /// and what the others could not judge.
    Trusted {
        clean: Vec<String>,
        window_s: f64,
        not_judged: Vec<&'a str>,
    },
    /// No observer could judge the window (each says why): neither
    /// trusted nor not.
    NotJudged(Vec<&'a str>),
    /// Nothing watched it (another program's source, a fake one, files
    /// from before it was watched).
    Unwatched,
}

impl Trust<'_> {
    /// What the CPUs' tick counters and a device's clocks said of one
    /// window.
    pub fn of<'a>(interference: Option<&'a Interference>, held: Option<&'a HeldBack>) -> Trust<'a> {
        if let Some(i) = interference.filter(|i| !i.findings.is_empty()) {
            return Trust::Untrusted(i.findings.iter().map(String::as_str).collect());
        }
        let not_judged: Vec<&str> = interference
            .and_then(|i| i.not_judged.as_deref())
            .into_iter()
            .collect();
        let mut clean = Vec::new();
        let mut window_s: f64 = 0.0;
        if let Some(i) =
            interference.filter(|i| i.not_judged.is_none() && i.cpus.iter().any(|c| c.measured))
        {
            clean.push(i.quiet_part());
            window_s = window_s.max(i.window_s);
        }
        if let Some(h) = held {
            clean.push(h.quiet_part());
            window_s = window_s.max(h.window_s);
        }
        match (clean.is_empty(), not_judged.is_empty()) {
            (false, _) => Trust::Trusted {
                clean,
                window_s,
                not_judged,
            },
            (true, false) => Trust::NotJudged(not_judged),
            (true, true) => Trust::Unwatched,
        }
    }

    /// The lines people read, each with `indent` before it: `NOT
    /// TRUSTED: …`, `trusted: …`, `not judged: …`.
    pub fn lines(&self, indent: &str) -> Vec<String> {
        match self {
            Trust::Untrusted(findings) => (findings.iter())
                .map(|f| format!("{indent}NOT TRUSTED: {f}"))
                .collect(),
            Trust::Trusted {
                clean,
                window_s,
                not_judged,
            } => std::iter::once(format!(
                "{indent}trusted: {} during the {window_s:.2} s measured",
                clean.join("; ")
            ))
            .chain(
                not_judged
                    .iter()
                    .map(|w| format!("{indent}not judged: {w}")),
            )
            .collect(),
            Trust::NotJudged(why) => (why.iter())
                .map(|w| format!("{indent}not judged: {w}"))
                .collect(),
            Trust::Unwatched => Vec::new(),
        }
    }
}
