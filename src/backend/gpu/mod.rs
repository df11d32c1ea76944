//! GPUs of any vendor, as one backend over the GPU-runtime layer
//! ([`runtime`]): a vendor is a [`Platform`] (its devices, their facts,
//! what watches them) and a [`Runtime`] (one device's memory, module,
//! launches, events), plus its kernels; the rest is here, once:
//!
//! - the plan of a device: what only the CPU team has is refused, the
//!   arrays sized by STREAM's rule on the device (four times its
//!   last-level cache) and checked against its memory, the host thread
//!   that drives it;
//! - [`device`]: its arrays, each kernel's launch shapes from the
//!   runtime's occupancy (timed by the protocol, the faster kept), the
//!   windows between two events, the copy engine's transfers;
//! - [`host_buffers`]: the transfers' host buffers, placed, touched,
//!   registered and checked page by page.
//!
//! Vendors: those `backend::PLATFORMS` registers, each in its own folder
//! under `backend/` (NVIDIA's driver API in `cuda`, a simulated device
//! for the tests in `sim`).

mod device;
mod launch;
mod tuned;

pub(crate) mod host_buffers;
pub mod peers;
pub mod runtime;
pub mod vendor;

use super::{Backend, Observed, WithArrays};
use crate::error::{Error, Input, Result};
use crate::kernels::gpu_builds::ShapeChoice;
use crate::kernels::{ArrayId, KernelId, Path};
use crate::memory::gpu_memory::GpuMemory;
use crate::observe::Observer;
use crate::plan::{Plan, Prepared, Settings, StoresRequest};
use crate::results::targets::{Device, Target};
use crate::topology::Topology;
use crate::units::{Bytes, ELEMENT_BYTES};
pub use runtime::{FabricKind, Platform, Runtime};

/// One device of a platform, as `--backend NAME:N` selects it.
pub struct GpuBackend {
    platform: &'static dyn Platform,
    index: u32,
}

impl GpuBackend {
    /// Device `index` of `platform` (its first where none is given), or
    /// why not: no driver, no device, no such index.
    pub fn make(
        platform: &'static dyn Platform,
        index: Option<u32>,
    ) -> std::result::Result<Box<dyn Backend>, String> {
        let index = index.unwrap_or(0);
        let count = platform.count()?;
        if index >= count {
            return Err(platform.missing(index, count));
        }
        Ok(GpuBackend::counted(platform, index))
    }

    /// Device `index` of `platform`, already found among the devices it
    /// counted (a set's, `backend::platform_set`): the driver is not asked
    /// again.
    pub fn counted(platform: &'static dyn Platform, index: u32) -> Box<dyn Backend> {
        Box::new(GpuBackend { platform, index })
    }

    /// `cuda0`: the device's own name.
    fn device_name(&self) -> String {
        format!("{}{}", self.platform.name(), self.index)
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> &'static str {
        self.platform.name()
    }

    /// Its memory and its host link from each node; a superchip's GPU
    /// (its memory a host node, as its driver says) also its kernels over
    /// the CPU's memory.
    fn health_scopes(&self, topo: &Topology) -> Vec<crate::results::scope::Scope> {
        use crate::results::scope::Scope;
        let mut scopes = Scope::of_device_at(self.index, topo);
        let described = self.platform.describe(self.index, topo).ok();
        let reach = described.and_then(|d| d.device.facts.reach);
        if let Some(reach) = reach
            && let Some(own) = reach.memory_node
        {
            let pageable = reach.pageable == Some(true);
            scopes.extend(Scope::of_superchip_device(self.index, own, pageable, topo));
        }
        scopes
    }

