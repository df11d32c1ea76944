//! The command line: the only module that knows clap and flag names. It
//! turns arguments into the plain settings the rest of the program uses,
//! runs the command, and words domain errors with the flags they concern.

mod args;
mod axes;
mod baseline;
mod common;
mod documents;
mod env;
mod exec;
mod flags;
mod health;
mod health_protocol;
mod install;
mod latency;
mod latency_values;
mod peers;
mod placed;
mod run;
mod run_set;
mod signals;
mod sweep;
mod tune;
mod values;
mod version;
mod writing;

use crate::error::{Error, Input, Result};
use crate::peak;
use crate::placement::{self, spellings};
use crate::report;
use crate::topology::fixture;
use args::{PeakArgs, PlacementArgs};
use clap::{Args, Parser, Subcommand};
use common::{print, read_topology};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "membw",
    version,
    long_version = version::long(),
    about = "Sustainable memory bandwidth, measured the STREAM way, pinned and validated",
    after_help = "GPUs: membw topo lists them; membw run --backend cuda:0 measures GPU 0's memory, and with\n--kernels transfers its host link (run, sweep, baseline and check take --backend)",
    arg_required_else_help = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Measure bandwidth with STREAM's kernels (Copy, Scale, Add, Triad, plus read and write),
    /// on this node's CPUs or a GPU's memory (--backend cuda:N)
    Run(run::RunArgs),
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
    /// GPU↔GPU bandwidth over every ordered pair of a device set (NVLink, PCIe P2P): copy
    /// engine and copy kernel, written and read, one way and both, as a matrix per method
    Peers(peers::PeersArgs),
    /// Measure this node's healthy bandwidth, for the whole node and each NUMA domain, into a baseline file
    Baseline(baseline::BaselineArgs),
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
    /// The kernels: each loop, the bytes per element its GB/s counts, what write-allocate adds, its groups
    Kernels,
    /// This build and this node: commit, features (MPI), the kernels compiled and those this CPU runs, the GPU libraries that load
    Version,
}

#[derive(Args, Debug)]
struct PlaceArgs {
    #[command(flatten)]
    placement: PlacementArgs,

    /// The policy the numactl line includes
    #[command(flatten)]
    mem: flags::Mem,

    #[command(flatten)]
    sysroot: flags::Sysroot,

    #[command(flatten)]
    form: flags::Form,

    #[command(flatten)]
    json: flags::JsonFlag,
}

#[derive(Args, Debug)]
struct TopoArgs {
    #[command(flatten)]
    sysroot: flags::Sysroot,

    #[command(flatten)]
    form: flags::Form,

    #[command(flatten)]
    json: flags::JsonFlag,

    /// Copy this machine's topology files into DIR (to report a node, or as a test fixture)
    #[arg(long, value_name = "DIR", conflicts_with = "sysroot")]
    capture: Option<PathBuf>,

    /// Write a fixture tree for the machine described in SPEC (JSON) into DIR
    #[arg(long, num_args = 2, value_names = ["SPEC", "DIR"], conflicts_with_all = ["sysroot", "capture"])]
    generate: Option<Vec<PathBuf>>,

    #[command(flatten)]
    peak: PeakArgs,
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

/// The command line, every value that is a name matched in any case
/// (`--stores NT`, `--format JSON`, `--isa AVX2`).
fn parse_cli() -> std::result::Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    fn any_case(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|a| {
            let takes = a.get_action().takes_values();
            a.ignore_case(takes)
        })
        .mut_subcommands(any_case)
    }
    let matches = any_case(command()).try_get_matches()?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    // Baseline and check cover a GPU node's GPUs unless --backend names
    // what they measure: whether it was given is the parser's to say.
    let given = |sub: &clap::ArgMatches| {
        sub.value_source("backend") != Some(clap::parser::ValueSource::DefaultValue)
    };
    match (&mut cli.command, matches.subcommand()) {
        (Command::Baseline(args), Some((_, sub))) => args.protocol.backend_given = given(sub),
        (Command::Check(args), Some((_, sub))) => args.protocol.backend_given = given(sub),
        _ => {}
    }
    Ok(cli)
}

/// The command line as clap builds it from the definitions, with what each
/// command sets of a shared flag (its `--format` values): what parsing,
/// completions and man pages all describe.
pub(crate) fn command() -> clap::Command {
    use clap::CommandFactory;
    flags::per_command(Cli::command())
}

