//! `membw tune`: search threads × placement × store mode within a time
//! budget for the best sustained rate of one kernel, and say how to get it
//! in the user's own application.

use super::{Engine, Job};
use crate::error::Result;
use crate::kernels::KernelId;
use crate::memory::policy::MemPolicy;
use crate::memory::written::PolicySpec;
use crate::placement::domains::Kind;
use crate::placement::{self, Domains, Spec, Strategy};
use crate::plan::{self, Measure, Settings, StoresRequest};
use crate::results::estimate::{Change, Comparison, Decision, LEVEL, NOISE_THRESHOLD};
use crate::results::{Point, Record, RunResult};
use crate::sys::Stop;
use crate::topology::Topology;
use std::time::{Duration, Instant};

/// A candidate: a label, the placement, and the mpirun mapping that gives
/// the same placement to MPI ranks.
pub struct Candidate {
    pub label: String,
    pub request: placement::Request,
    pub mpi_map: Option<String>,
}

fn strategy(s: Strategy, threads: Option<usize>, smt: bool, map: Option<String>) -> Candidate {
    Candidate {
        label: s.to_string() + if smt { " +smt" } else { "" },
        request: placement::Request {
            spec: Spec::Strategy(s),
            threads,
            smt,
            cpu_nodes: None,
        },
        mpi_map: map,
    }
}

/// The candidates, most promising first: all cores, then fewer threads per
/// L3 domain, per NUMA node and per socket, every second core, fewer
/// threads spread, and SMT.
pub fn candidates(topo: &Topology) -> Vec<Candidate> {
    let domains = Domains::new(topo, &topo.allowed_cpus);
    let n = domains.cores.len();
    let mut list = vec![strategy(
        Strategy::Spread,
        None,
        false,
        Some("--map-by core".into()),
    )];
    // K threads per domain, K = 1, 2, 4, ... below the domain's core count;
    // per socket only where there is more than one socket.
    let sockets = topo.packages().len();
    type PerDomain = fn(usize) -> Strategy;
    let per: [(PerDomain, Kind, &str); 3] = [
        (Strategy::PerL3, Kind::Cache, "l3cache"),
        (Strategy::PerNuma, Kind::Memory, "numa"),
        (Strategy::PerSocket, Kind::Socket, "package"),
    ];
    for (per_domain, kind, mpi_domain) in per {
        let limit = match kind {
            Kind::Socket if sockets < 2 => 0,
            _ => domains.fewest_cores(kind),
        };
        let mut k = 1;
        while k < limit {
            list.push(strategy(
                per_domain(k),
                None,
                false,
                Some(format!("--map-by ppr:{k}:{mpi_domain}")),
            ));
            k *= 2;
        }
    }
    if n >= 4 {
        list.push(strategy(Strategy::Stride(2), None, false, None));
    }
    let mut t = 1;
    while t < n {
        list.push(strategy(Strategy::Spread, Some(t), false, None));
        t *= 2;
    }
    if topo.threads_per_core() > 1 {
        list.push(strategy(
            Strategy::Spread,
            None,
            true,
            Some("--map-by hwthread".into()),
        ));
    }
    list
}

/// What tune measures at every candidate.
#[derive(Debug, Clone)]
pub struct TuneSpec {
    /// The kernel to maximize, the one `measure` runs.
    pub kernel: KernelId,
    pub measure: Measure,
    /// The memory policy as given, and parsed.
    pub mem: (PolicySpec, MemPolicy),
    /// Store modes to try; `auto` tries both non-temporal and regular.
    pub stores: Vec<StoresRequest>,
}

/// A job and the mpirun mapping that gives MPI ranks the same placement.
pub struct Trial {
    pub job: Job,
    pub mpi_map: Option<String>,
    /// Whether the trial is one thread on every core, spread: what a user
    /// would run without tuning, the baseline the best is compared with.
    pub baseline: bool,
}

