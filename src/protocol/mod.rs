//! STREAM's measurement protocol: first-touch initialization, the timing
//! test, `ntimes` repetitions of every selected kernel timed barrier to
//! barrier, statistics without the first repetition, and validation against
//! the same recurrence STREAM's `checkSTREAMresults` uses.
//!
//! It runs over a [`Backend`] (where the arrays live and how a kernel runs
//! over them) and is the only place that times, repeats, computes
//! statistics and validates, whatever the backend. It returns a
//! [`Measurement`] (plain data) and prints nothing.

mod calibrate;
mod expected;
mod judge;

pub use expected::{
    EPSILON, Expected, INITIAL_VALUES, array_errors, expected_values, sum_tolerance,
};

use crate::backend::{Backend, Observed, ReadBack, TargetArrays, WithArrays};
use crate::error::{Error, Result};
use crate::observe;
use crate::plan::Plan;
use crate::results::measurement::{
    KernelResult, Measurement, ThreadPlacement, TimerCheck, Validation, add_spread_finding,
};
use crate::sys::Stop;
use crate::units::ELEMENT_BYTES;
pub use calibrate::repetition_floor;
use calibrate::{calibrate, choose_stores, round_trip};
use std::time::{Duration, Instant};

/// The most timed repetitions of a kernel in one run: long enough for a
/// burn-in (STREAM users raise NTIMES to load a node for minutes), bounded
/// so the times every repetition keeps stay a few MB.
pub const MAX_NTIMES: usize = 100_000;
/// Below this a kernel's time is too close to the timer to trust (STREAM:
/// 20 ticks); and below the second, the host's clock takes in too little
/// of what a run is (STREAM's advice). Both are the clock's rule:
/// `results::targets::Clock`.
pub use crate::results::targets::method::{MIN_HOST_SECONDS as MIN_KERNEL_SECONDS, MIN_TICKS};

/// How one rank of a multi-process measurement (MPI) keeps step with the
/// others. The protocol calls it between the backend's calls.
pub trait RankGate: Sync {
    /// After first touch and the timing test: whether every rank got this
    /// far (false: one failed, and no rank measures).
    fn ready(&self) -> bool;
    /// Before each timed kernel: returns once every rank is about to start.
    fn start(&self);
    /// After each timed kernel: returns once every rank has finished.
    fn finish(&self);
    /// Before `ready`, where this rank failed on its own: why, for the
    /// rank that reports (a gate of the process's devices tells the ranks'
    /// gate through it).
    fn fail(&self, _why: String) {}
}

/// The times of a gated run: each rank's own kernel times, and the times to
/// the moment the last rank finished (what the aggregate is made of).
pub struct Gated {
    pub measurement: Measurement,
    /// Per kernel, per repetition (`k * ntimes + rep`), start to the end of
    /// the finishing barrier.
    pub synced_times: Vec<f64>,
}

/// The smallest step of the clock, measured like STREAM's `checktick`.
pub fn clock_granularity() -> Duration {
    (0..20)
        .map(|_| {
            let t0 = Instant::now();
            loop {
                let t1 = Instant::now();
                if t1 > t0 {
                    break t1 - t0;
                }
            }
        })
        .min()
        .unwrap_or(Duration::from_nanos(1))
}

