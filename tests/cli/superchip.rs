//! Superchips (GH200, MI300A) as one node: the scopes a health check
//! covers there (the CPU and the GPU, each over its own memory and the
//! other's), planned on the fixtures with `--dry-run`, and the GPU's
//! coherent link to its CPU (NVLink-C2C) read, shown and checked as a
//! link: on the simulated devices and through the fake NVML.

use crate::common::{self, fake_cuda_driver, fake_nvml, membw, output};

/// A GH200 node's simulated GPU: ten C2C links, its memory node 1 (the
/// fixture's HBM node, without CPUs); `more`: other items.
fn gh200_sim(more: &str) -> String {
    format!("devices=1,c2c=10,memory-node=0:1{more}")
}

/// `membw baseline --dry-run` on fixture `tree` with the simulated node
/// `setup`: its printed plan.
fn planned(tree: &str, setup: &str) -> String {
    let root = common::shared_tree(tree);
    let (code, stdout, stderr) = output(
        membw()
            .env("MEMBW_SIM_DEVICE", setup)
            .args(["baseline", "--dry-run", "--sysroot"])
            .arg(&root),
    );
    assert_eq!(code, 0, "{stderr}");
    stdout
}

#[test]
fn a_gh200_nodes_check_covers_each_processor_over_each_memory() {
    let plan = planned("gh200-1s", &gh200_sim(""));
    // The CPU over LPDDR, over the GPU's HBM (the cores nearest it), the
    // GPU over HBM and over LPDDR (pageable, through ATS).
    for line in [
        "node                                  CPUs 0-71",
        "NUMA node 0 on node 1's memory        CPUs 0-71    bind:1",
        "device 0                              device sim0  --gpu-memory device",
        "device 0 on node 0's pageable memory  device sim0  --gpu-memory system:0",
    ] {
        assert!(plan.contains(line), "{line}\n{plan}");
    }
    assert!(plan.contains(": 6 scopes"), "{plan}");
    // A check without a baseline plans the same scopes.
    let root = common::shared_tree("gh200-1s");
    let (code, check, stderr) = output(
        membw()
            .env("MEMBW_SIM_DEVICE", gh200_sim(""))
            .args(["check", "--dry-run", "--sysroot"])
            .arg(&root),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        check.replace("membw check", "membw baseline"),
        plan,
        "{check}"
    );
    // A GPU that cannot read pageable memory reaches it pinned and mapped.
    let pinned = planned("gh200-1s", &gh200_sim(",pageable=no"));
    assert!(
        pinned.contains("device 0 on node 0's pinned memory  device sim0  --gpu-memory host:0"),
        "{pinned}"
    );
    // A PCIe GPU (its memory no host node) has no such scope.
    let pcie = planned("gh200-1s", "devices=1");
    assert!(!pcie.contains("pageable memory"), "{pcie}");
}

#[test]
fn an_mi300a_nodes_check_covers_each_apu_once() {
    let apus = "devices=4,memory-node=0:0,memory-node=1:1,memory-node=2:2,memory-node=3:3";
    let plan = planned("mi300a-4s", apus);
    // Each APU's cores on its HBM, each GPU on the same HBM: an APU's
    // memory is its CPUs' own, so nothing is "the CPU's memory" beside it.
    let row = |scope: &str, on: &str| {
        (plan.lines()).any(|l| l.starts_with(&format!("  {scope} ")) && l.contains(on))
    };
    assert!(row("NUMA node 3", "CPUs 72-95"), "{plan}");
    assert!(row("device 3", "device sim3"), "{plan}");
    assert!(!plan.contains("pageable memory"), "{plan}");
    assert!(!plan.contains("'s memory "), "{plan}");
}

/// `membw baseline` (or `check`) of the simulated node `setup`, small
/// and short, with `args`.
fn health(setup: &str, args: &[&str]) -> (i32, String, String) {
    output(
        membw()
            .env("MEMBW_SIM_DEVICE", setup)
            .args(args)
            .args(["--size", "64k", "--small"]),
    )
}

