//! `--format` is one type for every command that prints results: each
//! format renders what it has a form for, and a format with none for a
//! command is refused before anything runs.

use crate::common::{membw, stdout, usage_error};

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
    assert_eq!(rows.len(), 5, "two sizes in each chase order: {csv}");
    assert!(rows[0].ends_with(",chase"), "{csv}");
    assert!(
        rows[1].ends_with(",random") && rows[4].ends_with(",page-local"),
        "{csv}"
    );
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
        "invalid value 'csv' for '--format <FORMAT>' [possible values: text, json, jsonl]",
    );
    usage_error(&["run", "--format", "yaml"], "yaml");
}

/// The formats `membw COMMAND --help` lists for `--format`.
fn listed_formats(command: &str) -> Vec<String> {
    let help = stdout(&[command, "--help"])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let flag = help
        .split("--format <FORMAT>")
        .nth(1)
        .unwrap_or_else(|| panic!("membw {command} has no --format: {help}"));
    let values = flag
        .split("[possible values: ")
        .nth(1)
        .and_then(|v| v.split(']').next())
        .unwrap_or_else(|| panic!("membw {command} --format lists nothing: {flag}"));
    values.split(',').map(|v| v.trim().to_string()).collect()
}

#[test]
fn every_command_that_prints_results_lists_exactly_its_formats() {
    let expected: &[(&str, &[&str])] = &[
        ("run", &["text", "json", "jsonl", "csv", "markdown"]),
        ("sweep", &["text", "jsonl", "markdown"]),
        ("tune", &["text", "jsonl"]),
        ("exec", &["text", "json", "jsonl"]),
        ("latency", &["text", "json", "jsonl", "csv", "markdown"]),
        ("report", &["text", "jsonl", "csv", "markdown", "html"]),
        ("compare", &["text", "markdown"]),
        ("baseline", &["text", "json"]),
        ("check", &["text", "json", "jsonl"]),
        ("topo", &["text", "json"]),
        ("place", &["text", "json"]),
    ];
    for (command, formats) in expected {
        assert_eq!(&listed_formats(command), formats, "membw {command}");
        // The one format none of these has is refused by name.
        if !formats.contains(&"html") {
            usage_error(&[command, "--format", "html"], "invalid value 'html'");
        }
    }
    // Each listed form prints: topo and place, as text and JSON; the older
    // --json spelling is the same document.
    for command in ["topo", "place"] {
        // (Free memory moves between two runs: the keys are compared.)
        let keys = |args: &[&str]| {
            let doc: serde_json::Value = serde_json::from_str(&stdout(args)).unwrap();
            doc.as_object().unwrap().keys().cloned().collect::<Vec<_>>()
        };
        let json = keys(&[command, "--format", "json"]);
        assert!(json.len() >= 3, "{json:?}");
        assert_eq!(json, keys(&[command, "--json"]));
        assert!(!stdout(&[command]).starts_with('{'));
    }
}

#[test]
fn report_and_compare_share_the_format_flag() {
    let (dir, _, f) = crate::common::scratch_file("s.jsonl");
    stdout(&[
        "sweep", "--fake-source", "4", "--threads", "1,2", "--size", "1M", "-o", &f,
    ]);
    let plots = dir.path().join("p");
    let p = plots.to_str().unwrap();
    // --format markdown and the older --markdown print the same report.
    let md = stdout(&["report", &f, "--plots", p, "--format", "markdown"]);
    assert!(md.starts_with("# membw report"), "{md}");
    assert_eq!(md, stdout(&["report", &f, "--plots", p, "--markdown"]));
    let text = stdout(&["report", &f, "--plots", p]);
    assert!(
        !text.starts_with('#') && text.contains("triad GB/s"),
        "{text}"
    );
    let cmp = stdout(&["compare", &f, &f, "--format", "markdown"]);
    assert!(cmp.contains("| point |") && cmp.contains("|---|"), "{cmp}");
    let csv = stdout(&["report", &f, "--format", "csv"]);
    let rows: Vec<&str> = csv.lines().collect();
    assert!(
        rows[0].starts_with("schema_version,hostname,experiment,placement,threads,")
            && rows[0].ends_with(
                ",trusted,untrusted_why,target,in_caches,migrations_per_run,devices_at_once,all_runs,band"
            )
            && {
                // trusted, target and all_runs; the band is the host's caches'.
                let cells: Vec<&str> = rows[1].split(',').collect();
                ["true", "false"].contains(&cells[18]) && cells[20] == "cpu" && cells[24] == "1"
            },
        "{csv}"
    );
    // Two points, each with its four STREAM kernels.
    assert_eq!(rows.len(), 1 + 2 * 4, "{csv}");
    usage_error(
        &["compare", &f, &f, "--format", "json"],
        "invalid value 'json' for '--format <FORMAT>' [possible values: text, markdown]",
    );
}

