//! Which CPU each thread runs on.
//!
//! Turns a placement request — the default, an explicit CPU list, OpenMP
//! places with a binding policy, a likwid-pin expression or a named strategy
//! — plus the topology into one CPU per thread, always inside the CPUs this
//! process may use. [`spellings`] turns the result back into the lines that
//! reproduce it with other tools.

pub mod domains;
pub mod identity;
pub mod likwid;
pub mod omp;
pub mod read_back;
pub mod runtime;
pub mod spellings;
pub mod strategy;

use crate::error::{Error, Input, Result};
use crate::topology::Topology;
use crate::topology::cpulist::{IdSet, parse_list};
pub use domains::{Core, Domains};
use std::collections::HashSet;
pub use strategy::Strategy;

/// A value parsed from what the user wrote, with that text kept for
/// messages and headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written<T> {
    pub text: String,
    pub value: T,
}

impl<T> Written<T> {
    /// Parses `text` with a grammar's parser.
    pub fn parse(
        text: &str,
        parser: impl FnOnce(&str) -> std::result::Result<T, String>,
    ) -> std::result::Result<Written<T>, String> {
        parser(text).map(|value| Written {
            text: text.to_string(),
            value,
        })
    }
}

/// What the user asked for (at most one of these; the CLI enforces that),
/// parsed: only the topology-dependent checks remain for [`resolve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// One thread per core, spread (membw's default).
    Default,
    /// `0,2,4-10:2`: physical CPU ids in thread order.
    Cpus(Written<Vec<usize>>),
    /// OMP_PLACES with OMP_PROC_BIND.
    Places {
        places: Written<omp::Parsed>,
        bind: omp::Bind,
    },
    /// A likwid-pin expression.
    Likwid(Written<likwid::Expr>),
    /// `compact|spread|per-socket=K|per-numa=K|per-l3=K|stride=S`.
    Strategy(Strategy),
    /// GNU libgomp's GOMP_CPU_AFFINITY: the CPUs listed.
    Gomp(Written<Vec<usize>>),
    /// Intel's KMP_AFFINITY.
    Kmp(Written<runtime::Kmp>),
    /// No binding at all (`--no-pin`, `--strategy unpinned`,
    /// `OMP_PROC_BIND=false`): as many threads as the default would run,
    /// which the scheduler places and moves as it likes; the CPUs they
    /// are given are where they start, not where they stay.
    Unpinned,
}

impl Spec {
    /// The input a fault in this spec is about, and its text.
    pub fn input(&self) -> (Input, String) {
        match self {
            Spec::Default => (Input::Threads, String::new()),
            Spec::Cpus(w) => (Input::Cpus, w.text.clone()),
            Spec::Places { places, .. } => (Input::Places, places.text.clone()),
            Spec::Likwid(w) => (Input::Pin, w.text.clone()),
            Spec::Strategy(s) => (Input::Strategy, s.to_string()),
            Spec::Gomp(w) => (Input::Gomp, w.text.clone()),
            Spec::Kmp(w) => (Input::Kmp, w.text.clone()),
            Spec::Unpinned => (Input::NoPin, String::new()),
        }
    }

    /// Whether the threads are bound to their CPUs (every spec but
    /// [`Spec::Unpinned`]).
    pub fn pins(&self) -> bool {
        *self != Spec::Unpinned
    }

    /// Parses `text` as `input`'s grammar, or the input error naming it.
    fn parsed<T>(
        input: Input,
        text: &str,
        parser: impl FnOnce(&str) -> std::result::Result<T, String>,
    ) -> Result<Written<T>> {
        Written::parse(text, parser).map_err(|m| Error::input(input, text, m))
    }

    /// A CPU list: `0,2,4-10:2`.
    pub fn cpus(text: &str) -> Result<Spec> {
        let list = |t: &str| match parse_list(t) {
            Ok(cpus) if cpus.is_empty() => Err("no CPU listed".to_string()),
            Ok(cpus) => Ok(cpus),
            Err(e) => Err(e.to_string()),
        };
        Self::parsed(Input::Cpus, text, list).map(Spec::Cpus)
    }

    /// OpenMP places with a binding.
    pub fn places(text: &str, bind: omp::Bind) -> Result<Spec> {
        let places = Self::parsed(Input::Places, text, |t| {
            omp::parse(t).map_err(|e| e.to_string())
        })?;
        Ok(Spec::Places { places, bind })
    }

