//! node_exporter's textfile format (`*.prom`): HELP and TYPE once per
//! metric, base units (bytes per second, seconds), labels for kernel and
//! scope, and the time of the measurement.

mod fabric;
mod memory;

use crate::health::Scope;
use crate::health::verdict::Verdict;
use crate::results::RunReport;
use crate::results::latency_record::{LatencyExperiment, LatencyReport};
use crate::results::targets::Device;
use std::fmt::Write;

/// A metric's samples: its labels (`kernel="triad",scope="node"`) and value.
type Series = Vec<(String, f64)>;

/// Metrics under one name: its HELP and TYPE, then each sample.
struct Metric<'a> {
    name: &'a str,
    help: &'a str,
    samples: Vec<(String, f64)>,
}

fn render(metrics: &[Metric]) -> String {
    let mut o = String::new();
    for m in metrics.iter().filter(|m| !m.samples.is_empty()) {
        let _ = writeln!(o, "# HELP {} {}", m.name, escaped(m.help, false));
        let _ = writeln!(o, "# TYPE {} gauge", m.name);
        for (labels, v) in &m.samples {
            if labels.is_empty() {
                let _ = writeln!(o, "{} {}", m.name, number(*v));
            } else {
                let _ = writeln!(o, "{}{{{labels}}} {}", m.name, number(*v));
            }
        }
    }
    o
}

/// Prometheus floats: finite ones as Rust prints them, the rest spelled out.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{v}")
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn label(value: &str) -> String {
    escaped(value, true)
}

/// `value` escaped as the format says, `\` and newlines (and `"` in a
/// label): a help line too may come from a record (a vendor's counter).
fn escaped(value: &str, in_label: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' if in_label => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            // The format escapes nothing else: any other character that
            // could end a line is written as membw's escape of it, its
            // backslash escaped, so that the value reads `\u{1b}`.
            c if crate::untrusted::needs_escape(c) => {
                out.push_str(&format!("\\\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// A scope's labels; a device's scope carries its device's (gpu, uuid),
/// found by index among those the verdict checked.
fn scope_labels(scope: Scope, v: &Verdict) -> String {
    let device = |i: u32| {
        let d: Option<&Device> = (v.device.iter())
            .chain(&v.devices)
            .find(|d| d.id.index == i);
        d.map_or(format!("scope=\"device\",device=\"{i}\""), |d| {
            labels(&d.labels())
        })
    };
    scope.labels(device)
}

/// Labels as Prometheus writes them: `name="value",…`, values escaped.
fn labels(pairs: &[(&str, String)]) -> String {
    (pairs.iter())
        .map(|(name, value)| format!("{name}=\"{}\"", label(value)))
        .collect::<Vec<_>>()
        .join(",")
}

const BANDWIDTH: &str = "membw_bandwidth_bytes_per_second";
const BANDWIDTH_HELP: &str = "Best sustained memory bandwidth of a kernel, by scope (the node, or one NUMA domain on its own memory).";

/// Whether the tick counters saw the node quiet while it was measured: 1,
/// or 0 when other work or steal shared its CPUs; no sample when nothing
/// was watched (another program's run).
fn trusted<'a>(
    name: &'a str,
    what: &str,
    watched: impl IntoIterator<Item = Option<&'a crate::trust::Interference>>,
) -> Metric<'a> {
    // A window the counters could not judge says nothing either way.
    let seen: Vec<&crate::trust::Interference> = (watched.into_iter().flatten())
        .filter(|i| i.not_judged.is_none())
        .collect();
    Metric {
        name,
        help: match what {
            "check" => {
                "1 when no other work or steal shared the CPUs during the last membw check, 0 when it did (its figures may be low)."
            }
            "latency" => {
                "1 when no other work or steal shared the CPUs during the last membw latency, 0 when it did (its latencies may be high)."
            }
            _ => {
                "1 when no other work or steal shared the CPUs during the last membw run, 0 when it did (its rates may be low)."
            }
        },
        samples: (!seen.is_empty())
            .then(|| {
                (
                    String::new(),
                    if seen.iter().any(|i| i.busy) {
                        0.0
                    } else {
                        1.0
                    },
                )
            })
            .into_iter()
            .collect(),
    }
}

/// When a command's measurement ended, as its own metric.
fn timestamp<'a>(name: &'a str, help: &'a str, rfc3339: &str) -> Metric<'a> {
    Metric {
        name,
        help,
        samples: epoch(rfc3339)
            .map(|t| (String::new(), t))
            .into_iter()
            .collect(),
    }
}

/// The seconds since the epoch of an RFC 3339 timestamp.
fn epoch(timestamp: &str) -> Option<f64> {
    humantime::parse_rfc3339(timestamp)
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs_f64())
}

/// `membw check --prom`.
/// `fabrics`: each GPU platform's fabric, as the registry lists them.
pub fn check(v: &Verdict, fabrics: &[&crate::results::targets::FabricKind]) -> String {
    let bw = v
        .rates
        .iter()
        .map(|r| {
            (
                format!(
                    "kernel=\"{}\",{}",
                    r.kernel.spec().name,
                    scope_labels(r.scope, v)
                ),
                r.gb_s * 1e9,
            )
        })
        .collect();
    let ratio = v
        .findings
        .iter()
        .map(|f| {
            let against = serde_json::to_value(f.against)
                .ok()
                .and_then(|a| a.as_str().map(str::to_string))
                .unwrap_or_default();
            let cpu = f.cpu.map_or(String::new(), |c| format!(",cpu=\"{c}\""));
            (
                format!(
                    "kernel=\"{}\",{},against=\"{against}\"{cpu}",
                    f.kernel.spec().name,
                    scope_labels(f.scope, v)
                ),
                f.ratio,
            )
        })
        .collect();
    let (fabrics, memory) = (
        fabric::metrics(v, fabrics),
        memory::metrics(&v.memory_errors),
    );
    let (gpu_memory, unknown) = (memory::gpu_metrics(v), memory::unknown_metrics(v));
    let mut metrics = vec![
        Metric {
            name: "membw_check_healthy",
            help: "1 when the last membw check passed, 0 when it found the node unhealthy.",
            samples: vec![(String::new(), if v.healthy { 1.0 } else { 0.0 })],
        },
        Metric {
            name: "membw_check_ratio",
            help: "Best measured bandwidth over its reference (baseline, other NUMA domains or share of peak).",
            samples: ratio,
        },
        Metric {
            name: BANDWIDTH,
            help: BANDWIDTH_HELP,
            samples: bw,
        },
        Metric {
            name: "membw_check_baseline_busy",
            help: "1 when the baseline of the last membw check was made on a busy node (--allow-busy): a slow node may pass against it.",
            samples: vec![(
                String::new(),
                if v.baseline_interference.is_some() {
                    1.0
                } else {
                    0.0
                },
            )],
        },
        Metric {
            name: "membw_peer_bandwidth_bytes_per_second",
            help: "Best copy between two GPUs of a device set, by source (gpu), destination (peer), method and path (direct or staged).",
            samples: peer_samples(v),
        },
    ];
    metrics.extend(made(&fabrics));
    metrics.extend(made(&memory));
    metrics.extend(made(&gpu_memory));
    metrics.extend(made(&unknown));
    metrics.extend([
        Metric {
            name: "membw_check_hardware_findings",
            help: "Hardware faults the last membw check found whatever the rates (memory errors, a DIMM unlike its siblings, XIDs, a link trained low): each is a line of its verdict.",
            samples: vec![(String::new(), v.differences.len() as f64)],
        },
        trusted("membw_check_trusted", "check", [Some(&v.interference)]),
        Metric {
            name: "membw_check_duration_seconds",
            help: "Wall time the last membw check took.",
            samples: vec![(String::new(), v.elapsed_s)],
        },
        timestamp(
            "membw_check_timestamp_seconds",
            "When the last membw check ended, seconds since the epoch.",
            &v.timestamp,
        ),
    ]);
    render(&metrics)
}

/// Metrics whose names and help were made at run time (a platform's
/// fabric) or kept apart (memory errors), as `render` takes them.
fn made<'a, N: AsRef<str>, H: AsRef<str>>(
    metrics: &'a [(N, H, Series)],
) -> impl Iterator<Item = Metric<'a>> {
    (metrics.iter()).map(|(name, help, samples)| Metric {
        name: name.as_ref(),
        help: help.as_ref(),
        samples: samples.clone(),
    })
}

