//! A fleet's GPUs: `membw report` over per-GPU run documents ranks the
//! GPUs one by one, as it ranks nodes, the slow one named among its like
//! GPUs (the simulated devices stand for them).

use crate::common::{SIM_SMALL, membw};

#[test]
fn a_fleets_gpu_files_are_ranked_gpu_by_gpu() {
    // Each GPU's own run document, as `membw run --backend cuda:N --json`
    // on every node writes them: one row per host and GPU, the slow one
    // named among its like GPUs.
    let dir = crate::common::scratch_dir();
    let mut files = Vec::new();
    for i in 0..4 {
        let out = membw()
            .env("MEMBW_SIM_DEVICE", "slow=2:0.2")
            .args(["run", "--backend", &format!("sim:{i}"), "--json"])
            .args(SIM_SMALL)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let doc = out.stdout;
        let file = dir.path().join(format!("gpu{i}.json"));
        std::fs::write(&file, doc).unwrap();
        files.push(file.to_str().unwrap().to_string());
    }
    let out = membw().arg("report").args(&files).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for i in 0..4 {
        crate::common::assert_contains(&text, &format!("/sim{i} "));
    }
    let slow = text
        .lines()
        .find(|l| l.starts_with("Slow nodes:"))
        .unwrap_or_default();
    assert!(slow.contains("/sim2"), "{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
}
