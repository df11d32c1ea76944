//! Is this node healthy? The model of `membw baseline` and `membw check`:
//! the scopes a node is measured in (the whole node, each NUMA domain on
//! its own memory), the baseline file, the identity a baseline is valid for,
//! and (in [`rules`]) every decision the check takes, as pure functions of
//! measured rates so that they are tested on data, not on timing.

pub mod faults;
pub mod history;
pub mod memory_errors;
pub mod pairs;
pub mod rules;
pub mod since_boot;
pub mod verdict;

pub use crate::results::scope::{Scope, Siblings, domains};

use crate::kernels::{KernelId, StoreMode};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The baseline file's schema; a newer one is refused.
pub const BASELINE_SCHEMA: u32 = 1;

/// One kernel's rates in one scope over the baseline's rounds (or, for a
/// fleet baseline, over the nodes): each round's best repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// The best of all rounds, GB/s.
    pub best_gb_s: f64,
    /// The median round: what the check compares with, GB/s.
    pub median_gb_s: f64,
    /// (max − min) / median of the rounds.
    pub spread: f64,
    /// Each round's best (or each node's median), GB/s.
    pub rounds: Vec<f64>,
}

impl Rates {
    /// The summary of per-round bests; `None` when there are none.
    pub fn of(rounds: Vec<f64>) -> Option<Rates> {
        let median = crate::results::median(&rounds)?;
        let max = rounds.iter().copied().fold(f64::MIN, f64::max);
        let min = rounds.iter().copied().fold(f64::MAX, f64::min);
        Some(Rates {
            best_gb_s: max,
            median_gb_s: median,
            spread: if median > 0.0 {
                (max - min) / median
            } else {
                0.0
            },
            rounds,
        })
    }
}

/// How one scope is measured, and what it gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeBaseline {
    pub scope: Scope,
    pub threads: usize,
    /// Elements per array, so that the check measures the same bytes.
    pub elements: u64,
    pub stores: StoreMode,
    /// The device measured, for the device scope: a check measures the
    /// same one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<crate::results::targets::Device>,
    /// Where its arrays stood against the caches of its CPUs: `memory`
    /// (absent) but in a small baseline (`--small`), whose checks then
    /// measure the same band, named in their verdicts.
    #[serde(default = "memory_band", skip_serializing_if = "is_memory_band")]
    pub band: crate::results::Band,
    pub kernels: BTreeMap<KernelId, Rates>,
}

fn memory_band() -> crate::results::Band {
    crate::results::Band::Memory
}

fn is_memory_band(band: &crate::results::Band) -> bool {
    *band == crate::results::Band::Memory
}

/// What the check repeats in each round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Protocol {
    /// Timed repetitions of each kernel per scope and round.
    pub ntimes: usize,
    pub kernels: Vec<KernelId>,
}

/// The memory of one NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeMemory {
    pub node: usize,
    pub bytes: Option<u64>,
}

/// The DIMMs SMBIOS reports (root can read it; others see none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dimms {
    pub count: usize,
    pub total_mib: u64,
    /// The lowest configured speed of them, MT/s.
    pub mts: Option<u32>,
    /// Their slots, as the board names them (absent in files from before
    /// they were recorded): a check names the one missing.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::untrusted::printable_names"
    )]
    pub slots: Vec<String>,
}

/// The kind of node a baseline is valid for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    // Names in a file anyone may have written: one line each.
    #[serde(default, deserialize_with = "crate::untrusted::printable_name_opt")]
    pub cpu_model: Option<String>,
    pub sockets: usize,
    /// Cores this process may use.
    pub cores: usize,
    pub numa_nodes: Vec<NodeMemory>,
    pub dimms: Option<Dimms>,
    #[serde(default, deserialize_with = "crate::untrusted::printable_name_opt")]
    pub thp_mode: Option<String>,
    #[serde(deserialize_with = "crate::untrusted::printable_name")]
    pub kernel: String,
}

impl Identity {
    pub fn of(topo: &Topology) -> Identity {
        let host = crate::results::Host::describe(topo);
        let domains = crate::placement::Domains::new(topo, &topo.allowed_cpus);
        let devices = &topo.memory_devices;
        let dimms = (!devices.is_empty()).then(|| Dimms {
            count: devices.len(),
            total_mib: devices.iter().map(|d| d.size_mib).sum(),
            mts: devices.iter().filter_map(|d| d.mts).min(),
            slots: devices.iter().filter_map(|d| d.locator.clone()).collect(),
        });
        Identity {
            cpu_model: host.cpu_model,
            sockets: host.sockets,
            cores: domains.cores.len(),
            numa_nodes: topo
                .nodes
                .iter()
                .map(|n| NodeMemory {
                    node: n.id,
                    bytes: n.mem_total.map(|b| b.0),
                })
                .collect(),
            dimms,
            thp_mode: host.thp_mode,
            kernel: host.kernel,
        }
    }
}

