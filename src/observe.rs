//! Observers: what watches a measurement's timed window. A backend says
//! which observers watch its target (`Backend::observers`: the CPU team
//! and the simulated device, the CPUs' tick counters; a CUDA GPU, its
//! clocks held back by power or heat, from NVML, which nothing else
//! loads). The protocol makes them before the backend opens, starts them
//! just before the first timed repetition and stops them just after the
//! last (neither inside a timed call), then asks each what it saw; the
//! record keeps each observation where its [`KeepsObservations`] puts it.
//! An observer that cannot judge a window (shorter than it can see into)
//! says so: "not judged" is a result of its own, never "trusted". The
//! latency probes watch each point's window the same way ([`Watch`]).
//!
//! Another observer (memory controller counters) is an [`Observer`] and,
//! where it has a finding of a new kind, an [`Observation`] variant.

use crate::results::Measurement;
use crate::trust::{Effect, HeldBack, Interference, JudgedCpus, Snapshot};

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
    /// The shortest window it can judge, seconds.
    fn shortest_window_s(&self) -> f64;
    /// Reads what it watches as the window opens.
    fn start(&mut self);
    /// Reads it again as the window closes.
    fn stop(&mut self);
    /// What it saw over the window; `None` when it saw nothing (it was not
    /// started and stopped, or what it reads is not on this machine).
    fn observe(&self, window: &Window) -> Option<Observation>;
}

/// A device's state read as a window opens and as it closes (a GPU's
/// management library: its counters, or its status), and what the two
/// readings say together: an [`Observer`] through [`AtEnds`].
pub trait ReadAtEnds: Send {
    type Reading: Send;
    /// The state now; `None` where the library does not say.
    fn read(&self) -> Option<Self::Reading>;
    /// What the two readings `window_s` apart say.
    fn seen(&self, window_s: f64, before: &Self::Reading, after: &Self::Reading) -> Observation;
}

/// The observer of a [`ReadAtEnds`]: it judges any window, the readings
/// being the library's own.
pub struct AtEnds<R: ReadAtEnds> {
    reader: R,
    start: Option<(std::time::Instant, R::Reading)>,
    end: Option<(std::time::Instant, R::Reading)>,
}

impl<R: ReadAtEnds> AtEnds<R> {
    pub fn new(reader: R) -> AtEnds<R> {
        AtEnds {
            reader,
            start: None,
            end: None,
        }
    }

    fn read(&self) -> Option<(std::time::Instant, R::Reading)> {
        let now = std::time::Instant::now();
        self.reader.read().map(|r| (now, r))
    }
}

impl<R: ReadAtEnds> Observer for AtEnds<R> {
    fn shortest_window_s(&self) -> f64 {
        0.0
    }
    fn start(&mut self) {
        self.start = self.read();
    }
    fn stop(&mut self) {
        self.end = self.read();
    }
    fn observe(&self, _window: &Window) -> Option<Observation> {
        let ((t0, before), (t1, after)) = (self.start.as_ref()?, self.end.as_ref()?);
        Some(self.reader.seen((*t1 - *t0).as_secs_f64(), before, after))
    }
}

/// What an observer saw, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// Other work and steal on the CPUs while the window was open.
    OtherWork(Interference),
    /// The device's clocks held back while the window was open.
    HeldBack(HeldBack),
    /// Where the scheduler moved unbound threads while the window was
    /// open, by thread number.
    Moves(Vec<ThreadMoves>),
}

/// One unbound thread of the team, as the scheduler moved it over the
/// window.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadMoves {
    pub thread: usize,
    /// Times the kernel moved it to another CPU (None: the kernel keeps
    /// no count).
    pub migrations: Option<u64>,
    /// The CPU it was on as the window closed.
    pub last_cpu: usize,
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
            Observation::OtherWork(i) => self.interference = Some(i),
            Observation::Moves(moves) => {
                for m in moves {
                    if let Some(t) = self.threads.iter_mut().find(|t| t.thread == m.thread) {
                        t.migrations = m.migrations;
                        t.last_cpu = Some(m.last_cpu);
                    }
                }
            }
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
            Observation::OtherWork(i) => self.interference = Some(i),
            // Latency is measured on host memory by pinned threads: no
            // device to hold back, nothing unbound.
            Observation::HeldBack(_) | Observation::Moves(_) => {}
        }
    }
}

/// The observers of one window: started together, stopped together,
/// their observations kept together.
pub struct Watch(Vec<Box<dyn Observer>>);

impl Watch {
    /// These observers, not yet started.
    pub fn new(observers: Vec<Box<dyn Observer>>) -> Watch {
        Watch(observers)
    }

