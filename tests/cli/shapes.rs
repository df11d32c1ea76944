//! A GPU's launch shapes (src/kernels/gpu_builds.rs): `membw tune
//! --backend DEVICE` times and checks every one, through the simulated
//! device and the fake CUDA and HIP drivers; `membw run --shape` runs one.

use crate::common::{fake_cuda_driver, fake_hip_runtime, membw, usage_error};
use serde_json::Value;

/// A shape search's document, on a device named by `backend`, with the
/// environment `env` (a fake driver's directory and its variables).
fn search(backend: &str, env: &[(&str, &str)], extra: &[&str]) -> Value {
    let mut cmd = membw();
    cmd.args(["tune", "--backend", backend, "--array-size", "100003"])
        .args(["--ntimes", "3", "--format", "jsonl"])
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{backend}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

/// Each kernel's shape ids, and those its check found wrong.
fn ids(doc: &Value) -> Vec<(String, Vec<String>, Vec<String>)> {
    (doc["kernels"].as_array().unwrap().iter())
        .map(|k| {
            let shapes = k["shapes"].as_array().unwrap();
            let id = |s: &Value| s["id"].as_str().unwrap().to_string();
            (
                k["kernel"].as_str().unwrap().to_string(),
                shapes.iter().map(id).collect(),
                (shapes.iter())
                    .filter(|s| s["invalid"].is_string())
                    .map(id)
                    .collect(),
            )
        })
        .collect()
}

/// How many builds-in-a-block-size the shape ids name (each shape is one
/// of them in one grid).
fn builds_and_blocks(shapes: &[String]) -> usize {
    let mut parts: Vec<&str> = (shapes.iter())
        .map(|s| s.rsplit_once('.').unwrap().0)
        .collect();
    parts.sort();
    parts.dedup();
    parts.len()
}

#[test]
fn tune_on_a_device_times_and_checks_every_shape_of_babelstreams_kernels() {
    let doc = search("sim:0", &[], &[]);
    let kernels = ids(&doc);
    let names: Vec<&str> = kernels.iter().map(|(k, ..)| k.as_str()).collect();
    assert_eq!(names, ["copy", "scale", "add", "triad", "dot"]);
    for (kernel, shapes, wrong) in &kernels {
        // 12 builds; the five bound to 1024 threads in blocks of 256 and
        // 1024; each in one wave, and covering the array where that is
        // more blocks than a wave.
        assert_eq!(builds_and_blocks(shapes), 17, "{kernel}: {shapes:?}");
        let mut unique = shapes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), shapes.len(), "{kernel}: {shapes:?}");
        assert!(wrong.is_empty(), "{kernel}: {wrong:?}");
    }
    for k in doc["kernels"].as_array().unwrap() {
        assert!(
            k["shapes"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["checked"] == true),
            "{k}"
        );
        let chosen = k["chosen"].as_str().unwrap();
        assert!(
            k["shapes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["id"] == chosen),
            "{k}"
        );
        assert_eq!(k["default"], "w16.u4.b256.wave", "{k}");
        assert!(k["run_gb_s"].as_f64().unwrap() > 0.0, "{k}");
    }
    assert_eq!(doc["validated"], true);
    assert_eq!(doc["peak_gb_s"], 1000.0);
}

