//! Latency results: what one working set gave, one point of a loaded
//! curve, and the JSON Lines records they are kept in, in the same files
//! and with the same resume rules as the bandwidth studies.

use crate::kernels::{KernelId, StoreMode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one working set gave.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkingSetLatency {
    pub bytes: u64,
    pub lines: u64,
    /// Nanoseconds per load: the fastest chunk, and percentiles over chunks.
    pub min_ns: f64,
    pub p50_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub mean_ns: f64,
    /// p50 in core clock cycles, when the clock rate is known.
    pub p50_cycles: Option<f64>,
    /// The 95 % interval of the median (order statistics of the chunks);
    /// absent under 6 chunks or in files written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ci: Option<super::estimate::Interval>,
    pub chunks: usize,
    pub loads_per_chunk: usize,
    /// Share of the working set's pages that were transparent hugepages.
    pub huge_share: Option<f64>,
    /// The order the lines were chased in (chases; absent for core to core
    /// and in files from before the page-local chase: random).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<ChaseOrder>,
}

/// The order a chase visits the working set's cache lines in. Peers differ
/// here, and at DRAM sizes past the TLB's reach the two orders differ by the
/// page walks: a figure is comparable only with one chased the same way.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum ChaseOrder {
    /// Every line of the working set in one random cycle: almost every load
    /// goes to a new page (tinymembench's random read; multichase with
    /// `-T` as large as the working set).
    #[default]
    #[serde(rename = "random")]
    Random,
    /// One line in every 256 bytes, in random order within a window of
    /// [`PAGE_LOCAL_WINDOW`] bytes, the windows in random order: the TLB
    /// mostly hits, and no line's neighbour (which the adjacent-line
    /// prefetcher brings along) is ever chased (multichase's default).
    #[serde(rename = "page-local")]
    PageLocal,
}

/// The page-local chase's window: 64 pages of 4 KiB, multichase's default
/// TLB locality (`-T`).
pub const PAGE_LOCAL_WINDOW: u64 = 64 * 4096;

impl ChaseOrder {
    pub const ALL: [ChaseOrder; 2] = [ChaseOrder::Random, ChaseOrder::PageLocal];

    /// The name in records and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ChaseOrder::Random => "random",
            ChaseOrder::PageLocal => "page-local",
        }
    }

    pub fn parse(text: &str) -> Option<ChaseOrder> {
        ChaseOrder::ALL
            .into_iter()
            .find(|o| o.name() == text.trim())
    }

    /// What a table's title says the chase was.
    pub fn describe(self) -> &'static str {
        match self {
            ChaseOrder::Random => "dependent loads through one random cycle of all cache lines",
            ChaseOrder::PageLocal => {
                "dependent loads, a line per 256 B random within 256 KiB windows, windows in random order"
            }
        }
    }

    /// Bytes from one chased line to the next in memory.
    pub fn stride_bytes(self) -> u64 {
        match self {
            ChaseOrder::Random => 64,
            ChaseOrder::PageLocal => 256,
        }
    }

    fn is_random(&self) -> bool {
        *self == ChaseOrder::Random
    }
}

impl std::fmt::Display for ChaseOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// A load thread's traffic: which arrays it reads and writes per element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Mix {
    #[serde(rename = "read")]
    Read,
    #[serde(rename = "2:1")]
    TwoToOne,
    #[serde(rename = "3:1")]
    ThreeToOne,
    #[serde(rename = "copy")]
    Copy,
    #[serde(rename = "nt-write")]
    NtWrite,
}

impl Mix {
    pub const ALL: [Mix; 5] = [
        Mix::Read,
        Mix::TwoToOne,
        Mix::ThreeToOne,
        Mix::Copy,
        Mix::NtWrite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mix::Read => "read",
            Mix::TwoToOne => "2:1",
            Mix::ThreeToOne => "3:1",
            Mix::Copy => "copy",
            Mix::NtWrite => "nt-write",
        }
    }

    pub fn parse(text: &str) -> Option<Mix> {
        Mix::ALL.into_iter().find(|m| m.name() == text.trim())
    }

    /// The kernel that makes this traffic: read streams one array, 2:1 is
    /// add (two read, one written), 3:1 is striad, copy is copy, nt-write
    /// is write with streaming stores.
    pub fn kernel(self) -> KernelId {
        match self {
            Mix::Read => KernelId::Read,
            Mix::TwoToOne => KernelId::Add,
            Mix::ThreeToOne => KernelId::Striad,
            Mix::Copy => KernelId::Copy,
            Mix::NtWrite => KernelId::Write,
        }
    }

    pub fn stores(self) -> StoreMode {
        match self {
            Mix::NtWrite => StoreMode::Nt,
            _ => StoreMode::Regular,
        }
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// One point of a bandwidth-latency curve.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadedLatency {
    pub mix: Mix,
    pub delay_ns: f64,
    pub delay_spins: u64,
    pub threads: usize,
    /// The load threads' bandwidth while the chaser measured, bytes as
    /// STREAM counts them, GB/s.
    pub gb_s: f64,
    /// The same traffic with write-allocate reads included.
    pub bus_gb_s: f64,
}