/// A set's pairs, one series each: the source's labels (gpu, uuid) and
/// the destination's as `peer`.
fn peer_samples(v: &Verdict) -> Vec<(String, f64)> {
    let name = |i: u32| {
        (v.devices.iter())
            .find(|d| d.id.index == i)
            .map_or(i.to_string(), |d| format!("{}:{}", d.id.backend, i))
    };
    (v.pairs.iter())
        .filter_map(|c| {
            let rate = c.best_gb_s?;
            let labels = format!(
                "{},peer=\"{}\",method=\"{}\",path=\"{}\"",
                scope_labels(Scope::Device(c.from), v),
                label(&name(c.to)),
                label(&c.method),
                label(&c.path)
            );
            Some((labels, rate * 1e9))
        })
        .collect()
}

/// `membw run --prom`: each kernel's best rate over the node's threads.
/// What a run measured, as labels: the node's threads and stores, or a
/// device by name (it has neither).
fn target_labels(m: &crate::results::Measurement) -> String {
    let target = m.target();
    match target.labels() {
        named if !named.is_empty() => labels(&named),
        _ => format!(
            "scope=\"node\",threads=\"{}\",stores=\"{}\"",
            m.threads.len(),
            m.stores.map_or("unknown", |s| s.name())
        ),
    }
}

