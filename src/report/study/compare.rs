//! Two results files side by side: every point measured in both, with B/A,
//! its interval and what it decides.

use super::*;
use crate::kernels::KernelId;
use crate::results::Record;
use crate::results::estimate::{Change, Comparison, LEVEL, NOISE_THRESHOLD};
use crate::units::Bytes;
use std::collections::BTreeMap;

/// Two result sets side by side, matched by point, with B/A ratios.
pub fn compare(a: &[Record], b: &[Record], kernel: KernelId, markdown: bool) -> String {
    let (ia, ib) = (index(a, kernel), index(b, kernel));
    let mut keys: Vec<&String> = ia.keys().chain(ib.keys()).collect();
    keys.sort();
    keys.dedup();
    let name = kernel.spec().name;
    // Each row at 1 - 5 %/m (Bonferroni): a change read anywhere in the
    // table is wrong less than 5 % of the time, however many points.
    let paired = keys
        .iter()
        .filter(|k| ia.contains_key(**k) && ib.contains_key(**k))
        .count();
    let level = 1.0 - (1.0 - LEVEL) / paired.max(1) as f64;
    let mut changes = [0usize; 4];
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            let (la, va, ta) = ia
                .get(*k)
                .map_or((None, None, true), |(l, v, t)| (Some(l), Some(v), *t));
            let (lb, vb, tb) = ib
                .get(*k)
                .map_or((None, None, true), |(l, v, t)| (Some(l), Some(v), *t));
            let label = la.or(lb).cloned().unwrap_or_default();
            let rate = |v: Option<&Vec<f64>>| {
                v.and_then(|v| crate::results::Stats::of(v))
                    .map_or("-".to_string(), |s| match s.interval() {
                        Some(i) => format!("{:.2} ± {:.2}", s.mean, i.half_width()),
                        None => format!("{:.2}", s.mean),
                    })
            };
            let c = match (va, vb) {
                (Some(x), Some(y)) => Comparison::of(x, y, level),
                _ => None,
            };
            let doubt = match (ta, tb) {
                (true, true) => None,
                (false, true) => Some("NOT TRUSTED (A)"),
                (true, false) => Some("NOT TRUSTED (B)"),
                (false, false) => Some("NOT TRUSTED (A, B)"),
            };
            let (ratio, interval, verdict) = match c {
                // Other work shared the node: no decision on it.
                Some(c) if doubt.is_some() => {
                    changes[3] += 1;
                    (
                        format!("{:.3}", c.ratio),
                        "-".into(),
                        doubt.unwrap_or_default().into(),
                    )
                }
                Some(c) => {
                    changes[match c.change {
                        Change::Higher => 0,
                        Change::Lower => 1,
                        Change::NoChange => 2,
                        Change::NotResolved => 3,
                    }] += 1;
                    (
                        format!("{:.3}", c.ratio),
                        c.interval
                            .map_or("-".into(), |i| format!("{:.3}–{:.3}", i.low, i.high)),
                        super::super::change_word(&c),
                    )
                }
                None => ("-".into(), "-".into(), "-".into()),
            };
            vec![label, rate(va), rate(vb), ratio, interval, verdict]
        })
        .collect();
    let t = Table {
        headers: vec![
            "point".into(),
            format!("A {name} GB/s"),
            format!("B {name} GB/s"),
            "B/A".into(),
            format!("{} % CI", super::super::level_text(level)),
            "change".into(),
        ],
        rows,
        best: None,
    };
    let host = |rs: &[Record]| {
        rs.first().map_or("?".to_string(), |r| {
            format!("{} ({})", r.host.hostname, r.started)
        })
    };
    let mut out = format!("A: {}\nB: {}\n\n", host(a), host(b));
    out.push_str(&if markdown { t.markdown() } else { t.plain() });
    let [higher, lower, same, unresolved] = changes;
    out.push_str(&format!(
        "\n{} in both: {higher} higher, {lower} lower, {same} no change, {unresolved} not resolved\n",
        plural(higher + lower + same + unresolved, "point")
    ));
    if paired == 0 && !ia.is_empty() && !ib.is_empty() {
        out.push_str(&none_in_both(a, b));
    }
    out.push_str(&columns_legend(level));
    out
}

