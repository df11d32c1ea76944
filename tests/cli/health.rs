//! `membw baseline` and `membw check` through the real binary: exit codes
//! 0/1/2, the one-line reason, symmetry on a fixture with one slow NUMA
//! domain (fake source), the Prometheus file, and bad input. A check that
//! fails runs until its budget ends: the fake source sleeps in those
//! (`delay=100ms`) rather than spin through rounds.

use crate::common;

use crate::common::{membw, shared_tree, usage_error};
use std::path::Path;

const NPS4: &str = "epyc-7742-2s-nps4";

/// membw's exit code, stdout and stderr.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = membw().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn nps4() -> String {
    shared_tree(NPS4).to_string_lossy().into_owned()
}

/// A baseline of the NPS4 fixture at 4 GB/s per thread, in `dir`.
fn fixture_baseline(dir: &Path) -> String {
    let path = dir.join("b.json").to_string_lossy().into_owned();
    let (code, out, err) = run(&[
        "baseline",
        "--sysroot",
        &nps4(),
        "--fake-source",
        "4",
        "--rounds",
        "2",
        "-o",
        &path,
    ]);
    assert_eq!(code, Some(0), "{err}");
    crate::common::assert_contains(&out, "NUMA node 7");
    path
}

#[test]
fn a_healthy_node_passes_at_once_and_quiet_prints_nothing() {
    let dir = crate::common::scratch_dir();
    let b = fixture_baseline(dir.path());
    let base = [
        "check",
        "--sysroot",
        &nps4(),
        "--fake-source",
        "4",
        "--baseline",
        &b,
    ];
    let (code, out, err) = run(&[&base[..], &["--quiet"]].concat());
    assert_eq!((code, out.as_str(), err.as_str()), (Some(0), "", ""));
    let (code, out, _) = run(&[&base[..], &["--format", "json"]].concat());
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["healthy"], true);
    assert_eq!(v["rounds"], 1, "a pass stops after the first round");
    // The node and 8 domains, two kernels each.
    assert_eq!(v["findings"].as_array().unwrap().len(), 18);
    assert_eq!(v["findings"][0]["scope"], "node");
}

#[test]
fn exactly_the_slow_domain_is_named_with_and_without_a_baseline() {
    let dir = crate::common::scratch_dir();
    let b = fixture_baseline(dir.path());
    // Node 3 is CPUs 48-63 and 176-191; its threads run at 61 %.
    let slow = [
        "--sysroot",
        &nps4(),
        "--fake-source",
        "4,delay=100ms,slow=48-63@0.61",
        "--budget",
        "1s",
    ];
    let (code, out, err) = run(&[&["check"][..], &slow].concat());
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(
        err.trim_end(),
        "membw: NUMA node 3 copy 48.8 GB/s is 61 % of the other domains' 80.0 GB/s (tolerance 10 %): a memory channel on node 3 is missing or slow"
    );
    crate::common::assert_contains(&out, "UNHEALTHY");
    assert_eq!(
        out.matches("← short").count(),
        2,
        "copy and triad of node 3: {out}"
    );
    // Each short finding says whether its rounds decide it (one round in
    // this budget on a quiet machine, two on a fast one).
    for kernel in ["copy", "triad"] {
        let line = format!("NUMA node 3 {kernel}: short");
        assert!(
            out.contains(&format!("{line}, resolved at 95 %: mean of "))
                || out.contains(&format!("{line} in its only round;")),
            "{out}"
        );
    }
    let (code, _, err) = run(&[&["check", "--baseline", &b][..], &slow].concat());
    assert_eq!(code, Some(1));
    assert!(
        err.starts_with("membw: NUMA node 3 copy 48.8 GB/s is 61 % of its baseline 80.0 GB/s")
            && err.contains("a memory channel on node 3"),
        "{err}"
    );
    // Every domain slow against the baseline: the node as a whole is named.
    let (code, _, err) = run(&[
        "check",
        "--sysroot",
        &nps4(),
        "--fake-source",
        "3,delay=100ms",
        "--baseline",
        &b,
        "--budget",
        "1s",
    ]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("node copy") && err.contains("slower everywhere"),
        "{err}"
    );
}

