//! `membw check` and `membw baseline` for people: the verdict first, then
//! each scope and kernel against its reference.

use crate::health::rules::Against;
use crate::health::verdict::Verdict;
use crate::health::{Baseline, Scope};
use std::fmt::Write;

/// The verdict as text: a headline, the table, the differences and notes.
pub fn check(v: &Verdict) -> String {
    let mut o = String::new();
    let status = match (v.judged, v.healthy, v.unknown.len()) {
        (false, _, _) => "NOT JUDGED".to_string(),
        (true, true, 0) => "healthy".to_string(),
        (true, true, n) => format!("healthy, {} unknown", crate::units::plural(n, "input")),
        (true, false, _) => "UNHEALTHY".to_string(),
    };
    let _ = writeln!(
        o,
        "membw check: {status} · against {} · tolerance {:.0} % · {} in {:.1} s (budget {:.0} s)",
        v.against,
        v.tolerance * 100.0,
        crate::units::plural(v.rounds, "round"),
        v.elapsed_s,
        v.budget_s
    );
    if let Some(r) = &v.reason {
        let _ = writeln!(o, "{r}");
    }
    let mut small: Vec<(Scope, crate::results::Band)> = (v.rates.iter())
        .filter(|r| r.band != crate::results::Band::Memory)
        .map(|r| (r.scope, r.band))
        .collect();
    small.dedup();
    if let Some(line) = small_line(&small) {
        let _ = writeln!(o, "{line}");
    }
    for d in &v.devices {
        let _ = writeln!(o, "device {}: {}", d.id.index, d.describe());
    }
    if let Some(split) = &v.budget_split {
        let _ = writeln!(o, "budget: {split}");
    }
    if let Some(line) = pairs_line(&v.pairs) {
        let _ = writeln!(o, "{line}");
    }
    let w = scope_width(v.findings.iter().map(|f| f.scope));
    let _ = writeln!(
        o,
        "\n  {:<w$} {:<14} {:>10} {:>10} {:>7}  against",
        "scope", "kernel", "best GB/s", "reference", "ratio"
    );
    for f in &v.findings {
        let against = match f.against {
            Against::Baseline => "baseline",
            Against::OtherDomains => "other domains",
            Against::OtherDevices => "sibling devices",
            Against::Peak => "share of peak",
            Against::OtherThreads => "other threads",
        };
        let kernel = match f.cpu {
            Some(cpu) => format!("{} (CPU {cpu})", f.kernel.spec().name),
            None => f.kernel.spec().name.to_string(),
        };
        let cv = v
            .stability
            .iter()
            .find(|s| s.scope == f.scope && s.kernel == f.kernel)
            .map_or(String::new(), |s| format!(" · cv {:.1} %", s.cv * 100.0));
        let _ = writeln!(
            o,
            "  {:<w$} {:<14} {:>10.2} {:>10.2} {:>7.3}  {against}{}{cv}",
            f.scope.to_string(),
            kernel,
            f.measured_gb_s,
            f.reference_gb_s,
            f.ratio,
            if f.ok { "" } else { "  ← short" },
        );
    }
    for f in v.findings.iter().filter(|f| !f.ok) {
        if let Some(line) = short_decision(f, v.tolerance) {
            let _ = writeln!(o, "{line}");
        }
    }
    if !v.differences.is_empty() {
        o.push('\n');
    }
    for d in &v.differences {
        let _ = writeln!(o, "hardware: {d}");
    }
    for u in &v.unknown {
        let _ = writeln!(o, "unknown: {}", u.line());
    }
    for n in &v.notes {
        let _ = writeln!(o, "note: {n}");
    }
    if let Some(cause) = v.baseline_interference.as_ref().and_then(|i| i.cause()) {
        let _ = writeln!(
            o,
            "note: the baseline was made on a busy node (--allow-busy): {cause}; its rates may be low, so a slow node may pass against it"
        );
    }
    o
}

/// A set's pairs in one line: how many, the median and the slowest.
fn pairs_line(pairs: &[crate::results::peers::PeerCell]) -> Option<String> {
    let rates: Vec<f64> = pairs.iter().filter_map(|c| c.best_gb_s).collect();
    let median = crate::results::median(&rates)?;
    let slowest = (pairs.iter())
        .filter(|c| c.best_gb_s.is_some())
        .min_by(|a, b| {
            a.best_gb_s
                .partial_cmp(&b.best_gb_s)
                .unwrap_or(std::cmp::Ordering::Equal)
        })?;
    Some(format!(
        "pairs: {} ordered pairs by {}, best of {} each: median {median:.1} GB/s, slowest {} → {} {:.1} GB/s ({})",
        pairs.len(),
        slowest.method,
        slowest.rates.map_or(0, |s| s.n),
        slowest.from,
        slowest.to,
        slowest.best_gb_s.unwrap_or_default(),
        slowest.path
    ))
}

