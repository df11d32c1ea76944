//! Every kind of document membw wrote before the typed model (schema 1,
//! tests/fixtures/documents) still reads: report, compare, --resume, a
//! check against a baseline and a fleet's history.

use crate::common::{membw, stdout};
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/documents")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn results_files_and_run_documents_of_schema_1_still_report_and_compare() {
    let (_dir, _plots, p) = crate::common::scratch_file("plots");
    let run = stdout(&["report", &fixture("run.json"), "--plots", &p]);
    crate::common::assert_contains(&run, "vm");
    let sweep = stdout(&["report", &fixture("sweep.jsonl"), "--plots", &p]);
    crate::common::assert_contains(&sweep, "triad");
    let latency = stdout(&["report", &fixture("latency.jsonl"), "--plots", &p]);
    assert!(
        latency.contains("4 KiB") || latency.contains("4KiB"),
        "{latency}"
    );
    let exec = stdout(&["report", &fixture("exec.jsonl"), "--plots", &p]);
    crate::common::assert_contains(&exec, "sh");
    // run -o and sweep -o of the same configuration pair.
    let both = stdout(&["compare", &fixture("run-o.jsonl"), &fixture("sweep.jsonl")]);
    crate::common::assert_contains(&both, "1 point in both");
    let lat = stdout(&[
        "compare",
        &fixture("latency.jsonl"),
        &fixture("latency.jsonl"),
    ]);
    crate::common::assert_contains(&lat, "4");
}

#[test]
fn a_schema_1_sweep_resumes_without_measuring_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::copy(fixture("sweep.jsonl"), &file).unwrap();
    let out = membw()
        .args(["sweep", "--resume", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    crate::common::assert_contains(&stderr, "0 points written, 2 skipped");
}

#[test]
fn schema_1_verdicts_and_baselines_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plots");
    let history = stdout(&[
        "report",
        &fixture("check.json"),
        "--plots",
        p.to_str().unwrap(),
    ]);
    crate::common::assert_contains(&history, "fleet median 100.00 GB/s");
    // And today's verdict reads the same way (the history's typed reader and
    // the verdict agree on every field it reads).
    let (base, today) = (dir.path().join("base.json"), dir.path().join("today.json"));
    let base = base.to_str().unwrap();
    stdout(&[
        "baseline", "--fake-source", "40", "--rounds", "1", "-o", base,
    ]);
    let verdict = stdout(&[
        "check", "--fake-source", "40", "--format", "json", "--baseline", base,
    ]);
    std::fs::write(&today, verdict).unwrap();
    let history = stdout(&[
        "report",
        today.to_str().unwrap(),
        "--plots",
        p.to_str().unwrap(),
    ]);
    crate::common::assert_contains(&history, "fleet median");
    // A check against the old baseline reads it: it judges (exit 0 or 1),
    // or, on another kind of machine than this project's VM, refuses to
    // hold the node against it, which it can say only having read it.
    let out = membw()
        .args([
            "check",
            "--fake-source",
            "40",
            "--baseline",
            &fixture("baseline.json"),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // (or, where this host's caches are larger than the baseline's arrays,
    // names the field that says so: also read).
    assert!(
        out.status.code() != Some(2)
            || stderr.contains("made on another kind of node")
            || stderr.contains("scopes[0].elements is 17367040"),
        "{stderr}"
    );
}
