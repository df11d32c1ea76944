//! Core-to-core latency for people: the pairs as a matrix (p50 of one hop
//! in ns), and the pairs grouped by what their CPUs share, which is what
//! explains the matrix (SMT siblings, an L3, a NUMA node, a socket).

use crate::latency::record::LatencyRecord;
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

pub fn render(o: &mut String, pairs: &[&LatencyRecord]) {
    let mut cells: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let mut groups: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in pairs {
        let Some(peer) = r.point.peer_cpu else {
            continue;
        };
        let p50 = r.latency.p50_ns;
        cells.insert((r.point.cpu, peer), p50);
        cells.insert((peer, r.point.cpu), p50);
        groups
            .entry(r.relation.as_deref().unwrap_or("unknown"))
            .or_default()
            .push(p50);
    }
    let cpus: Vec<usize> = {
        let mut c: Vec<usize> = cells.keys().map(|k| k.0).collect();
        c.dedup();
        c
    };
    let _ = writeln!(
        o,
        "Core-to-core latency: one hop of a modified cache line (half a round trip), p50 ns"
    );
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
