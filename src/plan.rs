//! From settings and the topology to a runnable [`Plan`]: placement, array
//! size, store mode, kernel implementation, memory policy. `run`, `sweep`
//! and `tune` all build their measurements here.

use crate::error::{Error, Result};
use crate::kernels::{Isa, KernelFns, KernelId, StoreMode};
use crate::memory::policy::MemPolicy;
use crate::memory::{self, Hugepages};
use crate::placement;
use crate::protocol::Plan;
use crate::topology::Topology;
use crate::units::{Bytes, ELEMENT_BYTES};
use serde::{Deserialize, Serialize};

/// `--stores`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoresRequest {
    /// Non-temporal when each array is larger than the last-level cache.
    Auto,
    Regular,
    Nt,
}

/// Everything that decides one measurement, before the topology resolves it.
#[derive(Debug, Clone)]
pub struct Settings {
    pub placement: placement::Request,
    /// Elements per array; `None` for STREAM's rule.
    pub elements: Option<u64>,
    pub ntimes: usize,
    pub kernels: Vec<KernelId>,
    /// `None` for the widest the CPU has.
    pub isa: Option<Isa>,
    pub stores: StoresRequest,
    pub hugepages: Hugepages,
    pub mem: MemPolicy,
    pub inner_repeats: usize,
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
        .elements
        .unwrap_or_else(|| memory::default_elements(topo, &cpus));
    let elements = usize::try_from(elements)
        .map_err(|_| Error::Usage(format!("--size: {elements} elements is too large")))?;
    let isa = s.isa.unwrap_or_else(Isa::best);
    let used = cpus.iter().copied().collect();
    let array_bytes = Bytes(elements as u64 * ELEMENT_BYTES);
    let (stores, stores_reason) = resolve_stores(s.stores, isa, array_bytes, topo.llc_sum(&used));
    let fns = KernelFns::select(isa, stores).map_err(Error::Usage)?;
    if s.hugepages == Hugepages::Thp && topo.memory.thp_mode.as_deref() == Some("never") {
        return Err(Error::Usage(
            "--hugepages thp: transparent hugepages are disabled on this system (mode 'never')"
                .into(),
        ));
    }
    let mut kernels = s.kernels.clone();
    kernels.sort();
    kernels.dedup();
    if kernels.is_empty() {
        return Err(Error::Usage("--kernels: no kernel selected".into()));
    }
    let plan = Plan {
        elements,
        ntimes: s.ntimes,
        kernels,
        fns,
        cpu_nodes: cpus.iter().map(|&c| topo.cpu(c).map(|x| x.node)).collect(),
        cpus,
        hugepages: s.hugepages,
        mem: s.mem.clone(),
        inner_repeats: s.inner_repeats.max(1),
    };
    memory::check_fits(topo, plan.arrays_needed().len(), elements as u64)?;
    Ok(Prepared {
        plan,
        stores_reason,
    })
}
