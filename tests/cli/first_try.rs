//! What a newcomer's first hour tripped on, replayed as they typed it:
//! each must now give what a user expects (a hint, one message, a refusal
//! naming the bad part, a record that flows on).

use crate::common;

use crate::common::{membw, stdout, usage_error};

/// `membw run` on the fake source with `extra`: (stdout, stderr), after
/// asserting success.
fn fake_run(extra: &[&str]) -> (String, String) {
    let out = membw()
        .args(["run", "--fake-source", "4", "--ntimes", "2"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{extra:?}: {stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

#[test]
fn empty_policies_and_empty_list_items_are_refused() {
    for mem in ["", ";", "local;;bind:0"] {
        usage_error(
            &["run", "--fake-source", "4", "--mem", mem],
            "an empty policy",
        );
    }
    usage_error(
        &[
            "sweep", "--fake-source", "4", "--strategy", "compact,,spread",
        ],
        "--strategy 'compact,,spread': an empty item",
    );
}

#[test]
fn a_policy_for_an_array_no_kernel_uses_is_a_warning() {
    let (_, stderr) = fake_run(&["--quiet", "--mem", "d=bind:0"]);
    crate::common::assert_contains(
        &stderr,
        "gives array d a policy, but no kernel of this run uses it",
    );
    let (_, stderr) = fake_run(&["--quiet", "--kernels", "striad", "--mem", "d=bind:0"]);
    assert!(
        !stderr.contains("no kernel of this run uses it"),
        "{stderr}"
    );
}

#[test]
fn thread_ranges_are_named_as_typed_and_units_take_any_case() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let range = format!("1-{}", cpus + 2);
    usage_error(
        &["sweep", "--fake-source", "4", "--threads", &range],
        &format!("--threads '{range}': 2 of its counts"),
    );
    for size in ["8mb", "80m", "2MiB", "2mib"] {
        fake_run(&["--quiet", "--size", size]);
    }
}

#[test]
fn a_peak_takes_units_and_a_peak_below_the_measured_rate_is_called_wrong() {
    for peak in ["400GB/s", "400GB", "0.4tb/s"] {
        let out = stdout(&["run", "--fake-source", "4", "--ntimes", "2", "--peak", peak]);
        assert!(out.contains("peak for the"), "{peak}: {out}");
    }
    // 4 GB/s per thread from the fake source, against a 0.4 GB/s "peak".
    let (text, stderr) = fake_run(&["--peak", "0.4"]);
    crate::common::assert_contains(&stderr, "above the theoretical peak of 0.4 GB/s");
    crate::common::assert_contains(&stderr, "the peak is wrong");
    crate::common::assert_contains(&text, "a number without a unit, taken as GB/s");
    usage_error(&["run", "--peak", "400/s"], "needs a unit");
}

#[test]
fn exec_without_the_double_dash_says_where_it_goes() {
    usage_error(
        &["exec", "./mystream", "20000000"],
        "put -- before the program and its arguments: membw exec [OPTIONS] -- ./mystream 20000000",
    );
    usage_error(&["exec", "--repeat", "2", "./mystream"], "-- ./mystream");
}

#[test]
fn a_file_that_is_not_a_results_file_names_what_membw_reads() {
    let dir = crate::common::scratch_dir();
    let txt = dir.path().join("stream.txt");
    std::fs::write(&txt, "STREAM version $Revision: 5.10 $\nCopy: 1 2 3 4\n").unwrap();
    usage_error(&["report", txt.to_str().unwrap()], "not a file membw reads");
    usage_error(
        &["compare", txt.to_str().unwrap(), txt.to_str().unwrap()],
        "membw exec -- ./stream",
    );
}

#[test]
fn a_file_size_limit_is_a_write_error_that_keeps_whole_lines() {
    let dir = crate::common::scratch_dir();
    let file = dir.path().join("limited.jsonl");
    let membw = common::membw_argv().join(" ");
    // 8 KiB (ulimit -f counts 1024-byte blocks in bash): a few records fit.
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -f 8; exec {membw} sweep --fake-source 4 --ntimes 2 --threads 1,2 --mem 'local;bind:0' --strategy compact,spread -o {}",
            file.display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "killed by SIGXFSZ? {stderr}");
    crate::common::assert_contains(&stderr, "File too large");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.is_empty() && text.ends_with('\n'), "a torn last line");
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
}

#[test]
fn a_signal_before_tunes_first_candidate_exits_with_the_signal() {
    let child = common::membw_process()
        .args(["tune", "--size", "64M", "--ntimes", "50"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough for the handlers to be in place, even under qemu-user;
    // far shorter than one candidate (50 repetitions of 64M elements).
    std::thread::sleep(std::time::Duration::from_millis(2000));
    let out = common::stop_with(child, "INT");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    crate::common::assert_contains(&stderr, "before the first candidate completed");
}

#[test]
fn exec_records_flow_into_report_and_compare() {
    let dir = crate::common::scratch_dir();
    let script = dir.path().join("stream");
    std::fs::write(
        &script,
        "#!/bin/sh\nsleep 0.3\ncat <<'OUT'\nFunction    Best Rate MB/s  Avg time     Min time     Max time\n\
         Copy:           25000.0     0.002000     0.001920     0.002100\n\
         Triad:          24000.0     0.003100     0.003000     0.003200\nOUT\necho to-stderr >&2\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = script.to_str().unwrap();
    let json = stdout(&["exec", "--format", "json", "--", exe]);
    assert_eq!(json.lines().count(), 1, "one line: {json}");
    let one = dir.path().join("one.json");
    std::fs::write(&one, &json).unwrap();
    let results = dir.path().join("results.jsonl");
    let text = stdout(&["exec", "-o", results.to_str().unwrap(), "--", exe]);
    assert!(
        // One shell thread with the placement's mask: pinned only on one CPU.
        text.contains("Verified:  threads ") && text.contains(" · pages as the policy asks"),
        "{text}"
    );
    assert!(
        text.contains("Trusted:") || text.contains("NOT TRUSTED:"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(&results).unwrap().lines().count(),
        1
    );
    let report = stdout(&["report", one.to_str().unwrap()]);
    // Under a loaded test run the tick counters may see other work: the
    // point is then reported, marked, and never the best.
    assert!(
        report.contains("best triad: 24.00 GB/s")
            || (report.contains("24.00")
                && report.contains("best: none, no point has a run trusted for triad")),
        "{report}"
    );
    stdout(&["compare", one.to_str().unwrap(), results.to_str().unwrap()]);
    // --show-output passes the program's own output through.
    let out = membw()
        .args(["exec", "--show-output", "--", exe])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Copy:           25000.0"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("to-stderr"));
}

#[test]
fn exec_says_once_why_it_failed_and_verifies_only_what_it_sampled() {
    let out = membw()
        .args(["exec", "--", "sh", "-c", "echo hello"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr.matches("printed nothing membw understands").count(),
        1,
        "{stderr}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    crate::common::assert_contains(&text, "pages not sampled");
    assert!(!text.contains("pages as the policy asks"), "{text}");
}

#[test]
fn resume_continues_the_files_study_and_refuses_another() {
    let (_dir, file, f) = crate::common::scratch_file("study.jsonl");
    let study = ["--fake-source", "4", "--ntimes", "3", "--stores", "regular"];
    let mut first = vec!["sweep", "--threads", "1", "-o", &f];
    first.extend(study);
    stdout(&first);
    // The study is stored typed, every setting by name (defaults included),
    // and where results go or how they are shown is not part of it.
    let line = std::fs::read_to_string(&file).unwrap();
    let record: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let stored = &record["study"];
    assert_eq!(stored["threads"], serde_json::json!(["1"]), "{stored}");
    assert_eq!(stored["ntimes"], 3, "{stored}");
    assert_eq!(stored["stores"], serde_json::json!(["regular"]), "{stored}");
    assert_eq!(stored["repeat"], 1, "{stored}");
    for presentation in ["output", "resume", "format", "markdown"] {
        assert!(
            stored.get(presentation).is_none(),
            "{presentation}: {stored}"
        );
    }
    // Other axes: refused, naming each difference.
    let mut other = vec!["sweep", "--threads", "2", "--resume", &f];
    other.extend(["--fake-source", "4"]);
    usage_error(
        &other,
        "a different study (--ntimes 10 here, 3 in the file; --stores auto here, regular in the file; --threads 2 here, 1 in the file)",
    );
    // --resume alone continues it: the one point is there, nothing is added.
    let out = membw().args(["sweep", "--resume", &f]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    crate::common::assert_contains(&stderr, "1 point already there");
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 1);
    // The same study typed again is accepted too.
    let mut same = vec!["sweep", "--threads", "1", "--resume", &f];
    same.extend(study);
    stdout(&same);
}

#[test]
fn compare_pairs_an_auto_point_with_the_store_mode_it_ran() {
    let dir = crate::common::scratch_dir();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    // Auto resolves by this host's caches: B asks for the mode A ran.
    let ran = |file: &std::path::Path| {
        let text = std::fs::read_to_string(file).unwrap();
        ["nt", "regular"]
            .into_iter()
            .find(|m| text.contains(&format!("\"stores\":\"{m}\"")))
            .expect("a resolved store mode")
    };
    for file in [&a, &b] {
        let stores = if file == &a { "auto" } else { ran(&a) };
        stdout(&[
            "sweep",
            "--fake-source",
            "4",
            "--threads",
            "1",
            "--size",
            "64M",
            "--stores",
            stores,
            "-o",
            file.to_str().unwrap(),
        ]);
    }
    let out = stdout(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    let rows: Vec<&str> = out.lines().filter(|l| l.contains(" × 1 · ")).collect();
    assert_eq!(rows.len(), 1, "one row, paired: {out}");
    assert!(rows[0].contains(" 1.000 "), "{out}");
}

#[test]
fn the_man_pages_the_main_page_names_are_written() {
    let dir = crate::common::scratch_dir();
    let out = membw()
        .args(["man", "--dir", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let main = std::fs::read_to_string(dir.path().join("membw.1")).unwrap();
    let named: Vec<String> = main
        .split("membw\\-")
        .skip(1)
        .filter_map(|rest| rest.split_once("(1)").map(|(name, _)| name.to_string()))
        .filter(|name| !name.contains(char::is_whitespace))
        .collect();
    assert!(named.len() >= 10, "{named:?}");
    for name in named {
        assert!(
            dir.path().join(format!("membw-{name}.1")).exists(),
            "membw-{name}.1"
        );
    }
}

#[test]
fn the_completion_line_works_on_a_fresh_home_and_matches_the_readme() {
    let help = stdout(&["completions", "--help"]);
    let line = "mkdir -p ~/.local/share/bash-completion/completions && membw completions bash > ~/.local/share/bash-completion/completions/membw";
    assert!(
        help.replace('\n', " ").replace("  ", " ").contains(line),
        "{help}"
    );
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(
        readme.contains(line),
        "the README gives another completion line"
    );
    // On a home without the directory.
    let home = crate::common::scratch_dir();
    let bin = common::membw_argv().join(" ");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(line.replace("membw completions", &format!("{bin} completions")))
        .env("HOME", home.path())
        .status()
        .unwrap();
    assert!(status.success());
    let script = home
        .path()
        .join(".local/share/bash-completion/completions/membw");
    assert!(std::fs::read_to_string(script).unwrap().contains("_membw"));
}
