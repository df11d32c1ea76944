//! `membw check`'s conclusion: the rounds' findings, the hardware's
//! differences from the baseline and what kept the node from being judged,
//! turned into one verdict (healthy, unhealthy or not judged) with its
//! reason, rates, stability and trust.

use super::check::Checked;
use crate::health::rules;
use crate::health::verdict::{Rate, Stability, Verdict};
use crate::results::{Host, cv};
use crate::trust::Interference;
use std::time::Duration;

/// What a check was held against, besides its rounds.
pub struct Judging {
    /// The reference in words (`baseline FILE`, `the other NUMA domains`).
    pub against: String,
    /// Each scope's band where it is not memory's (a `--small` check).
    pub bands: Vec<(crate::health::Scope, crate::results::Band)>,
    /// Findings on the hardware against the baseline's; any one is unhealthy.
    pub differences: Vec<String>,
    /// Those of the differences that take host memory bandwidth: they
    /// explain a slow NUMA domain or node.
    pub memory_changes: Vec<String>,
    /// The node's memory error counters, read with the topology.
    pub memory_errors: crate::topology::edac::MemoryErrors,
    /// Values the check could not read or believe.
    pub unknown: Vec<crate::health::verdict::UnknownInput>,
    pub unknown_policy: crate::health::verdict::UnknownPolicy,
    pub notes: Vec<String>,
    pub tolerance: f64,
    pub budget: Duration,
    /// A device's identity, when a device was checked.
    pub device: Option<crate::results::targets::Device>,
    /// Every device's, when a device set was checked.
    pub devices: Vec<crate::results::targets::Device>,
    /// How the budget was shared among a set's devices.
    pub budget_split: Option<String>,
    /// A set's pairs, measured after the rounds.
    pub pairs: Vec<crate::results::peers::PeerCell>,
    /// CPU time a cgroup limit took from the threads during the check.
    pub throttled: Option<Duration>,
    /// What ran beside the baseline when it was made.
    pub baseline_interference: Option<Interference>,
    /// Shown when a judged node falls short on a virtual machine, whose
    /// neighbours' load shows as nothing.
    pub vm_note: Option<String>,
}

/// The verdict on `checked`.
pub fn verdict(host: Host, checked: Checked, mut judging: Judging) -> Verdict {
    // A fault of the hardware (a link trained narrow, a DIMM missing) is
    // one whatever else ran: only the rates need a quiet node.
    let not_judged = (judging.differences.is_empty())
        .then(|| why_not_judged(&checked, judging.throttled))
        .flatten();
    let judged = not_judged.is_none();
    let strict = judging.unknown_policy == crate::health::verdict::UnknownPolicy::Fail;
    let unknown_fails = (strict && !judging.unknown.is_empty()).then(|| {
        format!(
            "{} unknown, and unknown values fail this check: {}",
            crate::units::plural(judging.unknown.len(), "input"),
            judging.unknown[0].line()
        )
    });
    let healthy =
        judged && checked.passed && judging.differences.is_empty() && unknown_fails.is_none();
    if judged && !healthy && judging.differences.is_empty() {
        judging.notes.extend(judging.vm_note.take());
    }
    let explained = (judging.memory_changes.first()).and_then(|change| {
        let slow = rules::worst_in_host_memory(&checked.findings)?;
        Some(rules::explained(slow, change))
    });
    let reason = not_judged
        .or(explained)
        .or_else(|| judging.differences.first().cloned())
        .or(unknown_fails)
        .or_else(|| {
            rules::worst(&checked.findings)
                .map(|f| rules::diagnosis(f, judging.tolerance, &checked.findings))
        });
    Verdict {
        schema_version: 1,
        kind: "membw-check",
        timestamp: crate::results::now(),
        host,
        healthy,
        device: judging.device,
        devices: judging.devices,
        budget_split: judging.budget_split,
        pairs: judging.pairs,
        judged,
        reason: if healthy { None } else { reason },
        against: judging.against,
        tolerance: judging.tolerance,
        budget_s: judging.budget.as_secs_f64(),
        rounds: checked.rounds,
        elapsed_s: checked.elapsed.as_secs_f64(),
        rates: (checked.bests.iter())
            .map(|(&(scope, kernel), &gb_s)| Rate {
                scope,
                kernel,
                gb_s,
                band: (judging.bands.iter())
                    .find(|(s, _)| *s == scope)
                    .map_or(crate::results::Band::Memory, |(_, b)| *b),
            })
            .collect(),
        stability: stability(&checked),
        findings: checked.findings,
        differences: judging.differences,
        memory_errors: judging.memory_errors,
        unknown: judging.unknown,
        unknown_policy: judging.unknown_policy,
        notes: judging.notes,
        interference: checked.interference,
        baseline_interference: judging.baseline_interference,
    }
}

/// Why the check gives no verdict, if it does not: threads stopped by a
/// CPU limit measure the limit, and rates that fell short while other work
/// ran measure the other work (a busy node is not a bad one).
fn why_not_judged(checked: &Checked, throttled: Option<Duration>) -> Option<String> {
    if let Some(d) = throttled {
        return Some(format!(
            "could not check: a cgroup CPU limit (cpu.max) stopped its threads for {:.2} CPU-seconds during the check's {:.1} s, so its rates measure the limit, not the memory; run it outside the limit",
            d.as_secs_f64(),
            checked.elapsed.as_secs_f64()
        ));
    }
    let i = &checked.interference;
    (i.busy && !checked.passed).then(|| {
        format!(
            "could not check: {}; run it when the node is idle",
            i.cause().unwrap_or_default()
        )
    })
}

/// The coefficient of variation of each scope's and kernel's counted
/// repetitions in the last round.
fn stability(checked: &Checked) -> Vec<Stability> {
    checked
        .last
        .iter()
        .flat_map(|(scope, m)| {
            m.results.iter().map(|r| Stability {
                scope: *scope,
                kernel: r.kernel,
                cv: cv(r.times_s.get(1..).unwrap_or(&[])),
            })
        })
        .collect()
}
