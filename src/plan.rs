//! From settings and the topology to a runnable [`Plan`]: placement, array
//! size, store mode, kernel implementation, memory policy. Settings are
//! resolved here once, before anything runs; every measurement source runs
//! plans.

use crate::error::{Error, Input, Result};
use crate::kernels::gpu_builds::ShapeChoice;
use crate::kernels::{
    ArrayId, Isa, KernelFns, KernelId, KernelStores, Path, StoreMode, ThreadCaches,
};
use crate::memory::policy::MemPolicy;
use crate::memory::{self, Hugepages};
use crate::placement;
use crate::results::targets::Target;
use crate::results::{Measured, Point};
use crate::topology::Topology;
use crate::units::ELEMENT_BYTES;

pub use crate::kernels::StoresRequest;

/// Everything needed to run one measurement.
#[derive(Debug, Clone)]
pub struct Plan {
    pub elements: usize,
    pub ntimes: usize,
    pub kernels: Vec<KernelId>,
    /// What runs the kernels, as the backend that prepared the plan
    /// declared it: the CPU team's instruction set and store instructions
    /// (checked available), another program, or a device.
    pub target: Target,
    /// CPU of each thread, by thread number (a device's: the host thread
    /// that drives it). Where the threads are not pinned, the CPU each
    /// starts on.
    pub cpus: Vec<usize>,
    /// Whether each thread is bound to its CPU (false: `--no-pin`, the
    /// scheduler places and moves them).
    pub pinned: bool,
    /// NUMA node of each of those CPUs (for judging first-touch placement).
    pub cpu_nodes: Vec<Option<usize>>,
    pub hugepages: Hugepages,
    /// STREAM's OFFSET in elements (see [`Measure::offset`]).
    pub offset: usize,
    pub mem: MemPolicy,
    /// Kernel calls per timed repetition (1 = STREAM). Cache-sized arrays
    /// need several so that a repetition outlasts the barrier and the timer;
    /// every kernel is idempotent, so validation is unchanged.
    pub inner_repeats: usize,
    /// Whether the protocol sizes `inner_repeats` by time before it
    /// measures: for a working set that stays in the caches (under STREAM's
    /// 4 × the caches of the CPUs used), where the calls a byte count gives
    /// could last no longer than the team's barriers on a big node. Arrays
    /// that leave the caches keep STREAM's one pass per repetition.
    pub calibrate: bool,
    /// Set when the arrays fit in four times the caches of the CPUs used:
    /// what runs measures the caches (STREAM's rule). None for a device.
    pub in_caches: Option<crate::results::measurement::InCaches>,
    /// Why STREAM's rule cannot be judged for these CPUs (their caches'
    /// sizes are unknown), where it cannot: `in_caches` is None then too.
    pub caches_unknown: Option<crate::topology::UnknownCaches>,
    /// A device's launch shapes (the CPU team has one way to run each kernel).
    pub shapes: ShapeChoice,
    /// Where a device's arrays live, its host node resolved (device
    /// memory for the CPU team).
    pub gpu_memory: crate::memory::gpu_memory::GpuMemory,
    /// The CPU team's stores for each kernel (by `kernels`' order) and why;
    /// those near the cache edge the protocol times before it measures.
    /// Empty where the target is not the CPU team.
    pub kernel_stores: Vec<KernelStores>,
    /// The caches serving the CPUs, as sysfs reports them (unknown, 0,
    /// for a device or another program).
    pub caches: ThreadCaches,
}

impl Plan {
    /// The arrays the selected kernels touch; `a` always, for the timing test.
    pub fn arrays_needed(&self) -> Vec<ArrayId> {
        crate::kernels::arrays_used(&self.kernels)
    }

    /// Whether the memory policy places any of the plan's arrays: the
    /// target works in host memory, or a device's transfers have host
    /// buffers there.
    // A new kind must be decided wherever kinds are matched.
    #[deny(clippy::wildcard_enum_match_arm)]
    pub fn places_host_memory(&self) -> bool {
        match self.measured() {
            Measured::Team(_) | Measured::Program(..) => true,
            Measured::Device(_) => self.arrays_needed().iter().any(|a| a.host_buffer()),
        }
    }