#[test]
fn tune_on_a_device_prints_each_shape_and_how_to_run_the_chosen_one() {
    let out = membw()
        .args(["tune", "--backend", "sim:0", "--kernel", "triad"])
        .args(["--array-size", "100003", "--ntimes", "3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    crate::common::assert_contains(&stdout, " per kernel, each checked on its own");
    assert_eq!(stdout.matches("▶").count(), 1, "{stdout}");
    crate::common::assert_contains(&stdout, "w8.u1.cs.b1024.cover");
    crate::common::assert_contains(&stdout, "(default)");
    assert!(
        stdout.contains("not resolved") || stdout.contains("chosen:"),
        "{stdout}"
    );
    crate::common::assert_contains(
        &stdout,
        "membw run --backend sim:0 --kernels triad --shape w",
    );
}

#[test]
fn a_shape_the_check_finds_wrong_is_named_and_never_chosen() {
    let Some(dir) = fake_cuda_driver() else {
        return;
    };
    let dir = dir.to_str().unwrap();
    let doc = search(
        "cuda:0",
        &[("LD_LIBRARY_PATH", dir), ("FAKE_CUDA_WRONG", "_u8")],
        &["--kernel", "triad"],
    );
    let (_, shapes, wrong) = &ids(&doc)[0];
    assert_eq!(builds_and_blocks(shapes), 17, "{shapes:?}");
    assert!(
        !wrong.is_empty() && wrong.iter().all(|w| w.starts_with("w16.u8.")),
        "{wrong:?}"
    );
    let k = &doc["kernels"][0];
    assert!(!k["chosen"].as_str().unwrap().starts_with("w16.u8."), "{k}");
    let why = (k["shapes"].as_array().unwrap().iter())
        .find_map(|s| s["invalid"].as_str())
        .unwrap();
    crate::common::assert_contains(why, "after one call over 100001 elements");
}

#[test]
fn amds_shapes_are_its_own_blocks_and_hints() {
    let Some(dir) = fake_hip_runtime() else {
        return;
    };
    let doc = search(
        "hip:0",
        &[("LD_LIBRARY_PATH", dir.to_str().unwrap())],
        &["--kernel", "copy"],
    );
    let (_, shapes, wrong) = &ids(&doc)[0];
    // 10 builds (no L2-only hint), in blocks of 256 only.
    assert_eq!(builds_and_blocks(shapes), 10, "{shapes:?}");
    assert!(
        shapes
            .iter()
            .all(|s| s.contains(".b256.") && !s.contains(".cg")),
        "{shapes:?}"
    );
    assert!(wrong.is_empty(), "{wrong:?}");
    let out = membw()
        .env("LD_LIBRARY_PATH", &dir)
        .args([
            "run", "--backend", "hip:0", "--shape", "w16.u1.cg.b1024.cover",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--shape 'w16.u1.cg.b1024.cover'") && stderr.contains("no such cache hint"),
        "{stderr}"
    );
}

#[test]
fn run_takes_one_shape_for_every_kernel_and_launches_it() {
    let out = membw()
        .args(["run", "--backend", "sim:0", "--kernels", "triad,dot"])
        .args([
            "--array-size", "100003", "--ntimes", "3", "--format", "json",
        ])
        .args(["--shape", "w8.u1.b1024.cover"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["measurement"]["validation"]["passed"], true);
    for r in doc["measurement"]["results"].as_array().unwrap() {
        let launch = &r["launch"];
        assert_eq!(launch["id"], "w8.u1.b1024.cover", "{r}");
        // 100003 elements, one a thread, 1024 a block.
        assert!(
            launch["shape"]
                .as_str()
                .unwrap()
                .starts_with("98 blocks of 1024, 1 access of 8 B a thread"),
            "{r}"
        );
        assert!(
            launch.get("tried").is_none(),
            "one shape, nothing timed against it: {r}"
        );
    }
    let Some(dir) = fake_cuda_driver() else {
        return;
    };
    let log = tempfile::NamedTempFile::new().unwrap();
    let out = membw()
        .env("LD_LIBRARY_PATH", &dir)
        .env("FAKE_CUDA_LOG", log.path())
        .args(["run", "--backend", "cuda:0", "--kernels", "triad"])
        .args([
            "--array-size", "100003", "--ntimes", "3", "--shape", "w16.u1.cs.b1024.wave",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(log.path()).unwrap();
    // Every launch of triad is its streaming build, in blocks of 1024 (the
    // fake driver's 4 multiprocessors hold one each: 6 × 256 / 1024).
    let triads: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("launch triad "))
        .collect();
    assert!(!triads.is_empty(), "{log}");
    assert!(
        triads
            .iter()
            .all(|l| *l == "launch triad 4 1024 triad_u1_cs"),
        "{log}"
    );
}

#[test]
fn a_shape_that_cannot_run_is_one_line_naming_it() {
    usage_error(
        &["run", "--backend", "sim", "--shape", "w16.u3.b256.wave"],
        "--shape <ID>': \"w16.u3.b256.wave\" names no build (w16.u3)",
    );
    usage_error(
        &["run", "--backend", "sim", "--shape", "w16.u4.b1024.wave"],
        "allows 256 at most",
    );
    usage_error(
        &["run", "--array-size", "1M", "--shape", "w16.u1.b256.cover"],
        "--shape 'w16.u1.b256.cover': launch shapes are a GPU's",
    );
    usage_error(
        &["tune", "--backend", "sim", "--shape", "w16.u1.b256.cover"],
        "membw tune searches every shape",
    );
    usage_error(
        &["tune", "--backend", "sim", "-o", "/tmp/membw-never.jsonl"],
        "keeps no results file",
    );
}
