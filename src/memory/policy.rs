//! NUMA memory policy for the arrays (`--mem`), numactl-style, applied with
//! mbind to each array before first touch (membw's own memory is left
//! alone), then verified page by page.
//!
//! - `local`: no policy on the arrays: first touch by the owning thread (or
//!   whatever policy membw inherited, e.g. from `numactl --interleave`);
//! - `bind:1`, `bind:0,1`: only these nodes;
//! - `interleave:all`, `interleave:0-3`: round-robin page by page;
//! - `preferred:2`: this node first, others when it is full;
//! - `weighted-interleave:0,2`: round-robin by the system's weights
//!   (Linux 6.9+, `MPOL_WEIGHTED_INTERLEAVE`);
//! - `split:0=75%,2=25%`: each thread's chunk in consecutive ranges on
//!   these nodes in these shares (any kernel: one mbind per range);
//! - per array: `a=bind:0,b=bind:1,c=interleave:all` (unnamed arrays: local).

use crate::kernels::{ARRAYS, ArrayId};
use crate::sys::MemPolicyMode;
use crate::topology::cpulist::IdSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    Local,
    Bind(IdSet),
    Interleave(IdSet),
    Preferred(usize),
    /// Interleave by weight over these nodes; the weights are the system's
    /// as read when the policy was resolved (recorded with the results).
    WeightedInterleave(IdSet, BTreeMap<usize, u8>),
    /// Consecutive ranges of every thread's chunk on these nodes.
    Split(Vec<SplitPart>),
}

/// One node's share of a split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitPart {
    pub node: usize,
    /// The share in basis points (10000 = all).
    pub basis_points: u32,
}

impl SplitPart {
    /// The share as a fraction of 1.
    pub fn share(&self) -> f64 {
        f64::from(self.basis_points) / 10_000.0
    }
}

/// The share of each node expected under a weighted policy.
pub fn expected_shares(policy: &Policy) -> Option<BTreeMap<usize, f64>> {
    match policy {
        Policy::WeightedInterleave(set, weights) => {
            let w = |n: &usize| f64::from(weights.get(n).copied().unwrap_or(1));
            let total: f64 = set.ids().iter().map(w).sum();
            Some(set.ids().iter().map(|n| (*n, w(n) / total)).collect())
        }
        Policy::Split(parts) => Some(parts.iter().map(|p| (p.node, p.share())).collect()),
        _ => None,
    }
}

impl Policy {
    /// The mbind call for this policy, if any.
    pub fn mbind_args(&self) -> Option<(MemPolicyMode, Vec<usize>)> {
        match self {
            Policy::Local => None,
            Policy::Bind(n) => Some((MemPolicyMode::Bind, n.ids().to_vec())),
            Policy::Interleave(n) => Some((MemPolicyMode::Interleave, n.ids().to_vec())),
            Policy::Preferred(n) => Some((MemPolicyMode::Preferred, vec![*n])),
            Policy::WeightedInterleave(n, _) => {
                Some((MemPolicyMode::WeightedInterleave, n.ids().to_vec()))
            }
            // Placed range by range (see `memory::Arrays::map`).
            Policy::Split(_) => None,
        }
    }

    /// The numactl flag with the same effect on the whole process.
    pub fn numactl(&self) -> String {
        match self {
            Policy::Local => "--localalloc".into(),
            Policy::Bind(n) => format!("--membind={n}"),
            Policy::Interleave(n) => format!("--interleave={n}"),
            Policy::Preferred(n) => format!("--preferred={n}"),
            Policy::WeightedInterleave(n, _) => format!("--weighted-interleave={n}"),
            // numactl has no split; the nearest it can say.
            Policy::Split(parts) => {
                let nodes: IdSet = parts.iter().map(|p| p.node).collect();
                format!("--interleave={nodes}")
            }
        }
    }
}

/// One policy per STREAM array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemPolicy {
    pub arrays: [Policy; ARRAYS],
}

impl Default for MemPolicy {
    fn default() -> Self {
        MemPolicy {
            arrays: std::array::from_fn(|_| Policy::Local),
        }
    }
}

impl MemPolicy {
    /// One policy for every array.
    pub fn uniform(policy: Policy) -> MemPolicy {
        MemPolicy {
            arrays: std::array::from_fn(|_| policy.clone()),
        }
    }

    pub fn get(&self, id: ArrayId) -> &Policy {
        &self.arrays[id.index()]
    }

    pub fn is_uniform(&self) -> bool {
        self.arrays.iter().all(|p| *p == self.arrays[0])
    }

