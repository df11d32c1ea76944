//! Ranks and measurements, each made of the other: one rank's record
//! from its own measurement, and the measurement of ranks together (the
//! aggregate STREAM prints). The ranks' summary itself is `ranks.rs`'s.

use super::measurement::{KernelResult, Measurement, SourceDetail, kernel_statistics};
use super::ranks::{RankRun, Ranks};
use crate::kernels::StoreMode;
use std::collections::BTreeMap;

impl RankRun {
    /// One rank's record from its own measurement (`synced`: per kernel
    /// and repetition, laid out as the protocol returns it; may be empty).
    pub fn new(
        rank: usize,
        local_rank: Option<usize>,
        host: String,
        m: &Measurement,
        synced: &[f64],
        node_peak_gb_s: Option<f64>,
    ) -> RankRun {
        let mut run = RankRun {
            rank,
            local_rank,
            host,
            cpus: m.threads.iter().map(|t| t.cpu).collect(),
            affinity: (m.threads.iter())
                .map(|t| t.affinity.clone())
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default(),
            bound_by: m.bound_by.clone(),
            device: m.target().device_name().map(String::from),
            validated: m.validation.passed,
            validation_error: crate::results::require_valid(m)
                .err()
                .map(|e| e.to_string()),
            pages_held: m.pages.iter().all(|p| p.held),
            elements: m.array_elements,
            best_gb_s: BTreeMap::new(),
            times_s: BTreeMap::new(),
            synced_s: BTreeMap::new(),
            bytes: BTreeMap::new(),
            node_peak_gb_s,
            warnings: m.warnings.clone(),
            untrusted: m
                .interference
                .as_ref()
                .and_then(|i| i.findings.first().cloned()),
        };
        for (k, r) in m.results.iter().enumerate() {
            run.best_gb_s.insert(r.kernel, r.best_gb_s());
            run.times_s.insert(r.kernel, r.times_s.clone());
            let n = r.times_s.len();
            if synced.len() >= (k + 1) * n {
                run.synced_s
                    .insert(r.kernel, synced[k * n..(k + 1) * n].to_vec());
            }
            run.bytes.insert(
                r.kernel,
                (r.bytes_per_element * m.array_elements * m.inner_repeats as u64) as f64,
            );
        }
        run
    }
}

/// What the members of an aggregate are: how their warnings are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateOf {
    /// MPI ranks, one process each (`rank 1 (node02)`).
    Ranks,
    /// The devices of a set measured together (`cuda1`).
    Devices,
}

impl Ranks {
    /// Makes `m` (the first rank's own measurement) the aggregate's: the
    /// table STREAM prints is every member's (rank, device) bytes over the
    /// slowest one's time; its own threads, pages and timer checks stay,
    /// the others' warnings join its own, named.
    pub fn aggregate_into(self, m: &mut Measurement, stores: Option<StoreMode>, of: AggregateOf) {
        m.results = self.aggregate_results(stores);
        m.array_elements = self.ranks.iter().map(|r| r.elements).sum();
        m.bytes_per_array = m.array_elements * crate::units::ELEMENT_BYTES;
        m.validation.passed = self.failed_validation().is_empty();
        super::measurement::renew_spread_finding(m);
        for r in &self.ranks[1..] {
            let name = match (of, &r.device) {
                (AggregateOf::Devices, Some(d)) => d.clone(),
                (AggregateOf::Devices, None) => format!("device {} ({})", r.rank, r.host),
                (AggregateOf::Ranks, _) => format!("rank {} ({})", r.rank, r.host),
            };
            for w in &r.warnings {
                m.warnings.push(format!("{name}: {w}"));
            }
        }
        for o in &self.overlaps {
            m.warnings.push(format!(
                "{o}: the ranks fight over those cores; bind each rank to its own (mpirun --bind-to core, srun --cpu-bind=cores)"
            ));
        }
        m.detail = Some(SourceDetail::Ranks(self));
    }

    /// STREAM's per-kernel results for the aggregate: every rank's bytes
    /// over the slowest rank's synchronized time, per repetition.
    pub fn aggregate_results(&self, stores: Option<StoreMode>) -> Vec<KernelResult> {
        self.ranks[0]
            .synced_s
            .keys()
            .map(|&k| {
                let reps = self
                    .ranks
                    .iter()
                    .filter_map(|r| r.synced_s.get(&k).map(Vec::len))
                    .min()
                    .unwrap_or(0);
                let times: Vec<f64> = (0..reps)
                    .map(|rep| {
                        self.ranks
                            .iter()
                            .filter_map(|r| r.synced_s.get(&k).map(|t| t[rep]))
                            .fold(0.0, f64::max)
                    })
                    .collect();
                let elements: u64 = self.ranks.iter().map(|r| r.elements).sum();
                kernel_statistics(k, stores, elements as usize, times)
            })
            .collect()
    }
}