#[test]
fn c2c_links_inactive_or_lost_since_the_baseline_are_faults() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let dir = crate::common::scratch_dir();
    let base = dir.path().join("base.json");
    let base = base.to_str().unwrap();
    let c2c = "devices=1,c2c=10";
    let (code, _, stderr) = health(
        c2c,
        &["baseline", "--rounds", "1", "--allow-busy", "-o", base],
    );
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(base).unwrap()).unwrap();
    let scopes = json["scopes"].as_array().unwrap();
    let device = &(scopes.iter().find(|s| s["scope"] == "device:0")).unwrap()["device"];
    assert_eq!(device["host_fabric"]["links"], 10, "{device}");
    assert_eq!(device["host_fabric"]["active"], 10, "{device}");
    let check = |setup: &str| {
        let (code, stdout, stderr) = health(setup, &["check", "--baseline", base]);
        (code, stdout + &stderr)
    };
    // The node's baseline (its CPUs and its GPU) is checked as made: the
    // CPUs' scopes without the GPU's transfers.
    let (code, said) = check(c2c);
    assert_ne!(code, 2, "{said}");
    assert!(!said.contains("NVLink-C2C"), "{said}");
    // Two links inactive: a fault whatever the rates.
    let (code, said) = check("devices=1,c2c=10,c2c-down=0:2");
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("sim0: 8 of its 10 NVLink-C2C links are active (2 inactive)"),
        "{said}"
    );
    // Fewer links than the baseline's.
    let (code, said) = check("devices=1,c2c=8");
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("sim0: 8 NVLink-C2C links here, 10 in the baseline"),
        "{said}"
    );
    // None where the library answered: missing.
    let (code, said) = check("devices=1");
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("sim0: its NVLink-C2C link is missing (10 links in the baseline)"),
        "{said}"
    );
}

#[test]
fn a_bad_c2c_setup_is_one_line() {
    for (setup, needle) in [
        ("c2c-down=0:1", "the devices have no C2C links"),
        ("c2c=4,c2c-down=0:4", "one of which stays active"),
        ("memory-node=9:1", "device 9 is not on the simulated node"),
        ("memory-node=0:x", "'x': a NUMA node"),
    ] {
        let (code, _, stderr) = output(
            membw()
                .env("MEMBW_SIM_DEVICE", setup)
                .args(["run", "--backend", "sim:0", "--dry-run"]),
        );
        assert_eq!(code, 2, "{setup}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{setup}: {stderr}");
    }
}

