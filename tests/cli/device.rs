//! The simulated device backend (`--backend sim`, src/backend/sim.rs) goes
//! through every command with nothing but its module and its registration:
//! its records, reports, comparisons, checks and Prometheus lines say
//! "device" with its name and its own peak, never CPU threads or an ISA.

use crate::common;

use crate::common::{SIM_SMALL as SMALL, membw, run_on, stdout, usage_error};
use serde_json::Value;

fn run_sim(extra: &[&str]) -> String {
    run_on("sim", extra)
}

#[test]
fn a_run_on_the_device_names_it_and_its_own_peak_and_no_cpu_things() {
    // The node's second device, by index: its own name, its facts, its
    // two named peaks.
    let text = run_on("sim:1", &[]);
    assert!(
        text.contains(
            "Target: device sim1 (membw simulated device, 1 GiB, 0000:19:00.0, host node "
        ),
        "{text}"
    );
    crate::common::assert_contains(&text, "memory peak 1000 GB/s, host link peak 63 GB/s");
    assert!(text.contains("Triad:") && text.contains("Solution Validates"));
    crate::common::assert_contains(&text, "memory peak: 1000.0 GB/s");
    for cpu_only in [
        "Number of Threads", "Thread affinity", "Placement:", "Kernels:", "ISA", "Reproduce",
        "socket",
    ] {
        assert!(!text.contains(cpu_only), "'{cpu_only}' in: {text}");
    }

    let doc: Value = serde_json::from_str(&run_on("sim:1", &["--format", "json"])).unwrap();
    let m = &doc["measurement"];
    assert_eq!(m["target"]["kind"], "device");
    assert_eq!(m["target"]["name"], "sim1");
    assert_eq!(m["target"]["index"], 1);
    assert_eq!(m["target"]["peaks"]["memory_gb_s"], 1000.0);
    // PCIe Gen5 x16: 32 GT/s × 16 lanes × 128/130 / 8.
    let link = m["target"]["peaks"]["host_link_gb_s"].as_f64().unwrap();
    assert!(
        (link - 32.0 * 16.0 * 128.0 / 130.0 / 8.0).abs() < 1e-9,
        "{link}"
    );
    for absent in ["isa", "stores", "threads", "mem_policy"] {
        assert!(m.get(absent).is_none(), "{absent}: {m}");
    }
    for absent in ["placement", "isa", "stores"] {
        assert!(doc["request"].get(absent).is_none(), "{absent}");
    }
    assert!(doc.get("reproduce").is_none());
    assert_eq!(doc["peak"]["source"], "device");
    assert_eq!(doc["peak"]["used_gb_s"], 1000.0);
    assert!(doc["peak"].get("sockets_used").is_none());

    let csv = run_sim(&["--format", "csv"]);
    for row in csv.lines().skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        // threads, isa and stores are empty; the last column names the device.
        assert_eq!(&cells[12..15], ["", "", ""], "{row}");
        assert_eq!(cells.last(), Some(&"device sim0"), "{row}");
    }
}

#[test]
fn its_prometheus_lines_say_device_with_its_name_and_peak() {
    let dir = crate::common::scratch_dir();
    let prom = dir.path().join("run.prom");
    run_sim(&["--prom", prom.to_str().unwrap(), "-q"]);
    let text = std::fs::read_to_string(&prom).unwrap();
    crate::common::assert_contains(
        &text,
        "membw_bandwidth_bytes_per_second{kernel=\"triad\",scope=\"device\",device=\"sim0\",backend=\"sim\",index=\"0\",gpu=\"sim:0\",uuid=\"SIM-00000000\"}",
    );
    crate::common::assert_contains(
        &text,
        "membw_peak_bytes_per_second{scope=\"device\",device=\"sim0\",backend=\"sim\",index=\"0\",gpu=\"sim:0\",uuid=\"SIM-00000000\"} 1000000000000\n",
    );
    crate::common::assert_contains(
        &text,
        "membw_host_link_peak_bytes_per_second{scope=\"device\",device=\"sim0\",backend=\"sim\",index=\"0\",gpu=\"sim:0\",uuid=\"SIM-00000000\"} 63015384615.38462\n",
    );
    assert!(
        !text.contains("threads=") && !text.contains("stores="),
        "{text}"
    );
    let mut promtool = std::process::Command::new("promtool");
    promtool
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&prom).unwrap());
    common::tool(&mut promtool, "prometheus");
}

