//! NVML through a fake library (tests/fake_cuda/libnvidia-ml.c) over the
//! fake CUDA driver's GPUs: the memory peak, the driver, the NVLink links,
//! the clocks observer and DCGM's memory counters, each read as membw reads
//! a real GPU's, and the check's findings with their actions.

use crate::common::{self, fake_cuda_driver, fake_nvml, membw};

/// membw with the fake CUDA driver and the fake NVML on the library path,
/// over `devices` GPUs, with the fake NVML's `setup` variables.
fn with_nvml(devices: u32, setup: &[(&str, &str)]) -> Option<assert_cmd::Command> {
    let (cuda, nvml) = (fake_cuda_driver()?, fake_nvml()?);
    let mut cmd = membw();
    let path = format!("{}:{}", cuda.display(), nvml.display());
    cmd.env("LD_LIBRARY_PATH", path)
        .env("FAKE_CUDA_DEVICES", devices.to_string());
    for (k, v) in setup {
        cmd.env(k, v);
    }
    Some(cmd)
}

/// `run --backend cuda:0 --json`, short: the measured target.
fn target(devices: u32, setup: &[(&str, &str)]) -> Option<serde_json::Value> {
    let out = with_nvml(devices, setup)?
        .args(["run", "--backend", "cuda:0", "--json"])
        .args([
            "--array-size", "200000", "--ntimes", "3", "--kernels", "triad",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    Some(run["measurement"]["target"].clone())
}

/// A short text `run --backend BACKEND`: what it said on stderr.
fn run_stderr(devices: u32, setup: &[(&str, &str)], backend: &str) -> Option<String> {
    let out = with_nvml(devices, setup)?
        .args(["run", "--backend", backend, "--array-size", "200000"])
        .args(["--ntimes", "3", "--kernels", "triad"])
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn nvml_gives_the_peak_the_links_and_every_memory_counter() {
    let faults = [
        ("FAKE_NVML_ECC", "0:7:2"),
        ("FAKE_NVML_RETIRED", "0:5:3"),
        ("FAKE_NVML_RETIRE_PENDING", "0"),
        ("FAKE_NVML_REMAP", "0:9:1:1"),
        ("FAKE_NVML_RECOVERY", "0:4"),
        ("FAKE_NVML_NVLINK", "0-1:12"),
    ];
    let Some(t) = target(2, &faults) else { return };
    // 2619 MHz × 5120 bits × 2 transfers.
    assert_eq!(t["peaks"]["memory_gb_s"], 3352.32, "{t}");
    assert_eq!(
        t["peaks"]["memory_from"],
        "NVML's 2619 MHz memory clock × 5120-bit bus, 2 transfers a clock",
        "{t}"
    );
    let health = &t["memory_health"];
    assert_eq!(health["ecc_enabled"], true, "{t}");
    assert_eq!(health["corrected_volatile"], 7, "{t}");
    assert_eq!(health["uncorrected_volatile"], 2, "{t}");
    let counters: Vec<(String, Option<u64>)> = (health["counters"].as_array().unwrap().iter())
        .map(|c| (c["name"].as_str().unwrap().to_string(), c["value"].as_u64()))
        .collect();
    let want = [
        ("retired_pages", 8),
        ("retirement_pending", 1),
        ("remapped_rows_uncorrectable", 9),
        ("remap_pending", 1),
        ("remap_failed", 1),
        ("recovery_action", 4),
    ]
    .map(|(name, n)| (name.to_string(), Some(n)));
    assert_eq!(counters, want, "{t}");
    // Each with the limit it fails at (DCGM's), where it has one.
    assert_eq!(health["counters"][0]["fails"]["at"], 63, "{t}");
    // 12 of its 18 links up, each to the other GPU, NVML's speed each.
    let fabric = &t["fabric"];
    assert_eq!(fabric["name"], "NVLink", "{fabric}");
    assert_eq!(fabric["links"], 18, "{fabric}");
    let up: Vec<&str> = (fabric["up_to"].as_array().unwrap().iter())
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(up, vec!["0000:19:00.0"; 12], "{fabric}");
    assert_eq!(fabric["link_gb_s"], 25.781, "{fabric}");
}

#[test]
fn a_count_nvml_cannot_give_is_absent_not_zero() {
    // ECC off, no row remapping (before Ampere), no recovery field (before
    // r570): absent; NVML not loading: no peak, and the run says why.
    let off = [("FAKE_NVML_ECC_OFF", "1"), ("FAKE_NVML_NO_REMAP", "1")];
    let Some(t) = target(1, &off) else { return };
    let health = &t["memory_health"];
    assert_eq!(health["ecc_enabled"], false, "{t}");
    assert!(health.get("uncorrected_volatile").is_none(), "{t}");
    for absent in [
        "remapped_rows_uncorrectable",
        "remap_failed",
        "recovery_action",
    ] {
        assert_eq!(
            common::memory_counter(health, absent),
            None,
            "{absent}: {t}"
        );
    }
    assert_eq!(
        common::memory_counter(health, "retired_pages"),
        Some(0),
        "{t}"
    );
    let Some(stderr) = run_stderr(1, &[("FAKE_NVML_FAIL", "1")], "cuda:0") else {
        return;
    };
    crate::common::assert_contains(
        &stderr,
        "cuda0's memory peak is unknown: NVML does not load",
    );
}

#[test]
fn each_gpu_s_memory_fault_fails_the_check_with_dcgm_s_action_and_the_run_says_it() {
    // Host buffers are bound with mbind, which qemu-user (the Arm leg)
    // does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let faults = [
        ("FAKE_NVML_REMAP", "1:3:0:1"),
        ("FAKE_NVML_RECOVERY", "0:4"),
        ("FAKE_NVML_RETIRED", "0:60:2"),
    ];
    let Some(mut cmd) = with_nvml(2, &faults) else {
        return;
    };
    let dir = crate::common::scratch_dir();
    let prom = dir.path().join("check.prom");
    let out = cmd
        .args(["check", "--backend", "cuda:all", "--array-size", "256K"])
        .args(["--ntimes", "3", "--kernels", "triad", "--budget", "2s"])
        .args(["--format", "json", "--prom", prom.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let differences = v["differences"].to_string();
    for want in [
        "cuda0: the driver runs the GPU at reduced capacity: drain the node and reset the GPU",
        "cuda1: a row remapping failed (no spare row left): replace the GPU",
    ] {
        assert!(differences.contains(want), "{want}\n{differences}");
    }
    // 62 retired pages are under DCGM's 63, and no finding.
    assert!(!differences.contains("retired pages"), "{differences}");
    // Each counter a gauge per GPU, labelled as its other metrics.
    let text = std::fs::read_to_string(&prom).unwrap();
    let gauge = |name: &str, gpu: &str| {
        (text.lines())
            .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(&format!("gpu=\"{gpu}\"")))
            .and_then(|l| l.rsplit(' ').next())
            .map(str::to_string)
    };
    assert_eq!(
        gauge("membw_gpu_retired_pages", "cuda:0").as_deref(),
        Some("62"),
        "{text}"
    );
    assert_eq!(
        gauge("membw_gpu_remap_failed", "cuda:1").as_deref(),
        Some("1"),
        "{text}"
    );
    assert_eq!(
        gauge("membw_gpu_remapped_rows_uncorrectable", "cuda:1").as_deref(),
        Some("3"),
        "{text}"
    );
    assert_eq!(
        gauge("membw_gpu_recovery_action", "cuda:0").as_deref(),
        Some("4"),
        "{text}"
    );
    assert_eq!(gauge("membw_gpu_recovery_action", "cuda:1"), None, "{text}");
    assert!(
        text.lines().any(|l| l == "membw_check_hardware_findings 2"),
        "{text}"
    );
    let mut promtool = std::process::Command::new("promtool");
    promtool
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&prom).unwrap());
    crate::common::tool(&mut promtool, "prometheus");
    // A run of the faulty GPU says it too, beside its rates.
    let Some(stderr) = run_stderr(2, &faults, "cuda:1") else {
        return;
    };
    crate::common::assert_contains(
        &stderr,
        "warning: cuda1: a row remapping failed (no spare row left): replace the GPU",
    );
}

#[test]
fn topo_shows_each_gpu_s_memory_counters_and_their_findings() {
    let faults = [("FAKE_NVML_ECC", "1:3:2"), ("FAKE_NVML_REMAP", "0:0:1:0")];
    let Some(mut cmd) = with_nvml(2, &faults) else {
        return;
    };
    let out = cmd.arg("topo").output().unwrap();
    let topo = String::from_utf8_lossy(&out.stdout);
    // The section whole: each GPU's line, its findings beneath.
    let section: Vec<&str> = (topo.lines())
        .skip_while(|l| !l.starts_with("GPU memory cuda"))
        .take(5)
        .collect();
    assert_eq!(
        section,
        [
            "GPU memory cuda, as its library counts",
            "  0000:18:00.0  ECC on · 0 corrected, 0 uncorrected since the driver loaded · 0 retired pages · 0 rows remapped",
            "    ✗ a row remapping waits for a reset: drain the node and reset the GPU",
            "  0000:19:00.0  ECC on · 3 corrected, 2 uncorrected since the driver loaded · 0 retired pages · 0 rows remapped",
            "    ✗ 2 uncorrected ECC errors since the driver loaded: drain the node and reset the GPU",
        ],
        "{topo}"
    );
    let Some(mut cmd) = with_nvml(2, &faults) else {
        return;
    };
    let out = cmd.args(["topo", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gpus = &v["gpu_memory"][0];
    assert_eq!(gpus["backend"], "cuda", "{v}");
    assert_eq!(gpus["devices"][1]["bus_id"], "0000:19:00.0", "{v}");
    assert_eq!(
        gpus["devices"][1]["health"]["uncorrected_volatile"], 2,
        "{v}"
    );
    // Another node's tree: this host's library is not asked.
    let tree = crate::common::shared_tree("xeon-e5-2680v3-2s");
    let Some(mut cmd) = with_nvml(2, &faults) else {
        return;
    };
    let out = cmd
        .args(["topo", "--sysroot", tree.to_str().unwrap()])
        .output()
        .unwrap();
    let topo = String::from_utf8_lossy(&out.stdout);
    assert!(!topo.contains("GPU memory"), "{topo}");
}
