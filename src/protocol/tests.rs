use super::expected::element_error;
use super::*;
use crate::backend::ArrayErrors;
use crate::kernels::{ARRAYS, ArrayId, Isa, KernelId, STREAM_KERNELS, StoreMode, WRITE_VALUE};
use crate::memory::Hugepages;
use crate::memory::policy::MemPolicy;
use crate::results::measurement::kernel_statistics;
use crate::results::require_valid;
use crate::sys::Stop;

/// One lone run of `plan` on `backend`.
fn measure_on(backend: &mut dyn Backend, plan: &Plan, stop: &Stop) -> Result<Measurement> {
    measure(backend, plan, None, Some(stop)).map(|g| g.measurement)
}

/// One rank's run of `plan`, gated by `gate`.
fn measure_gated(backend: &mut dyn Backend, plan: &Plan, gate: &dyn RankGate) -> Result<Gated> {
    measure(backend, plan, Some(gate), None)
}

#[test]
fn recurrence_matches_stream() {
    // STREAM's checkSTREAMresults with NTIMES = 1, by hand.
    let e = expected_values(&STREAM_KERNELS, 1, 1);
    let (a, b, c) = (2.0, 3.0 * 2.0, 2.0 + 6.0);
    assert_eq!(e.values[..4], [b + 3.0 * c, b, c, 1.0]);
    let _ = a;
    // A kernel that did not run leaves its array alone.
    assert_eq!(
        expected_values(&[KernelId::Copy], 5, 1).values[..4],
        [2.0, 2.0, 2.0, 1.0]
    );
    assert_eq!(expected_values(&[KernelId::Read], 3, 1).read_a, Some(2.0));
}

#[test]
fn the_added_kernels_follow_their_formulas() {
    let v = |k: KernelId, n: usize| expected_values(&[k], n, 1);
    assert_eq!(v(KernelId::Init, 2).values[0], WRITE_VALUE);
    assert_eq!(v(KernelId::Update, 3).values[0], 2.0 * 27.0);
    assert_eq!(v(KernelId::Daxpy, 2).values[0], 2.0 + 2.0 * 3.0 * 2.0);
    assert_eq!(v(KernelId::Striad, 2).values[0], 2.0 + 0.0 * 1.0);
    assert_eq!(v(KernelId::Sdaxpy, 2).values[0], 2.0);
    assert_eq!(v(KernelId::Nstream, 2).values[0], 2.0 + 2.0 * 2.0);
    assert_eq!(v(KernelId::Dot, 2).dot_ab, Some(4.0));
    // Calls per repetition advance the recurrence as repetitions do.
    assert_eq!(
        expected_values(&[KernelId::Update], 3, 2).values[0],
        v(KernelId::Update, 6).values[0]
    );
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
    let expected = expected_values(&[KernelId::Dot], 2, 1);
    let mut errors = ReadBack {
        elements: 1000,
        mapped: [true, true, false, false, false, false],
        dot_sum: 4000.0,
        ..Default::default()
    };
    assert!(judge::validation(&expected, &errors).passed);
    errors.dot_sum = 4000.0 * (1.0 + 1e-11);
    let v = judge::validation(&expected, &errors);
    assert!(!v.passed, "{v:?}");
    assert!(v.dot_rel_error.unwrap() > 1e-12);
}

#[test]
fn statistics_skip_the_first_repetition() {
    let r = kernel_statistics(
        KernelId::Triad,
        Some(StoreMode::Regular),
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
        pinned: true,
        elements: 100_003,
        ntimes: 3,
        kernels,
        target: crate::results::targets::Target::cpu(Isa::best(), stores),
        cpus: vec![cpu, cpu],
        cpu_nodes: vec![None, None],
        hugepages: Hugepages::Auto,
        offset: 0,
        mem: MemPolicy::default(),
        inner_repeats: 1,
        calibrate: false,
        in_caches: None,
        caches_unknown: None,
        shapes: Default::default(),
        gpu_memory: Default::default(),
        kernel_stores: Vec::new(),
        caches: Default::default(),
    }
}

