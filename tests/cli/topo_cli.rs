//! `membw topo` end to end, and agreement with lscpu and numactl.

use crate::common;

use crate::common::{membw, stdout, usage_error};

use serde_json::Value;

#[test]
fn a_256_cpu_node_prints_as_ranges() {
    let dir = common::shared_tree("epyc-7742-2s-nps4");
    let out = stdout(&["topo", "--sysroot", dir.to_str().unwrap()]);
    crate::common::assert_contains(
        &out,
        "2 sockets · 8 NUMA nodes · 128 cores · 256 CPUs · SMT on (2 threads per core)",
    );
    crate::common::assert_contains(&out, "node 5   cores 80-95        CPUs 80-95,208-223");
    assert!(out.contains("L3 domains: 0-3 4-7 8-11 12-15"));
    assert!(out.contains("     0  10  12  12  12  32  32  32  32\n"));
    assert!(out.contains("Peak       409.6 GB/s (2 sockets × 8 channels × 3200 MT/s × 8 B)\n           source: built-in table"));
    assert!(
        out.lines().all(|l| l.chars().count() <= 120),
        "readable width:\n{out}"
    );
    // 16 CCXs per node wrap onto continuation lines.
    let dir = common::shared_tree("epyc-7h12-2s");
    let out = stdout(&["topo", "--sysroot", dir.to_str().unwrap()]);
    assert!(
        out.lines().all(|l| l.chars().count() <= 120),
        "readable width:\n{out}"
    );
    crate::common::assert_contains(&out, "L3 domains: 0-3 4-7 8-11 12-15 16-19");
    crate::common::assert_contains(&out, "124-127\n");
}

#[test]
fn json_holds_the_full_model() {
    let dir = common::shared_tree("epyc-7h12-2s");
    let out = stdout(&["topo", "--json", "--sysroot", dir.to_str().unwrap()]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["derived"]["cpus"], 256);
    assert_eq!(doc["derived"]["cache_sum"], 584u64 << 20);
    assert!(doc["derived"].get("cache_sum_unknown").is_none());
    assert_eq!(
        doc["topology"]["nodes"][1]["distances"],
        serde_json::json!([32, 10])
    );
    assert_eq!(
        doc["topology"]["cpus"][130]["siblings"],
        serde_json::json!([2, 130])
    );
    assert_eq!(doc["peak"]["source"], "smbios");
    assert_eq!(doc["peak"]["channels_per_socket"], 8);
}

#[test]
fn user_peak_flags_are_checked() {
    let out = stdout(&["topo", "--channels", "8", "--mts", "3200"]);
    crate::common::assert_contains(&out, "channels × 3200 MT/s");
    usage_error(&["topo", "--channels", "8"], "--mts");
    usage_error(&["topo", "--peak", "100GB/s", "--mts", "3200"], "--peak");
    usage_error(&["topo", "--peak", "fast"], "'fast'");
    usage_error(
        &["topo", "--sysroot", "/nonexistent/membw"],
        "not a directory",
    );
    let empty = crate::common::scratch_dir();
    usage_error(
        &["topo", "--sysroot", empty.path().to_str().unwrap()],
        "no CPUs found",
    );
}