/// Why no point of A is in B: the parts of a point (placement, threads,
/// memory policy, ...) whose values in A and in B have none in common, and
/// where to go for different configurations side by side.
fn none_in_both(a: &[Record], b: &[Record]) -> String {
    use serde_json::{Map, Value};
    let parts = |rs: &[Record]| -> Vec<Map<String, Value>> {
        rs.iter()
            .filter_map(|r| match serde_json::to_value(r.identity()) {
                Ok(Value::Object(m)) => Some(m),
                _ => None,
            })
            .collect()
    };
    let (pa, pb) = (parts(a), parts(b));
    let mut names: Vec<&String> = pa.iter().chain(&pb).flat_map(|m| m.keys()).collect();
    names.sort();
    names.dedup();
    let differ: Vec<&str> = names
        .into_iter()
        .filter(|name| {
            let values = |ps: &[Map<String, Value>]| -> Vec<Value> {
                ps.iter()
                    .map(|m| m.get(*name).cloned().unwrap_or(Value::Null))
                    .collect()
            };
            let vb = values(&pb);
            values(&pa).iter().all(|v| !vb.contains(v))
        })
        .map(|name| match name.as_str() {
            "placement" => "placement (the CPUs used)",
            "working_set_per_thread" => "size",
            "mem" => "memory policy",
            other => other,
        })
        .collect();
    let what = match differ.as_slice() {
        [] => "no part alone: each point of one differs from every point of the other".to_string(),
        parts => parts.join(", "),
    };
    format!(
        "no point is in both: compare pairs the same configuration measured twice,\n  \
         and A's points differ from B's in {what};\n  \
         different configurations side by side: membw report FILE_A FILE_B\n"
    )
}

/// What `compare` needs of each point, by its key: its label, its trusted
/// runs' best rates of `kernel` (every run's where none is trusted), and
/// whether any run is.
type Indexed = BTreeMap<String, (String, Vec<f64>, bool)>;

fn index(rs: &[Record], kernel: KernelId) -> Indexed {
    rs.iter()
        .filter_map(|r| {
            let what = match r.point.device_name() {
                Some(_) => super::configuration(r),
                None => format!(
                    "{} × {} · {} · {}",
                    r.point.placement_text(),
                    r.point.threads,
                    r.point.mem_text(),
                    r.stores_label()
                ),
            };
            let label = format!(
                "{}{what}{}",
                r.point
                    .program()
                    .map_or(String::new(), |p| format!("{p} · ")),
                if r.point.working_set_per_thread > 0 {
                    let per = r.point.per();
                    format!(" · {}/{per}", Bytes(r.point.working_set_per_thread))
                } else {
                    String::new()
                }
            );
            // Each run judged on its own, as `report` does: the trusted
            // runs' rates; every run's where none is (and no decision).
            let trust = r.kernel_trust(kernel);
            let trusted = !trust.none();
            let rates = match trusted {
                true => trust.rates,
                false => r.best_rates(kernel),
            };
            (!rates.is_empty()).then(|| (r.identity_key(), (label, rates, trusted)))
        })
        .collect()
}

/// What the columns of `compare`'s table mean, with the level of its rows.
fn columns_legend(level: f64) -> String {
    format!(
        "GB/s: mean ± its {mean_level:.0} % confidence interval over the trusted runs' best rates\n\
         B/A: the ratio of their geometric means, its interval by Welch's t on their logarithms\n  \
         at {row_level} % per point, so that the table as a whole holds at {mean_level:.0} %\n\
         no change: the interval holds 1, or the change is under {noise:.0} % (run-to-run noise)\n\
         not resolved: one run each (sweep --repeat 3 gives each point an interval), or a side\n  \
         NOT TRUSTED (no run trusted for the kernel: see membw report)\n",
        mean_level = 100.0 * LEVEL,
        row_level = super::super::level_text(level),
        noise = 100.0 * NOISE_THRESHOLD,
    )
}
