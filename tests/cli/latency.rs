//! `membw latency` end to end: the documented JSON fields, the ordering of
//! the percentiles, and one-line errors for bad input.

use crate::common;

use crate::common::{stdout, usage_error};

/// Under `numactl --membind N`, a chase without `--mem` runs under the
/// policy membw was started with and names it as inherited, as `run` does;
/// the same policy given with `--mem` is not.
#[test]
fn latency_names_the_policy_it_inherited_from_numactl() {
    if !common::mbind_works() {
        return;
    }
    let mut probe = std::process::Command::new("numactl");
    probe.arg("--show");
    if common::tool(&mut probe, "numactl").is_none() {
        return;
    }
    let latency = |extra: &[&str]| {
        let out = std::process::Command::new("numactl")
            .args(["--membind", "0"])
            .args(common::membw_argv())
            .args(["latency", "--sizes", "16KiB", "--time", "10ms"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let d: serde_json::Value = serde_json::from_str(&latency(&["--format", "json"])).unwrap();
    assert_eq!(d["mem"], "bind:0", "{d}");
    assert_eq!(d["records"][0]["mem_inherited"], true, "{d}");
    let text = latency(&[]);
    crate::common::assert_contains(
        &text,
        "memory bind:0, inherited (numactl or the parent process)",
    );
    let given: serde_json::Value =
        serde_json::from_str(&latency(&["--mem", "bind:0", "--format", "json"])).unwrap();
    assert_eq!(given["mem"], "bind:0", "{given}");
    assert!(
        given["records"][0].get("mem_inherited").is_none(),
        "{given}"
    );
}

#[test]
fn latency_json_has_the_documented_fields() {
    let json = stdout(&[
        "latency", "--sizes", "16KiB,64KiB", "--time", "20ms", "--hugepages", "never", "--ghz",
        "2.5", "--format", "json",
    ]);
    let d: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(d["experiment"], "latency");
    assert_eq!(d["hugepages"], "never");
    assert_eq!(d["mem"], "local");
    assert_eq!(d["clock_ghz"], 2.5);
    let points = d["points"].as_array().unwrap();
    assert_eq!(points.len(), 4, "two sizes, each chased in both orders");
    let sizes = [16 << 10, 64 << 10];
    let chases = sizes
        .iter()
        .map(|&b| ("random", b, b / 64))
        .chain(sizes.iter().map(|&b| ("page-local", b, b / 256)));
    for (p, (order, bytes, lines)) in points.iter().zip(chases) {
        assert_eq!(p["order"], order, "{p}");
        assert_eq!(p["bytes"], bytes);
        assert_eq!(
            p["lines"], lines,
            "one line per 256 B in the page-local chase"
        );
        let f = |k: &str| p[k].as_f64().unwrap();
        assert!(f("min_ns") > 0.0, "{p}");
        assert!(
            f("min_ns") <= f("p50_ns") && f("p50_ns") <= f("p90_ns") && f("p90_ns") <= f("p99_ns")
        );
        assert!((f("p50_cycles") - 2.5 * f("p50_ns")).abs() < 1e-9);
        assert!(p["chunks"].as_u64().unwrap() >= 5);
        // The median's interval holds it (order statistics: from 6 chunks).
        if p["chunks"].as_u64().unwrap() >= 6 {
            let ci = &p["p50_ci"];
            let (lo, hi) = (ci["low"].as_f64().unwrap(), ci["high"].as_f64().unwrap());
            assert!(
                lo <= f("p50_ns") && f("p50_ns") <= hi && f("min_ns") <= lo,
                "{p}"
            );
            assert_eq!(ci["level"], 0.95);
        }
    }
    let text = stdout(&["latency", "--sizes", "8KiB", "--time", "10ms"]);
    assert!(
        text.contains("one random cycle of all cache lines")
            && text.contains("random within 256 KiB windows"),
        "both chases are named: {text}"
    );
    let one = stdout(&[
        "latency", "--sizes", "8KiB", "--time", "10ms", "--chase", "page-local",
    ]);
    assert!(!one.contains("one random cycle"), "{one}");
    usage_error(
        &["latency", "--chase", "random,sequential"],
        "'sequential' is not a chase order",
    );
    assert!(
        text.contains("p50 ns") && text.contains("p50 95 % CI") && text.contains("8 KiB"),
        "{text}"
    );
}

#[test]
fn bad_latency_input_is_one_line() {
    usage_error(&["latency", "--cpu", "100000"], "--cpu 100000");
    usage_error(&["latency", "--sizes", "1TiB"], "--working-sets");
    usage_error(&["latency", "--sizes", "64B"], "--working-sets");
    // More than the machine has is refused before anything is mapped.
    let total_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    if total_kib < 30 << 20 {
        usage_error(&["latency", "--sizes", "32GiB"], "available");
    }
    usage_error(&["latency", "--sizes", "lots"], "--working-sets");
    usage_error(&["latency", "--mem", "bind:99"], "--mem");
    usage_error(&["latency", "--mem", "a=local,b=bind:0"], "--mem");
    usage_error(&["latency", "--ghz", "0"], "--ghz");
}

/// The allowed CPUs and the nodes as `membw topo --json` sees them:
/// (CPU nodes with an allowed CPU, every node with memory).
fn nodes() -> (Vec<u64>, Vec<u64>) {
    let t: serde_json::Value = serde_json::from_str(&stdout(&["topo", "--json"])).unwrap();
    let nodes = t["topology"]["nodes"].as_array().unwrap();
    let with_cpus = nodes
        .iter()
        .filter(|n| !n["cpus"].as_array().unwrap().is_empty())
        .map(|n| n["id"].as_u64().unwrap())
        .collect();
    let all = nodes.iter().map(|n| n["id"].as_u64().unwrap()).collect();
    (with_cpus, all)
}

#[test]
fn the_numa_matrix_has_a_row_per_cpu_node_and_a_cell_per_memory_node() {
    if !common::mbind_works() {
        return;
    }
    let json = stdout(&[
        "latency", "--numa-matrix", "--sizes", "64KiB", "--time", "10ms", "--format", "json",
    ]);
    let d: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(d["study"], "matrix");
    let (cpu_nodes, mem_nodes) = nodes();
    let cells: Vec<(u64, u64)> = d["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let p = &r["point"];
            assert_eq!(p["bytes"], 64 << 10);
            assert!(r["latency"]["p50_ns"].as_f64().unwrap() > 0.0);
            (
                p["cpu_node"].as_u64().unwrap(),
                p["mem_node"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(u64, u64)> = cpu_nodes
        .iter()
        .flat_map(|&c| mem_nodes.iter().map(move |&m| (c, m)))
        .collect();
    assert_eq!(cells, want);
    let text = stdout(&[
        "latency", "--numa-matrix", "--sizes", "64KiB", "--time", "10ms",
    ]);
    assert!(
        text.contains("Latency matrix") && text.contains("mem 0"),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with("node "))
            .count(),
        cpu_nodes.len(),
        "{text}"
    );
}

/// Needs two CPUs: one chases, one loads. The machines here and in CI
/// have them.
#[test]
fn loaded_latency_sweeps_the_delay_and_counts_the_load() {
    let dir = crate::common::scratch_dir();
    let file = dir.path().join("loaded.jsonl");
    let json = stdout(&[
        "latency",
        "-o",
        file.to_str().unwrap(),
        "--loaded",
        "--cpu",
        "0",
        "--load-cpus",
        "1",
        "--sizes",
        "2MiB",
        "--mix",
        "read,copy,nt-write",
        "--delays",
        "2us,0",
        "--load-size",
        "16MiB",
        "--time",
        "40ms",
        "--format",
        "json",
    ]);
    let d: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(d["study"], "loaded");
    let records = d["records"].as_array().unwrap();
    // The idle reference first, then 3 mixes × 2 delays.
    assert_eq!(records.len(), 7);
    assert_eq!(records[0]["point"]["study"], "idle");
    // The observers watched every point's window, the idle one's and each
    // loaded one's.
    for r in records {
        let window_s = r["interference"]["window_s"].as_f64();
        assert!(window_s.is_some_and(|s| s > 0.0), "{r}");
    }
    let idle = records[0]["latency"]["p50_ns"].as_f64().unwrap();
    for pair in records[1..].chunks(2) {
        let (slow, free) = (&pair[0], &pair[1]);
        assert_eq!(slow["point"]["mix"], free["point"]["mix"]);
        assert_eq!(slow["point"]["delay_ns"], 2000.0);
        assert_eq!(free["point"]["delay_ns"], 0.0);
        assert_eq!(slow["point"]["load_cpus"], serde_json::json!([1]));
        assert_eq!(slow["idle_p50_ns"].as_f64(), Some(idle));
        let gb = |r: &serde_json::Value| r["load"]["gb_s"].as_f64().unwrap();
        // 64 B per 2 µs and array is 0.03 GB/s (copy: 0.06); unthrottled
        // is gigabytes natively, a few hundred MB/s under qemu-user (CI's
        // aarch64 leg measured 0.38 GB/s for nt-write). The bound leaves 3×
        // for the VM's noise.
        assert!(gb(slow) > 0.0 && gb(slow) < 0.2, "{slow}");
        let gap = if common::emulated() { 3.0 } else { 10.0 };
        assert!(gb(free) > gap * gb(slow), "{gap}× {free}\nagainst {slow}");
        assert!(slow["load"]["delay_spins"].as_u64().unwrap() > 0);
    }
    let copy = &records[3];
    assert_eq!(copy["point"]["mix"], "copy");
    let (counted, bus) = (
        copy["load"]["gb_s"].as_f64().unwrap(),
        copy["load"]["bus_gb_s"].as_f64().unwrap(),
    );
    assert!((bus / counted - 1.5).abs() < 1e-9, "copy's write-allocate");
    // The file holds the same records; its plot has one line per mix.
    let plots = dir.path().join("plots");
    let report = stdout(&[
        "report",
        file.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    assert!(
        report.contains("Loaded latency") && report.contains("nt-write"),
        "{report}"
    );
    let svg = std::fs::read_to_string(plots.join("latency-loaded.svg")).unwrap();
    assert_eq!(series_in(&svg), 3, "read, copy, nt-write");
    assert!(svg.contains("idle"), "the idle latency is marked");
}

/// Number of data series in a plot: one 2-pixel polyline each.
fn series_in(svg: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("SVG is well-formed XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke-width") == Some("2"))
        .count()
}

#[test]
fn latency_files_resume_report_and_compare() {
    let (dir, file, f) = crate::common::scratch_file("lat.jsonl");
    let base = [
        "latency", "--time", "10ms", "--hugepages", "never", "--chase", "random",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let run = |args: Vec<String>| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        stdout(&a)
    };
    run(with(&["--sizes", "8KiB,64KiB", "-o", &f]));
    let lines = || std::fs::read_to_string(&file).unwrap().lines().count();
    assert_eq!(lines(), 2);
    // An existing file is never overwritten.
    usage_error(&["latency", "--sizes", "8KiB", "-o", &f], "already exists");
    // A torn last line (a crash mid-write) is dropped on resume; the points
    // already there are not measured again.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("{\"schema_version\":");
    std::fs::write(&file, text).unwrap();
    let out = common::membw()
        .args(with(&["--sizes", "8KiB,64KiB,1MiB", "--resume", &f]))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("dropped line 3"));
    assert_eq!(lines(), 3);
    let plots = dir.path().join("plots");
    let report = stdout(&["report", &f, "--plots", plots.to_str().unwrap()]);
    assert!(
        report.contains("1 MiB") && report.contains("p50 ns"),
        "{report}"
    );
    let svg = std::fs::read_to_string(plots.join("latency-sizes.svg")).unwrap();
    assert_eq!(series_in(&svg), 1, "one line: one CPU, one placement");
    assert!(svg.contains("L1d"), "the cache capacities are marked");
    let same = stdout(&["compare", &f, &f]);
    crate::common::assert_contains(&same, "3 of 3 points");
    assert_eq!(same.matches(" 1.000").count(), 3, "{same}");
    // A bandwidth file is not a latency file.
    let sweep = dir.path().join("s.jsonl");
    stdout(&[
        "sweep",
        "--threads",
        "1",
        "--size",
        "1M",
        "--fake-source",
        "5",
        "-o",
        sweep.to_str().unwrap(),
    ]);
    usage_error(
        &["compare", &f, sweep.to_str().unwrap()],
        "cannot be compared",
    );
}

#[test]
fn ctrl_c_keeps_the_points_measured_and_resume_finishes() {
    let (_dir, file, f) = crate::common::scratch_file("lat.jsonl");
    let args = [
        "latency", "--sizes", "4KiB..64MiB", "--time", "150ms", "--hugepages", "never", "--chase",
        "random",
    ];
    let child = common::membw_process()
        .args(args)
        .args(["-o", &f])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let lines = || std::fs::read_to_string(&file).map_or(0, |s| s.lines().count());
    while lines() < 1 {
        assert!(std::time::Instant::now() < deadline, "no point completed");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = common::stop_with(child, "INT");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("stopped by SIGINT") && stderr.contains("--resume"),
        "{stderr}"
    );
    let before = lines();
    assert!(
        (1..15).contains(&before),
        "{before} points before the signal"
    );
    let mut resumed: Vec<&str> = args.to_vec();
    resumed.extend(["--resume", &f]);
    stdout(&resumed);
    assert_eq!(lines(), 15, "4 KiB to 64 MiB, each once");
}

#[test]
fn bad_loaded_input_is_one_line() {
    usage_error(
        &["latency", "--loaded", "--cpu", "0", "--load-cpus", "0"],
        "chaser's",
    );
    usage_error(
        &["latency", "--loaded", "--load-cpus", "0-99999"],
        "--load-cpus",
    );
    usage_error(
        &["latency", "--loaded", "--cpu", "0", "--load-cpus", "1,1"],
        "listed twice",
    );
    usage_error(
        &["latency", "--loaded", "--load-size", "1KiB"],
        "at least 64 KiB",
    );
    let many = vec!["0"; 65].join(",");
    usage_error(&["latency", "--loaded", "--delays", &many], "at most 64");
    usage_error(
        &["latency", "--loaded", "--mix", "read,4:1"],
        "unknown mix '4:1'",
    );
    usage_error(&["latency", "--loaded", "--delays", "1h"], "no load at all");
    usage_error(&["latency", "--loaded", "--delays", "soon"], "'soon'");
    usage_error(&["latency", "--loaded", "--numa-matrix"], "--numa-matrix");
    usage_error(&["latency", "--mix", "read"], "--loaded");
    usage_error(&["latency", "--numa-matrix", "--mem", "bind:0"], "--mem");
}

#[test]
fn core_to_core_latency_pairs_every_allowed_cpu_in_both_cases_and_says_what_they_share() {
    let (dir, file, f) = crate::common::scratch_file("c2c.jsonl");
    let text = stdout(&["latency", "--c2c", "--time", "5ms", "-o", &f]);
    assert!(text.contains("one hop of a modified line (HITM"), "{text}");
    crate::common::assert_contains(&text, "one load of a clean line the other CPU holds (HIT)");
    crate::common::assert_contains(&text, "CPUs share");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cpus = membw::sys::thread_affinity(0).unwrap().len();
    let pairs = cpus * (cpus - 1) / 2;
    assert_eq!(records.len(), 2 * pairs, "one record per pair and case");
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["point"]["study"], "c2c");
        assert!(r["interference"]["window_s"].as_f64().is_some(), "{r}");
        let case = if i < pairs { "modified" } else { "clean" };
        assert_eq!(r["point"]["line"], case, "{r}");
        let a = r["point"]["cpu"].as_u64().unwrap();
        let b = r["point"]["peer_cpu"].as_u64().unwrap();
        assert!(a < b, "{r}");
        assert!(r["relation"].is_string(), "{r}");
        let p50 = r["latency"]["p50_ns"].as_f64().unwrap();
        assert!(p50 > 0.0 && p50 < 1e6, "{r}");
    }
    // The file resumes as every latency study does: nothing measured twice,
    // whichever cases the resumed run asks for.
    // The report of a resumed run covers the points the file already held.
    let again = stdout(&["latency", "--c2c", "--time", "5ms", "--resume", &f]);
    assert!(
        again.contains("modified line (HITM") && again.contains("(HIT)"),
        "{again}"
    );
    let clean = stdout(&["latency", "--c2c", "clean", "--time", "5ms", "--resume", &f]);
    assert!(
        clean.contains("(HIT)") && !clean.contains("HITM"),
        "{clean}"
    );
    let lines = std::fs::read_to_string(&file).unwrap().lines().count();
    assert_eq!(lines, records.len());
    // One heat map per case, a cell per ordered pair.
    let plots = dir.path().join("plots");
    stdout(&["report", &f, "--plots", plots.to_str().unwrap()]);
    for case in ["modified", "clean"] {
        let svg = std::fs::read_to_string(plots.join(format!("c2c-{case}.svg"))).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("SVG is well-formed XML");
        let rects = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
        assert!(
            rects >= 2 * pairs,
            "{case}: {rects} rects for {pairs} pairs"
        );
    }
    // compare tells the pairs and cases apart.
    let (a, b) = (
        &records[0]["point"]["cpu"],
        &records[0]["point"]["peer_cpu"],
    );
    let compared = stdout(&["compare", &f, &f]);
    for case in ["modified", "clean"] {
        let row = format!("c2c CPU {a} ↔ CPU {b} · {case} line");
        assert!(compared.contains(&row), "{row}\n{compared}");
    }
    // One case alone: only its records.
    let one = dir.path().join("modified.jsonl");
    stdout(&[
        "latency",
        "--c2c",
        "modified",
        "--time",
        "5ms",
        "-o",
        one.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&one).unwrap();
    assert_eq!(text.lines().count(), pairs);
    assert!(!text.contains("\"clean\""), "{text}");
    usage_error(&["latency", "--c2c", "dirty"], "'dirty'");
    usage_error(
        &["latency", "--c2c", "--numa-matrix"],
        "cannot be used with",
    );
    // One CPU has no pair.
    let one = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .args(common::membw_argv())
        .args(["latency", "--c2c", "--time", "5ms"])
        .output()
        .unwrap();
    assert_eq!(one.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&one.stderr);
    crate::common::assert_contains(&stderr, "--c2c: a line needs two CPUs");
}
