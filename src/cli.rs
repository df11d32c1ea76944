//! The command line: the only module that knows clap. It turns arguments
//! into the plain settings the rest of the program uses, and runs commands.

use crate::error::{Error, Result};
use crate::kernels::{Isa, KernelFns, KernelId, StoreMode};
use crate::memory::{self, Hugepages};
use crate::placement;
use crate::protocol::{self, Plan};
use crate::report::{self, Request, RunReport};
use crate::topology::Topology;
use crate::units::{ArraySize, Bytes, ELEMENT_BYTES, parse_array_size};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};

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
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum IsaArg {
    Auto,
    Avx512,
    Avx2,
    Sse2,
    Scalar,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum StoresArg {
    /// Non-temporal when each array is larger than the last-level cache
    Auto,
    /// Ordinary stores (write-allocate)
    Regular,
    /// Non-temporal (streaming) stores
    Nt,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum HugepagesArg {
    Auto,
    Thp,
    Never,
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

    /// Number of threads [default: one per physical core of the allowed CPUs]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    threads: Option<u32>,

    /// CPUs to pin thread 0, 1, ... to, in order (0,2,4-10:2)
    #[arg(long)]
    cpus: Option<String>,

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
}

fn parse_kernel(name: &str) -> std::result::Result<KernelId, String> {
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
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            return Err(Error::Usage(
                first.trim_start_matches("error: ").to_string(),
            ));
        }
    };
    match cli.command {
        Command::Run(args) => run(args),
    }
}

fn run(args: RunArgs) -> Result<()> {
    let topo = Topology::live().map_err(Error::Runtime)?;
    let threads = args.threads.map(|t| t as usize);
    let cpus = match &args.cpus {
        Some(list) => placement::cpu_list_placement(&topo, list, threads)?,
        None => placement::default_placement(&topo, threads)?,
    };
    let elements = match args.size {
        Some(size) => size.elements(),
        None => memory::default_elements(&topo, &cpus),
    };
    let elements = usize::try_from(elements)
        .map_err(|_| Error::Usage(format!("--size: {elements} elements is too large")))?;

    let isa = match args.isa {
        IsaArg::Auto => Isa::best(),
        IsaArg::Avx512 => Isa::Avx512,
        IsaArg::Avx2 => Isa::Avx2,
        IsaArg::Sse2 => Isa::Sse2,
        IsaArg::Scalar => Isa::Scalar,
    };
    let used = cpus.iter().copied().collect();
    let llc = topo.llc_sum(&used);
    let array_bytes = Bytes(elements as u64 * ELEMENT_BYTES);
    let (stores, stores_reason) = match args.stores {
        StoresArg::Regular => (StoreMode::Regular, "requested".to_string()),
        StoresArg::Nt => (StoreMode::Nt, "requested".to_string()),
        StoresArg::Auto if !isa.has_streaming_stores() => (
            StoreMode::Regular,
            format!("auto: the {isa} kernels have no streaming stores"),
        ),
        StoresArg::Auto if array_bytes > llc => (
            StoreMode::Nt,
            format!("auto: {array_bytes} arrays exceed the {llc} last-level cache"),
        ),
        StoresArg::Auto => (
            StoreMode::Regular,
            format!("auto: {array_bytes} arrays fit in the {llc} last-level cache"),
        ),
    };
    let fns = KernelFns::select(isa, stores).map_err(Error::Usage)?;
    let hugepages = match args.hugepages {
        HugepagesArg::Auto => Hugepages::Auto,
        HugepagesArg::Thp => {
            if topo.memory.thp_mode.as_deref() == Some("never") {
                return Err(Error::Usage(
                    "--hugepages thp: transparent hugepages are disabled on this system (mode 'never')".into(),
                ));
            }
            Hugepages::Thp
        }
        HugepagesArg::Never => Hugepages::Never,
    };
    let mut kernels = args.kernels.clone();
    kernels.sort();
    kernels.dedup();
    let plan = Plan {
        elements,
        ntimes: args.ntimes as usize,
        kernels,
        fns,
        cpus,
        hugepages,
    };
    memory::check_fits(&topo, plan.arrays_needed().len(), elements as u64)?;

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
        threads,
        cpus: args.cpus.clone(),
        isa: format!("{:?}", args.isa).to_lowercase(),
        stores: format!("{:?}", args.stores).to_lowercase(),
        stores_reason,
    };
    let report = RunReport::new(&topo, request, measurement);
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