    fn prepare(&self, topo: &Topology, s: &Settings) -> Result<Prepared> {
        (self.platform.check_setup()).map_err(Error::Usage)?;
        refuse_what_cpus_have(self.platform.kind(), s)?;
        if let ShapeChoice::One(shape) = s.measure.shapes
            && let Some(why) = self.platform.launch_limits().refuses(&shape)
        {
            return Err(Error::input(Input::Shape, shape.to_string(), why));
        }
        let described = (self.platform.describe(self.index, topo)).map_err(Error::Runtime)?;
        let mut device = described.device;
        let gpu_memory = place_arrays(s.measure.gpu_memory, &device, topo)?;
        if gpu_memory != GpuMemory::Device
            && let Some(k) = (s.measure.kernels.iter()).find(|k| k.spec().path != Path::Memory)
        {
            return Err(Error::input(
                Input::GpuMemory,
                gpu_memory.to_string(),
                format!(
                    "{k} moves data between the host and the device's own memory: its arrays are device memory"
                ),
            ));
        }
        // Host memory that is the device's own (an APU's node, a GH200's
        // HBM node) keeps its memory's peak; other host memory, its link's.
        let own_node = (device.facts.reach.as_ref()).and_then(|r| r.memory_node);
        if gpu_memory.is_host() && (own_node.is_none() || gpu_memory.node() != own_node) {
            host_memory_peak(&mut device.facts.peaks);
        }
        let facts = &device.facts;
        // STREAM's rule on the device: each array four times its cache.
        let (elements, inner_repeats) = s.sizes(1, || {
            (4 * facts.cache_bytes.unwrap_or(0) / ELEMENT_BYTES).max(self.platform.min_elements())
        })?;
        let mut kernels = s.measure.kernels.clone();
        kernels.sort();
        kernels.dedup();
        let arrays = device_arrays(&kernels);
        let needed = (elements as u64).saturating_mul(ELEMENT_BYTES * arrays);
        let memory = facts.memory_bytes.unwrap_or(u64::MAX);
        let room = (memory as f64 * self.platform.memory_share()) as u64;
        if gpu_memory.is_host() {
            // Host memory: the host's to hold.
            crate::memory::check_fits(topo, arrays as usize, elements as u64)?;
        }
        if needed > room && !gpu_memory.may_oversubscribe() {
            let what = match room < memory {
                true => format!(
                    "the {} a plan may take of the {}",
                    Bytes(room),
                    Bytes(memory)
                ),
                false => format!("the {}", Bytes(memory)),
            };
            return Err(Error::input(
                Input::Size,
                elements.to_string(),
                format!(
                    "{arrays} arrays of {elements} elements need {}, more than {what} of {} ({}); managed or system memory may outgrow it",
                    Bytes(needed),
                    self.device_name(),
                    facts.model.as_deref().unwrap_or("its memory")
                ),
            ));
        }
        let host_cpu = host_cpu(topo, facts.numa_node);
        let plan = Plan {
            elements,
            ntimes: s.measure.ntimes,
            kernels,
            target: Target::Device(Box::new(device)),
            cpus: host_cpu.into_iter().collect(),
            pinned: true,
            cpu_nodes: (host_cpu.map(|c| topo.cpu(c).map(|x| x.node)))
                .into_iter()
                .collect(),
            hugepages: s.measure.hugepages,
            offset: 0,
            mem: s.mem.clone(),
            inner_repeats,
            // A device's clock times what it runs: the protocol sizes its
            // launches per repetition (and picks their shapes) by it.
            calibrate: true,
            in_caches: None,
            caches_unknown: None,
            shapes: s.measure.shapes,
            gpu_memory,
            kernel_stores: Vec::new(),
            caches: Default::default(),
        };
        Ok(Prepared {
            plan,
            stores_reason: String::new(),
        })
    }

    fn observers(&self, plan: &Plan) -> Vec<Box<dyn Observer>> {
        (plan.target.device()).map_or_else(Vec::new, |d| self.platform.observers(d))
    }

    fn open(&mut self, plan: &Plan, work: &mut dyn WithArrays) -> Result<Observed> {
        let name = self.device_name();
        let device = (plan.target.device())
            .ok_or_else(|| Error::Runtime(format!("{name}: the plan is not a device's")))?;
        let multiprocessors = device.facts.multiprocessors.unwrap_or(1);
        let host_cpu = plan.cpus.first().copied();
        let host_node = plan.cpu_nodes.first().copied().flatten();
        let (platform, index) = (self.platform, self.index);
        let runtime_error = |e: String| Error::Runtime(format!("{name}: {e}"));
        // Driven from a thread of its own, pinned near the device (a
        // context is current on one thread): it maps, first touches and
        // registers the host buffers there, near the device, and launches.
        let host_thread = || {
            if let Some(cpu) = host_cpu {
                crate::sys::pin_current_thread(cpu)
                    .map_err(|e| Error::Runtime(format!("pinning {name}'s host thread: {e}")))?;
            }
            let host = host_buffers::HostBuffers::map(plan)?;
            let runtime = platform.open(index).map_err(runtime_error)?;
            let mut gpu = device::Gpu::open(
                runtime,
                (multiprocessors, device.facts.memory_bytes),
                platform.launch_limits(),
                plan,
                host,
            )
            .map_err(runtime_error)?;
            work.run_on(&mut gpu)?;
            if let Some(e) = gpu.failure() {
                return Err(runtime_error(e.to_string()));
            }
            let (pages, mut warnings) = gpu.host().pages(host_node);
            warnings.extend(gpu.runtime_warnings());
            let used = gpu.memory_use();
            warnings.extend(used.findings().into_iter().map(|f| format!("{name}: {f}")));
            drop(gpu);
            warnings.extend(platform.after_run(device));
            // What its memory counters say, beside the rates they may explain.
            let memory = device.facts.memory_health.iter().flat_map(|h| h.findings());
            warnings.extend(memory.map(|finding| format!("{name}: {finding}")));
            Ok(Observed {
                threads: Vec::new(),
                pages,
                warnings,
                gpu_memory: Some(used),
            })
        };
        std::thread::scope(|scope| {
            (scope.spawn(host_thread).join())
                .unwrap_or_else(|_| Err(Error::Runtime(format!("{name}'s host thread panicked"))))
        })
    }
}

