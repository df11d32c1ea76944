//! What a results table's columns mean, printed under every table.

// A new kind must be decided wherever kinds are matched.
#![deny(clippy::wildcard_enum_match_arm)]

use crate::kernels::KernelId;
use crate::results::{KindsPresent, Record};

/// Whether a point's rates are held against a memory peak: one is known
/// and the arrays are past the caches.
pub(super) fn shows_peak(r: &Record) -> bool {
    r.peak_gb_s.is_some() && !r.in_caches()
}

/// Whether the table has a set/thread (set/device) column: the working set
/// differs between points, outside a NUMA matrix, where the thread count
/// gives it.
pub(super) fn sizes_vary(records: &[&Record]) -> bool {
    let numa = records.iter().any(|r| r.point.numa.is_some());
    !numa
        && records
            .iter()
            .any(|r| r.point.working_set_per_thread != records[0].point.working_set_per_thread)
}

/// What the rate columns of `kernel`'s table hold, printed under every
/// results table.
pub fn legend<'a>(records: impl IntoIterator<Item = &'a Record>, kernel: KernelId) -> String {
    legend_of(records.into_iter().collect(), kernel, Some(false))
}

/// The legend of a long table, with every run's columns where `all_runs`.
pub(super) fn long_legend(records: &[Record], kernel: KernelId, all_runs: bool) -> String {
    legend_of(records.iter().collect(), kernel, Some(all_runs))
}

/// The legend of a table turned (`--rows`, `--columns`): no set/thread or
/// % peak column to explain.
pub(super) fn turned_legend(records: &[Record], kernel: KernelId) -> String {
    legend_of(records.iter().collect(), kernel, None)
}

/// `long`: the table is long, with every run's columns where it holds
/// true; `None`: turned.
fn legend_of(records: Vec<&Record>, kernel: KernelId, long: Option<bool>) -> String {
    let all_runs = long == Some(true);
    let long = long.is_some();
    let doubted = records.iter().any(|r| !r.kernel_trust(kernel).whole());
    let runs = what_n_counts(&records, kernel, doubted);
    let with_sd = records.iter().any(|r| r.runs.len() > 1);
    let spread = if with_sd {
        "min, max and sd"
    } else {
        "min and max"
    };
    let mut legend = match long {
        true => {
            format!("GB/s: mean ± 95 % CI ({runs}) of the runs' best rates, then their {spread}\n")
        }
        false => format!("GB/s: mean ± 95 % CI ({runs}) of the runs' best rates\n"),
    };
    let kinds = KindsPresent::of(records.iter().map(|r| r.point.measured()));
    let (set, peak) = match (kinds.on_host, kinds.devices) {
        (_, false) => (
            "set/thread: bytes of all arrays per thread",
            "% peak: of the sockets the threads ran on",
        ),
        (false, true) => (
            "set/device: bytes of all arrays on the device",
            "% peak: of the device's own peak (of its host link for a transfer; both ways for arrays in host memory)",
        ),
        (true, true) => (
            "set/thread: bytes of all arrays per thread (per device)",
            "% peak: of the sockets the threads ran on, or a device's own (its host link's for a transfer; both ways for arrays in host memory)",
        ),
    };
    let mut columns = Vec::new();
    if long && sizes_vary(&records) {
        columns.push(set);
    }
    if long && records.iter().any(|r| shows_peak(r)) {
        columns.push(peak);
    }
    match columns.is_empty() {
        true => _ = legend.pop(),
        false => legend.push_str(&columns.join(" · ")),
    }
    legend.push_str(&band_and_peak_notes(&records, long));
    let unbound: Vec<u64> = (records.iter())
        .filter(|r| !r.point.pinned())
        .flat_map(|r| r.runs.iter().filter_map(|run| run.migrations))
        .collect();
    if records.iter().any(|r| !r.point.pinned()) {
        let moved = match unbound.is_empty() {
            true => String::new(),
            false => format!(
                "; the kernel moved them {:.1} times a run on average",
                unbound.iter().sum::<u64>() as f64 / unbound.len() as f64
            ),
        };
        legend.push_str(&format!(
            "\nunpinned: threads not bound, placed by the scheduler{moved}"
        ));
    }
    if records.iter().any(|r| r.point.concurrent_rank.is_some()) {
        legend.push_str(
            "\n(rank r of n): one of n ranks started together (--independent) that measured at the same\n\
             time on their own CPUs: each is a point of its own, not a run of another's",
        );
    }
    if records.iter().any(|r| !own_node_mark(r).is_empty()) {
        legend.push_str("\n(own): the host buffers were on the device's own NUMA node");
    }
    if doubted {
        legend.push_str(
            "\ntrust: each run is judged on its own: other work or steal on the CPUs (the tick counters)\n\
             doubts the whole run, repetitions that varied 1.5× or more only their kernel; figures\n\
             are the trusted runs' (n/m runs: n of m trusted), or every run's where none is: NOT\n\
             TRUSTED (why, below); such points are never the best",
        );
    }
    if all_runs {
        legend.push_str(
            "\nall: the same figures over every run, trusted or not, beside the trusted runs'",
        );
    }
    legend
}

