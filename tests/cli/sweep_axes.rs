//! Sweep's axes speak run's grammar: every placement flag of `run` is an
//! axis, the environment's placement is read as `run` reads it, every axis
//! takes repeats, and the points record typed placements and policies that
//! pair with `run -o`'s. The fake source measures (the logic under test is
//! not the measurement).

use crate::common::{membw, stdout, usage_error};
use serde_json::Value;
use std::path::Path;

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn placements(path: &Path) -> Vec<String> {
    records(path)
        .iter()
        .map(|r| r["point"]["placement"].as_str().unwrap_or("").to_string())
        .collect()
}

const QUICK: [&str; 6] = ["--fake-source", "4", "--ntimes", "2", "--threads", "1"];

/// A sweep with no OpenMP, GNU or Intel variable set, whatever the shell has.
fn sweep_clean(args: &[&str]) -> std::process::Output {
    let mut cmd = membw();
    for var in [
        "OMP_NUM_THREADS", "OMP_PLACES", "OMP_PROC_BIND", "GOMP_CPU_AFFINITY", "KMP_AFFINITY",
    ] {
        cmd.env_remove(var);
    }
    cmd.arg("sweep").args(args).output().unwrap()
}

#[test]
fn every_placement_flag_of_run_is_an_axis_of_sweep() {
    let dir = crate::common::scratch_dir();
    let out = dir.path().join("axes.jsonl");
    let mut args = vec![
        "sweep",
        "--cpus",
        "0",
        "--gomp-affinity",
        "0 1",
        "--kmp-affinity",
        "compact",
        "--strategy",
        "compact",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(QUICK);
    let text = stdout(&args);
    crate::common::assert_contains(&text, "gomp-affinity 0-1");
    assert_eq!(
        placements(&out),
        [
            "compact", "cpus 0", "gomp-affinity 0-1", "kmp-affinity compact"
        ]
    );
    // Each is run's grammar, with run's errors.
    usage_error(
        &["sweep", "--fake-source", "4", "--cpus", "0,x"],
        "column 3",
    );
    usage_error(
        &["sweep", "--fake-source", "4", "--kmp-affinity", "sideways"],
        "--kmp-affinity 'sideways'",
    );
    // The NUMA matrix chooses its own CPUs.
    usage_error(
        &["sweep", "--numa-matrix", "--gomp-affinity", "0"],
        "cannot be used with",
    );
}

#[test]
fn every_axis_takes_repeats_and_commas_where_its_values_have_none() {
    let dir = crate::common::scratch_dir();
    let run = |name: &str, axes: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec!["sweep", "--fake-source", "4", "--ntimes", "2"];
        args.extend(axes);
        args.extend(["-o", out.to_str().unwrap()]);
        stdout(&args);
        records(&out)
            .iter()
            .map(|r| r["point"].to_string())
            .collect::<Vec<_>>()
    };
    let commas = run(
        "commas.jsonl",
        &[
            "--strategy", "compact,spread", "--threads", "1,2", "--working-sets", "1MiB,2MiB",
        ],
    );
    let repeats = run(
        "repeats.jsonl",
        &[
            "--strategy", "compact", "--strategy", "spread", "--threads", "1", "--threads", "2",
            "--working-sets", "1MiB", "--working-sets", "2MiB",
        ],
    );
    assert_eq!(commas.len(), 8);
    assert_eq!(commas, repeats);
    // Bounded in all, not only per flag.
    let many: Vec<String> = (0..13).map(|_| "1KiB..16KiB".to_string()).collect();
    let mut args = vec!["sweep", "--fake-source", "4"];
    for m in &many {
        args.extend(["--working-sets", m.as_str()]);
    }
    usage_error(&args, "65 working sets in all; at most 64");
}

