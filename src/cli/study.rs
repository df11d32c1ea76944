//! The experiment commands: `sweep`, `tune`, `report`, `compare`.

use super::{HugepagesArg, IsaArg, PeakArgs, StoresArg, parse_bind, parse_kernel, spell};
use crate::error::{Error, Result};
use crate::experiments::sweep::{self, NumaMode, SweepSpec};
use crate::experiments::{self, Record, RunResult, tune};
use crate::kernels::KernelId;
use crate::memory::policy::MemPolicy;
use crate::peak;
use crate::placement::{Spec, omp::Bind};
use crate::plan::StoresRequest;
use crate::report::{plot, study};
use crate::topology::Topology;
use crate::units::{ArraySize, parse_array_size};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

    /// Memory policies, one per flag or separated by ';': --mem local --mem bind:1
    #[arg(long, help_heading = "Axes")]
    mem: Vec<String>,

    /// Every CPU node × memory node pair: one thread, all cores of the node, or both
    #[arg(long, num_args = 0..=1, default_missing_value = "single", value_enum, help_heading = "Axes")]
    numa_matrix: Option<NumaArg>,

    /// Working sets per thread (all arrays): 16KiB..4GiB (powers of two) or 1MiB,64MiB
    #[arg(long, value_parser = parse_sizes, help_heading = "Axes")]
    sizes: Option<Sizes>,

    /// Store modes, comma-separated: auto, regular, nt
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "auto",
        help_heading = "Axes"
    )]
    stores: Vec<StoresArg>,

    /// Kernels to run at every point
    #[arg(long, value_delimiter = ',', value_parser = parse_kernel, default_value = "copy,scale,add,triad")]
    kernels: Vec<KernelId>,

    /// Elements or bytes per array when there is no --sizes axis [default: STREAM's rule for all allowed CPUs]
    #[arg(long, value_parser = parse_array_size)]
    size: Option<ArraySize>,

    /// Repetitions of each kernel per run (the first is not counted)
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..))]
    ntimes: u32,

    /// Independent runs per point (fresh arrays), for mean ± sd
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,

    /// Results file (JSON Lines) [default: membw-sweep-<time>.jsonl]
    #[arg(long, short, conflicts_with = "resume")]
    output: Option<PathBuf>,

    /// Continue a sweep: skip points already in FILE, append the rest to it
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,

    #[arg(long, value_enum, default_value_t = IsaArg::Auto)]
    isa: IsaArg,

    #[arg(long, value_enum, default_value_t = HugepagesArg::Auto)]
    hugepages: HugepagesArg,

    /// Print the summary table as Markdown
    #[arg(long)]
    markdown: bool,

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
    PathBuf::from(format!("membw-{kind}-{stamp}.jsonl"))
}

/// Ctrl-C sets the flag; work stops after the current repetition.
fn stop_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    // Fails only if a handler is already set (a second experiment in-process).
    let _ = ctrlc::set_handler(move || f.store(true, Ordering::Relaxed));
    flag
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

fn run_message(job: &sweep::Job, r: &RunResult) -> String {
    let (k, v) = r
        .best_gb_s
        .get_key_value(&KernelId::Triad)
        .or_else(|| r.best_gb_s.iter().next())
        .map_or(("-".to_string(), 0.0), |(k, v)| (k.to_string(), *v));
    format!("{} → {k} {v:.1} GB/s", job.label)
}

fn open_results(
    output: Option<&PathBuf>,
    resume: Option<&PathBuf>,
    kind: &str,
) -> Result<(PathBuf, std::fs::File, HashSet<String>)> {
    if let Some(path) = resume {
        let done: HashSet<String> = experiments::read_records(path)?
            .iter()
            .map(|r| r.point.key())
            .collect();
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::Usage(format!("--resume {}: {e}", path.display())))?;
        return Ok((path.clone(), file, done));
    }
    let path = output.cloned().unwrap_or_else(|| default_output(kind));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| {
            Error::Usage(format!(
                "--output {}: {e}{}",
                path.display(),
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    " (continue it with --resume)"
                } else {
                    ""
                }
            ))
        })?;
    Ok((path, file, HashSet::new()))
}

