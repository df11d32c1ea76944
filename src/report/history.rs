//! A fleet's history for people: the fleet's median and spread, then each
//! node with its latest rate against its own past and against the fleet,
//! the flagged nodes first.

use crate::health::history::{Fleet, OUTLIER_Z};
use crate::kernels::KernelId;
use std::fmt::Write;

pub fn render(fleet: &Fleet, kernel: KernelId, files: usize, tolerance: f64) -> String {
    let mut o = String::new();
    let samples: usize = fleet.trends.iter().map(|t| t.samples.len()).sum();
    let _ = writeln!(
        o,
        "{} of {} nodes from {} files ({} samples) · fleet median {:.2} GB/s{}, MAD {:.2} GB/s",
        kernel.spec().name,
        fleet.trends.len(),
        files,
        samples,
        fleet.median,
        fleet.median_ci.map_or(String::new(), |i| format!(
            " (95 % CI {:.2}-{:.2}, of the nodes' latest)",
            i.low, i.high
        )),
        fleet.mad
    );
    let _ = writeln!(
        o,
        "flagged: below its own median by more than {:.0} %, or a modified z-score under {OUTLIER_Z} against the fleet\n",
        tolerance * 100.0
    );
    let _ = writeln!(
        o,
        "  {:<20} {:>7} {:>10} {:>10} {:>7} {:>7}  flag",
        "node", "samples", "latest", "own med.", "vs own", "z"
    );
    let mut rows: Vec<_> = fleet.trends.iter().collect();
    rows.sort_by_key(|t| (!(t.far_from_fleet || t.slower_than_history), t.host.clone()));
    for t in rows {
        let opt = |v: Option<f64>, p: usize| v.map_or("-".into(), |v| format!("{v:.p$}"));
        let mut flags = Vec::new();
        if t.slower_than_history {
            flags.push("slower than its history");
        }
        if t.far_from_fleet {
            flags.push("far below the fleet");
        }
        let line = format!(
            "  {:<20} {:>7} {:>10.2} {:>10} {:>7} {:>7}  {}",
            t.host,
            t.samples.len(),
            t.latest,
            opt(t.own_median, 2),
            opt(t.vs_own, 3),
            opt(t.robust_z, 1),
            flags.join(", ")
        );
        let _ = writeln!(o, "{}", line.trim_end());
    }
    o
}
