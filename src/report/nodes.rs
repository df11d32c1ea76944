//! `report` and `compare` over `membw run --json` documents: per-node files
//! written by any launcher (pdsh, clush, srun without MPI: each node runs
//! `membw run --json > $(hostname).json`) merged into one per-node table
//! with its slow nodes, or MPI runs side by side by node count.

use super::{Plot, plot};
use crate::kernels::KernelId;
use crate::results::ranks::{RankRun, Ranks};
use crate::results::{Measured, RunReport};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// What a file measured, as the merged table names it: its host, or for
/// a device its host and the device (`gpu07/cuda3`), so that a fleet's
/// GPUs are ranked one by one as its nodes are.
fn who(doc: &RunReport) -> String {
    match doc.measurement.target().device_name() {
        Some(device) => format!("{}/{device}", doc.host.hostname),
        None => doc.host.hostname.clone(),
    }
}

/// One node's file as a rank of a merged, unsynchronized measurement.
fn as_rank(index: usize, doc: &RunReport) -> RankRun {
    RankRun::new(
        index,
        None,
        who(doc),
        &doc.measurement,
        &[],
        doc.peak.as_ref().map(|p| p.peak.node_gb_s()),
    )
}

/// Per-node files merged: every host once.
pub fn merge(docs: &[(PathBuf, RunReport)], outlier: f64) -> Result<Ranks, String> {
    let mut seen: BTreeMap<String, &Path> = BTreeMap::new();
    for (path, doc) in docs {
        if doc.measurement.ranks().is_some() {
            return Err(format!(
                "{}: an MPI run; merge either per-node files or MPI runs, not both",
                path.display()
            ));
        }
        if let Some(first) = seen.insert(who(doc), path) {
            return Err(format!(
                "{} and {}: both from host {}; give one file per node (or per GPU)",
                first.display(),
                path.display(),
                who(doc)
            ));
        }
    }
    let ranks: Vec<RankRun> = docs
        .iter()
        .enumerate()
        .map(|(i, (_, doc))| as_rank(i, doc))
        .collect();
    Ranks::summarize("files", ranks, outlier)
        .ok_or_else(|| "no kernel results in the files".to_string())
}

