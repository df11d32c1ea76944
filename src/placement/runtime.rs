//! The affinity variables of the two OpenMP runtimes people build STREAM
//! with, with their runtimes' semantics:
//!
//! - GNU libgomp's `GOMP_CPU_AFFINITY`: CPUs or ranges `a-b[:stride]`,
//!   separated by spaces or commas; thread i runs on the i-th CPU, wrapping
//!   around when there are more threads than CPUs.
//! - Intel's `KMP_AFFINITY`: `[modifier,...]type[,permute[,offset]]` with
//!   types `compact`, `scatter`, `balanced`, `explicit` (with
//!   `proclist=[...]`), `none`/`disabled`, and modifiers `granularity=`,
//!   `proclist=`, `verbose`, `respect`, `warnings` and their `no` forms.
//!   Compact fills hardware threads of a core, then cores of a package, then
//!   packages; scatter deals across packages first; `permute` moves that
//!   many innermost levels to the outside, `offset` skips hardware threads.
//!   membw pins each thread to one hardware thread, whatever the
//!   granularity (a core or socket granularity would only widen the mask).

use super::Fault;
use super::domains::Domains;
use crate::topology::Topology;
use crate::topology::cpulist::parse_list;

/// Parses `GOMP_CPU_AFFINITY`: the CPUs listed, in order, at least one.
pub fn parse_gomp(text: &str) -> Result<Vec<usize>, String> {
    let list: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
        .collect();
    if list.is_empty() {
        return Err("no CPU listed".to_string());
    }
    parse_list(&list.join(",")).map_err(|e| e.to_string())
}

/// libgomp's assignment: thread i on the i-th listed CPU, wrapping around;
/// `threads` long, or one per listed CPU.
pub fn gomp(cpus: &[usize], threads: Option<usize>) -> Vec<usize> {
    let n = threads.unwrap_or(cpus.len());
    (0..n).map(|i| cpus[i % cpus.len()]).collect()
}

/// What a `KMP_AFFINITY` value asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kmp {
    /// No binding: the runtime leaves threads alone.
    None,
    Explicit(Vec<usize>),
    Compact {
        permute: usize,
        offset: usize,
    },
    Scatter {
        permute: usize,
        offset: usize,
    },
    Balanced,
}

/// Parses a `KMP_AFFINITY` value.
pub fn parse_kmp(text: &str) -> Result<Kmp, String> {
    // Split on commas outside proclist's brackets.
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced brackets in proclist".into());
    }
    parts.push(text[start..].trim());
    let mut kind: Option<&str> = None;
    let mut proclist: Option<Vec<usize>> = None;
    let mut numbers: Vec<usize> = Vec::new();
    for p in parts {
        let lower = p.to_ascii_lowercase();
        if let Some(g) = lower.strip_prefix("granularity=") {
            if !["fine", "thread", "core", "tile", "die", "socket", "package"].contains(&g) {
                return Err(format!(
                    "unknown granularity '{g}' (fine, thread, core, tile, die, socket)"
                ));
            }
        } else if let Some(list) = lower.strip_prefix("proclist=") {
            let inner = list
                .strip_prefix('[')
                .and_then(|l| l.strip_suffix(']'))
                .ok_or_else(|| format!("proclist '{list}' needs brackets: proclist=[0,2,4]"))?;
            proclist = Some(parse_proclist(inner)?);
        } else if [
            "verbose", "noverbose", "respect", "norespect", "warnings", "nowarnings", "reset",
            "noreset",
        ]
        .contains(&lower.as_str())
        {
        } else if [
            "compact", "scatter", "balanced", "explicit", "none", "disabled",
        ]
        .contains(&lower.as_str())
        {
            if kind.is_some() {
                return Err(format!(
                    "two affinity types ('{}' and '{p}')",
                    kind.unwrap_or("")
                ));
            }
            kind = Some(match lower.as_str() {
                "compact" => "compact",
                "scatter" => "scatter",
                "balanced" => "balanced",
                "explicit" => "explicit",
                _ => "none",
            });
        } else if let Ok(n) = lower.parse::<usize>() {
            if kind.is_none() {
                return Err(format!("'{p}' before the affinity type"));
            }
            numbers.push(n);
        } else {
            return Err(format!(
                "'{p}' is not understood (types: compact, scatter, balanced, explicit, none)"
            ));
        }
    }
    let kind = kind.ok_or("no affinity type (compact, scatter, balanced, explicit, none)")?;
    if numbers.len() > 2 {
        return Err("at most a permute and an offset follow the type".into());
    }
    let (permute, offset) = (
        numbers.first().copied().unwrap_or(0),
        numbers.get(1).copied().unwrap_or(0),
    );
    if kind == "explicit" {
        return proclist
            .map(Kmp::Explicit)
            .ok_or_else(|| "explicit needs proclist=[...]".into());
    }
    if proclist.is_some() {
        return Err("proclist goes with the explicit type".into());
    }
    Ok(match kind {
        "compact" => Kmp::Compact { permute, offset },
        "scatter" => Kmp::Scatter { permute, offset },
        "balanced" => Kmp::Balanced,
        _ => Kmp::None,
    })
}

