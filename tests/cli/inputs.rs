//! Inputs that cannot mislead: a size whose unit is ambiguous says both
//! readings, names are names in any case, pasted typography is named, and
//! every hint is a command that runs.

use crate::common;

use crate::common::{stdout, usage_error};
use std::process::Command;

/// Runs `line` in bash with the membw under test first on PATH.
fn shell(dir: &std::path::Path, line: &str) -> std::process::Output {
    let wrapper = dir.join("membw");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/bash\nexec {} \"$@\"\n",
            common::membw_argv().join(" ")
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["-c", &format!("set -e; {line}")])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap()
}

/// The command a hint suggests: the text after `marker`, up to `end`.
fn hint<'a>(error: &'a str, marker: &str, end: &str) -> &'a str {
    let rest = error
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("{error}"));
    rest.split(end).next().unwrap()
}

fn error_of(args: &[&str]) -> String {
    let out = common::membw().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    stderr
}

#[test]
fn a_size_with_a_bare_decimal_suffix_says_both_readings() {
    let text = stdout(&["run", "--size", "1M", "--ntimes", "2"]);
    crate::common::assert_contains(
        &text,
        "Size read as elements: 1M = 10⁶ elements × 8 B = 8 MB per array; for bytes write 1MB.",
    );
    let bytes = stdout(&["run", "--size", "8MB", "--ntimes", "2"]);
    assert!(!bytes.contains("Size read as"), "{bytes}");
    // An error about the size carries both readings too.
    let e = error_of(&["run", "--size", "100T"]);
    crate::common::assert_contains(&e, "unknown unit");
    let e = error_of(&["run", "--size", "100000G"]);
    crate::common::assert_contains(
        &e,
        "(100000G = 100000 × 10⁹ elements × 8 B = 800 TB per array; for bytes write 100000GB)",
    );
}

#[test]
fn size_hints_are_commands_that_run() {
    let dir = crate::common::scratch_dir();
    let e = error_of(&["run", "--size", "2,000,000"]);
    let size = hint(&e, "write ", "\n").trim();
    assert_eq!(size, "2000000");
    stdout(&["run", "--size", size, "--ntimes", "2"]);
    let e = error_of(&["run", "--size", "1M,2M"]);
    let command = hint(&e, "to measure several: ", " (then");
    let out = shell(dir.path(), command);
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = shell(dir.path(), "membw report sizes.jsonl");
    assert!(report.status.success());
    let text = std::fs::read_to_string(dir.path().join("sizes.jsonl")).unwrap();
    let elements: Vec<u64> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|r| r["point"]["elements"].as_u64().unwrap())
        .collect();
    assert_eq!(elements, [1_000_000, 2_000_000]);
}

/// Bits are refused with the byte spelling, a count without a byte unit
/// where bytes are needed gets one, and each spelling suggested is
/// accepted by the same flag.
#[test]
fn unit_hints_are_spellings_the_flag_accepts() {
    let cases: [(&[&str], &str); 4] = [
        (&["run", "--dry-run", "--size"], "6Gb"),
        (&["run", "--dry-run", "--peak"], "409.6Gb/s"),
        (&["sweep", "--dry-run", "--working-sets"], "8M"),
        (&["sweep", "--dry-run", "--working-sets"], "512Kb"),
    ];
    for (flags, bad) in cases {
        let mut args = flags.to_vec();
        args.push(bad);
        let e = error_of(&args);
        crate::common::assert_contains(&e, &format!("'{bad}'"));
        let good = hint(&e, "write ", "\n")
            .split(" or ")
            .next()
            .unwrap()
            .trim();
        let mut args = flags.to_vec();
        args.push(good);
        let out = common::membw().args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{bad} → {good}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Bits are never read as bytes.
    assert!(error_of(&["run", "--size", "6Gb"]).contains("is bits"));
    // Where only bytes are taken, no element count is suggested.
    let e = error_of(&["latency", "--working-sets", "1e9"]);
    assert!(!e.contains("80M") && e.contains("512MB"), "{e}");
    // STREAM's powers of ten are element counts.
    let plan = stdout(&["run", "--dry-run", "--size", "2e7"]);
    crate::common::assert_contains(&plan, "20000000");
}

#[test]
fn two_policies_joined_by_a_comma_are_told_how_to_be_written() {
    let e = error_of(&["run", "--mem", "bind:0,bind:1"]);
    assert!(
        e.contains("repeat the flag (--mem bind:0 --mem bind:1)")
            && e.contains("name the arrays (a=bind:0,b=bind:1)"),
        "{e}"
    );
    // The suggested spellings parse (node 0 exists everywhere).
    stdout(
        &[
            "sweep", "--fake-source", "4", "--threads", "1", "--mem", "bind:0", "--mem", "BIND:0",
            "--size", "1M", "--ntimes", "2", "-o",
        ]
        .iter()
        .copied()
        .chain([tempfile::tempdir()
            .unwrap()
            .path()
            .join("m.jsonl")
            .to_str()
            .unwrap()])
        .collect::<Vec<_>>(),
    );
}

#[test]
fn names_are_names_in_any_case() {
    for args in [
        ["--stores", "NT"],
        ["--strategy", "SPREAD"],
        ["--format", "JSON"],
        ["--kernels", "TRIAD"],
        ["--hugepages", "AUTO"],
    ] {
        let mut all = vec!["run", "--size", "1M", "--ntimes", "2"];
        all.extend(args);
        stdout(&all);
    }
}

#[test]
fn other_tools_words_point_to_membws() {
    let e = error_of(&["run", "--strategy", "scatter"]);
    assert!(
        e.contains("--strategy spread") && e.contains("--kmp-affinity scatter"),
        "{e}"
    );
    stdout(&[
        "run", "--strategy", "spread", "--size", "1M", "--ntimes", "2",
    ]);
    let e = error_of(&["run", "./stream", "20"]);
    crate::common::assert_contains(&e, "membw exec -- ./stream 20");
}

#[test]
fn pasted_typography_is_named_in_flags_and_the_environment() {
    usage_error(
        &["run", "--cpus", "0\u{2013}1"],
        "--cpus '0\u{2013}1': '\u{2013}' (U+2013 EN DASH)",
    );
    let out = common::membw()
        .args(["run", "--size", "1M"])
        .env("OMP_PLACES", "\u{201C}{0}\u{201D}")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("environment OMP_PLACES")
            && stderr.contains("U+201C LEFT DOUBLE QUOTATION MARK"),
        "{stderr}"
    );
    // A program's own arguments after -- are the program's business.
    let out = common::membw()
        .args(["exec", "--", "/bin/echo", "\u{201C}x\u{201D}"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("typographic"));
}
