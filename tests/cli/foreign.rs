//! A STREAM-format program of the project's own (bench/stream-omp.c), built
//! with gcc, run under a placement and read back: the parts `membw exec`
//! is built from.

use crate::common;

use membw::foreign::{self, Invocation, parse};
use std::collections::BTreeSet;
use std::time::Duration;

#[test]
fn a_gcc_stream_build_runs_pinned_and_its_table_is_read() {
    let dir = crate::common::scratch_dir();
    let Some(exe) = gcc_stream(dir.path()) else {
        return;
    };
    let topo = membw::topology::Topology::live().unwrap();
    let cpus = topo.allowed_cpus.ids().to_vec();
    let argv = vec![
        exe.to_str().unwrap().to_string(),
        "2000000".into(),
        "4".into(),
    ];
    let ran = foreign::run(&Invocation {
        argv: &argv,
        cpus: &cpus,
        pinned: true,
        policy: None,
        keep: &BTreeSet::new(),
        timeout: Duration::from_secs(60),
        sample_every: Duration::from_millis(10),
        show_output: false,
        stop: &membw::sys::Stop::default(),
    })
    .unwrap();
    assert_eq!(ran.code, Some(0), "{:?}", ran.stderr_tail);
    let out = parse::parse(&ran.stdout).unwrap();
    assert_eq!(out.format, parse::ProgramFormat::Stream);
    let kernels: Vec<_> = out.rates.iter().filter_map(|r| r.kernel).collect();
    assert_eq!(kernels.len(), 4, "{}", ran.stdout);
    assert!(out.rates.iter().all(|r| r.best_mb_s > 0.0));
    // Every thread the samples caught stayed on the CPUs it was given.
    assert!(!ran.threads.is_empty());
    for t in &ran.threads {
        assert!(t.cpus.iter().all(|c| cpus.contains(c)), "{t:?}");
    }
    assert!(
        ran.env_set
            .iter()
            .any(|(k, v)| k == "OMP_NUM_THREADS" && *v == cpus.len().to_string())
    );
}

/// bench/stream-omp.c built with gcc, in a directory that lives as long as the test.
fn gcc_stream(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = dir.join("stream-gcc");
    common::tool(
        std::process::Command::new("gcc").args([
            "-O2",
            "-fopenmp",
            root.join("bench/stream-omp.c").to_str().unwrap(),
            "-o",
            exe.to_str().unwrap(),
        ]),
        "gcc",
    )?;
    Some(exe)
}