/// What the timed work saw, for the measurement.
struct Timed {
    times: Vec<f64>,
    /// Each thread's own time per timed run: `threads` slots per entry of `times`.
    thread_times: Vec<f64>,
    /// Whether the device timed its threads.
    threads_timed: bool,
    /// The host clock's time of each repetition, where the device timed it
    /// with its own (then `times` holds the device's).
    host_times: Vec<f64>,
    device_timed: bool,
    synced_times: Vec<f64>,
    timing_test: f64,
    first_touch_done: Option<Instant>,
    read_back: ReadBack,
    /// False when another rank failed and nothing was measured.
    measured: bool,
    /// What watches the timed window, started and stopped around the
    /// repetitions (made before the backend opens: nothing allocates then).
    observers: observe::Watch,
    /// Kernel calls per timed repetition: the plan's, or as calibrated.
    inner_repeats: usize,
    /// The device's round trip with no work, s.
    barrier_s: Option<f64>,
    /// What validation holds the arrays to (after calibration, which sets
    /// the calls a repetition makes).
    expected: Expected,
    /// Each kernel's launch, where the target had shapes to choose from.
    launches: Vec<Option<crate::results::measurement::ShapeRecord>>,
    /// How long a calibrated repetition had to last, s.
    floor_s: Option<f64>,
    /// Each kernel's stores (the CPU team's): as planned, or as timed
    /// before the repetitions where the plan left them to be measured.
    stores: Vec<Option<crate::kernels::KernelStores>>,
}

/// Runs the plan on `backend` and returns its measurement: the protocol's
/// repetitions lent to the backend's arrays, then judged. Fails only if
/// the system refuses memory or pinning; a failed validation is reported
/// in the data. `stop` ends a lone run between repetitions (an Interrupted
/// error). As one rank of several, every timed kernel starts and ends
/// together with the other ranks' through `gate`; ranks finish together
/// (one leaving alone at a stop would hang the others), so they have no
/// stop.
pub fn measure(
    backend: &mut dyn Backend,
    plan: &Plan,
    gate: Option<&dyn RankGate>,
    stop: Option<&Stop>,
) -> Result<Gated> {
    let mut repetitions = Repetitions::new(plan, backend.observers(plan), gate, stop);
    let observed = backend.open(plan, &mut repetitions)?;
    repetitions.judged(observed)
}

impl<'a> Repetitions<'a> {
    /// The protocol for `plan`, its buffers allocated (nothing allocates
    /// inside the timed calls) and its clock's granularity taken.
    pub fn new(
        plan: &'a Plan,
        observers: Vec<Box<dyn observe::Observer>>,
        gate: Option<&'a dyn RankGate>,
        stop: Option<&'a Stop>,
    ) -> Self {
        let started = Instant::now();
        let granularity = clock_granularity();
        let timed = plan.kernels.len() * plan.ntimes;
        let d = Timed {
            times: vec![0.0; timed],
            thread_times: vec![0.0; timed * plan.cpus.len()],
            threads_timed: false,
            host_times: vec![0.0; timed],
            device_timed: false,
            synced_times: vec![0.0; if gate.is_some() { timed } else { 0 }],
            timing_test: 0.0,
            first_touch_done: None,
            read_back: ReadBack::default(),
            measured: false,
            observers: observe::Watch::new(observers),
            inner_repeats: plan.inner_repeats,
            barrier_s: None,
            expected: expected_values(&plan.kernels, plan.ntimes, plan.inner_repeats),
            launches: vec![None; plan.kernels.len()],
            floor_s: None,
            stores: (0..plan.kernels.len())
                .map(|k| plan.kernel_stores(k))
                .collect(),
        };
        Repetitions {
            plan,
            gate,
            stop,
            granularity,
            started,
            d,
        }
    }

