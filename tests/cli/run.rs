//! `membw run` end to end: the real binary on small arrays.

use crate::common;

use crate::common::{membw, stdout, usage_error};

use serde_json::Value;

const SMALL: [&str; 5] = ["run", "--size", "2M", "--ntimes", "3"];

#[test]
fn stream_table_parses_like_streams() {
    let out = stdout(&SMALL);
    assert!(out.contains("Function    Best Rate MB/s  Avg time     Min time     Max time\n"));
    assert!(out.contains("Array size = 2000000 (elements), Offset = 0 (elements)"));
    assert!(out.contains("Solution Validates"));
    // What `grep "Triad:" | awk '{print $2}'` does.
    for label in ["Copy:", "Scale:", "Add:", "Triad:"] {
        let line = out.lines().find(|l| l.starts_with(label)).expect(label);
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields.len(), 5, "{line}");
        let rate: f64 = fields[1].parse().unwrap();
        let (avg, min, max): (f64, f64, f64) = (
            fields[2].parse().unwrap(),
            fields[3].parse().unwrap(),
            fields[4].parse().unwrap(),
        );
        assert!(rate > 0.0 && min <= avg && avg <= max, "{line}");
    }
    assert!(out.contains("Thread affinity"));
    assert!(out.contains("GB/s"));
    // Two counted repetitions: each kernel's mean with its interval and n.
    let at = out
        .find("\n  repetitions, mean GB/s ± 95 % CI (n = 2): copy ")
        .unwrap_or_else(|| panic!("no repetitions line: {out}"));
    // Wrapped within 100 columns, continuation lines indented.
    let reps: Vec<&str> = out[at + 1..]
        .lines()
        .enumerate()
        .take_while(|(i, l)| *i == 0 || l.starts_with("    "))
        .map(|(_, l)| l)
        .collect();
    assert!(reps.iter().all(|l| l.chars().count() <= 100), "{reps:?}");
    let reps = reps.join(" ");
    assert!(
        reps.contains(" triad ") && reps.matches(" ± ").count() == 5,
        "{reps}"
    );
}

