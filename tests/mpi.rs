//! Across ranks: the MPI build under real `mpirun` (Open MPI), "nodes" made
//! of UTS namespaces with their own hostnames, a node slowed down on
//! purpose, a rank that hangs, and per-node files merged by `report`.
//!
//! mpirun, unshare and the MPI build are tools here: missing, they fail in
//! CI and skip locally, saying why.
//!
//! Native x86_64 only: the MPI build is the host's own, so the aarch64 run
//! under qemu-user (`--target aarch64-unknown-linux-gnu`) would only test
//! that same binary again.
#![cfg(target_arch = "x86_64")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// One multi-rank job at a time: they share two cores.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// `cargo build --features mpi` into `target/DIR` (the test run holds the
/// default target directory), with `MPICC` when given: the dev profile, as
/// the suite's own binary, which builds in a fraction of a release's time.
/// A build that fails (no libclang-dev, no MPI -dev package) skips the MPI
/// tests outside CI with cargo's first error line.
fn build_mpi(dir: &str, mpicc: Option<&str>) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = root.join("target").join(dir);
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(["build", "--features", "mpi", "--target-dir"])
        .arg(&target)
        .current_dir(root);
    if let Some(cc) = mpicc {
        cargo.env("MPICC", cc);
    }
    let out = cargo.output().unwrap();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr
            .lines()
            .find(|l| l.starts_with("error"))
            .unwrap_or("no error line");
        common::unavailable(
            format!("cargo build --features mpi into target/{dir} failed: {first}"),
            format!(".ci/run must install the MPI -dev package and libclang-dev\n{stderr}"),
        );
        return None;
    }
    Some(target.join("debug/membw"))
}

/// The MPI build named by `var` (.ci/run builds both before the suite, in
/// the suite's own target directory), or one built here into `target/DIR`.
fn prebuilt_or_build(var: &str, dir: &str, mpicc: Option<&str>) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(path.is_file(), "{var}={}: no such file", path.display());
            Some(path)
        }
        None => build_mpi(dir, mpicc),
    }
}

/// The membw built against Open MPI. None, with the reason printed, where
/// Open MPI is not installed; in CI that is a failure.
fn mpi_membw() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if !common::slow_tests("the MPI suite") {
                return None;
            }
            common::tool(Command::new("mpirun").arg("--version"), "openmpi-bin")?;
            // Open MPI that cannot start a job here (no usable transport).
            if !common::usable(mpirun().args(["-np", "1", "true"]), "openmpi-bin") {
                return None;
            }
            prebuilt_or_build("MEMBW_MPI_BINARY", "mpi", None)
        })
        .clone()
}

/// The membw built against MPICH (Debian's libmpich-dev beside Open MPI:
/// `MPICC=mpicc.mpich`).
fn mpich_membw() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if !common::slow_tests("the MPI suite") {
                return None;
            }
            common::tool(Command::new("mpicc.mpich").arg("-show"), "libmpich-dev")?;
            prebuilt_or_build("MEMBW_MPICH_BINARY", "mpich", Some("mpicc.mpich"))
        })
        .clone()
}

/// mpirun, allowed to run as root (CI runs as root).
fn mpirun() -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
    cmd
}

/// Runs a command to its end, killing it after `limit`: a hang fails the
/// test instead of stalling the run.
fn run_for(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watch = {
        let done = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < limit {
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            true
        })
    };
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(!watch.join().unwrap(), "{cmd:?} ran past {limit:?}");
    out
}

