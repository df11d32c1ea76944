//! Which CPU each thread runs on.
//!
//! Turns a placement request — the default, an explicit CPU list, OpenMP
//! places with a binding policy, a likwid-pin expression or a named strategy
//! — plus the topology into one CPU per thread, always inside the CPUs this
//! process may use. [`spellings`] turns the result back into the lines that
//! reproduce it with other tools.

pub mod likwid;
pub mod omp;
pub mod spellings;
pub mod strategy;

use crate::error::{Error, Result};
use crate::topology::Topology;
use crate::topology::cpulist::{IdSet, parse_list};
use std::collections::HashSet;

/// What the user asked for (at most one of these; the CLI enforces that).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// One thread per core, spread (membw's default).
    Default,
    /// `--cpus 0,2,4-10:2`: physical CPU ids in thread order.
    Cpus(String),
    /// `--places` (OMP_PLACES) with `--bind` (OMP_PROC_BIND).
    Places { places: String, bind: omp::Bind },
    /// `--pin` (likwid-pin -c).
    Likwid(String),
    /// `--strategy compact|spread|per-numa=K|per-l3=K|stride=S`.
    Strategy(String),
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

/// One physical core as placement sees it: its allowed hardware threads and
/// where it sits.
#[derive(Debug, Clone)]
pub struct Core {
    /// Allowed hardware threads, lowest first.
    pub cpus: Vec<usize>,
    pub package: usize,
    pub node: usize,
    /// Index into [`Topology::llc_domains`], when known.
    pub llc: Option<usize>,
}

/// The allowed cores (those with at least one allowed CPU), by first CPU.
pub fn cores(topo: &Topology, allowed: &IdSet) -> Vec<Core> {
    let llcs = topo.llc_domains();
    topo.cores()
        .into_iter()
        .filter_map(|siblings| {
            let cpus: Vec<usize> = siblings
                .ids()
                .iter()
                .copied()
                .filter(|&c| allowed.contains(c))
                .collect();
            let first = topo.cpu(*cpus.first()?)?;
            Some(Core {
                package: first.package,
                node: first.node,
                llc: llcs.iter().position(|l| l.contains(first.id)),
                cpus,
            })
        })
        .collect()
}

/// The CPUs placement may choose from: the affinity mask, narrowed to the
/// nodes of `--cpunode` when given.
pub fn allowed_cpus(topo: &Topology, cpu_nodes: Option<&IdSet>) -> Result<IdSet> {
    let Some(nodes) = cpu_nodes else {
        return Ok(topo.allowed_cpus.clone());
    };
    let mut cpus = Vec::new();
    for &n in nodes.ids() {
        let node = topo.node(n).ok_or_else(|| {
            Error::Usage(format!(
                "--cpunode {n}: no such NUMA node (nodes: {})",
                topo.nodes.iter().map(|n| n.id).collect::<IdSet>()
            ))
        })?;
        if node.cpus.is_empty() {
            return Err(Error::Usage(format!("--cpunode {n}: node {n} has no CPUs")));
        }
        cpus.extend(node.cpus.ids());
    }
    let set = IdSet::new(cpus).intersection(&topo.allowed_cpus);
    if set.is_empty() {
        return Err(Error::Usage(format!(
            "--cpunode {nodes}: none of its CPUs is in the allowed set {}",
            topo.allowed_cpus
        )));
    }
    Ok(set)
}

/// Resolves a request to one CPU per thread, in thread order.
pub fn resolve(topo: &Topology, req: &Request) -> Result<Vec<usize>> {
    if req.threads == Some(0) {
        return Err(Error::Usage("--threads must be at least 1".into()));
    }
    let allowed = allowed_cpus(topo, req.cpu_nodes.as_ref())?;
    let cpus = match &req.spec {
        Spec::Default => {
            // More threads than cores: go on to the SMT siblings, as the
            // default promises one thread per core only while cores last.
            let cores = cores(topo, &allowed).len();
            let smt = req.smt || req.threads.is_some_and(|n| n > cores);
            strategy::resolve(topo, &allowed, "spread", req.threads, smt).map_err(|e| {
                let e = e.replace("--strategy 'spread': ", "");
                Error::Usage(e.replace(" (add --smt to use hardware threads)", ""))
            })?
        }
        Spec::Cpus(list) => take_threads(
            cpu_list(topo, &allowed, list)?,
            req.threads,
            &format!("--cpus '{list}'"),
        )?,
        Spec::Places { places, bind } => {
            omp::resolve(topo, &allowed, places, *bind, req.threads, req.smt)
                .map_err(|e| Error::Usage(format!("--places '{places}': {e}")))?
        }
        Spec::Likwid(expr) => take_threads(
            likwid::resolve(topo, &allowed, expr)
                .map_err(|e| Error::Usage(format!("--pin '{expr}': {e}")))?,
            req.threads,
            &format!("--pin '{expr}'"),
        )?,
        Spec::Strategy(s) => {
            strategy::resolve(topo, &allowed, s, req.threads, req.smt).map_err(Error::Usage)?
        }
    };
    check(topo, &allowed, &cpus)?;
    Ok(cpus)
}

