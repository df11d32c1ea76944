//! `membw sweep`: the cross product of thread counts, placements, memory
//! policies, store modes and working-set sizes (or the NUMA cpu × memory
//! matrix), each point measured `repeat` times with fresh arrays and
//! appended to a JSON Lines file as soon as it completes.

use super::Job;
use crate::error::{Error, Input, Result};
use crate::memory::policy as mempolicy;
use crate::memory::written::{ArrayPolicy, Nodes, PolicySpec};
use crate::placement::identity::PlacementId;
use crate::placement::{self, Spec, Strategy};
use crate::plan::{self, Measure, Settings, StoresRequest};
use crate::results::{NumaCell, Point};
use crate::topology::Topology;
use crate::topology::cpulist::IdSet;

/// Which NUMA-matrix cells to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumaMode {
    Single,
    All,
    Both,
}

/// The axes of a sweep, as the user gave them.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    /// `None` = the placement's own thread count.
    pub threads: Vec<Option<usize>>,
    /// Each placement; a point's label is its typed identity.
    pub placements: Vec<Spec>,
    pub smt: bool,
    /// Memory policies: as the user wrote each (the point's label), resolved.
    pub mems: Vec<(PolicySpec, mempolicy::MemPolicy)>,
    pub stores: Vec<StoresRequest>,
    /// Page sizes, each a point (`--hugepages thp,2M`).
    pub hugepages: Vec<crate::memory::Hugepages>,
    /// Instruction sets, each a point (`--isa avx2,avx512`; `None`: the
    /// widest): other code, never pooled.
    pub isas: Vec<Option<crate::kernels::Isa>>,
    /// STREAM's OFFSETs in elements, each a point (`--offset 0,1840`):
    /// another layout of the arrays in cache sets and pages, never pooled.
    pub offsets: Vec<usize>,
    /// Where a GPU's arrays live, each a point (`--gpu-memory
    /// device,managed`): another memory, never pooled.
    pub gpu_memories: Vec<crate::memory::gpu_memory::GpuMemory>,
    /// Working set per thread in bytes (all arrays); empty = fixed size.
    pub sizes: Vec<u64>,
    pub numa_matrix: Option<NumaMode>,
    /// Every point's threads only on CPUs of these NUMA nodes
    /// (`--cpunode`, numactl's `--cpunodebind`).
    pub cpu_nodes: Option<IdSet>,
    /// Fixed for the whole sweep; its elements apply when there is no size
    /// axis (`None` = STREAM's rule for every CPU the points use, the same
    /// at every point).
    pub measure: Measure,
}

/// One placement × memory policy of a sweep, before sizes and store modes:
/// the placement, the policy as written and resolved, the cell of a NUMA
/// matrix.
type Case = (
    placement::Request,
    (PolicySpec, mempolicy::MemPolicy),
    Option<NumaCell>,
);

/// Expands the axes into jobs, resolving and checking every point before
/// anything runs, so a bad combination fails at once, not after an hour.
pub fn expand(topo: &Topology, spec: &SweepSpec, prepare: &plan::Prepare) -> Result<Vec<Job>> {
    let cases = match spec.numa_matrix {
        Some(mode) => numa_cases(topo, mode),
        None => axis_cases(spec),
    };
    // STREAM's rule for every CPU the points use (what `run` sizes for its
    // own CPUs; `--cpunode 0` is one node's caches, not the machine's):
    // the same at every point. A device sizes its arrays from its own
    // memory, as its backend's plan does.
    let host_elements = (spec.measure.elements.is_none())
        .then(|| crate::memory::default_elements(topo, &cpus_used(topo, &cases)));
    let sizes: Vec<Option<u64>> = if spec.sizes.is_empty() || spec.numa_matrix.is_some() {
        vec![None]
    } else {
        spec.sizes.iter().map(|&s| Some(s)).collect()
    };
    let mut jobs = Vec::new();
    for (request, (mem_written, mem), numa) in cases {
        let settings_axes = (spec.stores.iter())
            .flat_map(|s| spec.hugepages.iter().map(move |h| (s, h)))
            .flat_map(|(s, h)| spec.isas.iter().map(move |i| (s, h, i)))
            .flat_map(|(s, h, i)| spec.offsets.iter().map(move |o| (s, h, i, o)))
            .flat_map(|(s, h, i, o)| spec.gpu_memories.iter().map(move |g| (s, h, i, o, g)));
        for (&stores, &pages, &isa, &offset, &gpu_memory) in settings_axes {
            for &size in &sizes {
                let settings = Settings {
                    measure: Measure {
                        hugepages: pages,
                        isa,
                        offset,
                        gpu_memory,
                        ..spec.measure.clone()
                    },
                    working_set: size,
                    host_elements,
                    ..Settings::new(&spec.measure, request.clone(), stores, mem.clone())
                };
                let plan = prepare(&settings)?.plan;
                let placement = PlacementId::of(&request);
                let point = Point::new(placement, &mem_written, stores, &plan, numa);
                let label = point.label()
                    + &size.map_or(String::new(), |ws| {
                        format!(" · {}/thread", crate::units::Bytes(ws))
                    });
                jobs.push(Job {
                    point,
                    plan,
                    label,
                    by: super::By::Engine,
                });
            }
        }
    }
    Ok(jobs)
}