/// Each trait's name and value, in the order they are named.
type Likeness = [(&'static str, String); 5];

/// What makes two nodes' figures comparable as like machines: the CPU,
/// the sockets, the threads, the ISA and the store mode that ran.
#[deny(clippy::wildcard_enum_match_arm)]
fn likeness(doc: &RunReport) -> Likeness {
    let m = &doc.measurement;
    let unknown = |model: &Option<String>| model.clone().unwrap_or_else(|| "unknown".into());
    [
        // A GPU is like another GPU of its model, whatever host drives it.
        match m.target().measured(()) {
            Measured::Device(d) => ("device", unknown(&d.facts.model)),
            Measured::Team(()) | Measured::Program((), _) => ("CPU", unknown(&doc.host.cpu_model)),
        },
        ("sockets", doc.host.sockets.to_string()),
        ("threads", m.threads.len().max(1).to_string()),
        ("ISA", m.isa.map_or("-".into(), |i| i.to_string())),
        ("stores", m.stores.map_or("-".into(), |s| s.to_string())),
    ]
}

/// Each property the documents' nodes differ in, with every value and its
/// hosts: `CPU (Xeon: a, b; Neoverse-V2: c)`. Empty for like machines.
fn differences(docs: &[(PathBuf, RunReport)]) -> Vec<String> {
    let all: Vec<_> = docs.iter().map(|(_, d)| (d, likeness(d))).collect();
    let mut out = Vec::new();
    for i in 0..5 {
        let mut values: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (d, l) in &all {
            values.entry(&l[i].1).or_default().push(who(d));
        }
        if values.len() > 1 {
            let listed: Vec<String> = values
                .iter()
                .map(|(v, hosts)| format!("{v}: {}", hosts.join(", ")))
                .collect();
            out.push(format!("{} ({})", all[0].1[i].0, listed.join("; ")));
        }
    }
    out
}

/// Each node's verdict within its group of like nodes (of two or more):
/// host, slow, and slow by its best but cleared by its mean.
fn slow_among_like(
    docs: &[(PathBuf, RunReport)],
    outlier: f64,
) -> Result<Vec<(String, bool, bool)>, String> {
    let mut groups: BTreeMap<Likeness, Vec<(PathBuf, RunReport)>> = BTreeMap::new();
    for (p, d) in docs {
        groups
            .entry(likeness(d))
            .or_default()
            .push((p.clone(), d.clone()));
    }
    let mut slow = Vec::new();
    for group in groups.values().filter(|g| g.len() > 1) {
        let ranks = merge(group, outlier)?;
        slow.extend((ranks.nodes.iter()).map(|n| (n.host.clone(), n.slow, n.cleared_by_mean)));
    }
    Ok(slow)
}

/// `membw report` over run documents: the per-node table (merged files or
/// one MPI run), or MPI runs by node count, its plots, and the slow nodes
/// it flagged.
pub fn document(
    docs: &[(PathBuf, RunReport)],
    outlier: f64,
) -> Result<(String, Vec<Plot>, Vec<String>), String> {
    let mut flagged: Vec<String> = Vec::new();
    let mpi: Vec<(&PathBuf, &Ranks)> = docs
        .iter()
        .filter_map(|(p, d)| Some((p, d.measurement.ranks()?)))
        .collect();
    let mut out = String::new();
    let mut svgs: Vec<(String, String)> = Vec::new();
    if mpi.is_empty() {
        let mut ranks = merge(docs, outlier)?;
        let differ = differences(docs);
        if !differ.is_empty() {
            // Unlike machines are compared, not judged against each other:
            // a node is slow only against the nodes like it.
            let slow = slow_among_like(docs, outlier)?;
            for node in &mut ranks.nodes {
                let verdict = slow.iter().find(|(host, ..)| *host == node.host);
                (node.slow, node.cleared_by_mean) = verdict.map_or((false, false), |v| (v.1, v.2));
            }
            let _ = writeln!(
                out,
                "Unlike machines, compared side by side: {}; a slow-node verdict only among nodes alike in these\n",
                differ.join("; ")
            );
        }
        flagged.extend(ranks.slow_hosts().into_iter().map(String::from));
        out.push_str(&super::ranks::render_nodes(&ranks, differ.is_empty()));
        svgs.extend(plot::nodes_plot(&ranks).map(|s| ("nodes.svg".to_string(), s)));
    } else if mpi.len() == docs.len() {
        let kernel = mpi[0].1.kernel;
        let _ = writeln!(
            out,
            "  {:<28} {:>6} {:>6} {:>15} {:>14}  slow nodes",
            "run",
            "nodes",
            "ranks",
            format!("{} aggregate", kernel.spec().name),
            "sum of bests"
        );
        let mut points = Vec::new();
        for (path, r) in &mpi {
            let agg = r.aggregate_gb_s.get(&kernel).copied().unwrap_or(0.0);
            let slow = r.slow_hosts();
            flagged.extend(slow.iter().map(|h| h.to_string()));
            let _ = writeln!(
                out,
                "  {:<28} {:>6} {:>6} {:>15.2} {:>14.2}  {}",
                path.file_name()
                    .map_or(String::new(), |f| f.to_string_lossy().into_owned()),
                r.nodes.len(),
                r.ranks.len(),
                agg,
                r.sum_of_best_gb_s.get(&kernel).copied().unwrap_or(0.0),
                if slow.is_empty() {
                    "none".into()
                } else {
                    slow.join(", ")
                }
            );
            points.push((r.nodes.len(), agg));
        }
        if let [(_, only)] = mpi.as_slice() {
            let _ = writeln!(out);
            out.push_str(&super::ranks::render(only));
            svgs.extend(plot::nodes_plot(only).map(|s| ("nodes.svg".to_string(), s)));
        }
        svgs.extend(
            plot::aggregate_plot(&points, kernel)
                .map(|s| ("aggregate-vs-nodes.svg".to_string(), s)),
        );
    } else {
        return Err("merge either per-node files or MPI runs, not both".into());
    }
    let plots = svgs
        .into_iter()
        .map(|(file, svg)| Plot {
            title: file.trim_end_matches(".svg").replace('-', " "),
            file,
            svg,
        })
        .collect();
    flagged.sort();
    flagged.dedup();
    Ok((out, plots, flagged))
}

/// `membw compare A.json B.json`: each kernel's best rate (the aggregate
/// for MPI runs) side by side, with whether the repetitions tell a change;
/// for nodes in both, their rates.
pub fn compare(a: &RunReport, b: &RunReport, markdown: bool) -> String {
    use crate::results::estimate::{Comparison, LEVEL};
    let kernels: Vec<KernelId> = a
        .measurement
        .results
        .iter()
        .map(|r| r.kernel)
        .filter(|k| b.measurement.results.iter().any(|r| r.kernel == *k))
        .collect();
    let level = 1.0 - (1.0 - LEVEL) / kernels.len().max(1) as f64;
    let result = |d: &'_ RunReport, k: KernelId| {
        d.measurement
            .results
            .iter()
            .find(|r| r.kernel == k)
            .cloned()
    };
    // A run measured beside other work decides nothing.
    let why = |d: &RunReport| {
        d.measurement
            .interference
            .as_ref()
            .and_then(|i| i.findings.first().cloned())
    };
    let (why_a, why_b) = (why(a), why(b));
    let untrusted = match (&why_a, &why_b) {
        (Some(_), Some(_)) => Some("NOT TRUSTED (A, B)"),
        (Some(_), None) => Some("NOT TRUSTED (A)"),
        (None, Some(_)) => Some("NOT TRUSTED (B)"),
        (None, None) => None,
    };
    let mut rows: Vec<[String; 5]> = kernels
        .iter()
        .filter_map(|&k| {
            let (x, y) = (result(a, k)?, result(b, k)?);
            let c = Comparison::of(&x.repetition_rates(), &y.repetition_rates(), level);
            let change = match untrusted {
                Some(mark) => mark.to_string(),
                None => c.map_or("-".into(), |c| super::change_word(&c)),
            };
            Some([
                k.spec().name.to_string(),
                format!("{:.2}", x.best_gb_s()),
                format!("{:.2}", y.best_gb_s()),
                format!(
                    "{:.3}",
                    y.best_gb_s() / x.best_gb_s().max(f64::MIN_POSITIVE)
                ),
                change,
            ])
        })
        .collect();
    if let (Some(na), Some(nb)) = (a.measurement.ranks(), b.measurement.ranks()) {
        for n in &na.nodes {
            if let Some(m) = nb.nodes.iter().find(|m| m.host == n.host) {
                rows.push([
                    format!("{} {}", na.kernel.spec().name, n.host),
                    format!("{:.2}", n.gb_s),
                    format!("{:.2}", m.gb_s),
                    format!("{:.3}", m.gb_s / n.gb_s.max(f64::MIN_POSITIVE)),
                    "not resolved".into(),
                ]);
            }
        }
    }
    let mut o = rows_table(&rows, markdown);
    let _ = writeln!(
        o,
        "\nGB/s and B/A: the best rates (STREAM's)\n\
         change: from the counted repetitions of each run (Welch's t on the logarithms of their\n  \
         rates, at {} % per kernel; under 2 % is no change); the variation between runs is not\n  \
         in it: compare sweep files made with --repeat for that",
        super::level_text(level)
    );
    for (side, reason) in [("A", why_a), ("B", why_b)] {
        if let Some(reason) = reason {
            let _ = writeln!(o, "NOT TRUSTED ({side}): {reason}");
        }
    }
    o
}

/// The rows of a run comparison as a text or Markdown table.
fn rows_table(rows: &[[String; 5]], markdown: bool) -> String {
    let head = ["", "A GB/s", "B GB/s", "B/A", "change"];
    let mut o = String::new();
    if markdown {
        let _ = writeln!(o, "| {} |", head.join(" | "));
        let _ = writeln!(o, "|---|---:|---:|---:|---|");
        for r in rows {
            let _ = writeln!(o, "| {} |", r.join(" | "));
        }
    } else {
        let _ = writeln!(
            o,
            "  {:<24} {:>10} {:>10} {:>7}  {}",
            head[0], head[1], head[2], head[3], head[4]
        );
        for r in rows {
            let _ = writeln!(
                o,
                "  {:<24} {:>10} {:>10} {:>7}  {}",
                r[0], r[1], r[2], r[3], r[4]
            );
        }
    }
    o
}