    /// A likwid-pin expression.
    pub fn likwid(text: &str) -> Result<Spec> {
        Self::parsed(Input::Pin, text, likwid::parse).map(Spec::Likwid)
    }

    /// A strategy from its spelling; `unpinned` is no binding at all.
    pub fn strategy(text: &str) -> Result<Spec> {
        if text.trim() == "unpinned" {
            return Ok(Spec::Unpinned);
        }
        Strategy::parse(text)
            .map(Spec::Strategy)
            .map_err(|m| Error::input(Input::Strategy, text, m))
    }

    /// A GOMP_CPU_AFFINITY list.
    pub fn gomp(text: &str) -> Result<Spec> {
        Self::parsed(Input::Gomp, text, runtime::parse_gomp).map(Spec::Gomp)
    }

    /// A KMP_AFFINITY value.
    /// Intel's KMP_AFFINITY; `none` and `disabled` bind nothing, and
    /// neither does membw then.
    pub fn kmp(text: &str) -> Result<Spec> {
        let kmp = Self::parsed(Input::Kmp, text, runtime::parse_kmp)?;
        Ok(match kmp.value {
            runtime::Kmp::None => Spec::Unpinned,
            _ => Spec::Kmp(kmp),
        })
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

/// What a label must add when threads share cores or CPUs: `6 of 30
/// threads on SMT siblings: 6 cores run two or more`, or where CPUs run
/// two threads (OpenMP's shared places) `4 threads on 2 CPUs of 1 core:
/// CPUs 0,24 run two or more`; None when every thread has a core.
pub fn shared_cores(topo: &Topology, cpus: &[usize]) -> Option<String> {
    use std::collections::BTreeMap;
    let mut per_core: BTreeMap<(usize, usize), HashSet<usize>> = BTreeMap::new();
    let mut per_cpu: BTreeMap<usize, usize> = BTreeMap::new();
    for &id in cpus {
        if let Some(c) = topo.cpu(id) {
            per_core.entry((c.package, c.core)).or_default().insert(id);
        }
        *per_cpu.entry(id).or_default() += 1;
    }
    let plural = crate::units::plural;
    let crowded: Vec<usize> = per_cpu
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(c, _)| *c)
        .collect();
    if !crowded.is_empty() {
        let which = match crowded.as_slice() {
            [cpu] => format!("CPU {cpu} runs"),
            many => format!("CPUs {} run", crate::topology::cpulist::format_ranges(many)),
        };
        return Some(format!(
            "{} threads on {} of {}: {which} two or more",
            cpus.len(),
            plural(per_cpu.len(), "CPU"),
            plural(per_core.len(), "core"),
        ));
    }
    let on_siblings = cpus.len() - per_core.len();
    (on_siblings > 0).then(|| {
        let doubled = per_core.values().filter(|cpus| cpus.len() > 1).count();
        format!(
            "{on_siblings} of {} threads on SMT siblings: {} run two or more",
            cpus.len(),
            plural(doubled, "core")
        )
    })
}

/// Resolves a request to one CPU per thread, in thread order.
pub fn resolve(topo: &Topology, req: &Request) -> Result<Vec<usize>> {
    if req.threads == Some(0) {
        return Err(Error::input(Input::Threads, "0", "must be at least 1"));
    }
    let allowed = allowed_cpus(topo, req.cpu_nodes.as_ref())?;
    // One thread per CPU at most, but OpenMP places, which may be shared
    // by more threads than their CPUs (`primary`): bound before any
    // grammar allocates per thread.
    let places = matches!(req.spec, Spec::Places { .. });
    let per_cpu = if places { MAX_THREADS_PER_CPU } else { 1 };
    if let Some(n) = req.threads.filter(|&n| n > allowed.len() * per_cpu) {
        let what = crate::units::plural(allowed.len(), "CPU");
        let why = if places {
            format!("{n} threads but {what} may be used, {per_cpu} threads a CPU at most")
        } else {
            format!("{n} threads but only {what} may be used")
        };
        return Err(Error::input(Input::Threads, n.to_string(), why));
    }
    let domains = Domains::new(topo, &allowed);
    let (input, value) = req.spec.input();
    let fault = |f: Fault| f.into_error(input, &value);
    let cpus = match &req.spec {
        // Unbound threads start where the default would put them.
        Spec::Default | Spec::Unpinned => {
            // More threads than cores: go on to the SMT siblings, as the
            // default promises one thread per core only while cores last.
            let smt = req.smt || req.threads.is_some_and(|n| n > domains.cores.len());
            let n = req.threads.map_or(String::new(), |n| n.to_string());
            strategy::resolve(&domains, Strategy::Spread, req.threads, smt)
                .map_err(|f| Fault::from(f.message).into_error(Input::Threads, &n))?
        }
        Spec::Cpus(list) => take_threads(
            cpu_list(topo, &allowed, &list.value).map_err(|m| fault(m.into()))?,
            req.threads,
        )
        .map_err(|m| fault(m.into()))?,
        Spec::Places { places, bind } => {
            omp::resolve(topo, &domains, &places.value, *bind, req.threads, req.smt)
                .map_err(fault)?
        }
        Spec::Likwid(expr) => take_threads(
            likwid::resolve(&domains, &expr.value).map_err(|m| fault(m.into()))?,
            req.threads,
        )
        .map_err(|m| fault(m.into()))?,
        // Spread means one thing however it is asked for: the default's
        // cores first, then their siblings.
        Spec::Strategy(Strategy::Spread) => {
            let smt = req.smt || req.threads.is_some_and(|n| n > domains.cores.len());
            strategy::resolve(&domains, Strategy::Spread, req.threads, smt).map_err(fault)?
        }
        Spec::Strategy(s) => {
            strategy::resolve(&domains, *s, req.threads, req.smt).map_err(fault)?
        }
        Spec::Gomp(list) => runtime::gomp(&list.value, req.threads),
        Spec::Kmp(kmp) => runtime::kmp(topo, &domains, &kmp.value, req.threads).map_err(fault)?,
    };
    check(topo, &allowed, &cpus, places).map_err(|m| fault(m.into()))?;
    Ok(cpus)
}

/// The most threads OpenMP places may stack on one CPU: a place shared
/// past that measures the scheduler, not the memory.
pub const MAX_THREADS_PER_CPU: usize = 8;

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

/// The invariants every placement keeps, whatever produced it; only
/// OpenMP's shared places (`shared`) run two threads on one CPU.
fn check(
    topo: &Topology,
    allowed: &IdSet,
    cpus: &[usize],
    shared: bool,
) -> std::result::Result<(), String> {
    let mut seen = HashSet::new();
    for &cpu in cpus {
        if topo.cpu(cpu).is_none() {
            return Err(format!("CPU {cpu} does not exist or is offline"));
        }
        if !allowed.contains(cpu) {
            return Err(format!("CPU {cpu} is outside the allowed set {allowed}"));
        }
        if !seen.insert(cpu) && !shared {
            return Err(format!("CPU {cpu} would run two threads"));
        }
    }
    if cpus.is_empty() {
        return Err("the placement selects no CPU".into());
    }
    Ok(())
}

/// Parsed physical ids, each existing, allowed and listed once.
pub fn cpu_list(
    topo: &Topology,
    allowed: &IdSet,
    cpus: &[usize],
) -> std::result::Result<Vec<usize>, String> {
    let mut seen = HashSet::new();
    for &cpu in cpus {
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
    Ok(cpus.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_uses_allowed_cpus_once_each() {
        let (_dir, topo) = crate::topology::fixture::machine("xeon-e5-2680v3-2s");
        let request = Request {
            spec: Spec::Default,
            threads: None,
            smt: false,
            cpu_nodes: None,
        };
        let cpus = resolve(&topo, &request).unwrap();
        // One thread per core: 24 of the 48 hardware threads.
        assert_eq!(cpus.len(), 24);
        assert_eq!(
            cpus.len(),
            Domains::new(&topo, &topo.allowed_cpus).cores.len()
        );
        assert!(cpus.iter().all(|&c| topo.allowed_cpus.contains(c)));
        // Two threads spread: one per socket.
        let two = resolve(
            &topo,
            &Request {
                threads: Some(2),
                ..request
            },
        )
        .unwrap();
        let socket = |c: usize| topo.cpu(c).map(|c| c.package);
        assert_ne!(socket(two[0]), socket(two[1]), "{two:?}");
    }
}
