//! The command line: the only module that knows clap. It turns arguments
//! into the plain settings the rest of the program uses, and runs commands.

use crate::error::{Error, Result};
use crate::kernels::{Isa, KernelId};
use crate::memory::Hugepages;
use crate::memory::policy::{self as mempolicy, MemPolicy};
use crate::peak::{self, PeakRequest};
use crate::placement::{self, omp::Bind, spellings};
use crate::plan::{self, Prepared, Settings, StoresRequest};
use crate::protocol;
use crate::report::{self, Request, RunReport};
use crate::topology::cpulist::{IdSet, parse_list};
use crate::topology::{Topology, fixture};
use crate::units::{ArraySize, Bytes, ELEMENT_BYTES, parse_array_size};
use clap::{Args, Parser, Subcommand, ValueEnum};

mod study;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "membw",
    version,
    about = "Sustainable memory bandwidth, measured the STREAM way, pinned and validated",
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
    Sweep(study::SweepArgs),
    /// Search threads × placement × store mode for the best sustained bandwidth within a time budget
    Tune(study::TuneArgs),
    /// Tables, SVG plots, Markdown and a self-contained HTML report from a results file
    Report(study::ReportArgs),
    /// Two results files side by side, with ratios
    Compare(study::CompareArgs),
}

/// Where threads run. At most one of --cpus, --places, --pin, --strategy.
#[derive(Args, Debug, Clone)]
pub(crate) struct PlacementArgs {
    /// CPUs to pin thread 0, 1, ... to, in order (0,2,4-10:2)
    #[arg(long, conflicts_with_all = ["places", "pin", "strategy"], help_heading = "Placement")]
    cpus: Option<String>,

    /// OpenMP places: '{0}:64:2', '{0:4}:8:4', '{0,1},{2,3}', cores, sockets(1), ll_caches, numa_domains
    #[arg(long, conflicts_with_all = ["pin", "strategy"], help_heading = "Placement")]
    places: Option<String>,

    /// likwid-pin expression: N:0-23, S0:0-7@S1:0-7, M1:0-3, C0:0-3, E:N:8:1:2, M:scatter
    #[arg(long, conflicts_with = "strategy", help_heading = "Placement")]
    pin: Option<String>,

    /// compact, spread, per-socket=K, per-numa=K, per-l3=K, stride=S
    #[arg(long, help_heading = "Placement")]
    strategy: Option<String>,

    /// OMP_PROC_BIND for --places: close, spread, primary (master)
    #[arg(long, requires = "places", value_parser = parse_bind, help_heading = "Placement")]
    bind: Option<Bind>,

    /// Allow more than one thread per core (SMT hardware threads)
    #[arg(long, help_heading = "Placement")]
    smt: bool,

    /// Only CPUs of these NUMA nodes, like numactl --cpunodebind
    #[arg(long, value_name = "NODES", help_heading = "Placement")]
    cpunode: Option<String>,

    /// Number of threads [default: one per physical core of the allowed CPUs, or one per place]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), help_heading = "Placement")]
    threads: Option<u32>,
}

pub(crate) fn parse_bind(text: &str) -> std::result::Result<Bind, String> {
    Bind::parse(text).ok_or_else(|| format!("unknown binding '{text}' (close, spread, primary)"))
}

impl PlacementArgs {
    pub(crate) fn request(&self) -> Result<placement::Request> {
        let spec = if let Some(list) = &self.cpus {
            placement::Spec::Cpus(list.clone())
        } else if let Some(places) = &self.places {
            placement::Spec::Places {
                places: places.clone(),
                bind: self.bind.unwrap_or(Bind::Close),
            }
        } else if let Some(expr) = &self.pin {
            placement::Spec::Likwid(expr.clone())
        } else if let Some(s) = &self.strategy {
            placement::Spec::Strategy(s.clone())
        } else {
            placement::Spec::Default
        };
        let cpu_nodes = self
            .cpunode
            .as_ref()
            .map(|t| {
                parse_list(t)
                    .map(IdSet::new)
                    .map_err(|e| Error::Usage(format!("--cpunode '{t}': {e}")))
            })
            .transpose()?;
        Ok(placement::Request {
            spec,
            threads: self.threads.map(|t| t as usize),
            smt: self.smt,
            cpu_nodes,
        })
    }

