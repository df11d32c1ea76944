//! `membw sweep`, `tune`, `report` and `compare` end to end. The logic
//! under test is not the measurement, so most tests use the hidden fake
//! source (fixed rates, no timing); one small sweep measures for real.

use crate::common;

use crate::common::{stdout, usage_error};

use serde_json::Value;
use std::path::Path;

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The issue's bar: 1..2 threads × 2 strategies × 2 memory policies × 3
/// repeats, 8 points.
const AXES: [&str; 9] = [
    "sweep", "--threads", "1-2", "--strategy", "compact,spread", "--mem", "local;interleave:all",
    "--repeat", "3",
];

/// The fake source: 4 GB/s per thread (×1.25 with non-temporal stores).
const FAKE: [&str; 2] = ["--fake-source", "4"];

/// `AXES` with these further arguments, measured by the fake source.
fn sweep_args<'a>(more: &[&'a str]) -> Vec<&'a str> {
    AXES.iter()
        .copied()
        .chain(FAKE)
        .chain(more.iter().copied())
        .collect()
}

fn quality_sweep(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("sweep.jsonl");
    // Past STREAM's rule on this host: the fake's rates are the memory's.
    let size = common::dram_elements(1_000_000);
    let printed = stdout(&sweep_args(&[
        "--size",
        &size,
        "--ntimes",
        "3",
        "-o",
        out.to_str().unwrap(),
    ]));
    crate::common::assert_contains(&printed, "Reproduce it:");
    assert!(
        printed.contains("triad GB/s") && printed.contains("mean ± 95 % CI (n = "),
        "{printed}"
    );
    for line in printed.lines() {
        assert!(
            line.chars().count() <= 100,
            "wider than 100 columns: {line}"
        );
    }
    assert!(printed.contains("▶"), "best point highlighted: {printed}");
    assert!(printed.contains("best triad:"));
    out
}

#[test]
fn a_sweep_records_every_point_with_its_repeats() {
    let dir = crate::common::scratch_dir();
    let out = quality_sweep(dir.path());
    let records = lines(&out);
    assert_eq!(records.len(), 8);
    let mut keys = std::collections::HashSet::new();
    for r in &records {
        assert_eq!(r["schema_version"], 1);
        assert_eq!(r["experiment"], "sweep");
        assert_eq!(r["runs"].as_array().unwrap().len(), 3);
        assert!(
            r["runs"]
                .as_array()
                .unwrap()
                .iter()
                .all(|run| run["validated"] == true)
        );
        let s = &r["stats"]["triad"];
        assert_eq!(s["n"], 3);
        assert!(s["min"].as_f64().unwrap() <= s["mean"].as_f64().unwrap());
        assert!(s["mean"].as_f64().unwrap() <= s["max"].as_f64().unwrap());
        assert!(r["host"]["hostname"].is_string());
        assert_eq!(r["source"], "fake");
        // 1M elements per array fit no LLC here? Either way the rate is the fake's.
        let threads = r["point"]["threads"].as_f64().unwrap();
        let nt = r["runs"][0]["stores"] == "nt";
        let want = 4.0 * threads * if nt { 1.25 } else { 1.0 };
        assert!((s["mean"].as_f64().unwrap() - want).abs() < 1e-9, "{s}");
        assert_eq!(r["started"], records[0]["started"]);
        assert!(
            r["reproduce"]["numactl"]
                .as_str()
                .unwrap()
                .starts_with("numactl")
        );
        assert!(keys.insert(r["point"].to_string()));
    }
    // Resuming a finished sweep runs nothing and adds nothing.
    let size = common::dram_elements(1_000_000);
    stdout(&sweep_args(&[
        "--size",
        &size,
        "--ntimes",
        "3",
        "--resume",
        out.to_str().unwrap(),
    ]));
    assert_eq!(lines(&out).len(), 8);
}

#[test]
fn ctrl_c_keeps_what_completed_and_resume_finishes_the_rest() {
    signal_keeps_what_completed(130, "SIGINT");
}

/// Slurm's time limit sends SIGTERM; a closed terminal SIGHUP: both end a
/// sweep like Ctrl-C, with 128 + the signal.
#[test]
fn sigterm_and_sighup_end_a_sweep_like_ctrl_c() {
    signal_keeps_what_completed(143, "SIGTERM");
    signal_keeps_what_completed(129, "SIGHUP");
}

