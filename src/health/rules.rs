//! Every decision of `membw check`, on data: a rate within tolerance of its
//! reference (the baseline, the other NUMA domains, the theoretical peak),
//! when to stop (all pass: at once; otherwise at the end of the budget),
//! which finding is the one line, and whether a baseline fits this node.

use super::{Baseline, Identity, Scope};
use crate::kernels::KernelId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// The best rate so far of each kernel in each scope, GB/s.
pub type Bests = BTreeMap<(Scope, KernelId), f64>;

/// Keeps the better of a scope's rates.
pub fn keep_best(bests: &mut Bests, scope: Scope, kernel: KernelId, gb_s: f64) {
    let best = bests.entry((scope, kernel)).or_insert(0.0);
    *best = best.max(gb_s);
}

/// What a rate is held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Against {
    /// The baseline's median round for this scope and kernel.
    Baseline,
    /// The median of the other NUMA domains (symmetry).
    OtherDomains,
    /// The median of the other devices of the set: a node's identical
    /// GPUs, or their links from one host node.
    OtherDevices,
    /// The expected share of the theoretical peak.
    Peak,
    /// The other threads of the same scope: one thread much slower than
    /// the rest ran on a busy or throttled core.
    OtherThreads,
}

/// One scope and kernel, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub scope: super::Scope,
    pub kernel: KernelId,
    pub measured_gb_s: f64,
    pub reference_gb_s: f64,
    /// measured / reference.
    pub ratio: f64,
    pub against: Against,
    pub ok: bool,
    /// The slowest thread's CPU, for [`Against::OtherThreads`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
    /// Its rate in every round (each round's typical rate: the median of
    /// its repetitions), GB/s, with the 95 % interval of their mean: a
    /// short finding is decided when the whole interval is short too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<crate::results::Stats>,
}

impl Finding {
    /// The rate below which this finding is short: the reference less the
    /// tolerance (for the peak rule, the reference is the least share).
    pub fn line(&self, tolerance: f64) -> f64 {
        match self.against {
            Against::Peak => self.reference_gb_s,
            _ => self.reference_gb_s * (1.0 - tolerance),
        }
    }

    /// For a short finding over several rounds: whether every round's mean
    /// interval lies below its line (`Some(true)`: short beyond the noise;
    /// `Some(false)`: the interval reaches it); `None` with one round.
    pub fn short_resolved(&self, tolerance: f64) -> Option<bool> {
        let i = self.rounds?.interval()?;
        Some(i.high < self.line(tolerance))
    }
}

fn finding(
    scope: Scope,
    kernel: KernelId,
    measured: f64,
    reference: f64,
    against: Against,
    least: f64,
) -> Finding {
    let ratio = if reference > 0.0 {
        measured / reference
    } else {
        0.0
    };
    Finding {
        scope,
        kernel,
        measured_gb_s: measured,
        reference_gb_s: reference,
        ratio,
        against,
        ok: ratio >= least,
        cpu: None,
        rounds: None,
    }
}

/// The slowest thread of a scope and kernel in its most even round: its
/// CPU, its rate and the median rate of the other threads, GB/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slowest {
    pub cpu: usize,
    pub gb_s: f64,
    pub others_gb_s: f64,
}

/// The most even round so far of each scope and kernel.
pub type Balance = BTreeMap<(Scope, KernelId), Slowest>;

/// Keeps the round whose slowest thread came closest to the others.
pub fn keep_most_even(balance: &mut Balance, scope: Scope, kernel: KernelId, s: Slowest) {
    let ratio = |s: &Slowest| s.gb_s / s.others_gb_s;
    match balance.get(&(scope, kernel)) {
        Some(kept) if ratio(kept) >= ratio(&s) => {}
        _ => {
            balance.insert((scope, kernel), s);
        }
    }
}

/// Each scope's slowest thread against the median of its other threads.
pub fn thread_balance(balance: &Balance, tolerance: f64) -> Vec<Finding> {
    balance
        .iter()
        .map(|(&(scope, kernel), s)| Finding {
            cpu: Some(s.cpu),
            ..finding(
                scope,
                kernel,
                s.gb_s,
                s.others_gb_s,
                Against::OtherThreads,
                1.0 - tolerance,
            )
        })
        .collect()
}

