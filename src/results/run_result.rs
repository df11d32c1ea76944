//! One run of a point, as a record keeps it: what ran, its best rates and
//! spreads, and what the run saw (pages, interference, warnings).

use super::{Measurement, measurement, ranks, targets};
use crate::kernels::{Isa, KernelId, StoreMode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One measurement of a point, summarized.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub cpus: Vec<usize>,
    /// As the measurement's: what ran (absent in schema 1, see [`RunResult::target`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Boxed, as `detail` is: a report of a long file holds every run of a
    /// point, and most runs are the CPU team's.
    pub target: Option<Box<targets::Target>>,
    /// The CPU kernels' ISA and stores; absent for another program or a device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isa: Option<Isa>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores: Option<StoreMode>,
    /// Each kernel's stores and why, where they tell more than `stores`:
    /// one was timed, or the kernels' modes differ. Absent where every
    /// kernel's followed from size or request alone (a report holds every
    /// run of a long file: `stores` is not kept twice), and in older files.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kernel_stores: BTreeMap<KernelId, crate::kernels::KernelStores>,
    pub inner_repeats: usize,
    /// Best rate of each kernel, GB/s.
    pub best_gb_s: BTreeMap<KernelId, f64>,
    /// max/min time of each kernel.
    pub spread: BTreeMap<KernelId, f64>,
    pub validated: bool,
    /// Whether every array's pages were where the memory policy said.
    pub pages_held: bool,
    /// Pages sampled to judge `pages_held` (0: nothing was verified).
    #[serde(default)]
    pub pages_sampled: usize,
    /// Where the sampled pages of the arrays the policy placed were: each
    /// node's share of them (a device's host buffers, the CPU team's
    /// arrays). Absent where nothing was sampled, and in older files.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "node_keys"
    )]
    pub pages_on_nodes: BTreeMap<usize, f64>,
    pub setup_s: f64,
    pub total_s: f64,
    /// Seconds spent inside timed repetitions.
    pub measured_s: f64,
    pub warnings: Vec<String>,
    /// As the measurement's: what else ran on the CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<crate::trust::Interference>,
    /// Unbound threads (`--no-pin`): how often the kernel moved them to
    /// another CPU while the repetitions ran, all threads together
    /// (absent where they were pinned, or the kernel keeps no count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<u64>,
    /// As the measurement's: the caches of its CPUs had no known size, so
    /// STREAM's rule was not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches_unknown: Option<crate::topology::UnknownCaches>,
    /// As the measurement's: another program's run, or every rank.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Box<measurement::SourceDetail>>,
}

impl RunResult {
    /// Another program's run, for `membw exec`.
    pub fn program(&self) -> Option<&measurement::ProgramRun> {
        measurement::SourceDetail::program(self.detail.as_deref())
    }
    /// Every rank, for a run across MPI ranks.
    pub fn ranks(&self) -> Option<&ranks::Ranks> {
        measurement::SourceDetail::ranks(self.detail.as_deref())
    }

    /// What ran: the recorded target, or (schema 1) the one its ISA and
    /// stores say.
    pub fn target(&self) -> targets::Target {
        (self.target.as_deref().cloned())
            .unwrap_or_else(|| targets::Target::of_schema1(self.isa, self.stores))
    }

    /// The one store mode every kernel that writes ran with; `None` where
    /// they differed (`auto` chose per kernel) or no CPU stores ran.
    pub fn uniform_stores(&self) -> Option<StoreMode> {
        let mut modes = (self.kernel_stores.iter())
            .filter(|(k, _)| !k.spec().writes.is_empty())
            .map(|(_, s)| s.mode);
        match modes.next() {
            None => self.stores,
            Some(first) => modes.all(|m| m == first).then_some(first),
        }
    }

    pub fn from_measurement(m: &Measurement) -> RunResult {
        RunResult {
            cpus: m.threads.iter().map(|t| t.cpu).collect(),
            target: m.target.clone().map(Box::new),
            isa: m.isa,
            stores: m.stores,
            kernel_stores: telling_stores(m),
            caches_unknown: m.caches_unknown,
            inner_repeats: m.inner_repeats,
            best_gb_s: m
                .results
                .iter()
                .map(|r| (r.kernel, r.best_gb_s()))
                .collect(),
            spread: m.results.iter().map(|r| (r.kernel, r.spread)).collect(),
            validated: m.validation.passed,
            pages_held: m.pages.iter().all(|p| p.held),
            pages_sampled: m.pages.iter().map(|p| p.pages_sampled).sum(),
            pages_on_nodes: crate::memory::policy::PagePlacement::shares_of(&m.pages),
            setup_s: m.setup_s,
            total_s: m.total_s,
            measured_s: m.measured_s(),
            warnings: m.warnings.clone(),
            interference: m.interference.clone(),
            migrations: (!m.pinned)
                .then(|| m.threads.iter().map(|t| t.migrations).sum::<Option<u64>>())
                .flatten(),
            detail: m.detail.clone().map(Box::new),
        }
    }
}

/// A map by node read where its keys come as text (a record read through
/// a flattened or tagged form keeps JSON's string keys as they are).
fn node_keys<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<usize, f64>, D::Error> {
    let text = <BTreeMap<String, f64>>::deserialize(d)?;
    (text.into_iter())
        .map(|(k, v)| Ok((k.parse().map_err(serde::de::Error::custom)?, v)))
        .collect()
}

/// Each kernel's stores, where any was timed or the kernels' modes differ;
/// none where `stores` alone says what every kernel ran and why by size.
fn telling_stores(m: &Measurement) -> BTreeMap<KernelId, crate::kernels::KernelStores> {
    use crate::kernels::StoresBasis;
    let all: BTreeMap<_, _> = (m.results.iter())
        .filter_map(|r| Some((r.kernel, r.stores?)))
        .collect();
    let timed = (all.values()).any(|s| {
        matches!(
            s.basis,
            StoresBasis::Measured { .. } | StoresBasis::Untimed { .. }
        )
    });
    let mut modes = (all.iter())
        .filter(|(k, _)| !k.spec().writes.is_empty())
        .map(|(_, s)| s.mode);
    let first = modes.next();
    match timed || modes.any(|m| Some(m) != first) {
        true => all,
        false => BTreeMap::new(),
    }
}
