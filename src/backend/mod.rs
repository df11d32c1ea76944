//! The seam under the protocol, as BabelStream's `Stream` interface sits
//! under its driver: a [`Backend`] owns where the arrays live and how a
//! kernel runs over them; the protocol (`crate::protocol`) owns everything
//! else: the timing test, the repetitions and the clock around them, the
//! first-repetition rule, statistics, the timer check and validation.
//!
//! A backend places the arrays, writes their first values, runs a kernel (`repeats` times)
//! and reads them back for validation; it never times or judges.
//!
//! - [`cpu`]: membw's pinned team of threads with the SIMD kernels, arrays
//!   placed by the memory policy and first-touched by their thread;
//! - [`portable`]: one thread, portable loops, ordinary heap arrays;
//! - [`gpu`]: GPUs over the GPU-runtime layer, whose vendors are [`cuda`]
//!   (NVIDIA), [`hip`] (AMD) and [`sim`] (simulated devices, for tests).
//!
//! Adding a backend: a module here and a line in [`BACKENDS`] (a GPU vendor: a line in
//! [`PLATFORMS`], `registry.rs`, instead).

pub mod cpu;
pub mod cuda;
mod device_set;
pub mod gpu;
pub mod hip;
pub mod portable;
pub(crate) mod registry;
pub mod sim;
mod spec;

pub use device_set::{PlatformSet, by_name, for_rank, make_one, platform_set, set_backends};
pub use registry::{
    PLATFORMS, fabric_kind, fabric_kinds, gpu_drivers, gpu_memory, gpu_reach, node_gpus,
    platform_for, probe_child,
};
pub use spec::{BackendSpec, DeviceSelection, SpecTarget};

use crate::error::Result;
use crate::kernels::{ARRAYS, ArrayId, KernelFns, KernelId, SCALAR, WRITE_VALUE};
use crate::memory::Chunk;
use crate::memory::policy::{MemPolicy, PagePlacement};
use crate::plan::{Plan, Prepared, Settings};
use crate::results::measurement::ThreadPlacement;
use crate::topology::Topology;

/// Where a plan's arrays live and how kernels run over them.
pub trait Backend: Send {
    /// The name `--backend` takes and records show.
    fn name(&self) -> &'static str;

    /// Resolves the request into this backend's plan, refusing (before
    /// anything is allocated) what it cannot run, and declares in
    /// `Plan::target` what it is (its identity, and a device's own peak).
    /// The default is the host's CPU team: threads placed on the topology,
    /// arrays sized from its caches and checked against its memory, the
    /// widest ISA and the store mode the last-level cache suggests.
    fn prepare(&self, topo: &Topology, settings: &Settings) -> Result<Prepared> {
        crate::plan::prepare(topo, settings)
    }

    /// Where a health check measures this backend's target: the host's
    /// CPUs' node and NUMA domains unless it says otherwise (a device: its
    /// memory, and its host link from each memory node).
    fn health_scopes(&self, topo: &Topology) -> Vec<crate::results::scope::Scope> {
        crate::results::scope::Scope::of_host(topo)
    }

    /// What watches a timed window of this plan's target: the CPUs' tick
    /// counters, and where the threads are unbound the scheduler's moves;
    /// unless the backend says otherwise (a GPU's clocks).
    fn observers(&self, plan: &Plan) -> Vec<Box<dyn crate::observe::Observer>> {
        let mut observers: Vec<Box<dyn crate::observe::Observer>> =
            vec![Box::new(crate::observe::OtherWork::default())];
        if !plan.pinned {
            observers.push(Box::new(crate::observe::SchedulerMoves::default()));
        }
        observers
    }

    /// Allocates and places the plan's arrays and lends them to `work`
    /// as a [`TargetArrays`] while they exist; then says where the work ran and
    /// where the pages went. An error of the work's is returned as is.
    fn open(&mut self, plan: &Plan, work: &mut dyn WithArrays) -> Result<Observed>;
}

/// The protocol's side of [`Backend::open`]: everything done with the
/// arrays (the protocol's repetitions; a closure in tests).
pub trait WithArrays: Send {
    fn run_on(&mut self, arrays: &mut dyn TargetArrays) -> Result<()>;
}

impl<F: FnMut(&mut dyn TargetArrays) -> Result<()> + Send> WithArrays for F {
    fn run_on(&mut self, arrays: &mut dyn TargetArrays) -> Result<()> {
        self(arrays)
    }
}

