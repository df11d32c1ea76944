//! likwid-pin expressions (`likwid-pin -c ...`).
//!
//! - `0,2,4-7`: physical CPU ids;
//! - `N:0-23`, `S0:0-7`, `M1:0-3`, `C0:0-3`, `D0:0-3`: logical ids inside a
//!   domain (node, socket, NUMA memory domain, last-level cache, die). As in
//!   likwid, a domain numbers the first hardware thread of every core first,
//!   then the second ones, so `S0:0-7` means eight cores, not four with SMT;
//! - `E:S0:8:1:2`: count:chunk:stride over a domain's logical ids;
//! - `N:scatter`, `S:scatter`, `M:scatter`, `C:scatter`: round-robin over
//!   every domain of that kind;
//! - parts joined with `@`, threads pinned in the order written.

use super::domains::{Domains, Kind, interleave};
use crate::topology::cpulist::parse_list;

fn kind_of(letter: char) -> Option<Kind> {
    "NSMCD"
        .contains(letter)
        .then(|| Kind::from_letter(letter))?
}

/// `S1` → the domain's CPUs in logical order.
fn domain(d: &Domains, name: &str) -> Result<Vec<usize>, String> {
    let mut chars = name.chars();
    let letter = chars.next().ok_or("missing domain")?;
    let kind = kind_of(letter)
        .ok_or_else(|| format!("unknown domain '{name}' (N, S<i>, M<i>, C<i>, D<i>)"))?;
    let all = d.of_kind(kind);
    let index_text = chars.as_str();
    let index: usize = if kind == Kind::Node && index_text.is_empty() {
        0
    } else {
        index_text
            .parse()
            .map_err(|_| format!("domain '{name}' needs a number, e.g. {letter}0"))?
    };
    let cores = all.get(index).ok_or_else(|| {
        format!(
            "{name}: no such {} ({} exist: {letter}0-{letter}{})",
            kind.name(),
            all.len(),
            all.len().saturating_sub(1)
        )
    })?;
    if cores.is_empty() {
        return Err(format!("{name} has no allowed CPUs"));
    }
    Ok(d.tiers(cores, true))
}

fn pick_logical(order: &[usize], ids: &[usize], domain: &str) -> Result<Vec<usize>, String> {
    ids.iter()
        .map(|&i| {
            order.get(i).copied().ok_or_else(|| {
                format!(
                    "{domain} has {} CPUs, logical id {i} is beyond them",
                    order.len()
                )
            })
        })
        .collect()
}

fn part(d: &Domains, part: &str) -> Result<Vec<usize>, String> {
    if let Some(rest) = part.strip_prefix("E:") {
        let fields: Vec<&str> = rest.split(':').collect();
        if !(fields.len() == 2 || fields.len() == 4) {
            return Err("an expression is E:<domain>:<count>[:<chunk>:<stride>]".into());
        }
        let order = domain(d, fields[0])?;
        let num = |s: &str, what: &str| -> Result<usize, String> {
            s.parse::<usize>()
                .ok()
                .filter(|&v| v >= 1)
                .ok_or_else(|| format!("{what} '{s}' is not a positive number"))
        };
        let count = num(fields[1], "count")?;
        let (chunk, stride) = if fields.len() == 4 {
            (num(fields[2], "chunk")?, num(fields[3], "stride")?)
        } else {
            (1, 1)
        };
        if count > order.len() {
            return Err(format!(
                "{} has {} CPUs, fewer than the {count} asked for",
                fields[0],
                order.len()
            ));
        }
        let mut ids = Vec::with_capacity(count);
        let mut start = 0;
        while ids.len() < count {
            if start >= order.len() {
                return Err(format!(
                    "{} has {} CPUs, too few for {count} in chunks of {chunk} with stride {stride}",
                    fields[0],
                    order.len()
                ));
            }
            ids.extend((start..start + chunk).take(count - ids.len()));
            start += stride;
        }
        return pick_logical(&order, &ids, fields[0]);
    }
    match part.split_once(':') {
        Some((kind, "scatter")) => {
            let k = kind
                .chars()
                .next()
                .filter(|_| kind.len() == 1)
                .and_then(kind_of);
            let k = k.ok_or_else(|| {
                format!("'{kind}:scatter' needs a domain letter: N, S, M, C or D")
            })?;
            let groups: Vec<Vec<usize>> = d
                .of_kind(k)
                .iter()
                .map(|cores| d.tiers(cores, true))
                .collect();
            Ok(interleave(&groups))
        }
        Some((name, list)) => {
            let order = domain(d, name)?;
            let ids = parse_list(list).map_err(|e| format!("logical ids '{list}': {e}"))?;
            if ids.is_empty() {
                return Err(format!("{name}: no logical ids"));
            }
            pick_logical(&order, &ids, name)
        }
        None => {
            let ids = parse_list(part).map_err(|e| format!("CPU list '{part}': {e}"))?;
            for &cpu in &ids {
                if !d.allowed.contains(cpu) {
                    return Err(format!(
                        "CPU {cpu} is outside the allowed set {}",
                        d.allowed
                    ));
                }
            }
            Ok(ids)
        }
    }
}

/// Resolves an expression to CPUs in pinning order.
pub fn resolve(d: &Domains, expr: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    let mut column = 1;
    for p in expr.split('@') {
        if p.trim().is_empty() {
            return Err(format!("column {column}: empty part"));
        }
        let got = part(d, p.trim()).map_err(|e| format!("column {column}: {e}"))?;
        for cpu in got {
            if cpus.contains(&cpu) {
                return Err(format!("column {column}: CPU {cpu} is selected twice"));
            }
            cpus.push(cpu);
        }
        column += p.len() + 1;
    }
    Ok(cpus)
}
