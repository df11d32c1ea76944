//! Which CPU each thread runs on.
//!
//! Turns a placement request (the default, or an explicit CPU list) plus the
//! topology into one CPU per thread, always inside the CPUs this process may
//! use (the mask inherited from taskset, numactl or the batch system).

use crate::error::{Error, Result};
use crate::topology::Topology;
use crate::topology::cpulist::{IdSet, parse_list};

/// CPUs in "spread" order: the first hardware thread of every allowed core,
/// dealt round-robin over NUMA nodes (nodes themselves alternating between
/// sockets), then the second hardware threads in the same order, and so on.
pub fn spread_order(topo: &Topology, allowed: &IdSet) -> Vec<usize> {
    let nodes = nodes_alternating_sockets(topo);
    // For each node, per SMT tier, the allowed CPUs in core order.
    let mut tiers: Vec<Vec<Vec<usize>>> = Vec::new();
    for core in topo.cores() {
        let threads: Vec<usize> = core
            .ids()
            .iter()
            .copied()
            .filter(|&c| allowed.contains(c))
            .collect();
        for (tier, &cpu) in threads.iter().enumerate() {
            if tiers.len() <= tier {
                tiers.push(vec![Vec::new(); nodes.len()]);
            }
            let node = topo.cpu(cpu).map_or(0, |c| c.node);
            let slot = nodes.iter().position(|&n| n == node).unwrap_or(0);
            tiers[tier][slot].push(cpu);
        }
    }
    let mut order = Vec::new();
    for tier in tiers {
        let longest = tier.iter().map(Vec::len).max().unwrap_or(0);
        for i in 0..longest {
            order.extend(tier.iter().filter_map(|node_cpus| node_cpus.get(i)));
        }
    }
    order
}

/// Node ids ordered so that consecutive nodes sit on different sockets
/// (0,4,1,5,... on a 2-socket, 8-node machine).
fn nodes_alternating_sockets(topo: &Topology) -> Vec<usize> {
    let mut by_package: Vec<Vec<usize>> = Vec::new();
    for package in topo.packages() {
        let nodes: IdSet = topo
            .cpus
            .iter()
            .filter(|c| c.package == package)
            .map(|c| c.node)
            .collect();
        by_package.push(nodes.ids().to_vec());
    }
    let mut order: Vec<usize> = Vec::new();
    let longest = by_package.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for nodes in &by_package {
            if let Some(&n) = nodes.get(i)
                && !order.contains(&n)
            {
                order.push(n);
            }
        }
    }
    for n in &topo.nodes {
        if !order.contains(&n.id) {
            order.push(n.id);
        }
    }
    order
}

/// membw's default: one thread per physical core of the allowed CPUs, spread
/// over sockets and NUMA nodes; `threads` picks the first N of that order
/// (going on to SMT siblings only when there are more threads than cores).
/// Threads are numbered in CPU order.
pub fn default_placement(topo: &Topology, threads: Option<usize>) -> Result<Vec<usize>> {
    let order = spread_order(topo, &topo.allowed_cpus);
    let cores = count_cores(topo, &topo.allowed_cpus);
    let n = threads.unwrap_or(cores);
    if n == 0 {
        return Err(Error::Usage("--threads must be at least 1".into()));
    }
    if n > order.len() {
        return Err(Error::Usage(format!(
            "--threads {n}: only {} CPUs are allowed ({})",
            order.len(),
            topo.allowed_cpus
        )));
    }
    let mut cpus = order[..n].to_vec();
    cpus.sort_unstable();
    Ok(cpus)
}

fn count_cores(topo: &Topology, allowed: &IdSet) -> usize {
    topo.cores()
        .iter()
        .filter(|c| c.intersects(allowed))
        .count()
}

/// `--cpus 0,2,4-10:2`: thread i runs on the i-th listed CPU. Every CPU must
/// be allowed and listed once; `threads`, if given, must match the count or
/// take a prefix of it.
pub fn cpu_list_placement(
    topo: &Topology,
    list: &str,
    threads: Option<usize>,
) -> Result<Vec<usize>> {
    let cpus = parse_list(list).map_err(|e| Error::Usage(format!("--cpus '{list}': {e}")))?;
    if cpus.is_empty() {
        return Err(Error::Usage(format!("--cpus '{list}': no CPU listed")));
    }
    let mut seen = std::collections::HashSet::new();
    for &cpu in &cpus {
        if !seen.insert(cpu) {
            return Err(Error::Usage(format!(
                "--cpus '{list}': CPU {cpu} is listed twice"
            )));
        }
        if topo.cpu(cpu).is_none() {
            return Err(Error::Usage(format!(
                "--cpus '{list}': CPU {cpu} does not exist or is offline (online: {})",
                topo.online_cpus()
            )));
        }
        if !topo.allowed_cpus.contains(cpu) {
            return Err(Error::Usage(format!(
                "--cpus '{list}': CPU {cpu} is outside the allowed set {}",
                topo.allowed_cpus
            )));
        }
    }
    match threads {
        None => Ok(cpus),
        Some(n) if n >= 1 && n <= cpus.len() => Ok(cpus[..n].to_vec()),
        Some(n) => Err(Error::Usage(format!(
            "--threads {n} needs {n} CPUs but --cpus '{list}' lists {}",
            cpus.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_uses_allowed_cpus_once_each() {
        let topo = Topology::live().unwrap();
        let cpus = default_placement(&topo, None).unwrap();
        assert_eq!(cpus.len(), count_cores(&topo, &topo.allowed_cpus));
        assert!(cpus.iter().all(|&c| topo.allowed_cpus.contains(c)));
        assert!(default_placement(&topo, Some(0)).is_err());
        assert!(default_placement(&topo, Some(100_000)).is_err());
    }

    #[test]
    fn cpu_lists_are_checked() {
        let topo = Topology::live().unwrap();
        let first = topo.allowed_cpus.first().unwrap();
        assert_eq!(
            cpu_list_placement(&topo, &first.to_string(), None).unwrap(),
            vec![first]
        );
        let twice = format!("{first},{first}");
        assert!(
            cpu_list_placement(&topo, &twice, None)
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        assert!(
            cpu_list_placement(&topo, "9999", None)
                .unwrap_err()
                .to_string()
                .contains("9999")
        );
        assert!(cpu_list_placement(&topo, "0-x", None).is_err());
        assert!(cpu_list_placement(&topo, &first.to_string(), Some(2)).is_err());
    }
}
