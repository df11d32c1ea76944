//! Markdown, to paste into an issue, a wiki page or a lab report: a run's
//! kernels as a table with the setup above it; latency's tables as a block.

use super::view::View;
use crate::error::Result;
use crate::results::RunReport;
use std::fmt::Write;

/// A run as a Markdown table, best rate first as STREAM orders columns.
pub fn run(report: &RunReport) -> String {
    let m = &report.measurement;
    let mut o = String::new();
    let method = m.target().method();
    let what = match m.host_threads() {
        Some(threads) => format!(
            "{} · {}",
            crate::units::plural(threads.len(), "thread"),
            report.request.placement
        ),
        None => m.target().describe().unwrap_or_default(),
    };
    let _ = writeln!(
        o,
        "**{}** · {} × {} elements · {what}",
        report.host.hostname, m.arrays, m.array_elements,
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "| kernel | best MB/s | avg time s | min time s | max time s |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|");
    for r in &m.results {
        let _ = writeln!(
            o,
            "| {} | {:.1} | {:.6} | {:.6} | {:.6} |",
            r.kernel.spec().name,
            r.best_rate_mb_s,
            r.avg_time_s,
            r.min_time_s,
            r.max_time_s
        );
    }
    let _ = writeln!(o);
    use super::run_header::{KernelStoresLines, kernel_stores};
    if let (Some(isa), Some(KernelStoresLines::Each(lines))) = (m.isa, kernel_stores(m)) {
        let _ = writeln!(
            o,
            "- **kernels**: {isa} ISA, stores chosen by kernel (auto):"
        );
        for line in lines {
            let _ = writeln!(o, "  - `{line}`");
        }
    } else if let (Some(isa), Some(stores)) = (m.isa, m.stores) {
        let reason = match kernel_stores(m) {
            Some(KernelStoresLines::Alike(_, why)) => why,
            _ => report.request.stores_reason.clone(),
        };
        let why = if reason.is_empty() {
            String::new()
        } else {
            format!(" ({reason})")
        };
        let _ = writeln!(o, "- **kernels**: {isa} ISA, {stores} stores{why}");
    }
    let validated = match m.validation.passed {
        true => "validates",
        false => "FAILED validation",
    };
    let _ = writeln!(o, "- **validation**: {validated}");
    if method.clock.own {
        let _ = writeln!(
            o,
            "- **timed by**: {}, {} a repetition",
            method.clock.describe(),
            crate::units::plural(m.inner_repeats, "call")
        );
    }
    for line in m.trust().lines("") {
        // `trusted: …` → `- **trusted**: …`
        let (head, rest) = line.split_once(": ").unwrap_or((&line, ""));
        let _ = writeln!(o, "- **{head}**: {rest}");
    }
    if let Some(c) = &m.in_caches {
        let _ = writeln!(o, "- **{}**", c.warning());
    }
    match &report.peak {
        Some(p) if !p.named.is_empty() => {
            for n in &p.named {
                let _ = writeln!(o, "- **{}**: {:.1} GB/s ({})", n.name, n.gb_s, n.source);
            }
        }
        Some(p) => {
            let _ = writeln!(
                o,
                "- **theoretical peak** of the sockets used: {:.1} GB/s",
                p.used_gb_s
            );
        }
        None => {}
    }
    let _ = writeln!(o, "- **setup** ({}): {:.3} s", method.setup, m.setup_s);
    o
}

/// The Markdown exporter.
pub struct Markdown;

impl super::view::TextExporter for Markdown {
    fn format(&self) -> super::view::Format {
        super::view::Format::Markdown
    }
    fn commands(&self) -> &'static [&'static str] {
        &["run", "latency", "report", "compare", "sweep"]
    }
    fn render(&self, doc: &View) -> Option<Result<String>> {
        match doc {
            View::Run { report, .. } => Some(Ok(run(report))),
            View::Latency(report) => Some(Ok(format!(
                "## Latency\n\n```text\n{}```\n",
                super::latency_tables::render(&report.records)
            ))),
            View::Study {
                records,
                kernel,
                plots,
                dir,
                layout,
            } => Some(Ok(super::study::markdown(
                records,
                *kernel,
                &super::view::links(plots, dir),
                *layout,
            ))),
            View::Summary { records, kernel } => {
                Some(Ok(super::study::summary(records, *kernel, true)))
            }
            View::LatencyExperiment {
                records,
                plots,
                dir,
            } => Some(Ok(super::latency_tables::document(
                records, plots, dir, true,
            ))),
            View::Nodes {
                text, plots, dir, ..
            } => {
                let mut o = format!("```text\n{text}```\n");
                for (title, path) in super::view::links(plots, dir) {
                    let _ = writeln!(o, "\n![{title}]({path})");
                }
                Some(Ok(o))
            }
            View::Compare(c) => Some(Ok(c.render(true))),
            _ => None,
        }
    }
}