/// `--threads N` with an explicit list: a prefix of it.
fn take_threads(cpus: Vec<usize>, threads: Option<usize>, what: &str) -> Result<Vec<usize>> {
    match threads {
        None => Ok(cpus),
        Some(n) if n <= cpus.len() => Ok(cpus[..n].to_vec()),
        Some(n) => Err(Error::Usage(format!(
            "--threads {n} needs {n} CPUs but {what} gives {}",
            cpus.len()
        ))),
    }
}

/// The invariants every placement keeps, whatever produced it.
fn check(topo: &Topology, allowed: &IdSet, cpus: &[usize]) -> Result<()> {
    let mut seen = HashSet::new();
    for &cpu in cpus {
        if topo.cpu(cpu).is_none() {
            return Err(Error::Usage(format!(
                "CPU {cpu} does not exist or is offline"
            )));
        }
        if !allowed.contains(cpu) {
            return Err(Error::Usage(format!(
                "CPU {cpu} is outside the allowed set {allowed}"
            )));
        }
        if !seen.insert(cpu) {
            return Err(Error::Usage(format!("CPU {cpu} would run two threads")));
        }
    }
    if cpus.is_empty() {
        return Err(Error::Usage("the placement selects no CPU".into()));
    }
    Ok(())
}

/// `--cpus 0,2,4-10:2`: physical ids, each existing, allowed and listed once.
fn cpu_list(topo: &Topology, allowed: &IdSet, list: &str) -> Result<Vec<usize>> {
    let what = format!("--cpus '{list}'");
    let cpus = parse_list(list).map_err(|e| Error::Usage(format!("{what}: {e}")))?;
    if cpus.is_empty() {
        return Err(Error::Usage(format!("{what}: no CPU listed")));
    }
    let mut seen = HashSet::new();
    for &cpu in &cpus {
        if !seen.insert(cpu) {
            return Err(Error::Usage(format!("{what}: CPU {cpu} is listed twice")));
        }
        if topo.cpu(cpu).is_none() {
            return Err(Error::Usage(format!(
                "{what}: CPU {cpu} does not exist or is offline (online: {})",
                topo.online_cpus()
            )));
        }
        if !allowed.contains(cpu) {
            return Err(Error::Usage(format!(
                "{what}: CPU {cpu} is outside the allowed set {allowed}"
            )));
        }
    }
    Ok(cpus)
}

/// Round-robin over groups: the first of each group, then the second, ...
pub(crate) fn interleave<T: Clone>(groups: &[Vec<T>]) -> Vec<T> {
    let longest = groups.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|i| groups.iter().filter_map(move |g| g.get(i).cloned()))
        .collect()
}

/// Groups items by a key, keeping first-seen order of keys and items.
pub(crate) fn group_by<T: Clone, K: PartialEq>(items: &[T], key: impl Fn(&T) -> K) -> Vec<Vec<T>> {
    let mut keys: Vec<K> = Vec::new();
    let mut groups: Vec<Vec<T>> = Vec::new();
    for item in items {
        let k = key(item);
        match keys.iter().position(|x| *x == k) {
            Some(i) => groups[i].push(item.clone()),
            None => {
                keys.push(k);
                groups.push(vec![item.clone()]);
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_deals_round_robin() {
        assert_eq!(
            interleave(&[vec![1, 2, 3], vec![10], vec![20, 21]]),
            vec![1, 10, 20, 2, 21, 3]
        );
        assert_eq!(
            group_by(&[1, 2, 3, 4, 5], |x| x % 2),
            vec![vec![1, 3, 5], vec![2, 4]]
        );
    }

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
        assert_eq!(cpus.len(), cores(&topo, &topo.allowed_cpus).len());
        assert!(cpus.iter().all(|&c| topo.allowed_cpus.contains(c)));
    }
}
