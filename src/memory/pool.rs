//! Explicit huge pages come from pools reserved per node ahead of time.
//! Before anything is mapped, membw works out how many pages each node
//! must give under the memory policy and refuses, naming the node, the
//! count missing and the command that reserves them, when a pool is short:
//! a mapping would otherwise fail half-way, or a first touch on an empty
//! node die of SIGBUS.

use super::Hugepages;
use super::policy::Policy;
use crate::error::{Error, Input, Result};
use crate::topology::Topology;
use crate::topology::cpulist::IdSet;
use crate::units::{Bytes, ELEMENT_BYTES};
use std::collections::BTreeMap;
use std::ops::Range;

/// Huge pages needed: at least `pages` among `nodes` (any of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub nodes: IdSet,
    pub pages: u64,
}

/// The pages one array of `elements` needs under `policy`, on pages of
/// `page` bytes. Under first touch each page goes to the node of the
/// thread whose range holds its first element (`thread_nodes[t]` for
/// `ranges[t]`; an unknown node counts against every node).
pub fn array_needs(
    policy: &Policy,
    elements: usize,
    page: usize,
    ranges: &[Range<usize>],
    thread_nodes: &[Option<usize>],
    all_nodes: &IdSet,
) -> Vec<Need> {
    let per_page = (page / ELEMENT_BYTES as usize).max(1);
    let pages = elements.div_ceil(per_page) as u64;
    let on = |nodes: IdSet, pages: u64| Need { nodes, pages };
    let one = |n: usize| IdSet::new(vec![n]);
    match policy {
        Policy::Local => {
            let mut by_node: BTreeMap<Option<usize>, u64> = BTreeMap::new();
            for p in 0..pages as usize {
                let first = p * per_page;
                let owner = ranges.iter().position(|r| r.contains(&first));
                let node = owner.and_then(|t| thread_nodes.get(t).copied().flatten());
                *by_node.entry(node).or_default() += 1;
            }
            by_node
                .into_iter()
                .map(|(n, count)| on(n.map_or_else(|| all_nodes.clone(), one), count))
                .collect()
        }
        Policy::Bind(set) => vec![on(set.clone(), pages)],
        Policy::Preferred(n) => vec![on(one(*n), pages)],
        Policy::Interleave(set) => {
            let each = pages.div_ceil(set.len() as u64);
            set.ids().iter().map(|&n| on(one(n), each)).collect()
        }
        Policy::WeightedInterleave(set, weights) => shares(set.ids(), pages, |n| {
            weights.get(&n).copied().unwrap_or(1) as f64
        }),
        Policy::Split(parts) => shares(
            &parts.iter().map(|p| p.node).collect::<Vec<_>>(),
            pages,
            |n| {
                parts
                    .iter()
                    .find(|p| p.node == n)
                    .map_or(0.0, |p| p.share())
            },
        ),
    }
}

/// `pages` divided among `nodes` in proportion to `weight`, rounded up.
fn shares(nodes: &[usize], pages: u64, weight: impl Fn(usize) -> f64) -> Vec<Need> {
    let total: f64 = nodes.iter().map(|&n| weight(n)).sum();
    nodes
        .iter()
        .map(|&n| Need {
            nodes: IdSet::new(vec![n]),
            pages: (pages as f64 * weight(n) / total.max(f64::MIN_POSITIVE)).ceil() as u64,
        })
        .collect()
}

