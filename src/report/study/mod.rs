//! Reports of experiment records: tables (plain, Markdown, HTML), the
//! self-contained HTML report, and side-by-side comparison of two result
//! sets. Pure functions of the records.

use crate::kernels::KernelId;
use crate::results::{KernelTrust, Record};
use crate::units::plural;
use std::fmt::Write;

/// Triad when it was measured, else the first kernel present.
pub fn primary_kernel<'a>(records: impl IntoIterator<Item = &'a Record>) -> Option<KernelId> {
    let all: std::collections::BTreeSet<KernelId> = records
        .into_iter()
        .flat_map(|r| r.stats.keys().copied())
        .collect();
    if all.contains(&KernelId::Triad) {
        Some(KernelId::Triad)
    } else {
        all.into_iter().next()
    }
}

/// One line per point some of whose runs cannot be trusted for `kernel`,
/// with the first reason: `NOT TRUSTED` where no run can, else how many
/// runs were left out of its figures.
pub fn trust_lines(records: &[Record], kernel: KernelId) -> Vec<String> {
    let doubtful: Vec<(&Record, KernelTrust)> = (records.iter())
        .map(|r| (r, r.kernel_trust(kernel)))
        .filter(|(_, t)| !t.whole())
        .collect();
    let untrusted = doubtful.iter().filter(|(_, t)| t.none()).count();
    let mut lines = Vec::new();
    let name = kernel.spec().name;
    if untrusted > 0 {
        lines.push(format!(
            "NOT TRUSTED for {name}: {untrusted} of {}:",
            plural(records.len(), "point")
        ));
    }
    for (r, t) in doubtful.iter().filter(|(_, t)| t.none()) {
        let why = t.doubt.as_deref().unwrap_or("no run could be judged");
        lines.push(format!("  {}: {why}", r.point.label()));
    }
    let partly: Vec<&(&Record, KernelTrust)> = doubtful.iter().filter(|(_, t)| !t.none()).collect();
    if !partly.is_empty() {
        lines.push(format!(
            "runs left out of {name}'s figures (each run is judged on its own; the rest are trusted):"
        ));
    }
    for (r, t) in partly {
        let why = t.doubt.as_deref().unwrap_or("");
        // Every run's figures beside the trusted ones', so a reader can see
        // what leaving the doubtful runs out changed.
        let every = t.all.as_ref().map_or(String::new(), |s| {
            format!(
                " (all {} runs: {} GB/s, min {:.2}, max {:.2})",
                s.n,
                stats_cell(Some(s), false)[0],
                s.min,
                s.max
            )
        });
        lines.push(format!(
            "  {}: {} of {} runs trusted{every}; left out: {why}",
            r.point.label(),
            t.trusted(),
            t.runs
        ));
    }
    lines
}

/// How a study's table is laid out: a row per point, with every run's
/// figures beside the trusted runs' where asked, or turned (`--rows`,
/// `--columns`), one figure per cell.
#[derive(Clone, Copy)]
pub enum Layout<'a> {
    Long { all_runs: bool },
    Turned(&'a Pivot),
}

impl Layout<'_> {
    /// A row per point, the trusted runs' figures alone.
    pub const LONG: Layout<'static> = Layout::Long { all_runs: false };
}

/// The table as `layout` lays it out.
fn main_table(records: &[Record], kernel: KernelId, layout: Layout) -> Table {
    match layout {
        Layout::Long { all_runs } => table_in_order(&reading_order(records), kernel, all_runs),
        Layout::Turned(p) => p.table.clone(),
    }
}

/// The columns' legend, a turned table's cells first.
fn full_legend(records: &[Record], kernel: KernelId, layout: Layout) -> String {
    match layout {
        Layout::Turned(p) => format!("{}\n{}", p.legend, legend::turned_legend(records, kernel)),
        Layout::Long { all_runs } => legend::long_legend(records, kernel, all_runs),
    }
}

/// What measured a point, for a sentence: `device sim0`, or `spread (4
/// threads, mem local, nt stores)`.
pub fn configuration(r: &Record) -> String {
    match r.point.device_name() {
        Some(name) if r.point.mem.is_some() => {
            format!("device {name} (host buffers {})", r.point.mem_text())
        }
        Some(name) if r.point.gpu_memory != Default::default() => {
            format!("device {name} ({} memory)", r.point.gpu_memory)
        }
        Some(name) => format!("device {name}"),
        None => {
            // What else sets the point apart: other code, another layout.
            let p = &r.point;
            let mut also = String::new();
            if let Some(isa) = p.isa {
                also.push_str(&format!(", {isa} ISA"));
            }
            if !p.hugepages.is_auto() {
                also.push_str(&format!(", {} pages", p.hugepages));
            }
            if p.offset != 0 {
                also.push_str(&format!(", offset {}", p.offset));
            }
            format!(
                "{} ({}, mem {}, {} stores{also})",
                p.placement_text(),
                crate::units::plural(p.threads, "thread"),
                p.mem_text(),
                r.stores_label(),
            )
        }
    }
}

