//! Many processes appending to one results file, as `srun membw run -o
//! /shared/bw.jsonl` on every node does: nothing lost, nothing torn, and a
//! `--resume` beside them keeps every line the others write.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

const WRITERS: usize = 8;
const RECORDS: usize = 50;

/// The records of a results file, every line whole JSON.
fn whole_records(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "the last line is cut short");
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("line {} is torn ({e}): {l}", i + 1))
        })
        .collect()
}

/// A shell loop of `RECORDS` fake runs appending to `file`, in one process
/// of its own; `prefix` starts it (a launcher, or nothing).
fn writer_loop(file: &Path, extra: &str) -> String {
    let argv = common::membw_argv().join(" ");
    format!(
        "i=0; while [ $i -lt {RECORDS} ]; do {argv} run --fake-source 5 -q {extra} -o '{}' >/dev/null || exit 1; i=$((i+1)); done",
        file.display()
    )
}

#[test]
fn eight_processes_appending_fifty_records_each_lose_none() {
    let dir = crate::common::scratch_dir();
    // Several rounds: the old file's losses came in one try of three. Each
    // round is 400 processes (about 4 s of both cores): one round unless
    // the slow suites run (CI, MEMBW_SLOW_TESTS=1).
    let rounds = if common::slow_tests_on() { 3 } else { 1 };
    for round in 0..rounds {
        let file = dir.path().join(format!("shared-{round}.jsonl"));
        let script = writer_loop(&file, "");
        let children: Vec<_> = (0..WRITERS)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", &script])
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            crate::common::assert_success(&out);
        }
        assert_eq!(
            whole_records(&file).len(),
            WRITERS * RECORDS,
            "round {round}"
        );
    }
    // One point recorded 400 times reports as one point of 400 runs.
    let out = common::membw()
        .args(["report", "--format", "jsonl"])
        .arg(dir.path().join("shared-0.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let pooled: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(pooled.len(), 1, "{text}");
    assert_eq!(
        pooled[0]["runs"].as_array().unwrap().len(),
        WRITERS * RECORDS
    );
    assert_eq!(pooled[0]["stats"]["triad"]["n"], WRITERS * RECORDS);
}

#[test]
fn a_resumed_sweep_keeps_every_line_that_other_writers_append_meanwhile() {
    let (_dir, file, f) = crate::common::scratch_file("sweep.jsonl");
    let sweep = |resume: bool| {
        let mut cmd = common::membw_process();
        cmd.args([
            "sweep", "--fake-source", "4", "--threads", "1", "--ntimes", "2",
        ])
        .args(["--kernels", "triad", "--sizes", "64KiB..16MiB"])
        .args([if resume { "--resume" } else { "-o" }, &f])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        cmd
    };
    // A sweep stopped after three of its nine points, by a kill mid-write.
    let out = sweep(false).output().unwrap();
    assert!(out.status.success());
    let text = std::fs::read_to_string(&file).unwrap();
    let kept: Vec<&str> = text.lines().take(3).collect();
    std::fs::write(
        &file,
        format!("{}\n{{\"schema_version\":1,\"exp", kept.join("\n")),
    )
    .unwrap();
    let script = writer_loop(&file, "");
    let writers: Vec<_> = (0..2)
        .map(|_| Command::new("sh").args(["-c", &script]).spawn().unwrap())
        .collect();
    let resumed = sweep(true).output().unwrap();
    for mut w in writers {
        assert!(w.wait().unwrap().success());
    }
    crate::common::assert_success(&resumed);
    let records = whole_records(&file);
    let sweeps = records
        .iter()
        .filter(|r| r["experiment"] == "sweep")
        .count();
    let runs = records.iter().filter(|r| r["experiment"] == "run").count();
    assert_eq!(runs, 2 * RECORDS);
    // 64 KiB..16 MiB is nine sizes, three of them done before.
    assert_eq!(sweeps, 9);
}

/// The same under Open MPI, each rank a writer on its own (`--independent`).
#[test]
fn eight_independent_mpi_ranks_appending_lose_none() {
    if !common::slow_tests("the many-writers MPI test") {
        return;
    }
    let mpirun = || {
        let mut cmd = Command::new("mpirun");
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        cmd
    };
    if common::tool(mpirun().arg("--version"), "openmpi-bin").is_none() {
        return;
    }
    let dir = crate::common::scratch_dir();
    for round in 0..3 {
        let file = dir.path().join(format!("ranks-{round}.jsonl"));
        let out = mpirun()
            .args(["-np", &WRITERS.to_string(), "--oversubscribe", "sh", "-c"])
            .arg(writer_loop(&file, "--independent"))
            .output()
            .unwrap();
        crate::common::assert_success(&out);
        assert_eq!(
            whole_records(&file).len(),
            WRITERS * RECORDS,
            "round {round}"
        );
    }
}
