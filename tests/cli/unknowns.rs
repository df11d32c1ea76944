//! `check` on a node that presents itself badly: counters holding garbage,
//! labels that try to forge the one line NHC reads, entries spelled twice,
//! values out of their range, firmware widths no memory has. Each is said
//! (an unknown with its file), judged by a coarser source where there is
//! one, and never a silent "healthy". On generated fixtures with EDAC and
//! SMBIOS files added.

use crate::common;
use crate::memory_errors::{generated, run};
use std::path::Path;

const MC: &str = "sys/devices/system/edac/mc";

/// Writes `files` (path under the tree, text) into `tree`.
fn write(tree: &str, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let path = Path::new(tree).join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{text}\n")).unwrap();
    }
}

/// A two-socket Xeon tree with controller mc0 of two DIMMs: its totals
/// (`ce`, `ue`) and DIMM 1's counter files as given, DIMM 0 clean, the
/// counters reset a day ago.
fn node(dir: &Path, ce: &str, ue: &str, dimm1: (&str, &str), label1: &str) -> String {
    let tree = generated(dir, "xeon-e5-2680v3-2s");
    let at = |rel: &str| format!("{MC}/mc0/{rel}");
    write(
        &tree,
        &[
            (&at("mc_name"), "Haswell SrcID#0_Ha#0"),
            (&at("ce_count"), ce),
            (&at("ue_count"), ue),
            (&at("seconds_since_reset"), "86400"),
            (&at("dimm0/dimm_label"), "P0-DIMMA1"),
            (&at("dimm0/dimm_ce_count"), "0"),
            (&at("dimm0/dimm_ue_count"), "0"),
            (&at("dimm1/dimm_label"), label1),
            (&at("dimm1/dimm_ce_count"), dimm1.0),
            (&at("dimm1/dimm_ue_count"), dimm1.1),
        ],
    );
    tree
}

/// `membw check` of `tree` with `extra`: its exit code, stdout and stderr.
/// Every judged check's `--prom` file passes promtool with no series
/// twice, and its `--format json` parses.
fn check(tree: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let (code, out, err, _) = check_prom(tree, extra);
    (code, out, err)
}

/// [`check`], and the text of its `--prom` file (empty when not judged).
fn check_prom(tree: &str, extra: &[&str]) -> (Option<i32>, String, String, String) {
    let args = [
        "check", "--sysroot", tree, "--fake-source", "4", "--budget", "1s",
    ];
    let dir = crate::common::scratch_dir();
    let prom = dir.path().join("m.prom");
    let with_prom = ["--prom", prom.to_str().unwrap()];
    let (code, out, err) = run(&[&args[..], extra, &with_prom].concat());
    let mut text = String::new();
    if matches!(code, Some(0 | 1)) {
        text = valid_prom(&prom);
        if !extra.iter().any(|a| ["--format", "-q"].contains(a)) {
            let (_, json, err) = run(&[&args[..], extra, &["--format", "json"]].concat());
            let parsed = serde_json::from_str::<serde_json::Value>(&json);
            assert!(parsed.is_ok(), "{json}{err}");
        }
    }
    (code, out, err, text)
}

/// `promtool check metrics` on `file` where promtool is installed, and no
/// series twice.
fn valid_prom(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let series: Vec<&str> = (text.lines())
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' ').map(|(s, _)| s))
        .collect();
    let mut unique = series.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), series.len(), "a series twice:\n{text}");
    let mut promtool = std::process::Command::new("promtool");
    promtool
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).unwrap());
    common::tool(&mut promtool, "prometheus");
    text
}

