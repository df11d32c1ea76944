//! Memory as current nodes have it: the huge page pools of each node, the
//! bandwidth and latency firmware reports for each memory node (ACPI HMAT,
//! as Linux exposes it under `nodeN/access0/initiators/`), memory-side
//! caches, and the system's weighted-interleave weights (Linux 6.9+).

use super::files::{NODE_DIR, Reader};
use crate::units::Bytes;
use serde::Serialize;
use std::collections::BTreeMap;

/// One node's pool of explicit huge pages of one size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HugePool {
    pub page_kib: u64,
    /// Pages reserved (`nr_hugepages`).
    pub total: u64,
    /// Reserved pages not in use (`free_hugepages`).
    pub free: u64,
}

/// What firmware (ACPI HMAT) says about a memory node seen from its best
/// initiators (`access0`): the nodes with CPUs nearest to it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hmat {
    /// The initiator nodes these figures are from.
    pub initiators: Vec<usize>,
    /// MB/s as the kernel reports them (decimal megabytes).
    pub read_bandwidth_mb_s: Option<u64>,
    pub write_bandwidth_mb_s: Option<u64>,
    /// Nanoseconds.
    pub read_latency_ns: Option<u64>,
    pub write_latency_ns: Option<u64>,
}

impl Hmat {
    /// The firmware's read bandwidth in GB/s: this tier's theoretical peak.
    pub fn read_gb_s(&self) -> Option<f64> {
        self.read_bandwidth_mb_s.map(|mb| mb as f64 / 1000.0)
    }
}

/// A memory-side cache in front of a node's memory (HBM in cache mode,
/// a DRAM cache in front of CXL).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemorySideCache {
    pub level: u32,
    pub size: Option<Bytes>,
    pub line_size: Option<u64>,
}

/// The system's weighted-interleave settings
/// (`/sys/kernel/mm/mempolicy/weighted_interleave/`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WeightedInterleave {
    /// Weight per node (1-255).
    pub weights: BTreeMap<usize, u8>,
    /// Whether the kernel derives the weights from HMAT (`auto`, 6.16+);
    /// `None` where the kernel has no such switch.
    pub auto: Option<bool>,
}

/// The directory holding the weights, relative to the root.
pub const WEIGHTS_DIR: &str = "sys/kernel/mm/mempolicy/weighted_interleave";

pub(super) fn huge_pools(r: &Reader, node: usize) -> Vec<HugePool> {
    pools_in(r, &format!("{NODE_DIR}/node{node}/hugepages"))
}

/// The system-wide pools (`/sys/kernel/mm/hugepages`): the sizes this
/// kernel and CPU support, whether or not any page is reserved.
pub(super) fn system_pools(r: &Reader) -> Vec<HugePool> {
    pools_in(r, "sys/kernel/mm/hugepages")
}

fn pools_in(r: &Reader, dir: &str) -> Vec<HugePool> {
    let mut pools: Vec<HugePool> = std::fs::read_dir(r.path(dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let kib = name.strip_prefix("hugepages-")?.strip_suffix("kB")?;
            Some(HugePool {
                page_kib: kib.parse().ok()?,
                total: r.number(&format!("{dir}/{name}/nr_hugepages")).unwrap_or(0),
                free: r
                    .number(&format!("{dir}/{name}/free_hugepages"))
                    .unwrap_or(0),
            })
        })
        .collect();
    pools.sort_by_key(|p| p.page_kib);
    pools
}

pub(super) fn hmat(r: &Reader, node: usize) -> Option<Hmat> {
    let dir = format!("{NODE_DIR}/node{node}/access0/initiators");
    let read = |f: &str| r.number::<u64>(&format!("{dir}/{f}")).filter(|&v| v > 0);
    let figures = Hmat {
        initiators: r.numbered_entries(&dir, "node"),
        read_bandwidth_mb_s: read("read_bandwidth"),
        write_bandwidth_mb_s: read("write_bandwidth"),
        read_latency_ns: read("read_latency"),
        write_latency_ns: read("write_latency"),
    };
    let any = figures.read_bandwidth_mb_s.is_some()
        || figures.write_bandwidth_mb_s.is_some()
        || figures.read_latency_ns.is_some()
        || figures.write_latency_ns.is_some();
    any.then_some(figures)
}

pub(super) fn memory_side_caches(r: &Reader, node: usize) -> Vec<MemorySideCache> {
    let dir = format!("{NODE_DIR}/node{node}/memory_side_cache");
    r.numbered_entries(&dir, "index")
        .into_iter()
        .map(|level| {
            let file = |f: &str| r.number::<u64>(&format!("{dir}/index{level}/{f}"));
            MemorySideCache {
                level: level as u32,
                size: file("size").map(Bytes),
                line_size: file("line_size"),
            }
        })
        .collect()
}

pub(super) fn weighted_interleave(r: &Reader) -> Option<WeightedInterleave> {
    if !r.path(WEIGHTS_DIR).is_dir() {
        return None;
    }
    let weights = r
        .numbered_entries(WEIGHTS_DIR, "node")
        .into_iter()
        .filter_map(|n| Some((n, r.number::<u8>(&format!("{WEIGHTS_DIR}/node{n}"))?)))
        .collect();
    // Some 6.17/6.18 kernels name the switch `__auto_type` (a C macro
    // renamed the attribute); read either.
    let auto = ["auto", "__auto_type"]
        .iter()
        .find_map(|f| r.text(&format!("{WEIGHTS_DIR}/{f}")))
        .and_then(|t| match t.as_str() {
            "true" | "1" | "Y" => Some(true),
            "false" | "0" | "N" => Some(false),
            _ => None,
        });
    Some(WeightedInterleave { weights, auto })
}
