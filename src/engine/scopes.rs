//! The scopes of a health check, each a plan. Which scopes a target has
//! is its backend's to say (`Backend::health_scopes`): the host's (the
//! whole node, then each NUMA domain's cores on that domain's memory) or a
//! device's (its own memory, measured whole, and its host link from every
//! memory node of the host, `link:N`, each with its own kernels).

use crate::error::{Error, Result};
use crate::health::Scope;
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

/// The jobs of a new baseline (or a check without one) in `scopes`,
/// each with its kernels of those `measure` asks (a scope with none is
/// left out), sized by STREAM's rule for its CPUs unless `measure` fixes
/// the elements, which must then leave the caches.
pub fn scope_jobs(
    topo: &Topology,
    measure: &Measure,
    prepare: &plan::Prepare,
    scopes: &[Scope],
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
    let rule = crate::results::StreamRule::for_cpus(topo, &cpus.iter().copied().collect());
    (rule.holds(plan.elements as u64) == Some(false)).then(|| {
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
        let scopes = source.scopes(device, topo);
        jobs.extend(scope_jobs(topo, measure, &prepare, &scopes)?);
    }
    Ok(jobs)
}