fn signal_keeps_what_completed(code: i32, name: &str) {
    let dir = crate::common::scratch_dir();
    let out = dir.path().join("s.jsonl");
    // 100 ms per run: 24 runs take 2.4 s, and the first point is on disk after 0.3 s.
    let mut args: Vec<&str> = AXES.to_vec();
    args.extend([
        "--size", "6M", "--ntimes", "12", "--fake-source", "4,delay=100ms",
    ]);
    let mut child = common::membw_process()
        .args(&args)
        .args(["-o", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Signal once the first point is on disk.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_to_string(&out).map_or(0, |s| s.lines().count()) < 1 {
        assert!(std::time::Instant::now() < deadline, "no point completed");
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended early");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = common::stop_with(child, name.trim_start_matches("SIG"));
    let stderr = String::from_utf8_lossy(&status.stderr);
    let before = lines(&out).len();
    assert!(
        before < 8,
        "the sweep ended before the signal; make it longer"
    );
    assert_eq!(status.status.code(), Some(code), "{stderr}");
    crate::common::assert_contains(&stderr, &format!("stopped by {name}"));
    crate::common::assert_contains(&stderr, "--resume");
    // Every line on disk is a whole record.
    assert!(std::fs::read_to_string(&out).unwrap().ends_with('\n'));
    // Resume completes the rest; every point exactly once.
    let mut resumed = args.clone();
    resumed.extend(["--resume", out.to_str().unwrap()]);
    stdout(&resumed);
    let records = lines(&out);
    assert_eq!(records.len(), 8);
    let keys: std::collections::HashSet<String> =
        records.iter().map(|r| r["point"].to_string()).collect();
    assert_eq!(keys.len(), 8, "no point duplicated");
    assert!(
        records
            .iter()
            .all(|r| r["runs"].as_array().unwrap().len() == 3)
    );
}

/// Number of data series in a plot: one 2-pixel polyline each.
fn series_in(svg: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("SVG is well-formed XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke-width") == Some("2"))
        .count()
}

#[test]
fn report_writes_parsable_plots_and_a_self_contained_html() {
    let dir = crate::common::scratch_dir();
    let results = quality_sweep(dir.path());
    let plots = dir.path().join("plots");
    let html = dir.path().join("report.html");
    let printed = stdout(&[
        "report",
        results.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(printed.contains("▶"));
    let svg = std::fs::read_to_string(plots.join("triad-threads.svg")).unwrap();
    // compact/spread × local/interleave: four lines.
    assert_eq!(series_in(&svg), 4);
    // --png: the same plot as PNG, twice the size.
    stdout(&[
        "report",
        results.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
        "--png",
    ]);
    let png = std::fs::read(plots.join("triad-threads.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let (w, h) = (
        u32::from_be_bytes(png[16..20].try_into().unwrap()),
        u32::from_be_bytes(png[20..24].try_into().unwrap()),
    );
    let svg_doc = roxmltree::Document::parse(&svg).unwrap();
    let svg_width: u32 = svg_doc
        .root_element()
        .attribute("width")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(w, 2 * svg_width, "{w}x{h}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    // The triad plot and every kernel's panels, each inline.
    let files = std::fs::read_dir(&plots)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert_eq!(files, 2, "triad-threads.svg and kernels.svg");
    assert_eq!(page.matches("<svg").count(), files, "every plot inline");
    assert!(
        !page.contains("src=") && !page.contains("href=\"http"),
        "nothing fetched"
    );
    assert!(page.contains("<tr class=\"best\">"));
    assert!(page.contains("Host and configuration"));
    // Rendered by a real browser where one is installed.
    if let Some(out) = common::tool(
        std::process::Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--dump-dom",
            ])
            .arg(format!("file://{}", html.display())),
        "chromium",
    ) {
        let dom = String::from_utf8_lossy(&out.stdout);
        assert!(dom.contains("<svg") && dom.contains("polyline"), "{dom}");
    }
    let md = stdout(&[
        "report",
        results.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
        "--markdown",
    ]);
    assert!(md.contains("| threads | placement |"));
    assert!(md.contains("![triad bandwidth vs threads]("));
}

#[test]
fn size_sweeps_and_numa_matrices_get_their_plots() {
    let dir = crate::common::scratch_dir();
    let sizes = dir.path().join("sizes.jsonl");
    stdout(&[
        "sweep",
        "--fake-source",
        "4",
        "--threads",
        "1",
        "--sizes",
        "64KiB..4MiB",
        "--kernels",
        "triad",
        "--ntimes",
        "3",
        "-o",
        sizes.to_str().unwrap(),
    ]);
    let records = lines(&sizes);
    assert_eq!(records.len(), 7);
    assert!(
        records
            .iter()
            .all(|r| r["runs"][0]["inner_repeats"].as_u64().unwrap() >= 1)
    );
    assert!(records[0]["cache_per_thread"]["L1d"].as_u64().unwrap() > 0);
    let plots = dir.path().join("p");
    stdout(&[
        "report",
        sizes.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    assert_eq!(
        series_in(&std::fs::read_to_string(plots.join("triad-sizes.svg")).unwrap()),
        1
    );

    let numa = dir.path().join("numa.jsonl");
    stdout(&[
        "sweep",
        "--fake-source",
        "4",
        "--numa-matrix",
        "both",
        "--size",
        "1M",
        "--ntimes",
        "2",
        "-o",
        numa.to_str().unwrap(),
    ]);
    let records = lines(&numa);
    let nodes = membw::topology::Topology::live().unwrap();
    let cpu_nodes = nodes.nodes.iter().filter(|n| !n.cpus.is_empty()).count();
    assert_eq!(records.len(), 2 * cpu_nodes * nodes.allowed_mems.len());
    assert!(
        records
            .iter()
            .all(|r| r["point"]["mem"].as_str().unwrap().starts_with("bind:"))
    );
    let plots = dir.path().join("n");
    stdout(&[
        "report",
        numa.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    for f in ["triad-numa-a.svg", "triad-numa-b.svg"] {
        let svg = std::fs::read_to_string(plots.join(f)).unwrap();
        roxmltree::Document::parse(&svg).unwrap();
        assert!(svg.contains("memory node"));
    }
}

#[test]
fn compare_matches_points_and_gives_ratios() {
    let dir = crate::common::scratch_dir();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    stdout(&[
        "sweep",
        "--fake-source",
        "5",
        "--threads",
        "1-2",
        "--size",
        "1M",
        "--ntimes",
        "2",
        // Auto may time and choose each kernel's stores on the real side
        // (1M elements are near the caches on many hosts); the fake times
        // nothing. Both forced, the points pair whatever this host's caches.
        "--stores",
        "regular",
        "-o",
        b.to_str().unwrap(),
    ]);
    // The one sweep of this file that measures for real: small and short.
    stdout(&[
        "sweep",
        "--threads",
        "1-2",
        "--size",
        "1M",
        "--ntimes",
        "2",
        "--stores",
        "regular",
        "-o",
        a.to_str().unwrap(),
    ]);
    let real = lines(&a);
    assert!(
        real.iter()
            .all(|r| r["source"] == "stream" && r["runs"][0]["validated"] == true)
    );
    let out = stdout(&["compare", a.to_str().unwrap(), a.to_str().unwrap()]);
    let ratios: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("spread ×"))
        .map(|l| {
            // B/A is the one figure with three decimals.
            l.split_whitespace()
                .find(|t| t.split_once('.').is_some_and(|(_, d)| d.len() == 3))
                .unwrap()
        })
        .collect();
    assert_eq!(ratios, vec!["1.000", "1.000"], "{out}");
    // One run each: a ratio, no decision.
    crate::common::assert_contains(
        &out,
        "2 points in both: 0 higher, 0 lower, 0 no change, 2 not resolved",
    );
    // B/A against the fake: 5 GB/s per thread over what was measured.
    let out = stdout(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    for r in &real {
        let measured = r["stats"]["triad"]["mean"].as_f64().unwrap();
        let fake = 5.0
            * r["point"]["threads"].as_f64().unwrap()
            * if r["runs"][0]["stores"] == "nt" {
                1.25
            } else {
                1.0
            };
        let ratio = format!("{:.3}", fake / measured);
        assert!(out.contains(&ratio), "{ratio} not in {out}");
    }
}

#[test]
fn tune_reports_the_best_and_how_to_reproduce_it() {
    let dir = crate::common::scratch_dir();
    let file = dir.path().join("tune.jsonl");
    let out = stdout(&[
        "tune",
        "--fake-source",
        "4",
        "--budget",
        "10s",
        "--size",
        "1M",
        "--ntimes",
        "3",
        "--repeat",
        "1",
        "-o",
        file.to_str().unwrap(),
    ]);
    // The fake scales with threads and favours non-temporal stores.
    crate::common::assert_contains(&out, "Best sustained triad:");
    assert!(out.contains("with spread ("), "{out}");
    assert!(out.contains("nt stores)"), "{out}");
    crate::common::assert_contains(&out, "one thread on every core");
    for line in [
        "OMP_NUM_THREADS=", "likwid-pin -c", "numactl --physcpubind=", "srun -n ", "taskset -c",
        "mpirun -np",
    ] {
        assert!(out.contains(line), "{line} missing: {out}");
    }
    // Every candidate in one file with one `started`.
    let records = lines(&file);
    assert!(records.len() >= 2, "{out}");
    assert!(records.iter().all(|r| r["experiment"] == "tune"));
    assert!(
        records
            .iter()
            .all(|r| r["started"] == records[0]["started"])
    );
    // The same placement gets the same reproduce lines from run, sweep and tune.
    let block = |text: &str| -> Vec<String> {
        let start = text
            .lines()
            .position(|l| l.starts_with("Reproduce"))
            .unwrap();
        text.lines()
            .skip(start + 1)
            .take(6)
            .map(str::to_string)
            .collect()
    };
    let run = stdout(&["run", "--fake-source", "4", "--size", "1M", "--ntimes", "3"]);
    let sweep_file = dir.path().join("s.jsonl");
    let sweep = stdout(&[
        "sweep",
        "--fake-source",
        "4",
        "--size",
        "1M",
        "--ntimes",
        "3",
        "-o",
        sweep_file.to_str().unwrap(),
    ]);
    assert_eq!(block(&run), block(&out));
    assert_eq!(block(&sweep), block(&out));
}

#[test]
fn experiment_input_errors_are_one_line() {
    let dir = crate::common::scratch_dir();
    let existing = dir.path().join("x.jsonl");
    std::fs::write(&existing, "not json\n").unwrap();
    let x = existing.to_str().unwrap();
    usage_error(&["sweep", "--sizes", "4GiB..1GiB"], "upwards");
    usage_error(&["sweep", "--sizes", "16..32"], "byte unit");
    usage_error(&["sweep", "--threads", "0-2"], "start at 1");
    usage_error(&["sweep", "--strategy", "zigzag"], "unknown strategy");
    usage_error(&["sweep", "--mem", "bind:77"], "node 77");
    usage_error(&["sweep", "-o", x], "--resume");
    usage_error(
        &["sweep", "--resume", "/nonexistent/membw.jsonl"],
        "/nonexistent/membw.jsonl",
    );
    usage_error(&["report", x], "not a file membw reads");
    usage_error(&["compare", x, x], "line 1");
    usage_error(&["tune", "--budget", "soon"], "--budget");
    // The shared measurement flags: one policy and store mode where one is measured.
    usage_error(&["run", "--mem", "local;bind:0"], "run takes one policy");
    usage_error(
        &["tune", "--mem", "local", "--mem", "local"],
        "tune takes one policy",
    );
    usage_error(&["run", "--stores", "regular,nt"], "one store mode");
    usage_error(&["tune", "--isa", "altivec"], "'altivec'");
    usage_error(&["sweep", "--fake-source", "fast"], "--fake-source");
    // The sweep's default placement names the thread count, not a strategy never given.
    usage_error(&["sweep", "--threads", "1-999"], "--threads '");
    // The NUMA matrix sets threads and placement itself.
    usage_error(
        &["sweep", "--numa-matrix", "--threads", "2"],
        "cannot be used with",
    );
    // The peak is given one way.
    usage_error(&["run", "--peak", "100", "--channels", "8"], "--peak");
    usage_error(&["run", "--channels", "8"], "--mts");
}

#[test]
fn torn_lines_other_versions_and_odd_files() {
    let dir = crate::common::scratch_dir();
    let out = dir.path().join("s.jsonl");
    let args = sweep_args(&["--size", "1M", "--ntimes", "2"]);
    let mut first = args.clone();
    first.extend(["-o", out.to_str().unwrap()]);
    stdout(&first);
    let whole = std::fs::read_to_string(&out).unwrap();
    let complete: Vec<&str> = whole.lines().collect();
    assert_eq!(complete.len(), 8);
    // A crash mid-write: the last line is cut in half.
    let torn = complete[..7].join("\n") + "\n" + &complete[7][..complete[7].len() / 2];
    std::fs::write(&out, &torn).unwrap();
    let o = common::membw()
        .args([
            "report",
            out.to_str().unwrap(),
            "--plots",
            dir.path().join("p").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("line 8 is cut short") && err.contains("7 complete records"),
        "{err}"
    );
    // Resume drops it, says so, and measures that point again.
    let mut resumed = args.clone();
    resumed.extend(["--resume", out.to_str().unwrap()]);
    let o = common::membw().args(&resumed).output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("dropped line 8"));
    assert_eq!(lines(&out).len(), 8);
    // A record of another schema version is refused, naming the version.
    let v2 = complete[0].replace("\"schema_version\":1", "\"schema_version\":2");
    let other = dir.path().join("v2.jsonl");
    std::fs::write(&other, v2 + "\n").unwrap();
    usage_error(&["report", other.to_str().unwrap()], "schema_version 2");
    usage_error(
        &["sweep", "--resume", other.to_str().unwrap()],
        "schema_version 2",
    );
    // Empty files, devices and FIFOs: a clear error, at once.
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    usage_error(
        &["compare", out.to_str().unwrap(), empty.to_str().unwrap()],
        "no records",
    );
    usage_error(&["report", "/dev/zero"], "not a regular file");
    usage_error(&["sweep", "--resume", "/dev/full"], "not a regular file");
    usage_error(
        &["compare", "/dev/null", out.to_str().unwrap()],
        "not a regular file",
    );
}

#[test]
fn absurd_numbers_in_a_results_file_are_refused() {
    let dir = crate::common::scratch_dir();
    let out = dir.path().join("s.jsonl");
    stdout(&[
        "sweep",
        "--fake-source",
        "4",
        "--size",
        "1M",
        "--ntimes",
        "2",
        "-o",
        out.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&out).unwrap();
    let mut doc: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    doc["stats"]["triad"]["mean"] = serde_json::json!(1.7e308);
    std::fs::write(&out, doc.to_string() + "\n").unwrap();
    usage_error(&["report", out.to_str().unwrap()], "is not a measurement");
}

/// `tune` on the two-core VM fixture with the fake source: spread (2
/// threads) against per-l3=1 (1 thread), the node saturating at `cap` GB/s
/// and each repetition 3 % noisy, under 20 seeds.
fn tune_verdicts(cap: &str) -> Vec<String> {
    (1..=20)
        .map(|seed| {
            let fake = format!("4,cap={cap},noise=3,seed={seed}");
            let out = stdout(&[
                "tune", "--sysroot", "tests/fixtures/live-vm", "--fake-source", &fake, "--stores",
                "regular", "--size", "1M", "--ntimes", "3", "--budget", "20s",
            ]);
            for line in out.lines() {
                assert!(
                    line.chars().count() <= 100,
                    "wider than 100 columns: {line}"
                );
            }
            let verdict = out
                .lines()
                .find(|l| l.starts_with("Not resolved") || l.starts_with("Best sustained"))
                .unwrap_or_else(|| panic!("no verdict: {out}"));
            verdict.to_string()
        })
        .collect()
}

#[test]
fn tune_names_no_winner_between_equals() {
    // Both candidates saturate the node at 4 GB/s.
    let verdicts = tune_verdicts("4");
    let resolved = verdicts
        .iter()
        .filter(|v| !v.starts_with("Not resolved"))
        .count();
    assert!(
        resolved <= 1,
        "{resolved} of 20 named a winner: {verdicts:#?}"
    );
}

#[test]
fn tune_names_the_winner_ten_percent_ahead() {
    // Two threads reach 4.4 GB/s, one thread 4.
    for v in tune_verdicts("4.4") {
        assert!(
            v.starts_with("Best sustained triad:") && v.contains("with spread (2 threads"),
            "{v}"
        );
    }
    // A busy node is a finding, not a winner.
    let out = stdout(&[
        "tune",
        "--sysroot",
        "tests/fixtures/live-vm",
        "--fake-source",
        "4,cap=4.4,busy=40,seed=1",
        "--size",
        "1M",
        "--ntimes",
        "3",
    ]);
    assert!(
        out.contains("Not resolved: other work shared the node") && !out.contains("Best sustained"),
        "{out}"
    );
}

#[test]
fn busy_points_are_marked_everywhere_and_never_the_best() {
    let dir = crate::common::scratch_dir();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    // A quiet point at 4 GB/s, and a faster one measured beside other work.
    for (file, fake, threads) in [("q.jsonl", "4", "1"), ("b.jsonl", "8,busy=40", "2")] {
        stdout(&[
            "sweep",
            "--fake-source",
            fake,
            "--threads",
            threads,
            "--stores",
            "regular",
            "--size",
            "1M",
            "--ntimes",
            "3",
            "-o",
            &path(file),
        ]);
    }
    let both = [path("q.jsonl"), path("b.jsonl")]
        .map(|p| std::fs::read_to_string(p).unwrap())
        .concat();
    std::fs::write(path("all.jsonl"), both).unwrap();
    let all = path("all.jsonl");
    let plots = path("plots");
    let text = stdout(&["report", &all, "--plots", &plots]);
    crate::common::assert_contains(&text, "NOT TRUSTED for triad: 1 of 2 points:");
    crate::common::assert_contains(&text, "spread × 2 · local · regular stores: CPUs");
    assert!(
        text.contains("best triad: 4.00 GB/s"),
        "the quiet point is the best: {text}"
    );
    let md = stdout(&["report", &all, "--plots", &plots, "--format", "markdown"]);
    assert!(
        md.contains("**NOT TRUSTED for triad: 1 of 2 points:**") && md.contains("| NOT TRUSTED |"),
        "{md}"
    );
    let html = path("r.html");
    stdout(&["report", &all, "--plots", &plots, "--html", &html]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<td>NOT TRUSTED</td>") && page.contains("40 % busy with other work"),
        "{page}"
    );
    let csv = stdout(&["report", &all, "--format", "csv"]);
    // The trusted column (the 19th), whatever band the host's caches give.
    let busy_rows: Vec<&str> = (csv.lines())
        .filter(|l| l.split(',').nth(18) == Some("false"))
        .collect();
    assert_eq!(busy_rows.len(), 4, "the busy point's four kernels: {csv}");
    assert!(
        busy_rows.iter().all(|l| l.contains("busy with other work")),
        "{csv}"
    );
    // Every kernel in one figure, a panel each; the busy point ringed in each.
    let kernels =
        std::fs::read_to_string(std::path::Path::new(&plots).join("kernels.svg")).unwrap();
    let doc = roxmltree::Document::parse(&kernels).unwrap();
    let rings = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle") && n.attribute("r") == Some("8"))
        .count();
    assert_eq!(rings, 4 + 1, "one per kernel, one in the legend: {kernels}");
    assert_eq!(series_in(&kernels), 4, "one curve per kernel panel");
    crate::common::assert_contains(&kernels, "NOT TRUSTED: no run");
    let cmp = stdout(&["compare", &path("q.jsonl"), &all]);
    crate::common::assert_contains(&cmp, "1 point in both");
    let cmp = stdout(&["compare", &all, &all]);
    crate::common::assert_contains(&cmp, "NOT TRUSTED (A, B)");
}

/// The threads plot of a fake sweep at 4 GB/s per thread (1 and 2 threads)
/// with `--peak`: (largest y tick, largest data x, smallest legend x, text).
fn threads_plot_with_peak(peak: &str) -> (f64, f64, f64, String) {
    let svg = fake_sweep_plot(
        &["--threads", "1-2", "--stores", "regular", "--peak", peak],
        "triad-threads.svg",
    );
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let data_x = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle"))
        .map(|n| attr(n, "cx"))
        .fold(0.0, f64::max);
    (top_tick(&doc), data_x, legend_x(&doc), svg)
}

/// A fake sweep (4 GB/s per thread, 3 repeats, 1M elements) with `axes`,
/// reported: the text of its plot `name`.
fn fake_sweep_plot(axes: &[&str], name: &str) -> String {
    let dir = crate::common::scratch_dir();
    let file = dir.path().join("s.jsonl");
    let plots = dir.path().join("p");
    // Past STREAM's rule on this host: no point is marked as the caches'.
    let size = common::dram_elements(1_000_000);
    let mut args = vec![
        "sweep",
        "--fake-source",
        "4",
        "--repeat",
        "3",
        "--size",
        &size,
        "--ntimes",
        "3",
        "-o",
        file.to_str().unwrap(),
    ];
    args.extend(axes);
    stdout(&args);
    stdout(&[
        "report",
        file.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    std::fs::read_to_string(plots.join(name)).unwrap()
}

fn attr(n: roxmltree::Node, a: &str) -> f64 {
    n.attribute(a).unwrap().parse::<f64>().unwrap()
}

/// The largest value on a plot's y axis (its right-aligned tick labels).
fn top_tick(doc: &roxmltree::Document) -> f64 {
    doc.descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("text-anchor") == Some("end"))
        .filter_map(|n| n.text()?.trim().parse::<f64>().ok())
        .fold(0.0, f64::max)
}

/// The left edge of the legend (its 12-pixel colour squares).
fn legend_x(doc: &roxmltree::Document) -> f64 {
    doc.descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("width") == Some("12"))
        .map(|n| attr(n, "x"))
        .fold(f64::MAX, f64::min)
}

#[test]
fn plots_fit_their_data_and_keep_the_legend_off_it() {
    // A peak 25 times the data: a note, not the axis.
    let (top, data_x, legend_x, svg) = threads_plot_with_peak("200");
    assert!((0.1..=1.5 * 8.0).contains(&top), "y axis to {top}: {svg}");
    crate::common::assert_contains(&svg, "theoretical peak 200.0 GB/s, above the scale");
    assert!(
        legend_x > data_x + 10.0,
        "legend at {legend_x}, data to {data_x}"
    );
    // A peak within reach of the data: a line, named in the legend.
    let (top, _, _, svg) = threads_plot_with_peak("10");
    assert!((10.0..=1.5 * 8.0).contains(&top), "y axis to {top}");
    assert!(
        svg.contains("theoretical peak 10.0 GB/s") && !svg.contains("above the scale"),
        "{svg}"
    );
}

#[test]
fn store_modes_are_compared_kernel_by_kernel_in_one_figure() {
    let svg = fake_sweep_plot(
        &["--threads", "1", "--stores", "regular,nt"],
        "kernels-bars.svg",
    );
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::trim))
        .collect();
    for label in ["copy", "triad", "regular stores", "nt stores"] {
        assert!(texts.contains(&label), "{label} missing: {texts:?}");
    }
    // 4 kernels × 2 store modes: eight bars, filled in the palette.
    let bars: Vec<roxmltree::Node> = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("rect")
                && n.attribute("width") != Some("12")
                && n.attribute("fill").is_some_and(|f| f != "#FFFFFF")
        })
        .collect();
    assert_eq!(bars.len(), 8, "{svg}");
    // The y axis fits the data: the fake's nt rate is 5 GB/s.
    let top = top_tick(&doc);
    assert!((5.0..=1.5 * 5.0).contains(&top), "y axis to {top}");
    // The legend right of every bar.
    let right = bars
        .iter()
        .map(|n| attr(*n, "x") + attr(*n, "width"))
        .fold(0.0, f64::max);
    let legend = legend_x(&doc);
    assert!(legend > right + 10.0, "legend at {legend}, bars to {right}");
}

#[test]
fn the_node_report_marks_a_node_measured_beside_other_work() {
    let dir = crate::common::scratch_dir();
    let mut files = Vec::new();
    for (host, fake) in [("n1", "4"), ("n2", "4"), ("n3", "4,busy=40")] {
        let out = stdout(&[
            "run", "--fake-source", fake, "--size", "1M", "--ntimes", "4", "--json",
        ]);
        let mut doc: Value = serde_json::from_str(&out).unwrap();
        doc["host"]["hostname"] = Value::from(host);
        let path = dir.path().join(format!("{host}.json"));
        std::fs::write(&path, doc.to_string()).unwrap();
        files.push(path.to_string_lossy().into_owned());
    }
    let plots = dir.path().join("p");
    let mut args = vec!["report", "--plots", plots.to_str().unwrap()];
    args.extend(files.iter().map(String::as_str));
    let text = stdout(&args);
    let row = text
        .lines()
        .find(|l| l.starts_with("  n3 "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.ends_with("  NOT TRUSTED"), "{row}");
    assert!(
        text.contains("NOT TRUSTED: 1 of 3 nodes:\n  n3: ")
            && text.contains("busy with other work"),
        "{text}"
    );
    let clean = text.lines().find(|l| l.starts_with("  n1 ")).unwrap();
    assert!(!clean.contains("TRUSTED"), "{clean}");
    // Its bar ringed in the plot, the ring's key in the legend.
    let svg = std::fs::read_to_string(plots.join("nodes.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let rings = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle") && n.attribute("r") == Some("8"))
        .count();
    assert_eq!(rings, 2, "n3's bar and the legend's key: {svg}");
    // Two runs compared: the busy one decides nothing, and says why.
    let cmp = stdout(&["compare", &files[0], &files[2]]);
    let triad = cmp
        .lines()
        .find(|l| l.trim_start().starts_with("triad "))
        .unwrap_or_else(|| panic!("{cmp}"));
    assert!(triad.ends_with("NOT TRUSTED (B)"), "{triad}");
    crate::common::assert_contains(&cmp, "NOT TRUSTED (B): CPU");
    let cmp = stdout(&["compare", &files[0], &files[1]]);
    assert!(!cmp.contains("TRUSTED"), "{cmp}");
}

#[test]
fn the_guides_plots_fit_their_data_and_keep_legends_off_it() {
    // Every plot `report` draws from the guide's study files: the y axis
    // ends within 1.5 × the largest value drawn (mean plus its interval's
    // half-width), and the legend lies right of every data point.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/study");
    let mut checked = 0;
    for study in ["threads", "sizes", "stores", "exec"] {
        let file = root.join(format!("{study}.jsonl"));
        let largest = std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .flat_map(|r| {
                let stats = r["stats"].as_object().unwrap().clone();
                stats.into_iter().map(|(_, s)| {
                    let (mean, sd, n) = (
                        s["mean"].as_f64().unwrap(),
                        s["sd"].as_f64().unwrap(),
                        s["n"].as_f64().unwrap(),
                    );
                    // The t quantile of n = 2 (12.7) bounds every other.
                    mean + 12.71 * sd / n.sqrt()
                })
            })
            .fold(0.0, f64::max);
        let dir = crate::common::scratch_dir();
        stdout(&[
            "report",
            file.to_str().unwrap(),
            "--plots",
            dir.path().to_str().unwrap(),
        ]);
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let svg = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let doc = roxmltree::Document::parse(&svg).unwrap();
            let top = top_tick(&doc);
            assert!(
                top > 0.0 && top <= 1.5 * largest,
                "{study}: y axis to {top}, data to {largest}"
            );
            let data_x = doc
                .descendants()
                .filter(|n| n.has_tag_name("circle") && n.attribute("r") != Some("8"))
                .map(|n| attr(n, "cx"))
                .fold(0.0, f64::max);
            let legend = legend_x(&doc);
            assert!(
                legend > data_x,
                "{study}: legend at {legend}, data to {data_x}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked} plots");
}

/// `--cpunode` is run's flag, one definition: in a sweep it restricts every
/// point's threads, names itself in the points, and is refused as run
/// refuses it.
#[test]
fn cpunode_restricts_every_point_of_a_sweep_as_it_does_a_run() {
    let (_dir, out, o) = crate::common::scratch_file("nodes.jsonl");
    let text = stdout(&[
        "sweep", "--fake-source", "4", "--cpunode", "0", "--threads", "1", "--ntimes", "3", "-o",
        &o,
    ]);
    crate::common::assert_contains(&text, "spread on cpunode 0");
    let records = lines(&out);
    assert_eq!(records[0]["point"]["placement"], "spread on cpunode 0");
    assert_eq!(records[0]["study"]["cpunode"], "0");
    usage_error(
        &["sweep", "--fake-source", "4", "--cpunode", "99"],
        "--cpunode '99': no such NUMA node",
    );
    usage_error(
        &["run", "--fake-source", "4", "--cpunode", "99"],
        "--cpunode '99': no such NUMA node",
    );
}

/// The plot's note, the HTML and the text read one verdict: the best
/// point's share of the peak in the note is the table's, and the best
/// line is the same words everywhere.
#[test]
fn plot_notes_html_and_text_state_the_same_best() {
    let dir = crate::common::scratch_dir();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    // Arrays far past any cache (the fake source allocates nothing), and a
    // peak far above the rates: the plot notes it instead of a line.
    stdout(&[
        "sweep",
        "--fake-source",
        "4",
        "--threads",
        "1,2",
        "--kernels",
        "triad",
        "--size",
        "400M",
        "--peak",
        "1000GB/s",
        "--repeat",
        "3",
        "-o",
        &path("s.jsonl"),
    ]);
    let text = stdout(&["report", &path("s.jsonl")]);
    let best_row = text.lines().find(|l| l.starts_with('▶')).unwrap();
    let table_pct = best_row.split_whitespace().last().unwrap().to_string();
    let best_line = text.lines().find(|l| l.starts_with("best triad:")).unwrap();
    stdout(&[
        "report",
        &path("s.jsonl"),
        "--plots",
        &path("plots"),
        "--html",
        &path("r.html"),
    ]);
    let svg = std::fs::read_to_string(path("plots/triad-threads.svg")).unwrap();
    assert!(
        svg.contains(&format!("(the best point is {table_pct} % of it)")),
        "table {table_pct} %: {svg}"
    );
    let html = std::fs::read_to_string(path("r.html")).unwrap();
    assert!(html.contains(best_line), "{best_line} not in the HTML");
    let md = stdout(&["report", &path("s.jsonl"), "--format", "markdown"]);
    crate::common::assert_contains(&md, best_line);
}

/// An unpinned best has no placement to reproduce in other tools' words:
/// the report gives the command that ran it instead.
#[test]
fn an_unpinned_best_gets_the_command_that_ran_it_not_reproduce_lines() {
    let dir = crate::common::scratch_dir();
    let file = dir.path().join("u.jsonl");
    let text = stdout(&[
        "sweep",
        "--fake-source",
        "4",
        "--threads",
        "2",
        "--strategy",
        "unpinned",
        "--kernels",
        "triad",
        "--size",
        "400M",
        "-o",
        file.to_str().unwrap(),
    ]);
    crate::common::assert_contains(&text, "best triad: 10.00 GB/s with unpinned");
    assert!(
        !text.contains("Reproduce it:") && !text.contains("OMP_PLACES"),
        "{text}"
    );
    crate::common::assert_contains(
        &text,
        "Its 2 threads were not pinned: no placement to reproduce",
    );
    crate::common::assert_contains(
        &text,
        "membw run --no-pin --threads 2 --size 400000000 --mem local",
    );
}
