//! Where a GPU's arrays live (`--gpu-memory`): each place measured,
//! validated and named in the record on every vendor this host can load
//! (the simulated device, the fake CUDA driver, the fake HIP runtime), the
//! refusals in one line, managed and system memory outgrowing the device,
//! and each place a point of a sweep.

use super::gpu_runtimes::{Vendor, vendors};
use crate::common::{
    assert_contains, fake_cuda_driver, fake_hip_runtime, membw, scratch_file, usage_error,
};
use serde_json::Value;

/// A short run: one launch shape, small arrays, two kernels over a, b, c.
const SHORT: [&str; 8] = [
    "--array-size", "64K", "--ntimes", "3", "--kernels", "copy,triad", "--shape",
    "w16.u4.b256.wave",
];

/// What a driver says memory asked for at `place` is.
fn expected_driver(place: &str) -> &'static str {
    match place.split(':').next().unwrap() {
        "managed" => "managed",
        "host" => "host",
        "system" => "pageable",
        _ => "device",
    }
}

/// A run of `vendor` with its arrays at `place`, as JSON: the
/// simulated device's first, the fakes' second GPU.
fn run_at(vendor: &Vendor, place: &str) -> Value {
    let mut args = vec!["--gpu-memory", place];
    args.extend(SHORT);
    vendor.run_json(&args)
}

#[test]
fn each_place_is_measured_validated_and_named_in_the_record() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    for mut vendor in vendors() {
        // AMD's GPUs read pageable memory with XNACK on.
        vendor.env.push(("HSA_XNACK", "1".into()));
        for place in ["managed", "managed:prefetch", "host", "system"] {
            let run = run_at(&vendor, place);
            let m = &run["measurement"];
            let what = format!("{} {place}: {m}", vendor.backend);
            assert_eq!(m["validation"]["passed"], true, "{what}");
            let used = &m["gpu_memory"];
            let asked = used["asked"].as_str().unwrap();
            assert!(
                asked.starts_with(place.split(':').next().unwrap()),
                "{what}"
            );
            let found = used["found"].as_array().unwrap();
            assert_eq!(found.len(), 3, "{what}");
            for array in found {
                assert_eq!(array["driver"], expected_driver(place), "{what}");
            }
            // The first pass over the three arrays, timed apart.
            assert_eq!(used["first_touch"]["bytes"], 3 * 64000 * 8, "{what}");
            assert!(
                used["first_touch"]["seconds"].as_f64().unwrap() >= 0.0,
                "{what}"
            );
            // Host memory's pages are found on host nodes, as the CPU's are.
            let pages = m["pages"].as_array().unwrap();
            let host_pages = pages.iter().filter(|p| p["array"] == "a").count();
            assert_eq!(
                host_pages,
                usize::from(place == "host" || place == "system"),
                "{what}"
            );
            assert!(used.get("device_share").is_none(), "{what}");
        }
        // Device memory is the default, and its record says so.
        let run = vendor.run_json(&SHORT);
        let used = &run["measurement"]["gpu_memory"];
        assert_eq!(used["asked"], "device", "{used}");
        assert!(used.get("first_touch").is_none(), "{used}");
    }
}

