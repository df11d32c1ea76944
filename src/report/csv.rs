//! CSV with fixed headers (documented in the output guide): one row per
//! kernel of a run, per point and kernel of a results file, per latency
//! point.

use crate::error::{Error, Result};
use crate::results::RunReport;
use crate::results::latency_record::LatencyRecord;

pub const HEADER: [&str; 18] = [
    "schema_version", "hostname", "kernel", "best_rate_mb_s", "avg_time_s", "min_time_s",
    "max_time_s", "spread", "bytes_per_element", "dram_bytes_per_element", "array_elements",
    "ntimes", "threads", "isa", "stores", "validated", "trusted", "target",
];

/// A count's cell: empty where the target has none to count, not 0.
fn cell(count: Option<usize>) -> String {
    count.map_or(String::new(), |n| n.to_string())
}

pub fn render(report: &RunReport) -> Result<String> {
    write(&HEADER, rows(report))
}

/// Several runs' rows under one header (`membw report` on run documents,
/// one a node): as `membw run --format csv` prints each.
pub fn runs<'a>(reports: impl IntoIterator<Item = &'a RunReport>) -> Result<String> {
    write(&HEADER, reports.into_iter().flat_map(rows))
}

/// One row per kernel of a run.
fn rows(report: &RunReport) -> Vec<[String; HEADER.len()]> {
    let m = &report.measurement;
    let mut rows = Vec::with_capacity(m.results.len());
    for r in &m.results {
        rows.push([
            report.schema_version.to_string(),
            report.host.hostname.clone(),
            r.kernel.to_string(),
            format!("{:.1}", r.best_rate_mb_s),
            format!("{:.6}", r.avg_time_s),
            format!("{:.6}", r.min_time_s),
            format!("{:.6}", r.max_time_s),
            format!("{:.4}", r.spread),
            r.bytes_per_element.to_string(),
            r.dram_bytes_per_element.to_string(),
            m.array_elements.to_string(),
            m.ntimes.to_string(),
            // A device has no threads: the cell is empty, not 0.
            cell(m.host_threads().map(<[_]>::len)),
            m.isa.map_or(String::new(), |i| i.to_string()),
            m.stores.map_or(String::new(), |s| s.to_string()),
            m.validation.passed.to_string(),
            // Whether the tick counters saw the node quiet (empty: not
            // watched, or a window too short for them to judge).
            (m.interference.as_ref())
                .filter(|i| i.not_judged.is_none())
                .map_or(String::new(), |i| (!i.busy).to_string()),
            m.target().label(),
        ]);
    }
    rows
}

/// The header of a results file's CSV (`membw report --format csv`).
pub const STUDY_HEADER: [&str; 26] = [
    "schema_version", "hostname", "experiment", "placement", "threads", "mem", "stores",
    "working_set_per_thread", "kernel", "runs", "mean_gb_s", "sd_gb_s", "ci95_low_gb_s",
    "ci95_high_gb_s", "min_gb_s", "max_gb_s", "peak_gb_s", "percent_of_peak", "trusted",
    "untrusted_why", "target", "in_caches", "migrations_per_run", "devices_at_once", "all_runs",
    "band",
];

/// One row per point and kernel of a results file: the mean of its runs'
/// best rates with its interval, and whether the point can be trusted.
pub fn study(records: &[crate::results::Record]) -> Result<String> {
    let opt = |v: Option<f64>, digits: usize| v.map_or(String::new(), |v| format!("{v:.digits$}"));
    let mut rows = Vec::new();
    for r in records {
        for kernel in r.stats.keys() {
            // Each run judged on its own, for this kernel: the figures are
            // the trusted runs' where any is (`runs` of `all_runs`).
            let trust = r.kernel_trust(*kernel);
            let Some(s) = trust.shown() else { continue };
            let ci = s.interval();
            let host = r.point.host();
            rows.push([
                r.schema_version.to_string(),
                r.host.hostname.clone(),
                r.experiment.clone(),
                r.point.placement_text(),
                // A device has no threads or stores: empty cells, not 0.
                cell(host.as_ref().map(|h| h.threads)),
                r.point.mem_text(),
                host.map_or(String::new(), |_| r.stores_label()),
                r.point.working_set_per_thread.to_string(),
                kernel.to_string(),
                s.n.to_string(),
                format!("{:.3}", s.mean),
                format!("{:.3}", s.sd),
                opt(ci.map(|i| i.low), 3),
                opt(ci.map(|i| i.high), 3),
                format!("{:.3}", s.min),
                format!("{:.3}", s.max),
                opt(r.peak_gb_s, 1),
                opt(r.percent_of_peak(*kernel), 1),
                match (trust.none(), r.not_judged()) {
                    (true, _) => "false".into(),
                    // Not judged: neither trusted nor not.
                    (false, Some(_)) => String::new(),
                    (false, None) => "true".into(),
                },
                (trust.doubt.as_deref().or(r.not_judged()))
                    .unwrap_or_default()
                    .to_string(),
                r.point.measured().label(),
                r.in_caches().to_string(),
                opt(migrations_per_run(r), 1),
                // Measured at once with the other devices of a set: how
                // many ran; empty where it ran alone.
                cell(r.point.together),
                trust.runs.to_string(),
                r.band().key().to_string(),
            ]);
        }
    }
    write(&STUDY_HEADER, rows)
}