#[test]
fn what_only_cpus_have_is_refused_in_one_line() {
    for (flag, value, needle) in [
        ("--threads", "2", "--threads '2'"),
        ("--stores", "nt", "--stores 'nt'"),
        ("--strategy", "compact", "--strategy 'compact'"),
        ("--hugepages", "thp", "--hugepages 'thp'"),
        ("--isa", "scalar", "--isa 'scalar'"),
    ] {
        usage_error(&["run", "--backend", "sim", flag, value], needle);
        usage_error(
            &["run", "--backend", "sim", flag, value],
            "a simulated device has no",
        );
    }
    // A policy places only a device's host buffers: without a transfer
    // there are none.
    usage_error(
        &["run", "--backend", "sim", "--mem", "bind:0"],
        "--mem 'bind:0': a simulated device's own memory takes no policy: it places the host buffers of the transfers",
    );
    usage_error(
        &[
            "run",
            "--backend",
            "sim",
            "--kernels",
            "transfers",
            "--mem",
            "a=bind:0,b=bind:0,c=bind:0",
        ],
        "host buffers take one policy for both",
    );
    // The CPU team has no host link.
    usage_error(
        &["run", "--kernels", "triad,h2d"],
        "--kernels 'h2d': the CPU team has no host link",
    );
    usage_error(
        &[
            "run", "--backend", "sim", "--array-size", "100M", "--kernels", "triad",
        ],
        "more than the 1 GiB of sim0 (membw simulated device)",
    );
    // Studies of CPUs say so, rather than blame a flag that was not given.
    // A device that is not there, an index where there are no devices.
    usage_error(
        &["run", "--backend", "sim:4"],
        "--backend sim:4: there is no device sim:4: the simulated node has sim:0 to sim:3",
    );
    usage_error(&["run", "--backend", "cpu:0"], "has no devices to number");
    usage_error(
        &["sweep", "--backend", "sim", "--numa-matrix"],
        "--numa-matrix studies CPUs, and the backend's target is device sim0",
    );
}

#[test]
fn a_wrong_element_fails_validation_naming_the_array() {
    let mut args = vec!["run", "--backend", "sim", "--kernels", "copy,triad"];
    args.extend(SMALL);
    let out = membw()
        .args(&args)
        .env("MEMBW_SIM_DEVICE", "wrong-element=11")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Triad writes a last: one element of 262144 is off by one.
    assert!(
        stderr.contains("Failed Validation: array a:")
            && stderr.contains("1 of 262144 elements wrong"),
        "{stderr}"
    );
    let out = membw()
        .args(&args)
        .env("MEMBW_SIM_DEVICE", "wrong=1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    crate::common::assert_contains(&stderr, "MEMBW_SIM_DEVICE=wrong=1");
}

/// A device's sweep sizes every point by the device's own rule, as its
/// run does: the host CPUs' rule (this host's caches) is not its.
#[test]
fn a_device_sweep_sizes_its_arrays_as_its_run_does() {
    let arrays = |args: &[&str]| -> String {
        let plan = stdout(args);
        (plan.lines().find(|l| l.trim_start().starts_with("arrays ")))
            .unwrap_or_else(|| panic!("no arrays line: {plan}"))
            .to_string()
    };
    let run = arrays(&["run", "--backend", "sim", "--dry-run"]);
    let sweep = arrays(&["sweep", "--backend", "sim", "--dry-run", "--ntimes", "3"]);
    assert_eq!(sweep, run);
    crate::common::assert_contains(&run, "in the device's own memory");
}

#[test]
fn sweeps_reports_and_comparisons_name_the_device_and_pair_its_points() {
    let dir = crate::common::scratch_dir();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (swept, ran) = (path("sweep.jsonl"), path("run.jsonl"));
    let sweep = [
        "sweep", "--backend", "sim", "--working-sets", "64KiB,6MiB",
        // One kernel: each calibrates its launch shapes, seconds apiece
        // on the simulated device's one host thread.
        "--kernels", "triad", "--ntimes", "3", "-o",
    ];
    let text = stdout(&[&sweep[..], &[&swept]].concat());
    crate::common::assert_contains(&text, "  device  set/device");
    assert!(
        // The best is named, unless other work on this machine made every
        // point NOT TRUSTED (the test does not need a quiet machine).
        text.contains(" with device sim0") || text.contains("best: none, no point has a run"),
        "{text}"
    );
    assert!(
        !text.contains("threads") && !text.contains("placement"),
        "{text}"
    );
    // Resumed, the file's study (the device's) is skipped point by point,
    // and the CPU team's is another study.
    let again = membw()
        .args(["sweep", "--resume", &swept])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{said}");
    crate::common::assert_contains(&said, "0 points written, 2 skipped");
    usage_error(
        &[
            "sweep", "--working-sets", "64KiB,6MiB", "--kernels", "triad", "--ntimes", "3",
            "--resume", &swept,
        ],
        "a different study (--backend cpu here, sim in the file)",
    );
    // The record's point names the device, and no CPU placement or policy.
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(&swept)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["point"]["target"]["name"], "sim0");
    for absent in ["threads", "placement", "mem"] {
        assert!(first["point"].get(absent).is_none(), "{absent}: {first}");
    }
    assert!(first.get("reproduce").is_none());
    // The point keys the device by its identity; what its backend reported
    // (memory, peaks) travels with the runs only.
    let identity = r#""target":{"kind":"device","backend":"sim","index":0,"name":"sim0"}"#;
    let line = std::fs::read_to_string(&swept).unwrap();
    crate::common::assert_contains(&line, identity);
    assert_eq!(first["runs"][0]["target"]["peaks"]["memory_gb_s"], 1000.0);
    // A file whose points kept a device's facts (as schema 1 wrote them,
    // with another peak) is still the same study, point by point.
    let old = path("old.jsonl");
    let schema1 = r#""target":{"kind":"device","backend":"sim","name":"sim0","model":"membw simulated device","memory_bytes":1073741824,"peak_gb_s":900.0}"#;
    std::fs::write(&old, line.replace(identity, schema1)).unwrap();
    let resumed = membw().args(["sweep", "--resume", &old]).output().unwrap();
    let said = String::from_utf8_lossy(&resumed.stderr);
    crate::common::assert_contains(&said, "0 points written, 2 skipped");

    // run -o of the size the sweep's 6 MiB point has pairs with it.
    run_sim_to(&ran, "262144");
    let cmp = stdout(&["compare", &ran, &swept]);
    crate::common::assert_contains(&cmp, "device sim0 · 6 MiB/device");
    crate::common::assert_contains(&cmp, "1 point in both");

    let report = stdout(&["report", &swept, "--plots", &path("plots")]);
    assert!(
        report.contains("% peak: of the device's own peak")
            && report
                .lines()
                .next()
                .is_some_and(|h| h.ends_with("% peak  trust") || h.ends_with("% peak")),
        "{report}"
    );
    let csv = stdout(&["report", &swept, "--format", "csv"]);
    assert!(
        csv.lines()
            .skip(1)
            .all(|r| r.ends_with(",device sim0,false,,,1,memory")),
        "{csv}"
    );
}

