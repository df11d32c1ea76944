//! Reading the topology model from sysfs and procfs under a root path:
//! CPUs and their packages, cores and siblings, NUMA nodes and distances,
//! caches, memory limits (cgroup included) and /proc/cpuinfo. A file that
//! is missing or unreadable gives "unknown", never a panic.

use super::files::{CPU_DIR, NODE_DIR, Reader};
use super::*;
use crate::units::Bytes;
use cpulist::{IdSet, parse_list};
use std::collections::BTreeMap;
use std::path::Path;

pub(super) const NO_CPU: usize = usize::MAX;

impl Topology {
    /// Reads the live machine; its caches from another host's tree where
    /// [`CACHES_FROM`] names one (the test legs that run the suite as on a
    /// 300 MiB L3 or a 4-CCX EPYC: the kernels still run on this CPU).
    pub fn live() -> Result<Topology, String> {
        let mut topo = Topology::read(Path::new("/"))?;
        if let Some(dir) = std::env::var_os(CACHES_FROM).filter(|d| !d.is_empty()) {
            let other = Topology::read(Path::new(&dir))
                .map_err(|e| format!("{CACHES_FROM}={}: {e}", Path::new(&dir).display()))?;
            topo.caches = other
                .caches
                .into_iter()
                .filter_map(|c| {
                    let cpus: IdSet = c
                        .cpus
                        .ids()
                        .iter()
                        .copied()
                        .filter(|&id| topo.cpu(id).is_some())
                        .collect();
                    (!cpus.is_empty()).then_some(super::Cache { cpus, ..c })
                })
                .collect();
            topo.caches_from = Some(dir.into());
        }
        Ok(topo)
    }

    /// Reads `root/sys/...` and `root/proc/...`.
    pub fn read(root: &Path) -> Result<Topology, String> {
        let r = Reader { root };
        let online = r
            .list(&format!("{CPU_DIR}/online"))
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| r.numbered_entries(CPU_DIR, "cpu"));
        if online.is_empty() {
            return Err(format!(
                "no CPUs found under {} (is it a sysfs tree?)",
                r.path(CPU_DIR).display()
            ));
        }
        let (nodes, numa_reported) = read_nodes(&r, &online);
        let node_of: BTreeMap<usize, usize> = nodes
            .iter()
            .flat_map(|n| n.cpus.ids().iter().map(move |&c| (c, n.id)))
            .collect();
        let cpus: Vec<Cpu> = online
            .iter()
            .map(|&id| read_cpu(&r, id, node_of.get(&id).copied().unwrap_or(0)))
            .collect();
        let caches = read_caches(&r, &online);
        let online_set = IdSet::new(online);
        let status = r.text("proc/self/status").unwrap_or_default();
        let status_list = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| parse_list(v.trim()).ok())
                .map(IdSet::new)
        };
        let allowed_cpus = status_list("Cpus_allowed_list:")
            .map(|s| s.intersection(&online_set))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| online_set.clone());
        let node_ids: IdSet = nodes.iter().map(|n| n.id).collect();
        let allowed_mems = status_list("Mems_allowed_list:")
            .map(|s| s.intersection(&node_ids))
            .filter(|s| !s.is_empty())
            .unwrap_or(node_ids);
        let mut cpu_index = vec![NO_CPU; cpus.iter().map(|c| c.id + 1).max().unwrap_or(0)];
        for (i, c) in cpus.iter().enumerate() {
            cpu_index[c.id] = i;
        }
        let warnings = if numa_reported {
            node_warnings(&r, &nodes, &online_set)
        } else {
            Vec::new()
        };
        let dmi = smbios::read(root);
        Ok(Topology {
            caches_from: None,
            warnings,
            cpu_index,
            root: root.to_path_buf(),
            cpus,
            nodes,
            numa_reported,
            caches,
            allowed_cpus,
            allowed_mems,
            memory: read_memory(&r),
            cpu_info: read_cpu_info(&r),
            memory_devices: dmi.populated,
            empty_memory_slots: dmi.empty,
            memory_device_unknown: dmi.unknown,
            memory_errors: edac::MemoryErrors::read(&r),
            gpus: super::pci::read(&r),
            power: super::power::Power::read(&r, online_set.ids()),
        })
    }
}

pub(super) fn read_cpu(r: &Reader, id: usize, node: usize) -> Cpu {
    let base = format!("{CPU_DIR}/cpu{id}/topology");
    let siblings = r
        .list(&format!("{base}/thread_siblings_list"))
        .or_else(|| r.list(&format!("{base}/core_cpus_list")))
        .map(IdSet::new)
        .filter(|s| s.contains(id))
        .unwrap_or_else(|| IdSet::new(vec![id]));
    // Some kernels write -1 for an unknown package; treat that as 0.
    let id_or_zero = |file: &str| -> usize {
        r.number::<i64>(&format!("{base}/{file}"))
            .and_then(|v| usize::try_from(v).ok())
            .unwrap_or(0)
    };
    Cpu {
        id,
        package: id_or_zero("physical_package_id"),
        die: id_or_zero("die_id"),
        core: r
            .number::<i64>(&format!("{base}/core_id"))
            .and_then(|v| usize::try_from(v).ok())
            .unwrap_or(id),
        node,
        siblings,
    }
}