#[test]
fn run_reports_percent_of_peak() {
    // Arrays past 4 x the caches: a share of the memory peak is shown.
    let size = common::small_dram_elements(1_000_000);
    let out = common::stdout_on_small_caches(&[
        "run", "--size", &size, "--ntimes", "2", "--channels", "8", "--mts", "3200",
        // Arrays of 4 x the caches: mapping them again is the stores
        // check's whole cost, and these runs are about the peak.
        "--no-stores-check",
    ]);
    crate::common::assert_contains(&out, "% of peak");
    let json = common::stdout_on_small_caches(&[
        "run", "--size", &size, "--ntimes", "2", "--peak", "100GB/s", "--json", "--kernels",
        "triad", "--no-stores-check",
    ]);
    let doc: Value = serde_json::from_str(&json).unwrap();
    let peak = &doc["peak"];
    assert_eq!(peak["source"], "user");
    assert_eq!(peak["sockets_used"], 1);
    let rate = doc["measurement"]["results"][0]["best_rate_mb_s"]
        .as_f64()
        .unwrap();
    let pct = peak["percent_of_peak"]["triad"].as_f64().unwrap();
    let used = peak["used_gb_s"].as_f64().unwrap();
    assert!((pct - 100.0 * rate / 1e3 / used).abs() < 1e-9);
    // No peak known: no percentage, and the text says how to give one.
    let out = stdout(&["run", "--size", "1M", "--ntimes", "2"]);
    // Or one for whole sockets that this VM's slice does not own: none
    // either, and the line says why.
    if !out.contains("peak for the") {
        assert!(
            out.contains("theoretical peak unknown")
                || out.contains("no share of the peak: this virtual machine's CPUs are a slice"),
            "{out}"
        );
        assert!(!out.contains("% of peak"), "{out}");
    }
}

