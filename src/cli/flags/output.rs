//! Flags that say how a command reports rather than what it measures:
//! where results go, in which form, how much is printed, and whether
//! anything is measured at all.

use clap::Args;

/// `--dry-run` (run, sweep, tune).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct DryRun {
    /// Show what would be measured at every point (threads and CPUs, arrays against the caches,
    /// stores, policy, reproduce lines) and measure nothing
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// `--quiet` (run, check).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct Quiet {
    /// Print less: run prints only the STREAM table; check prints nothing when healthy (NHC's
    /// convention), the reason still going to stderr
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

/// `--prom` (run, latency, check).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Prom {
    /// Also write the results in node_exporter's textfile format to FILE (atomically): run's rates,
    /// latency's idle and matrix latencies, check's verdict
    #[arg(long, value_name = "FILE", help_heading = "Results")]
    pub(crate) prom: Option<std::path::PathBuf>,
}

/// `--json` (run, topo, place).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct Json {
    /// Same as --format json
    #[arg(long, conflicts_with = "format")]
    pub(crate) json: bool,
}

/// `--markdown` (sweep, report, compare).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct Markdown {
    /// Same as --format markdown
    #[arg(long, conflicts_with = "format")]
    pub(crate) markdown: bool,
}

/// `--outlier` (run across ranks, report of per-node files).
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct Outlier {
    /// Flag nodes below this share of the median node (run across ranks; report of per-node files
    /// and MPI runs)
    #[arg(long, default_value_t = crate::ranks::DEFAULT_OUTLIER, value_parser = crate::units::parse_share, help_heading = "Across ranks (MPI)")]
    pub(crate) outlier: f64,
}

/// `--resume` (sweep, latency).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Resume {
    /// Continue the study in FILE: skip the points already in it, append the rest
    #[arg(long, value_name = "FILE", help_heading = "Results")]
    pub(crate) resume: Option<std::path::PathBuf>,
}
