//! The topology model on fixture trees of machines users have, on the live
//! capture of a development VM, and on broken trees.

use crate::common;

use crate::common::{MACHINES, topology, tree};
use membw::peak::{self, PeakRequest, PeakSource};
use membw::report::topo::derive;
use membw::topology::Topology;
use membw::topology::cpulist::IdSet;
use membw::units::Bytes;
use std::fs;

const MIB: u64 = 1 << 20;

fn set(list: &str) -> IdSet {
    IdSet::new(membw::topology::cpulist::parse_list(list).unwrap())
}

#[test]
fn every_fixture_parses_and_is_consistent() {
    for name in MACHINES {
        let t = topology(name);
        let spec = common::spec(name);
        assert_eq!(t.cpus.len(), spec.cpus(), "{name}");
        assert_eq!(t.cores().len(), spec.cores(), "{name}");
        assert_eq!(t.packages().len(), spec.sockets, "{name}");
        assert_eq!(t.allowed_cpus, t.online_cpus(), "{name}");
        // Every CPU sits in exactly one node, and the distance matrix is square.
        let in_nodes: usize = t.nodes.iter().map(|n| n.cpus.len()).sum();
        assert_eq!(in_nodes, t.cpus.len(), "{name}");
        for n in &t.nodes {
            assert_eq!(n.distances.len(), t.nodes.len(), "{name} node {}", n.id);
            assert_eq!(t.distance(n.id, n.id), Some(10), "{name}");
        }
    }
}

#[test]
fn epyc_7742_nps4_has_eight_nodes_of_sixteen_cores() {
    let t = topology("epyc-7742-2s-nps4");
    let d = derive(&t);
    assert_eq!((d.sockets, d.numa_nodes, d.cores, d.cpus), (2, 8, 128, 256));
    assert!(d.smt);
    assert_eq!(t.cpu(0).unwrap().siblings, set("0,128"));
    assert_eq!(t.cpu(200).unwrap().siblings, set("72,200"));
    // NUMA node of CPUs: 16 cores per node, siblings on the same node.
    assert_eq!(t.cpu(17).unwrap().node, 1);
    assert_eq!(t.cpu(200).unwrap().node, 4);
    assert_eq!(t.cpu(255).unwrap().node, 7);
    assert_eq!(t.node(3).unwrap().cpus, set("48-63,176-191"));
    assert_eq!(t.cpu(64).unwrap().package, 1);
    // numactl -H on such a node: 10 local, 12 within the socket, 32 across.
    assert_eq!(t.distance(0, 1), Some(12));
    assert_eq!(t.distance(2, 3), Some(12));
    assert_eq!(t.distance(0, 4), Some(32));
    assert_eq!(t.distance(7, 0), Some(32));
    // L3 per 4-core CCX.
    assert_eq!(d.llc_domains.len(), 32);
    assert_eq!(d.llc_domains[0], set("0-3,128-131"));
    assert!(d.llc_domains.iter().all(|l| l.len() == 8));
}

#[test]
fn epyc_7h12_cache_sum_matches_lscpu_sum_of_all() {
    let t = topology("epyc-7h12-2s");
    let d = derive(&t);
    let level = |name: &str| {
        d.cache_levels
            .iter()
            .find(|l| l.name == name)
            .unwrap()
            .total
    };
    assert_eq!(level("L1d"), Bytes(4 * MIB));
    assert_eq!(level("L1i"), Bytes(4 * MIB));
    assert_eq!(level("L2"), Bytes(64 * MIB));
    assert_eq!(level("L3"), Bytes(512 * MIB));
    assert_eq!(d.cache_sum, Some(Bytes(584 * MIB)));
    // The CPUs sharing an L3: one 4-core CCX and its SMT siblings.
    assert_eq!(d.llc_domains.len(), 32);
    assert_eq!(d.llc_domains[1], set("4-7,132-135"));
    // Cache sum for the CPUs of one CCX: 4 × (32+32+512) KiB + 16 MiB.
    assert_eq!(
        t.known_cache_sum(&set("4-7")),
        Ok(Bytes(4 * 576 * 1024 + 16 * MIB))
    );
    assert_eq!(t.llc_sum(&set("0,4")), Bytes(32 * MIB));
    assert_eq!((d.numa_nodes, d.sockets, d.cores), (2, 2, 128));
}

