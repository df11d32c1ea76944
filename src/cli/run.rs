//! `membw run`: one measurement of this node (or, under mpirun, of every
//! rank), printed as STREAM does and explained.

use super::args::{self, MeasureArgs, PeakArgs, PlacementArgs};
use super::common::{self, print, read_topology};
use super::env;
use super::flags::Chosen;
use crate::engine::{Engine, stores_check};
use crate::error::Result;
use crate::peak;
use crate::placement::identity::PlacementId;
use crate::placement::spellings;
use crate::plan::{self, Prepared, Settings};
use crate::report;
use crate::results::{RunReport, RunRequest};
use crate::units::{ArraySize, Bytes, ELEMENT_BYTES};
use clap::Args;
use std::io::IsTerminal;

#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    kernels: super::flags::Kernels,

    #[command(flatten)]
    measure: MeasureArgs,

    #[command(flatten)]
    placement: PlacementArgs,

    #[command(flatten)]
    form: super::flags::Form,

    #[command(flatten)]
    json: super::flags::JsonFlag,

    #[command(flatten)]
    quiet: super::flags::Quiet,

    #[command(flatten)]
    peak: PeakArgs,

    #[command(flatten)]
    output: super::flags::Output,

    #[command(flatten)]
    prom: super::flags::Prom,

    #[command(flatten)]
    outlier: super::flags::Outlier,

    #[command(flatten)]
    dry_run: super::flags::DryRun,

    #[command(flatten)]
    sysroot: super::flags::Sysroot,

    /// With --stores auto, leave out the short side measurement of the store mode auto did not pick
    #[arg(long)]
    no_stores_check: bool,

    /// Across ranks: give up on a rank that does not answer within this time
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration, help_heading = "Across ranks (MPI)")]
    rank_timeout: std::time::Duration,
}

/// What is about to run, for a terminal.
fn say_starting(plan: &plan::Plan) {
    crate::say!(
        "membw: {}, {} × {} arrays, {} ...",
        crate::units::plural(plan.cpus.len(), "thread"),
        plan.arrays_needed().len(),
        Bytes(plan.elements as u64 * ELEMENT_BYTES),
        crate::units::plural(plan.ntimes, "repetition")
    );
}

/// What `run` was asked, before defaults, for the report's `request`.
fn run_request(
    m: &args::MeasureArgs,
    placement: &args::Placement,
    settings: &Settings,
    stores_reason: String,
    plan: &plan::Plan,
    topo: &crate::topology::Topology,
) -> RunRequest {
    let request = RunRequest {
        size: m.size.size.map(|s| match s {
            ArraySize::Elements(n) => n.to_string(),
            ArraySize::Bytes(b) => format!("{} B", b.0),
        }),
        size_reading: super::size_reading(),
        threads: placement.request.threads,
        placement: placement.label(topo, &plan.cpus),
        isa: settings.measure.isa.map_or("auto", |i| i.name()).into(),
        stores: settings.stores.to_string(),
        stores_reason,
        inherited_mem_policy: m
            .mem
            .mem
            .is_empty()
            .then(crate::memory::inherited::policy)
            .flatten(),
        cpuset_mems: crate::memory::inherited::cpuset_mems(topo),
    };
    match plan.host_cpus() {
        Some(_) => request,
        // What a device was not asked and has not: placement, ISA, stores.
        None => RunRequest {
            placement: String::new(),
            isa: String::new(),
            stores: String::new(),
            stores_reason: String::new(),
            ..request
        },
    }
}

