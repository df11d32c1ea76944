//! `membw check`: whether this node still measures what its kind does when
//! healthy, with the exit codes health checkers act on (0 healthy, 1
//! unhealthy, 2 could not check). The baseline it is held against is
//! [`super::baseline`]'s.

use super::args::PeakArgs;
use super::common::{check_writable, print, render_as, stop_flag, write_atomic};
use super::health_protocol::ProtocolArgs;
use crate::engine::check::{self, Reference};
use crate::engine::verdict;
use crate::engine::{Engine, Source};
use crate::error::{Error, Result};
use crate::health::rules::{self, IdentityDifference};
use crate::health::verdict::Verdict;
use crate::health::{Baseline, BaselineError, Identity, Scope, Siblings};
use crate::results::file::FileError;
use crate::topology::Topology;
use clap::Args;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Exit 1 means "measured, and unhealthy": a site drains the node on it.
/// Everything else that ends `baseline` or `check` early (a file that
/// cannot be read or written, a system call refused, stdout gone) is exit
/// 2, `doing` saying what could not be done; signals keep their codes.
pub(super) fn not_judged(e: Error, doing: &str) -> Error {
    match e {
        Error::Runtime(m) | Error::Validation(m) => Error::Usage(format!("{doing}: {m}")),
        other => other,
    }
}

#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    /// The baseline to hold this node against (membw baseline -o FILE); without it, the NUMA
    /// domains are held against each other and the node against its theoretical peak
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,

    /// How far below its reference a rate may fall
    #[arg(long, default_value = "10%", allow_hyphen_values = true, value_parser = crate::units::parse_share)]
    tolerance: f64,

    #[command(flatten)]
    budget: super::flags::Budget,

    /// Without a baseline: the share of the theoretical peak the node's triad must reach
    #[arg(long, default_value = "50%", allow_hyphen_values = true, value_parser = crate::units::parse_share)]
    peak_share: f64,

    #[command(flatten)]
    quiet: super::flags::Quiet,
    #[command(flatten)]
    unknown: super::flags::Unknowns,

    #[command(flatten)]
    form: super::flags::Form,
    #[command(flatten)]
    json: super::flags::JsonFlag,

    #[command(flatten)]
    prom: super::flags::Prom,

    #[command(flatten)]
    pub(super) protocol: ProtocolArgs,

    #[command(flatten)]
    peak: PeakArgs,
}

/// Reads a baseline file. Whatever keeps it from being read or used is
/// one line naming the flag and the file (exit 2): a check that cannot
/// read its baseline has not judged the node.
pub(super) fn read_baseline(path: &Path, flag: &str) -> Result<Baseline> {
    let bytes = crate::results::file::read_regular(path, 16 << 20).map_err(|e| match e {
        FileError::Empty(_) => Error::Usage(format!(
            "{flag} {}: empty, not a membw baseline; make one with membw baseline -o FILE",
            path.display()
        )),
        other => Error::Usage(format!("{flag} {other}")),
    })?;
    let text = String::from_utf8_lossy(&bytes);
    Baseline::parse(&text).map_err(|e| baseline_error(path, &e))
}

/// A baseline that cannot be used, as one line naming the file and the
/// field: `b.json: scopes[0].elements is 0; make a new baseline ...`.
fn baseline_error(path: &Path, e: &BaselineError) -> Error {
    let remedy = match e {
        BaselineError::NotABaseline(_) => "",
        BaselineError::Field { .. } => "; make a new baseline with membw baseline -o FILE",
    };
    Error::Usage(format!("{}: {e}{remedy}", path.display()))
}

/// `membw check`. Exit 0 healthy, 1 measured and unhealthy, 2 could not
/// judge (bad input, unreadable baseline, busy or limited node, nothing to
/// compare with, a failure of the system or of an output).
pub(crate) fn check(args: CheckArgs) -> Result<()> {
    run_check(&args).map_err(|e| not_judged(e, "could not check"))
}

/// What the node is held against, with the scopes measured for it.
struct CheckPlan<'a> {
    jobs: Vec<crate::engine::scopes::ScopeJob>,
    reference: Reference<'a>,
    /// The reference in words, for the verdict.
    against: String,
    /// Findings on the hardware against the baseline's.
    differences: Vec<String>,
    notes: Vec<String>,
}

