//! The latency experiment: idle latency over working sets, the CPU node ×
//! memory node matrix, and loaded latency. Each point goes to the session
//! as it is measured, so resume, stop and the results file work as for
//! every other experiment.

use super::Stop;
use super::probe::{Probe, drive};
use super::session::Session;
use crate::error::Result;
use crate::latency::load::{self, LoadedPlan, Mix};
use crate::latency::{self, Chain, ChaseOrder, LatencyPlan, WorkingSetLatency};
use crate::memory::Hugepages;
use crate::memory::policy::Policy;
use crate::memory::written::{ArrayPolicy, PolicySpec};
use crate::observe::{Watch, Window};
use crate::results::latency_record::{
    C2cLine, Latency, LatencyExperiment, LatencyKey, LoadedLatency,
};
use crate::topology::Topology;
use crate::topology::cpulist::IdSet;
use crate::trust::Effect;
use std::collections::BTreeMap;

/// The session of a latency experiment.
pub type LatencySession = Session<LatencyKey, Latency>;

/// What every point of one experiment carries besides its measurement.
#[derive(Debug, Clone)]
pub struct ExperimentContext {
    /// Capacity of each cache level serving the chasing CPU, bytes.
    pub caches: BTreeMap<String, u64>,
    /// Theoretical peak bandwidth of the node, when known.
    pub peak_gb_s: Option<f64>,
    /// The policy is the one membw was started with (numactl's).
    pub mem_inherited: bool,
}

/// One latency experiment, resolved.
#[derive(Debug, Clone)]
pub struct LatencyRequest {
    pub plan: LatencyPlan,
    pub study: LatencyExperiment,
    pub loaded: Option<LoadedPlan>,
    pub facts: ExperimentContext,
    /// The core-to-core study's cases, in the order measured.
    pub c2c_lines: Vec<C2cLine>,
}

/// Measures the experiment's points that are not done yet, into `out`;
/// stops after the current point once a signal asks.
pub fn measure(topo: &Topology, request: &LatencyRequest, out: &mut LatencySession) -> Result<()> {
    let (plan, facts) = (&request.plan, &request.facts);
    let mut chases = Chases { plan, facts };
    match (&request.loaded, request.study) {
        (Some(loaded), _) => return run_loaded(plan, facts, loaded, out),
        (None, LatencyExperiment::Matrix) => drive(&mut chases, &matrix_chases(plan, topo), out),
        (None, LatencyExperiment::C2c) => {
            let llcs = topo.llc_domains();
            let mut probe = CoreToCore {
                plan,
                facts,
                topo,
                llcs,
            };
            drive(&mut probe, &pairs(plan, topo, &request.c2c_lines), out)
        }
        (None, _) => drive(&mut chases, &idle_chases(plan), out),
    }
    .map(|_| ())
}

/// `membw latency`'s one entry point: measures what is not done yet (a
/// signal stops it after the current point) and gives the document every
/// format renders, every record of this run in it, with the error of a
/// point that failed, if one did.
pub fn run(
    topo: &Topology,
    request: &LatencyRequest,
    out: &mut LatencySession,
) -> (crate::results::latency_record::LatencyReport, Result<()>) {
    let result = measure(topo, request, out);
    let mut records = resumed_records(out);
    records.append(&mut out.records);
    let plan = &request.plan;
    let report = crate::results::latency_record::LatencyReport {
        schema_version: crate::results::SCHEMA_VERSION,
        experiment: crate::results::latency_record::EXPERIMENT.into(),
        study: request.study,
        timestamp: out.started.clone(),
        host: out.host.clone(),
        cpu: plan.cpu,
        mem: plan.policy.to_string(),
        hugepages: (plan.hugepages.iter().map(|p| p.name()))
            .collect::<Vec<_>>()
            .join(","),
        clock_ghz: plan.clock_ghz,
        points: records.iter().map(|r| r.latency.clone()).collect(),
        records,
    };
    (report, result)
}

/// The points a resumed run found done, from its file, in the order the
/// study reached them: the report of a resumed run covers the whole study,
/// not only what this run added.
fn resumed_records(out: &LatencySession) -> Vec<crate::results::latency_record::LatencyRecord> {
    let Some(file) = out.file.as_ref().filter(|_| !out.resumed.is_empty()) else {
        return Vec::new();
    };
    match crate::results::read::read(&file.path).map(|r| r.document) {
        Ok(crate::results::read::Document::Latency(found)) => {
            let mut by_key: BTreeMap<String, _> =
                found.into_iter().map(|r| (r.point.key(), r)).collect();
            out.resumed
                .iter()
                .filter_map(|k| by_key.remove(k))
                .collect()
        }
        _ => {
            crate::say!(
                "membw: {}: cannot read back the points already there; the report shows this run's only",
                file.path.display()
            );
            Vec::new()
        }
    }
}