#[test]
fn quiet_prints_only_the_table() {
    let out = stdout(&[
        "run", "--size", "2M", "--ntimes", "3", "-q", "--kernels", "triad,copy",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("Function"));
    // Kernels run (and print) in STREAM's order whatever order they were asked in.
    assert!(lines[1].starts_with("Copy:") && lines[2].starts_with("Triad:"));
}

#[test]
fn json_is_self_describing_and_consistent() {
    let out = stdout(&[
        "run",
        "--size",
        "1M",
        "--ntimes",
        "4",
        "--json",
        "--kernels",
        "copy,scale,add,triad,read,write",
    ]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["tool"], "membw");
    for key in ["version", "timestamp", "host", "request", "measurement"] {
        assert!(!doc[key].is_null(), "missing {key}");
    }
    assert!(doc["host"]["hostname"].is_string());
    let m = &doc["measurement"];
    assert_eq!(m["array_elements"], 1_000_000);
    assert_eq!(m["validation"]["passed"], true);
    let elements = m["array_elements"].as_f64().unwrap();
    let results = m["results"].as_array().unwrap();
    assert_eq!(results.len(), 6);
    for r in results {
        let times = r["times_s"].as_array().unwrap();
        assert_eq!(times.len(), 4);
        let min = r["min_time_s"].as_f64().unwrap();
        // min over repetitions 2..n, as STREAM does.
        let counted_min = times[1..]
            .iter()
            .map(|t| t.as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        assert_eq!(min, counted_min);
        let bytes = r["bytes_per_element"].as_f64().unwrap() * elements;
        let rate = r["best_rate_mb_s"].as_f64().unwrap();
        assert!(
            (bytes / min / 1e6 - rate).abs() <= 1e-6 * rate,
            "bytes/time != rate for {r}"
        );
        // The counted repetitions as an estimate: n = 3, the best rate is
        // their max, the mean inside its own interval.
        let reps = &r["repetitions"];
        assert_eq!(reps["n"], 3, "{r}");
        let max = reps["max"].as_f64().unwrap();
        assert!((max * 1e3 - rate).abs() <= 1e-6 * rate, "{r}");
        let mean = reps["mean"].as_f64().unwrap();
        let (lo, hi) = (
            reps["ci"]["low"].as_f64().unwrap(),
            reps["ci"]["high"].as_f64().unwrap(),
        );
        assert!(lo <= mean && mean <= hi && mean <= max, "{r}");
        assert_eq!(reps["ci"]["level"], 0.95);
    }
    let threads = m["threads"].as_array().unwrap();
    assert!(!threads.is_empty());
    for t in threads {
        assert_eq!(
            t["cpu"], t["observed_cpu"],
            "thread ran where it was pinned"
        );
    }
}

#[test]
fn csv_has_a_fixed_header_and_one_row_per_kernel() {
    let out = stdout(&[
        "run", "--size", "1M", "--ntimes", "3", "--format", "csv", "--kernels", "copy,triad",
    ]);
    let mut lines = out.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("schema_version,hostname,kernel,best_rate_mb_s,"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2);
    assert!(rows[0].contains(",copy,") && rows[1].contains(",triad,"));
    // validated, then trusted (true, or false on a loaded test machine).
    assert!(
        rows.iter().all(|r| r.split(',').nth(15) == Some("true")
            && r.split(',').count() == 18
            && r.ends_with(",cpu")),
        "{out}"
    );
}

#[test]
fn regular_stores_state_the_write_allocate_traffic() {
    // Triad's three arrays past 4 x the caches: the bus line is for memory.
    let size = common::small_dram_elements(1_000_000);
    let out = common::stdout_on_small_caches(&[
        "run", "--size", &size, "--ntimes", "3", "--stores", "regular", "--kernels", "triad",
    ]);
    assert!(out.contains("regular stores (requested)"));
    crate::common::assert_contains(&out, "write-allocate (32 B/elem, not 24)");
}

#[test]
fn auto_stores_are_checked_against_the_other_mode() {
    // Arrays within one CPU's caches below the last level (L1 and L2):
    // auto picks regular stores by size, and the check measures nt.
    let topo = membw::topology::Topology::live().unwrap();
    let cpu = topo.allowed_cpus.first().unwrap().to_string();
    let own = membw::kernels::ThreadCaches::serving(&topo, &[topo.allowed_cpus.first().unwrap()]);
    let size = (own.below_last / 24 / 2).clamp(4096, 65536).to_string();
    let small = ["run", "--cpus", &cpu, "--size", &size];
    let json = stdout(&[&small[..], &["--ntimes", "4", "--format", "json"]].concat());
    let d: serde_json::Value = serde_json::from_str(&json).unwrap();
    let check = &d["stores_check"];
    assert_eq!(check["kernel"], "triad", "{check}");
    assert_eq!(d["measurement"]["stores"], check["used"], "{check}");
    assert_ne!(check["used"], check["other"], "{check}");
    let cmp = &check["comparison"];
    assert_eq!(
        (cmp["n_a"].as_u64(), cmp["n_b"].as_u64()),
        (Some(3), Some(3))
    );
    let ratio = cmp["ratio"].as_f64().unwrap();
    let best = |k: &str| check[k].as_f64().unwrap();
    assert!(ratio > 0.0 && best("other_best_gb_s") > 0.0 && best("used_best_gb_s") > 0.0);
    assert!(
        ["higher", "lower", "no_change"].contains(&cmp["change"].as_str().unwrap()),
        "{cmp}"
    );
    // Without triad, the first kernel that stores; read stores nothing.
    let text = stdout(&[&small[..], &["--ntimes", "3", "--kernels", "read,copy"]].concat());
    crate::common::assert_contains(&text, "stores measured for copy too");
    // Stores that were asked for, or --no-stores-check: nothing else runs.
    for extra in [&["--stores", "nt"][..], &["--no-stores-check"]] {
        let args = [&small[..], &["--ntimes", "3", "--format", "json"], extra].concat();
        let d: serde_json::Value = serde_json::from_str(&stdout(&args)).unwrap();
        assert!(d.get("stores_check").is_none(), "{extra:?}");
    }
}

#[test]
fn a_signal_during_the_stores_check_keeps_the_run() {
    // The fake source takes 2 s per measurement: SIGTERM at 3 s lands in
    // the check, after the run itself.
    let dir = crate::common::scratch_dir();
    let file = dir.path().join("run.jsonl");
    let child = common::membw_process()
        .args([
            "run", "--fake-source", "4,delay=2s", "--size", "1M", "--ntimes", "3",
        ])
        .args(["-o", file.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let out = common::stop_with(child, "TERM");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    crate::common::assert_contains(&stderr, "the run above is complete");
    assert!(
        stdout.contains("Triad:"),
        "the run's table is printed: {stdout}"
    );
    let kept = std::fs::read_to_string(&file).unwrap();
    assert_eq!(kept.lines().count(), 1, "the run's point is kept: {kept}");
}

#[test]
fn every_isa_this_cpu_has_validates() {
    for isa in ["scalar", "sse2", "avx2", "avx512", "neon", "sve"] {
        let out = membw()
            .args([
                "run", "--size", "300k", "--ntimes", "2", "--isa", isa, "--kernels", "all", "-q",
                "--threads", "1",
            ])
            .output()
            .unwrap();
        if cpu_has(isa) {
            assert!(
                out.status.success(),
                "{isa}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        } else {
            assert_eq!(out.status.code(), Some(2), "{isa} should be refused");
            assert!(String::from_utf8_lossy(&out.stderr).contains("does not support"));
        }
    }
}

/// The CPU's features, asked directly (not through membw's dispatch).
fn cpu_has(isa: &str) -> bool {
    if common::foreign_binary() {
        return emulated_cpu_has(isa);
    }
    #[cfg(target_arch = "x86_64")]
    return match isa {
        "avx512" => std::is_x86_feature_detected!("avx512f"),
        "avx2" => std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma"),
        "sse2" | "scalar" => true,
        _ => false,
    };
    #[cfg(target_arch = "aarch64")]
    return match isa {
        "sve" => std::arch::is_aarch64_feature_detected!("sve"),
        "neon" => std::arch::is_aarch64_feature_detected!("neon"),
        "scalar" => true,
        _ => false,
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    return isa == "scalar";
}

/// Another architecture's binary behind qemu-user (CI's aarch64 release
/// binary, from the native harness): the emulated CPU's features, as its
/// /proc/cpuinfo lists them to the binary (`topo`'s SIMD line), which this
/// harness cannot read itself. The dispatch on them is checked apart: the
/// unit tests run under four QEMU CPUs, each with the ISA it must pick.
fn emulated_cpu_has(isa: &str) -> bool {
    let topo = stdout(&["topo"]);
    let simd: Vec<&str> = (topo.lines())
        .find_map(|l| l.strip_prefix("SIMD"))
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    match isa {
        "scalar" => true,
        "neon" => simd.contains(&"asimd"),
        "sve" => simd.contains(&"sve"),
        "sse2" => simd.contains(&"sse2"),
        "avx2" => simd.contains(&"avx2") && simd.contains(&"fma"),
        "avx512" => simd.contains(&"avx512f"),
        _ => false,
    }
}

/// Groups expand, a kernel named twice runs once, and the 4th array is
/// mapped only for striad.
#[test]
fn kernel_groups_select_and_validate() {
    let run = |kernels: &str| -> Value {
        let out = stdout(&[
            "run", "--size", "300k", "--ntimes", "3", "--threads", "1", "--kernels", kernels,
            "--json",
        ]);
        serde_json::from_str(&out).unwrap()
    };
    let doc = run("tbb,dot,copy");
    let m = &doc["measurement"];
    let names: Vec<&str> = m["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "copy", "triad", "read", "init", "update", "daxpy", "striad", "sdaxpy", "dot"
        ]
    );
    assert_eq!(m["arrays"], 4);
    assert_eq!(m["validation"]["passed"], true);
    assert!(m["validation"]["dot_rel_error"].as_f64().unwrap() <= 1e-12);
    let striad = &m["results"][6];
    assert_eq!(
        (
            striad["bytes_per_element"].as_u64(),
            striad["dram_bytes_per_element"].as_u64()
        ),
        // Its own stores (auto decides per kernel): write-allocate adds a
        // line read only with regular ones.
        (
            Some(32),
            Some(if striad["stores"]["mode"] == "nt" {
                32
            } else {
                40
            })
        )
    );
    assert_eq!(run("babelstream")["measurement"]["arrays"], 3);
    let text = stdout(&[
        "run", "--size", "300k", "--ntimes", "2", "--kernels", "nstream", "-q",
    ]);
    crate::common::assert_contains(&text, "Nstream:");
}

#[test]
fn explicit_cpus_are_used_in_order() {
    let out = stdout(&[
        "run", "--size", "1M", "--ntimes", "2", "--cpus", "0", "--json",
    ]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let threads = doc["measurement"]["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0]["cpu"], 0);
    assert_eq!(threads[0]["observed_cpu"], 0);
}

/// STREAM's OFFSET (`-DOFFSET=1840`): the header says it as STREAM does, the
/// JSON records it, the arrays still validate; out of range is refused.
#[test]
fn an_offset_is_run_recorded_and_bounded() {
    let header = stdout(&["run", "--offset", "1840", "--size", "1M", "--ntimes", "2"]);
    crate::common::assert_contains(&header, "Offset = 1840 (elements)");
    crate::common::assert_contains(&header, "Solution Validates");
    let json = stdout(&[
        "run", "--offset", "7", "--size", "1M", "--ntimes", "2", "--json",
    ]);
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["measurement"]["offset"], 7);
    usage_error(&["run", "--offset", "2000000"], "from 0 to 1048576");
    usage_error(&["run", "--offset", "-1"], "--offset");
    usage_error(
        &["run", "--backend", "sim:0", "--offset", "3"],
        "--offset '3'",
    );
}

/// One thread on a small array, as JSON.
const ONE_THREAD_JSON: [&str; 8] = [
    "run", "--threads", "1", "--size", "1M", "--ntimes", "2", "--json",
];

/// The naive run of STREAM tutorials: `--no-pin` and the runtimes' "no
/// binding" spellings leave the threads to the scheduler, and every output
/// says so; placement flags beside it are refused.
#[test]
fn unpinned_runs_leave_threads_to_the_scheduler_and_say_so() {
    let header = stdout(&[
        "run", "--no-pin", "--threads", "1", "--size", "1M", "--ntimes", "2",
    ]);
    crate::common::assert_contains(&header, "Thread affinity = none: threads unbound");
    crate::common::assert_contains(&header, "Placement: unpinned (--no-pin)");
    crate::common::assert_contains(&header, "while measured");
    for (var, value) in [("OMP_PROC_BIND", "false"), ("KMP_AFFINITY", "none")] {
        let out = membw()
            .env(var, value)
            .args(ONE_THREAD_JSON)
            .output()
            .unwrap();
        assert!(out.status.success(), "{var}={value}");
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["measurement"]["pinned"], false, "{var}={value}");
        let thread = &doc["measurement"]["threads"][0];
        assert!(thread["last_cpu"].is_u64(), "{var}={value}: {thread}");
    }
    let pinned = stdout(&ONE_THREAD_JSON);
    let doc: Value = serde_json::from_str(&pinned).unwrap();
    assert!(
        doc["measurement"].get("pinned").is_none(),
        "written only when false"
    );
    assert!(doc["measurement"]["threads"][0].get("migrations").is_none());
    usage_error(&["run", "--no-pin", "--strategy", "spread"], "--no-pin");

    // A sweep sets the two side by side; the CSV gives the moves per run.
    let (_dir, _, f) = crate::common::scratch_file("pinning.jsonl");
    let sweep = [
        "sweep", "--strategy", "spread,unpinned", "--threads", "1", "--size", "1M", "--ntimes",
        "2", "--kernels", "copy", "-o", &f,
    ];
    membw().args(sweep).assert().success();
    let csv = stdout(&["report", &f, "--format", "csv"]);
    let moves: Vec<&str> = csv
        .lines()
        .skip(1)
        // migrations_per_run, before devices_at_once, all_runs and band.
        .map(|l| l.rsplit(',').nth(3).unwrap())
        .collect();
    assert_eq!(moves.len(), 2, "{csv}");
    assert!(
        moves.iter().filter(|m| m.is_empty()).count() == 1
            && moves.iter().any(|m| m.parse::<f64>().is_ok()),
        "one pinned point without moves, one unpinned with them: {csv}"
    );
}

#[test]
fn bad_input_is_a_one_line_error_with_exit_code_2() {
    usage_error(
        &["run", "--kernels", "triad,saxpy"],
        "unknown kernel or group 'saxpy'",
    );
    usage_error(&["run", "--size", "0"], "zero");
    usage_error(&["run", "--size", "lots"], "'lots'");
    usage_error(&["run", "--size", "12XB"], "'XB'");
    usage_error(&["run", "--ntimes", "1"], "--ntimes");
    usage_error(
        &["run", "--threads", "0"],
        "--threads '0': out of range: a whole number of threads, 1 or more",
    );
    usage_error(
        &["run", "--threads", "1-2"],
        "to measure several thread counts, membw sweep --threads 1-2",
    );
    usage_error(
        &["topo", "--channels", "8", "--mts", "3200MHz"],
        "'3200MHz' for '--mts <MTS>': give the transfer rate in MT/s, not MHz",
    );
    usage_error(&["run", "--threads", "100000"], "--threads '100000'");
    usage_error(&["run", "--cpus", "9999"], "CPU 9999");
    usage_error(&["run", "--cpus", "0,x"], "column 3");
    usage_error(&["run", "--cpus", "0,0"], "listed twice");
    usage_error(&["run", "--isa", "altivec"], "'altivec'");
    usage_error(
        &["run", "--isa", "scalar", "--stores", "nt"],
        "--stores 'nt'",
    );
    usage_error(&["run", "--size", "1TiB"], "available");
    usage_error(&["run", "--format", "xml"], "'xml'");
    usage_error(&["frobnicate"], "frobnicate");
}

/// The bytes STREAM's tutorials tabulate by hand, from the kernels' own
/// table: copy 16 and triad 24 per element, 8 more on the bus with
/// ordinary stores; an unknown kernel points there.
#[test]
fn the_kernels_table_gives_each_loop_and_its_bytes() {
    let table = stdout(&["kernels"]);
    let row = |name: &str| {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name}: {table}"));
        line.split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let copy = row("copy");
    assert!(
        copy.contains(&"16".into()) && copy.contains(&"+8".into()),
        "{copy:?}"
    );
    let triad = row("triad");
    assert!(
        triad.contains(&"24".into()) && triad.contains(&"stream,".into()),
        "{triad:?}"
    );
    assert!(
        row("update").contains(&"-".into()),
        "update reads what it writes"
    );
    usage_error(&["run", "--kernels", "help"], "membw kernels lists");
}

#[test]
fn help_and_version_exit_zero() {
    let help = stdout(&["run", "--help"]);
    assert!(help.contains("--stores"));
    let version = stdout(&["--version"]);
    assert!(version.starts_with("membw "));
    // What the build can do is in --version, the node's part in `version`.
    let mpi = if cfg!(feature = "mpi") {
        "mpi yes"
    } else {
        "mpi no"
    };
    assert!(
        version.contains(mpi) && version.contains("commit "),
        "{version}"
    );
    let full = stdout(&["version"]);
    for line in [
        "commit", "features", "mpi", "kernels", "cuda", "nvml", "hip", "rocm-smi", "sim",
    ] {
        assert!(
            full.lines().any(|l| l.trim_start().starts_with(line)),
            "{line}: {full}"
        );
    }
    let compiled = if common::binary_arch() == "x86_64" {
        "avx2"
    } else {
        "neon"
    };
    assert!(
        full.contains(compiled) && full.contains("this CPU runs"),
        "{full}"
    );
}

#[test]
fn an_inherited_mask_is_respected() {
    // taskset (util-linux) restricts membw to the last online CPU; the default
    // placement must stay inside it.
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let last = online.trim().rsplit([',', '-']).next().unwrap().to_string();
    let Some(out) = common::tool(
        std::process::Command::new("taskset")
            .args(["-c", &last])
            .args(common::membw_argv())
            .args(["run", "--size", "1M", "--ntimes", "2", "--json"]),
        "util-linux",
    ) else {
        return;
    };
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let threads = doc["measurement"]["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0]["cpu"].to_string(), last);
    // And asking for a CPU outside the mask is refused.
    let out = std::process::Command::new("taskset")
        .args(["-c", &last])
        .args(common::membw_argv())
        .args(["run", "--cpus", "0", "--size", "1M"])
        .output()
        .unwrap();
    if last != "0" {
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("outside the allowed set"));
    }
}

#[test]
fn bare_membw_prints_the_help_and_slips_get_hints() {
    let out = membw().output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("Commands:") && help.contains("sweep"),
        "{help}"
    );
    assert!(out.stderr.is_empty());
    usage_error(
        &["run", "--thread", "2"],
        "unexpected argument '--thread' (did you mean '--threads'?)",
    );
    usage_error(&["run", "--threads", "-1"], "--threads '-1'");
    // One placement, given once; sweep measures several.
    usage_error(
        &["run", "--pin", "N:0", "--pin", "N:1"],
        "--pin N:0 --pin N:1: one placement here; membw sweep --pin measures each",
    );
    usage_error(&["sweep", "--repeat", "-2"], "'--repeat <N>'");
}

#[test]
fn completions_and_the_man_page_come_from_the_cli_definition() {
    let bash = stdout(&["completions", "bash"]);
    // bash loads it and registers the completion for membw.
    let dir = crate::common::scratch_dir();
    let script = dir.path().join("membw.bash");
    std::fs::write(&script, &bash).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p membw", script.display()))
        .output()
        .unwrap();
    crate::common::assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("membw"));
    for shell in ["zsh", "fish"] {
        let text = stdout(&["completions", shell]);
        assert!(
            text.contains("kmp-affinity") && text.contains("sweep"),
            "{shell}"
        );
    }
    let man = stdout(&["man"]);
    crate::common::assert_contains(&man, ".TH membw 1");
    for sub in ["run", "sweep", "tune", "report", "completions"] {
        assert!(man.contains(sub), "{sub} missing from the man page");
    }
    usage_error(&["completions", "tcsh"], "'tcsh'");
}

/// A full disk is a one-line error with exit 1; a closed pipe (`| head`)
/// ends quietly with exit 0; neither is a panic.
#[test]
fn full_disks_and_closed_pipes_are_handled_by_every_command() {
    let dir = crate::common::scratch_dir();
    let results = dir.path().join("r.jsonl");
    let plots = dir.path().join("p");
    let commands: Vec<Vec<&str>> = vec![
        vec!["topo"],
        vec!["topo", "--json"],
        vec!["place"],
        vec!["--help"],
        vec!["run", "--help"],
        vec!["run", "--fake-source", "3", "--size", "1M"],
        vec!["run", "--fake-source", "3", "--size", "1M", "--json"],
        vec![
            "tune", "--fake-source", "3", "--size", "1M", "--budget", "1s",
        ],
        vec!["completions", "bash"],
        vec!["man"],
        vec![
            "report",
            "docs/study/threads.jsonl",
            "--plots",
            plots.to_str().unwrap(),
        ],
        vec![
            "compare",
            "docs/study/threads.jsonl",
            "docs/study/threads.jsonl",
        ],
    ];
    for args in &commands {
        let full = std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = common::membw_process()
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(full)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?} >/dev/full: {stderr}");
        assert!(
            stderr.contains("No space left on device") && !stderr.contains("panicked"),
            "{stderr}"
        );
        let mut child = common::membw_process()
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?} | closed pipe: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // A sweep into a full stdout still writes its points.
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = common::membw_process()
        .args([
            "sweep",
            "--fake-source",
            "3",
            "--size",
            "1M",
            "-o",
            results.to_str().unwrap(),
        ])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!std::fs::read_to_string(&results).unwrap().is_empty());
}

/// `run -o FILE` appends one sweep-shaped record per run, which `report`
/// reads; an existing file grows, a torn last line is dropped first.
#[test]
fn run_appends_its_record_to_a_results_file() {
    let (_dir, file, path) = crate::common::scratch_file("runs.jsonl");
    let args = [
        "run", "--fake-source", "5", "--size", "1M", "-q", "-o", &path,
    ];
    for _ in 0..2 {
        common::stdout(&args);
    }
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["experiment"], "run");
        assert_eq!(r["source"], "fake");
        assert!(r["stats"]["triad"]["mean"].as_f64().unwrap() > 0.0);
    }
    std::fs::write(&file, format!("{text}{{\"schema_vers")).unwrap();
    let out = common::membw().args(args).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("dropped line 3"));
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 3);
    let report = common::stdout(&["report", &path]);
    crate::common::assert_contains(&report, "triad");
}