#[test]
fn the_baseline_must_fit_this_kind_of_node() {
    let dir = crate::common::scratch_dir();
    let b = fixture_baseline(dir.path());
    let text = std::fs::read_to_string(&b).unwrap();
    let edit = |name: &str, from: &str, to: &str| {
        let path = dir.path().join(name);
        assert!(text.contains(from), "{from}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        path.to_string_lossy().into_owned()
    };
    let check = |b: &str| {
        run(&[
            "check",
            "--sysroot",
            &nps4(),
            "--fake-source",
            "4",
            "--baseline",
            b,
            "--budget",
            "1s",
        ])
    };
    let other = edit(
        "other.json",
        "AMD EPYC 7742 64-Core Processor",
        "Intel Xeon",
    );
    let (code, out, err) = check(&other);
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty() && err.contains("another kind of node: CPU model 'AMD EPYC 7742 64-Core Processor' here, 'Intel Xeon'"), "{err}");
    // The same node with less memory than the baseline: a DIMM gone (exit 1).
    let bytes = 64u64 << 30;
    let more = edit(
        "more.json",
        &format!("\"bytes\": {bytes}"),
        &format!("\"bytes\": {}", 2 * bytes),
    );
    let (code, _, err) = check(&more);
    assert_eq!(code, Some(1), "{err}");
    crate::common::assert_contains(&err, "NUMA node 0 has 64 GiB here, 128 GiB in the baseline");
}

#[test]
fn bad_input_is_one_line_and_exit_2_with_nothing_written() {
    let dir = crate::common::scratch_dir();
    let b = fixture_baseline(dir.path());
    let text = std::fs::read_to_string(&b).unwrap();
    let file = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.to_string_lossy().into_owned()
    };
    let root = nps4();
    let check = |extra: &[&str], needle: &str| {
        let args = [
            &["check", "--sysroot", &root, "--fake-source", "4"][..],
            extra,
        ]
        .concat();
        usage_error(&args, needle);
    };
    check(
        &["--baseline", &file("corrupt.json", "{\"kind\": \"membw-b")],
        "not JSON",
    );
    check(
        &["--baseline", &file("empty.json", "")],
        "empty, not a membw baseline",
    );
    let newer = text.replacen("\"schema_version\": 1", "\"schema_version\": 9", 1);
    check(
        &["--baseline", &file("newer.json", &newer)],
        "schema version 9",
    );
    check(
        &["--baseline", "/nonexistent/b.json"],
        "/nonexistent/b.json",
    );
    check(&["--baseline", "/dev/zero"], "not a regular file");
    check(&["--budget", "0s"], "between 1s and 24h");
    check(&["--budget", "3650days"], "between 1s and 24h");
    check(&["--tolerance", "-5%"], "above 0 %");
    check(&["--tolerance", "200%"], "below 100 %");
    check(
        &["--prom", "/nonexistent/dir/m.prom"],
        "cannot write in /nonexistent/dir",
    );
    // An existing baseline is not replaced.
    usage_error(
        &[
            "baseline", "--sysroot", &root, "--fake-source", "4", "-o", &b,
        ],
        "already exists",
    );
    assert_eq!(std::fs::read_to_string(&b).unwrap(), text);
}

