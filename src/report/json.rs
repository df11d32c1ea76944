//! The JSON document (schema in the README).

use crate::results::RunReport;

pub fn render(report: &RunReport) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("plain data serializes");
    s.push('\n');
    s
}
