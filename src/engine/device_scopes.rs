//! A device's health scopes: its own memory, measured whole, and its host
//! link from every memory node of the host (`link:N`), each with its own
//! kernels.

use super::check::ScopeJob;
use crate::error::Result;
use crate::health::Scope;
use crate::kernels::KernelId;
use crate::plan::{self, Measure, Plan, StoresRequest};
use crate::topology::Topology;

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
    let mut jobs = Vec::new();
    if !memory.is_empty() {
        jobs.push(ScopeJob {
            scope: Scope::Device,
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
        let scope = Scope::HostLink(n);
        let plan = super::check::plan_for(prepare, scope, &link_measure, StoresRequest::Auto)?;
        jobs.push(ScopeJob { scope, plan });
    }
    Ok(jobs)
}