pub(crate) fn sweep(args: SweepArgs) -> Result<()> {
    let topo = Topology::live().map_err(Error::Runtime)?;
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
        placements.push(("spread".into(), Spec::Strategy("spread".into())));
    }
    let mut mems: Vec<String> = args
        .mem
        .iter()
        .flat_map(|m| m.split(';'))
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    if mems.is_empty() {
        mems.push("local".into());
    }
    let threads = match &args.threads {
        Some(t) => sweep::parse_threads(t, &topo).map_err(Error::Usage)?,
        None => vec![None],
    };
    let mut stores: Vec<StoresRequest> = args.stores.iter().map(|s| s.request()).collect();
    stores.dedup();
    let spec = SweepSpec {
        threads,
        placements,
        smt: args.smt,
        mems,
        stores,
        sizes: args.sizes.clone().map(|s| s.0).unwrap_or_default(),
        elements: args.size.map(ArraySize::elements),
        numa_matrix: args.numa_matrix.map(|m| match m {
            NumaArg::Single => NumaMode::Single,
            NumaArg::All => NumaMode::All,
            NumaArg::Both => NumaMode::Both,
        }),
        kernels: args.kernels.clone(),
        ntimes: args.ntimes as usize,
        isa: args.isa.isa(),
        hugepages: args.hugepages.hugepages(),
    };
    let jobs = sweep::expand(&topo, &spec)?;
    let peak = peak::estimate(&topo, &args.peak.request())?;
    let (path, mut file, done) = open_results(args.output.as_ref(), args.resume.as_ref(), "sweep")?;
    let repeat = args.repeat as usize;
    let todo = jobs
        .iter()
        .filter(|j| !done.contains(&j.point.key()))
        .count();
    let already = jobs.len() - todo;
    eprintln!(
        "membw: sweep of {} points × {repeat} runs → {}{}",
        jobs.len(),
        path.display(),
        if already > 0 {
            format!(" ({already} points already there)")
        } else {
            String::new()
        }
    );
    let stop = stop_flag();
    let bar = progress((todo * repeat) as u64);
    let outcome = sweep::run(
        &topo,
        "sweep",
        &jobs,
        repeat,
        &mut file,
        &done,
        peak.as_ref(),
        &stop,
        |job, r| {
            bar.set_message(run_message(job, r));
            bar.inc(1);
        },
    )?;
    bar.finish_and_clear();
    let records = experiments::read_records(&path)?;
    if let Some(kernel) = study::primary_kernel(&records) {
        print!("{}", study::summary(&records, kernel, args.markdown));
    }
    eprintln!(
        "membw: {} points written, {} skipped (already done); time outside timed repetitions: {:.0} % (mapping, first touch, validation, thread start)",
        outcome.written,
        outcome.skipped,
        outcome.overhead_share * 100.0
    );
    eprintln!(
        "membw: results in {}; plots and HTML with: membw report {} --html report.html",
        path.display(),
        path.display()
    );
    if outcome.interrupted {
        return Err(Error::Interrupted(format!(
            "interrupted; the {} completed points are in {}; continue with: membw sweep ... --resume {}",
            records.len(),
            path.display(),
            path.display()
        )));
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

    /// Elements or bytes per array [default: STREAM's rule for all allowed CPUs]
    #[arg(long, value_parser = parse_array_size)]
    size: Option<ArraySize>,

    /// Repetitions of the kernel per run
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..))]
    ntimes: u32,

    /// Runs per candidate (fresh arrays); the mean of their best rates ranks it
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,

    /// Also write every candidate's record to FILE (JSON Lines, for membw report)
    #[arg(long, short)]
    output: Option<PathBuf>,

    #[command(flatten)]
    peak: PeakArgs,
}

