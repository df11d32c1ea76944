//! What every output format renders: the [`View`] a command prints, the
//! [`Format`]s, and the [`Exporter`] trait each format implements. The
//! registry of formats is `export.rs`'s.

use super::program_run::ExecView;
use crate::error::Result;
use crate::kernels::KernelId;
use crate::results::latency_record::{LatencyRecord, LatencyReport};
use crate::results::{Record, RunReport};

/// What a command prints.
pub enum View<'a> {
    /// `membw run`; `quiet`: STREAM's table alone where the format has one.
    Run { report: &'a RunReport, quiet: bool },
    /// `membw run` on a device set: each alone, then all at once.
    Devices(&'a crate::results::device_set::DeviceSetReport),
    /// `membw peers`: the GPU↔GPU matrix.
    Peers(&'a crate::results::peers::PeerReport),
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
        /// Its table long (with every run's figures, where asked) or
        /// turned (`--rows`, `--columns`).
        layout: super::study::Layout<'a>,
    },
    /// The summary `membw sweep` prints when it ends.
    Summary {
        records: &'a [Record],
        kernel: KernelId,
    },
    /// `membw report` on a latency results file, its plots in `dir`.
    LatencyExperiment {
        records: &'a [LatencyRecord],
        plots: &'a [super::Plot],
        dir: &'a std::path::Path,
    },
    /// `membw report` on run documents: the per-node table, already laid
    /// out, and its plots in `dir`; the documents themselves (none for a
    /// fleet's verdicts).
    Nodes {
        text: &'a str,
        runs: Option<&'a [(std::path::PathBuf, RunReport)]>,
        plots: &'a [super::Plot],
        dir: &'a std::path::Path,
    },
    /// `membw compare A B`.
    Compare(Compared<'a>),
    /// `membw check`: the verdict.
    Check(&'a crate::health::verdict::Verdict),
    /// `membw baseline`: what it wrote.
    Baseline(&'a crate::health::Baseline),
    /// `membw topo`: the machine and its peak.
    Topo(super::topo::TopoView<'a>),
    /// `membw place`: where threads would run.
    Place(&'a super::place::PlaceView<'a>),
    /// `membw tune`: the race's verdict.
    Tune(&'a super::tune_verdict::TuneView<'a>),
}

/// Two result sets of one kind, for `membw compare`.
pub enum Compared<'a> {
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

impl Compared<'_> {
    /// The side-by-side table, plain or as Markdown.
    pub fn render(&self, markdown: bool) -> String {
        match self {
            Compared::Bandwidth { a, b, kernel } => super::study::compare(a, b, *kernel, markdown),
            Compared::Latency { a, b } => super::latency_tables::compare(a, b, markdown),
            Compared::Runs { a, b } => super::nodes::compare(a, b, markdown),
        }
    }
}

impl View<'_> {
    /// The command the document comes from, for messages.
    pub fn command(&self) -> &'static str {
        match self {
            View::Run { .. } | View::Devices(_) => "run",
            View::Exec(_) => "exec",
            View::Peers(_) => "peers",
            View::Latency(_) => "latency",
            View::Study { .. } | View::LatencyExperiment { .. } | View::Nodes { .. } => "report",
            View::Summary { .. } => "sweep",
            View::Compare(_) => "compare",
            View::Check(_) => "check",
            View::Baseline(_) => "baseline",
            View::Topo(_) => "topo",
            View::Place(_) => "place",
            View::Tune(_) => "tune",
        }
    }

    /// What the document is, for a message that says which formats fit it.
    pub fn what(&self) -> &'static str {
        match self {
            View::Study { .. } => "a bandwidth results file",
            View::LatencyExperiment { .. } => "a latency results file",
            View::Nodes { runs: Some(_), .. } => "run documents",
            View::Nodes { runs: None, .. } => "a fleet's check verdicts",
            View::Devices(_) => "a device set's run",
            _ => "this document",
        }
    }
}

/// An output format, as `--format` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Jsonl,
    Csv,
    Markdown,
    Html,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 6] = [
        Format::Text,
        Format::Json,
        Format::Jsonl,
        Format::Csv,
        Format::Markdown,
        Format::Html,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Jsonl => "jsonl",
            Format::Csv => "csv",
            Format::Markdown => "markdown",
            Format::Html => "html",
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An output format's writer: bytes, so that a binary format (an image, a
/// columnar file) is one more exporter like the others.
pub trait Exporter: Sync {
    fn format(&self) -> Format;
    /// The commands whose documents it renders (`run`, `exec`, `latency`),
    /// known before anything is measured.
    fn commands(&self) -> &'static [&'static str];
    /// The document in this format; `None` when the format has no form for it.
    fn export(&self, doc: &View) -> Option<Result<Vec<u8>>>;
}

/// A format that is text (all of today's): it renders a `String`, and is
/// an [`Exporter`] of its UTF-8 bytes.
pub trait TextExporter: Sync {
    fn format(&self) -> Format;
    fn commands(&self) -> &'static [&'static str];
    fn render(&self, doc: &View) -> Option<Result<String>>;
}

impl<T: TextExporter> Exporter for T {
    fn format(&self) -> Format {
        TextExporter::format(self)
    }
    fn commands(&self) -> &'static [&'static str] {
        TextExporter::commands(self)
    }
    fn export(&self, doc: &View) -> Option<Result<Vec<u8>>> {
        self.render(doc).map(|r| r.map(String::into_bytes))
    }
}

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