#[test]
fn a_small_run_validates() {
    for stores in [StoreMode::Regular, StoreMode::Nt] {
        let all: Vec<KernelId> = crate::kernels::memory_kernels().collect();
        let m = measure_on(
            &mut crate::backend::cpu::CpuTeam,
            &small_plan(all, stores),
            &Stop::default(),
        )
        .unwrap();
        assert!(m.validation.passed, "{:?}", m.validation);
        assert_eq!(m.results.len(), crate::kernels::memory_kernels().count());
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
    let m = measure_on(&mut crate::backend::cpu::CpuTeam, &plan, &Stop::default()).unwrap();
    assert!(m.validation.passed);
    let r = &m.results[0];
    let bytes = 24.0 * plan.elements as f64 * 4.0;
    assert!((r.best_rate_mb_s - bytes / r.min_time_s / 1e6).abs() < 1e-6 * r.best_rate_mb_s);
}

#[test]
fn a_cached_working_set_is_calibrated_by_time_and_still_validates() {
    // 4096 elements (a few µs a call): the calls grow until a repetition
    // lasts at least the floor (1 ms here); the arrays are set again after.
    let mut plan = small_plan(STREAM_KERNELS.to_vec(), StoreMode::Regular);
    // One thread: two on one CPU would make the barrier, and so the
    // floor, a time slice long.
    plan.cpus.truncate(1);
    plan.cpu_nodes.truncate(1);
    plan.elements = 4096;
    plan.calibrate = true;
    let m = measure_on(&mut crate::backend::cpu::CpuTeam, &plan, &Stop::default()).unwrap();
    assert!(m.inner_repeats > 1, "{}", m.inner_repeats);
    assert!(m.validation.passed, "{:?}", m.validation);
    assert!(m.timer.barrier_us.is_some_and(|b| b > 0.0));
    // The bytes counted are the calibrated calls'.
    let r = &m.results[0];
    let bytes = 16.0 * 4096.0 * m.inner_repeats as f64;
    assert!((r.best_rate_mb_s - bytes / r.min_time_s / 1e6).abs() < 1e-6 * r.best_rate_mb_s);
    // STREAM's protocol where the plan does not ask: one call.
    plan.calibrate = false;
    let m = measure_on(&mut crate::backend::cpu::CpuTeam, &plan, &Stop::default()).unwrap();
    assert_eq!(m.inner_repeats, 1);
}

#[test]
fn the_floor_is_the_longest_of_the_round_trips_and_the_clocks_rule() {
    let host = crate::results::targets::Clock::host();
    let tick = std::time::Duration::from_micros(1);
    assert_eq!(repetition_floor(1e-6, &host, tick), MIN_KERNEL_SECONDS);
    assert_eq!(repetition_floor(50e-6, &host, tick), 100.0 * 50e-6);
    let coarse = std::time::Duration::from_millis(1);
    assert_eq!(repetition_floor(1e-6, &host, coarse), MIN_TICKS * 1e-3);
    // A device's events: 20 of their ticks, not the host's 1 ms.
    let events = crate::results::targets::Clock {
        name: "events".into(),
        own: true,
        resolution_s: Some(0.5e-6),
    };
    assert!((repetition_floor(1e-8, &events, tick) - 10e-6).abs() < 1e-12);
}

#[test]
fn only_used_arrays_are_mapped() {
    let plan = small_plan(vec![KernelId::Read], StoreMode::Regular);
    assert_eq!(plan.arrays_needed(), vec![ArrayId::A]);
    let m = measure_on(&mut crate::backend::cpu::CpuTeam, &plan, &Stop::default()).unwrap();
    assert_eq!(m.arrays, 1);
    assert!(m.validation.passed);
}

/// A backend that runs another one and, before the read-back, sets
/// one element of `b` wrong: validation must catch it and name `b`.
struct Corrupting<B>(B);

struct CorruptingDevice<'d> {
    inner: &'d mut dyn TargetArrays,
}

impl TargetArrays for CorruptingDevice<'_> {
    fn init(&mut self, values: [f64; ARRAYS]) {
        self.inner.init(values)
    }
    fn double_a(&mut self) {
        self.inner.double_a()
    }
    fn sync(&mut self) {
        self.inner.sync()
    }
    fn run(&mut self, kernel: KernelId, repeats: usize) {
        self.inner.run(kernel, repeats)
    }
    fn read_back(&mut self, want: [f64; ARRAYS], errors: ArrayErrors) -> ReadBack {
        let mut r = self.inner.read_back(want, errors);
        // As if one element of b were off by one.
        let (err, bad) = errors(&[want[ArrayId::B.index()] + 1.0], want[ArrayId::B.index()]);
        r.abs_error[ArrayId::B.index()] += err;
        r.bad[ArrayId::B.index()] += bad;
        r
    }
}

