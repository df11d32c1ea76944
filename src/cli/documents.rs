//! `membw report` and `membw compare`: any result document (a results file
//! of either kind, run documents of one or many nodes) read by the one
//! reader, turned into tables, plots, Markdown and HTML.

use super::common::{print, read_document, render_as, write_file, write_plots};
use crate::error::{Error, Result};
use crate::kernels::KernelId;
use crate::report::view::{self, Compared, Format};
use crate::report::{self, study};
use crate::results::read::Document;
use crate::results::{Record, RunReport};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Results files of membw sweep, tune or run -o (JSON Lines; several read as one), or one or more `membw run --json` documents: per-node files to merge, or MPI runs
    #[arg(num_args = 1.., required = true, value_name = "RESULTS")]
    inputs: Vec<PathBuf>,

    #[command(flatten)]
    outlier: super::flags::Outlier,

    #[command(flatten)]
    kernel: super::flags::Kernel,

    /// Directory for the SVG plots [default: next to the results, named after them: study.jsonl → study-plots]
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,

    /// Write one self-contained HTML report (inline SVG, nothing fetched)
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Also write each plot as PNG (twice the SVG's size, for slides and papers)
    #[arg(long)]
    png: bool,

    /// With several results files: a row per point and file, labelled by the file, instead of pooling a point found in several
    #[arg(long)]
    by_file: bool,

    /// Lay the table out with this part of the points down (threads, placement, mem, stores, size, hugepages, isa, offset, program, device, file); with --columns
    #[arg(long, value_name = "PART", value_parser = axis, requires = "columns", help_heading = "Table layout")]
    rows: Option<study::Axis>,

    /// ... and this part across: `--rows threads --columns mem` is threads down, local | remote across
    #[arg(long, value_name = "PART", value_parser = axis, requires = "rows", help_heading = "Table layout")]
    columns: Option<study::Axis>,

    /// Beside each point's figures over its trusted runs, the same over every run, trusted or not
    #[arg(long, conflicts_with = "rows", help_heading = "Table layout")]
    all_runs: bool,

    #[command(flatten)]
    form: super::flags::Form,
    #[command(flatten)]
    json: super::flags::JsonFlag,

    #[command(flatten)]
    markdown: super::flags::MarkdownFlag,
}

/// Whether `--all-runs` widens a table this format prints.
fn all_runs(args: &ReportArgs) -> Result<bool> {
    match args.form.format {
        _ if !args.all_runs => Ok(false),
        Format::Text | Format::Markdown | Format::Html => Ok(true),
        other => Err(Error::Usage(format!(
            "--all-runs widens the table of text, markdown and html, not --format {} (its records keep every run)",
            other.name()
        ))),
    }
}

/// `report` of one bandwidth results file (or several read as one): the
/// table as asked, its plots in `dir`, and each MPI run's nodes.
fn bandwidth_report(
    args: &ReportArgs,
    records: &[Record],
    results: &Path,
    dir: &Path,
) -> Result<()> {
    let kernel = match args.kernel.kernel {
        Some(k) => k,
        None => study::primary_kernel(records)
            .ok_or_else(|| Error::Usage("no kernel results in the file".into()))?,
    };
    if !records.iter().any(|r| r.stats.contains_key(&kernel)) {
        return Err(Error::Usage(format!(
            "--kernel {kernel}: not measured in {}",
            results.display()
        )));
    }
    let pivot = turned(args, records, kernel)?;
    let layout = match &pivot {
        Some(p) => study::Layout::Turned(p),
        None => study::Layout::Long {
            all_runs: all_runs(args)?,
        },
    };
    let plots = report::plot::plots(records, kernel);
    let doc = view::View::Study {
        records,
        kernel,
        plots: &plots,
        dir,
        layout,
    };
    show(args, &doc, dir, &plots)?;
    // Runs across MPI ranks (`mpirun ... membw run -o FILE`): their nodes.
    if matches!(args.form.format, Format::Text | Format::Markdown) {
        for record in records {
            if let Some(ranks) = record.runs.iter().rev().find_map(|r| r.ranks()) {
                print(format!(
                    "\n{} ({}):\n{}",
                    record.point.label(),
                    record.timestamp,
                    report::ranks::render(ranks)
                ))?;
            }
        }
    }
    Ok(())
}

/// The table turned as `--rows` and `--columns` ask, where they do.
fn turned(args: &ReportArgs, records: &[Record], kernel: KernelId) -> Result<Option<study::Pivot>> {
    let (Some(rows), Some(columns)) = (args.rows, args.columns) else {
        return Ok(None);
    };
    if !matches!(
        args.form.format,
        Format::Text | Format::Markdown | Format::Html | Format::Csv
    ) {
        return Err(Error::Usage(format!(
            "--rows and --columns lay out the table of text, markdown, html and csv, not --format {}",
            args.form.format.name()
        )));
    }
    study::pivot(records, kernel, rows, columns)
        .map(Some)
        .map_err(|e| Error::Usage(format!("--rows/--columns: {e}")))
}

