//! Named strategies: `compact`, `spread`, `per-socket=K`, `per-numa=K`,
//! `per-l3=K`, `stride=S`. Each orders the allowed CPUs so that the first N
//! are the best N for that strategy; `--threads N` takes them. Without
//! `--smt` only the first hardware thread of each core is used.

use super::{Core, cores, group_by, interleave};
use crate::topology::Topology;
use crate::topology::cpulist::IdSet;

/// Cores dealt across sockets, then NUMA nodes, then L3 domains: the first
/// N cores of this order are as far apart as the machine allows.
pub fn spread_cores(cores: &[Core]) -> Vec<Core> {
    let sockets = group_by(cores, |c| c.package);
    let per_socket: Vec<Vec<Core>> = sockets
        .iter()
        .map(|s| {
            let nodes: Vec<Vec<Core>> = group_by(s, |c| c.node)
                .iter()
                .map(|n| interleave(&group_by(n, |c| c.llc)))
                .collect();
            interleave(&nodes)
        })
        .collect();
    interleave(&per_socket)
}

/// CPUs of `cores` in tiers: the first hardware thread of each core (in the
/// given core order), then, with `smt`, the second of each, and so on.
fn tiers(cores: &[Core], smt: bool) -> Vec<usize> {
    let depth = if smt {
        cores.iter().map(|c| c.cpus.len()).max().unwrap_or(1)
    } else {
        1
    };
    (0..depth)
        .flat_map(|t| cores.iter().filter_map(move |c| c.cpus.get(t).copied()))
        .collect()
}

/// `K` per group: from each group its first K CPUs in spread order, groups
/// themselves dealt round-robin in spread order.
fn per_group(
    cores: &[Core],
    k: usize,
    smt: bool,
    key: fn(&Core) -> Option<usize>,
    what: &str,
) -> Result<Vec<usize>, String> {
    let spread = spread_cores(cores);
    let groups = group_by(&spread, key);
    let mut picks = Vec::new();
    for g in &groups {
        let cpus = tiers(g, smt);
        if cpus.len() < k {
            let first = g.first().map_or(0, |c| c.cpus[0]);
            return Err(format!(
                "the {what} of CPU {first} has only {} usable CPUs, fewer than {k}{}",
                cpus.len(),
                if smt {
                    ""
                } else {
                    " (add --smt to use hardware threads)"
                }
            ));
        }
        picks.push(cpus[..k].to_vec());
    }
    Ok(interleave(&picks))
}

/// Resolves a strategy to one CPU per thread, in CPU order.
pub fn resolve(
    topo: &Topology,
    allowed: &IdSet,
    spec: &str,
    threads: Option<usize>,
    smt: bool,
) -> Result<Vec<usize>, String> {
    let err = |m: String| format!("--strategy '{spec}': {m}");
    let all = cores(topo, allowed);
    let (name, arg) = match spec.split_once('=') {
        Some((n, a)) => (n.trim(), Some(a.trim())),
        None => (spec.trim(), None),
    };
    let number = |what: &str| -> Result<usize, String> {
        let a = arg.ok_or_else(|| err(format!("'{name}' needs a {what}, e.g. {name}=1")))?;
        match a.parse::<usize>() {
            Ok(v) if v >= 1 => Ok(v),
            _ => Err(err(format!("'{a}' is not a positive {what}"))),
        }
    };
    if arg.is_some() && matches!(name, "compact" | "spread") {
        return Err(err(format!("'{name}' takes no value")));
    }
    let order: Vec<usize> = match name {
        "compact" => {
            let mut by_place = all.clone();
            by_place.sort_by_key(|c| (c.package, c.node, c.cpus[0]));
            if smt {
                by_place.iter().flat_map(|c| c.cpus.clone()).collect()
            } else {
                tiers(&by_place, false)
            }
        }
        "spread" => tiers(&spread_cores(&all), smt),
        "per-socket" => {
            per_group(&all, number("count")?, smt, |c| Some(c.package), "socket").map_err(err)?
        }
        "per-numa" => {
            per_group(&all, number("count")?, smt, |c| Some(c.node), "NUMA node").map_err(err)?
        }
        "per-l3" => per_group(&all, number("count")?, smt, |c| c.llc, "L3 domain").map_err(err)?,
        "stride" => {
            let s = number("stride")?;
            let mut ordered = all.clone();
            ordered.sort_by_key(|c| c.cpus[0]);
            let picked: Vec<Core> = ordered.into_iter().step_by(s).collect();
            tiers(&picked, smt)
        }
        other => {
            return Err(err(format!(
                "unknown strategy '{other}' (compact, spread, per-socket=K, per-numa=K, per-l3=K, stride=S)"
            )));
        }
    };
    let n = threads.unwrap_or(order.len());
    if n > order.len() {
        return Err(err(format!(
            "--threads {n} but the strategy yields {} CPUs{}",
            order.len(),
            if smt {
                ""
            } else {
                " (add --smt to use hardware threads)"
            }
        )));
    }
    let mut cpus = order[..n].to_vec();
    cpus.sort_unstable();
    Ok(cpus)
}