    /// What was asked, in the user's words.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = &self.cpus {
            parts.push(format!("--cpus {c}"));
        }
        if let Some(p) = &self.places {
            parts.push(format!(
                "--places '{p}' --bind {}",
                self.bind.unwrap_or(Bind::Close)
            ));
        }
        if let Some(p) = &self.pin {
            parts.push(format!("--pin {p}"));
        }
        if let Some(s) = &self.strategy {
            parts.push(format!("--strategy {s}"));
        }
        if parts.is_empty() {
            parts.push("default: one thread per core, spread".into());
        }
        if let Some(t) = self.threads {
            parts.push(format!("--threads {t}"));
        }
        if self.smt {
            parts.push("--smt".into());
        }
        if let Some(n) = &self.cpunode {
            parts.push(format!("--cpunode {n}"));
        }
        parts.join(" ")
    }
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

    /// Print the placement as JSON
    #[arg(long)]
    json: bool,
}

/// How the theoretical peak is given, when the user knows it.
#[derive(Args, Debug, Clone)]
pub(crate) struct PeakArgs {
    /// Theoretical peak of the whole node (409.6GB/s)
    #[arg(long, value_parser = peak::parse_peak, help_heading = "Theoretical peak")]
    peak: Option<f64>,

    /// Memory channels per socket (with --mts)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), help_heading = "Theoretical peak")]
    channels: Option<u32>,

    /// Memory transfer rate in MT/s, e.g. 3200 for DDR4-3200 (with --channels)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), help_heading = "Theoretical peak")]
    mts: Option<u32>,
}

impl PeakArgs {
    pub(crate) fn request(&self) -> PeakRequest {
        PeakRequest {
            node_gb_s: self.peak,
            channels: self.channels,
            mts: self.mts,
        }
    }
}

#[derive(Args, Debug)]
struct TopoArgs {
    /// Read DIR/sys and DIR/proc instead of the live machine (a captured or generated fixture)
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,