    /// The CPU kernels' store instructions; `None` where the target is not
    /// the CPU team (a device's traffic is what STREAM counts).
    pub fn stores(&self) -> Option<StoreMode> {
        self.target.cpu_code().map(|c| c.stores)
    }

    /// The stores kernel `k` (by `kernels`' order) runs with, where the
    /// target is the CPU team.
    pub fn kernel_stores(&self, k: usize) -> Option<KernelStores> {
        self.stores().and(self.kernel_stores.get(k).copied())
    }

    /// The CPU kernels' code, for the backends that run them: the plan's
    /// own, or the portable loops where the target is not the CPU team.
    pub fn cpu_code(&self) -> (Isa, StoreMode) {
        self.target
            .cpu_code()
            .map_or((Isa::Scalar, StoreMode::Regular), |c| (c.isa, c.stores))
    }

    /// The host CPUs that do the work, where host CPUs do it: the plan's
    /// host part. `None` for a device (its host thread drives it, and
    /// does not share its work).
    pub fn host_cpus(&self) -> Option<&[usize]> {
        self.measured().host()
    }

    /// What kind of thing does the work, with its part: the host CPUs
    /// (membw's team, a program) or the device.
    pub fn measured(&self) -> crate::results::Measured<'_, &[usize]> {
        self.target.measured(&self.cpus[..])
    }

    /// CPU threads that run the kernels: none for a device.
    pub fn threads(&self) -> usize {
        self.host_cpus().map_or(0, <[usize]>::len)
    }

    /// Threads (or devices) the work is split over: what a working set per
    /// thread is per.
    pub fn units(&self) -> usize {
        self.threads().max(1)
    }
}

/// What every measurement of one command shares: its measurement flags.
#[derive(Debug, Clone)]
pub struct Measure {
    /// Elements per array; `None` for STREAM's rule.
    pub elements: Option<u64>,
    pub ntimes: usize,
    pub kernels: Vec<KernelId>,
    /// `None` for the widest the CPU has.
    pub isa: Option<Isa>,
    pub hugepages: Hugepages,
    /// STREAM's OFFSET, in elements: array b starts this much, c twice
    /// this, past a's alignment.
    pub offset: usize,
    /// A device's launch shapes: which its kernels are timed in.
    pub shapes: ShapeChoice,
    /// Where a device's kernels find their arrays.
    pub gpu_memory: crate::memory::gpu_memory::GpuMemory,
}

/// Everything that decides one measurement, before the topology resolves it.
#[derive(Debug, Clone)]
pub struct Settings {
    pub measure: Measure,
    pub placement: placement::Request,
    pub stores: StoresRequest,
    pub mem: MemPolicy,
    /// Bytes of all arrays per thread (per device), a size sweep's axis:
    /// the plan sizes its arrays and its repetitions from it once it knows
    /// how many threads run. `None`: the measure's elements, one call per
    /// repetition (STREAM's protocol).
    pub working_set: Option<u64>,
    /// STREAM's rule for every CPU a whole study uses, where each of its
    /// points is sized alike (a sweep): a backend whose arrays are host
    /// memory takes it instead of its own CPUs' rule; a device sizes its
    /// arrays from its own memory.
    pub host_elements: Option<u64>,
}

/// Bytes per timed repetition that make a cache-sized kernel long enough to
/// time (a few hundred microseconds at cache bandwidth).
const MIN_BYTES_PER_REPETITION: u64 = 64 << 20;

