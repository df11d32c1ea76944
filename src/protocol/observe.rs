//! Observers: what watches a measurement's timed window. The protocol
//! starts every registered observer just before the first timed
//! repetition and stops it just after the last (neither inside a timed
//! call), then asks each what it saw of the CPUs measured; the record
//! keeps each observation where its [`KeepsObservations`] puts it. The
//! latency probes watch each point's window the same way ([`Watch`]).
//!
//! The tick counters of `/proc/stat` (`crate::trust`: other work and steal
//! beside the run) are the one observer today. A device's clocks and
//! throttling, or memory-controller counters, are each a module here: an
//! [`Observer`], an [`Observation`] variant and one line in [`OBSERVERS`].

use crate::results::Measurement;
use crate::trust::{Effect, Interference, Scope, Snapshot};

/// The CPUs a window is judged on.
pub struct Window<'a> {
    /// The CPUs measured, each once.
    pub cpus: &'a [usize],
    /// True when ranks of one job share the node: work on CPUs outside the
    /// rank's may be the job's own, and is not held against it.
    pub one_rank_of_many: bool,
    /// What other work would do to the figure (lower a bandwidth, raise a
    /// latency): how the findings are worded.
    pub effect: Effect,
}

/// What watches the timed window.
pub trait Observer: Send {
    /// Reads what it watches as the window opens.
    fn start(&mut self);
    /// Reads it again as the window closes.
    fn stop(&mut self);
    /// What it saw over the window; `None` when it saw nothing (it was not
    /// started and stopped, or what it reads is not on this machine).
    fn observe(&self, window: &Window) -> Option<Observation>;
}

/// What an observer saw, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// Other work and steal on the CPUs while the window was open.
    CpuTicks(Interference),
}

/// What keeps observations: a bandwidth measurement, a latency point.
pub trait KeepsObservations {
    fn keep(&mut self, seen: Observation);
}

/// The tick counters' findings are the measurement's `interference`, as
/// schema 1 wrote them.
impl KeepsObservations for Measurement {
    fn keep(&mut self, seen: Observation) {
        match seen {
            Observation::CpuTicks(i) => self.interference = Some(i),
        }
    }
}

/// A latency point keeps them as a measurement does.
impl KeepsObservations for crate::results::latency_record::Latency {
    fn keep(&mut self, seen: Observation) {
        match seen {
            Observation::CpuTicks(i) => self.interference = Some(i),
        }
    }
}

/// One of each registered observer over one window: started together,
/// stopped together, their observations kept together.
pub struct Watch(Vec<Box<dyn Observer>>);

impl Watch {
    /// Every registered observer, not yet started.
    pub fn new() -> Watch {
        Watch(all())
    }

    /// Every registered observer, started now.
    pub fn started() -> Watch {
        let mut watch = Watch::new();
        watch.start();
        watch
    }

    pub fn start(&mut self) {
        for o in &mut self.0 {
            o.start();
        }
    }

    pub fn stop(&mut self) {
        for o in &mut self.0 {
            o.stop();
        }
    }

    /// Puts what every observer saw of `window` into `into`.
    pub fn keep_in(&self, window: &Window, into: &mut impl KeepsObservations) {
        for seen in self.0.iter().filter_map(|o| o.observe(window)) {
            into.keep(seen);
        }
    }
}

impl Default for Watch {
    fn default() -> Self {
        Watch::new()
    }
}

/// Makes an observer.
pub type MakeObserver = fn() -> Box<dyn Observer>;

/// Every observer, by name: the one registration a new observer adds.
pub const OBSERVERS: &[(&str, MakeObserver)] = &[("cpu-ticks", || Box::new(CpuTicks::default()))];

/// One of each registered observer, not yet started.
pub fn all() -> Vec<Box<dyn Observer>> {
    OBSERVERS.iter().map(|(_, make)| make()).collect()
}

/// The CPUs' busy, idle and steal ticks and membw's own threads' ticks,
/// read as the window opens and closes.
#[derive(Default)]
pub struct CpuTicks {
    start: Option<Snapshot>,
    end: Option<Snapshot>,
}

impl Observer for CpuTicks {
    fn start(&mut self) {
        self.start = Some(Snapshot::take());
    }
    fn stop(&mut self) {
        self.end = Some(Snapshot::take());
    }
    fn observe(&self, window: &Window) -> Option<Observation> {
        let (start, end) = (self.start.as_ref()?, self.end.as_ref()?);
        let scope = match window.one_rank_of_many {
            true => Scope::rank(window.cpus),
            false => Scope::node(window.cpus),
        };
        Some(Observation::CpuTicks(start.until(
            end,
            scope,
            0,
            window.effect,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_observer_sees_nothing_of_a_window_it_did_not_watch() {
        let mut ticks = CpuTicks::default();
        let window = Window {
            cpus: &[0],
            one_rank_of_many: false,
            effect: Effect::Bandwidth,
        };
        assert!(ticks.observe(&window).is_none());
        ticks.start();
        assert!(ticks.observe(&window).is_none());
        ticks.stop();
        let Some(Observation::CpuTicks(seen)) = ticks.observe(&window) else {
            panic!("a watched window has an observation");
        };
        assert!(seen.window_s >= 0.0);
        assert_eq!(OBSERVERS.len(), all().len());
    }
}
