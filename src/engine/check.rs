//! The health kind: `membw baseline` and `membw check` measure the same
//! scopes (the whole node, then each NUMA domain's cores on that domain's
//! memory) in rounds, each round one measurement per scope; the baseline
//! keeps every round, the check stops as soon as the rules say.

use super::Engine;
use super::scopes::{ScopeJob, band, plan_for, under_rule};
use crate::error::{Error, Result};
use crate::health::rules::{self, Balance, Bests, Finding, Next, Slowest};
use crate::health::{Baseline, BaselineError, Rates, Scope, ScopeBaseline};
use crate::kernels::{KernelId, StoreMode};
use crate::plan::{Measure, Plan, StoresRequest};
use crate::results::Measurement;
use crate::sys::Stop;
use crate::topology::Topology;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Why this process cannot measure `scope` here, where it cannot: its
/// cores' node has none it may use (or that node's memory is not its to
/// use), or the memory it is on is not.
fn not_usable_here(topo: &Topology, scope: Scope) -> Option<String> {
    let usable = |n: usize| {
        (topo.nodes.iter()).any(|x| {
            x.id == n && x.cpus.intersects(&topo.allowed_cpus) && topo.allowed_mems.contains(n)
        })
    };
    if let Some(n) = scope.cpu_node()
        && !usable(n)
    {
        return Some(format!(
            "is numa:{n}, a NUMA node this process cannot use here"
        ));
    }
    let m = scope.memory_node()?;
    (!topo.allowed_mems.contains(m)).then(|| {
        format!(
            "is {}, on node {m}'s memory, which this process cannot use here",
            scope.key()
        )
    })
}

/// The scopes a baseline names, sized, stored and repeated as it says.
/// What this node cannot measure as the baseline says (a NUMA node it
/// cannot use, another core count in a scope, arrays that fit in its
/// caches or not in its memory) is a field of the baseline, named.
pub fn baseline_jobs(
    topo: &Topology,
    baseline: &Baseline,
    measure: &Measure,
    source: &dyn super::Source,
) -> std::result::Result<Vec<ScopeJob>, BaselineError> {
    baseline
        .scopes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let field = |name: &str, problem: String| {
                BaselineError::field(format!("scopes[{i}]{name}"), problem)
            };
            if let Some(problem) = not_usable_here(topo, s.scope) {
                return Err(field(".scope", problem));
            }
            let m = Measure {
                elements: Some(s.elements),
                ntimes: baseline.protocol.ntimes,
                kernels: (s.scope).checked_kernels(
                    &s.kernels.keys().copied().collect::<Vec<_>>(),
                    &baseline.protocol.kernels,
                ),
                ..measure.clone()
            };
            let stores = match s.scope.checked_stores(s.stores) {
                None => StoresRequest::Auto,
                Some(StoreMode::Regular) => StoresRequest::Regular,
                Some(StoreMode::Nt) => StoresRequest::Nt,
            };
            let prepare = |settings: &_| source.prepare_on(s.scope.device_index(), topo, settings);
            let plan = plan_for(&prepare, s.scope, &m, stores).map_err(|e| match e {
                Error::Input {
                    input: crate::error::Input::Size,
                    message,
                    ..
                } => field(".elements", format!("is {}: {message}", s.elements)),
                other => field(
                    "",
                    format!("({}) cannot be measured here: {other}", s.scope),
                ),
            })?;
            if !plan.target.same_device(s.device.as_ref()) {
                let what = crate::results::targets::Target::what_is_measured;
                return Err(field(
                    ".device",
                    format!(
                        "is {}, but this check measures {}",
                        what(s.device.as_ref()),
                        what(plan.target.device())
                    ),
                ));
            }
            if plan.threads() != s.threads {
                return Err(field(
                    ".threads",
                    format!(
                        "is {}, but {} has {} usable cores here",
                        s.threads,
                        s.scope.named(),
                        plan.threads()
                    ),
                ));
            }
            // A small baseline's scopes are measured in its band; a
            // baseline of memory's, whose size is under the rule here, not.
            if s.band == crate::results::Band::Memory
                && let Some(why) = under_rule(topo, &plan)
            {
                return Err(field(".elements", format!("is {}: {why}", s.elements)));
            }
            Ok(ScopeJob {
                scope: s.scope,
                band: band(topo, &plan),
                plan,
            })
        })
        .collect()
}