/// Every CPU some case's threads run on, ascending; all allowed CPUs when
/// no case resolves (the first bad one is refused when it is planned).
fn cpus_used(topo: &Topology, cases: &[Case]) -> Vec<usize> {
    let used: std::collections::BTreeSet<usize> = cases
        .iter()
        .filter_map(|(request, ..)| placement::resolve(topo, request).ok())
        .flatten()
        .collect();
    if used.is_empty() {
        topo.allowed_cpus.ids().to_vec()
    } else {
        used.into_iter().collect()
    }
}

/// The NUMA matrix's cases: from each CPU node (one thread, all cores or
/// both) to each memory node.
fn numa_cases(topo: &Topology, mode: NumaMode) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    let cpu_nodes: Vec<usize> = topo
        .nodes
        .iter()
        .filter(|n| n.cpus.intersects(&topo.allowed_cpus))
        .map(|n| n.id)
        .collect();
    let modes: &[bool] = match mode {
        NumaMode::Single => &[false],
        NumaMode::All => &[true],
        NumaMode::Both => &[false, true],
    };
    for &all_cores in modes {
        for &cn in &cpu_nodes {
            for &mn in topo.allowed_mems.ids() {
                let request = placement::Request {
                    spec: Spec::Strategy(if all_cores {
                        Strategy::Spread
                    } else {
                        Strategy::Compact
                    }),
                    threads: if all_cores { None } else { Some(1) },
                    smt: false,
                    cpu_nodes: Some(IdSet::new(vec![cn])),
                };
                let node = IdSet::new(vec![mn]);
                let bind = mempolicy::MemPolicy::uniform(mempolicy::Policy::Bind(node.clone()));
                let written = PolicySpec::uniform(ArrayPolicy::Bind(Nodes::Listed(node)));
                cases.push((
                    request,
                    (written, bind),
                    Some(NumaCell {
                        cpu_node: cn,
                        mem_node: mn,
                        all_cores,
                    }),
                ));
            }
        }
    }
    cases
}

/// The product of the placement, thread and memory-policy axes.
fn axis_cases(spec: &SweepSpec) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    for p in &spec.placements {
        for &threads in &spec.threads {
            for mem in &spec.mems {
                let request = placement::Request {
                    spec: p.clone(),
                    threads,
                    smt: spec.smt,
                    cpu_nodes: spec.cpu_nodes.clone(),
                };
                cases.push((request, mem.clone(), None));
            }
        }
    }
    cases
}

/// Parses `--sizes`: `16KiB..4GiB` (powers of two from the first to the
/// last) or a list `1MiB,64MiB`.
pub fn parse_sizes(text: &str) -> std::result::Result<Vec<u64>, String> {
    if let Some((a, b)) = text.split_once("..") {
        let lo = crate::units::parse_bytes(a)?.0;
        let hi = crate::units::parse_bytes(b)?.0;
        if lo == 0 || hi < lo {
            return Err(format!(
                "'{text}': the range must run upwards from a positive size"
            ));
        }
        let mut v = Vec::new();
        let mut s = lo;
        while s <= hi {
            v.push(s);
            s = s.saturating_mul(2);
        }
        return Ok(v);
    }
    text.split(',')
        .map(|t| crate::units::parse_bytes(t).map(|b| b.0))
        .collect()
}