/// A table axis from its name.
fn axis(text: &str) -> std::result::Result<study::Axis, String> {
    study::Axis::parse(text).ok_or_else(|| {
        let names: Vec<&str> = study::Axis::ALL.iter().map(|a| a.name()).collect();
        format!("not a part of a point; one of {}", names.join(", "))
    })
}

/// The plots folder beside a results file: `sweep.jsonl` → `sweep-plots`.
fn plots_beside(results: &Path) -> PathBuf {
    let stem = results
        .file_stem()
        .map_or("membw".into(), |s| s.to_string_lossy().into_owned());
    results.with_file_name(format!("{stem}-plots"))
}

/// Several results files of one kind read as one file of them all (a
/// point recorded in two pooled as its runs); run documents stay apart,
/// one per node; kinds are not mixed.
fn merged(mut docs: Vec<(PathBuf, Document)>, by_file: bool) -> Result<Vec<(PathBuf, Document)>> {
    if docs.len() < 2 || docs.iter().all(|(_, d)| matches!(d, Document::Run(_))) {
        return Ok(docs);
    }
    let (first, kind) = (docs[0].0.clone(), docs[0].1.kind());
    if let Some((odd, doc)) = docs.iter().find(|(_, d)| d.kind() != kind) {
        return Err(Error::Usage(format!(
            "{}: {}, but {} is {kind}: report merges files of one kind (results files of \
             sweep, tune and run -o; latency results; or run documents, one per node)",
            odd.display(),
            doc.kind(),
            first.display()
        )));
    }
    let files = docs.len();
    let stem = |p: &Path| p.file_stem().map(|s| s.to_string_lossy().into_owned());
    let doc = match docs.remove(0).1 {
        Document::Bandwidth(mut all) => {
            let label = |records: &mut Vec<Record>, path: &Path| {
                for r in records.iter_mut().filter(|_| by_file) {
                    r.file = stem(path);
                }
            };
            label(&mut all, &first);
            for (path, doc) in docs {
                if let Document::Bandwidth(mut records) = doc {
                    label(&mut records, &path);
                    all.extend(records);
                }
            }
            if by_file {
                return Ok(vec![(first, Document::Bandwidth(all))]);
            }
            let read = all.len();
            let all = crate::results::pooled(all);
            if all.len() < read {
                crate::say!(
                    "membw: {files} results files read as one; {} recorded in more than one, its runs pooled",
                    crate::units::plural(read - all.len(), "point")
                );
            }
            Document::Bandwidth(all)
        }
        Document::Latency(mut all) => {
            for (_, doc) in docs {
                if let Document::Latency(records) = doc {
                    all.extend(records);
                }
            }
            Document::Latency(all)
        }
        other => other,
    };
    Ok(vec![(first, doc)])
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
    super::common::check_png(args.png)?;
    if let Some(files) = history_files(&args.inputs)? {
        return history(&args, &files);
    }
    let mut docs = Vec::with_capacity(args.inputs.len());
    for path in &args.inputs {
        let doc = read_document(path).map_err(|e| match e {
            Error::Usage(why) if args.inputs.len() > 1 => Error::Usage(format!(
                "{why} (report reads several results files of one kind as one, or `membw run --json` documents, one per node)"
            )),
            other => other,
        })?;
        docs.push((path.clone(), doc));
    }
    let mut docs = merged(docs, args.by_file)?;
    let results = args.inputs[0].clone();
    let beside = || args.plots.clone().unwrap_or_else(|| plots_beside(&results));
    match docs.pop() {
        Some((_, Document::Bandwidth(records))) if docs.is_empty() => {
            bandwidth_report(&args, &records, &results, &beside())
        }
        Some((_, Document::Latency(records))) if docs.is_empty() => {
            let dir = beside();
            let plots = report::latency_tables::plots(&records);
            let doc = view::View::LatencyExperiment {
                records: &records,
                plots: &plots,
                dir: &dir,
            };
            show(&args, &doc, &dir, &plots)
        }
        Some(last) => {
            docs.push(last);
            let dir = args.plots.clone().unwrap_or_else(|| {
                results
                    .parent()
                    .unwrap_or(Path::new("."))
                    .join("membw-nodes-plots")
            });
            let runs = run_documents(docs)?;
            let (text, plots, slow) =
                report::nodes::document(&runs, args.outlier.outlier).map_err(Error::Usage)?;
            let doc = view::View::Nodes {
                text: &text,
                runs: Some(&runs),
                plots: &plots,
                dir: &dir,
            };
            show(&args, &doc, &dir, &plots)?;
            // Scripts act on the exit code: 1 when any node was flagged.
            if slow.is_empty() {
                Ok(())
            } else {
                Err(Error::Unhealthy(format!(
                    "slow nodes: {} (exit 1)",
                    slow.join(", ")
                )))
            }
        }
        None => Err(Error::Usage("no file to report on".into())),
    }
}

