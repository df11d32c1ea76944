//! `membw latency`: idle latency by pointer chasing over working sets from
//! L1 to DRAM, the CPU node × memory node latency matrix, and loaded
//! latency (bandwidth-latency curves), with results files like the
//! bandwidth studies'.

use super::args::PeakArgs;
use super::common::print;
use super::latency_values::{
    ChaseOrders, Delays, Mixes, parse_delays, parse_load_cpus, parse_mixes, parse_orders,
};
use crate::engine::latency_probes::{ExperimentContext, LatencyRequest, LatencySession};
use crate::error::{Error, Input, Result};
use crate::latency::LatencyPlan;
use crate::latency::load::{self, LoadedPlan};
use crate::latency::record::{self, C2cLine, LatencyExperiment};
use crate::memory::Hugepages;
use crate::memory::policy::Policy;
use crate::placement::Written;
use crate::results::append::ResultsFile;
use crate::topology::Topology;
use crate::topology::cpulist::IdSet;
use crate::units::Bytes;
use clap::Args;
use std::time::Duration;

#[derive(Args, Debug)]
pub(crate) struct LatencyArgs {
    /// The CPU that chases [default: the first allowed CPU]
    #[arg(long, conflicts_with = "numa_matrix")]
    cpu: Option<usize>,

    #[command(flatten)]
    sizes: super::flags::WorkingSetArgs,

    #[command(flatten)]
    mem: super::flags::Mem,

    #[command(flatten)]
    pages: super::flags::Pages,

    #[command(flatten)]
    weights: super::flags::Weights,

    /// Orders to chase the lines in, each a curve: random (one random cycle through every line, as tinymembench) and page-local (lines random within 256 KiB windows, windows random, as multichase's default); the matrix and loaded studies take the first
    #[arg(long, default_value = "random,page-local", value_parser = parse_orders, conflicts_with = "c2c")]
    chase: ChaseOrders,

    /// Timed chasing per point
    #[arg(long, default_value = "300ms", value_parser = humantime::parse_duration)]
    time: Duration,

    /// Core clock in GHz, to show cycles per load [default: cpufreq's maximum, else /proc/cpuinfo's cpu MHz]
    #[arg(long)]
    ghz: Option<f64>,

    #[command(flatten)]
    numa_matrix: super::flags::NumaMatrix,

    /// Loaded latency: load threads run a traffic mix with a swept delay while one thread chases
    #[arg(long, conflicts_with = "numa_matrix", help_heading = "Studies")]
    loaded: bool,

    /// Core-to-core latency between every pair of allowed CPUs (--time per pair and case): a modified line bounced (HITM), a clean line the other CPU holds (HIT), or both
    #[arg(
        long,
        num_args = 0..=1,
        default_missing_value = "both",
        value_parser = ["modified", "clean", "both"],
        conflicts_with_all = ["numa_matrix", "loaded", "cpu", "mem"],
        help_heading = "Studies"
    )]
    c2c: Option<String>,

    /// CPUs of the load threads (0-15, 1,3,5) [default: every allowed CPU but the chaser's]
    #[arg(long, requires = "loaded", value_parser = parse_load_cpus, help_heading = "Studies")]
    load_cpus: Option<Written<Vec<usize>>>,

    /// Traffic mixes of the load threads: read, 2:1, 3:1 (reads:writes), copy, nt-write
    #[arg(
        long,
        requires = "loaded",
        default_value = "read,2:1,3:1,copy,nt-write",
        value_parser = parse_mixes,
        help_heading = "Studies"
    )]
    mix: Mixes,

    /// Delays after each cache line a load thread moves, heaviest first
    /// [default: 10us,3us,1us,500ns,250ns,120ns,60ns,30ns,10ns,0]
    #[arg(long, requires = "loaded", value_parser = parse_delays, help_heading = "Studies")]
    delays: Option<Delays>,

    /// Bytes per array of each load thread [default: 4 × the last-level cache / load threads, at least 64MiB]
    #[arg(long, requires = "loaded", value_parser = crate::units::parse_array_size, help_heading = "Studies")]
    load_size: Option<crate::units::ArraySize>,

    #[command(flatten)]
    isa: super::flags::IsaArgs,

    #[command(flatten)]
    output: super::flags::Output,

    #[command(flatten)]
    prom: super::flags::Prom,

    #[command(flatten)]
    resume: super::flags::Resume,

    #[command(flatten)]
    form: super::flags::Form,
    #[command(flatten)]
    json: super::flags::JsonFlag,

    #[command(flatten)]
    peak: PeakArgs,
}