    /// The measurement the repetitions made, judged: statistics,
    /// validation, the clocks' checks and what watched the window, beside
    /// what the backend `observed`.
    pub fn judged(self, observed: Observed) -> Result<Gated> {
        let Repetitions {
            plan,
            gate,
            stop,
            granularity,
            started,
            mut d,
        } = self;
        if !d.measured {
            if let Some(signal) = stop.and_then(Stop::signal) {
                return Err(Error::Interrupted {
                    signal,
                    message:
                        "stopped by a signal before the repetitions were done; nothing measured"
                            .into(),
                });
            }
            return Err(Error::Runtime(
                "another rank failed before measuring".into(),
            ));
        }
        let tick = granularity.as_secs_f64();
        let clock =
            (d.device_timed).then(|| judge::device_clock(&mut d.times, &d.host_times, tick));
        let results = judge::kernel_results(plan, &d);
        let validation = judge::validation(&d.expected, &d.read_back);
        let min_time = results
            .iter()
            .map(|r| r.min_time_s)
            .fold(f64::INFINITY, f64::min);
        let timer = TimerCheck {
            granularity_ns: tick * 1e9,
            timing_test_us: d.timing_test * 1e6,
            min_kernel_ticks: min_time / tick,
            barrier_us: d.barrier_s.map(|s| s * 1e6),
            device_clock: clock,
            repetition_floor_us: d.floor_s.map(|s| s * 1e6),
        };
        let ran: Vec<_> = (plan.kernels.iter().copied())
            .zip(&d.stores)
            .filter_map(|(k, s)| Some((k, (*s)?)))
            .collect();
        let seen = judge::cache_evidence(&ran, plan.elements, plan.caches.below_last);
        let in_caches = (plan.in_caches).map(|c| c.seen(seen));
        let mut warnings = observed.warnings;
        warnings.extend(judge::warnings(
            plan, in_caches, &observed.threads, min_time, &timer,
        ));
        let mut cpus = plan.cpus.clone();
        cpus.sort_unstable();
        cpus.dedup();
        let window = observe::Window {
            cpus: &cpus,
            one_rank_of_many: gate.is_some(),
            effect: crate::trust::Effect::Bandwidth,
        };
        let mut measurement = Measurement {
            pages: observed.pages,
            gpu_memory: observed.gpu_memory,
            interference: None,
            held_back: None,
            setup_s: d
                .first_touch_done
                .map_or(0.0, |t| (t - started).as_secs_f64()),
            total_s: started.elapsed().as_secs_f64(),
            warnings,
            inner_repeats: d.inner_repeats,
            in_caches,
            ..planned(plan, observed.threads, results, validation, timer)
        };
        // A measured choice may have changed the lead kernel's stores.
        let stores: Vec<_> = ran.iter().map(|(_, s)| *s).collect();
        if stores.len() == plan.kernels.len()
            && let Some(lead) = crate::plan::lead_stores(&plan.kernels, &stores)
        {
            measurement.stores = Some(lead);
            measurement.target = (measurement.target).map(|t| t.with_stores(lead));
        }
        d.observers.keep_in(&window, &mut measurement);
        // Whatever watched the window, an unsteady spread is a finding too.
        if measurement.interference.is_some() || measurement.held_back.is_some() {
            let i = measurement
                .interference
                .get_or_insert_with(Default::default);
            let spread = add_spread_finding(i, &measurement.results);
            measurement.warnings.extend(spread);
        }
        Ok(Gated {
            measurement,
            synced_times: d.synced_times,
        })
    }
}

/// A measurement of `plan` with its results: what every source that runs
/// plans in this process records the same way (no pages sampled, no
/// warnings, no time outside the kernels until the caller says).
pub fn planned(
    plan: &Plan,
    threads: Vec<ThreadPlacement>,
    results: Vec<KernelResult>,
    validation: Validation,
    timer: TimerCheck,
) -> Measurement {
    Measurement {
        in_caches: plan.in_caches,
        caches_unknown: plan.caches_unknown,
        offset: plan.offset,
        array_elements: plan.elements as u64,
        bytes_per_array: plan.elements as u64 * ELEMENT_BYTES,
        arrays: plan.arrays_needed().len(),
        ntimes: plan.ntimes,
        inner_repeats: plan.inner_repeats,
        target: Some(plan.target.clone()),
        isa: plan.target.cpu_code().map(|c| c.isa),
        stores: plan.stores(),
        hugepages: plan.hugepages,
        gpu_memory: None,
        mem_policy: match plan.places_host_memory() {
            true => plan.mem.to_string(),
            false => String::new(),
        },
        bound_by: crate::placement::read_back::bound_by(
            plan.pinned,
            &threads.iter().map(|t| t.bound_to()).collect::<Vec<_>>(),
        ),
        threads,
        pinned: plan.pinned,
        pages: Vec::new(),
        results,
        validation,
        timer,
        setup_s: 0.0,
        total_s: 0.0,
        warnings: Vec::new(),
        interference: None,
        held_back: None,
        detail: None,
    }
}

