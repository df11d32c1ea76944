//! STREAM's measurement protocol: first-touch initialization, the timing
//! test, `ntimes` repetitions of every selected kernel timed barrier to
//! barrier, statistics without the first repetition, and validation against
//! the same recurrence STREAM's `checkSTREAMresults` uses.
//!
//! This is the in-process measurement source. It returns a [`Measurement`]
//! (plain data) and prints nothing.

use crate::error::Result;
use crate::kernels::{ARRAYS, ArrayId, KernelFns, KernelId, SCALAR, WRITE_VALUE};
use crate::memory::{self, Arrays, Chunk, Hugepages};
use crate::plan::Plan;
use crate::results::measurement::{
    ArrayCheck, KernelResult, Measurement, ThreadPlacement, TimerCheck, Validation,
    kernel_statistics,
};
use crate::team::{self, Member};
use crate::units::ELEMENT_BYTES;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// STREAM's tolerance for 8-byte reals.
pub const EPSILON: f64 = 1e-13;
/// Below this a kernel's time is too close to the timer to trust (STREAM: 20 ticks).
pub const MIN_TICKS: f64 = 20.0;
/// And below this, too short to include the effects that matter (STREAM's advice).
pub const MIN_KERNEL_SECONDS: f64 = 1e-3;

/// First-touch values of a, b, c (STREAM's) and d.
pub const INITIAL_VALUES: [f64; ARRAYS] = [1.0, 2.0, 0.0, 1.0];

/// What every array should hold after the run, by STREAM's recurrence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expected {
    pub values: [f64; ARRAYS],
    /// The value of `a` when the read kernel last ran.
    pub read_a: Option<f64>,
    /// The value of `a·b` when the dot kernel last ran.
    pub dot_ab: Option<f64>,
}

pub fn expected_values(kernels: &[KernelId], ntimes: usize) -> Expected {
    let [mut a, mut b, mut c, d] = INITIAL_VALUES;
    a *= 2.0; // the timing test
    let (mut read_a, mut dot_ab) = (None, None);
    for _ in 0..ntimes {
        for k in kernels {
            match k {
                KernelId::Copy => c = a,
                KernelId::Scale => b = SCALAR * c,
                KernelId::Add => c = a + b,
                KernelId::Triad => a = b + SCALAR * c,
                KernelId::Read => read_a = Some(a),
                KernelId::Write => c = WRITE_VALUE,
                KernelId::Init => a = WRITE_VALUE,
                KernelId::Update => a *= SCALAR,
                KernelId::Daxpy => a += SCALAR * b,
                KernelId::Striad => a = b + c * d,
                KernelId::Sdaxpy => a += b * c,
                KernelId::Nstream => a += b + SCALAR * c,
                KernelId::Dot => dot_ab = Some(a * b),
            }
        }
    }
    Expected {
        values: [a, b, c, d],
        read_a,
        dot_ab,
    }
}

/// The relative error a sum of `n` equal terms may carry in any order of
/// addition: (n−1) roundings of at most half an ulp each, bounded by n·ε.
/// The reductions (read, dot) are checked against the exact sum with it.
pub fn sum_tolerance(n: usize) -> f64 {
    (n as f64 * f64::EPSILON).max(EPSILON)
}

/// An element's error against `want`, and whether it exceeds epsilon.
/// Values that overflowed (update over many repetitions) must match exactly.
fn element_error(x: f64, want: f64) -> (f64, bool) {
    if !want.is_finite() {
        return if x == want {
            (0.0, false)
        } else {
            (f64::INFINITY, true)
        };
    }
    let err = (x - want).abs();
    // NaN compares false: an element that became NaN counts as bad.
    let within = err <= EPSILON * want.abs().max(f64::MIN_POSITIVE);
    (err, !within)
}

/// Per-thread error sums, merged after the run.
#[derive(Debug, Clone, Copy, Default)]
struct ErrorSums {
    abs_error: [f64; ARRAYS],
    bad: [u64; ARRAYS],
    read_sum: f64,
    dot_sum: f64,
    read_len: usize,
}

/// How one rank of a multi-process measurement (MPI) keeps step with the
/// others. The leader thread calls it; the team waits at its own barrier.
pub trait RankGate: Sync {
    /// After first touch and the timing test: whether every rank got this
    /// far (false: one failed, and no rank measures).
    fn ready(&self) -> bool;
    /// Before each timed kernel: returns once every rank is about to start.
    fn start(&self);
    /// After each timed kernel: returns once every rank has finished.
    fn finish(&self);
}

