//! What one run of a source produced: rates and times per kernel, where the
//! threads ran and the pages landed, validation and timer checks. Every
//! measurement source (the in-process STREAM protocol, the fake source of
//! the tests, later foreign programs and MPI ranks) returns this shape.

pub use super::shape_record::{ShapeRecord, ShapeTried};
use super::targets::Target;
pub use super::thread_placement::ThreadPlacement;
use crate::error::{Error, Result};
use crate::kernels::{Isa, KernelId, StoreMode};
use crate::memory::Hugepages;
use crate::memory::policy::PagePlacement;
pub use crate::memory::stream_rule::InCaches;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelResult {
    pub kernel: KernelId,
    /// Bytes per element as STREAM counts them.
    pub bytes_per_element: u64,
    /// Bytes per element on the memory bus, write-allocate included.
    pub dram_bytes_per_element: u64,
    pub best_rate_mb_s: f64,
    pub avg_time_s: f64,
    pub min_time_s: f64,
    pub max_time_s: f64,
    /// max/min time over the counted repetitions.
    pub spread: f64,
    /// Every repetition's time, the first (not counted) included.
    pub times_s: Vec<f64>,
    /// Each thread's own time for its share of the work, the median over
    /// the counted repetitions, in thread order: a thread much slower than
    /// the rest ran on a busy or throttled core. Empty where the source
    /// cannot tell (another program, the fake source).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_times_s: Vec<f64>,
    /// The counted repetitions' rates (GB/s): their mean, sd, min, max, n
    /// and the 95 % interval of the mean. The best rate stays the headline
    /// (STREAM's); this says how far one repetition is from another.
    /// Absent where no repetition times are known (another program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<super::Stats>,
    /// How the kernel was launched, where the target launches it (a GPU's
    /// grid), and the other shapes timed beside it before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<ShapeRecord>,
    /// The CPU team's stores for this kernel and why (absent: not the CPU team, or older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores: Option<crate::kernels::KernelStores>,
}

impl KernelResult {
    /// The slowest thread's own time over the median of the others', and
    /// its index; `None` with fewer than two threads timed.
    pub fn slowest_thread(&self) -> Option<(usize, f64)> {
        let t = &self.thread_times_s;
        let (slowest, &worst) = t.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))?;
        let others: Vec<f64> = t
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != slowest)
            .map(|(_, &v)| v)
            .collect();
        let median = super::median(&others).filter(|&m| m > 0.0)?;
        Some((slowest, worst / median))
    }
}

impl Measurement {
    /// What the window's observers concluded, together.
    pub fn trust(&self) -> crate::trust::Trust<'_> {
        crate::trust::Trust::of(self.interference.as_ref(), self.held_back.as_ref())
    }

    /// Seconds inside timed repetitions, every kernel's (0 when none were
    /// timed, as for another program's run; never -0.0).
    pub fn measured_s(&self) -> f64 {
        self.results
            .iter()
            .flat_map(|r| &r.times_s)
            .fold(0.0, |a, t| a + t)
    }
}

impl KernelResult {
    /// The counted repetitions' rates (all but the first), GB/s.
    pub fn repetition_rates(&self) -> Vec<f64> {
        let bytes = self.best_gb_s() * self.min_time_s;
        self.times_s
            .iter()
            .skip(1)
            .filter(|&&t| t > 0.0)
            .map(|t| bytes / t)
            .collect()
    }
    /// Best rate in GB/s (10^9 bytes/s), STREAM's counting.
    pub fn best_gb_s(&self) -> f64 {
        self.best_rate_mb_s / 1e3
    }
    /// Best rate of bytes really moved, write-allocate included.
    pub fn dram_gb_s(&self) -> f64 {
        self.best_gb_s() * self.dram_bytes_per_element as f64 / self.bytes_per_element as f64
    }
}