#[test]
fn an_unreadable_dimm_counter_is_said_and_its_controllers_count_judged() {
    let dir = crate::common::scratch_dir();
    let tree = node(dir.path(), "50", "0", ("garbage", "0"), "P0-DIMMA2");
    let (code, out, err, text) = check_prom(&tree, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(
        err.trim_end(),
        "membw: memory controller mc0: 50 corrected memory errors since boot not on a DIMM whose counter could be read (mc0 P0-DIMMA2), 50 a day (EDAC, the controller's count; more than 9 a day fails): replace the DIMM at the next drain"
    );
    let unknown = "unknown: /sys/devices/system/edac/mc/mc0/dimm1/dimm_ce_count holds 'garbage', not a count (judged by mc0's own count (ce_count, ue_count))";
    assert!(out.lines().any(|l| l == unknown), "{out}");
    crate::common::assert_contains(&text, "membw_check_unknown_inputs{source=\"edac\"} 1\n");
    crate::common::assert_contains(&text, "membw_check_unknown_inputs{source=\"smbios\"} 0\n");
    // The unread count has no sample; the readable one has.
    assert!(
        !text.contains("membw_edac_corrected_errors{mc=\"0\",entry=\"dimm1\""),
        "{text}"
    );
    crate::common::assert_contains(
        &text,
        "membw_edac_uncorrected_errors{mc=\"0\",entry=\"dimm1\",dimm=\"P0-DIMMA2\"} 0\n",
    );
    let (_, json, _) = check(&tree, &["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["unknown"][0]["source"], "edac", "{v}");
    assert_eq!(
        v["memory_errors"]["controllers"][0]["dimms"][1]["corrected"],
        serde_json::Value::Null
    );
    assert_eq!(v["unknown_policy"], "report");
}

#[test]
fn an_unknown_beside_a_healthy_node_is_in_its_one_line_and_fails_where_the_site_says() {
    let dir = crate::common::scratch_dir();
    let tree = node(dir.path(), "0", "0", ("garbage", "0"), "P0-DIMMA2");
    let (code, out, err) = check(&tree, &["-q"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(out, "");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("membw: healthy, with 1 input unknown: /sys/devices/system/edac/mc/mc0/dimm1/dimm_ce_count holds 'garbage'"),
        "{err}"
    );
    let (code, out, _) = check(&tree, &[]);
    assert_eq!(code, Some(0));
    assert!(
        out.starts_with("membw check: healthy, 1 input unknown · "),
        "{out}"
    );
    let (code, _, err) = check(&tree, &["--unknown", "fail", "-q"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.trim_end().starts_with("membw: 1 input unknown, and unknown values fail this check: /sys/devices/system/edac/mc/mc0/dimm1/dimm_ce_count"),
        "{err}"
    );
    let (code, _, err) = check(&tree, &["--unknown", "maybe"]);
    assert_eq!(code, Some(2), "{err}");
    crate::common::assert_contains(&err, "--unknown");
}

#[test]
fn a_label_cannot_add_a_line_to_the_verdict_in_any_format() {
    let dir = crate::common::scratch_dir();
    let forged = "P0-DIMMA2\nmembw: node healthy";
    let tree = node(dir.path(), "0", "5", ("0", "5"), forged);
    let (code, _, err, text) = check_prom(&tree, &["-q"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        err,
        "membw: mc0 P0-DIMMA2\\nmembw: node healthy: 5 uncorrected memory errors since boot (EDAC): drain the node and replace the DIMM\n"
    );
    crate::common::assert_contains(&text, "dimm=\"P0-DIMMA2\\\\nmembw: node healthy\"} 5\n");
    let (_, json, _) = check(&tree, &["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let label = &v["memory_errors"]["controllers"][0]["dimms"][1]["label"];
    assert_eq!(label, "P0-DIMMA2\\nmembw: node healthy");
    let topo = common::stdout(&["topo", "--sysroot", &tree]);
    assert!(
        !topo.lines().any(|l| l.starts_with("membw: node healthy")),
        "{topo}"
    );
}

#[test]
fn entries_spelled_twice_and_labels_shared_are_one_series_each() {
    let dir = crate::common::scratch_dir();
    let tree = node(dir.path(), "0", "2", ("0", "1"), "P0-DIMMA1");
    let at = |rel: &str| format!("{MC}/mc0/{rel}");
    write(
        &tree,
        &[
            (&at("dimm0/dimm_ue_count"), "1"),
            (&at("dimm01/dimm_ue_count"), "1"),
        ],
    );
    let (code, out, err, text) = check_prom(&tree, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    // Two DIMMs of one label: told apart by their entry, counted once each.
    for entry in ["dimm0", "dimm1"] {
        let want =
            format!("hardware: mc0 P0-DIMMA1 ({entry}): 1 uncorrected memory errors since boot");
        assert!(out.contains(&want), "{want}\n{out}");
    }
    crate::common::assert_contains(
        &out,
        "unknown: /sys/devices/system/edac/mc/mc0/dimm01 is not an entry the kernel names",
    );
    assert_eq!(
        text.matches("membw_edac_uncorrected_errors{").count(),
        2,
        "{text}"
    );
}

#[test]
fn an_uptime_out_of_its_range_is_unknown_and_the_count_judged_without_it() {
    let dir = crate::common::scratch_dir();
    let tree = node(dir.path(), "12", "0", ("12", "0"), "P0-DIMMA2");
    std::fs::remove_file(Path::new(&tree).join(MC).join("mc0/seconds_since_reset")).unwrap();
    write(&tree, &[("proc/uptime", "1e300 0")]);
    let (code, out, err) = check(&tree, &[]);
    // Twelve errors with no period: a count of ten or more fails.
    assert_eq!(code, Some(1), "{out}{err}");
    crate::common::assert_contains(
        &err,
        "mc0 P0-DIMMA2: 12 corrected memory errors since boot, 12 a day",
    );
    crate::common::assert_contains(
        &out,
        "unknown: /proc/uptime holds '1e300', more than 30 years (its rule not judged)",
    );
}

#[test]
fn a_counter_reset_since_the_baseline_is_said() {
    let dir = crate::common::scratch_dir();
    let tree = node(dir.path(), "0", "0", ("0", "0"), "P0-DIMMA2");
    write(&tree, &[("proc/sys/kernel/random/boot_id", "b0071d")]);
    let baseline = dir.path().join("b.json");
    let source = ["--sysroot", tree.as_str(), "--fake-source", "4"];
    let b = baseline.to_str().unwrap();
    let (code, _, err) = run(&[&["baseline", "--rounds", "2", "-o", b][..], &source].concat());
    assert_eq!(code, Some(0), "{err}");
    // reset_counters: the time since reset went back, no count changed.
    write(&tree, &[(&format!("{MC}/mc0/seconds_since_reset"), "60")]);
    let (code, out, err) = check(&tree, &["--baseline", b]);
    assert_eq!(code, Some(0), "{out}{err}");
    crate::common::assert_contains(
        &out,
        "note: EDAC counts not held against the baseline's: the counters were reset since the baseline",
    );
    // Another boot; another node's baseline: each said.
    write(&tree, &[("proc/sys/kernel/random/boot_id", "c0ffee")]);
    let (_, out, _) = check(&tree, &["--baseline", b]);
    crate::common::assert_contains(&out, "the node rebooted since the baseline");
    let text = std::fs::read_to_string(&baseline).unwrap();
    let hosts = text.find("\"hosts\":").unwrap();
    let end = hosts + text[hosts..].find(']').unwrap();
    let other = dir.path().join("other.json");
    let moved = format!("{}\"hosts\":[\"node99\"{}", &text[..hosts], &text[end..]);
    std::fs::write(&other, moved).unwrap();
    let (_, out, _) = check(&tree, &["--baseline", other.to_str().unwrap()]);
    crate::common::assert_contains(&out, "the baseline is another node's");
}

#[test]
fn a_dimm_width_no_memory_has_leaves_the_peak_unknown_not_zero() {
    let dir = crate::common::scratch_dir();
    let tree = generated(dir.path(), "epyc-7h12-2s");
    let entries = Path::new(&tree).join("sys/firmware/dmi/entries");
    let first = std::fs::read_dir(&entries)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .min()
        .unwrap();
    let raw = first.join("raw");
    let mut bytes = std::fs::read(&raw).unwrap();
    bytes[0x0A..0x0C].copy_from_slice(&4u16.to_le_bytes());
    std::fs::write(&raw, bytes).unwrap();
    let (code, json, err) = check(&tree, &["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(code, Some(0), "{v}{err}");
    let unknown = v["unknown"].to_string();
    crate::common::assert_contains(&unknown, "data width 4 bits is not one a memory device has");
    crate::common::assert_contains(&unknown, "\"source\":\"smbios\"");
    // The SMBIOS peak is unknown (it was 0 GB/s): the CPU's table gives it.
    let topo = common::stdout(&["topo", "--sysroot", &tree]);
    let peak: Vec<&str> = topo
        .lines()
        .skip_while(|l| !l.starts_with("Peak"))
        .take(2)
        .collect();
    assert!(peak[0].starts_with("Peak       409.6 GB/s"), "{topo}");
    assert!(peak[1].contains("source: built-in table"), "{topo}");
    assert!(
        topo.contains("· 1 value unknown (/sys/firmware/dmi/entries/17-0/raw data width 4 bits"),
        "{topo}"
    );
}

#[test]
fn one_unreadable_controller_hides_no_other_and_counts_past_64_bits_are_unknown() {
    let dir = crate::common::scratch_dir();
    let tree = node(
        dir.path(),
        "garbage",
        "",
        ("18446744073709551616", "0"),
        "P0-DIMMA2",
    );
    let at = |rel: &str| format!("{MC}/mc1/{rel}");
    write(
        &tree,
        &[
            (&at("ce_count"), "0"),
            (&at("ue_count"), "5"),
            (&at("seconds_since_reset"), "600"),
        ],
    );
    let (code, out, err) = check(&tree, &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(
        err.trim_end(),
        "membw: memory controller mc1: 5 uncorrected memory errors since boot (EDAC): drain the node; the DIMM is in the kernel log (rasdaemon, mcelog)"
    );
    for want in [
        "unknown: /sys/devices/system/edac/mc/mc0/ce_count holds 'garbage', not a count (its rule not judged)",
        "unknown: /sys/devices/system/edac/mc/mc0/ue_count is empty (its rule not judged)",
        "unknown: /sys/devices/system/edac/mc/mc0/dimm1/dimm_ce_count holds '18446744073709551616', beyond a 64-bit counter (its rule not judged)",
    ] {
        assert!(out.lines().any(|l| l == want), "{want}\n{out}");
    }
    let topo = common::stdout(&["topo", "--sysroot", &tree]);
    crate::common::assert_contains(
        &topo,
        "EDAC: 0 corrected, 5 uncorrected since boot (2 memory controllers, 2 DIMMs): mc0 P0-DIMMA2: ? CE, 0 UE; 3 values unknown",
    );
}
