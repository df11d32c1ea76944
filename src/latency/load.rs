//! Loaded latency: load threads drive a traffic mix through their own
//! arrays while the chasing thread measures latency. Each load thread waits
//! a calibrated delay after every cache line it moves; sweeping the delay
//! from heavy throttling to none traces the memory system's
//! bandwidth-latency curve.
//!
//! The traffic is membw's own kernels (the same function pointers `run`
//! times), so at zero delay the load threads move what `membw run` moves.

use super::Chain;
use crate::error::{Error, Result};
use crate::kernels::{ARRAYS, ArrayId, KernelFns, SCALAR};
use crate::memory::policy::Policy;
pub use crate::results::latency_record::{LoadedLatency, Mix};
use crate::sys::MappedArray;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The delays swept by default (ns after each cache line, per load
/// thread), from heavy throttling to none.
pub const DEFAULT_DELAYS_NS: [f64; 10] = [
    10_000.0, 3_000.0, 1_000.0, 500.0, 250.0, 120.0, 60.0, 30.0, 10.0, 0.0,
];

/// Cache lines per step when a load thread waits: four lines (256 B) are
/// one unrolled vector step of even the widest kernels, so the step runs
/// the same instructions (streaming stores included) as an unthrottled
/// kernel. The thread then waits four delays: the delay per line holds on
/// average.
const LINES_PER_STEP: usize = 4;
const STEP_ELEMENTS: usize = LINES_PER_STEP * super::LINE / 8;
/// Elements per step at zero delay: large enough that the call costs
/// nothing, small enough to see a change of delay at once.
const FREE_ELEMENTS: usize = 4096;

/// How long one iteration of the delay loop takes on this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DelayCalibration {
    pub ns_per_spin: f64,
}

impl DelayCalibration {
    /// Times the spin loop on the calling thread (best of several tries of
    /// about a millisecond, so an interruption does not make every delay
    /// too short). Each load thread calibrates on its own CPU: inside a VM
    /// two vCPUs can run at different speeds.
    pub fn measure() -> DelayCalibration {
        const SPINS: u64 = 1_000_000;
        let best = (0..7)
            .map(|_| {
                let t = Instant::now();
                spin(SPINS);
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        DelayCalibration {
            ns_per_spin: (best * 1e9 / SPINS as f64).max(0.01),
        }
    }

    /// Spins for a delay of `ns`: never fewer for a longer delay.
    pub fn spins_for(&self, ns: f64) -> u64 {
        if ns.is_nan() || ns <= 0.0 {
            return 0;
        }
        (ns / self.ns_per_spin)
            .round()
            .max(1.0)
            .min(u64::MAX as f64 / 2.0) as u64
    }
}

/// The delay: a register-only loop of about a cycle per iteration, which
/// leaves the memory system alone. Not `pause`: that takes 140 cycles on
/// recent Intel cores (too coarse for short delays), and inside a VM a
/// run of pauses can exit to the hypervisor.
#[inline(never)]
pub fn spin(n: u64) {
    for i in 0..n {
        std::hint::black_box(i);
    }
}

/// What to measure under load.
#[derive(Debug, Clone)]
pub struct LoadedPlan {
    pub chaser_cpu: usize,
    pub load_cpus: Vec<usize>,
    pub mixes: Vec<Mix>,
    pub delays_ns: Vec<f64>,
    /// The chaser's working set.
    pub bytes: u64,
    /// Elements per array of each load thread.
    pub load_elements: usize,
    pub hugepages: crate::memory::Hugepages,
    pub policy: Policy,
    pub isa: crate::kernels::Isa,
    pub time_per_point: Duration,
    /// Time for the load to reach its new rate after a change of delay.
    pub settle: Duration,
    pub clock_ghz: Option<f64>,
}

/// A load thread's progress counter, alone on its cache lines so the
/// chaser's reads do not slow the writer; and its delay calibration
/// (ns per spin, as f64 bits), for the record.
#[repr(align(128))]
#[derive(Default)]
struct Progress {
    elements: AtomicU64,
    ns_per_spin: AtomicU64,
}

/// What the chaser tells the load threads; read once per step.
struct Control {
    /// Index into the plan's mixes, or `IDLE`.
    mix: AtomicUsize,
    /// The delay per cache line, ns (f64 bits); each thread turns it into
    /// spins with its own calibration.
    delay_ns: AtomicU64,
    quit: AtomicBool,
    ready: AtomicUsize,
    failed: AtomicBool,
}

const IDLE: usize = usize::MAX;

/// Runs the plan: the load threads start, touch their arrays and idle;
/// then, for each mix and delay, the chaser sets the load going, waits for
/// it to settle, and measures latency while counting the load's bytes.
/// `each` gets every point as it completes and may stop the sweep (a
/// signal) by returning false.
pub fn measure(
    plan: &LoadedPlan,
    chain: &mut Chain,
    mut each: impl FnMut(&LoadedLatency, &super::WorkingSetLatency) -> Result<bool>,
) -> Result<()> {
    super::pin(plan.chaser_cpu)?;
    let fns: Vec<KernelFns> = plan
        .mixes
        .iter()
        .map(|m| KernelFns::select(plan.isa, m.stores()))
        .collect::<Result<_>>()?;
    let control = Control {
        mix: AtomicUsize::new(IDLE),
        delay_ns: AtomicU64::new(0),
        quit: AtomicBool::new(false),
        ready: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
    };
    let progress: Vec<Progress> = plan.load_cpus.iter().map(|_| Progress::default()).collect();
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = plan
            .load_cpus
            .iter()
            .zip(&progress)
            .map(|(&cpu, counter)| {
                let (control, fns) = (&control, &fns);
                scope.spawn(move || load_thread(plan, cpu, fns, control, counter))
            })
            .collect();
        let result = chase_each_load(plan, chain, &control, &progress, &mut each);
        control.quit.store(true, Ordering::Relaxed);
        for w in workers {
            match w.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(Error::Runtime("a load thread panicked".into())),
            }
        }
        result
    })
}