/// `--stores auto` near the caches' edge: each kernel's arrays between
/// the caches below the last level and 4 × every cache (sized from this
/// host's caches, or the fixture's that CI's legs lend it) are run with
/// both store modes before the repetitions and the faster kept. The
/// `Kernels:` lines give each kernel's two rates and their ratio, the
/// record holds the same, and the mode kept is the one the words say;
/// which mode wins is this host's business, not the test's.
#[test]
fn auto_stores_near_the_cache_edge_are_timed_per_kernel_with_their_ratio() {
    let topo = membw::topology::Topology::live().unwrap();
    let cpu = topo.allowed_cpus.first().unwrap();
    let caches = membw::kernels::ThreadCaches::serving(&topo, &[cpu]);
    // Triad's three arrays at the geometric mean of the edge's two ends
    // (copy's two at two thirds of it): 3 MiB an array where sysfs says
    // nothing, every kernel then being timed.
    let (low, high) = (
        caches.below_last.max(1) as f64,
        4.0 * caches.all.max(1) as f64,
    );
    let triad_bytes = match caches.all {
        0 => 9.0 * (1 << 20) as f64,
        _ => (low * high).sqrt(),
    };
    let elements = ((triad_bytes / 24.0) as u64).max(1 << 16);
    let dir = crate::common::scratch_dir();
    let file = dir.path().join("auto.jsonl");
    let out = stdout(&[
        "run",
        "--cpus",
        &cpu.to_string(),
        "--size",
        &elements.to_string(),
        "--ntimes",
        "3",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(
        out.contains("Kernels: ") && out.contains(" ISA, stores chosen by kernel (auto):\n"),
        "{out}"
    );
    let written = std::fs::read_to_string(&file).unwrap();
    let record: Value = serde_json::from_str(written.lines().next().unwrap()).unwrap();
    for kernel in ["copy", "scale", "add", "triad"] {
        let line = (out.lines())
            .find(|l| l.starts_with(&format!("  {kernel} ")) && l.contains("measured: nt "))
            .unwrap_or_else(|| panic!("no measured stores for {kernel}: {out}"));
        // `  copy   nt       measured: nt 49.9 GB/s, regular 28.0 GB/s, nt/regular 1.78× (...)`
        let words: Vec<&str> = line.split_whitespace().collect();
        let measured = words.iter().position(|w| *w == "measured:").unwrap();
        let number = |after: &str| -> f64 {
            let at = measured + words[measured..].iter().position(|w| *w == after).unwrap();
            words[at + 1].trim_end_matches(['×', ',']).parse().unwrap()
        };
        let (kept, nt, regular) = (words[1], number("nt"), number("regular"));
        let ratio = number("nt/regular");
        assert!(nt > 0.0 && regular > 0.0, "{line}");
        // The rates print to 0.1 GB/s (2.2 and 2.3 under qemu-user): the
        // ratio is checked to their rounding, and exactly against the record.
        let rounding = ratio * (0.05 / nt + 0.05 / regular) + 0.006;
        assert!((ratio - nt / regular).abs() <= rounding, "{line}");
        let tie = line.contains("inside the rounds'");
        // The faster best is kept, unless mixing the kernels' modes was
        // slower than keeping them alike (or the rounded rates are equal).
        if !line.contains("kept with the other kernels' mode") && nt != regular {
            let faster = if nt > regular { "nt" } else { "regular" };
            assert_eq!(kept, faster, "{line}");
        }
        let stores = &record["runs"][0]["kernel_stores"][kernel];
        assert_eq!(stores["basis"], "measured", "{stores}");
        assert_eq!(stores["mode"], kept, "{stores}");
        let recorded =
            stores["nt_gb_s"].as_f64().unwrap() / stores["regular_gb_s"].as_f64().unwrap();
        assert!(
            (recorded - ratio).abs() <= 0.006 + 0.001 * ratio,
            "{stores} against {line}"
        );
        assert_eq!(stores["within"].is_null(), !tie, "{stores}");
    }
    // The side measurement of the other mode is left out: it was timed.
    assert!(!out.contains("stores measured for"), "{out}");
}