/// The host NUMA node that held a device's host buffers, as their pages
/// were found (what happened, not the policy asked for): the node with
/// nine tenths of them, `mixed` where none has, absent without buffers.
fn host_node(m: &crate::results::Measurement) -> Option<String> {
    let buffers: Vec<_> = (m.pages.iter())
        .filter(|p| p.array == "h" || p.array == "r")
        .collect();
    let first = buffers.first()?;
    let (&node, _) = (first.nodes.iter()).find(|(_, share)| **share >= 0.9)?;
    let all = (buffers.iter()).all(|p| p.nodes.get(&node).is_some_and(|s| *s >= 0.9));
    Some(if all {
        node.to_string()
    } else {
        "mixed".into()
    })
}

pub fn run(r: &RunReport) -> String {
    let target = target_labels(&r.measurement);
    let host_node = host_node(&r.measurement);
    let bw = r
        .measurement
        .results
        .iter()
        .map(|k| {
            let spec = k.kernel.spec();
            let node = match &host_node {
                Some(n) if spec.arrays().any(crate::kernels::ArrayId::host_buffer) => {
                    format!(",host_node=\"{n}\"")
                }
                _ => String::new(),
            };
            (
                format!("kernel=\"{}\",{target}{node}", spec.name),
                k.best_rate_mb_s * 1e6,
            )
        })
        .collect();
    render(&[
        Metric {
            name: BANDWIDTH,
            help: BANDWIDTH_HELP,
            samples: bw,
        },
        Metric {
            name: "membw_peak_bytes_per_second",
            help: "Theoretical peak the last membw run is held against: the sockets its threads ran on, or a device's own.",
            samples: (r.peak.iter())
                .map(|p| (target.clone(), p.used_gb_s * 1e9))
                .collect(),
        },
        Metric {
            name: "membw_host_link_peak_bytes_per_second",
            help: "Theoretical peak of the link between the host and the measured device's memory, each way, as its backend declares it.",
            samples: (r.measurement.target().host_link_peak().iter())
                .map(|p| (target.clone(), p.node_gb_s() * 1e9))
                .collect(),
        },
        trusted(
            "membw_run_trusted",
            "run",
            [r.measurement.interference.as_ref()],
        ),
        timestamp(
            "membw_run_timestamp_seconds",
            "When the last membw run ended, seconds since the epoch.",
            &r.timestamp,
        ),
    ])
}

/// `membw latency --prom`: the median load-to-use latency per working set.
pub fn latency(r: &LatencyReport) -> String {
    // Loaded points differ by mix and delay too: they stay in the JSON.
    let samples = r
        .records
        .iter()
        .filter(|rec| rec.point.study != LatencyExperiment::Loaded)
        .map(|rec| {
            let p = &rec.point;
            let study = serde_json::to_value(p.study)
                .ok()
                .and_then(|s| s.as_str().map(str::to_string))
                .unwrap_or_default();
            (
                format!(
                    "study=\"{study}\",cpu=\"{}\",mem=\"{}\",working_set_bytes=\"{}\"{}{}",
                    p.cpu,
                    label(&p.mem.to_string()),
                    p.bytes,
                    // Chases are told apart by their order.
                    rec.latency
                        .order
                        .map_or(String::new(), |o| format!(",chase=\"{o}\"")),
                    // A core-to-core pair is told apart by its other CPU
                    // and the state of its line.
                    p.peer_cpu.map_or(String::new(), |b| format!(
                        ",peer_cpu=\"{b}\",line=\"{}\"",
                        p.line.unwrap_or(crate::latency::record::C2cLine::Modified)
                    ))
                ),
                rec.latency.p50_ns * 1e-9,
            )
        })
        .collect();
    render(&[
        Metric {
            name: "membw_latency_seconds",
            help: "Median latency of one dependent load, by working set.",
            samples,
        },
        trusted(
            "membw_latency_trusted",
            "latency",
            r.records.iter().map(|rec| rec.interference.as_ref()),
        ),
        timestamp(
            "membw_latency_timestamp_seconds",
            "When the last membw latency ended, seconds since the epoch.",
            &r.timestamp,
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_follow_their_help_and_type_and_labels_are_escaped() {
        let text = render(&[
            Metric {
                name: "m_a",
                help: "A.",
                samples: vec![("k=\"1\"".into(), 2.5), ("k=\"2\"".into(), f64::NAN)],
            },
            Metric {
                name: "m_empty",
                help: "Never shown.",
                samples: vec![],
            },
            Metric {
                name: "m_b",
                help: "\"B\"\nm_b 1\\",
                samples: vec![(String::new(), 0.0)],
            },
        ]);
        assert_eq!(
            text,
            "# HELP m_a A.\n# TYPE m_a gauge\nm_a{k=\"1\"} 2.5\nm_a{k=\"2\"} NaN\n\
             # HELP m_b \"B\"\\nm_b 1\\\\\n# TYPE m_b gauge\nm_b 0\n"
        );
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        // A carriage return or an escape code cannot end or rewrite the line.
        assert_eq!(label("a\rb\u{1b}"), "a\\\\u{d}b\\\\u{1b}");
        assert_eq!(epoch("1970-01-01T00:01:40Z"), Some(100.0));
    }
}
