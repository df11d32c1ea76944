//! What `membw check` concludes, as people and programs read it.

use super::Scope;
use super::rules::Finding;
use crate::kernels::KernelId;
use crate::results::Host;
use serde::Serialize;

/// How steady one scope's repetitions were in the last round: the
/// coefficient of variation of the repetition times per kernel, and the
/// thread that took longest where one lags the rest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stability {
    pub scope: Scope,
    pub kernel: KernelId,
    /// Standard deviation over mean of the counted repetitions' times.
    pub cv: f64,
}

/// A scope's rate for a kernel in its best round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rate {
    pub scope: Scope,
    pub kernel: KernelId,
    pub gb_s: f64,
}

/// The whole verdict of a check (`--format json`).
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub schema_version: u32,
    /// Always `membw-check`.
    pub kind: &'static str,
    pub timestamp: String,
    pub host: Host,
    pub healthy: bool,
    /// The device checked (the `device` scope), where the backend's target
    /// is a device; absent for the node's own memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<crate::results::targets::Device>,
    /// The devices checked, where a check covered a device set
    /// (`--backend cuda:all`): each scope names its device's index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<crate::results::targets::Device>,
    /// A device set's GPU↔GPU pairs, as measured after the rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<crate::results::peers::PeerCell>,
    /// How the budget was shared, where a check covered several devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_split: Option<String>,
    /// False when the check could not judge the node (other work on its
    /// CPUs, a cgroup CPU limit): `healthy` is then false too, `reason`
    /// says why, and the figures are what was measured.
    pub judged: bool,
    /// The one line of an unhealthy verdict, or why there is none.
    pub reason: Option<String>,
    /// What the node was held against, in words: `baseline FILE`, `the
    /// other NUMA domains`, `50 % of the theoretical peak`, or both of the
    /// last two.
    pub against: String,
    pub tolerance: f64,
    pub budget_s: f64,
    pub rounds: usize,
    pub elapsed_s: f64,
    /// Every scope's and kernel's rate in its best round.
    pub rates: Vec<Rate>,
    pub findings: Vec<Finding>,
    /// Faults of the hardware, each unhealthy whatever the rates: the
    /// node's hardware against the baseline's (a DIMM missing), a link
    /// trained narrow or down, a DIMM's memory errors (EDAC).
    pub differences: Vec<String>,
    /// The node's memory error counters (EDAC) as the check read them,
    /// or why none could be read.
    pub memory_errors: crate::topology::edac::MemoryErrors,
    pub notes: Vec<String>,
    pub stability: Vec<Stability>,
    /// Other work and steal on the node over the whole check.
    pub interference: crate::trust::Interference,
    /// Other work and steal while the baseline was made, where it was made
    /// on a busy node (`membw baseline --allow-busy`): its rates may be
    /// low, so a slow node may pass against it. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_interference: Option<crate::trust::Interference>,
}
