//! What ranks measured: the ranks of an MPI job on one or many nodes, or
//! per-node results files from a launcher that is not MPI.
//!
//! Each rank measures with membw's own protocol inside the CPUs its launcher
//! bound it to. The ranks start and end every timed kernel together, so one
//! repetition's aggregate is all ranks' bytes over the slowest rank's time,
//! as stream_mpi.c counts it. This module holds the plain data (one
//! [`RankRun`] per rank) and what is computed from it: the aggregate, the
//! per-node table and its slow nodes, overlapping bindings. The transport
//! is [`crate::ranks`].

use crate::kernels::KernelId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The share of the median node below which a node is flagged slow.
pub const DEFAULT_OUTLIER: f64 = 0.9;

/// What one rank measured and where.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankRun {
    pub rank: usize,
    /// Its number among the ranks of its node, when the launcher says.
    pub local_rank: Option<usize>,
    #[serde(deserialize_with = "crate::untrusted::printable_name")]
    pub host: String,
    /// The CPUs its threads were placed on.
    pub cpus: Vec<usize>,
    /// Each thread's CPUs as the kernel reported them after the team
    /// started (a CPU list: one CPU where pinned), in thread order; empty
    /// in files from before it was read back, or where it could not be.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub affinity: Vec<String>,
    /// Who bound its threads where membw did not (a wrapper, mpirun's
    /// binding through a mask of one CPU), as its measurement says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_by: Option<String>,
    /// The device it measured (`cuda3`), where its target is one: under
    /// MPI each rank of a node drives its own GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    pub validated: bool,
    /// What failed, when validation did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_error: Option<String>,
    pub pages_held: bool,
    /// Elements per array on this rank.
    pub elements: u64,
    /// Its own best rate per kernel, GB/s.
    pub best_gb_s: BTreeMap<KernelId, f64>,
    /// Its own time of every repetition, per kernel.
    pub times_s: BTreeMap<KernelId, Vec<f64>>,
    /// Per kernel and repetition, the time until every rank had finished.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub synced_s: BTreeMap<KernelId, Vec<f64>>,
    /// Bytes one repetition of each kernel moves on this rank (STREAM's count).
    pub bytes: BTreeMap<KernelId, f64>,
    /// Theoretical peak of its node, GB/s, when known.
    pub node_peak_gb_s: Option<f64>,
    pub warnings: Vec<String>,
    /// The first finding that makes its measurement NOT TRUSTED (other
    /// work or steal on its CPUs, an unsteady kernel); absent when clean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<String>,
}

/// One node's line of the per-node table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeRow {
    #[serde(deserialize_with = "crate::untrusted::printable_name")]
    pub host: String,
    pub ranks: usize,
    pub threads: usize,
    /// The node's bytes over its slowest rank's time, best repetition, GB/s.
    pub gb_s: f64,
    /// Its rate over the median node's.
    pub of_median: f64,
    /// Its rate over its theoretical peak, when known.
    pub of_peak: Option<f64>,
    /// Its best below the outlier threshold of the median node's, and its
    /// repetitions' mean not clearly above the same share of the median
    /// node's mean: the node an admin looks at first (and exit 1).
    pub slow: bool,
    /// Its best was below the threshold, but its mean's whole interval is
    /// above the mean's line: one lucky repetition elsewhere, not a slow
    /// node. Said, not flagged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cleared_by_mean: bool,
    /// The node's counted repetitions (its bytes over its slowest rank's
    /// time in each), GB/s, with the 95 % interval of their mean: whether
    /// a slow node is slow beyond its own noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<super::Stats>,
    /// Why the node's figures are NOT TRUSTED (its first rank's finding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<String>,
}

/// Whether a slow node is slow beyond the noise: its repetitions' mean,
/// with its 95 % interval, against the same share of the median node's
/// mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SlowDecision {
    /// Its whole interval lies below the line.
    Resolved {
        mean: f64,
        half: f64,
        n: usize,
        line: f64,
    },
    /// Its interval reaches the line (or it has one counted repetition).
    NotResolved {
        mean: f64,
        half: f64,
        n: usize,
        line: f64,
    },
    /// Its whole interval lies above the line: slow by its best only.
    NotSlowByMean {
        mean: f64,
        half: f64,
        n: usize,
        line: f64,
    },
}

/// Everything about the ranks of one measurement.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Ranks {
    /// `mpi` (synchronized ranks) or `files` (merged per-node results).
    pub how: String,
    /// The kernel the per-node table and skew are about.
    pub kernel: KernelId,
    /// Total bytes over the slowest rank's time, best repetition, GB/s;
    /// absent for merged files, which were not synchronized.
    pub aggregate_gb_s: BTreeMap<KernelId, f64>,
    /// The sum of every rank's own best rate, GB/s.
    pub sum_of_best_gb_s: BTreeMap<KernelId, f64>,
    /// 1 − slowest rank's best / fastest rank's best, for `kernel`.
    pub skew: f64,
    pub outlier: f64,
    pub nodes: Vec<NodeRow>,
    /// Ranks on the same node bound to the same CPUs.
    pub overlaps: Vec<String>,
    pub ranks: Vec<RankRun>,
}

