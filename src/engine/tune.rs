//! `membw tune`: search threads × placement × store mode within a time
//! budget for the best sustained rate of one kernel, and say how to get it
//! in the user's own application.

use super::{BandwidthSession, Engine, Job};
use crate::error::Result;
use crate::kernels::KernelId;
use crate::memory::policy::MemPolicy;
use crate::placement::domains::Kind;
use crate::placement::{self, Domains, Spec, Strategy};
use crate::plan::{self, Measure, Settings, StoresRequest};
use crate::results::{Point, Record, RunResult};
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
    pub mem: (String, MemPolicy),
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
pub fn trials(topo: &Topology, spec: &TuneSpec) -> Result<Vec<Trial>> {
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
            let plan = plan::prepare(topo, &settings)?.plan;
            let point = Point::new(c.label.clone(), &spec.mem.0, stores, &plan, None);
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

/// How a search ended (its records are in the session).
pub struct Searched {
    /// Candidates measured (the last may be cut short by a signal).
    pub tried: usize,
    pub elapsed: Duration,
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

/// Measures trials in order until the budget would be overrun: a trial is
/// skipped when the slowest so far would not fit in what is left (the first
/// always runs). Records are kept in `session`.
pub fn search(
    engine: &mut Engine,
    session: &mut BandwidthSession,
    trials: &[Trial],
    repeat: usize,
    budget: Duration,
    on_run: &mut dyn FnMut(&Job, &RunResult),
) -> Result<Searched> {
    let start = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut tried = 0;
    for trial in trials {
        if session.signal().is_some() || (tried > 0 && start.elapsed() + slowest > budget) {
            break;
        }
        let t0 = Instant::now();
        engine.run(std::slice::from_ref(&trial.job), repeat, session, on_run)?;
        slowest = slowest.max(t0.elapsed());
        tried += 1;
    }
    Ok(Searched {
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
