//! The view of a measurement across ranks: the aggregate against the sum of
//! the ranks' own bests, and the per-node table with its slow nodes marked.

use crate::results::ranks::Ranks;
use crate::results::ranks::SlowDecision;
use std::fmt::Write;

pub fn render(r: &Ranks) -> String {
    render_nodes(r, true)
}

/// [`render`], saying when the nodes are not alike that the median spans
/// unlike machines and slow nodes were judged only among like ones.
pub fn render_nodes(r: &Ranks, alike: bool) -> String {
    let mut o = String::new();
    let kernel = r.kernel.spec().name;
    let hosts = r.nodes.len();
    // Several devices per rank (a set shared out under mpirun): each
    // device is an entry; say how many ranks drove them.
    let ranks: std::collections::BTreeSet<(&str, usize)> = (r.ranks.iter())
        .map(|x| (x.host.as_str(), x.rank))
        .collect();
    let entries = match ranks.len() < r.ranks.len() && r.how == "mpi" {
        true => format!("{}, driving {} devices", ranks.len(), r.ranks.len()),
        false => r.ranks.len().to_string(),
    };
    let _ = writeln!(
        o,
        "Ranks: {entries} on {}{}",
        crate::units::plural(hosts, "node"),
        if r.how == "files" {
            " (merged results files, not synchronized)"
        } else {
            ""
        }
    );
    if let Some(agg) = r.aggregate_gb_s.get(&r.kernel) {
        let _ = writeln!(
            o,
            "  {kernel} aggregate {agg:.2} GB/s (all ranks' bytes over the slowest rank's time, best repetition)"
        );
    }
    if let Some(sum) = r.sum_of_best_gb_s.get(&r.kernel) {
        let _ = writeln!(
            o,
            "  {kernel} sum of the ranks' own bests {sum:.2} GB/s · skew {:.1} % (slowest rank's best vs fastest's)",
            100.0 * r.skew
        );
    }
    let _ = writeln!(
        o,
        "\n  {:<20} {:>5} {:>7} {:>12} {:>16} {:>10} {:>8}",
        "node",
        "ranks",
        "threads",
        format!("{kernel} GB/s"),
        "reps mean ± CI",
        "of median",
        "of peak"
    );
    for n in &r.nodes {
        let _ = writeln!(
            o,
            "  {:<20} {:>5} {:>7} {:>12.2} {:>16} {:>9.1}% {:>8}{}",
            n.host,
            n.ranks,
            n.threads,
            n.gb_s,
            n.repetitions.map_or("-".into(), |s| match s.interval() {
                Some(i) => format!("{:.2} ± {:.2}", s.mean, i.half_width()),
                None => format!("{:.2}", s.mean),
            }),
            100.0 * n.of_median,
            n.of_peak
                .map_or("-".into(), |p| format!("{:.1}%", 100.0 * p)),
            match (n.slow, n.untrusted.is_some()) {
                (true, true) => "  SLOW, NOT TRUSTED",
                (true, false) => "  SLOW",
                (false, true) => "  NOT TRUSTED",
                (false, false) => "",
            }
        );
    }
    let _ = writeln!(
        o,
        "  {kernel} GB/s: the best repetition (STREAM's); reps mean ± CI: the mean of the counted\n  \
         repetitions and its 95 % interval"
    );
    o.push_str(&slow_and_untrusted(r, alike));
    for overlap in &r.overlaps {
        let _ = writeln!(o, "Overlap: {overlap}");
    }
    o
}

/// One slow node's decision, in two lines: resolved (slow beyond its
/// noise) or not, its repetitions' mean and interval against the line.
fn slow_decision_text(host: &str, decision: Option<SlowDecision>, outlier: f64) -> String {
    let line_text = |line: f64| {
        format!(
            "{line:.2} GB/s ({:.0} % of the median node's mean)",
            100.0 * outlier
        )
    };
    match decision {
        Some(SlowDecision::Resolved {
            mean,
            half,
            n,
            line,
        }) => format!(
            "{host}: slow, resolved at 95 %: mean of {n} repetitions {mean:.2} GB/s ± {half:.2},\n    \
             all of its interval below {}",
            line_text(line)
        ),
        Some(SlowDecision::NotResolved {
            mean,
            half,
            n,
            line,
        }) if n > 1 => format!(
            "{host}: slow, not resolved: mean of {n} repetitions {mean:.2} GB/s ± {half:.2},\n    \
             its interval reaches {}; run it again",
            line_text(line)
        ),
        Some(SlowDecision::NotSlowByMean {
            mean,
            half,
            n,
            line,
        }) => format!(
            "{host}: not slow: its best was under the line, but the mean of {n} repetitions\n    \
             {mean:.2} GB/s ± {half:.2} lies wholly above {}",
            line_text(line)
        ),
        _ => format!("{host}: slow, not resolved: too few repetitions for an interval"),
    }
}

/// The slow nodes' line and decisions, then the nodes NOT TRUSTED.
fn slow_and_untrusted(r: &Ranks, alike: bool) -> String {
    let mut o = String::new();
    let slow = r.slow_hosts();
    let _ = writeln!(
        o,
        "\n{}",
        if !alike {
            match slow.is_empty() {
                true => "Slow nodes: none among like nodes (of median spans unlike machines: it compares them, it does not judge them)".to_string(),
                false => format!(
                    "Slow nodes: {} (below {:.0} % of the median of the nodes like it)",
                    slow.join(", "),
                    100.0 * r.outlier
                ),
            }
        } else if slow.is_empty() && r.nodes.iter().any(|n| n.cleared_by_mean) {
            format!(
                "Slow nodes: none (below {:.0} % of the median node by a best only, not by a mean: below)",
                100.0 * r.outlier
            )
        } else if slow.is_empty() {
            format!(
                "Slow nodes: none (every node at {:.0} % of the median or more)",
                100.0 * r.outlier
            )
        } else {
            format!(
                "Slow nodes: {} (below {:.0} % of the median node)",
                slow.join(", "),
                100.0 * r.outlier
            )
        }
    );
    for (host, decision) in r.slow_decisions() {
        let _ = writeln!(o, "  {}", slow_decision_text(host, decision, r.outlier));
    }
    // A node measured beside other work: its figure, slow or not, says
    // little about its memory.
    let untrusted: Vec<&crate::results::ranks::NodeRow> =
        r.nodes.iter().filter(|n| n.untrusted.is_some()).collect();
    if !untrusted.is_empty() {
        let _ = writeln!(
            o,
            "NOT TRUSTED: {} of {}:",
            untrusted.len(),
            crate::units::plural(r.nodes.len(), "node")
        );
        for n in untrusted {
            let _ = writeln!(o, "  {}: {}", n.host, n.untrusted.as_deref().unwrap_or(""));
        }
    }
    o
}
