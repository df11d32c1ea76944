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

/// A scope's rate for a kernel in its best round, and where its arrays
/// stood against the scope's caches (`memory` but in a `--small` check).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rate {
    pub scope: Scope,
    pub kernel: KernelId,
    pub gb_s: f64,
    pub band: crate::results::Band,
}

/// Where a value a check could not read came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputSource {
    /// The kernel's memory error counters.
    Edac,
    /// The DIMMs' SMBIOS entries.
    Smbios,
    /// The baseline file.
    Baseline,
}

impl InputSource {
    pub const ALL: [InputSource; 3] = [
        InputSource::Edac,
        InputSource::Smbios,
        InputSource::Baseline,
    ];

    pub fn name(self) -> &'static str {
        match self {
            InputSource::Edac => "edac",
            InputSource::Smbios => "smbios",
            InputSource::Baseline => "baseline",
        }
    }
}

/// A value the check could not read or did not believe: never taken for
/// zero or for "healthy", always said.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnknownInput {
    pub source: InputSource,
    /// The file (or the baseline's field) it came from, and why.
    #[serde(flatten)]
    pub unknown: crate::untrusted::Unknown,
    /// What the rule judged in its place (a controller's total beside an
    /// unreadable DIMM); absent where the rule could not be judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged_instead: Option<String>,
}

impl UnknownInput {
    pub fn of(
        source: InputSource,
        u: &crate::untrusted::Unknown,
        judged_instead: Option<String>,
    ) -> UnknownInput {
        UnknownInput {
            source,
            unknown: u.clone(),
            judged_instead,
        }
    }

    /// In words: `FILE WHY (judged by …)`, or `(… not judged)`.
    pub fn line(&self) -> String {
        match &self.judged_instead {
            Some(instead) => format!("{} ({instead})", self.unknown),
            None => format!("{} (its rule not judged)", self.unknown),
        }
    }
}

/// What a check does with a value it could not read (`--unknown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownPolicy {
    /// Said beside the verdict, in the one line too; a healthy node stays so.
    #[default]
    Report,
    /// Any unknown value makes the node unhealthy (exit 1).
    Fail,
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
    /// Every value the check could not read or did not believe, with what
    /// it judged in its place; empty where it read everything.
    pub unknown: Vec<UnknownInput>,
    /// What the unknowns do to the verdict (`--unknown`).
    pub unknown_policy: UnknownPolicy,
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

impl Verdict {
    /// The one line of a healthy verdict that could not read everything
    /// (`--unknown report`): healthy, and what was not read.
    pub fn unknown_line(&self) -> Option<String> {
        let first = self.unknown.first().filter(|_| self.healthy)?;
        let more = match self.unknown.len() {
            1 => String::new(),
            n => format!("; and {} more", n - 1),
        };
        Some(format!(
            "healthy, with {} unknown: {}{more}",
            crate::units::plural(self.unknown.len(), "input"),
            first.line()
        ))
    }
}
