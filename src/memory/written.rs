//! A memory policy as written (`--mem`), typed but not yet resolved: the
//! nodes of `interleave:all` are whichever nodes the machine that runs it
//! has. A point records its policy in this form, so `compare`, the tier
//! study and `--resume` read policies from files written on any machine
//! without its topology; [`PolicySpec::resolve`] checks it against one
//! machine and gives the [`MemPolicy`] that is applied there.

use super::policy::{MemPolicy, Policy, SplitPart};
use crate::error::{Error, Input};
use crate::kernels::{ARRAYS, ArrayId};
use crate::topology::Topology;
use crate::topology::cpulist::{IdSet, parse_list};
use std::collections::BTreeMap;
use std::fmt;

/// The nodes a policy names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nodes {
    /// `all`: every memory node this process may use, where it runs.
    All,
    Listed(IdSet),
}

/// One array's policy as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArrayPolicy {
    Local,
    Bind(Nodes),
    Interleave(Nodes),
    /// One node (checked when resolved: `preferred:all` is one only on a
    /// one-node machine).
    Preferred(Nodes),
    WeightedInterleave(Nodes),
    Split(Vec<SplitPart>),
}

/// The policy of every array, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySpec {
    pub arrays: [ArrayPolicy; ARRAYS],
}

impl Default for PolicySpec {
    fn default() -> Self {
        PolicySpec::uniform(ArrayPolicy::Local)
    }
}

impl fmt::Display for Nodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Nodes::All => f.write_str("all"),
            Nodes::Listed(set) => write!(f, "{set}"),
        }
    }
}

impl fmt::Display for ArrayPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArrayPolicy::Local => f.write_str("local"),
            ArrayPolicy::Bind(n) => write!(f, "bind:{n}"),
            ArrayPolicy::Interleave(n) => write!(f, "interleave:{n}"),
            ArrayPolicy::Preferred(n) => write!(f, "preferred:{n}"),
            ArrayPolicy::WeightedInterleave(n) => write!(f, "weighted-interleave:{n}"),
            ArrayPolicy::Split(parts) => {
                let parts: Vec<String> = (parts.iter())
                    .map(|p| {
                        let percent = crate::units::trim_float(p.share() * 100.0);
                        format!("{}={percent}%", p.node)
                    })
                    .collect();
                write!(f, "split:{}", parts.join(","))
            }
        }
    }
}

impl fmt::Display for PolicySpec {
    /// As [`MemPolicy`] prints: one policy, or `a=...,b=...,c=...` with d
    /// (and h, r) named only when not local.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_uniform() {
            return write!(f, "{}", self.arrays[0]);
        }
        let parts: Vec<String> = ArrayId::ALL
            .iter()
            // d, and a device's host buffers, only where not local.
            .filter(|&&id| id.index() < 3 || self.arrays[id.index()] != ArrayPolicy::Local)
            .map(|&id| format!("{}={}", id.name(), self.arrays[id.index()]))
            .collect();
        f.write_str(&parts.join(","))
    }
}

impl PolicySpec {
    pub fn uniform(policy: ArrayPolicy) -> PolicySpec {
        PolicySpec {
            arrays: std::array::from_fn(|_| policy.clone()),
        }
    }

    pub fn is_uniform(&self) -> bool {
        self.arrays.iter().all(|p| *p == self.arrays[0])
    }

