//! A set of devices measured all at once: one host thread per device,
//! each running the protocol over its own backend and plan, every timed
//! kernel started and ended together by an in-process gate (as MPI's
//! barriers gate ranks). What each device got under the others' load is
//! its own record; the aggregate is every device's bytes over the slowest
//! one's time, as for ranks (`results::ranks`).

use super::source::Source;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::plan::{Plan, Prepared, Settings};
use crate::protocol::{self, RankGate};
use crate::results::Measurement;
use crate::results::ranks::{RankRun, Ranks};
use crate::topology::Topology;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};

/// What the devices share: the start line, whether one failed before it
/// (and why), and the gate of the ranks around them, where this process
/// is one rank of several.
struct Shared<'o> {
    barrier: Barrier,
    failed: AtomicBool,
    why: Mutex<Vec<String>>,
    outer: Option<&'o dyn RankGate>,
}

/// One device's side of the gate: every device of the process meets at
/// each line; one of them (the barrier's leader) passes the ranks' gate
/// for all, and they go on together.
struct DeviceGate<'a, 'o> {
    shared: &'a Shared<'o>,
    asked: AtomicBool,
}

impl DeviceGate<'_, '_> {
    /// Meets the other devices, and `across` the ranks by one of them
    /// (then meets them again, so that none goes on before the ranks
    /// have met). Without ranks, one meeting: as before there were any.
    fn meet(&self, across: impl FnOnce(&dyn RankGate)) {
        let leader = self.shared.barrier.wait().is_leader();
        let Some(outer) = self.shared.outer else {
            return;
        };
        if leader {
            across(outer);
        }
        self.shared.barrier.wait();
    }
}

impl RankGate for DeviceGate<'_, '_> {
    fn ready(&self) -> bool {
        self.asked.store(true, Ordering::Relaxed);
        let shared = self.shared;
        self.meet(|outer| {
            if shared.failed.load(Ordering::Relaxed) {
                let why = shared.why.lock().map(|w| w.join("; ")).unwrap_or_default();
                outer.fail(why);
            }
            if !outer.ready() {
                shared.failed.store(true, Ordering::Relaxed);
            }
        });
        !shared.failed.load(Ordering::Relaxed)
    }
    fn start(&self) {
        self.meet(|outer| outer.start());
    }
    fn finish(&self) {
        self.meet(|outer| outer.finish());
    }
}

/// What one device measured under the gate.
pub struct OneOfMany {
    pub measurement: Measurement,
    pub plan: Plan,
}

/// Every device at once, each from its own thread, started and ended
/// together (and with the other ranks' devices, through `outer`): each
/// device's own gated run, in the set's order.
pub fn gated(
    backends: &mut [Box<dyn Backend>],
    plans: &[Plan],
    outer: Option<&dyn RankGate>,
) -> Result<Vec<(protocol::Gated, Plan)>> {
    let shared = Shared {
        barrier: Barrier::new(backends.len()),
        failed: AtomicBool::new(false),
        why: Mutex::new(Vec::new()),
        outer,
    };
    let results: Vec<Result<protocol::Gated>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (backends.iter_mut().zip(plans))
            .map(|(backend, plan)| {
                let shared = &shared;
                scope.spawn(move || {
                    let gate = DeviceGate {
                        shared,
                        asked: AtomicBool::new(false),
                    };
                    let gated = protocol::measure(backend.as_mut(), plan, Some(&gate), None);
                    // Failed before the start line: the others (and the
                    // other ranks) are told there, and none measures.
                    if let Err(e) = &gated
                        && !gate.asked.load(Ordering::Relaxed)
                    {
                        shared.failed.store(true, Ordering::Relaxed);
                        if let Ok(mut why) = shared.why.lock() {
                            why.push(e.to_string());
                        }
                        gate.ready();
                    }
                    gated
                })
            })
            .collect();
        (threads.into_iter())
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(Error::Runtime("a device's thread panicked".into())))
            })
            .collect()
    });
    let mut failures = Vec::new();
    let mut measured = Vec::new();
    for ((r, plan), backend) in results.into_iter().zip(plans).zip(backends.iter()) {
        let name = plan
            .target
            .device_name()
            .unwrap_or(backend.name())
            .to_string();
        match r {
            Ok(g) => measured.push((g, plan.clone())),
            // The others' "another rank failed" says nothing new.
            Err(Error::Runtime(e)) if e.starts_with("another rank failed") => {}
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    if !failures.is_empty() || measured.len() != plans.len() {
        return Err(Error::Runtime(format!(
            "the devices could not be measured all at once: {}",
            failures.join("; ")
        )));
    }
    Ok(measured)
}

/// Every device of the set at once, each from its own thread; each
/// device's own measurement, in the set's order, and the aggregate.
pub fn measure(
    backends: &mut [Box<dyn Backend>],
    plans: &[Plan],
    outlier: f64,
) -> Result<(Vec<OneOfMany>, Ranks)> {
    let measured = gated(backends, plans, None)?;
    let host = crate::sys::hostname();
    let runs: Vec<RankRun> = (measured.iter().enumerate())
        .map(|(i, (g, plan))| {
            let peak = plan.target.memory_peak(None).map(|p| p.node_gb_s());
            RankRun::new(
                i,
                Some(i),
                host.clone(),
                &g.measurement,
                &g.synced_times,
                peak,
            )
        })
        .collect();
    let ranks = Ranks::summarize("devices", runs, outlier)
        .ok_or_else(|| Error::Runtime("no device measured a kernel".into()))?;
    let each = (measured.into_iter())
        .map(|(g, plan)| OneOfMany {
            measurement: g.measurement,
            plan,
        })
        .collect();
    Ok((each, ranks))
}

/// A device set as one source for the engine: the devices at once, under
/// the gate. It prepares every device's plan; the engine sees the first
/// one's, and its measurement is the aggregate with every device's own in
/// its ranks.
pub struct TogetherSource {
    pub backends: Vec<Box<dyn Backend>>,
    pub outlier: f64,
    plans: RefCell<Vec<Plan>>,
    /// Each device's own measurement of the last run.
    pub each: Vec<OneOfMany>,
}

impl TogetherSource {
    pub fn new(backends: Vec<Box<dyn Backend>>, outlier: f64) -> TogetherSource {
        TogetherSource {
            backends,
            outlier,
            plans: RefCell::new(Vec::new()),
            each: Vec::new(),
        }
    }
}

impl Source for TogetherSource {
    fn name(&self) -> &'static str {
        "stream"
    }

    fn prepare(&self, topo: &Topology, settings: &Settings) -> Result<Prepared> {
        let prepared = (self.backends.iter())
            .map(|b| b.prepare(topo, settings))
            .collect::<Result<Vec<Prepared>>>()?;
        *self.plans.borrow_mut() = prepared.iter().map(|p| p.plan.clone()).collect();
        prepared
            .into_iter()
            .next()
            .ok_or_else(|| Error::Runtime("a device set of no device".into()))
    }

    fn measure(&mut self, plan: &Plan, _: &crate::sys::Stop) -> Result<Measurement> {
        let plans = self.plans.borrow().clone();
        if plans.first().map(|p| &p.target) != Some(&plan.target) {
            return Err(Error::Runtime(
                "membw's bug: a device set measured a plan it did not prepare".into(),
            ));
        }
        let (each, ranks) = measure(&mut self.backends, &plans, self.outlier)?;
        let mut m = each[0].measurement.clone();
        ranks.aggregate_into(&mut m, plan.stores(), crate::results::AggregateOf::Devices);
        self.each = each;
        Ok(m)
    }
}