/// Elements per array, and kernel calls per timed repetition, for a working
/// set of `bytes` per unit (thread or device) over `units` of them: at
/// least a page of elements per array, and enough calls that the smallest
/// kernel moves [`MIN_BYTES_PER_REPETITION`] per repetition.
/// A device's host buffers are not in its working set, as a point counts it.
pub fn working_set_sizes(bytes: u64, units: usize, kernels: &[KernelId]) -> (u64, usize) {
    let arrays = (crate::kernels::arrays_used(kernels).iter())
        .filter(|a| !a.host_buffer())
        .count()
        .max(1) as u64;
    let elements =
        (bytes * units as u64 / (ELEMENT_BYTES * arrays)).max(memory::PAGE_ELEMENTS as u64);
    let min_bytes = kernels
        .iter()
        .map(|k| k.spec().bytes_counted())
        .min()
        .unwrap_or(ELEMENT_BYTES);
    let calls = MIN_BYTES_PER_REPETITION
        .div_ceil(min_bytes * elements)
        .max(1);
    (elements, calls as usize)
}

impl Settings {
    /// Elements per array and kernel calls per repetition over `units`
    /// threads (or devices); `default` gives STREAM's rule where neither
    /// the measure nor a working set fixes the size.
    pub fn sizes(&self, units: usize, default: impl FnOnce() -> u64) -> Result<(usize, usize)> {
        let (elements, calls) = match self.working_set {
            Some(bytes) => working_set_sizes(bytes, units, &self.measure.kernels),
            None => (self.measure.elements.unwrap_or_else(default), 1),
        };
        let elements = usize::try_from(elements)
            .map_err(|_| Error::input(Input::Size, elements.to_string(), "too many elements"))?;
        Ok((elements, calls))
    }

    /// One measurement of `measure` with this placement, store mode and policy.
    pub fn new(
        measure: &Measure,
        placement: placement::Request,
        stores: StoresRequest,
        mem: MemPolicy,
    ) -> Settings {
        Settings {
            measure: measure.clone(),
            placement,
            stores,
            mem,
            working_set: None,
            host_elements: None,
        }
    }
}

/// How settings become a plan: the measuring source's backend's own
/// `prepare` (the CPU team's [`prepare`], or a device's).
pub type Prepare<'a> = dyn Fn(&Settings) -> Result<Prepared> + 'a;

/// A plan and the reasons behind its automatic choices.
pub struct Prepared {
    pub plan: Plan,
    pub stores_reason: String,
}

/// The store mode a plan's target declares: the one of the storing kernel
/// that touches the most arrays (triad among STREAM's four), the later on
/// a tie; each kernel's own is in its result.
pub fn lead_stores(kernels: &[KernelId], stores: &[KernelStores]) -> Option<StoreMode> {
    let weight = |k: KernelId| {
        let arrays = crate::kernels::stores::arrays_bytes(k, 1);
        (!k.spec().writes.is_empty(), arrays)
    };
    (kernels.iter().zip(stores))
        .max_by_key(|(k, _)| weight(**k))
        .map(|(_, s)| s.mode)
}

/// Every kernel's stores, and the words the `Kernels:` line gives: one
/// reason where every kernel has the same, else each kernel's.
pub fn resolve_stores(
    request: StoresRequest,
    isa: Isa,
    kernels: &[KernelId],
    elements: u64,
    caches: ThreadCaches,
) -> (Vec<KernelStores>, String) {
    let stores: Vec<KernelStores> = (kernels.iter())
        .map(|&k| KernelStores::decide(request, isa, k, elements, caches))
        .collect();
    let reason = stores_reason(kernels, &stores);
    (stores, reason)
}

/// `auto, by kernel: copy regular (its arrays ... fit ...); triad nt
/// (measured: ...)`, `auto: ...` where every storing kernel has the same
/// reason, or `requested`.
pub fn stores_reason(kernels: &[KernelId], stores: &[KernelStores]) -> String {
    if stores
        .iter()
        .all(|s| s.basis == crate::kernels::StoresBasis::Requested)
    {
        return "requested".into();
    }
    let storing: Vec<(KernelId, &KernelStores)> = (kernels.iter().copied().zip(stores))
        .filter(|(k, _)| !k.spec().writes.is_empty())
        .collect();
    let Some((_, first)) = storing.first() else {
        return "auto: the kernels write nothing".into();
    };
    let all: Vec<KernelStores> = storing.iter().map(|(_, s)| **s).collect();
    if let Some(why) = first.why_every(&all) {
        return format!("auto: {why}");
    }
    let each: Vec<String> = (storing.iter())
        .map(|(k, s)| format!("{} {} ({})", k.spec().name, s.mode, s.why()))
        .collect();
    format!("auto, by kernel: {}", each.join("; "))
}

