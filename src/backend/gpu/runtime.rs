//! The GPU-runtime layer: what the GPU backend needs of a vendor's runtime,
//! and nothing more. A vendor (CUDA's driver API; the simulated device of
//! the tests; AMD's) is one [`Platform`] (its devices and their facts)
//! and one [`Runtime`] (one device's context: memory, host registration,
//! the kernels' module, launches, events, streams). Everything above it
//! (arrays, launch shapes, timing windows, transfers, read-back) is
//! `backend::gpu`'s, written once.
//!
//! Streams and events are the runtime's own, two streams and three events
//! made when it opens: a measurement never needs more, and a handle that
//! is an enum cannot dangle.

use crate::kernels::gpu_builds::{CacheHint, ShapeId};
pub use crate::memory::gpu_memory::DriverMemory;
use crate::observe::Observer;
use crate::results::targets;
pub use crate::results::targets::FabricKind;
use crate::topology::Topology;

/// An address in the device's view: its own memory, or host memory
/// registered and mapped for it.
pub type DevicePtr = u64;

/// A kernel of the runtime's module, by the index the runtime gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Function(pub usize);

/// The runtime's two streams: work in order on `Main`; a bidirectional
/// copy's other direction at once on `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Main,
    Other,
}

impl Stream {
    /// Its place among a runtime's two streams' handles.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The runtime's three events: a timed window's ends, and `Other`'s end
/// that `Main` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Start,
    End,
    OtherDone,
}

impl Event {
    /// Its place among a runtime's three events' handles.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What every kernel of the module takes, in this order (`kernels.cu`'s
/// `PARAMS`): the six arrays as the device addresses them (0 where not
/// used), the reductions' per-block sums, the scalar and the elements.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KernelArgs {
    pub arrays: [DevicePtr; crate::kernels::ARRAYS],
    pub partial: DevicePtr,
    pub scalar: f64,
    pub elements: u64,
}

/// The variable that makes a membw process a probe of a vendor's runtime
/// (`NAME:WHAT`, by its platform's name): a child the platform starts to
/// try a call that may crash, before it makes that call in membw itself.
pub const PROBE_VARIABLE: &str = "MEMBW_PROBE";

/// Elements per array at least on a GPU when none is given: BabelStream's
/// 2^25.
pub const BABELSTREAM_ELEMENTS: u64 = 1 << 25;

/// Who a platform is, as data: what the CLI, refusals and renderers call
/// it and its devices.
#[derive(Debug, Clone, Copy)]
pub struct PlatformId {
    /// The name `--backend` takes (`cuda`).
    pub name: &'static str,
    /// What a refusal calls one of its devices (`a CUDA GPU`).
    pub kind: &'static str,
    /// Its GPU-to-GPU fabric, where its devices have one.
    pub fabric: Option<&'static FabricKind>,
    /// The maker of the GPUs on the PCI bus that it drives (none: the
    /// simulated device).
    pub vendor: Option<crate::topology::pci::GpuVendor>,
    /// What counts its devices, as a refusal names it (`the CUDA
    /// driver`), and what to add to the count (`an MI250X card is two`).
    pub counter: &'static str,
    pub count_note: Option<&'static str>,
    /// The shared libraries it loads at run time, for `membw version`.
    pub libraries: &'static [Library],
}