#[test]
fn the_run_header_says_where_the_arrays_were_and_what_the_driver_said() {
    let mut args = vec![
        "run", "--backend", "sim:0", "--gpu-memory", "managed:prefetch",
    ];
    args.extend(SHORT);
    let out = membw().args(&args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_contains(
        &text,
        "Arrays: --gpu-memory managed:prefetch; the driver says: a, b, c managed memory; first touch 1.5 MiB in",
    );
    assert_contains(&text, "apart from the repetitions");
}

/// Asserts that `cmd` ends in one line on stderr holding `needle`, exit 2,
/// nothing on stdout.
fn refused(mut cmd: assert_cmd::Command, needle: &str) {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(out.stdout.is_empty(), "{stderr}");
    assert_contains(&stderr, needle);
}

#[test]
fn a_gpu_that_cannot_read_pageable_memory_refuses_system_memory_in_one_line() {
    for vendor in vendors() {
        let (variable, value, attribute) = match vendor.backend {
            "sim:1" => (
                "MEMBW_SIM_DEVICE",
                "pageable=no",
                "set up without it (pageable=no)",
            ),
            "cuda:1" => (
                "FAKE_CUDA_PAGEABLE",
                "0",
                "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0",
            ),
            // No HSA_XNACK: XNACK is off, as it is by default.
            _ => ("FAKE_HIP_UNSET", "", "XNACK is off (run with HSA_XNACK=1"),
        };
        let mut cmd = vendor.membw(&[
            "run", "--backend", vendor.backend, "--gpu-memory", "system:0",
        ]);
        cmd.env(variable, value).env_remove("HSA_XNACK");
        refused(
            cmd,
            &format!(
                "--gpu-memory 'system:0': {}",
                vendor.backend.replace(':', "")
            ),
        );
        let mut cmd = vendor.membw(&["run", "--backend", vendor.backend, "--gpu-memory", "system"]);
        cmd.env(variable, value).env_remove("HSA_XNACK");
        refused(cmd, attribute);
    }
}

#[test]
fn a_place_the_gpu_or_the_host_has_not_is_refused_in_one_line() {
    let sim = ["run", "--backend", "sim:0", "--gpu-memory"];
    let cases: [(&[&str], &str); 5] = [
        (
            &["hbm"],
            "'hbm': device, managed, managed:prefetch, host[:NODE] or system[:NODE]",
        ),
        (
            &["host:1023"],
            "--gpu-memory 'host:1023': there is no NUMA node 1023 here",
        ),
        (&["managed:now"], "managed takes :prefetch or nothing"),
        (
            &["managed", "--kernels", "h2d"],
            "h2d moves data between the host and the device's own memory",
        ),
        (
            &["device,managed"],
            "--gpu-memory: run takes one place; membw sweep --gpu-memory measures several",
        ),
    ];
    for (rest, needle) in cases {
        let args: Vec<&str> = sim.iter().chain(rest).copied().collect();
        usage_error(&args, needle);
    }
    usage_error(
        &["run", "--backend", "cpu", "--gpu-memory", "managed"],
        "--gpu-memory 'managed': the CPU team's arrays are host memory",
    );
    if let Some(dir) = fake_cuda_driver() {
        let mut cmd = membw();
        cmd.args(["run", "--backend", "cuda:0", "--gpu-memory", "managed"])
            .env("LD_LIBRARY_PATH", dir)
            .env("FAKE_CUDA_MANAGED", "0");
        refused(
            cmd,
            "cuda0 has no managed memory (its driver's MANAGED_MEMORY attribute is 0)",
        );
    }
}

#[test]
fn managed_and_system_memory_may_outgrow_the_device_and_say_how_much_fits() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    // A device of 16 MiB; three arrays of 1M elements are 24 MB.
    let small = ("MEMBW_SIM_DEVICE", "memory=16");
    let run = |place: &str| {
        let mut cmd = membw();
        cmd.args([
            "run", "--backend", "sim:0", "--format", "json", "--gpu-memory", place,
        ])
        .args([
            "--array-size", "1M", "--ntimes", "3", "--kernels", "copy,triad",
        ])
        .args(["--shape", "w16.u4.b256.wave"])
        .env(small.0, small.1);
        cmd.output().unwrap()
    };
    let device = run("device");
    let stderr = String::from_utf8_lossy(&device.stderr);
    assert_eq!(device.status.code(), Some(2), "{stderr}");
    assert_contains(&stderr, "more than the 16 MiB of sim0");
    assert_contains(&stderr, "managed or system memory may outgrow it");
    for place in ["managed", "system"] {
        let out = run(place);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{place}: {stderr}");
        let record: Value = serde_json::from_slice(&out.stdout).unwrap();
        let share = record["measurement"]["gpu_memory"]["device_share"]
            .as_f64()
            .unwrap();
        let expected = (16u64 << 20) as f64 / 24e6;
        assert!((share - expected).abs() < 1e-9, "{place}: {share}");
        assert_contains(
            &stderr,
            "the arrays are 43 % more than the device's memory: 70 % of them fit",
        );
    }
}