/// The chaser's side: once every load thread is up, each mix and delay
/// set in turn and the chain chased under it.
fn chase_each_load(
    plan: &LoadedPlan,
    chain: &mut Chain,
    control: &Control,
    progress: &[Progress],
    each: &mut impl FnMut(&LoadedLatency, &super::WorkingSetLatency) -> Result<bool>,
) -> Result<()> {
    while control.ready.load(Ordering::Acquire) < progress.len() {
        if control.failed.load(Ordering::Relaxed) {
            return Ok(()); // the thread's own error is returned by join
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    for (m, &mix) in plan.mixes.iter().enumerate() {
        let spec = mix.kernel().spec();
        for &delay_ns in &plan.delays_ns {
            control
                .delay_ns
                .store(delay_ns.to_bits(), Ordering::Relaxed);
            control.mix.store(m, Ordering::Release);
            std::thread::sleep(plan.settle);
            let moved = || -> u64 {
                progress
                    .iter()
                    .map(|p| p.elements.load(Ordering::Relaxed))
                    .sum()
            };
            let before = moved();
            let t = Instant::now();
            let latency = chain.sample(plan.time_per_point, plan.clock_ghz);
            let seconds = t.elapsed().as_secs_f64();
            let after = moved();
            // The first load thread's spins, for the record.
            let first = DelayCalibration {
                ns_per_spin: f64::from_bits(progress[0].ns_per_spin.load(Ordering::Relaxed)),
            };
            let spins = first.spins_for(delay_ns * LINES_PER_STEP as f64);
            let elements = after.saturating_sub(before) as f64;
            let point = LoadedLatency {
                mix,
                delay_ns,
                delay_spins: spins,
                threads: progress.len(),
                gb_s: elements * spec.bytes_counted() as f64 / seconds / 1e9,
                bus_gb_s: elements * spec.bytes_moved(mix.stores()) as f64 / seconds / 1e9,
            };
            if !each(&point, &latency)? {
                control.mix.store(IDLE, Ordering::Release);
                return Ok(());
            }
        }
        control.mix.store(IDLE, Ordering::Release);
    }
    Ok(())
}

/// One load thread: pins itself, maps and first-touches its arrays (so
/// they sit where the policy says, seen from its CPU), then runs whatever
/// mix the chaser asks for until told to quit.
fn load_thread(
    plan: &LoadedPlan,
    cpu: usize,
    fns: &[KernelFns],
    control: &Control,
    progress: &Progress,
) -> Result<()> {
    let fail = |e: Error| {
        control.failed.store(true, Ordering::Relaxed);
        e
    };
    super::pin(cpu).map_err(fail)?;
    let n = plan.load_elements;
    let mut arrays: Vec<MappedArray> = Vec::with_capacity(ARRAYS);
    for id in ArrayId::HOST_KERNELS {
        let array = MappedArray::new(n, 0).map_err(|e| {
            fail(Error::Runtime(format!(
                "load thread on CPU {cpu}: mapping array {}: {e}",
                id.name()
            )))
        })?;
        let _ = plan.hugepages.advise(&array);
        let whole = 0..n;
        crate::memory::place(
            &array,
            &plan.policy,
            std::slice::from_ref(&whole),
            crate::memory::Hugepages::Thp,
        )
        .map_err(|e| {
            fail(Error::Runtime(format!(
                "load thread on CPU {cpu}: memory policy {}: {e}",
                plan.policy
            )))
        })?;
        arrays.push(array);
    }
    let mut slices: Vec<&mut [f64]> = arrays.iter_mut().map(|a| a.as_mut_slice()).collect();
    for (s, value) in slices.iter_mut().zip(crate::protocol::INITIAL_VALUES) {
        s.fill(value);
    }
    let calibration = DelayCalibration::measure();
    progress
        .ns_per_spin
        .store(calibration.ns_per_spin.to_bits(), Ordering::Relaxed);
    control.ready.fetch_add(1, Ordering::Release);
    let [a, b, c, d] = &mut slices[..] else {
        unreachable!("four arrays were mapped")
    };
    let (mut at, mut moved) = (0usize, 0u64);
    // The delay's spins, converted again only when the chaser changes it.
    let (mut delay_bits, mut spins) = (0u64, 0u64);
    while !control.quit.load(Ordering::Relaxed) {
        let m = control.mix.load(Ordering::Acquire);
        if m == IDLE {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        let bits = control.delay_ns.load(Ordering::Relaxed);
        if bits != delay_bits {
            delay_bits = bits;
            spins = calibration.spins_for(f64::from_bits(bits) * LINES_PER_STEP as f64);
        }
        let step = if spins == 0 {
            FREE_ELEMENTS
        } else {
            STEP_ELEMENTS
        };
        if at + step > n {
            at = 0;
        }
        let r = at..at + step;
        let f = &fns[m];
        match plan.mixes[m] {
            Mix::Read => {
                std::hint::black_box((f.read)(&a[r]));
            }
            Mix::TwoToOne => (f.add)(&mut c[r.clone()], &a[r.clone()], &b[r]),
            Mix::ThreeToOne => (f.striad)(&mut a[r.clone()], &b[r.clone()], &c[r.clone()], &d[r]),
            Mix::Copy => (f.copy)(&mut c[r.clone()], &a[r]),
            Mix::NtWrite => (f.write)(&mut c[r], SCALAR),
        }
        at += step;
        moved += step as u64;
        progress.elements.store(moved, Ordering::Relaxed);
        spin(spins);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A longer delay never gets fewer spins, whatever the calibration.
        #[test]
        fn the_delay_calibration_is_monotone(
            ns_per_spin in 0.01f64..100.0,
            a in 0.0f64..1e6,
            b in 0.0f64..1e6,
        ) {
            let c = DelayCalibration { ns_per_spin };
            let (lo, hi) = (a.min(b), a.max(b));
            prop_assert!(c.spins_for(lo) <= c.spins_for(hi));
            prop_assert_eq!(c.spins_for(0.0), 0);
            prop_assert!(c.spins_for(hi.max(1e-3)) >= 1);
        }
    }

    #[test]
    fn the_default_delays_go_from_heavy_throttling_to_none() {
        assert!(DEFAULT_DELAYS_NS.windows(2).all(|w| w[0] > w[1]));
        assert_eq!(DEFAULT_DELAYS_NS.last(), Some(&0.0));
        let measured = DelayCalibration::measure();
        assert!(measured.ns_per_spin > 0.0 && measured.ns_per_spin.is_finite());
        let spins: Vec<u64> = DEFAULT_DELAYS_NS
            .iter()
            .map(|&ns| measured.spins_for(ns))
            .collect();
        assert!(spins.windows(2).all(|w| w[0] >= w[1]), "{spins:?}");
    }

    #[test]
    fn mixes_parse_and_name_their_kernels() {
        for m in Mix::ALL {
            assert_eq!(Mix::parse(m.name()), Some(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
        }
        assert_eq!(Mix::parse("4:1"), None);
        assert_eq!(Mix::ThreeToOne.kernel().spec().reads.len(), 3);
        assert_eq!(Mix::NtWrite.stores(), crate::kernels::StoreMode::Nt);
    }
}
