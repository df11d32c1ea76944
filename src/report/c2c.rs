//! Core-to-core latency for people: per case (a modified or a clean line),
//! the pairs as a matrix (p50 of one hop in ns) and as a heat map, and the
//! pairs grouped by what their CPUs share, which is what explains the
//! matrix (SMT siblings, an L3, a NUMA node, a socket).

use crate::latency::record::{C2cLine, LatencyRecord};
use std::collections::BTreeMap;
use std::fmt::Write;

/// CPUs up to which the whole matrix is printed; past them the groups
/// alone (the JSON and the results file keep every pair).
const MATRIX_CPUS: usize = 32;

/// The order relations print in: nearest first.
const RELATIONS: [&str; 6] = [
    "smt sibling",
    "same L3",
    "same NUMA node",
    "same socket",
    "other socket",
    "unknown",
];

/// The pairs of each case, in the order of [`C2cLine::ALL`]; a record from
/// before the clean case was measured is a modified line.
fn by_case<'a>(pairs: &[&'a LatencyRecord]) -> Vec<(C2cLine, Vec<&'a LatencyRecord>)> {
    C2cLine::ALL
        .into_iter()
        .map(|line| {
            let of: Vec<&LatencyRecord> = pairs
                .iter()
                .copied()
                .filter(|r| r.point.line.unwrap_or(C2cLine::Modified) == line)
                .collect();
            (line, of)
        })
        .filter(|(_, of)| !of.is_empty())
        .collect()
}

/// Both halves of every measured pair: (row CPU, column CPU, p50 ns).
fn cells(pairs: &[&LatencyRecord]) -> BTreeMap<(usize, usize), f64> {
    let mut cells = BTreeMap::new();
    for r in pairs {
        if let Some(peer) = r.point.peer_cpu {
            cells.insert((r.point.cpu, peer), r.latency.p50_ns);
            cells.insert((peer, r.point.cpu), r.latency.p50_ns);
        }
    }
    cells
}

/// The heat maps: one per case.
pub fn plots(pairs: &[&LatencyRecord]) -> Vec<super::Plot> {
    by_case(pairs)
        .into_iter()
        .filter_map(|(line, of)| {
            let cells: Vec<(usize, usize, f64)> = cells(&of)
                .into_iter()
                .map(|((a, b), v)| (a, b, v))
                .collect();
            let svg = crate::report::plot::c2c_plot(&cells, line)?;
            Some(super::Plot {
                title: format!("core-to-core latency, {line} line"),
                file: format!("c2c-{line}.svg"),
                svg,
            })
        })
        .collect()
}

pub fn render(o: &mut String, pairs: &[&LatencyRecord]) {
    for (i, (line, of)) in by_case(pairs).into_iter().enumerate() {
        if i > 0 {
            o.push('\n');
        }
        render_case(o, line, &of);
    }
}

fn render_case(o: &mut String, line: C2cLine, pairs: &[&LatencyRecord]) {
    let cells = cells(pairs);
    let mut groups: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in pairs {
        groups
            .entry(r.relation.as_deref().unwrap_or("unknown"))
            .or_default()
            .push(r.latency.p50_ns);
    }
    let cpus: Vec<usize> = {
        let mut c: Vec<usize> = cells.keys().map(|k| k.0).collect();
        c.dedup();
        c
    };
    let _ = writeln!(o, "Core-to-core latency: {}, p50 ns", line.describe());
    if cpus.len() <= MATRIX_CPUS {
        let mut head = format!("{:>6}", "CPU");
        for c in &cpus {
            head.push_str(&format!(" {c:>6}"));
        }
        let _ = writeln!(o, "{head}");
        for a in &cpus {
            let mut row = format!("{a:>6}");
            for b in &cpus {
                let cell = cells
                    .get(&(*a, *b))
                    .map_or("-".to_string(), |v| format!("{v:.1}"));
                row.push_str(&format!(" {cell:>6}"));
            }
            let _ = writeln!(o, "{row}");
        }
    } else {
        let _ = writeln!(
            o,
            "  ({} CPUs: the matrix is in --format json and the results file)",
            cpus.len()
        );
    }
    let _ = writeln!(
        o,
        "\n  {:<16} {:>6} {:>10} {:>8} {:>8}",
        "CPUs share", "pairs", "median", "min", "max"
    );
    for relation in RELATIONS {
        let Some(v) = groups.get_mut(relation) else {
            continue;
        };
        v.sort_by(f64::total_cmp);
        let _ = writeln!(
            o,
            "  {relation:<16} {:>6} {:>10.1} {:>8.1} {:>8.1}",
            v.len(),
            crate::results::median(v).unwrap_or(f64::NAN),
            v[0],
            v[v.len() - 1]
        );
    }
}