/// `auto`'s other stores for a kernel it decided by size, measured after the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoresCheck {
    pub kernel: KernelId,
    /// The mode the run used, and the mode measured beside it.
    pub used: StoreMode,
    pub other: StoreMode,
    pub used_best_gb_s: f64,
    pub other_best_gb_s: f64,
    /// The other mode's counted repetitions against the run's: the ratio of
    /// their geometric means, its 95 % interval, n and the decision.
    pub comparison: super::estimate::Comparison,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArrayCheck {
    pub array: String,
    pub expected: f64,
    /// Mean absolute error over the array, relative to `expected`.
    pub avg_rel_error: f64,
    /// Elements whose own relative error exceeds epsilon.
    pub bad_elements: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Validation {
    pub passed: bool,
    pub epsilon: f64,
    pub arrays: Vec<ArrayCheck>,
    /// The read kernel's last sum against the exact one, when it ran.
    pub read_rel_error: Option<f64>,
    /// The dot kernel's last sum against the exact one, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dot_rel_error: Option<f64>,
    /// The largest relative error a sum of this many elements may carry.
    #[serde(default = "default_sum_tolerance")]
    pub sum_tolerance: f64,
}

/// Records written before the tolerance was recorded used this one.
fn default_sum_tolerance() -> f64 {
    1e-9
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TimerCheck {
    pub granularity_ns: f64,
    /// Time of STREAM's `a = 2a` timing test, which estimates one kernel's time.
    pub timing_test_us: f64,
    /// How many timer ticks the shortest kernel took.
    pub min_kernel_ticks: f64,
    /// The team's round trip with no work (its two barriers around a
    /// kernel call), the fastest of 16, µs: what every timed repetition
    /// pays besides its kernel. Absent where nothing measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier_us: Option<f64>,
    /// Where the target timed its own work (a device's events): how its
    /// clock agreed with the host's around each repetition. Absent where
    /// the host's clock alone timed the work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_clock: Option<DeviceClock>,
    /// Where the protocol sized the calls per repetition by time: how
    /// long a repetition had to last at least, µs (100 × the round trip,
    /// and what the clock that timed it times well).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition_floor_us: Option<f64>,
}

/// A target's own clock, checked against the host's around it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceClock {
    /// Timed repetitions the target timed.
    pub repetitions: usize,
    /// Those where its time exceeded the host's around the same work by more
    /// than a host clock tick: impossible for a sound clock, so the host's
    /// time is the repetition's.
    pub over_host: usize,
    /// The median of host time over device time: launch and synchronization
    /// overhead the device's own clock leaves out (1.0: none).
    pub host_over_device: f64,
}

fn is_zero_offset(n: &usize) -> bool {
    *n == 0
}

fn pinned_by_default() -> bool {
    true
}

/// The result of one run: what was measured, and how it was set up.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    /// STREAM's OFFSET, in elements: b started this much, c twice this,
    /// past a's alignment (`--offset`; absent for 0).
    #[serde(default, skip_serializing_if = "is_zero_offset")]
    pub offset: usize,
    /// Set when the arrays fit in four times the caches of the CPUs used
    /// (STREAM's rule): the rates are the caches', not the memory's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_caches: Option<InCaches>,
    /// Set where the caches of the CPUs used have no known size: STREAM's
    /// rule was not judged, and the rates are called neither memory's nor
    /// the caches' (`in_caches` is absent then too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches_unknown: Option<crate::topology::UnknownCaches>,
    /// Elements and bytes per array, and repetitions: absent where unknown
    /// (another program that did not print them), never 0.
    #[serde(default, skip_serializing_if = "super::is_zero_u64")]
    pub array_elements: u64,
    #[serde(default, skip_serializing_if = "super::is_zero_u64")]
    pub bytes_per_array: u64,
    pub arrays: usize,
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub ntimes: usize,
    /// Kernel calls per timed repetition (1 for STREAM's protocol).
    #[serde(default = "one")]
    pub inner_repeats: usize,
    /// What ran the kernels, as its backend declared it (CPU team, another
    /// program, device). Absent in schema-1 files: [`Measurement::target`]
    /// reads it from `isa` and `stores` there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// The CPU kernels' ISA and store mode (as in `target`, kept for
    /// readers of schema 1); absent where the target is not the CPU team.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isa: Option<Isa>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores: Option<StoreMode>,
    pub hugepages: Hugepages,
    /// The `--mem` policy, as given (normalized); absent for a device.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mem_policy: String,
    /// Where each CPU thread ran; absent for a device.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadPlacement>,
    /// Whether the threads were bound to their CPUs (false, and written,
    /// only where they were not: `--no-pin`).
    #[serde(default = "pinned_by_default", skip_serializing_if = "Clone::clone")]
    pub pinned: bool,
    /// Who bound threads membw left unpinned, read back from the kernel
    /// (every thread on one CPU): `likwid-pin`, or another tool; absent
    /// where membw pinned them or they were free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_by: Option<String>,
    /// Where each array's pages were found after the run (sampled).
    pub pages: Vec<PagePlacement>,
    /// Where a device's arrays were asked to live and what its driver
    /// said they are (`--gpu-memory`); absent for the CPU team.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory: Option<crate::memory::gpu_memory::GpuMemoryUse>,
    pub results: Vec<KernelResult>,
    pub validation: Validation,
    pub timer: TimerCheck,
    /// Mapping plus parallel first touch.
    pub setup_s: f64,
    /// Setup, repetitions and validation together.
    pub total_s: f64,
    pub warnings: Vec<String>,
    /// What else ran on the CPUs while the repetitions ran, and whether it
    /// (or a large spread) makes the figures doubtful; absent in files
    /// from before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<crate::trust::Interference>,
    /// How long the device's clocks were held back (power, heat) during
    /// the timed window, where the target is a GPU NVML reports on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_back: Option<crate::trust::HeldBack>,
    /// What the source adds beyond the rates, by kind of source (in JSON,
    /// a `program` or a `ranks` field; neither for membw's own kernels).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<SourceDetail>,
}

