//! `membw baseline` and `membw check`: what this kind of node measures when
//! healthy, and whether this node still does, with the exit codes health
//! checkers act on (0 healthy, 1 unhealthy, 2 could not check).

use super::args::{KernelList, PeakArgs, parse_kernel_list};
use super::common::{
    check_format, check_writable, print, read_topology, render_as, stop_flag, write_atomic,
};
use crate::engine::check::{self, Reference};
use crate::engine::{Engine, Source};
use crate::error::{Error, Result};
use crate::health::rules::{self, Difference};
use crate::health::verdict::{Rate, Stability, Verdict};
use crate::health::{BASELINE_KIND, BASELINE_SCHEMA, Baseline, Identity, Protocol};
use crate::plan::Measure;
use crate::results::cv;
use crate::topology::Topology;
use crate::units::ArraySize;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What baseline and check measure with, when no baseline fixes it.
#[derive(Args, Debug)]
pub(crate) struct ProtocolArgs {
    /// Kernels to measure in every scope
    #[arg(long, value_parser = parse_kernel_list, default_value = "copy,triad")]
    kernels: KernelList,

    /// Elements or bytes per array [default: STREAM's rule for the cores of each scope]
    #[arg(long, value_parser = crate::units::parse_array_size)]
    size: Option<ArraySize>,

    /// Timed repetitions of each kernel per scope and round (the first is not counted)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(2..=1000))]
    ntimes: u32,

    /// Measure nothing: fixed rates (GB/s per thread[,slow=CPUS@SHARE]); for tests
    #[arg(long, hide = true, value_name = "RATE")]
    fake_source: Option<String>,

    /// Read the topology under DIR (with --fake-source only: nothing is pinned); for tests
    #[arg(long, hide = true, value_name = "DIR", requires = "fake_source")]
    sysroot: Option<PathBuf>,
}

impl ProtocolArgs {
    fn measure(&self) -> Measure {
        Measure {
            elements: self.size.map(ArraySize::elements),
            ntimes: self.ntimes as usize,
            kernels: self.kernels.0.clone(),
            isa: None,
            hugepages: crate::memory::Hugepages::Auto,
        }
    }

    fn source(&self) -> Result<Box<dyn Source>> {
        super::args::source(self.fake_source.as_deref(), "cpu")
    }

    fn topology(&self) -> Result<Topology> {
        read_topology(self.sysroot.as_ref())
    }
}

#[derive(Args, Debug)]
pub(crate) struct BaselineArgs {
    /// The baseline file to write (JSON); an existing file is not replaced
    #[arg(long, short, value_name = "FILE")]
    output: PathBuf,

    /// Rounds of measurement (every scope once per round); the baseline keeps each round's rate
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,

    /// Measure nothing: make a partition's baseline from these nodes' baselines (the median
    /// node per scope and kernel, with the spread across nodes)
    #[arg(long, num_args = 1.., value_name = "FILE")]
    from: Vec<PathBuf>,

    #[command(flatten)]
    protocol: ProtocolArgs,
}

pub(crate) fn baseline(args: BaselineArgs) -> Result<()> {
    check_writable(&args.output, "--output", false)?;
    if !args.from.is_empty() {
        return fleet_baseline(&args);
    }
    let topo = args.protocol.topology()?;
    let jobs = check::scope_jobs(&topo, &args.protocol.measure())?;
    let mut source = args.protocol.source()?;
    let mut engine = Engine::new(&topo, source.as_mut(), None);
    let stop = stop_flag();
    let rounds = args.rounds as usize;
    let (scopes, interference) = check::measure_baseline(
        &mut engine,
        &jobs,
        rounds,
        &|| stop.signal().is_some(),
        &mut |i| crate::say!("membw: round {i} of {rounds} done"),
    )?;
    if let Some(signal) = stop.signal() {
        return Err(Error::Interrupted {
            signal,
            message: format!(
                "stopped by {} before the last round; no baseline written",
                super::common::signal_name(signal)
            ),
        });
    }
    // A baseline of a busy node would let every later check of a slow one pass.
    if interference.busy {
        return Err(Error::Usage(format!(
            "could not make a baseline: {}; make it when the node is idle (nothing written)",
            interference.cause().unwrap_or_default()
        )));
    }
    let host = crate::results::Host::describe(&topo);
    let baseline = Baseline {
        schema_version: BASELINE_SCHEMA,
        kind: BASELINE_KIND.into(),
        created: crate::results::now(),
        hosts: vec![host.hostname],
        identity: Identity::of(&topo),
        protocol: Protocol {
            ntimes: args.protocol.ntimes as usize,
            kernels: args.protocol.kernels.0.clone(),
        },
        scopes,
    };
    let json = crate::report::json::pretty(&baseline)?;
    write_atomic(&args.output, json.as_bytes())?;
    print(&crate::report::health::baseline(&baseline))?;
    crate::say!("membw: baseline in {}", args.output.display());
    Ok(())
}

