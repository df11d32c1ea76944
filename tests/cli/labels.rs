//! Labels that say what happened: a point whose arrays sit in the caches is
//! reported as cache bandwidth, with no share of the memory's peak and no
//! bus traffic, and the size that STREAM's rule asks for.

use crate::common;

use crate::common::stdout;
use serde_json::Value;

/// 10k elements: three arrays of 80 KB, in 4 × the caches of any CPU.
const IN_CACHES: [&str; 8] = [
    "run", "--size", "10k", "--ntimes", "3", "--peak", "100GB/s", "--stores",
];

#[test]
fn arrays_in_the_caches_are_cache_bandwidth_with_no_share_of_the_memory_peak() {
    let mut args = IN_CACHES.to_vec();
    args.push("regular");
    let out = common::membw().args(&args).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("% of peak"), "{text}");
    assert!(!text.contains("on the bus with write-allocate"), "{text}");
    crate::common::assert_contains(&text, "cache bandwidth: the arrays fit in the caches");
    // The warning names STREAM's rule and a size that satisfies it.
    let warning = stderr
        .lines()
        .find(|l| l.contains("cache bandwidth, not memory"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        warning.contains("4 × the caches") && warning.contains("fit in the"),
        "{warning}"
    );
    let size: u64 = warning
        .split("--size ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{warning}"));
    args.extend(["--format", "json"]);
    let doc: Value = serde_json::from_str(&stdout(&args)).unwrap();
    let fact = &doc["measurement"]["in_caches"];
    let caches = fact["cache_bytes"].as_u64().unwrap();
    assert_eq!(fact["stream_elements"].as_u64(), Some(size));
    // Each array of that size is 4 × the caches, one element fewer less
    // (STREAM's rule is per array).
    assert!(size * 8 >= 4 * caches && (size - 1) * 8 < 4 * caches);
    assert_eq!(doc["peak"]["percent_of_peak"], serde_json::json!({}));
}

/// A triad sweep by the fake source (4 GB/s per thread) with `axes`,
/// written to a results file in `dir`; its path.
fn fake_triad_sweep(dir: &std::path::Path, axes: &[&str]) -> std::path::PathBuf {
    let file = dir.join("sweep.jsonl");
    let mut args = vec!["sweep", "--fake-source", "4", "--kernels", "triad"];
    args.extend_from_slice(axes);
    args.extend(["-o", file.to_str().unwrap()]);
    stdout(&args);
    file
}

#[test]
fn a_size_sweep_shows_no_share_of_the_peak_where_the_working_set_is_cached() {
    let dir = crate::common::scratch_dir();
    let file = fake_triad_sweep(
        dir.path(),
        &[
            "--threads", "1", "--peak", "100GB/s", "--working-sets", "16KiB", "--ntimes", "2",
        ],
    );
    let f = file.to_str().unwrap();
    let csv = stdout(&["report", f, "--format", "csv"]);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = header.iter().position(|h| *h == "percent_of_peak").unwrap();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(row[column], "", "{csv}");
}

