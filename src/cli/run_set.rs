//! `membw run --backend cuda:all` (or `cuda:0-3,6`, `sim:0-7`): every
//! device of the set measured alone, one after another, then all of them
//! at once under one start gate (`engine::together`). Each device is its
//! own target with its own records: `-o` keeps one per device alone and
//! one per device at once (its point says `together`), so that report and
//! compare tell the modes apart.

use super::common::{self, print};
use crate::backend::Backend;
use crate::engine::source::StreamSource;
use crate::engine::together::TogetherSource;
use crate::engine::{BandwidthSession, Engine, Job};
use crate::error::{Error, Result};
use crate::plan::{Plan, Prepared, Settings};
use crate::report::view::{Format, View};
use crate::results::device_set::DeviceSetReport;
use crate::results::{Point, RunReport, RunResult};
use crate::topology::Topology;

/// What a device set's run was asked, beside the settings.
pub(super) struct SetRequest<'a> {
    pub format: Format,
    pub output: Option<&'a std::path::Path>,
    pub outlier: f64,
    /// The point of a run of one device, before its target (placement,
    /// policy and stores as written).
    pub point: &'a dyn Fn(&Plan) -> Point,
    /// The run document of one measurement.
    pub report: &'a dyn Fn(&Engine, crate::results::Measurement, &Plan) -> RunReport,
}

/// What a device set refuses before anything is measured: what only one
/// device or the host has.
pub(super) fn refuse(prom: bool, dry_run: bool, format: Format) -> Result<()> {
    let why = if prom {
        Some("--prom: membw check --prom writes every device's series; run's are one device's")
    } else if dry_run {
        Some("--dry-run plans one device: give one (cuda:0)")
    } else if !matches!(format, Format::Text | Format::Json | Format::Jsonl) {
        Some(
            "a device set prints text, json or jsonl; its records (-o FILE) give membw report every format",
        )
    } else {
        None
    };
    why.map_or(Ok(()), |w| Err(Error::Usage(format!("a device set: {w}"))))
}

/// One device alone: its plan, its report and its point.
fn alone(
    topo: &Topology,
    backend: Box<dyn Backend>,
    settings: &Settings,
    req: &SetRequest,
    stop: &crate::sys::Stop,
) -> Result<(RunReport, Plan, Box<dyn Backend>)> {
    let mut source = StreamSource { backend };
    let mut engine = Engine::new(topo, &mut source, None);
    let Prepared { plan, .. } = engine.prepare(settings)?;
    let m = engine.measure(&plan, crate::engine::By::Engine, stop)?;
    let report = (req.report)(&engine, m, &plan);
    Ok((report, plan, source.backend))
}

/// `-o FILE`: a run as one record of the results file. The record's
/// source and peak are a device's own (its plan's), so an engine of the
/// default source words it as the measuring one would.
fn keep(
    session: &mut BandwidthSession,
    engine: &Engine,
    point: Point,
    plan: &Plan,
    m: &crate::results::Measurement,
) -> Result<()> {
    let job = Job {
        point,
        plan: plan.clone(),
        label: String::new(),
        by: crate::engine::By::Engine,
    };
    let (point, payload) = engine.payload(&job, vec![RunResult::from_measurement(m)]);
    session.keep(point, payload).map(|_| ())
}

pub(super) fn run(
    topo: &Topology,
    settings: &Settings,
    req: &SetRequest,
    backends: Vec<Box<dyn Backend>>,
) -> Result<()> {
    let n = backends.len();
    let stop = common::stop_flag();
    let mut session = match req.output {
        Some(path) => Some(BandwidthSession::new(
            "run",
            crate::results::Host::describe(topo),
            Default::default(),
            Some(super::common::open_run_output(path)?),
        )),
        None => None,
    };
    let mut alone_reports = Vec::new();
    // Each backend again, at once: the set is not resolved a second time.
    let mut measured = Vec::with_capacity(n);
    for backend in backends {
        let name = backend.name();
        let (report, plan, backend) = alone(topo, backend, settings, req, &stop)?;
        measured.push(backend);
        let device = plan.target.device_name().unwrap_or(name).to_string();
        for w in &report.measurement.warnings {
            crate::say!("membw: warning: {device} alone: {w}");
        }
        if let Some(s) = &mut session {
            let mut source = StreamSource::default();
            let engine = Engine::new(topo, &mut source, None);
            keep(s, &engine, (req.point)(&plan), &plan, &report.measurement)?;
        }
        alone_reports.push(report);
        if let Some(signal) = stop.signal() {
            return Err(Error::Interrupted {
                signal,
                message: format!(
                    "stopped by {}: the devices alone were cut short, and none was measured at once",
                    common::signal_name(signal)
                ),
            });
        }
    }
    // All at once: every device again, its timed kernels in step.
    let mut together = TogetherSource::new(measured, req.outlier);
    let at_once = {
        let mut engine = Engine::new(topo, &mut together, None);
        let Prepared { plan, .. } = engine.prepare(settings)?;
        let m = engine.measure(&plan, crate::engine::By::Engine, &stop)?;
        (req.report)(&engine, m, &plan)
    };
    for w in &at_once.measurement.warnings {
        crate::say!("membw: warning: at once: {w}");
    }
    if let Some(s) = &mut session {
        let mut source = StreamSource::default();
        let engine = Engine::new(topo, &mut source, None);
        for one in &together.each {
            let mut point = (req.point)(&one.plan);
            point.together = Some(n);
            keep(s, &engine, point, &one.plan, &one.measurement)?;
        }
    }
    let set = DeviceSetReport::new(alone_reports, at_once);
    print(common::render_as(req.format, &View::Devices(&set))?)?;
    let failed: Vec<String> = (set.alone.iter())
        .chain([&set.at_once])
        .filter_map(|r| crate::results::require_valid(&r.measurement).err())
        .map(|e| e.to_string())
        .collect();
    match failed.first() {
        Some(first) => Err(Error::Runtime(first.clone())),
        None => Ok(()),
    }
}