/// Jobs for every candidate in every store mode, dropping those that
/// resolve to a placement already listed or cannot run here.
pub fn trials(topo: &Topology, spec: &TuneSpec, prepare: &plan::Prepare) -> Result<Vec<Trial>> {
    let mut stores: Vec<StoresRequest> = spec
        .stores
        .iter()
        .flat_map(|&s| match s {
            StoresRequest::Auto => vec![StoresRequest::Nt, StoresRequest::Regular],
            s => vec![s],
        })
        .collect();
    stores.dedup();
    let mut seen: Vec<(Vec<usize>, StoresRequest)> = Vec::new();
    let mut out = Vec::new();
    for c in candidates(topo) {
        let Ok(cpus) = placement::resolve(topo, &c.request) else {
            continue;
        };
        for &stores in &stores {
            if seen.contains(&(cpus.clone(), stores)) {
                continue;
            }
            seen.push((cpus.clone(), stores));
            let settings =
                Settings::new(&spec.measure, c.request.clone(), stores, spec.mem.1.clone());
            let plan = prepare(&settings)?.plan;
            let point = Point::new(
                placement::identity::PlacementId::of(&c.request),
                &spec.mem.0,
                stores,
                &plan,
                None,
            );
            let label = point.label();
            let baseline = c.request.spec == Spec::Strategy(Strategy::Spread)
                && c.request.threads.is_none()
                && !c.request.smt;
            out.push(Trial {
                job: Job {
                    point,
                    plan,
                    label,
                    by: super::By::Engine,
                },
                mpi_map: c.mpi_map.clone(),
                baseline,
            });
        }
    }
    Ok(out)
}

/// The baseline's best record: one thread on every core, spread, in the
/// store mode that did best.
pub fn baseline<'r>(
    trials: &[Trial],
    records: &'r [Record],
    kernel: KernelId,
) -> Option<&'r Record> {
    records
        .iter()
        .filter(|r| trials.iter().any(|t| t.baseline && t.job.point == r.point))
        .max_by(|a, b| {
            a.mean(kernel)
                .unwrap_or(0.0)
                .total_cmp(&b.mean(kernel).unwrap_or(0.0))
        })
}

/// How MPI launchers spell the placement of `record`'s trial, if they can.
pub fn mpi_map<'t>(trials: &'t [Trial], record: &Record) -> Option<&'t str> {
    trials
        .iter()
        .find(|t| t.job.point == record.point)
        .and_then(|t| t.mpi_map.as_deref())
}

/// The race looks at its candidates at most this many times, after
/// `first`, 2 × `first`, 4 × `first`, ... runs of each candidate still in it.
pub const LOOKS: usize = 5;

/// The confidence of each look: the race is wrong at any of its looks less
/// than 5 % of the time (Bonferroni over [`LOOKS`]).
pub fn level_per_look() -> f64 {
    1.0 - (1.0 - LEVEL) / LOOKS as f64
}

/// How a race ended: every trial's runs (empty for those never measured),
/// which were still in it, and what it decided.
pub struct Raced {
    pub runs: Vec<Vec<RunResult>>,
    pub in_race: Vec<bool>,
    pub decision: Decision,
    pub looks: usize,
    /// Candidates measured (the last may be cut short by a signal).
    pub tried: usize,
    pub elapsed: Duration,
}

/// A finished search, its records kept in the session: how the race went
/// and how many runs shared the node with other work, of all runs.
pub struct Searched {
    pub tried: usize,
    pub elapsed: Duration,
    pub decision: Decision,
    pub looks: usize,
    pub busy_runs: (usize, usize),
}

