//! One trait for every output format a command prints, and one registry.
//! A command builds a [`Document`] and hands it to the exporter the user
//! named with `--format`; the exporter renders it, or says it has no form
//! for that document. Adding a format is one file implementing
//! [`Exporter`] and one line in [`EXPORTERS`].

use super::exec::ExecView;
use crate::error::Result;
use crate::kernels::KernelId;
use crate::results::latency::{LatencyRecord, LatencyReport};
use crate::results::{Record, RunReport};

/// What a command prints.
pub enum Document<'a> {
    /// `membw run`; `quiet`: STREAM's table alone where the format has one.
    Run { report: &'a RunReport, quiet: bool },
    /// `membw exec`.
    Exec(ExecView<'a>),
    /// `membw latency`.
    Latency(&'a LatencyReport),
    /// `membw report` on a bandwidth results file, its plots in `dir`.
    Study {
        records: &'a [Record],
        kernel: KernelId,
        plots: &'a [super::Plot],
        dir: &'a std::path::Path,
    },
    /// The summary `membw sweep` prints when it ends.
    Summary {
        records: &'a [Record],
        kernel: KernelId,
    },
    /// `membw report` on a latency results file, its plots in `dir`.
    LatencyStudy {
        records: &'a [LatencyRecord],
        plots: &'a [super::Plot],
        dir: &'a std::path::Path,
    },
    /// `membw report` on run documents: the per-node table, already laid
    /// out, and its plots in `dir`.
    Nodes {
        text: &'a str,
        plots: &'a [super::Plot],
        dir: &'a std::path::Path,
    },
    /// `membw compare A B`.
    Compare(Comparison<'a>),
    /// `membw check`: the verdict.
    Check(&'a crate::health::verdict::Verdict),
}

/// Two result sets of one kind, for `membw compare`.
pub enum Comparison<'a> {
    Bandwidth {
        a: &'a [Record],
        b: &'a [Record],
        kernel: KernelId,
    },
    Latency {
        a: &'a [LatencyRecord],
        b: &'a [LatencyRecord],
    },
    Runs {
        a: &'a RunReport,
        b: &'a RunReport,
    },
}

impl Comparison<'_> {
    /// The side-by-side table, plain or as Markdown.
    pub fn render(&self, markdown: bool) -> String {
        match self {
            Comparison::Bandwidth { a, b, kernel } => {
                super::study::compare(a, b, *kernel, markdown)
            }
            Comparison::Latency { a, b } => super::latency::compare(a, b, markdown),
            Comparison::Runs { a, b } => super::nodes::compare(a, b, markdown),
        }
    }
}

impl Document<'_> {
    /// The command the document comes from, for messages.
    pub fn command(&self) -> &'static str {
        match self {
            Document::Run { .. } => "run",
            Document::Exec(_) => "exec",
            Document::Latency(_) => "latency",
            Document::Study { .. } | Document::LatencyStudy { .. } | Document::Nodes { .. } => {
                "report"
            }
            Document::Summary { .. } => "sweep",
            Document::Compare(_) => "compare",
            Document::Check(_) => "check",
        }
    }
}

/// An output format.
pub trait Exporter: Sync {
    /// The name `--format` takes.
    fn name(&self) -> &'static str;
    /// The commands whose documents it renders (`run`, `exec`, `latency`),
    /// known before anything is measured.
    fn commands(&self) -> &'static [&'static str];
    /// The document in this format; `None` when the format has no form for it.
    fn export(&self, doc: &Document) -> Option<Result<String>>;
}

/// Every format, by name, in the order `--help` lists them.
pub const EXPORTERS: &[&dyn Exporter] = &[
    &super::text::Text,
    &super::json::Json,
    &super::jsonl::Jsonl,
    &super::csv::Csv,
    &super::markdown::Markdown,
    &super::html::Html,
];

/// The names `--format` takes.
pub const NAMES: [&str; 6] = ["text", "json", "jsonl", "csv", "markdown", "html"];

/// Each plot's title and where it was written, for the formats that link
/// to the files rather than embed them.
pub fn links(plots: &[super::Plot], dir: &std::path::Path) -> Vec<(String, String)> {
    plots
        .iter()
        .map(|p| {
            let path = dir.join(&p.file).to_string_lossy().into_owned();
            (p.title.clone(), path)
        })
        .collect()
}

/// The exporter called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Exporter> {
    EXPORTERS.iter().copied().find(|e| e.name() == name)
}

/// The formats that render `command`'s documents.
pub fn formats_for(command: &str) -> Vec<&'static str> {
    EXPORTERS
        .iter()
        .filter(|e| e.commands().contains(&command))
        .map(|e| e.name())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_and_the_names_agree() {
        let names: Vec<&str> = EXPORTERS.iter().map(|e| e.name()).collect();
        assert_eq!(names, NAMES);
        assert!(NAMES.iter().all(|n| by_name(n).is_some()));
        assert!(by_name("yaml").is_none());
        assert_eq!(formats_for("exec"), ["text", "json", "jsonl"]);
        assert_eq!(
            formats_for("latency"),
            ["text", "json", "jsonl", "csv", "markdown"]
        );
        assert_eq!(
            formats_for("report"),
            ["text", "jsonl", "csv", "markdown", "html"]
        );
        assert_eq!(formats_for("sweep"), ["text", "jsonl", "markdown"]);
        assert_eq!(formats_for("compare"), ["text", "markdown"]);
        assert_eq!(formats_for("check"), ["text", "json", "jsonl"]);
    }
}
