//! `membw exec`: someone else's bandwidth program under membw's placement,
//! memory policy and verification, measured through the engine like any
//! source.

use super::args::{PeakArgs, PlacementArgs};
use super::common::print;
use super::env;
use crate::engine::exec::ExecSource;
use crate::engine::{Engine, Job};
use crate::error::{Error, Result};
use crate::memory::PAGE_ELEMENTS;
use crate::memory::policy as mempolicy;
use crate::peak;
use crate::plan::{self, Measure, Settings, StoresRequest};
use crate::results::{Point, Record};
use clap::{Args, ValueEnum};
use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExecFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub(crate) struct ExecArgs {
    #[command(flatten)]
    placement: PlacementArgs,

    /// Memory policy of the whole program, set before it starts (as numactl does):
    /// local, bind:1, interleave:all, preferred:2
    #[arg(long, default_value = "local")]
    mem: String,

    /// Runs, the program started afresh each time, for mean ± sd
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,

    /// Kill the program and everything it started after this long (30s, 10m)
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    timeout: Duration,

    /// A short name for the program in tables [default: its file name]
    #[arg(long)]
    label: Option<String>,

    /// Output format
    #[arg(long, value_enum, default_value_t = ExecFormat::Text)]
    format: ExecFormat,

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
    let mem = mempolicy::parse(&args.mem, &topo)?;
    // The program sizes its own arrays; the plan only carries placement and policy.
    let measure = Measure {
        elements: Some(PAGE_ELEMENTS as u64),
        ntimes: 2,
        kernels: crate::kernels::STREAM_KERNELS.to_vec(),
        isa: None,
        hugepages: crate::memory::Hugepages::Auto,
    };
    let settings = Settings::new(
        &measure,
        placement.request.clone(),
        StoresRequest::Auto,
        mem,
    );
    let plan = plan::prepare(&topo, &settings)
        .map_err(|e| placement.name_error(e))?
        .plan;
    let label = args.label.clone().unwrap_or_else(|| {
        Path::new(&args.program[0])
            .file_name()
            .map_or(args.program[0].clone(), |f| {
                f.to_string_lossy().into_owned()
            })
    });
    let mut point = Point::new(
        placement.described.clone(),
        &args.mem,
        StoresRequest::Auto,
        &plan,
        None,
    );
    point.elements = 0;
    point.ntimes = 0;
    point.working_set_per_thread = 0;
    point.program = Some(label.clone());
    let job = Job {
        label: format!("{label} · {}", point.label()),
        point,
        plan,
    };
    // The user's own placement variables go to the program untouched.
    let keep: BTreeSet<String> = vars.0.iter().map(|(k, _)| k.to_string()).collect();
    let mut source = ExecSource {
        argv: args.program.clone(),
        timeout: args.timeout,
        keep: keep.clone(),
    };
    let mut engine = Engine::new(
        &topo,
        &mut source,
        "exec",
        peak::estimate(&topo, &args.peak.request()),
        super::common::stop_flag(),
    );
    let mut records: Vec<Record> = Vec::new();
    let mut failures = Vec::new();
    engine.run(
        std::slice::from_ref(&job),
        args.repeat as usize,
        &Default::default(),
        &mut records,
        &mut |_, run| {
            for w in &run.warnings {
                crate::say!("membw: warning: {w}");
            }
            if !run.validated {
                failures.extend(run.warnings.first().cloned());
            }
        },
    )?;
    if let Some(signal) = engine.stop_signal() {
        return Err(Error::Interrupted {
            signal,
            message: "stopped by a signal; the program and everything it started were killed"
                .into(),
        });
    }
    let Some(record) = records.first() else {
        return Err(Error::Runtime("the program did not run".into()));
    };
    print(&match args.format {
        ExecFormat::Json => crate::report::json::pretty(record)?,
        ExecFormat::Text => text(&args, &placement.described, &job.plan.cpus, &keep, record),
    })?;
    match failures.first() {
        Some(why) => Err(Error::Validation(why.clone())),
        None => Ok(()),
    }
}

fn text(
    args: &ExecArgs,
    placement: &str,
    cpus: &[usize],
    kept: &BTreeSet<String>,
    r: &Record,
) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "Program:   {}", args.program.join(" "));
    let _ = writeln!(o, "Placement: {placement}");
    let _ = writeln!(o, "Memory:    {}", r.point.mem);
    let _ = writeln!(
        o,
        "CPUs:      {} ({})",
        crate::topology::cpulist::format_ranges(cpus),
        crate::units::plural(cpus.len(), "thread")
    );
    let set: Vec<String> = crate::foreign::placement_env(cpus)
        .into_iter()
        .filter(|(k, _)| !kept.contains(*k))
        .map(|(k, v)| format!("{k}='{v}'"))
        .collect();
    let _ = writeln!(o, "membw set: the affinity mask, {}", set.join(" "));
    if !kept.is_empty() {
        let kept: Vec<&str> = kept.iter().map(String::as_str).collect();
        let _ = writeln!(
            o,
            "yours:     {} (passed through as you set them)",
            kept.join(" ")
        );
    }
    let _ = writeln!(
        o,
        "\n  kernel   GB/s (mean ± sd of {} run{})    min      max",
        r.runs.len(),
        if r.runs.len() == 1 { "" } else { "s" }
    );
    if r.stats.is_empty() {
        let _ = writeln!(o, "  (no rates: see the error)");
    }
    for (k, s) in &r.stats {
        let _ = writeln!(
            o,
            "  {:<7}  {:>16}  {:>8.2}  {:>8.2}",
            k.spec().name,
            format!("{:.2} ± {:.2}", s.mean, s.sd),
            s.min,
            s.max
        );
    }
    let held = r.runs.iter().all(|run| run.pages_held);
    let pinned = r.runs.iter().all(|run| {
        run.warnings
            .iter()
            .all(|w| !w.contains("outside the placement"))
    });
    let _ = writeln!(o, "{}", watch_line(&r.runs, cpus.len()));
    let _ = writeln!(
        o,
        "Verified:  threads {} · pages {}",
        if pinned {
            "stayed on their CPUs"
        } else {
            "LEFT their CPUs (see the warnings)"
        },
        if held {
            "as the policy asks"
        } else {
            "NOT as the policy asks (see the warnings)"
        }
    );
    o
}

/// What watching the program cost: membw's own CPU time over the CPU time
/// the program's CPUs had while it ran.
fn watch_line(runs: &[crate::results::RunResult], cpus: usize) -> String {
    let (watch, wall) = runs
        .iter()
        .filter_map(|run| Some((run.program.as_ref()?.watch_cpu_s, run.total_s)))
        .fold((0.0, 0.0), |(w, t), (rw, rt)| (w + rw, t + rt));
    let share = if wall > 0.0 {
        100.0 * watch / (wall * cpus.max(1) as f64)
    } else {
        0.0
    };
    format!(
        "\nWatching:  membw used {:.1} ms of CPU in {:.2} s ({share:.3} % of the program's CPUs)",
        watch * 1e3,
        wall
    )
}
