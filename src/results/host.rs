//! The machine a measurement was taken on, as every record keeps it.

use crate::topology::Topology;
use crate::untrusted::{printable_name, printable_name_opt};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Facts about the machine a measurement was taken on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Host {
    // Names read from a file are shown escaped (crate::untrusted).
    #[serde(deserialize_with = "printable_name")]
    pub hostname: String,
    #[serde(default, deserialize_with = "printable_name_opt")]
    pub cpu_model: Option<String>,
    #[serde(deserialize_with = "printable_name")]
    pub kernel: String,
    pub online_cpus: usize,
    pub numa_nodes: usize,
    pub sockets: usize,
    /// Transparent hugepage mode of the system (`always`, `madvise`, `never`).
    #[serde(default, deserialize_with = "printable_name_opt")]
    pub thp_mode: Option<String>,
    /// The system's weighted-interleave weights during the run (6.9+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave_weights: Option<BTreeMap<usize, u8>>,
    /// cpufreq's governors and turbo, as `membw topo` prints them (absent
    /// where the kernel exposes no cpufreq, and in files before it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "printable_name_opt"
    )]
    pub clocks: Option<String>,
}

impl Host {
    pub fn describe(topo: &Topology) -> Host {
        Host {
            hostname: crate::sys::hostname(),
            cpu_model: topo.cpu_info.model_name.clone(),
            kernel: crate::sys::kernel_release(),
            online_cpus: topo.cpus.len(),
            numa_nodes: topo.nodes.len(),
            sockets: topo.packages().len(),
            thp_mode: topo.memory.thp_mode.clone(),
            interleave_weights: (topo.memory.weighted_interleave.as_ref())
                .map(|w| w.weights.clone()),
            clocks: (!topo.power.governors.is_empty()).then(|| topo.power.summary()),
        }
    }
}