/// The arrays of one measurement, as the protocol drives them. Every call
/// returns once the work is done everywhere (all threads, the whole device).
pub trait TargetArrays {
    /// First touch: every mapped array gets its value from `values` (by
    /// index: a, b, c, d), written where it will be used.
    fn init(&mut self, values: [f64; ARRAYS]);
    /// STREAM's timing test: `a = 2a` over the whole array.
    fn double_a(&mut self);
    /// Returns once every worker is idle and waiting, so that the next
    /// call starts everywhere at once: the protocol calls it before it
    /// starts a clock, so that no worker's lateness is timed.
    fn sync(&mut self);
    /// `kernel`, `repeats` times over the whole arrays.
    fn run(&mut self, kernel: KernelId, repeats: usize);
    /// Reads every mapped array back: `errors` (the protocol's rule) gives
    /// the error sum and the bad elements of a slice against its value in
    /// `want`; the reductions' last results come with it.
    fn read_back(&mut self, want: [f64; ARRAYS], errors: ArrayErrors) -> ReadBack;
    /// The target's own time of the last `run`, seconds (a GPU's events
    /// around its kernels), where it keeps one. The protocol keeps its
    /// host clock around the call too and checks the two against each other.
    fn device_seconds(&self) -> Option<f64> {
        None
    }
    /// The ways this target can run `kernel` (a GPU's launch shapes), by
    /// id and label: the protocol times each while it calibrates and keeps
    /// the fastest. None or one: nothing to choose.
    fn shapes(&self, kernel: KernelId) -> Vec<ShapeName> {
        let _ = kernel;
        Vec::new()
    }
    /// Checks the `shape`-th way of running `kernel` on its own (one call
    /// over a length of the target's choosing, every element it writes
    /// and the one past them): why it is wrong, where it is.
    fn check_shape(&mut self, kernel: KernelId, shape: usize) -> std::result::Result<(), String> {
        let _ = (kernel, shape);
        Ok(())
    }
    /// Runs `kernel` the `shape`-th way of [`shapes`](Self::shapes) from now on.
    fn choose_shape(&mut self, kernel: KernelId, shape: usize) {
        let _ = (kernel, shape);
    }
    /// Runs `kernel` with `stores` from now on (the CPU team, timing both
    /// near the cache edge); false where the target cannot switch.
    fn use_stores(&mut self, kernel: KernelId, stores: crate::kernels::StoreMode) -> bool {
        let _ = (kernel, stores);
        false
    }
    /// Each thread's own time in the last `run`, seconds, into `out` (one
    /// slot per thread); false when the device does not time its threads.
    fn thread_seconds(&self, out: &mut [f64]) -> bool {
        let _ = out;
        false
    }
}

/// One way a target can run a kernel: its stable id
/// (`w16.u1.b1024.cover`) and what it is, for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeName {
    pub id: String,
    pub label: String,
    /// Where it is the shape measured fastest on this GPU's architecture
    /// (and so the only one timed), the GPU it was measured on.
    pub measured_on: Option<&'static str>,
}

/// The protocol's rule for one slice of an array against the value every
/// element should hold: (sum of absolute errors, elements over tolerance).
pub type ArrayErrors = fn(&[f64], f64) -> (f64, u64);

/// What reading the arrays back found, summed over the whole arrays.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReadBack {
    /// Elements per array.
    pub elements: usize,
    /// Which arrays were mapped.
    pub mapped: [bool; ARRAYS],
    pub abs_error: [f64; ARRAYS],
    pub bad: [u64; ARRAYS],
    /// The read kernel's and the dot kernel's last sums over the whole arrays.
    pub read_sum: f64,
    pub dot_sum: f64,
}

impl ReadBack {
    /// Adds one part's (a thread's chunk) to the whole.
    pub fn add(&mut self, part: &ReadBack) {
        self.elements += part.elements;
        for i in 0..ARRAYS {
            self.mapped[i] |= part.mapped[i];
            self.abs_error[i] += part.abs_error[i];
            self.bad[i] += part.bad[i];
        }
        self.read_sum += part.read_sum;
        self.dot_sum += part.dot_sum;
    }
}

/// What a backend saw of where the work ran and the pages went.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub threads: Vec<ThreadPlacement>,
    pub pages: Vec<PagePlacement>,
    pub warnings: Vec<String>,
    /// Where a device's arrays lived, as its driver said.
    pub gpu_memory: Option<crate::memory::gpu_memory::GpuMemoryUse>,
}

/// Makes a backend for one of its devices (`None`: its first, or the host
/// for a backend that has no devices), or says why it cannot.
pub type MakeBackend = fn(Option<u32>) -> std::result::Result<Box<dyn Backend>, String>;

