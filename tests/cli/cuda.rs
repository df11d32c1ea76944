//! The cuda backend (src/backend/cuda) without a GPU: the missing driver
//! ends in one line, and a fake driver (tests/fake_cuda/libcuda.c: device
//! memory in host memory, kernels.cu's kernels run by name on the host)
//! takes every call the backend makes, so that everything but the GPU's
//! own work is tested: enumeration, launches, copies, events, the host
//! buffers' registration and placement, reading back, errors, records,
//! baseline/check and Prometheus labels.

use crate::common;

use crate::common::{fake_cuda_driver as fake_driver, output, with_fake};
use serde_json::Value;

/// Small arrays: the fake driver runs on one host thread.
const SMALL: [&str; 4] = ["--array-size", "200000", "--ntimes", "3"];

#[test]
fn a_driver_without_gpus_and_an_index_past_them_are_refused() {
    let Some(dir) = fake_driver() else { return };
    // Each refusal: exit 2, one line on stderr, nothing on stdout.
    let refused = |gpus: &str, args: &[&str]| {
        let mut cmd = with_fake(&dir);
        let (code, stdout, stderr) = output(cmd.env("FAKE_CUDA_DEVICES", gpus).args(args));
        assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        stderr
    };
    let none = refused("0", &["run", "--backend", "cuda:0"]);
    crate::common::assert_contains(&none, "the CUDA driver is installed but sees no GPU");
    let past = refused("2", &["run", "--backend", "cuda:2"]);
    crate::common::assert_contains(
        &past,
        "there is no GPU cuda:2: the CUDA driver sees 2 (cuda:0 to cuda:1)",
    );
    let threads = refused("1", &["run", "--backend", "cuda", "--threads", "2"]);
    crate::common::assert_contains(&threads, "a CUDA GPU has no CPU threads");
}

