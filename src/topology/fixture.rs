//! Writes sysfs/procfs trees for machines we do not have, from a compact
//! description, so topology, placement and peak logic can be tested against
//! 2-socket, 8-node, 256-CPU nodes on a 2-core VM. Also captures the
//! relevant files of a real machine into such a tree (`membw topo --capture`).
//!
//! CPU numbering follows what Linux shows on x86 servers: first thread of
//! every core (socket by socket, node by node), then the second threads in
//! the same order, so CPU `c` and `c + cores` are SMT siblings.

use super::files::write_creating;
pub use super::machine_spec::{FixtureHmat, MachineSpec};
use crate::topology::cpulist::format_ranges;
use std::io;
use std::path::Path;

/// A CPU set as sysfs writes it in `*_map`/`cpumap` files: 32-bit hex
/// words, most significant first, as many as `ncpus` needs.
pub fn cpumask(ids: &[usize], ncpus: usize) -> String {
    let mut words = vec![0u32; ncpus.div_ceil(32).max(1)];
    for &id in ids {
        words[id / 32] |= 1 << (id % 32);
    }
    words
        .iter()
        .rev()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Explicit huge pages every fixture node has reserved (all free).
pub const FIXTURE_FREE_2M_PAGES: u64 = 16;

impl MachineSpec {
    pub fn cpu_nodes(&self) -> usize {
        self.sockets * self.nodes_per_socket
    }
    pub fn cores(&self) -> usize {
        self.cpu_nodes() * self.cores_per_node
    }
    pub fn cpus(&self) -> usize {
        self.cores() * self.threads_per_core
    }
    /// CPU id of hardware thread `thread` of global core `core`.
    pub fn cpu_id(&self, core: usize, thread: usize) -> usize {
        thread * self.cores() + core
    }
    fn siblings(&self, core: usize) -> Vec<usize> {
        (0..self.threads_per_core)
            .map(|t| self.cpu_id(core, t))
            .collect()
    }
    fn cpus_of_cores(&self, cores: std::ops::Range<usize>) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.threads_per_core)
            .flat_map(|t| cores.clone().map(move |c| (c, t)))
            .map(|(c, t)| self.cpu_id(c, t))
            .collect();
        v.sort_unstable();
        v
    }

    fn distance(&self, from: usize, to: usize) -> u32 {
        let socket_of = |n: usize| {
            if n < self.cpu_nodes() {
                Some(n / self.nodes_per_socket)
            } else {
                None
            }
        };
        if from == to {
            self.distance_local
        } else if socket_of(from).is_some() && socket_of(from) == socket_of(to) {
            self.distance_same_socket
        } else {
            self.distance_remote
        }
    }

    /// A node's huge page pools, HMAT figures and memory-side cache.
    fn write_tiers(
        &self,
        w: &impl Fn(&str, &str) -> io::Result<()>,
        node: usize,
        base: &str,
    ) -> io::Result<()> {
        for (kib, pages) in [(2048, FIXTURE_FREE_2M_PAGES), (1048576, 0)] {
            let pool = format!("{base}/hugepages/hugepages-{kib}kB");
            w(&format!("{pool}/nr_hugepages"), &format!("{pages}\n"))?;
            w(&format!("{pool}/free_hugepages"), &format!("{pages}\n"))?;
        }
        let far = node >= self.cpu_nodes();
        if let Some(hmat) = &self.hmat {
            let figures = if far { hmat.far } else { hmat.near };
            let dir = format!("{base}/access0/initiators");
            let files = [
                "read_bandwidth", "write_bandwidth", "read_latency", "write_latency",
            ];
            for (file, value) in files.iter().zip(figures) {
                w(&format!("{dir}/{file}"), &format!("{value}\n"))?;
            }
            // The nearest CPU node initiates (a fixture has no symlinks).
            let initiator = if far { 0 } else { node };
            w(&format!("{dir}/node{initiator}/.initiator"), "")?;
        }
        if far && self.memory_side_cache_bytes > 0 {
            let dir = format!("{base}/memory_side_cache/index1");
            w(
                &format!("{dir}/size"),
                &format!("{}\n", self.memory_side_cache_bytes),
            )?;
            w(&format!("{dir}/line_size"), "64\n")?;
        }
        Ok(())
    }

    /// Writes the tree under `root` (which should be empty or absent).
    pub fn write(&self, root: &Path) -> io::Result<()> {
        self.check().map_err(io::Error::other)?;
        let w = |rel: &str, text: &str| -> io::Result<()> {
            write_creating(&root.join(rel), text.as_bytes())
        };
        let ncpus = self.cpus();
        let all = format!("0-{}\n", ncpus - 1);
        for f in ["online", "possible", "present"] {
            w(&format!("sys/devices/system/cpu/{f}"), &all)?;
        }
        self.write_cpus(&w, ncpus)?;
        let nodes = self.cpu_nodes() + self.memory_only_nodes;
        let node_kib = self.node_memory_gib << 20;
        if self.numa {
            self.write_nodes(&w, nodes, node_kib, ncpus)?;
        }
        for (kib, pages) in [(2048, FIXTURE_FREE_2M_PAGES), (1048576, 0)] {
            let pool = format!("sys/kernel/mm/hugepages/hugepages-{kib}kB");
            w(
                &format!("{pool}/nr_hugepages"),
                &format!("{}\n", pages * nodes as u64),
            )?;
            w(
                &format!("{pool}/free_hugepages"),
                &format!("{}\n", pages * nodes as u64),
            )?;
        }
        if !self.interleave_weights.is_empty() {
            for (node, weight) in self.interleave_weights.iter().enumerate() {
                w(
                    &format!("sys/kernel/mm/mempolicy/weighted_interleave/node{node}"),
                    &format!("{weight}\n"),
                )?;
            }
        }
        let total_kib: u64 = (0..nodes).map(|n| self.node_kib(n, node_kib)).sum();
        w(
            "proc/meminfo",
            &format!(
                "MemTotal:       {total_kib} kB\nMemFree:        {} kB\nMemAvailable:   {} kB\nHugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:       2048 kB\n",
                total_kib * 9 / 10,
                total_kib * 9 / 10
            ),
        )?;
        w(
            "proc/self/status",
            &format!(
                "Name:\tmembw\nCpus_allowed_list:\t0-{}\nMems_allowed_list:\t0-{}\n",
                ncpus - 1,
                nodes - 1
            ),
        )?;
        w("proc/self/cgroup", "0::/\n")?;
        w(
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never\n",
        )?;
        let cpuinfo = self.cpuinfo(ncpus);
        w("proc/cpuinfo", &cpuinfo)?;
        if let Some(vendor) = &self.system_vendor {
            w("sys/class/dmi/id/sys_vendor", &format!("{vendor}\n"))?;
        }
        super::pci::write_fixture(root, &self.gpus, |node| {
            let first = node * self.cores_per_node;
            format_ranges(&self.cpus_of_cores(first..first + self.cores_per_node))
        })?;
        let dimms =
            super::smbios::fixture_entries(self.sockets, self.dimms_per_socket, self.dimm_mts);
        for (rel, bytes) in dimms {
            write_creating(&root.join(rel), &bytes)?;
        }
        Ok(())
    }

    /// Each CPU's topology and caches, as Linux lays them out under
    /// /sys/devices/system/cpu.
    fn write_cpus(
        &self,
        w: &impl Fn(&str, &str) -> io::Result<()>,
        ncpus: usize,
    ) -> io::Result<()> {
        let cores_per_socket = self.nodes_per_socket * self.cores_per_node;
        for core in 0..self.cores() {
            let socket = core / cores_per_socket;
            let socket_cores = socket * cores_per_socket..(socket + 1) * cores_per_socket;
            let l3_first = core / self.cores_per_l3 * self.cores_per_l3;
            let l3_cores = l3_first..(l3_first + self.cores_per_l3).min(socket_cores.end);
            for thread in 0..self.threads_per_core {
                let cpu = self.cpu_id(core, thread);
                let base = format!("sys/devices/system/cpu/cpu{cpu}");
                let sibling_ids = self.siblings(core);
                let package_ids = self.cpus_of_cores(socket_cores.clone());
                let siblings = format_ranges(&sibling_ids) + "\n";
                let package = format_ranges(&package_ids) + "\n";
                let mask = |ids: &[usize]| cpumask(ids, ncpus) + "\n";
                w(&format!("{base}/online"), "1\n")?;
                w(
                    &format!("{base}/topology/physical_package_id"),
                    &format!("{socket}\n"),
                )?;
                w(&format!("{base}/topology/die_id"), "0\n")?;
                w(
                    &format!("{base}/topology/core_id"),
                    &format!("{}\n", core - socket_cores.start),
                )?;
                w(&format!("{base}/topology/thread_siblings_list"), &siblings)?;
                w(&format!("{base}/topology/core_cpus_list"), &siblings)?;
                w(&format!("{base}/topology/core_siblings_list"), &package)?;
                w(&format!("{base}/topology/package_cpus_list"), &package)?;
                // The masks Linux writes beside the lists (hwloc reads these).
                w(
                    &format!("{base}/topology/thread_siblings"),
                    &mask(&sibling_ids),
                )?;
                w(&format!("{base}/topology/core_cpus"), &mask(&sibling_ids))?;
                w(
                    &format!("{base}/topology/core_siblings"),
                    &mask(&package_ids),
                )?;
                w(
                    &format!("{base}/topology/package_cpus"),
                    &mask(&package_ids),
                )?;
                w(&format!("{base}/topology/die_cpus"), &mask(&package_ids))?;
                w(&format!("{base}/topology/die_cpus_list"), &package)?;
                let l3_ids = self.cpus_of_cores(l3_cores.clone());
                let l3_id = core / self.cores_per_l3;
                let caches = [
                    (1, "Data", &self.l1d, &sibling_ids, core),
                    (1, "Instruction", &self.l1i, &sibling_ids, core),
                    (2, "Unified", &self.l2, &sibling_ids, core),
                    (3, "Unified", &self.l3, &l3_ids, l3_id),
                ];
                for (i, (level, kind, size, shared, id)) in caches.iter().enumerate() {
                    let c = format!("{base}/cache/index{i}");
                    w(&format!("{c}/level"), &format!("{level}\n"))?;
                    w(&format!("{c}/type"), &format!("{kind}\n"))?;
                    w(&format!("{c}/size"), &format!("{size}\n"))?;
                    w(&format!("{c}/id"), &format!("{id}\n"))?;
                    w(&format!("{c}/coherency_line_size"), "64\n")?;
                    w(
                        &format!("{c}/shared_cpu_list"),
                        &(format_ranges(shared) + "\n"),
                    )?;
                    w(&format!("{c}/shared_cpu_map"), &mask(shared))?;
                }
            }
        }
        Ok(())
    }

    /// Each NUMA node's CPUs, distances, memory and tiers.
    /// Node `node`'s memory, KiB: a memory-only node's own size where
    /// the spec gives one, else every node's.
    fn node_kib(&self, node: usize, every: u64) -> u64 {
        match self.memory_only_gib {
            Some(gib) if node >= self.cpu_nodes() => gib << 20,
            _ => every,
        }
    }

    fn write_nodes(
        &self,
        w: &impl Fn(&str, &str) -> io::Result<()>,
        nodes: usize,
        node_kib: u64,
        ncpus: usize,
    ) -> io::Result<()> {
        let ids = format!("0-{}\n", nodes - 1);
        for f in ["online", "possible", "has_memory", "has_normal_memory"] {
            w(&format!("sys/devices/system/node/{f}"), &ids)?;
        }
        w(
            "sys/devices/system/node/has_cpu",
            &format!("0-{}\n", self.cpu_nodes() - 1),
        )?;
        for node in 0..nodes {
            let base = format!("sys/devices/system/node/node{node}");
            let cpus = if node < self.cpu_nodes() {
                let first = node * self.cores_per_node;
                self.cpus_of_cores(first..first + self.cores_per_node)
            } else {
                Vec::new()
            };
            w(&format!("{base}/cpulist"), &(format_ranges(&cpus) + "\n"))?;
            w(&format!("{base}/cpumap"), &(cpumask(&cpus, ncpus) + "\n"))?;
            let d: Vec<String> = (0..nodes)
                .map(|to| self.distance(node, to).to_string())
                .collect();
            w(&format!("{base}/distance"), &format!("{}\n", d.join(" ")))?;
            let node_kib = self.node_kib(node, node_kib);
            w(
                &format!("{base}/meminfo"),
                &format!(
                    "Node {node} MemTotal:       {node_kib} kB\nNode {node} MemFree:        {} kB\nNode {node} MemUsed:        {} kB\n",
                    node_kib * 9 / 10,
                    node_kib / 10
                ),
            )?;
            self.write_tiers(&w, node, &base)?;
        }
        Ok(())
    }

    /// /proc/cpuinfo: x86's fields, or Arm's implementer and part.
    fn cpuinfo(&self, ncpus: usize) -> String {
        let cores_per_socket = self.nodes_per_socket * self.cores_per_node;
        let mut cpuinfo = String::new();
        for cpu in 0..ncpus {
            let core = cpu % self.cores();
            if let (Some(implementer), Some(part)) = (&self.implementer, &self.part) {
                cpuinfo.push_str(&format!(
                    "processor\t: {cpu}\nBogoMIPS\t: 2000.00\nFeatures\t: {}\nCPU implementer\t: {implementer}\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: {part}\nCPU revision\t: 1\n\n",
                    self.flags
                ));
                continue;
            }
            cpuinfo.push_str(&format!(
                "processor\t: {cpu}\nvendor_id\t: {}\nmodel name\t: {}\nphysical id\t: {}\ncore id\t\t: {}\nflags\t\t: {}\n\n",
                self.vendor,
                self.model_name,
                core / cores_per_socket,
                core % cores_per_socket,
                self.flags
            ));
        }
        cpuinfo
    }
}

/// A machine from tests/fixtures, written to a temporary tree and read back:
/// unit tests that need a topology use one of these rather than the machine
/// they happen to run on. The tree lives as long as the returned directory.
#[cfg(test)]
pub(crate) fn machine(name: &str) -> (tempfile::TempDir, super::Topology) {
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}.json"));
    let text = std::fs::read_to_string(&spec).unwrap_or_else(|e| panic!("{}: {e}", spec.display()));
    let spec = MachineSpec::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    // In memory where there is room: thousands of files (see sys).
    let dir = match crate::sys::memory_backed_dir(4 << 30) {
        Some(root) => tempfile::Builder::new()
            .prefix("membw-unit")
            .tempdir_in(root),
        None => tempfile::tempdir(),
    }
    .unwrap_or_else(|e| panic!("a temporary directory: {e}"));
    spec.write(dir.path())
        .unwrap_or_else(|e| panic!("writing {name}: {e}"));
    let topo = super::Topology::read(dir.path()).unwrap_or_else(|e| panic!("reading {name}: {e}"));
    (dir, topo)
}

pub use super::capture::capture;
