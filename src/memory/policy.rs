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

use crate::error::{Error, Input, Result};
use crate::kernels::{ARRAYS, ArrayId};
use crate::sys::MemPolicyMode;
use crate::topology::Topology;
use crate::topology::cpulist::{IdSet, parse_list};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

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

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Local => f.write_str("local"),
            Policy::Bind(n) => write!(f, "bind:{n}"),
            Policy::Interleave(n) => write!(f, "interleave:{n}"),
            Policy::Preferred(n) => write!(f, "preferred:{n}"),
            Policy::WeightedInterleave(n, _) => write!(f, "weighted-interleave:{n}"),
            Policy::Split(parts) => {
                let parts: Vec<String> = parts
                    .iter()
                    .map(|p| {
                        format!(
                            "{}={}%",
                            p.node,
                            crate::units::trim_float(p.share() * 100.0)
                        )
                    })
                    .collect();
                write!(f, "split:{}", parts.join(","))
            }
        }
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

impl fmt::Display for MemPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_uniform() {
            return write!(f, "{}", self.arrays[0]);
        }
        // d (striad's 4th array) is named only when it is not local, so the
        // three-array policies read as they always have.
        let parts: Vec<String> = ArrayId::ALL
            .iter()
            .filter(|&&id| id != ArrayId::D || *self.get(id) != Policy::Local)
            .map(|&id| format!("{}={}", id.name(), self.get(id)))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// The arrays a per-array `--mem` names (`a=bind:0,d=bind:1`: a and d);
/// none for one policy for all.
pub fn named_arrays(text: &str) -> Vec<ArrayId> {
    let t = text.trim();
    entry_starts(t)
        .into_iter()
        .map(|i| ArrayId::ALL[(t.as_bytes()[i] - b'a') as usize])
        .collect()
}

/// Where the entries of a per-array policy start: at `a=`, `b=`, `c=` or
/// `d=` at the beginning or after a comma.
fn entry_starts(t: &str) -> Vec<usize> {
    // Bytes, not str slices: a multi-byte character after a comma must not
    // be cut (`,€` is an error to report, not a panic).
    let b = t.as_bytes();
    (0..b.len())
        .filter(|&i| {
            (i == 0 || b[i - 1] == b',')
                && matches!(b.get(i..i + 2), Some(b"a=" | b"b=" | b"c=" | b"d="))
        })
        .collect()
}

/// Parses `--mem` against the topology: nodes must exist and be allowed by
/// the cpuset.
pub fn parse(text: &str, topo: &Topology) -> Result<MemPolicy> {
    let err = |m: String| Error::input(Input::Mem, text, m);
    let t = text.trim();
    if t.is_empty() {
        return Err(err("empty policy".into()));
    }
    // Per-array form: split where `a=`, `b=`, `c=` or `d=` starts an entry.
    let starts = entry_starts(t);
    if starts.first() != Some(&0) {
        if !starts.is_empty() {
            return Err(err(
                "give every policy per array (a=...,b=...) or one for all".into(),
            ));
        }
        let p = parse_one(t, topo).map_err(err)?;
        return Ok(MemPolicy {
            arrays: std::array::from_fn(|_| p.clone()),
        });
    }
    let mut policy = MemPolicy::default();
    let mut named = [false; ARRAYS];
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(t.len(), |&e| e - 1);
        let entry = &t[start..end];
        let id = ArrayId::ALL[(entry.as_bytes()[0] - b'a') as usize];
        if std::mem::replace(&mut named[id.index()], true) {
            return Err(err(format!("array {} is given twice", id.name())));
        }
        policy.arrays[id.index()] =
            parse_one(&entry[2..], topo).map_err(|m| err(format!("column {}: {m}", start + 3)))?;
    }
    Ok(policy)
}