/// The summary printed after a sweep and by `membw report`.
pub fn summary(records: &[Record], kernel: KernelId, markdown: bool) -> String {
    summary_laid_out(records, kernel, markdown, Layout::LONG)
}

/// The summary with its table laid out as `layout` says.
pub fn summary_laid_out(
    records: &[Record],
    kernel: KernelId,
    markdown: bool,
    layout: Layout,
) -> String {
    let t = main_table(records, kernel, layout);
    let mut out = if markdown { t.markdown() } else { t.plain() };
    let _ = writeln!(out, "{}", full_legend(records, kernel, layout));
    for line in legend::concurrent_sums(records, kernel) {
        let _ = writeln!(out, "{line}");
    }
    for line in numa_findings(records, kernel) {
        let _ = write!(out, "\n{line}");
    }
    for study in [
        super::far::findings(records),
        super::levels::findings(records),
    ] {
        if !study.is_empty() {
            let _ = writeln!(out, "\n{}", study.join("\n"));
        }
    }
    let doubts = trust_lines(records, kernel);
    if !doubts.is_empty() {
        let _ = writeln!(out, "\n{}", doubts.join("\n"));
    }
    let sorted = reading_order(records);
    let best = best_index(&sorted, kernel).map(|i| sorted[i]);
    if best.is_none() && !doubts.is_empty() {
        let _ = writeln!(
            out,
            "\nbest: none, no point has a run trusted for {}",
            kernel.spec().name
        );
    }
    if let Some(best) = best {
        let verdict = StudyConclusion::of(&sorted, best, kernel);
        for line in verdict.lines() {
            let _ = writeln!(out, "{line}");
        }
        let block = match (&best.reproduce, best.point.pinned(), best.point.host()) {
            (Some(s), true, _) => super::reproduce_block("Reproduce it:", s),
            // Unbound threads have no placement to reproduce in other
            // tools' words: the command that ran them is the recipe.
            (_, false, Some(host)) => format!(
                "{} not pinned: no placement to reproduce. Run it again with:\n  {}\n",
                match host.threads {
                    1 => "Its thread was".to_string(),
                    n => format!("Its {n} threads were"),
                },
                rerun_command(best)
            ),
            _ => String::new(),
        };
        if !block.is_empty() {
            if markdown {
                let _ = write!(out, "\n```\n{block}```\n");
            } else {
                let _ = write!(out, "\n{block}");
            }
        }
    }
    out
}

/// The Markdown report: context, table, and links to the plot files.
pub fn markdown(
    records: &[Record],
    kernel: KernelId,
    plots: &[(String, String)],
    layout: Layout,
) -> String {
    let mut out = String::from("# membw report\n\n");
    for (k, v) in context(records) {
        let _ = writeln!(out, "- **{k}**: {v}");
    }
    let _ = writeln!(
        out,
        "\n## Results\n\n{}",
        main_table(records, kernel, layout).markdown()
    );
    for line in full_legend(records, kernel, layout).lines() {
        let _ = writeln!(out, "_{line}_  ");
    }
    for line in numa_findings(records, kernel) {
        let _ = writeln!(out, "- {line}");
    }
    for line in trust_lines(records, kernel) {
        match line.strip_prefix("  ") {
            Some(item) => {
                let _ = writeln!(out, "- {item}");
            }
            None => {
                let _ = writeln!(out, "\n**{line}**\n");
            }
        }
    }
    if let Some(verdict) = StudyConclusion::find(records, kernel) {
        let _ = writeln!(out);
        for line in verdict.lines() {
            let _ = writeln!(out, "{}  ", line.trim_start_matches('\n'));
        }
    }
    for (title, file) in plots {
        let _ = writeln!(out, "\n### {title}\n\n![{title}]({file})");
    }
    out
}

mod compare;
mod verdict;
pub use verdict::StudyConclusion;
use verdict::rerun_command;
mod context;
pub use context::context;
mod legend;
pub use legend::legend;
pub mod html;
mod numa;
pub use numa::numa_findings;
mod table;
pub use table::{Table, escape};
mod points;
use points::{best_index, reading_order, stats_cell};
pub use points::{results_table, table_in_order};

pub use compare::compare;
mod pivot;
pub use pivot::{Axis, Pivot, PivotError, pivot};

#[cfg(test)]
mod band_tests;
#[cfg(test)]
mod conclusion_props;
#[cfg(test)]
pub(crate) mod tests;