/// `membw tune`'s one entry point: races the trials and keeps one record
/// per candidate measured, with all its runs, in `session`.
pub fn search(
    engine: &mut Engine,
    trials: &[Trial],
    kernel: KernelId,
    first: usize,
    budget: Duration,
    session: &mut super::BandwidthSession,
    on_run: &mut dyn FnMut(&Job, &RunResult),
) -> Result<Searched> {
    let stop = session.stop.clone();
    let raced = race(engine, trials, kernel, first, budget, &stop, on_run)?;
    let busy = (
        raced.runs.iter().map(|r| busy_runs(r)).sum(),
        raced.runs.iter().map(Vec::len).sum(),
    );
    for (trial, runs) in trials.iter().zip(raced.runs) {
        if !runs.is_empty() {
            let (point, payload) = engine.payload(&trial.job, runs);
            session.keep(point, payload)?;
        }
    }
    Ok(Searched {
        tried: raced.tried,
        elapsed: raced.elapsed,
        decision: raced.decision,
        looks: raced.looks,
        busy_runs: busy,
    })
}

/// Whether other work shared the node during a run.
fn busy(run: &RunResult) -> bool {
    run.interference.as_ref().is_some_and(|f| f.busy)
}

/// The best rates of `kernel` of the runs the node was not busy during:
/// the race decides on these alone, and measures again instead.
fn rates(runs: &[RunResult], kernel: KernelId) -> Vec<f64> {
    runs.iter()
        .filter(|r| !busy(r))
        .filter_map(|r| r.best_gb_s.get(&kernel).copied())
        .collect()
}

