//! The command line: the only module that knows clap and flag names. It
//! turns arguments into the plain settings the rest of the program uses,
//! runs the command, and words domain errors with the flags they concern.

mod args;
mod common;
mod documents;
mod env;
mod exec;
mod health;
mod install;
mod latency;
mod resume;
mod sweep;
mod tune;
mod values;

use crate::engine::Engine;
use crate::error::{Error, Input, Result};
use crate::memory::policy::{self as mempolicy, MemPolicy};
use crate::peak;
use crate::placement::{self, spellings};
use crate::plan::{self, Prepared, Settings};
use crate::report;
use crate::results::{Request, RunReport};
use crate::topology::fixture;
use crate::units::{ArraySize, Bytes, ELEMENT_BYTES};
use args::{KernelList, MeasureArgs, PeakArgs, PlacementArgs, parse_kernel_list};
use clap::{Args, Parser, Subcommand};
use common::{print, read_topology};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "membw",
    version,
    about = "Sustainable memory bandwidth, measured the STREAM way, pinned and validated",
    arg_required_else_help = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Measure bandwidth with STREAM's kernels (Copy, Scale, Add, Triad, plus read and write)
    Run(RunArgs),
    /// Show sockets, NUMA nodes and distances, cores, caches, allowed CPUs and the theoretical peak
    Topo(TopoArgs),
    /// Resolve a placement (OMP_PLACES, likwid-pin, CPU list, strategy) and show how to reproduce it
    Place(PlaceArgs),
    /// Measure many configurations (threads, placements, memory policies, sizes, NUMA matrix) with repeats
    Sweep(sweep::SweepArgs),
    /// Search threads × placement × store mode for the best sustained bandwidth within a time budget
    Tune(tune::TuneArgs),
    /// Tables, SVG plots, Markdown and a self-contained HTML report from a results file
    Report(documents::ReportArgs),
    /// Two results files side by side, with ratios
    Compare(documents::CompareArgs),
    /// Run your own STREAM build (or BabelStream, likwid-bench) under membw's placement and memory policy, verified
    Exec(exec::ExecArgs),
    /// Memory latency by pointer chasing, L1 to DRAM (ns and cycles per load, percentiles); the NUMA latency matrix; loaded latency
    Latency(latency::LatencyArgs),
    /// Measure this node's healthy bandwidth, for the whole node and each NUMA domain, into a baseline file
    Baseline(health::BaselineArgs),
    /// Is this node healthy? Against a baseline (or its NUMA domains against each other) in seconds; exit 0 healthy, 1 unhealthy, 2 could not check
    Check(health::CheckArgs),
    /// Print a shell completion script: mkdir -p ~/.local/share/bash-completion/completions &&
    /// membw completions bash > ~/.local/share/bash-completion/completions/membw
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): membw man > membw.1; man ./membw.1. With --dir, write
    /// it and one page per subcommand (membw-run.1, ...): membw man --dir ~/.local/share/man/man1
    Man {
        /// Write membw.1 and every membw-SUBCOMMAND.1 into this directory (created if missing)
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

#[derive(Args, Debug)]
struct PlaceArgs {
    #[command(flatten)]
    placement: PlacementArgs,

    /// Memory policy to include in the numactl line (see membw run --mem)
    #[arg(long)]
    mem: Option<String>,

    /// Resolve against a fixture tree instead of the live machine
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,

    /// Output format
    #[arg(long, default_value = "text", default_value_if("json", clap::builder::ArgPredicate::IsPresent, "json"), value_parser = args::format_parser("place"))]
    format: crate::report::export::Format,

    /// Same as --format json
    #[arg(long, conflicts_with = "format")]
    json: bool,
}

#[derive(Args, Debug)]
struct TopoArgs {
    /// Read DIR/sys and DIR/proc instead of the live machine (a captured or generated fixture)
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,

    /// Output format (json: the full model)
    #[arg(long, default_value = "text", default_value_if("json", clap::builder::ArgPredicate::IsPresent, "json"), value_parser = args::format_parser("topo"))]
    format: crate::report::export::Format,

    /// Same as --format json
    #[arg(long, conflicts_with = "format")]
    json: bool,

    /// Copy this machine's topology files into DIR (to report a node, or as a test fixture)
    #[arg(long, value_name = "DIR", conflicts_with = "sysroot")]
    capture: Option<PathBuf>,

    /// Write a fixture tree for the machine described in SPEC (JSON) into DIR
    #[arg(long, num_args = 2, value_names = ["SPEC", "DIR"], conflicts_with_all = ["sysroot", "capture"])]
    generate: Option<Vec<PathBuf>>,

    #[command(flatten)]
    peak: PeakArgs,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Kernels to run, comma-separated (each repetition runs them in this order): copy, scale,
    /// add, triad, read, write, init, update, daxpy, striad, sdaxpy, nstream, dot; or a group:
    /// stream (the first four), tbb (TheBandwidthBenchmark's), babelstream, all
    #[arg(long, value_parser = parse_kernel_list, default_value = "stream")]
    kernels: KernelList,

    #[command(flatten)]
    measure: MeasureArgs,

    #[command(flatten)]
    placement: PlacementArgs,

    /// Output format
    #[arg(long, default_value = "text", default_value_if("json", clap::builder::ArgPredicate::IsPresent, "json"), value_parser = args::format_parser("run"))]
    format: crate::report::export::Format,

    /// Same as --format json
    #[arg(long, conflicts_with = "format")]
    json: bool,

    /// Print only the STREAM table
    #[arg(short, long)]
    quiet: bool,

    #[command(flatten)]
    peak: PeakArgs,

    /// Also append this run to a results file as one JSON Lines record (created if missing), for report and compare
    #[arg(short, long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,

    /// Also write the rates in node_exporter's textfile format to FILE (atomically)
    #[arg(long, value_name = "FILE")]
    prom: Option<std::path::PathBuf>,

    /// Across ranks: flag nodes below this share of the median node
    #[arg(long, default_value_t = crate::ranks::DEFAULT_OUTLIER, value_parser = parse_share, help_heading = "Across ranks (MPI)")]
    outlier: f64,

    /// Across ranks: give up on a rank that does not answer within this time
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration, help_heading = "Across ranks (MPI)")]
    rank_timeout: std::time::Duration,
}

