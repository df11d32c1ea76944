//! The results model: what membw measured, as plain data that serializes.
//! Sources produce [`Measurement`]s; the engine turns them into [`Record`]s
//! (one line of a results file) or a [`RunReport`] (one `membw run`); the
//! report renderers and `compare` only read these types. The JSON forms are
//! documented in the README and versioned by [`SCHEMA_VERSION`].

pub mod append;
pub mod device_set;
pub mod estimate;
pub mod file;
mod host;
pub mod latency_record;
pub mod measurement;
pub mod peak;
pub mod peers;
mod point;
mod pooled;
mod rank_measurement;
pub mod ranks;
pub mod read;
mod run_result;
mod run_trust;
mod schema;
pub mod scope;
mod shape_record;

pub mod study;
pub mod targets;
mod thread_placement;
pub mod typed;

pub use crate::memory::stream_rule::{Band, CacheEvidence, InCaches, StreamRule, not_judged};
pub use estimate::{Stats, cv, median};
pub use host::Host;
pub use measurement::{Measurement, require_valid};
pub use peak::PeakUse;
pub use point::{ConcurrentRank, HostPart, NumaCell, Point};
pub use pooled::pooled;
pub use rank_measurement::AggregateOf;
pub use run_result::RunResult;
pub use run_trust::KernelTrust;
pub use targets::{KindsPresent, Measured};

use crate::kernels::KernelId;
use crate::kernels::StoresRequest;
use crate::placement::spellings::Spellings;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the JSON/CSV layout; bumped only on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// What the user asked for in `membw run`, before defaults were resolved.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRequest {
    pub size: Option<String>,
    /// Both readings of a size given with a bare decimal suffix (`1G`:
    /// 10⁹ elements, not 1 GB), shown in the header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_reading: Option<String>,
    pub threads: Option<usize>,
    /// The placement options, as given; the ISA and store mode asked for
    /// and why the store mode was chosen (for `auto`). Absent (empty) for
    /// a device, which has none of them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub placement: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub isa: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stores: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stores_reason: String,
    /// The memory policy this process started with, when membw measured
    /// under it for want of `--mem` (`numactl --membind 1 membw run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inherited_mem_policy: Option<String>,
    /// The NUMA nodes the cpuset allows memory on, when not all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuset_mems: Option<String>,
}

/// One `membw run`: the self-describing document behind every format.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    pub schema_version: u32,
    pub tool: String,
    pub version: String,
    /// RFC 3339, UTC.
    pub timestamp: String,
    /// What measured: `stream` (membw's kernels) or `fake` (tests).
    #[serde(default = "stream_source")]
    pub source: String,
    pub host: Host,
    pub request: RunRequest,
    pub measurement: Measurement,
    /// The theoretical peak for the sockets the threads ran on; null when unknown.
    pub peak: Option<PeakUse>,
    /// Why the peak is unknown, and what to give instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_unknown: Option<String>,
    /// The same placement and memory policy in other tools' spellings;
    /// absent for a device, which has no placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<Spellings>,
    /// `--stores auto`: the other store mode, measured for one kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores_check: Option<measurement::StoresCheck>,
}

impl RunReport {
    pub fn new(
        topo: &Topology,
        source: &str,
        request: RunRequest,
        measurement: Measurement,
        peak: Option<PeakUse>,
        reproduce: Option<Spellings>,
    ) -> RunReport {
        RunReport {
            schema_version: SCHEMA_VERSION,
            tool: "membw".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            timestamp: now(),
            source: source.into(),
            host: Host::describe(topo),
            request,
            peak_unknown: peak.is_none().then(|| {
                (measurement.target().no_peak_reason())
                    .unwrap_or_else(|| crate::peak::unknown_reason(topo))
            }),
            measurement,
            peak,
            reproduce,
            stores_check: None,
        }
    }
}

/// A timestamp as records carry it: RFC 3339, UTC, to the second.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

pub(crate) fn stream_source() -> String {
    "stream".into()
}

/// For `skip_serializing_if`: an unknown count, absent rather than 0.
pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// For `skip_serializing_if`: an unknown size, absent rather than 0.
pub(crate) fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// One line of a results file, of any experiment: what every record
/// shares (schema, experiment, when, where, which point), and the kind's
/// own payload, whose fields sit beside them in the JSON. Fields of the
/// payload read through it (`record.stats`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope<P, D> {
    pub schema_version: u32,
    /// `sweep`, `tune`, `run`, `exec`, `latency`, ...
    pub experiment: String,
    /// When the experiment started (RFC 3339); the same for all its lines.
    pub started: String,
    pub timestamp: String,
    pub host: Host,
    /// The settings that define the study this record belongs to (a
    /// sweep's axes, sizes, kernels, stores, repeats), typed: `--resume
    /// FILE` alone continues it, and a different study is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<study::Study>,
    pub point: P,
    #[serde(flatten)]
    pub payload: D,
    /// The results file it was read from, where `report --by-file` labels
    /// each row by its file (never written).
    #[serde(skip)]
    pub file: Option<String>,
}