/// The backends of the host's own memory, by name: the one registration
/// a new one adds. A GPU vendor registers in [`PLATFORMS`] alone, and
/// `NAME` and `NAME:N` name its devices.
pub const BACKENDS: &[(&str, MakeBackend)] = &[
    ("cpu", |i| {
        host_only("cpu", i).map(|()| Box::new(cpu::CpuTeam) as _)
    }),
    ("portable", |i| {
        host_only("portable", i).map(|()| Box::new(portable::Portable) as _)
    }),
];

/// A backend of the host's own memory takes no device index.
fn host_only(name: &str, index: Option<u32>) -> std::result::Result<(), String> {
    match index {
        None => Ok(()),
        Some(_) => Err(format!(
            "the {name} backend measures the host's memory and has no devices to number"
        )),
    }
}

/// The names of every backend, the host's then the GPU vendors'.
pub fn names() -> String {
    (BACKENDS.iter().map(|(n, _)| *n))
        .chain(PLATFORMS.iter().map(|p| p.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The reductions' last results on one part of the arrays.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sums {
    pub read: f64,
    pub dot: f64,
}

/// One kernel over one part of the arrays in host memory, with the
/// selected implementations: what the CPU team runs. A plan maps every
/// array its kernels use (`Plan::arrays_needed`, from the same specs), so
/// an unmapped one is membw's bug: nothing runs and validation, which
/// finds the array unchanged, fails the run.
pub(crate) fn run_kernel(fns: &KernelFns, kernel: KernelId, chunk: &mut Chunk, sums: &mut Sums) {
    let [a, b, c, d, ..] = &mut chunk.arrays;
    let (Some(a), b, c, d) = (
        a.as_deref_mut(),
        b.as_deref_mut(),
        c.as_deref_mut(),
        d.as_deref_mut(),
    ) else {
        return;
    };
    match kernel {
        KernelId::Copy => c.map_or((), |c| (fns.copy)(c, a)),
        KernelId::Scale => {
            if let (Some(b), Some(c)) = (b, c) {
                (fns.scale)(b, c, SCALAR)
            }
        }
        KernelId::Add => {
            if let (Some(b), Some(c)) = (b, c) {
                (fns.add)(c, a, b)
            }
        }
        KernelId::Triad => {
            if let (Some(b), Some(c)) = (b, c) {
                (fns.triad)(a, b, c, SCALAR)
            }
        }
        KernelId::Read => sums.read = std::hint::black_box((fns.read)(a)),
        KernelId::Write => c.map_or((), |c| (fns.write)(c, WRITE_VALUE)),
        KernelId::Init => (fns.write)(a, WRITE_VALUE),
        KernelId::Update => (fns.update)(a, SCALAR),
        KernelId::Daxpy => b.map_or((), |b| (fns.daxpy)(a, b, SCALAR)),
        KernelId::Striad => {
            if let (Some(b), Some(c), Some(d)) = (b, c, d) {
                (fns.striad)(a, b, c, d)
            }
        }
        KernelId::Sdaxpy => {
            if let (Some(b), Some(c)) = (b, c) {
                (fns.sdaxpy)(a, b, c)
            }
        }
        KernelId::Nstream => {
            if let (Some(b), Some(c)) = (b, c) {
                (fns.nstream)(a, b, c, SCALAR)
            }
        }
        KernelId::Dot => {
            if let Some(b) = b {
                sums.dot = std::hint::black_box((fns.dot)(a, b))
            }
        }
        // A host link is a device's: the CPU team's plan refuses these
        // (`plan::prepare`), and its team maps no host buffer to run them.
        KernelId::H2d
        | KernelId::D2h
        | KernelId::Bidir
        | KernelId::H2dKernel
        | KernelId::D2hKernel
        | KernelId::BidirKernel
        | KernelId::H2dPageable
        | KernelId::D2hPageable => {}
    }
}

/// First touch of one part: each mapped array gets its value.
pub(crate) fn init_chunk(fns: &KernelFns, chunk: &mut Chunk, values: [f64; ARRAYS]) {
    for (id, value) in ArrayId::ALL.into_iter().zip(values) {
        if let Some(array) = chunk.arrays[id.index()].as_deref_mut() {
            crate::sys::populate_for_write(array);
            (fns.write)(array, value);
        }
    }
}

/// STREAM's timing test on one part: `a = 2a`.
pub(crate) fn double_chunk(chunk: &mut Chunk) {
    if let Some(a) = chunk.arrays[ArrayId::A.index()].as_deref_mut() {
        for x in a.iter_mut() {
            *x *= 2.0;
        }
    }
}

/// Reads one part back.
pub(crate) fn read_back_chunk(
    chunk: &Chunk,
    sums: Sums,
    want: [f64; ARRAYS],
    errors: ArrayErrors,
) -> ReadBack {
    let mut out = ReadBack {
        read_sum: sums.read,
        dot_sum: sums.dot,
        ..Default::default()
    };
    for id in ArrayId::ALL {
        if let Some(array) = chunk.arrays[id.index()].as_deref() {
            let (abs, bad) = errors(array, want[id.index()]);
            out.mapped[id.index()] = true;
            out.abs_error[id.index()] = abs;
            out.bad[id.index()] = bad;
            out.elements = array.len();
        }
    }
    out
}

/// A plan's arrays in one thread's hands, run by the portable loops: each
/// kernel's recurrence (`KernelSpec::step`) applied element by element. The
/// portable backend is exactly this, over arrays no policy places; a
/// simulated device keeps its memory here, and its host buffers placed by
/// the plan's policy.
pub(crate) struct HostArrays {
    pub(crate) arrays: crate::memory::Arrays,
    sums: Sums,
}

impl HostArrays {
    /// The arrays `needed` (of the plan's), mapped under `mem` (per
    /// array) and not yet touched.
    pub(crate) fn new(plan: &Plan, mem: &MemPolicy, needed: &[ArrayId]) -> Result<HostArrays> {
        let whole = 0..plan.elements;
        let arrays = crate::memory::Arrays::map(
            needed,
            plan.elements,
            0,
            crate::memory::Hugepages::Auto,
            mem,
            std::slice::from_ref(&whole),
        )?;
        Ok(HostArrays {
            arrays,
            sums: Sums::default(),
        })
    }

    /// The whole arrays as one chunk.
    fn chunk(&mut self) -> Chunk<'_> {
        let elements = self.arrays.elements;
        self.arrays
            .chunks(std::slice::from_ref(&(0..elements)))
            .remove(0)
    }
}

/// `kernel` over a chunk by its recurrence, element by element; a
/// transfer by a copy engine (`Mover::CopyEngine`) copies each array it
/// reads whole into the one it writes (the recurrence says the same:
/// `a = h`, `r = b`).
pub(crate) fn run_portable(kernel: KernelId, chunk: &mut Chunk, sums: &mut Sums) {
    let spec = kernel.spec();
    // A copy engine moves whole buffers; the device's threads (a kernel
    // on the host buffer) go element by element, as every other kernel.
    if let crate::kernels::Path::HostLink {
        by: crate::kernels::Mover::CopyEngine | crate::kernels::Mover::Pageable,
        ..
    } = spec.path
    {
        for (&from, &to) in spec.reads.iter().zip(spec.writes) {
            if let Ok([Some(from), Some(to)]) =
                (chunk.arrays).get_disjoint_mut([from.index(), to.index()])
            {
                to.copy_from_slice(from);
            }
        }
        return;
    }
    let len = (chunk.arrays.iter().flatten())
        .map(|a| a.len())
        .next()
        .unwrap_or(0);
    let mut sum = 0.0;
    for i in 0..len {
        let mut element = [0.0; ARRAYS];
        for id in spec.reads {
            if let Some(array) = &chunk.arrays[id.index()] {
                element[id.index()] = array[i];
            }
        }
        if let Some(term) = (spec.step)(&mut element) {
            sum += term;
        }
        for id in spec.writes {
            if let Some(array) = &mut chunk.arrays[id.index()] {
                array[i] = element[id.index()];
            }
        }
    }
    match kernel {
        KernelId::Read => sums.read = std::hint::black_box(sum),
        KernelId::Dot => sums.dot = std::hint::black_box(sum),
        _ => {}
    }
}

impl TargetArrays for HostArrays {
    fn init(&mut self, values: [f64; ARRAYS]) {
        let mut chunk = self.chunk();
        for (id, value) in ArrayId::ALL.into_iter().zip(values) {
            if let Some(v) = chunk.arrays[id.index()].as_deref_mut() {
                v.fill(value);
            }
        }
    }
    fn double_a(&mut self) {
        double_chunk(&mut self.chunk());
    }
    fn sync(&mut self) {}
    fn run(&mut self, kernel: KernelId, repeats: usize) {
        let mut sums = self.sums;
        let mut chunk = self.chunk();
        for _ in 0..repeats {
            run_portable(kernel, &mut chunk, &mut sums);
        }
        self.sums = sums;
    }
    fn read_back(&mut self, want: [f64; ARRAYS], errors: ArrayErrors) -> ReadBack {
        let sums = self.sums;
        read_back_chunk(&self.chunk(), sums, want, errors)
    }
}

#[cfg(test)]
mod tests;