/// The times of a gated run: each rank's own kernel times, and the times to
/// the moment the last rank finished (what the aggregate is made of).
pub struct Gated {
    pub measurement: Measurement,
    /// Per kernel, per repetition (`k * ntimes + rep`), start to the end of
    /// the finishing barrier.
    pub synced_times: Vec<f64>,
}

struct ThreadOutcome {
    node: Option<usize>,
    times: Vec<f64>,
    synced_times: Vec<f64>,
    /// False when another rank failed and nothing was measured.
    measured: bool,
    timing_test: f64,
    first_touch_done: Instant,
    errors: ErrorSums,
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

/// Runs the plan and returns its measurement. Fails only if the system
/// refuses memory or pinning; a failed validation is reported in the data.
pub fn measure(plan: &Plan) -> Result<Measurement> {
    measure_with(plan, |_, _| {}, None).map(|g| g.measurement)
}

/// [`measure`] as one rank of several: every timed kernel starts and ends
/// together with the other ranks' through `gate`.
pub fn measure_gated(plan: &Plan, gate: &dyn RankGate) -> Result<Gated> {
    measure_with(plan, |_, _| {}, Some(gate))
}

/// [`measure`] with a hook that each thread calls on its chunk after the
/// timed repetitions and before validation: tests use it to corrupt a
/// result and show that validation catches it.
fn measure_with(
    plan: &Plan,
    after_run: impl Fn(usize, &mut Chunk) + Sync,
    gate: Option<&dyn RankGate>,
) -> Result<Gated> {
    let started = Instant::now();
    let granularity = clock_granularity();
    let ranges = memory::partition(plan.elements, plan.cpus.len());
    let mut arrays = Arrays::map(
        &plan.arrays_needed(),
        plan.elements,
        plan.hugepages,
        &plan.mem,
    )?;
    if plan.hugepages != Hugepages::Never {
        arrays.split_hugepages_at(&ranges, &plan.mem)?;
    }
    let expected = expected_values(&plan.kernels, plan.ntimes);
    let chunks = arrays.chunks(&ranges);
    let go = AtomicBool::new(true);
    let mut outcomes = team::run(&plan.cpus, chunks, |m, chunk| {
        run_member(plan, &expected, m, chunk, &after_run, gate, &go)
    })?;
    if !outcomes[0].value.measured {
        return Err(crate::error::Error::Runtime(
            "another rank failed before measuring".into(),
        ));
    }
    let first_touch_done = outcomes
        .iter()
        .map(|o| o.value.first_touch_done)
        .max()
        .unwrap_or(started);
    let leader = &outcomes[0].value;
    let results: Vec<KernelResult> = plan
        .kernels
        .iter()
        .enumerate()
        .map(|(k, &kernel)| {
            let times = leader.times[k * plan.ntimes..(k + 1) * plan.ntimes].to_vec();
            kernel_statistics(
                kernel,
                plan.fns.stores,
                plan.elements * plan.inner_repeats,
                times,
            )
        })
        .collect();
    let errors = outcomes.iter().fold(ErrorSums::default(), |acc, o| {
        let e = o.value.errors;
        ErrorSums {
            abs_error: std::array::from_fn(|i| acc.abs_error[i] + e.abs_error[i]),
            bad: std::array::from_fn(|i| acc.bad[i] + e.bad[i]),
            read_sum: acc.read_sum + e.read_sum,
            dot_sum: acc.dot_sum + e.dot_sum,
            read_len: acc.read_len + e.read_len,
        }
    });
    let validation = validation_report(&arrays, &expected, &errors);
    let min_time = results
        .iter()
        .map(|r| r.min_time_s)
        .fold(f64::INFINITY, f64::min);
    let tick = granularity.as_secs_f64();
    let timer = TimerCheck {
        granularity_ns: tick * 1e9,
        timing_test_us: leader.timing_test * 1e6,
        min_kernel_ticks: min_time / tick,
    };
    let thread_nodes: Vec<Option<usize>> = outcomes.iter().map(|o| o.value.node).collect();
    let (pages, page_warnings) = arrays.page_placement(&plan.mem, &ranges, &thread_nodes);
    let threads: Vec<ThreadPlacement> = outcomes
        .iter()
        .enumerate()
        .map(|(thread, o)| ThreadPlacement {
            thread,
            cpu: plan.cpus[thread],
            observed_cpu: o.observed_cpu,
        })
        .collect();
    let mut warnings = page_warnings;
    if min_time.is_finite() && (timer.min_kernel_ticks < MIN_TICKS || min_time < MIN_KERNEL_SECONDS)
    {
        let factor = (MIN_KERNEL_SECONDS * 10.0 / min_time).ceil() as u64;
        warnings.push(format!(
            "the shortest kernel took {:.1} us ({:.0} clock ticks); results below ~1 ms are unreliable: use arrays of at least {} elements",
            min_time * 1e6,
            timer.min_kernel_ticks,
            plan.elements as u64 * factor.max(2)
        ));
    }
    for t in &threads {
        if t.observed_cpu.is_some_and(|c| c != t.cpu) {
            warnings.push(format!(
                "thread {} was pinned to CPU {} but found itself on CPU {}",
                t.thread,
                t.cpu,
                t.observed_cpu.unwrap_or(0)
            ));
        }
    }
    let synced_times = std::mem::take(&mut outcomes[0].value.synced_times);
    let measurement = Measurement {
        array_elements: plan.elements as u64,
        bytes_per_array: plan.elements as u64 * ELEMENT_BYTES,
        arrays: plan.arrays_needed().len(),
        ntimes: plan.ntimes,
        inner_repeats: plan.inner_repeats,
        isa: Some(plan.fns.isa),
        stores: Some(plan.fns.stores),
        hugepages: plan.hugepages,
        mem_policy: plan.mem.to_string(),
        threads,
        pages,
        results,
        validation,
        timer,
        setup_s: (first_touch_done - started).as_secs_f64(),
        total_s: started.elapsed().as_secs_f64(),
        warnings,
        program: None,
        ranks: None,
    };
    Ok(Gated {
        measurement,
        synced_times,
    })
}

/// The SPMD body: what every thread does, in lock step.
fn run_member(
    plan: &Plan,
    expected: &Expected,
    m: &Member,
    mut chunk: Chunk,
    after_run: &(impl Fn(usize, &mut Chunk) + Sync),
    gate: Option<&dyn RankGate>,
    go: &AtomicBool,
) -> ThreadOutcome {
    let fns = &plan.fns;
    // Allocated before the timed loop; only the leader's entries are written.
    let mut times = vec![0.0; plan.kernels.len() * plan.ntimes];
    let mut synced_times = vec![0.0; if gate.is_some() { times.len() } else { 0 }];

    // First touch: STREAM's initial values, written by the thread that will use them.
    for (id, value) in ArrayId::ALL.into_iter().zip(INITIAL_VALUES) {
        if let Some(array) = chunk.arrays[id.index()].as_deref_mut() {
            crate::sys::populate_for_write(array);
            (fns.write)(array, value);
        }
    }
    let first_touch_done = Instant::now();
    m.barrier();

    // STREAM's timing test, a = 2a: estimates the time of one kernel.
    let start = Instant::now();
    for x in chunk.get(ArrayId::A).iter_mut() {
        *x *= 2.0;
    }
    m.barrier();
    let timing_test = start.elapsed().as_secs_f64();
    if let Some(gate) = gate {
        if m.is_leader() {
            go.store(gate.ready(), Ordering::Relaxed);
        }
        m.barrier();
        if !go.load(Ordering::Relaxed) {
            return ThreadOutcome {
                node: None,
                times,
                synced_times,
                measured: false,
                timing_test,
                first_touch_done,
                errors: ErrorSums::default(),
            };
        }
    }

    let mut sums = Sums::default();
    for rep in 0..plan.ntimes {
        for (k, &kernel) in plan.kernels.iter().enumerate() {
            m.barrier();
            if let Some(gate) = gate {
                // All ranks start together: the leader waits for the other
                // ranks, its team for the leader.
                if m.is_leader() {
                    gate.start();
                }
                m.barrier();
            }
            let start = m.is_leader().then(Instant::now);
            for _ in 0..plan.inner_repeats {
                run_kernel(fns, kernel, &mut chunk, &mut sums);
            }
            m.barrier();
            if let Some(start) = start {
                times[k * plan.ntimes + rep] = start.elapsed().as_secs_f64();
                if let Some(gate) = gate {
                    gate.finish();
                    synced_times[k * plan.ntimes + rep] = start.elapsed().as_secs_f64();
                }
            }
        }
    }
    after_run(m.index, &mut chunk);
    let errors = check_chunk(&mut chunk, expected, sums);
    ThreadOutcome {
        node: plan.cpu_nodes.get(m.index).copied().flatten(),
        times,
        synced_times,
        measured: true,
        timing_test,
        first_touch_done,
        errors,
    }
}

/// The reductions' last results on one thread's chunk.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    read: f64,
    dot: f64,
}

