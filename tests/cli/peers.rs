//! `membw peers`: GPU↔GPU copies over every ordered pair of a set, on the
//! simulated node (`MEMBW_SIM_DEVICE=devices=N,peer-down=I:J`): the
//! matrix complete and each cell validated, the pair without a direct
//! path named (staged, its kernels not measured), a wrong copy caught, and
//! what cannot be a pair probe refused in one line.

use crate::common::{membw, usage_error};
use serde_json::Value;

/// `membw peers --backend SET` under `setup`, small buffers: exit code,
/// stdout, stderr.
fn peers(set: &str, setup: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let out = membw()
        .env("MEMBW_SIM_DEVICE", setup)
        .args([
            "peers", "--backend", set, "--array-size", "64K", "--ntimes", "3",
        ])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn eight_devices_give_every_ordered_pair_by_every_method_validated() {
    let (code, stdout, stderr) = peers("sim:all", "devices=8", &["--format", "json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["kind"], "membw-peers");
    assert_eq!(doc["devices"].as_array().unwrap().len(), 8);
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 5 * 8 * 7, "five methods × 56 ordered pairs");
    for c in cells {
        assert!(c["best_gb_s"].as_f64().unwrap() > 0.0, "{c}");
        assert_eq!(c["rates"]["n"], 3, "{c}");
        assert!(c["rates"]["ci"]["low"].is_number(), "{c}");
        assert_eq!(c["path"], "direct", "{c}");
        assert!(c.get("wrong").is_none(), "{c}");
        assert_ne!(c["from"], c["to"]);
    }
    // Both ways at once count the bytes of both.
    let bidir = cells.iter().find(|c| c["method"] == "ce-bidir").unwrap();
    let write = cells.iter().find(|c| c["method"] == "ce-write").unwrap();
    assert_eq!(
        bidir["bytes"].as_u64(),
        write["bytes"].as_u64().map(|b| 2 * b)
    );
}

#[test]
fn the_pair_without_a_direct_path_is_named_and_slower() {
    let (code, text, stderr) = peers(
        "sim:0-3",
        "devices=4,peer-down=1:3",
        &["--methods", "ce-write,sm-write"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    crate::common::assert_contains(&text, "ce-write: copy engine, the source writes");
    crate::common::assert_contains(
        &text,
        "paths: staged through host memory (no peer access): 1→3, 3→1; every other pair direct",
    );
    crate::common::assert_contains(&text, "sim1 cannot address sim3's memory");
    // Row sim1 of sm-write: n/a under sim3.
    let sm = text.split("sm-write:").nth(1).unwrap();
    let row = sm
        .lines()
        .find(|l| l.trim_start().starts_with("sim1"))
        .unwrap();
    assert!(row.trim_end().ends_with("n/a"), "{row}");
    crate::common::assert_contains(&text, "validation: every copy arrived right");

    let (_, json, _) = peers(
        "sim:0-3",
        "devices=4,peer-down=1:3",
        &["--methods", "ce-write", "--json"],
    );
    let doc: Value = serde_json::from_str(&json).unwrap();
    let rate = |from: u64, to: u64| {
        (doc["cells"].as_array().unwrap().iter())
            .find(|c| c["from"] == from && c["to"] == to)
            .map(|c| c["best_gb_s"].as_f64().unwrap())
            .unwrap()
    };
    // Staged at a quarter of the speed: below every direct pair from sim1.
    assert!(rate(1, 3) < rate(1, 0).min(rate(1, 2)), "{doc}");
}

#[test]
fn a_wrong_copy_fails_the_probe() {
    let (code, text, stderr) = peers("sim:0-1", "wrong-element=7", &["--methods", "ce-write"]);
    assert_eq!(code, Some(1), "{stderr}");
    crate::common::assert_contains(&text, "VALIDATION FAILED: 0 → 1 ce-write: element 7 held");
    crate::common::assert_contains(&stderr, "a peer copy came back wrong");
}

#[test]
fn what_is_no_pair_probe_is_refused_in_one_line() {
    usage_error(
        &["peers", "--backend", "sim:0"],
        "one device: peers copies between two or more",
    );
    usage_error(&["peers", "--backend", "cpu"], "names no GPU platform");
    usage_error(
        &["peers", "--backend", "sim:all", "--methods", "dma"],
        "'dma': a method is",
    );
    usage_error(
        &["peers", "--backend", "sim:all", "--array-size", "100"],
        "1024 or more",
    );
    usage_error(&["peers", "--backend", "sim:all", "--format", "csv"], "csv");
}

#[test]
fn nvlink_paths_and_their_peaks_travel_with_each_pair() {
    // 18 links a device to the switches, 4 of device 2's down.
    let setup = "devices=4,nvlink=18,nvlink-down=2:4";
    let args = ["--methods", "ce-write", "--format", "json"];
    let (code, stdout, stderr) = peers("sim:all", setup, &args);
    assert_eq!(code, Some(0), "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let fabric = &doc["devices"][2]["fabric"];
    assert_eq!(
        (
            fabric["links"].as_u64(),
            fabric["up_to"].as_array().map(Vec::len)
        ),
        (Some(18), Some(14)),
        "{fabric}"
    );
    for c in doc["cells"].as_array().unwrap() {
        let links = if c["from"] == 2 || c["to"] == 2 {
            14
        } else {
            18
        };
        assert_eq!(c["fabric"]["links"], links, "{c}");
        assert_eq!(c["fabric"]["switched"], true, "{c}");
        assert_eq!(
            c["fabric"]["peak_gb_s"].as_f64(),
            Some(25.0 * f64::from(links)),
            "{c}"
        );
    }
    let (_, text, _) = peers("sim:all", setup, &["--methods", "ce-write"]);
    crate::common::assert_contains(&text, "NVLink paths");
    assert!(
        text.contains("NV14 switch") && text.contains("NV18 switch"),
        "{text}"
    );
    crate::common::assert_contains(&text, "of each pair's NVLink peak:");
    // Without links, no path and no share is claimed.
    let (_, plain, _) = peers("sim:0-1", "", &["--methods", "ce-write"]);
    assert!(!plain.contains("NVLink"), "{plain}");
}