/// Resolves settings into a plan, refusing (before anything is allocated)
/// what cannot run: a bad placement, an ISA the CPU lacks, arrays that do
/// not fit in memory.
pub fn prepare(topo: &Topology, s: &Settings) -> Result<Prepared> {
    let cpus = placement::resolve(topo, &s.placement)?;
    let (elements, inner_repeats) = s.sizes(cpus.len().max(1), || {
        (s.host_elements).unwrap_or_else(|| memory::default_elements(topo, &cpus))
    })?;
    let isa = s.measure.isa.unwrap_or_else(Isa::best);
    let used = cpus.iter().copied().collect();
    let rule = crate::results::StreamRule::for_cpus(topo, &used);
    let arrays = crate::kernels::arrays_used(&s.measure.kernels).len() as u64;
    if s.measure.hugepages == Hugepages::Thp && topo.memory.thp_mode.as_deref() == Some("never") {
        return Err(Error::input(
            Input::Hugepages,
            "thp",
            "transparent hugepages are disabled on this system (mode 'never')",
        ));
    }
    let mut kernels = s.measure.kernels.clone();
    kernels.sort();
    kernels.dedup();
    if kernels.is_empty() {
        return Err(Error::about(Input::Kernels, "no kernel selected"));
    }
    let caches = ThreadCaches::serving(topo, &cpus);
    let (kernel_stores, stores_reason) =
        resolve_stores(s.stores, isa, &kernels, elements as u64, caches);
    let stores = lead_stores(&kernels, &kernel_stores).unwrap_or(StoreMode::Regular);
    // Refused here, before anything runs, when this CPU lacks it (every
    // mode a kernel may run: a timed choice runs both).
    for mode in kernel_stores.iter().flat_map(|k| match k.to_measure() {
        true => k.candidates().to_vec(),
        false => vec![k.mode],
    }) {
        KernelFns::select(isa, mode)?;
    }
    KernelFns::select(isa, stores)?;
    refuse_what_only_gpus_have(&s.measure)?;
    if let Some(k) = kernels.iter().find(|k| k.spec().path != Path::Memory) {
        return Err(Error::input(
            Input::Kernels,
            k.to_string(),
            "the CPU team has no host link: the transfers (h2d, d2h, bidir and their -kernel forms) measure a device's (--backend sim:0)",
        ));
    }
    let in_caches = rule.in_caches(elements as u64, arrays);
    let plan = Plan {
        pinned: s.placement.spec.pins(),
        calibrate: s.working_set.is_some() && in_caches.is_some(),
        in_caches,
        caches_unknown: rule.unknown,
        elements,
        ntimes: s.measure.ntimes,
        kernels,
        target: Target::cpu(isa, stores),
        cpu_nodes: cpus.iter().map(|&c| topo.cpu(c).map(|x| x.node)).collect(),
        cpus,
        hugepages: s.measure.hugepages,
        offset: s.measure.offset,
        mem: s.mem.clone(),
        inner_repeats,
        shapes: ShapeChoice::Default,
        gpu_memory: Default::default(),
        kernel_stores,
        caches,
    };
    match plan.hugepages.explicit_bytes() {
        // Explicit pages come from their pools, not from MemAvailable.
        Some(page) => {
            let ranges = memory::partition_for(elements, plan.cpus.len(), plan.hugepages);
            let needs: Vec<memory::pool::Need> = plan
                .arrays_needed()
                .iter()
                .flat_map(|&id| {
                    memory::pool::array_needs(
                        plan.mem.get(id),
                        elements
                            + memory::start_bytes(id, plan.offset, true) / ELEMENT_BYTES as usize,
                        page,
                        &ranges,
                        &plan.cpu_nodes,
                        &topo.allowed_mems,
                    )
                })
                .collect();
            memory::pool::check(topo, plan.hugepages, &needs)?;
        }
        None => memory::check_fits(topo, plan.arrays_needed().len(), elements as u64)?,
    }
    memory::check_fits_bound(topo, &plan.mem, &plan.arrays_needed(), elements as u64)?;
    Ok(Prepared {
        plan,
        stores_reason,
    })
}

