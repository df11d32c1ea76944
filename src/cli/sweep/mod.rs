//! `membw sweep`: many configurations (threads, placements, memory
//! policies, store modes, sizes, the NUMA matrix, other programs) measured
//! with repeats into a results file, resumable.

mod resume;

use super::args::{MeasureArgs, PeakArgs};
use super::common::{file_error, print, read_topology, signal_name, stop_flag};
use super::flags::NumaCells;
use crate::engine::sweep::{self, NumaMode, SweepSpec};
use crate::engine::{BandwidthSession, Engine};
use crate::error::{Error, Result};
use crate::peak;
use crate::report::study;
use crate::results::Host;
use crate::results::append::ResultsFile;
use crate::units::plural;
use clap::Args;
use std::path::PathBuf;

use super::common::{progress, run_message};

/// A sweep's flags. Their serde form is exactly a [`SweepStudy`]'s, the
/// typed study that results files keep and `--resume` compares field by
/// field: every field that defines the points; the fields that say where
/// results go and how they are shown are `serde(skip)`.
#[derive(Args, Debug, serde::Serialize, serde::Deserialize)]
#[command(group(
    clap::ArgGroup::new("cpu_axes")
        .multiple(true)
        .args(["threads", "strategy", "cpus", "places", "pin", "gomp_affinity", "kmp_affinity", "sizes", "cpunode"])
        .conflicts_with("numa_matrix")
))]
pub(crate) struct SweepArgs {
    #[command(flatten)]
    #[serde(flatten)]
    placement: super::axes::PlacementAxes,

    #[command(flatten)]
    #[serde(flatten)]
    numa_matrix: super::flags::NumaMatrix,

    #[command(flatten)]
    #[serde(flatten)]
    sizes: super::flags::WorkingSetArgs,

    /// The tier study: shares of each thread's pages on --far-node, in %, each a point
    /// (e.g. 0,10,20,30,40,50); the rest on the near node (split policy, any kernel)
    #[arg(long, value_delimiter = ',', value_parser = crate::units::parse_percent, requires = "far_node",
          conflicts_with_all = ["mem", "numa_matrix"], help_heading = "Axes")]
    far_share: Vec<f64>,

    /// The far memory node of --far-share (CXL, HBM, another socket)
    #[arg(long, requires = "far_share", help_heading = "Axes")]
    far_node: Option<usize>,

    /// The near memory node of --far-share [default: the node of the first allowed CPU]
    #[arg(long, requires = "far_share", help_heading = "Axes")]
    near_node: Option<usize>,

    /// Programs to measure at every point, one per flag: 'gcc=./stream-gcc' 'clang=./stream-clang 80000000';
    /// `membw` stands for membw's own kernels (arguments split at spaces)
    #[arg(
        long,
        value_name = "LABEL=PROGRAM ARGS",
        conflicts_with = "sizes",
        help_heading = "Axes"
    )]
    exec: Vec<String>,

    // How long a program may run is not part of the study.
    #[command(flatten)]
    #[serde(skip)]
    timeout: super::flags::Timeout,

    #[command(flatten)]
    #[serde(flatten)]
    kernels: super::flags::Kernels,

    #[command(flatten)]
    #[serde(flatten)]
    repeat: super::flags::Repeat,

    #[command(flatten)]
    #[serde(skip)]
    output: super::flags::Output,

    #[command(flatten)]
    #[serde(skip)]
    resume: super::flags::Resume,

    #[command(flatten)]
    #[serde(skip)]
    form: super::flags::Form,
    #[command(flatten)]
    #[serde(skip)]
    json: super::flags::JsonFlag,

    #[command(flatten)]
    #[serde(skip)]
    markdown: super::flags::MarkdownFlag,

    #[command(flatten)]
    #[serde(skip)]
    dry_run: super::flags::DryRun,

    #[command(flatten)]
    #[serde(skip)]
    sysroot: super::flags::Sysroot,

    #[command(flatten)]
    #[serde(flatten)]
    measure: MeasureArgs,

    // The peak rates are held against is not part of the study either.
    #[command(flatten)]
    #[serde(skip)]
    peak: PeakArgs,
}

/// The memory policies the sweep measures: `--mem`'s, or for the tier
/// study one split per far share.
fn mem_axis(args: &SweepArgs, topo: &crate::topology::Topology) -> Result<Vec<String>> {
    let Some(far) = args.far_node else {
        return args.measure.mems();
    };
    let first_cpu = topo.allowed_cpus.ids().first().copied();
    let near = args
        .near_node
        .or_else(|| first_cpu.and_then(|c| topo.cpu(c)).map(|c| c.node))
        .unwrap_or(0);
    for (flag, node) in [("--far-node", far), ("--near-node", near)] {
        topo.existing_node(node)
            .map_err(|e| Error::Usage(format!("{flag} {node}: {e}")))?;
    }
    if near == far {
        return Err(Error::Usage(format!(
            "--far-node {far}: the near node is {near} too; give a far node, or --near-node"
        )));
    }
    Ok(args
        .far_share
        .iter()
        .map(|&share| crate::report::far::split_text(near, far, share))
        .collect())
}

