//! `membw exec`: someone else's bandwidth program under membw's placement,
//! memory policy and verification, measured through the engine like any
//! source.

use super::args::{PeakArgs, PlacementArgs};
use super::common::print;
use super::env;
use crate::engine::program_source::ExecSource;
use crate::engine::{BandwidthSession, Engine, Job};
use crate::error::{Error, Result};
use crate::peak;
use crate::plan::{self, StoresRequest};
use crate::results::{Host, Point};
use clap::Args;
use std::collections::BTreeSet;
use std::path::Path;

#[derive(Args, Debug)]
pub(crate) struct ExecArgs {
    #[command(flatten)]
    placement: PlacementArgs,

    /// The program's memory policy, set before it starts as numactl sets it
    #[command(flatten)]
    mem: super::flags::Mem,

    #[command(flatten)]
    repeat: super::flags::Repeat,

    #[command(flatten)]
    timeout: super::flags::Timeout,

    /// A short name for the program in tables [default: its file name]
    #[arg(long)]
    label: Option<String>,

    #[command(flatten)]
    form: super::flags::Form,
    #[command(flatten)]
    json: super::flags::JsonFlag,

    #[command(flatten)]
    output: super::flags::Output,

    /// Pass the program's own output through as it runs
    #[arg(long)]
    show_output: bool,

    #[command(flatten)]
    peak: PeakArgs,

    /// The program and its arguments, after --: membw exec -- ./stream_c.exe
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    program: Vec<String>,
}

pub(crate) fn exec(args: ExecArgs) -> Result<()> {
    super::common::check_program(&args.program[0])?;
    let topo = super::common::read_topology(None)?;
    let vars = env::Vars::from_process();
    let placement = args.placement.placement(&vars)?;
    let (mem_written, mem) =
        crate::memory::written::parse_written(&args.mem.one_policy("exec")?, &topo)?;
    // The program sizes its own arrays: the plan only places it.
    let plan = plan::placement_only(&topo, &placement.request, mem)
        .map_err(|e| placement.name_error(e))?;
    let (_, job) = program_job(&args, &placement.request, &mem_written, plan);
    // The user's own placement variables go to the program untouched.
    let keep: BTreeSet<String> = vars.0.iter().map(|(k, _)| k.to_string()).collect();
    let kept: std::collections::BTreeMap<String, String> = vars
        .0
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut source = ExecSource {
        argv: args.program.clone(),
        timeout: args.timeout.or_default(),
        keep: keep.clone(),
        show_output: args.show_output,
    };
    let mut engine = Engine::new(
        &topo,
        &mut source,
        // None where the node's figure is not these CPUs' (a VM's slice):
        // the records then say why (`peak_unknown`).
        peak::for_cpus_used(&topo, &args.peak.request()).unwrap_or(None),
    );
    let file = match &args.output.output {
        Some(path) => Some(super::common::open_run_output(path)?),
        None => None,
    };
    let mut session = BandwidthSession::new(
        "exec",
        Host::describe(&topo),
        super::common::stop_flag(),
        file,
    );
    let mut failures = Vec::new();
    engine.run(
        std::slice::from_ref(&job),
        args.repeat.or(super::flags::Repeat::DEFAULT) as usize,
        &mut session,
        &mut |_, run| {
            // A failed run's first warning is why: it becomes the error,
            // said once.
            let why = (!run.validated).then(|| run.warnings.first()).flatten();
            for w in run.warnings.iter().skip(usize::from(why.is_some())) {
                crate::say!("membw: warning: {w}");
            }
            failures.extend(why.cloned());
        },
    )?;
    if let Some(signal) = session.signal() {
        return Err(Error::Interrupted {
            signal,
            message: "stopped by a signal; the program and everything it started were killed"
                .into(),
        });
    }
    let Some(record) = session.records.first() else {
        return Err(Error::Runtime("the program did not run".into()));
    };
    // The variables membw's placement did not use go to the program as they
    // are: the header's "yours" line says so, once.
    let label = placement.label(&topo, &job.plan.cpus);
    let described = label.split("; not used:").next().unwrap_or_default();
    let view = crate::report::program_run::ExecView {
        program: &args.program,
        placement: described,
        cpus: &job.plan.cpus,
        kept: &kept,
        record,
    };
    print(&super::common::render_as(
        args.form.format,
        &crate::report::view::View::Exec(view),
    )?)?;
    match failures.first() {
        Some(why) => Err(Error::Validation(why.clone())),
        None => Ok(()),
    }
}

/// The one job of an exec: the program placed by `plan`, under its label.
fn program_job(
    args: &ExecArgs,
    request: &crate::placement::Request,
    mem: &crate::memory::written::PolicySpec,
    plan: plan::Plan,
) -> (String, Job) {
    let label = args.label.clone().unwrap_or_else(|| {
        Path::new(&args.program[0])
            .file_name()
            .map_or(args.program[0].clone(), |f| {
                f.to_string_lossy().into_owned()
            })
    });
    let mut point = Point::new(
        crate::placement::identity::PlacementId::of(request),
        mem,
        StoresRequest::Auto,
        &plan,
        None,
    );
    point.target = Some(crate::results::targets::Target::Program {
        label: Some(label.clone()),
    });
    // What a STREAM-like program reports; the rates it printed say which ran.
    point.kernels = crate::kernels::STREAM_KERNELS.to_vec();
    let job = Job {
        label: format!("{label} · {}", point.label()),
        point,
        plan,
        by: crate::engine::By::Engine,
    };
    (label, job)
}

/// `membw exec ./stream`: clap's "unexpected argument" becomes a hint that
/// the program must follow `--`, with the command line that works.
/// `membw run ./stream`: run measures membw's own kernels; a program of the
/// user's is measured by exec.
pub(crate) fn run_a_program(kind: clap::error::ErrorKind, line: String) -> String {
    let args: Vec<String> = std::env::args().collect();
    let unexpected = line
        .strip_prefix("unexpected argument '")
        .and_then(|rest| rest.split_once('\''))
        .map(|(arg, _)| arg.to_string());
    match unexpected {
        Some(program)
            if kind == clap::error::ErrorKind::UnknownArgument
                && args.get(1).is_some_and(|a| a == "run")
                && !program.starts_with('-')
                && (program.contains('/') || std::path::Path::new(&program).is_file()) =>
        {
            let at = args
                .iter()
                .rposition(|a| *a == program)
                .unwrap_or(args.len());
            format!(
                "unexpected argument '{program}': membw run measures membw's own kernels; to measure your program under membw's placement: membw exec -- {}",
                args[at..].join(" ")
            )
        }
        _ => line,
    }
}

pub(crate) fn missing_dashes(kind: clap::error::ErrorKind, line: String) -> String {
    let args: Vec<String> = std::env::args().collect();
    let unexpected = line
        .strip_prefix("unexpected argument '")
        .and_then(|rest| rest.split_once('\''))
        .map(|(arg, _)| arg.to_string());
    if kind == clap::error::ErrorKind::UnknownArgument
        && args.iter().any(|a| a == "exec")
        && !args.iter().any(|a| a == "--")
        && let Some(program) = unexpected.filter(|a| !a.starts_with('-'))
        && let Some(at) = args.iter().rposition(|a| *a == program)
    {
        return format!(
            "unexpected argument '{program}': put -- before the program and its arguments: membw exec [OPTIONS] -- {}",
            args[at..].join(" ")
        );
    }
    line
}