/// A round's rate for a kernel: the median of its counted repetitions, so
/// that a competing process that lets through a lucky repetition now and
/// then (a time slice, a gap between its own runs) still shows; a
/// transient dip fails one round, not the check.
pub fn typical_gb_s(r: &crate::results::measurement::KernelResult) -> f64 {
    let counted = r.times_s.get(1..).unwrap_or(&[]);
    match crate::results::median(counted) {
        Some(t) if t > 0.0 => r.best_gb_s() * r.min_time_s / t,
        _ => r.best_gb_s(),
    }
}

/// A kernel's slowest thread against the others, as rates: every thread
/// has an equal share of the elements.
fn slowest(r: &crate::results::measurement::KernelResult, plan: &Plan) -> Option<Slowest> {
    let (thread, ratio) = r.slowest_thread()?;
    let own = *r.thread_times_s.get(thread)?;
    let cpu = *plan.cpus.get(thread)?;
    let bytes = r.bytes_per_element as f64 * (plan.elements * plan.inner_repeats) as f64
        / plan.cpus.len() as f64;
    let gb_s = bytes / own * 1e-9;
    Some(Slowest {
        cpu,
        gb_s,
        others_gb_s: gb_s * ratio,
    })
}

/// One round: each scope measured once, each kernel's typical rate kept in
/// `bests` where it beats the earlier rounds'. A failed validation is an
/// unhealthy node, not a rate.
pub fn round(
    engine: &mut Engine,
    jobs: &[ScopeJob],
    bests: &mut Bests,
    balance: &mut Balance,
    stop: &Stop,
) -> Result<Vec<(Scope, Measurement)>> {
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let m = engine.measure(&job.plan, crate::engine::By::Engine, stop)?;
        if let Err(e) = crate::results::measurement::require_valid(&m) {
            return Err(Error::Unhealthy(format!(
                "{}: the kernels computed wrong results, memory errors? ({e})",
                job.scope
            )));
        }
        for r in &m.results {
            rules::keep_best(bests, job.scope, r.kernel, typical_gb_s(r));
            if let Some(s) = slowest(r, &job.plan) {
                rules::keep_most_even(balance, job.scope, r.kernel, s);
            }
        }
        out.push((job.scope, m));
    }
    Ok(out)
}

/// Other work on the CPUs the jobs use, watched for `window` before they
/// run: the reason a baseline would be refused after all its rounds,
/// found in a second instead. A device's scopes are judged by its own
/// observers.
pub fn busy_before(jobs: &[ScopeJob], window: Duration) -> Option<String> {
    let cpus: std::collections::BTreeSet<usize> = (jobs.iter())
        .filter_map(|j| j.plan.host_cpus())
        .flat_map(|cpus| cpus.iter().copied())
        .collect();
    crate::observe::busy_while_idle(&cpus.into_iter().collect::<Vec<_>>(), window)
}

/// `rounds` rounds, summarised per scope and kernel, with what other work
/// ran meanwhile.
pub fn measure_baseline(
    engine: &mut Engine,
    jobs: &[ScopeJob],
    rounds: usize,
    stop: &Stop,
    on_round: &mut dyn FnMut(usize),
) -> Result<(Vec<ScopeBaseline>, crate::trust::Interference)> {
    let mut per_round: Vec<Bests> = Vec::with_capacity(rounds);
    let mut tally = crate::trust::Tally::new(crate::sys::ticks_per_second());
    for i in 0..rounds {
        if stop.requested() {
            break;
        }
        let mut bests = Bests::new();
        let measured = round(engine, jobs, &mut bests, &mut Balance::new(), stop)?;
        tally_round(&mut tally, &measured);
        per_round.push(bests);
        on_round(i + 1);
    }
    let scopes = jobs
        .iter()
        .map(|job| ScopeBaseline {
            scope: job.scope,
            threads: job.plan.threads(),
            elements: job.plan.elements as u64,
            band: job.band,
            stores: job.plan.cpu_code().1,
            device: job.plan.target.device().cloned(),
            kernels: job
                .plan
                .kernels
                .iter()
                .filter_map(|&k| {
                    let values: Vec<f64> = per_round
                        .iter()
                        .filter_map(|b| b.get(&(job.scope, k)).copied())
                        .collect();
                    Some((k, Rates::of(values)?))
                })
                .collect(),
        })
        .collect();
    Ok((scopes, judge_tally(&tally)))
}