/// What n counts in the legend's interval: the runs per point, or the
/// trusted ones where a run was doubted; every run of a point that has no
/// trusted run (its figures are every run's, NOT TRUSTED).
fn what_n_counts(records: &[&Record], kernel: KernelId, doubted: bool) -> String {
    let mut counts: Vec<usize> = records.iter().map(|r| r.runs.len()).collect();
    counts.sort_unstable();
    counts.dedup();
    let none_trusted = records.iter().any(|r| r.kernel_trust(kernel).none());
    match (counts.as_slice(), doubted, none_trusted) {
        ([1], _, _) => "n = 1 run per point: no interval".to_string(),
        ([n], false, _) => format!("n = {n} runs per point"),
        ([n], true, false) => format!("n = the trusted runs of the {n} per point"),
        ([n], true, true) => format!(
            "n = the trusted runs of the {n} per point; all {n}, none trusted, where NOT TRUSTED"
        ),
        (_, _, false) => "n = the runs column".into(),
        (_, _, true) => "n = the runs column; every run, none trusted, where NOT TRUSTED".into(),
    }
}

/// ` (own)` where a device's host buffers were found on the device's own
/// NUMA node (nine tenths of their pages there, in every run): the row
/// nvbandwidth would measure, against which the other nodes' are read.
pub(super) fn own_node_mark(r: &Record) -> &'static str {
    let own = |run: &crate::results::RunResult| {
        let node = run.target().attached_node();
        node.is_some_and(|n| run.pages_on_nodes.get(&n).is_some_and(|s| *s >= 0.9))
    };
    if !r.runs.is_empty() && r.runs.iter().all(own) {
        " (own)"
    } else {
        ""
    }
}

/// Ranks measured together (`--independent`): per host and launch size,
/// the sum of their mean rates, which is the node's while all ran.
pub(super) fn concurrent_sums(records: &[Record], kernel: crate::kernels::KernelId) -> Vec<String> {
    let mut sums: std::collections::BTreeMap<(&str, usize), (usize, f64)> = Default::default();
    for r in records {
        let (Some(rank), Some(mean)) = (r.point.concurrent_rank, r.mean(kernel)) else {
            continue;
        };
        let sum = sums.entry((&r.host.hostname, rank.ranks)).or_default();
        *sum = (sum.0 + 1, sum.1 + mean);
    }
    (sums.into_iter())
        .map(|((host, ranks), (seen, gb_s))| {
            format!(
                "{host}: {seen} of {ranks} ranks measured together, {} {gb_s:.2} GB/s in sum (the node's rate while they all ran)",
                kernel.spec().name
            )
        })
        .collect()
}

/// The lines on what the points' rates are shares of: why there is no %
/// peak column, and which points were under STREAM's rule or in the caches.
fn band_and_peak_notes(records: &[&Record], long: bool) -> String {
    let mut notes = String::new();
    // Why there is no % peak column, where the points' CPUs have no peak
    // of their own (a virtual machine's slice of a socket) or none is known.
    if long
        && !records.iter().any(|r| shows_peak(r))
        && let Some(why) = records.iter().find_map(|r| r.peak_unknown.as_deref())
    {
        // One line of fixed words (`membw topo` and `run` give the whole
        // reason, with the figure): a table's legend keeps its shape.
        notes.push_str(match crate::peak::share::is_not_theirs(why) {
            true => "\n% peak: none: the known peak is the sockets', not these CPUs' (a VM's or a job's slice); give --peak",
            false => "\n% peak: none: no peak is known for these CPUs (membw topo says why); give --peak",
        });
    }
    let under = (records.iter())
        .filter(|r| r.band() == crate::results::Band::UnderRule)
        .count();
    if long && under > 0 {
        // The mark is only there to explain where a % peak column is.
        let mark = match records.iter().any(|r| shows_peak(r)) {
            true => " (u beside a % peak)",
            false => "",
        };
        notes.push_str(&format!(
            "\nunder STREAM's rule: {under} of {} points, whose arrays exceed the caches of their threads\n\
             together but each is under 4 × them: caches may still help{mark}",
            records.len()
        ));
    }
    let unknown = (records.iter())
        .filter(|r| r.band() == crate::results::Band::Unknown)
        .count();
    if long && unknown > 0 {
        let mark = match records.iter().any(|r| shows_peak(r)) {
            true => " (? beside a % peak)",
            false => "",
        };
        notes.push_str(&format!(
            "\nnot judged: {unknown} of {} points, whose caches or array sizes are unknown: STREAM's\n\
             rule neither holds nor fails for them, neither memory nor cache bandwidth{mark}",
            records.len()
        ));
    }
    let cached = records.iter().filter(|r| r.in_caches()).count();
    if cached > 0 {
        notes.push_str(&format!(
            "\ncaches: {cached} of {} points measured the caches, their arrays all within the caches\n\
             of their threads: cache bandwidth, not memory, no share of the peak",
            records.len()
        ));
    }
    notes
}