#[test]
fn capture_then_sysroot_reproduces_the_live_view() {
    let dir = crate::common::scratch_dir();
    let target = dir.path().join("node");
    membw()
        .args(["topo", "--capture", target.to_str().unwrap()])
        .assert()
        .success();
    let live = stdout(&["topo"]);
    let captured = stdout(&["topo", "--sysroot", target.to_str().unwrap()]);
    // A fixture leg gives the live view another tree's caches on purpose.
    let caches_from = std::env::var_os("MEMBW_CACHES_FROM").is_some();
    for prefix in ["CPU ", "Layout", "Caches", "Allowed", "  node"] {
        if caches_from && prefix == "Caches" {
            continue;
        }
        let pick = |s: &str| {
            s.lines()
                .filter(|l| l.starts_with(prefix))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(pick(&live), pick(&captured), "{prefix}");
    }
}

/// The clock governors, read from cpufreq (a tree with a powersave CPU),
/// and said as not exposed where there is none (the fixtures have none).
#[test]
fn clock_governors_and_turbo_are_shown() {
    let dir = common::tree("xeon-e5-2680v3-2s");
    let out = stdout(&["topo", "--sysroot", dir.path().to_str().unwrap()]);
    assert!(out.contains("Clocks     not exposed (no cpufreq"), "{out}");
    let cpu = dir.path().join("sys/devices/system/cpu");
    for id in 0..48 {
        let freq = cpu.join(format!("cpu{id}/cpufreq"));
        std::fs::create_dir_all(&freq).unwrap();
        let governor = if id < 4 { "powersave" } else { "performance" };
        std::fs::write(freq.join("scaling_governor"), governor).unwrap();
        std::fs::write(freq.join("scaling_driver"), "intel_pstate").unwrap();
    }
    std::fs::create_dir_all(cpu.join("intel_pstate")).unwrap();
    std::fs::write(cpu.join("intel_pstate/no_turbo"), "0").unwrap();
    let out = stdout(&["topo", "--sysroot", dir.path().to_str().unwrap()]);
    crate::common::assert_contains(
        &out,
        "Clocks     powersave on CPUs 0-3, performance on CPUs 4-47 (intel_pstate), turbo on",
    );
    let json: Value = serde_json::from_str(&stdout(&[
        "topo",
        "--json",
        "--sysroot",
        dir.path().to_str().unwrap(),
    ]))
    .unwrap();
    let power = &json["topology"]["power"];
    assert_eq!(power["governors"][0]["name"], "powersave", "{power}");
    assert_eq!(power["turbo"], true);
}

#[test]
fn generate_writes_a_fixture_from_a_spec() {
    let dir = crate::common::scratch_dir();
    let spec = common::fixtures_dir().join("xeon-e5-2680v3-2s.json");
    let target = dir.path().join("t");
    membw()
        .args([
            "topo",
            "--generate",
            spec.to_str().unwrap(),
            target.to_str().unwrap(),
        ])
        .assert()
        .success();
    let out = stdout(&["topo", "--sysroot", target.to_str().unwrap()]);
    crate::common::assert_contains(&out, "2 sockets · 2 NUMA nodes · 24 cores · 48 CPUs");
    usage_error(
        &["topo", "--generate", "/nonexistent.json", "x"],
        "/nonexistent.json",
    );
    // Several nodes a socket and no distance between them: refused, rather
    // than every later read of the tree warning of a distance of 0.
    let nps4 =
        std::fs::read_to_string(common::fixtures_dir().join("epyc-7742-2s-nps4.json")).unwrap();
    let mut without: Value = serde_json::from_str(&nps4).unwrap();
    without
        .as_object_mut()
        .unwrap()
        .remove("distance_same_socket");
    let bad = dir.path().join("nps4.json");
    std::fs::write(&bad, without.to_string()).unwrap();
    usage_error(
        &[
            "topo",
            "--generate",
            bad.to_str().unwrap(),
            dir.path().join("u").to_str().unwrap(),
        ],
        "distance_same_socket is missing or 0",
    );
}

#[test]
fn a_spec_takes_every_size_spelling_membw_prints_and_names_every_missing_field() {
    let dir = crate::common::scratch_dir();
    let spec = dir.path().join("node.json");
    let generate = |name: &str| {
        let tree = dir.path().join(name);
        let args = [
            "topo",
            "--generate",
            spec.to_str().unwrap(),
            tree.to_str().unwrap(),
        ];
        (args.map(String::from), tree)
    };
    // A one-socket node with the caches given as `caches` (l1d, l1i, l2, l3).
    let node = |caches: [&str; 4]| {
        let [l1d, l1i, l2, l3] = caches;
        format!(
            r#"{{"model_name": "Test CPU", "sockets": 1, "cores_per_node": 4, "cores_per_l3": 4,
                "l1d": "{l1d}", "l1i": "{l1i}", "l2": "{l2}", "l3": "{l3}",
                "distance_local": 10, "distance_remote": 20, "node_memory_gib": 16}}"#
        )
    };
    // The spelling membw itself prints (`32 KiB`), and the kernel's.
    std::fs::write(&spec, node(["32KiB", "32 KiB", "1.25MiB", "0.5M"])).unwrap();
    let (args, tree) = generate("a");
    membw().args(&args).assert().success();
    let out = stdout(&["topo", "--sysroot", tree.to_str().unwrap()]);
    crate::common::assert_contains(
        &out,
        "L1d 32 KiB × 4 · L1i 32 KiB × 4 · L2 1.3 MiB × 4 · L3 512 KiB × 1",
    );
    // Every missing field in one error, and every bad size in one.
    std::fs::write(&spec, r#"{"model_name": "Test CPU", "sockets": 1}"#).unwrap();
    let (args, _) = generate("b");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    usage_error(
        &refs,
        "missing fields: cores_per_node, cores_per_l3, l1d, l1i, l2, l3, distance_local, distance_remote, node_memory_gib",
    );
    std::fs::write(&spec, node(["32", "32K", "big", "30M"])).unwrap();
    usage_error(
        &refs,
        "l1d '32' is not a size (32K, 32KiB, 1.25MiB, 480M); l2 'big' is not a size",
    );
}

