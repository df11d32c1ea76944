//! The `membw tune` verdict: the candidates ranked, the best one against one
//! thread on every core and against the peak, and how to reproduce it.

use crate::kernels::KernelId;
use crate::results::Record;
use crate::results::estimate::{Change, Comparison, Decision, LEVEL, NOISE_THRESHOLD};
use std::fmt::Write;
use std::time::Duration;

/// What a race found, ready to render.
pub struct TuneView<'a> {
    pub kernel: KernelId,
    /// Measured candidates, best first, with their mean rates.
    pub ranked: &'a [(&'a Record, f64)],
    pub tried: usize,
    pub candidates: usize,
    pub elapsed: Duration,
    pub budget: Duration,
    pub decision: Decision,
    /// How many times the race looked, and the confidence of each look.
    pub looks: usize,
    pub level: f64,
    /// The second best against the best.
    pub runner_up: Option<(&'a Record, Comparison)>,
    /// Whether the best is one thread on every core.
    pub baseline: bool,
    /// One thread on every core against the best, when it was measured
    /// and is not the best.
    pub versus_baseline: Option<(&'a Record, Comparison)>,
    /// The mpirun mapping giving MPI ranks the best placement, when there is one.
    pub mpi_map: Option<&'a str>,
    /// Runs that shared the node with other work, left out of the verdict,
    /// and all runs.
    pub busy_runs: (usize, usize),
}

/// A candidate as the verdict names it.
fn name(r: &Record) -> String {
    format!(
        "{} ({}, {} stores)",
        r.point.placement_text(),
        crate::units::plural(r.point.threads, "thread"),
        r.stores_label()
    )
}

/// `other`'s rate against the best, the best's advantage over it.
fn behind(c: &Comparison) -> String {
    super::change_text(&Comparison {
        ratio: 1.0 / c.ratio,
        interval: c.interval.map(|i| crate::results::estimate::Interval {
            low: 1.0 / i.high,
            high: 1.0 / i.low,
            level: i.level,
        }),
        ..*c
    })
}

/// The race's decision: a winner, a tie, not resolved, or too busy.
fn decision(o: &mut String, v: &TuneView, best: &Record, rate: &str) {
    let name_k = v.kernel.spec().name;
    match v.decision {
        Decision::Resolved => {
            let _ = writeln!(o, "\nBest sustained {name_k}: {rate} with {}", name(best));
            if let Some((r, c)) = &v.runner_up {
                let _ = writeln!(
                    o,
                    "  resolved: ahead of the runner-up, {},\n    by {}",
                    name(r),
                    behind(c)
                );
            }
        }
        Decision::Tied => {
            let _ = writeln!(
                o,
                "\nNot resolved: the leaders are within {:.0} % of each other, and either will do",
                100.0 * NOISE_THRESHOLD
            );
            let _ = writeln!(o, "  highest mean {name_k}: {rate} with {}", name(best));
            if let Some((r, c)) = &v.runner_up {
                let _ = writeln!(o, "  {} is {}", name(r), super::change_text(c));
            }
        }
        Decision::NotResolved => {
            let _ = writeln!(
                o,
                "\nNot resolved: the leaders' intervals overlap\n  \
                 more runs (a longer budget) or a quieter node would decide"
            );
            let _ = writeln!(o, "  highest mean {name_k}: {rate} with {}", name(best));
            if let Some((r, c)) = &v.runner_up {
                let _ = writeln!(o, "  {} is {}", name(r), super::change_text(c));
            }
        }
        Decision::Busy => {
            let _ = writeln!(
                o,
                "\nNot resolved: other work shared the node during {} of {} runs\n  \
                 too many to judge by: the ranking would reflect it, not the placements",
                v.busy_runs.0, v.busy_runs.1
            );
            let _ = writeln!(o, "  highest mean {name_k}: {rate} with {}", name(best));
        }
    }
}

pub fn text(v: &TuneView) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Candidates tried: {} of {} in {:.0} s (budget {}); {} at {:.0} % each, {:.0} % over the race",
        v.tried,
        v.candidates,
        v.elapsed.as_secs_f64(),
        humantime::format_duration(v.budget),
        crate::units::plural(v.looks, "look"),
        100.0 * v.level,
        100.0 * LEVEL,
    );
    let top: Vec<&Record> = v.ranked.iter().take(12).map(|(r, _)| *r).collect();
    o.push_str(&super::study::table_in_order(&top, v.kernel, false).plain());
    let _ = writeln!(o, "{}", super::study::legend(top.iter().copied(), v.kernel));
    let Some(&(best, _)) = v.ranked.first() else {
        return o;
    };
    let rate = best
        .stats
        .get(&v.kernel)
        .map_or("-".into(), |s| super::estimate_text(s, "GB/s"));
    decision(&mut o, v, best, &rate);
    if v.busy_runs.0 > 0 && v.decision != Decision::Busy {
        let _ = writeln!(
            o,
            "  {} of {} runs shared the node with other work: left out of the verdict",
            v.busy_runs.0, v.busy_runs.1
        );
    }
    if v.tried < v.candidates {
        let _ = writeln!(
            o,
            "  {} of {} candidates fit in the budget: the others were not measured",
            v.tried, v.candidates
        );
    }
    if v.baseline {
        // A conclusion only where the race decided one.
        let claim = match v.decision {
            Decision::Resolved => "no subset of cores does better here",
            Decision::Tied => "the subsets within the noise of it do as well, none better",
            Decision::NotResolved | Decision::Busy => {
                "whether a subset of cores does better is not resolved"
            }
        };
        let _ = writeln!(o, "  that is one thread on every core: {claim}");
    } else if let Some((b, c)) = &v.versus_baseline {
        let base = b.mean(v.kernel).unwrap_or(0.0);
        let verdict = match c.change {
            Change::Lower => "ahead",
            Change::NoChange | Change::NotResolved | Change::Higher => "not resolved",
        };
        let _ = writeln!(
            o,
            "  against one thread on every core ({base:.2} GB/s): {} ({verdict})",
            behind(c)
        );
    }
    match (best.percent_of_peak(v.kernel), best.peak_gb_s) {
        (Some(pct), Some(p)) => {
            let _ = writeln!(
                o,
                "  {pct:.1} % of the theoretical peak of the sockets used ({p:.1} GB/s)"
            );
        }
        _ if best.in_caches() => {}
        _ => match best.peak_unknown.as_deref() {
            Some(why) if crate::peak::share::is_not_theirs(why) => {
                let _ = writeln!(o, "  no share of the peak: {why}");
            }
            _ => {
                let _ = writeln!(
                    o,
                    "  theoretical peak unknown (give --peak or --channels/--mts)"
                );
            }
        },
    }
    if let Some(s) = &best.reproduce {
        o.push('\n');
        o.push_str(&super::reproduce_block("Reproduce it:", s));
    }
    if let Some(map) = v.mpi_map {
        let _ = writeln!(
            o,
            "  one MPI rank per thread of it: mpirun -np {} {map} --bind-to core",
            best.point.threads
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_on_every_core_claims_nothing_unless_the_race_decided() {
        let best = crate::report::study::tests::cell(0, 0, 23.18);
        let ranked = [(&best, 23.18)];
        let view = |decision| TuneView {
            kernel: KernelId::Triad,
            ranked: &ranked,
            tried: 2,
            candidates: 2,
            elapsed: Duration::from_secs(1),
            budget: Duration::from_secs(60),
            decision,
            looks: 1,
            level: 0.99,
            runner_up: None,
            baseline: true,
            versus_baseline: None,
            mpi_map: None,
            busy_runs: (0, 4),
        };
        for (decision, said) in [
            (Decision::Resolved, "no subset of cores does better here"),
            (
                Decision::NotResolved,
                "whether a subset of cores does better is not resolved",
            ),
            (
                Decision::Busy,
                "whether a subset of cores does better is not resolved",
            ),
        ] {
            let out = text(&view(decision));
            assert!(out.contains(said), "{out}");
            if decision != Decision::Resolved {
                assert!(!out.contains("does better here"), "{out}");
            }
        }
    }
}