/// A share strictly between 0 and 1 (0.9 or 90%).
fn parse_share(text: &str) -> std::result::Result<f64, String> {
    crate::units::parse_share(text)
}

/// Folds clap's multi-line message (error, details, usage, hint) into the
/// error and its details on one line.
fn one_line(rendered: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    for line in rendered.lines() {
        let line = line.trim();
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if let Some(tip) = line.strip_prefix("tip: ") {
            // "a similar argument exists: '--threads'" → "(did you mean '--threads'?)"
            if let Some((_, name)) = tip.split_once("exists: ") {
                parts.push(format!("(did you mean {name}?)"));
            }
        } else if !line.is_empty() {
            parts.push(line.to_string());
        }
    }
    let text = parts
        .join(" ")
        .replace(" found (did you mean", " (did you mean");
    let text = text.trim_start_matches("error: ");
    if text.is_empty() {
        "invalid arguments".into()
    } else {
        text.to_string()
    }
}

/// The flag a domain input error is about.
fn flag(input: Input) -> String {
    format!("--{}", input.name())
}

/// Parses the process arguments and runs the command; clap's own errors
/// are cut to one line, domain errors are worded with flag names.
pub fn main() -> Result<()> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            // --help, --version, and bare `membw`: the help on stdout.
            return print(e.render().to_string());
        }
        Err(e) => {
            let mut line = one_line(&e.render().to_string());
            line = exec::missing_dashes(e.kind(), line);
            return Err(Error::Usage(line));
        }
    };
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Topo(args) => topo(args),
        Command::Place(args) => place(args),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Tune(args) => tune::tune(args),
        Command::Report(args) => documents::report(args),
        Command::Compare(args) => documents::compare(args),
        Command::Exec(args) => exec::exec(args),
        Command::Latency(args) => latency::latency(args),
        Command::Baseline(args) => health::baseline(args),
        Command::Check(args) => health::check(args),
        Command::Completions { shell } => install::completions(shell),
        Command::Man { dir } => install::man(dir.as_deref()),
    };
    result.map_err(|e| match e {
        Error::Input { .. } => Error::Usage(e.render(flag)),
        other => other,
    })
}