#[test]
fn a_prefetch_is_asked_of_the_driver_for_each_managed_array() {
    let Some(dir) = fake_cuda_driver() else {
        return;
    };
    for (place, prefetches) in [("managed", 0), ("managed:prefetch", 3)] {
        let (_dir, log, _) = scratch_file("driver.log");
        let mut cmd = membw();
        cmd.args(["run", "--backend", "cuda:0", "--gpu-memory", place])
            .args(SHORT)
            .env("LD_LIBRARY_PATH", &dir)
            .env("FAKE_CUDA_LOG", &log);
        assert!(cmd.output().unwrap().status.success());
        let said = std::fs::read_to_string(&log).unwrap();
        let asked = said
            .lines()
            .filter(|l| *l == "prefetched 512000 bytes to 0")
            .count();
        assert_eq!(asked, prefetches, "{place}: {said}");
    }
    if let Some(dir) = fake_hip_runtime() {
        let (_dir, log, _) = scratch_file("runtime.log");
        let mut cmd = membw();
        cmd.args([
            "run", "--backend", "hip:0", "--gpu-memory", "managed:prefetch",
        ])
        .args(SHORT)
        .env("LD_LIBRARY_PATH", &dir)
        .env("FAKE_HIP_LOG", &log);
        assert!(cmd.output().unwrap().status.success());
        let said = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            said.matches("prefetched 512000 bytes to 0").count(),
            3,
            "{said}"
        );
    }
}

#[test]
fn a_sweep_measures_each_place_as_a_point_and_the_report_names_it() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let (_dir, _path, results) = scratch_file("places.jsonl");
    let mut cmd = membw();
    cmd.args([
        "sweep",
        "--backend",
        "sim:0",
        "--gpu-memory",
        "device,managed:prefetch,host",
    ])
    .args(SHORT)
    .args(["-o", &results]);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&results).unwrap();
    let places: Vec<Value> = (text.lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r.get("point").is_some())
        .map(|r| r["point"]["gpu_memory"].clone())
        .collect();
    // Device memory is not written, as in files from before the axis.
    assert_eq!(
        places,
        [Value::Null, "managed:prefetch".into(), "host:0".into()],
        "{text}"
    );
    let report = membw().args(["report", &results]).output().unwrap();
    let shown = String::from_utf8_lossy(&report.stdout);
    assert_contains(&shown, "memory");
    assert_contains(&shown, "managed:prefetch");
    assert_contains(&shown, "host:0");
}