/// Refuses explicit huge pages this machine cannot give: a size the kernel
/// (or CPU) lacks, or pools too small for `needs`. Nothing to check for
/// THP and base pages.
pub fn check(topo: &Topology, hugepages: Hugepages, needs: &[Need]) -> Result<()> {
    let Some(page) = hugepages.explicit_bytes() else {
        return Ok(());
    };
    let kib = page as u64 / 1024;
    let err = |m: String| Error::input(Input::Hugepages, hugepages.name(), m);
    let cpu = &topo.cpu_info;
    if hugepages == Hugepages::Explicit1G
        && cpu.vendor.is_some()
        && !cpu.flags.is_empty()
        && !topo.has_flag("pdpe1gb")
    {
        return Err(err("this CPU has no 1 GiB pages (no pdpe1gb flag)".into()));
    }
    if !topo.memory.huge_pools.iter().any(|p| p.page_kib == kib) {
        return Err(err(format!(
            "this kernel offers no {} pages (no /sys/kernel/mm/hugepages/hugepages-{kib}kB)",
            Bytes(page as u64)
        )));
    }
    // Sum what each node set must give, then hold each set against the
    // free pages of its nodes.
    let mut wanted: BTreeMap<Vec<usize>, u64> = BTreeMap::new();
    for n in needs {
        *wanted.entry(n.nodes.ids().to_vec()).or_default() += n.pages;
    }
    for (nodes, pages) in wanted {
        let pools: Vec<(usize, u64, u64)> = nodes
            .iter()
            .map(|&n| {
                let pool = topo.node(n).and_then(|node| node.pool(kib));
                (n, pool.map_or(0, |p| p.total), pool.map_or(0, |p| p.free))
            })
            .collect();
        let free: u64 = pools.iter().map(|p| p.2).sum();
        if free >= pages {
            continue;
        }
        let missing = pages - free;
        let (node, total, _) = pools[0];
        let where_ = match &nodes[..] {
            [one] => format!("node {one}"),
            _ => format!("nodes {}", IdSet::new(nodes.clone())),
        };
        return Err(err(format!(
            "{where_} has {free} free {} pages, the arrays need {pages} ({missing} missing); reserve them: echo {} | sudo tee /sys/devices/system/node/node{node}/hugepages/hugepages-{kib}kB/nr_hugepages",
            Bytes(page as u64),
            total + missing
        )));
    }
    Ok(())
}

/// Refuses explicit huge pages the node cannot give for a pointer chase's
/// working set of `bytes`, chased from `cpu`, on each of `pages`.
pub fn check_working_set(
    topo: &Topology,
    pages: &[Hugepages],
    policy: &Policy,
    cpu: usize,
    bytes: u64,
) -> Result<()> {
    let words = (bytes as usize).div_ceil(8);
    let node = topo.cpu(cpu).map(|c| c.node);
    for &p in pages {
        let Some(page) = p.explicit_bytes() else {
            continue;
        };
        let whole = 0..words;
        let needs = array_needs(
            policy,
            words,
            page,
            std::slice::from_ref(&whole),
            &[node],
            &topo.allowed_mems,
        );
        check(topo, p, &needs)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> IdSet {
        IdSet::new(vec![0, 1])
    }

    #[test]
    fn first_touch_needs_follow_the_threads() {
        // 8 MiB on 2 MiB pages = 4 pages; two threads on nodes 0 and 1.
        let elements = (8 << 20) / 8;
        let ranges = super::super::partition_for(elements, 2, Hugepages::Explicit2M);
        let needs = array_needs(
            &Policy::Local,
            elements,
            2 << 20,
            &ranges,
            &[Some(0), Some(1)],
            &two(),
        );
        assert_eq!(
            needs,
            vec![
                Need {
                    nodes: IdSet::new(vec![0]),
                    pages: 2
                },
                Need {
                    nodes: IdSet::new(vec![1]),
                    pages: 2
                }
            ]
        );
        let inter = array_needs(
            &Policy::Interleave(two()),
            elements + 1,
            2 << 20,
            &ranges,
            &[],
            &two(),
        );
        assert_eq!(inter.iter().map(|n| n.pages).collect::<Vec<_>>(), [3, 3]);
    }

    #[test]
    fn short_pools_are_named_with_the_reserving_command() {
        let (_dir, topo) = crate::topology::fixture::machine("xeon-e5-2680v3-2s");
        let need = |pages| {
            vec![Need {
                nodes: IdSet::new(vec![1]),
                pages,
            }]
        };
        // The fixture reserves 16 free 2 MiB pages per node.
        assert!(check(&topo, Hugepages::Explicit2M, &need(16)).is_ok());
        let e = check(&topo, Hugepages::Explicit2M, &need(20))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("node 1 has 16 free 2 MiB pages, the arrays need 20 (4 missing)"),
            "{e}"
        );
        assert!(e.contains("echo 20 | sudo tee /sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages"), "{e}");
        assert!(check(&topo, Hugepages::Thp, &need(1 << 40)).is_ok());
        // A Haswell Xeon's flags lack pdpe1gb: no 1 GiB pages, whatever the pools.
        let e = check(&topo, Hugepages::Explicit1G, &need(1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no 1 GiB pages (no pdpe1gb flag)"), "{e}");
    }
}