/// The `experiment` of every latency record.
pub const EXPERIMENT: &str = "latency";

/// Which latency study a point belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LatencyExperiment {
    /// Latency vs working set, no other traffic.
    Idle,
    /// One cell of the CPU node × memory node matrix.
    Matrix,
    /// One point of a bandwidth-latency curve.
    Loaded,
    /// One pair of CPUs bouncing a cache line (core-to-core latency).
    C2c,
}

impl LatencyExperiment {
    /// The name in records and tables.
    pub fn name(self) -> &'static str {
        match self {
            LatencyExperiment::Idle => "idle",
            LatencyExperiment::Matrix => "matrix",
            LatencyExperiment::Loaded => "loaded",
            LatencyExperiment::C2c => "c2c",
        }
    }
}

/// What a point measured: the key for resume and for comparing files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyKey {
    pub study: LatencyExperiment,
    pub cpu: usize,
    pub cpu_node: Option<usize>,
    /// The working set's memory policy, typed, its nodes as resolved
    /// (`interleave:0-1`, `bind:1`).
    pub mem: crate::memory::written::PolicySpec,
    /// The node the working set was bound to (matrix cells).
    pub mem_node: Option<usize>,
    pub bytes: u64,
    /// `thp`, `never`, `2M` or `1G`.
    pub hugepages: crate::memory::Hugepages,
    /// The chase's order; random is left out, so keys from before the
    /// page-local chase still match.
    #[serde(default, skip_serializing_if = "ChaseOrder::is_random")]
    pub order: ChaseOrder,
    /// Loaded points: the load threads' CPUs, mix and delay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_cpus: Vec<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Mix>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ns: Option<f64>,
    /// Core-to-core points: the CPU at the other end of the line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_cpu: Option<usize>,
    /// Core-to-core points: the state the line is in when the timed access
    /// reaches it (absent in files from before the clean case: modified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<C2cLine>,
}

/// The state of the line a core-to-core access finds in the other core:
/// Intel MLC's HITM (modified) and HIT (clean) cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum C2cLine {
    /// Written by the other core: a read for ownership moves it (HITM).
    Modified,
    /// Loaded, unmodified, by the other core alone: a read finds it (HIT).
    Clean,
}

impl C2cLine {
    pub const ALL: [C2cLine; 2] = [C2cLine::Modified, C2cLine::Clean];

    /// The name in records and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            C2cLine::Modified => "modified",
            C2cLine::Clean => "clean",
        }
    }

    /// What a table's title says the figure is.
    pub fn describe(self) -> &'static str {
        match self {
            C2cLine::Modified => "one hop of a modified line (HITM: half a round trip)",
            C2cLine::Clean => "one load of a clean line the other CPU holds (HIT)",
        }
    }
}

impl std::fmt::Display for C2cLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl LatencyKey {
    /// A stable text key: the fields, serialized.
    pub fn key(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A short label for tables and plot legends.
    pub fn label(&self) -> String {
        let mut l = format!("CPU {} → {}", self.cpu, self.mem);
        if self.hugepages != crate::memory::Hugepages::Thp {
            l.push_str(&format!(", {} pages", self.hugepages));
        }
        if !self.order.is_random() {
            l.push_str(&format!(", {}", self.order));
        }
        l
    }
}

/// One line of a latency results file.
pub type LatencyRecord = super::Envelope<LatencyKey, Latency>;

/// What a latency point measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Latency {
    pub latency: WorkingSetLatency,
    /// The load threads' traffic (loaded points).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadedLatency>,
    /// The chaser's idle latency at the same working set, measured just
    /// before the loaded sweep (loaded points).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_p50_ns: Option<f64>,
    pub clock_ghz: Option<f64>,
    /// Capacity of each cache level serving the chasing CPU (`L1d`, `L2`,
    /// `L3`), bytes: where the latency steps are expected.
    pub caches: BTreeMap<String, u64>,
    /// Theoretical peak bandwidth of the node, when known (loaded plots).
    pub peak_gb_s: Option<f64>,
    /// What else ran on the CPUs while the point was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<crate::trust::Interference>,
    /// Core-to-core points: what the two CPUs share (`smt sibling`, `same
    /// L3`, `same NUMA node`, `same socket`, `other socket`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    /// The point's memory policy is the one membw was started with
    /// (`numactl --membind 0 membw latency`), not one it was given: its
    /// tables say so, as `run`'s header does. Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mem_inherited: bool,
}

