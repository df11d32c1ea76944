//! `membw latency` end to end: the documented JSON fields, the ordering of
//! the percentiles, and one-line errors for bad input.

mod common;

use common::{stdout, usage_error};

#[test]
fn latency_json_has_the_documented_fields() {
    let json = stdout(&[
        "latency",
        "--sizes",
        "16KiB,64KiB",
        "--time",
        "20ms",
        "--hugepages",
        "never",
        "--ghz",
        "2.5",
        "--format",
        "json",
    ]);
    let d: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(d["experiment"], "latency");
    assert_eq!(d["hugepages"], "never");
    assert_eq!(d["mem"], "local");
    assert_eq!(d["clock_ghz"], 2.5);
    let points = d["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for (p, bytes) in points.iter().zip([16 << 10, 64 << 10]) {
        assert_eq!(p["bytes"], bytes);
        assert_eq!(p["lines"], bytes / 64);
        let f = |k: &str| p[k].as_f64().unwrap();
        assert!(f("min_ns") > 0.0, "{p}");
        assert!(
            f("min_ns") <= f("p50_ns") && f("p50_ns") <= f("p90_ns") && f("p90_ns") <= f("p99_ns")
        );
        assert!((f("p50_cycles") - 2.5 * f("p50_ns")).abs() < 1e-9);
        assert!(p["chunks"].as_u64().unwrap() >= 5);
    }
    let text = stdout(&["latency", "--sizes", "8KiB", "--time", "10ms"]);
    assert!(text.contains("p50 ns") && text.contains("8 KiB"), "{text}");
}

#[test]
fn bad_latency_input_is_one_line() {
    usage_error(&["latency", "--cpu", "100000"], "--cpu 100000");
    usage_error(&["latency", "--sizes", "1TiB"], "--sizes");
    usage_error(&["latency", "--sizes", "64B"], "--sizes");
    // More than the machine has is refused before anything is mapped.
    let total_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    if total_kib < 30 << 20 {
        usage_error(&["latency", "--sizes", "32GiB"], "available");
    }
    usage_error(&["latency", "--sizes", "lots"], "--sizes");
    usage_error(&["latency", "--mem", "bind:99"], "--mem");
    usage_error(&["latency", "--mem", "a=local,b=bind:0"], "--mem");
    usage_error(&["latency", "--ghz", "0"], "--ghz");
}