/// Where the plan puts a device's arrays: `asked`, its host node resolved
/// (the device's own where none is named) and checked, or why the device
/// cannot have them there, in one line, as its driver's attributes say
/// (an attribute it did not read refuses nothing).
fn place_arrays(asked: GpuMemory, device: &Device, topo: &Topology) -> Result<GpuMemory> {
    let reach = device.facts.reach.clone().unwrap_or_default();
    let refuse = |why: String| Err(Error::input(Input::GpuMemory, asked.to_string(), why));
    let name = &device.id.name;
    match asked {
        GpuMemory::Device => Ok(asked),
        GpuMemory::Managed { .. } if reach.managed == Some(false) => refuse(format!(
            "{name} has no managed memory (its driver's MANAGED_MEMORY attribute is 0)"
        )),
        GpuMemory::Managed { .. } => Ok(asked),
        GpuMemory::Host { node } | GpuMemory::System { node } => {
            if let Some(n) = node
                && !topo.nodes.iter().any(|x| x.id == n)
            {
                let nodes: crate::topology::cpulist::IdSet =
                    topo.nodes.iter().map(|x| x.id).collect();
                return refuse(format!("there is no NUMA node {n} here (nodes {nodes})"));
            }
            if let (GpuMemory::System { .. }, Some(false)) = (asked, reach.pageable) {
                let missing = reach.pageable_missing.unwrap_or_default();
                return refuse(format!("{name} does not read pageable memory: {missing}"));
            }
            Ok(asked.on_node(node.or(device.facts.numa_node)))
        }
    }
}

/// A device's peaks where its arrays are host memory: what its kernels
/// cross is its host link, both ways at once (reads one way, writes the
/// other), not its own memory.
fn host_memory_peak(peaks: &mut crate::results::targets::DevicePeaks) {
    peaks.memory_gb_s = peaks.host_link_gb_s.map(|each_way| 2.0 * each_way);
    peaks.memory_from = peaks.host_link_gb_s.map(|each_way| {
        format!("its host link, {each_way:.0} GB/s each way, both ways: its arrays are host memory")
    });
}

/// The host CPU that drives a device: the first this process may use on
/// the node it is attached to (any, where it says none or has none).
fn host_cpu(topo: &Topology, node: Option<usize>) -> Option<usize> {
    (node.and_then(|n| topo.nodes.iter().find(|x| x.id == n)))
        .and_then(|n| n.cpus.intersection(&topo.allowed_cpus).first())
        .or_else(|| topo.allowed_cpus.first())
}

/// Refuses what a device (`kind`: "a simulated device", "a CUDA GPU") does
/// not have: threads, a placement, an ISA, store instructions, host page
/// sizes; and a memory policy where no host buffer is placed, or one per
/// array.
fn refuse_what_cpus_have(kind: &str, s: &Settings) -> Result<()> {
    let refuse = |input: Input, given: String, what: &str| {
        Err(Error::input(
            input,
            given,
            format!("{kind} has no {what} (it is not the CPU team)"),
        ))
    };
    if s.measure.offset != 0 {
        let offset = s.measure.offset.to_string();
        return refuse(
            Input::Offset,
            offset,
            "arrays placed by membw (the driver allocates them)",
        );
    }
    let p = &s.placement;
    if let Some(n) = p.threads {
        return refuse(Input::Threads, n.to_string(), "CPU threads");
    }
    if let Some(nodes) = &p.cpu_nodes {
        return refuse(Input::CpuNode, nodes.to_string(), "CPU nodes");
    }
    if p.spec != crate::placement::Spec::Default {
        let (input, text) = p.spec.input();
        return refuse(input, text, "CPU placement");
    }
    // Its own memory takes no policy; its host buffers (the transfers'
    // h and r) go where the policy puts them.
    if s.mem != Default::default() && !host_buffers(&s.measure.kernels) {
        return Err(Error::input(
            Input::Mem,
            s.mem.to_string(),
            format!(
                "{kind}'s own memory takes no policy: it places the host buffers of the transfers (--kernels transfers: h2d, d2h, bidir and their -kernel forms)"
            ),
        ));
    }
    // A per-array policy names STREAM's arrays, none of which is host
    // memory here: refused rather than dropped.
    if !s.mem.is_uniform() {
        return Err(Error::input(
            Input::Mem,
            s.mem.to_string(),
            format!("{kind}'s host buffers take one policy for both (bind:1), not one per array"),
        ));
    }
    if let Some(isa) = s.measure.isa {
        return refuse(Input::Isa, isa.to_string(), "CPU instruction set");
    }
    if s.stores != StoresRequest::Auto {
        return refuse(Input::Stores, s.stores.to_string(), "CPU stores");
    }
    if !s.measure.hugepages.is_auto() {
        let pages = s.measure.hugepages.to_string();
        return refuse(Input::Hugepages, pages, "host page sizes");
    }
    Ok(())
}

/// Whether the kernels move data over the host link, from and to host
/// buffers.
fn host_buffers(kernels: &[KernelId]) -> bool {
    (kernels.iter()).any(|k| k.spec().arrays().any(ArrayId::host_buffer))
}

/// The arrays that are the device's own memory among those the plan's
/// kernels use.
fn device_arrays(kernels: &[KernelId]) -> u64 {
    (crate::kernels::arrays_used(kernels).iter())
        .filter(|a| !a.host_buffer())
        .count() as u64
}
