//! JSON Lines: one compact JSON value per line, for `jq`, log shippers and
//! `membw report`. A run or exec is its document on one line; a study or a
//! latency run is its records, one per line, as in a results file.

use super::export::Document;
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

impl super::export::TextExporter for Jsonl {
    fn format(&self) -> super::export::Format {
        super::export::Format::Jsonl
    }
    fn commands(&self) -> &'static [&'static str] {
        &["run", "exec", "latency", "report", "sweep", "check", "tune"]
    }
    fn render(&self, doc: &Document) -> Option<Result<String>> {
        Some(match doc {
            Document::Run { report, .. } => lines([report]),
            Document::Exec(view) => lines([view.record]),
            Document::Latency(report) => lines(&report.records),
            Document::Study { records, .. } | Document::Summary { records, .. } => lines(*records),
            Document::LatencyStudy { records, .. } => lines(*records),
            Document::Check(verdict) => lines([verdict]),
            // The candidates' records, best first.
            Document::Tune(view) => lines(view.ranked.iter().map(|(r, _)| r)),
            Document::Nodes { .. }
            | Document::Compare(_)
            | Document::Baseline(_)
            | Document::Topo { .. }
            | Document::Place(_) => return None,
        })
    }
}