#[test]
fn nvml_reads_the_c2c_links_state_and_rate_per_link() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let (Some(cuda), Some(nvml)) = (fake_cuda_driver(), fake_nvml()) else {
        return;
    };
    let with = |setup: &[(&str, &str)]| {
        let mut cmd = membw();
        cmd.env(
            "LD_LIBRARY_PATH",
            format!("{}:{}", cuda.display(), nvml.display()),
        );
        for (k, v) in setup {
            cmd.env(k, v);
        }
        cmd
    };
    let gh200 = [("FAKE_NVML_C2C", "10:45000"), ("FAKE_NVML_C2C_DOWN", "0:3")];
    let (code, topo, stderr) = output(with(&gh200).args(["topo"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        topo.contains("NVLink-C2C: 7 of 10 links active, 45.0 GB/s each (315.0 GB/s each way)"),
        "{topo}"
    );
    let (code, run, stderr) = output(with(&gh200).args([
        "run", "--backend", "cuda:0", "--json", "--array-size", "200000", "--ntimes", "3",
        "--kernels", "h2d",
    ]));
    assert_eq!(code, 0, "{stderr}");
    let run: serde_json::Value = serde_json::from_str(&run).unwrap();
    let device = &run["measurement"]["target"];
    assert_eq!(device["host_fabric"]["active"], 7, "{device}");
    // The host link is the C2C's active links, not the PCIe function's.
    assert_eq!(device["peaks"]["host_link_gb_s"], 315.0, "{device}");
    assert!(device.get("link").is_none(), "{device}");
    // A PCIe GPU: no C2C line, its PCIe link kept.
    let (_, topo, _) = output(with(&[]).args(["topo"]));
    assert!(!topo.contains("NVLink-C2C"), "{topo}");
    // Against a baseline with the link: where NVML does not answer, the
    // link is said to be unread, neither passed nor failed.
    let dir = crate::common::scratch_dir();
    let base = dir.path().join("b.json");
    let small = ["--backend", "cuda:0", "--size", "64k", "--small"];
    let (code, _, stderr) = output(
        with(&gh200[..1])
            .args(["baseline", "--rounds", "1", "--allow-busy", "-o"])
            .arg(&base)
            .args(small),
    );
    assert_eq!(code, 0, "{stderr}");
    let mut without_nvml = membw();
    without_nvml.env("LD_LIBRARY_PATH", &cuda);
    let (_, stdout, stderr) = output(
        without_nvml
            .args(["check", "--baseline"])
            .arg(&base)
            .args(small),
    );
    let said = stdout + &stderr;
    assert!(
        said.contains("cuda0: its NVLink-C2C link was not read (its management library did not answer); the baseline's has 10 links"),
        "{said}"
    );
}

#[test]
fn a_baseline_keeps_the_cpus_over_hbm_and_a_check_holds_it_there() {
    let root = common::shared_tree("gh200-1s");
    let dir = crate::common::scratch_dir();
    let base = dir.path().join("b.json");
    // The fake source measures nothing: the tree is planned, not run.
    let fake = |cmd: &str| {
        let mut c = membw();
        c.args([cmd, "--fake-source", "40", "--sysroot"]).arg(&root);
        c
    };
    let (code, _, stderr) = output(fake("baseline").args(["--rounds", "1", "-o"]).arg(&base));
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    let scopes: Vec<&str> = (json["scopes"].as_array().unwrap().iter())
        .map(|s| s["scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes, ["node", "numa:0/mem:1"]);
    let (code, plan, stderr) = output(fake("check").arg("--dry-run").arg("--baseline").arg(&base));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        plan.contains("NUMA node 0 on node 1's memory  CPUs 0-71  bind:1"),
        "{plan}"
    );
    let (code, verdict, stderr) = output(
        fake("check")
            .args(["--format", "json", "--baseline"])
            .arg(&base),
    );
    assert_eq!(code, 0, "{stderr}");
    let verdict: serde_json::Value = serde_json::from_str(&verdict).unwrap();
    let judged: Vec<&str> = (verdict["findings"].as_array().unwrap().iter())
        .filter_map(|f| f["scope"].as_str())
        .collect();
    assert!(judged.contains(&"numa:0/mem:1"), "{verdict}");
}

#[test]
fn without_a_baseline_the_cpus_over_hbm_are_measured_and_said_not_judged() {
    // The GH200's HBM node has no peak membw knows and no sibling: the
    // check measures the CPUs over it, judges the node against its peak,
    // and says which scope nothing held, in text and JSON.
    let root = common::shared_tree("gh200-1s");
    let check = |format: &str| {
        output(
            membw()
                .args(["check", "--fake-source", "40", "--format", format])
                .arg("--sysroot")
                .arg(&root),
        )
    };
    let (code, verdict, stderr) = check("json");
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&verdict).unwrap();
    let scopes = |of: &str| -> Vec<String> {
        let mut s: Vec<String> = (v[of].as_array().unwrap().iter())
            .map(|f| f["scope"].as_str().unwrap().to_string())
            .collect();
        s.dedup();
        s
    };
    assert_eq!(scopes("rates"), ["node", "numa:0/mem:1"]);
    assert_eq!(scopes("findings"), ["node"]);
    let said = "measured, not judged without a baseline (no peak or sibling to hold it against): NUMA node 0 on node 1's memory (the firmware (ACPI HMAT) gives no bandwidth for node 1)";
    assert!(v["notes"].to_string().contains(said), "{v}");
    let (code, text, stderr) = check("text");
    assert_eq!(code, 0, "{stderr}");
    common::assert_contains(&text, &format!("note: {said}"));
}

#[test]
fn without_a_baseline_the_cpus_over_a_cxl_node_are_held_against_its_firmware_figure() {
    // The Xeon 6 fixture's CXL node 1: HMAT states 61440 MB/s read from
    // node 0's cores; half of it is the reference, as the node's is half
    // of its own peak.
    let root = common::shared_tree("xeon-6-cxl-1s");
    let (code, verdict, stderr) = output(
        membw()
            .args([
                "check", "--fake-source", "40", "--format", "json", "--sysroot",
            ])
            .arg(&root),
    );
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&verdict).unwrap();
    let cxl = (v["findings"].as_array().unwrap().iter())
        .find(|f| f["scope"] == "numa:0/mem:1")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(cxl["against"], "peak");
    assert_eq!(cxl["reference_gb_s"], 30.72);
    assert_eq!(v["against"], "50 % of each memory's theoretical peak");
    assert!(!v["notes"].to_string().contains("not judged"), "{v}");
}

#[test]
fn arrays_bound_to_a_node_that_cannot_hold_them_are_refused_in_one_line() {
    let root = common::shared_tree("gh200-1s");
    // 120 GB over the 96 GiB HBM node, though the node has 576 GiB in all.
    let (code, _, stderr) = output(
        membw()
            .args([
                "run", "--dry-run", "--mem", "bind:1", "--size", "5G", "--sysroot",
            ])
            .arg(&root),
    );
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("3 arrays of 5000000000 elements bound to node 1 need 111.8 GiB, more than the 96 GiB it has"),
        "{stderr}"
    );
}
