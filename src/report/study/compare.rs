//! Two results files side by side: every point measured in both, with B/A.

use super::*;
use crate::kernels::KernelId;
use crate::plan::StoresRequest;
use crate::results::Record;
use crate::units::Bytes;
use std::collections::BTreeMap;

/// Two result sets side by side, matched by point, with B/A ratios.
pub fn compare(a: &[Record], b: &[Record], kernel: KernelId, markdown: bool) -> String {
    let index = |rs: &[Record]| -> BTreeMap<String, (String, f64)> {
        rs.iter()
            .filter_map(|r| {
                let label = format!(
                    "{}{} × {} · {} · {}{}",
                    r.point
                        .program
                        .as_ref()
                        .map_or(String::new(), |p| format!("{p} · ")),
                    r.point.placement,
                    r.point.threads,
                    r.point.mem,
                    r.stores_label(),
                    if r.point.working_set_per_thread > 0 {
                        format!(" · {}/thread", Bytes(r.point.working_set_per_thread))
                    } else {
                        String::new()
                    }
                );
                // Paired by the stores that ran: an `auto` point that ran
                // NT stores is the same measurement as an `nt` one.
                let mut point = r.point.clone();
                if let (StoresRequest::Auto, Some(ran)) =
                    (point.stores, r.runs.first().and_then(|run| run.stores))
                {
                    point.stores = match ran {
                        crate::kernels::StoreMode::Nt => StoresRequest::Nt,
                        _ => StoresRequest::Regular,
                    };
                }
                Some((point.key(), (label, r.stats.get(&kernel)?.mean)))
            })
            .collect()
    };
    let (ia, ib) = (index(a), index(b));
    let mut keys: Vec<&String> = ia.keys().chain(ib.keys()).collect();
    keys.sort();
    keys.dedup();
    let name = kernel.spec().name;
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            let (la, va) = ia
                .get(*k)
                .map_or((None, None), |(l, v)| (Some(l), Some(*v)));
            let (lb, vb) = ib
                .get(*k)
                .map_or((None, None), |(l, v)| (Some(l), Some(*v)));
            let label = la.or(lb).cloned().unwrap_or_default();
            let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
            let ratio = match (va, vb) {
                (Some(x), Some(y)) if x > 0.0 => format!("{:.3}", y / x),
                _ => "-".into(),
            };
            vec![label, f(va), f(vb), ratio]
        })
        .collect();
    let t = Table {
        headers: vec![
            "point".into(),
            format!("A {name} GB/s"),
            format!("B {name} GB/s"),
            "B/A".into(),
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
    out
}
