//! `membw tune`: search threads × placement × store mode within a time
//! budget for the best sustained rate of one kernel, and say how to get it
//! in the user's own application.

use super::sweep::Job;
use super::{Point, Record};
use crate::kernels::KernelId;
use crate::placement::{self, Spec};
use crate::plan::{Settings, StoresRequest};
use crate::topology::Topology;
use crate::units::ELEMENT_BYTES;

/// A candidate: a label, the placement, and the mpirun mapping that gives
/// the same placement to MPI ranks.
pub struct Candidate {
    pub label: String,
    pub request: placement::Request,
    pub mpirun_map: Option<String>,
}

fn strategy(label: &str, threads: Option<usize>, smt: bool, map: Option<String>) -> Candidate {
    Candidate {
        label: label.to_string()
            + &threads.map_or(String::new(), |t| format!(" × {t}"))
            + if smt { " +smt" } else { "" },
        request: placement::Request {
            spec: Spec::Strategy(label.split(" ×").next().unwrap_or(label).into()),
            threads,
            smt,
            cpu_nodes: None,
        },
        mpirun_map: map,
    }
}

/// The candidates, most promising first: all cores, then fewer threads per
/// L3 domain, per NUMA node and per socket, every second core, fewer
/// threads spread, and SMT.
pub fn candidates(topo: &Topology) -> Vec<Candidate> {
    let cores = placement::cores(topo, &topo.allowed_cpus);
    let n = cores.len();
    let per = |key: fn(&placement::Core) -> Option<usize>| -> usize {
        let groups = placement::group_by(&cores, key);
        groups.iter().map(Vec::len).min().unwrap_or(1)
    };
    let (per_l3, per_node, per_socket) = (
        per(|c| c.llc),
        per(|c| Some(c.node)),
        per(|c| Some(c.package)),
    );
    let mut list = vec![strategy(
        "spread",
        None,
        false,
        Some("--map-by core".into()),
    )];
    // K threads per domain, K = 1, 2, 4, ... below the domain's core count;
    // per socket only where there is more than one socket.
    let sockets = topo.packages().len();
    for (name, limit, mpi_domain) in [
        ("per-l3", per_l3, "l3cache"),
        ("per-numa", per_node, "numa"),
        (
            "per-socket",
            if sockets > 1 { per_socket } else { 0 },
            "package",
        ),
    ] {
        let mut k = 1;
        while k < limit {
            list.push(strategy(
                &format!("{name}={k}"),
                None,
                false,
                Some(format!("--map-by ppr:{k}:{mpi_domain}")),
            ));
            k *= 2;
        }
    }
    if n >= 4 {
        list.push(strategy("stride=2", None, false, None));
    }
    let mut t = 1;
    while t < n {
        list.push(strategy("spread", Some(t), false, None));
        t *= 2;
    }
    if topo.threads_per_core() > 1 {
        list.push(strategy(
            "spread",
            None,
            true,
            Some("--map-by hwthread".into()),
        ));
    }
    list
}

/// Jobs for every candidate in both store modes, dropping those that resolve
/// to a placement already listed.
pub fn jobs(
    topo: &Topology,
    kernel: KernelId,
    elements: u64,
    ntimes: usize,
) -> Vec<(Job, Option<String>)> {
    let arrays = crate::kernels::arrays_used(&[kernel]).len() as u64;
    let mut seen: Vec<(Vec<usize>, StoresRequest)> = Vec::new();
    let mut out = Vec::new();
    for c in candidates(topo) {
        let Ok(cpus) = placement::resolve(topo, &c.request) else {
            continue;
        };
        for stores in [StoresRequest::Nt, StoresRequest::Regular] {
            if seen.contains(&(cpus.clone(), stores)) {
                continue;
            }
            seen.push((cpus.clone(), stores));
            let settings = Settings {
                placement: c.request.clone(),
                elements: Some(elements),
                ntimes,
                kernels: vec![kernel],
                isa: None,
                stores,
                hugepages: crate::memory::Hugepages::Auto,
                mem: Default::default(),
                inner_repeats: 1,
            };
            let point = Point {
                threads: cpus.len(),
                placement: c.label.clone(),
                mem: "local".into(),
                stores,
                kernels: vec![kernel],
                elements,
                working_set_per_thread: elements * ELEMENT_BYTES * arrays / cpus.len() as u64,
                ntimes,
                numa: None,
            };
            let label = format!("{} · {:?} stores", c.label, stores).to_lowercase();
            out.push((
                Job {
                    point,
                    settings,
                    label,
                },
                c.mpirun_map.clone(),
            ));
        }
    }
    out
}

/// The measured candidates, best first, by the mean of their best rates.
pub fn ranking(records: &[Record], kernel: KernelId) -> Vec<(&Record, f64)> {
    let mut ranked: Vec<(&Record, f64)> = records
        .iter()
        .filter_map(|r| Some((r, r.stats.get(&kernel)?.mean)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked
}
