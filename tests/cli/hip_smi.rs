//! What ROCm SMI adds to an AMD GPU (src/backend/hip/smi.rs), with the
//! fake HIP runtime and the fake SMI (tests/fake_hip/librocm_smi64.c) on
//! the library path: the GPUs' xGMI links in the facts and the pair
//! probe, the driver's version, the throttle status as every window's
//! observer, and a run without SMI; and a runtime that crashes in hipInit,
//! which ends in one line.

use crate::common::{self, fake_hip_runtime, fake_rocm_smi, membw};
use serde_json::Value;

/// membw with the fake HIP runtime and (`smi`) the fake SMI.
fn with_fakes(smi: bool) -> Option<assert_cmd::Command> {
    let hip = fake_hip_runtime()?;
    let mut path = hip.into_os_string();
    if smi {
        path.push(":");
        path.push(fake_rocm_smi()?);
    }
    let mut cmd = membw();
    cmd.env("LD_LIBRARY_PATH", path);
    Some(cmd)
}

fn json(cmd: &mut assert_cmd::Command) -> (Value, String) {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

const ONE_RUN: [&str; 9] = [
    "run", "--kernels", "triad", "--array-size", "200000", "--ntimes", "3", "--format", "json",
];

#[test]
fn xgmi_links_are_each_gpus_fabric_and_each_pairs_path() {
    let Some(mut cmd) = with_fakes(true) else {
        return;
    };
    // Three GCDs: 0 and 1 by four links (one MI250X card), 1 and 2 by
    // one, 0 and 2 by none.
    cmd.env("FAKE_HIP_DEVICES", "3")
        .env("FAKE_RSMI_XGMI", "0-1:4,1-2:1")
        .args(["peers", "--backend", "hip:all", "--array-size", "64K"])
        .args(["--ntimes", "2", "--format", "json"]);
    let (doc, _) = json(&mut cmd);
    let cells = doc["cells"].as_array().unwrap();
    let path = |from: u64, to: u64| {
        let c = (cells.iter())
            .find(|c| c["from"] == from && c["to"] == to)
            .unwrap();
        c["fabric"].clone()
    };
    assert_eq!(path(0, 1)["name"], "xGMI");
    assert_eq!(path(0, 1)["links"], 4);
    assert_eq!(path(0, 1)["peak_gb_s"], 200.0);
    assert_eq!(path(2, 1)["links"], 1);
    assert_eq!(path(0, 2), Value::Null);
    // The devices' facts keep the links (SMI numbers the GPUs the other
    // way round: they were found by PCI address), and the driver.
    let devices = doc["devices"].as_array().unwrap();
    let gcd1 = (devices.iter()).find(|d| d["name"] == "hip1").unwrap();
    assert_eq!(gcd1["fabric"]["links"], 5, "{gcd1}");
    assert!(
        gcd1["driver"].as_str().unwrap().ends_with(", amdgpu 6.8.5"),
        "{gcd1}"
    );
    // The table names the fabric it found.
    let mut cmd = with_fakes(true).unwrap();
    cmd.env("FAKE_HIP_DEVICES", "2")
        .env("FAKE_RSMI_XGMI", "0-1:4")
        .args(["peers", "--backend", "hip:all", "--array-size", "64K"])
        .args(["--ntimes", "2"]);
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    crate::common::assert_contains(&text, "xGMI paths (direct links between the two)");
    crate::common::assert_contains(&text, "xGMI 4");
}

#[test]
fn the_throttle_status_watches_every_window_and_the_run() {
    let Some(mut cmd) = with_fakes(true) else {
        return;
    };
    // Held back by its first power limit and its HBM's temperature.
    cmd.env("FAKE_RSMI_THROTTLE", "400000001")
        .args(ONE_RUN)
        .args(["--backend", "hip:0"]);
    let (doc, stderr) = json(&mut cmd);
    let m = &doc["measurement"];
    let observers = m["target"]["method"]["observers"].to_string();
    crate::common::assert_contains(&observers, "ROCm SMI's throttle status");
    assert_eq!(
        m["held_back"]["at_ends"],
        serde_json::json!(["power (PPT0)", "heat (HBM)"]),
        "{m}"
    );
    assert_eq!(m["held_back"]["memory_mhz"], 1600);
    // A status is not a time: no seconds are claimed.
    assert_eq!(m["held_back"]["power_s"], Value::Null);
    assert!(
        stderr.contains("hip0's clocks were held back after the run (power (PPT0), heat (HBM))"),
        "{stderr}"
    );
    // Nothing holding them back: a window seen and nothing found.
    let mut cmd = with_fakes(true).unwrap();
    cmd.args(ONE_RUN).args(["--backend", "hip:0"]);
    let (doc, stderr) = json(&mut cmd);
    assert_eq!(
        doc["measurement"]["held_back"]["at_ends"],
        Value::Null,
        "{doc}"
    );
    assert!(
        doc["measurement"]["held_back"]["window_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(!stderr.contains("held back"), "{stderr}");
}

#[test]
fn without_smi_or_its_metrics_nothing_is_claimed() {
    for (smi, env) in [
        (false, None),
        (true, Some("FAKE_RSMI_FAIL")),
        (true, Some("FAKE_RSMI_NO_METRICS")),
    ] {
        let Some(mut cmd) = with_fakes(smi) else {
            return;
        };
        if let Some(var) = env {
            cmd.env(var, "1");
        }
        cmd.env("FAKE_RSMI_XGMI", "0-1:4")
            .env("FAKE_HIP_DEVICES", "2")
            .args(ONE_RUN)
            .args(["--backend", "hip:0"]);
        let (doc, _) = json(&mut cmd);
        let m = &doc["measurement"];
        let observers = m["target"]["method"]["observers"].as_array();
        assert!(observers.is_none_or(|o| o.is_empty()), "{env:?}: {m}");
        assert_eq!(m["held_back"], Value::Null, "{env:?}");
        let links = &m["target"]["fabric"]["links"];
        match env {
            // Metrics missing, links still known.
            Some("FAKE_RSMI_NO_METRICS") => assert_eq!(*links, 4),
            _ => assert_eq!(*links, Value::Null, "{env:?}"),
        }
    }
}

#[test]
fn a_runtime_that_crashes_in_hipinit_ends_in_one_line() {
    if crate::common::foreign_binary() {
        // The probe is a child of the binary itself, which an emulated
        // binary cannot start where qemu-user is not registered with
        // binfmt_misc (CI's Arm leg): membw then goes on without it.
        crate::common::skip(
            "the HIP probe process: an emulated binary's child is not emulated here",
        );
        return;
    }
    let Some(mut cmd) = with_fakes(false) else {
        return;
    };
    let out = cmd
        .env("FAKE_HIP_CRASH", "1")
        .args(["run", "--backend", "hip:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    crate::common::assert_contains(
        &stderr,
        "the HIP runtime (libamdhip64.so.5) crashed in hipInit (signal 11) in a probe process",
    );
}

/// A node check of four GCDs against their baseline, after one xGMI link
/// between two of them was lost: the pair is named, and each GCD's links
/// are exported. (SMI reports the links that are up, not those a GCD has,
/// and GCDs of one node differ in how many they have, so without a
/// baseline no GCD is faulted for its count.)
#[test]
fn a_check_names_the_pair_that_lost_its_xgmi_link() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let Some(mut cmd) = with_fakes(true) else {
        return;
    };
    let dir = crate::common::scratch_dir();
    let (baseline, prom) = (dir.path().join("node.json"), dir.path().join("node.prom"));
    // Two cards of two GCDs: four links within a card, one across.
    let healthy = "0-1:4,2-3:4,0-2:1,1-3:1,0-3:1,1-2:1";
    let out = cmd
        .env("FAKE_HIP_DEVICES", "4")
        .env("FAKE_RSMI_XGMI", healthy)
        .args(["baseline", "--backend", "hip:all", "--kernels", "triad"])
        .args([
            "--rounds", "2", "--array-size", "200000", "--allow-busy", "-o",
        ])
        .arg(&baseline)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = with_fakes(true)
        .unwrap()
        .env("FAKE_HIP_DEVICES", "4")
        .env("FAKE_RSMI_XGMI", healthy.replace(",1-3:1", ""))
        .args(["check", "--backend", "hip:all", "--kernels", "triad"])
        .args(["--array-size", "200000", "--budget", "2s", "--baseline"])
        .arg(&baseline)
        .arg("--prom")
        .arg(&prom)
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    crate::common::assert_contains(&said, "pair 1 → 3 crosses 0 xGMI links, 1 in the baseline");
    let text = std::fs::read_to_string(&prom).unwrap();
    let up: Vec<&str> = (text.lines())
        .filter(|l| l.starts_with("membw_gpu_xgmi_links_up{"))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(up, ["6", "5", "6", "5"], "{text}");
    assert!(!text.contains("membw_gpu_nvlink_links_up{"), "{text}");
}

/// `membw version` says which HIP runtime and which ROCm SMI load here.
#[test]
fn version_names_the_hip_runtime_and_smi_that_load() {
    let Some(mut cmd) = with_fakes(true) else {
        return;
    };
    let out = cmd.arg("version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    crate::common::assert_contains(
        &text,
        "  hip       libamdhip64.so.5 loads: --backend hip:N (loaded at run time)",
    );
    crate::common::assert_contains(&text, "  rocm-smi  librocm_smi64.so.5 loads");
    let Some(mut cmd) = with_fakes(false) else {
        return;
    };
    let out = cmd.arg("version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  rocm-smi  none of librocm_smi64.so.7, librocm_smi64.so.6, librocm_smi64.so.5, librocm_smi64.so.1 loads ("),
        "{text}"
    );
}

/// On an AMD node, `check` with no `--backend` covers its GCD and its link
/// beside the CPUs, as on an NVIDIA node (`baseline` asks the same
/// question through the same protocol); --no-gpus leaves them out.
#[test]
fn a_node_check_with_no_backend_covers_the_amd_gpus() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    if with_fakes(true).is_none() {
        return;
    }
    let scopes = |out: &std::process::Output| -> Vec<String> {
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        let mut s: Vec<String> = (doc["rates"].as_array().unwrap().iter())
            .map(|r| r["scope"].as_str().unwrap().to_string())
            .collect();
        s.dedup();
        s
    };
    // One GCD (each costs seconds on the fake's one host thread); the
    // CPUs' arrays sized on a captured EPYC's caches.
    let check = |extra: &[&str]| {
        let mut cmd = with_fakes(true).unwrap();
        crate::common::on_small_caches(&mut cmd)
            .env("FAKE_HIP_DEVICES", "1")
            .args(["check", "--peak", "1", "--budget", "1s", "--format", "json"])
            .args(["--kernels", "triad", "--ntimes", "2"])
            .args(extra);
        cmd.output().unwrap()
    };
    let checked = scopes(&check(&[]));
    assert_eq!(
        checked.first().map(String::as_str),
        Some("node"),
        "{checked:?}"
    );
    for s in ["device:0", "device:0/link:0"] {
        assert!(checked.iter().any(|c| c == s), "{s}: {checked:?}");
    }
    let cpus = scopes(&check(&["--no-gpus"]));
    assert!(cpus.iter().all(|s| !s.starts_with("device")), "{cpus:?}");
}

#[test]
fn an_amd_gpus_uncorrected_hbm_errors_or_a_pending_bad_page_fail_the_check() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let Some(mut cmd) = with_fakes(true) else {
        return;
    };
    let out = cmd
        .env("FAKE_HIP_DEVICES", "2")
        .env("FAKE_RSMI_ECC", "1:7:2")
        .env("FAKE_RSMI_BAD_PAGES", "0:3:1")
        .args(["check", "--backend", "hip:all", "--kernels", "triad"])
        .args([
            "--array-size", "200000", "--budget", "2s", "--format", "json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let differences = v["differences"].to_string();
    for want in [
        "hip1: 2 uncorrected ECC errors since the driver loaded: drain the node and reset the GPU",
        "hip0: a page retirement waits for a reset: drain the node and reset the GPU",
    ] {
        assert!(differences.contains(want), "{want}\n{differences}");
    }
    let health = |i: usize| v["devices"][i]["memory_health"].clone();
    assert_eq!(health(1)["corrected_volatile"], 7, "{v}");
    assert_eq!(
        common::memory_counter(&health(0), "bad_pages"),
        Some(3),
        "{v}"
    );
    assert_eq!(
        common::memory_counter(&health(0), "retirement_pending"),
        Some(1),
        "{v}"
    );
    assert_eq!(health(0)["ecc_enabled"], true, "{v}");
    // Without SMI the counts are absent, not zero.
    let (v, _) = json(
        with_fakes(false)
            .unwrap()
            .args(ONE_RUN)
            .arg("--backend")
            .arg("hip:0"),
    );
    let device = v["measurement"]["target"].clone();
    assert_eq!(device["backend"], "hip", "{v}");
    assert!(device["memory_health"].is_null(), "{v}");
}

#[test]
fn topo_shows_each_amd_gpu_s_ecc_and_bad_pages_by_pci_address() {
    let Some(mut cmd) = with_fakes(true) else {
        return;
    };
    // SMI numbers the GPUs in reverse: HIP's GPU 1 is found by its address.
    cmd.env("FAKE_HIP_DEVICES", "2")
        .env("FAKE_RSMI_ECC", "1:4:1")
        .env("FAKE_RSMI_BAD_PAGES", "1:3:1");
    let out = cmd.arg("topo").output().unwrap();
    let topo = String::from_utf8_lossy(&out.stdout);
    for want in [
        "GPU memory hip, as its library counts",
        "  0000:c1:00.0  ECC on · 0 corrected, 0 uncorrected since the driver loaded · 0 bad pages retired",
        "  0000:c2:00.0  ECC on · 4 corrected, 1 uncorrected since the driver loaded · 3 bad pages retired",
        "    ✗ a page retirement waits for a reset: drain the node and reset the GPU",
    ] {
        assert!(topo.contains(want), "{want}\n{topo}");
    }
}
