//! Memory error counters (EDAC) beside bandwidth: `topo` shows them, and
//! `check` fails a node whose DIMM has uncorrected errors, with the DIMM
//! and the action named, with and without a baseline, on a busy node too
//! (counts, not rates). On a 2-socket Xeon fixture with EDAC files added.

use crate::common;
use std::path::Path;

/// The tree of tests/fixtures/`spec`.json, generated under `dir`.
pub(crate) fn generated(dir: &Path, spec: &str) -> String {
    let tree = dir.join("tree");
    let spec = common::fixtures_dir().join(format!("{spec}.json"));
    common::stdout(&[
        "topo",
        "--generate",
        spec.to_str().unwrap(),
        tree.to_str().unwrap(),
    ]);
    tree.to_string_lossy().into_owned()
}

/// A 2-socket Xeon fixture (two NUMA domains), generated under `dir`, with
/// one memory controller of two DIMMs whose second has `ue` uncorrected
/// errors.
fn xeon_with_edac(dir: &Path, ue: u64) -> String {
    let tree = generated(dir, "xeon-e5-2680v3-2s");
    set_uncorrected(Path::new(&tree), ue);
    tree
}

/// Writes the counters of `tree`'s controller, its second DIMM with `ue`
/// uncorrected errors.
fn set_uncorrected(tree: &Path, ue: u64) {
    let mc = tree.join("sys/devices/system/edac/mc/mc0");
    let files = [
        ("mc_name", "F17h_M30h".to_string()),
        ("ce_count", "0".into()),
        ("ue_count", ue.to_string()),
        ("seconds_since_reset", "86400".into()),
        ("dimm0/dimm_label", "P0-DIMMA1".into()),
        ("dimm0/dimm_ce_count", "0".into()),
        ("dimm0/dimm_ue_count", "0".into()),
        ("dimm1/dimm_label", "P0-DIMMA2".into()),
        ("dimm1/dimm_ce_count", "0".into()),
        ("dimm1/dimm_ue_count", ue.to_string()),
    ];
    for (rel, text) in files {
        let path = mc.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text + "\n").unwrap();
    }
}

/// membw's exit code, stdout and stderr.
pub(crate) fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = common::membw().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn topo_shows_the_counters_and_says_why_where_there_are_none() {
    let dir = crate::common::scratch_dir();
    let tree = xeon_with_edac(dir.path(), 2);
    let topo = common::stdout(&["topo", "--sysroot", &tree]);
    crate::common::assert_contains(
        &topo,
        "ECC        EDAC: 0 corrected, 2 uncorrected since boot (1 memory controller, 2 DIMMs): mc0 P0-DIMMA2: 0 CE, 2 UE",
    );
    let json: serde_json::Value =
        serde_json::from_str(&common::stdout(&["topo", "--sysroot", &tree, "--json"])).unwrap();
    let errors = &json["topology"]["memory_errors"];
    assert_eq!(errors["state"], "counted", "{errors}");
    assert_eq!(errors["controllers"][0]["dimms"][1]["uncorrected"], 2);
    // The plain fixture has no EDAC driver: said, not taken for no errors.
    let plain = common::shared_tree("xeon-e5-2680v3-2s");
    let topo = common::stdout(&["topo", "--sysroot", plain.to_str().unwrap()]);
    crate::common::assert_contains(&topo, "ECC        not readable here: no EDAC driver");
}

#[test]
fn a_dimm_with_uncorrected_errors_fails_the_check_with_its_action() {
    let dir = crate::common::scratch_dir();
    let tree = xeon_with_edac(dir.path(), 1);
    let baseline = dir.path().join("b.json").to_string_lossy().into_owned();
    let source = ["--sysroot", &tree, "--fake-source", "4"];
    let (code, _, err) =
        run(&[&["baseline", "--rounds", "2", "-o", &baseline][..], &source].concat());
    assert_eq!(code, Some(0), "{err}");
    let want = "mc0 P0-DIMMA2: 1 uncorrected memory errors since boot (EDAC): drain the node and replace the DIMM";
    for with in [vec![], vec!["--baseline", baseline.as_str()]] {
        let (code, out, err) = run(&[&["check"][..], &source, &with].concat());
        assert_eq!(code, Some(1), "{with:?}: {out}{err}");
        assert_eq!(err.trim_end(), format!("membw: {want}"), "{with:?}");
        crate::common::assert_contains(&out, &format!("hardware: {want}"));
    }
    // Counts, not rates: other work on the node does not hide them.
    let busy = ["check", "--sysroot", &tree, "--fake-source", "4,busy=60"];
    let (code, _, err) = run(&busy);
    assert_eq!(code, Some(1), "{err}");
    crate::common::assert_contains(&err, want);
    // The same node without errors passes.
    set_uncorrected(Path::new(&tree), 0);
    let (code, out, err) = run(&[&["check", "--baseline", &baseline][..], &source].concat());
    assert_eq!(code, Some(0), "{out}{err}");
}

