//! MPI ranks as a measurement source: each rank runs membw's protocol on
//! its own CPUs, meets the others at an MPI barrier around every timed
//! kernel, and sends what it measured to rank 0, which builds the
//! aggregate. Every wait on another rank has a deadline, so a rank that
//! fails or hangs is named instead of hanging the job. A rank may drive
//! several GPUs of its node (a device set shared out among its ranks):
//! its devices run at once, one thread each, and meet the other ranks
//! through one of them (`engine::together`); each device is its own entry
//! of the ranks.

use super::{RankRun, Ranks};
use crate::backend::Backend;
use crate::engine::source::Source as MeasurementSource;
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::protocol::{self, RankGate};
use crate::results::Measurement;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const READY: i32 = 11;
const GO: i32 = 12;
const RESULT: i32 = 13;

/// MPI's side of a multi-rank measurement.
pub struct MpiSource {
    // Dropping the universe finalizes MPI: it lives as long as the source.
    _universe: mpi::environment::Universe,
    link: Link,
    local_rank: Option<usize>,
    node_peak_gb_s: Option<f64>,
    outlier: f64,
    /// Where this rank's arrays live and how its kernels run: one
    /// backend, or one per device the rank drives.
    backends: Vec<Box<dyn Backend>>,
    /// Every backend's plan but the first's (which the engine holds), as
    /// prepared.
    more_plans: std::cell::RefCell<Vec<Plan>>,
}

/// This rank's way to the others: plain data, so that the team's leader
/// thread can use it (MPI's handles may not cross threads; the world
/// communicator is named afresh where it is needed).
struct Link {
    rank: usize,
    size: usize,
    timeout: Duration,
}

impl MpiSource {
    /// Joins the MPI job this process was started in.
    pub fn init(
        backends: Vec<Box<dyn Backend>>,
        local_rank: Option<usize>,
        node_peak_gb_s: Option<f64>,
        outlier: f64,
        timeout: Duration,
    ) -> Result<MpiSource> {
        // The team's leader thread, not the main thread, waits at the
        // barriers; one thread at a time calls MPI.
        let (universe, provided) = mpi::initialize_with_threading(mpi::Threading::Serialized)
            .ok_or_else(|| Error::Runtime("MPI was already initialized".into()))?;
        if provided < mpi::Threading::Serialized {
            return Err(Error::Runtime(format!(
                "this MPI library offers threading level {}; membw needs serialized (MPI_THREAD_SERIALIZED)",
                match provided {
                    mpi::Threading::Single => "single (MPI_THREAD_SINGLE)",
                    mpi::Threading::Funneled => "funneled (MPI_THREAD_FUNNELED)",
                    mpi::Threading::Serialized => "serialized (MPI_THREAD_SERIALIZED)",
                    mpi::Threading::Multiple => "multiple (MPI_THREAD_MULTIPLE)",
                }
            )));
        }
        let world = universe.world();
        let link = Link {
            rank: world.rank() as usize,
            size: world.size() as usize,
            timeout,
        };
        Ok(MpiSource {
            _universe: universe,
            link,
            local_rank,
            node_peak_gb_s,
            outlier,
            backends,
            more_plans: Default::default(),
        })
    }

    pub fn rank(&self) -> usize {
        self.link.rank
    }
}

impl Link {
    fn world(&self) -> SimpleCommunicator {
        SimpleCommunicator::world()
    }

    /// Ends the whole job after rank 0 has said why.
    fn abort(&self, message: &str) -> ! {
        crate::say!("membw: rank {}: {message}", self.rank);
        self.world().abort(3)
    }

    /// Receives one message with `tag` from `rank`, waiting until the deadline.
    fn receive_from(&self, rank: usize, tag: i32, deadline: Instant) -> Option<Vec<u8>> {
        let world = self.world();
        let process = world.process_at_rank(rank as i32);
        loop {
            if let Some(probed) = process.immediate_matched_probe_with_tag(tag) {
                let (bytes, _) = probed.matched_receive_vec::<u8>();
                return Some(bytes);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Rank 0 receives one message with `tag` from every rank (its own
    /// given), or names those that sent nothing in time and aborts.
    fn collect(&self, tag: i32, own: Vec<u8>, waiting_for: &str) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + self.timeout;
        let mut got = vec![own];
        let mut missing = Vec::new();
        for rank in 1..self.size {
            match self.receive_from(rank, tag, deadline) {
                Some(bytes) => got.push(bytes),
                None => {
                    missing.push(rank.to_string());
                    got.push(Vec::new());
                }
            }
        }
        if !missing.is_empty() {
            self.abort(&format!(
                "rank {} sent no {waiting_for} within {}: it failed, died or hangs",
                missing.join(", "),
                humantime::format_duration(self.timeout)
            ));
        }
        got
    }
}

/// What a rank says when it gets to the start line.
#[derive(serde::Serialize, serde::Deserialize)]
struct Ready {
    host: String,
    error: Option<String>,
}

/// The MPI barriers around each kernel, and the readiness check before.
struct Gate<'a> {
    link: &'a Link,
    asked: AtomicBool,
    /// Set on this rank when its own setup failed.
    own_error: std::sync::Mutex<Option<String>>,
    /// On rank 0: the ranks that failed, with their reasons.
    failures: std::sync::Mutex<Vec<String>>,
}

impl Gate<'_> {
    fn barrier(&self, at: &str) {
        let deadline = Instant::now() + self.link.timeout;
        let mut request = self.link.world().immediate_barrier();
        loop {
            match request.test() {
                Ok(_) => return,
                Err(pending) => request = pending,
            }
            if Instant::now() > deadline {
                self.link.abort(&format!(
                    "the other ranks did not reach {at} within {}",
                    humantime::format_duration(self.link.timeout)
                ));
            }
            std::hint::spin_loop();
        }
    }
}

impl RankGate for Gate<'_> {
    fn ready(&self) -> bool {
        self.asked.store(true, Ordering::Relaxed);
        let s = self.link;
        let mine = serde_json::to_vec(&Ready {
            host: crate::sys::hostname(),
            error: self.own_error.lock().ok().and_then(|e| e.clone()),
        })
        .unwrap_or_default();
        if s.rank == 0 {
            let all = s.collect(READY, mine, "word that it was ready");
            let mut failures = Vec::new();
            for (rank, bytes) in all.iter().enumerate() {
                match serde_json::from_slice::<Ready>(bytes) {
                    Ok(Ready { error: None, .. }) => {}
                    Ok(Ready {
                        host,
                        error: Some(e),
                    }) => failures.push(format!("rank {rank} ({host}): {e}")),
                    Err(_) => failures.push(format!("rank {rank}: an unreadable message")),
                }
            }
            let go = [u8::from(failures.is_empty())];
            let world = s.world();
            for rank in 1..s.size {
                world
                    .process_at_rank(rank as i32)
                    .send_with_tag(&go[..], GO);
            }
            let ok = failures.is_empty();
            if let Ok(mut f) = self.failures.lock() {
                *f = failures;
            }
            ok
        } else {
            s.world().process_at_rank(0).send_with_tag(&mine[..], READY);
            let deadline = Instant::now() + s.timeout;
            match s.receive_from(0, GO, deadline) {
                Some(go) => go.first() == Some(&1),
                None => s.abort("rank 0 did not say go in time"),
            }
        }
    }

