//! `membw tune`: a search over threads × placement × store mode for the
//! best sustained bandwidth, within a time budget; on a device, over its
//! launch shapes (`shapes`).

use super::args::{MeasureArgs, PeakArgs};
use super::common::{file_error, print, read_topology, signal_name, stop_flag};
use crate::engine::tune_search::{self, TuneSpec};
use crate::engine::{BandwidthSession, Engine};
use crate::error::{Error, Result};
use crate::kernels::KernelId;
use crate::peak;
use crate::report::{self};
use crate::results::append::ResultsFile;
use crate::results::{Host, Record};
use clap::Args;

use super::common::{progress, run_message};

mod shapes;

#[derive(Args, Debug)]
pub(crate) struct TuneArgs {
    #[command(flatten)]
    budget: super::flags::Budget,

    #[command(flatten)]
    kernel: super::flags::Kernel,

    #[command(flatten)]
    repeat: super::flags::Repeat,

    #[command(flatten)]
    output: super::flags::Output,

    #[command(flatten)]
    form: super::flags::Form,
    #[command(flatten)]
    json: super::flags::JsonFlag,

    #[command(flatten)]
    measure: MeasureArgs,

    #[command(flatten)]
    peak: PeakArgs,

    #[command(flatten)]
    dry_run: super::flags::DryRun,

    #[command(flatten)]
    sysroot: super::flags::Sysroot,
}

/// The search the flags describe: one kernel, one policy, one array size
/// for every candidate.
fn tune_spec(args: &TuneArgs, topo: &crate::topology::Topology) -> Result<TuneSpec> {
    let m = &args.measure;
    let mem_text = m.one_mem("tune")?;
    let mem = crate::memory::written::parse_written(&mem_text, topo)?;
    let mut measure = m.measure(vec![args.kernel.kernel.unwrap_or(KernelId::Triad)]);
    // One array size for every candidate: STREAM's rule for all allowed CPUs.
    measure.elements = measure.elements.or_else(|| {
        Some(crate::memory::default_elements(
            topo,
            topo.allowed_cpus.ids(),
        ))
    });
    Ok(TuneSpec {
        kernel: args.kernel.kernel.unwrap_or(KernelId::Triad),
        measure,
        mem,
        stores: m.stores(),
    })
}

/// What the report shows of a search: the ranking, the race, and the best
/// against the runner-up and against one thread on every core.
fn tune_view<'a>(
    args: &TuneArgs,
    trials: &'a [tune_search::Trial],
    records: &'a [Record],
    ranked: &'a [(&'a Record, f64)],
    searched: &tune_search::Searched,
) -> report::tune_verdict::TuneView<'a> {
    let best = ranked[0].0;
    let baseline = tune_search::baseline(
        trials,
        records,
        args.kernel.kernel.unwrap_or(KernelId::Triad),
    );
    let versus = |other: Option<&'a Record>| {
        let other = other.filter(|o| !std::ptr::eq(*o, best))?;
        Some((
            other,
            tune_search::versus(
                &best.runs,
                &other.runs,
                args.kernel.kernel.unwrap_or(KernelId::Triad),
            )?,
        ))
    };
    report::tune_verdict::TuneView {
        kernel: args.kernel.kernel.unwrap_or(KernelId::Triad),
        ranked,
        tried: searched.tried,
        candidates: trials.len(),
        elapsed: searched.elapsed,
        budget: args.budget.or(super::flags::Budget::TUNE),
        decision: searched.decision,
        looks: searched.looks,
        level: tune_search::level_per_look(),
        runner_up: versus(ranked.get(1).map(|&(r, _)| r)),
        baseline: baseline.filter(|b| std::ptr::eq(*b, best)).is_some(),
        versus_baseline: versus(baseline),
        mpi_map: tune_search::mpi_map(trials, best),
        busy_runs: searched.busy_runs,
    }
}

/// Why a race ranked nothing: a stop before the first candidate, or none
/// completed.
fn nothing_ranked(signal: Option<i32>) -> Error {
    match signal {
        Some(signal) => Error::Interrupted {
            signal,
            message: format!(
                "stopped by {} before the first candidate completed; nothing to rank",
                signal_name(signal)
            ),
        },
        None => Error::Runtime("no candidate completed".into()),
    }
}

pub(crate) fn tune(args: TuneArgs) -> Result<()> {
    // Another node's tree can be planned for, or measured by the fake
    // source (tests); nothing can be pinned on it.
    (args.sysroot).only_for_planning(
        args.dry_run.dry_run || args.measure.fakes(),
        "add --dry-run",
    )?;
    let (topo, _weights) = super::common::with_weights(
        args.measure.weights.weights.as_deref(),
        read_topology(args.sysroot.dir())?,
    )?;
    args.measure.launch("tune")?;
    super::env::note_unused(&super::env::Vars::from_process(), "tune");
    let m = &args.measure;
    let spec = tune_spec(&args, &topo)?;
    let source = m.source()?;
    if super::flags::device_target(source.as_ref(), &topo, &spec.measure).is_some() {
        // A device's search is of its launch shapes, not of CPU placements.
        return shapes::tune_shapes(&args, &topo, source);
    }
    let mut source = source;
    let trials = tune_search::trials(&topo, &spec, &|s| source.prepare(&topo, s))?;
    if args.dry_run.dry_run {
        let jobs: Vec<&crate::engine::Job> = trials.iter().map(|t| &t.job).collect();
        return super::common::print_plan("tune", &topo, args.sysroot.dir(), &jobs);
    }
    let file = (args.output.output)
        .as_ref()
        .map(|p| ResultsFile::create(p).map_err(|e| file_error(e, "--output")))
        .transpose()?;
    let mut engine = Engine::new(
        &topo,
        source.as_mut(),
        // None where the node's figure is not these CPUs' (a VM's slice):
        // the records then say why (`peak_unknown`).
        peak::for_cpus_used(&topo, &args.peak.request()).unwrap_or(None),
    );
    let mut session = BandwidthSession::new("tune", Host::describe(&topo), stop_flag(), file);
    let repeat = args.repeat.or(super::flags::Repeat::TUNE);
    let bar = progress(trials.len() as u64 * u64::from(repeat));
    let searched = tune_search::search(
        &mut engine,
        &trials,
        args.kernel.kernel.unwrap_or(KernelId::Triad),
        repeat as usize,
        args.budget.or(super::flags::Budget::TUNE),
        &mut session,
        &mut |job, r| {
            bar.set_message(run_message(job, r));
            bar.inc(1);
        },
    )?;
    bar.finish_and_clear();
    let ranked = tune_search::ranking(
        &session.records,
        args.kernel.kernel.unwrap_or(KernelId::Triad),
    );
    if ranked.is_empty() {
        return Err(nothing_ranked(session.signal()));
    }
    let view = tune_view(&args, &trials, &session.records, &ranked, &searched);
    print(super::common::render_as(
        args.form.format,
        &report::view::View::Tune(&view),
    )?)?;
    if let Some(line) = super::common::trust_summary(&session.records) {
        crate::say!("membw: {line}");
    }
    if let Some(p) = &args.output.output {
        crate::say!("membw: every candidate is in {}", p.display());
    }
    if let Some(signal) = session.signal() {
        return Err(Error::Interrupted {
            signal,
            message: format!(
                "stopped by {}; the best so far is shown above",
                signal_name(signal)
            ),
        });
    }
    Ok(())
}