impl<P, D> Envelope<P, D> {
    /// A record of `experiment`, stamped now.
    pub fn new(experiment: &str, started: &str, host: &Host, point: P, payload: D) -> Self {
        Envelope {
            schema_version: SCHEMA_VERSION,
            experiment: experiment.into(),
            started: started.into(),
            timestamp: now(),
            host: host.clone(),
            study: None,
            point,
            payload,
            file: None,
        }
    }
}

impl<P, D> std::ops::Deref for Envelope<P, D> {
    type Target = D;
    fn deref(&self) -> &D {
        &self.payload
    }
}

impl<P, D> std::ops::DerefMut for Envelope<P, D> {
    fn deref_mut(&mut self) -> &mut D {
        &mut self.payload
    }
}

/// A bandwidth record (`sweep`, `tune`, `run -o`, `exec`).
pub type Record = Envelope<Point, Bandwidth>;

/// What a bandwidth point measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bandwidth {
    /// What measured: `stream` (membw's kernels), `exec` or `fake` (tests).
    #[serde(default = "stream_source")]
    pub source: String,
    pub runs: Vec<RunResult>,
    /// Per kernel, over the runs' best rates (GB/s).
    pub stats: BTreeMap<KernelId, Stats>,
    /// Theoretical peak of the sockets the threads ran on, when known.
    pub peak_gb_s: Option<f64>,
    pub peak_source: Option<String>,
    /// Why the point has no peak, where the CPUs' would be known but is
    /// not theirs (a virtual machine's slice of a socket, a cgroup) or none
    /// is known; absent for a device and where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_unknown: Option<String>,
    /// Cache capacity per thread at each level (`L1d`, `L2`, `L3`), bytes.
    pub cache_per_thread: BTreeMap<String, u64>,
    /// The point's placement and memory policy in other tools' spellings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<Spellings>,
}

impl Record {
    pub fn stats_of(runs: &[RunResult]) -> BTreeMap<KernelId, Stats> {
        let mut by_kernel: BTreeMap<KernelId, Vec<f64>> = BTreeMap::new();
        for r in runs {
            for (&k, &v) in &r.best_gb_s {
                by_kernel.entry(k).or_default().push(v);
            }
        }
        by_kernel
            .into_iter()
            .filter_map(|(k, v)| Some((k, Stats::of(&v)?)))
            .collect()
    }

    /// Each run's best rate of a kernel, GB/s: what comparisons judge.
    pub fn best_rates(&self, kernel: KernelId) -> Vec<f64> {
        self.runs
            .iter()
            .filter_map(|run| run.best_gb_s.get(&kernel).copied())
            .collect()
    }

    /// The mean best rate of a kernel, GB/s.
    pub fn mean(&self, kernel: KernelId) -> Option<f64> {
        self.stats.get(&kernel).map(|s| s.mean)
    }

    /// The mean best rate as a percentage of the peak of the sockets used;
    /// none for a point whose arrays sit in the caches.
    /// A transfer's is of the host link's peak, as its runs' target
    /// declared it.
    pub fn percent_of_peak(&self, kernel: KernelId) -> Option<f64> {
        if self.in_caches() {
            return None;
        }
        let peak = match kernel.spec().path {
            crate::kernels::Path::Memory => self.peak_gb_s?,
            path => {
                (self.runs.last()?.target())
                    .peak_of(path, None)?
                    .per_socket_gb_s
            }
        };
        Some(100.0 * self.kernel_trust(kernel).shown()?.mean / peak)
    }

    /// Whether the point's arrays, per thread, all fit in the caches per
    /// thread: a rate of the caches ([`Band::Caches`]).
    pub fn in_caches(&self) -> bool {
        self.band() == Band::Caches
    }

    /// The host's caches per thread (by level) that serve the point's
    /// threads, where host CPUs did its work: a device's arrays are in its
    /// own memory, and the caches earlier records kept for a device too
    /// say nothing of them.
    // A new kind must be decided wherever kinds are matched.
    #[deny(clippy::wildcard_enum_match_arm)]
    pub fn host_caches(&self) -> Option<&std::collections::BTreeMap<String, u64>> {
        match self.point.measured() {
            Measured::Team(_) | Measured::Program(..) => Some(&self.cache_per_thread),
            Measured::Device(_) => None,
        }
    }

