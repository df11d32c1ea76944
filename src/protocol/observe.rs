//! Observers: what watches a measurement's timed window. The protocol
//! starts every registered observer just before the first timed
//! repetition and stops it just after the last (neither inside a timed
//! call), then asks each what it saw of the CPUs measured; the record
//! keeps each observation where its [`KeepsObservations`] puts it. The
//! latency probes watch each point's window the same way ([`Watch`]).
//!
//! The observers today: the tick counters of `/proc/stat` (`crate::trust`:
//! other work and steal beside the run) and a GPU's clocks held back by
//! power or heat (NVML's violation counters, [`GpuClocks`]). Another (memory
//! controller counters) is an [`Observer`], an [`Observation`] variant and
//! one line in [`OBSERVERS`].

use crate::results::Measurement;
use crate::trust::{Effect, HeldBack, Interference, Scope, Snapshot};

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
    /// The device measured, by PCI address, where the target is one.
    pub device: Option<&'a str>,
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
    /// The device's clocks held back while the window was open.
    HeldBack(HeldBack),
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
            Observation::HeldBack(h) => {
                // A rate measured while its clocks were held back is not
                // the memory's: a finding, as other work on the CPUs is.
                if let Some(finding) = h.finding(Effect::Bandwidth) {
                    let i = self.interference.get_or_insert_with(Default::default);
                    i.findings.push(finding);
                    i.busy = true;
                }
                self.held_back = Some(h);
            }
        }
    }
}

/// A latency point keeps them as a measurement does.
impl KeepsObservations for crate::results::latency_record::Latency {
    fn keep(&mut self, seen: Observation) {
        match seen {
            Observation::CpuTicks(i) => self.interference = Some(i),
            // Latency is measured on host memory: no device to hold back.
            Observation::HeldBack(_) => {}
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
pub const OBSERVERS: &[(&str, MakeObserver)] = &[
    ("cpu-ticks", || Box::new(CpuTicks::default())),
    ("gpu-clocks", || Box::new(GpuClocks::default())),
];

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

/// Every GPU's violation counters (NVML), read as the window opens and
/// closes; what it saw is the measured device's. Nothing where NVML does
/// not load, or where the target is not a GPU.
#[derive(Default)]
pub struct GpuClocks {
    start: Option<(
        std::time::Instant,
        Vec<crate::backend::cuda::nvml::HeldBack>,
    )>,
    end: Option<(
        std::time::Instant,
        Vec<crate::backend::cuda::nvml::HeldBack>,
    )>,
}

impl Observer for GpuClocks {
    fn start(&mut self) {
        self.start = Some((
            std::time::Instant::now(),
            crate::backend::cuda::nvml::held_back_ns(),
        ));
    }
    fn stop(&mut self) {
        self.end = Some((
            std::time::Instant::now(),
            crate::backend::cuda::nvml::held_back_ns(),
        ));
    }
    fn observe(&self, window: &Window) -> Option<Observation> {
        let bus_id = window.device?;
        let ((t0, before), (t1, after)) = (self.start.as_ref()?, self.end.as_ref()?);
        let of = |all: &[crate::backend::cuda::nvml::HeldBack]| {
            all.iter().find(|g| g.bus_id == bus_id).cloned()
        };
        let (before, after) = (of(before)?, of(after)?);
        let s = |a: u64, b: u64| a.saturating_sub(b) as f64 / 1e9;
        Some(Observation::HeldBack(HeldBack {
            bus_id: bus_id.to_string(),
            window_s: (*t1 - *t0).as_secs_f64(),
            power_s: s(after.power_ns, before.power_ns),
            thermal_s: s(after.thermal_ns, before.thermal_ns),
            sm_mhz: after.sm_mhz,
            memory_mhz: after.memory_mhz,
        }))
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
            device: None,
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

    /// A device whose clocks were held back over the window makes the
    /// measurement's figures doubtful, as other work on its CPUs does; a
    /// window with none held back says nothing.
    #[test]
    fn clocks_held_back_are_a_finding_of_the_window() {
        let mut held = HeldBack {
            bus_id: "0000:18:00.0".into(),
            window_s: 0.5,
            power_s: 0.0,
            thermal_s: 0.0,
            sm_mhz: Some(1980),
            memory_mhz: Some(2619),
        };
        assert_eq!(held.finding(Effect::Bandwidth), None);
        held.thermal_s = 0.1;
        let finding = held.finding(Effect::Bandwidth).unwrap();
        assert!(finding.contains("0000:18:00.0 had its clocks held back 20 % of the window (power 0.0 ms, heat 100.0 ms)"), "{finding}");
        // With no GPU (or no NVML) the observer sees nothing.
        let clocks = GpuClocks::default();
        let window = Window {
            cpus: &[0],
            one_rank_of_many: false,
            effect: Effect::Bandwidth,
            device: Some("0000:18:00.0"),
        };
        assert!(clocks.observe(&window).is_none());
    }
}