/// What a kind of source records beyond the rates.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceDetail {
    /// Another program's run (`membw exec`): how it ended and the end of
    /// what it printed.
    Program(ProgramRun),
    /// A run across MPI ranks: every rank, the nodes and the aggregate (the
    /// results are then the aggregate's).
    Ranks(super::ranks::Ranks),
}

impl SourceDetail {
    pub fn program(detail: Option<&SourceDetail>) -> Option<&ProgramRun> {
        match detail {
            Some(SourceDetail::Program(p)) => Some(p),
            _ => None,
        }
    }
    pub fn ranks(detail: Option<&SourceDetail>) -> Option<&super::ranks::Ranks> {
        match detail {
            Some(SourceDetail::Ranks(r)) => Some(r),
            _ => None,
        }
    }
}

/// How another program's run ended, and the tails of its output.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProgramRun {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// The output format membw understood (`stream`, `babelstream`, `likwid-bench`).
    pub format: Option<String>,
    pub stdout_tail: Vec<String>,
    pub stderr_tail: Vec<String>,
    /// CPU seconds membw itself used while the program ran (thread and
    /// numa_maps sampling, reading its output): the cost of watching it.
    #[serde(default)]
    pub watch_cpu_s: f64,
    /// Threads membw saw while sampling (0: it ended before the first
    /// sample, and placement was not verified).
    #[serde(default)]
    pub threads_seen: usize,
    /// Threads whose own affinity mask allowed more than one CPU: not
    /// pinned (`OMP_PROC_BIND=false`), whatever they did.
    #[serde(default)]
    pub threads_unpinned: usize,
    /// Unpinned threads the samples found on more than one CPU, and how
    /// many CPUs beyond their first they were found on (a lower bound on
    /// migrations).
    #[serde(default)]
    pub threads_moved: usize,
    #[serde(default)]
    pub cpu_changes: usize,
    /// The program's own array size, element size and repetitions, as it
    /// printed them (null where it did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_elements: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntimes: Option<usize>,
}

impl Measurement {
    /// What measured: the recorded target, or (schema 1) the one its ISA
    /// and stores say.
    pub fn target(&self) -> Target {
        self.target
            .clone()
            .unwrap_or_else(|| Target::of_schema1(self.isa, self.stores))
    }

    /// Where each host thread that did the work ran, where host CPUs did
    /// it: the run's host part. `None` for a device.
    pub fn host_threads(&self) -> Option<&[ThreadPlacement]> {
        self.target().measured(&self.threads[..]).host()
    }

    /// Another program's run, for `membw exec`.
    pub fn program(&self) -> Option<&ProgramRun> {
        SourceDetail::program(self.detail.as_ref())
    }
    /// Every rank, for a run across MPI ranks.
    pub fn ranks(&self) -> Option<&super::ranks::Ranks> {
        SourceDetail::ranks(self.detail.as_ref())
    }

