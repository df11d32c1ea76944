//! One CSV row per kernel, with a fixed header (documented in the README).

use crate::results::RunReport;

pub const HEADER: [&str; 16] = [
    "schema_version",
    "hostname",
    "kernel",
    "best_rate_mb_s",
    "avg_time_s",
    "min_time_s",
    "max_time_s",
    "spread",
    "bytes_per_element",
    "dram_bytes_per_element",
    "array_elements",
    "ntimes",
    "threads",
    "isa",
    "stores",
    "validated",
];

pub fn render(report: &RunReport) -> String {
    let m = &report.measurement;
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER).expect("writing to memory");
    for r in &m.results {
        w.write_record([
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
            m.threads.len().to_string(),
            m.isa.map_or(String::new(), |i| i.to_string()),
            m.stores.map_or(String::new(), |s| s.to_string()),
            m.validation.passed.to_string(),
        ])
        .expect("writing to memory");
    }
    String::from_utf8(w.into_inner().expect("flushing to memory")).expect("CSV is UTF-8")
}