#[test]
fn every_kernel_runs_validates_and_the_record_names_the_gpu() {
    let Some(dir) = fake_driver() else { return };
    let mut cmd = with_fake(&dir);
    cmd.args([
        "run", "--backend", "cuda:0", "--kernels", "all,transfers", "--format", "json",
    ])
    .args(SMALL);
    let (code, stdout, stderr) = output(&mut cmd);
    assert_eq!(code, 0, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let m = &doc["measurement"];
    assert_eq!(m["target"]["backend"], "cuda");
    assert_eq!(m["target"]["name"], "cuda0");
    assert_eq!(
        m["target"]["uuid"],
        "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
    );
    assert_eq!(m["target"]["bus_id"], "0000:18:00.0");
    assert!(
        m["target"]["model"]
            .as_str()
            .unwrap()
            .contains("compute capability 9.0")
    );
    assert_eq!(m["validation"]["passed"], true, "{m}");
    crate::common::assert_contains(&stderr, "memory peak is unknown: NVML does not load");
}

#[test]
fn transfers_register_host_buffers_placed_on_the_node_asked_for() {
    let Some(dir) = fake_driver() else { return };
    if !common::mbind_works() {
        return;
    }
    let log = tempfile::NamedTempFile::new().unwrap();
    let prom = tempfile::NamedTempFile::new().unwrap();
    let (code, stdout, stderr) = output(
        with_fake(&dir)
            .env("FAKE_CUDA_LOG", log.path())
            .args(["run", "--backend", "cuda:0"])
            .args(["--kernels", "transfers,triad,h2d-pageable,d2h-pageable"])
            .args(["--mem", "bind:0", "--format", "json"])
            .args(["--prom", prom.path().to_str().unwrap()])
            .args(SMALL),
    );
    assert_eq!(code, 0, "{stderr}");
    let registered = std::fs::read_to_string(log.path()).unwrap();
    // h and r, each 200000 doubles; their pageable twins are never
    // registered.
    assert_eq!(
        (registered.lines())
            .filter(|l| l.starts_with("registered"))
            .collect::<Vec<_>>(),
        ["registered 1600000 bytes"; 2],
    );
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    // The pageable row validates too: r comes back through its twin.
    assert_eq!(doc["measurement"]["validation"]["passed"], true);
    let kernels: Vec<&str> = (doc["measurement"]["results"].as_array().unwrap().iter())
        .map(|r| r["kernel"].as_str().unwrap())
        .collect();
    assert!(
        kernels.ends_with(&["h2d-pageable", "d2h-pageable"]),
        "{kernels:?}"
    );
    // Alone, it is the only writer of r: what validates is its twin.
    let (code, _, stderr) = output(
        with_fake(&dir)
            .args(["run", "--backend", "cuda:0", "--kernels", "d2h-pageable"])
            .args(["--mem", "bind:0"])
            .args(SMALL),
    );
    assert_eq!(code, 0, "{stderr}");
    let pages = doc["measurement"]["pages"].as_array().unwrap();
    assert!(!pages.is_empty(), "{}", doc["measurement"]);
    for p in pages {
        assert!(p["array"] == "h" || p["array"] == "r", "{p}");
    }
    // Each transfer's row names the node its host buffers were found on;
    // the device's own kernel has no host node.
    let prom = std::fs::read_to_string(prom.path()).unwrap();
    let row = |kernel: &str| {
        (prom.lines())
            .find(|l| l.contains(&format!("kernel=\"{kernel}\"")))
            .unwrap_or_else(|| panic!("{kernel}: {prom}"))
            .to_string()
    };
    assert!(row("h2d").contains(r#"host_node="0""#), "{prom}");
    assert!(row("bidir-kernel").contains(r#"host_node="0""#), "{prom}");
    assert!(!row("triad").contains("host_node"), "{prom}");
}

#[test]
fn a_gpu_s_baseline_checks_and_its_metrics_carry_gpu_and_uuid() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let Some(dir) = fake_driver() else { return };
    let tmp = crate::common::scratch_dir();
    let baseline = tmp.path().join("gpu.json");
    let b = baseline.to_str().unwrap();
    let mut cmd = with_fake(&dir);
    cmd.args([
        "baseline", "--backend", "cuda:0", "--output", b, "--rounds", "2",
    ])
    .args(SMALL);
    let (code, _, stderr) = output(&mut cmd);
    assert_eq!(code, 0, "{stderr}");
    let mut cmd = with_fake(&dir);
    let prom = tmp.path().join("gpu.prom");
    cmd.args([
        "check", "--backend", "cuda:0", "--baseline", b, "--tolerance", "90%",
    ])
    .args(["--prom", prom.to_str().unwrap()])
    .args(SMALL);
    let (code, _, stderr) = output(&mut cmd);
    assert!(code == 0 || code == 1, "{stderr}");
    let stdout = std::fs::read_to_string(&prom).unwrap();
    let row = (stdout.lines())
        .find(|l| l.starts_with("membw_") && l.contains("cuda0"))
        .unwrap_or_else(|| panic!("{stdout}"));
    crate::common::assert_contains(row, r#"gpu="cuda:0""#);
    crate::common::assert_contains(row, r#"uuid="GPU-00010203-0405-0607-0809-0a0b0c0d0e0f""#);
}

/// The PTX the binary carries is what `kernels.cu` compiles to with the
/// pinned NVRTC, and `ptxas` assembles it for sm_70, sm_80 and sm_90.
/// Needs the compiler of tools/cuda-ptx-requirements.txt: its Python is
/// `MEMBW_CUDA_PTX_PYTHON`, or /opt/cuda-ptx/bin/python where .ci/run
/// installs it.
#[test]
fn the_committed_ptx_is_what_the_source_compiles_to() {
    if !common::slow_tests("the PTX check (NVRTC and ptxas over 196 kernels)") {
        return;
    }
    let python = std::env::var("MEMBW_CUDA_PTX_PYTHON")
        .unwrap_or_else(|_| "/opt/cuda-ptx/bin/python".into());
    if !std::path::Path::new(&python).exists() {
        common::unavailable(
            format!("the pinned CUDA compiler is not installed ({python})"),
            ".ci/run must pip install -r tools/cuda-ptx-requirements.txt into /opt/cuda-ptx",
        );
        return;
    }
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let said = common::passed_check(
        std::process::Command::new(&python)
            .arg(root.join("tools/cuda_ptx.py"))
            .arg("--check"),
    );
    for arch in ["sm_70", "sm_80", "sm_90"] {
        crate::common::assert_contains(&said, &format!("assembles kernels.ptx for {arch}"));
    }
}

#[test]
fn peer_copies_go_through_the_driver_and_a_pair_without_p2p_is_staged() {
    let Some(dir) = fake_driver() else { return };
    let (_dir, log, _) = crate::common::scratch_file("peers.log");
    let (code, stdout, stderr) = output(
        with_fake(&dir)
            .env("FAKE_CUDA_DEVICES", "3")
            .env("FAKE_CUDA_NO_PEER", "0:2")
            .env("FAKE_CUDA_LOG", &log)
            .args(["peers", "--backend", "cuda:all", "--array-size", "64K"])
            .args(["--ntimes", "2", "--format", "json"]),
    );
    assert_eq!(code, 0, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 5 * 6);
    let staged: Vec<(u64, u64)> = (cells.iter())
        .filter(|c| c["path"] == "staged")
        .map(|c| (c["from"].as_u64().unwrap(), c["to"].as_u64().unwrap()))
        .collect();
    assert!(
        staged.iter().all(|p| *p == (0, 2) || *p == (2, 0)),
        "{staged:?}"
    );
    assert!(!staged.is_empty());
    // The kernels cannot reach a staged peer; the copy engine can.
    for c in cells {
        let kernel = c["method"].as_str().unwrap().starts_with("sm-");
        assert_eq!(
            kernel && c["path"] == "staged",
            c.get("skipped").is_some(),
            "{c}"
        );
        assert!(c.get("wrong").is_none(), "{c}");
    }
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(said.matches("peer access enabled").count(), 4, "{said}");
}

/// A `--backend` value is resolved once: a set of three GPUs asks the
/// driver for its devices no more often than one GPU does (each made
/// backend was found among the devices already counted).
#[test]
fn a_device_set_asks_the_driver_for_its_devices_once() {
    let Some(dir) = fake_driver() else { return };
    let counts = |backend: &str| {
        let log = tempfile::NamedTempFile::new().unwrap();
        let (code, _, stderr) = output(
            with_fake(&dir)
                .env("FAKE_CUDA_DEVICES", "3")
                .env("FAKE_CUDA_LOG", log.path())
                .args(["run", "--backend", backend, "--kernels", "triad"])
                .args(SMALL),
        );
        assert_eq!(code, 0, "{backend}: {stderr}");
        let log = std::fs::read_to_string(log.path()).unwrap();
        log.lines().filter(|l| *l == "count").count()
    };
    let one = counts("cuda:0");
    assert!(one >= 1, "the fake driver logs its counts");
    assert_eq!(counts("cuda:all"), one);
    assert_eq!(counts("cuda:0-2"), one);
}

/// So does a baseline of a set: its rounds and its GPU pairs measure the
/// set found once.
#[test]
fn a_baseline_of_a_device_set_asks_the_driver_for_its_devices_once() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let Some(dir) = fake_driver() else { return };
    let tmp = crate::common::scratch_dir();
    let counts = |backend: &str| {
        let log = tmp.path().join(format!("{backend}.log"));
        let out = tmp.path().join(format!("{backend}.json"));
        let (code, _, stderr) = output(
            with_fake(&dir)
                .env("FAKE_CUDA_DEVICES", "3")
                .env("FAKE_CUDA_LOG", &log)
                .args(["baseline", "--backend", backend, "--rounds", "1"])
                .args(["--kernels", "triad", "--allow-busy", "--output"])
                .arg(&out)
                .args(SMALL),
        );
        assert_eq!(code, 0, "{backend}: {stderr}");
        let log = std::fs::read_to_string(&log).unwrap();
        log.lines().filter(|l| *l == "count").count()
    };
    let one = counts("cuda:0");
    assert!(one >= 1, "the fake driver logs its counts");
    assert_eq!(counts("cuda:all"), one);
}