fn default_output(kind: &str) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace([':', '-'], "")
        .replace('T', "-")
        .trim_end_matches('Z')
        .to_string();
    // The process id keeps two sweeps started in the same second apart.
    PathBuf::from(format!("membw-{kind}-{stamp}-{}.jsonl", std::process::id()))
}

/// `--exec` entries as typed programs: `membw` for membw's own kernels,
/// else `LABEL=PROGRAM ARGS`, each label once, each program runnable.
fn programs(entries: &[String]) -> Result<Vec<sweep::Program>> {
    let mut out: Vec<sweep::Program> = Vec::new();
    for entry in entries {
        if entry.trim() == "membw" {
            out.push(sweep::Program::Membw);
            continue;
        }
        let (label, command) = entry
            .split_once('=')
            .map(|(l, c)| (l.trim(), c.trim()))
            .filter(|(l, c)| !l.is_empty() && !c.is_empty())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--exec '{entry}': expected LABEL=PROGRAM ARGS (or membw for membw's kernels)"
                ))
            })?;
        if out.iter().any(|p| p.label() == Some(label)) {
            return Err(Error::Usage(format!(
                "--exec: the label '{label}' is used twice"
            )));
        }
        let argv: Vec<String> = command.split_whitespace().map(str::to_string).collect();
        super::common::check_program(&argv[0])?;
        out.push(sweep::Program::Other {
            label: label.to_string(),
            argv,
        });
    }
    Ok(out)
}

pub(crate) fn sweep(mut args: SweepArgs) -> Result<()> {
    (args.sysroot).only_for_planning(args.dry_run.dry_run, "add --dry-run")?;
    if args.dry_run.dry_run && args.resume.resume.is_some() {
        return Err(Error::Usage(
            "--dry-run: a resumed study measures what its file lacks; plan a new one without --resume".into(),
        ));
    }
    if args.timeout.given() && args.exec.is_empty() {
        return Err(Error::Usage(
            "--timeout: only programs given with --exec are killed after a time".into(),
        ));
    }
    let defaults = SweepArgs::defaults()?;
    // `--resume FILE` alone continues the file's study as it was stored.
    let plain_resume = args.resume.resume.is_some() && args.study()? == defaults.study()?;
    let vars = super::env::Vars::from_process();
    if args.numa_matrix.is_some() || plain_resume {
        super::env::note_unused(&vars, "sweep");
    } else if let Some(line) = args.placement.take_environment(&vars)? {
        crate::say!("{line}");
    }
    let args = match args.resume.resume.clone() {
        Some(path) => resume::resumed(&path, args, &defaults)?,
        None => args,
    };
    sweep_study(args)
}

impl SweepArgs {
    /// A sweep with no flag given: what `--resume FILE` alone looks like.
    fn defaults() -> Result<SweepArgs> {
        match <super::Cli as clap::Parser>::try_parse_from(["membw", "sweep"]) {
            Ok(super::Cli {
                command: super::Command::Sweep(args),
                ..
            }) => Ok(args),
            _ => Err(Error::Runtime("membw sweep's defaults do not parse".into())),
        }
    }

    /// `study`'s settings, with where this command puts and shows results.
    pub(crate) fn with_study_of(self, study: SweepArgs) -> SweepArgs {
        SweepArgs {
            output: self.output,
            resume: self.resume,
            form: self.form,
            markdown: self.markdown,
            timeout: self.timeout,
            peak: self.peak,
            ..study
        }
    }
}

/// A sweep, given the arguments it was started with (after `sweep`).
/// The study the flags describe: its axes as values.
fn sweep_spec(args: &SweepArgs, topo: &crate::topology::Topology) -> Result<SweepSpec> {
    let axes = &args.placement;
    let m = &args.measure;
    Ok(SweepSpec {
        threads: axes.thread_counts(topo)?,
        placements: axes.placements()?,
        smt: axes.smt.smt,
        mems: mem_axis(args, topo)?
            .into_iter()
            .map(|text| crate::memory::written::parse_written(&text, topo))
            .collect::<Result<_>>()?,
        stores: m.stores(),
        hugepages: m.page_sizes(),
        isas: m.isas(),
        offsets: m.offset.each(),
        gpu_memories: m.gpu_memory.each(),
        sizes: super::values::WorkingSets::joined(&args.sizes.sizes)?,
        cpu_nodes: axes.cpunode.nodes()?,
        numa_matrix: args.numa_matrix.numa_matrix.map(|m| match m {
            NumaCells::Single => NumaMode::Single,
            NumaCells::All => NumaMode::All,
            NumaCells::Both => NumaMode::Both,
        }),
        measure: m.measure(args.kernels.or(super::flags::Kernels::STREAM)),
    })
}