#[test]
fn intel_two_socket_nodes_have_their_distances() {
    let t = topology("xeon-e5-2680v3-2s");
    assert_eq!(t.distance(0, 1), Some(21));
    assert_eq!(t.node(1).unwrap().cpus, set("12-23,36-47"));
    assert_eq!(t.llc_domains(), vec![set("0-11,24-35"), set("12-23,36-47")]);
    assert_eq!(t.threads_per_core(), 2);

    let t = topology("xeon-e5-2650v3-2s-noht");
    assert_eq!(t.distance(1, 0), Some(11));
    assert_eq!(t.threads_per_core(), 1);
    assert!(!derive(&t).smt);
    assert_eq!(t.cpu(13).unwrap().node, 1);
}

#[test]
fn a_kernel_without_numa_gives_one_made_up_node() {
    let t = topology("xeon-gold-6248-1s-nonuma");
    assert!(!t.numa_reported);
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.nodes[0].cpus, set("0-39"));
    assert_eq!(t.nodes[0].distances, vec![10]);
    assert_eq!(t.allowed_mems, set("0"));
}

#[test]
fn the_captured_development_vm_reads_back() {
    let t = Topology::read(&common::fixtures_dir().join("live-vm")).unwrap();
    let d = derive(&t);
    assert_eq!((d.sockets, d.numa_nodes, d.cores, d.cpus), (1, 1, 2, 2));
    let level = |name: &str| {
        d.cache_levels
            .iter()
            .find(|l| l.name == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (level("L1d").size, level("L1d").instances),
        (Some(Bytes(48 * 1024)), 2)
    );
    assert_eq!(
        (level("L3").size, level("L3").instances),
        (Some(Bytes(32 * MIB)), 1)
    );
    assert_eq!(t.cpu_info.model_name.as_deref(), Some("AMD EPYC"));
    assert!(t.has_flag("avx512f"));
}

#[test]
fn peak_sources_are_tried_in_order() {
    // 7H12 fixture has SMBIOS DIMMs: 8 per socket at 3200 MT/s.
    let t = topology("epyc-7h12-2s");
    let p = peak::estimate(&t, &PeakRequest::default()).unwrap();
    assert_eq!(p.source, PeakSource::Smbios);
    assert!((p.node_gb_s() - 409.6).abs() < 1e-9);
    assert!((p.for_sockets(1) - 204.8).abs() < 1e-9);
    // The user overrides everything.
    let p = peak::estimate(
        &t,
        &PeakRequest::Node(peak::GivenRate {
            gb_s: 300.0,
            unit: true,
        }),
    )
    .unwrap();
    assert_eq!((p.source, p.per_socket_gb_s), (PeakSource::User, 150.0));
    // 7742 fixture has no DIMMs: the built-in table.
    let t = topology("epyc-7742-2s-nps4");
    let p = peak::estimate(&t, &PeakRequest::default()).unwrap();
    assert_eq!(p.source, PeakSource::Table);
    assert!((p.node_gb_s() - 409.6).abs() < 1e-9);
    // This VM's model name is just "AMD EPYC" and it has no SMBIOS: the
    // table finds the chip by CPUID family and model (26/2, Turin).
    let t = Topology::read(&common::fixtures_dir().join("live-vm")).unwrap();
    assert_eq!(t.cpu_info.model_name.as_deref(), Some("AMD EPYC"));
    let p = peak::estimate(&t, &PeakRequest::default()).unwrap();
    assert!(
        p.detail.contains("by CPUID family 26, model 2") && p.detail.contains("Turin"),
        "{}",
        p.detail
    );
    // Without family and model it is unknown, and the reason says so.
    let mut t = t;
    (t.cpu_info.family, t.cpu_info.model) = (None, None);
    assert!(peak::estimate(&t, &PeakRequest::default()).is_none());
    let why = peak::unknown_reason(&t);
    assert!(
        why.contains("'AMD EPYC' is not in the built-in table")
            && why.contains("--channels N --mts R"),
        "{why}"
    );
}

#[test]
fn aarch64_parts_are_found_by_implementer_and_part() {
    let dir = tree("xeon-e5-2650v3-2s-noht");
    std::fs::write(
        dir.path().join("proc/cpuinfo"),
        "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n\n",
    )
    .unwrap();
    let t = Topology::read(dir.path()).unwrap();
    assert_eq!(t.cpu_info.implementer.as_deref(), Some("0x41"));
    assert!(t.has_flag("asimd"));
    let p = peak::estimate(&t, &PeakRequest::default()).unwrap();
    assert_eq!(p.source, PeakSource::Table);
    assert!(p.detail.contains("Grace"), "{}", p.detail);
    assert_eq!(p.node_gb_s(), 1024.0);
}

/// Broken trees degrade to "unknown" values; they never panic.
#[test]
fn malformed_trees_degrade_gracefully() {
    let dir = tree("xeon-e5-2680v3-2s");
    let root = dir.path();
    let cpu = root.join("sys/devices/system/cpu");
    let node = root.join("sys/devices/system/node");
    fs::write(node.join("node0/cpulist"), "zz-top\n").unwrap();
    fs::remove_dir_all(node.join("node1")).unwrap();
    fs::remove_file(cpu.join("cpu3/cache/index3/shared_cpu_list")).unwrap();
    fs::write(cpu.join("cpu4/cache/index2/size"), "lots\n").unwrap();
    fs::write(cpu.join("cpu5/topology/thread_siblings_list"), "1-\n").unwrap();
    fs::remove_file(cpu.join("cpu5/topology/core_cpus_list")).unwrap();
    fs::write(cpu.join("cpu6/topology/physical_package_id"), "-1\n").unwrap();
    fs::write(root.join("proc/meminfo"), "garbage\n").unwrap();
    fs::write(root.join("proc/self/status"), "Cpus_allowed_list:\t!!\n").unwrap();
    let t = Topology::read(root).unwrap();
    assert_eq!(t.cpus.len(), 48);
    assert!(t.node(0).unwrap().cpus.is_empty());
    assert!(t.node(1).unwrap().cpus.is_empty() && t.node(1).unwrap().mem_total.is_none());
    assert_eq!(t.cpu(5).unwrap().siblings, set("5"));
    assert_eq!(t.cpu(6).unwrap().package, 0);
    assert!(t.caches.iter().any(|c| c.level == 2 && c.size.is_none()));
    assert!(t.caches.iter().any(|c| c.level == 3 && c.cpus == set("3")));
    assert!(t.memory.available.is_none());
    assert_eq!(
        t.allowed_cpus.len(),
        48,
        "unparsable mask falls back to online CPUs"
    );
    // The text view still renders.
    let text = membw::report::topo::text(&membw::report::topo::TopoView::bare(&t));
    assert!(text.contains("unknown"));

    // No CPU at all is an error with a message, not a panic.
    let empty = crate::common::scratch_dir();
    let err = Topology::read(empty.path()).unwrap_err();
    crate::common::assert_contains(&err, "no CPUs found");
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const FILES: [&str; 8] = [
        "sys/devices/system/cpu/online",
        "sys/devices/system/cpu/cpu1/topology/thread_siblings_list",
        "sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list",
        "sys/devices/system/cpu/cpu2/cache/index0/size",
        "sys/devices/system/node/online",
        "sys/devices/system/node/node1/distance",
        "sys/devices/system/node/node0/meminfo",
        "proc/self/status",
    ];

    /// One tree for every case, spoiled one file at a time and put back;
    /// held by the test so that it is removed when the test ends.
    #[test]
    fn random_file_contents_never_panic() {
        let tree = tree("xeon-e5-2650v3-2s-noht");
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(64));
        let cases = (0usize..FILES.len(), "\\PC{0,30}");
        let outcome = runner.run(&cases, |(which, junk)| {
            let path = tree.path().join(FILES[which]);
            let original = fs::read(&path).unwrap();
            fs::write(&path, junk).unwrap();
            let read = Topology::read(tree.path());
            fs::write(&path, original).unwrap();
            if let Ok(t) = read {
                let _ = membw::report::topo::text(&membw::report::topo::TopoView::bare(&t));
                let _ = derive(&t);
            }
            Ok(())
        });
        if let Err(e) = outcome {
            panic!("{e}");
        }
    }
}

