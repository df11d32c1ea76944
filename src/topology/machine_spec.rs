//! A machine described by people in a few numbers (`membw topo --generate
//! SPEC DIR`, `tests/fixtures/*.json`), read as a user's input: every
//! missing or bad field named in one error, cache sizes in any spelling
//! membw prints or parses (`32K`, `32KiB`, `32 KiB`, `0.5M`), and what no
//! machine has refused before anything is written. docs/guide/node-bandwidth.md
//! ("A machine of your own") documents the format with a complete example.

use serde::{Deserialize, Serialize};

/// Firmware-reported figures per tier: `[read MB/s, write MB/s, read ns, write ns]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureHmat {
    pub near: [u64; 4],
    pub far: [u64; 4],
}

/// A machine in a few numbers. Deserialized from `tests/fixtures/*.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    pub model_name: String,
    #[serde(default = "default_vendor")]
    pub vendor: String,
    #[serde(default)]
    pub flags: String,
    pub sockets: usize,
    /// NUMA nodes with CPUs per socket (NPS4 = 4).
    #[serde(default = "one")]
    pub nodes_per_socket: usize,
    pub cores_per_node: usize,
    #[serde(default = "one")]
    pub threads_per_core: usize,
    /// Cores sharing one L3 (an AMD CCX: 4; a whole Intel socket: all).
    pub cores_per_l3: usize,
    pub l1d: String,
    pub l1i: String,
    pub l2: String,
    pub l3: String,
    pub distance_local: u32,
    /// Between nodes of one socket (NPS2/NPS4, sub-NUMA clustering).
    #[serde(default)]
    pub distance_same_socket: u32,
    pub distance_remote: u32,
    pub node_memory_gib: u64,
    /// False for a kernel without NUMA support: no `node/` directory at all.
    #[serde(default = "yes")]
    pub numa: bool,
    /// Extra CPU-less memory nodes (HBM, CXL), placed after the CPU nodes.
    #[serde(default)]
    pub memory_only_nodes: usize,
    /// Their memory each, GiB, where not `node_memory_gib` (a GH200's HBM
    /// node beside its LPDDR).
    #[serde(default)]
    pub memory_only_gib: Option<u64>,
    /// HMAT figures (read and write MB/s, read and write ns) for the CPU
    /// nodes and the memory-only nodes, as `access0/initiators` shows them.
    #[serde(default)]
    pub hmat: Option<FixtureHmat>,
    /// A memory-side cache in front of each memory-only node, bytes.
    #[serde(default)]
    pub memory_side_cache_bytes: u64,
    /// Weighted-interleave weights, one per node (absent: a kernel before 6.9).
    #[serde(default)]
    pub interleave_weights: Vec<u8>,
    /// SMBIOS type 17 entries: populated DIMMs per socket and their speed.
    #[serde(default)]
    pub dimms_per_socket: usize,
    #[serde(default)]
    pub dimm_mts: u16,
    /// Arm machines: /proc/cpuinfo in Arm's form (no model name; `CPU
    /// implementer` and `CPU part`), `flags` written as `Features`.
    #[serde(default)]
    pub implementer: Option<String>,
    #[serde(default)]
    pub part: Option<String>,
    /// /sys/class/dmi/id/sys_vendor, when the machine has one.
    #[serde(default)]
    pub system_vendor: Option<String>,
    /// NVIDIA GPUs on the PCI bus, with their links.
    #[serde(default)]
    pub gpus: Vec<super::pci::FixtureGpu>,
}

fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn default_vendor() -> String {
    "GenuineIntel".into()
}

/// The fields a description must give (the others have defaults).
const REQUIRED: [&str; 11] = [
    "model_name", "sockets", "cores_per_node", "cores_per_l3", "l1d", "l1i", "l2", "l3",
    "distance_local", "distance_remote", "node_memory_gib",
];