    /// Print the full model as JSON
    #[arg(long)]
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

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IsaArg {
    Auto,
    Avx512,
    Avx2,
    Sse2,
    Scalar,
}

impl IsaArg {
    pub(crate) fn isa(self) -> Option<Isa> {
        match self {
            IsaArg::Auto => None,
            IsaArg::Avx512 => Some(Isa::Avx512),
            IsaArg::Avx2 => Some(Isa::Avx2),
            IsaArg::Sse2 => Some(Isa::Sse2),
            IsaArg::Scalar => Some(Isa::Scalar),
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StoresArg {
    /// Non-temporal when each array is larger than the last-level cache
    Auto,
    /// Ordinary stores (write-allocate)
    Regular,
    /// Non-temporal (streaming) stores
    Nt,
}

impl StoresArg {
    pub(crate) fn request(self) -> StoresRequest {
        match self {
            StoresArg::Auto => StoresRequest::Auto,
            StoresArg::Regular => StoresRequest::Regular,
            StoresArg::Nt => StoresRequest::Nt,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HugepagesArg {
    Auto,
    Thp,
    Never,
}

impl HugepagesArg {
    pub(crate) fn hugepages(self) -> Hugepages {
        match self {
            HugepagesArg::Auto => Hugepages::Auto,
            HugepagesArg::Thp => Hugepages::Thp,
            HugepagesArg::Never => Hugepages::Never,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    Csv,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Elements per array (80M, 800000000) or bytes per array (512MB, 6GiB)
    /// [default: 4 × the caches of the CPUs used, at least 10M]
    #[arg(long, value_parser = parse_array_size)]
    size: Option<ArraySize>,

    /// Repetitions of each kernel; the first is not counted
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(2..))]
    ntimes: u32,

    /// Kernels to run, comma-separated: copy, scale, add, triad, read, write
    #[arg(long, value_delimiter = ',', value_parser = parse_kernel, default_value = "copy,scale,add,triad")]
    kernels: Vec<KernelId>,

    #[command(flatten)]
    placement: PlacementArgs,

    /// NUMA memory policy of the arrays: local, bind:1, interleave:all, preferred:2, or per array a=bind:0,b=bind:1,c=local
    #[arg(long, default_value = "local")]
    mem: String,

    /// Instruction set of the kernels
    #[arg(long, value_enum, default_value_t = IsaArg::Auto)]
    isa: IsaArg,

    /// Store instructions of the kernels
    #[arg(long, value_enum, default_value_t = StoresArg::Auto)]
    stores: StoresArg,

    /// Transparent hugepages for the arrays (madvise)
    #[arg(long, value_enum, default_value_t = HugepagesArg::Auto)]
    hugepages: HugepagesArg,

    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,

    /// Same as --format json
    #[arg(long, conflicts_with = "format")]
    json: bool,

    /// Print only the STREAM table
    #[arg(short, long)]
    quiet: bool,

    #[command(flatten)]
    peak: PeakArgs,
}

/// Folds clap's multi-line message (error, details, usage, hint) into the
/// error and its details on one line.
fn one_line(rendered: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for line in rendered.lines() {
        let line = line.trim();
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if !line.is_empty() && !line.starts_with("tip:") {
            parts.push(line);
        }
    }
    let text = parts.join(" ");
    let text = text.trim_start_matches("error: ");
    if text.is_empty() {
        "invalid arguments".into()
    } else {
        text.to_string()
    }
}

pub(crate) fn parse_kernel(name: &str) -> std::result::Result<KernelId, String> {
    KernelId::parse(name).ok_or_else(|| {
        format!("unknown kernel '{name}' (choose from copy, scale, add, triad, read, write)")
    })
}

/// Parses the process arguments; clap's own errors are cut to one line.
pub fn main() -> Result<()> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            print!("{e}");
            return Ok(());
        }
        Err(e) => {
            return Err(Error::Usage(one_line(&e.render().to_string())));
        }
    };
    match cli.command {
        Command::Run(args) => run(args),
        Command::Topo(args) => topo(args),
        Command::Place(args) => place(args),
        Command::Sweep(args) => study::sweep(args),
        Command::Tune(args) => study::tune(args),
        Command::Report(args) => study::report(args),
        Command::Compare(args) => study::compare(args),
    }
}

pub(crate) fn read_topology(sysroot: Option<&PathBuf>) -> Result<Topology> {
    match sysroot {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(Error::Usage(format!(
                    "--sysroot {}: not a directory",
                    dir.display()
                )));
            }
            Topology::read(dir).map_err(|e| Error::Usage(format!("--sysroot: {e}")))
        }
        None => Topology::live().map_err(Error::Runtime),
    }
}

/// The placement's reproduction lines; per-array memory policies have no
/// numactl spelling, which the numactl line then says.
pub(crate) fn spell(cpus: &[usize], mem: &MemPolicy) -> spellings::Spellings {
    let mut s = spellings::spell(cpus, &mem.numactl().unwrap_or_default());
    if mem.numactl().is_none() {
        s.numactl
            .push_str("   # per-array policies have no numactl equivalent");
    }
    s
}

fn place(args: PlaceArgs) -> Result<()> {
    let topo = read_topology(args.sysroot.as_ref())?;
    let mem = match &args.mem {
        Some(m) => mempolicy::parse(m, &topo)?,
        None => MemPolicy::default(),
    };
    let cpus = placement::resolve(&topo, &args.placement.request()?)?;
    let s = spell(&cpus, &mem);
    if args.json {
        let threads: Vec<serde_json::Value> = cpus
            .iter()
            .enumerate()
            .map(|(t, &c)| {
                let cpu = topo.cpu(c);
                serde_json::json!({
                    "thread": t, "cpu": c,
                    "core": cpu.map(|x| x.core), "socket": cpu.map(|x| x.package), "node": cpu.map(|x| x.node),
                })
            })
            .collect();
        let doc = serde_json::json!({
            "schema_version": report::SCHEMA_VERSION,
            "request": args.placement.describe(),
            "memory_policy": mem.to_string(),
            "threads": threads,
            "spellings": s,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("plain data serializes")
        );
        return Ok(());
    }
    println!("Placement  {}", args.placement.describe());
    println!(
        "Threads    {} on CPUs {}",
        cpus.len(),
        crate::topology::cpulist::format_ranges(&cpus)
    );
    println!("\n  thread   cpu  core  socket  node");
    for (t, &c) in cpus.iter().enumerate() {
        let cpu = topo.cpu(c);
        println!(
            "  {t:>6} {c:>5} {:>5} {:>7} {:>5}",
            cpu.map_or(0, |x| x.core),
            cpu.map_or(0, |x| x.package),
            cpu.map_or(0, |x| x.node)
        );
    }
    println!("\nReproduce with");
    for line in [
        &s.openmp,
        &s.likwid_pin,
        &s.numactl,
        &s.srun,
        &s.taskset,
        &s.mpirun,
    ] {
        println!("  {line}");
    }
    Ok(())
}

fn topo(args: TopoArgs) -> Result<()> {
    if let Some(dir) = &args.capture {
        let files = fixture::capture(std::path::Path::new("/"), dir)
            .map_err(|e| Error::Runtime(format!("--capture {}: {e}", dir.display())))?;
        eprintln!(
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
        spec.write(dir)
            .map_err(|e| Error::Runtime(format!("--generate into {}: {e}", dir.display())))?;
        eprintln!(
            "membw: wrote a {}-CPU fixture into {}",
            spec.cpus(),
            dir.display()
        );
        return Ok(());
    }
    let topo = read_topology(args.sysroot.as_ref())?;
    let peak = peak::estimate(&topo, &args.peak.request())?;
    let out = if args.json {
        report::topo::json(&topo, peak.as_ref())
    } else {
        report::topo::text(&topo, peak.as_ref())
    };
    print!("{out}");
    Ok(())
}

fn run(args: RunArgs) -> Result<()> {
    let topo = Topology::live().map_err(Error::Runtime)?;
    let settings = Settings {
        placement: args.placement.request()?,
        elements: args.size.map(ArraySize::elements),
        ntimes: args.ntimes as usize,
        kernels: args.kernels.clone(),
        isa: args.isa.isa(),
        stores: args.stores.request(),
        hugepages: args.hugepages.hugepages(),
        mem: mempolicy::parse(&args.mem, &topo)?,
        inner_repeats: 1,
    };
    let Prepared {
        plan,
        stores_reason,
    } = plan::prepare(&topo, &settings)?;
    let array_bytes = Bytes(plan.elements as u64 * ELEMENT_BYTES);
    let peak = peak::estimate(&topo, &args.peak.request())?;

    let interactive = std::io::stderr().is_terminal();
    if interactive && !args.quiet {
        eprintln!(
            "membw: {} threads, {} × {} arrays, {} repetitions ...",
            plan.cpus.len(),
            plan.arrays_needed().len(),
            array_bytes,
            plan.ntimes
        );
    }
    let measurement = protocol::measure(&plan)?;
    for w in &measurement.warnings {
        eprintln!("membw: warning: {w}");
    }
    let request = Request {
        size: args.size.map(|s| match s {
            ArraySize::Elements(n) => n.to_string(),
            ArraySize::Bytes(b) => format!("{} B", b.0),
        }),
        threads: args.placement.threads.map(|t| t as usize),
        placement: args.placement.describe(),
        isa: format!("{:?}", args.isa).to_lowercase(),
        stores: format!("{:?}", args.stores).to_lowercase(),
        stores_reason,
    };
    let spellings = spell(&plan.cpus, &plan.mem);
    let report = RunReport::new(&topo, request, measurement, peak, spellings);
    let format = if args.json { Format::Json } else { args.format };
    let text = match format {
        _ if args.quiet && format == Format::Text => report::text::table(&report.measurement),
        Format::Text => report::text::render(&report),
        Format::Json => report::json::render(&report),
        Format::Csv => report::csv::render(&report),
    };
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    protocol::require_valid(&report.measurement)
}
