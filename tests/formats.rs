//! `--format` is one type for every command that prints results: each
//! format renders what it has a form for, and a format with none for a
//! command is refused before anything runs.

mod common;

use common::{stdout, usage_error};

#[test]
fn every_format_renders_a_run() {
    let base = ["run", "--fake-source", "4", "--size", "1M", "--ntimes", "2"];
    let with = |f: &str| stdout(&[&base[..], &["--format", f]].concat());
    assert!(with("text").contains("Triad:"));
    let json: serde_json::Value = serde_json::from_str(&with("json")).unwrap();
    assert_eq!(json["schema_version"], 1);
    let csv = with("csv");
    assert!(csv.starts_with("schema_version,hostname,kernel,"), "{csv}");
    assert_eq!(csv.lines().count(), 5, "{csv}");
    let md = with("markdown");
    assert!(
        md.contains("| kernel | best MB/s |") && md.contains("| triad |"),
        "{md}"
    );
}

#[test]
fn latency_has_csv_and_markdown_too() {
    let base = ["latency", "--sizes", "4KiB,64KiB", "--time", "5ms"];
    let with = |f: &str| stdout(&[&base[..], &["--format", f]].concat());
    let csv = with("csv");
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(
        rows[0].starts_with("schema_version,hostname,study,cpu,"),
        "{csv}"
    );
    assert!(
        rows[1].contains(",idle,") && rows[1].contains(",4096,"),
        "{csv}"
    );
    assert!(with("markdown").starts_with("## Latency"));
}

#[test]
fn a_format_without_a_form_is_refused_before_anything_runs() {
    // The program would run for an hour: the refusal comes first.
    usage_error(
        &["exec", "--format", "csv", "--", "sleep", "3600"],
        "--format csv: membw exec has no csv form (choose from text, json)",
    );
    usage_error(&["run", "--format", "yaml"], "yaml");
}

#[test]
fn report_and_compare_share_the_format_flag() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let f = file.to_str().unwrap();
    stdout(&[
        "sweep",
        "--fake-source",
        "4",
        "--threads",
        "1,2",
        "--size",
        "1M",
        "-o",
        f,
    ]);
    let plots = dir.path().join("p");
    let p = plots.to_str().unwrap();
    // --format markdown and the older --markdown print the same report.
    let md = stdout(&["report", f, "--plots", p, "--format", "markdown"]);
    assert!(md.starts_with("# membw report"), "{md}");
    assert_eq!(md, stdout(&["report", f, "--plots", p, "--markdown"]));
    let text = stdout(&["report", f, "--plots", p]);
    assert!(
        !text.starts_with('#') && text.contains("triad GB/s"),
        "{text}"
    );
    let cmp = stdout(&["compare", f, f, "--format", "markdown"]);
    assert!(cmp.contains("| point |") && cmp.contains("|---|"), "{cmp}");
    usage_error(
        &["report", f, "--format", "csv"],
        "membw report has no csv form",
    );
    usage_error(
        &["compare", f, f, "--format", "json"],
        "membw compare has no json form",
    );
}
