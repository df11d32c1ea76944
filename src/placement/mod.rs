//! Which CPU each thread runs on.
//!
//! Turns a placement request — the default, an explicit CPU list, OpenMP
//! places with a binding policy, a likwid-pin expression or a named strategy
//! — plus the topology into one CPU per thread, always inside the CPUs this
//! process may use. [`spellings`] turns the result back into the lines that
//! reproduce it with other tools.

pub mod domains;
pub mod likwid;
pub mod omp;
pub mod runtime;
pub mod spellings;
pub mod strategy;

use crate::error::{Error, Input, Result};
use crate::topology::Topology;
use crate::topology::cpulist::{IdSet, parse_list};
pub use domains::{Core, Domains};
use std::collections::HashSet;
pub use strategy::Strategy;

/// What the user asked for (at most one of these; the CLI enforces that).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// One thread per core, spread (membw's default).
    Default,
    /// `0,2,4-10:2`: physical CPU ids in thread order.
    Cpus(String),
    /// OMP_PLACES with OMP_PROC_BIND.
    Places { places: String, bind: omp::Bind },
    /// A likwid-pin expression.
    Likwid(String),
    /// `compact|spread|per-socket=K|per-numa=K|per-l3=K|stride=S`, parsed.
    Strategy(Strategy),
    /// GNU libgomp's GOMP_CPU_AFFINITY.
    Gomp(String),
    /// Intel's KMP_AFFINITY.
    Kmp(String),
}

impl Spec {
    /// The input a fault in this spec is about, and its text.
    fn input(&self) -> (Input, String) {
        match self {
            Spec::Default => (Input::Threads, String::new()),
            Spec::Cpus(t) => (Input::Cpus, t.clone()),
            Spec::Places { places, .. } => (Input::Places, places.clone()),
            Spec::Likwid(t) => (Input::Pin, t.clone()),
            Spec::Strategy(s) => (Input::Strategy, s.to_string()),
            Spec::Gomp(t) => (Input::Gomp, t.clone()),
            Spec::Kmp(t) => (Input::Kmp, t.clone()),
        }
    }

    /// A strategy from its spelling, or the input error naming it.
    pub fn strategy(text: &str) -> crate::error::Result<Spec> {
        Strategy::parse(text)
            .map(Spec::Strategy)
            .map_err(|m| crate::error::Error::input(Input::Strategy, text, m))
    }
}

#[derive(Debug, Clone)]
pub struct Request {
    pub spec: Spec,
    pub threads: Option<usize>,
    /// Allow the second (third, ...) hardware thread of a core.
    pub smt: bool,
    /// numactl's `--cpunodebind`: only CPUs of these nodes.
    pub cpu_nodes: Option<IdSet>,
}

/// Why a grammar could not place the threads, in its own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub message: String,
    /// Allowing SMT siblings would have given enough CPUs.
    pub smt_would_help: bool,
}

impl From<String> for Fault {
    fn from(message: String) -> Fault {
        Fault {
            message,
            smt_would_help: false,
        }
    }
}

impl Fault {
    fn into_error(self, input: Input, value: &str) -> Error {
        let e = if value.is_empty() {
            Error::about(input, self.message)
        } else {
            Error::input(input, value, self.message)
        };
        if self.smt_would_help {
            e.with_hint(Input::Smt, "to use hardware threads")
        } else {
            e
        }
    }
}

/// The CPUs placement may choose from: the affinity mask, narrowed to the
/// nodes of a CPU-node restriction when given.
pub fn allowed_cpus(topo: &Topology, cpu_nodes: Option<&IdSet>) -> Result<IdSet> {
    let Some(nodes) = cpu_nodes else {
        return Ok(topo.allowed_cpus.clone());
    };
    let mut cpus = Vec::new();
    for &n in nodes.ids() {
        let node = topo.node(n).ok_or_else(|| {
            Error::input(
                Input::CpuNode,
                n.to_string(),
                format!(
                    "no such NUMA node (nodes: {})",
                    topo.nodes.iter().map(|n| n.id).collect::<IdSet>()
                ),
            )
        })?;
        if node.cpus.is_empty() {
            return Err(Error::input(
                Input::CpuNode,
                n.to_string(),
                format!("node {n} has no CPUs"),
            ));
        }
        cpus.extend(node.cpus.ids());
    }
    let set = IdSet::new(cpus).intersection(&topo.allowed_cpus);
    if set.is_empty() {
        return Err(Error::input(
            Input::CpuNode,
            nodes.to_string(),
            format!(
                "none of its CPUs is in the allowed set {}",
                topo.allowed_cpus
            ),
        ));
    }
    Ok(set)
}