fn run_kernel(fns: &KernelFns, kernel: KernelId, chunk: &mut Chunk, sums: &mut Sums) {
    let [a, b, c, d] = &mut chunk.arrays;
    let (a, b, c, d) = (
        a.as_deref_mut(),
        b.as_deref_mut(),
        c.as_deref_mut(),
        d.as_deref_mut(),
    );
    const MAPPED: &str = "the plan maps every array its kernels use";
    let a = a.expect(MAPPED);
    match kernel {
        KernelId::Copy => (fns.copy)(c.expect(MAPPED), a),
        KernelId::Scale => (fns.scale)(b.expect(MAPPED), c.expect(MAPPED), SCALAR),
        KernelId::Add => (fns.add)(c.expect(MAPPED), a, b.expect(MAPPED)),
        KernelId::Triad => (fns.triad)(a, b.expect(MAPPED), c.expect(MAPPED), SCALAR),
        KernelId::Read => sums.read = std::hint::black_box((fns.read)(a)),
        KernelId::Write => (fns.write)(c.expect(MAPPED), WRITE_VALUE),
        KernelId::Init => (fns.write)(a, WRITE_VALUE),
        KernelId::Update => (fns.update)(a, SCALAR),
        KernelId::Daxpy => (fns.daxpy)(a, b.expect(MAPPED), SCALAR),
        KernelId::Striad => (fns.striad)(a, b.expect(MAPPED), c.expect(MAPPED), d.expect(MAPPED)),
        KernelId::Sdaxpy => (fns.sdaxpy)(a, b.expect(MAPPED), c.expect(MAPPED)),
        KernelId::Nstream => (fns.nstream)(a, b.expect(MAPPED), c.expect(MAPPED), SCALAR),
        KernelId::Dot => sums.dot = std::hint::black_box((fns.dot)(a, b.expect(MAPPED))),
    }
}

