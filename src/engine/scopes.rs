//! The scopes of a health check, each a plan. Which scopes a target has
//! is its backend's to say (`Backend::health_scopes`): the host's (the
//! whole node, then each NUMA domain's cores on that domain's memory) or a
//! device's (its own memory, measured whole, and its host link from every
//! memory node of the host, `link:N`, each with its own kernels). On a
//! superchip the host's also cover the memory without CPUs (the GPU's
//! HBM) and the GPU's its kernels over the CPU's memory.

use crate::error::{Error, Result};
use crate::health::Scope;
use crate::memory::policy::{MemPolicy, Policy};
use crate::placement::{self, Spec};
use crate::plan::{self, Measure, Plan, Settings, StoresRequest};
use crate::results::{Band, StreamRule};
use crate::topology::Topology;
use crate::topology::cpulist::IdSet;

/// One scope, ready to measure, with where its arrays stand against the
/// caches of its CPUs (memory, but in a small check).
pub struct ScopeJob {
    pub scope: Scope,
    pub plan: Plan,
    pub band: Band,
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
    let measure = Measure {
        gpu_memory: scope.gpu_memory(),
        ..measure.clone()
    };
    Ok(prepare(&Settings::new(&measure, request, stores, mem))?.plan)
}

/// The jobs of a new baseline (or a check without one) in `scopes`,
/// each with its kernels of those `measure` asks (a scope with none is
/// left out), sized by STREAM's rule for its CPUs unless `measure` fixes
/// the elements, which must then leave the caches, or be `small`: a
/// check of the caches' band, named as such.
pub fn scope_jobs(
    topo: &Topology,
    measure: &Measure,
    prepare: &plan::Prepare,
    scopes: &[Scope],
    small: bool,
) -> Result<Vec<ScopeJob>> {
    let measured = scopes.iter().filter_map(|&scope| {
        let kernels = scope.kernels(&measure.kernels);
        (!kernels.is_empty()).then(|| {
            let m = Measure {
                kernels,
                ..measure.clone()
            };
            (scope, m)
        })
    });
    measured
        .map(|(scope, m)| {
            let plan = plan_for(prepare, scope, &m, StoresRequest::Auto)?;
            let band = band(topo, &plan);
            if !small && let Some(why) = under_rule(topo, &plan) {
                let e = Error::input(crate::error::Input::Size, plan.elements.to_string(), why);
                return Err(
                    e.with_hint(crate::error::Input::Small, "to check it, labelled as such")
                );
            }
            Ok(ScopeJob { scope, plan, band })
        })
        .collect()
}

/// Where a plan's arrays stand against the caches of its CPUs: a
/// device's are in its own memory; unknown caches judge nothing.
pub fn band(topo: &Topology, plan: &Plan) -> Band {
    rule(topo, plan).map_or(Band::Memory, |rule| {
        rule.band(plan.elements as u64, plan.arrays_needed().len() as u64)
    })
}

/// STREAM's rule over the caches of the plan's CPUs; none for a device.
fn rule(topo: &Topology, plan: &Plan) -> Option<StreamRule> {
    let cpus = plan.host_cpus()?;
    Some(StreamRule::for_cpus(topo, &cpus.iter().copied().collect()))
}

/// Why arrays of this plan would measure the caches rather than the
/// memory (STREAM's rule, each array under 4 × the caches of its CPUs),
/// in a few words: a check refuses them but where asked to be small.
pub(super) fn under_rule(topo: &Topology, plan: &Plan) -> Option<String> {
    let rule = rule(topo, plan)?;
    let words = match rule.band(plan.elements as u64, plan.arrays_needed().len() as u64) {
        Band::Caches => "cache bandwidth",
        Band::UnderRule => "caches may still help",
        Band::Memory | Band::Unknown => return None,
    };
    Some(format!(
        "under STREAM's rule here ({} elements or more): {words}",
        rule.min_elements().unwrap_or_default()
    ))
}

/// The scopes of a new baseline (or a check without one) of every
/// device the source measures (a device set's), or of its one target.
pub fn every_device(
    topo: &Topology,
    measure: &Measure,
    source: &dyn crate::engine::Source,
    small: bool,
) -> Result<Vec<ScopeJob>> {
    let mut jobs = Vec::new();
    for device in source.devices() {
        let prepare = |s: &_| source.prepare_on(device, topo, s);
        let scopes = source.scopes(device, topo);
        jobs.extend(scope_jobs(topo, measure, &prepare, &scopes, small)?);
    }
    Ok(jobs)
}
