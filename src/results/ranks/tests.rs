//! The per-node table, aggregate and slow-node decisions on hand-made ranks.

use super::*;
use crate::kernels::StoreMode;

/// A rank that moved `gb` GB per repetition in `times` seconds.
fn rank(rank: usize, host: &str, cpus: Vec<usize>, times: Vec<f64>) -> RankRun {
    let bytes = 1e9;
    let best = times[1..]
        .iter()
        .map(|t| bytes / t / 1e9)
        .fold(0.0, f64::max);
    RankRun {
        rank,
        local_rank: None,
        host: host.into(),
        cpus,
        affinity: Vec::new(),
        bound_by: None,
        device: None,
        validated: true,
        validation_error: None,
        pages_held: true,
        elements: (bytes / 24.0) as u64,
        best_gb_s: [(KernelId::Triad, best)].into(),
        times_s: [(KernelId::Triad, times.clone())].into(),
        synced_s: [(KernelId::Triad, times.iter().map(|t| t + 0.001).collect())].into(),
        bytes: [(KernelId::Triad, bytes)].into(),
        node_peak_gb_s: Some(100.0),
        warnings: vec![],
        untrusted: None,
    }
}

#[test]
fn the_aggregate_is_all_bytes_over_the_slowest_rank_per_repetition() {
    // Repetition 1: slowest 0.5 s; repetition 2: slowest 0.25 s. The
    // first repetition does not count.
    let ranks = vec![
        rank(0, "a", vec![0], vec![0.01, 0.5, 0.1]),
        rank(1, "a", vec![1], vec![0.01, 0.1, 0.25]),
    ];
    let s = Ranks::summarize("mpi", ranks, 0.9).unwrap();
    let agg = s.aggregate_gb_s[&KernelId::Triad];
    assert!((agg - 2.0 / 0.251).abs() < 1e-9, "{agg}");
    // Each rank's own best summed is more than they got together.
    let sum = s.sum_of_best_gb_s[&KernelId::Triad];
    assert!((sum - (10.0 + 10.0)).abs() < 1e-9, "{sum}");
    assert!(s.skew.abs() < 1e-12);
    assert!(s.overlaps.is_empty());
    assert_eq!(s.nodes.len(), 1);
    assert_eq!((s.nodes[0].ranks, s.nodes[0].threads), (2, 2));
}

#[test]
fn exactly_the_slow_node_is_flagged() {
    let ranks = vec![
        rank(0, "n1", vec![0], vec![1.0, 0.1, 0.1]),
        rank(1, "n2", vec![0], vec![1.0, 0.1, 0.1]),
        rank(2, "n3", vec![0], vec![1.0, 0.2, 0.2]),
        rank(3, "n4", vec![0], vec![1.0, 0.105, 0.105]),
    ];
    let s = Ranks::summarize("files", ranks, 0.9).unwrap();
    let slow = s.slow_hosts();
    assert_eq!(slow, vec!["n3"]);
    assert!(s.aggregate_gb_s.is_empty());
    let n3 = &s.nodes[2];
    assert!((n3.gb_s - 5.0).abs() < 1e-9);
    assert!((n3.of_peak.unwrap() - 0.05).abs() < 1e-9);
    assert!((s.skew - 0.5).abs() < 1e-9);
    // Its two repetitions agree: slow beyond its noise.
    assert!(matches!(
        s.slow_decisions()[..],
        [("n3", Some(SlowDecision::Resolved { n: 2, .. }))]
    ));
    // Repetitions at 5 and 8.5 GB/s: slow by its best, but its
    // interval reaches 90 % of the median node's mean.
    let ranks = vec![
        rank(0, "n1", vec![0], vec![1.0, 0.1, 0.1]),
        rank(1, "n2", vec![0], vec![1.0, 0.1, 0.1]),
        rank(2, "n3", vec![0], vec![1.0, 0.2, 1.0 / 8.5]),
    ];
    let s = Ranks::summarize("files", ranks, 0.9).unwrap();
    assert_eq!(s.slow_hosts(), vec!["n3"]);
    assert!(matches!(
        s.slow_decisions()[..],
        [("n3", Some(SlowDecision::NotResolved { n: 2, .. }))]
    ));
}