/// The kernel a per-node verdict is about: Triad when it ran.
fn verdict_kernel(ranks: &[RankRun]) -> Option<KernelId> {
    let first = ranks.first()?;
    if first.best_gb_s.contains_key(&KernelId::Triad) {
        Some(KernelId::Triad)
    } else {
        first.best_gb_s.keys().next().copied()
    }
}

/// Best over the counted repetitions (all but the first, as STREAM) of the
/// bytes of `ranks` over the slowest of their times.
fn best_together(
    ranks: &[&RankRun],
    kernel: KernelId,
    times: impl Fn(&RankRun) -> Option<&Vec<f64>>,
) -> f64 {
    rates_together(ranks, kernel, times)
        .into_iter()
        .fold(0.0, f64::max)
}

/// Each counted repetition's bytes of `ranks` over the slowest of their
/// times, GB/s.
fn rates_together(
    ranks: &[&RankRun],
    kernel: KernelId,
    times: impl Fn(&RankRun) -> Option<&Vec<f64>>,
) -> Vec<f64> {
    let bytes: f64 = ranks.iter().filter_map(|r| r.bytes.get(&kernel)).sum();
    let reps = ranks
        .iter()
        .filter_map(|r| times(r).map(Vec::len))
        .min()
        .unwrap_or(0);
    (1.min(reps)..reps)
        .filter_map(|rep| {
            let slowest = ranks
                .iter()
                .filter_map(|r| times(r).map(|t| t[rep]))
                .fold(0.0, f64::max);
            (slowest > 0.0).then(|| bytes / slowest / 1e9)
        })
        .collect()
}

/// Nodes in first-rank order, with their rates, share of the median node,
/// and the slow ones flagged.
pub fn node_table(ranks: &[RankRun], kernel: KernelId, outlier: f64) -> Vec<NodeRow> {
    let mut hosts: Vec<&str> = Vec::new();
    for r in ranks {
        if !hosts.contains(&r.host.as_str()) {
            hosts.push(&r.host);
        }
    }
    let mut rows: Vec<NodeRow> = hosts
        .iter()
        .map(|host| {
            let on: Vec<&RankRun> = ranks.iter().filter(|r| r.host == *host).collect();
            let rates = rates_together(&on, kernel, |r| r.times_s.get(&kernel));
            let gb_s = rates.iter().copied().fold(0.0, f64::max);
            NodeRow {
                host: host.to_string(),
                ranks: on.len(),
                threads: on.iter().map(|r| r.cpus.len()).sum(),
                gb_s,
                of_median: 0.0,
                of_peak: on[0].node_peak_gb_s.filter(|p| *p > 0.0).map(|p| gb_s / p),
                slow: false,
                cleared_by_mean: false,
                repetitions: super::Stats::of(&rates),
                untrusted: on.iter().find_map(|r| r.untrusted.clone()),
            }
        })
        .collect();
    let median_best = median(rows.iter().map(|r| r.gb_s).collect());
    let line = outlier
        * median(
            rows.iter()
                .filter_map(|r| r.repetitions.map(|s| s.mean))
                .collect(),
        );
    for row in &mut rows {
        row.of_median = if median_best > 0.0 {
            row.gb_s / median_best
        } else {
            0.0
        };
        // One comparison for the flag, the words and the exit code: the
        // best screens, and a mean whose whole interval is above the same
        // share of the median node's mean clears it.
        let by_best = row.of_median < outlier;
        let above = (row.repetitions.and_then(|s| s.interval())).is_some_and(|i| i.low >= line);
        row.slow = by_best && !above;
        row.cleared_by_mean = by_best && above;
    }
    rows
}

fn median(values: Vec<f64>) -> f64 {
    super::median(&values).unwrap_or(0.0)
}

/// Pairs of ranks on one node whose CPUs overlap: they fight over cores,
/// and their rates mean little.
impl RankRun {
    /// Every CPU its threads could run on: read back where it was, else
    /// where they were placed.
    fn could_run_on(&self) -> Vec<usize> {
        let read: Vec<usize> = (self.affinity.iter())
            .filter_map(|list| crate::topology::cpulist::parse_list(list).ok())
            .flatten()
            .collect();
        let mut cpus = match read.is_empty() {
            true => self.cpus.clone(),
            false => read,
        };
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }

