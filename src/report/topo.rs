//! `membw topo`: the machine at a glance (ranges, not 256 numbers), and the
//! JSON document with the full model.

use crate::peak::Peak;
use crate::results::targets::{GpuMemoryRead, GpuReachRead};
use crate::topology::Topology;
use crate::topology::cpulist::{IdSet, format_ranges};
use crate::topology::dimms;
use crate::topology::kernel_log::GpuXids;
use crate::topology::pci::GpuVendor;
use crate::units::Bytes;
use serde::Serialize;
use std::fmt::Write;

/// Facts derived from the model, for people and tests alike.
#[derive(Debug, Clone, Serialize)]
pub struct Derived {
    pub sockets: usize,
    pub numa_nodes: usize,
    pub cores: usize,
    pub cpus: usize,
    pub threads_per_core: usize,
    pub smt: bool,
    /// Sum of every cache instance (lscpu's "sum of all"); null where a
    /// size is unknown (`cache_sum_unknown` says why).
    pub cache_sum: Option<Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_sum_unknown: Option<crate::topology::UnknownCaches>,
    /// Per level and kind: (name, instance size, instances, total).
    pub cache_levels: Vec<CacheLevel>,
    pub llc_domains: Vec<IdSet>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CacheLevel {
    pub name: String,
    pub size: Option<Bytes>,
    pub instances: usize,
    pub total: Bytes,
}

#[derive(Debug, Clone, Serialize)]
pub struct TopoReport<'a> {
    pub schema_version: u32,
    pub topology: &'a Topology,
    pub derived: Derived,
    pub peak: Option<&'a Peak>,
    /// Each node as a memory tier, with its firmware-reported figures.
    pub tiers: Vec<super::tiers::Tier>,
    /// Each GPU vendor's memory counters, as its library read them.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub gpu_memory: &'a [GpuMemoryRead],
    /// What memory each GPU reaches, as its driver says.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub gpu_reach: &'a [GpuReachRead],
    /// The kernel log's memory and bus XIDs, where NVIDIA GPUs are on the bus.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xids: Option<&'a GpuXids>,
}

pub fn derive(topo: &Topology) -> Derived {
    let all = topo.online_cpus();
    let mut cache_levels: Vec<CacheLevel> = Vec::new();
    for c in &topo.caches {
        let name = c.kind.level_name(c.level);
        match cache_levels.iter_mut().find(|l| l.name == name) {
            Some(l) => {
                l.instances += 1;
                l.total.0 += c.size.map_or(0, |s| s.0);
            }
            None => cache_levels.push(CacheLevel {
                name,
                size: c.size,
                instances: 1,
                total: c.size.unwrap_or_default(),
            }),
        }
    }
    let cache_sum = topo.known_cache_sum(&all);
    Derived {
        sockets: topo.packages().len(),
        numa_nodes: topo.nodes.len(),
        cores: topo.cores().len(),
        cpus: topo.cpus.len(),
        threads_per_core: topo.threads_per_core(),
        smt: topo.threads_per_core() > 1,
        cache_sum: cache_sum.ok(),
        cache_sum_unknown: cache_sum.err(),
        cache_levels,
        llc_domains: topo.llc_domains(),
    }
}

/// What `membw topo` shows: the topology, the peak, and what the CLI
/// read or looked up beside it.
#[derive(Debug, Clone, Copy)]
pub struct TopoView<'a> {
    pub topo: &'a Topology,
    pub peak: Option<&'a Peak>,
    /// Each GPU vendor's memory counters (this host's alone).
    pub gpu_memory: &'a [GpuMemoryRead],
    /// What memory each GPU reaches, as its driver says (this host's alone).
    pub gpu_reach: &'a [GpuReachRead],
    /// The kernel log's XIDs, where NVIDIA GPUs are on the bus.
    pub xids: Option<&'a GpuXids>,
    /// The `--backend` that measures each maker's GPUs, as the registry
    /// lists them (a maker absent has none yet).
    pub drivers: &'a [(GpuVendor, &'static str)],
}