/// How many of these runs shared the node with other work.
pub fn busy_runs(runs: &[RunResult]) -> usize {
    runs.iter().filter(|r| busy(r)).count()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The leader among `runs` (highest mean rate) of those `in_race`.
fn leader(runs: &[Vec<RunResult>], in_race: &[bool], kernel: KernelId) -> Option<usize> {
    (0..runs.len())
        .filter(|&i| in_race[i] && !runs[i].is_empty())
        .max_by(|&a, &b| mean(&rates(&runs[a], kernel)).total_cmp(&mean(&rates(&runs[b], kernel))))
}

/// `other` against `leader` at the race's level per look.
pub fn versus(leader: &[RunResult], other: &[RunResult], kernel: KernelId) -> Option<Comparison> {
    Comparison::of(
        &rates(leader, kernel),
        &rates(other, kernel),
        level_per_look(),
    )
}

/// One look: drops the candidates clearly behind the leader and says
/// whether the race is decided.
fn look(runs: &[Vec<RunResult>], in_race: &mut [bool], kernel: KernelId) -> Option<Decision> {
    let lead = leader(runs, in_race, kernel)?;
    let mut tied = true;
    for i in 0..runs.len() {
        if i == lead || !in_race[i] {
            continue;
        }
        match versus(&runs[lead], &runs[i], kernel) {
            Some(c) if c.change == Change::Lower => in_race[i] = false,
            Some(Comparison {
                interval: Some(iv), ..
            }) if iv.low >= 1.0 - NOISE_THRESHOLD && iv.high <= 1.0 + NOISE_THRESHOLD => {}
            _ => tied = false,
        }
    }
    let left: Vec<usize> = (0..runs.len()).filter(|&i| in_race[i]).collect();
    // Too few quiet runs to judge by: measure again.
    let short = left.iter().any(|&i| rates(&runs[i], kernel).len() < 2);
    if short {
        None
    } else if left.len() == 1 {
        Some(Decision::Resolved)
    } else if tied {
        Some(Decision::Tied)
    } else {
        None
    }
}

/// Why a race ended undecided: too few quiet runs of a candidate still in
/// it (a busy node), or intervals that still overlap.
fn unresolved(runs: &[Vec<RunResult>], in_race: &[bool], kernel: KernelId) -> Decision {
    let short = (0..runs.len()).any(|i| in_race[i] && rates(&runs[i], kernel).len() < 2);
    if short {
        Decision::Busy
    } else {
        Decision::NotResolved
    }
}

/// Races the trials for the best rate of `kernel` within `budget`: each is
/// measured `first` times (in order, while the slowest so far fits in what
/// is left), then those not clearly behind the leader are measured again,
/// doubling their runs at each look, until the leader is separated from
/// every other, the rest are tied with it, the last look is taken, or the
/// budget ends. A signal stops it after the current run.
pub fn race(
    engine: &mut Engine,
    trials: &[Trial],
    kernel: KernelId,
    first: usize,
    budget: Duration,
    stop: &Stop,
    on_run: &mut dyn FnMut(&Job, &RunResult),
) -> Result<Raced> {
    let stopped = || stop.requested();
    let start = Instant::now();
    let mut runs: Vec<Vec<RunResult>> = vec![Vec::new(); trials.len()];
    let mut took: Vec<Duration> = vec![Duration::ZERO; trials.len()];
    let mut measure = |engine: &mut Engine,
                       i: usize,
                       runs: &mut Vec<Vec<RunResult>>,
                       took: &mut Vec<Duration>| {
        let t0 = Instant::now();
        let m = match engine.measure(&trials[i].job.plan, crate::engine::By::Engine, stop) {
            // The signal cut into the run: not kept.
            Err(crate::error::Error::Interrupted { .. }) if stopped() => return Ok(()),
            m => m?,
        };
        let r = RunResult::from_measurement(&m);
        if !stopped() {
            on_run(&trials[i].job, &r);
            runs[i].push(r);
        }
        took[i] += t0.elapsed();
        Ok::<_, crate::error::Error>(())
    };
    // Qualifying: every candidate `first` times, while it fits.
    let mut slowest = Duration::ZERO;
    let mut tried = 0;
    for i in 0..trials.len() {
        if stopped() || (tried > 0 && start.elapsed() + slowest > budget) {
            break;
        }
        let t0 = Instant::now();
        for _ in 0..first {
            if stopped() {
                break;
            }
            measure(engine, i, &mut runs, &mut took)?;
        }
        slowest = slowest.max(t0.elapsed());
        tried += 1;
    }
    let mut in_race: Vec<bool> = runs.iter().map(|r| r.len() >= first).collect();
    let mut looks = 0;
    let mut target = first;
    let decision = loop {
        looks += 1;
        if let Some(d) = look(&runs, &mut in_race, kernel) {
            break d;
        }
        if looks == LOOKS || stopped() {
            break unresolved(&runs, &in_race, kernel);
        }
        // Another round (one run of each candidate left) until each has
        // twice its runs, while a round fits in the budget.
        target *= 2;
        let left: Vec<usize> = (0..trials.len()).filter(|&i| in_race[i]).collect();
        let round: Duration = left
            .iter()
            .map(|&i| took[i] / runs[i].len().max(1) as u32)
            .sum();
        let mut ran = false;
        while left.iter().any(|&i| runs[i].len() < target)
            && start.elapsed() + round <= budget
            && !stopped()
        {
            for &i in &left {
                if runs[i].len() < target && !stopped() {
                    measure(engine, i, &mut runs, &mut took)?;
                }
            }
            ran = true;
        }
        if !ran {
            break unresolved(&runs, &in_race, kernel);
        }
        if left.iter().any(|&i| runs[i].len() < target) {
            // The budget ended inside the round: this look is the last.
            looks += 1;
            break look(&runs, &mut in_race, kernel)
                .unwrap_or_else(|| unresolved(&runs, &in_race, kernel));
        }
    };
    Ok(Raced {
        runs,
        in_race,
        decision,
        looks,
        tried,
        elapsed: start.elapsed(),
    })
}

/// The measured candidates, best first, by the mean of their best rates.
pub fn ranking(records: &[Record], kernel: KernelId) -> Vec<(&Record, f64)> {
    let mut ranked: Vec<(&Record, f64)> = records
        .iter()
        .filter_map(|r| Some((r, r.mean(kernel)?)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked
}