fn check_chunk(chunk: &mut Chunk, expected: &Expected, sums: Sums) -> ErrorSums {
    let mut errors = ErrorSums::default();
    for id in ArrayId::ALL {
        let want = expected.values[id.index()];
        if let Some(array) = chunk.arrays[id.index()].as_deref() {
            for &x in array {
                let (err, bad) = element_error(x, want);
                errors.abs_error[id.index()] += err;
                errors.bad[id.index()] += u64::from(bad);
            }
        }
    }
    errors.read_sum = sums.read;
    errors.dot_sum = sums.dot;
    errors.read_len = chunk.arrays[0].as_deref().map_or(0, <[f64]>::len);
    errors
}

fn validation_report(arrays: &Arrays, expected: &Expected, errors: &ErrorSums) -> Validation {
    let n = arrays.elements as f64;
    let checks: Vec<ArrayCheck> = ArrayId::ALL
        .into_iter()
        .filter(|&id| arrays.has(id))
        .map(|id| {
            let want = expected.values[id.index()];
            let avg = errors.abs_error[id.index()] / n;
            ArrayCheck {
                array: id.name().into(),
                expected: want,
                avg_rel_error: match want {
                    0.0 => avg,
                    _ if !want.is_finite() => avg, // 0 when every element matched
                    _ => avg / want.abs(),
                },
                bad_elements: errors.bad[id.index()],
            }
        })
        .collect();
    // Every element of a (and b) holds the same value, so the exact sum is
    // n times it; a sum that overflowed must be the same infinity.
    let rel_error = |term: f64, got: f64| {
        let want = term * errors.read_len as f64;
        match want {
            _ if got == want => 0.0,
            0.0 => got.abs(),
            _ if !want.is_finite() => f64::INFINITY,
            _ => (got - want).abs() / want.abs(),
        }
    };
    let read_rel_error = expected.read_a.map(|a| rel_error(a, errors.read_sum));
    let dot_rel_error = expected.dot_ab.map(|ab| rel_error(ab, errors.dot_sum));
    let sum_tolerance = sum_tolerance(errors.read_len);
    let passed = checks.iter().all(|c| c.avg_rel_error <= EPSILON)
        && [read_rel_error, dot_rel_error]
            .into_iter()
            .flatten()
            .all(|e| e <= sum_tolerance);
    Validation {
        passed,
        epsilon: EPSILON,
        arrays: checks,
        read_rel_error,
        dot_rel_error,
        sum_tolerance,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::{Isa, STREAM_KERNELS, StoreMode};
    use crate::memory::policy::MemPolicy;
    use crate::results::require_valid;

    #[test]
    fn recurrence_matches_stream() {
        // STREAM's checkSTREAMresults with NTIMES = 1, by hand.
        let e = expected_values(&STREAM_KERNELS, 1);
        let (a, b, c) = (2.0, 3.0 * 2.0, 2.0 + 6.0);
        assert_eq!(e.values, [b + 3.0 * c, b, c, 1.0]);
        let _ = a;
        // A kernel that did not run leaves its array alone.
        assert_eq!(
            expected_values(&[KernelId::Copy], 5).values,
            [2.0, 2.0, 2.0, 1.0]
        );
        assert_eq!(expected_values(&[KernelId::Read], 3).read_a, Some(2.0));
    }

    #[test]
    fn the_added_kernels_follow_their_formulas() {
        let v = |k: KernelId, n: usize| expected_values(&[k], n);
        assert_eq!(v(KernelId::Init, 2).values[0], WRITE_VALUE);
        assert_eq!(v(KernelId::Update, 3).values[0], 2.0 * 27.0);
        assert_eq!(v(KernelId::Daxpy, 2).values[0], 2.0 + 2.0 * 3.0 * 2.0);
        assert_eq!(v(KernelId::Striad, 2).values[0], 2.0 + 0.0 * 1.0);
        assert_eq!(v(KernelId::Sdaxpy, 2).values[0], 2.0);
        assert_eq!(v(KernelId::Nstream, 2).values[0], 2.0 + 2.0 * 2.0);
        assert_eq!(v(KernelId::Dot, 2).dot_ab, Some(4.0));
        // Update overflows after ~650 repetitions; the expected infinity
        // must still validate, and a finite value against it must not.
        let inf = v(KernelId::Update, 700).values[0];
        assert!(inf.is_infinite());
        assert_eq!(element_error(inf, inf), (0.0, false));
        assert!(element_error(1.0, inf).1);
        assert!(element_error(f64::NAN, 2.0).1, "NaN is never right");
    }

    #[test]
    fn sums_are_held_to_the_rounding_bound_of_their_length() {
        assert_eq!(sum_tolerance(10), EPSILON);
        assert!((sum_tolerance(1 << 30) - 2.4e-7).abs() < 1e-8);
        let expected = expected_values(&[KernelId::Dot], 2);
        let arrays = Arrays::map(
            &[ArrayId::A, ArrayId::B],
            1000,
            Hugepages::Never,
            &Default::default(),
        )
        .unwrap();
        let mut errors = ErrorSums {
            read_len: 1000,
            dot_sum: 4000.0,
            ..Default::default()
        };
        assert!(validation_report(&arrays, &expected, &errors).passed);
        errors.dot_sum = 4000.0 * (1.0 + 1e-11);
        let v = validation_report(&arrays, &expected, &errors);
        assert!(!v.passed, "{v:?}");
        assert!(v.dot_rel_error.unwrap() > 1e-12);
    }

    #[test]
    fn statistics_skip_the_first_repetition() {
        let r = kernel_statistics(
            KernelId::Triad,
            StoreMode::Regular,
            1000,
            vec![9.0, 2.0, 1.0, 3.0],
        );
        assert_eq!((r.min_time_s, r.max_time_s, r.avg_time_s), (1.0, 3.0, 2.0));
        assert_eq!(r.best_rate_mb_s, 24.0 * 1000.0 / 1.0 / 1e6);
        assert_eq!(r.spread, 3.0);
        assert_eq!(r.times_s.len(), 4);
        assert_eq!(r.dram_bytes_per_element, 32);
    }

    fn small_plan(kernels: Vec<KernelId>, stores: StoreMode) -> Plan {
        let cpu = crate::sys::current_cpu().unwrap();
        Plan {
            elements: 100_003,
            ntimes: 3,
            kernels,
            fns: KernelFns::select(Isa::best(), stores).unwrap(),
            cpus: vec![cpu, cpu],
            cpu_nodes: vec![None, None],
            hugepages: Hugepages::Auto,
            mem: MemPolicy::default(),
            inner_repeats: 1,
        }
    }

    #[test]
    fn a_small_run_validates() {
        for stores in [StoreMode::Regular, StoreMode::Nt] {
            let all: Vec<KernelId> = crate::kernels::KERNELS.iter().map(|k| k.id).collect();
            let m = measure(&small_plan(all, stores)).unwrap();
            assert!(m.validation.passed, "{:?}", m.validation);
            assert_eq!(m.results.len(), crate::kernels::KERNELS.len());
            assert_eq!(m.arrays, 4);
            assert!(
                m.results
                    .iter()
                    .all(|r| r.best_rate_mb_s > 0.0 && r.times_s.len() == 3)
            );
            assert!(m.validation.read_rel_error.unwrap() < 1e-12);
            assert!(m.validation.dot_rel_error.unwrap() < 1e-12);
            require_valid(&m).unwrap();
        }
    }

    #[test]
    fn inner_repeats_count_every_call() {
        let mut plan = small_plan(vec![KernelId::Triad], StoreMode::Regular);
        plan.inner_repeats = 4;
        let m = measure(&plan).unwrap();
        assert!(m.validation.passed);
        let r = &m.results[0];
        let bytes = 24.0 * plan.elements as f64 * 4.0;
        assert!((r.best_rate_mb_s - bytes / r.min_time_s / 1e6).abs() < 1e-6 * r.best_rate_mb_s);
    }

    #[test]
    fn only_used_arrays_are_mapped() {
        let plan = small_plan(vec![KernelId::Read], StoreMode::Regular);
        assert_eq!(plan.arrays_needed(), vec![ArrayId::A]);
        let m = measure(&plan).unwrap();
        assert_eq!(m.arrays, 1);
        assert!(m.validation.passed);
    }

    #[test]
    fn a_corrupted_element_fails_validation_and_names_its_array() {
        let plan = small_plan(STREAM_KERNELS.to_vec(), StoreMode::Regular);
        // Thread 1 flips one element of b after the timed loops.
        let m = measure_with(
            &plan,
            |thread, chunk| {
                if thread == 1 {
                    chunk.get(ArrayId::B)[7] += 1.0;
                }
            },
            None,
        )
        .unwrap()
        .measurement;
        assert!(!m.validation.passed);
        let b = &m.validation.arrays[ArrayId::B.index()];
        assert_eq!((b.array.as_str(), b.bad_elements), ("b", 1));
        assert!(
            m.validation
                .arrays
                .iter()
                .filter(|c| c.bad_elements > 0)
                .count()
                == 1
        );
        let err = require_valid(&m).unwrap_err().to_string();
        assert!(err.contains("array b") && err.contains("1 of"), "{err}");
        assert!(
            !err.contains("array a") && !err.contains("array c"),
            "{err}"
        );
    }

    /// Counts the gate's calls, and can say another rank failed.
    struct CountingGate {
        ready: bool,
        calls: std::sync::Mutex<Vec<&'static str>>,
    }

    impl RankGate for CountingGate {
        fn ready(&self) -> bool {
            self.calls.lock().unwrap().push("ready");
            self.ready
        }
        fn start(&self) {
            self.calls.lock().unwrap().push("start");
        }
        fn finish(&self) {
            self.calls.lock().unwrap().push("finish");
        }
    }

    #[test]
    fn a_gated_run_meets_the_other_ranks_around_every_kernel() {
        let plan = small_plan(STREAM_KERNELS.to_vec(), StoreMode::Regular);
        let gate = CountingGate {
            ready: true,
            calls: Default::default(),
        };
        let g = measure_gated(&plan, &gate).unwrap();
        assert!(g.measurement.validation.passed);
        let calls = gate.calls.into_inner().unwrap();
        let timed = plan.ntimes * plan.kernels.len();
        assert_eq!(calls[0], "ready");
        assert_eq!(calls.len(), 1 + 2 * timed);
        assert!(calls[1..].chunks(2).all(|c| c == ["start", "finish"]));
        // The synchronized time of a kernel includes its own time.
        assert_eq!(g.synced_times.len(), timed);
        for (k, r) in g.measurement.results.iter().enumerate() {
            for rep in 0..plan.ntimes {
                assert!(g.synced_times[k * plan.ntimes + rep] >= r.times_s[rep]);
            }
        }
    }

    #[test]
    fn when_another_rank_fails_nothing_is_timed() {
        let plan = small_plan(STREAM_KERNELS.to_vec(), StoreMode::Regular);
        let gate = CountingGate {
            ready: false,
            calls: Default::default(),
        };
        let err = measure_gated(&plan, &gate).err().unwrap().to_string();
        assert!(err.contains("another rank failed"), "{err}");
        assert_eq!(gate.calls.into_inner().unwrap(), vec!["ready"]);
    }
}