#[test]
fn the_checks_prometheus_file_and_json_carry_each_dimms_counters() {
    let dir = crate::common::scratch_dir();
    let tree = xeon_with_edac(dir.path(), 3);
    let prom = dir.path().join("membw.prom");
    let source = ["--sysroot", &tree, "--fake-source", "4"];
    let (code, out, err) = run(&[
        &["check", "--prom", prom.to_str().unwrap(), "--json"][..],
        &source,
    ]
    .concat());
    assert_eq!(code, Some(1), "{err}");
    let verdict: serde_json::Value = serde_json::from_str(&out).unwrap();
    let errors = &verdict["memory_errors"];
    assert_eq!(
        errors["controllers"][0]["dimms"][1]["uncorrected"], 3,
        "{errors}"
    );
    let text = std::fs::read_to_string(&prom).unwrap();
    for line in [
        "membw_edac_readable 1",
        "membw_edac_uncorrected_errors{mc=\"0\",entry=\"dimm1\",dimm=\"P0-DIMMA2\"} 3",
        "membw_edac_uncorrected_errors{mc=\"0\",entry=\"dimm0\",dimm=\"P0-DIMMA1\"} 0",
        "membw_edac_corrected_errors{mc=\"0\",entry=\"dimm1\",dimm=\"P0-DIMMA2\"} 0",
        "# TYPE membw_edac_corrected_errors gauge",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
    // Without a driver: readable 0, and no series of counts.
    let plain = common::shared_tree("xeon-e5-2680v3-2s");
    let (code, _, err) = run(&[
        "check",
        "--sysroot",
        plain.to_str().unwrap(),
        "--fake-source",
        "4",
        "--prom",
        prom.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(text.lines().any(|l| l == "membw_edac_readable 0"), "{text}");
    assert!(!text.contains("membw_edac_corrected_errors"), "{text}");
}

/// `membw check` of the simulated GPUs under `setup` (MEMBW_SIM_DEVICE),
/// triad alone and short: its exit code and JSON verdict.
fn check_gpus(set: &str, setup: &str) -> (Option<i32>, serde_json::Value, String) {
    let out = common::membw()
        .env("MEMBW_SIM_DEVICE", setup)
        .args([
            "check", "--backend", set, "--array-size", "256K", "--ntimes", "3",
        ])
        .args(["--kernels", "triad", "--budget", "1s", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let verdict = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code(), verdict, stderr)
}

#[test]
fn a_gpu_with_uncorrected_errors_or_a_pending_remap_fails_the_check_with_dcgms_action() {
    let (code, v, err) = check_gpus("sim:all", "devices=2,ecc-ue=1:2,remap-pending=0");
    assert_eq!(code, Some(1), "{v}\n{err}");
    let differences = v["differences"].to_string();
    for want in [
        "sim1: 2 uncorrected ECC errors since the driver loaded: drain the node and reset the GPU",
        "sim0: a row remapping waits for a reset: drain the node and reset the GPU",
    ] {
        assert!(differences.contains(want), "{want}\n{differences}");
    }
    // The counters travel with the device's facts.
    let health = &v["devices"][1]["memory_health"];
    assert_eq!(health["uncorrected_volatile"], 2, "{v}");
    assert_eq!(health["ecc_enabled"], true, "{v}");
    // Past DCGM's limit of retired pages, on one device alone.
    let (code, v, _) = check_gpus("sim:0", "retired-pages=0:63");
    assert_eq!(code, Some(1), "{v}");
    assert!(
        v["differences"]
            .to_string()
            .contains("sim0: 63 retired pages (DCGM's limit 63): replace the GPU"),
        "{v}"
    );
    // Counters under the limits are no finding (the rates alone judge
    // the device: on a simulated one, against half its peak); a bad setup
    // is one line.
    let (_, v, _) = check_gpus("sim:0", "retired-pages=0:62");
    assert_eq!(v["differences"], serde_json::json!([]), "{v}");
    let health = &v["device"]["memory_health"];
    assert_eq!(
        common::memory_counter(health, "retired_pages"),
        Some(62),
        "{v}"
    );
    let out = common::membw()
        .env("MEMBW_SIM_DEVICE", "ecc-ue=0:many")
        .args(["check", "--backend", "sim:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    crate::common::assert_contains(&err, "'many': a count of errors");
}

#[test]
fn a_dimm_unlike_its_siblings_fails_the_check_without_a_baseline() {
    // A 2-socket EPYC fixture with 8 DIMMs a socket, all alike.
    let dir = crate::common::scratch_dir();
    let tree = generated(dir.path(), "epyc-7h12-2s");
    let source = ["--sysroot", &tree, "--fake-source", "4"];
    let (code, out, err) = run(&[&["check"][..], &source].concat());
    assert_eq!(code, Some(0), "{out}{err}");
    // Its DIMM 5 replaced by a 16 GiB one.
    let raw = Path::new(&tree).join("sys/firmware/dmi/entries/17-5/raw");
    let record = membw::topology::smbios::memory_device_record(5, 16 * 1024, 3200);
    std::fs::write(&raw, record).unwrap();
    let (code, out, err) = run(&[&["check"][..], &source].concat());
    assert_eq!(code, Some(1), "{out}{err}");
    let want = "DIMM 5 (BANK 5): 16 GiB at 3200 MT/s where its 15 siblings have 64 GiB at 3200 MT/s (SMBIOS): replace it with one like them";
    assert!(out.contains(&format!("hardware: {want}")), "{want}\n{out}");
}

#[test]
fn a_gpu_s_memory_or_bus_xid_in_the_kernel_log_fails_the_check_and_an_unread_log_is_said() {
    // An HGX H100 fixture: NVIDIA GPUs on its PCI bus.
    let dir = crate::common::scratch_dir();
    let tree = generated(dir.path(), "hgx-h100-2s");
    let check = [
        "check", "--sysroot", &tree, "--fake-source", "4", "--format", "json",
    ];
    let (code, out, err) = run(&check);
    assert_eq!(code, Some(0), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["notes"]
            .to_string()
            .contains("the GPUs' XIDs were not read"),
        "{v}"
    );
    // The log, with an application's XID (13, not watched) and a fall off
    // the bus (79).
    std::fs::create_dir_all(Path::new(&tree).join("dev")).unwrap();
    std::fs::write(
        Path::new(&tree).join("dev/kmsg"),
        "4,1,2,-;NVRM: Xid (PCI:0000:18:00): 13, pid=9, name=x, Graphics Exception\n\
         4,3,4,-;NVRM: Xid (PCI:0000:18:00): 79, pid=9, name=x, GPU has fallen off the bus.\n",
    )
    .unwrap();
    let topo = common::stdout(&["topo", "--sysroot", &tree]);
    crate::common::assert_contains(
        &topo,
        "XIDs       1 of the memory and bus XIDs (48, 63, 64, 74, 79, 94, 95) in the kernel log",
    );
    let (code, out, err) = run(&check);
    assert_eq!(code, Some(1), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["differences"],
        serde_json::json!([
            "GPU 0000:18:00: XID 79 (the GPU fell off the bus) in the kernel log: drain the node and reboot it (reseat the GPU if it recurs)"
        ]),
        "{v}"
    );
}

/// Empties the slot of `tree`'s SMBIOS entry `i` (socket 0's channel
/// `channel` in the generated fixtures): a DIMM missing or disabled.
fn empty_slot(tree: &str, i: u16, channel: char) {
    let raw = Path::new(tree).join(format!("sys/firmware/dmi/entries/17-{i}/raw"));
    let record = membw::topology::smbios::slot_record(
        i,
        0,
        3200,
        &format!("P0-DIMM{channel}1"),
        &format!("P0 CHANNEL {channel}"),
    );
    std::fs::write(raw, record).unwrap();
}

#[test]
fn a_missing_dimm_fails_the_check_named_by_its_slot_and_explains_a_slow_scope() {
    // A 2-socket EPYC fixture: 8 channels a socket, one DIMM in each.
    let dir = crate::common::scratch_dir();
    let tree = generated(dir.path(), "epyc-7h12-2s");
    let baseline = dir.path().join("b.json").to_string_lossy().into_owned();
    let source = ["--sysroot", &tree, "--fake-source", "4"];
    let (code, _, err) =
        run(&[&["baseline", "--rounds", "2", "-o", &baseline][..], &source].concat());
    assert_eq!(code, Some(0), "{err}");
    empty_slot(&tree, 2, 'C');
    // No baseline: the channel emptier than its siblings.
    let (code, out, err) = run(&[&["check"][..], &source].concat());
    assert_eq!(code, Some(1), "{out}{err}");
    let want = "P0-DIMMC1 (P0 CHANNEL C): empty, so channel P0 CHANNEL C holds 0 DIMMs where 15 of the 16 channels hold 1 DIMM (SMBIOS): a DIMM missing or disabled by the firmware; reseat or replace it";
    assert_eq!(err.trim_end(), format!("membw: {want}"));
    // Against the baseline: the slot gone since; and where the memory is
    // slow too, the slow scope is explained by it.
    let missing = "DIMM P0-DIMMC1 (P0 CHANNEL C) missing since the baseline (15 DIMMs here, 16 in it): reseat or replace it";
    let with = ["check", "--baseline", &baseline, "--sysroot", &tree];
    let (code, out, err) = run(&[&with[..], &["--fake-source", "4"]].concat());
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(err.trim_end(), format!("membw: {missing}"));
    // Node 0 (cores 0-63) at 75 %; a short budget, as it fails.
    let slow = ["--fake-source", "4,slow=0-63@0.75", "--budget", "1s"];
    let (code, out, err) = run(&[&with[..], &slow].concat());
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.starts_with("membw: NUMA node 0: ")
            && err.contains("25 % slow (")
            && err.trim_end().ends_with(&format!("explained by {missing}")),
        "{err}"
    );
}

#[test]
fn corrected_errors_growing_since_the_baseline_fail_where_the_since_boot_rate_passes() {
    let dir = crate::common::scratch_dir();
    let tree = xeon_with_edac(dir.path(), 0);
    let boot = Path::new(&tree).join("proc/sys/kernel/random/boot_id");
    std::fs::create_dir_all(boot.parent().unwrap()).unwrap();
    std::fs::write(&boot, "0f6f1c1e-0000-4000-8000-000000000001\n").unwrap();
    let mc = Path::new(&tree).join("sys/devices/system/edac/mc/mc0");
    let count = |ce: u64, days: u64| {
        std::fs::write(mc.join("dimm0/dimm_ce_count"), format!("{ce}\n")).unwrap();
        std::fs::write(mc.join("ce_count"), format!("{ce}\n")).unwrap();
        let since = (days * 86_400).to_string();
        std::fs::write(mc.join("seconds_since_reset"), since).unwrap();
    };
    // Up 99 days with 5 corrected errors when the baseline is made.
    count(5, 99);
    let baseline = dir.path().join("b.json").to_string_lossy().into_owned();
    let source = ["--sysroot", &tree, "--fake-source", "4"];
    let (code, _, err) =
        run(&[&["baseline", "--rounds", "2", "-o", &baseline][..], &source].concat());
    assert_eq!(code, Some(0), "{err}");
    let check = [&["check", "--baseline", &baseline][..], &source].concat();
    // 40 more a day later: 45 in 100 days since boot, under 9 a day.
    count(45, 100);
    let (code, out, err) = run(&[&["check"][..], &source].concat());
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = run(&check);
    assert_eq!(code, Some(1), "{out}{err}");
    crate::common::assert_contains(
        &err,
        "mc0 P0-DIMMA1: 40 corrected memory errors since the baseline 1.0 days ago, 40 a day",
    );
    // Nine more: under the count that makes a rate.
    count(14, 100);
    let (code, out, err) = run(&check);
    assert_eq!(code, Some(0), "{out}{err}");
    // After a reboot, the counts are not compared, and the check says so.
    count(45, 100);
    std::fs::write(&boot, "0f6f1c1e-0000-4000-8000-000000000002\n").unwrap();
    let (code, out, err) = run(&check);
    assert_eq!(code, Some(0), "{out}{err}");
    crate::common::assert_contains(&out, "the node rebooted since the baseline");
}