fn place(args: PlaceArgs) -> Result<()> {
    let topo = read_topology(args.sysroot.as_ref())?;
    let mem = match &args.mem {
        Some(m) => mempolicy::parse(m, &topo)?,
        None => MemPolicy::default(),
    };
    let placement = args.placement.placement(&env::Vars::from_process())?;
    let cpus =
        placement::resolve(&topo, &placement.request).map_err(|e| placement.name_error(e))?;
    let spellings = spellings::spell_plan(&cpus, &mem, crate::memory::Hugepages::Auto);
    let view = report::place::PlaceView {
        topo: &topo,
        request: placement.described.clone(),
        memory_policy: mem.to_string(),
        cpus: &cpus,
        spellings: &spellings,
    };
    print(common::render_as(
        args.format,
        &report::export::Document::Place(&view),
    )?)
}

fn topo(args: TopoArgs) -> Result<()> {
    if let Some(dir) = &args.capture {
        let files = fixture::capture(std::path::Path::new("/"), dir)
            .map_err(|e| Error::Runtime(format!("--capture {}: {e}", dir.display())))?;
        crate::say!(
            "membw: captured {files} files into {}; read them back with: membw topo --sysroot {}",
            dir.display(),
            dir.display()
        );
        return Ok(());
    }
    if let Some(paths) = &args.generate {
        let (spec_path, dir) = (&paths[0], &paths[1]);
        let text = std::fs::read_to_string(spec_path)
            .map_err(|e| Error::Usage(format!("--generate {}: {e}", spec_path.display())))?;
        let spec: fixture::MachineSpec = serde_json::from_str(&text)
            .map_err(|e| Error::Usage(format!("--generate {}: {e}", spec_path.display())))?;
        spec.check()
            .map_err(|e| Error::Usage(format!("--generate {}: {e}", spec_path.display())))?;
        spec.write(dir)
            .map_err(|e| Error::Runtime(format!("--generate into {}: {e}", dir.display())))?;
        crate::say!(
            "membw: wrote a {}-CPU fixture into {}",
            spec.cpus(),
            dir.display()
        );
        return Ok(());
    }
    let topo = read_topology(args.sysroot.as_ref())?;
    let peak = peak::estimate(&topo, &args.peak.request());
    print(common::render_as(
        args.format,
        &report::export::Document::Topo {
            topo: &topo,
            peak: peak.as_ref(),
        },
    )?)
}

/// The source for one rank of a multi-rank run.
#[cfg(feature = "mpi")]
fn ranks_source(
    launch: &crate::ranks::launcher::Launch,
    args: &RunArgs,
    peak: Option<&peak::Peak>,
) -> Result<Box<dyn crate::engine::source::Source>> {
    let source = crate::ranks::mpi::MpiSource::init(
        launch.local_rank,
        peak.map(peak::Peak::node_gb_s),
        args.outlier,
        args.rank_timeout,
    )?;
    Ok(Box::new(source))
}

#[cfg(not(feature = "mpi"))]
fn ranks_source(
    _: &crate::ranks::launcher::Launch,
    _: &RunArgs,
    _: Option<&peak::Peak>,
) -> Result<Box<dyn crate::engine::source::Source>> {
    unreachable!("MeasureArgs::launch refuses ranks without the mpi feature")
}

/// `run -o FILE`, opened before anything is measured: a new file, or an
/// existing one to append to (a torn last line from a crash is dropped
/// first). The run becomes one record, the same shape as a sweep's, so
/// that `report` and `compare` read it.
pub(crate) fn open_run_output(path: &std::path::Path) -> Result<crate::results::file::ResultsFile> {
    use crate::results::file::ResultsFile;
    if !path.exists() {
        return ResultsFile::create(path).map_err(|e| common::file_error(e, "--output"));
    }
    let (file, torn) = ResultsFile::resume(path).map_err(|e| common::file_error(e, "--output"))?;
    if let Some(line) = torn {
        crate::say!(
            "membw: {}: dropped line {line}, cut short by an earlier crash or full disk",
            path.display()
        );
    }
    Ok(file)
}