/// Each scope and kernel of the baseline against its median round.
pub fn against_baseline(bests: &Bests, baseline: &Baseline, tolerance: f64) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in &baseline.scopes {
        for (&kernel, rates) in &s.kernels {
            let measured = bests.get(&(s.scope, kernel)).copied().unwrap_or(0.0);
            out.push(finding(
                s.scope,
                kernel,
                measured,
                rates.median_gb_s,
                Against::Baseline,
                1.0 - tolerance,
            ));
        }
    }
    out
}

/// Each NUMA domain against the median of the others, per kernel, and
/// each device of a set (its memory; its link from each host node)
/// against the median of its siblings: a node of identical domains or
/// GPUs must show the same rate in each. Nothing to say of a class with
/// fewer than two members.
pub fn symmetry(bests: &Bests, tolerance: f64) -> Vec<Finding> {
    let mut classes: BTreeMap<(super::Siblings, KernelId), Vec<(Scope, f64)>> = BTreeMap::new();
    for (&(scope, kernel), &v) in bests {
        if let Some(class) = scope.siblings() {
            classes.entry((class, kernel)).or_default().push((scope, v));
        }
    }
    let mut out = Vec::new();
    for ((class, kernel), members) in classes {
        if members.len() < 2 {
            continue;
        }
        let against = match class {
            super::Siblings::Domains => Against::OtherDomains,
            _ => Against::OtherDevices,
        };
        for &(scope, v) in &members {
            let others: Vec<f64> = members
                .iter()
                .filter(|(s, _)| *s != scope)
                .map(|&(_, v)| v)
                .collect();
            let reference = crate::results::median(&others).unwrap_or(0.0);
            out.push(finding(
                scope,
                kernel,
                v,
                reference,
                against,
                1.0 - tolerance,
            ));
        }
    }
    out
}

/// Each scope's triad against `share` of its own theoretical peak (the
/// node's, each device's memory), where `peaks` has one for it.
pub fn against_peak(bests: &Bests, peaks: &BTreeMap<Scope, f64>, share: f64) -> Vec<Finding> {
    (bests.iter())
        .filter(|((_, kernel), _)| *kernel == KernelId::Triad)
        .filter_map(|(&(scope, kernel), &measured)| {
            let peak = peaks.get(&scope)?;
            Some(finding(
                scope,
                kernel,
                measured,
                share * peak,
                Against::Peak,
                1.0,
            ))
        })
        .collect()
}

/// The scopes that [`symmetry`] holds against siblings: those of a class
/// with two members or more.
pub fn with_siblings(scopes: &[Scope]) -> Vec<Scope> {
    let mut classes: BTreeMap<super::Siblings, usize> = BTreeMap::new();
    for class in scopes.iter().filter_map(Scope::siblings) {
        *classes.entry(class).or_default() += 1;
    }
    (scopes.iter().copied())
        .filter(|s| s.siblings().is_some_and(|c| classes[&c] >= 2))
        .collect()
}

/// What the check does after a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Every finding within tolerance: healthy, stop now.
    Pass,
    /// Something is short and another round fits in the budget.
    Continue,
    /// Something is still short and the budget is spent.
    Fail,
}

/// Stops at the first round where everything passes; otherwise goes on
/// while another round (as long as the last one) fits in the budget.
pub fn next(
    findings: &[Finding],
    elapsed: Duration,
    last_round: Duration,
    budget: Duration,
) -> Next {
    if findings.iter().all(|f| f.ok) {
        Next::Pass
    } else if elapsed + last_round > budget {
        Next::Fail
    } else {
        Next::Continue
    }
}

/// The finding that explains a failure: the lowest ratio of those short.
pub fn worst(findings: &[Finding]) -> Option<&Finding> {
    findings
        .iter()
        .filter(|f| !f.ok)
        .min_by(|a, b| a.ratio.total_cmp(&b.ratio))
}

/// The slowest host memory scope (the node, a NUMA domain) that fell
/// short, if one did.
// A new kind of scope must be decided here.
#[deny(clippy::wildcard_enum_match_arm)]
pub fn worst_in_host_memory(findings: &[Finding]) -> Option<&Finding> {
    let in_host_memory = |scope: Scope| match scope {
        Scope::Node | Scope::Numa(_) => true,
        // Memory without CPUs is not the DIMMs a change explains.
        Scope::NumaOn(..) | Scope::Device(_) | Scope::HostLink(..) | Scope::DeviceOn(..) => false,
    };
    (findings.iter())
        .filter(|f| !f.ok && in_host_memory(f.scope))
        .filter(|f| f.against != Against::OtherThreads)
        .min_by(|a, b| a.ratio.total_cmp(&b.ratio))
}

