//! `membw place` and the placement/memory-policy flags of `membw run`,
//! end to end.

use crate::common;

use crate::common::{stdout, usage_error};

use serde_json::Value;

#[test]
fn place_shows_threads_and_every_spelling() {
    let dir = common::shared_tree("epyc-7742-2s-nps4");
    let root = dir.to_str().unwrap();
    let out = stdout(&[
        "place", "--sysroot", root, "--places", "{0:1}:8:2", "--mem", "bind:1",
    ]);
    crate::common::assert_contains(&out, "Threads    8 on CPUs 0,2,4,6,8,10,12,14");
    assert!(out.contains("OMP_NUM_THREADS=8 OMP_PLACES='{0}:8:2' OMP_PROC_BIND=close"));
    assert!(out.contains("likwid-pin -c 0,2,4,6,8,10,12,14"));
    assert!(out.contains("numactl --physcpubind=0,2,4,6,8,10,12,14 --membind=1"));
    assert!(out.contains("srun -n 8 --cpu-bind=map_cpu:0,2,4,6,8,10,12,14"));
    assert!(out.contains("taskset -c 0,2,4,6,8,10,12,14"));
    let doc: Value = serde_json::from_str(&stdout(&[
        "place", "--sysroot", root, "--strategy", "per-numa=1", "--json",
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
            "place", "--sysroot", root, "--places", "cores", "--cpus", "0",
        ],
        "cannot be used with",
    );
    usage_error(
        &["place", "--sysroot", root, "--bind", "spread"],
        "--places",
    );
    usage_error(
        &[
            "place", "--sysroot", root, "--places", "cores", "--bind", "loose",
        ],
        "unknown binding 'loose'",
    );
    usage_error(
        &["place", "--sysroot", root, "--places", "{0},{24}"],
        "--smt",
    );
    usage_error(
        &["place", "--sysroot", root, "--pin", "S2:0"],
        "no such socket",
    );
    // `--strategy spread` past the cores is the default placement (cores
    // first, then siblings), labelled so: no refusal (tests/cli/labels.rs).
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
    if !common::mbind_works() {
        return;
    }
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
        // No page warning (a short kernel's timing warning, or other work
        // on a busy test machine, is not the point here).
        assert!(
            m["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|w| !w.as_str().unwrap().contains("page")),
            "{policy}: {}",
            m["warnings"]
        );
    }
}

#[test]
fn run_header_shows_placement_policy_and_reproduction() {
    if !common::mbind_works() {
        return;
    }
    let out = stdout(&[
        "run", "--size", "1M", "--ntimes", "2", "--strategy", "compact", "--threads", "1", "--mem",
        "interleave:all", "--hugepages", "never",
    ]);
    crate::common::assert_contains(&out, "Placement: --strategy compact --threads 1");
    crate::common::assert_contains(&out, "Memory policy: interleave:");
    assert!(out.contains("Hugepages: never"));
    assert!(out.contains("Reproduce this placement:"));
    crate::common::assert_contains(&out, "numactl --physcpubind=0 --interleave=");
    let doc = run_json(&["--pin", "N:0", "--hugepages", "thp"]);
    assert_eq!(doc["measurement"]["hugepages"], "thp");
    assert_eq!(doc["measurement"]["threads"].as_array().unwrap().len(), 1);
    assert_eq!(doc["reproduce"]["likwid_pin"], "likwid-pin -c 0");
}

/// Runs membw with extra environment variables; returns (exit code, stdout, stderr).
fn with_env(vars: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = common::membw();
    for name in [
        "OMP_NUM_THREADS", "OMP_PLACES", "OMP_PROC_BIND", "GOMP_CPU_AFFINITY", "KMP_AFFINITY",
    ] {
        cmd.env_remove(name);
    }
    let out = cmd.envs(vars.iter().copied()).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn openmp_gnu_and_intel_variables_place_threads_unless_a_flag_does() {
    let root = common::shared_tree("xeon-e5-2680v3-2s");
    let fixture = ["place", "--sysroot", root.to_str().unwrap(), "--json"];
    let cpus = |vars: &[(&str, &str)], more: &[&str]| -> (Vec<u64>, String) {
        let args: Vec<&str> = fixture.iter().chain(more).copied().collect();
        let (code, out, err) = with_env(vars, &args);
        assert_eq!(code, Some(0), "{vars:?} {more:?}: {err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        let cpus = doc["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["cpu"].as_u64().unwrap())
            .collect();
        (cpus, doc["request"].as_str().unwrap().to_string())
    };
    // 2 sockets × 12 cores × 2 threads: CPU c and c + 24 are siblings.
    let (c, why) = cpus(
        &[
            ("OMP_NUM_THREADS", "4"),
            ("OMP_PLACES", "cores"),
            ("OMP_PROC_BIND", "spread"),
        ],
        &[],
    );
    assert_eq!(c, [0, 6, 12, 18]);
    assert_eq!(
        why,
        "from environment OMP_NUM_THREADS=4 OMP_PLACES=cores OMP_PROC_BIND=spread"
    );
    let (c, _) = cpus(&[("GOMP_CPU_AFFINITY", "0 2 4-10:2")], &[]);
    assert_eq!(c, [0, 2, 4, 6, 8, 10]);
    let (c, _) = cpus(
        &[("KMP_AFFINITY", "granularity=fine,explicit,proclist=[3,1]")],
        &[],
    );
    assert_eq!(c, [3, 1]);
    // Intel's compact fills a core's hardware threads first; scatter deals sockets.
    let (c, _) = cpus(
        &[("KMP_AFFINITY", "compact"), ("OMP_NUM_THREADS", "3")],
        &[],
    );
    assert_eq!(c, [0, 24, 1]);
    let (c, _) = cpus(
        &[("KMP_AFFINITY", "scatter"), ("OMP_NUM_THREADS", "3")],
        &[],
    );
    assert_eq!(c, [0, 12, 1]);
    // The flag wins and the header says so; --threads wins over OMP_NUM_THREADS.
    let (c, why) = cpus(
        &[("OMP_PLACES", "{5}"), ("OMP_NUM_THREADS", "1")],
        &["--cpus", "7,8", "--threads", "2"],
    );
    assert_eq!(c, [7, 8]);
    crate::common::assert_contains(
        &why,
        "not used: OMP_NUM_THREADS=1 (--threads wins), OMP_PLACES={5} (the placement flag wins)",
    );
    // The same grammars as flags.
    let (c, _) = cpus(&[], &["--kmp-affinity", "scatter", "--threads", "2"]);
    assert_eq!(c, [0, 12]);
    // --ignore-env.
    let (c, _) = cpus(&[("OMP_NUM_THREADS", "1")], &["--ignore-env"]);
    assert_eq!(c.len(), 24);
    // A value membw cannot parse is an error naming the variable.
    for (name, value) in [
        ("OMP_NUM_THREADS", "0"),
        ("OMP_PLACES", "corez"),
        ("OMP_PROC_BIND", "sideways"),
        ("GOMP_CPU_AFFINITY", "0-x"),
        ("KMP_AFFINITY", "granularity=atom,compact"),
    ] {
        let args: Vec<&str> = fixture[..3].to_vec();
        let (code, out, err) = with_env(&[(name, value)], &args);
        assert_eq!(code, Some(2), "{name}={value}: {err}");
        assert!(out.is_empty());
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        crate::common::assert_contains(&err, &format!("environment {name} '{value}'"));
    }
}

#[test]
fn run_follows_omp_num_threads_and_says_so() {
    let (code, out, err) = with_env(
        &[("OMP_NUM_THREADS", "1")],
        &["run", "--fake-source", "4", "--size", "1M", "--ntimes", "2"],
    );
    assert_eq!(code, Some(0), "{err}");
    crate::common::assert_contains(&out, "Number of Threads counted = 1");
    crate::common::assert_contains(&out, "OMP_NUM_THREADS=1 from environment");
    crate::common::assert_contains(&out, "GOMP_CPU_AFFINITY='");
    crate::common::assert_contains(&out, "KMP_AFFINITY=granularity=fine,explicit,proclist=[");
}

#[test]
fn user_counts_are_bounded_before_anything_is_allocated() {
    for (flag, value) in [
        ("--pin", "E:N:4294967296:1:1"),
        ("--places", "{0:65536}:65536"),
        ("--places", "{0:65536,!0:65536}"),
        ("--gomp-affinity", "0"),
        ("--kmp-affinity", "compact"),
    ] {
        usage_error(&["place", flag, value, "--threads", "4294967295"], "");
        if !flag.ends_with("affinity") {
            usage_error(&["place", flag, value], "");
        }
    }
    usage_error(&["place", "--threads", "4294967295"], "threads but only");
    usage_error(&["run", "--size", "0.5"], "whole number of elements");
    usage_error(
        &["run", "--peak", "1e308TB/s"],
        "outside 0.1 GB/s to 1 PB/s",
    );
    usage_error(
        &["run", "--peak", "1e-300GB/s"],
        "outside 0.1 GB/s to 1 PB/s",
    );
    let dir = crate::common::scratch_dir();
    let spec = std::fs::read_to_string(common::fixtures_dir().join("epyc-7h12-2s.json")).unwrap();
    for (from, to, needle) in [
        (
            "\"cores_per_l3\": 4",
            "\"cores_per_l3\": 0",
            "cores_per_l3 must be at least 1",
        ),
        (
            "\"sockets\": 2",
            "\"sockets\": 1000000000",
            "more than 65537 CPUs",
        ),
    ] {
        assert!(spec.contains(from), "{from}");
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, spec.replace(from, to)).unwrap();
        let tree = dir.path().join("tree");
        usage_error(
            &[
                "topo",
                "--generate",
                bad.to_str().unwrap(),
                tree.to_str().unwrap(),
            ],
            needle,
        );
        assert!(!tree.exists(), "nothing written");
    }
}

#[test]
fn run_refuses_every_list_with_one_line_pointing_to_sweep() {
    for args in [
        &["run", "--threads", "1-2"][..],
        &["run", "--strategy", "compact,spread"],
        &["run", "--stores", "regular,nt"],
        &["run", "--mem", "local", "--mem", "interleave:all"],
        &["run", "--hugepages", "thp,2M"],
    ] {
        usage_error(args, "membw sweep --");
    }
    // Sweep's sizes are working sets per thread, not elements per array:
    // a list of array sizes is told a loop of runs that report together.
    usage_error(
        &["run", "--array-size", "1M,2M"],
        "for s in 1M 2M; do membw run --size $s -o sizes.jsonl; done",
    );
}