/// `run -o FILE` of 262144 elements: 3 arrays of 2 MiB, the 6 MiB point.
fn run_sim_to(file: &str, elements: &str) {
    stdout(&[
        "run", "--backend", "sim", "--array-size", elements, "--kernels", "triad", "--ntimes", "3",
        "-o", file, "-q",
    ]);
}

#[test]
fn a_baseline_and_check_of_the_device_hold_it_against_itself_and_its_own_peak() {
    // Host buffers are bound with mbind, which qemu-user (the Arm leg)
    // does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let (dir, _, base) = crate::common::scratch_file("sim.json");
    let made = stdout(&[
        "baseline", "--backend", "sim", "--rounds", "2", "--ntimes", "3", "--array-size", "256K",
        // The other tests of this file run beside it on the same CPUs: what
        // is tested is the device's baseline, not the node's quiet.
        "--allow-busy", "-o", &base,
    ]);
    assert!(
        made.contains("device sim0 (membw simulated device"),
        "{made}"
    );
    let row = |scope: &str, kernel: &str| {
        (made.lines()).any(|l| l.starts_with(&format!("  {scope} ")) && l.contains(kernel))
    };
    assert!(row("device 0", "- triad"), "{made}");
    // Its host link from every memory node is a scope of its own.
    assert!(row("device 0 link from node 0", "- h2d"), "{made}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    assert_eq!(doc["scopes"][0]["scope"], "device:0");
    assert_eq!(doc["scopes"][0]["device"]["name"], "sim0");
    assert_eq!(doc["scopes"][1]["scope"], "device:0/link:0");
    let mut link: Vec<&String> = doc["scopes"][1]["kernels"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    link.sort();
    assert_eq!(link, ["bidir", "d2h", "h2d"]);

    let prom = dir.path().join("check.prom");
    let out = membw()
        .args([
            "check", "--backend", "sim", "--baseline", &base, "--format", "json",
        ])
        .args(["--prom", prom.to_str().unwrap()])
        .output()
        .unwrap();
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap();
    crate::common::assert_verdict_or_busy(&out, &verdict);
    assert_eq!(verdict["device"]["name"], "sim0");
    let scopes: Vec<&str> = (verdict["rates"].as_array().unwrap().iter())
        .map(|r| r["scope"].as_str().unwrap())
        .collect();
    assert!(
        scopes
            .iter()
            .all(|s| *s == "device:0" || *s == "device:0/link:0"),
        "{scopes:?}"
    );
    assert!(scopes.contains(&"device:0/link:0"), "{scopes:?}");
    // A check declined as busy keeps the last metrics (none here).
    if verdict["judged"] == true {
        let text = std::fs::read_to_string(&prom).unwrap();
        crate::common::assert_contains(&text, "scope=\"device\",device=\"sim0\",backend=\"sim\"");
        // The link's rows name the host node they were measured from.
        assert!(
            (text.lines()).any(|l| l.contains("kernel=\"h2d\"") && l.contains("host_node=\"0\"")),
            "{text}"
        );
    } else {
        assert!(!prom.exists(), "a check not judged wrote its metrics");
    }

    // Without a baseline it is held against its own peak: half of a
    // declared 1 GB/s is always reached, half of 1000 GB/s never here.
    let out = membw()
        .args([
            "check", "--backend", "sim", "--kernels", "triad", "--array-size", "256K",
        ])
        .env("MEMBW_SIM_DEVICE", "peak=1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Healthy, or declined because this host was busy (the suites beside
    // it), never anything else.
    let busy = String::from_utf8_lossy(&out.stderr).contains("busy with other work");
    assert!(
        out.status.code() == Some(0) || (out.status.code() == Some(2) && busy),
        "{out:?}"
    );
    crate::common::assert_contains(&stdout, "against 50 % of the theoretical peak");
    crate::common::assert_contains(&stdout, "0.50");

    // The node's CPUs are not the device the baseline was made of.
    usage_error(
        &["check", "--baseline", &base],
        "scopes[0].device is device sim0",
    );
}

#[test]
fn the_devices_own_clock_times_it_and_the_hosts_checks_it() {
    let two = ["--kernels", "copy,triad", "--format", "json"];
    let doc: Value = serde_json::from_str(&run_sim(&two)).unwrap();
    let clock = &doc["measurement"]["timer"]["device_clock"];
    assert_eq!(clock["repetitions"], 6, "{clock}"); // 2 kernels × 3
    assert_eq!(clock["over_host"], 0, "{clock}");
    // Launch overhead is the host's only: host/device is 1 or more.
    assert!(
        clock["host_over_device"].as_f64().unwrap() >= 1.0,
        "{clock}"
    );
    // A clock that runs fast is caught, and the host's times are used.
    // The simulated clock is the thread's CPU time, which a loaded host
    // stretches the host's wall time past: 100× is past any load here.
    let out = membw()
        .args(["run", "--backend", "sim:3"])
        .args(SMALL)
        .args(two)
        .env("MEMBW_SIM_DEVICE", "clock=100")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    crate::common::assert_contains(
        &stderr,
        "the target's own clock timed 6 of 6 repetitions longer than the host's",
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["measurement"]["timer"]["device_clock"]["over_host"], 6);
    // A CPU run is timed by the host alone.
    let cpu: Value = serde_json::from_str(&common::stdout(&[
        "run", "--size", "100k", "--ntimes", "3", "--kernels", "copy", "--json",
    ]))
    .unwrap();
    assert!(cpu["measurement"]["timer"].get("device_clock").is_none());
}

/// A device whose PCIe link trained below its maximum fails `check` on
/// that alone, in one line naming the link, whatever its rates.
#[test]
fn a_link_that_trained_low_fails_check_in_one_line() {
    // Host buffers are bound with mbind, which qemu-user (the Arm leg)
    // does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let (_dir, _baseline, b) = crate::common::scratch_file("b.json");
    let mut args = vec![
        "baseline", "--backend", "sim:1", "--rounds", "2", "--allow-busy",
    ];
    args.extend(["-o", &b]);
    args.extend(SMALL);
    membw().args(&args).assert().success();
    let mut args = vec!["check", "--backend", "sim:1", "--baseline", &b];
    args.extend(["--tolerance", "90%"]);
    args.extend(SMALL);
    membw().args(&args).assert().success();
    let out = membw()
        .env("MEMBW_SIM_DEVICE", "lanes=8")
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        "membw: sim1: its PCIe link trained at Gen5 x8 (31.5 GB/s each way), below the Gen5 x16 (63.0 GB/s) it can do"
    );
}