#[test]
fn without_a_baseline_one_domain_is_held_against_its_peak() {
    // 20 cores × 4 GB/s × 1.25 (the fake's NT stores) = 100 GB/s against
    // half of a 1000 GB/s peak.
    let root = shared_tree("xeon-gold-6248-1s-nonuma")
        .to_string_lossy()
        .into_owned();
    let base = [
        "check", "--sysroot", &root, "--fake-source", "4,delay=100ms", "--budget", "1s",
    ];
    let (code, _, err) = run(&[&base[..], &["--peak", "1000GB/s"]].concat());
    assert_eq!(code, Some(1), "{err}");
    crate::common::assert_contains(
        &err,
        "node triad 100.0 GB/s is 20 % of the expected 500.0 GB/s",
    );
    let (code, _, err) = run(&[&base[..], &["--peak", "150GB/s"]].concat());
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn the_prometheus_file_is_written_whole_and_promtool_accepts_it() {
    let dir = crate::common::scratch_dir();
    let prom = dir.path().join("membw.prom");
    let p = prom.to_string_lossy().into_owned();
    let (code, _, err) = run(&[
        "check",
        "--sysroot",
        &nps4(),
        "--fake-source",
        "4,delay=100ms,slow=48-63@0.5",
        "--budget",
        "1s",
        "--prom",
        &p,
    ]);
    assert_eq!(code, Some(1), "{err}");
    let text = std::fs::read_to_string(&prom).unwrap();
    crate::common::assert_contains(&text, "membw_check_healthy 0\n");
    crate::common::assert_contains(&text, "membw_check_trusted 1\n");
    // Node 3: 16 cores × 4 GB/s × 1.25 (NT stores) × 0.5.
    let node3 =
        "membw_bandwidth_bytes_per_second{kernel=\"triad\",scope=\"numa\",numa_node=\"3\"} ";
    let rate: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix(node3))
        .unwrap_or_else(|| panic!("{text}"))
        .parse()
        .unwrap();
    assert!((rate / 40e9 - 1.0).abs() < 1e-9, "{rate}");
    // No temporary file left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("membw.prom")]);
    // run and latency write the same format.
    let run_prom = dir.path().join("run.prom");
    let lat_prom = dir.path().join("lat.prom");
    let (code, _, err) = run(&[
        "run",
        "--fake-source",
        "4,busy=40",
        "--size",
        "1M",
        "--ntimes",
        "2",
        "--prom",
        &run_prom.to_string_lossy(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&run_prom).unwrap();
    crate::common::assert_contains(&text, "membw_run_trusted 0\n");
    let (code, _, err) = run(&[
        "latency",
        "--sizes",
        "4KiB,64KiB",
        "--time",
        "5ms",
        "--prom",
        &lat_prom.to_string_lossy(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        std::fs::read_to_string(&lat_prom)
            .unwrap()
            .contains("membw_latency_seconds{study=\"idle\"")
    );
    for file in [&prom, &run_prom, &lat_prom] {
        let mut promtool = std::process::Command::new("promtool");
        promtool
            .args(["check", "metrics"])
            .stdin(std::fs::File::open(file).unwrap());
        if common::tool(&mut promtool, "prometheus").is_none() {
            return;
        }
    }
}

#[test]
fn a_fleet_history_flags_the_node_below_its_past_and_the_one_below_the_fleet() {
    let dir = crate::common::scratch_dir();
    let checks = dir.path().join("checks");
    std::fs::create_dir(&checks).unwrap();
    // 200 nodes × 10 days of check verdicts, as `check --format jsonl` writes them.
    for node in 0..200 {
        for day in 0..10 {
            let mut gb_s = 100.0 + (node % 7) as f64;
            if node == 17 && day == 9 {
                gb_s = 80.0;
            }
            if node == 42 {
                gb_s = 55.0;
            }
            let verdict = serde_json::json!({
                "schema_version": 1, "kind": "membw-check",
                "timestamp": format!("2026-11-{:02}T03:00:00Z", day + 1),
                "host": {"hostname": format!("node{node:03}")},
                "healthy": true,
                "rates": [{"scope": "node", "kernel": "triad", "gb_s": gb_s}]
            });
            std::fs::write(
                checks.join(format!("node{node:03}-day{day}.json")),
                verdict.to_string(),
            )
            .unwrap();
        }
    }
    let plots = dir.path().join("plots");
    let (code, out, err) = run(&[
        "report",
        &checks.to_string_lossy(),
        "--plots",
        &plots.to_string_lossy(),
    ]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.starts_with("triad of 200 nodes from 2000 files (2000 samples)"),
        "{out}"
    );
    // Nodes at 100-106 GB/s (node % 7): the median 103 and its interval
    // from the order statistics of 200 latest rates.
    crate::common::assert_contains(
        &out,
        "fleet median 103.00 GB/s (95 % CI 102.00-103.00, of the nodes' latest)",
    );
    crate::common::assert_contains(&err, "membw: 2 nodes flagged: node017, node042");
    let rows: Vec<&str> = out.lines().skip(4).take(2).collect();
    assert!(
        rows[0].starts_with("  node017")
            && rows[0].ends_with("slower than its history, far below the fleet"),
        "{rows:?}"
    );
    assert!(
        rows[1].starts_with("  node042") && rows[1].ends_with("far below the fleet"),
        "{rows:?}"
    );
    let svg = std::fs::read_to_string(plots.join("history.svg")).unwrap();
    assert!(
        svg.contains("node042"),
        "the flagged nodes are named in the plot"
    );
    // The history as one HTML page too, flagged nodes and plot inline.
    let html = plots.join("history.html");
    let (code, _, _) = run(&[
        "report",
        &checks.to_string_lossy(),
        "--plots",
        &plots.to_string_lossy(),
        "--html",
        &html.to_string_lossy(),
    ]);
    assert_eq!(code, Some(1));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("node017") && page.contains("<svg"),
        "history HTML"
    );
    // A file that is neither a verdict nor a run document is named.
    std::fs::write(
        checks.join("zz-notes.json"),
        "{\"kind\": \"membw-baseline\"}",
    )
    .unwrap();
    usage_error(
        &[
            "report",
            &checks.to_string_lossy(),
            "--plots",
            &plots.to_string_lossy(),
        ],
        "zz-notes.json: neither a check verdict",
    );
}

#[test]
fn the_slurm_health_program_drains_an_unhealthy_node_with_membws_line() {
    let dir = crate::common::scratch_dir();
    let b = fixture_baseline(dir.path());
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let calls = dir.path().join("scontrol.calls");
    // Stand-ins: scontrol records its arguments; membw adds the fixture and
    // the fake source, slow on node 3 when SLOW is set.
    std::fs::write(
        bin.join("scontrol"),
        format!(
            "#!/bin/bash\nprintf '%s\\n' \"$@\" >> {}\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::write(
        bin.join("membw"),
        format!(
            "#!/bin/bash\n[ \"$1\" = --version ] && exec {0} --version\nexec {0} \"$@\" --sysroot {1} --fake-source \"4,delay=100ms${{SLOW:+,slow=48-63@0.5}}\"\n",
            common::membw_argv().join(" "),
            nps4()
        ),
    )
    .unwrap();
    for f in ["scontrol", "membw"] {
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(bin.join(f))
            .status()
            .unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/slurm/membw-health.sh");
    let health = |slow: bool| {
        let mut cmd = std::process::Command::new(&script);
        cmd.env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .env("MEMBW", bin.join("membw"))
        .env("MEMBW_BASELINE", &b)
        .env("MEMBW_BUDGET", "1s");
        if slow {
            cmd.env("SLOW", "1");
        }
        cmd.output().unwrap()
    };
    assert!(health(false).status.success());
    assert!(!calls.exists(), "a healthy node is left alone");
    health(true);
    let args = std::fs::read_to_string(&calls).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(
        args[..2],
        [
            "update",
            &format!("nodename={}", args[1].trim_start_matches("nodename="))
        ]
    );
    assert_eq!(args[2], "state=drain");
    assert!(
        args[3].starts_with("reason=NUMA node 3 copy 40.0 GB/s is 50 % of its baseline 80.0 GB/s"),
        "{args:?}"
    );
}

#[test]
fn a_shortfall_on_a_virtual_machine_says_the_host_may_be_the_cause() {
    // The captured VM's cpuinfo has the `hypervisor` flag.
    let vm = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/live-vm");
    let vm = vm.to_str().unwrap();
    let (_dir, _, b) = crate::common::scratch_file("b.json");
    let (code, _, err) = run(&[
        "baseline", "--sysroot", vm, "--fake-source", "4", "--rounds", "1", "-o", &b,
    ]);
    assert_eq!(code, Some(0), "{err}");
    let check = ["check", "--sysroot", vm, "--baseline", &b, "--budget", "1s"];
    let (code, out, err) = run(&[&check[..], &["--fake-source", "3,delay=100ms"]].concat());
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        err.lines().count(),
        1,
        "the drain reason stays one line: {err}"
    );
    crate::common::assert_contains(&out, "this is a virtual machine");
    // A healthy VM gets no such note.
    let (code, out, _) = run(&[&check[..], &["--fake-source", "4"]].concat());
    assert_eq!(code, Some(0));
    assert!(!out.contains("virtual machine"), "{out}");
}

#[test]
fn a_small_check_runs_only_when_asked_and_names_its_band_everywhere() {
    let dir = crate::common::scratch_dir();
    let nps4 = nps4();
    let fake = ["--sysroot", &nps4, "--fake-source", "4"];
    // 1M elements an array on the NPS4 node: cache bandwidth. Refused
    // without --small, in one short line that names it.
    let (code, _, err) = run(&[&["check", "--size", "1M"][..], &fake].concat());
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.trim_end().chars().count() <= 160,
        "{} chars: {err}",
        err.len()
    );
    assert!(
        err.contains("under STREAM's rule") && err.contains("add --small"),
        "{err}"
    );
    // A small baseline keeps each scope's band.
    let small = dir.path().join("small.json");
    let small = small.to_str().unwrap();
    let (code, out, err) = run(&[
        &[
            "baseline", "--size", "1M", "--small", "--rounds", "2", "-o", small,
        ][..],
        &fake,
    ]
    .concat());
    assert_eq!(code, Some(0), "{err}");
    crate::common::assert_contains(
        &out,
        "small (--small), arrays under STREAM's rule: node: cache bandwidth",
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(small).unwrap()).unwrap();
    assert!(
        doc["scopes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["band"] == "caches"),
        "{doc}"
    );
    // A check against it measures the same size, and says so: in its text
    // and in every rate of its verdict.
    let (code, out, err) = run(&[&["check", "--baseline", small][..], &fake].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("small (--small)") && out.contains("cache bandwidth"),
        "{out}"
    );
    let (_, json, _) = run(&[
        &["check", "--baseline", small, "--format", "json"][..],
        &fake,
    ]
    .concat());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rates = v["rates"].as_array().unwrap();
    assert!(
        !rates.is_empty() && rates.iter().all(|r| r["band"] == "caches"),
        "{v}"
    );
    // Another size is another measurement: refused, against either kind.
    let (code, _, err) =
        run(&[&["check", "--baseline", small, "--size", "2M"][..], &fake].concat());
    assert_eq!(code, Some(2), "{err}");
    crate::common::assert_contains(&err, "a check compares only the same size");
    let memory = fixture_baseline(dir.path());
    let (code, _, err) =
        run(&[&["check", "--baseline", &memory, "--size", "1M"][..], &fake].concat());
    assert_eq!(code, Some(2), "{err}");
    crate::common::assert_contains(&err, "a check compares only the same size");
    // A check of the usual size against memory's baseline names no band.
    let (_, out, _) = run(&[&["check", "--baseline", &memory][..], &fake].concat());
    assert!(!out.contains("--small"), "{out}");
}
