//! The experiment commands: `sweep`, `tune`, `report`, `compare`.

use super::args::{KernelList, MeasureArgs, PeakArgs, parse_bind, parse_kernel, parse_kernel_list};
use super::common::{file_error, print, read_document, read_topology, signal_name, stop_flag};
use crate::engine::sweep::{self, NumaMode, SweepSpec};
use crate::engine::tune::{self, TuneSpec};
use crate::engine::{Collect, Engine, Job};
use crate::error::{Error, Result};
use crate::kernels::KernelId;
use crate::memory::policy as mempolicy;
use crate::peak;
use crate::placement::{Spec, omp::Bind};
use crate::report::{self, plot, study};
use crate::results::file::ResultsFile;
use crate::results::read::Document;
use crate::results::{Record, RunReport, RunResult};
use crate::units::plural;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumaArg {
    Single,
    All,
    Both,
}

#[derive(Args, Debug)]
pub(crate) struct SweepArgs {
    /// Thread counts: 1-12, 1,2,4,8,16, 2-16:2, or cores (1 to all) [default: one per core]
    #[arg(long, help_heading = "Axes")]
    threads: Option<String>,

    /// Strategies, comma-separated: compact,spread,per-l3=1,per-numa=2,stride=2
    #[arg(long, help_heading = "Axes")]
    strategy: Option<String>,

    /// OpenMP places, one per flag (repeat for several)
    #[arg(long, help_heading = "Axes")]
    places: Vec<String>,

    /// OMP_PROC_BIND for every --places
    #[arg(long, requires = "places", value_parser = parse_bind, help_heading = "Axes")]
    bind: Option<Bind>,

    /// likwid-pin expressions, one per flag (repeat for several)
    #[arg(long, help_heading = "Axes")]
    pin: Vec<String>,

    /// Allow more than one thread per core
    #[arg(long, help_heading = "Axes")]
    smt: bool,

    /// Every CPU node × memory node pair: one thread, all cores of the node, or both
    #[arg(long, num_args = 0..=1, default_missing_value = "single", value_enum, help_heading = "Axes",
          conflicts_with_all = ["threads", "strategy", "places", "pin", "sizes"])]
    numa_matrix: Option<NumaArg>,

    /// Working sets per thread (all arrays): 16KiB..4GiB (powers of two) or 1MiB,64MiB
    #[arg(long, value_parser = parse_sizes, help_heading = "Axes")]
    sizes: Option<Sizes>,

    /// Programs to measure at every point, one per flag: 'gcc=./stream-gcc' 'clang=./stream-clang 80000000';
    /// `membw` stands for membw's own kernels (arguments split at spaces)
    #[arg(
        long,
        value_name = "LABEL=PROGRAM ARGS",
        conflicts_with = "sizes",
        help_heading = "Axes"
    )]
    exec: Vec<String>,

    /// Kill a --exec program and everything it started after this long
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration, requires = "exec")]
    timeout: Duration,

    /// Kernels to run, comma-separated (each repetition runs them in this order): copy, scale,
    /// add, triad, read, write, init, update, daxpy, striad, sdaxpy, nstream, dot; or a group:
    /// stream (the first four), tbb (TheBandwidthBenchmark's), babelstream, all
    #[arg(long, value_parser = parse_kernel_list, default_value = "stream")]
    kernels: KernelList,

    /// Independent runs per point (fresh arrays), for mean ± sd
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,

    /// Results file (JSON Lines) [default: membw-sweep-<time>-<pid>.jsonl]
    #[arg(long, short, conflicts_with = "resume")]
    output: Option<PathBuf>,

    /// Continue a sweep: skip points already in FILE, append the rest to it
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,

    /// Print the summary table as Markdown
    #[arg(long)]
    markdown: bool,

    #[command(flatten)]
    measure: MeasureArgs,

    #[command(flatten)]
    peak: PeakArgs,
}

/// `--sizes` as one value (clap would read `Vec<u64>` as many flags).
#[derive(Debug, Clone)]
pub(crate) struct Sizes(Vec<u64>);