#[test]
fn membw_exec_runs_a_stream_build_pinned_and_verified() {
    let dir = crate::common::scratch_dir();
    let Some(exe) = gcc_stream(dir.path()) else {
        return;
    };
    let exe = exe.to_str().unwrap();
    let cpu = *membw::topology::Topology::live()
        .unwrap()
        .allowed_cpus
        .ids()
        .last()
        .unwrap();
    let cpu_text = cpu.to_string();
    let out = common::stdout(&[
        "exec", "--cpus", &cpu_text, "--repeat", "2", "--", exe, "2000000", "4",
    ]);
    assert!(
        out.contains(&format!("CPUs:      {cpu} (1 thread)")),
        "{out}"
    );
    assert!(
        out.contains("GB/s (mean ± 95 % CI, n = 2 runs)") && out.contains("triad"),
        "{out}"
    );
    crate::common::assert_contains(&out, "Verified:  threads pinned, each stayed on its CPU");
    crate::common::assert_contains(&out, "Watching:  membw used ");
    // The same record shape as a sweep's, with the program named.
    let json = common::stdout(&[
        "exec", "--cpus", &cpu_text, "--format", "json", "--label", "gcc-O2", "--", exe, "2000000",
        "4",
    ]);
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(r["source"], "exec");
    assert_eq!(r["experiment"], "exec");
    assert_eq!(r["point"]["program"], "gcc-O2");
    assert_eq!(r["runs"][0]["validated"], true);
    assert!(r["runs"][0]["isa"].is_null());
    assert!(r["stats"]["triad"]["mean"].as_f64().unwrap() > 0.0);
    assert!(
        r["runs"][0]["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c == cpu)
    );
    // The run keeps how the program ended and the end of what it printed.
    let p = &r["runs"][0]["program"];
    assert_eq!(
        (p["exit_code"].as_i64(), p["format"].as_str()),
        (Some(0), Some("stream"))
    );
    assert!(
        p["stdout_tail"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().starts_with("Triad:"))
    );
    assert!(
        p["stderr_tail"][0].as_str().unwrap().starts_with("check "),
        "{p}"
    );
    // What watching cost is measured, and is a small part of the run.
    let watch = p["watch_cpu_s"].as_f64().unwrap();
    let wall = r["runs"][0]["total_s"].as_f64().unwrap();
    assert!(watch > 0.0 && watch < 0.5 * wall, "{watch} s of {wall} s");
}

#[test]
fn an_exec_point_holds_the_programs_own_array_size_element_size_and_ntimes() {
    let dir = crate::common::scratch_dir();
    for bytes in [8u64, 4] {
        let script = common::stream_output_script(dir.path(), bytes);
        let json = common::stdout(&["exec", "--cpus", "0", "--format", "json", "--", &script]);
        let r: serde_json::Value = serde_json::from_str(&json).unwrap();
        let p = &r["point"];
        assert_eq!(
            (p["elements"].as_u64(), p["ntimes"].as_u64()),
            (Some(3_000_000), Some(7)),
            "{p}"
        );
        assert_eq!(
            p["working_set_per_thread"].as_u64(),
            Some(3_000_000 * bytes * 3),
            "{p}"
        );
        // 8-byte elements are the default and not written.
        let element = p.get("element_bytes").and_then(|b| b.as_u64());
        assert_eq!(element, (bytes != 8).then_some(bytes), "{p}");
    }
}

/// clang builds run the same way, where clang is installed (it is optional:
/// gcc is the compiler CI provides).
#[test]
fn a_clang_build_runs_too_where_clang_is_installed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = crate::common::scratch_dir();
    let exe = dir.path().join("stream-clang");
    let built = std::process::Command::new("clang")
        .args([
            "-O2",
            "-fopenmp",
            root.join("bench/stream-omp.c").to_str().unwrap(),
            "-o",
        ])
        .arg(&exe)
        .output();
    match built {
        Ok(o) if o.status.success() => {
            let out = common::stdout(&[
                "exec",
                "--cpus",
                "0",
                "--",
                exe.to_str().unwrap(),
                "2000000",
                "4",
            ]);
            crate::common::assert_contains(&out, "triad");
        }
        Ok(o) => common::skip(format!(
            "clang could not build with OpenMP: {}",
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(_) => common::skip("clang not installed (optional; Debian package clang)"),
    }
}

#[test]
fn membw_exec_failures_are_reported_with_their_reason() {
    common::usage_error(&["exec", "--", "/nonexistent/stream"], "no such program");
    let dir = crate::common::scratch_dir();
    let plain = dir.path().join("stream.c");
    std::fs::write(&plain, "int main() { return 0; }\n").unwrap();
    common::usage_error(&["exec", "--", plain.to_str().unwrap()], "not executable");
    common::usage_error(
        &["exec", "--mem", "a=bind:0", "--", "true"],
        "whole process",
    );
    for (args, reason) in [
        (
            vec!["sh", "-c", "echo hello"],
            "printed nothing membw understands",
        ),
        (
            vec!["sh", "-c", "echo oops >&2; exit 3"],
            "exited with status 3; its stderr ended: oops",
        ),
        (
            vec![
                "sh",
                "-c",
                "echo 'Copy: 1.0 1 1 1'; echo Failed Validation on array a",
            ],
            "failed validation",
        ),
    ] {
        let mut full = vec!["exec", "--"];
        full.extend(args);
        let out = common::membw().args(&full).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(reason), "{reason}: {stderr}");
    }
    let started = std::time::Instant::now();
    let out = common::membw()
        .args([
            "exec", "--timeout", "1s", "--", "sh", "-c", "sleep 30 & sleep 30",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("timed out after"));
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
}

#[test]
fn sweep_exec_measures_programs_beside_membw_and_reports_one_line_each() {
    let dir = crate::common::scratch_dir();
    let Some(exe) = gcc_stream(dir.path()) else {
        return;
    };
    let out = dir.path().join("ex.jsonl");
    let gcc = format!("gcc={} 2000000 4", exe.display());
    let args = [
        "sweep",
        "--fake-source",
        "4",
        "--threads",
        "1-2",
        "--exec",
        "membw",
        "--exec",
        &gcc,
        "--repeat",
        "2",
        "-o",
        out.to_str().unwrap(),
    ];
    let printed = common::stdout(&args);
    assert!(
        printed.contains("program") && printed.contains("gcc"),
        "{printed}"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 4);
    let gcc_runs: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["point"]["program"] == "gcc")
        .collect();
    assert_eq!(gcc_runs.len(), 2);
    assert!(
        gcc_runs
            .iter()
            .all(|r| r["source"] == "exec" && r["stats"]["triad"]["n"] == 2)
    );
    assert!(records.iter().filter(|r| r["source"] == "fake").count() == 2);
    // One line per program in the threads plot.
    let plots = dir.path().join("p");
    common::stdout(&[
        "report",
        out.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(plots.join("triad-threads.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let lines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke-width") == Some("2"))
        .count();
    assert_eq!(lines, 2, "membw and gcc");
    // Resume knows the programs' points apart.
    let mut resumed: Vec<&str> = args[..args.len() - 2].to_vec();
    resumed.extend(["--resume", out.to_str().unwrap()]);
    common::stdout(&resumed);
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 4);
    common::usage_error(&["sweep", "--exec", "noequals"], "LABEL=PROGRAM");
    common::usage_error(
        &["sweep", "--exec", "x=/nonexistent/prog"],
        "no such program",
    );
}

/// Ctrl-C at the terminal reaches membw only (the program has its own
/// process group): membw kills the program and all it started, exit 130.
#[test]
fn a_signal_to_membw_exec_ends_the_program_too() {
    let dir = crate::common::scratch_dir();
    let pids = dir.path().join("pids");
    let script = format!(
        "sleep 30 & echo $! > {0}; echo $$ >> {0}; wait",
        pids.display()
    );
    let child = common::membw_process()
        .args(["exec", "--", "sh", "-c", &script])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&pids).map_or(0, |s| s.lines().count()) < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the program never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = common::stop_with(child, "INT");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(200));
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "process {pid} outlived membw"
        );
    }
}