/// The flag a domain input error is about.
fn flag(input: Input) -> String {
    match input {
        Input::Size => "--array-size".into(),
        Input::Sizes => "--working-sets".into(),
        other => format!("--{}", other.name()),
    }
}

/// Parses the process arguments and runs the command; clap's own errors
/// are cut to one line, domain errors are worded with flag names.
pub fn main() -> Result<()> {
    // Before clap: its own message would name a byte of the character.
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut mine = argv.iter().take_while(|a| *a != "--").enumerate();
    let typed = mine.find_map(|(i, a)| {
        // Named by its flag where the value follows one.
        let flag = i
            .checked_sub(1)
            .map(|p| argv[p].as_str())
            .filter(|p| p.starts_with("--") && !a.starts_with('-'))
            .unwrap_or("argument");
        values::typographic_error(flag, a)
    });
    if let Some(e) = typed {
        return Err(Error::Usage(e));
    }
    let cli = match parse_cli() {
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
            line = exec::run_a_program(e.kind(), line);
            return Err(Error::Usage(line));
        }
    };
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Topo(args) => topo(args),
        Command::Place(args) => place(args),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Tune(args) => tune::tune(args),
        Command::Report(args) => documents::report(args),
        Command::Compare(args) => documents::compare(args),
        Command::Exec(args) => exec::exec(args),
        Command::Latency(args) => latency::latency(args),
        Command::Peers(args) => peers::peers(args),
        Command::Baseline(args) => baseline::baseline(args),
        Command::Check(args) => health::check(args),
        Command::Completions { shell } => install::completions(shell),
        Command::Version => print(version::text()),
        Command::Kernels => print(report::kernels::text()),
        Command::Man { dir } => install::man(dir.as_deref()),
    };
    result.map_err(|e| match e {
        // One suggestion a line: an error that brings its own hint
        // goes without the size's two readings.
        Error::Input {
            input: Input::Size,
            hint: None,
            ..
        } => match size_reading() {
            Some(reading) => Error::Usage(format!("{} ({reading})", e.render(flag))),
            None => Error::Usage(e.render(flag)),
        },
        Error::Input { .. } => Error::Usage(e.render(flag)),
        other => other,
    })
}

/// Both readings of the `--size` on the command line when its unit is a
/// bare decimal suffix (`1G`: elements, or did the user mean bytes?), for
/// the run's header and every error about the size.
pub(crate) fn size_reading() -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let value = args
        .iter()
        .enumerate()
        .find_map(|(i, a)| match a.split_once('=') {
            Some(("--size" | "--array-size", v)) => Some(v.to_string()),
            _ if a == "--size" || a == "--array-size" => args.get(i + 1).cloned(),
            _ => None,
        })?;
    crate::units::ambiguous_reading(&value)
}

fn place(args: PlaceArgs) -> Result<()> {
    let topo = read_topology(args.sysroot.dir())?;
    let mem = crate::memory::written::parse(&args.mem.one_policy("place")?, &topo)?;
    let placement = args.placement.placement(&env::Vars::from_process())?;
    let cpus =
        placement::resolve(&topo, &placement.request).map_err(|e| placement.name_error(e))?;
    let spellings = spellings::spell_plan(&cpus, &mem, crate::memory::Hugepages::Auto);
    let view = report::place::PlaceView {
        topo: &topo,
        request: placement.label(&topo, &cpus),
        memory_policy: mem.to_string(),
        cpus: &cpus,
        spellings: &spellings,
    };
    print(common::render_as(
        args.form.format,
        &report::view::View::Place(&view),
    )?)
}

fn topo(args: TopoArgs) -> Result<()> {
    use crate::topology::kernel_log::GpuXids;
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
        let spec = fixture::MachineSpec::parse(&text)
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
    let topo = read_topology(args.sysroot.dir())?;
    let peak = peak::estimate(&topo, &args.peak.request());
    // Another node's tree has GPUs this host's libraries cannot read.
    let (gpu_memory, gpu_reach) = match args.sysroot.dir() {
        None => (
            crate::backend::gpu_memory(&topo),
            crate::backend::gpu_reach(&topo),
        ),
        Some(_) => (Vec::new(), Vec::new()),
    };
    let xids = GpuXids::of(&topo);
    print(common::render_as(
        args.form.format,
        &report::view::View::Topo(report::topo::TopoView {
            topo: &topo,
            peak: peak.as_ref(),
            gpu_memory: &gpu_memory,
            gpu_reach: &gpu_reach,
            xids: xids.as_ref(),
            drivers: &crate::backend::gpu_drivers(),
        }),
    )?)
}
