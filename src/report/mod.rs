//! Turning measurements into what people and programs read. Each format is a
//! pure function of the data: text (STREAM's layout), JSON, CSV.

pub mod csv;
pub mod json;
pub mod text;

use crate::protocol::Measurement;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

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
    pub cpus: Option<String>,
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
}

impl RunReport {
    pub fn new(topo: &Topology, request: Request, measurement: Measurement) -> RunReport {
        RunReport {
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