/// Adds a round's measurements to what other work was seen.
fn tally_round(tally: &mut crate::trust::Tally, measured: &[(Scope, Measurement)]) {
    for (_, m) in measured {
        if let Some(i) = &m.interference {
            tally.add(i);
        }
    }
}

/// Other work anywhere on the node counts: every scope shares its memory.
fn judge_tally(tally: &crate::trust::Tally) -> crate::trust::Interference {
    tally.judge(true, crate::trust::Effect::Bandwidth)
}

/// What a check is held against.
pub enum Reference<'a> {
    Baseline(&'a Baseline),
    /// No baseline: the domains against each other, the devices of a set
    /// against each other, and each scope in `peaks` (the node, a device)
    /// against `share` of its own theoretical peak.
    Symmetry {
        peaks: BTreeMap<Scope, f64>,
        share: f64,
    },
}

impl Reference<'_> {
    /// Every finding, in scope order (the node first), then kernel order.
    pub fn judge(&self, bests: &Bests, balance: &Balance, tolerance: f64) -> Vec<Finding> {
        let mut findings = match self {
            Reference::Baseline(b) => rules::against_baseline(bests, b, tolerance),
            Reference::Symmetry { peaks, share } => {
                let mut f = rules::symmetry(bests, tolerance);
                f.extend(rules::against_peak(bests, peaks, *share));
                f
            }
        };
        findings.extend(rules::thread_balance(balance, tolerance));
        findings.sort_by_key(|f| (f.scope, f.kernel));
        findings
    }
}

/// How a check ended.
pub struct Checked {
    pub findings: Vec<Finding>,
    /// Each scope's and kernel's best round.
    pub bests: Bests,
    pub passed: bool,
    pub rounds: usize,
    pub elapsed: Duration,
    /// The last round's measurements, for stability figures.
    pub last: Vec<(Scope, Measurement)>,
    /// What else ran on the node over every round: one round can be too
    /// short for the kernel's tick counters to see a competitor.
    pub interference: crate::trust::Interference,
}

/// Rounds until every finding passes or the budget is spent.
pub fn check(
    engine: &mut Engine,
    jobs: &[ScopeJob],
    reference: &Reference,
    tolerance: f64,
    budget: Duration,
    stop: &Stop,
) -> Result<Checked> {
    let start = Instant::now();
    let mut tally = crate::trust::Tally::new(crate::sys::ticks_per_second());
    let mut bests = Bests::new();
    let mut balance = Balance::new();
    let mut rounds = 0;
    // Every round's typical rate per scope and kernel: the findings'
    // estimates, so that a short one says whether it is short beyond noise.
    let mut history: BTreeMap<(Scope, KernelId), Vec<f64>> = BTreeMap::new();
    loop {
        let began = Instant::now();
        let last = round(engine, jobs, &mut bests, &mut balance, stop)?;
        tally_round(&mut tally, &last);
        for (scope, m) in &last {
            for r in &m.results {
                history
                    .entry((*scope, r.kernel))
                    .or_default()
                    .push(typical_gb_s(r));
            }
        }
        rounds += 1;
        let mut findings = reference.judge(&bests, &balance, tolerance);
        for f in findings.iter_mut().filter(|f| f.cpu.is_none()) {
            f.rounds = history
                .get(&(f.scope, f.kernel))
                .and_then(|v| crate::results::Stats::of(v));
        }
        let next = rules::next(&findings, start.elapsed(), began.elapsed(), budget);
        if next != Next::Continue || stop.requested() {
            return Ok(Checked {
                interference: judge_tally(&tally),
                passed: next == Next::Pass,
                findings,
                bests,
                rounds,
                elapsed: start.elapsed(),
                last,
            });
        }
    }
}