/// One vendor's devices: how many, what each is, how to open one.
pub trait Platform: Sync {
    /// Who it is.
    fn id(&self) -> &'static PlatformId;
    /// The name `--backend` takes (`cuda`).
    fn name(&self) -> &'static str {
        self.id().name
    }
    /// What a refusal calls one of its devices (`a CUDA GPU`).
    fn kind(&self) -> &'static str {
        self.id().kind
    }
    /// Its GPU-to-GPU fabric, where its devices have one.
    fn fabric(&self) -> Option<&'static FabricKind> {
        self.id().fabric
    }
    /// The maker of the GPUs on the PCI bus that it drives.
    fn vendor(&self) -> Option<crate::topology::pci::GpuVendor> {
        self.id().vendor
    }
    /// Why `index` is none of the `count` devices it sees, in one line.
    fn missing(&self, index: u32, count: u32) -> String {
        let PlatformId { name, counter, .. } = self.id();
        match (count, self.id().count_note) {
            (0, _) => format!("there is no GPU {name}:{index}: {counter} sees none"),
            (n, note) => format!(
                "there is no GPU {name}:{index}: {counter} sees {n} ({name}:0 to {name}:{}{})",
                n - 1,
                note.map_or(String::new(), |note| format!("; {note}"))
            ),
        }
    }
    /// The devices it sees, or why it sees none (no driver, no GPU).
    fn count(&self) -> Result<u32, String>;
    /// Device `index` as its runtime, its management library and the
    /// PCI bus describe it: the target it is (identity and facts, its
    /// peaks and how it is measured), what the plan needs of it, and
    /// where it is attached.
    fn describe(&self, index: u32, topo: &Topology) -> Result<Described, String>;
    /// Device `index`'s runtime, made current on the calling thread (the
    /// device's host thread, which keeps it until it drops).
    fn open(&self, index: u32) -> Result<Box<dyn Runtime>, String>;
    /// What watches a timed window of this device, besides nothing: its
    /// clocks held back (a GPU's management library), the host CPU that
    /// does a simulated device's work. None are loaded for other targets.
    fn observers(&self, device: &targets::Device) -> Vec<Box<dyn Observer>>;
    /// What to say after a run (a peak that is unknown, clocks held back
    /// now).
    fn after_run(&self, device: &targets::Device) -> Vec<String>;
    /// What its kernels' builds may be launched as: the most threads a
    /// block may have, and the cache hints its module has builds for.
    fn launch_limits(&self) -> LaunchLimits {
        LaunchLimits {
            largest_block: 1024,
            hints: &[CacheHint::None, CacheHint::Streaming, CacheHint::L2Only],
        }
    }
    /// The share of its memory a plan may take (a driver's context and
    /// module need some of a GPU's).
    fn memory_share(&self) -> f64 {
        0.9
    }
    /// Elements per array at least where none are given (BabelStream's
    /// 2^25 on a GPU), besides STREAM's rule on its cache.
    fn min_elements(&self) -> u64 {
        BABELSTREAM_ELEMENTS
    }
    /// What the `MEMBW_…` variables of a test device ask, checked before
    /// anything is planned: one line naming what is wrong.
    fn check_setup(&self) -> Result<(), String> {
        Ok(())
    }
    /// Its GPUs' memory counters by PCI address, read through its
    /// management library without opening a device (for `topo`); why
    /// not, where the library does not load.
    fn memory_counters(&self) -> Result<Vec<targets::GpuMemoryAt>, String> {
        Ok(Vec::new())
    }
    /// What memory each of its GPUs reaches, by PCI address, as its
    /// driver says without opening one (for `topo`); why not, where the
    /// driver does not load.
    fn reach(&self) -> Result<Vec<targets::GpuReachAt>, String> {
        Ok(Vec::new())
    }
    /// In a probe process this platform started (`backend::probe_child`),
    /// what `asked` asks of it, as the exit code; `None` where it asks
    /// another platform.
    fn probe_child(&self, _asked: &str) -> Option<i32> {
        None
    }
}

/// What a platform says after a run of `device` whose memory peak is
/// unknown (`peak_unknown`: why), or whose clocks are held back now
/// (`held`: by what).
pub fn after_run_lines(
    device: &targets::Device,
    peak_unknown: Option<String>,
    held: Option<String>,
) -> Vec<String> {
    let name = &device.id.name;
    let peak = peak_unknown.map(|why| format!("{name}'s memory peak is unknown: {why}"));
    let held = held.map(|why| {
        format!("{name}'s clocks were held back after the run ({why}): its rates may be low")
    });
    peak.into_iter().chain(held).collect()
}

/// What a platform's builds may be launched as.
#[derive(Debug, Clone, Copy)]
pub struct LaunchLimits {
    /// The most threads per block (AMD's code objects fix 256).
    pub largest_block: u32,
    /// The cache hints its module has builds for.
    pub hints: &'static [CacheHint],
}

impl LaunchLimits {
    /// Why `shape` cannot run here, where it cannot.
    pub fn refuses(&self, shape: &ShapeId) -> Option<String> {
        if !self.hints.contains(&shape.build.hint) {
            return Some(format!(
                "this GPU's module has no build {}: its vendor has no such cache hint",
                shape.build.id()
            ));
        }
        (shape.block > self.largest_block).then(|| {
            format!(
                "this GPU's kernels run in blocks of {} threads at most",
                self.largest_block
            )
        })
    }
}

/// A shared library a platform loads at run time: `membw version` says
/// whether one of its names loads on this node.
#[derive(Debug, Clone, Copy)]
pub struct Library {
    /// `cuda`, `nvml`: the line's label.
    pub label: &'static str,
    /// Its names, tried in this order (the newest release first).
    pub names: &'static [&'static str],
    /// What it gives (`--backend cuda:N (loaded at run time)`).
    pub gives: &'static str,
}

/// A device as its platform describes it before a plan: the target it
/// is, with the facts a plan needs (its memory, multiprocessors and
/// last-level cache, where it is attached) and how it is measured.
#[derive(Debug, Clone)]
pub struct Described {
    pub device: targets::Device,
}