#[test]
fn sweep_reads_the_environments_placement_as_run_does_and_stores_it() {
    let (dir, out, o) = crate::common::scratch_file("env.jsonl");
    let sweep_in_env = |extra: &[&str]| {
        let mut cmd = membw();
        cmd.env("OMP_NUM_THREADS", "1")
            .env("OMP_PLACES", "cores")
            .env("OMP_PROC_BIND", "spread")
            .args(["sweep", "--fake-source", "4", "--ntimes", "2"])
            .args(extra);
        cmd.output().unwrap()
    };
    let first = sweep_in_env(&["-o", &o]);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    crate::common::assert_contains(
        &stderr,
        "placement from environment OMP_NUM_THREADS=1 OMP_PLACES=cores OMP_PROC_BIND=spread",
    );
    let written = records(&out);
    assert_eq!(written[0]["point"]["placement"], "places cores spread");
    assert_eq!(written[0]["point"]["threads"], 1);
    // The study says what ran, so the file alone resumes it, anywhere.
    assert_eq!(written[0]["study"]["places"], serde_json::json!(["cores"]));
    assert_eq!(written[0]["study"]["threads"], serde_json::json!(["1"]));
    let resumed = sweep_clean(&["--resume", &o]);
    assert!(resumed.status.success());
    assert_eq!(records(&out).len(), 1, "nothing was left to measure");
    // The same command in the same environment continues the same study.
    let again = sweep_in_env(&["--resume", &o]);
    crate::common::assert_success(&again);
    // --ignore-env: membw's default.
    let ignored = dir.path().join("ignored.jsonl");
    let out = sweep_in_env(&[
        "--ignore-env",
        "--threads",
        "1",
        "-o",
        ignored.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("from environment"));
    assert_eq!(placements(&ignored), ["spread"]);
    // A bad variable is named, as in run.
    let bad = membw()
        .env("OMP_PLACES", "corez")
        .args(["sweep", "--fake-source", "4"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("environment OMP_PLACES 'corez'"));
}

#[test]
fn points_record_typed_placements_and_policies_that_pair_across_commands() {
    let dir = crate::common::scratch_dir();
    let run_file = dir.path().join("run.jsonl");
    let sweep_file = dir.path().join("sweep.jsonl");
    let mut cmd = membw();
    for var in ["OMP_NUM_THREADS", "OMP_PLACES", "OMP_PROC_BIND"] {
        cmd.env_remove(var);
    }
    let run = cmd
        .args([
            "run", "--fake-source", "4", "--ntimes", "2", "--threads", "1",
        ])
        .args(["--array-size", "1M"])
        .args(["--strategy", "spread", "--mem", "membind:0"])
        .args(["-o", run_file.to_str().unwrap()])
        .output()
        .unwrap();
    crate::common::assert_success(&run);
    let swept = sweep_clean(&[
        "--fake-source",
        "4",
        "--ntimes",
        "2",
        "--threads",
        "1",
        "--mem",
        "bind:0",
        "--array-size",
        "1M",
        "-o",
        sweep_file.to_str().unwrap(),
    ]);
    assert!(swept.status.success());
    let (a, b) = (
        &records(&run_file)[0]["point"],
        &records(&sweep_file)[0]["point"],
    );
    // `--strategy spread` is membw's default, and `membind:0` is `bind:0`.
    assert_eq!(a["placement"], "spread");
    assert_eq!(a["mem"], "bind:0");
    assert_eq!(a["placement"], b["placement"]);
    assert_eq!(a["mem"], b["mem"]);
    let compared = stdout(&[
        "compare",
        run_file.to_str().unwrap(),
        sweep_file.to_str().unwrap(),
    ]);
    crate::common::assert_contains(&compared, "spread × 1 · bind:0");
    crate::common::assert_contains(&compared, "1 point in both");
}

#[test]
fn studies_stored_before_axes_took_repeats_still_resume() {
    let (_dir, out, o) = crate::common::scratch_file("old.jsonl");
    let study = [
        "--fake-source", "4", "--ntimes", "2", "--threads", "1", "--strategy", "compact,spread",
    ];
    let first = sweep_clean(&[&study[..], &["-o", &o]].concat());
    assert!(first.status.success());
    // Rewrite the stored study as files wrote it then: one text per axis,
    // no sizes, and none of the axes added since.
    let old: Vec<String> = records(&out)
        .into_iter()
        .map(|mut r| {
            let s = r["study"].as_object_mut().unwrap();
            s.insert("threads".into(), "1".into());
            s.insert("strategy".into(), "compact,spread".into());
            s.insert("sizes".into(), Value::Null);
            for gone in ["cpus", "gomp_affinity", "kmp_affinity"] {
                s.remove(gone);
            }
            r.to_string()
        })
        .collect();
    std::fs::write(&out, old.join("\n") + "\n").unwrap();
    for resume in [
        vec!["--resume", &o],
        [&study[..], &["--resume", &o]].concat(),
    ] {
        let again = sweep_clean(&resume);
        assert!(
            again.status.success(),
            "{resume:?}: {}",
            String::from_utf8_lossy(&again.stderr)
        );
        assert_eq!(records(&out).len(), 2, "{resume:?} measured again");
    }
}

/// A sweep of two points along one axis (`--isa scalar,auto`), small and
/// quick, resumed at once: each point's value of `key` in the file, the
/// sweep's table, and the file (in `dir`). The resume skips both points:
/// the axis is part of the study.
fn two_point_axis(dir: &Path, flag: &str, values: &str, key: &str) -> (Vec<Value>, String, String) {
    let file = dir.join("axis.jsonl");
    let out = file.to_str().unwrap().to_string();
    let done = sweep_clean(&[
        flag, values, "--threads", "1", "--size", "64K", "--ntimes", "3", "-o", &out,
    ]);
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    let points: Vec<Value> = (records(&file).iter())
        .map(|r| r["point"][key].clone())
        .collect();
    let again = sweep_clean(&["--resume", &out]);
    let resumed = String::from_utf8_lossy(&again.stderr);
    crate::common::assert_contains(&resumed, "0 points written, 2 skipped");
    (
        points,
        String::from_utf8_lossy(&done.stdout).into_owned(),
        out,
    )
}

#[test]
fn the_isa_is_an_axis_whose_points_are_kept_apart_and_resume_as_one_study() {
    let dir = crate::common::scratch_dir();
    // Scalar is no host's widest; auto is: two points, two kinds of code.
    let (isas, ..) = two_point_axis(dir.path(), "--isa", "scalar,auto", "isa");
    assert_eq!(isas, [Value::from("scalar"), Value::Null], "{isas:?}");
    // One run measures one ISA.
    usage_error(
        &["run", "--isa", "avx2,scalar"],
        "--isa: run takes one ISA; membw sweep --isa measures several",
    );
}

#[test]
fn the_offset_is_an_axis_with_its_own_column_and_resumes_as_one_study() {
    let dir = crate::common::scratch_dir();
    // STREAM's -DOFFSET moves b and c in cache sets and pages: two layouts.
    let (offsets, table, out) = two_point_axis(dir.path(), "--offset", "0,1840", "offset");
    assert_eq!(offsets, [Value::Null, Value::from(1840)], "{offsets:?}");
    let out = out.as_str();
    // The sweep's table and the report's get the column where the points'
    // offsets differ ...
    for text in [table, stdout(&["report", out])] {
        let header = text.lines().find(|l| l.contains("triad GB/s")).unwrap();
        assert!(header.contains(" offset "), "{text}");
        assert!(text.lines().any(|l| l.contains(" 1840 ")), "{text}");
    }
    // ... and the turned table an axis: one column per offset, never pooled.
    let turned = stdout(&["report", out, "--rows", "threads", "--columns", "offset"]);
    let header = turned.lines().next().unwrap();
    assert!(
        header.contains("\\ offset") && header.contains("offset 1840"),
        "{turned}"
    );
    // One run measures one layout.
    usage_error(
        &["run", "--offset", "0,1840"],
        "--offset: run takes one offset; membw sweep --offset measures several",
    );
}
