//! The interference rule on recorded `/proc/stat` samples: no timing, so a
//! quiet run's "no finding" is as testable as a busy one's line.

use super::*;
use crate::sys::parse_proc_stat;

/// Two samples 1 s apart (USER_HZ 100) of a 2-CPU machine, as recorded.
fn samples(before: &str, after: &str) -> (Vec<CpuTicks>, Vec<CpuTicks>) {
    (parse_proc_stat(before), parse_proc_stat(after))
}

const BEFORE: &str = "cpu  200 0 100 2000 0 0 0 0 0 0\n\
                      cpu0 100 0 50 1000 0 0 0 0 0 0\n\
                      cpu1 100 0 50 1000 0 0 0 0 0 0\n";

fn own(pairs: &[(usize, u64)]) -> BTreeMap<usize, u64> {
    pairs.iter().copied().collect()
}

#[test]
fn a_quiet_run_on_both_cpus_has_no_finding() {
    // Each CPU: 100 ticks, all busy, all of them membw's pinned thread.
    let (b, a) = samples(
        BEFORE,
        "cpu0 195 0 55 1000 0 0 0 0 0 0\ncpu1 196 0 54 1000 0 0 0 0 0 0\n",
    );
    let i = judge(
        &b,
        &a,
        &own(&[(0, 100), (1, 100)]),
        JudgedCpus::node(&[0, 1]),
        1.0,
        Effect::Bandwidth,
    );
    assert!(i.clean(), "{:?}", i.findings);
    assert_eq!(i.cpus.len(), 2);
    assert!(i.cpus.iter().all(|c| c.measured && c.other_pct == 0.0));
    assert_eq!(
        i.quiet_line(),
        "no other work on CPUs 0-1 and no steal during the 1.00 s measured"
    );
}

#[test]
fn a_competitor_on_a_measured_cpu_is_named_with_its_share() {
    // CPU 1 busy all 100 ticks, membw's thread got 62 of them.
    let (b, a) = samples(
        BEFORE,
        "cpu0 200 0 50 1000 0 0 0 0 0 0\ncpu1 200 0 50 1000 0 0 0 0 0 0\n",
    );
    let i = judge(
        &b,
        &a,
        &own(&[(0, 100), (1, 62)]),
        JudgedCpus::node(&[0, 1]),
        1.0,
        Effect::Bandwidth,
    );
    assert_eq!(
        i.findings,
        vec!["CPU 1 was 38 % busy with other work during the run: results may be low"]
    );
    assert_eq!(i.cpus[1].other_pct, 38.0);
}

#[test]
fn a_memory_hog_on_the_cpu_not_measured_is_named_too() {
    // membw on CPU 0; CPU 1 fully busy with something else.
    let (b, a) = samples(
        BEFORE,
        "cpu0 200 0 50 1000 0 0 0 0 0 0\ncpu1 195 0 55 1000 0 0 0 0 0 0\n",
    );
    let i = judge(
        &b,
        &a,
        &own(&[(0, 100)]),
        JudgedCpus::node(&[0]),
        1.0,
        Effect::Bandwidth,
    );
    assert_eq!(
        i.findings,
        vec![
            "CPU 1 was 100 % busy with other work during the run (not measured, but sharing the memory): results may be low"
        ]
    );
    // An idle CPU elsewhere is not listed; a busy one is.
    assert_eq!(i.cpus.len(), 2);
    assert!(!i.cpus[1].measured);
    // One rank of several: CPU 1 may hold the job's other rank.
    let i = judge(
        &b,
        &a,
        &own(&[(0, 100)]),
        JudgedCpus::rank(&[0]),
        1.0,
        Effect::Bandwidth,
    );
    assert!(i.clean(), "{:?}", i.findings);
}

#[test]
fn steal_is_its_own_finding() {
    // CPU 0: 80 busy (membw) + 20 steal; CPU 1 quiet.
    let (b, a) = samples(
        BEFORE,
        "cpu0 180 0 50 1000 0 0 0 20 0 0\ncpu1 200 0 50 1000 0 0 0 0 0 0\n",
    );
    let i = judge(
        &b,
        &a,
        &own(&[(0, 80), (1, 100)]),
        JudgedCpus::node(&[0, 1]),
        1.0,
        Effect::Bandwidth,
    );
    assert_eq!(
        i.findings,
        vec!["the hypervisor took 20 % of CPU 0's time (steal): results may be low"]
    );
}