/// `run -o FILE`: the run as one record of a results file.
fn keep_run(
    session: &mut crate::engine::BandwidthSession,
    engine: &Engine,
    point: crate::results::Point,
    plan: &plan::Plan,
    report: &RunReport,
) -> Result<()> {
    let job = crate::engine::Job {
        point,
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
    session.keep(point, payload).map(|_| ())
}

/// The source for one rank of a multi-rank run.
#[cfg(feature = "mpi")]
fn ranks_source(
    launch: &crate::ranks::launcher::RankPlace,
    args: &RunArgs,
    peak: Option<&peak::Peak>,
) -> Result<Box<dyn crate::engine::source::Source>> {
    let source = crate::ranks::mpi::MpiSource::init(
        args.measure.rank_backends(launch)?,
        launch.local_rank,
        peak.map(peak::Peak::node_gb_s),
        args.outlier.outlier,
        args.rank_timeout,
    )?;
    Ok(Box::new(source))
}

#[cfg(not(feature = "mpi"))]
fn ranks_source(
    _: &crate::ranks::launcher::RankPlace,
    _: &RunArgs,
    _: Option<&peak::Peak>,
) -> Result<Box<dyn crate::engine::source::Source>> {
    unreachable!("MeasureArgs::launch refuses ranks without the mpi feature")
}

/// `run --dry-run`: the plan, resolved as a run would, and nothing run.
fn dry_run(
    args: &RunArgs,
    topo: &crate::topology::Topology,
    settings: &Settings,
    placement: &args::Placement,
) -> Result<()> {
    let source = args.measure.source()?;
    let Prepared {
        plan,
        stores_reason,
    } = source
        .prepare(topo, settings)
        .map_err(|e| placement.name_error(e))?;
    let spellings = plan_spellings(&plan);
    let view = report::plan::PlanView {
        command: "run",
        topo,
        node: args
            .sysroot
            .dir()
            .map_or("this node".into(), |d| d.display().to_string()),
        placement: Some(placement.label(topo, &plan.cpus)),
        jobs: vec![report::plan::PlannedJob {
            label: String::new(),
            plan: &plan,
            stores_reason,
        }],
        reproduce: spellings.as_ref(),
    };
    print(report::plan::render(&view))
}

/// The reproduce lines of a CPU plan; a device has none, nor do unbound
/// threads (the header says how to run them unbound).
fn plan_spellings(plan: &plan::Plan) -> Option<spellings::Spellings> {
    (plan.host_cpus())
        .filter(|_| plan.pinned)
        .map(|cpus| spellings::spell_plan(cpus, &plan.mem, plan.hugepages))
}

/// The run's report: its measurement with the share of the peak (for one
/// process's sockets only) and the reproduce lines.
fn run_report(
    topo: &crate::topology::Topology,
    engine: &Engine,
    request: crate::results::RunRequest,
    measurement: crate::results::Measurement,
    plan: &plan::Plan,
) -> RunReport {
    let peak = engine.peak_use(
        plan,
        measurement.in_caches,
        measurement
            .results
            .iter()
            .map(|r| (r.kernel, r.best_gb_s())),
    );
    let mut report = RunReport::new(
        topo,
        engine.source_name(),
        request,
        measurement,
        peak,
        plan_spellings(plan),
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
    report
}

/// The stores check, kept apart from the run: a signal or an error during
/// it costs the check, never the run's point.
fn other_stores(
    engine: &mut Engine,
    settings: &Settings,
    plan: &plan::Plan,
    measurement: &crate::results::Measurement,
    stop: &crate::engine::Stop,
) -> Option<crate::results::measurement::StoresCheck> {
    if stop.signal().is_some() {
        return None;
    }
    stores_check::measure_other(engine, settings, plan, measurement, stop).unwrap_or_else(|e| {
        if stop.signal().is_none() {
            crate::say!("membw: warning: the other store mode was not measured: {e}");
        }
        None
    })
}

/// A signal that came after the run's own measurement (during the stores
/// check): the run was printed and kept; the exit code still says it.
fn stopped_after_the_run(stop: &crate::engine::Stop) -> Result<()> {
    match stop.signal() {
        Some(signal) => Err(crate::error::Error::Interrupted {
            signal,
            message: format!(
                "stopped by {}: the run above is complete; the check of the other store mode was cut short",
                super::signals::signal_name(signal)
            ),
        }),
        None => Ok(()),
    }
}

/// `run --backend cuda:all`: every device alone, then all at once.
fn run_device_set(
    args: &RunArgs,
    topo: &crate::topology::Topology,
    settings: &Settings,
    (placement, mem_written, stores): (
        &args::Placement,
        &crate::memory::written::PolicySpec,
        crate::kernels::StoresRequest,
    ),
    set: Vec<Box<dyn crate::backend::Backend>>,
) -> Result<()> {
    let m = &args.measure;
    super::run_set::refuse(
        args.prom.prom.is_some(),
        args.dry_run.dry_run,
        args.form.format,
    )?;
    let point = |plan: &plan::Plan| {
        crate::results::Point::new(
            PlacementId::of(&placement.request),
            mem_written,
            stores,
            plan,
            None,
        )
    };
    let report = |engine: &Engine, measured, plan: &plan::Plan| {
        let request = run_request(m, placement, settings, String::new(), plan, topo);
        run_report(topo, engine, request, measured, plan)
    };
    let req = super::run_set::SetRequest {
        format: args.form.format,
        output: args.output.output.as_deref(),
        outlier: args.outlier.outlier,
        point: &point,
        report: &report,
    };
    super::run_set::run(topo, settings, &req, set)
}

/// The results file `-o` names, opened for this run's record: only by the
/// process that reports (rank 0 of an MPI run).
fn run_output(
    args: &RunArgs,
    engine: &Engine,
    topo: &crate::topology::Topology,
) -> Result<Option<crate::engine::BandwidthSession>> {
    Ok(match &args.output.output {
        Some(path) if engine.reports() => Some(crate::engine::BandwidthSession::new(
            "run",
            crate::results::Host::describe(topo),
            Default::default(),
            Some(common::open_run_output(path)?),
        )),
        _ => None,
    })
}

pub(crate) fn run(args: RunArgs) -> Result<()> {
    if let Some(p) = &args.prom.prom {
        common::check_writable(p, "--prom", true)?;
    }
    let m = &args.measure;
    (args.sysroot).only_for_planning(args.dry_run.dry_run, "add --dry-run")?;
    let (topo, _weights) = common::with_weights(
        m.weights.weights.as_deref(),
        read_topology(args.sysroot.dir())?,
    )?;
    let (mem_text, stores) = m.single("run")?;
    let placement = args.placement.placement(&env::Vars::from_process())?;
    let (mem_written, mem) = crate::memory::written::parse_written(&mem_text, &topo)?;
    let settings = Settings::new(
        &m.measure(args.kernels.or(super::flags::Kernels::STREAM)),
        placement.request.clone(),
        stores,
        mem,
    );
    // The backends --backend names, made once. Under mpirun a set is
    // shared out among each node's ranks instead.
    let launch = m.launch("run")?;
    let one = match m.chosen(launch.is_some())? {
        Some(Chosen::Set(set, _)) => {
            let point = (&placement, &mem_written, stores);
            return run_device_set(&args, &topo, &settings, point, set);
        }
        Some(Chosen::One(backend)) => Some(backend),
        None => None,
    };
    if args.dry_run.dry_run {
        return dry_run(&args, &topo, &settings, &placement);
    }
    let peak_estimate = peak::for_policy(&topo, &args.peak.request(), &settings.mem);
    // Ranks measure in lockstep: a side measurement on one would hang them.
    let check_stores = launch.is_none() && !args.no_stores_check;
    let mut source = match (launch, one) {
        (Some(launch), _) => ranks_source(&launch, &args, peak_estimate.as_ref())?,
        (None, one) => one.map_or_else(|| m.source(), |b| Ok(Chosen::source(b)))?,
    };
    let mut engine = Engine::new(&topo, source.as_mut(), peak_estimate);
    // The source's backend prepares its own plan (CPU threads, or a device).
    let Prepared {
        plan,
        stores_reason,
    } = engine
        .prepare(&settings)
        .map_err(|e| placement.name_error(e))?;
    common::note_unused_arrays(&mem_text, &plan.arrays_needed());

    if std::io::stderr().is_terminal() && !args.quiet.quiet {
        say_starting(&plan);
    }
    let mut output = run_output(&args, &engine, &topo)?;
    let stop = common::stop_flag();
    let measurement = engine.measure(&plan, crate::engine::By::Engine, &stop)?;
    if !engine.reports() {
        // Rank 0 prints for every rank.
        return Ok(());
    }
    let stores_check = match check_stores {
        true => other_stores(&mut engine, &settings, &plan, &measurement, &stop),
        false => None,
    };
    for w in &measurement.warnings {
        crate::say!("membw: warning: {w}");
    }
    let request = run_request(m, &placement, &settings, stores_reason, &plan, &topo);
    let mut report = run_report(&topo, &engine, request, measurement, &plan);
    report.stores_check = stores_check;
    if let Some(session) = &mut output {
        let mut point = crate::results::Point::new(
            PlacementId::of(&placement.request),
            &mem_written,
            stores,
            &plan,
            None,
        );
        point.concurrent_rank = m.concurrent_rank()?;
        keep_run(session, &engine, point, &plan, &report)?;
    }
    print(common::render_as(
        args.form.format,
        &report::view::View::Run {
            report: &report,
            quiet: args.quiet.quiet,
        },
    )?)?;
    if let Some(p) = &args.prom.prom {
        common::write_atomic(p, "--prom", report::prom::run(&report).as_bytes())?;
    }
    stopped_after_the_run(&stop)?;
    crate::results::require_valid(&report.measurement)
}