/// One device's context, as the GPU backend drives it. Every call is on
/// the thread that opened it; every resource it makes is released when it
/// drops. An `Err` is one line: the call that failed and the runtime's
/// code.
pub trait Runtime {
    /// The GPU's architecture as its vendor names it (`sm_90`, `gfx942`):
    /// what the measured default shapes are looked up by.
    fn architecture(&mut self) -> Option<String> {
        None
    }
    /// The module's kernel `name` (`triad`, `fill_a`), loaded on first
    /// use.
    fn function(&mut self, name: &str) -> Result<Function, String>;
    /// How many blocks of `block` threads of `function` one
    /// multiprocessor holds at once (registers, shared memory and threads
    /// together): the occupancy the runtime computes.
    fn blocks_per_multiprocessor(&mut self, function: Function, block: u32) -> Result<u32, String>;
    /// Device memory of `bytes`, freed when the runtime drops.
    fn alloc(&mut self, bytes: usize) -> Result<DevicePtr, String>;
    /// Managed memory of `bytes`, which the driver migrates between the
    /// host and the device on demand (and which the host addresses where
    /// the device does), freed when the runtime drops.
    fn alloc_managed(&mut self, bytes: usize) -> Result<DevicePtr, String>;
    /// Queues a move of the managed memory at `ptr..ptr+bytes` to the
    /// device.
    fn prefetch(&mut self, ptr: DevicePtr, bytes: usize, stream: Stream) -> Result<(), String>;
    /// What the driver says the memory at `ptr` is (its pointer
    /// attributes), read back after it was allocated.
    fn memory_at(&mut self, ptr: DevicePtr) -> Result<DriverMemory, String>;
    /// The device's address of `len` doubles of pageable host memory at
    /// `host`, which its kernels read through the host's page tables (the
    /// platform checked that it can): the same address, as drivers have
    /// it.
    ///
    /// # Safety
    /// The memory stays mapped, and is not otherwise accessed while work
    /// that uses it is queued, until the runtime drops.
    unsafe fn pageable(&mut self, host: *mut f64, len: usize) -> Result<DevicePtr, String> {
        let _ = len;
        Ok(host as DevicePtr)
    }
    /// Pins `len` doubles of host memory at `host` and maps them for the
    /// device: the device's address of them.
    ///
    /// # Safety
    /// The memory stays mapped, and is not otherwise accessed while work
    /// that uses it is queued, until the runtime drops.
    unsafe fn register(&mut self, host: *mut f64, len: usize) -> Result<DevicePtr, String>;
    /// Queues a copy of `len` doubles from host memory at `from` (pinned
    /// or pageable) to the device at `to`.
    ///
    /// # Safety
    /// `from..from+len` stays valid until the stream is synchronized.
    unsafe fn copy_to_device(
        &mut self,
        to: DevicePtr,
        from: *const f64,
        len: usize,
        stream: Stream,
    ) -> Result<(), String>;
    /// Queues a copy of `len` doubles from the device at `from` to host
    /// memory at `to`.
    ///
    /// # Safety
    /// `to..to+len` stays valid and untouched until the stream is
    /// synchronized.
    unsafe fn copy_to_host(
        &mut self,
        to: *mut f64,
        from: DevicePtr,
        len: usize,
        stream: Stream,
    ) -> Result<(), String>;
    /// Copies device memory at `from` into `into`, and returns once it is
    /// there (reading back, outside the timed windows).
    fn read(&mut self, from: DevicePtr, into: &mut [f64]) -> Result<(), String>;
    /// Queues `function` over `grid` blocks of `block` threads.
    fn launch(
        &mut self,
        function: Function,
        grid: u32,
        block: u32,
        args: &KernelArgs,
        stream: Stream,
    ) -> Result<(), String>;
    /// Records `event` on `stream`.
    fn record(&mut self, event: Event, stream: Stream) -> Result<(), String>;
    /// Makes `stream` wait for `event`.
    fn wait(&mut self, stream: Stream, event: Event) -> Result<(), String>;
    /// Seconds between two recorded events by the device's own clock,
    /// once `to` has happened.
    fn elapsed_s(&mut self, from: Event, to: Event) -> Result<f64, String>;
    /// Returns once `stream` has done everything queued on it.
    fn synchronize(&mut self, stream: Stream) -> Result<(), String>;
    /// Makes this device's context current on the calling thread: one
    /// thread drives every device of a pair probe.
    fn make_current(&mut self) -> Result<(), String>;
    /// Lets this device address device `peer`'s memory (`memory`: the
    /// peer's allocations the copies will use, as address and doubles)
    /// directly where the driver allows it (NVLink, PCIe P2P): true then;
    /// false where its copies to and from the peer are staged by the
    /// driver through host memory and its kernels cannot reach the peer.
    fn enable_peer(&mut self, peer: u32, memory: &[(DevicePtr, usize)]) -> Result<bool, String>;
    /// Queues a copy engine copy of `len` doubles between device memories:
    /// this device's or an enabled peer's, either way.
    ///
    /// # Safety
    /// Both ranges are allocations of this runtime or of a peer given to
    /// [`enable_peer`](Self::enable_peer), alive until the stream is
    /// synchronized.
    unsafe fn copy_device(
        &mut self,
        to: DevicePtr,
        from: DevicePtr,
        len: usize,
        stream: Stream,
    ) -> Result<(), String>;
    /// What the runtime noticed that the run should say (a buffer it
    /// could not pin).
    fn warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}
