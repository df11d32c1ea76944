//! Page sizes and memory tiers through the real binary: explicit huge pages
//! (reserved by the test as root, given back after), the pool check's
//! one-line refusals, split and weighted-interleave policies, and `topo`'s
//! tier table on a fixture with firmware (HMAT) figures.

use crate::common;

use crate::common::{membw, shared_tree, skip, stdout, usage_error};
use std::sync::Mutex;

const POOL_2M: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";

/// The tests that reserve pages take turns.
static POOL: Mutex<()> = Mutex::new(());

/// Reserves `extra` more 2 MiB pages for the test's life and puts the pool
/// back as it was afterwards. `None` (said why) where the test cannot:
/// not root, or under qemu-user, which does not pass hugetlb mappings on.
/// In CI (root) a failing reservation fails the test.
struct Reserved {
    before: u64,
}

impl Reserved {
    fn pages(extra: u64) -> Option<Reserved> {
        if common::emulated() {
            skip("explicit huge pages are not tested under qemu-user");
            return None;
        }
        if !common::root_for(format!("reserving huge pages in {POOL_2M}")) {
            return None;
        }
        let before: u64 = std::fs::read_to_string(POOL_2M).ok()?.trim().parse().ok()?;
        if std::fs::write(POOL_2M, format!("{}\n", before + extra)).is_err() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI runs as root and must be able to reserve huge pages in {POOL_2M}"
            );
            skip(format!("cannot write {POOL_2M}"));
            return None;
        }
        let now: u64 = std::fs::read_to_string(POOL_2M)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            now >= before + extra,
            "the kernel reserved {now} of {} pages",
            before + extra
        );
        Some(Reserved { before })
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        let _ = std::fs::write(POOL_2M, format!("{}\n", self.before));
    }
}