    /// Where the point's arrays, per thread, stand against the caches per
    /// thread: within them, past them but each under STREAM's rule, or
    /// memory. A device's arrays are in its own memory: the host's caches,
    /// which earlier records kept for a device too, say nothing of them.
    /// A point whose caches or array sizes are unknown is not judged
    /// ([`Band::Unknown`]): it is neither memory nor the caches. A point
    /// whose runs found streaming stores clearly faster was past the
    /// caches these threads got, whatever sysfs says of their size.
    pub fn band(&self) -> Band {
        let Some(host_caches) = self.host_caches() else {
            return Band::Memory;
        };
        let caches: u64 = host_caches.values().sum();
        // Unknown caches judge nothing; sums from before runs said so
        // (0, or levels left out) are what those files hold.
        let unknown = caches == 0 || self.point.working_set_per_thread == 0;
        if unknown || self.runs.iter().any(|r| r.caches_unknown.is_some()) {
            return Band::Unknown;
        }
        let arrays = (crate::kernels::arrays_used(&self.point.kernels).iter())
            .filter(|a| !a.host_buffer())
            .count()
            .max(1) as u64;
        let band = Band::of(self.point.working_set_per_thread / arrays, arrays, caches);
        // Streaming stores clearly faster than regular ones at this size:
        // the arrays were not in the caches these threads got.
        let past = (self.runs.iter())
            .flat_map(|run| run.kernel_stores.values())
            .any(crate::kernels::KernelStores::shows_arrays_past_caches);
        match (band, past) {
            (Band::Caches, true) => Band::UnderRule,
            (band, _) => band,
        }
    }

    /// Why the point cannot be trusted: the first finding of the tick
    /// counters (other work or steal) in any of its runs; `None` when every
    /// run was measured on a quiet node (or by a source that cannot tell).
    pub fn untrusted(&self) -> Option<&str> {
        self.runs
            .iter()
            .filter_map(|run| run.interference.as_ref())
            .find_map(|i| i.findings.first())
            .map(String::as_str)
    }

    /// Why no run of the point could be judged (its windows were shorter
    /// than its observers can see into), where none could: neither
    /// trusted nor not.
    pub fn not_judged(&self) -> Option<&str> {
        let judged = (self.runs.iter())
            .any(|run| (run.interference.as_ref()).is_some_and(|i| i.not_judged.is_none()));
        if judged {
            return None;
        }
        (self.runs.iter())
            .filter_map(|run| run.interference.as_ref()?.not_judged.as_deref())
            .next()
    }

    /// What ran, as `compare` pairs records by: the point with its
    /// placement as the CPUs its threads ran on (`run -o`'s "default: one
    /// thread per core, spread" and `sweep -o`'s "spread" are the same
    /// CPUs) and its stores as the ones that ran (an `auto` point that ran
    /// NT stores is the same measurement as an `nt` one). Unlike
    /// [`Point::key`] (what `--resume` skips: what was asked for), it is
    /// decided by what the runs recorded.
    pub fn identity_key(&self) -> String {
        self.identity().key()
    }

    /// The point [`Record::identity_key`] is the key of.
    pub fn identity(&self) -> Point {
        let mut point = self.point.clone();
        let first = self.runs.first();
        // The CPUs used stand for the placement that chose them, unless
        // nothing bound the threads there (`--no-pin`).
        let bound = self.point.pinned();
        if let Some(run) = first.filter(|run| bound && !run.cpus.is_empty()) {
            let mut cpus = run.cpus.clone();
            cpus.sort_unstable();
            cpus.dedup();
            point.placement = Some(crate::placement::identity::PlacementId {
                scheme: crate::placement::identity::Scheme::Cpus(cpus),
                cpu_nodes: None,
                smt: false,
            });
        }
        // Where auto chose differently per kernel, no forced mode is the same.
        if let (StoresRequest::Auto, Some(ran)) =
            (point.stores, first.and_then(RunResult::uniform_stores))
        {
            point.stores = match ran {
                crate::kernels::StoreMode::Nt => StoresRequest::Nt,
                _ => StoresRequest::Regular,
            };
        }
        point
    }

    /// The store mode asked for, and what `auto` became (`auto→nt`).
    pub fn stores_label(&self) -> String {
        match self.runs.first() {
            Some(run) if run.uniform_stores().is_none() && run.stores.is_some() => {
                format!("{}→by kernel", self.point.stores)
            }
            Some(run) => run.target().stores_label(self.point.stores),
            None => self.point.stores.to_string(),
        }
    }
}

#[cfg(test)]
mod tests;
