//! A machine described by people in a few numbers (`membw topo --generate
//! SPEC DIR`, `tests/fixtures/*.json`), read as a user's input: every
//! missing or bad field named in one error, cache sizes in any spelling
//! membw prints or parses (`32K`, `32KiB`, `32 KiB`, `0.5M`), and what no
//! machine has refused before anything is written. docs/guide/fixtures.md
//! documents the format with a complete example.

use super::fixture::MachineSpec;

/// The fields a description must give (the others have defaults).
const REQUIRED: [&str; 11] = [
    "model_name",
    "sockets",
    "cores_per_node",
    "cores_per_l3",
    "l1d",
    "l1i",
    "l2",
    "l3",
    "distance_local",
    "distance_remote",
    "node_memory_gib",
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

/// A cache's size in bytes: the kernel's `32K` and `2M` (binary), or bytes
/// as membw parses them elsewhere (`32KiB`, `32 KiB`, `0.5MiB`); whole KiB,
/// at most 16 GiB.
pub fn cache_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let kernel = t
        .strip_suffix(['K', 'k', 'M', 'm', 'G', 'g'])
        .filter(|n| !n.is_empty() && n.trim().chars().all(|c| c.is_ascii_digit() || c == '.'))
        .and_then(|n| n.trim().parse::<f64>().ok());
    let bytes = match kernel {
        Some(n) => {
            let shift = match t.chars().last() {
                Some('K' | 'k') => 10,
                Some('M' | 'm') => 20,
                _ => 30,
            };
            n * (1u64 << shift) as f64
        }
        None => {
            crate::units::parse_bytes(t)
                .map_err(|_| format!("'{t}' is not a size (32K, 32KiB, 1.25MiB, 480M)"))?
                .0 as f64
        }
    };
    if !(1024.0..=(16u64 << 30) as f64).contains(&bytes) || bytes % 1024.0 != 0.0 {
        return Err(format!(
            "'{t}' is not a whole number of KiB from 1 KiB to 16 GiB"
        ));
    }
    Ok(bytes as u64)
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
