//! `membw peers` for people: one matrix per method as nvbandwidth prints
//! them (rows the source, columns the destination), each cell the best
//! repetition with the half-width of its mean's 95 % interval, then the
//! pairs' paths and what arrived.

use crate::results::peers::{PeerCell, PeerReport};
use std::fmt::Write;

/// The matrix document as text.
pub fn text(r: &PeerReport) -> String {
    let mut o = String::new();
    let names: Vec<String> = r.devices.iter().map(|d| d.id.name.clone()).collect();
    let index: Vec<u32> = r.devices.iter().map(|d| d.id.index).collect();
    let model = (r.devices.first()).and_then(|d| d.facts.model.clone());
    let _ = writeln!(
        o,
        "Peers: {} devices ({}{}), every ordered pair · {} per copy · {} timed repetitions a cell",
        names.len(),
        names.join(", "),
        model.map_or(String::new(), |m| format!(": {m}")),
        crate::units::Bytes(r.elements * 8),
        r.ntimes
    );
    let _ = writeln!(
        o,
        "  GB/s, best repetition ± half the 95 % interval of the mean; rows the source, columns the destination"
    );
    for method in r.methods() {
        let _ = writeln!(o, "\n  {}: {}", method.name(), method.describe());
        matrix(&mut o, &names, &index, |from, to| {
            cell_text(r.cell(method, from, to), from == to)
        });
        if let Some(line) = shares(r, method) {
            let _ = writeln!(o, "{line}");
        }
    }
    if let Some(fabric) = fabric_name(r) {
        let kind = r.fabric.filter(|k| k.name == fabric);
        let _ = writeln!(o, "\n  {}", paths_title(&fabric, kind));
        let path_name = |p: &crate::results::targets::FabricPath| match kind {
            Some(k) => k.path_name(p.links, p.switched),
            None => format!("{} {}", p.name, p.links),
        };
        matrix(&mut o, &names, &index, |from, to| {
            let path = (r.cells.iter())
                .find(|c| c.from == from && c.to == to)
                .map(|c| (c.fabric.as_ref()).map_or(format!("no {fabric}"), path_name));
            match from == to {
                true => "-".into(),
                false => path.unwrap_or_default(),
            }
        });
    }
    let staged: Vec<String> = (r.cells.iter())
        .filter(|c| c.path == "staged")
        .map(|c| format!("{}→{}", c.from, c.to))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if staged.is_empty() {
        let _ = writeln!(o, "\n  paths: every pair direct (peer access)");
    } else {
        let _ = writeln!(
            o,
            "\n  paths: staged through host memory (no peer access): {}; every other pair direct",
            staged.join(", ")
        );
    }
    let skipped: std::collections::BTreeSet<&String> =
        r.cells.iter().filter_map(|c| c.skipped.as_ref()).collect();
    for why in skipped {
        let _ = writeln!(o, "  not measured (sm-write, sm-read): {why}");
    }
    let wrong = r.wrong();
    if wrong.is_empty() {
        let _ = writeln!(o, "  validation: every copy arrived right");
    } else {
        for w in wrong {
            let _ = writeln!(o, "  VALIDATION FAILED: {w}");
        }
    }
    o
}

/// A matrix of the devices, rows the source and columns the destination,
/// each cell `cell(from, to)`.
fn matrix(o: &mut String, names: &[String], index: &[u32], cell: impl Fn(u32, u32) -> String) {
    let width = names.iter().map(String::len).max().unwrap_or(4).max(6);
    let mut head = format!("  {:<width$}", "from\\to");
    for n in names {
        let _ = write!(head, " {n:>16}");
    }
    let _ = writeln!(o, "{head}");
    for (row, &from) in names.iter().zip(index) {
        let mut line = format!("  {row:<width$}");
        for &to in index {
            let _ = write!(line, " {:>16}", cell(from, to));
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
}

/// The path matrix's title: what its cells count, as the fabric's
/// platform names them.
fn paths_title(fabric: &str, kind: Option<&crate::results::targets::FabricKind>) -> String {
    let through = kind
        .and_then(|k| k.switch)
        .map_or(String::new(), |s| format!("; 'switch': through {s}"));
    match kind.and_then(|k| k.short) {
        Some((_, tool)) => format!("{fabric} paths (links{through}), as {tool} names them"),
        None => format!("{fabric} paths (direct links between the two{through})"),
    }
}

/// The name of the fabric the pairs' paths cross (`NVLink`, `xGMI`), where
/// any does.
fn fabric_name(r: &PeerReport) -> Option<String> {
    (r.cells.iter()).find_map(|c| c.fabric.as_ref().map(|p| p.name.clone()))
}

/// `  of each pair's NVLink peak: 84 % to 86 % (12 pairs)`: what share
/// of its path the method reached, where the paths' peaks are known.
fn shares(r: &PeerReport, method: crate::results::peers::PeerMethod) -> Option<String> {
    let shares: Vec<f64> = (r.cells.iter())
        .filter(|c| c.method() == Some(method))
        .filter_map(PeerCell::share_of_path)
        .collect();
    let low = shares.iter().copied().reduce(f64::min)?;
    let high = shares.iter().copied().reduce(f64::max)?;
    // Two figures at least: a share below 10 % keeps its tenths.
    let percent = |x: f64| match 100.0 * x {
        p if p < 10.0 => format!("{p:.1} %"),
        p => format!("{p:.0} %"),
    };
    let (low, high) = (percent(low), percent(high));
    let range = if low == high {
        low
    } else {
        format!("{low} to {high}")
    };
    Some(format!(
        "  of each pair's {} peak: {range} ({} pairs)",
        fabric_name(r).unwrap_or_default(),
        shares.len()
    ))
}

/// One cell: `380.1 ± 0.4`, `-` on the diagonal, `n/a` where it was not
/// measured, `wrong` where its copy came back wrong.
fn cell_text(cell: Option<&PeerCell>, diagonal: bool) -> String {
    match cell {
        _ if diagonal => "-".into(),
        None => String::new(),
        Some(c) if c.wrong.is_some() => "wrong".into(),
        Some(c) => match (c.best_gb_s, c.rates.and_then(|s| s.interval())) {
            (Some(best), Some(i)) => format!("{best:.1} ± {:.1}", i.half_width()),
            (Some(best), None) => format!("{best:.1}"),
            (None, _) => "n/a".into(),
        },
    }
}
