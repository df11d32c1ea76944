//! The conclusion of a study for one kernel, which every rendering of it
//! (text, Markdown, HTML, the plots' notes) reads rather than recomputes.

use super::{best_index, configuration, reading_order};
use crate::kernels::KernelId;
use crate::results::{KernelTrust, Record};

/// `membw run --no-pin ...` for an unpinned point: what measured it.
pub(super) fn rerun_command(r: &Record) -> String {
    let p = &r.point;
    let mut words = vec!["membw run --no-pin".to_string()];
    if let Some(host) = p.host() {
        words.push(format!("--threads {}", host.threads));
    }
    if p.elements > 0 {
        words.push(format!("--size {}", p.elements));
    }
    if let Some(mem) = &p.mem {
        words.push(format!("--mem {mem}"));
    }
    if p.stores != crate::kernels::StoresRequest::Auto {
        words.push(format!("--stores {}", p.stores));
    }
    if p.offset != 0 {
        words.push(format!("--offset {}", p.offset));
    }
    words.join(" ")
}

/// The conclusion of a study for one kernel: the best point among those
/// with trusted runs, by its trusted runs' mean, against the runner-up at
/// 95 % over their trusted runs' best rates. Text, Markdown, HTML and the
/// plots' notes all read it, so none says another thing.
#[derive(Debug, Clone)]
pub struct StudyConclusion<'a> {
    pub kernel: KernelId,
    pub best: &'a Record,
    pub best_trust: KernelTrust,
    pub runner_up: Option<(&'a Record, KernelTrust)>,
    /// Best against runner-up, where both have rates to compare.
    pub comparison: Option<crate::results::estimate::Comparison>,
}

impl<'a> StudyConclusion<'a> {
    pub(super) fn of(
        sorted: &[&'a Record],
        best: &'a Record,
        kernel: KernelId,
    ) -> StudyConclusion<'a> {
        use crate::results::estimate::{Comparison, LEVEL};
        let runner_up = (sorted.iter())
            .filter(|r| !std::ptr::eq(**r, best))
            .filter_map(|r| Some((*r, r.trusted_mean(kernel)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(r, _)| (r, r.kernel_trust(kernel)));
        let comparison = runner_up.as_ref().and_then(|(r, _)| {
            Comparison::of(
                &best.kernel_trust(kernel).rates,
                &r.kernel_trust(kernel).rates,
                LEVEL,
            )
        });
        StudyConclusion {
            kernel,
            best,
            best_trust: best.kernel_trust(kernel),
            runner_up,
            comparison,
        }
    }

    /// The best point of `records` for `kernel`, where one has a trusted run.
    pub fn find(records: &'a [Record], kernel: KernelId) -> Option<StudyConclusion<'a>> {
        let sorted = reading_order(records);
        let best = sorted[best_index(&sorted, kernel)?];
        Some(StudyConclusion::of(&sorted, best, kernel))
    }

    /// Whether the best is ahead of the runner-up at 95 % (or has none).
    pub fn resolved(&self) -> bool {
        use crate::results::estimate::Change;
        match (&self.runner_up, &self.comparison) {
            (None, _) => true,
            (Some(_), Some(c)) => c.change == Change::Lower,
            (Some(_), None) => false,
        }
    }

    /// The best point's mean over its trusted runs, GB/s.
    pub fn mean(&self) -> f64 {
        self.best_trust.stats.as_ref().map_or(0.0, |s| s.mean)
    }

    /// `best triad: 57.83 GB/s with spread (...)` and the runner-up, or
    /// `best triad: not resolved ...` where the two are within the noise.
    pub fn lines(&self) -> Vec<String> {
        use crate::results::estimate::Change;
        let name = self.kernel.spec().name;
        let t = &self.best_trust;
        let runs = match t.whole() {
            true => String::new(),
            false => format!(" ({} of {} runs trusted)", t.trusted(), t.runs),
        };
        let mut lines = vec![match self.resolved() {
            true => format!(
                "\nbest {name}: {:.2} GB/s{runs} with {}",
                self.mean(),
                configuration(self.best)
            ),
            false => format!(
                "\nbest {name}: not resolved; the highest mean is\n  {:.2} GB/s{runs} with {}",
                self.mean(),
                configuration(self.best)
            ),
        }];
        let Some((runner, rt)) = &self.runner_up else {
            return lines;
        };
        let Some(c) = &self.comparison else {
            lines.push(format!(
                "  runner-up: {}, {:.2} GB/s",
                runner.point.label(),
                rt.stats.as_ref().map_or(0.0, |s| s.mean)
            ));
            return lines;
        };
        lines.push(format!(
            "  runner-up: {}, {:.2} GB/s, {}",
            runner.point.label(),
            rt.stats.as_ref().map_or(0.0, |s| s.mean),
            crate::report::change_text(c)
        ));
        lines.push(match c.change {
            Change::Lower => "  resolved: the best is ahead of it".into(),
            Change::NotResolved => {
                "  not resolved: one trusted run each (sweep --repeat 3 would decide)".into()
            }
            _ => {
                "  not resolved: within the noise; more runs or a quieter node would decide".into()
            }
        });
        lines
    }
}
