//! Named strategies: `compact`, `spread`, `per-socket=K`, `per-numa=K`,
//! `per-l3=K`, `stride=S`. Each orders the allowed CPUs so that the first N
//! are the best N for that strategy; a thread count N takes them. Without
//! SMT only the first hardware thread of each core is used.

use super::Fault;
use super::domains::{Domains, Kind, group_by, interleave};

/// `K` per domain: from each domain its first K CPUs in spread order,
/// domains themselves dealt round-robin in spread order.
fn per_domain(d: &Domains, k: usize, smt: bool, kind: Kind) -> Result<Vec<usize>, Fault> {
    let spread = d.spread_order();
    let key = |&i: &usize| -> Option<usize> {
        let c = &d.cores[i];
        match kind {
            Kind::Socket => Some(c.package),
            Kind::Memory => Some(c.node),
            _ => c.llc,
        }
    };
    let mut picks = Vec::new();
    for group in group_by(&spread, key) {
        let cpus = d.tiers(&group, smt);
        if cpus.len() < k {
            let first = d.cores[group[0]].cpus[0];
            return Err(Fault {
                message: format!(
                    "the {} of CPU {first} has only {} usable CPUs, fewer than {k}",
                    kind_label(kind),
                    cpus.len()
                ),
                smt_would_help: !smt && has_smt(d),
            });
        }
        picks.push(cpus[..k].to_vec());
    }
    Ok(interleave(&picks))
}

/// Whether any allowed core has a second hardware thread to offer.
fn has_smt(d: &Domains) -> bool {
    d.cores.iter().any(|c| c.cpus.len() > 1)
}

fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Socket => "socket",
        Kind::Memory => "NUMA node",
        _ => "L3 domain",
    }
}

/// A named placement strategy, parsed once from its spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Fill a socket (then a NUMA node) before the next.
    Compact,
    /// One thread per core, round-robin over sockets, nodes and L3 domains.
    Spread,
    /// K threads per socket, per NUMA node, per L3 domain.
    PerSocket(usize),
    PerNuma(usize),
    PerL3(usize),
    /// Every S-th core.
    Stride(usize),
}

impl Strategy {
    /// `compact`, `spread`, `per-socket=K`, `per-numa=K`, `per-l3=K`, `stride=S`.
    pub fn parse(spec: &str) -> Result<Strategy, String> {
        // Names in any case: `SPREAD`, `Per-L3=1`.
        let spec = spec.to_ascii_lowercase();
        let (name, arg) = match spec.split_once('=') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (spec.trim(), None),
        };
        let number = |what: &str| -> Result<usize, String> {
            let a = arg.ok_or_else(|| format!("'{name}' needs a {what}, e.g. {name}=1"))?;
            match a.parse::<usize>() {
                Ok(v) if v >= 1 => Ok(v),
                _ => Err(format!("'{a}' is not a positive {what}")),
            }
        };
        if arg.is_some() && matches!(name, "compact" | "spread") {
            return Err(format!("'{name}' takes no value"));
        }
        Ok(match name {
            "compact" => Strategy::Compact,
            "spread" => Strategy::Spread,
            "per-socket" => Strategy::PerSocket(number("count")?),
            "per-numa" => Strategy::PerNuma(number("count")?),
            "per-l3" => Strategy::PerL3(number("count")?),
            "stride" => Strategy::Stride(number("stride")?),
            // Intel's and GNU's words for the same ideas.
            "scatter" | "balanced" | "close" => {
                let ours = if name == "close" { "compact" } else { "spread" };
                return Err(format!(
                    "'{name}' is Intel's or OpenMP's word: membw calls it --strategy {ours}, or give Intel's spelling as --kmp-affinity {name}"
                ));
            }
            other => {
                return Err(format!(
                    "unknown strategy '{other}' (compact, spread, per-socket=K, per-numa=K, per-l3=K, stride=S)"
                ));
            }
        })
    }
}

impl std::str::FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Strategy, String> {
        Strategy::parse(s)
    }
}

impl std::fmt::Display for Strategy {
    /// The spelling `parse` reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Strategy::Compact => f.write_str("compact"),
            Strategy::Spread => f.write_str("spread"),
            Strategy::PerSocket(k) => write!(f, "per-socket={k}"),
            Strategy::PerNuma(k) => write!(f, "per-numa={k}"),
            Strategy::PerL3(k) => write!(f, "per-l3={k}"),
            Strategy::Stride(s) => write!(f, "stride={s}"),
        }
    }
}

/// Resolves a strategy to one CPU per thread, in CPU order.
pub fn resolve(
    d: &Domains,
    strategy: Strategy,
    threads: Option<usize>,
    smt: bool,
) -> Result<Vec<usize>, Fault> {
    let all: Vec<usize> = (0..d.cores.len()).collect();
    let order: Vec<usize> = match strategy {
        Strategy::Compact => {
            let mut by_place = all.clone();
            by_place.sort_by_key(|&i| {
                let c = &d.cores[i];
                (c.package, c.node, c.cpus[0])
            });
            if smt {
                by_place
                    .iter()
                    .flat_map(|&i| d.cores[i].cpus.clone())
                    .collect()
            } else {
                d.tiers(&by_place, false)
            }
        }
        Strategy::Spread => d.tiers(&d.spread_order(), smt),
        Strategy::PerSocket(k) => per_domain(d, k, smt, Kind::Socket)?,
        Strategy::PerNuma(k) => per_domain(d, k, smt, Kind::Memory)?,
        Strategy::PerL3(k) => per_domain(d, k, smt, Kind::Cache)?,
        Strategy::Stride(s) => {
            let picked: Vec<usize> = all.into_iter().step_by(s).collect();
            d.tiers(&picked, smt)
        }
    };
    let n = threads.unwrap_or(order.len());
    if n > order.len() {
        return Err(Fault {
            message: format!(
                "{n} threads but only {} usable",
                match order.len() {
                    1 => "1 CPU is".to_string(),
                    k => format!("{k} CPUs are"),
                }
            ),
            smt_would_help: !smt && has_smt(d),
        });
    }
    let mut cpus = order[..n].to_vec();
    cpus.sort_unstable();
    Ok(cpus)
}
