//! Turning measurements into what people and programs read. Each format is a
//! pure function of the data: text (STREAM's layout), JSON, CSV.

pub mod csv;
pub mod json;
pub mod plot;
pub mod study;
pub mod text;
pub mod topo;

use crate::peak::Peak;
use crate::placement::spellings::Spellings;
use crate::protocol::Measurement;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the JSON/CSV layout; bumped only on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// Facts about the machine a measurement was taken on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub cpu_model: Option<String>,
    pub kernel: String,
    pub online_cpus: usize,
    pub numa_nodes: usize,
    pub sockets: usize,
    /// Transparent hugepage mode of the system (`always`, `madvise`, `never`).
    pub thp_mode: Option<String>,
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
        }
    }
}

/// What the user asked for, before defaults were resolved.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub size: Option<String>,
    pub threads: Option<usize>,
    /// The placement options, as given.
    pub placement: String,
    pub isa: String,
    pub stores: String,
    /// Why the store mode was chosen (for `auto`).
    pub stores_reason: String,
}

/// One `membw run`: the self-describing document behind every format.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    pub schema_version: u32,
    pub tool: String,
    pub version: String,
    /// RFC 3339, UTC.
    pub timestamp: String,
    pub host: Host,
    pub request: Request,
    pub measurement: Measurement,
    /// The theoretical peak for the sockets the threads ran on; null when unknown.
    pub peak: Option<PeakUse>,
    /// The same placement and memory policy in other tools' spellings.
    pub reproduce: Spellings,
}

/// The peak as it applies to one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeakUse {
    #[serde(flatten)]
    pub peak: Peak,
    /// Sockets holding at least one thread.
    pub sockets_used: usize,
    /// Peak of those sockets, GB/s.
    pub used_gb_s: f64,
    /// Each kernel's best rate as a percentage of `used_gb_s`.
    pub percent_of_peak: BTreeMap<String, f64>,
}

impl PeakUse {
    pub fn new(peak: Peak, topo: &Topology, m: &Measurement) -> PeakUse {
        let sockets: std::collections::BTreeSet<usize> = m
            .threads
            .iter()
            .filter_map(|t| topo.cpu(t.cpu).map(|c| c.package))
            .collect();
        let used_gb_s = peak.for_sockets(sockets.len());
        let percent_of_peak = m
            .results
            .iter()
            .map(|r| (r.kernel.to_string(), 100.0 * r.best_gb_s() / used_gb_s))
            .collect();
        PeakUse {
            peak,
            sockets_used: sockets.len(),
            used_gb_s,
            percent_of_peak,
        }
    }
}

impl RunReport {
    pub fn new(
        topo: &Topology,
        request: Request,
        measurement: Measurement,
        peak: Option<Peak>,
        reproduce: Spellings,
    ) -> RunReport {
        RunReport {
            reproduce,
            peak: peak.map(|p| PeakUse::new(p, topo, &measurement)),
            schema_version: SCHEMA_VERSION,
            tool: "membw".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            timestamp: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            host: Host::describe(topo),
            request,
            measurement,
        }
    }
}