/// A baseline file: what this kind of node measures when healthy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub schema_version: u32,
    /// Always `membw-baseline`: tells the file from other JSON.
    pub kind: String,
    pub created: String,
    /// The nodes it was measured on (one, or a fleet's).
    #[serde(deserialize_with = "crate::untrusted::printable_names")]
    pub hosts: Vec<String>,
    pub identity: Identity,
    pub protocol: Protocol,
    pub scopes: Vec<ScopeBaseline>,
    /// Other work and steal seen while it was measured (absent in files
    /// from before it was recorded). Busy only where the admin allowed it
    /// (`membw baseline --allow-busy`): every check against it says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<crate::trust::Interference>,
    /// A device set's GPU↔GPU pairs (`membw peers`' cells), where it has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<crate::results::peers::PeerCell>,
    /// The node's memory error counters (EDAC) when it was made, where
    /// they were readable and the baseline is one node's: a check holds
    /// their growth since against NHC's limit and their rate before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_errors: Option<crate::topology::edac::MemoryErrors>,
}

/// Why a baseline file cannot be used; the CLI adds the file's path.
#[derive(Debug, Clone, PartialEq)]
pub enum BaselineError {
    /// Not a baseline at all: not JSON, another document, a newer schema.
    NotABaseline(String),
    /// A field no check could measure or compare with: its path as in the
    /// file (`scopes[0].elements`) and what is wrong with it (`is 0`).
    Field { field: String, problem: String },
}

impl std::fmt::Display for BaselineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BaselineError::NotABaseline(why) => f.write_str(why),
            BaselineError::Field { field, problem } => write!(f, "{field} {problem}"),
        }
    }
}