/// A hwloc cpuset (`0x0000000f,,0x00000001`: 32-bit words, most significant
/// first, empty words zero) as CPU ids.
fn hwloc_cpuset(mask: &str) -> Vec<usize> {
    let mut ids = Vec::new();
    for (word, text) in mask.split(',').rev().enumerate() {
        let hex = text.trim_start_matches("0x");
        let bits = if hex.is_empty() {
            0
        } else {
            u32::from_str_radix(hex, 16).unwrap()
        };
        ids.extend(
            (0..32)
                .filter(|b| bits & (1 << b) != 0)
                .map(|b| word * 32 + b),
        );
    }
    ids
}

/// Every fixture, generated or captured, read by an independent reader:
/// hwloc (`HWLOC_FSROOT`) must find the packages, cores, hardware threads,
/// NUMA nodes and L3 groups that `membw topo --sysroot --json` finds.
#[test]
fn hwloc_reads_every_fixture_as_membw_does() {
    let mut roots: Vec<std::path::PathBuf> = common::MACHINES
        .iter()
        .map(|m| common::shared_tree(m))
        .collect();
    roots.push(common::fixtures_dir().join("live-vm"));
    for root in roots {
        let Some(out) = common::tool(
            std::process::Command::new("lstopo-no-graphics")
                .args(["--of", "xml"])
                .env("HWLOC_FSROOT", &root),
            "hwloc",
        ) else {
            return;
        };
        let xml = String::from_utf8(out.stdout).unwrap();
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        let doc = roxmltree::Document::parse_with_options(&xml, options).unwrap();
        let groups = |kind: &str| -> std::collections::BTreeSet<Vec<usize>> {
            doc.descendants()
                .filter(|n| n.has_tag_name("object") && n.attribute("type") == Some(kind))
                .map(|n| hwloc_cpuset(n.attribute("cpuset").unwrap()))
                .collect()
        };
        let t = Topology::read(&root).unwrap();
        let ours = |key: &dyn Fn(&membw::topology::Cpu) -> usize| -> std::collections::BTreeSet<Vec<usize>> {
            let mut by: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
            for c in &t.cpus {
                by.entry(key(c)).or_default().push(c.id);
            }
            by.into_values().collect()
        };
        let what = root.display();
        assert_eq!(
            groups("Package"),
            ours(&|c| c.package),
            "packages of {what}"
        );
        let cores: std::collections::BTreeSet<Vec<usize>> =
            t.cores().iter().map(|s| s.ids().to_vec()).collect();
        assert_eq!(groups("Core"), cores, "cores of {what}");
        let pus: std::collections::BTreeSet<Vec<usize>> =
            t.cpus.iter().map(|c| vec![c.id]).collect();
        assert_eq!(groups("PU"), pus, "hardware threads of {what}");
        // hwloc counts CPU-less memory nodes too, attached to the CPUs
        // nearest them (their cpuset is their locality, not empty).
        let nodes: std::collections::BTreeSet<Vec<usize>> = t
            .nodes
            .iter()
            .filter(|n| !n.cpus.is_empty())
            .map(|n| n.cpus.ids().to_vec())
            .collect();
        let hw_nodes = doc
            .descendants()
            .filter(|n| n.has_tag_name("object") && n.attribute("type") == Some("NUMANode"))
            .count();
        assert_eq!(hw_nodes, t.nodes.len(), "NUMA nodes of {what}");
        assert_eq!(groups("NUMANode"), nodes, "NUMA node CPUs of {what}");
        let l3: std::collections::BTreeSet<Vec<usize>> =
            t.llc_domains().iter().map(|s| s.ids().to_vec()).collect();
        assert_eq!(groups("L3Cache"), l3, "L3 groups of {what}");
    }
}