pub(super) fn read_nodes(r: &Reader, online: &[usize]) -> (Vec<Node>, bool) {
    let ids = r
        .list(&format!("{NODE_DIR}/online"))
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| r.numbered_entries(NODE_DIR, "node"));
    let online_set = IdSet::new(online.to_vec());
    if ids.is_empty() {
        // No NUMA directory at all (NUMA disabled in the kernel): one node.
        let node = Node {
            id: 0,
            cpus: online_set,
            mem_total: None,
            mem_free: None,
            distances: vec![10],
            hugepages: super::tiers::system_pools(r),
            hmat: None,
            memory_side_caches: Vec::new(),
        };
        return (vec![node], false);
    }
    let nodes = ids
        .iter()
        .map(|&id| {
            let base = format!("{NODE_DIR}/node{id}");
            let meminfo = r.text(&format!("{base}/meminfo")).unwrap_or_default();
            let field = |name: &str| {
                meminfo.lines().find_map(|l| {
                    let rest = l.split_once(name)?.1.trim_start_matches(':');
                    meminfo_kib(rest)
                })
            };
            let distances: Vec<u32> = r
                .text(&format!("{base}/distance"))
                .map(|t| {
                    t.split_whitespace()
                        .filter_map(|d| d.parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            Node {
                id,
                cpus: r
                    .list(&format!("{base}/cpulist"))
                    .map(|l| IdSet::new(l).intersection(&online_set))
                    .unwrap_or_default(),
                mem_total: field("MemTotal"),
                mem_free: field("MemFree"),
                distances: if distances.len() == ids.len() {
                    distances
                } else {
                    Vec::new()
                },
                hugepages: super::tiers::huge_pools(r, id),
                hmat: super::tiers::hmat(r, id),
                memory_side_caches: super::tiers::memory_side_caches(r, id),
            }
        })
        .collect();
    (nodes, true)
}

/// What is impossible in the NUMA files: CPUs that are not online or in two
/// nodes, distance rows of the wrong length, zero or asymmetric distances,
/// a node nearer to another than to itself.
pub(super) fn node_warnings(r: &Reader, nodes: &[Node], online: &IdSet) -> Vec<String> {
    let mut warnings = Vec::new();
    let path = |id: usize, file: &str| {
        r.path(&format!("{NODE_DIR}/node{id}/{file}"))
            .display()
            .to_string()
    };
    let mut owner: BTreeMap<usize, usize> = BTreeMap::new();
    for n in nodes {
        if let Some(raw) = r.list(&format!("{NODE_DIR}/node{}/cpulist", n.id)) {
            let absent: Vec<usize> = raw
                .iter()
                .copied()
                .filter(|c| !online.contains(*c))
                .collect();
            if !absent.is_empty() {
                warnings.push(format!(
                    "{}: CPUs {} are not online CPUs",
                    path(n.id, "cpulist"),
                    cpulist::format_ranges(&absent)
                ));
            }
        }
        for &c in n.cpus.ids() {
            if let Some(other) = owner.insert(c, n.id) {
                warnings.push(format!(
                    "{}: CPU {c} is also listed in node {other}",
                    path(n.id, "cpulist")
                ));
            }
        }
        let row = r.text(&format!("{NODE_DIR}/node{}/distance", n.id));
        let entries = row.as_deref().map_or(0, |t| t.split_whitespace().count());
        if row.is_some() && entries != nodes.len() {
            warnings.push(format!(
                "{}: {entries} distances for {} nodes; distances ignored",
                path(n.id, "distance"),
                nodes.len()
            ));
        }
        if n.distances.contains(&0) {
            warnings.push(format!("{}: a distance of 0", path(n.id, "distance")));
        }
    }
    for (i, a) in nodes.iter().enumerate() {
        for (j, b) in nodes.iter().enumerate() {
            let (Some(&ab), Some(&ba), Some(&aa)) =
                (a.distances.get(j), b.distances.get(i), a.distances.get(i))
            else {
                continue;
            };
            if i < j && ab != ba {
                warnings.push(format!(
                    "{}: distance to node {} is {ab} but node {}'s back is {ba}",
                    path(a.id, "distance"),
                    b.id,
                    b.id
                ));
            }
            if i != j && ab < aa {
                warnings.push(format!(
                    "{}: node {} is nearer ({ab}) than the node itself ({aa})",
                    path(a.id, "distance"),
                    b.id
                ));
            }
        }
    }
    warnings
}

/// Parses `  1234 kB` into bytes.
pub(super) fn meminfo_kib(text: &str) -> Option<Bytes> {
    let mut parts = text.split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => Some(Bytes(value * 1024)),
        None => Some(Bytes(value)),
        Some(_) => None,
    }
}

pub(super) fn read_caches(r: &Reader, online: &[usize]) -> Vec<Cache> {
    let mut caches: Vec<Cache> = Vec::new();
    for &cpu in online {
        let dir = format!("{CPU_DIR}/cpu{cpu}/cache");
        for index in r.numbered_entries(&dir, "index") {
            let base = format!("{dir}/index{index}");
            let Some(level) = r.number::<u8>(&format!("{base}/level")) else {
                continue;
            };
            let kind = match r.text(&format!("{base}/type")).as_deref() {
                Some("Data") => CacheKind::Data,
                Some("Instruction") => CacheKind::Instruction,
                _ => CacheKind::Unified,
            };
            // Without shared_cpu_list, the cache is known to serve this CPU only.
            let cpus = r
                .list(&format!("{base}/shared_cpu_list"))
                .map(IdSet::new)
                .filter(|s| s.contains(cpu))
                .unwrap_or_else(|| IdSet::new(vec![cpu]));
            if caches
                .iter()
                .any(|c| c.level == level && c.kind == kind && c.cpus == cpus)
            {
                continue;
            }
            caches.push(Cache {
                level,
                kind,
                size: r.text(&format!("{base}/size")).and_then(|s| cache_size(&s)),
                line_size: r.number(&format!("{base}/coherency_line_size")),
                cpus,
            });
        }
    }
    caches.sort_by_key(|c| (c.level, c.kind as u8, c.cpus.first()));
    caches
}

/// Parses sysfs cache sizes such as `32K`, `1024K`, `16M` (and, as people
/// write them in a fixture's description, `0.5M`: whole bytes only).
pub(super) fn cache_size(text: &str) -> Option<Bytes> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], Bytes::KIB),
        'M' | 'm' => (&t[..t.len() - 1], Bytes::MIB),
        'G' | 'g' => (&t[..t.len() - 1], Bytes::GIB),
        _ => (t, 1),
    };
    let num = num.trim();
    if !num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let bytes = num.parse::<f64>().ok()? * mult as f64;
    (bytes.fract() == 0.0 && bytes < u64::MAX as f64).then_some(Bytes(bytes as u64))
}