#[test]
fn a_tick_or_two_is_granularity_not_a_finding() {
    // A 10-tick window: 2 ticks of other work is 20 % but below MIN_TICKS.
    let (b, a) = samples(
        BEFORE,
        "cpu0 110 0 50 1000 0 0 0 0 0 0\ncpu1 110 0 50 1000 0 0 0 0 0 0\n",
    );
    let i = judge(
        &b,
        &a,
        &own(&[(0, 8), (1, 10)]),
        JudgedCpus::node(&[0, 1]),
        0.1,
        Effect::Bandwidth,
    );
    assert!(i.clean(), "{:?}", i.findings);
    assert_eq!(i.cpus[0].other_pct, 20.0);
}

#[test]
fn several_busy_cpus_share_one_line_with_the_range() {
    let before = "cpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\ncpu2 0 0 0 0 0 0 0 0 0 0\n";
    let after =
        "cpu0 100 0 0 0 0 0 0 0 0 0\ncpu1 100 0 0 0 0 0 0 0 0 0\ncpu2 100 0 0 0 0 0 0 0 0 0\n";
    let (b, a) = samples(before, after);
    let i = judge(
        &b,
        &a,
        &own(&[(0, 80), (1, 50), (2, 100)]),
        JudgedCpus::node(&[0, 1, 2]),
        1.0,
        Effect::Bandwidth,
    );
    assert_eq!(
        i.findings,
        vec!["CPUs 0-1 were 20-50 % busy with other work during the run: results may be low"]
    );
    assert_eq!(
        i.cause(),
        Some("CPUs 0-1 were 20-50 % busy with other work during the run")
    );
}

#[test]
fn the_cause_is_the_first_finding_without_its_last_words() {
    let with = |findings: &[&str]| Interference {
        window_s: 1.0,
        cpus: Vec::new(),
        findings: findings.iter().map(|f| f.to_string()).collect(),
        busy: !findings.is_empty(),
        not_judged: None,
    };
    assert_eq!(with(&[]).cause(), None);
    assert_eq!(
        with(&["the hypervisor took 30 % of CPU 0's time (steal): latencies may be high"]).cause(),
        Some("the hypervisor took 30 % of CPU 0's time (steal)")
    );
    // The parenthesis's colon stays; only the last words go.
    let elsewhere =
        "CPU 1 was 40 % busy with other work during the run (not measured, but sharing the memory)";
    assert_eq!(
        with(&[&format!("{elsewhere}: results may be low"), "later"]).cause(),
        Some(elsewhere)
    );
    assert_eq!(with(&["no last words"]).cause(), Some("no last words"));
}

#[test]
fn own_threads_are_charged_to_their_cpus_and_new_threads_count_whole() {
    let t = |tid, ticks, cpu| TaskTicks { tid, ticks, cpu };
    let by_cpu = own_by_cpu(
        &[t(1, 5, 0), t(2, 10, 1)],
        &[t(1, 9, 0), t(2, 30, 1), t(3, 7, 1)],
    );
    assert_eq!(by_cpu, own(&[(0, 4), (1, 27)]));
    let mut with_child = by_cpu.clone();
    spread_over(&mut with_child, &[0, 1], 10);
    assert_eq!(with_child, own(&[(0, 9), (1, 32)]));
}

#[test]
fn the_spread_finding_names_the_worst_kernel_from_its_threshold() {
    assert_eq!(spread_finding([("copy", 1.2), ("triad", 1.49)]), None);
    let line = spread_finding([("copy", 2.31), ("triad", 1.6)]).unwrap();
    assert!(
        line.starts_with("copy's repetitions varied 2.31×"),
        "{line}"
    );
}

