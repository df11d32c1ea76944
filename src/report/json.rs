//! The JSON documents (schemas in the README): pretty-printed, one newline
//! at the end.

use super::pretty;
use crate::error::Result;
use crate::results::RunReport;

/// `membw run --json`.
pub fn render(report: &RunReport) -> Result<String> {
    pretty(report)
}

/// The JSON exporter: each command's document, pretty-printed.
pub struct Json;

impl super::view::TextExporter for Json {
    fn format(&self) -> super::view::Format {
        super::view::Format::Json
    }
    fn commands(&self) -> &'static [&'static str] {
        &[
            "run", "exec", "latency", "check", "baseline", "topo", "place", "peers",
        ]
    }
    fn render(&self, doc: &super::view::View) -> Option<Result<String>> {
        use super::view::View;
        Some(match doc {
            View::Run { report, .. } => render(report),
            // One line: the record a results file holds, so that report
            // and compare read what `exec --format json > f` wrote.
            View::Exec(view) => serde_json::to_string(view.record)
                .map(|line| line + "\n")
                .map_err(|e| crate::error::Error::Runtime(e.to_string())),
            View::Devices(set) => pretty(set),
            View::Peers(r) => pretty(r),
            View::Latency(report) => pretty(report),
            View::Check(verdict) => pretty(verdict),
            View::Baseline(baseline) => pretty(baseline),
            View::Topo(view) => super::topo::json(view),
            View::Place(view) => super::place::json(view),
            _ => return None,
        })
    }
}
