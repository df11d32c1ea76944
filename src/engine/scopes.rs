//! The scopes of a health check, each a plan: the host's (the whole
//! node, then each NUMA domain's cores on that domain's memory) or a
//! device's (its own memory, measured whole, and its host link from every
//! memory node of the host, `link:N`, each with its own kernels).

use crate::error::{Error, Result};
use crate::health::Scope;
use crate::kernels::KernelId;
use crate::memory::policy::{MemPolicy, Policy};
use crate::placement::{self, Spec};
use crate::plan::{self, Measure, Plan, Settings, StoresRequest};
use crate::topology::Topology;
use crate::topology::cpulist::IdSet;

/// One scope, ready to measure.
pub struct ScopeJob {
    pub scope: Scope,
    pub plan: Plan,
}

/// The NUMA domains a scope is measured in: those with CPUs and memory this
/// process may use. One domain is the node itself, so none is listed then.
pub fn domains(topo: &Topology) -> Vec<usize> {
    let ids: Vec<usize> = topo
        .nodes
        .iter()
        .filter(|n| n.cpus.intersects(&topo.allowed_cpus) && topo.allowed_mems.contains(n.id))
        .map(|n| n.id)
        .collect();
    if ids.len() < 2 { Vec::new() } else { ids }
}

/// A scope's plan: every allowed core (one thread per core) on local memory,
/// or one domain's cores bound to its memory.
pub(super) fn plan_for(
    prepare: &plan::Prepare,
    scope: Scope,
    measure: &Measure,
    stores: StoresRequest,
) -> Result<Plan> {
    let cpu_nodes = scope.cpu_node().map(|n| IdSet::new(vec![n]));
    let mem = (scope.memory_node()).map_or_else(MemPolicy::default, |n| {
        MemPolicy::uniform(Policy::Bind(IdSet::new(vec![n])))
    });
    let request = placement::Request {
        spec: Spec::Default,
        threads: None,
        smt: false,
        cpu_nodes,
    };
    Ok(prepare(&Settings::new(measure, request, stores, mem))?.plan)
}

/// The scopes of a new baseline (or a check without one): the node, then
/// each domain, sized by STREAM's rule for the cores of each unless
/// `measure` fixes the elements, which must then leave the caches.
pub fn scope_jobs(
    topo: &Topology,
    measure: &Measure,
    prepare: &plan::Prepare,
) -> Result<Vec<ScopeJob>> {
    // A backend whose target is a device measures the device, whole, and
    // its host link from every memory node.
    let (memory, link) = device_kernels(measure);
    let probe = Measure {
        kernels: if memory.is_empty() {
            link.clone()
        } else {
            memory.clone()
        },
        ..measure.clone()
    };
    let whole = plan_for(prepare, Scope::Node, &probe, StoresRequest::Auto)?;
    // A device's scopes are its own (its memory, its links); the host's
    // are the node and its memory domains.
    if let Some(index) = whole.target.device_index() {
        let kernels = (memory, link);
        return device_jobs(topo, measure, prepare, (index, whole), kernels);
    }
    let domains = domains(topo).into_iter().map(|n| {
        let plan = plan_for(prepare, Scope::Numa(n), measure, StoresRequest::Auto)?;
        Ok((Scope::Numa(n), plan))
    });
    std::iter::once(Ok((Scope::Node, whole)))
        .chain(domains)
        .map(|scoped: Result<(Scope, Plan)>| {
            let (scope, plan) = scoped?;
            if let Some(why) = fits_in_caches(topo, &plan) {
                return Err(Error::input(
                    crate::error::Input::Size,
                    plan.elements.to_string(),
                    format!("{why} (in the {scope} scope); give a larger size, or none for STREAM's rule"),
                ));
            }
            Ok(ScopeJob { scope, plan })
        })
        .collect()
}

/// Why arrays of this plan would measure the caches rather than the
/// memory: STREAM's rule, each array under 4 × the caches of its CPUs.
pub(super) fn fits_in_caches(topo: &Topology, plan: &Plan) -> Option<String> {
    // A device's memory is in no host cache: no working CPU, no cache.
    let cpus = plan.host_cpus().unwrap_or_default();
    let rule = crate::results::StreamRule::over(topo.cache_sum(&cpus.iter().copied().collect()).0);
    (!rule.holds(plan.elements as u64)).then(|| {
        format!(
            "{}, so a health check would measure the caches, not the memory",
            rule.describe(plan.elements as u64, plan.arrays_needed().len() as u64)
        )
    })
}

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
        jobs.extend(scope_jobs(topo, measure, &prepare)?);
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

/// The scopes of device `index`, whose whole plan is `whole`: its memory
/// (where kernels of it are asked for), then its host link from each
/// memory node this process may use, each with its kernels.
pub(super) fn device_jobs(
    topo: &Topology,
    measure: &Measure,
    prepare: &plan::Prepare,
    (index, whole): (u32, Plan),
    (memory, link): (Vec<KernelId>, Vec<KernelId>),
) -> Result<Vec<ScopeJob>> {
    // Scopes name the device by its index on the node: a set's devices
    // each have their own.
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
        let plan = plan_for(prepare, scope, &link_measure, StoresRequest::Auto)?;
        jobs.push(ScopeJob { scope, plan });
    }
    Ok(jobs)
}
