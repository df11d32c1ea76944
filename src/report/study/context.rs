//! What a set of records shares, for a report's header: host, machine,
//! experiment, kernels, repetitions, sizes, the peak, the caches.

// A new kind must be decided wherever kinds are matched.
#![deny(clippy::wildcard_enum_match_arm)]

use crate::results::{Measured, Record};
use crate::units::{Bytes, plural};

/// What a set of records shares: host, experiment, kernels, repetitions.
pub fn context(records: &[Record]) -> Vec<(String, String)> {
    let Some(first) = records.first() else {
        return Vec::new();
    };
    let h = &first.host;
    let uniq = |f: &dyn Fn(&Record) -> String| {
        let mut v: Vec<String> = records.iter().map(f).collect();
        v.sort();
        v.dedup();
        v.join(", ")
    };
    vec![
        ("host".into(), uniq(&|r| r.host.hostname.clone())),
        (
            "CPU".into(),
            h.cpu_model.clone().unwrap_or_else(|| "unknown".into()),
        ),
        (
            "machine".into(),
            format!(
                "{} · {} · {} CPUs · kernel {} · THP {}",
                plural(h.sockets, "socket"),
                plural(h.numa_nodes, "NUMA node"),
                h.online_cpus,
                h.kernel,
                h.thp_mode.as_deref().unwrap_or("unknown")
            ),
        ),
        (
            "experiment".into(),
            uniq(&|r| format!("{} started {}", r.experiment, r.started)),
        ),
        (
            "kernels".into(),
            uniq(&|r| {
                r.point
                    .kernels
                    .iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            }),
        ),
        (
            "repetitions".into(),
            uniq(&|r| {
                format!(
                    "{} × ntimes {}",
                    crate::units::plural(r.runs.len(), "run"),
                    r.point.ntimes
                )
            }),
        ),
        (
            "array size".into(),
            uniq(&|r| format!("{} elements", r.point.elements)),
        ),
        (
            "theoretical peak".into(),
            match (first.peak_gb_s, &first.peak_source, first.point.measured()) {
                // A device's peak is its own memory's, and says so.
                (Some(p), Some(src), Measured::Device(_)) => format!("{p:.1} GB/s: {src}"),
                (Some(p), Some(src), Measured::Team(_) | Measured::Program(..)) => {
                    format!("{p:.1} GB/s for the sockets used; {src}")
                }
                (None, ..) | (_, None, _) => "unknown".into(),
            },
        ),
        ("points".into(), records.len().to_string()),
    ]
    .into_iter()
    .chain(cache_per_thread(first))
    .collect()
}

/// The caches each thread had, where host CPUs did the work (a device's
/// arrays are in no host cache).
fn cache_per_thread(first: &Record) -> Option<(String, String)> {
    let caches: Vec<String> = (first.cache_per_thread.iter())
        .map(|(k, v)| format!("{k} {}", Bytes(*v)))
        .collect();
    (!caches.is_empty()).then(|| ("cache per thread".into(), caches.join(" · ")))
}
