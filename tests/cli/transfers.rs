//! Transfers between a simulated device and host memory (`--kernels
//! transfers`, src/backend/sim.rs): the host buffers are placed by `--mem`,
//! checked page by page, and a sweep over host nodes is an ordinary sweep
//! through report, compare and `--resume`.

use crate::common::{SIM_SMALL as SMALL, membw, run_on, stdout};
use serde_json::Value;

/// The first host node with memory, as `topo` sees it.
fn first_memory_node() -> String {
    let topo: Value = serde_json::from_str(&stdout(&["topo", "--json"])).unwrap();
    let nodes = topo["topology"]["nodes"].as_array().unwrap();
    let with_memory = nodes
        .iter()
        .find(|n| n["mem_total"].as_u64().unwrap_or(0) > 0);
    with_memory
        .map_or(0, |n| n["id"].as_u64().unwrap())
        .to_string()
}

/// `--kernels transfers`: each way and both at once, by the copy engine,
/// then by the device's threads.
const TRANSFERS: [&str; 6] = [
    "h2d", "d2h", "bidir", "h2d-kernel", "d2h-kernel", "bidir-kernel",
];

#[test]
fn transfers_cross_the_host_link_from_a_pinned_buffer_on_the_node_asked_for() {
    let node = first_memory_node();
    let bind = format!("bind:{node}");
    let text = run_on(
        "sim:1",
        &["--kernels", "transfers", "--mem", &bind, "--format", "json"],
    );
    let doc: Value = serde_json::from_str(&text).unwrap();
    let m = &doc["measurement"];
    assert_eq!(m["validation"]["passed"], true, "{}", m["validation"]);
    let kernels: Vec<&str> = (m["results"].as_array().unwrap().iter())
        .map(|r| r["kernel"].as_str().unwrap())
        .collect();
    // Each way and both at once, by the copy engine and by the device's
    // own threads, all validated.
    assert_eq!(kernels, TRANSFERS);
    // The host buffers, and only they, are host memory checked page by
    // page: all of it on the node asked for.
    let pages = m["pages"].as_array().unwrap();
    let arrays: Vec<&str> = pages.iter().map(|p| p["array"].as_str().unwrap()).collect();
    assert_eq!(arrays, ["h", "r"], "{pages:?}");
    for p in pages {
        assert_eq!(p["policy"], bind.as_str());
        assert_eq!(p["held"], true, "{p}");
        assert_eq!(p["nodes"][&node], 1.0, "{p}");
        assert_eq!(p["pages_missing"], 0, "{p}");
    }
    assert_eq!(m["mem_policy"], bind.as_str());
    // A transfer's share is of the host link's peak (both ways for bidir),
    // a kernel of the device's memory is of its memory's.
    let best = |k: &str| {
        (m["results"].as_array().unwrap().iter())
            .find(|r| r["kernel"] == k)
            .map(|r| r["best_rate_mb_s"].as_f64().unwrap() / 1000.0)
            .unwrap()
    };
    let share = |k: &str| doc["peak"]["percent_of_peak"][k].as_f64().unwrap();
    assert!(
        (share("h2d") - 100.0 * best("h2d") / (32.0 * 16.0 * 128.0 / 130.0 / 8.0)).abs() < 0.01
    );
    assert!((share("bidir") - 100.0 * best("bidir") / 126.0).abs() < 0.01);
    assert!((share("bidir-kernel") - 100.0 * best("bidir-kernel") / 126.0).abs() < 0.01);

    // A record keeps where the pages were; a wrong element sent back is
    // named in its host buffer.
    let mut args = vec!["run", "--backend", "sim", "--kernels", "d2h"];
    args.extend(SMALL);
    let out = membw()
        .args(&args)
        .env("MEMBW_SIM_DEVICE", "wrong-element=5")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    crate::common::assert_contains(&stderr, "Failed Validation: array r:");
}

#[test]
fn a_sweep_of_transfers_over_host_nodes_is_an_ordinary_sweep() {
    let dir = crate::common::scratch_dir();
    let file = dir.path().join("transfers.jsonl");
    let file = file.to_string_lossy();
    let node = first_memory_node();
    let bind = format!("bind:{node}");
    let mut args = vec!["sweep", "--backend", "sim:2", "--kernels", "transfers"];
    args.extend(SMALL);
    args.extend(["--mem", &bind, "--mem", "local", "-o", &file]);
    stdout(&args);
    let records: Vec<Value> = (std::fs::read_to_string(&*file).unwrap().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r.get("point").is_some())
        .collect();
    assert_eq!(records.len(), 2);
    for (r, mem) in records.iter().zip([bind.as_str(), "local"]) {
        assert_eq!(r["point"]["mem"], mem, "{r}");
        assert_eq!(r["point"]["target"]["name"], "sim2");
        assert_eq!(r["point"]["kernels"], serde_json::json!(TRANSFERS));
        let on = r["runs"][0]["pages_on_nodes"].as_object().unwrap();
        assert!((on.values().map(|v| v.as_f64().unwrap()).sum::<f64>() - 1.0).abs() < 1e-9);
    }
    assert_eq!(records[0]["runs"][0]["pages_on_nodes"][&node], 1.0);
    // The report and the comparison tell the two points apart by where
    // the host buffers were; the device's name and its link peak's share.
    let report = stdout(&["report", &file, "--kernel", "d2h"]);
    crate::common::assert_contains(&report, "device  host mem  ");
    crate::common::assert_contains(&report, &format!("sim2    {bind}"));
    // The row of the device's own node is marked, by where the pages were.
    let own = records[0]["runs"][0]["target"]["numa_node"].as_u64();
    if own.map(|n| n.to_string()) == Some(node.clone()) {
        assert!(
            report.contains(&format!("sim2    {bind} (own)")),
            "{report}"
        );
        assert!(report.contains("(own): the host buffers were on the device's own NUMA node"));
    } else {
        assert!(!report.contains(" (own)"), "{report}");
    }
    crate::common::assert_contains(
        &report,
        "(of its host link for a transfer; both ways for arrays in host memory)",
    );
    let compare = stdout(&["compare", &file, &file, "--kernel", "bidir"]);
    assert!(
        compare.contains(&format!("device sim2 (host buffers {bind})"))
            && compare.contains("device sim2 (host buffers local)"),
        "{compare}"
    );
    // Resumed, it has nothing left to measure.
    let resumed = membw()
        .args(["sweep", "--resume", &*file])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    crate::common::assert_contains(&stderr, "(2 points already there)");
    let again = std::fs::read_to_string(&*file).unwrap();
    assert_eq!(again.lines().filter(|l| l.contains("\"point\"")).count(), 2);
}