fn parse_one(text: &str, topo: &Topology) -> std::result::Result<Policy, String> {
    let (kind, arg) = match text.split_once(':') {
        Some((k, a)) => (k.trim(), Some(a.trim())),
        None => (text.trim(), None),
    };
    let nodes = |arg: Option<&str>| -> std::result::Result<IdSet, String> {
        let a = arg
            .filter(|a| !a.is_empty())
            .ok_or_else(|| format!("'{kind}' needs nodes, e.g. {kind}:0"))?;
        let set = if a == "all" {
            topo.allowed_mems.clone()
        } else {
            IdSet::new(parse_list(a).map_err(|e| format!("nodes '{a}': {e}"))?)
        };
        check_nodes(&set, topo)?;
        Ok(set)
    };
    match kind {
        "local" | "firsttouch" if arg.is_none() => Ok(Policy::Local),
        "weighted-interleave" | "weighted" => {
            let set = nodes(arg)?;
            let Some(system) = &topo.memory.weighted_interleave else {
                return Err(
                    "weighted interleave needs Linux 6.9 or later (no /sys/kernel/mm/mempolicy/weighted_interleave on this kernel); split:NODE=SHARE,... works on any kernel".into(),
                );
            };
            check_memory(&set, topo)?;
            let weights = set
                .ids()
                .iter()
                .map(|&n| (n, system.weights.get(&n).copied().unwrap_or(1)))
                .collect();
            Ok(Policy::WeightedInterleave(set, weights))
        }
        "split" => parse_split(arg.unwrap_or(""), topo).map(Policy::Split),
        "bind" | "membind" => Ok(Policy::Bind(nodes(arg)?)),
        "interleave" => Ok(Policy::Interleave(nodes(arg)?)),
        "preferred" => {
            let set = nodes(arg)?;
            match set.ids() {
                [one] => Ok(Policy::Preferred(*one)),
                _ => Err(format!("preferred takes one node, not '{set}'")),
            }
        }
        _ => Err(format!(
            "unknown policy '{text}' (local, bind:NODES, interleave:NODES|all, preferred:NODE, weighted-interleave:NODES, split:NODE=SHARE,...)"
        )),
    }
}

/// `0=75%,2=25%`: nodes and their shares, adding up to 100 %.
fn parse_split(text: &str, topo: &Topology) -> std::result::Result<Vec<SplitPart>, String> {
    if text.trim().is_empty() {
        return Err("'split' needs shares, e.g. split:0=75%,2=25%".into());
    }
    let mut parts: Vec<SplitPart> = Vec::new();
    for entry in text.split(',') {
        let (node, share) = entry
            .split_once('=')
            .ok_or_else(|| format!("'{entry}' is not NODE=SHARE (e.g. 0=75%)"))?;
        let node: usize = node
            .trim()
            .parse()
            .map_err(|_| format!("'{node}' in '{entry}' is not a node number"))?;
        let percent = crate::units::parse_percent(share)
            .map_err(|_| format!("share '{share}' of node {node} is not 0-100 %"))?;
        if parts.iter().any(|p| p.node == node) {
            return Err(format!("node {node} is given twice"));
        }
        let set = IdSet::new(vec![node]);
        check_nodes(&set, topo)?;
        check_memory(&set, topo)?;
        parts.push(SplitPart {
            node,
            basis_points: (percent * 100.0).round() as u32,
        });
    }
    let total: u32 = parts.iter().map(|p| p.basis_points).sum();
    if total != 10_000 {
        return Err(format!(
            "the shares add up to {} %, not 100 %",
            crate::units::trim_float(f64::from(total) / 100.0)
        ));
    }
    Ok(parts)
}

/// Refuses nodes that have no memory (a CPU-only node) for policies that
/// place pages there by share.
fn check_memory(set: &IdSet, topo: &Topology) -> std::result::Result<(), String> {
    for &n in set.ids() {
        if topo.node(n).is_some_and(|node| node.memoryless()) {
            return Err(format!("node {n} has no memory"));
        }
    }
    Ok(())
}

fn check_nodes(set: &IdSet, topo: &Topology) -> std::result::Result<(), String> {
    for &n in set.ids() {
        topo.existing_node(n)?;
        if !topo.allowed_mems.contains(n) {
            return Err(format!(
                "node {n} is outside this cpuset's memory nodes ({})",
                topo.allowed_mems
            ));
        }
    }
    Ok(())
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