#[test]
fn a_node_slow_by_its_best_but_not_by_its_mean_is_cleared_and_said() {
    // The case: n1 and n3 had one lucky repetition (12.1 GB/s) and
    // ran 11.0 otherwise; n2 ran a steady 11.05. n2's best is 91 % of the
    // median's, but its mean's interval lies above 95 % of the median mean.
    let times = |rates: &[f64]| {
        let mut t = vec![1.0];
        t.extend(rates.iter().map(|r| 1.0 / r));
        t
    };
    let ranks = vec![
        rank(0, "n1", vec![0], times(&[12.1, 11.0, 11.0, 11.0])),
        rank(1, "n2", vec![0], times(&[11.03, 11.05, 11.07, 11.04])),
        rank(2, "n3", vec![0], times(&[12.1, 11.0, 11.0, 11.0])),
    ];
    let s = Ranks::summarize("files", ranks, 0.95).unwrap();
    assert!(s.nodes[1].of_median < 0.95);
    // Neither flagged nor counted for the exit code: one comparison.
    assert!(s.slow_hosts().is_empty());
    assert!(s.nodes[1].cleared_by_mean && !s.nodes[1].slow);
    let [
        (
            "n2",
            Some(SlowDecision::NotSlowByMean {
                mean, half, line, ..
            }),
        ),
    ] = s.slow_decisions()[..]
    else {
        panic!("{:?}", s.slow_decisions());
    };
    // The words' numbers: the whole interval above the line.
    assert!(mean - half >= line, "{mean} ± {half} against {line}");
}

#[test]
fn ranks_bound_to_the_same_cpus_of_one_node_are_found() {
    let ranks = vec![
        rank(0, "a", vec![0, 1], vec![1.0, 1.0]),
        rank(1, "a", vec![1, 2], vec![1.0, 1.0]),
        rank(2, "b", vec![0, 1], vec![1.0, 1.0]),
    ];
    assert_eq!(overlaps(&ranks), vec!["ranks 0 and 1 on a share CPU 1"]);
}

#[test]
fn where_ranks_could_run_is_read_back_not_where_they_were_placed() {
    let read_back = |mut r: RankRun, lists: &[&str]| {
        r.affinity = lists.iter().map(|l| l.to_string()).collect();
        r
    };
    // Placed on the same CPU, but the kernel kept them apart.
    let apart = vec![
        read_back(rank(0, "a", vec![0], vec![1.0, 1.0]), &["0"]),
        read_back(rank(1, "a", vec![0], vec![1.0, 1.0]), &["1"]),
    ];
    assert!(overlaps(&apart).is_empty());
    // Placed apart, but one rank's thread was left free over both CPUs
    // (--no-pin under a launcher that bound nothing): they may meet.
    let free = vec![
        read_back(rank(0, "a", vec![0], vec![1.0, 1.0]), &["0-1"]),
        read_back(rank(1, "a", vec![1], vec![1.0, 1.0]), &["1"]),
    ];
    assert_eq!(
        overlaps(&free),
        vec!["ranks 0 and 1 on a may share CPU 1 (their threads are not each bound to one CPU)"]
    );
}

#[test]
fn aggregate_results_count_every_ranks_elements() {
    let ranks = vec![
        rank(0, "a", vec![0], vec![0.5, 0.5]),
        rank(1, "b", vec![0], vec![0.5, 0.4]),
    ];
    let s = Ranks::summarize("mpi", ranks, 0.9).unwrap();
    let r = &s.aggregate_results(Some(StoreMode::Regular))[0];
    // Both ranks' bytes (2 × 1e9, to rounding of elements) over 0.501 s.
    assert!(
        (r.best_gb_s() - 2.0 / 0.501).abs() < 1e-3,
        "{}",
        r.best_gb_s()
    );
    assert_eq!(r.times_s.len(), 2);
}