pub(crate) fn tune(args: TuneArgs) -> Result<()> {
    let topo = Topology::live().map_err(Error::Runtime)?;
    let elements = args
        .size
        .map(ArraySize::elements)
        .unwrap_or_else(|| crate::memory::default_elements(&topo, topo.allowed_cpus.ids()));
    let jobs = tune::jobs(&topo, args.kernel, elements, args.ntimes as usize);
    let peak = peak::estimate(&topo, &args.peak.request())?;
    let (path, mut file) = match &args.output {
        Some(p) => {
            let (path, file, _) = open_results(Some(p), None, "tune")?;
            (Some(path), Some(file))
        }
        None => (None, None),
    };
    // Records go to a scratch file when no output was asked for.
    let scratch = tempfile_in_target()?;
    let mut sink = match file.take() {
        Some(f) => f,
        None => scratch.1,
    };
    let results_path = path.clone().unwrap_or(scratch.0.clone());
    let stop = stop_flag();
    let start = std::time::Instant::now();
    let bar = progress(jobs.len() as u64 * args.repeat as u64);
    let mut tried = 0;
    let mut per_job = Duration::ZERO;
    for (job, _) in &jobs {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        // Stop before a candidate that would overrun the budget (the first always runs).
        if tried > 0 && start.elapsed() + per_job > args.budget {
            break;
        }
        let t0 = std::time::Instant::now();
        let one = std::slice::from_ref(job);
        sweep::run(
            &topo,
            "tune",
            one,
            args.repeat as usize,
            &mut sink,
            &HashSet::new(),
            peak.as_ref(),
            &stop,
            |j, r| {
                bar.set_message(run_message(j, r));
                bar.inc(1);
            },
        )?;
        per_job = per_job.max(t0.elapsed());
        tried += 1;
    }
    bar.finish_and_clear();
    let records = experiments::read_records(&results_path)?;
    let _ = std::fs::remove_file(&scratch.0);
    let ranked = tune::ranking(&records, args.kernel);
    let Some(&(best, best_rate)) = ranked.first() else {
        return Err(Error::Runtime("no candidate completed".into()));
    };
    let name = args.kernel.spec().name;
    println!(
        "Candidates tried: {tried} of {} in {:.0} s (budget {})",
        jobs.len(),
        start.elapsed().as_secs_f64(),
        humantime::format_duration(args.budget)
    );
    let top: Vec<&Record> = ranked.iter().take(12).map(|(r, _)| *r).collect();
    print!("{}", study::table_in_order(&top, args.kernel).plain());
    let baseline = records
        .iter()
        .find(|r| r.point.placement == "spread")
        .and_then(|r| Some(r.stats.get(&args.kernel)?.mean));
    let cpus = &best.runs[0].cpus;
    println!();
    println!(
        "Best sustained {name}: {best_rate:.2} GB/s with {} ({} threads, {} stores)",
        best.point.placement,
        cpus.len(),
        best.runs[0].stores
    );
    match baseline {
        Some(b) if best.point.placement == "spread" => println!(
            "  that is one thread on every core ({b:.2} GB/s): no subset of cores does better here"
        ),
        Some(b) => println!(
            "  {:+.1} % against one thread on every core ({b:.2} GB/s)",
            100.0 * (best_rate / b - 1.0)
        ),
        None => {}
    }
    match best.peak_gb_s {
        Some(p) => println!(
            "  {:.1} % of the theoretical peak of the sockets used ({p:.1} GB/s)",
            100.0 * best_rate / p
        ),
        None => println!("  theoretical peak unknown (give --peak or --channels/--mts)"),
    }
    let s = spell(cpus, &MemPolicy::default());
    let mpirun_map = jobs
        .iter()
        .find(|(j, _)| j.point.key() == best.point.key())
        .and_then(|(_, m)| m.clone());
    println!("\nReproduce it in your application:");
    println!("  {}", s.openmp);
    println!("  {}", s.likwid_pin);
    println!("  {}", s.numactl);
    println!("  {}", s.srun);
    match mpirun_map {
        Some(map) => println!("  mpirun -np {} {map} --bind-to core", cpus.len()),
        None => println!("  {}", s.mpirun),
    }
    if let Some(p) = path {
        eprintln!("membw: every candidate is in {}", p.display());
    }
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Interrupted(
            "interrupted; the best so far is shown above".into(),
        ));
    }
    Ok(())
}

