//! `membw report` of a large results file holds one record per point, not
//! per line: a year of daily runs of a few points (200 MB) reports in
//! bounded memory. A test binary of its own: the report's peak memory
//! (`common::output_and_peak_rss`) starts from its parent's, which other
//! suites' tests would raise.

mod common;
use std::io::Write;

#[test]
fn a_200_mb_file_of_repeated_points_reports_in_under_300_mib() {
    if !common::slow_tests("the report memory test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.jsonl");
    common::membw()
        .args(["run", "--fake-source", "5", "-q", "-o"])
        .arg(&one)
        .assert()
        .success();
    let line = std::fs::read_to_string(&one).unwrap();
    let record: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    // Four points, each line a run of its own rate.
    let big = dir.path().join("big.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    let (mut written, mut i) = (0usize, 0usize);
    while written < 200_000_000 {
        let mut r = record.clone();
        r["point"]["threads"] = (1 + i % 4).into();
        let rate = 10.0 + (i % 97) as f64 / 10.0;
        for k in ["copy", "scale", "add", "triad"] {
            r["runs"][0]["best_gb_s"][k] = rate.into();
            r["stats"][k]["mean"] = rate.into();
            r["stats"][k]["min"] = rate.into();
            r["stats"][k]["max"] = rate.into();
        }
        let text = serde_json::to_string(&r).unwrap();
        writeln!(out, "{text}").unwrap();
        written += text.len() + 1;
        i += 1;
    }
    out.flush().unwrap();
    drop(out);
    for html in [false, true] {
        let mut cmd = common::membw_process();
        cmd.arg("report")
            .arg(&big)
            .arg("--plots")
            .arg(dir.path().join("plots"));
        if html {
            cmd.arg("--html").arg(dir.path().join("r.html"));
        }
        let (out, peak) = common::output_and_peak_rss(&mut cmd);
        common::assert_success(&out);
        assert!(
            peak < 300 << 20,
            "report{} of {i} lines peaked at {} MiB",
            if html { " --html" } else { "" },
            peak >> 20
        );
    }
}