/// The kernel's moves of an unpinned point's threads while measured, the
/// mean over its runs; none for a pinned point.
fn migrations_per_run(r: &crate::results::Record) -> Option<f64> {
    let moves: Vec<u64> = r.runs.iter().filter_map(|run| run.migrations).collect();
    (!r.point.pinned() && !moves.is_empty())
        .then(|| moves.iter().sum::<u64>() as f64 / moves.len() as f64)
}

/// A turned table (`report --rows --columns`): the corner's header, then
/// each column's; a row's label, then each cell's mean GB/s (empty where
/// the combination was not measured).
fn turned(p: &crate::report::study::Pivot) -> Result<String> {
    let fail = |e: &dyn std::fmt::Display| Error::Runtime(format!("writing CSV: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&p.table.headers).map_err(|e| fail(&e))?;
    for (row, means) in p.table.rows.iter().zip(&p.means) {
        let label = row.first().cloned().unwrap_or_default();
        let cells = means
            .iter()
            .map(|m| m.map_or(String::new(), |m| format!("{m:.3}")));
        let record: Vec<String> = std::iter::once(label).chain(cells).collect();
        w.write_record(&record).map_err(|e| fail(&e))?;
    }
    let bytes = w.into_inner().map_err(|e| fail(&e))?;
    String::from_utf8(bytes).map_err(|e| fail(&e))
}

/// The header of a latency CSV: the point, then its latency and load.
pub const LATENCY_HEADER: [&str; 17] = [
    "schema_version", "hostname", "study", "cpu", "mem", "mem_node", "bytes", "hugepages", "mix",
    "delay_ns", "min_ns", "p50_ns", "p90_ns", "p99_ns", "p50_cycles", "load_gb_s", "chase",
];

/// One row per latency point.
pub fn latency(records: &[LatencyRecord]) -> Result<String> {
    let opt = |v: Option<String>| v.unwrap_or_default();
    let rows = records.iter().map(|r| {
        let (p, l) = (&r.point, &r.latency);
        [
            r.schema_version.to_string(),
            r.host.hostname.clone(),
            p.study.name().to_string(),
            p.cpu.to_string(),
            p.mem.to_string(),
            opt(p.mem_node.map(|n| n.to_string())),
            p.bytes.to_string(),
            p.hugepages.to_string(),
            opt(p.mix.map(|m| m.name().to_string())),
            opt(p.delay_ns.map(|d| format!("{d:.0}"))),
            format!("{:.2}", l.min_ns),
            format!("{:.2}", l.p50_ns),
            format!("{:.2}", l.p90_ns),
            format!("{:.2}", l.p99_ns),
            opt(l.p50_cycles.map(|c| format!("{c:.1}"))),
            opt(r.load.as_ref().map(|x| format!("{:.3}", x.gb_s))),
            opt(l.order.map(|o| o.name().to_string())),
        ]
    });
    write(&LATENCY_HEADER, rows)
}

/// The header and the rows as CSV text.
fn write<const N: usize>(
    header: &[&str; N],
    rows: impl IntoIterator<Item = [String; N]>,
) -> Result<String> {
    let fail = |e: &dyn std::fmt::Display| Error::Runtime(format!("writing CSV: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).map_err(|e| fail(&e))?;
    for row in rows {
        w.write_record(&row).map_err(|e| fail(&e))?;
    }
    let bytes = w.into_inner().map_err(|e| fail(&e))?;
    String::from_utf8(bytes).map_err(|e| fail(&e))
}

/// The CSV exporter: runs (one or a node's each), results files' points
/// and latency points; nothing for `exec`.
pub struct Csv;

impl super::view::TextExporter for Csv {
    fn format(&self) -> super::view::Format {
        super::view::Format::Csv
    }
    fn commands(&self) -> &'static [&'static str] {
        &["run", "latency", "report"]
    }
    fn render(&self, doc: &super::view::View) -> Option<Result<String>> {
        use super::view::View;
        match doc {
            View::Run { report, .. } => Some(render(report)),
            View::Latency(report) => Some(latency(&report.records)),
            View::LatencyExperiment { records, .. } => Some(latency(records)),
            View::Study {
                layout: super::study::Layout::Turned(p),
                ..
            } => Some(turned(p)),
            View::Study { records, .. } => Some(study(records)),
            View::Nodes {
                runs: Some(runs), ..
            } => Some(self::runs(runs.iter().map(|(_, r)| r))),
            _ => None,
        }
    }
}