impl MachineSpec {
    /// A machine described in JSON, by people (not a document membw
    /// writes), checked for what a fixture tree can hold.
    pub fn parse(text: &str) -> Result<MachineSpec, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let serde_json::Value::Object(fields) = &value else {
            return Err("not a JSON object of the machine's fields".into());
        };
        let missing: Vec<&str> = (REQUIRED.iter().copied())
            .filter(|f| !fields.contains_key(*f))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "missing {}: {} (docs/guide/node-bandwidth.md has a complete example)",
                if missing.len() == 1 {
                    "field"
                } else {
                    "fields"
                },
                missing.join(", ")
            ));
        }
        let mut spec: MachineSpec = serde_json::from_value(value).map_err(|e| e.to_string())?;
        let mut bad = Vec::new();
        for (name, size) in [
            ("l1d", &mut spec.l1d),
            ("l1i", &mut spec.l1i),
            ("l2", &mut spec.l2),
            ("l3", &mut spec.l3),
        ] {
            match cache_size(size) {
                // As the kernel writes it: whole KiB.
                Ok(bytes) => *size = format!("{}K", bytes >> 10),
                Err(why) => bad.push(format!("{name} {why}")),
            }
        }
        if !bad.is_empty() {
            return Err(bad.join("; "));
        }
        spec.check()?;
        Ok(spec)
    }

    /// Refuses descriptions no machine has, before anything is written:
    /// zero counts, more CPUs than CPU ids go, caches or nodes that do not
    /// divide the cores.
    pub fn check(&self) -> Result<(), String> {
        let counts = [
            ("sockets", self.sockets),
            ("nodes_per_socket", self.nodes_per_socket),
            ("cores_per_node", self.cores_per_node),
            ("threads_per_core", self.threads_per_core),
            ("cores_per_l3", self.cores_per_l3),
        ];
        for (name, n) in counts {
            if n == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        counts[..4]
            .iter()
            .try_fold(1usize, |acc, (_, n)| acc.checked_mul(*n))
            .filter(|&c| c <= crate::topology::cpulist::MAX_ID + 1)
            .ok_or_else(|| {
                format!(
                    "more than {} CPUs; no machine membw knows has that many",
                    crate::topology::cpulist::MAX_ID + 1
                )
            })?;
        let nodes = self.sockets * self.nodes_per_socket + self.memory_only_nodes;
        if nodes > 1024 || self.dimms_per_socket > 64 || self.node_memory_gib > 1 << 20 {
            return Err("more than 1024 NUMA nodes, 64 DIMMs per socket or 1 PiB per node".into());
        }
        if self.threads_per_core > 8 {
            return Err("more than 8 hardware threads per core".into());
        }
        // Several nodes in a socket are some distance apart: a spec that
        // leaves it out (0) would give every later read of the tree a
        // warning about a distance of 0.
        if self.nodes_per_socket > 1 && self.distance_same_socket == 0 {
            return Err(
                "distance_same_socket is missing or 0 with several nodes per socket: give the SLIT distance between them (11 or 12 on most machines)".into(),
            );
        }
        Ok(())
    }
}

/// A cache's size in bytes: the kernel's `32K` and `2M` (binary, as sysfs
/// is read), or bytes as membw parses them elsewhere (`32KiB`, `32 KiB`,
/// `0.5MiB`); whole KiB, at most 16 GiB.
pub fn cache_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bytes = match t.ends_with(['K', 'k', 'M', 'm', 'G', 'g']) {
        true => super::sysfs::cache_size(t),
        false => crate::units::parse_bytes(t).ok(),
    }
    .ok_or_else(|| format!("'{t}' is not a size (32K, 32KiB, 1.25MiB, 480M)"))?
    .0;
    if !(1 << 10..=16 << 30).contains(&bytes) || bytes % 1024 != 0 {
        return Err(format!(
            "'{t}' is not a whole number of KiB from 1 KiB to 16 GiB"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_read_in_every_spelling_membw_uses() {
        for (text, bytes) in [
            ("32K", 32 << 10),
            ("32KiB", 32 << 10),
            ("32 KiB", 32 << 10),
            ("0.5M", 512 << 10),
            ("1.25MiB", 1280 << 10),
            ("480M", 480 << 20),
            ("2048K", 2 << 20),
        ] {
            assert_eq!(cache_size(text), Ok(bytes), "{text}");
        }
        for text in ["32", "32kb!", "", "0.3K", "big", "64G"] {
            assert!(cache_size(text).is_err(), "{text}");
        }
    }
}