/// Contents no kernel writes are warnings naming the file, never silence.
#[test]
fn impossible_node_files_are_warned_about() {
    let dir = tree("xeon-e5-2680v3-2s");
    let node = dir.path().join("sys/devices/system/node");
    // CPU 0 in both nodes, a CPU that does not exist, and a lopsided matrix.
    fs::write(node.join("node1/cpulist"), "0,12-23,36-47,99\n").unwrap();
    fs::write(node.join("node0/distance"), "10 21\n").unwrap();
    fs::write(node.join("node1/distance"), "31 10\n").unwrap();
    let t = Topology::read(dir.path()).unwrap();
    let all = t.warnings.join("\n");
    crate::common::assert_contains(&all, "node1/cpulist: CPU 0 is also listed in node 0");
    crate::common::assert_contains(&all, "node1/cpulist: CPUs 99 are not online CPUs");
    crate::common::assert_contains(
        &all,
        "node0/distance: distance to node 1 is 21 but node 1's back is 31",
    );
    fs::write(node.join("node0/distance"), "10 0 5\n").unwrap();
    let t = Topology::read(dir.path()).unwrap();
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("3 distances for 2 nodes")),
        "{:?}",
        t.warnings
    );
    // The CLI prints them on stderr and still shows the topology.
    let out = common::membw()
        .args(["topo", "--sysroot", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("membw: warning:"));
    // Generated fixtures are clean.
    for m in MACHINES {
        assert!(topology(m).warnings.is_empty(), "{m}");
    }
}