fn run(args: RunArgs) -> Result<()> {
    if let Some(p) = &args.prom {
        common::check_writable(p, "--prom", true)?;
    }
    let m = &args.measure;
    let (topo, _weights) = common::with_weights(m.weights.as_deref(), read_topology(None)?)?;
    let (mem_text, stores) = m.single("run")?;
    let placement = args.placement.placement(&env::Vars::from_process())?;
    let settings = Settings::new(
        &m.measure(args.kernels.0.clone()),
        placement.request.clone(),
        stores,
        mempolicy::parse(&mem_text, &topo)?,
    );
    let Prepared {
        plan,
        stores_reason,
    } = plan::prepare(&topo, &settings).map_err(|e| placement.name_error(e))?;
    let array_bytes = Bytes(plan.elements as u64 * ELEMENT_BYTES);
    common::note_unused_arrays(&mem_text, &plan.arrays_needed());
    let peak_estimate = peak::for_policy(&topo, &args.peak.request(), &plan.mem);
    let mut source = match m.launch("run")? {
        Some(launch) => ranks_source(&launch, &args, peak_estimate.as_ref())?,
        None => m.source()?,
    };
    let mut engine = Engine::new(&topo, source.as_mut(), peak_estimate);

    if std::io::stderr().is_terminal() && !args.quiet {
        crate::say!(
            "membw: {}, {} × {} arrays, {} ...",
            crate::units::plural(plan.cpus.len(), "thread"),
            plan.arrays_needed().len(),
            array_bytes,
            crate::units::plural(plan.ntimes, "repetition")
        );
    }
    // Only the process that reports writes (rank 0 of an MPI run).
    let mut output = match &args.output {
        Some(path) if engine.reports() => Some(crate::engine::BandwidthSession::new(
            "run",
            crate::results::Host::describe(&topo),
            Default::default(),
            Some(open_run_output(path)?),
        )),
        _ => None,
    };
    let measurement = engine.measure(&plan)?;
    if !engine.reports() {
        // Rank 0 prints for every rank.
        return Ok(());
    }
    for w in &measurement.warnings {
        crate::say!("membw: warning: {w}");
    }
    let request = Request {
        size: m.size.map(|s| match s {
            ArraySize::Elements(n) => n.to_string(),
            ArraySize::Bytes(b) => format!("{} B", b.0),
        }),
        threads: placement.request.threads,
        placement: placement.described.clone(),
        isa: settings.measure.isa.map_or("auto", |i| i.name()).into(),
        stores: stores.to_string(),
        stores_reason,
        inherited_mem_policy: m
            .mem
            .is_empty()
            .then(crate::memory::inherited::policy)
            .flatten(),
        cpuset_mems: crate::memory::inherited::cpuset_mems(&topo),
    };
    let peak = engine.peak_use(
        &plan.cpus,
        measurement
            .results
            .iter()
            .map(|r| (r.kernel, r.best_gb_s())),
    );
    let mut report = RunReport::new(
        &topo,
        engine.source_name(),
        request,
        measurement,
        peak,
        spellings::spell_plan(&plan.cpus, &plan.mem, plan.hugepages),
    );
    if report.measurement.ranks().is_some() {
        // Rank 0's sockets are not the ranks' sockets: the per-node table
        // carries each node's share of its peak instead.
        report.peak = None;
        report.peak_unknown = None;
    }
    if let Some(w) = report.peak.as_ref().and_then(|p| p.implausible()) {
        crate::say!("membw: warning: {w}");
    }
    if let Some(session) = &mut output {
        let job = crate::engine::Job {
            point: crate::results::Point::new(
                placement.described.clone(),
                &mem_text,
                stores,
                &plan,
                None,
            ),
            plan: plan.clone(),
            label: String::new(),
            by: crate::engine::By::Engine,
        };
        let (point, payload) = engine.payload(
            &job,
            vec![crate::results::RunResult::from_measurement(
                &report.measurement,
            )],
        );
        session.keep(point, payload)?;
    }
    print(common::render_as(
        args.format,
        &report::export::Document::Run {
            report: &report,
            quiet: args.quiet,
        },
    )?)?;
    if let Some(p) = &args.prom {
        common::write_atomic(p, "--prom", report::prom::run(&report).as_bytes())?;
    }
    crate::results::require_valid(&report.measurement)
}
