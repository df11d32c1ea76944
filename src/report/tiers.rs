//! The memory tiers of `membw topo`: each node's kind and size, what
//! firmware (ACPI HMAT) reports for its bandwidth and latency, its
//! memory-side caches, its weighted-interleave weight and its free huge
//! pages.

use crate::results::targets::GpuReachRead;
use crate::topology::{Node, Topology};
use crate::units::Bytes;
use serde::Serialize;
use std::fmt::Write;

/// One node as a memory tier, for `topo --json` (`tiers`) and the table.
#[derive(Debug, Clone, Serialize)]
pub struct Tier {
    pub node: usize,
    /// `cpu+memory` or `memory` (CPU-less: HBM, CXL, PMem), or `gpu
    /// memory` where a GPU's driver says it is that GPU's own.
    pub kind: &'static str,
    /// The GPU whose memory it is, by PCI address, as its driver says (a
    /// GH200's HBM node, an MI300A's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    pub memory: Option<Bytes>,
    /// Firmware-reported read bandwidth from the nearest initiators, GB/s:
    /// the tier's theoretical peak.
    pub firmware_read_gb_s: Option<f64>,
    pub firmware_write_gb_s: Option<f64>,
    pub firmware_read_latency_ns: Option<u64>,
    pub firmware_write_latency_ns: Option<u64>,
    /// The initiator nodes the firmware figures are from.
    pub initiators: Vec<usize>,
    pub memory_side_cache: Option<Bytes>,
    /// The system's weighted-interleave weight for this node.
    pub interleave_weight: Option<u8>,
}

/// The node's tiers; `gpu_reach`: what the GPUs' drivers say, which names
/// a node that is a GPU's own memory.
pub fn tiers(topo: &Topology, gpu_reach: &[GpuReachRead]) -> Vec<Tier> {
    let weights = topo.memory.weighted_interleave.as_ref();
    let gpu_of = |node: usize| {
        (gpu_reach.iter().flat_map(|r| &r.devices))
            .find(|d| d.reach.memory_node == Some(node))
            .map(|d| d.bus_id.clone())
    };
    topo.nodes
        .iter()
        .map(|n: &Node| {
            let hmat = n.hmat.as_ref();
            let gpu = gpu_of(n.id);
            Tier {
                node: n.id,
                kind: match gpu {
                    Some(_) => "gpu memory",
                    None => n.kind(),
                },
                gpu,
                memory: n.mem_total,
                firmware_read_gb_s: hmat.and_then(|h| h.read_gb_s()),
                firmware_write_gb_s: hmat
                    .and_then(|h| h.write_bandwidth_mb_s)
                    .map(|mb| mb as f64 / 1000.0),
                firmware_read_latency_ns: hmat.and_then(|h| h.read_latency_ns),
                firmware_write_latency_ns: hmat.and_then(|h| h.write_latency_ns),
                initiators: hmat.map(|h| h.initiators.clone()).unwrap_or_default(),
                memory_side_cache: n
                    .memory_side_caches
                    .iter()
                    .filter_map(|c| c.size)
                    .reduce(|a, b| Bytes(a.0 + b.0)),
                interleave_weight: weights.and_then(|w| w.weights.get(&n.id).copied()),
            }
        })
        .collect()
}

/// The tier table, when there is something to say: a CPU-less node or
/// firmware figures. Empty otherwise.
pub fn text(topo: &Topology, gpu_reach: &[GpuReachRead]) -> String {
    let tiers = tiers(topo, gpu_reach);
    let interesting =
        (tiers.iter()).any(|t| t.kind != "cpu+memory" || t.firmware_read_gb_s.is_some());
    if !interesting {
        return String::new();
    }
    let any_hmat = tiers.iter().any(|t| t.firmware_read_gb_s.is_some());
    let mut o = String::from("\nMemory tiers");
    if any_hmat {
        o.push_str(" (bandwidth and latency as firmware reports them, ACPI HMAT)");
    }
    let gb = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let ns = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let _ = writeln!(
        o,
        "\n  node  kind        memory     read GB/s  write GB/s  read ns  write ns  from  cache      weight"
    );
    for t in &tiers {
        let from: Vec<String> = t.initiators.iter().map(|i| i.to_string()).collect();
        let _ = writeln!(
            o,
            "  {:<4}  {:<10}  {:>9}  {:>9}  {:>10}  {:>7}  {:>8}  {:<4}  {:<9}  {}",
            t.node,
            t.kind,
            t.memory.map_or("?".to_string(), |b| b.to_string()),
            gb(t.firmware_read_gb_s),
            gb(t.firmware_write_gb_s),
            ns(t.firmware_read_latency_ns),
            ns(t.firmware_write_latency_ns),
            if from.is_empty() {
                "-".into()
            } else {
                from.join(",")
            },
            t.memory_side_cache
                .map_or("-".to_string(), |b| b.to_string()),
            t.interleave_weight
                .map_or("-".to_string(), |w| w.to_string()),
        );
    }
    o
}

/// `Huge pages  2 MiB 16 free of 16 · 1 GiB 0 free of 0` (system pools).
pub fn pools_line(topo: &Topology) -> Option<String> {
    let pools: Vec<String> = topo
        .memory
        .huge_pools
        .iter()
        .map(|p| {
            format!(
                "{} {} free of {}",
                Bytes(p.page_kib * 1024),
                p.free,
                p.total
            )
        })
        .collect();
    (!pools.is_empty()).then(|| pools.join(" · "))
}

/// `weights 0=5,1=1 (auto)`, or why there are none.
pub fn weights_line(topo: &Topology) -> String {
    match &topo.memory.weighted_interleave {
        None => "not in this kernel (Linux 6.9+); --mem split:NODE=SHARE,... works anywhere".into(),
        Some(w) => {
            let weights: Vec<String> = w.weights.iter().map(|(n, w)| format!("{n}={w}")).collect();
            let mode = match w.auto {
                Some(true) => " (auto: derived from HMAT by the kernel)",
                Some(false) => " (set by hand)",
                None => "",
            };
            format!("weights {}{mode}", weights.join(","))
        }
    }
}