#[test]
fn snapshots_of_this_process_judge_without_error() {
    let start = Snapshot::take();
    let end = Snapshot::take();
    let i = start.until(&end, JudgedCpus::node(&[0]), 0, Effect::Latency);
    assert!(i.window_s >= 0.0);
}

/// A window of `window_s` at 100 ticks a second in which CPU 1 (measured
/// or not) had `other` ticks of other work (below zero: the counters'
/// disagreement).
fn window(window_s: f64, cpu1_measured: bool, other: i64) -> Interference {
    let pct = (other.max(0) as f64 / 100.0) * 100.0 / window_s;
    Interference {
        window_s,
        cpus: vec![
            CpuLoad {
                cpu: 0,
                measured: true,
                other_pct: 0.0,
                steal_pct: 0.0,
                other_ticks: 0,
            },
            CpuLoad {
                cpu: 1,
                measured: cpu1_measured,
                other_pct: pct,
                steal_pct: 0.0,
                other_ticks: other,
            },
        ],
        findings: Vec::new(),
        busy: false,
        not_judged: None,
    }
}

#[test]
fn a_tally_of_short_windows_sees_what_no_single_window_could() {
    // 2 ticks of other work in one 40 ms window is under the granularity;
    // twenty such rounds are 40 ticks, half of CPU 1's time, less a quarter
    // tick per window left to rounding.
    let mut tally = Tally::new(100.0);
    tally.add(&window(0.04, true, 2));
    assert!(!tally.judge(true, Effect::Bandwidth).busy);
    for _ in 1..20 {
        tally.add(&window(0.04, true, 2));
    }
    let i = tally.judge(true, Effect::Bandwidth);
    assert_eq!(
        i.findings,
        ["CPU 1 was 44 % busy with other work during the run: results may be low"]
    );
    assert!((i.window_s - 0.8).abs() < 1e-9);
    // A tick too many in some windows and too few in others cancels out,
    // where each window's clipped share would add up to an eighth.
    let mut noise = Tally::new(100.0);
    for k in 0..40 {
        noise.add(&window(0.04, true, if k % 2 == 0 { 1 } else { -1 }));
    }
    let i = noise.judge(true, Effect::Bandwidth);
    assert!(!i.busy, "{:?}", i.findings);
    assert_eq!(i.cpus[1].other_pct, 0.0);
    // One-second windows: under a tenth on a measured CPU and a quarter
    // elsewhere is quiet, over it is not.
    for (measured, other, busy) in [(true, 8, false), (false, 20, false), (true, 12, true)] {
        let mut tally = Tally::new(100.0);
        for _ in 0..5 {
            tally.add(&window(1.0, measured, other));
        }
        let i = tally.judge(true, Effect::Bandwidth);
        assert_eq!(i.busy, busy, "{other} ticks: {:?}", i.findings);
        let seen = i.cpus.iter().find(|c| c.cpu == 1).unwrap();
        assert!(
            (seen.other_pct - (other as f64 - 0.25)).abs() < 1e-9,
            "{seen:?}"
        );
    }
}

#[test]
fn sibling_ranks_on_a_measured_cpu_are_named_as_such_and_elsewhere_not_at_all() {
    let hz = crate::sys::ticks_per_second();
    // A 1 s window: a sibling rank took half of CPU 0, which this rank
    // measured, and all of CPU 1, which it did not.
    let siblings = own(&[(0, (hz / 2.0) as u64), (1, hz as u64)]);
    let f = siblings_finding(&siblings, &[0], 1.0, Effect::Bandwidth).unwrap();
    assert!(
        f.starts_with("other ranks of this launch ran on CPU 0 beside this one (up to 50 %"),
        "{f}"
    );
    assert!(!f.contains("other work"), "{f}");
    // On the other rank's own CPU only: the job's own work, no finding.
    assert_eq!(
        siblings_finding(&siblings, &[2], 1.0, Effect::Bandwidth),
        None
    );
    // Under a tenth of the window: none either.
    let little = own(&[(0, (hz / 20.0).max(3.0) as u64)]);
    assert_eq!(
        siblings_finding(&little, &[0], 10.0, Effect::Bandwidth),
        None
    );
}