    /// The tier study's split of every array: `(near, far, far share in %)`
    /// of a two-node split, the first node near.
    pub fn far_share(&self) -> Option<(usize, usize, f64)> {
        match (&self.arrays[0], self.is_uniform()) {
            (ArrayPolicy::Split(parts), true) => match parts.as_slice() {
                [near, far] => Some((near.node, far.node, far.share() * 100.0)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Parses the grammar alone; nodes are checked by [`resolve`](Self::resolve).
    /// A name is a name in any case (`BIND:0`).
    pub fn parse(text: &str) -> Result<PolicySpec, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("empty policy".into());
        }
        // Per-array form: split where `a=`, `b=`, `c=` or `d=` starts an entry.
        let starts = entry_starts(t);
        if starts.first() != Some(&0) {
            if !starts.is_empty() {
                return Err("give every policy per array (a=...,b=...) or one for all".into());
            }
            return parse_one(t).map(PolicySpec::uniform).map_err(|e| {
                // `bind:0,bind:1`: two policies joined as one's node list.
                if !several_policies(t) {
                    return e;
                }
                let parts: Vec<&str> = t.split(',').collect();
                let per_array: Vec<String> = (ArrayId::ALL.iter().zip(&parts))
                    .map(|(id, p)| format!("{}={p}", id.name()))
                    .collect();
                format!(
                    "{e}; '{t}' reads as one policy: for several (a sweep), repeat the flag (--mem {}); for one per array, name the arrays ({})",
                    parts.join(" --mem "),
                    per_array.join(",")
                )
            });
        }
        let mut spec = PolicySpec::default();
        let mut named = [false; ARRAYS];
        for (k, &start) in starts.iter().enumerate() {
            let end = starts.get(k + 1).map_or(t.len(), |&e| e - 1);
            let entry = &t[start..end];
            let id = ArrayId::ALL[(entry.as_bytes()[0] - b'a') as usize];
            if std::mem::replace(&mut named[id.index()], true) {
                return Err(format!("array {} is given twice", id.name()));
            }
            spec.arrays[id.index()] =
                parse_one(&entry[2..]).map_err(|m| format!("column {}: {m}", start + 3))?;
        }
        Ok(spec)
    }

    /// The policy on this machine: its nodes exist, are allowed, have
    /// memory where pages go by share, and the kernel has what it needs.
    pub fn resolve(&self, topo: &Topology) -> Result<MemPolicy, String> {
        let mut policy = MemPolicy::default();
        for id in ArrayId::ALL {
            policy.arrays[id.index()] =
                resolve_one(&self.arrays[id.index()], topo).map_err(|m| {
                    match self.is_uniform() {
                        true => m,
                        false => format!("array {}: {m}", id.name()),
                    }
                })?;
        }
        Ok(policy)
    }
}

impl From<&Policy> for ArrayPolicy {
    /// A resolved policy as written, its nodes listed.
    fn from(policy: &Policy) -> ArrayPolicy {
        let listed = |set: &IdSet| Nodes::Listed(set.clone());
        match policy {
            Policy::Local => ArrayPolicy::Local,
            Policy::Bind(n) => ArrayPolicy::Bind(listed(n)),
            Policy::Interleave(n) => ArrayPolicy::Interleave(listed(n)),
            Policy::Preferred(n) => ArrayPolicy::Preferred(listed(&IdSet::new(vec![*n]))),
            Policy::WeightedInterleave(n, _) => ArrayPolicy::WeightedInterleave(listed(n)),
            Policy::Split(parts) => ArrayPolicy::Split(parts.clone()),
        }
    }
}

impl From<&MemPolicy> for PolicySpec {
    fn from(policy: &MemPolicy) -> PolicySpec {
        PolicySpec {
            arrays: std::array::from_fn(|i| ArrayPolicy::from(&policy.arrays[i])),
        }
    }
}

impl serde::Serialize for PolicySpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for PolicySpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        PolicySpec::parse(&text)
            .map_err(|m| serde::de::Error::custom(format!("memory policy '{text}': {m}")))
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

fn parse_one(text: &str) -> Result<ArrayPolicy, String> {
    let (kind, arg) = match text.split_once(':') {
        Some((k, a)) => (k.trim(), Some(a.trim())),
        None => (text.trim(), None),
    };
    // Names in any case: `BIND:0`, `Interleave:all`.
    let lower = kind.to_ascii_lowercase();
    let kind = lower.as_str();
    let nodes = |arg: Option<&str>| -> Result<Nodes, String> {
        let a = arg
            .filter(|a| !a.is_empty())
            .ok_or_else(|| format!("'{kind}' needs nodes, e.g. {kind}:0"))?;
        if a.eq_ignore_ascii_case("all") {
            return Ok(Nodes::All);
        }
        let ids = parse_list(a).map_err(|e| format!("nodes '{a}': {e}"))?;
        Ok(Nodes::Listed(IdSet::new(ids)))
    };
    match kind {
        "local" | "firsttouch" if arg.is_none() => Ok(ArrayPolicy::Local),
        "weighted-interleave" | "weighted" => nodes(arg).map(ArrayPolicy::WeightedInterleave),
        "split" => parse_split(arg.unwrap_or("")).map(ArrayPolicy::Split),
        "bind" | "membind" => nodes(arg).map(ArrayPolicy::Bind),
        "interleave" => nodes(arg).map(ArrayPolicy::Interleave),
        "preferred" => match nodes(arg)? {
            Nodes::Listed(set) if set.len() != 1 => {
                Err(format!("preferred takes one node, not '{set}'"))
            }
            n => Ok(ArrayPolicy::Preferred(n)),
        },
        _ => Err(format!(
            "unknown policy '{text}' (local, bind:NODES, interleave:NODES|all, preferred:NODE, weighted-interleave:NODES, split:NODE=SHARE,...)"
        )),
    }
}

/// `0=75%,2=25%`: nodes and their shares, adding up to 100 %.
fn parse_split(text: &str) -> Result<Vec<SplitPart>, String> {
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

fn resolve_one(policy: &ArrayPolicy, topo: &Topology) -> Result<Policy, String> {
    let nodes = |n: &Nodes| -> Result<IdSet, String> {
        let set = match n {
            Nodes::All => topo.allowed_mems.clone(),
            Nodes::Listed(set) => set.clone(),
        };
        check_nodes(&set, topo)?;
        Ok(set)
    };
    Ok(match policy {
        ArrayPolicy::Local => Policy::Local,
        ArrayPolicy::Bind(n) => Policy::Bind(nodes(n)?),
        ArrayPolicy::Interleave(n) => Policy::Interleave(nodes(n)?),
        ArrayPolicy::Preferred(n) => {
            let set = nodes(n)?;
            match set.ids() {
                [one] => Policy::Preferred(*one),
                _ => return Err(format!("preferred takes one node, not '{set}'")),
            }
        }
        ArrayPolicy::WeightedInterleave(n) => {
            let set = nodes(n)?;
            let Some(system) = &topo.memory.weighted_interleave else {
                return Err(
                    "weighted interleave needs Linux 6.9 or later (no /sys/kernel/mm/mempolicy/weighted_interleave on this kernel); split:NODE=SHARE,... works on any kernel".into(),
                );
            };
            check_memory(&set, topo)?;
            let weights: BTreeMap<usize, u8> = set
                .ids()
                .iter()
                .map(|&n| (n, system.weights.get(&n).copied().unwrap_or(1)))
                .collect();
            Policy::WeightedInterleave(set, weights)
        }
        ArrayPolicy::Split(parts) => {
            for p in parts {
                let set = IdSet::new(vec![p.node]);
                check_nodes(&set, topo)?;
                check_memory(&set, topo)?;
            }
            Policy::Split(parts.clone())
        }
    })
}

/// Refuses nodes that have no memory (a CPU-only node) for policies that
/// place pages there by share.
fn check_memory(set: &IdSet, topo: &Topology) -> Result<(), String> {
    for &n in set.ids() {
        if topo.node(n).is_some_and(|node| node.memoryless()) {
            return Err(format!("node {n} has no memory"));
        }
    }
    Ok(())
}

fn check_nodes(set: &IdSet, topo: &Topology) -> Result<(), String> {
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

/// Whether a comma in `text` starts another policy (`bind:0,bind:1`).
fn several_policies(text: &str) -> bool {
    const NAMES: [&str; 6] = [
        "local", "bind", "interleave", "preferred", "weighted", "split",
    ];
    text.split(',').skip(1).any(|part| {
        NAMES
            .iter()
            .any(|n| part.trim().to_ascii_lowercase().starts_with(n))
    })
}

impl fmt::Display for Policy {
    /// As written, its nodes listed: `bind:0-1`, `split:0=75%,2=25%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", ArrayPolicy::from(self))
    }
}

impl fmt::Display for MemPolicy {
    /// As written with its nodes listed: one policy, or per array (d,
    /// striad's 4th array, named only when it is not local, so the
    /// three-array policies read as they always have).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", PolicySpec::from(self))
    }
}

/// Parses `--mem` against the topology: nodes must exist and be allowed by
/// the cpuset.
pub fn parse(text: &str, topo: &Topology) -> crate::error::Result<MemPolicy> {
    parse_written(text, topo).map(|(_, policy)| policy)
}

/// Parses `--mem`: the policy as written (what a point records) and as
/// resolved on this machine (what is applied).
pub fn parse_written(text: &str, topo: &Topology) -> crate::error::Result<(PolicySpec, MemPolicy)> {
    let err = |m: String| Error::input(Input::Mem, text, m);
    let spec = PolicySpec::parse(text).map_err(err)?;
    let policy = spec.resolve(topo).map_err(err)?;
    Ok((spec, policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_policy_reads_back_as_it_prints() {
        for text in [
            "local",
            "bind:1",
            "interleave:all",
            "preferred:2",
            "weighted-interleave:0,2",
            "split:0=75%,2=25%",
            "a=bind:0,b=bind:1,c=local",
            "a=local,b=local,c=local,d=bind:1",
        ] {
            let spec = PolicySpec::parse(text).unwrap();
            assert_eq!(spec.to_string(), text);
            let json = serde_json::to_string(&spec).unwrap();
            assert_eq!(serde_json::from_str::<PolicySpec>(&json).unwrap(), spec);
        }
        // Spellings of one policy are one policy.
        assert_eq!(
            PolicySpec::parse("membind:0,1").unwrap(),
            PolicySpec::parse("bind:0-1").unwrap()
        );
        assert!(serde_json::from_str::<PolicySpec>("\"bind:\"").is_err());
    }

    #[test]
    fn the_far_share_is_read_from_the_split() {
        let spec = PolicySpec::parse("split:0=70%,2=30%").unwrap();
        assert_eq!(spec.far_share(), Some((0, 2, 30.0)));
        assert_eq!(PolicySpec::parse("bind:0").unwrap().far_share(), None);
        let three = PolicySpec::parse("split:0=50%,1=25%,2=25%").unwrap();
        assert_eq!(three.far_share(), None);
    }
}