impl<B: Backend> Backend for Corrupting<B> {
    fn name(&self) -> &'static str {
        "corrupting"
    }
    fn open(
        &mut self,
        plan: &Plan,
        work: &mut dyn crate::backend::WithArrays,
    ) -> Result<crate::backend::Observed> {
        self.0.open(plan, &mut |device: &mut dyn TargetArrays| {
            work.run_on(&mut CorruptingDevice { inner: device })
        })
    }
}

#[test]
fn a_corrupted_element_fails_validation_and_names_its_array() {
    let plan = small_plan(STREAM_KERNELS.to_vec(), StoreMode::Regular);
    let one = Plan {
        pinned: true,
        cpus: vec![plan.cpus[0]],
        cpu_nodes: vec![None],
        ..plan.clone()
    };
    let mut team = Corrupting(crate::backend::cpu::CpuTeam);
    let mut portable = Corrupting(crate::backend::portable::Portable);
    for (m, name) in [
        (
            measure_on(&mut team, &plan, &Stop::default()).unwrap(),
            "cpu",
        ),
        (
            measure_on(&mut portable, &one, &Stop::default()).unwrap(),
            "portable",
        ),
    ] {
        assert!(!m.validation.passed, "{name}");
        let b = &m.validation.arrays[ArrayId::B.index()];
        assert_eq!((b.array.as_str(), b.bad_elements), ("b", 1), "{name}");
        assert_eq!(
            m.validation
                .arrays
                .iter()
                .filter(|c| c.bad_elements > 0)
                .count(),
            1,
            "{name}"
        );
        let err = require_valid(&m).unwrap_err().to_string();
        assert!(err.contains("array b") && err.contains("1 of"), "{err}");
        assert!(
            !err.contains("array a") && !err.contains("array c"),
            "{err}"
        );
    }
}

#[test]
fn both_backends_run_every_kernel_and_validate_through_one_protocol() {
    let all: Vec<KernelId> = crate::kernels::memory_kernels().collect();
    let plan = small_plan(all, StoreMode::Regular);
    let one = Plan {
        pinned: true,
        cpus: vec![plan.cpus[0]],
        cpu_nodes: vec![None],
        ..plan.clone()
    };
    for name in ["cpu", "portable"] {
        let mut backend = crate::backend::by_name(name).unwrap();
        let m = measure_on(backend.as_mut(), &one, &Stop::default()).unwrap();
        assert!(m.validation.passed, "{name}: {:?}", m.validation);
        assert_eq!(
            m.results.len(),
            crate::kernels::memory_kernels().count(),
            "{name}"
        );
        assert!(
            m.results
                .iter()
                .all(|r| r.times_s.len() == 3 && r.min_time_s > 0.0),
            "{name}"
        );
        assert_eq!(m.threads.len(), 1, "{name}");
    }
    // The portable backend says it runs one thread, and what it skips.
    let mut portable = crate::backend::portable::Portable;
    assert!(measure_on(&mut portable, &plan, &Stop::default()).is_err());
    let m = measure_on(&mut portable, &one, &Stop::default()).unwrap();
    assert!(m.warnings.iter().any(|w| w.contains("portable backend")));
    let refused = |spec: &str| crate::backend::by_name(spec).err().unwrap_or_default();
    assert!(refused("gpu").contains("unknown backend 'gpu'"));
    assert!(refused("cpu:1").contains("no devices"));
    assert!(refused("sim:x").contains("'x'"));
    assert!(refused("sim:4").contains("sim:0 to sim:3"));
    assert!(crate::backend::by_name("sim:3").is_ok());
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
    let g = measure_gated(&mut crate::backend::cpu::CpuTeam, &plan, &gate).unwrap();
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
    let err = measure_gated(&mut crate::backend::cpu::CpuTeam, &plan, &gate)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("another rank failed"), "{err}");
    assert_eq!(gate.calls.into_inner().unwrap(), vec!["ready"]);
}