#[test]
fn json_lines_flow_into_report_and_html_covers_every_report() {
    let dir = crate::common::scratch_dir();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    // A run as one compact line that `membw report` reads back as a node.
    let run = stdout(&[
        "run", "--fake-source", "4", "--size", "1M", "--ntimes", "2", "--format", "jsonl",
    ]);
    assert_eq!(run.lines().count(), 1, "{run}");
    let node = path("node.json");
    std::fs::write(&node, &run).unwrap();
    let nodes_html = path("nodes.html");
    let plots = path("plots");
    let nodes = stdout(&["report", &node, "--plots", &plots, "--html", &nodes_html]);
    assert!(
        nodes.contains("Triad") || nodes.contains("triad"),
        "{nodes}"
    );
    let page = std::fs::read_to_string(&nodes_html).unwrap();
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.contains("<pre>"),
        "{page}"
    );

    // A sweep's summary in any of its formats; jsonl is every record of the file.
    let sweep = path("s.jsonl");
    let md = stdout(&[
        "sweep", "--fake-source", "4", "--threads", "1,2", "--size", "1M", "-o", &sweep,
        "--format", "markdown",
    ]);
    crate::common::assert_contains(&md, "|---");
    let again = stdout(&["report", &sweep, "--plots", &plots, "--format", "jsonl"]);
    assert_eq!(again, std::fs::read_to_string(&sweep).unwrap());
    let html = stdout(&["report", &sweep, "--plots", &plots, "--format", "html"]);
    assert!(html.contains("<table") && html.contains("<svg"), "{html}");

    // Latency: its records as lines, and an HTML page with the curves.
    let lat = stdout(&[
        "latency", "--sizes", "4KiB,64KiB,1MiB", "--time", "5ms", "--chase", "random", "--format",
        "jsonl",
    ]);
    assert_eq!(lat.lines().count(), 3, "{lat}");
    let lat_file = path("lat.jsonl");
    std::fs::write(&lat_file, &lat).unwrap();
    let lat_html = path("lat.html");
    stdout(&["report", &lat_file, "--plots", &plots, "--html", &lat_html]);
    let page = std::fs::read_to_string(&lat_html).unwrap();
    assert!(page.contains("<pre>") && page.contains("<svg"), "{page}");
    usage_error(
        &["sweep", "--format", "csv", "--fake-source", "4"],
        "invalid value 'csv' for '--format <FORMAT>' [possible values: text, jsonl, markdown]",
    );
}

#[test]
fn run_and_sweep_files_of_the_same_configuration_pair_in_compare() {
    let dir = crate::common::scratch_dir();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (a, b, c) = (path("run.jsonl"), path("sweep.jsonl"), path("one.jsonl"));
    let fixed = ["--fake-source", "4", "--array-size", "1M"];
    stdout(&[&["run", "-q", "-o", &a][..], &fixed[..]].concat());
    // The same CPUs, policy and stores, asked for another way.
    stdout(&[&["sweep", "-o", &b][..], &fixed[..]].concat());
    // One thread: another measurement.
    stdout(&[&["sweep", "--threads", "1", "-o", &c][..], &fixed[..]].concat());
    let same = stdout(&["compare", &a, &b]);
    crate::common::assert_contains(&same, "1 point in both");
    let other = stdout(&["compare", &a, &c]);
    crate::common::assert_contains(&other, "0 points in both");
}

/// `--json` is every command's JSON form: one document where the command
/// has one, JSON Lines where that is its only one (sweep, tune, report).
#[test]
fn json_is_accepted_by_every_command_with_a_json_form() {
    let (_dir, _, f) = crate::common::scratch_file("s.jsonl");
    let fake = ["--fake-source", "4", "--size", "1M", "--ntimes", "2"];
    let sweep = stdout(&[&["sweep", "--json", "-o", &f, "--threads", "1"][..], &fake].concat());
    assert!(
        sweep
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()),
        "{sweep}"
    );
    let report = stdout(&["report", &f, "--json"]);
    assert!(
        report
            .lines()
            .next()
            .is_some_and(|l| l.contains("\"point\"")),
        "{report}"
    );
    let latency = stdout(&["latency", "--sizes", "16KiB", "--time", "5ms", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&latency).unwrap();
    assert_eq!(doc["experiment"], "latency");
    // A simulated device is held against its own peak on any host.
    let out = membw()
        .args(["check", "--json", "--budget", "1s", "--backend", "sim"])
        .args(["--array-size", "100000"])
        .output()
        .unwrap();
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(verdict["device"]["name"], "sim0", "{verdict}");
}