/// The reference a check is held against and the scopes it measures;
/// exit 2 where the baseline is for another kind of node, or where there
/// is nothing to compare with.
fn plan_check<'a>(
    args: &CheckArgs,
    topo: &Topology,
    baseline: Option<&'a Baseline>,
    peak: Option<&crate::peak::Peak>,
    source: &dyn Source,
) -> Result<CheckPlan<'a>> {
    let measure = args.protocol.measure();
    if let (Some(b), Some(path)) = (baseline, args.baseline.as_deref()) {
        let (mut differences, mut notes) = (Vec::new(), Vec::new());
        for d in rules::compare_identity(&b.identity, &Identity::of(topo)) {
            match d {
                IdentityDifference::OtherNode(what) => {
                    return Err(Error::Usage(format!(
                        "--baseline {}: made on another kind of node: {what}",
                        path.display()
                    )));
                }
                IdentityDifference::Degraded(what) => differences.push(what),
                IdentityDifference::Note(what) => notes.push(what),
            }
        }
        // The baseline fixes the size: another is another measurement.
        if let Some(asked) = measure.elements
            && let Some(s) = b.scopes.iter().find(|s| s.elements != asked)
        {
            return Err(Error::input(
                crate::error::Input::Size,
                asked.to_string(),
                format!(
                    "the baseline measured {} elements an array ({}); a check compares only the same size",
                    s.elements, s.scope
                ),
            ));
        }
        let jobs = check::baseline_jobs(topo, b, &measure, source)
            .map_err(|e| baseline_error(path, &e))?;
        return Ok(CheckPlan {
            jobs,
            reference: Reference::Baseline(b),
            against: format!("baseline {}", path.display()),
            differences,
            notes,
        });
    }
    let jobs = args.protocol.scope_jobs(topo, source)?;
    against_itself(jobs, topo, peak, args.peak_share)
}

/// Without a baseline: the NUMA domains against each other, a set's
/// devices against each other, and each whole memory against `share` of
/// its own peak; what none of these can judge is said in the notes. Exit 2
/// where nothing can be judged at all.
fn against_itself<'a>(
    jobs: Vec<crate::engine::scopes::ScopeJob>,
    topo: &Topology,
    peak: Option<&crate::peak::Peak>,
    share: f64,
) -> Result<CheckPlan<'a>> {
    let scopes: Vec<Scope> = jobs.iter().map(|j| j.scope).collect();
    let siblings = rules::with_siblings(&scopes);
    let (peaks, no_peak) = peaks_to_judge(&jobs, topo, peak);
    if peaks.is_empty() && siblings.is_empty() {
        let why = (no_peak.first()).map_or("no scope has a theoretical peak", |(_, why)| why);
        return Err(Error::Usage(format!(
            "no baseline and nothing to compare against: one NUMA domain, and {why}; make a baseline with membw baseline -o FILE and pass --baseline FILE (or give this node's own --peak)"
        )));
    }
    // Never silently healthy: what nothing here can judge is said, with
    // why it has no peak; the node's own note says what gives it one.
    let judged = |s: &Scope| peaks.contains_key(s) || siblings.contains(s);
    let (noted, unjudged_no_peak): (Vec<_>, Vec<_>) =
        (no_peak.iter().cloned()).partition(|(s, _)| judged(s) || *s == Scope::Node);
    let mut notes = no_peak_notes(&noted);
    let unjudged: Vec<String> = (scopes.iter())
        .filter(|s| !judged(s) && **s != Scope::Node)
        .map(|s| match unjudged_no_peak.iter().find(|(n, _)| n == s) {
            Some((_, why)) => format!("{s} ({why})"),
            None => s.to_string(),
        })
        .collect();
    if !unjudged.is_empty() {
        notes.push(format!(
            "measured, not judged without a baseline (no peak or sibling to hold it against): {}; a baseline (membw baseline -o FILE, then --baseline FILE) judges every scope",
            unjudged.join(", ")
        ));
    }
    let mut against = Vec::new();
    let domains = |s: &Scope| s.siblings() == Some(Siblings::Domains);
    if siblings.iter().any(domains) {
        against.push("the other NUMA domains".to_string());
    }
    if !siblings.iter().all(domains) {
        against.push("the sibling devices".to_string());
    }
    if !peaks.is_empty() {
        against.push(format!(
            "{:.0} % of {}",
            share * 100.0,
            match peaks.len() {
                1 => "the theoretical peak",
                _ => "each memory's theoretical peak",
            }
        ));
    }
    Ok(CheckPlan {
        jobs,
        reference: Reference::Symmetry { peaks, share },
        against: against.join(" and "),
        differences: Vec::new(),
        notes,
    })
}