/// The drain reason of a slow scope that a change of the memory hardware
/// explains: `node 1: triad 18 % slow, explained by DIMM … missing`.
pub fn explained(slow: &Finding, change: &str) -> String {
    format!(
        "{}: {} {:.0} % slow ({:.1} GB/s of {:.1} GB/s), explained by {change}",
        slow.scope,
        slow.kernel.spec().name,
        (1.0 - slow.ratio) * 100.0,
        slow.measured_gb_s,
        slow.reference_gb_s
    )
}

/// The one line a human reads in a drain reason.
pub fn diagnosis(f: &Finding, tolerance: f64, findings: &[Finding]) -> String {
    let pct = |x: f64| format!("{:.0} %", x * 100.0);
    let what = format!(
        "{} {} {:.1} GB/s is {}",
        f.scope,
        f.kernel.spec().name,
        f.measured_gb_s,
        pct(f.ratio)
    );
    let tol = pct(tolerance);
    let domains_short = findings
        .iter()
        .filter(|g| !g.ok && g.scope.cpu_node().is_some())
        .map(|g| g.scope)
        .collect::<std::collections::BTreeSet<_>>();
    let one_domain = |n: usize| format!("a memory channel on node {n} is missing or slow");
    let everywhere = "memory is slower everywhere: memory speed, BIOS power or NUMA settings, or another job on the node";
    match (f.against, f.scope) {
        (Against::OtherThreads, _) => {
            let cpu = f.cpu.map_or("?".into(), |c| c.to_string());
            format!(
                "{} {}: the thread on CPU {cpu} ran at {:.1} GB/s, {} of the other threads' {:.1} GB/s (tolerance {tol}): another process on CPU {cpu}, or a throttled core",
                f.scope,
                f.kernel.spec().name,
                f.measured_gb_s,
                pct(f.ratio),
                f.reference_gb_s
            )
        }
        (Against::OtherDomains, Scope::Numa(n)) => format!(
            "{what} of the other domains' {:.1} GB/s (tolerance {tol}): {}",
            f.reference_gb_s,
            one_domain(n)
        ),
        (Against::Baseline, Scope::Numa(n)) if domains_short.len() == 1 => format!(
            "{what} of its baseline {:.1} GB/s (tolerance {tol}): {}",
            f.reference_gb_s,
            one_domain(n)
        ),
        (Against::OtherDevices, Scope::HostLink(i, n)) => format!(
            "{what} of its sibling devices' {:.1} GB/s from node {n} (tolerance {tol}): device {i}'s host link trained narrower or slower than theirs, a riser or switch at fault, or other traffic on it",
            f.reference_gb_s
        ),
        (Against::OtherDevices, _) => format!(
            "{what} of its sibling devices' {:.1} GB/s (tolerance {tol}): this device's memory runs slower than theirs: its memory clock, a power cap, heat, or another job on it",
            f.reference_gb_s
        ),
        (Against::Baseline, Scope::Device(_)) => format!(
            "{what} of its baseline {:.1} GB/s (tolerance {tol}): the device is slower than it was: its memory clock, its temperature, or another job on it",
            f.reference_gb_s
        ),
        (Against::Baseline, Scope::HostLink(_, n)) => format!(
            "{what} of its baseline {:.1} GB/s (tolerance {tol}): the host link from NUMA node {n} is slower than it was: a link that retrained, a host buffer off its node, or other traffic on the link",
            f.reference_gb_s
        ),
        (Against::Baseline, Scope::NumaOn(c, m)) => format!(
            "{what} of its baseline {:.1} GB/s (tolerance {tol}): the cores of node {c} reach node {m}'s memory slower than they did: that memory's clock (a GPU's HBM: its power or heat), the link to it, or another job using it",
            f.reference_gb_s
        ),
        (Against::Baseline, Scope::DeviceOn(i, place)) => format!(
            "{what} of its baseline {:.1} GB/s (tolerance {tol}): device {i} reaches host memory ({place}) slower than it did: its host link retrained or lost links, pages off their node, or other traffic on the link",
            f.reference_gb_s
        ),
        (Against::Baseline, _) => format!(
            "{what} of its baseline {:.1} GB/s (tolerance {tol}): {everywhere}",
            f.reference_gb_s
        ),
        (Against::Peak | Against::OtherDomains, Scope::Device(_)) => format!(
            "{what} of the expected {:.1} GB/s (share of its memory peak): its memory clock below the maximum the peak assumes (application clocks, a power cap), heat, or another job on it",
            f.reference_gb_s
        ),
        (Against::Peak | Against::OtherDomains, Scope::HostLink(_, n)) => format!(
            "{what} of the expected {:.1} GB/s (share of its link's peak): a link trained below its maximum, host buffers off NUMA node {n}, or other traffic on the link",
            f.reference_gb_s
        ),
        (Against::Peak, Scope::NumaOn(c, m)) => format!(
            "{what} of the expected {:.1} GB/s (share of node {m}'s bandwidth as its firmware states it, ACPI HMAT): the cores of node {c} reach that memory slower than it allows: its link (CXL) trained down, a device or module missing, or another job using it",
            f.reference_gb_s
        ),
        (Against::Peak, _)
        | (Against::OtherDomains, Scope::Node | Scope::NumaOn(..) | Scope::DeviceOn(..)) => {
            format!(
                "{what} of the expected {:.1} GB/s (share of the theoretical peak): memory channels missing or slow, or memory slower than the peak assumes",
                f.reference_gb_s
            )
        }
    }
}