    /// What watches work on the host's CPUs over host memory (a latency
    /// probe's chase): the CPUs' tick counters, started now.
    pub fn host_started() -> Watch {
        let mut watch = Watch::new(vec![Box::new(OtherWork::default())]);
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

/// Unbound threads of the team (`membw-N`, as `team::run` names them),
/// read as the window opens and closes: how often the kernel moved each,
/// and where it was at the end. Read off /proc, never inside the timed
/// calls.
#[derive(Default)]
pub struct SchedulerMoves {
    start: Vec<crate::sys::TaskMoves>,
    end: Vec<crate::sys::TaskMoves>,
}

impl Observer for SchedulerMoves {
    /// The kernel counts every move: any window is judged.
    fn shortest_window_s(&self) -> f64 {
        0.0
    }
    fn start(&mut self) {
        self.start = crate::sys::own_task_moves();
    }
    fn stop(&mut self) {
        self.end = crate::sys::own_task_moves();
    }
    fn observe(&self, _window: &Window) -> Option<Observation> {
        let moves: Vec<ThreadMoves> = (self.end.iter())
            .filter_map(|end| {
                let thread = end.name.strip_prefix("membw-")?.parse().ok()?;
                let start = self.start.iter().find(|s| s.tid == end.tid)?;
                Some(ThreadMoves {
                    thread,
                    migrations: end
                        .migrations
                        .zip(start.migrations)
                        .map(|(b, a)| b.saturating_sub(a)),
                    last_cpu: end.cpu,
                })
            })
            .collect();
        (!moves.is_empty()).then_some(Observation::Moves(moves))
    }
}

/// The CPUs' busy, idle and steal ticks and membw's own threads' ticks,
/// read as the window opens and closes.
#[derive(Default)]
pub struct OtherWork {
    start: Option<Snapshot>,
    end: Option<Snapshot>,
}

impl Observer for OtherWork {
    /// A finding needs [`crate::trust::MIN_TICKS`] ticks of other work or
    /// steal: a shorter window cannot hold one.
    fn shortest_window_s(&self) -> f64 {
        crate::trust::MIN_TICKS as f64 / crate::sys::ticks_per_second()
    }
    fn start(&mut self) {
        self.start = Some(Snapshot::take());
    }
    fn stop(&mut self) {
        self.end = Some(Snapshot::take());
    }
    fn observe(&self, window: &Window) -> Option<Observation> {
        let (start, end) = (self.start.as_ref()?, self.end.as_ref()?);
        let scope = match window.one_rank_of_many {
            true => JudgedCpus::rank(window.cpus),
            false => JudgedCpus::node(window.cpus),
        };
        let mut seen = start.until(end, scope, 0, window.effect);
        let shortest = self.shortest_window_s();
        if seen.window_s < shortest {
            seen.not_judged = Some(format!(
                "the CPUs' tick counters cannot judge the {} measured (they need {} at least)",
                crate::results::targets::method::seconds(seen.window_s),
                crate::results::targets::method::seconds(shortest)
            ));
        }
        Some(Observation::OtherWork(seen))
    }
}

/// Other work on `cpus` while this process sleeps for `window`, judged by
/// the rule a measurement's window is: its cause, or `None` on quiet CPUs
/// (or none given, or tick counters that cannot be read).
pub fn busy_while_idle(cpus: &[usize], window: std::time::Duration) -> Option<String> {
    if cpus.is_empty() {
        return None;
    }
    let mut ticks = OtherWork::default();
    ticks.start();
    std::thread::sleep(window);
    ticks.stop();
    let seen = ticks.observe(&Window {
        cpus,
        one_rank_of_many: false,
        effect: Effect::Bandwidth,
    });
    match seen {
        Some(Observation::OtherWork(i)) if i.busy && i.not_judged.is_none() => {
            let watched = window.as_secs_f64();
            i.cause()
                .map(|c| format!("{c} (watched {watched} s before measuring)"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_observer_sees_nothing_of_a_window_it_did_not_watch() {
        let mut ticks = OtherWork::default();
        let window = Window {
            cpus: &[0],
            one_rank_of_many: false,
            effect: Effect::Bandwidth,
        };
        assert!(ticks.observe(&window).is_none());
        ticks.start();
        assert!(ticks.observe(&window).is_none());
        ticks.stop();
        let Some(Observation::OtherWork(seen)) = ticks.observe(&window) else {
            panic!("a watched window has an observation");
        };
        assert!(seen.window_s >= 0.0);
        // A window shorter than three ticks is not judged, not clean.
        assert!(
            seen.not_judged
                .as_deref()
                .is_some_and(|w| w.contains("cannot judge")),
            "{seen:?}"
        );
    }

    /// An unbound team thread that the kernel moves while the window is
    /// open is seen moving: here a thread named as the team names its
    /// members is moved between two CPUs by its own affinity (a forced
    /// migration), as the scheduler would move it.
    #[test]
    fn the_scheduler_s_moves_of_an_unbound_thread_are_counted() {
        let cpus = crate::sys::thread_affinity(0).unwrap_or_default();
        let [a, b, ..] = cpus[..] else {
            eprintln!("skipped: one CPU only, nothing to move between");
            return;
        };
        if crate::sys::own_task_moves()
            .iter()
            .all(|t| t.migrations.is_none())
        {
            eprintln!("skipped: this kernel keeps no se.nr_migrations");
            return;
        }
        let barrier = || std::sync::Barrier::new(2);
        let (go, started, done, leave) = (barrier(), barrier(), barrier(), barrier());
        let mut moves = SchedulerMoves::default();
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("membw-0".into())
                .spawn_scoped(s, || {
                    crate::sys::pin_current_thread(a).unwrap();
                    go.wait();
                    // Moves only once the window is open.
                    started.wait();
                    for round in 0..6 {
                        let cpu = if round % 2 == 0 { b } else { a };
                        crate::sys::pin_current_thread(cpu).unwrap();
                        std::hint::black_box((0..10_000).sum::<u64>());
                    }
                    done.wait();
                    // Alive until the window is read.
                    leave.wait();
                })
                .unwrap();
            go.wait();
            moves.start();
            started.wait();
            done.wait();
            moves.stop();
            leave.wait();
        });
        let window = Window {
            cpus: &[a],
            one_rank_of_many: false,
            effect: Effect::Bandwidth,
        };
        let Some(Observation::Moves(seen)) = moves.observe(&window) else {
            panic!("the team's thread was not seen");
        };
        let m = seen.iter().find(|m| m.thread == 0).unwrap();
        assert!(m.migrations.unwrap() >= 6, "{m:?}");
        assert_eq!(m.last_cpu, a);
    }

    /// A device read at the window's two ends: nothing before it has been
    /// started and stopped, then what its two readings say, in order.
    #[test]
    fn a_state_read_at_both_ends_is_observed_from_the_two_readings() {
        struct Counter(std::sync::atomic::AtomicU32);
        impl ReadAtEnds for Counter {
            type Reading = u32;
            fn read(&self) -> Option<u32> {
                Some(self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
            }
            fn seen(&self, window_s: f64, before: &u32, after: &u32) -> Observation {
                assert!(window_s >= 0.0);
                Observation::Moves(vec![ThreadMoves {
                    thread: *before as usize,
                    migrations: None,
                    last_cpu: *after as usize,
                }])
            }
        }
        let mut watch = AtEnds::new(Counter(Default::default()));
        let window = Window {
            cpus: &[],
            one_rank_of_many: false,
            effect: Effect::Bandwidth,
        };
        assert_eq!(watch.observe(&window), None);
        watch.start();
        assert_eq!(watch.observe(&window), None);
        watch.stop();
        let Some(Observation::Moves(m)) = watch.observe(&window) else {
            panic!("not observed")
        };
        assert_eq!((m[0].thread, m[0].last_cpu), (0, 1));
    }

    /// A device whose clocks were held back over the window makes the
    /// measurement's figures doubtful, as other work on its CPUs does; a
    /// window with none held back says nothing.
    #[test]
    fn clocks_held_back_are_a_finding_of_the_window() {
        let mut held = HeldBack {
            bus_id: "0000:18:00.0".into(),
            window_s: 0.5,
            power_s: Some(0.0),
            thermal_s: Some(0.0),
            at_ends: Vec::new(),
            sm_mhz: Some(1980),
            memory_mhz: Some(2619),
        };
        assert_eq!(held.finding(Effect::Bandwidth), None);
        held.thermal_s = Some(0.1);
        let finding = held.finding(Effect::Bandwidth).unwrap();
        assert!(finding.contains("0000:18:00.0 had its clocks held back 20 % of the window (power 0.0 ms, heat 100.0 ms)"), "{finding}");
        // A library that reports a status, not a time (ROCm SMI), says
        // what held the clocks back at the window's ends, and no seconds.
        let status = HeldBack {
            power_s: None,
            thermal_s: None,
            ..held.clone()
        };
        assert_eq!(status.finding(Effect::Bandwidth), None);
        assert!(
            status
                .quiet_part()
                .contains("not held back as the window opened and closed")
        );
        let hot = HeldBack {
            at_ends: vec!["heat (HBM)".into()],
            ..status
        };
        let finding = hot.finding(Effect::Bandwidth).unwrap();
        assert!(
            finding.contains("held back as the window opened or closed (heat (HBM))"),
            "{finding}"
        );
    }
}
