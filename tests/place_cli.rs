//! `membw place` and the placement/memory-policy flags of `membw run`,
//! end to end.

mod common;

use common::{stdout, usage_error};

use serde_json::Value;

#[test]
fn place_shows_threads_and_every_spelling() {
    let dir = common::shared_tree("epyc-7742-2s-nps4");
    let root = dir.to_str().unwrap();
    let out = stdout(&[
        "place",
        "--sysroot",
        root,
        "--places",
        "{0:1}:8:2",
        "--mem",
        "bind:1",
    ]);
    assert!(
        out.contains("Threads    8 on CPUs 0,2,4,6,8,10,12,14"),
        "{out}"
    );
    assert!(out.contains("OMP_NUM_THREADS=8 OMP_PLACES='{0}:8:2' OMP_PROC_BIND=close"));
    assert!(out.contains("likwid-pin -c 0,2,4,6,8,10,12,14"));
    assert!(out.contains("numactl --physcpubind=0,2,4,6,8,10,12,14 --membind=1"));
    assert!(out.contains("srun --cpu-bind=map_cpu:0,2,4,6,8,10,12,14"));
    assert!(out.contains("taskset -c 0,2,4,6,8,10,12,14"));
    let doc: Value = serde_json::from_str(&stdout(&[
        "place",
        "--sysroot",
        root,
        "--strategy",
        "per-numa=1",
        "--json",
    ]))
    .unwrap();
    let nodes: Vec<u64> = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["node"].as_u64().unwrap())
        .collect();
    assert_eq!(nodes, (0..8).collect::<Vec<u64>>());
    assert_eq!(
        doc["spellings"]["openmp"],
        "OMP_NUM_THREADS=8 OMP_PLACES='{0}:8:16' OMP_PROC_BIND=close"
    );
}

#[test]
fn placement_errors_are_one_line_with_exit_2() {
    let dir = common::shared_tree("xeon-e5-2680v3-2s");
    let root = dir.to_str().unwrap();
    usage_error(
        &["place", "--sysroot", root, "--places", "{0:4}:8:x"],
        "column 9",
    );
    usage_error(
        &[
            "place",
            "--sysroot",
            root,
            "--places",
            "cores",
            "--cpus",
            "0",
        ],
        "cannot be used with",
    );
    usage_error(
        &["place", "--sysroot", root, "--bind", "spread"],
        "--places",
    );
    usage_error(
        &[
            "place",
            "--sysroot",
            root,
            "--places",
            "cores",
            "--bind",
            "loose",
        ],
        "unknown binding 'loose'",
    );
    usage_error(
        &[
            "place",
            "--sysroot",
            root,
            "--places",
            "cores",
            "--threads",
            "30",
        ],
        "--smt",
    );
    usage_error(
        &["place", "--sysroot", root, "--pin", "S2:0"],
        "no such socket",
    );
    usage_error(
        &[
            "place",
            "--sysroot",
            root,
            "--strategy",
            "spread",
            "--threads",
            "30",
        ],
        "--smt",
    );
    usage_error(
        &["place", "--sysroot", root, "--cpunode", "5"],
        "--cpunode '5'",
    );
    usage_error(
        &["place", "--sysroot", root, "--mem", "bind:2"],
        "node 2 does not exist (nodes: 0-1)",
    );
    usage_error(&["run", "--mem", "bind:99"], "node 99 does not exist");
    usage_error(&["run", "--mem", "spread:0"], "unknown policy");
    usage_error(
        &["run", "--places", "{0}", "--pin", "0"],
        "cannot be used with",
    );
}

fn run_json(extra: &[&str]) -> Value {
    let mut args = vec!["run", "--size", "1M", "--ntimes", "2", "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&stdout(&args)).unwrap()
}

#[test]
fn memory_policies_are_applied_and_verified() {
    let topo = membw::topology::Topology::live().unwrap();
    let mems = topo.allowed_mems.ids().to_vec();
    let node = mems[0];
    // What each array's policy promises, computed from this host's nodes.
    let check = |policy: &str, kind: &str, p: &Value| {
        let share = |n: usize| p["nodes"][n.to_string()].as_f64().unwrap_or(0.0);
        match kind {
            "bind" | "preferred" => assert!((share(node) - 1.0).abs() < 1e-9, "{policy}: {p}"),
            "interleave" => {
                // Round-robin over every allowed node: each holds its share.
                let even = 1.0 / mems.len() as f64;
                for &n in &mems {
                    assert!((share(n) - even).abs() <= 0.1, "{policy}: node {n}: {p}");
                }
            }
            _ => assert_eq!(p["local_share"], 1.0, "{policy}: {p}"),
        }
        let total: f64 = mems.iter().map(|&n| share(n)).sum();
        assert!((total - 1.0).abs() < 1e-9, "{policy}: {p}");
    };
    for (policy, kinds) in [
        (format!("bind:{node}"), ["bind"; 3]),
        ("interleave:all".to_string(), ["interleave"; 3]),
        (format!("preferred:{node}"), ["preferred"; 3]),
        (
            format!("a=bind:{node},b=interleave:all,c=local"),
            ["bind", "interleave", "local"],
        ),
        ("local".to_string(), ["local"; 3]),
    ] {
        let doc = run_json(&["--mem", &policy]);
        let m = &doc["measurement"];
        assert_eq!(m["validation"]["passed"], true, "{policy}");
        let pages = m["pages"].as_array().unwrap();
        assert_eq!(pages.len(), 3, "{policy}");
        for (p, kind) in pages.iter().zip(kinds) {
            assert_eq!(p["held"], true, "{policy}: {p}");
            assert_eq!(p["pages_missing"], 0, "{policy}: {p}");
            check(&policy, kind, p);
        }
        assert!(
            m["warnings"].as_array().unwrap().is_empty(),
            "{policy}: {}",
            m["warnings"]
        );
    }
}

#[test]
fn run_header_shows_placement_policy_and_reproduction() {
    let out = stdout(&[
        "run",
        "--size",
        "1M",
        "--ntimes",
        "2",
        "--strategy",
        "compact",
        "--threads",
        "1",
        "--mem",
        "interleave:all",
        "--hugepages",
        "never",
    ]);
    assert!(
        out.contains("Placement: --strategy compact --threads 1"),
        "{out}"
    );
    assert!(out.contains("Memory policy: interleave:"), "{out}");
    assert!(out.contains("Hugepages: never"));
    assert!(out.contains("Reproduce this placement:"));
    assert!(
        out.contains("numactl --physcpubind=0 --interleave="),
        "{out}"
    );
    let doc = run_json(&["--pin", "N:0", "--hugepages", "thp"]);
    assert_eq!(doc["measurement"]["hugepages"], "thp");
    assert_eq!(doc["measurement"]["threads"].as_array().unwrap().len(), 1);
    assert_eq!(doc["reproduce"]["likwid_pin"], "likwid-pin -c 0");
}
