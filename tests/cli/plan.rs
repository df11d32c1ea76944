//! `--dry-run`: run, sweep and tune show their plan and measure nothing,
//! for this node or for one described by `--sysroot` (a captured tree or
//! a generated fixture), so that plans are checked on fixtures, not on
//! whatever host the tests run on.

use crate::common;

use crate::common::{stdout, usage_error};

fn xeon() -> String {
    common::fixtures_dir()
        .join("xeon-avx512-300mib-l3-vm")
        .display()
        .to_string()
}

#[test]
fn a_run_is_planned_for_a_captured_300_mib_l3_node_without_measuring() {
    let tree = xeon();
    let plan = stdout(&["run", "--dry-run", "--sysroot", &tree]);
    assert!(plan.starts_with(&format!("Plan of membw run on {tree} (nothing measured")));
    assert!(!plan.contains("Function"), "{plan}");
    crate::common::assert_contains(&plan, "threads    2 on CPUs 0-1");
    crate::common::assert_contains(&plan, "avx512 (the node's widest, from its flags)");
    // STREAM's rule on that node's 304.2 MiB of caches.
    let elements: u64 = plan
        .split("arrays     3 × ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{plan}"));
    let caches = (48 + 32 + 2048) * 2 * 1024 + 300 * 1024 * 1024;
    assert!(elements * 8 >= 4 * caches, "{plan}");
    crate::common::assert_contains(
        &plan,
        "is at least 4 × the 304.2 MiB of caches serving these CPUs: memory (STREAM's rule holds)",
    );
    assert!(plan.contains("mpirun -np 2 --cpu-list 0,1 --bind-to cpu-list:ordered"));
    // A size that sits in that L3 is named for what it measures.
    let small = stdout(&["run", "--dry-run", "--sysroot", &tree, "--size", "100k"]);
    crate::common::assert_contains(
        &small,
        "cache bandwidth; STREAM's rule for memory needs --size ",
    );
}

#[test]
fn sweeps_and_tunes_list_their_points_on_a_two_socket_fixture() {
    let tree = common::shared_tree("epyc-7742-2s-nps4");
    let tree = tree.to_str().unwrap();
    let sweep = stdout(&[
        "sweep", "--dry-run", "--sysroot", tree, "--strategy", "per-l3=1", "--threads", "8,16",
    ]);
    crate::common::assert_contains(&sweep, "2 points:");
    crate::common::assert_contains(&sweep, "CPUs 0,16,32,48,64,80,96,112 ");
    crate::common::assert_contains(&sweep, "avx2 (the node's widest, from its flags)");
    let tune = stdout(&["tune", "--dry-run", "--sysroot", tree]);
    assert!(
        tune.contains(" points:") && tune.contains("nt stores"),
        "{tune}"
    );
}

/// A sweep sizes its arrays by STREAM's rule for the CPUs its points use,
/// as `run` does for its own: `--cpunode 0` is one socket's caches, not the
/// machine's (on a 2-socket EPYC 7H12 they differ twofold).
#[test]
fn a_sweep_on_one_node_sizes_its_arrays_as_a_run_there_does() {
    let tree = common::shared_tree("epyc-7h12-2s");
    let tree = tree.to_str().unwrap();
    let run = stdout(&["run", "--dry-run", "--sysroot", tree, "--cpunode", "0"]);
    let run_elements: u64 = run
        .lines()
        .find_map(|l| l.trim().strip_prefix("arrays     3 × "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no array line: {run}"));
    let sweep_elements = |extra: &[&str]| -> Vec<u64> {
        let mut args = vec!["sweep", "--dry-run", "--sysroot", tree];
        args.extend_from_slice(extra);
        let plan = stdout(&args);
        let sizes: Vec<u64> = plan
            .lines()
            .filter_map(|l| l.split_once(" el. ")?.0.rsplit(' ').next()?.parse().ok())
            .collect();
        assert_eq!(sizes.len(), 2, "{plan}");
        sizes
    };
    let one_node = sweep_elements(&["--cpunode", "0", "--threads", "1,64"]);
    assert_eq!(one_node, [run_elements; 2]);
    // Both sockets: both sockets' caches, twice as much per array.
    let whole = sweep_elements(&["--threads", "1,128"]);
    assert_eq!(whole, [2 * run_elements; 2]);
}

#[test]
fn another_nodes_tree_is_only_planned_for() {
    let tree = xeon();
    usage_error(&["run", "--sysroot", &tree], "--dry-run");
    usage_error(&["sweep", "--sysroot", &tree], "--dry-run");
    usage_error(&["tune", "--sysroot", &tree], "add --dry-run");
}

/// STREAM's rule is one definition: on a node of small caches and one of
/// a 300 MiB L3, an array one element short of 4 × the caches is cache
/// bandwidth in the plan's arrays line and in `--stores auto`'s reason
/// (regular stores), and at 4 × the caches both say memory (nt stores);
/// the default size is on the memory side.
#[test]
fn streams_rule_is_per_array_and_every_place_agrees_at_its_boundary() {
    let small = common::shared_tree("xeon-e5-2680v3-2s");
    for tree in [xeon(), small.display().to_string()] {
        let topo = membw::topology::Topology::read(std::path::Path::new(&tree)).unwrap();
        let caches = topo.known_cache_sum(&topo.allowed_cpus).unwrap().0;
        let boundary = (4 * caches).div_ceil(8);
        let plan = |size: u64| {
            stdout(&[
                "run",
                "--dry-run",
                "--sysroot",
                &tree,
                "--size",
                &size.to_string(),
            ])
        };
        let under = plan(boundary - 1);
        assert!(under.contains(" is under 4 × the "), "{tree}: {under}");
        // STREAM's rule is a fact about sizes; the stores are decided by
        // what each kernel's arrays do: just under the rule, three arrays
        // of nearly 4 × the caches are far past them.
        assert!(
            under.contains("nt stores (auto: every kernel's arrays are at least 4 × the"),
            "{under}"
        );
        crate::common::assert_contains(&under, &format!("needs --size {boundary} or more"));
        let at = plan(boundary);
        assert!(at.contains(" is at least 4 × the "), "{tree}: {at}");
        assert!(
            at.contains("nt stores (auto: every kernel's arrays"),
            "{at}"
        );
        let default = stdout(&["run", "--dry-run", "--sysroot", &tree]);
        crate::common::assert_contains(&default, "STREAM's rule holds");
    }
}
