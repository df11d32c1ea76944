//! A device's health scopes: its own memory, measured whole, and its host
//! link from every memory node of the host (`link:N`), each with its own
//! kernels.

use super::check::ScopeJob;
use crate::error::Result;
use crate::health::Scope;
use crate::kernels::KernelId;
use crate::plan::{self, Measure, Plan, StoresRequest};
use crate::topology::Topology;

/// The scopes of a new baseline (or a check without one) of every
/// device the source measures (a device set's), or of its one target.
pub fn every_device(
    topo: &Topology,
    measure: &Measure,
    source: &dyn crate::engine::Source,
) -> Result<Vec<ScopeJob>> {
    let mut jobs = Vec::new();
    for device in source.devices() {
        let prepare = |s: &_| source.prepare_on(device, topo, s);
        jobs.extend(super::check::scope_jobs(topo, measure, &prepare)?);
    }
    Ok(jobs)
}

/// A device's kernels for its own memory, and those for its host link
/// (given, or the copy engine's three).
pub(super) fn device_kernels(measure: &Measure) -> (Vec<KernelId>, Vec<KernelId>) {
    let on_link = |k: &KernelId| k.spec().arrays().any(crate::kernels::ArrayId::host_buffer);
    let (link, memory): (Vec<KernelId>, Vec<KernelId>) =
        measure.kernels.iter().partition(|k| on_link(k));
    let link = if link.is_empty() {
        vec![KernelId::H2d, KernelId::D2h, KernelId::Bidir]
    } else {
        link
    };
    (memory, link)
}

/// A device's scopes: its memory (where kernels of it are asked for),
/// then its host link from each memory node this process may use.
pub(super) fn device_jobs(
    topo: &Topology,
    measure: &Measure,
    prepare: &plan::Prepare,
    whole: Plan,
    memory: Vec<KernelId>,
    link: Vec<KernelId>,
) -> Result<Vec<ScopeJob>> {
    // Scopes name the device by its index on the node: a set's devices
    // each have their own.
    let index = whole.target.device_index().unwrap_or(0);
    let mut jobs = Vec::new();
    if !memory.is_empty() {
        jobs.push(ScopeJob {
            scope: Scope::Device(index),
            plan: whole,
        });
    }
    let link_measure = Measure {
        kernels: link,
        ..measure.clone()
    };
    let nodes = (topo.nodes.iter())
        .filter(|n| topo.allowed_mems.contains(n.id) && !n.memoryless())
        .map(|n| n.id);
    for n in nodes {
        let scope = Scope::HostLink(index, n);
        let plan = super::check::plan_for(prepare, scope, &link_measure, StoresRequest::Auto)?;
        jobs.push(ScopeJob { scope, plan });
    }
    Ok(jobs)
}