/// A FIFO or a device in a --sysroot tree neither hangs nor reads forever.
#[test]
fn fifos_and_devices_in_a_tree_are_not_read() {
    let dir = tree("xeon-e5-2680v3-2s");
    let root = dir.path();
    let fifo = root.join("sys/devices/system/cpu/cpu0/topology/core_id");
    fs::remove_file(&fifo).unwrap();
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a path we own, with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    fs::remove_file(root.join("proc/cpuinfo")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("proc/cpuinfo")).unwrap();
    let started = std::time::Instant::now();
    let out = common::membw()
        .args(["topo", "--sysroot", root.to_str().unwrap()])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    crate::common::assert_success(&out);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let t = Topology::read(root).unwrap();
    assert_eq!(t.cpus.len(), 48);
    assert!(
        t.cpu_info.model_name.is_none(),
        "nothing read from /dev/zero"
    );
}

/// The Arm fixtures: the core named from its part number, the chip from
/// the DMI vendor, the peak from the chip, and the L3 shared as Linux
/// reports it (one per socket).
#[test]
fn arm_nodes_are_named_and_their_peaks_known() {
    let cases = [
        (
            "grace-superchip-2s",
            "Arm Neoverse V2",
            "Grace",
            2.0 * 512.0,
            72,
        ),
        ("graviton3-1s", "Arm Neoverse V1", "Graviton3", 307.2, 64),
        (
            "graviton4-2s",
            "Arm Neoverse V2",
            "Graviton4",
            2.0 * 537.6,
            96,
        ),
    ];
    for (name, core, chip, node_gb_s, per_l3) in cases {
        let t = topology(name);
        assert_eq!(t.cpu_info.model_name.as_deref(), Some(core), "{name}");
        assert!(t.has_flag("asimd") && t.has_flag("sve"), "{name}");
        let p = peak::estimate(&t, &PeakRequest::default()).unwrap();
        assert!(p.detail.contains(chip), "{name}: {}", p.detail);
        assert!(
            (p.node_gb_s() - node_gb_s).abs() < 1e-9,
            "{name}: {}",
            p.node_gb_s()
        );
        let l3: Vec<_> = t.caches.iter().filter(|c| c.level == 3).collect();
        assert_eq!(l3.len(), t.packages().len(), "{name}: one L3 per socket");
        assert!(l3.iter().all(|c| c.cpus.len() == per_l3), "{name}");
    }
    let text = common::stdout(&[
        "topo",
        "--sysroot",
        common::shared_tree("graviton4-2s").to_str().unwrap(),
    ]);
    assert!(
        text.contains("Neoverse V2") && text.contains("Graviton4"),
        "{text}"
    );
}
