//! Trust judged per run and per kernel. Each run of a point is judged on
//! its own, and within a run each kernel: other work or steal during a run
//! (the tick counters' findings) doubts every kernel of that run; a
//! kernel whose repetitions varied (max/min time ≥ [`crate::trust::SPREAD`])
//! doubts only that kernel. A point's figures for a kernel are then its
//! trusted runs' ("9 of 10 runs trusted"), never one unsteady run's.

use super::{Record, RunResult, Stats};
use crate::kernels::KernelId;

/// What a point's runs say of one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTrust {
    /// Runs that measured the kernel.
    pub runs: usize,
    /// Each trusted run's best rate of the kernel, GB/s: what verdicts
    /// compare.
    pub rates: Vec<f64>,
    /// The statistics of `rates`; none without any.
    pub stats: Option<Stats>,
    /// Over every run, trusted or not.
    pub all: Option<Stats>,
    /// The first doubt of a run left out, where one was.
    pub doubt: Option<String>,
}

impl KernelTrust {
    /// The runs nothing doubts for this kernel.
    pub fn trusted(&self) -> usize {
        self.rates.len()
    }

    /// Every run trusted (or none watched: a source that cannot tell).
    pub fn whole(&self) -> bool {
        self.trusted() == self.runs
    }

    /// No run trusted: the point's figures for the kernel are doubtful.
    pub fn none(&self) -> bool {
        self.runs > 0 && self.trusted() == 0
    }

    /// The figures a table shows: the trusted runs', or where none is
    /// trusted, every run's (marked NOT TRUSTED beside them).
    pub fn shown(&self) -> Option<&Stats> {
        self.stats.as_ref().or(self.all.as_ref())
    }

    /// The trust cell of a table: `ok`, `9/10 runs`, `NOT TRUSTED`.
    pub fn cell(&self) -> String {
        match (self.whole(), self.none()) {
            (true, _) => "ok".into(),
            (_, true) => "NOT TRUSTED".into(),
            _ => format!("{}/{} runs", self.trusted(), self.runs),
        }
    }
}

/// Why `run`'s figure of `kernel` is doubtful: other work or steal in its
/// window (every kernel of the run), or that kernel's own repetitions
/// varying; `None` when neither.
pub fn doubt(run: &RunResult, kernel: KernelId) -> Option<String> {
    let findings = run.interference.as_ref().map_or(&[][..], |i| &i.findings);
    let is_spread = |f: &String| f.ends_with(crate::trust::SPREAD_TAIL);
    if let Some(busy) = findings.iter().find(|f| !is_spread(f)) {
        return Some(busy.clone());
    }
    let name = kernel.spec().name;
    match run.spread.get(&kernel) {
        // Only a run that was watched at all is judged by its spread, as
        // the finding was only ever added to a watched run's.
        Some(&spread) if run.interference.is_some() => {
            crate::trust::spread_finding([(name, spread)])
        }
        Some(_) => None,
        // A source that kept no spread per kernel: its spread finding,
        // where it names this kernel.
        None => (findings.iter())
            .find(|f| is_spread(f) && f.starts_with(&format!("{name}'s ")))
            .cloned(),
    }
}

impl Record {
    /// Each run judged for `kernel`, and the statistics of the trusted ones.
    pub fn kernel_trust(&self, kernel: KernelId) -> KernelTrust {
        let mut runs = 0;
        let mut rates = Vec::new();
        let mut first_doubt = None;
        for run in &self.runs {
            let Some(&rate) = run.best_gb_s.get(&kernel) else {
                continue;
            };
            runs += 1;
            match doubt(run, kernel) {
                Some(d) => {
                    first_doubt.get_or_insert(d);
                }
                None => rates.push(rate),
            }
        }
        KernelTrust {
            runs,
            // A record without runs (files from before they were kept)
            // has only its statistics.
            stats: match runs {
                0 => self.stats.get(&kernel).cloned(),
                _ => Stats::of(&rates),
            },
            rates,
            all: self.stats.get(&kernel).cloned(),
            doubt: first_doubt,
        }
    }

    /// The mean best rate of `kernel` over the trusted runs, GB/s: what a
    /// verdict compares.
    pub fn trusted_mean(&self, kernel: KernelId) -> Option<f64> {
        self.kernel_trust(kernel).stats.map(|s| s.mean)
    }
}
