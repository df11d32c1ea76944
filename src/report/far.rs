//! The tier study (`membw sweep --far-share 0,10,... --far-node N`): the
//! same run at several shares of each thread's pages on a far memory node
//! (CXL, HBM, another socket), the rest on the near one. It answers what
//! admins ask of a node with two tiers: which split is best, how much it
//! gives over near memory alone, and how much the worst split costs.

use crate::kernels::KernelId;
use crate::results::Record;
use std::collections::BTreeMap;

/// The memory policy text of one point of the study.
pub fn split_text(near: usize, far: usize, far_percent: f64) -> String {
    let t = crate::units::trim_float;
    format!(
        "split:{near}={}%,{far}={}%",
        t(100.0 - far_percent),
        t(far_percent)
    )
}

/// One kernel's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelFinding {
    pub kernel: KernelId,
    /// Mean GB/s at each far share (%), ascending.
    pub by_share: Vec<(f64, f64)>,
    pub best_share: f64,
    pub best_gb_s: f64,
    /// Near memory only (share 0), when measured.
    pub near_only_gb_s: Option<f64>,
    pub worst_share: f64,
    pub worst_gb_s: f64,
}

impl KernelFinding {
    /// The best share's gain over near memory alone, in %.
    pub fn gain_percent(&self) -> Option<f64> {
        self.near_only_gb_s
            .map(|n| (self.best_gb_s / n - 1.0) * 100.0)
    }

    /// The worst share's loss against near memory alone, in %.
    pub fn loss_percent(&self) -> Option<f64> {
        self.near_only_gb_s
            .map(|n| ((1.0 - self.worst_gb_s / n) * 100.0).max(0.0))
    }
}

/// The study in `records`: its near and far node and each kernel's
/// finding; `None` unless the records hold at least two far shares of one
/// near/far pair.
pub fn study(records: &[Record]) -> Option<(usize, usize, Vec<KernelFinding>)> {
    let points: Vec<(&Record, (usize, usize, f64))> = records
        .iter()
        .filter_map(|r| Some((r, r.point.mem.as_ref()?.far_share()?)))
        .collect();
    let (_, (near, far, _)) = *points.first()?;
    let kernels: std::collections::BTreeSet<KernelId> = points
        .iter()
        .flat_map(|(r, _)| r.stats.keys().copied())
        .collect();
    let mut findings = Vec::new();
    for kernel in kernels {
        // Several records at one share (repeats, threads): keep the best mean.
        let mut by: BTreeMap<u64, f64> = BTreeMap::new();
        for (r, (n, f, share)) in &points {
            if (*n, *f) != (near, far) {
                continue;
            }
            if let Some(s) = r.stats.get(&kernel) {
                let slot = by.entry((share * 100.0).round() as u64).or_insert(0.0);
                *slot = slot.max(s.mean);
            }
        }
        if by.len() < 2 {
            continue;
        }
        let by_share: Vec<(f64, f64)> = by.iter().map(|(&s, &g)| (s as f64 / 100.0, g)).collect();
        let best = by_share
            .iter()
            .copied()
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        let worst = by_share
            .iter()
            .copied()
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        findings.push(KernelFinding {
            kernel,
            near_only_gb_s: by_share.iter().find(|p| p.0 == 0.0).map(|p| p.1),
            best_share: best.0,
            best_gb_s: best.1,
            worst_share: worst.0,
            worst_gb_s: worst.1,
            by_share,
        });
    }
    (!findings.is_empty()).then_some((near, far, findings))
}

/// The study's lines for the sweep summary and `membw report`.
pub fn findings(records: &[Record]) -> Vec<String> {
    let Some((near, far, kernels)) = study(records) else {
        return Vec::new();
    };
    let pct = |v: Option<f64>, sign: &str| v.map_or("-".to_string(), |v| format!("{sign}{v:.1} %"));
    let mut lines = vec![
        format!(
            "Tier study: near node {near}, far node {far} (share of each thread's pages on the far node)"
        ),
        format!(
            "  {:<8} {:>10} {:>9} {:>10} {:>9} {:>11} {:>9}",
            "kernel", "best share", "GB/s", "near only", "gain", "worst share", "loss"
        ),
    ];
    for k in &kernels {
        lines.push(format!(
            "  {:<8} {:>8} % {:>9.2} {:>10} {:>9} {:>9} % {:>9}",
            k.kernel.spec().name,
            crate::units::trim_float(k.best_share),
            k.best_gb_s,
            k.near_only_gb_s
                .map_or("-".to_string(), |g| format!("{g:.2}")),
            pct(k.gain_percent(), "+"),
            crate::units::trim_float(k.worst_share),
            pct(k.loss_percent(), "-"),
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_texts_round_trip() {
        assert_eq!(split_text(0, 2, 25.0), "split:0=75%,2=25%");
        let share = |t: &str| {
            crate::memory::written::PolicySpec::parse(t)
                .unwrap()
                .far_share()
        };
        assert_eq!(share(&split_text(0, 2, 25.0)), Some((0, 2, 25.0)));
        assert_eq!(share(&split_text(0, 1, 12.5)), Some((0, 1, 12.5)));
        assert_eq!(share("bind:0"), None);
    }
}