/// The notes of scopes without a peak, one per reason (a set's devices
/// share theirs).
fn no_peak_notes(no_peak: &[(Scope, String)]) -> Vec<String> {
    let mut by_why: Vec<(&str, Vec<Scope>)> = Vec::new();
    for (scope, why) in no_peak {
        match by_why.iter_mut().find(|(w, _)| w == why) {
            Some((_, scopes)) => scopes.push(*scope),
            None => by_why.push((why, vec![*scope])),
        }
    }
    (by_why.iter())
        .map(|(why, scopes)| match scopes.as_slice() {
            [Scope::Node] => {
                format!(
                    "not held against the theoretical peak: {why}; --peak gives this node's own"
                )
            }
            _ => {
                let names: Vec<String> = scopes.iter().map(Scope::to_string).collect();
                format!(
                    "{} not held against a theoretical peak: {why}",
                    names.join(", ")
                )
            }
        })
        .collect()
}

/// The peak each memory measured is held against, and why a scope has
/// none: the node's (the host's, or `--peak`), each device's own, and a
/// node without CPUs reached by the cores nearest it (its firmware's
/// figure, ACPI HMAT); none in a small check (the caches), nor from a
/// host peak for whole sockets on a slice of them.
fn peaks_to_judge(
    jobs: &[crate::engine::scopes::ScopeJob],
    topo: &Topology,
    host: Option<&crate::peak::Peak>,
) -> (BTreeMap<Scope, f64>, Vec<(Scope, String)>) {
    use crate::peak::share::{Share, peak_to_judge};
    let (mut peaks, mut none) = (BTreeMap::new(), Vec::new());
    for job in jobs {
        let other = job.scope.other_memory_node();
        if !job.scope.whole_memory() && other.is_none() {
            continue;
        }
        let peak = match (job.plan.target.memory_peak(host), other) {
            // A small check's rates are the caches': no share of memory's peak.
            _ if job.band != crate::results::Band::Memory => {
                Err("a small check measures the caches, not the memory (--small)".to_string())
            }
            (_, Some(m)) => (crate::peak::tier_peak(topo, &job.plan.mem))
                .map(|p| p.per_socket_gb_s)
                .ok_or_else(|| format!("the firmware (ACPI HMAT) gives no bandwidth for node {m}")),
            (Some(p), None) => peak_to_judge(&p, Share::of(topo)),
            (None, None) if job.scope == Scope::Node => {
                Err("the theoretical peak of this node is unknown".to_string())
            }
            (None, None) => Err("its backend declares none".to_string()),
        };
        match peak {
            Ok(gb_s) => {
                peaks.insert(job.scope, gb_s);
            }
            Err(why) => none.push((job.scope, why)),
        }
    }
    (peaks, none)
}

