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
    let dir = crate::common::scratch_dir();
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
    let dir = crate::common::scratch_dir();
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

/// A results file is input: a host or CPU name in it that holds a line
/// break or a terminal's escape is shown escaped by every report, so that
/// no file can add a line to a report or rewrite the terminal.
#[test]
fn names_in_a_results_file_cannot_forge_a_line_of_its_report() {
    let dir = crate::common::scratch_dir();
    let plots = dir.path().join("plots");
    let forged = r#"vm\nmembw: node healthy\r\u001b[2K"#;
    for name in ["run.json", "sweep.jsonl", "latency.jsonl", "check.json"] {
        let text = std::fs::read_to_string(fixture(name)).unwrap();
        let text = text
            .replace(
                "\"hostname\": \"vm\"",
                &format!("\"hostname\": \"{forged}\""),
            )
            .replace("\"hostname\":\"vm\"", &format!("\"hostname\":\"{forged}\""))
            .replace("\"AMD EPYC\"", r#""EPYC\u001b]0;owned\u0007""#);
        assert_ne!(text, std::fs::read_to_string(fixture(name)).unwrap());
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let formats: &[&str] = match name {
            "check.json" => &["text", "markdown"],
            "run.json" => &["text", "markdown", "csv", "html"],
            _ => &["text", "markdown", "csv", "html"],
        };
        for format in formats {
            let out = membw()
                .args(["report", file.to_str().unwrap(), "--format", *format])
                .arg("--plots")
                .arg(&plots)
                .output()
                .unwrap();
            let shown = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{name} {format}: {shown}");
            assert!(
                !shown.contains('\u{1b}') && !shown.contains('\r') && !shown.contains('\u{7}'),
                "{name} {format}: {shown:?}"
            );
            assert!(
                !shown
                    .lines()
                    .any(|l| l.trim_start().starts_with("membw: node healthy")),
                "{name} {format}: {shown}"
            );
        }
    }
}

/// `report` reads several kinds of files and not every format renders
/// each: the one asked for is refused in one line naming those that do
/// (exit 2, an input), and a latency file has its CSV as `latency` does.
#[test]
fn a_format_a_document_has_no_form_in_is_an_input_refused_with_those_it_has() {
    let dir = crate::common::scratch_dir();
    let plots = dir.path().join("plots");
    let out = membw()
        .args([
            "report",
            &fixture("run.json"),
            "--format",
            "jsonl",
            "--plots",
        ])
        .arg(&plots)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "membw: error: --format jsonl: membw report has no jsonl form for run documents (it has text, csv, markdown, html)",
    );
    // Refused before anything was written.
    assert!(out.stdout.is_empty());
    assert!(!plots.exists());
    let csv = stdout(&[
        "report",
        &fixture("latency.jsonl"),
        "--format",
        "csv",
        "--plots",
        plots.to_str().unwrap(),
    ]);
    assert!(
        csv.starts_with("schema_version,hostname,study,cpu,"),
        "{csv}"
    );
    assert!(csv.lines().count() > 2, "{csv}");
}

#[test]
fn run_documents_of_several_nodes_are_one_csv_as_run_prints_each() {
    // Each node's `membw run --json`: one header, each node's rows as
    // `membw run --format csv` prints them, in the order given.
    let dir = crate::common::scratch_dir();
    let run = std::fs::read_to_string(fixture("run.json")).unwrap();
    let mut files = Vec::new();
    for host in ["n1", "n2"] {
        let file = dir.path().join(format!("{host}.json"));
        let text = run
            .replace("\"hostname\": \"vm\"", &format!("\"hostname\": \"{host}\""))
            .replace("\"hostname\":\"vm\"", &format!("\"hostname\":\"{host}\""));
        std::fs::write(&file, text).unwrap();
        files.push(file.to_str().unwrap().to_string());
    }
    let plots = dir.path().join("plots");
    let mut args = vec![
        "report",
        "--format",
        "csv",
        "--plots",
        plots.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    let csv = stdout(&args);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("schema_version,hostname,kernel,best_rate_mb_s,"),
        "{csv}"
    );
    let hosts: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(
        hosts,
        ["n1", "n1", "n1", "n1", "n2", "n2", "n2", "n2"],
        "{csv}"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("schema_version"))
            .count(),
        1
    );
    // One document alone: the same rows, the same header.
    let one = stdout(&[
        "report",
        "--format",
        "csv",
        "--plots",
        plots.to_str().unwrap(),
        &files[0],
    ]);
    assert_eq!(one.lines().collect::<Vec<_>>(), lines[..5]);
}
