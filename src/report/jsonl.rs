//! JSON Lines: one compact JSON value per line, for `jq`, log shippers and
//! `membw report`. A run or exec is its document on one line; a study or a
//! latency run is its records, one per line, as in a results file.

use super::view::View;
use crate::error::{Error, Result};
use serde::Serialize;

/// Each value as one line of compact JSON.
fn lines<T: Serialize>(values: impl IntoIterator<Item = T>) -> Result<String> {
    let mut out = String::new();
    for v in values {
        let line =
            serde_json::to_string(&v).map_err(|e| Error::Runtime(format!("writing JSON: {e}")))?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// The JSON Lines exporter.
pub struct Jsonl;

impl super::view::TextExporter for Jsonl {
    fn format(&self) -> super::view::Format {
        super::view::Format::Jsonl
    }
    fn commands(&self) -> &'static [&'static str] {
        &[
            "run", "exec", "latency", "report", "sweep", "check", "tune", "peers",
        ]
    }
    fn render(&self, doc: &View) -> Option<Result<String>> {
        Some(match doc {
            View::Run { report, .. } => lines([report]),
            // Each device alone, then all at once: one run document a line.
            View::Devices(set) => lines(set.alone.iter().chain([&set.at_once])),
            View::Exec(view) => lines([view.record]),
            View::Peers(r) => lines([r]),
            View::Latency(report) => lines(&report.records),
            View::Study { records, .. } | View::Summary { records, .. } => lines(*records),
            View::LatencyExperiment { records, .. } => lines(*records),
            View::Check(verdict) => lines([verdict]),
            // The candidates' records, best first.
            View::Tune(view) => lines(view.ranked.iter().map(|(r, _)| r)),
            View::Nodes { .. }
            | View::Compare(_)
            | View::Baseline(_)
            | View::Topo(_)
            | View::Place(_) => return None,
        })
    }
}