/// STREAM's protocol over the backend's arrays: first touch, the timing
/// test, `ntimes` repetitions of every kernel each timed on its own, and
/// the read-back. With a gate, every timed kernel starts and ends with the
/// other ranks'. Made by [`Repetitions::new`], lent to a backend's
/// [`Backend::open`], then [`Repetitions::judged`].
pub struct Repetitions<'a> {
    plan: &'a Plan,
    gate: Option<&'a dyn RankGate>,
    stop: Option<&'a Stop>,
    granularity: Duration,
    started: Instant,
    /// What the repetitions saw, kept for [`Repetitions::judged`].
    d: Timed,
}

impl WithArrays for Repetitions<'_> {
    fn run_on(&mut self, device: &mut dyn TargetArrays) -> Result<()> {
        let (plan, gate, stop, granularity) = (self.plan, self.gate, self.stop, self.granularity);
        let d = &mut self.d;
        device.init(INITIAL_VALUES);
        d.first_touch_done = Some(Instant::now());
        let barrier_s = round_trip(device);
        d.barrier_s = Some(barrier_s);
        // Ranks under a gate keep the plan's calls and stores: each rank's
        // bytes must be the same and known before the first gated
        // repetition, and a rank timing alone would time its neighbours'
        // traffic too.
        let floor = || repetition_floor(barrier_s, &plan.target.method().clock, granularity);
        let mut ran = false;
        if plan.calibrate && gate.is_none() {
            let floor = floor();
            d.floor_s = Some(floor);
            let calibrated = calibrate(plan, device, floor);
            d.inner_repeats = calibrated.calls;
            d.launches = calibrated.launches;
            d.expected = expected_values(&plan.kernels, plan.ntimes, d.inner_repeats);
            ran = true;
        }
        if d.stores.iter().flatten().any(|s| s.to_measure()) {
            match gate {
                Some(_) => d.stores.iter_mut().flatten().for_each(|s| *s = s.untimed()),
                None => {
                    choose_stores(plan, device, d.inner_repeats, &mut d.stores);
                    ran = true;
                }
            }
        }
        if ran {
            // The calibration ran the kernels: STREAM's values start again.
            device.init(INITIAL_VALUES);
        }
        device.sync();
        let start = Instant::now();
        device.double_a();
        d.timing_test = start.elapsed().as_secs_f64();
        if let Some(gate) = gate
            && !gate.ready()
        {
            return Ok(());
        }
        // Started and stopped outside the timed calls: what else runs while
        // they run.
        d.observers.start();
        for rep in 0..plan.ntimes {
            // A stop ends a lone run between repetitions (ranks under a gate
            // finish together: they have no stop).
            if stop.is_some_and(Stop::requested) {
                return Ok(());
            }
            for (k, &kernel) in plan.kernels.iter().enumerate() {
                device.sync();
                if let Some(gate) = gate {
                    gate.start();
                }
                let start = Instant::now();
                device.run(kernel, d.inner_repeats);
                let slot = k * plan.ntimes + rep;
                d.times[slot] = start.elapsed().as_secs_f64();
                // A target that times its own work (a device's events) gives
                // the repetition's time; the host's is kept to check it.
                if let Some(own) = device.device_seconds() {
                    d.host_times[slot] = d.times[slot];
                    d.times[slot] = own;
                    d.device_timed = true;
                }
                let threads = plan.cpus.len();
                if let Some(out) = d.thread_times.get_mut(slot * threads..(slot + 1) * threads) {
                    d.threads_timed = device.thread_seconds(out);
                }
                if let Some(gate) = gate {
                    gate.finish();
                    d.synced_times[k * plan.ntimes + rep] = start.elapsed().as_secs_f64();
                }
            }
        }
        d.observers.stop();
        d.measured = true;
        d.read_back = device.read_back(d.expected.values, array_errors);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