pub(super) fn read_memory(r: &Reader) -> MemoryInfo {
    let meminfo = r.text("proc/meminfo").unwrap_or_default();
    let field = |name: &str| {
        meminfo.lines().find_map(|l| {
            l.strip_prefix(name)?
                .strip_prefix(':')
                .and_then(meminfo_kib)
        })
    };
    let (cgroup_limit, cgroup_usage) = super::cgroup::read_cgroup_memory(r);
    let thp_mode = r
        .text("sys/kernel/mm/transparent_hugepage/enabled")
        .and_then(|t| Some(t.split_once('[')?.1.split_once(']')?.0.to_string()));
    MemoryInfo {
        total: field("MemTotal"),
        available: field("MemAvailable"),
        swap_total: field("SwapTotal"),
        cgroup_limit,
        cgroup_usage,
        thp_mode,
        hugepage_size: field("Hugepagesize"),
        hugepages_total: field("HugePages_Total").map(|b| b.0),
        hugepages_free: field("HugePages_Free").map(|b| b.0),
        huge_pools: super::tiers::system_pools(r),
        weighted_interleave: super::tiers::weighted_interleave(r),
    }
}

pub(super) fn read_cpu_info(r: &Reader) -> CpuInfo {
    let text = r.text("proc/cpuinfo").unwrap_or_default();
    // The first processor's block describes the model.
    let block = text.split("\n\n").next().unwrap_or("");
    let field = |name: &str| {
        block.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let flags = field("flags")
        .or_else(|| field("Features"))
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let (implementer, part) = (field("CPU implementer"), field("CPU part"));
    // Arm cores print no model name: name the core from its part number.
    let arm_core = || {
        let name = arm::core_name(implementer.as_deref()?, part.as_deref()?)?;
        Some(name.to_string())
    };
    CpuInfo {
        vendor: field("vendor_id"),
        // A tree given with --sysroot is anyone's file: one line wherever shown.
        model_name: (field("model name").or_else(|| field("Model name")))
            .map(|m| crate::untrusted::printable(&m))
            .or_else(arm_core),
        family: field("cpu family").and_then(|v| v.parse().ok()),
        model: field("model").and_then(|v| v.parse().ok()),
        implementer,
        part,
        flags,
        system_vendor: r
            .text("sys/class/dmi/id/sys_vendor")
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty()),
    }
}