#[test]
fn markdown_and_html_say_what_the_interval_is_and_a_markdown_run_keeps_stores_and_trust() {
    let dir = crate::common::scratch_dir();
    let file = fake_triad_sweep(
        dir.path(),
        &["--threads", "1,2", "--ntimes", "3", "--repeat", "3"],
    );
    let f = file.to_str().unwrap();
    let md = stdout(&["report", f, "--format", "markdown"]);
    crate::common::assert_contains(&md, "mean ± 95 % CI (n = 3 runs per point)");
    let html = dir.path().join("r.html");
    stdout(&["report", f, "--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    crate::common::assert_contains(&page, "mean ± 95 % CI (n = 3 runs per point)");
    let run = stdout(&[
        "run", "--size", "2M", "--ntimes", "3", "--format", "markdown",
    ]);
    assert!(
        run.contains("- **kernels**: ") && run.contains(" stores"),
        "{run}"
    );
    // A window shorter than the tick counters can judge says so.
    assert!(
        [
            "- **trusted**: ", "- **NOT TRUSTED**: ", "- **not judged**: "
        ]
        .iter()
        .any(|t| run.contains(t)),
        "{run}"
    );
}

/// `membw run --json` with a fake source, as from `host` with `cpu`.
fn node_doc(dir: &std::path::Path, rate: &str, host: &str, cpu: &str) -> std::path::PathBuf {
    let text = stdout(&["run", "--fake-source", rate, "--format", "json"]);
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["host"]["hostname"] = host.into();
    doc["host"]["cpu_model"] = cpu.into();
    let path = dir.join(format!("{host}.json"));
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

#[test]
fn a_report_of_unlike_machines_compares_them_and_flags_no_slow_node() {
    let dir = crate::common::scratch_dir();
    let x86 = node_doc(dir.path(), "5", "vm", "Intel(R) Xeon(R) Processor");
    let arm = node_doc(dir.path(), "1", "arm", "Neoverse-V2");
    let out = common::membw()
        .arg("report")
        .args([&x86, &arm])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("Unlike machines, compared side by side: CPU (")
            && text.contains("Neoverse-V2: arm")
            && text.contains("Intel(R) Xeon(R) Processor: vm"),
        "{text}"
    );
    assert!(!text.contains("SLOW"), "{text}");
    crate::common::assert_contains(&text, "Slow nodes: none among like nodes");
    // Like machines still get their verdict, exit 1.
    let like = node_doc(dir.path(), "1", "vm2", "Intel(R) Xeon(R) Processor");
    let third = node_doc(dir.path(), "5", "vm3", "Intel(R) Xeon(R) Processor");
    let out = common::membw()
        .arg("report")
        .args([&x86, &like, &third])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("slow nodes: vm2"));
}

#[test]
fn the_numa_heat_map_marks_cells_measured_beside_other_work() {
    let (dir, file, f) = crate::common::scratch_file("numa.jsonl");
    for (rate, marked) in [("4,busy=40", true), ("4", false)] {
        let _ = std::fs::remove_file(&file);
        stdout(&[
            "sweep", "--fake-source", rate, "--numa-matrix", "single", "--size", "1M", "--ntimes",
            "2",
            // The fake's rate is 1.25 × with streaming stores, which auto
            // picks or not by the caches CI's legs lend: forced here.
            "--stores", "regular", "-o", &f,
        ]);
        let plots = dir.path().join(format!("plots-{marked}"));
        stdout(&["report", &f, "--plots", plots.to_str().unwrap()]);
        let svg = std::fs::read_to_string(plots.join("triad-numa-a.svg")).unwrap();
        assert_eq!(svg.contains("NOT TRUSTED"), marked, "{svg}");
        assert_eq!(svg.contains("4.0?"), marked);
    }
}

/// `place` on a 2-socket, 12-core-per-socket node with SMT (48 CPUs).
fn place_e5(args: &[&str]) -> String {
    let tree = common::shared_tree("xeon-e5-2680v3-2s");
    let mut all = vec!["place", "--sysroot", tree.to_str().unwrap()];
    all.extend(args);
    stdout(&all)
}

#[test]
fn placements_that_put_threads_on_siblings_say_so_and_spread_means_one_thing() {
    let default = place_e5(&["--threads", "30"]);
    let spread = place_e5(&["--strategy", "spread", "--threads", "30"]);
    let line = |t: &str| t.lines().nth(1).unwrap().to_string();
    // The same CPUs however spread was asked for.
    assert_eq!(line(&default), line(&spread));
    for t in [&default, &spread] {
        crate::common::assert_contains(
            t,
            "(6 of 30 threads on SMT siblings: 6 cores run two or more)",
        );
    }
    assert!(!default.contains("one thread per core"), "{default}");
    let node = place_e5(&["--cpunode", "0", "--threads", "24"]);
    crate::common::assert_contains(&node, "12 of 24 threads on SMT siblings");
    // Where every thread has a core, nothing is added.
    let fits = place_e5(&["--threads", "20"]);
    assert!(fits.contains("default: one thread per core, spread") && !fits.contains("SMT"));
}

#[test]
fn primary_stacks_every_thread_on_the_first_place_as_openmp_does() {
    // The field guide's habit: OMP_PLACES=cores OMP_PROC_BIND=master. Its
    // first place is core 0 (CPUs 0 and 24): four threads take both in turn.
    let tree = common::shared_tree("xeon-e5-2680v3-2s");
    let sysroot = ["place", "--sysroot", tree.to_str().unwrap()];
    let out = common::membw()
        .args(sysroot)
        .args(["--threads", "4"])
        .env("OMP_PLACES", "cores")
        .env("OMP_PROC_BIND", "master")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    crate::common::assert_success(&out);
    crate::common::assert_contains(&text, "0,24,0,24");
    crate::common::assert_contains(
        &text,
        "(4 threads on 2 CPUs of 1 core: CPUs 0,24 run two or more)",
    );
    // `primary`, the newer name, the same; one thread per place (no
    // count) shares nothing.
    let primary = place_e5(&["--places", "cores", "--bind", "primary", "--threads", "4"]);
    crate::common::assert_contains(&primary, "0,24,0,24");
    let close = place_e5(&["--places", "cores", "--bind", "close"]);
    assert!(!close.contains("two or more"), "{close}");
    // Stacking is bounded, in one line naming the bound.
    let mut args = sysroot.to_vec();
    args.extend([
        "--places", "cores", "--bind", "primary", "--threads", "1000",
    ]);
    common::usage_error(&args, "8 threads a CPU at most");
}

#[test]
fn caches_of_unknown_size_judge_no_rule_and_are_never_zero_bytes() {
    // The E5 node with no size for its L1d caches (sysfs left it out).
    let dir = crate::common::scratch_dir();
    let tree = dir.path().join("e5");
    let spec = common::fixtures_dir().join("xeon-e5-2680v3-2s.json");
    common::stdout(&[
        "topo",
        "--generate",
        spec.to_str().unwrap(),
        tree.to_str().unwrap(),
    ]);
    let cpus = tree.join("sys/devices/system/cpu");
    for cpu in std::fs::read_dir(&cpus).unwrap().flatten() {
        let _ = std::fs::remove_file(cpu.path().join("cache/index0/size"));
    }
    let sysroot = ["--sysroot", tree.to_str().unwrap()];
    let mut args = vec!["run", "--dry-run"];
    args.extend(sysroot);
    let plan = common::stdout(&args);
    crate::common::assert_contains(
        &plan,
        "STREAM's rule cannot be judged, neither memory nor cache bandwidth: sysfs gives no size for an L1d cache serving these CPUs",
    );
    assert!(
        !plan.contains("0 B of caches") && !plan.contains("(STREAM's rule holds)"),
        "{plan}"
    );
    // Auto stores do not lean on a size nobody knows: both modes timed.
    crate::common::assert_contains(&plan, "near caches of unknown size");
    // STREAM's own default size, since the rule gives none.
    crate::common::assert_contains(&plan, "3 × 10002432 elements");
    let mut args = vec!["topo"];
    args.extend(sysroot);
    let topo = common::stdout(&args);
    crate::common::assert_contains(
        &topo,
        "sum of all unknown: sysfs gives no size for an L1d cache",
    );
}

/// A sweep whose arrays sit in the caches says so in every form: its
/// table (a `measured` column and the legend), its CSV (`in_caches`) and
/// its plot (a square round each such point, and its key), not only in
/// the JSON's warnings.
#[test]
fn cache_resident_points_are_flagged_in_every_table_plot_and_format() {
    let (dir, _, f) = crate::common::scratch_file("s.jsonl");
    // 64 KiB arrays: under 4 × any host's caches.
    let table = stdout(&[
        "sweep", "--fake-source", "4", "--size", "8192", "--threads", "1,2", "-o", &f,
    ]);
    crate::common::assert_contains(&table, "% peak");
    // Each point's row says caches where its share of the peak would be.
    let cached = (table.lines())
        .filter(|l| l.contains(" spread ") && l.trim_end().ends_with("caches"))
        .count();
    assert_eq!(cached, 2, "{table}");
    crate::common::assert_contains(&table, "caches: 2 of 2 points measured the caches");
    let csv = stdout(&["report", &f, "--format", "csv"]);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = header
        .iter()
        .position(|h| *h == "in_caches")
        .expect("in_caches column");
    // The last columns hold no commas (untrusted_why may): count from the end.
    let from_end = header.len() - column;
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.split(',').rev().nth(from_end - 1) == Some("true")),
        "{csv}"
    );
    let md = stdout(&["report", &f, "--format", "markdown"]);
    crate::common::assert_contains(&md, "| caches |");
    let html = dir.path().join("r.html");
    stdout(&["report", &f, "--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("cache bandwidth: arrays"), "the plot's key");
}

/// STREAM's rule in three bands, on this host's caches: all arrays within
/// them (cache bandwidth), past them together but each under 4 × them
/// (under the rule, caches may still help: not "cache bandwidth"), and
/// each at 4 × them (memory). Sizes from the host, planned, not run.
#[test]
fn arrays_between_the_caches_and_streams_rule_are_their_own_band() {
    let doc: Value = serde_json::from_str(&stdout(&[
        "run", "--size", "10k", "--ntimes", "2", "--json", "--no-stores-check",
    ]))
    .unwrap();
    let caches = doc["measurement"]["in_caches"]["cache_bytes"]
        .as_u64()
        .unwrap();
    let plan = |elements: u64| stdout(&["run", "--dry-run", "--size", &elements.to_string()]);
    let within = plan(caches / 8 / 4);
    crate::common::assert_contains(&within, ": cache bandwidth;");
    // Each array as large as the caches: three of them exceed them.
    let between = plan(caches / 8);
    assert!(
        between.contains("under STREAM's rule: caches may still help")
            && !between.contains("cache bandwidth"),
        "{between}"
    );
    let memory = plan(4 * caches / 8 + 1);
    crate::common::assert_contains(&memory, "memory (STREAM's rule holds)");
}

/// A node's run document whose triad ran at `rates` GB/s (after an
/// uncounted first repetition), as from `host`.
fn node_with_rates(dir: &std::path::Path, host: &str, rates: &[f64]) -> std::path::PathBuf {
    let path = node_doc(dir, "5", host, "Intel(R) Xeon(R) Processor");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let m = &mut doc["measurement"];
    let bytes = m["array_elements"].as_f64().unwrap() * 24.0;
    let results = m["results"].as_array_mut().unwrap();
    let triad = results.iter_mut().find(|r| r["kernel"] == "triad").unwrap();
    let mut times = vec![bytes / 5e9];
    times.extend(rates.iter().map(|r| bytes / (r * 1e9)));
    let best = rates.iter().copied().fold(0.0, f64::max);
    triad["times_s"] = serde_json::json!(times);
    triad["best_rate_mb_s"] = serde_json::json!(best * 1e3);
    triad["min_time_s"] = serde_json::json!(bytes / (best * 1e9));
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

#[test]
fn a_node_slow_by_one_lucky_best_elsewhere_is_not_called_slow_by_its_mean() {
    // node02 ran a steady 11.05 GB/s; the others 11.0 with one lucky 12.1.
    // Its best is 91 % of the median's, but its mean is not slow: the
    // words and the exit code follow the same comparison.
    let dir = crate::common::scratch_dir();
    let lucky = [12.1, 11.0, 11.0, 11.0];
    let files = [
        node_with_rates(dir.path(), "node01", &lucky),
        node_with_rates(dir.path(), "node02", &[11.03, 11.05, 11.07, 11.04]),
        node_with_rates(dir.path(), "node03", &lucky),
    ];
    let out = common::membw()
        .arg("report")
        .args(&files)
        .args(["--outlier", "0.95"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("SLOW"), "{text}");
    assert!(
        text.contains("Slow nodes: none (below 95 % of the median node by a best only"),
        "{text}"
    );
    crate::common::assert_contains(
        &text,
        "node02: not slow: its best was under the line, but the mean of 4 repetitions",
    );
}

/// membw's words under `wrapper` (a command and its arguments before
/// membw's): stdout, or `None` where the wrapper cannot run the binary
/// under test (a qemu-user runner: the wrapper would bind qemu) or is
/// not installed (skipped here, a failure in CI).
fn under(wrapper: &[&str], package: &str, args: &[&str]) -> Option<String> {
    let argv = common::membw_argv();
    if argv.len() > 1 {
        eprintln!(
            "skipped: {} cannot wrap membw behind {}",
            wrapper[0], argv[0]
        );
        return None;
    }
    let mut cmd = std::process::Command::new(wrapper[0]);
    cmd.args(&wrapper[1..]).args(&argv).args(args);
    let out = common::tool(&mut cmd, package)?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn threads_pinned_by_a_wrapper_are_said_to_be_and_its_variables_named_as_its() {
    let run = ["run", "--size", "1M", "--ntimes", "3", "--format", "json"];
    // likwid-pin's wrapper pins each thread membw starts (it sets
    // KMP_AFFINITY=disabled, so membw pins nothing itself).
    if let Some(json) = under(&["likwid-pin", "-q", "-c", "N:0"], "likwid", &run) {
        let doc: Value = serde_json::from_str(&json).unwrap();
        let m = &doc["measurement"];
        assert_eq!(m["bound_by"], "likwid-pin", "{m}");
        assert_eq!(m["threads"][0]["affinity"], "0", "{m}");
        let text = under(&["likwid-pin", "-q", "-c", "N:0"], "likwid", &run[..5]).unwrap();
        assert!(
            text.contains("read back from the kernel) = 0: pinned by likwid-pin, not by membw"),
            "{text}"
        );
        crate::common::assert_contains(
            &text,
            "KMP_AFFINITY=disabled (set by likwid-pin, which pins the threads itself)",
        );
    }
    // An unpinned thread in a process confined to one CPU (taskset): bound
    // to it by another tool.
    let one = [
        "run", "--size", "1M", "--ntimes", "3", "--threads", "1", "--no-pin",
    ];
    if let Some(text) = under(&["taskset", "-c", "0"], "util-linux", &one) {
        assert!(
            text.contains("read back from the kernel) = 0: pinned by another tool"),
            "{text}"
        );
    }
    // A free thread is not called pinned (where it may run on two CPUs).
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if common::membw_argv().len() == 1 && cpus > 1 {
        let free = common::stdout(&one[..]);
        assert!(!free.contains("pinned by"), "{free}");
        crate::common::assert_contains(&free, "Thread affinity = none");
    }
}

#[test]
fn runs_of_another_isa_are_another_point_with_an_isa_column_never_pooled() {
    let (_dir, _, out) = crate::common::scratch_file("isa.jsonl");
    let tiny = ["--size", "64K", "--ntimes", "3", "-o", &out];
    // Scalar code is never a host's widest: another point than the default.
    for isa in ["scalar", "auto"] {
        common::membw()
            .args(["run", "--isa", isa])
            .args(tiny)
            .assert()
            .success();
    }
    let text = stdout(&["report", &out]);
    let header = text.lines().find(|l| l.contains("triad GB/s")).unwrap();
    assert!(header.contains(" isa "), "{text}");
    assert!(text.lines().any(|l| l.contains(" scalar ")), "{text}");
    assert!(
        !text.contains("of the 2 per point"),
        "two points, one run each: {text}"
    );
    // And an axis of the turned table: one column per ISA, never pooled.
    let turned = stdout(&["report", &out, "--rows", "threads", "--columns", "isa"]);
    let header = turned.lines().next().unwrap();
    assert!(
        header.contains("\\ isa") && header.contains("scalar"),
        "{turned}"
    );
    assert_eq!(header.split_whitespace().count(), 5, "two ISAs: {turned}");
}

#[test]
fn lists_name_each_point_by_what_tells_it_apart() {
    let (dir, file, f) = crate::common::scratch_file("ex.jsonl");
    let gcc = format!("gcc={}", common::stream_output_script(dir.path(), 8));
    let args = [
        "sweep", "--fake-source", "5,busy=60", "--threads", "1", "--repeat", "2",
    ];
    common::membw()
        .args(args)
        .args(["--exec", "membw", "--exec", &gcc, "-o", &f])
        .assert()
        .success();
    // The program's runs beside the same other work as membw's (its own
    // are watched for real, and a quiet host trusts them).
    let lines: Vec<Value> = (std::fs::read_to_string(&file).unwrap().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let busy = lines
        .iter()
        .find(|r| r["point"]["program"].is_null())
        .unwrap()["runs"][0]["interference"]
        .clone();
    let mut text = String::new();
    for mut r in lines {
        for run in r["runs"].as_array_mut().unwrap() {
            run["interference"] = busy.clone();
        }
        text.push_str(&format!("{r}\n"));
    }
    std::fs::write(&file, text).unwrap();
    let report = stdout(&["report", &f]);
    let listed: Vec<&str> = (report.lines())
        .skip_while(|l| !l.starts_with("NOT TRUSTED for triad"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(listed.len(), 2, "{report}");
    assert!(
        listed.iter().any(|l| l.starts_with("  gcc: spread × 1")),
        "{report}"
    );
    assert_ne!(listed[0], listed[1], "{report}");
    // The legend's n where no run of a point is trusted: every run's.
    crate::common::assert_contains(
        &report,
        "n = the trusted runs of the 2 per point; all 2, none trusted, where NOT TRUSTED",
    );
    // A NUMA matrix's point: its nodes, in the matrix's words.
    let numa = dir.path().join("numa.jsonl");
    let n = numa.to_str().unwrap();
    let out = stdout(&[
        "sweep", "--fake-source", "5,busy=60", "--numa-matrix", "-o", n,
    ]);
    crate::common::assert_contains(&out, "  one thread of node 0 → memory node 0: CPU");
    assert!(!out.contains("compact on cpunode"), "{out}");
}
