//! From settings and the topology to a runnable [`Plan`]: placement, array
//! size, store mode, kernel implementation, memory policy. Settings are
//! resolved here once, before anything runs; every measurement source runs
//! plans.

use crate::error::{Error, Input, Result};
use crate::kernels::{ArrayId, Isa, KernelFns, KernelId, StoreMode};
use crate::memory::policy::MemPolicy;
use crate::memory::{self, Hugepages};
use crate::placement;
use crate::topology::Topology;
use crate::units::{Bytes, ELEMENT_BYTES};
use serde::{Deserialize, Serialize};

/// The store instructions asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoresRequest {
    /// Non-temporal when each array is larger than the last-level cache.
    Auto,
    Regular,
    Nt,
}

impl StoresRequest {
    pub fn name(self) -> &'static str {
        match self {
            StoresRequest::Auto => "auto",
            StoresRequest::Regular => "regular",
            StoresRequest::Nt => "nt",
        }
    }
}

impl std::fmt::Display for StoresRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything needed to run one measurement.
#[derive(Debug, Clone)]
pub struct Plan {
    pub elements: usize,
    pub ntimes: usize,
    pub kernels: Vec<KernelId>,
    /// The kernels' instruction set and store instructions, checked
    /// available: a backend picks its implementation from them.
    pub isa: Isa,
    pub stores: StoreMode,
    /// CPU of each thread, by thread number.
    pub cpus: Vec<usize>,
    /// NUMA node of each of those CPUs (for judging first-touch placement).
    pub cpu_nodes: Vec<Option<usize>>,
    pub hugepages: Hugepages,
    pub mem: MemPolicy,
    /// Kernel calls per timed repetition (1 = STREAM). Cache-sized arrays
    /// need several so that a repetition outlasts the barrier and the timer;
    /// every kernel is idempotent, so validation is unchanged.
    pub inner_repeats: usize,
}

impl Plan {
    /// The arrays the selected kernels touch; `a` always, for the timing test.
    pub fn arrays_needed(&self) -> Vec<ArrayId> {
        crate::kernels::arrays_used(&self.kernels)
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
}

/// Everything that decides one measurement, before the topology resolves it.
#[derive(Debug, Clone)]
pub struct Settings {
    pub measure: Measure,
    pub placement: placement::Request,
    pub stores: StoresRequest,
    pub mem: MemPolicy,
    /// Kernel calls per timed repetition (1 = STREAM).
    pub inner_repeats: usize,
}

impl Settings {
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
            inner_repeats: 1,
        }
    }
}

/// A plan and the reasons behind its automatic choices.
pub struct Prepared {
    pub plan: Plan,
    pub stores_reason: String,
}

pub fn resolve_stores(
    request: StoresRequest,
    isa: Isa,
    array: Bytes,
    llc: Bytes,
) -> (StoreMode, String) {
    match request {
        StoresRequest::Regular => (StoreMode::Regular, "requested".into()),
        StoresRequest::Nt => (StoreMode::Nt, "requested".into()),
        StoresRequest::Auto if !isa.has_streaming_stores() => (
            StoreMode::Regular,
            format!("auto: the {isa} kernels have no streaming stores"),
        ),
        StoresRequest::Auto if array > llc => (
            StoreMode::Nt,
            format!("auto: {array} arrays exceed the {llc} last-level cache"),
        ),
        StoresRequest::Auto => (
            StoreMode::Regular,
            format!("auto: {array} arrays fit in the {llc} last-level cache"),
        ),
    }
}

/// Resolves settings into a plan, refusing (before anything is allocated)
/// what cannot run: a bad placement, an ISA the CPU lacks, arrays that do
/// not fit in memory.
pub fn prepare(topo: &Topology, s: &Settings) -> Result<Prepared> {
    let cpus = placement::resolve(topo, &s.placement)?;
    let elements = s
        .measure
        .elements
        .unwrap_or_else(|| memory::default_elements(topo, &cpus));
    let elements = usize::try_from(elements)
        .map_err(|_| Error::input(Input::Size, elements.to_string(), "too many elements"))?;
    let isa = s.measure.isa.unwrap_or_else(Isa::best);
    let used = cpus.iter().copied().collect();
    let array_bytes = Bytes(elements as u64 * ELEMENT_BYTES);
    let (stores, stores_reason) = resolve_stores(s.stores, isa, array_bytes, topo.llc_sum(&used));
    // Refused here, before anything runs, when this CPU lacks it.
    KernelFns::select(isa, stores)?;
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
    let plan = Plan {
        elements,
        ntimes: s.measure.ntimes,
        kernels,
        isa,
        stores,
        cpu_nodes: cpus.iter().map(|&c| topo.cpu(c).map(|x| x.node)).collect(),
        cpus,
        hugepages: s.measure.hugepages,
        mem: s.mem.clone(),
        inner_repeats: s.inner_repeats.max(1),
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
                        elements + memory::stagger_bytes(id) / ELEMENT_BYTES as usize,
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
    Ok(Prepared {
        plan,
        stores_reason,
    })
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
        elements: 0,
        ntimes: 0,
        kernels: Vec::new(),
        isa: Isa::Scalar,
        stores: StoreMode::Regular,
        cpu_nodes: cpus.iter().map(|&c| topo.cpu(c).map(|x| x.node)).collect(),
        cpus,
        hugepages: Hugepages::Auto,
        mem,
        inner_repeats: 1,
    })
}
