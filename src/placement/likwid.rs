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
//!
//! [`parse`] checks the grammar without a topology; [`resolve`] maps the
//! parsed expression onto one.

use super::domains::{Domains, Kind, interleave};
use crate::topology::cpulist::parse_list;

/// A domain as written: `S1`, `N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    pub kind: Kind,
    pub index: usize,
}

impl std::fmt::Display for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.kind, self.index) {
            (Kind::Node, 0) => write!(f, "N"),
            (kind, i) => write!(f, "{}{i}", kind.letter()),
        }
    }
}

/// One `@`-separated part of an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// `0,2,4-7`: physical ids.
    Physical(Vec<usize>),
    /// `S0:0-7`: logical ids inside a domain.
    /// `at`: where the id list starts in the part, for errors about it.
    Logical {
        domain: Domain,
        ids: Vec<usize>,
        at: usize,
    },
    /// `E:S0:8:1:2`: `count` logical ids in chunks of `chunk`, `stride` apart.
    Expression {
        domain: Domain,
        count: usize,
        chunk: usize,
        stride: usize,
    },
    /// `S:scatter`: round-robin over every domain of a kind.
    Scatter(Kind),
}

/// A parsed expression: its parts with the column each starts at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    pub parts: Vec<(usize, Part)>,
}

fn kind_of(letter: char) -> Option<Kind> {
    "NSMCD"
        .contains(letter)
        .then(|| Kind::from_letter(letter))?
}

/// `S1` → the domain it names.
fn parse_domain(name: &str) -> Result<Domain, String> {
    let mut chars = name.chars();
    let letter = chars.next().ok_or("missing domain")?;
    let kind = kind_of(letter)
        .ok_or_else(|| format!("unknown domain '{name}' (N, S<i>, M<i>, C<i>, D<i>)"))?;
    let index_text = chars.as_str();
    let index = if kind == Kind::Node && index_text.is_empty() {
        0
    } else {
        index_text
            .parse()
            .map_err(|_| format!("domain '{name}' needs a number, e.g. {letter}0"))?
    };
    Ok(Domain { kind, index })
}

fn parse_part(part: &str) -> Result<Part, String> {
    if let Some(rest) = part.strip_prefix("E:") {
        let fields: Vec<&str> = rest.split(':').collect();
        if !(fields.len() == 2 || fields.len() == 4) {
            return Err("an expression is E:<domain>:<count>[:<chunk>:<stride>]".into());
        }
        let domain = parse_domain(fields[0])?;
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
        return Ok(Part::Expression {
            domain,
            count,
            chunk,
            stride,
        });
    }
    match part.split_once(':') {
        Some((kind, "scatter")) => {
            let k = kind
                .chars()
                .next()
                .filter(|_| kind.len() == 1)
                .and_then(kind_of);
            k.map(Part::Scatter)
                .ok_or_else(|| format!("'{kind}:scatter' needs a domain letter: N, S, M, C or D"))
        }
        Some((name, list)) => {
            let domain = parse_domain(name)?;
            let ids = parse_list(list).map_err(|e| format!("logical ids '{list}': {e}"))?;
            if ids.is_empty() {
                return Err(format!("{name}: no logical ids"));
            }
            Ok(Part::Logical {
                domain,
                ids,
                at: name.len() + 1,
            })
        }
        None => parse_list(part)
            .map(Part::Physical)
            .map_err(|e| format!("CPU list '{part}': {e}")),
    }
}

/// Parses an expression; the error names the column of the faulty part.
pub fn parse(expr: &str) -> Result<Expr, String> {
    let mut parts = Vec::new();
    let mut column = 1;
    for p in expr.split('@') {
        if p.trim().is_empty() {
            return Err(format!("column {column}: empty part"));
        }
        let part = parse_part(p.trim()).map_err(|e| format!("column {column}: {e}"))?;
        parts.push((column, part));
        column += p.len() + 1;
    }
    Ok(Expr { parts })
}

