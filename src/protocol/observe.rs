//! Observers: what watches a measurement's timed window. The protocol
//! starts every registered observer just before the first timed
//! repetition and stops it just after the last (neither inside a timed
//! call), then asks each what it saw of the CPUs measured; the record
//! keeps each observation where [`Observation::keep_in`] puts it.
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

impl Observation {
    /// Puts the observation where records keep it: the tick counters'
    /// findings are the measurement's `interference`, as schema 1 wrote
    /// them.
    pub fn keep_in(self, m: &mut Measurement) {
        match self {
            Observation::CpuTicks(i) => m.interference = Some(i),
        }
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
            Effect::Bandwidth,
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