/// `0,2,4-7,{8,9}`: a set in braces stands for its first CPU (membw pins
/// each thread to one).
fn parse_proclist(text: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (item, tail) = if let Some(set) = rest.strip_prefix('{') {
            let end = set.find('}').ok_or("a '{' in proclist is not closed")?;
            let ids = parse_list(&set[..end]).map_err(|e| format!("proclist set: {e}"))?;
            out.push(*ids.first().ok_or("an empty set in proclist")?);
            ("", &set[end + 1..])
        } else {
            match rest.find(',') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            }
        };
        if !item.is_empty() {
            out.extend(parse_list(item).map_err(|e| format!("proclist: {e}"))?);
        }
        rest = tail.trim_start_matches(',').trim();
    }
    if out.is_empty() {
        return Err("empty proclist".into());
    }
    Ok(out)
}

/// CPUs for `threads` threads under a `KMP_AFFINITY` type.
pub fn kmp(
    topo: &Topology,
    d: &Domains,
    kmp: &Kmp,
    threads: Option<usize>,
) -> Result<Vec<usize>, Fault> {
    // (package, core within the package, hardware thread) of every allowed
    // CPU, and the CPU itself.
    let mut levels: Vec<([usize; 3], usize)> = Vec::new();
    let mut cores_seen: std::collections::BTreeMap<usize, usize> = Default::default();
    for core in &d.cores {
        let within = cores_seen.entry(core.package).or_insert(0);
        for (t, &cpu) in core.cpus.iter().enumerate() {
            levels.push(([core.package, *within, t], cpu));
        }
        *within += 1;
    }
    let ordered = |innermost_first: [usize; 3], permute: usize, offset: usize| {
        // Levels from outermost to innermost; permute moves innermost ones out.
        let mut order: Vec<usize> = innermost_first.iter().rev().copied().collect();
        let k = permute.min(2);
        order.rotate_right(k);
        let mut sorted = levels.clone();
        sorted.sort_by_key(|(l, _)| order.iter().map(|&i| l[i]).collect::<Vec<_>>());
        sorted
            .iter()
            .skip(offset)
            .map(|&(_, cpu)| cpu)
            .collect::<Vec<usize>>()
    };
    let order: Vec<usize> = match kmp {
        // Spec::kmp makes it Spec::Unpinned: no CPUs to order.
        Kmp::None => {
            return Err(
                "binds nothing (none/disabled): the threads are left unbound"
                    .to_string()
                    .into(),
            );
        }
        Kmp::Explicit(list) => {
            for &c in list {
                if topo.cpu(c).is_none() || !d.allowed.contains(c) {
                    return Err(
                        format!("CPU {c} is not one this process may use ({})", d.allowed).into(),
                    );
                }
            }
            list.clone()
        }
        // Innermost first: hardware thread, core, package.
        Kmp::Compact { permute, offset } => ordered([2, 1, 0], *permute, *offset),
        Kmp::Scatter { permute, offset } => ordered([0, 1, 2], *permute, *offset),
        Kmp::Balanced => {
            let n = threads.unwrap_or(d.cores.len()).max(1);
            let cores = d.spread_order();
            let per = n.div_ceil(cores.len().max(1));
            (0..n)
                .filter_map(|i| {
                    d.cores
                        .get(cores[(i / per) % cores.len()])?
                        .cpus
                        .get(i % per)
                        .copied()
                })
                .collect()
        }
    };
    if order.is_empty() {
        return Err("selects no CPU".to_string().into());
    }
    let n = threads.unwrap_or(match kmp {
        Kmp::Explicit(l) => l.len(),
        _ => d.cores.len(),
    });
    Ok((0..n).map(|i| order[i % order.len()]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gomp_lists_wrap_like_libgomp() {
        let listed = parse_gomp("0 2 4-10:2").unwrap();
        assert_eq!(gomp(&listed, None), vec![0, 2, 4, 6, 8, 10]);
        assert_eq!(gomp(&parse_gomp("0,3").unwrap(), Some(3)), vec![0, 3, 0]);
        assert!(parse_gomp("  ").is_err());
        assert!(parse_gomp("0 x").is_err());
    }

    #[test]
    fn kmp_values_parse() {
        assert_eq!(
            parse_kmp("granularity=fine,explicit,proclist=[0,2,{4,5},6-7]").unwrap(),
            Kmp::Explicit(vec![0, 2, 4, 6, 7])
        );
        assert_eq!(
            parse_kmp("compact").unwrap(),
            Kmp::Compact {
                permute: 0,
                offset: 0
            }
        );
        assert_eq!(
            parse_kmp("granularity=core,scatter,1,2").unwrap(),
            Kmp::Scatter {
                permute: 1,
                offset: 2
            }
        );
        assert_eq!(parse_kmp("verbose,none").unwrap(), Kmp::None);
        for bad in [
            "compactt",
            "explicit",
            "granularity=atom,compact",
            "scatter,proclist=[1]",
            "1,compact",
            "compact,1,2,3",
            "explicit,proclist=[0",
            "",
        ] {
            assert!(parse_kmp(bad).is_err(), "{bad}");
        }
    }
}
