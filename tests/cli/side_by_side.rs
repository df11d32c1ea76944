//! Experiments side by side: `report A B` reads several results files as
//! one, `compare` says why it found no point in both, and `report --rows
//! --columns` turns the table as tutorials lay it out. The fake source
//! measures: the logic under test is not the measurement.

use crate::common::{membw, stdout, usage_error};
use std::path::Path;

/// A fake-source run of one placement, appended to `file`.
fn run(file: &Path, extra: &[&str]) {
    let mut args = vec!["run", "--fake-source", "4", "--size", "1M", "--ntimes", "2"];
    args.extend_from_slice(extra);
    args.extend(["-o", file.to_str().unwrap()]);
    membw().args(&args).assert().success();
}

#[test]
fn two_configurations_in_two_files_are_reported_together() {
    let dir = crate::common::scratch_dir();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    run(&a, &["--threads", "1"]);
    run(&b, &["--threads", "2"]);
    let (fa, fb) = (a.to_str().unwrap(), b.to_str().unwrap());

    // compare finds no point in both and says why, and where to go.
    let cmp = stdout(&["compare", fa, fb]);
    crate::common::assert_contains(&cmp, "0 points in both");
    crate::common::assert_contains(&cmp, "no point is in both");
    assert!(
        cmp.contains("threads") && cmp.contains("membw report FILE_A FILE_B"),
        "{cmp}"
    );

    // report reads both as one: a row each, 4 and 8 GB/s.
    let both = stdout(&["report", fa, fb]);
    let threads: Vec<(String, String)> = both
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("GB/s"))
        .map(|l| {
            let cells: Vec<&str> = l
                .trim_start_matches(['▶', ' '])
                .split_whitespace()
                .collect();
            (cells[0].to_string(), cells[cells.len() - 4].to_string())
        })
        .collect();
    assert_eq!(
        threads,
        [("1".into(), "4.00".into()), ("2".into(), "8.00".into())],
        "{both}"
    );
    // The same point in both files: its runs pooled, and it says so.
    let out = membw().args(["report", fa, fa]).output().unwrap();
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    crate::common::assert_contains(
        &said,
        "2 results files read as one; 1 point recorded in more than one",
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("n = 2 runs per point"));

    // --by-file: the same point in two files is a row per file, labelled.
    let c = dir.path().join("c.jsonl");
    run(&c, &["--threads", "1"]);
    let by_file = stdout(&["report", fa, c.to_str().unwrap(), "--by-file"]);
    let header = by_file.lines().next().unwrap();
    assert!(header.trim_start().starts_with("file"), "{by_file}");
    let files: Vec<&str> = by_file
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("GB/s"))
        .map(|l| {
            l.trim_start_matches(['▶', ' '])
                .split_whitespace()
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(files, ["a", "c"], "{by_file}");

    // Kinds are not mixed.
    let json = dir.path().join("run.json");
    let doc = stdout(&[
        "run", "--fake-source", "4", "--size", "1M", "--ntimes", "2", "--json",
    ]);
    std::fs::write(&json, doc).unwrap();
    usage_error(
        &["report", fa, json.to_str().unwrap()],
        "report merges files of one kind",
    );
}

#[test]
fn a_threads_by_policy_sweep_is_laid_out_threads_down_policies_across() {
    let (_dir, _, f) = crate::common::scratch_file("tm.jsonl");
    let sweep = [
        "sweep", "--fake-source", "4", "--threads", "1-2", "--mem", "local", "--mem",
        "interleave:all", "--size", "1M", "--ntimes", "2", "-o", &f,
    ];
    membw().args(sweep).assert().success();
    let table = stdout(&["report", &f, "--rows", "threads", "--columns", "mem"]);
    let header = table
        .lines()
        .find(|l| l.contains("threads \\ mem"))
        .expect(&table);
    assert!(
        header.contains("local") && header.contains("interleave:all"),
        "{table}"
    );
    // Two rows, one per thread count, each with both policies' cells.
    let body: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.contains("threads \\ mem"))
        .skip(1)
        .take(2)
        .collect();
    for (row, threads) in body.iter().zip(["1", "2"]) {
        let cells: Vec<&str> = row
            .trim_start_matches(['▶', ' '])
            .split_whitespace()
            .collect();
        assert_eq!(cells[0], threads, "{table}");
        assert_eq!(
            cells.iter().filter(|c| c.parse::<f64>().is_ok()).count(),
            3,
            "{table}"
        );
    }
    crate::common::assert_contains(&table, "cells: triad GB/s");
    let md = stdout(&[
        "report", &f, "--rows", "mem", "--columns", "threads", "--markdown",
    ]);
    crate::common::assert_contains(&md, "| mem \\ threads | 1 | 2 |");
    usage_error(
        &["report", &f, "--rows", "mem", "--columns", "mem"],
        "both rows and columns",
    );
    usage_error(
        &["report", &f, "--rows", "memz", "--columns", "mem"],
        "one of threads",
    );
    // CSV: the same layout, each cell its mean.
    let csv = stdout(&[
        "report", &f, "--rows", "threads", "--columns", "mem", "--format", "csv",
    ]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[0].starts_with("threads \\ mem,") && lines[0].contains("local"),
        "{csv}"
    );
    for (line, threads) in lines[1..].iter().zip(["1", "2"]) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], threads, "{csv}");
        assert!(cells[1..].iter().all(|c| c.parse::<f64>().is_ok()), "{csv}");
    }
    usage_error(
        &[
            "report", &f, "--rows", "threads", "--columns", "mem", "--format", "jsonl",
        ],
        "--format jsonl",
    );
    // Every run's figures beside the trusted runs' widen the long table
    // only: a turned table has one figure a cell, a CSV row every count.
    let long = stdout(&["report", &f, "--all-runs"]);
    assert!(
        long.lines()
            .next()
            .is_some_and(|h| h.contains("all: triad GB/s")),
        "{long}"
    );
    usage_error(
        &["report", &f, "--all-runs", "--format", "csv"],
        "--format csv",
    );
    usage_error(
        &[
            "report", &f, "--all-runs", "--rows", "threads", "--columns", "mem",
        ],
        "--all-runs",
    );
}

/// Ranks started together with --independent measured at the same time:
/// each is a point of its own (never pooled as runs of one), while the
/// same rank measured again is a second run of its point.
#[test]
fn concurrent_ranks_are_points_of_their_own() {
    let dir = crate::common::scratch_dir();
    let f = dir.path().join("ranks.jsonl");
    let rank = |r: &str| {
        membw()
            .env("OMPI_COMM_WORLD_SIZE", "2")
            .env("OMPI_COMM_WORLD_RANK", r)
            .args([
                "run", "--independent", "--fake-source", "4", "--size", "1M", "--ntimes", "2",
            ])
            .args(["--cpus", "0", "-o", f.to_str().unwrap()])
            .assert()
            .success();
    };
    rank("0");
    rank("1");
    let table = stdout(&["report", f.to_str().unwrap()]);
    assert!(
        table.contains("(rank 0 of 2)") && table.contains("(rank 1 of 2)"),
        "{table}"
    );
    crate::common::assert_contains(&table, "n = 1 run per point");
    crate::common::assert_contains(
        &table,
        "2 of 2 ranks measured together, triad 8.00 GB/s in sum",
    );
    crate::common::assert_contains(&table, "measured at the same\ntime");
    rank("0");
    let table = stdout(&["report", f.to_str().unwrap()]);
    assert!(
        table.contains("runs"),
        "rank 0 has 2 runs now, rank 1 one: {table}"
    );
}
