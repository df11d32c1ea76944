//! The node's topology, read once from sysfs and procfs under a root path.
//!
//! Everything membw knows about the machine comes from here: logical CPUs,
//! cores and SMT siblings, packages, NUMA nodes and their distances, caches
//! and which CPUs share them, the CPUs and memory nodes this process may use,
//! memory limits and hugepage settings. No other module reads `/sys` or
//! `/proc`. The root is a parameter so that the same code reads fixture trees
//! (`tests/fixtures/...`) describing machines we do not have.
//!
//! A file that is missing or unreadable gives `None` ("unknown"), never a
//! panic; only a machine with no readable CPU at all is an error.

pub mod arm;
mod capture;
mod cgroup;
pub mod clock;
pub mod cpulist;
pub mod dimms;
pub mod edac;
mod files;
pub mod fixture;
pub mod kernel_log;
mod machine_spec;
pub mod pci;
pub mod power;
pub mod smbios;
mod sysfs;
pub mod tiers;
pub mod weights;

pub use cgroup::cpu_throttled;
pub use files::{MAX_FILE_BYTES, read_bounded};
use sysfs::NO_CPU;

use crate::units::Bytes;
use cpulist::IdSet;
use serde::Serialize;
use std::path::PathBuf;

/// One logical CPU (hardware thread).
#[derive(Debug, Clone, Serialize)]
pub struct Cpu {
    pub id: usize,
    /// Physical package (socket) id; 0 when the kernel does not say.
    pub package: usize,
    pub die: usize,
    /// Core id as the kernel numbers it within its package.
    pub core: usize,
    /// NUMA node holding this CPU (0 on a machine without NUMA information).
    pub node: usize,
    /// Hardware threads sharing this CPU's core, itself included.
    pub siblings: IdSet,
}

/// A NUMA node: CPUs (possibly none, as for HBM or CXL memory), memory, distances.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    pub id: usize,
    pub cpus: IdSet,
    pub mem_total: Option<Bytes>,
    pub mem_free: Option<Bytes>,
    /// Distance to every node, in the order of [`Topology::nodes`].
    pub distances: Vec<u32>,
    /// Explicit huge page pools on this node, by page size.
    pub hugepages: Vec<tiers::HugePool>,
    /// Firmware-reported bandwidth and latency (HMAT), where exposed.
    pub hmat: Option<tiers::Hmat>,
    pub memory_side_caches: Vec<tiers::MemorySideCache>,
}

impl Node {
    /// `cpu+memory`, or `memory` for a CPU-less node (HBM, CXL, PMem).
    pub fn kind(&self) -> &'static str {
        if self.cpus.is_empty() {
            "memory"
        } else {
            "cpu+memory"
        }
    }

    /// A node that reports no memory at all (CPUs only); unknown is not.
    pub fn memoryless(&self) -> bool {
        self.mem_total == Some(Bytes(0))
    }

    /// The pool of `page_kib` pages, if this node has one.
    pub fn pool(&self, page_kib: u64) -> Option<&tiers::HugePool> {
        self.hugepages.iter().find(|p| p.page_kib == page_kib)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    Data,
    Instruction,
    Unified,
}

/// Why the caches serving some CPUs add up to no known size: sysfs lists
/// none for them (some VMs and Arm boards), or one whose size it does not
/// give. A rule over the caches cannot be judged then, either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum UnknownCaches {
    NoneListed,
    SizeUnknown { level: u8, kind: CacheKind },
}

impl CacheKind {
    /// A level's name, as lscpu and sysfs readers write it: `L1d`, `L1i`, `L2`.
    pub fn level_name(self, level: u8) -> String {
        let suffix = match self {
            CacheKind::Data => "d",
            CacheKind::Instruction => "i",
            CacheKind::Unified => "",
        };
        format!("L{level}{suffix}")
    }
}

impl std::fmt::Display for UnknownCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnknownCaches::NoneListed => f.write_str("sysfs lists no cache serving these CPUs"),
            UnknownCaches::SizeUnknown { level, kind } => write!(
                f,
                "sysfs gives no size for an {} cache serving these CPUs",
                kind.level_name(*level)
            ),
        }
    }
}

/// One cache instance and the CPUs that share it.
#[derive(Debug, Clone, Serialize)]
pub struct Cache {
    pub level: u8,
    pub kind: CacheKind,
    pub size: Option<Bytes>,
    pub line_size: Option<u32>,
    pub cpus: IdSet,
}