fn json(out: &std::process::Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{e}: {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `LAUNCHER membw run RUN --json`, which must succeed: its document and
/// what the ranks wrote to stderr.
fn launched_json(mut launcher: Command, membw: &Path, run: &[&str]) -> (serde_json::Value, String) {
    let out = run_for(
        launcher.arg(membw).arg("run").args(run).arg("--json"),
        Duration::from_secs(180),
    );
    common::assert_success(&out);
    (
        json(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `mpirun LAUNCH membw run RUN --json`.
fn mpi_json(membw: &Path, launch: &[&str], run: &[&str]) -> (serde_json::Value, String) {
    let mut launcher = mpirun();
    launcher.args(launch);
    launched_json(launcher, membw, run)
}

/// Without the feature, several ranks must not measure each on their own
/// unless asked to: one line, exit 2.
#[test]
fn a_build_without_mpi_refuses_to_run_as_one_of_several_ranks() {
    let out = common::membw()
        .args(["run", "--fake-source", "5"])
        .env("OMPI_COMM_WORLD_SIZE", "4")
        .env("OMPI_COMM_WORLD_RANK", "2")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "mpi") {
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("rank 2 of 4")
            && stderr.contains("--features mpi")
            && stderr.contains("--independent"),
        "{stderr}"
    );
    // Each rank on its own, when that is what the user wants.
    let out = common::membw()
        .args(["run", "--fake-source", "5", "--independent", "--json"])
        .env("OMPI_COMM_WORLD_SIZE", "4")
        .env("OMPI_COMM_WORLD_RANK", "2")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(json(&out)["measurement"]["ranks"].is_null());
    // Sweeps refuse too; a garbled launcher variable is named.
    let out = common::membw()
        .args(["sweep", "--fake-source", "5", "--threads", "1"])
        .env("PMI_SIZE", "2")
        .env("PMI_RANK", "0")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = common::membw()
        .args(["run", "--fake-source", "5"])
        .env("SLURM_STEP_NUM_TASKS", "many")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    common::assert_contains(&stderr, "SLURM_STEP_NUM_TASKS='many'");
}

#[test]
fn two_ranks_measure_together_and_rank_0_reports_every_rank() {
    // Builds (minutes of both cores) must not overlap a measurement.
    let _one = one_at_a_time();
    let Some(membw) = mpi_membw() else { return };
    // Rank 0 alone printed: one document.
    let (d, _) = mpi_json(
        &membw,
        &["-np", "2", "--bind-to", "core", "--map-by", "core"],
        &["--size", "2M", "--ntimes", "4"],
    );
    let ranks = &d["measurement"]["ranks"];
    assert_eq!(ranks["how"], "mpi");
    let list = ranks["ranks"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    let cpus: Vec<&serde_json::Value> = list.iter().map(|r| &r["cpus"]).collect();
    assert_ne!(cpus[0], cpus[1], "each rank on its own core: {cpus:?}");
    assert!(list.iter().all(|r| r["validated"] == true));
    assert!(list.iter().all(|r| r["local_rank"].is_u64()));
    assert!(ranks["overlaps"].as_array().unwrap().is_empty());
    // The table's figure is the aggregate: both ranks' elements, and a rate
    // no higher than the sum of the ranks' own bests.
    assert_eq!(d["measurement"]["array_elements"], 4_000_000);
    let triad = d["measurement"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kernel"] == "triad")
        .unwrap()["best_rate_mb_s"]
        .as_f64()
        .unwrap()
        / 1e3;
    let aggregate = ranks["aggregate_gb_s"]["triad"].as_f64().unwrap();
    let sum = ranks["sum_of_best_gb_s"]["triad"].as_f64().unwrap();
    assert!(
        (triad - aggregate).abs() < 1e-6 * aggregate,
        "{triad} vs {aggregate}"
    );
    assert!(aggregate <= sum * 1.0001, "{aggregate} > {sum}");

    // The same run as a results-file record, which report reads.
    let dir = common::scratch_dir();
    let file = dir.path().join("ranks.jsonl");
    let out = run_for(
        mpirun()
            .args(["-np", "2", "--bind-to", "core"])
            .arg(&membw)
            .args(["run", "--size", "1M", "--ntimes", "3", "-q", "-o"])
            .arg(&file),
        Duration::from_secs(120),
    );
    common::assert_success(&out);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 1, "only rank 0 writes: {text}");
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(record["source"], "mpi");
    assert_eq!(
        record["runs"][0]["ranks"]["ranks"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let report = common::stdout(&["report", file.to_str().unwrap()]);
    common::assert_contains(&report, "Ranks: 2 on 1 node");

    // Text: STREAM's table once (grep Triad: still works), then the nodes.
    let out = run_for(
        mpirun()
            .args(["-np", "2", "--bind-to", "core"])
            .arg(&membw)
            .args(["run", "--size", "2M", "--ntimes", "3"]),
        Duration::from_secs(120),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches("\nTriad:").count(), 1, "{text}");
    common::assert_contains(&text, "Ranks: 2 on 1 node");
    common::assert_contains(&text, "Slow nodes: none");
    // One truth per line: a node table with "of peak" knows the peak, and a
    // spread finding quotes the spread the summary shows.
    if text
        .lines()
        .any(|l| l.contains(" node") && l.trim_end().ends_with('%'))
    {
        assert!(!text.contains("theoretical peak unknown"), "{text}");
    }
    let spread_of = |kernel: &str| -> Option<f64> {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{kernel} ")) && l.contains("spread"))?
            .split("spread")
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    // The list of untrusted nodes under the node table quotes each node's
    // own finding (one rank's repetitions), not the aggregate's: its lines
    // are left out here.
    let mut in_node_list = false;
    let summary_lines = text.lines().filter(|l| {
        if l.starts_with("NOT TRUSTED:") && l.contains(" node") {
            in_node_list = true;
            return false;
        }
        in_node_list &= l.starts_with("  ") && l.contains(": ");
        !in_node_list
    });
    for (kernel, varied) in summary_lines.filter_map(|l| {
        let (head, tail) = l.split_once("'s repetitions varied ")?;
        Some((
            head.rsplit(' ').next()?,
            tail.split('×').next()?.parse::<f64>().ok()?,
        ))
    }) {
        let shown = spread_of(kernel).unwrap_or_else(|| panic!("{kernel}: {text}"));
        assert!(
            (shown - varied).abs() < 0.006,
            "{kernel}: {varied} vs {shown}: {text}"
        );
    }
}

#[test]
fn four_oversubscribed_ranks_run_and_their_shared_cpus_are_reported() {
    // Builds (minutes of both cores) must not overlap a measurement.
    let _one = one_at_a_time();
    let Some(membw) = mpi_membw() else { return };
    let (d, stderr) = mpi_json(
        &membw,
        &["-np", "4", "--oversubscribe", "--bind-to", "none"],
        &["--size", "1M", "--ntimes", "3", "--threads", "1"],
    );
    let ranks = &d["measurement"]["ranks"];
    assert_eq!(ranks["ranks"].as_array().unwrap().len(), 4);
    let overlaps = ranks["overlaps"].as_array().unwrap();
    assert!(
        overlaps
            .iter()
            .any(|o| o.as_str().unwrap().starts_with("ranks 0 and 1 on ")),
        "{overlaps:?}"
    );
    common::assert_contains(&stderr, "fight over those cores");
}

/// Four processes pinned to `cpu` that stream through memory until killed.
/// Sharing that CPU with them leaves a measured rank about a fifth of its
/// time, so the node is slowed about five times over: other work on a busy
/// machine (which may halve the other node) cannot flip which node is slow.
/// The measured arrays are large enough (32M elements, tens of ms a kernel)
/// that no repetition fits in one time slice, so the best repetition shows
/// the loss too.
struct Hog(Vec<std::process::Child>);

impl Hog {
    fn start(cpu: usize) -> Hog {
        let children = (0..4)
            .map(|_| {
                Command::new(assert_cmd::cargo::cargo_bin("membw"))
                    .args(["run", "--quiet", "--kernels", "triad", "--size", "8M"])
                    .args(["--ntimes", "100000", "--cpus", &cpu.to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        Hog(children)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `unshare --uts` works here (root, or a user namespace allowed).
fn uts_namespaces() -> bool {
    if !common::root_for("a hostname per rank (unshare --uts)") {
        return false;
    }
    common::tool(
        Command::new("unshare").args(["--uts", "true"]),
        "util-linux",
    )
    .is_some()
}

/// `sh -c 'hostname NAME && exec membw ARGS'` inside its own UTS namespace.
fn as_node(cmd: &mut Command, host: &str, membw: &Path, args: &[&str]) {
    cmd.args([
        "unshare",
        "--uts",
        "sh",
        "-c",
        "hostname \"$0\" && exec \"$@\"",
        host,
    ])
    .arg(membw)
    .args(args);
}

#[test]
fn ranks_on_two_named_nodes_are_grouped_and_exactly_the_slow_node_is_flagged() {
    // Builds (minutes of both cores) must not overlap a measurement.
    let _one = one_at_a_time();
    let Some(membw) = mpi_membw() else { return };
    if !uts_namespaces() {
        return;
    }
    // Rank 0 on CPU 0 as node-a, rank 1 on CPU 1 as node-b; node-b shares
    // its CPU with a memory-bound process.
    let _hog = Hog::start(1);
    let args = ["run", "--size", "32M", "--ntimes", "6", "--json"];
    let mut cmd = mpirun();
    cmd.args(["--bind-to", "core", "--map-by", "core", "-np", "1"]);
    as_node(&mut cmd, "node-a", &membw, &args);
    cmd.args([":", "-np", "1"]);
    as_node(&mut cmd, "node-b", &membw, &args);
    let out = run_for(&mut cmd, Duration::from_secs(120));
    common::assert_success(&out);
    let d = json(&out);
    let ranks = &d["measurement"]["ranks"];
    let nodes = ranks["nodes"].as_array().unwrap();
    let hosts: Vec<&str> = nodes.iter().map(|n| n["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, vec!["node-a", "node-b"]);
    let b = &ranks["ranks"].as_array().unwrap()[1];
    assert_eq!(
        (b["host"].as_str(), b["cpus"][0].as_u64()),
        (Some("node-b"), Some(1))
    );
    let slow: Vec<&str> = nodes
        .iter()
        .filter(|n| n["slow"] == true)
        .map(|n| n["host"].as_str().unwrap())
        .collect();
    assert_eq!(slow, vec!["node-b"], "{nodes:?}");
}

#[test]
fn a_rank_that_hangs_is_given_up_on_and_the_job_ends() {
    // Builds (minutes of both cores) must not overlap a measurement.
    let _one = one_at_a_time();
    let Some(membw) = mpi_membw() else { return };
    // A size no other test uses, to find this job's ranks.
    let marker = "3141593";
    let mut cmd = mpirun();
    cmd.args(["-np", "2", "--bind-to", "core"])
        .arg(&membw)
        .args([
            "run", "--size", marker, "--ntimes", "100000", "--kernels", "copy",
        ])
        .args(["--rank-timeout", "2s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    // Stop rank 1 once both are measuring.
    let started = Instant::now();
    let rank1 = loop {
        if let Some(pid) = find_rank(marker, 1) {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "rank 1 never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .args(["-STOP", &rank1.to_string()])
        .status();
    let out = {
        let pid = child.id();
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(60));
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        });
        let out = child.wait_with_output().unwrap();
        drop(killer);
        out
    };
    let _ = Command::new("kill")
        .args(["-9", &rank1.to_string()])
        .status();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "it hung: {stderr}"
    );
    assert!(
        stderr.contains("did not reach") && stderr.contains("within 2s"),
        "{stderr}"
    );
}

/// The PID of the process of MPI rank `rank` whose command line holds `marker`.
fn find_rank(marker: &str, rank: usize) -> Option<u32> {
    let want = format!("OMPI_COMM_WORLD_RANK={rank}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            return None;
        }
        let environ = std::fs::read(e.path().join("environ")).ok()?;
        environ
            .split(|b| *b == 0)
            .any(|v| v == want.as_bytes())
            .then_some(pid)
    })
}

/// Per-node files from a launcher that is not MPI (here: two runs, each in
/// its own UTS namespace) merged by `report` into one table and verdict.
#[test]
fn per_node_files_are_merged_and_the_slow_node_is_flagged() {
    if !uts_namespaces() {
        return;
    }
    let _one = one_at_a_time();
    let dir = common::scratch_dir();
    let membw = assert_cmd::cargo::cargo_bin("membw");
    for (host, cpu, slowed) in [
        ("node-a", "0", false),
        ("node-b", "1", true),
        ("node-c", "0", false),
    ] {
        let _hog = slowed.then(|| Hog::start(1));
        let mut cmd = Command::new("unshare");
        cmd.args(["--uts", "sh", "-c", "hostname \"$0\" && exec \"$@\"", host])
            .arg(&membw)
            .args([
                "run", "--json",
                // Past a 32 MiB L3, and short: the competitor halves
                // node-b's rates at any size.
                "--size", "8M", "--ntimes", "6", "--cpus", cpu,
                // About the merge: the other stores' check would only add
                // time, and auto's timing of both modes near a large L3
                // would let the loaded node pick other stores than its peers.
                "--no-stores-check", "--stores", "nt",
            ]);
        let out = run_for(&mut cmd, Duration::from_secs(60));
        common::assert_success(&out);
        std::fs::write(dir.path().join(format!("{host}.json")), &out.stdout).unwrap();
    }
    let files: Vec<String> = ["node-a", "node-b", "node-c"]
        .iter()
        .map(|h| {
            dir.path()
                .join(format!("{h}.json"))
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let mut args = vec!["report"];
    args.extend(files.iter().map(String::as_str));
    // A slow node is exit 1, for scripts, with the report printed.
    let out = common::membw().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    common::assert_contains(&stderr, "membw: slow nodes: node-b (exit 1)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("Ranks: 3 on 3 nodes (merged results files"),
        "{text}"
    );
    common::assert_contains(&text, "Slow nodes: node-b (below 90 % of the median node)");
    // SLOW, and (node-b shares its core with a competitor) maybe NOT TRUSTED.
    let slow_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.ends_with("  SLOW") || l.ends_with("  SLOW, NOT TRUSTED"))
        .collect();
    assert_eq!(slow_lines.len(), 1, "{text}");
    assert!(slow_lines[0].trim_start().starts_with("node-b"), "{text}");
    let svg = std::fs::read_to_string(dir.path().join("membw-nodes-plots/nodes.svg")).unwrap();
    assert!(svg.contains("node-b") && svg.contains("per node"));
    // Two files of one host are refused; so is a file that is not a run's JSON.
    common::usage_error(&["report", &files[0], &files[0]], "both from host node-a");
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{}").unwrap();
    common::usage_error(
        &["report", &files[0], junk.to_str().unwrap()],
        "or `membw run --json` documents, one per node",
    );
    // compare reads run documents too.
    let text = common::stdout(&["compare", &files[0], &files[1]]);
    assert!(text.contains("triad") && text.contains("B/A"), "{text}");
}

/// Ranks × threads: each rank places its threads inside the CPUs its
/// launcher bound it to, and never beyond them.
#[test]
fn each_ranks_threads_stay_inside_its_own_binding() {
    // Builds (minutes of both cores) must not overlap a measurement.
    let _one = one_at_a_time();
    let Some(membw) = mpi_membw() else { return };
    // Unbound ranks: 2 ranks × 2 threads on the node's two CPUs.
    let (d, _) = mpi_json(
        &membw,
        &["-np", "2", "--bind-to", "none"],
        &["--size", "1M", "--ntimes", "3", "--threads", "2"],
    );
    let ranks = &d["measurement"]["ranks"];
    assert!(
        ranks["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["cpus"].as_array().unwrap().len() == 2)
    );
    assert_eq!(ranks["nodes"][0]["threads"], 4);
    // Bound to one core each, two threads per rank would widen the binding.
    let out = run_for(
        mpirun()
            .args(["-np", "2", "--bind-to", "core"])
            .arg(&membw)
            .args(["run", "--size", "1M", "--ntimes", "3", "--threads", "2"]),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        // Both ranks refuse; whichever mpirun hears first is printed.
        (stderr.contains("rank 0 (") || stderr.contains("rank 1 ("))
            && stderr.contains("2 threads but only 1 CPU may be used"),
        "{stderr}"
    );
}

/// Slurm launches the same ranks: a one-node cluster that .ci/run starts
/// (.ci/slurm-single-node.sh), `srun --mpi=pmix --cpu-bind=cores`.
#[test]
fn srun_launches_ranks_that_measure_together() {
    // Builds (minutes of both cores) must not overlap a measurement.
    let _one = one_at_a_time();
    let Some(membw) = mpi_membw() else { return };
    // Slurm installed without a configuration fails here, not later.
    if !common::usable(Command::new("sinfo").args(["-h", "-o", "%t"]), "slurm-wlm") {
        return;
    }
    if !common::slurm_node_up() {
        return;
    }
    let mut launcher = Command::new("srun");
    launcher.args(["-n", "2", "--mpi=pmix", "--cpu-bind=cores"]);
    let (d, _) = launched_json(launcher, &membw, &["--size", "1M", "--ntimes", "3"]);
    let ranks = d["measurement"]["ranks"]["ranks"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(ranks.len(), 2);
    assert_ne!(ranks[0]["cpus"], ranks[1]["cpus"]);
    assert!(ranks.iter().all(|r| r["validated"] == true));
}

/// MPICH's Hydra launcher (PMI_SIZE, MPI_LOCALRANKID) with the MPICH build.
#[test]
fn mpich_ranks_measure_together_too() {
    // Builds (minutes of both cores) must not overlap a measurement.
    let _one = one_at_a_time();
    let Some(membw) = mpich_membw() else { return };
    let mut launcher = Command::new("mpirun.mpich");
    launcher.args(["-np", "2", "-bind-to", "core"]);
    let (d, _) = launched_json(launcher, &membw, &["--size", "1M", "--ntimes", "3"]);
    let ranks = d["measurement"]["ranks"]["ranks"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(ranks.len(), 2);
    assert_ne!(ranks[0]["cpus"], ranks[1]["cpus"]);
    assert_eq!(
        (
            ranks[0]["local_rank"].as_u64(),
            ranks[1]["local_rank"].as_u64()
        ),
        (Some(0), Some(1))
    );
    assert!(ranks.iter().all(|r| r["validated"] == true));
}

/// Under MPI a device backend named without an index gives each rank of a
/// node its own device, by its local rank (one rank per GPU), and each
/// rank's record names the device it drove.
#[test]
fn each_rank_of_a_node_drives_its_own_device() {
    let _one = one_at_a_time();
    let Some(membw) = mpi_membw() else { return };
    let (d, _) = mpi_json(
        &membw,
        &["-np", "2"],
        &[
            "--backend", "sim", "--array-size", "262144", "--ntimes", "3",
        ],
    );
    let list = d["measurement"]["ranks"]["ranks"].as_array().unwrap();
    let devices: Vec<(u64, &str)> = (list.iter())
        .map(|r| {
            (
                r["local_rank"].as_u64().unwrap(),
                r["device"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(devices, [(0, "sim0"), (1, "sim1")]);
    assert!(list.iter().all(|r| r["validated"] == true));
    // One rank per GCD through HIP (the fake runtime): each rank's probe
    // of hipInit is a child of the rank that never joins the job.
    let Some(hip) = common::fake_hip_runtime() else {
        return;
    };
    let mut launcher = mpirun();
    launcher
        .env("LD_LIBRARY_PATH", hip)
        .env("FAKE_HIP_DEVICES", "2");
    launcher.args(["-np", "2"]);
    let run = [
        "--backend", "hip", "--array-size", "262144", "--ntimes", "3",
    ];
    let (d, _) = launched_json(launcher, &membw, &run);
    let list = d["measurement"]["ranks"]["ranks"].as_array().unwrap();
    let devices: Vec<&str> = (list.iter())
        .map(|r| r["device"].as_str().unwrap())
        .collect();
    assert_eq!(devices, ["hip0", "hip1"], "{d}");
    assert!(list.iter().all(|r| r["validated"] == true), "{d}");
}

/// A device set under MPI is shared out among each node's ranks: two
/// ranks of `sim:0-3` drive two devices each, all four at once, each
/// device its own entry; a set that does not share out evenly is refused
/// in one line.
#[test]
fn a_rank_drives_several_devices_of_its_node() {
    let _one = one_at_a_time();
    let Some(membw) = mpi_membw() else { return };
    let run = [
        "--backend", "sim:0-3", "--array-size", "262144", "--ntimes", "3",
    ];
    let (d, _) = mpi_json(&membw, &["-np", "2"], &run);
    let text = run_for(
        mpirun().args(["-np", "2"]).arg(&membw).arg("run").args(run),
        Duration::from_secs(120),
    );
    let text = String::from_utf8_lossy(&text.stdout);
    common::assert_contains(&text, "Ranks: 2, driving 4 devices on 1 node");
    let list = d["measurement"]["ranks"]["ranks"].as_array().unwrap();
    let devices: Vec<(u64, &str)> = (list.iter())
        .map(|r| (r["rank"].as_u64().unwrap(), r["device"].as_str().unwrap()))
        .collect();
    assert_eq!(
        devices,
        [(0, "sim0"), (0, "sim1"), (1, "sim2"), (1, "sim3")]
    );
    assert!(list.iter().all(|r| r["validated"] == true), "{d}");
    // The aggregate is every device's arrays together.
    let each = list[0]["elements"].as_u64().unwrap();
    assert_eq!(d["measurement"]["array_elements"].as_u64(), Some(4 * each));

    let out = run_for(
        (mpirun().args(["-np", "3", "--oversubscribe"]).arg(&membw))
            .arg("run")
            .args(run),
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    common::assert_contains(
        &stderr,
        "4 devices do not share out evenly among the node's 3 ranks",
    );
}