    /// Whether each thread was bound to one CPU, as read back (placed,
    /// in files that did not read it back).
    fn each_on_one(&self) -> bool {
        (self.affinity.iter())
            .all(|list| crate::topology::cpulist::parse_list(list).is_ok_and(|c| c.len() == 1))
    }
}

pub fn overlaps(ranks: &[RankRun]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, a) in ranks.iter().enumerate() {
        for b in &ranks[i + 1..] {
            if a.host != b.host {
                continue;
            }
            let (on_a, on_b) = (a.could_run_on(), b.could_run_on());
            let shared: Vec<usize> = on_a.iter().filter(|c| on_b.contains(c)).copied().collect();
            if shared.is_empty() {
                continue;
            }
            // Threads free over several CPUs only may meet there.
            let (verb, why) = match a.each_on_one() && b.each_on_one() {
                true => ("share", ""),
                false => (
                    "may share",
                    " (their threads are not each bound to one CPU)",
                ),
            };
            let who = match (a.rank == b.rank, &a.device, &b.device) {
                // One rank's devices, driven from its threads.
                (true, Some(x), Some(y)) => format!("devices {x} and {y} of rank {}", a.rank),
                _ => format!("ranks {} and {}", a.rank, b.rank),
            };
            found.push(format!(
                "{who} on {} {verb} CPU {}{why}",
                a.host,
                crate::topology::cpulist::format_ranges(&shared)
            ));
        }
    }
    found
}

impl Ranks {
    /// The summary of synchronized ranks (`how` = `mpi`) or of merged
    /// per-node files (`files`, no aggregate). None without ranks.
    pub fn summarize(how: &str, mut ranks: Vec<RankRun>, outlier: f64) -> Option<Ranks> {
        ranks.sort_by_key(|r| r.rank);
        let kernel = verdict_kernel(&ranks)?;
        let kernels: Vec<KernelId> = ranks[0].best_gb_s.keys().copied().collect();
        let all: Vec<&RankRun> = ranks.iter().collect();
        // Ranks or devices gated together have an aggregate; merged files
        // were not in step.
        let aggregate_gb_s = if how != "files" {
            kernels
                .iter()
                .map(|&k| (k, best_together(&all, k, |r| r.synced_s.get(&k))))
                .collect()
        } else {
            BTreeMap::new()
        };
        let sum_of_best_gb_s = kernels
            .iter()
            .map(|&k| (k, ranks.iter().filter_map(|r| r.best_gb_s.get(&k)).sum()))
            .collect();
        let bests: Vec<f64> = ranks
            .iter()
            .filter_map(|r| r.best_gb_s.get(&kernel).copied())
            .collect();
        let (lo, hi) = bests.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &b| {
            (lo.min(b), hi.max(b))
        });
        Some(Ranks {
            how: how.into(),
            kernel,
            aggregate_gb_s,
            sum_of_best_gb_s,
            skew: if hi > 0.0 { 1.0 - lo / hi } else { 0.0 },
            outlier,
            nodes: node_table(&ranks, kernel, outlier),
            overlaps: overlaps(&ranks),
            ranks,
        })
    }

    /// For each slow node, whether it is slow beyond its own noise: its
    /// repetitions' mean and 95 % interval against `outlier` × the median
    /// of the nodes' means. `None` for a node without repetitions.
    pub fn slow_decisions(&self) -> Vec<(&str, Option<SlowDecision>)> {
        let means: Vec<f64> = self
            .nodes
            .iter()
            .filter_map(|n| n.repetitions.map(|s| s.mean))
            .collect();
        let line = self.outlier * median(means);
        self.nodes
            .iter()
            .filter(|n| n.slow || n.cleared_by_mean)
            .map(|n| {
                let decision = n.repetitions.map(|s| {
                    let (mean, n) = (s.mean, s.n);
                    match s.interval() {
                        Some(i) if i.low >= line => SlowDecision::NotSlowByMean {
                            mean,
                            half: i.half_width(),
                            n,
                            line,
                        },
                        Some(i) if i.high < line => SlowDecision::Resolved {
                            mean,
                            half: i.half_width(),
                            n,
                            line,
                        },
                        i => SlowDecision::NotResolved {
                            mean,
                            half: i.map_or(0.0, |i| i.half_width()),
                            n,
                            line,
                        },
                    }
                });
                (n.host.as_str(), decision)
            })
            .collect()
    }

    /// The hosts flagged slow, in table order.
    pub fn slow_hosts(&self) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|n| n.slow)
            .map(|n| n.host.as_str())
            .collect()
    }

    /// The ranks whose validation failed, as `rank R (host)`.
    pub fn failed_validation(&self) -> Vec<String> {
        self.ranks
            .iter()
            .filter(|r| !r.validated)
            .map(|r| format!("rank {} ({})", r.rank, r.host))
            .collect()
    }
}

#[cfg(test)]
mod tests;