fn run_check(args: &CheckArgs) -> Result<()> {
    if let Some(p) = &args.prom.prom {
        check_writable(p, "--prom", true)?;
    }
    let topo = args.protocol.topology()?;
    let baseline = args
        .baseline
        .as_deref()
        .map(|p| read_baseline(p, "--baseline"))
        .transpose()?;
    let peak = crate::peak::estimate(&topo, &args.peak.request());
    let (mut source, gpus) = args.protocol.source(&topo)?;
    let plan = plan_check(
        args,
        &topo,
        baseline.as_ref(),
        peak.as_ref(),
        source.as_ref(),
    )?;
    if args.protocol.dry_run.dry_run {
        return args.protocol.show_plan("check", &plan.jobs);
    }
    let mut engine = Engine::new(&topo, source.as_mut(), peak);
    let stop = stop_flag();
    let throttled_before = crate::topology::cpu_throttled(&topo.root);
    let checked = check::check(
        &mut engine,
        &plan.jobs,
        &plan.reference,
        args.tolerance,
        args.budget.or(super::flags::Budget::CHECK),
        &stop,
    )?;
    // A set's pairs, once after the rounds: a signal during them ends the
    // check as one during the rounds does, not with a partial matrix.
    let began = std::time::Instant::now();
    let pairs = args
        .protocol
        .pairs(&topo, gpus, largest(&plan.jobs), &stop)?;
    let pairs_took = (pairs.len(), began.elapsed().as_secs_f64());
    if let Some(signal) = stop.signal() {
        return Err(Error::Interrupted {
            signal,
            message: format!(
                "stopped by {}: no verdict",
                super::common::signal_name(signal)
            ),
        });
    }
    let throttled = crate::topology::cpu_throttled(&topo.root)
        .zip(throttled_before)
        .map(|(after, before)| after.saturating_sub(before))
        .filter(|d| !d.is_zero());
    let mut devices: Vec<crate::results::targets::Device> = Vec::new();
    for d in (plan.jobs.iter()).filter_map(|j| j.plan.target.device()) {
        if !devices.iter().any(|k| k.id == d.id) {
            devices.push(d.clone());
        }
    }
    let found = crate::health::faults::found(&devices, &topo, baseline.as_ref(), plan.differences);
    let mut differences = found.faults;
    let mut notes = plan.notes;
    notes.extend(found.notes);
    differences.extend(match baseline.as_ref().filter(|b| !b.pairs.is_empty()) {
        Some(b) => crate::health::pairs::against_baseline(&pairs, &b.pairs, args.tolerance),
        None => crate::health::pairs::against_siblings(&pairs, args.tolerance),
    });
    let budget_split = (devices.len() > 1).then(|| budget_split(&plan.jobs, &checked, pairs_took));
    let (device, devices) = match devices.len() {
        1 => (devices.pop(), Vec::new()),
        _ => (None, devices),
    };
    let bands = (plan.jobs.iter())
        .filter(|j| j.band != crate::results::Band::Memory)
        .map(|j| (j.scope, j.band))
        .collect();
    let judging = verdict::Judging {
        bands,
        devices,
        pairs,
        budget_split,
        against: plan.against,
        differences,
        memory_changes: found.memory_changes,
        memory_errors: topo.memory_errors.clone(),
        unknown: found.unknown,
        unknown_policy: args.unknown.policy(),
        notes,
        tolerance: args.tolerance,
        budget: args.budget.or(super::flags::Budget::CHECK),
        device,
        throttled,
        baseline_interference: baseline.as_ref().and_then(|b| b.made_busy()).cloned(),
        // Measured on this project's VM: the host's other tenants cut its
        // bandwidth by a quarter for up to a minute at a time, with no steal.
        vm_note: topo.has_flag("hypervisor").then(|| "this is a virtual machine: the host's other tenants share its memory, and their load does not show as steal, so a shortfall may be theirs; check again, or with a longer --budget".to_string()),
    };
    let verdict = verdict::verdict(crate::results::Host::describe(&topo), checked, judging);
    emit(args, &verdict)
}

/// How a set's check spent its budget: each round measures every device's
/// scopes once, one device after another.
/// The pairs' copies after the rounds, as their number and seconds.
fn budget_split(
    jobs: &[crate::engine::scopes::ScopeJob],
    checked: &check::Checked,
    (pairs, pairs_s): (usize, f64),
) -> String {
    let devices: std::collections::BTreeSet<u32> =
        jobs.iter().filter_map(|j| j.scope.device_index()).collect();
    let per_round = checked.elapsed.as_secs_f64() / checked.rounds.max(1) as f64;
    format!(
        "{} scopes over {} devices, measured one device after another; {} of {:.2} s each ({:.2} s per device per round); then {} ordered pairs in {:.2} s",
        jobs.len(),
        devices.len(),
        crate::units::plural(checked.rounds, "round"),
        per_round,
        per_round / devices.len().max(1) as f64,
        pairs,
        pairs_s
    )
}

/// The largest arrays of the jobs, elements: a set's pairs copy as many.
pub(super) fn largest(jobs: &[crate::engine::scopes::ScopeJob]) -> usize {
    jobs.iter().map(|j| j.plan.elements).max().unwrap_or(0)
}

/// The verdict to its outputs, and to the exit code.
fn emit(args: &CheckArgs, verdict: &Verdict) -> Result<()> {
    // A check that could not judge leaves the last verdict's metrics in
    // place: their timestamp says how old they are.
    if let Some(p) = args.prom.prom.as_ref().filter(|_| verdict.judged) {
        write_atomic(
            p,
            "--prom",
            crate::report::prom::check(verdict, &crate::backend::fabric_kinds()).as_bytes(),
        )?;
    }
    // --quiet: only an unhealthy verdict prints its table (NHC's way).
    if !(args.quiet.quiet && (verdict.healthy || !verdict.judged)) {
        print(&render_as(
            args.form.format,
            &crate::report::view::View::Check(verdict),
        )?)?;
    }
    // The one line a health checker reads: escaped once more here, so that
    // no name from the node, wherever it came in, can add a line.
    use crate::untrusted::printable;
    let line = verdict.reason.as_deref().map(printable);
    match line {
        Some(line) if !verdict.judged => Err(Error::Usage(line)),
        Some(line) if !verdict.healthy => Err(Error::Unhealthy(line)),
        _ => {
            // Healthy, with what it could not read: in the one line too.
            (verdict.unknown_line().iter()).for_each(|l| crate::say!("membw: {}", printable(l)));
            Ok(())
        }
    }
}