/// Memory totals and the limits an allocation must respect.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MemoryInfo {
    pub total: Option<Bytes>,
    pub available: Option<Bytes>,
    /// Swap configured (`SwapTotal`): site checks want none on compute
    /// nodes, where paging would be taken for slow memory.
    pub swap_total: Option<Bytes>,
    /// The tightest `memory.max` (or v1 `memory.limit_in_bytes`) on our cgroup path.
    pub cgroup_limit: Option<Bytes>,
    pub cgroup_usage: Option<Bytes>,
    pub thp_mode: Option<String>,
    pub hugepage_size: Option<Bytes>,
    pub hugepages_total: Option<u64>,
    pub hugepages_free: Option<u64>,
    /// The huge page sizes this kernel and CPU support (KiB), from
    /// `/sys/kernel/mm/hugepages`, with the system-wide pools.
    pub huge_pools: Vec<tiers::HugePool>,
    /// Weighted-interleave weights (Linux 6.9+); `None` on older kernels.
    pub weighted_interleave: Option<tiers::WeightedInterleave>,
}

impl MemoryInfo {
    /// What a new allocation may use: MemAvailable, lowered to the room left
    /// under the cgroup limit. `None` when neither is known.
    pub fn allocatable(&self) -> Option<Bytes> {
        let cgroup_room = self
            .cgroup_limit
            .map(|l| Bytes(l.0.saturating_sub(self.cgroup_usage.map_or(0, |u| u.0))));
        match (self.available, cgroup_room) {
            (Some(a), Some(c)) => Some(a.min(c)),
            (a, c) => a.or(c),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CpuInfo {
    pub vendor: Option<String>,
    pub model_name: Option<String>,
    pub family: Option<u32>,
    pub model: Option<u32>,
    /// aarch64: `CPU implementer` and `CPU part` (e.g. 0x41, 0xd4f).
    pub implementer: Option<String>,
    pub part: Option<String>,
    pub flags: Vec<String>,
    /// The DMI system vendor (`Amazon EC2`, ...): tells apart chips built
    /// on the same Arm core.
    pub system_vendor: Option<String>,
}

/// The variable naming a captured tree whose caches the live topology takes
/// (a test hook: the suite runs as on another host's caches).
pub const CACHES_FROM: &str = "MEMBW_CACHES_FROM";

/// Everything membw knows about the machine.
#[derive(Debug, Clone, Serialize)]
pub struct Topology {
    /// Root the files were read from (`/` on a live machine).
    pub root: PathBuf,
    /// Online logical CPUs, by id.
    pub cpus: Vec<Cpu>,
    /// NUMA nodes, by id. One synthetic node when the kernel reports none.
    pub nodes: Vec<Node>,
    /// False when `/sys/devices/system/node` was absent and node 0 was made up.
    pub numa_reported: bool,
    pub caches: Vec<Cache>,
    /// CPUs this process may run on (its affinity mask), within the online ones.
    pub allowed_cpus: IdSet,
    /// Memory nodes the cpuset lets this process allocate from.
    pub allowed_mems: IdSet,
    pub memory: MemoryInfo,
    pub cpu_info: CpuInfo,
    /// Populated DIMMs from SMBIOS (empty unless readable, i.e. as root).
    pub memory_devices: Vec<smbios::MemoryDevice>,
    /// Empty DIMM slots from SMBIOS, with their channels where named.
    pub empty_memory_slots: Vec<smbios::EmptySlot>,
    /// SMBIOS entries that could not be read or parsed, and values of
    /// DIMMs not believed (a speed or width no memory has).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory_device_unknown: Vec<crate::untrusted::Unknown>,
    /// Corrected and uncorrected memory errors since boot (EDAC).
    pub memory_errors: edac::MemoryErrors,
    /// NVIDIA GPUs on the PCI bus (sysfs; no driver needed).
    pub gpus: Vec<pci::PciGpu>,
    /// cpufreq's governors and turbo: how the CPUs' clocks are set.
    pub power: power::Power,
    /// Contents no real kernel writes (a CPU in two nodes, an asymmetric
    /// distance matrix, ...), each naming its file. The values are used as
    /// read; these say why results may look odd.
    pub warnings: Vec<String>,
    /// The tree the caches were taken from, when [`CACHES_FROM`] named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caches_from: Option<std::path::PathBuf>,
    /// Position in `cpus` of each CPU id (`NO_CPU` for ids not online).
    #[serde(skip)]
    cpu_index: Vec<usize>,
}

impl Topology {
    pub fn cpu(&self, id: usize) -> Option<&Cpu> {
        match self.cpu_index.get(id) {
            Some(&i) if i != NO_CPU => self.cpus.get(i),
            _ => None,
        }
    }

    pub fn node(&self, id: usize) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Node `id`, or a message naming the nodes this machine has.
    pub fn existing_node(&self, id: usize) -> Result<&Node, String> {
        self.node(id).ok_or_else(|| {
            let ids: IdSet = self.nodes.iter().map(|n| n.id).collect();
            format!("node {id} does not exist (nodes: {ids})")
        })
    }

    pub fn online_cpus(&self) -> IdSet {
        self.cpus.iter().map(|c| c.id).collect()
    }

    /// Physical packages (sockets) in id order.
    pub fn packages(&self) -> Vec<usize> {
        let set: IdSet = self.cpus.iter().map(|c| c.package).collect();
        set.ids().to_vec()
    }

    /// Physical cores, each as its set of hardware threads, ordered by first CPU.
    pub fn cores(&self) -> Vec<IdSet> {
        let mut seen: Vec<IdSet> = Vec::new();
        for cpu in &self.cpus {
            if !seen.contains(&cpu.siblings) {
                seen.push(cpu.siblings.clone());
            }
        }
        seen.sort_by_key(|s| s.first());
        seen
    }

    /// Hardware threads per core (the largest sibling set seen).
    pub fn threads_per_core(&self) -> usize {
        self.cpus
            .iter()
            .map(|c| c.siblings.len())
            .max()
            .unwrap_or(1)
    }

    /// The caches that serve any of `cpus`.
    pub fn caches_serving<'a>(&'a self, cpus: &'a IdSet) -> impl Iterator<Item = &'a Cache> + 'a {
        self.caches.iter().filter(move |c| c.cpus.intersects(cpus))
    }

    /// The size of every cache instance serving `cpus`, summed (what lscpu
    /// calls "sum of all"), where each is known: what STREAM's rule is
    /// judged against.
    pub fn known_cache_sum(&self, cpus: &IdSet) -> Result<Bytes, UnknownCaches> {
        let mut sum = 0u64;
        let mut any = false;
        for c in self.caches_serving(cpus) {
            let Some(size) = c.size else {
                return Err(UnknownCaches::SizeUnknown {
                    level: c.level,
                    kind: c.kind,
                });
            };
            sum = sum.saturating_add(size.0);
            any = true;
        }
        if any {
            Ok(Bytes(sum))
        } else {
            Err(UnknownCaches::NoneListed)
        }
    }

    /// Highest cache level present.
    /// Cache capacity per thread at each level (`L1d`, `L2`, `L3`) for a
    /// team on `cpus`: what each thread's share of the caches is.
    pub fn cache_per_thread(&self, cpus: &[usize]) -> std::collections::BTreeMap<String, u64> {
        let used: IdSet = cpus.iter().copied().collect();
        let mut out = std::collections::BTreeMap::new();
        for level in 1..=self.last_level().unwrap_or(0) {
            let total: u64 = self
                .caches_serving(&used)
                .filter(|c| c.level == level && c.kind != CacheKind::Instruction)
                .filter_map(|c| c.size)
                .map(|b| b.0)
                .sum();
            if total > 0 {
                let name = if level == 1 {
                    "L1d".to_string()
                } else {
                    format!("L{level}")
                };
                out.insert(name, total / cpus.len().max(1) as u64);
            }
        }
        out
    }

    pub fn last_level(&self) -> Option<u8> {
        self.caches.iter().map(|c| c.level).max()
    }

    /// Total last-level cache serving `cpus`.
    pub fn llc_sum(&self, cpus: &IdSet) -> Bytes {
        let level = self.last_level();
        Bytes(
            self.caches_serving(cpus)
                .filter(|c| Some(c.level) == level)
                .filter_map(|c| c.size)
                .map(|b| b.0)
                .sum(),
        )
    }

    /// The last-level cache domains (e.g. AMD CCXs), each as its CPU set.
    pub fn llc_domains(&self) -> Vec<IdSet> {
        let level = self.last_level();
        let mut doms: Vec<IdSet> = self
            .caches
            .iter()
            .filter(|c| Some(c.level) == level && c.kind != CacheKind::Instruction)
            .map(|c| c.cpus.clone())
            .collect();
        doms.sort_by_key(|s| s.first());
        doms
    }

    /// Distance between two nodes, when both are known.
    pub fn distance(&self, from: usize, to: usize) -> Option<u32> {
        let to_idx = self.nodes.iter().position(|n| n.id == to)?;
        self.node(from)?.distances.get(to_idx).copied()
    }

    /// True when the CPU model reports an x86 SIMD flag such as `avx512f`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.cpu_info.flags.iter().any(|f| f == flag)
    }
}

#[cfg(test)]
mod tests {
    use super::sysfs::*;
    use super::*;

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(cache_size("32K"), Some(Bytes(32 * 1024)));
        assert_eq!(cache_size("16M"), Some(Bytes(16 << 20)));
        assert_eq!(cache_size("garbage"), None);
    }

    #[test]
    fn meminfo_values_parse() {
        assert_eq!(meminfo_kib("   1024 kB"), Some(Bytes(1 << 20)));
        assert_eq!(meminfo_kib(" 7"), Some(Bytes(7)));
        assert_eq!(meminfo_kib("x kB"), None);
    }

    #[test]
    fn live_machine_reads() {
        let t = Topology::live().expect("this machine has CPUs");
        assert!(!t.cpus.is_empty());
        assert!(!t.allowed_cpus.is_empty());
        assert!(t.allowed_cpus.ids().iter().all(|&c| t.cpu(c).is_some()));
        assert_eq!(
            t.nodes.iter().map(|n| n.cpus.len()).sum::<usize>(),
            t.cpus.len()
        );
    }
}