/// A domain's CPUs in logical order.
fn domain_cpus(d: &Domains, domain: &Domain) -> Result<Vec<usize>, String> {
    let all = d.of_kind(domain.kind);
    let letter = domain.kind.letter();
    let cores = all.get(domain.index).ok_or_else(|| {
        format!(
            "{domain}: no such {} ({} exist: {letter}0-{letter}{})",
            domain.kind.name(),
            all.len(),
            all.len().saturating_sub(1)
        )
    })?;
    if cores.is_empty() {
        return Err(format!("{domain} has no allowed CPUs"));
    }
    Ok(d.tiers(cores, true))
}

fn pick_logical(order: &[usize], ids: &[usize], domain: &Domain) -> Result<Vec<usize>, String> {
    if let Some(&beyond) = ids.iter().find(|&&i| i >= order.len()) {
        let have = match order.len() {
            0 => "none".to_string(),
            1 => "0".to_string(),
            n => format!("0-{}", n - 1),
        };
        return Err(format!(
            "logical id {beyond} is beyond {domain}'s {} (logical ids {have})",
            crate::units::plural(order.len(), "CPU")
        ));
    }
    Ok(ids.iter().map(|&i| order[i]).collect())
}

fn resolve_part(d: &Domains, part: &Part) -> Result<Vec<usize>, String> {
    match part {
        Part::Expression {
            domain,
            count,
            chunk,
            stride,
        } => {
            let (count, chunk, stride) = (*count, *chunk, *stride);
            let order = domain_cpus(d, domain)?;
            if count > order.len() {
                return Err(format!(
                    "{domain} has {} CPUs, fewer than the {count} asked for",
                    order.len()
                ));
            }
            let mut ids = Vec::with_capacity(count);
            let mut start = 0;
            while ids.len() < count {
                if start >= order.len() {
                    return Err(format!(
                        "{domain} has {} CPUs, too few for {count} in chunks of {chunk} with stride {stride}",
                        order.len()
                    ));
                }
                ids.extend((start..start + chunk).take(count - ids.len()));
                start += stride;
            }
            pick_logical(&order, &ids, domain)
        }
        Part::Scatter(kind) => {
            let groups: Vec<Vec<usize>> = d
                .of_kind(*kind)
                .iter()
                .map(|cores| d.tiers(cores, true))
                .collect();
            Ok(interleave(&groups))
        }
        Part::Logical { domain, ids, .. } => pick_logical(&domain_cpus(d, domain)?, ids, domain),
        Part::Physical(ids) => {
            if let Some(cpu) = ids.iter().find(|&&c| !d.allowed.contains(c)) {
                return Err(format!(
                    "CPU {cpu} is outside the allowed set {}",
                    d.allowed
                ));
            }
            Ok(ids.clone())
        }
    }
}

/// Resolves a parsed expression to CPUs in pinning order.
pub fn resolve(d: &Domains, expr: &Expr) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for (column, part) in &expr.parts {
        // An id beyond the domain is the id list's fault, not the domain's.
        let at = match part {
            Part::Logical { at, .. } => column + at,
            _ => *column,
        };
        let got = resolve_part(d, part).map_err(|e| format!("column {at}: {e}"))?;
        for cpu in got {
            if cpus.contains(&cpu) {
                return Err(format!("column {column}: CPU {cpu} is selected twice"));
            }
            cpus.push(cpu);
        }
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar_faults_are_found_without_a_topology() {
        assert!(parse("S0:0-3@S1:0-3").is_ok());
        assert!(parse("E:N:4:1:2").is_ok());
        let e = parse("S0:0-3@X1:0").unwrap_err();
        assert!(e.starts_with("column 8: unknown domain 'X1'"), "{e}");
        assert!(parse("S0:0-3@").unwrap_err().contains("empty part"));
        assert!(parse("E:S0:0").unwrap_err().contains("count '0'"));
        assert!(parse("Q:scatter").unwrap_err().contains("domain letter"));
    }

    #[test]
    fn domains_print_as_written() {
        let Part::Logical { domain, .. } = parse_part("M3:0").unwrap() else {
            panic!("not logical")
        };
        assert_eq!(domain.to_string(), "M3");
        let Part::Logical { domain, .. } = parse_part("N:0").unwrap() else {
            panic!("not logical")
        };
        assert_eq!(domain.to_string(), "N");
    }
}