/// Resolves a request to one CPU per thread, in thread order.
pub fn resolve(topo: &Topology, req: &Request) -> Result<Vec<usize>> {
    if req.threads == Some(0) {
        return Err(Error::input(Input::Threads, "0", "must be at least 1"));
    }
    let allowed = allowed_cpus(topo, req.cpu_nodes.as_ref())?;
    // One thread per CPU at most: bound before any grammar allocates per thread.
    if let Some(n) = req.threads.filter(|&n| n > allowed.len()) {
        let e = Error::input(
            Input::Threads,
            n.to_string(),
            format!(
                "{n} threads but only {} may be used",
                crate::units::plural(allowed.len(), "CPU")
            ),
        );
        return Err(e);
    }
    let domains = Domains::new(topo, &allowed);
    let (input, value) = req.spec.input();
    let fault = |f: Fault| f.into_error(input, &value);
    let cpus = match &req.spec {
        Spec::Default => {
            // More threads than cores: go on to the SMT siblings, as the
            // default promises one thread per core only while cores last.
            let smt = req.smt || req.threads.is_some_and(|n| n > domains.cores.len());
            let n = req.threads.map_or(String::new(), |n| n.to_string());
            strategy::resolve(&domains, Strategy::Spread, req.threads, smt)
                .map_err(|f| Fault::from(f.message).into_error(Input::Threads, &n))?
        }
        Spec::Cpus(list) => take_threads(
            cpu_list(topo, &allowed, list).map_err(|m| fault(m.into()))?,
            req.threads,
        )
        .map_err(|m| fault(m.into()))?,
        Spec::Places { places, bind } => {
            omp::resolve(topo, &domains, places, *bind, req.threads, req.smt).map_err(fault)?
        }
        Spec::Likwid(expr) => take_threads(
            likwid::resolve(&domains, expr).map_err(|m| fault(m.into()))?,
            req.threads,
        )
        .map_err(|m| fault(m.into()))?,
        Spec::Strategy(s) => {
            strategy::resolve(&domains, *s, req.threads, req.smt).map_err(fault)?
        }
        Spec::Gomp(list) => runtime::gomp(list, req.threads).map_err(fault)?,
        Spec::Kmp(text) => {
            let kmp = runtime::parse_kmp(text).map_err(|m| fault(m.into()))?;
            runtime::kmp(topo, &domains, &kmp, req.threads).map_err(fault)?
        }
    };
    check(topo, &allowed, &cpus).map_err(|m| fault(m.into()))?;
    Ok(cpus)
}

/// A thread count with an explicit list: a prefix of it.
fn take_threads(
    cpus: Vec<usize>,
    threads: Option<usize>,
) -> std::result::Result<Vec<usize>, String> {
    match threads {
        None => Ok(cpus),
        Some(n) if n <= cpus.len() => Ok(cpus[..n].to_vec()),
        Some(n) => Err(format!(
            "gives {} CPUs, fewer than the {n} threads asked for",
            cpus.len()
        )),
    }
}

/// The invariants every placement keeps, whatever produced it.
fn check(topo: &Topology, allowed: &IdSet, cpus: &[usize]) -> std::result::Result<(), String> {
    let mut seen = HashSet::new();
    for &cpu in cpus {
        if topo.cpu(cpu).is_none() {
            return Err(format!("CPU {cpu} does not exist or is offline"));
        }
        if !allowed.contains(cpu) {
            return Err(format!("CPU {cpu} is outside the allowed set {allowed}"));
        }
        if !seen.insert(cpu) {
            return Err(format!("CPU {cpu} would run two threads"));
        }
    }
    if cpus.is_empty() {
        return Err("the placement selects no CPU".into());
    }
    Ok(())
}

/// `0,2,4-10:2`: physical ids, each existing, allowed and listed once.
pub fn cpu_list(
    topo: &Topology,
    allowed: &IdSet,
    list: &str,
) -> std::result::Result<Vec<usize>, String> {
    let cpus = parse_list(list).map_err(|e| e.to_string())?;
    if cpus.is_empty() {
        return Err("no CPU listed".into());
    }
    let mut seen = HashSet::new();
    for &cpu in &cpus {
        if !seen.insert(cpu) {
            return Err(format!("CPU {cpu} is listed twice"));
        }
        if topo.cpu(cpu).is_none() {
            return Err(format!(
                "CPU {cpu} does not exist or is offline (online: {})",
                topo.online_cpus()
            ));
        }
        if !allowed.contains(cpu) {
            return Err(format!("CPU {cpu} is outside the allowed set {allowed}"));
        }
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_uses_allowed_cpus_once_each() {
        let topo = Topology::live().unwrap();
        let request = Request {
            spec: Spec::Default,
            threads: None,
            smt: false,
            cpu_nodes: None,
        };
        let cpus = resolve(&topo, &request).unwrap();
        assert_eq!(
            cpus.len(),
            Domains::new(&topo, &topo.allowed_cpus).cores.len()
        );
        assert!(cpus.iter().all(|&c| topo.allowed_cpus.contains(c)));
    }
}