#[test]
fn a_gh200_nodes_plans_put_the_cpu_over_hbm_and_the_gpu_over_lpddr() {
    let root = crate::common::shared_tree("gh200-1s");
    let root = root.to_str().unwrap();
    let topo = membw().args(["topo", "--sysroot", root]).output().unwrap();
    let text = String::from_utf8_lossy(&topo.stdout);
    assert_contains(&text, "72 cores");
    // Node 1: the GPU's HBM, without CPUs.
    assert_contains(&text, "1     memory         96 GiB");
    assert_contains(&text, "10de:2342");
    let plan = |args: &[&str]| {
        let out = membw()
            .args(["run", "--sysroot", root, "--dry-run"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The Grace cores over the HBM node, over the LPDDR node.
    assert_contains(
        &plan(&["--mem", "bind:1"]),
        "numactl --physcpubind=0-71 --membind=1",
    );
    assert_contains(&plan(&["--mem", "bind:0"]), "--membind=0");
    // A GPU over the Grace's LPDDR, pageable and pinned.
    let gpu = ["--backend", "sim:0", "--gpu-memory"];
    let system = plan(&[&gpu[..], &["system:0"]].concat());
    assert_contains(
        &system,
        "in pageable host memory on node 0, read through the host's page tables",
    );
    let host = plan(&[&gpu[..], &["host:1"]].concat());
    assert_contains(&host, "in pinned host memory on node 1, mapped");
    assert_contains(&plan(&gpu[..2]), "in the device's own memory");
}

#[test]
fn topo_says_what_memory_each_gpu_reaches_as_its_driver_says() {
    let topo = |dir: &std::path::Path, env: &[(&str, &str)], format: &str| {
        let out = membw()
            .args(["topo", "--format", format])
            .env("LD_LIBRARY_PATH", dir)
            .env_remove("HSA_XNACK")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    if let Some(dir) = fake_cuda_driver() {
        // A GH200's: through the host's page tables, its memory a node.
        let text = topo(
            &dir,
            &[("FAKE_CUDA_ATS", "1"), ("FAKE_CUDA_NUMA_ID", "0")],
            "text",
        );
        assert_contains(&text, "GPU reach  cuda, as its driver says");
        assert_contains(
            &text,
            "  0000:18:00.0  managed memory · concurrent managed access · reads pageable memory · through the host's page tables (ATS) · its memory is NUMA node 0's",
        );
        // A PCIe GPU without HMM, whose memory is no node.
        let text = topo(&dir, &[("FAKE_CUDA_PAGEABLE", "0")], "text");
        assert_contains(
            &text,
            "does not read pageable memory · not through the host's page tables\n",
        );
        let json: Value =
            serde_json::from_str(&topo(&dir, &[("FAKE_CUDA_NUMA_ID", "0")], "json")).unwrap();
        let cuda = (json["gpu_reach"].as_array().unwrap().iter())
            .find(|r| r["backend"] == "cuda")
            .unwrap();
        assert_eq!(cuda["devices"][0]["reach"]["memory_node"], 0, "{cuda}");
        // The tier table names the node as the GPU's memory.
        let tier = &json["tiers"][0];
        assert_eq!(
            (&tier["kind"], &tier["gpu"]),
            (&Value::from("gpu memory"), &Value::from("0000:18:00.0")),
            "{tier}"
        );
        let plain: Value = serde_json::from_str(&topo(&dir, &[], "json")).unwrap();
        assert_eq!(plain["tiers"][0]["kind"], "cpu+memory", "{plain}");
        assert!(plain["tiers"][0].get("gpu").is_none(), "{plain}");
    }
    if let Some(dir) = fake_hip_runtime() {
        let apu = [("FAKE_HIP_APU", "1")];
        assert_contains(&topo(&dir, &apu, "text"), "XNACK off");
        let on = [("FAKE_HIP_APU", "1"), ("HSA_XNACK", "1")];
        assert_contains(
            &topo(&dir, &on, "text"),
            "reads pageable memory · through the host's page tables (ATS) · XNACK on · its memory is NUMA node 0's",
        );
    }
}

#[test]
fn an_mi300a_nodes_plans_put_a_gpu_over_its_own_apus_memory_or_anothers() {
    let root = crate::common::shared_tree("mi300a-4s");
    let root = root.to_str().unwrap();
    let plan = |place: &str| {
        let out = membw()
            .args(["run", "--sysroot", root, "--dry-run", "--backend", "sim:2"])
            .args(["--gpu-memory", place])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The third APU's GPU: its own node's HBM, pageable; another APU's, pinned.
    let own = plan("system");
    assert_contains(&own, "host node 2");
    assert_contains(&own, "in pageable host memory on node 2");
    assert_contains(&plan("host:3"), "in pinned host memory on node 3, mapped");
    // Where the driver says node 2 is the GPU's own memory (an APU's), the
    // plan says so rather than that every access crosses a link.
    let apu = membw()
        .env("MEMBW_SIM_DEVICE", "devices=4,memory-node=2:2")
        .args(["run", "--sysroot", root, "--dry-run", "--backend", "sim:2"])
        .args(["--gpu-memory", "host:2"])
        .output()
        .unwrap();
    assert_contains(
        &String::from_utf8_lossy(&apu.stdout),
        "in pinned host memory on node 2, the device's own memory as its driver says, held against its memory's peak",
    );
    let out = membw()
        .args([
            "run", "--sysroot", root, "--dry-run", "--backend", "sim:2", "--gpu-memory", "host:4",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_contains(
        &String::from_utf8_lossy(&out.stderr),
        "there is no NUMA node 4 here (nodes 0-3)",
    );
}

#[test]
fn host_memory_that_is_the_gpus_own_keeps_its_memorys_peak() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    let Some(dir) = fake_hip_runtime() else {
        return;
    };
    let peak = |env: &[(&str, &str)]| {
        let out = membw()
            .args([
                "run", "--backend", "hip:0", "--gpu-memory", "system:0", "--format", "json",
            ])
            .args(SHORT)
            .env("LD_LIBRARY_PATH", &dir)
            .env("HSA_XNACK", "1")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let record: Value = serde_json::from_slice(&out.stdout).unwrap();
        record["measurement"]["target"]["peaks"]["memory_gb_s"].clone()
    };
    // An MI300A: node 0 is the APU's HBM, the GPU's own memory.
    assert_eq!(peak(&[("FAKE_HIP_APU", "1")]), 1638.4);
    // A card: node 0 is across its host link, whose peak this host's
    // topology does not know (the fake is on no PCI bus here): unknown.
    assert_eq!(peak(&[]), Value::Null);
}