/// `membw baseline --from FILE...`: one baseline for a partition.
fn fleet_baseline(args: &BaselineArgs) -> Result<()> {
    if args.from.len() > 100_000 {
        return Err(Error::Usage("--from: at most 100000 files".into()));
    }
    let nodes = args
        .from
        .iter()
        .map(|p| read_baseline(p, "--from").map(|b| (p.display().to_string(), b)))
        .collect::<Result<Vec<_>>>()?;
    let baseline = Baseline::fleet(&nodes, crate::results::now())
        .map_err(|e| Error::Usage(format!("--from: {e}")))?;
    write_atomic(
        &args.output,
        crate::report::json::pretty(&baseline)?.as_bytes(),
    )?;
    print(&crate::report::health::baseline(&baseline))?;
    crate::say!(
        "membw: baseline of {} nodes in {}",
        nodes.len(),
        args.output.display()
    );
    Ok(())
}

#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    /// The baseline to hold this node against (membw baseline -o FILE); without it, the NUMA
    /// domains are held against each other and the node against its theoretical peak
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,

    /// How far below its reference a rate may fall
    #[arg(long, default_value = "10%", allow_hyphen_values = true, value_parser = crate::units::parse_share)]
    tolerance: f64,

    /// Time to keep measuring while something is short (1s to 1h); a pass stops at once
    #[arg(long, default_value = "20s", allow_hyphen_values = true, value_parser = parse_budget)]
    budget: Duration,

    /// Without a baseline: the share of the theoretical peak the node's triad must reach
    #[arg(long, default_value = "50%", allow_hyphen_values = true, value_parser = crate::units::parse_share)]
    peak_share: f64,

    /// Print nothing when healthy (NHC's convention); the reason still goes to stderr
    #[arg(long, short)]
    quiet: bool,

    /// Output format: text, json (the whole verdict) or jsonl (the verdict on one line)
    #[arg(long, default_value = "text", value_parser = super::args::format_parser())]
    format: String,

    /// Also write the verdict in node_exporter's textfile format to FILE (atomically)
    #[arg(long, value_name = "FILE")]
    prom: Option<PathBuf>,

    #[command(flatten)]
    protocol: ProtocolArgs,

    #[command(flatten)]
    peak: PeakArgs,
}

fn parse_budget(text: &str) -> std::result::Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| format!("'{text}': {e}"))?;
    if !(Duration::from_secs(1)..=Duration::from_secs(3600)).contains(&d) {
        return Err(format!("'{text}': must be between 1s and 1h"));
    }
    Ok(d)
}

/// Reads a baseline file: one line naming the flag and what is wrong
/// with the file, exit 2.
fn read_baseline(path: &Path, flag: &str) -> Result<Baseline> {
    let bytes = crate::results::file::read_regular(path, 16 << 20)
        .map_err(|e| super::common::input_file_error(e).prefixed(&format!("{flag} ")))?;
    let text = String::from_utf8_lossy(&bytes);
    Baseline::parse(&text).map_err(|e| Error::Usage(format!("{flag} {}: {e}", path.display())))
}