/// A scratch results file for `tune` without `--output`.
fn tempfile_in_target() -> Result<(PathBuf, std::fs::File)> {
    let path = std::env::temp_dir().join(format!("membw-tune-{}.jsonl", std::process::id()));
    let file = std::fs::File::create(&path)
        .map_err(|e| Error::Runtime(format!("{}: {e}", path.display())))?;
    Ok((path, file))
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Results file written by membw sweep or tune (JSON Lines)
    results: PathBuf,

    /// Kernel to tabulate and plot [default: triad when measured]
    #[arg(long, value_parser = parse_kernel)]
    kernel: Option<KernelId>,

    /// Directory for the SVG plots [default: <RESULTS>-plots]
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,

    /// Write one self-contained HTML report (inline SVG, nothing fetched)
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Print a Markdown report (tables and links to the SVG plots) instead of plain tables
    #[arg(long)]
    markdown: bool,
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))
}

pub(crate) fn report(args: ReportArgs) -> Result<()> {
    let records = experiments::read_records(&args.results)?;
    if records.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no records",
            args.results.display()
        )));
    }
    let kernel = match args.kernel {
        Some(k) => k,
        None => study::primary_kernel(&records)
            .ok_or_else(|| Error::Usage("no kernel results in the file".into()))?,
    };
    if !records.iter().any(|r| r.stats.contains_key(&kernel)) {
        return Err(Error::Usage(format!(
            "--kernel {kernel}: not measured in {}",
            args.results.display()
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
    let dir = args.plots.clone().unwrap_or_else(|| {
        let stem = args
            .results
            .file_stem()
            .map_or("membw".into(), |s| s.to_string_lossy().into_owned());
        args.results.with_file_name(format!("{stem}-plots"))
    });
    if !plots.is_empty() {
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::Usage(format!("{}: {e}", dir.display())))?;
        for (_, file, svg) in &plots {
            write_file(&dir.join(file), svg)?;
        }
    }
    if args.markdown {
        let links: Vec<(String, String)> = plots
            .iter()
            .map(|(t, f, _)| (t.clone(), dir.join(f).to_string_lossy().into_owned()))
            .collect();
        print!("{}", study::markdown(&records, kernel, &links));
    } else {
        print!("{}", study::summary(&records, kernel, false));
    }
    if !plots.is_empty() {
        eprintln!("membw: {} plots in {}", plots.len(), dir.display());
    }
    if let Some(html) = &args.html {
        let inline: Vec<(String, String)> = plots
            .iter()
            .map(|(t, _, s)| (t.clone(), s.clone()))
            .collect();
        write_file(html, &study::html(&records, kernel, &inline))?;
        eprintln!("membw: report in {}", html.display());
    }
    Ok(())
}

#[derive(Args, Debug)]
pub(crate) struct CompareArgs {
    /// Results file A (before, or node A)
    a: PathBuf,
    /// Results file B (after, or node B)
    b: PathBuf,
    #[arg(long, value_parser = parse_kernel)]
    kernel: Option<KernelId>,
    #[arg(long)]
    markdown: bool,
}

pub(crate) fn compare(args: CompareArgs) -> Result<()> {
    let a = experiments::read_records(&args.a)?;
    let b = experiments::read_records(&args.b)?;
    let both: Vec<Record> = a.iter().chain(&b).cloned().collect();
    let kernel = match args.kernel {
        Some(k) => k,
        None => study::primary_kernel(&both)
            .ok_or_else(|| Error::Usage("no kernel results in either file".into()))?,
    };
    print!("{}", study::compare(&a, &b, kernel, args.markdown));
    Ok(())
}