impl<'a> TopoView<'a> {
    /// The topology alone: no peak, counters, log or drivers (another
    /// node's tree, tests).
    pub fn bare(topo: &'a Topology) -> TopoView<'a> {
        TopoView {
            topo,
            peak: None,
            gpu_memory: &[],
            gpu_reach: &[],
            xids: None,
            drivers: &[],
        }
    }
}

pub fn json(view: &TopoView) -> crate::error::Result<String> {
    let &TopoView {
        topo,
        peak,
        gpu_memory,
        gpu_reach,
        xids,
        ..
    } = view;
    let report = TopoReport {
        schema_version: crate::results::SCHEMA_VERSION,
        topology: topo,
        derived: derive(topo),
        peak,
        tiers: super::tiers::tiers(topo, gpu_reach),
        gpu_memory,
        gpu_reach,
        xids,
    };
    super::pretty(&report)
}

fn or_unknown(b: Option<Bytes>) -> String {
    b.map_or_else(|| "unknown".to_string(), |b| b.to_string())
}

/// The first hardware thread of every core in `cpus`, as ranges.
fn physical(topo: &Topology, cpus: &IdSet) -> String {
    let firsts: Vec<usize> = cpus
        .ids()
        .iter()
        .copied()
        .filter(|&c| {
            topo.cpu(c)
                .is_some_and(|cpu| cpu.siblings.first() == Some(c))
        })
        .collect();
    format_ranges(&firsts)
}

/// The cache levels, their sum, and where they were read from.
fn caches(o: &mut String, topo: &Topology, d: &Derived) {
    let levels: Vec<String> = d
        .cache_levels
        .iter()
        .map(|l| format!("{} {} × {}", l.name, or_unknown(l.size), l.instances))
        .collect();
    let _ = writeln!(o, "{:<11}{}", "Caches", levels.join(" · "));
    let sum = match (d.cache_sum, d.cache_sum_unknown) {
        (Some(sum), _) => sum.to_string(),
        (None, Some(why)) => format!("unknown: {why}"),
        (None, None) => "unknown".into(),
    };
    let _ = writeln!(o, "{:<11}sum of all {sum}", "");
    if let Some(dir) = &topo.caches_from {
        let _ = writeln!(
            o,
            "{:<11}taken from {} ({}): a test leg, not this host's",
            "",
            dir.display(),
            crate::topology::CACHES_FROM
        );
    }
}

pub fn text(view: &TopoView) -> String {
    let &TopoView {
        topo,
        peak,
        gpu_memory,
        gpu_reach,
        xids,
        drivers,
    } = view;
    let d = derive(topo);
    let mut o = String::new();
    let model = topo
        .cpu_info
        .model_name
        .as_deref()
        .unwrap_or("unknown CPU model");
    let simd: Vec<&str> = ["avx512f", "avx2", "fma", "sse2", "asimd", "sve"]
        .into_iter()
        .filter(|f| topo.has_flag(f))
        .collect();
    let _ = writeln!(o, "{:<11}{model}", "CPU");
    let _ = writeln!(
        o,
        "{:<11}{}",
        "SIMD",
        if simd.is_empty() {
            "unknown".to_string()
        } else {
            simd.join(" ")
        }
    );
    let _ = writeln!(
        o,
        "{:<11}{} socket{} · {} NUMA node{}{} · {} cores · {} CPUs · SMT {}",
        "Layout",
        d.sockets,
        if d.sockets == 1 { "" } else { "s" },
        d.numa_nodes,
        if d.numa_nodes == 1 { "" } else { "s" },
        if topo.numa_reported {
            ""
        } else {
            " (kernel reports no NUMA)"
        },
        d.cores,
        d.cpus,
        if d.smt {
            format!("on ({} threads per core)", d.threads_per_core)
        } else {
            "off".to_string()
        }
    );
    caches(&mut o, topo, &d);
    let _ = writeln!(
        o,
        "{:<11}CPUs {} ({} of {}) · memory nodes {}",
        "Allowed",
        topo.allowed_cpus,
        topo.allowed_cpus.len(),
        d.cpus,
        topo.allowed_mems
    );
    memory(&mut o, topo);
    if let Some(pools) = super::tiers::pools_line(topo) {
        let _ = writeln!(o, "{:<11}{pools}", "Huge pages");
    }
    let _ = writeln!(o, "{:<11}{}", "Clocks", topo.power.summary());
    let _ = writeln!(
        o,
        "{:<11}{}",
        "Interleave",
        super::tiers::weights_line(topo)
    );
    sockets(&mut o, topo);
    o.push_str(&super::tiers::text(topo, gpu_reach));
    distances(&mut o, topo);
    gpus(&mut o, topo, drivers);
    memory_counters(&mut o, gpu_memory);
    reach_lines(&mut o, topo, gpu_reach);
    if let Some(xids) = xids {
        xid_lines(&mut o, xids);
    }
    let _ = writeln!(
        o,
        "\n{:<11}{}",
        "Peak",
        peak.map_or_else(
            || format!("unknown: {}", crate::peak::unknown_reason(topo)),
            |p| {
                // The node's figure, and where it is not this process's.
                let mine = crate::peak::share::not_theirs(p, topo)
                    .map_or(String::new(), |why| format!("\n{:<11}{why}", ""));
                format!("{p}\n{:<11}source: {}{mine}", "", p.detail)
            }
        )
    );
    o
}

/// Each socket's NUMA nodes: cores, CPUs, memory and last-level-cache
/// domains, wrapped to fit 120 columns.
fn sockets(o: &mut String, topo: &Topology) {
    let llc_level = topo.last_level();
    for package in topo.packages() {
        let _ = writeln!(o, "\nSocket {package}");
        for node in &topo.nodes {
            let on_package = node
                .cpus
                .ids()
                .iter()
                .any(|&c| topo.cpu(c).is_some_and(|cpu| cpu.package == package));
            if !on_package {
                continue;
            }
            let domains: Vec<String> = topo
                .llc_domains()
                .iter()
                .filter(|dom| dom.intersects(&node.cpus))
                .map(|dom| physical(topo, &dom.intersection(&node.cpus)))
                .collect();
            let head = format!(
                "  node {:<3} cores {:<12} CPUs {:<20} {:>10}   L{} domains: ",
                node.id,
                physical(topo, &node.cpus),
                node.cpus.to_string(),
                or_unknown(node.mem_total),
                llc_level.unwrap_or(3),
            );
            o.push_str(&head);
            if domains.is_empty() {
                o.push_str("unknown");
            }
            // Wrapped to fit 120 columns, continuation lines aligned under the first.
            let indent = " ".repeat(head.chars().count());
            let budget = 120usize.saturating_sub(head.chars().count()).max(24);
            let mut width = 0;
            for (i, d) in domains.iter().enumerate() {
                if i > 0 && width + 1 + d.len() > budget {
                    o.push('\n');
                    o.push_str(&indent);
                    width = 0;
                } else if i > 0 {
                    o.push(' ');
                    width += 1;
                }
                o.push_str(d);
                width += d.len();
            }
            o.push('\n');
        }
    }
}

/// The NUMA distance table, where the kernel reports NUMA.
fn distances(o: &mut String, topo: &Topology) {
    if topo.nodes.len() > 1 || topo.numa_reported {
        let _ = writeln!(o, "\nNUMA distances");
        let _ = write!(o, "  node");
        for n in &topo.nodes {
            let _ = write!(o, "{:>4}", n.id);
        }
        o.push('\n');
        for n in &topo.nodes {
            let _ = write!(o, "  {:>4}", n.id);
            if n.distances.is_empty() {
                let _ = write!(o, "   unknown");
            }
            for d in &n.distances {
                let _ = write!(o, "{d:>4}");
            }
            o.push('\n');
        }
    }
}

/// The memory's totals and limits, and its error counters (EDAC).
fn memory(o: &mut String, topo: &Topology) {
    let m = &topo.memory;
    let _ = writeln!(
        o,
        "{:<11}{} total · {} available · swap {} · cgroup limit {} · THP {}",
        "Memory",
        or_unknown(m.total),
        or_unknown(m.available),
        match m.swap_total {
            Some(Bytes(0)) => "none".to_string(),
            swap => or_unknown(swap),
        },
        m.cgroup_limit.map_or("none".to_string(), |l| l.to_string()),
        m.thp_mode.as_deref().unwrap_or("unknown"),
    );
    let mut dimms = dimms::summary(&topo.root, &topo.memory_devices, &topo.empty_memory_slots);
    if let Some(first) = topo.memory_device_unknown.first() {
        let n = topo.memory_device_unknown.len();
        dimms.push_str(&format!(
            " · {} unknown ({first})",
            crate::units::plural(n, "value")
        ));
    }
    let _ = writeln!(o, "{:<11}{dimms}", "DIMMs");
    let _ = writeln!(o, "{:<11}{}", "ECC", topo.memory_errors.summary());
}

/// The kernel log's memory and bus XIDs, and each finding.
fn xid_lines(o: &mut String, xids: &GpuXids) {
    let _ = writeln!(o, "{:<11}{}", "XIDs", xids.summary());
    for finding in xids.findings() {
        let _ = writeln!(o, "  ✗ {finding}");
    }
}

/// The line that heads what a backend's library read (`how`: how it
/// read them), or why it could not.
fn read_by(o: &mut String, label: &str, backend: &str, not_readable: Option<&str>, how: &str) {
    let _ = match not_readable {
        Some(why) => writeln!(o, "{label:<11}{backend}: not readable here: {why}"),
        None => writeln!(o, "{label:<11}{backend}, {how}"),
    };
}

/// Each GPU's memory counters, as its vendor's library read them, with
/// what DCGM's limits make of them; or why the library could not.
fn memory_counters(o: &mut String, reads: &[GpuMemoryRead]) {
    for read in reads {
        let (backend, why) = (&read.backend, read.not_readable.as_deref());
        read_by(o, "GPU memory", backend, why, "as its library counts");
        for d in &read.devices {
            let _ = writeln!(o, "  {}  {}", d.bus_id, d.health.describe());
            for finding in d.health.findings() {
                let _ = writeln!(o, "    ✗ {finding}");
            }
        }
    }
}

/// What memory each GPU reaches, as its driver says, and which host
/// node is its own memory (a GH200's HBM node, an MI300A's); or why the
/// driver could not say.
fn reach_lines(o: &mut String, topo: &Topology, reads: &[GpuReachRead]) {
    for read in reads {
        let (backend, why) = (&read.backend, read.not_readable.as_deref());
        read_by(o, "GPU reach", backend, why, "as its driver says");
        for d in &read.devices {
            let mut facts = d.reach.words();
            if let Some(n) = d.reach.memory_node {
                let node = topo.nodes.iter().find(|x| x.id == n);
                facts.push(match node {
                    Some(x) if x.cpus.is_empty() => format!(
                        "its memory is NUMA node {n} ({}, without CPUs)",
                        or_unknown(x.mem_total)
                    ),
                    Some(x) => format!(
                        "its memory is NUMA node {n}'s ({}, shared with CPUs {})",
                        or_unknown(x.mem_total),
                        x.cpus
                    ),
                    None => {
                        format!("its memory is NUMA node {n}, which this host's topology lacks")
                    }
                });
            }
            facts.extend(d.host_fabric.as_ref().map(|l| l.words()));
            let facts = match facts.is_empty() {
                true => "nothing read".to_string(),
                false => facts.join(" · "),
            };
            let _ = writeln!(o, "  {}  {facts}", d.bus_id);
        }
    }
}

/// The GPUs on the PCI bus, whoever made them: where each is attached,
/// how its link trained (a link below its maximum is said in words), and
/// which backend measures it, or that none does yet.
fn gpus(o: &mut String, topo: &Topology, drivers: &[(GpuVendor, &'static str)]) {
    if topo.gpus.is_empty() {
        let _ = writeln!(
            o,
            "\n{:<11}none (no NVIDIA, AMD or Intel GPU on the PCI bus)",
            "GPUs"
        );
        return;
    }
    let mut makers: Vec<(&str, usize)> = Vec::new();
    for name in topo.gpus.iter().filter_map(|g| g.maker()).map(|m| m.name()) {
        match makers.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => makers.push((name, 1)),
        }
    }
    let makers: Vec<String> = makers.iter().map(|(n, c)| format!("{c} {n}")).collect();
    let _ = writeln!(o, "\n{:<11}{} on the PCI bus", "GPUs", makers.join(", "));
    for g in &topo.gpus {
        let node = g.numa_node.map_or_else(
            || "no NUMA node reported".to_string(),
            |n| format!("NUMA node {n} (CPUs {})", g.local_cpus),
        );
        let link = g.link.map_or_else(
            || "link unknown".to_string(),
            |l| {
                let now = format!("PCIe {} ({:.1} GB/s each way)", l.current, l.current.gb_s());
                match l.degraded() {
                    None => now,
                    Some(_) => format!("{now}, trained below its {}", l.max),
                }
            },
        );
        let driver = g.driver.as_deref().unwrap_or("no driver bound");
        let backend = match g.maker() {
            Some(vendor) => match drivers.iter().find(|(v, _)| *v == vendor) {
                Some((_, backend)) => format!("--backend {backend}"),
                None => format!("no membw backend for {} GPUs yet", vendor.name()),
            },
            None => String::new(),
        };
        let model = g.model().map(|m| format!(" {m}")).unwrap_or_default();
        let _ = writeln!(
            o,
            "  {}  {:04x}:{:04x}{model} · {node} · {link} · {driver} · {backend}",
            g.address, g.vendor, g.device
        );
    }
}