pub(crate) fn check(args: CheckArgs) -> Result<()> {
    check_format(&args.format, "check")?;
    if let Some(p) = &args.prom {
        check_writable(p, "--prom", true)?;
    }
    let topo = args.protocol.topology()?;
    let baseline = args
        .baseline
        .as_deref()
        .map(|p| read_baseline(p, "--baseline"))
        .transpose()?;
    let here = Identity::of(&topo);
    let mut differences = Vec::new();
    let mut notes = Vec::new();
    if let Some(b) = &baseline {
        for d in rules::compare_identity(&b.identity, &here) {
            match d {
                Difference::OtherNode(what) => {
                    return Err(Error::Usage(format!(
                        "--baseline {}: made on another kind of node: {what}",
                        args.baseline.as_deref().unwrap_or(Path::new("")).display()
                    )));
                }
                Difference::Degraded(what) => differences.push(what),
                Difference::Note(what) => notes.push(what),
            }
        }
    }
    let measure = args.protocol.measure();
    let jobs = match &baseline {
        Some(b) => check::baseline_jobs(&topo, b, &measure)?,
        None => check::scope_jobs(&topo, &measure)?,
    };
    let peak = crate::peak::estimate(&topo, &args.peak.request());
    let reference = match &baseline {
        Some(b) => Reference::Baseline(b),
        None => {
            if jobs.len() < 2 && peak.is_none() {
                return Err(Error::Usage(
                    "nothing to check against: one NUMA domain and no known theoretical peak; make a baseline with `membw baseline -o FILE` and pass --baseline FILE, or give --peak".into(),
                ));
            }
            Reference::Symmetry {
                peak_gb_s: peak.as_ref().map(|p| p.node_gb_s()),
                share: args.peak_share,
            }
        }
    };
    let mut source = args.protocol.source()?;
    let mut engine = Engine::new(&topo, source.as_mut(), peak.clone());
    let stop = stop_flag();
    let throttled_before = crate::topology::cpu_throttled(&topo.root);
    let checked = check::check(
        &mut engine,
        &jobs,
        &reference,
        args.tolerance,
        args.budget,
        &|| stop.signal().is_some(),
    )?;
    if let Some(signal) = stop.signal() {
        return Err(Error::Interrupted {
            signal,
            message: format!(
                "stopped by {}: no verdict",
                super::common::signal_name(signal)
            ),
        });
    }
    // Threads stopped by a CPU limit measure the limit, and rates that fell
    // short while other work ran measure the other work: no verdict either
    // way (a busy node is not a bad one). The figures are still shown.
    let throttled = crate::topology::cpu_throttled(&topo.root)
        .zip(throttled_before)
        .map(|(after, before)| after.saturating_sub(before))
        .filter(|d| !d.is_zero());
    let busy = Some(&checked.interference).filter(|i| i.busy && !checked.passed);
    let not_judged = if let Some(d) = throttled {
        Some(format!(
            "could not check: a cgroup CPU limit (cpu.max) stopped its threads for {:.2} CPU-seconds during the check's {:.1} s, so its rates measure the limit, not the memory; run it outside the limit",
            d.as_secs_f64(),
            checked.elapsed.as_secs_f64()
        ))
    } else {
        busy.map(|i| {
            format!(
                "could not check: {}; run it when the node is idle",
                i.cause().unwrap_or_default()
            )
        })
    };
    let judged = not_judged.is_none();
    let healthy = judged && checked.passed && differences.is_empty();
    // Measured on this project's VM: the host's other tenants cut its
    // bandwidth by a quarter for up to a minute at a time, with no steal.
    if judged && !healthy && differences.is_empty() && topo.has_flag("hypervisor") {
        notes.push("this is a virtual machine: the host's other tenants share its memory, and their load does not show as steal, so a shortfall may be theirs; check again, or with a longer --budget".into());
    }
    let reason = if let Some(why) = not_judged {
        Some(why)
    } else if let Some(d) = differences.first() {
        Some(d.clone())
    } else {
        rules::worst(&checked.findings)
            .map(|f| rules::diagnosis(f, args.tolerance, &checked.findings))
    };
    let stability = checked
        .last
        .iter()
        .flat_map(|(scope, m)| {
            m.results.iter().map(|r| Stability {
                scope: *scope,
                kernel: r.kernel,
                cv: cv(r.times_s.get(1..).unwrap_or(&[])),
            })
        })
        .collect();
    let verdict = Verdict {
        schema_version: 1,
        kind: "membw-check",
        timestamp: crate::results::now(),
        host: crate::results::Host::describe(&topo),
        healthy,
        judged,
        reason: if healthy { None } else { reason },
        against: match &args.baseline {
            Some(p) => format!("baseline {}", p.display()),
            None => "symmetry".into(),
        },
        tolerance: args.tolerance,
        budget_s: args.budget.as_secs_f64(),
        rounds: checked.rounds,
        elapsed_s: checked.elapsed.as_secs_f64(),
        rates: checked
            .bests
            .iter()
            .map(|(&(scope, kernel), &gb_s)| Rate {
                scope,
                kernel,
                gb_s,
            })
            .collect(),
        findings: checked.findings,
        differences,
        notes,
        stability,
        interference: checked.interference,
    };
    // A check that could not judge leaves the last verdict's metrics in
    // place: their timestamp says how old they are.
    if let Some(p) = args.prom.as_ref().filter(|_| judged) {
        write_atomic(p, crate::report::prom::check(&verdict).as_bytes())?;
    }
    // --quiet: only an unhealthy verdict prints its table (NHC's way).
    if !(args.quiet && (healthy || !judged)) {
        print(&render_as(
            &args.format,
            &crate::report::export::Document::Check(&verdict),
        )?)?;
    }
    match verdict.reason {
        Some(line) if !judged => Err(Error::Usage(line)),
        Some(line) if !healthy => Err(Error::Unhealthy(line)),
        _ => Ok(()),
    }
}