/// How a baseline's node differs from this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityDifference {
    /// Another kind of node: the check cannot judge (exit 2).
    OtherNode(String),
    /// The same kind of node with less memory hardware or another NUMA
    /// setting: unhealthy (exit 1).
    Degraded(String),
    /// Worth saying, not a verdict (kernel, THP mode).
    Note(String),
}

/// What differs between the baseline's identity and this node's.
pub fn compare_identity(baseline: &Identity, here: &Identity) -> Vec<IdentityDifference> {
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (&baseline.cpu_model, &here.cpu_model)
        && a != b
    {
        out.push(IdentityDifference::OtherNode(format!(
            "CPU model '{b}' here, '{a}' in the baseline"
        )));
    }
    if baseline.sockets != here.sockets {
        out.push(IdentityDifference::OtherNode(format!(
            "{} sockets here, {} in the baseline",
            here.sockets, baseline.sockets
        )));
    }
    if baseline.cores != here.cores {
        out.push(IdentityDifference::OtherNode(format!(
            "{} usable cores here, {} in the baseline (another node type, a cpuset or offline CPUs)",
            here.cores, baseline.cores
        )));
    }
    if baseline.numa_nodes.len() != here.numa_nodes.len() {
        out.push(IdentityDifference::Degraded(format!(
            "{} NUMA nodes here, {} in the baseline: the BIOS NUMA setting (NPS, SNC) or the memory population differs",
            here.numa_nodes.len(),
            baseline.numa_nodes.len()
        )));
    } else {
        for (a, b) in baseline.numa_nodes.iter().zip(&here.numa_nodes) {
            if let (Some(x), Some(y)) = (a.bytes, b.bytes)
                && (y as f64) < 0.97 * x as f64
            {
                out.push(IdentityDifference::Degraded(format!(
                    "NUMA node {} has {} here, {} in the baseline: a DIMM is missing or disabled",
                    b.node,
                    crate::units::Bytes(y),
                    crate::units::Bytes(x)
                )));
            }
        }
    }
    if let (Some(a), Some(b)) = (&baseline.dimms, &here.dimms) {
        let missing: Vec<&String> = (a.slots.iter())
            .filter(|s| !b.slots.is_empty() && !b.slots.contains(s))
            .collect();
        for slot in &missing {
            out.push(IdentityDifference::Degraded(format!(
                "DIMM {slot} missing since the baseline ({} DIMMs here, {} in it): reseat or replace it",
                b.count, a.count
            )));
        }
        if missing.is_empty() && b.count < a.count {
            out.push(IdentityDifference::Degraded(format!(
                "{} DIMMs here, {} in the baseline: a DIMM is missing or disabled",
                b.count, a.count
            )));
        }
        if let (Some(x), Some(y)) = (a.mts, b.mts)
            && y < x
        {
            out.push(IdentityDifference::Degraded(format!(
                "memory runs at {y} MT/s here, {x} MT/s in the baseline"
            )));
        }
    }
    if baseline.thp_mode != here.thp_mode {
        out.push(IdentityDifference::Note(format!(
            "transparent hugepages '{}' here, '{}' in the baseline",
            here.thp_mode.as_deref().unwrap_or("unknown"),
            baseline.thp_mode.as_deref().unwrap_or("unknown")
        )));
    }
    if baseline.kernel != here.kernel {
        out.push(IdentityDifference::Note(format!(
            "kernel {} here, {} in the baseline",
            here.kernel, baseline.kernel
        )));
    }
    out
}