#[test]
fn run_on_explicit_2m_pages_verifies_the_page_size_of_every_array() {
    let _turn = POOL.lock().unwrap_or_else(|e| e.into_inner());
    // 3 arrays of 8 MiB on 2 threads: 12 pages.
    let Some(_pool) = Reserved::pages(16) else {
        return;
    };
    let json = stdout(&[
        "run", "--hugepages", "2M", "--size", "1M", "--ntimes", "3", "--format", "json",
    ]);
    let d: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(d["measurement"]["hugepages"], "2M");
    let pages = d["measurement"]["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 3);
    for p in pages {
        assert_eq!(p["kernel_page_kib"], 2048, "{p}");
        assert_eq!(p["huge_share"], 1.0, "{p}");
        assert_eq!(p["held"], true, "{p}");
    }
    assert!(
        d["reproduce"]["hugepages"]
            .as_str()
            .unwrap()
            .contains("HUGETLB_MORECORE=2M")
    );
    let text = stdout(&["run", "--hugepages", "2M", "--size", "1M", "--ntimes", "2"]);
    crate::common::assert_contains(&text, "a: node 0 100%, 100% local, 2 MiB pages");
}

#[test]
fn latency_draws_one_curve_per_page_size() {
    let _turn = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(_pool) = Reserved::pages(4) else {
        return;
    };
    let json = stdout(&[
        "latency", "--sizes", "1MiB,4MiB", "--hugepages", "never,2M", "--time", "20ms", "--chase",
        "random", "--format", "json",
    ]);
    let d: serde_json::Value = serde_json::from_str(&json).unwrap();
    let records = d["records"].as_array().unwrap();
    let pages: Vec<(&str, u64)> = records
        .iter()
        .map(|r| {
            (
                r["point"]["hugepages"].as_str().unwrap(),
                r["point"]["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pages,
        [
            ("never", 1 << 20),
            ("never", 4 << 20),
            ("2M", 1 << 20),
            ("2M", 4 << 20)
        ]
    );
    for r in &records[2..] {
        assert_eq!(r["latency"]["huge_share"], 1.0, "{r}");
    }
    assert_eq!(records[0]["latency"]["huge_share"], 0.0);
}

#[test]
fn short_pools_and_unknown_sizes_are_one_line_before_anything_is_mapped() {
    // 2G elements: 16 GiB per array, 48 pages of 1 GiB that no test machine
    // has reserved.
    usage_error(
        &["run", "--hugepages", "1G", "--size", "2G"],
        "missing); reserve them: echo",
    );
    usage_error(
        &["latency", "--hugepages", "1G", "--sizes", "64GiB"],
        "hugepages-1048576kB/nr_hugepages",
    );
    usage_error(&["run", "--hugepages", "3M"], "unknown page size '3M'");
    usage_error(&["run", "--hugepages", "thp,2M"], "run takes one page size");
    usage_error(
        &["tune", "--hugepages", "thp,2M"],
        "tune takes one page size",
    );
    usage_error(
        &["latency", "--numa-matrix", "--hugepages", "thp,2M"],
        "take one page size",
    );
}

#[test]
fn split_and_weighted_policies_refuse_bad_shares_and_hold_their_shares() {
    usage_error(&["run", "--mem", "split:0=50%"], "add up to 50 %");
    usage_error(
        &["run", "--mem", "split:0=50%,0=50%"],
        "node 0 is given twice",
    );
    usage_error(&["run", "--mem", "split:9=100%"], "node 9 does not exist");
    usage_error(&["run", "--mem", "weighted-interleave:9"], "node 9");
    usage_error(
        &[
            "sweep", "--fake-source", "4", "--far-share", "0,10", "--far-node", "9",
        ],
        "--far-node 9: node 9 does not exist",
    );
    usage_error(
        &[
            "sweep", "--fake-source", "4", "--far-share", "0,101", "--far-node", "0",
        ],
        "'101' is not a share of 0 to 100 %",
    );
    if !common::mbind_works() {
        return;
    }
    for mem in [
        "split:0=100%", "weighted-interleave:0", "a=split:0=100%,b=local",
    ] {
        let out = membw()
            .args([
                "run", "--size", "1M", "--ntimes", "2", "--mem", mem, "--format", "json",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if mem.starts_with("weighted") && stderr.contains("Linux 6.9") {
            skip(format!("this kernel has no weighted interleave: {stderr}"));
            continue;
        }
        assert!(out.status.success(), "{mem}: {stderr}");
        let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for p in d["measurement"]["pages"].as_array().unwrap() {
            assert_eq!(p["held"], true, "{mem}: {p}");
        }
    }
}

#[test]
fn topo_shows_the_tiers_firmware_reports() {
    let root = shared_tree("xeon-6-cxl-1s");
    let root = root.to_str().unwrap();
    let text = stdout(&["topo", "--sysroot", root]);
    crate::common::assert_contains(
        &text,
        "Memory tiers (bandwidth and latency as firmware reports them, ACPI HMAT)",
    );
    let row = |node: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(node))
            .unwrap_or_else(|| panic!("no row {node} in {text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("0 "), "0 cpu+memory 256 GiB 307.2 307.2 110 110 0 - 5");
    assert_eq!(row("1 "), "1 memory 256 GiB 61.4 61.4 260 270 0 - 1");
    crate::common::assert_contains(&text, "Interleave weights 0=5,1=1");
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&["topo", "--sysroot", root, "--json"])).unwrap();
    let far = &json["tiers"][1];
    assert_eq!(far["kind"], "memory");
    assert_eq!(far["firmware_read_gb_s"], 61.44);
    assert_eq!(far["firmware_write_latency_ns"], 270);
    assert_eq!(json["topology"]["nodes"][1]["hugepages"][0]["free"], 16);
}

#[test]
fn weights_are_put_back_after_sigterm() {
    const WEIGHT: &str = "/sys/kernel/mm/mempolicy/weighted_interleave/node0";
    let Ok(before) = std::fs::read_to_string(WEIGHT) else {
        skip("this kernel has no weighted interleave (Linux 6.9+)");
        return;
    };
    if common::emulated() {
        skip("qemu-user does not pass signals' timing on faithfully enough");
        return;
    }
    usage_error(&["run", "--weights", "0=0"], "not 1-255");
    usage_error(&["run", "--weights", "9=1"], "node 9 does not exist");
    if !nix_root() {
        // The refusal itself is a unit test (topology::weights).
        skip("not root: --weights is refused, as it should be");
        return;
    }
    let want = if before.trim() == "9" { "8" } else { "9" };
    let child = common::membw_process()
        .args([
            "run", "--size", "4M", "--ntimes", "400", "--mem", "weighted-interleave:0", "--weights",
        ])
        .arg(format!("0={want}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until membw has written the weight, then stop it.
    let start = std::time::Instant::now();
    while std::fs::read_to_string(WEIGHT).unwrap().trim() != want {
        assert!(
            start.elapsed().as_secs() < 20,
            "membw never wrote the weight"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        std::fs::read_to_string(WEIGHT).unwrap(),
        before,
        "weights not restored; membw said: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn nix_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