/// Refuses a GPU's choices for the CPU team: a launch shape, a place of
/// the arrays other than the host memory its policy places.
fn refuse_what_only_gpus_have(m: &Measure) -> Result<()> {
    if let ShapeChoice::One(shape) = m.shapes {
        return Err(Error::input(
            Input::Shape,
            shape.to_string(),
            "launch shapes are a GPU's: the CPU team runs each kernel one way (name a device with --backend)",
        ));
    }
    if m.gpu_memory != crate::memory::gpu_memory::GpuMemory::Device {
        return Err(Error::input(
            Input::GpuMemory,
            m.gpu_memory.to_string(),
            "the CPU team's arrays are host memory, placed by --mem (name a device with --backend)",
        ));
    }
    Ok(())
}

/// A plan that only places: the CPUs and the memory policy of another
/// program (`membw exec`), which sizes, times and checks its own arrays.
/// It has no arrays and no kernels of membw's.
pub fn placement_only(
    topo: &Topology,
    request: &placement::Request,
    mem: MemPolicy,
) -> Result<Plan> {
    let cpus = placement::resolve(topo, request)?;
    Ok(Plan {
        pinned: request.spec.pins(),
        elements: 0,
        ntimes: 0,
        kernels: Vec::new(),
        target: Target::Program { label: None },
        cpu_nodes: cpus.iter().map(|&c| topo.cpu(c).map(|x| x.node)).collect(),
        cpus,
        hugepages: Hugepages::Auto,
        offset: 0,
        mem,
        inner_repeats: 1,
        calibrate: false,
        in_caches: None,
        caches_unknown: None,
        shapes: ShapeChoice::Default,
        gpu_memory: Default::default(),
        kernel_stores: Vec::new(),
        caches: ThreadCaches::default(),
    })
}

impl Point {
    /// The point a plan measures, under a placement label and the memory
    /// policy as the user wrote it. A device's point is per device, and
    /// names it.
    // A new kind must be decided wherever kinds are matched.
    #[deny(clippy::wildcard_enum_match_arm)]
    pub fn new(
        placement: crate::placement::identity::PlacementId,
        mem: &crate::memory::written::PolicySpec,
        stores: StoresRequest,
        plan: &Plan,
        numa: Option<crate::results::NumaCell>,
    ) -> Point {
        // A device has no CPU threads or placement to name, and a policy
        // only where its host buffers are placed; its working set is the
        // device's.
        let (threads, placement) = match plan.measured() {
            Measured::Team(cpus) | Measured::Program(cpus, _) => (cpus.len(), Some(placement)),
            Measured::Device(_) => (0, None),
        };
        let mem = plan.places_host_memory().then(|| mem.clone());
        // The target's memory holds every array but a device's host buffers.
        let arrays = (plan.arrays_needed().iter())
            .filter(|a| !a.host_buffer())
            .count() as u64;
        let elements = plan.elements as u64;
        Point {
            threads,
            placement,
            mem,
            stores,
            hugepages: plan.hugepages,
            kernels: plan.kernels.clone(),
            elements,
            working_set_per_thread: elements * crate::units::ELEMENT_BYTES * arrays
                / plan.units() as u64,
            ntimes: plan.ntimes,
            numa,
            element_bytes: None,
            offset: plan.offset,
            gpu_memory: plan.gpu_memory,
            // Other code than the host's default is another point.
            isa: (plan.target.cpu_code().map(|c| c.isa)).filter(|&isa| isa != Isa::best()),
            concurrent_rank: None,
            together: None,
            target: plan.target.in_point(),
        }
    }
}
