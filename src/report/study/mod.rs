//! Reports of experiment records: tables (plain, Markdown, HTML), the
//! self-contained HTML report, and side-by-side comparison of two result
//! sets. Pure functions of the records.

use crate::kernels::KernelId;
use crate::results::{Band, KernelTrust, Record, Stats};
use crate::units::{Bytes, plural};
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

fn stats_cell(s: Option<&Stats>, with_sd: bool) -> Vec<String> {
    let mut cells = match s {
        Some(s) => vec![
            match s.interval() {
                Some(ci) if s.n > 1 => format!("{:.2} ± {:.2}", s.mean, ci.half_width()),
                _ if s.n > 1 => format!("{:.2} ± 0.00", s.mean),
                _ => format!("{:.2}", s.mean),
            },
            format!("{:.2}", s.min),
            format!("{:.2}", s.max),
        ],
        None => vec!["-".into(), "-".into(), "-".into()],
    };
    if with_sd {
        cells.push(match s {
            Some(s) if s.n > 1 => format!("{:.2}", s.sd),
            _ => "-".into(),
        });
    }
    cells
}

/// The records in reading order: NUMA cells, placement, memory policy,
/// stores, threads, working set.
fn reading_order(records: &[Record]) -> Vec<&Record> {
    let mut sorted: Vec<&Record> = records.iter().collect();
    sorted.sort_by(|a, b| {
        let key = |r: &Record| {
            (
                r.point.program().map(str::to_string),
                r.point.numa.map(|n| (n.all_cores, n.cpu_node, n.mem_node)),
                r.point.placement_text(),
                r.point.mem_text(),
                r.point.stores,
                r.point.threads,
                r.point.working_set_per_thread,
            )
        };
        key(a).cmp(&key(b))
    });
    sorted
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

/// One row per record, sorted for reading, the best mean highlighted.
pub fn results_table(records: &[Record], kernel: KernelId) -> Table {
    table_in_order(&reading_order(records), kernel, false)
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

/// Position of the record with the highest mean rate of `kernel` over its
/// trusted runs (the first of equals), of the points with any.
fn best_index(records: &[&Record], kernel: KernelId) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, r) in records.iter().enumerate() {
        if let Some(m) = r.trusted_mean(kernel)
            && best.is_none_or(|(_, b)| m > b)
        {
            best = Some((i, m));
        }
    }
    best.map(|b| b.0)
}

/// The columns of a CPU point's configuration.
const CPU_COLUMNS: [&str; 4] = ["threads", "placement", "mem", "stores"];

/// What measured a point, for a sentence: `device sim0`, or `spread (4
/// threads, mem local, nt stores)`.
pub fn configuration(r: &Record) -> String {
    match r.point.device_name() {
        Some(name) if r.point.mem.is_some() => {
            format!("device {name} (host buffers {})", r.point.mem_text())
        }
        Some(name) => format!("device {name}"),
        None => format!(
            "{} ({}, mem {}, {} stores)",
            r.point.placement_text(),
            crate::units::plural(r.point.threads, "thread"),
            r.point.mem_text(),
            r.stores_label()
        ),
    }
}

/// Which configuration columns a table has: a device's, a device's host
/// memory policy (where no CPU point's `mem` column holds it), the CPU's.
#[derive(Clone, Copy)]
struct TargetColumns {
    devices: bool,
    host_mem: bool,
    cpus: bool,
}

impl TargetColumns {
    fn of(records: &[&Record]) -> TargetColumns {
        let cpus = records.iter().any(|r| r.point.host().is_some());
        TargetColumns {
            devices: records.iter().any(|r| r.point.device_name().is_some()),
            host_mem: !cpus && records.iter().any(|r| r.point.mem.is_some()),
            cpus,
        }
    }

    fn headers(self) -> Vec<String> {
        let mut headers = Vec::new();
        if self.devices {
            headers.push("device".into());
        }
        if self.host_mem {
            headers.push("host mem".into());
        }
        if self.cpus {
            headers.extend(CPU_COLUMNS.map(String::from));
        }
        headers
    }
}

/// A row's device column (where a device is in the table), then its CPU
/// columns (where a CPU point is): `-` where a point has none. A device's
/// policy (where its host buffers are) goes in the `mem` column.
fn target_cells(r: &Record, placement: String, columns: TargetColumns) -> Vec<String> {
    let mut cells = Vec::new();
    if columns.devices {
        cells.push(r.point.device_name().unwrap_or("-").to_string());
    }
    let mem = || match r.point.mem_text() {
        text if text.is_empty() => "-".to_string(),
        text => text,
    };
    if columns.host_mem {
        cells.push(format!("{}{}", mem(), legend::own_node_mark(r)));
    }
    match r.point.host() {
        None if columns.cpus => cells.extend(["-".into(), "-".into(), mem(), "-".into()]),
        None => {}
        Some(host) => cells.extend([
            host.threads.to_string(),
            placement,
            r.point.mem_text(),
            r.stores_label(),
        ]),
    }
    cells
}