/// What a point's record holds: its latency, and what every observer saw
/// of `cpus` while it was measured.
fn payload(
    plan: &LatencyPlan,
    facts: &ExperimentContext,
    latency: WorkingSetLatency,
    (watch, cpus): (&Watch, &[usize]),
    load: Option<LoadedLatency>,
    idle_p50_ns: Option<f64>,
) -> Latency {
    let mut payload = Latency {
        latency,
        load,
        idle_p50_ns,
        clock_ghz: plan.clock_ghz,
        caches: facts.caches.clone(),
        peak_gb_s: facts.peak_gb_s,
        interference: None,
        relation: None,
        mem_inherited: facts.mem_inherited,
    };
    let window = Window {
        cpus,
        one_rank_of_many: false,
        effect: Effect::Latency,
    };
    watch.keep_in(&window, &mut payload);
    payload
}

/// Samples `chain`, the observers watching.
fn sample(chain: &mut Chain, plan: &LatencyPlan) -> (WorkingSetLatency, Watch) {
    let mut watch = Watch::host_started();
    let point = chain.sample(plan.time_per_size, plan.clock_ghz);
    watch.stop();
    (point, watch)
}

/// A point's key, chased in random order (callers that chase in another
/// set it).
fn key(
    pages: Hugepages,
    study: LatencyExperiment,
    cpu: usize,
    policy: &Policy,
    bytes: u64,
) -> LatencyKey {
    LatencyKey {
        study,
        cpu,
        cpu_node: None,
        mem: PolicySpec::uniform(ArrayPolicy::from(policy)),
        mem_node: None,
        bytes,
        hugepages: pages,
        order: ChaseOrder::Random,
        load_cpus: Vec::new(),
        mix: None,
        delay_ns: None,
        peer_cpu: None,
        line: None,
    }
}

/// One chase of the idle or NUMA-matrix study: its point (the chasing CPU,
/// the size and pages of the working set) and the policy that places it.
struct Chase {
    key: LatencyKey,
    policy: Policy,
}

/// The chase probe: one working set built and chased per point.
struct Chases<'p> {
    plan: &'p LatencyPlan,
    facts: &'p ExperimentContext,
}

impl Probe for Chases<'_> {
    type Job = Chase;
    type Point = LatencyKey;
    type Payload = Latency;

    fn point(&self, job: &Chase) -> LatencyKey {
        job.key.clone()
    }

    fn measure(&mut self, job: &Chase, _: &Stop) -> Result<Option<(LatencyKey, Latency)>> {
        let (cpu, plan) = (job.key.cpu, self.plan);
        latency::pin(cpu)?;
        let mut chain = Chain::build(job.key.bytes, job.key.hugepages, &job.policy, job.key.order)?;
        let (point, watch) = sample(&mut chain, plan);
        let payload = payload(plan, self.facts, point, (&watch, &[cpu]), None, None);
        Ok(Some((job.key.clone(), payload)))
    }
}

/// The idle study: every size in every kind of page, from the plan's CPU.
fn idle_chases(plan: &LatencyPlan) -> Vec<Chase> {
    let mut chases = Vec::new();
    for &pages in &plan.hugepages {
        for &order in &plan.orders {
            for &bytes in &plan.sizes {
                let mut key = key(
                    pages,
                    LatencyExperiment::Idle,
                    plan.cpu,
                    &plan.policy,
                    bytes,
                );
                key.order = order;
                chases.push(Chase {
                    key,
                    policy: plan.policy.clone(),
                });
            }
        }
    }
    chases
}

/// Every CPU node that has an allowed CPU chases, from its first one, a
/// working set bound to each allowed memory node in turn.
fn matrix_chases(plan: &LatencyPlan, topo: &Topology) -> Vec<Chase> {
    let bytes = plan.sizes[0];
    let mut chases = Vec::new();
    for node in &topo.nodes {
        let Some(&cpu) = node
            .cpus
            .ids()
            .iter()
            .find(|&&c| topo.allowed_cpus.contains(c))
        else {
            continue;
        };
        for &mem in topo.allowed_mems.ids() {
            let policy = Policy::Bind(IdSet::new(vec![mem]));
            let mut key = key(
                plan.hugepages[0],
                LatencyExperiment::Matrix,
                cpu,
                &policy,
                bytes,
            );
            key.order = plan.orders[0];
            (key.cpu_node, key.mem_node) = (Some(node.id), Some(mem));
            chases.push(Chase { key, policy });
        }
    }
    chases
}