/// The results file: the one to resume, or a new one.
fn results_file(args: &SweepArgs) -> Result<ResultsFile> {
    Ok(match &args.resume.resume {
        Some(path) => {
            let (file, torn) = ResultsFile::resume(path).map_err(|e| file_error(e, "--resume"))?;
            if let Some(line) = torn {
                crate::say!(
                    "membw: {}: dropped line {line}, cut short by an earlier crash or full disk; its point runs again",
                    path.display()
                );
            }
            file
        }
        None => {
            let path = (args.output.output)
                .clone()
                .unwrap_or_else(|| default_output("sweep"));
            ResultsFile::create(&path).map_err(|e| file_error(e, "--output"))?
        }
    })
}

/// The NUMA matrix and the tier study are of CPUs and their nodes: a
/// device backend's target has none.
fn refuse_device_studies(
    args: &SweepArgs,
    source: &dyn crate::engine::Source,
    topo: &crate::topology::Topology,
    spec: &SweepSpec,
) -> Result<()> {
    let what = match (args.numa_matrix.numa_matrix, args.far_share.is_empty()) {
        (Some(_), _) => "--numa-matrix",
        (None, false) => "--far-share",
        (None, true) => return Ok(()),
    };
    super::flags::refuse_device(source, topo, &spec.measure, what)
}

fn sweep_study(args: SweepArgs) -> Result<()> {
    let study = args.study()?.stored();
    let format = args.form.format;
    let (topo, _weights) = super::common::with_weights(
        args.measure.weights.weights.as_deref(),
        read_topology(args.sysroot.dir())?,
    )?;
    // Refuses to be one of several uncoordinated ranks.
    args.measure.launch("sweep")?;
    let m = &args.measure;
    let spec = sweep_spec(&args, &topo)?;
    let mut source = m.source()?;
    refuse_device_studies(&args, source.as_ref(), &topo, &spec)?;
    let base = sweep::expand(&topo, &spec, &|s| source.prepare(&topo, s))?;
    if args.dry_run.dry_run {
        let jobs: Vec<&crate::engine::Job> = base.iter().collect();
        return super::common::print_plan("sweep", &topo, args.sysroot.dir(), &jobs);
    }
    let keep = super::env::Vars::from_process()
        .0
        .iter()
        .map(|(k, _)| k.to_string())
        .collect();
    let (jobs, programs) = sweep::with_programs(
        base,
        programs(&args.exec)?,
        args.timeout.or_default(),
        &keep,
    );
    let file = results_file(&args)?;
    let path = file.path.clone();
    let mut session =
        BandwidthSession::new("sweep", Host::describe(&topo), stop_flag(), Some(file));
    session.study = Some(study);
    let repeat = args.repeat.or(super::flags::Repeat::DEFAULT) as usize;
    let already = jobs.iter().filter(|j| session.has(&j.point)).count();
    let todo = jobs.len() - already;
    let there = (already > 0).then(|| format!(" ({} already there)", plural(already, "point")));
    crate::say!(
        "membw: sweep of {} × {} → {}{}",
        plural(jobs.len(), "point"),
        plural(repeat, "run"),
        path.display(),
        there.unwrap_or_default()
    );
    let mut engine = Engine::new(
        &topo,
        source.as_mut(),
        // None where the node's figure is not these CPUs' (a VM's slice):
        // the records then say why (`peak_unknown`).
        peak::for_cpus_used(&topo, &args.peak.request()).unwrap_or(None),
    )
    .with_programs(programs);
    let bar = progress((todo * repeat) as u64);
    let outcome = engine.run(&jobs, repeat, &mut session, &mut |job, r| {
        bar.set_message(run_message(job, r));
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    // The whole file, the points of earlier runs into it included.
    let records = crate::results::file::read(&path)
        .map_err(super::common::input_file_error)?
        .records;
    if let Some(kernel) = study::primary_kernel(&records) {
        let doc = crate::report::view::View::Summary {
            records: &records,
            kernel,
        };
        print(super::common::render_as(format, &doc)?)?;
    }
    crate::say!(
        "membw: {} written, {} skipped (already done){}",
        plural(outcome.written, "point"),
        outcome.skipped,
        engine.overhead_share().map_or(String::new(), |share| format!(
            "; time outside timed repetitions: {:.0} % (mapping, first touch, validation, thread start)",
            share * 100.0
        ))
    );
    if let Some(line) = super::common::trust_summary(&session.records) {
        crate::say!("membw: {line}");
    }
    let shown = path.display();
    crate::say!(
        "membw: results in {shown}; plots and HTML with: membw report {shown} --html report.html"
    );
    if let Some(signal) = session.signal() {
        return Err(Error::Interrupted {
            signal,
            message: format!(
                "stopped by {}; the {} completed points are in {}; continue with: membw sweep --resume {}",
                signal_name(signal),
                records.len(),
                path.display(),
                path.display()
            ),
        });
    }
    Ok(())
}