/// The page sizes to chase on, each once, and one only for the matrix and
/// the loaded study.
fn page_sizes(args: &LatencyArgs) -> Result<Vec<Hugepages>> {
    let mut pages: Vec<Hugepages> = Vec::new();
    for p in args.pages.or(super::flags::Pages::LATENCY) {
        if !pages.contains(&p) {
            pages.push(p);
        }
    }
    if pages.len() > 1 && (args.numa_matrix.is_some() || args.loaded) {
        return Err(Error::Usage(
            "--hugepages: --numa-matrix and --loaded take one page size; the idle curve takes several".into(),
        ));
    }
    Ok(pages)
}

pub(crate) fn latency(args: LatencyArgs) -> Result<()> {
    if let Some(p) = &args.prom.prom {
        super::common::check_writable(p, "--prom", true)?;
    }
    let (topo, _weights) = super::common::with_weights(
        args.weights.weights.as_deref(),
        super::common::read_topology(None)?,
    )?;
    let request = latency_request(&args, &topo)?;
    let file = open_results(&args)?;
    let mut out = LatencySession::new(
        record::EXPERIMENT,
        crate::results::Host::describe(&topo),
        super::common::stop_flag(),
        file,
    );
    let (doc, result) = crate::engine::latency_probes::run(&topo, &request, &mut out);
    let interrupted = out.signal();
    result?;
    if let (Some(file), 1..) = (&out.file, out.skipped) {
        crate::say!(
            "membw: {} already in {}, not measured again",
            crate::units::plural(out.skipped, "point"),
            file.path.display()
        );
    }
    print(&super::common::render_as(
        args.form.format,
        &crate::report::view::View::Latency(&doc),
    )?)?;
    if let Some(p) = &args.prom.prom {
        super::common::write_atomic(p, "--prom", crate::report::prom::latency(&doc).as_bytes())?;
    }
    match interrupted {
        Some(signal) => Err(stopped(signal, out.file.as_ref().map(|f| f.path.as_path()))),
        None => Ok(()),
    }
}