/// Parses a thread-count axis: `1-12`, `1,2,4,8`, `1-16:2`, or `cores`
/// (1 to the number of allowed cores).
pub fn parse_threads(text: &str, topo: &Topology) -> Result<Vec<Option<usize>>> {
    if text.trim() == "cores" {
        let n = placement::Domains::new(topo, &topo.allowed_cpus)
            .cores
            .len();
        return Ok((1..=n).map(Some).collect());
    }
    let ids = crate::topology::cpulist::parse_list(text)
        .map_err(|e| Error::input(Input::Threads, text, e.to_string()))?;
    if ids.is_empty() || ids.contains(&0) {
        return Err(Error::input(
            Input::Threads,
            text,
            "thread counts start at 1",
        ));
    }
    // Named against the range as typed, not the first count that fails.
    let allowed = topo.allowed_cpus.len();
    let over: Vec<usize> = ids.iter().copied().filter(|&n| n > allowed).collect();
    if let (Some(first), Some(last)) = (over.first(), over.last()) {
        let counts = if first == last {
            format!("{first} threads")
        } else {
            format!("{} of its counts ({first} to {last} threads)", over.len())
        };
        return Err(Error::input(
            Input::Threads,
            text,
            format!(
                "{counts} exceed the {allowed} CPUs that may be used; --threads 1-{allowed} or cores"
            ),
        ));
    }
    Ok(ids.into_iter().map(Some).collect())
}

/// What a sweep measures at each point besides membw's kernels (`--exec`).
#[derive(Debug, Clone, PartialEq)]
pub enum Program {
    /// membw's own kernels, as expanded.
    Membw,
    /// Another program, by label, with its command line.
    Other { label: String, argv: Vec<String> },
}

impl Program {
    pub fn label(&self) -> Option<&str> {
        match self {
            Program::Membw => None,
            Program::Other { label, .. } => Some(label),
        }
    }
}

/// A program's measurement source, by label.
pub type ProgramSource = (String, Box<dyn super::Source>);

/// The sweep's jobs for every program: membw's own as expanded, each other
/// program once at every placement and policy point (its own sizes and
/// store instructions are its business), with the source that measures it.
/// With no program, the jobs are `base`.
pub fn with_programs(
    base: Vec<Job>,
    programs: Vec<Program>,
    timeout: std::time::Duration,
    keep: &std::collections::BTreeSet<String>,
) -> (Vec<Job>, Vec<ProgramSource>) {
    if programs.is_empty() {
        return (base, Vec::new());
    }
    let mut jobs = Vec::new();
    let mut sources: Vec<ProgramSource> = Vec::new();
    for program in programs {
        let (label, argv) = match program {
            Program::Membw => {
                jobs.extend(base.iter().map(|j| Job {
                    point: j.point.clone(),
                    plan: j.plan.clone(),
                    label: j.label.clone(),
                    by: super::By::Engine,
                }));
                continue;
            }
            Program::Other { label, argv } => (label, argv),
        };
        let mut seen = std::collections::HashSet::new();
        for j in &base {
            let mut point = j.point.clone();
            point.target = Some(crate::results::targets::Target::Program {
                label: Some(label.clone()),
            });
            point.elements = 0;
            point.ntimes = 0;
            point.working_set_per_thread = 0;
            point.stores = crate::plan::StoresRequest::Auto;
            if seen.insert(point.key()) {
                jobs.push(Job {
                    label: format!("{label} · {}", point.label()),
                    point,
                    plan: j.plan.clone(),
                    by: super::By::Program(sources.len()),
                });
            }
        }
        sources.push((
            label,
            Box::new(super::program_source::ExecSource {
                argv,
                timeout,
                keep: keep.clone(),
                show_output: false,
            }),
        ));
    }
    (jobs, sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_log_spaced() {
        assert_eq!(
            parse_sizes("16KiB..128KiB").unwrap(),
            vec![16384, 32768, 65536, 131072]
        );
        assert_eq!(parse_sizes("1MiB,3MiB").unwrap(), vec![1 << 20, 3 << 20]);
        assert!(parse_sizes("4GiB..1GiB").is_err());
        assert!(parse_sizes("16..32").is_err());
    }

    #[test]
    fn thread_axes_parse() {
        // 2 sockets × 12 cores × 2 hardware threads.
        let (_dir, t) = crate::topology::fixture::machine("xeon-e5-2680v3-2s");
        assert_eq!(
            parse_threads("1-3", &t).unwrap(),
            vec![Some(1), Some(2), Some(3)]
        );
        assert_eq!(parse_threads("1,8", &t).unwrap(), vec![Some(1), Some(8)]);
        let cores = parse_threads("cores", &t).unwrap();
        assert_eq!(cores, (1..=24).map(Some).collect::<Vec<_>>());
        assert!(parse_threads("0-2", &t).is_err());
        assert!(parse_threads("x", &t).is_err());
    }
}