/// The documents' pinned-versus-unpinned comparison: the user's
/// `OMP_PROC_BIND=false` reaches the program, and membw does not call the
/// result pinned.
#[test]
fn an_unpinned_program_is_not_reported_as_pinned() {
    let dir = crate::common::scratch_dir();
    let Some(exe) = gcc_stream(dir.path()) else {
        return;
    };
    let exe = exe.to_str().unwrap();
    let cpus = membw::topology::Topology::live()
        .unwrap()
        .allowed_cpus
        .len();
    if cpus < 2 {
        common::skip("one CPU: a thread cannot be anything but pinned");
        return;
    }
    // 40 repetitions: long enough to be watched after OpenMP pins its
    // threads even where the arrays sit in a 300 MiB L3 (6 ended within
    // the watcher's first 0.1 s there, before the main thread was pinned).
    let run = |bind: Option<&str>| {
        let mut cmd = common::membw();
        cmd.env_remove("OMP_PROC_BIND")
            .args(["exec", "--", exe, "4000000", "40"]);
        if let Some(b) = bind {
            cmd.env("OMP_PROC_BIND", b);
        }
        let out = cmd.output().unwrap();
        crate::common::assert_success(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let unpinned = run(Some("false"));
    crate::common::assert_contains(&unpinned, "Verified:  threads NOT pinned");
    // Each variable once, with what membw did with it.
    assert!(
        unpinned.contains("yours:     OMP_PROC_BIND=false (passed through as you set them)")
            && !unpinned.contains("not used"),
        "{unpinned}"
    );
    let pinned = run(None);
    crate::common::assert_contains(&pinned, "Verified:  threads pinned, each stayed on its CPU");
}