/// The files of a fleet's history, when the inputs are one: a directory
/// (its `.json` and `.jsonl` files), or check verdicts.
fn history_files(inputs: &[PathBuf]) -> Result<Option<Vec<PathBuf>>> {
    const MAX_FILES: usize = 1_000_000;
    let mut files = Vec::new();
    let mut from_dir = false;
    for path in inputs {
        if path.is_dir() {
            from_dir = true;
            let entries = std::fs::read_dir(path)
                .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json" || x == "jsonl"))
                .collect();
            if found.is_empty() {
                return Err(Error::Usage(format!(
                    "{}: a directory without .json or .jsonl files (report reads a directory as a fleet's history: check verdicts and run documents)",
                    path.display()
                )));
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
        if files.len() > MAX_FILES {
            return Err(Error::Usage(format!(
                "{}: more than {MAX_FILES} files",
                path.display()
            )));
        }
    }
    // The one reader says what the first file holds.
    let first_is_check = || {
        crate::results::read::read(&files[0])
            .is_ok_and(|r| matches!(r.document, Document::Checks(_)))
    };
    Ok((from_dir || (!files.is_empty() && first_is_check())).then_some(files))
}

/// `membw report DIR` or check verdicts: each node's trend, the nodes
/// slower than their own history or far from the fleet (exit 1 when any).
fn history(args: &ReportArgs, files: &[PathBuf]) -> Result<()> {
    use crate::health::history;
    if !matches!(args.form.format, Format::Text | Format::Markdown) {
        return Err(Error::Usage(
            "a fleet's history is reported as text or markdown, a plot and --html (no --format json or csv)"
                .into(),
        ));
    }
    let kernel = args.kernel.kernel.unwrap_or(KernelId::Triad);
    let mut samples = Vec::new();
    for path in files {
        let bytes = crate::results::file::read_regular(path, 16 << 20)
            .map_err(super::common::input_file_error)?;
        let text = String::from_utf8_lossy(&bytes);
        let docs = crate::results::typed::fleet_documents(&text).map_err(|(line, why)| {
            let at = if line > 1 {
                format!(" line {line}:")
            } else {
                String::new()
            };
            Error::Usage(format!("{}:{at} {why}", path.display()))
        })?;
        for doc in &docs {
            samples.extend(history::samples(doc, kernel));
        }
    }
    if samples.is_empty() {
        return Err(Error::Usage(format!(
            "no {kernel} rate in {} files",
            files.len()
        )));
    }
    let tolerance = 1.0 - args.outlier.outlier;
    let fleet = history::fleet(&samples, tolerance);
    let dir = args
        .plots
        .clone()
        .unwrap_or_else(|| plots_beside(&args.inputs[0]));
    let plots: Vec<report::Plot> = report::plot::nodes::history_plot(&fleet, kernel)
        .map(|svg| report::Plot {
            title: "history".into(),
            file: "history.svg".into(),
            svg,
        })
        .into_iter()
        .collect();
    let text = report::history::render(&fleet, kernel, files.len(), tolerance);
    let doc = view::View::Nodes {
        text: &text,
        runs: None,
        plots: &plots,
        dir: &dir,
    };
    show(args, &doc, &dir, &plots)?;
    let flagged: Vec<String> = fleet
        .trends
        .iter()
        .filter(|t| t.slower_than_history || t.far_from_fleet)
        .map(|t| t.host.clone())
        .collect();
    if flagged.is_empty() {
        Ok(())
    } else {
        Err(Error::Unhealthy(format!(
            "{} flagged: {}",
            crate::units::plural(flagged.len(), "node"),
            flagged.join(", ")
        )))
    }
}

/// Writes the plots into `dir`, prints the report in `--format` and writes
/// the `--html` page; both rendered first, so that a format with no form
/// for the document is refused before anything is written.
fn show(args: &ReportArgs, doc: &view::View, dir: &Path, plots: &[report::Plot]) -> Result<()> {
    let shown = render_as(args.form.format, doc)?;
    let page = match &args.html {
        Some(html) => Some((html, render_as(Format::Html, doc)?)),
        None => None,
    };
    write_plots(dir, plots, args.png)?;
    print(shown)?;
    if let Some((html, page)) = page {
        write_file(html, &page)?;
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
    #[command(flatten)]
    kernel: super::flags::Kernel,
    #[command(flatten)]
    form: super::flags::Form,
    #[command(flatten)]
    markdown: super::flags::MarkdownFlag,
}

pub(crate) fn compare(args: CompareArgs) -> Result<()> {
    let show = |c: Compared| print(render_as(args.form.format, &view::View::Compare(c))?);
    let (a, b) = match (read_document(&args.a)?, read_document(&args.b)?) {
        (Document::Run(a), Document::Run(b)) => return show(Compared::Runs { a: &a, b: &b }),
        (Document::Latency(a), Document::Latency(b)) => {
            return show(Compared::Latency { a: &a, b: &b });
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
    let kernel = match args.kernel.kernel {
        Some(k) => k,
        None => study::primary_kernel(&both)
            .ok_or_else(|| Error::Usage("no kernel results in either file".into()))?,
    };
    show(Compared::Bandwidth {
        a: &a,
        b: &b,
        kernel,
    })
}