/// The scope column's width: its longest name (a device set's links are
/// long), at least the width the node's tables always had.
fn scope_width(scopes: impl Iterator<Item = Scope>) -> usize {
    scopes.map(|s| s.to_string().len()).fold(16, usize::max)
}

/// Whether a short finding is short beyond the noise of its rounds: its
/// rounds' mean and 95 % interval against the rate it had to reach.
fn short_decision(f: &crate::health::rules::Finding, tolerance: f64) -> Option<String> {
    let s = f.rounds?;
    let what = format!("{} {}", f.scope, f.kernel.spec().name);
    let line = f.line(tolerance);
    Some(match (s.interval(), f.short_resolved(tolerance)) {
        (Some(i), Some(true)) => format!(
            "{what}: short, resolved at 95 %: mean of {} rounds {:.2} GB/s ± {:.2}, all of its \
             interval below {line:.2} GB/s",
            s.n,
            s.mean,
            i.half_width()
        ),
        (Some(i), _) => format!(
            "{what}: short, not resolved: mean of {} rounds {:.2} GB/s ± {:.2} reaches \
             {line:.2} GB/s; a longer --budget would decide",
            s.n,
            s.mean,
            i.half_width()
        ),
        (None, _) => format!("{what}: short in its only round; a longer --budget would repeat it"),
    })
}

/// A baseline as text: per scope and kernel, the median round and spread.
// A new kind must be decided wherever kinds are matched.
#[deny(clippy::wildcard_enum_match_arm)]
pub fn baseline(b: &Baseline) -> String {
    // A device's baseline names the device, not only the host driving it.
    let mut devices: Vec<String> = (b.scopes.iter())
        .filter_map(|s| s.device.as_ref().map(|d| format!(" · {}", d.describe())))
        .collect();
    devices.dedup();
    let mut o = format!(
        "membw baseline · {} · {}{} · {}\n\n",
        b.hosts.join(", "),
        b.identity.cpu_model.as_deref().unwrap_or("unknown CPU"),
        devices.concat(),
        crate::units::plural(b.scopes.len(), "scope")
    );
    let w = scope_width(b.scopes.iter().map(|s| s.scope));
    let _ = writeln!(
        o,
        "  {:<w$} {:>7} {:<8} {:>11} {:>9} {:>7}",
        "scope", "threads", "kernel", "median GB/s", "best", "spread"
    );
    for s in &b.scopes {
        for (k, r) in &s.kernels {
            let _ = writeln!(
                o,
                "  {:<w$} {:>7} {:<8} {:>11.2} {:>9.2} {:>6.1} %",
                s.scope.to_string(),
                // A device's scope has no CPU threads.
                match s.scope {
                    Scope::Node | Scope::Numa(_) | Scope::NumaOn(..) => s.threads.to_string(),
                    Scope::Device(_) | Scope::HostLink(..) | Scope::DeviceOn(..) => "-".to_string(),
                },
                k.spec().name,
                r.median_gb_s,
                r.best_gb_s,
                r.spread * 100.0
            );
        }
    }
    if b.scopes.iter().all(|s| s.scope == Scope::Node) {
        o.push_str("\nOne NUMA domain: the node is the only scope.\n");
    }
    let small: Vec<_> = (b.scopes.iter())
        .filter(|s| s.band != crate::results::Band::Memory)
        .map(|s| (s.scope, s.band))
        .collect();
    if let Some(line) = small_line(&small) {
        let _ = writeln!(o, "\n{line}");
    }
    if let Some(cause) = b.made_busy().and_then(|i| i.cause()) {
        let _ = writeln!(
            o,
            "\nMade on a busy node (--allow-busy): {cause}. Its rates may be low, and every check against it says so."
        );
    }
    o
}

/// The line a small check or baseline (`--small`) carries: each scope
/// whose arrays were under STREAM's rule, and its band.
fn small_line(bands: &[(Scope, crate::results::Band)]) -> Option<String> {
    let scopes: Vec<String> = (bands.iter())
        .map(|(scope, band)| format!("{scope}: {}", band.words()))
        .collect();
    (!scopes.is_empty()).then(|| {
        format!(
            "small (--small), arrays under STREAM's rule: {}; compared only with the same size",
            scopes.join(" · ")
        )
    })
}