/// One pair of the core-to-core study: the two CPUs (the first times) and
/// the case of the line between them.
struct Pair {
    key: LatencyKey,
    cpus: (usize, usize),
    line: C2cLine,
}

/// The core-to-core probe: one pair and one case of the line per point.
struct CoreToCore<'p> {
    plan: &'p LatencyPlan,
    facts: &'p ExperimentContext,
    topo: &'p Topology,
    llcs: Vec<IdSet>,
}

impl Probe for CoreToCore<'_> {
    type Job = Pair;
    type Point = LatencyKey;
    type Payload = Latency;

    fn point(&self, job: &Pair) -> LatencyKey {
        job.key.clone()
    }

    fn measure(&mut self, job: &Pair, _: &Stop) -> Result<Option<(LatencyKey, Latency)>> {
        let ((a, b), plan) = (job.cpus, self.plan);
        let mut watch = Watch::host_started();
        let (point, ()) =
            latency::c2c::measure(job.line, (a, b), plan.time_per_size, plan.clock_ghz, || {
                watch.stop()
            })?;
        let mut payload = payload(plan, self.facts, point, (&watch, &[a, b]), None, None);
        let relation = latency::c2c::relation(self.topo, &self.llcs, a, b);
        payload.relation = Some(relation.to_string());
        Ok(Some((job.key.clone(), payload)))
    }
}

/// Every pair of allowed CPUs, the lower-numbered first, in every case
/// asked for.
fn pairs(plan: &LatencyPlan, topo: &Topology, lines: &[C2cLine]) -> Vec<Pair> {
    let cpus = topo.allowed_cpus.ids();
    let mut pairs = Vec::new();
    for &line in lines {
        for (i, &a) in cpus.iter().enumerate() {
            for &b in &cpus[i + 1..] {
                let mut key = key(
                    plan.hugepages[0],
                    LatencyExperiment::C2c,
                    a,
                    &Policy::Local,
                    64,
                );
                (key.peer_cpu, key.line) = (Some(b), Some(line));
                pairs.push(Pair {
                    key,
                    cpus: (a, b),
                    line,
                });
            }
        }
    }
    pairs
}

/// The chaser's idle latency first, then every mix and delay under load.
fn run_loaded(
    plan: &LatencyPlan,
    facts: &ExperimentContext,
    loaded: &LoadedPlan,
    out: &mut LatencySession,
) -> Result<()> {
    latency::pin(plan.cpu)?;
    let bytes = loaded.bytes;
    let mut chain = Chain::build(bytes, plan.hugepages[0], &plan.policy, plan.orders[0])?;
    let (idle, idle_watch) = sample(&mut chain, plan);
    let idle_ns = idle.p50_ns;
    let mut idle_key = key(
        plan.hugepages[0],
        LatencyExperiment::Idle,
        plan.cpu,
        &plan.policy,
        bytes,
    );
    idle_key.order = plan.orders[0];
    let idle = payload(plan, facts, idle, (&idle_watch, &[plan.cpu]), None, None);
    if !out.skip(&idle_key) && !out.keep(idle_key, idle)? {
        return Ok(());
    }
    let point_key = |mix: Mix, delay_ns: f64| {
        let mut k = key(
            plan.hugepages[0],
            LatencyExperiment::Loaded,
            plan.cpu,
            &plan.policy,
            bytes,
        );
        k.load_cpus = loaded.load_cpus.clone();
        k.order = plan.orders[0];
        (k.mix, k.delay_ns) = (Some(mix), Some(delay_ns));
        k
    };
    // A resumed file skips whole mixes that are done, not single delays:
    // the load threads run each mix's delays in one go.
    let mut todo = loaded.clone();
    todo.mixes.retain(|&mix| {
        loaded
            .delays_ns
            .iter()
            .any(|&delay_ns| !out.has(&point_key(mix, delay_ns)))
    });
    if todo.mixes.is_empty() {
        return Ok(());
    }
    // Each loaded point's window runs from the end of the one before.
    let mut watch = Watch::host_started();
    let mut cpus = loaded.load_cpus.clone();
    cpus.push(plan.cpu);
    load::measure(&todo, &mut chain, |p, latency| {
        watch.stop();
        let seen = std::mem::replace(&mut watch, Watch::host_started());
        let k = point_key(p.mix, p.delay_ns);
        if out.skip(&k) {
            return Ok(out.signal().is_none());
        }
        let (load, idle) = (Some(p.clone()), Some(idle_ns));
        let payload = payload(plan, facts, latency.clone(), (&seen, &cpus), load, idle);
        out.keep(k, payload)
    })
}