/// The typed request the flags describe, checked against this machine:
/// the chasing CPU, working sets that fit, the policy, the study.
fn latency_request(args: &LatencyArgs, topo: &Topology) -> Result<LatencyRequest> {
    let cpu = chase_cpu(topo, args.cpu)?;
    // What the shared flags ask that a chase cannot do is refused here.
    args.numa_matrix.for_chase()?;
    args.isa.for_chase(args.loaded)?;
    if args.c2c.is_some() && topo.allowed_cpus.len() < 2 {
        return Err(Error::Usage(format!(
            "--c2c: a line needs two CPUs to bounce between; this process may use only {}",
            topo.allowed_cpus
        )));
    }
    let mut sizes = args.sizes.or(super::flags::WorkingSetArgs::LATENCY)?;
    if args.numa_matrix.is_some() || args.loaded {
        let largest = sizes.iter().copied().max().unwrap_or(256 << 20);
        sizes = vec![largest];
    }
    let pages = page_sizes(args)?;
    if args.numa_matrix.is_some() && !args.mem.mem.is_empty() {
        return Err(Error::about(
            Input::Mem,
            "--numa-matrix measures every memory node in turn; leave --mem out",
        ));
    }
    let policy = crate::memory::written::parse(&args.mem.one_policy("latency")?, topo)?;
    let whole = policy.arrays[0].clone();
    if policy.arrays.iter().any(|p| *p != whole) {
        return Err(Error::about(
            Input::Mem,
            "a per-array policy does not apply to a single working set",
        ));
    }
    let largest = sizes.iter().max().copied().unwrap_or(0);
    crate::memory::pool::check_working_set(topo, &pages, &whole, cpu, largest)?;
    let clock_ghz = checked_ghz(args.ghz)?
        .or_else(|| crate::topology::clock::max_ghz(std::path::Path::new("/"), cpu));
    let loaded = if args.loaded {
        Some(loaded_plan(args, topo, cpu, sizes[0], &whole, clock_ghz)?)
    } else {
        None
    };
    check_room(topo, &sizes, loaded.as_ref())?;
    let plan = LatencyPlan {
        cpu,
        sizes,
        hugepages: pages.clone(),
        policy: whole,
        orders: if args.numa_matrix.is_some() || args.loaded {
            args.chase.0[..1].to_vec()
        } else {
            args.chase.0.clone()
        },
        time_per_size: args.time,
        clock_ghz,
    };
    let study = if args.c2c.is_some() {
        LatencyExperiment::C2c
    } else if args.numa_matrix.is_some() {
        LatencyExperiment::Matrix
    } else if loaded.is_some() {
        LatencyExperiment::Loaded
    } else {
        LatencyExperiment::Idle
    };
    let request = LatencyRequest {
        facts: ExperimentContext {
            caches: topo.cache_per_thread(&[cpu]),
            peak_gb_s: crate::peak::estimate(topo, &args.peak.request()).map(|p| p.node_gb_s()),
            // No --mem: the policy is numactl's, where there is one (the
            // matrix binds each node itself and refuses --mem).
            mem_inherited: !args.numa_matrix.is_some()
                && args.mem.mem.is_empty()
                && crate::memory::inherited::policy().is_some(),
        },
        plan,
        study,
        loaded,
        // clap allows only the cases' names and "both", in any case.
        c2c_lines: match args.c2c.as_deref().map(str::to_ascii_lowercase) {
            None => vec![],
            Some(both) if both == "both" => C2cLine::ALL.to_vec(),
            Some(case) => C2cLine::ALL
                .into_iter()
                .filter(|line| line.name() == case)
                .collect(),
        },
    };
    Ok(request)
}

/// The largest working set is mapped and touched whole, with the load
/// threads' arrays beside it: refuses what cannot fit before allocating.
/// Building the permutation takes two words per 64-byte line besides.
fn check_room(topo: &Topology, sizes: &[u64], loaded: Option<&LoadedPlan>) -> Result<()> {
    let load_bytes = loaded.map_or(0, |p| {
        (p.load_elements as u64)
            .saturating_mul(8 * crate::kernels::ARRAYS as u64)
            .saturating_mul(p.load_cpus.len() as u64)
    });
    let largest = sizes.iter().max().copied().unwrap_or(0);
    let needed = (largest + largest / 4).saturating_add(load_bytes);
    if let Some(room) = topo.memory.allocatable().map(|b| b.0)
        && needed > room
    {
        return Err(Error::Usage(format!(
            "--working-sets {}{}: more than the {} of memory available",
            Bytes(largest),
            if load_bytes > 0 {
                format!(" with {} of load arrays", Bytes(load_bytes))
            } else {
                String::new()
            },
            Bytes(room)
        )));
    }
    Ok(())
}

/// A latency run stopped by `signal`: where its points are.
fn stopped(signal: i32, file: Option<&std::path::Path>) -> Error {
    let name = super::common::signal_name(signal);
    Error::Interrupted {
        signal,
        message: match file {
            Some(f) => format!(
                "stopped by {name}; the completed points are in {}; continue with: membw latency ... --resume {}",
                f.display(),
                f.display()
            ),
            None => format!("stopped by {name}; the completed points are shown above"),
        },
    }
}

/// The CPU that chases: `--cpu`, or the first allowed.
fn chase_cpu(topo: &Topology, asked: Option<usize>) -> Result<usize> {
    match asked {
        Some(c) => allowed_cpu(topo, c, "--cpu"),
        None => topo
            .allowed_cpus
            .ids()
            .first()
            .copied()
            .ok_or_else(|| Error::Runtime("no CPU may be used".into())),
    }
}

/// `--ghz`, when given, is a clock rate.
fn checked_ghz(ghz: Option<f64>) -> Result<Option<f64>> {
    match ghz {
        Some(g) if !(g.is_finite() && g > 0.0 && g < 20.0) => Err(Error::Usage(
            "--ghz: a clock rate between 0 and 20 GHz".into(),
        )),
        other => Ok(other),
    }
}