    fn start(&self) {
        self.barrier("the start of a kernel");
    }

    fn finish(&self) {
        self.barrier("the end of a kernel");
    }

    fn fail(&self, why: String) {
        if let Ok(mut own) = self.own_error.lock() {
            *own = Some(why);
        }
    }
}

impl MeasurementSource for MpiSource {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn reports(&self) -> bool {
        self.rank() == 0
    }

    fn prepare(
        &self,
        topo: &crate::topology::Topology,
        settings: &crate::plan::Settings,
    ) -> Result<crate::plan::Prepared> {
        let mut prepared = (self.backends.iter())
            .map(|b| b.prepare(topo, settings))
            .collect::<Result<Vec<_>>>()?;
        *self.more_plans.borrow_mut() = prepared.iter().skip(1).map(|p| p.plan.clone()).collect();
        match prepared.is_empty() {
            true => Err(Error::Runtime("a rank with no backend".into())),
            false => Ok(prepared.swap_remove(0)),
        }
    }

    // Ranks under a gate finish together and read no stop.
    fn measure(&mut self, plan: &Plan, _: &crate::sys::Stop) -> Result<Measurement> {
        let mut plans = vec![plan.clone()];
        plans.extend(self.more_plans.borrow().iter().cloned());
        let MpiSource {
            link,
            local_rank,
            node_peak_gb_s,
            outlier,
            backends,
            ..
        } = self;
        let gate = Gate {
            link,
            asked: AtomicBool::new(false),
            own_error: Default::default(),
            failures: Default::default(),
        };
        let measured = match backends.len() {
            1 => protocol::measure(backends[0].as_mut(), plan, Some(&gate), None).map(|g| vec![g]),
            _ => crate::engine::together::gated(backends, &plans, Some(&gate))
                .map(|all| all.into_iter().map(|(g, _)| g).collect()),
        };
        let measured = match measured {
            Ok(g) => g,
            Err(e) => {
                // Failed before the start line (memory, pinning): say so
                // there, so the other ranks stop too.
                if !gate.asked.load(Ordering::Relaxed) {
                    gate.fail(e.to_string());
                    gate.ready();
                }
                let failures = gate.failures.into_inner().unwrap_or_default();
                if link.rank == 0 && !failures.is_empty() {
                    return Err(Error::Runtime(format!(
                        "{} failed before measuring: {}",
                        crate::units::plural(failures.len(), "rank"),
                        failures.join("; ")
                    )));
                }
                return Err(e);
            }
        };
        let mine: Vec<RankRun> = (measured.iter())
            .map(|g| {
                RankRun::new(
                    link.rank,
                    *local_rank,
                    crate::sys::hostname(),
                    &g.measurement,
                    &g.synced_times,
                    *node_peak_gb_s,
                )
            })
            .collect();
        let mut m = measured
            .into_iter()
            .next()
            .map(|g| g.measurement)
            .ok_or_else(|| Error::Runtime("a rank measured no device".into()))?;
        let mine = serde_json::to_vec(&mine).unwrap_or_default();
        if link.rank != 0 {
            link.world()
                .process_at_rank(0)
                .send_with_tag(&mine[..], RESULT);
            return Ok(m);
        }
        let runs: Vec<RankRun> = link
            .collect(RESULT, mine, "result")
            .iter()
            .enumerate()
            .map(|(rank, bytes)| {
                serde_json::from_slice::<Vec<RankRun>>(bytes).map_err(|e| {
                    Error::Runtime(format!("rank {rank} sent an unreadable result: {e}"))
                })
            })
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        let ranks = Ranks::summarize("mpi", runs, *outlier)
            .ok_or_else(|| Error::Runtime("no rank measured a kernel".into()))?;
        ranks.aggregate_into(&mut m, plan.stores(), crate::results::AggregateOf::Ranks);
        Ok(m)
    }
}