/// `membw topo --json` agrees with lscpu and numactl on this machine.
#[test]
fn agrees_with_lscpu_and_numactl() {
    let doc: Value = serde_json::from_str(&stdout(&["topo", "--json"])).unwrap();
    let d = &doc["derived"];
    let lscpu =
        |args: &[&str]| common::tool(std::process::Command::new("lscpu").args(args), "util-linux");
    if let Some(out) = lscpu(&["-p=CPU,CORE,SOCKET,NODE"]) {
        {
            let text = String::from_utf8(out.stdout).unwrap();
            let rows: Vec<Vec<&str>> = text
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| l.split(',').collect())
                .collect();
            assert_eq!(d["cpus"].as_u64().unwrap() as usize, rows.len());
            let sockets: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[2]).collect();
            assert_eq!(d["sockets"].as_u64().unwrap() as usize, sockets.len());
            let cores: std::collections::BTreeSet<(&str, &str)> =
                rows.iter().map(|r| (r[2], r[1])).collect();
            assert_eq!(d["cores"].as_u64().unwrap() as usize, cores.len());
        }
    }
    // A fixture leg gives the live view another tree's caches on purpose.
    let caches =
        lscpu(&["-C", "-J", "-B"]).filter(|_| std::env::var_os("MEMBW_CACHES_FROM").is_none());
    if let Some(out) = caches {
        {
            let caches: Value = serde_json::from_slice(&out.stdout).unwrap();
            for c in caches["caches"].as_array().unwrap() {
                let name = c["name"].as_str().unwrap();
                let ours = d["cache_levels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|l| l["name"] == name);
                let ours = ours.unwrap_or_else(|| panic!("lscpu has {name}, membw does not"));
                let all: u64 = c["all-size"].as_str().unwrap().parse().unwrap();
                let one: u64 = c["one-size"].as_str().unwrap().parse().unwrap();
                assert_eq!(ours["total"].as_u64().unwrap(), all, "{name} sum of all");
                assert_eq!(ours["size"].as_u64().unwrap(), one, "{name} instance size");
            }
        }
    }
    if let Some(out) = common::tool(std::process::Command::new("numactl").arg("-H"), "numactl") {
        {
            let text = String::from_utf8(out.stdout).unwrap();
            let available = text.lines().find(|l| l.starts_with("available:")).unwrap();
            let n: usize = available
                .split_whitespace()
                .nth(1)
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(d["numa_nodes"].as_u64().unwrap() as usize, n);
            for node in doc["topology"]["nodes"].as_array().unwrap() {
                let id = node["id"].as_u64().unwrap();
                let line = text
                    .lines()
                    .find(|l| l.starts_with(&format!("node {id} cpus:")))
                    .unwrap();
                let cpus: Vec<u64> = line
                    .split(':')
                    .nth(1)
                    .unwrap()
                    .split_whitespace()
                    .map(|c| c.parse().unwrap())
                    .collect();
                let ours: Vec<u64> = node["cpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_u64().unwrap())
                    .collect();
                assert_eq!(ours, cpus, "node {id}");
                // The distance row.
                let row = text
                    .lines()
                    .find(|l| l.trim_start().starts_with(&format!("{id}:")))
                    .unwrap();
                let dists: Vec<u64> = row
                    .split(':')
                    .nth(1)
                    .unwrap()
                    .split_whitespace()
                    .map(|c| c.parse().unwrap())
                    .collect();
                let ours: Vec<u64> = node["distances"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_u64().unwrap())
                    .collect();
                assert_eq!(ours, dists, "distances of node {id}");
            }
        }
    }
}

/// A GPU node's topology lists each NVIDIA GPU with its NUMA node and how
/// its PCIe link trained, names a link below its maximum, and a node
/// without one says so.
#[test]
fn topo_lists_the_gpus_on_the_pci_bus_and_a_link_that_trained_low() {
    let root = common::shared_tree("hgx-h100-2s");
    let out = stdout(&["topo", "--sysroot", root.to_str().unwrap()]);
    crate::common::assert_contains(&out, "4 NVIDIA on the PCI bus");
    crate::common::assert_contains(
        &out,
        "(63.0 GB/s each way) · no driver bound · --backend cuda",
    );
    let line = |address: &str| {
        out.lines()
            .find(|l| l.contains(address))
            .unwrap_or_else(|| panic!("{address}: {out}"))
            .to_string()
    };
    assert!(line("0000:18:00.0").contains("NUMA node 0"), "{out}");
    assert!(line("0000:18:00.0").contains("PCIe Gen5 x16 (63.0 GB/s each way)"));
    let low = line("0000:9a:00.0");
    crate::common::assert_contains(&low, "NUMA node 1");
    crate::common::assert_contains(
        &low,
        "Gen5 x8 (31.5 GB/s each way), trained below its Gen5 x16",
    );
    let json = stdout(&["topo", "--sysroot", root.to_str().unwrap(), "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let gpus = doc["topology"]["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 4);
    assert_eq!(gpus[2]["link"]["current"]["width"], 8);
    assert_eq!(gpus[2]["numa_node"], 1);
    let plain = common::shared_tree("xeon-e5-2680v3-2s");
    let out = stdout(&["topo", "--sysroot", plain.to_str().unwrap()]);
    crate::common::assert_contains(
        &out,
        "GPUs       none (no NVIDIA, AMD or Intel GPU on the PCI bus)",
    );
}

/// AMD's accelerators (processing-accelerator class) are listed as
/// NVIDIA's are, each with its node and link, and the backend that
/// measures them.
#[test]
fn topo_lists_every_makers_gpus_and_which_it_cannot_measure() {
    let root = common::shared_tree("epyc-mi300x-2s");
    let out = stdout(&["topo", "--sysroot", root.to_str().unwrap()]);
    crate::common::assert_contains(&out, "4 AMD on the PCI bus");
    let line = (out.lines())
        .find(|l| l.contains("0000:85:00.0"))
        .unwrap_or_else(|| panic!("{out}"));
    crate::common::assert_contains(line, "1002:74a1 Instinct MI300X · NUMA node 1");
    crate::common::assert_contains(
        line,
        "Gen4 x16 (31.5 GB/s each way), trained below its Gen5 x16",
    );
    assert!(line.ends_with("--backend hip"), "{line}");
    let json = stdout(&["topo", "--sysroot", root.to_str().unwrap(), "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let gpus = doc["topology"]["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 4);
    assert_eq!(gpus[0]["vendor"], 0x1002);
    assert_eq!(gpus[0]["class"], 0x1200);
}

/// An MI250X node (one 64-core EPYC in NPS4, four cards, eight GCDs, two
/// per NUMA node) and an MI300A node (four APUs): topo names each PCI
/// function as the GCD or APU it is, with its node and the backend.
#[test]
fn topo_names_an_mi250x_cards_gcds_and_an_mi300a_apu() {
    let root = common::shared_tree("epyc-trento-mi250x-1s");
    let out = stdout(&["topo", "--sysroot", root.to_str().unwrap()]);
    crate::common::assert_contains(&out, "8 AMD on the PCI bus");
    let gcds: Vec<&str> = (out.lines())
        .filter(|l| l.contains("1002:7408 Instinct MI250X, one GCD of two on its card"))
        .collect();
    assert_eq!(gcds.len(), 8, "{out}");
    for node in 0..4 {
        let on = |l: &&&str| l.contains(&format!("NUMA node {node} "));
        assert_eq!(gcds.iter().filter(on).count(), 2, "node {node}: {out}");
    }
    assert!(
        gcds.iter()
            .all(|l| l.contains("PCIe Gen4 x16") && l.ends_with("--backend hip"))
    );
    let root = common::shared_tree("mi300a-4s");
    let out = stdout(&["topo", "--sysroot", root.to_str().unwrap()]);
    let apus: Vec<&str> = (out.lines())
        .filter(|l| l.contains("1002:74a0 Instinct MI300A, an APU: its HBM is the node's memory"))
        .collect();
    assert_eq!(apus.len(), 4, "{out}");
    assert!(
        apus[3].contains("0003:02:00.0") && apus[3].contains("NUMA node 3"),
        "{out}"
    );
}
