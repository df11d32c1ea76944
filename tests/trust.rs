//! Whether a measurement says when it cannot be trusted: a memory-bound
//! competitor started beside `membw run` must show up as a line with its
//! figure and in the JSON. The rule itself is unit-tested on recorded
//! `/proc/stat` samples (src/trust/tests.rs); this runs the real thing.

mod common;

use serde_json::Value;
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// One competitor at a time: the tests share two CPUs.
static ONE: Mutex<()> = Mutex::new(());

/// A membw that streams through memory on `cpu` until dropped.
struct Competitor(Child);

impl Competitor {
    fn on(cpu: usize) -> Competitor {
        // Behind the target's runner (qemu-user for aarch64), as membw is.
        let child = common::membw_process()
            .args(["run", "--quiet", "--kernels", "triad", "--size", "8M"])
            .args(["--ntimes", "100000", "--cpus", &cpu.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        Competitor(child)
    }
}

impl Drop for Competitor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn two_cpus() -> bool {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        common::skip(format!("needs two allowed CPUs, {n} here"));
    }
    n >= 2
}

/// `membw run --cpus 0` on 16M elements (tens of ms a kernel), as JSON.
fn run_on_cpu0() -> (Value, String) {
    let out = common::membw()
        .args([
            "run", "--cpus", "0", "--size", "16M", "--ntimes", "8", "--kernels", "copy,triad",
            "--json",
        ])
        .output()
        .unwrap();
    common::assert_success(&out);
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn cpu(doc: &Value, id: u64) -> Value {
    doc["measurement"]["interference"]["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cpu"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn a_competitor_on_the_other_cpu_is_named_with_its_figure() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    if !two_cpus() {
        return;
    }
    let _hog = Competitor::on(1);
    let (doc, stderr) = run_on_cpu0();
    assert!(
        stderr.contains("CPU 1 was ")
            && stderr.contains("% busy with other work during the run (not measured, but sharing the memory): results may be low"),
        "{stderr}"
    );
    let other = cpu(&doc, 1);
    assert_eq!(other["measured"], false, "{doc}");
    assert!(other["other_pct"].as_f64().unwrap() >= 50.0, "{other}");
    assert_eq!(doc["measurement"]["interference"]["busy"], true);
}

#[test]
fn a_competitor_on_the_measured_cpu_is_named_with_its_share() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    if !two_cpus() {
        return;
    }
    let _hog = Competitor::on(0);
    let (doc, stderr) = run_on_cpu0();
    let line = stderr
        .lines()
        .find(|l| l.contains("CPU 0 was "))
        .unwrap_or_else(|| panic!("no line for CPU 0: {stderr}"));
    assert!(
        line.ends_with("% busy with other work during the run: results may be low"),
        "{line}"
    );
    // The competitor and membw share CPU 0 about evenly.
    let here = cpu(&doc, 0);
    assert_eq!(here["measured"], true);
    let pct = here["other_pct"].as_f64().unwrap();
    assert!((20.0..=80.0).contains(&pct), "{here}");
}

#[test]
fn a_sweep_and_a_latency_study_say_which_points_cannot_be_trusted() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    if !two_cpus() {
        return;
    }
    let _hog = Competitor::on(1);
    let dir = common::scratch_dir();
    let file = dir.path().join("s.jsonl");
    let out = common::membw()
        .args([
            "sweep", "--threads", "1", "--strategy", "compact", "--size", "16M",
        ])
        .args([
            "--ntimes",
            "5",
            "--kernels",
            "triad",
            "-o",
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    common::assert_contains(&stderr, "NOT TRUSTED for triad: 1 of 1 points");
    let record: Value = serde_json::from_str(
        std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["runs"][0]["interference"]["busy"], true, "{record}");
    let out = common::membw()
        .args([
            "latency", "--sizes", "64MiB", "--time", "300ms", "--cpu", "0",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("NOT TRUSTED: 64 MiB") && text.contains("latencies may be high"),
        "{text}"
    );
}

#[test]
fn a_check_on_a_busy_node_gives_no_verdict_but_shows_its_figures() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    if !two_cpus() {
        return;
    }
    let _hog = Competitor::on(1);
    // A peak no node reaches: the rates fall short, and the other work on
    // CPU 1 is why, so there is no verdict (exit 2), not "unhealthy" (1).
    // Arrays past the caches (check refuses cache-resident ones), on a
    // captured EPYC's caches: on a 300 MiB L3 the three arrays would be
    // 3 GiB, each check seconds of page faults.
    let size = common::small_dram_elements(8_000_000);
    let check = [
        "check", "--peak", "10TB/s", "--size", &size, "--ntimes", "3", "--budget", "1s",
    ];
    let out = common::on_small_caches(&mut common::membw())
        .args(check)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("membw: error: could not check: CPU")
            && stderr.contains("busy with other work")
            && stderr.trim_end().ends_with("run it when the node is idle")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdict["judged"], false, "{verdict}");
    assert_eq!(verdict["healthy"], false);
    assert!(
        verdict["reason"]
            .as_str()
            .unwrap()
            .starts_with("could not check")
    );
    assert!(
        verdict["rates"][0]["gb_s"].as_f64().unwrap() > 0.0,
        "{verdict}"
    );
    // --quiet keeps stdout empty: only an unhealthy verdict prints its table;
    // --prom leaves the last verdict's metrics as they were.
    let dir = common::scratch_dir();
    let prom = dir.path().join("membw.prom");
    std::fs::write(&prom, "membw_check_healthy 1\n").unwrap();
    let out = common::on_small_caches(&mut common::membw())
        .args(check)
        .args(["--quiet", "--prom"])
        .arg(&prom)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(
        std::fs::read_to_string(&prom).unwrap(),
        "membw_check_healthy 1\n"
    );
    // Nor is a baseline made: every later check of a slow node would pass.
    // Its rounds are few, so each is made long enough to count ticks in.
    let file = dir.path().join("b.json");
    let out = common::on_small_caches(&mut common::membw())
        .args([
            "baseline", "--size", &size, "--ntimes", "5", "--rounds", "2", "-o",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("membw: error: could not make a baseline: CPU")
            && stderr.contains("make it when the node is idle, or give --allow-busy where it never is (nothing written)"),
        "{stderr}"
    );
    // Found before the rounds, by the same rule: no round was measured.
    assert!(
        stderr.contains("before measuring") && !stderr.contains("round 1 of"),
        "{stderr}"
    );
    assert!(!file.exists());
}
