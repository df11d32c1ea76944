//! The hip backend (src/backend/hip) without an AMD GPU: a node without
//! ROCm ends in one line, and a fake runtime (tests/fake_hip/libamdhip64.c:
//! device memory in host memory, kernels.cl's kernels run by name on the
//! host) takes every call the backend makes: loading by the oldest name,
//! enumeration, the code object chosen by the GPU's target, launches with
//! their grid argument, copies, events, host buffers, reading back,
//! errors, an APU, device sets and peer copies.

use crate::common;

use crate::common::{fake_hip_runtime as fake_runtime, membw, output, with_fake};
use serde_json::Value;

/// Small arrays: the fake runtime runs on one host thread.
const SMALL: [&str; 4] = ["--array-size", "200000", "--ntimes", "3"];

#[test]
fn a_runtime_without_gpus_an_index_past_them_and_an_unknown_target_are_refused() {
    let Some(dir) = fake_runtime() else { return };
    let refusal = |env: &[(&str, &str)], backend: &str, exit: i32| {
        let mut cmd = with_fake(&dir);
        cmd.envs(env.iter().copied())
            .args(["run", "--backend", backend]);
        let (code, stdout, stderr) = output(&mut cmd);
        assert_eq!(code, exit, "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        stderr
    };
    let none = refusal(&[("FAKE_HIP_DEVICES", "0")], "hip:0", 2);
    crate::common::assert_contains(
        &none,
        "the HIP runtime (libamdhip64.so.5) is installed but sees no GPU",
    );
    let past = refusal(&[("FAKE_HIP_DEVICES", "2")], "hip:2", 2);
    assert!(
        past.contains("there is no GPU hip:2: HIP sees 2 (hip:0 to hip:1"),
        "{past}"
    );
    // A GPU of a target membw carries no code object for (an MI100): the
    // request was right, the GPU is one membw cannot drive (exit 1).
    let gfx908 = refusal(&[("FAKE_HIP_TARGET", "gfx908")], "hip:0", 1);
    assert!(
        gfx908.contains(
            "no code object membw carries runs on this GPU (it carries gfx942, gfx90a, gfx1100"
        ) && gfx908.contains("hipErrorNoBinaryForGpu"),
        "{gfx908}"
    );
    let mut cmd = with_fake(&dir);
    cmd.args(["run", "--backend", "hip", "--threads", "2"]);
    let (code, _, stderr) = output(&mut cmd);
    assert_eq!(code, 2, "{stderr}");
    crate::common::assert_contains(&stderr, "an AMD GPU has no CPU threads");
}

#[test]
fn every_kernel_runs_validates_and_the_record_names_the_gcd() {
    let Some(dir) = fake_runtime() else { return };
    let log = tempfile::NamedTempFile::new().unwrap();
    let (code, stdout, stderr) = output(
        with_fake(&dir)
            .env("FAKE_HIP_LOG", log.path())
            .args(["run", "--backend", "hip:0", "--kernels", "all,transfers"])
            .args(["--format", "json"])
            .args(SMALL),
    );
    assert_eq!(code, 0, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let m = &doc["measurement"];
    assert_eq!(m["target"]["backend"], "hip");
    assert_eq!(m["target"]["name"], "hip0");
    assert_eq!(m["target"]["bus_id"], "0000:c1:00.0");
    assert_eq!(
        m["target"]["model"],
        "AMD Instinct MI250X (gfx90a, 110 compute units)"
    );
    // One GCD's HBM2e: 1600 MHz × 4096 bits × 2 per clock.
    assert_eq!(
        m["target"]["peaks"]["memory_gb_s"], 1638.4,
        "{}",
        m["target"]
    );
    assert_eq!(
        m["target"]["peaks"]["memory_from"],
        "HIP's 1600 MHz memory clock × 4096-bit bus and the HBM's transfers a clock"
    );
    assert_eq!(m["validation"]["passed"], true, "{m}");
    let said = std::fs::read_to_string(log.path()).unwrap();
    crate::common::assert_contains(&said, "loaded the gfx90a code object");
    // Every launch passed its grid as the kernels' last argument (the
    // fake refuses one that does not), and the reductions ran.
    let launches: Vec<&str> = said.lines().filter(|l| l.starts_with("launch ")).collect();
    assert!(
        launches.iter().any(|l| l.starts_with("launch dot ")),
        "{said}"
    );
    for l in &launches {
        let words: Vec<&str> = l.split(' ').collect();
        assert_eq!(format!("blocks={}", words[2]), words[3], "{l}");
    }
    assert_eq!(
        said.matches("registered 1600000 bytes").count(),
        2,
        "{said}"
    );
}

#[test]
fn the_code_object_follows_the_target_and_an_apu_says_its_memory_is_the_nodes() {
    let Some(dir) = fake_runtime() else { return };
    let (code, stdout, stderr) = output(
        // An MI300A: gfx942, its memory the node's.
        with_fake(&dir)
            .envs([
                ("FAKE_HIP_TARGET", "gfx942"),
                ("FAKE_HIP_APU", "1"),
                ("FAKE_HIP_NAME", "AMD Instinct MI300A"),
            ])
            .args([
                "run", "--backend", "hip", "--kernels", "triad,h2d", "--format", "json",
            ])
            .args(SMALL),
    );
    assert_eq!(code, 0, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let target = &doc["measurement"]["target"];
    assert_eq!(
        target["model"],
        "AMD Instinct MI300A (gfx942, 110 compute units, APU: its memory is the node's memory)"
    );
    assert!(target.get("link").is_none(), "{target}");
    assert!(target["peaks"].get("host_link_gb_s").is_none(), "{target}");
    // A Radeon's memory kind is not known: its peak is named unknown.
    let (code, _, stderr) = output(
        with_fake(&dir)
            .env("FAKE_HIP_TARGET", "gfx1100")
            .env("FAKE_HIP_NAME", "AMD Radeon RX 7900 XTX")
            .args(["run", "--backend", "hip:0", "--kernels", "triad"])
            .args(SMALL),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr
            .contains("hip0's memory peak is unknown: membw knows the transfers per memory clock"),
        "{stderr}"
    );
}

#[test]
fn every_gcd_of_a_set_runs_and_peer_copies_stage_a_pair_without_p2p() {
    let Some(dir) = fake_runtime() else { return };
    let (code, stdout, stderr) = output(
        with_fake(&dir)
            .env("FAKE_HIP_DEVICES", "2")
            .args([
                "run", "--backend", "hip:all", "--kernels", "triad", "--format", "json",
            ])
            .args(SMALL),
    );
    assert_eq!(code, 0, "{stderr}");
    // Each GCD alone, then both at once under one start gate.
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["kind"], "membw-device-set");
    let alone: Vec<&str> = (doc["alone"].as_array().unwrap().iter())
        .map(|r| r["measurement"]["target"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(alone, ["hip0", "hip1"]);
    let at_once: Vec<&str> = (doc["at_once"]["measurement"]["ranks"]["ranks"].as_array())
        .unwrap()
        .iter()
        .map(|r| r["device"].as_str().unwrap())
        .collect();
    assert_eq!(at_once, ["hip0", "hip1"]);
    let log = tempfile::NamedTempFile::new().unwrap();
    let (code, stdout, stderr) = output(
        with_fake(&dir)
            .env("FAKE_HIP_DEVICES", "3")
            .env("FAKE_HIP_NO_PEER", "0:2")
            .env("FAKE_HIP_LOG", log.path())
            .args(["peers", "--backend", "hip:all", "--array-size", "64K"])
            .args(["--ntimes", "2", "--format", "json"]),
    );
    assert_eq!(code, 0, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let staged: Vec<(u64, u64)> = (doc["cells"].as_array().unwrap().iter())
        .filter(|c| c["path"] == "staged")
        .map(|c| (c["from"].as_u64().unwrap(), c["to"].as_u64().unwrap()))
        .collect();
    assert!(!staged.is_empty());
    assert!(
        staged.iter().all(|p| *p == (0, 2) || *p == (2, 0)),
        "{staged:?}"
    );
    let said = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(said.matches("peer access enabled").count(), 4, "{said}");
}

/// A dry run of a GCD on the MI250X node's fixture (the fake runtime's
/// hip0 is the fixture's 0000:c1:00.0, on NUMA node 3): the plan names the
/// device and where it hangs, pins the host thread there, and says nothing
/// of a CPU placement, ISA or page policy.
#[test]
fn a_plan_on_an_mi250x_node_names_the_gcd_and_its_host_thread() {
    let Some(dir) = fake_runtime() else { return };
    let root = common::shared_tree("epyc-trento-mi250x-1s");
    let (code, stdout, stderr) = output(
        with_fake(&dir)
            .args(["run", "--backend", "hip:0", "--dry-run", "--sysroot"])
            .arg(&root),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(
            "target     device hip0 (AMD Instinct MI250X (gfx90a, 110 compute units), 64 GiB, 0000:c1:00.0, host node 3, PCIe Gen4 x16"
        ),
        "{stdout}"
    );
    // Node 3 of the fixture is CPUs 48-63 and their siblings.
    let host = (stdout.lines())
        .find(|l| l.trim_start().starts_with("host "))
        .unwrap();
    let cpu: usize = host
        .split("on CPU ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("{host}"));
    assert!(
        (48..64).contains(&cpu) || (112..128).contains(&cpu),
        "{host}"
    );
    for cpu_only in ["  placement", "  code ", "  memory ", "pages "] {
        assert!(!stdout.contains(cpu_only), "{cpu_only}: {stdout}");
    }
}

/// A sweep of a GCD's working sets is a results file that report and
/// compare read as any other: the commands a CUDA GPU takes, an AMD one
/// takes.
#[test]
fn a_gcds_sweep_reports_and_compares() {
    let (work, file, _) = crate::common::scratch_file("gcd.jsonl");
    let Some(dir) = fake_runtime() else { return };
    let (code, _, stderr) = output(
        with_fake(&dir)
            .current_dir(work.path())
            .args(["sweep", "--backend", "hip:0", "--kernels", "triad"])
            .args(["--working-sets", "1MB,4MB", "--ntimes", "3", "-o"])
            .arg(&file),
    );
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    let (code, report, stderr) = output(membw().current_dir(work.path()).arg("report").arg(&file));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        report.contains("best triad:") && report.contains("with device hip0"),
        "{report}"
    );
    let (code, compared, stderr) = output(membw().args(["compare"]).arg(&file).arg(&file));
    assert_eq!(code, 0, "{stderr}");
    crate::common::assert_contains(&compared, "device hip0 · 3.8 MiB/device");
}