fn allowed_cpu(topo: &Topology, cpu: usize, flag: &str) -> Result<usize> {
    if topo.allowed_cpus.contains(cpu) {
        Ok(cpu)
    } else {
        Err(Error::Usage(format!(
            "{flag} {cpu}: not among the CPUs this process may use ({})",
            topo.allowed_cpus
        )))
    }
}

/// The smallest array of a load thread: one free-running step of the
/// kernels (4096 elements) twice over.
const MIN_LOAD_ELEMENTS: u64 = 8192;

fn loaded_plan(
    args: &LatencyArgs,
    topo: &Topology,
    cpu: usize,
    bytes: u64,
    policy: &Policy,
    clock_ghz: Option<f64>,
) -> Result<LoadedPlan> {
    let load_cpus: Vec<usize> = match &args.load_cpus {
        Some(Written { text, value }) => {
            // Each CPU existing, allowed and listed once, as for --cpus.
            let ids = crate::placement::cpu_list(topo, &topo.allowed_cpus, value)
                .map_err(|e| Error::Usage(format!("--load-cpus {text}: {e}")))?;
            if ids.contains(&cpu) {
                return Err(Error::Usage(format!(
                    "--load-cpus {text}: CPU {cpu} is the chaser's; give the load other CPUs"
                )));
            }
            ids
        }
        None => topo
            .allowed_cpus
            .ids()
            .iter()
            .copied()
            .filter(|&c| c != cpu)
            .collect(),
    };
    if load_cpus.is_empty() {
        return Err(Error::Usage(format!(
            "--loaded: no CPU is left for load threads besides the chaser's (allowed: {})",
            topo.allowed_cpus
        )));
    }
    let mixes = args.mix.0.clone();
    let delays_ns: Vec<f64> = match &args.delays {
        None => load::DEFAULT_DELAYS_NS.to_vec(),
        Some(delays) => delays.0.clone(),
    };
    let isa = match args.isa.one("latency")?.isa() {
        Some(isa) => isa,
        None => crate::kernels::Isa::best(),
    };
    for m in &mixes {
        crate::kernels::KernelFns::select(isa, m.stores())?;
    }
    let used: IdSet = load_cpus.iter().copied().collect();
    let llc = topo.llc_sum(&used).0;
    let load_elements = match args.load_size {
        Some(size) if size.elements() < MIN_LOAD_ELEMENTS => {
            return Err(Error::Usage(format!(
                "--load-size: each load array needs at least {} ({MIN_LOAD_ELEMENTS} elements)",
                Bytes(MIN_LOAD_ELEMENTS * 8)
            )));
        }
        Some(size) => usize::try_from(size.elements()).unwrap_or(usize::MAX),
        None => ((4 * llc / load_cpus.len() as u64).max(64 << 20) / 8) as usize,
    };
    Ok(LoadedPlan {
        chaser_cpu: cpu,
        load_cpus,
        mixes,
        delays_ns,
        bytes,
        load_elements,
        hugepages: args.pages.or(super::flags::Pages::LATENCY)[0],
        policy: policy.clone(),
        isa,
        time_per_point: args.time,
        settle: Duration::from_millis(30),
        clock_ghz,
    })
}

/// The results file of `-o` (new) or `--resume` (its points count as done).
fn open_results(args: &LatencyArgs) -> Result<Option<ResultsFile>> {
    let file_error = super::common::file_error;
    Ok(match (&args.resume.resume, &args.output.output) {
        (Some(path), _) => {
            let (file, torn) =
                ResultsFile::resume_with(path, |t| record::parse(t).map(|r| r.point.key()))
                    .map_err(|e| file_error(e, "--resume"))?;
            if let Some(line) = torn {
                crate::say!(
                    "membw: {}: dropped line {line}, cut short by an earlier crash or full disk; its point runs again",
                    path.display()
                );
            }
            Some(file)
        }
        (None, Some(path)) => {
            Some(ResultsFile::create(path).map_err(|e| file_error(e, "--output"))?)
        }
        (None, None) => None,
    })
}