/// A row's file and program cells, where the table has those columns.
fn label_cells(r: &Record, files: bool, programs: bool) -> Vec<String> {
    let file = files.then(|| r.file.clone().unwrap_or_default());
    let program = programs.then(|| r.point.program().unwrap_or("membw").to_string());
    file.into_iter().chain(program).collect()
}

/// One row per record in the order given, the best mean highlighted;
/// with `all_runs`, every run's figures beside the trusted runs'.
pub fn table_in_order(sorted: &[&Record], kernel: KernelId, all_runs: bool) -> Table {
    let numa = sorted.iter().any(|r| r.point.numa.is_some());
    let sizes_vary = legend::sizes_vary(sorted);
    let programs = sorted.iter().any(|r| r.point.program().is_some());
    let files = sorted.iter().any(|r| r.file.is_some());
    // A device has no threads, placement, policy or stores: its column
    // names it, and the CPU columns appear only where a CPU point is.
    let columns = TargetColumns::of(sorted);
    let cpus = columns.cpus;
    let labels = [(files, "file"), (programs, "program")];
    let mut headers: Vec<String> = (labels.iter().filter(|l| l.0))
        .map(|l| l.1.into())
        .collect();
    headers.extend(columns.headers());
    if sizes_vary {
        headers.push(if cpus { "set/thread" } else { "set/device" }.into());
    }
    if numa {
        headers.push("cpu→mem".into());
    }
    // The run count is a column only where it differs between points.
    let runs_vary = sorted.iter().any(|r| r.runs.len() != sorted[0].runs.len());
    // Mean ± sd, which STREAM tutorials ask for, where any point has runs.
    let with_sd = sorted
        .iter()
        .any(|r| r.kernel_trust(kernel).shown().is_some_and(|s| s.n > 1));
    let name = kernel.spec().name;
    headers.extend([format!("{name} GB/s"), "min".into(), "max".into()]);
    // A share of the peak only where a point has one (not in the caches).
    let peaks = sorted.iter().any(|r| shows_peak(r));
    let doubts = sorted.iter().any(|r| !r.kernel_trust(kernel).whole());
    // Where a point measured the caches (STREAM's rule), its share of the
    // peak says so: a cache rate must not read as the memory's.
    let caches = sorted.iter().any(|r| r.in_caches());
    let optional = [
        (with_sd, "sd"),
        (runs_vary, "runs"),
        (peaks || caches, "% peak"),
        (doubts, "trust"),
    ];
    headers.extend(optional.iter().filter(|c| c.0).map(|c| c.1.to_string()));
    if all_runs {
        let mut every = vec![
            format!("all: {name} GB/s"),
            "all: min".into(),
            "all: max".into(),
        ];
        if with_sd {
            every.push("all: sd".into());
        }
        headers.extend(every);
    }
    let rows = sorted
        .iter()
        .map(|r| {
            let trust = r.kernel_trust(kernel);
            let s = trust.shown();
            // A NUMA cell's nodes have their own column.
            let placement = match r.point.numa {
                Some(n) if n.all_cores => "all cores".into(),
                Some(_) => "one thread".into(),
                None => r.point.placement_text(),
            };
            let mut row = label_cells(r, files, programs);
            row.extend(target_cells(r, placement, columns));
            if sizes_vary {
                // A program sizes its own arrays: membw does not know them.
                row.push(match r.point.working_set_per_thread {
                    0 => "-".into(),
                    b => Bytes(b).to_string(),
                });
            }
            if numa {
                let nodes = r
                    .point
                    .numa
                    .map(|n| format!("{} → {}", n.cpu_node, n.mem_node));
                row.push(nodes.unwrap_or_else(|| "-".into()));
            }
            row.extend(stats_cell(s, with_sd));
            if runs_vary {
                row.push(s.map_or("0".into(), |s| s.n.to_string()));
            }
            if peaks || caches {
                let peak = r.percent_of_peak(kernel);
                row.push(match (r.band(), peak) {
                    (Band::Caches, _) => "caches".into(),
                    // Past the caches but under STREAM's rule (legend: u).
                    (Band::UnderRule, Some(p)) => format!("{p:.1} u"),
                    (_, Some(p)) => format!("{p:.1}"),
                    (_, None) => "-".into(),
                });
            }
            if doubts {
                row.push(trust.cell());
            }
            if all_runs {
                row.extend(stats_cell(trust.all.as_ref(), with_sd));
            }
            row
        })
        .collect();
    Table {
        headers,
        rows,
        best: best_index(sorted, kernel),
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
use legend::shows_peak;
pub mod html;
mod numa;
pub use numa::numa_findings;
mod table;
pub use table::{Table, escape};

pub use compare::compare;
mod pivot;
pub use pivot::{Axis, Pivot, PivotError, pivot};

#[cfg(test)]
pub(crate) mod tests;