fn parse_sizes(text: &str) -> std::result::Result<Sizes, String> {
    sweep::parse_sizes(text).map(Sizes)
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

fn progress(total: u64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:28.cyan/blue}] {pos}/{len} runs · ETA {eta} · {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

fn run_message(job: &Job, r: &RunResult) -> String {
    let (k, v) = r
        .best_gb_s
        .get_key_value(&KernelId::Triad)
        .or_else(|| r.best_gb_s.iter().next())
        .map_or(("-".to_string(), 0.0), |(k, v)| (k.to_string(), *v));
    format!("{} → {k} {v:.1} GB/s", job.label)
}

/// The sweep's jobs for every `--exec` entry: membw's own (`membw`) as
/// expanded, each program at every placement and policy point.
#[allow(clippy::type_complexity)]
fn with_programs(
    base: Vec<Job>,
    entries: &[String],
    timeout: Duration,
) -> Result<(Vec<Job>, Vec<(String, Box<dyn crate::engine::Source>)>)> {
    if entries.is_empty() {
        return Ok((base, Vec::new()));
    }
    let keep: std::collections::BTreeSet<String> = super::env::Vars::from_process()
        .0
        .iter()
        .map(|(k, _)| k.to_string())
        .collect();
    let mut jobs = Vec::new();
    let mut programs: Vec<(String, Box<dyn crate::engine::Source>)> = Vec::new();
    for entry in entries {
        if entry.trim() == "membw" {
            jobs.extend(base.iter().map(|j| Job {
                point: j.point.clone(),
                plan: j.plan.clone(),
                label: j.label.clone(),
            }));
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
        if programs.iter().any(|(l, _)| l == label) {
            return Err(Error::Usage(format!(
                "--exec: the label '{label}' is used twice"
            )));
        }
        let argv: Vec<String> = command.split_whitespace().map(str::to_string).collect();
        super::exec::check_program(&argv[0])?;
        let mut seen = std::collections::HashSet::new();
        for j in &base {
            let mut point = j.point.clone();
            point.program = Some(label.to_string());
            point.elements = 0;
            point.ntimes = 0;
            point.working_set_per_thread = 0;
            point.stores = crate::plan::StoresRequest::Auto;
            if seen.insert(point.key()) {
                jobs.push(Job {
                    label: format!("{label} · {}", point.label()),
                    point,
                    plan: j.plan.clone(),
                });
            }
        }
        programs.push((
            label.to_string(),
            Box::new(crate::engine::exec::ExecSource {
                argv,
                timeout,
                keep: keep.clone(),
            }),
        ));
    }
    Ok((jobs, programs))
}

pub(crate) fn sweep(args: SweepArgs) -> Result<()> {
    let topo = read_topology(None)?;
    // Refuses to be one of several uncoordinated ranks.
    args.measure.launch("sweep")?;
    super::env::note_unused(&super::env::Vars::from_process(), "sweep");
    let mut placements: Vec<(String, Spec)> = Vec::new();
    if let Some(list) = &args.strategy {
        for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            placements.push((s.to_string(), Spec::Strategy(s.to_string())));
        }
    }
    let bind = args.bind.unwrap_or(Bind::Close);
    for p in &args.places {
        placements.push((
            format!("places {p} {bind}"),
            Spec::Places {
                places: p.clone(),
                bind,
            },
        ));
    }
    for e in &args.pin {
        placements.push((format!("pin {e}"), Spec::Likwid(e.clone())));
    }
    if placements.is_empty() {
        // membw's default placement: its faults name the thread count, not a strategy.
        placements.push(("spread".into(), Spec::Default));
    }
    let threads = match &args.threads {
        Some(t) => sweep::parse_threads(t, &topo)?,
        None => vec![None],
    };
    let m = &args.measure;
    let spec = SweepSpec {
        threads,
        placements,
        smt: args.smt,
        mems: m.mems(),
        stores: m.stores(),
        sizes: args.sizes.clone().map(|s| s.0).unwrap_or_default(),
        numa_matrix: args.numa_matrix.map(|m| match m {
            NumaArg::Single => NumaMode::Single,
            NumaArg::All => NumaMode::All,
            NumaArg::Both => NumaMode::Both,
        }),
        measure: m.measure(args.kernels.0.clone()),
    };
    let base = sweep::expand(&topo, &spec)?;
    let (jobs, programs) = with_programs(base, &args.exec, args.timeout)?;
    let mut source = m.source()?;
    let mut file = match &args.resume {
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
            let path = args
                .output
                .clone()
                .unwrap_or_else(|| default_output("sweep"));
            ResultsFile::create(&path).map_err(|e| file_error(e, "--output"))?
        }
    };
    let done = std::mem::take(&mut file.done);
    let repeat = args.repeat as usize;
    let todo = jobs
        .iter()
        .filter(|j| !done.contains(&j.point.key()))
        .count();
    let already = jobs.len() - todo;
    let path = file.path.clone();
    crate::say!(
        "membw: sweep of {} × {} → {}{}",
        plural(jobs.len(), "point"),
        plural(repeat, "run"),
        path.display(),
        if already > 0 {
            format!(" ({already} points already there)")
        } else {
            String::new()
        }
    );
    let mut engine = Engine::new(
        &topo,
        source.as_mut(),
        "sweep",
        peak::estimate(&topo, &args.peak.request()),
        stop_flag(),
    )
    .with_programs(programs);
    let bar = progress((todo * repeat) as u64);
    let outcome = engine.run(&jobs, repeat, &done, &mut file, &mut |job, r| {
        bar.set_message(run_message(job, r));
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    // The whole file, the points of earlier runs into it included.
    let records = crate::results::file::read(&path)
        .map_err(super::common::input_file_error)?
        .records;
    if let Some(kernel) = study::primary_kernel(&records) {
        print(&study::summary(&records, kernel, args.markdown))?;
    }
    crate::say!(
        "membw: {} points written, {} skipped (already done){}",
        outcome.written,
        outcome.skipped,
        engine.overhead_share().map_or(String::new(), |share| format!(
            "; time outside timed repetitions: {:.0} % (mapping, first touch, validation, thread start)",
            share * 100.0
        ))
    );
    crate::say!(
        "membw: results in {}; plots and HTML with: membw report {} --html report.html",
        path.display(),
        path.display()
    );
    if let Some(signal) = engine.stop_signal() {
        return Err(Error::Interrupted {
            signal,
            message: format!(
                "stopped by {}; the {} completed points are in {}; continue with: membw sweep ... --resume {}",
                signal_name(signal),
                records.len(),
                path.display(),
                path.display()
            ),
        });
    }
    Ok(())
}

#[derive(Args, Debug)]
pub(crate) struct TuneArgs {
    /// Time to spend searching (30s, 2m, 1h)
    #[arg(long, default_value = "2m", value_parser = humantime::parse_duration)]
    budget: Duration,

    /// Kernel to maximize
    #[arg(long, default_value = "triad", value_parser = parse_kernel)]
    kernel: KernelId,

    /// Runs per candidate (fresh arrays); the mean of their best rates ranks it
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,

    /// Also write every candidate's record to FILE (JSON Lines, for membw report)
    #[arg(long, short)]
    output: Option<PathBuf>,

    #[command(flatten)]
    measure: MeasureArgs,

    #[command(flatten)]
    peak: PeakArgs,
}

pub(crate) fn tune(args: TuneArgs) -> Result<()> {
    let topo = read_topology(None)?;
    args.measure.launch("tune")?;
    super::env::note_unused(&super::env::Vars::from_process(), "tune");
    let m = &args.measure;
    let mem_text = m.one_mem("tune")?;
    let mem = mempolicy::parse(&mem_text, &topo)?;
    let mut measure = m.measure(vec![args.kernel]);
    // One array size for every candidate: STREAM's rule for all allowed CPUs.
    measure.elements = measure.elements.or_else(|| {
        Some(crate::memory::default_elements(
            &topo,
            topo.allowed_cpus.ids(),
        ))
    });
    let spec = TuneSpec {
        kernel: args.kernel,
        measure,
        mem: (mem_text, mem),
        stores: m.stores(),
    };
    let trials = tune::trials(&topo, &spec)?;
    let mut source = m.source()?;
    let file = args
        .output
        .as_ref()
        .map(|p| ResultsFile::create(p).map_err(|e| file_error(e, "--output")))
        .transpose()?;
    let mut engine = Engine::new(
        &topo,
        source.as_mut(),
        "tune",
        peak::estimate(&topo, &args.peak.request()),
        stop_flag(),
    );
    let bar = progress(trials.len() as u64 * args.repeat as u64);
    let searched = tune::search(
        &mut engine,
        &trials,
        args.repeat as usize,
        args.budget,
        Collect {
            records: Vec::new(),
            file,
        },
        &mut |job, r| {
            bar.set_message(run_message(job, r));
            bar.inc(1);
        },
    )?;
    bar.finish_and_clear();
    let ranked = tune::ranking(&searched.records, args.kernel);
    let Some(&(best, _)) = ranked.first() else {
        return Err(Error::Runtime("no candidate completed".into()));
    };
    // One thread on every core: the widest plain `spread` candidate.
    let baseline = searched
        .records
        .iter()
        .filter(|r| r.point.placement == "spread")
        .max_by(|a, b| {
            (a.point.threads, a.mean(args.kernel).unwrap_or(0.0))
                .partial_cmp(&(b.point.threads, b.mean(args.kernel).unwrap_or(0.0)))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    let mpi_map = trials
        .iter()
        .find(|t| t.job.point == best.point)
        .and_then(|t| t.mpi_map.as_deref());
    print(&report::tune::text(&report::tune::TuneView {
        kernel: args.kernel,
        ranked: &ranked,
        tried: searched.tried,
        candidates: trials.len(),
        elapsed: searched.elapsed,
        budget: args.budget,
        baseline,
        mpi_map,
    }))?;
    if let Some(p) = &args.output {
        crate::say!("membw: every candidate is in {}", p.display());
    }
    if let Some(signal) = engine.stop_signal() {
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

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Results file written by membw sweep or tune (JSON Lines), or one or more `membw run --json` documents: per-node files to merge, or MPI runs
    #[arg(num_args = 1.., required = true, value_name = "RESULTS")]
    inputs: Vec<PathBuf>,

    /// Per-node files and MPI runs: flag nodes below this share of the median node
    #[arg(long, default_value_t = crate::ranks::DEFAULT_OUTLIER, value_parser = super::parse_share)]
    outlier: f64,

    /// Kernel to tabulate and plot [default: triad when measured]
    #[arg(long, value_parser = parse_kernel)]
    kernel: Option<KernelId>,

    /// Directory for the SVG plots [default: next to the results, named after them: study.jsonl → study-plots]
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,

    /// Write one self-contained HTML report (inline SVG, nothing fetched)
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Also write each plot as PNG (twice the SVG's size, for slides and papers)
    #[arg(long)]
    png: bool,

    /// Print a Markdown report (tables and links to the SVG plots) instead of plain tables
    #[arg(long)]
    markdown: bool,
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))
}

/// The plots folder beside a results file: `sweep.jsonl` → `sweep-plots`.
fn plots_beside(results: &Path) -> PathBuf {
    let stem = results
        .file_stem()
        .map_or("membw".into(), |s| s.to_string_lossy().into_owned());
    results.with_file_name(format!("{stem}-plots"))
}

/// Several files are merged only as run documents, one per node.
fn run_documents(docs: Vec<(PathBuf, Document)>) -> Result<Vec<(PathBuf, RunReport)>> {
    docs.into_iter()
        .map(|(path, doc)| match doc {
            Document::Run(run) => Ok((path, *run)),
            other => Err(Error::Usage(format!(
                "{}: {}, not the JSON of `membw run --json` (several files are merged as one run per node)",
                path.display(),
                other.kind()
            ))),
        })
        .collect()
}

pub(crate) fn report(args: ReportArgs) -> Result<()> {
    let mut docs = Vec::with_capacity(args.inputs.len());
    for path in &args.inputs {
        let doc = read_document(path).map_err(|e| match e {
            Error::Usage(why) if args.inputs.len() > 1 => Error::Usage(format!(
                "{why}, not the JSON of `membw run --json` (several files are merged as one run per node)"
            )),
            other => other,
        })?;
        docs.push((path.clone(), doc));
    }
    let results = args.inputs[0].clone();
    let records = match docs.pop() {
        Some((_, Document::Bandwidth(records))) if docs.is_empty() => records,
        Some((_, Document::Latency(records))) if docs.is_empty() => {
            let dir = args.plots.clone().unwrap_or_else(|| plots_beside(&results));
            return super::latency::report(&records, &dir, args.png, args.markdown);
        }
        Some(last) => {
            docs.push(last);
            let plots = args.plots.clone().unwrap_or_else(|| {
                results
                    .parent()
                    .unwrap_or(Path::new("."))
                    .join("membw-nodes-plots")
            });
            return super::nodes::report(&run_documents(docs)?, args.outlier, &plots, args.png);
        }
        None => return Err(Error::Usage("no file to report on".into())),
    };
    let kernel = match args.kernel {
        Some(k) => k,
        None => study::primary_kernel(&records)
            .ok_or_else(|| Error::Usage("no kernel results in the file".into()))?,
    };
    if !records.iter().any(|r| r.stats.contains_key(&kernel)) {
        return Err(Error::Usage(format!(
            "--kernel {kernel}: not measured in {}",
            results.display()
        )));
    }
    let mut plots: Vec<(String, String, String)> = Vec::new();
    let name = kernel.spec().name;
    if let Some(svg) = plot::threads_plot(&records, kernel) {
        plots.push((
            format!("{name} bandwidth vs threads"),
            format!("{name}-threads.svg"),
            svg,
        ));
    }
    if let Some(svg) = plot::sizes_plot(&records, kernel) {
        plots.push((
            format!("{name} bandwidth vs working set per thread"),
            format!("{name}-sizes.svg"),
            svg,
        ));
    }
    for (i, (title, svg)) in plot::numa_plots(&records, kernel).into_iter().enumerate() {
        plots.push((
            title,
            format!("{name}-numa-{}.svg", if i == 0 { "a" } else { "b" }),
            svg,
        ));
    }
    let dir = args.plots.clone().unwrap_or_else(|| plots_beside(&results));
    if !plots.is_empty() {
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::Usage(format!("{}: {e}", dir.display())))?;
        for (_, file, svg) in &plots {
            write_file(&dir.join(file), svg)?;
            if args.png {
                let png = report::png::render(svg, 2.0)
                    .map_err(|e| Error::Runtime(format!("rendering {file} as PNG: {e}")))?;
                let path = dir.join(file).with_extension("png");
                std::fs::write(&path, png)
                    .map_err(|e| Error::Runtime(format!("{}: {e}", path.display())))?;
            }
        }
    }
    if args.markdown {
        let links: Vec<(String, String)> = plots
            .iter()
            .map(|(t, f, _)| (t.clone(), dir.join(f).to_string_lossy().into_owned()))
            .collect();
        print(&study::markdown(&records, kernel, &links))?;
    } else {
        print(&study::summary(&records, kernel, false))?;
    }
    // Runs across MPI ranks (`mpirun ... membw run -o FILE`): their nodes.
    for record in &records {
        if let Some(ranks) = record.runs.iter().rev().find_map(|r| r.ranks.as_ref()) {
            print(&format!(
                "\n{} ({}):\n{}",
                record.point.label(),
                record.timestamp,
                report::ranks::render(ranks)
            ))?;
        }
    }
    if !plots.is_empty() {
        crate::say!(
            "membw: {} in {}",
            plural(plots.len(), "plot"),
            dir.display()
        );
    }
    if let Some(html) = &args.html {
        let inline: Vec<(String, String)> = plots
            .iter()
            .map(|(t, _, s)| (t.clone(), s.clone()))
            .collect();
        write_file(html, &study::html(&records, kernel, &inline))?;
        crate::say!("membw: report in {}", html.display());
    }
    Ok(())
}

#[derive(Args, Debug)]
pub(crate) struct CompareArgs {
    /// Results file A (before, or node A)
    a: PathBuf,
    /// Results file B (after, or node B)
    b: PathBuf,
    /// Kernel to compare [default: triad when measured]
    #[arg(long, value_parser = parse_kernel)]
    kernel: Option<KernelId>,
    /// Print the table as Markdown
    #[arg(long)]
    markdown: bool,
}

pub(crate) fn compare(args: CompareArgs) -> Result<()> {
    let (a, b) = match (read_document(&args.a)?, read_document(&args.b)?) {
        (Document::Run(a), Document::Run(b)) => {
            return print(&super::nodes::compare(&a, &b, args.markdown));
        }
        (Document::Latency(a), Document::Latency(b)) => {
            return print(&report::latency::compare(&a, &b, args.markdown));
        }
        (Document::Bandwidth(a), Document::Bandwidth(b)) => (a, b),
        (x, y) => {
            return Err(Error::Usage(format!(
                "{} is {} and {} is {}: they cannot be compared",
                args.a.display(),
                x.kind(),
                args.b.display(),
                y.kind()
            )));
        }
    };
    let both: Vec<Record> = a.iter().chain(&b).cloned().collect();
    let kernel = match args.kernel {
        Some(k) => k,
        None => study::primary_kernel(&both)
            .ok_or_else(|| Error::Usage("no kernel results in either file".into()))?,
    };
    print(&study::compare(&a, &b, kernel, args.markdown))
}