    /// The numactl memory flags reproducing this policy, or `None` when the
    /// arrays differ (numactl cannot say that).
    pub fn numactl(&self) -> Option<String> {
        match &self.arrays[0] {
            _ if !self.is_uniform() => None,
            Policy::Local => Some(String::new()),
            Policy::Split(_) => None,
            p => Some(p.numactl()),
        }
    }
}

/// Where one array's pages were found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PagePlacement {
    pub array: String,
    pub policy: String,
    pub pages_sampled: usize,
    /// Sampled pages not present (should be 0 after first touch).
    pub pages_missing: usize,
    /// Share of the sampled pages on each node (node id → fraction).
    pub nodes: BTreeMap<usize, f64>,
    /// Share of pages on the node of the thread that touched them, under
    /// every policy (0 for a bind to a node the threads are not on).
    pub local_share: Option<f64>,
    /// Whether the distribution (and, on explicit huge pages, the page
    /// size) matches what was asked.
    pub held: bool,
    /// The array's `KernelPageSize` in smaps (4 on base pages and THP,
    /// 2048 or 1048576 on explicit huge pages); absent where unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_page_kib: Option<u64>,
    /// The share of the array's resident memory in huge pages (THP or
    /// explicit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub huge_share: Option<f64>,
}

impl PagePlacement {
    /// Each node's share of the pages found over all of `arrays` (of
    /// equal length, as a plan's are), each weighed the same.
    pub fn shares_of(arrays: &[PagePlacement]) -> BTreeMap<usize, f64> {
        let found: Vec<&PagePlacement> = arrays.iter().filter(|p| !p.nodes.is_empty()).collect();
        let mut shares = BTreeMap::new();
        for p in &found {
            for (&node, share) in &p.nodes {
                *shares.entry(node).or_insert(0.0) += share / found.len() as f64;
            }
        }
        shares
    }
}

/// How far a node's share may be from what a weighted or split policy
/// asked (the page sample's own error is under 1 point at 4096 pages).
pub const SHARE_TOLERANCE: f64 = 0.02;

/// Judges a sampled distribution against its policy; returns the verdict
/// and, when it failed, why.
pub fn judge(
    policy: &Policy,
    nodes: &BTreeMap<usize, f64>,
    local_share: Option<f64>,
) -> (bool, Option<String>) {
    let share_in = |set: &IdSet| {
        nodes
            .iter()
            .filter(|(n, _)| set.contains(**n))
            .map(|(_, s)| s)
            .sum::<f64>()
    };
    if let Some(expected) = expected_shares(policy) {
        let worst = expected
            .iter()
            .map(|(n, want)| (n, want, nodes.get(n).copied().unwrap_or(0.0)))
            .max_by(|a, b| (a.1 - a.2).abs().total_cmp(&(b.1 - b.2).abs()));
        return match worst {
            Some((n, want, got)) if (want - got).abs() > SHARE_TOLERANCE => (
                false,
                Some(format!(
                    "node {n} holds {:.1} % of pages, not {:.1} %",
                    got * 100.0,
                    want * 100.0
                )),
            ),
            _ => (true, None),
        };
    }
    match policy {
        Policy::Local => match local_share {
            Some(s) if s < 0.9 => (
                false,
                Some(format!(
                    "only {:.0} % of pages are on their thread's node",
                    s * 100.0
                )),
            ),
            _ => (true, None),
        },
        Policy::Bind(set) => {
            let inside = share_in(set);
            if inside < 0.999 {
                (
                    false,
                    Some(format!(
                        "{:.1} % of pages are outside nodes {set}",
                        (1.0 - inside) * 100.0
                    )),
                )
            } else {
                (true, None)
            }
        }
        Policy::Preferred(n) => {
            let on = nodes.get(n).copied().unwrap_or(0.0);
            if on < 0.9 {
                (
                    false,
                    Some(format!(
                        "only {:.0} % of pages are on node {n} (is it full?)",
                        on * 100.0
                    )),
                )
            } else {
                (true, None)
            }
        }
        Policy::Interleave(set) => {
            let fair = 1.0 / set.len() as f64;
            let worst = set
                .ids()
                .iter()
                .map(|n| nodes.get(n).copied().unwrap_or(0.0))
                .fold(1.0, f64::min);
            if share_in(set) < 0.999 || worst < 0.5 * fair {
                (
                    false,
                    Some(format!(
                        "pages are not spread over nodes {set} (least: {:.0} %)",
                        worst * 100.0
                    )),
                )
            } else {
                (true, None)
            }
        }
        Policy::WeightedInterleave(..) | Policy::Split(_) => (true, None),
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
