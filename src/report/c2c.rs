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
    "smt sibling", "same L3", "same NUMA node", "same socket", "other socket", "unknown",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A modified-line record of the pair (a, b), as `latency --c2c` writes it.
    fn pair(a: usize, b: usize, relation: &str, p50: f64) -> LatencyRecord {
        let line = format!(
            r#"{{"schema_version":1,"experiment":"latency","started":"2026-11-29T14:55:40Z",
            "timestamp":"2026-11-29T14:55:40Z","host":{{"hostname":"vm","cpu_model":"x",
            "kernel":"6.1","online_cpus":64,"numa_nodes":2,"sockets":2}},
            "point":{{"study":"c2c","cpu":{a},"mem":"local","bytes":64,"hugepages":"thp",
            "peer_cpu":{b},"line":"modified"}},
            "latency":{{"bytes":64,"lines":1,"min_ns":{p50},"p50_ns":{p50},"p90_ns":{p50},
            "p99_ns":{p50},"mean_ns":{p50},"chunks":5,"loads_per_chunk":512}},
            "caches":{{}},"relation":"{relation}"}}"#
        );
        serde_json::from_str(&line).expect("a c2c record")
    }

    /// Every pair of `cpus`, on two sockets of 32 CPUs whose even CPUs
    /// have their odd neighbour as SMT sibling.
    fn matrix(cpus: &[usize]) -> Vec<LatencyRecord> {
        let mut out = Vec::new();
        for (i, &a) in cpus.iter().enumerate() {
            for &b in &cpus[i + 1..] {
                let (relation, ns) = if a / 2 == b / 2 {
                    ("smt sibling", 20.0)
                } else if a / 32 == b / 32 {
                    ("same L3", 50.0)
                } else {
                    ("other socket", 150.0)
                };
                out.push(pair(a, b, relation, ns));
            }
        }
        out
    }

    fn rendered(records: &[LatencyRecord]) -> String {
        let refs: Vec<&LatencyRecord> = records.iter().collect();
        let mut o = String::new();
        render(&mut o, &refs);
        o
    }

    #[test]
    fn past_32_cpus_the_groups_stand_for_the_matrix() {
        let cpus: Vec<usize> = (0..17).chain(32..49).collect();
        let text = rendered(&matrix(&cpus));
        assert!(
            text.contains("(34 CPUs: the matrix is in --format json"),
            "{text}"
        );
        assert!(!text.contains("    CPU "), "no matrix header: {text}");
        let row = |relation: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(relation))
                .unwrap_or_else(|| panic!("no {relation} row: {text}"))
                .split_whitespace()
                .rev()
                .nth(3)
                .unwrap()
                .parse::<usize>()
                .unwrap()
        };
        // 8 sibling pairs a socket; 17·16/2 − 8 within each; 17·17 across.
        assert_eq!(row("smt sibling"), 16);
        assert_eq!(row("same L3"), 2 * (136 - 8));
        assert_eq!(row("other socket"), 289);
    }

    #[test]
    fn up_to_32_cpus_the_matrix_is_printed_with_both_halves_of_each_pair() {
        let cpus: Vec<usize> = (0..16).chain(32..48).collect();
        let text = rendered(&matrix(&cpus));
        assert!(!text.contains("the matrix is in"), "{text}");
        let row0 = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some("0"))
            .expect("CPU 0's row");
        // Its own cell is empty, then its sibling, 14 same-socket, 16 across.
        let cells: Vec<&str> = row0.split_whitespace().skip(1).collect();
        assert_eq!(cells.len(), 32, "{row0}");
        assert_eq!(cells[0], "-");
        assert_eq!(cells[1], "20.0");
        assert_eq!(cells[31], "150.0");
        let row47 = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some("47"))
            .expect("CPU 47's row");
        assert_eq!(row47.split_whitespace().nth(1), Some("150.0"), "{row47}");
    }
}