    pub fn result(&self, kernel: KernelId) -> Option<&KernelResult> {
        self.results.iter().find(|r| r.kernel == kernel)
    }
}

fn one() -> usize {
    1
}

/// Best/avg/min/max over the repetitions after the first, as STREAM
/// reports. `stores` decides the bytes really moved (write-allocate); a
/// target without CPU stores (a device) is counted as STREAM counts.
pub fn kernel_statistics(
    kernel: KernelId,
    stores: Option<StoreMode>,
    elements: usize,
    times: Vec<f64>,
) -> KernelResult {
    let counted = &times[1.min(times.len())..];
    let min = counted.iter().copied().fold(f64::INFINITY, f64::min);
    let max = counted.iter().copied().fold(0.0, f64::max);
    // From +0.0: an empty float sum is -0.0, which JSON would show.
    let avg = counted.iter().fold(0.0, |a, t| a + t) / counted.len().max(1) as f64;
    let spec = kernel.spec();
    let bytes = spec.bytes_counted() as f64 * elements as f64;
    let mut result = KernelResult {
        kernel,
        bytes_per_element: spec.bytes_counted(),
        dram_bytes_per_element: stores.map_or(spec.bytes_counted(), |s| spec.bytes_moved(s)),
        best_rate_mb_s: 1e-6 * bytes / min,
        avg_time_s: avg,
        min_time_s: min,
        max_time_s: max,
        spread: max / min,
        times_s: times,
        thread_times_s: Vec::new(),
        repetitions: None,
        launch: None,
        stores: None,
    };
    result.repetitions = super::Stats::of(&result.repetition_rates());
    result
}

/// Turns a failed validation into the error `membw run` exits with.
pub fn require_valid(m: &Measurement) -> Result<()> {
    if m.validation.passed {
        return Ok(());
    }
    let mut parts: Vec<String> = m
        .validation
        .arrays
        .iter()
        .filter(|c| c.avg_rel_error > m.validation.epsilon || c.bad_elements > 0)
        .map(|c| {
            format!(
                "array {}: avg relative error {:.3e}, {} of {} elements wrong (expected {})",
                c.array, c.avg_rel_error, c.bad_elements, m.array_elements, c.expected
            )
        })
        .collect();
    let tolerance = m.validation.sum_tolerance;
    let off = |e: f64| e.is_nan() || e > tolerance;
    if let Some(e) = m.validation.read_rel_error.filter(|&e| off(e)) {
        parts.push(format!("read kernel sum off by {e:.3e}"));
    }
    if let Some(e) = m.validation.dot_rel_error.filter(|&e| off(e)) {
        parts.push(format!("dot kernel sum off by {e:.3e}"));
    }
    if let Some(ranks) = m.ranks() {
        parts.extend(ranks.ranks.iter().filter(|r| !r.validated).map(|r| {
            format!(
                "rank {} ({}): {}",
                r.rank,
                r.host,
                r.validation_error.as_deref().unwrap_or("failed")
            )
        }));
    }
    Err(Error::Validation(format!(
        "Failed Validation: {}",
        parts.join("; ")
    )))
}

/// Adds the spread finding (the most unsteady kernel, when it varied
/// enough) to what the counters found, and returns every finding, for the
/// measurement's warnings.
/// Replaces the spread finding of `m` (and its warning) by the one of its
/// results as they are now: across MPI ranks, rank 0's own repetitions
/// give way to the aggregate's, which the summary shows.
pub fn renew_spread_finding(m: &mut Measurement) {
    let stale = |f: &String| f.ends_with(crate::trust::SPREAD_TAIL);
    m.warnings.retain(|w| !stale(w));
    if let Some(i) = &mut m.interference {
        i.findings.retain(|f| !stale(f));
        let spreads = m.results.iter().map(|r| (r.kernel.spec().name, r.spread));
        if let Some(f) = crate::trust::spread_finding(spreads) {
            i.findings.push(f.clone());
            m.warnings.push(f);
        }
    }
}

pub fn add_spread_finding(
    interference: &mut crate::trust::Interference,
    results: &[KernelResult],
) -> Vec<String> {
    let spreads = results.iter().map(|r| (r.kernel.spec().name, r.spread));
    interference
        .findings
        .extend(crate::trust::spread_finding(spreads));
    interference.findings.clone()
}