/// What `membw latency --format json` prints: the experiment, and every
/// point both on its own and as the record a results file holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencyReport {
    pub schema_version: u32,
    pub experiment: String,
    pub study: LatencyExperiment,
    pub timestamp: String,
    pub host: super::Host,
    pub cpu: usize,
    pub mem: String,
    pub hugepages: String,
    pub clock_ghz: Option<f64>,
    pub points: Vec<WorkingSetLatency>,
    pub records: Vec<LatencyRecord>,
}

/// Reads one line of a latency results file.
pub fn parse(text: &str) -> Result<LatencyRecord, String> {
    super::schema::check_version(text)?;
    let r: LatencyRecord = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if r.experiment != EXPERIMENT {
        return Err(format!("a '{}' record among latency records", r.experiment));
    }
    let l = &r.latency;
    let times = [l.min_ns, l.p50_ns, l.p90_ns, l.p99_ns, l.mean_ns];
    if let Some(v) = times
        .iter()
        .find(|v| !(v.is_finite() && (0.0..=1e9).contains(*v)))
    {
        return Err(format!("a latency of {v:e} ns is not a measurement"));
    }
    if let Some(load) = &r.load
        && !(load.gb_s.is_finite() && (0.0..=1e7).contains(&load.gb_s))
    {
        return Err(format!(
            "a load of {:e} GB/s is not a measurement",
            load.gb_s
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tell_points_apart_and_records_round_trip() {
        let key = LatencyKey {
            study: LatencyExperiment::Idle,
            cpu: 0,
            cpu_node: Some(0),
            mem: Default::default(),
            mem_node: None,
            bytes: 4096,
            hugepages: crate::memory::Hugepages::Thp,
            order: ChaseOrder::Random,
            load_cpus: vec![],
            mix: None,
            delay_ns: None,
            peer_cpu: None,
            line: None,
        };
        let mut other = key.clone();
        other.bytes = 8192;
        assert_ne!(key.key(), other.key());
        assert!(!key.key().contains("mix"), "{}", key.key());
        // Random is the order of keys written before there was another.
        assert!(!key.key().contains("order"), "{}", key.key());
        let mut local = key.clone();
        local.order = ChaseOrder::PageLocal;
        assert!(local.key().contains(r#""order":"page-local""#));
        assert!(local.label().ends_with(", page-local"), "{}", local.label());
        let host = serde_json::from_value(serde_json::json!({
            "hostname": "h", "cpu_model": null, "kernel": "k",
            "online_cpus": 2, "numa_nodes": 1, "sockets": 1, "thp_mode": null
        }))
        .unwrap();
        let latency = Latency {
            latency: WorkingSetLatency {
                bytes: 4096,
                lines: 64,
                min_ns: 1.0,
                p50_ns: 1.1,
                p90_ns: 1.2,
                p99_ns: 1.3,
                mean_ns: 1.1,
                p50_cycles: None,
                p50_ci: None,
                chunks: 5,
                loads_per_chunk: 16384,
                huge_share: None,
                order: Some(ChaseOrder::Random),
            },
            load: None,
            idle_p50_ns: None,
            clock_ghz: None,
            caches: BTreeMap::new(),
            peak_gb_s: None,
            interference: None,
            relation: None,
            mem_inherited: false,
        };
        let record = LatencyRecord::new(EXPERIMENT, "s", &host, key, latency);
        let line = serde_json::to_string(&record).unwrap();
        assert_eq!(parse(&line).unwrap().point, record.point);
        let bad = line.replace("\"p50_ns\":1.1", "\"p50_ns\":-1.0");
        assert!(parse(&bad).unwrap_err().contains("not a measurement"));
        let sweep = line.replace("\"experiment\":\"latency\"", "\"experiment\":\"sweep\"");
        assert!(parse(&sweep).unwrap_err().contains("'sweep' record"));
    }
}