impl BaselineError {
    pub fn field(field: impl Into<String>, problem: impl Into<String>) -> BaselineError {
        BaselineError::Field {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

pub const BASELINE_KIND: &str = "membw-baseline";

impl Baseline {
    /// Reads a baseline from its JSON, refusing what is not one (another
    /// document, a newer schema) and every field a check could not use,
    /// named by its path in the file. What depends on the node (its NUMA
    /// domains, caches and memory) is checked where the scopes are planned.
    pub fn parse(text: &str) -> Result<Baseline, BaselineError> {
        use crate::results::typed::{self, TypedError};
        let mut b: Baseline = typed::document(text, BASELINE_KIND, BASELINE_SCHEMA as u64)
            .map_err(|e| match e {
                TypedError::NotThisKind(why) if why.starts_with("not a ") => {
                    BaselineError::NotABaseline(
                        "not a membw baseline (make one with `membw baseline -o FILE`)".into(),
                    )
                }
                TypedError::NotThisKind(why) => BaselineError::NotABaseline(why),
                // `?` stands for a map key that could not be read (a kernel
                // name), `.` for the document itself.
                TypedError::Field { path, problem } => match path.strip_suffix(".?") {
                    Some(map) => BaselineError::field(
                        map,
                        format!("has a key that cannot be read: {problem}"),
                    ),
                    None if path == "." => {
                        BaselineError::field("the baseline", format!("cannot be read: {problem}"))
                    }
                    None => BaselineError::field(path, format!("cannot be read: {problem}")),
                },
            })?;
        // A device's scopes are that device's, whatever index a key from
        // before device sets implied.
        for s in &mut b.scopes {
            if let Some(d) = &s.device {
                s.scope = s.scope.of_device(d.id.index);
            }
        }
        b.validate()?;
        Ok(b)
    }

    /// The node-independent rules: repetitions a check can count, kernels
    /// it measures, sizes that are arrays, rates that are rates.
    fn validate(&self) -> Result<(), BaselineError> {
        let field = |f: String, problem: String| Err(BaselineError::field(f, problem));
        let p = &self.protocol;
        let most = crate::protocol::MAX_NTIMES;
        if !(2..=most).contains(&p.ntimes) {
            return field(
                "protocol.ntimes".into(),
                format!("is {}, outside 2-{most}", p.ntimes),
            );
        }
        if p.kernels.is_empty() {
            return field("protocol.kernels".into(), "is empty".into());
        }
        if self.scopes.is_empty() {
            return field("scopes".into(), "is empty".into());
        }
        for (i, s) in self.scopes.iter().enumerate() {
            let at = |name: &str| format!("scopes[{i}].{name}");
            if let Some(j) = self.scopes[..i].iter().position(|o| o.scope == s.scope) {
                return field(
                    at("scope"),
                    format!("is {} again (scopes[{j}])", s.scope.key()),
                );
            }
            // A device's scope has no CPU threads, and names its device.
            if let Err((name, problem)) = s.scope.check_recorded(s.threads, s.device.is_some()) {
                return field(at(name), problem);
            }
            if s.elements == 0 {
                return field(at("elements"), "is 0".into());
            }
            if s.kernels.is_empty() {
                return field(at("kernels"), "is empty".into());
            }
            for (k, r) in &s.kernels {
                let name = k.spec().name;
                if !p.kernels.contains(k) {
                    return field(
                        at(&format!("kernels.{name}")),
                        "is not among protocol.kernels, so no check measures it".into(),
                    );
                }
                let rates = [("best_gb_s", r.best_gb_s), ("median_gb_s", r.median_gb_s)]
                    .into_iter()
                    .chain(r.rounds.iter().map(|&v| ("rounds", v)));
                for (what, v) in rates {
                    if !(v.is_finite() && v > 0.0) {
                        return field(
                            at(&format!("kernels.{name}.{what}")),
                            format!("holds {v}, not a positive rate in GB/s"),
                        );
                    }
                }
                if r.rounds.is_empty() {
                    return field(at(&format!("kernels.{name}.rounds")), "is empty".into());
                }
                if r.median_gb_s > r.best_gb_s * (1.0 + 1e-9) {
                    return field(
                        at(&format!("kernels.{name}.median_gb_s")),
                        format!(
                            "is {} GB/s, above the best round's {}",
                            r.median_gb_s, r.best_gb_s
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    /// Whether other work ran while it was measured (`--allow-busy`).
    pub fn made_busy(&self) -> Option<&crate::trust::Interference> {
        self.interference.as_ref().filter(|i| i.busy)
    }

    pub fn scope(&self, scope: Scope) -> Option<&ScopeBaseline> {
        self.scopes.iter().find(|s| s.scope == scope)
    }

    /// A partition's baseline from its nodes' own: per scope and kernel, the
    /// median over the nodes of each node's median round, with the spread
    /// across nodes. The nodes must be of one kind (as a check would
    /// demand) and measured the same way; the first node's identity stands
    /// for them all.
    pub fn fleet(nodes: &[(String, Baseline)], created: String) -> Result<Baseline, String> {
        let Some((first_name, first)) = nodes.first() else {
            return Err("no baseline given".into());
        };
        for (name, b) in &nodes[1..] {
            let other = rules::compare_identity(&first.identity, &b.identity)
                .into_iter()
                .find_map(|d| match d {
                    rules::IdentityDifference::OtherNode(what)
                    | rules::IdentityDifference::Degraded(what) => Some(what),
                    rules::IdentityDifference::Note(_) => None,
                });
            if let Some(what) = other {
                return Err(format!(
                    "{name} is not the kind of node {first_name} is: {what}"
                ));
            }
            if b.protocol != first.protocol {
                return Err(format!(
                    "{name} was measured with other kernels or repetitions than {first_name}"
                ));
            }
        }
        let mut scopes = Vec::new();
        for s in &first.scopes {
            let mut kernels = BTreeMap::new();
            for &k in s.kernels.keys() {
                let mut medians = Vec::new();
                for (name, b) in nodes {
                    let rates = b
                        .scope(s.scope)
                        .filter(|o| o.elements == s.elements && o.stores == s.stores)
                        .and_then(|o| o.kernels.get(&k))
                        .ok_or_else(|| {
                            format!(
                                "{name} has no {} {} of the same size and store mode",
                                s.scope,
                                k.spec().name
                            )
                        })?;
                    medians.push(rates.median_gb_s);
                }
                kernels.extend(Rates::of(medians).map(|r| (k, r)));
            }
            scopes.push(ScopeBaseline {
                kernels,
                ..s.clone()
            });
        }
        Ok(Baseline {
            created,
            hosts: nodes.iter().flat_map(|(_, b)| b.hosts.clone()).collect(),
            scopes,
            // A node measured busy makes the partition's figures doubtful too.
            interference: nodes
                .iter()
                .find_map(|(_, b)| b.made_busy())
                .or(first.interference.as_ref())
                .cloned(),
            // Counts are one node's history, not a partition's.
            memory_errors: None,
            ..first.clone()
        })
    }
}

#[cfg(test)]
mod tests;
