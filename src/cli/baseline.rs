//! `membw baseline`: what this kind of node measures when healthy, kept
//! for `membw check` (one node's rounds, or a partition's from its nodes'
//! baselines).

use super::common::{check_writable, print, render_as, stop_flag, write_atomic};
use super::health::{largest, not_judged, read_baseline};
use super::health_protocol::ProtocolArgs;
use crate::engine::Engine;
use crate::engine::check;
use crate::error::{Error, Result};
use crate::health::{BASELINE_KIND, BASELINE_SCHEMA, Baseline, Identity, Protocol};
use crate::topology::edac::MemoryErrors;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(crate) struct BaselineArgs {
    #[command(flatten)]
    output: super::flags::Output,

    /// Rounds of measurement (every scope once per round); the baseline keeps each round's rate
    #[arg(long, default_value_t = 5, value_parser = super::values::parse_rounds)]
    rounds: u32,

    /// Write the baseline even when other work ran on the node (a shared node or VM that is
    /// never idle): it records what ran, and every check against it says so
    #[arg(long)]
    allow_busy: bool,

    /// Measure nothing: make a partition's baseline from these nodes' baselines (the median
    /// node per scope and kernel, with the spread across nodes)
    #[arg(long, num_args = 1.., value_name = "FILE")]
    from: Vec<PathBuf>,

    #[command(flatten)]
    form: super::flags::Form,
    #[command(flatten)]
    json: super::flags::JsonFlag,

    #[command(flatten)]
    pub(super) protocol: ProtocolArgs,
}

/// `membw baseline`. Exit 1 only where the node was measured and found
/// unhealthy (its kernels computed wrong results); whatever kept it from
/// making a baseline is exit 2 (see [`not_judged`]).
pub(crate) fn baseline(args: BaselineArgs) -> Result<()> {
    if args.protocol.dry_run.dry_run {
        return plan_baseline(&args);
    }
    let (baseline, written) =
        make_baseline(&args).map_err(|e| not_judged(e, "could not make a baseline"))?;
    crate::say!("membw: {written}");
    // The baseline is made and written: a printout that fails says so.
    print(render_as(
        args.form.format,
        &crate::report::view::View::Baseline(&baseline),
    )?)
    .map_err(|e| not_judged(e, &format!("{written}, but printing it failed")))
}

impl BaselineArgs {
    /// The baseline to write: `--output`, which the grammar requires here.
    fn baseline_file(&self) -> Result<&std::path::Path> {
        (self.output.output.as_deref())
            .ok_or_else(|| Error::Usage("--output FILE: the baseline to write".into()))
    }
}

/// `baseline --dry-run`: the scopes it would measure; nothing measured or
/// written.
fn plan_baseline(args: &BaselineArgs) -> Result<()> {
    if !args.from.is_empty() {
        return Err(Error::Usage(
            "--dry-run with --from: a partition's baseline measures nothing".into(),
        ));
    }
    let topo = args.protocol.topology()?;
    let (source, _) = args.protocol.source(&topo)?;
    let jobs = args.protocol.scope_jobs(&topo, source.as_ref())?;
    args.protocol.show_plan("baseline", &jobs)
}

/// Measures (or merges) the baseline and writes it to `--output`; says
/// what it wrote.
fn make_baseline(args: &BaselineArgs) -> Result<(Baseline, String)> {
    check_writable(args.baseline_file()?, "--output", false)?;
    if !args.from.is_empty() {
        return fleet_baseline(args);
    }
    let topo = args.protocol.topology()?;
    let (mut source, gpus) = args.protocol.source(&topo)?;
    let jobs = args.protocol.scope_jobs(&topo, source.as_ref())?;
    // A busy node is refused now, not after every round (the same rule).
    let measured = !args.protocol.fake();
    if measured
        && !args.allow_busy
        && let Some(busy) = check::busy_before(&jobs, std::time::Duration::from_secs(1))
    {
        return Err(Error::Usage(format!(
            "could not make a baseline: {busy}; make it when the node is idle, or give --allow-busy where it never is (nothing written)"
        )));
    }
    let mut engine = Engine::new(&topo, source.as_mut(), None);
    let stop = stop_flag();
    let rounds = args.rounds as usize;
    let (scopes, interference) =
        check::measure_baseline(&mut engine, &jobs, rounds, &stop, &mut |i| {
            crate::say!("membw: round {i} of {rounds} done")
        })?;
    let pairs = args.protocol.pairs(&topo, gpus, largest(&jobs), &stop)?;
    if let Some(signal) = stop.signal() {
        return Err(Error::Interrupted {
            signal,
            message: format!(
                "stopped by {} before the last round; no baseline written",
                super::common::signal_name(signal)
            ),
        });
    }
    // A baseline of a busy node would let every later check of a slow one
    // pass: only where the admin says the node is never idle.
    if interference.busy && !args.allow_busy {
        return Err(Error::Usage(format!(
            "could not make a baseline: {}; make it when the node is idle, or give --allow-busy where it never is (nothing written)",
            interference.cause().unwrap_or_default()
        )));
    }
    let host = crate::results::Host::describe(&topo);
    let baseline = Baseline {
        pairs,
        schema_version: BASELINE_SCHEMA,
        kind: BASELINE_KIND.into(),
        created: crate::results::now(),
        hosts: vec![host.hostname],
        identity: Identity::of(&topo),
        protocol: Protocol {
            ntimes: args.protocol.ntimes.ntimes as usize,
            // Every scope's kernels: a device's link scopes add theirs.
            kernels: {
                let mut kernels = args.protocol.kernels.or(super::flags::Kernels::HEALTH);
                for k in scopes.iter().flat_map(|s| s.kernels.keys()) {
                    if !kernels.contains(k) {
                        kernels.push(*k);
                    }
                }
                kernels
            },
        },
        scopes,
        interference: Some(interference),
        memory_errors: matches!(topo.memory_errors, MemoryErrors::Counted { .. })
            .then(|| topo.memory_errors.clone()),
    };
    let json = crate::report::pretty(&baseline)?;
    let file = args.baseline_file()?;
    write_atomic(file, "--output", json.as_bytes())?;
    let written = format!("baseline in {}", file.display());
    Ok((baseline, written))
}

/// `membw baseline --from FILE...`: one baseline for a partition.
fn fleet_baseline(args: &BaselineArgs) -> Result<(Baseline, String)> {
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
        args.baseline_file()?,
        "--output",
        crate::report::pretty(&baseline)?.as_bytes(),
    )?;
    let written = format!(
        "baseline of {} nodes in {}",
        nodes.len(),
        args.baseline_file()?.display()
    );
    Ok((baseline, written))
}
