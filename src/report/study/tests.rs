use super::*;
use crate::plan::StoresRequest;
use crate::results::{Bandwidth, Host, NumaCell, Point, Stats};

pub(crate) fn cell(cpu: usize, mem: usize, gb_s: f64) -> Record {
    let host = Host {
        hostname: "h".into(),
        cpu_model: None,
        kernel: "k".into(),
        online_cpus: 4,
        numa_nodes: 2,
        sockets: 2,
        thp_mode: None,
        interleave_weights: None,
        clocks: None,
    };
    let point = Point {
        threads: 1,
        placement: Some(crate::placement::identity::PlacementId::parse(&format!(
            "cpu node {cpu}, 1 thread"
        ))),
        mem: crate::memory::written::PolicySpec::parse(&format!("bind:{mem}")).ok(),
        stores: StoresRequest::Auto,
        hugepages: crate::memory::Hugepages::Auto,
        kernels: vec![KernelId::Triad],
        elements: 1,
        working_set_per_thread: 24,
        ntimes: 2,
        numa: Some(NumaCell {
            cpu_node: cpu,
            mem_node: mem,
            all_cores: false,
        }),
        element_bytes: None,
        offset: 0,
        gpu_memory: Default::default(),
        isa: None,
        concurrent_rank: None,
        together: None,
        target: None,
    };
    Record::new(
        "sweep",
        "t",
        &host,
        point,
        Bandwidth {
            source: "fake".into(),
            reproduce: None,
            runs: Vec::new(),
            stats: [(
                KernelId::Triad,
                Stats {
                    mean: gb_s,
                    sd: 0.0,
                    ci: None,
                    min: gb_s,
                    max: gb_s,
                    n: 1,
                },
            )]
            .into(),
            peak_gb_s: None,
            peak_source: None,
            peak_unknown: None,
            cache_per_thread: std::collections::BTreeMap::new(),
        },
    )
}

#[test]
fn numa_findings_give_remote_cost_and_symmetry() {
    let records = vec![
        cell(0, 0, 40.0),
        cell(0, 1, 26.0),
        cell(1, 0, 24.0),
        cell(1, 1, 40.0),
    ];
    let lines = numa_findings(&records, KernelId::Triad);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].contains("remote memory costs 38 %"),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("symmetric within 8.0 %"), "{}", lines[1]);
    let t = results_table(&records, KernelId::Triad);
    assert_eq!(t.best, Some(0));
    // The widest table (NUMA cells) fits 100 columns.
    for line in t.plain().lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    assert!(t.markdown().contains("**40.00**"));
    assert!(t.html().contains("<tr class=\"best\">"));
}

#[test]
fn html_escapes_labels() {
    assert_eq!(escape("{0}<1> & \"x\""), "{0}&lt;1&gt; &amp; &quot;x&quot;");
}

#[test]
fn the_tier_study_finds_the_best_split_its_gain_and_the_worst_loss() {
    let at = |share: f64, gb_s: f64| {
        let mut r = cell(0, 0, gb_s);
        r.point.numa = None;
        r.point.mem = Some(
            crate::memory::written::PolicySpec::parse(&crate::report::far::split_text(0, 2, share))
                .unwrap(),
        );
        r
    };
    let records = vec![
        at(0.0, 100.0),
        at(10.0, 112.0),
        at(20.0, 124.0),
        at(30.0, 118.0),
        at(50.0, 81.0),
    ];
    let (near, far, kernels) = crate::report::far::study(&records).unwrap();
    assert_eq!((near, far), (0, 2));
    let k = &kernels[0];
    assert_eq!((k.best_share, k.best_gb_s), (20.0, 124.0));
    assert!((k.gain_percent().unwrap() - 24.0).abs() < 1e-9);
    assert_eq!(k.worst_share, 50.0);
    assert!((k.loss_percent().unwrap() - 19.0).abs() < 1e-9);
    let text = summary(&records, KernelId::Triad, false);
    assert!(
        text.contains("Tier study: near node 0, far node 2"),
        "{text}"
    );
    assert!(
        text.contains("+24.0 %") && text.contains("-19.0 %"),
        "{text}"
    );
    let svg = crate::report::plot::bandwidth::far_share_plot(&records).unwrap();
    assert_eq!(
        svg.matches("stroke-width=\"2\"").count(),
        1,
        "one line per kernel"
    );
    // One share is no study.
    assert!(crate::report::far::study(&records[..1]).is_none());
}

#[test]
fn the_cache_level_study_reads_each_level_off_a_size_sweep() {
    let caches: std::collections::BTreeMap<String, u64> = [
        ("L1d".to_string(), 32 << 10),
        ("L2".to_string(), 512 << 10),
        ("L3".to_string(), 16 << 20),
    ]
    .into();
    let at = |working_set: u64, gb_s: f64| {
        let mut r = cell(0, 0, gb_s);
        r.point.numa = None;
        r.point.working_set_per_thread = working_set;
        r.cache_per_thread = caches.clone();
        r
    };
    let records = vec![
        at(8 << 10, 300.0),
        at(16 << 10, 310.0),
        at(256 << 10, 190.0),
        at(32 << 20, 90.0), // between L3 and DRAM: no level's
        at(1 << 30, 45.0),
    ];
    let (levels, rows) = crate::report::levels::study(&records).unwrap();
    assert_eq!(levels.len(), 4);
    let cells: Vec<Option<f64>> = rows[0].2.iter().map(|c| c.as_ref().map(|c| c.0)).collect();
    assert_eq!(cells, [Some(310.0), Some(190.0), None, Some(45.0)]);
    let text = summary(&records, KernelId::Triad, false);
    assert!(text.contains("Cache levels:"), "{text}");
    assert!(
        text.contains("L1 (≤24 KiB)") && text.contains("DRAM (≥64 MiB)"),
        "{text}"
    );
    // One level is no study.
    assert!(crate::report::levels::study(&records[..2]).is_none());
    // Each point by its own caches: with two threads the L3's share per
    // thread halves, and 10 MiB a thread no longer stays in it.
    let mut two = at(10 << 20, 120.0);
    two.point.threads = 2;
    two.cache_per_thread.insert("L3".into(), 8 << 20);
    let mut more = records.clone();
    more.push(two);
    let (levels, rows) = crate::report::levels::study(&more).unwrap();
    assert!(rows.iter().all(|r| r.1 != 2), "{rows:?}");
    // The header's bounds are those of the most threads.
    assert_eq!(levels[2].bound, 6 << 20);
}

/// A run of triad and copy at these rates and spreads (max/min time),
/// watched, with `busy` as the tick counters' finding.
pub(super) fn run(
    triad: f64,
    copy: f64,
    spreads: (f64, f64),
    busy: Option<&str>,
) -> crate::results::RunResult {
    let mut findings: Vec<String> = busy.into_iter().map(String::from).collect();
    findings.extend(crate::trust::spread_finding([
        ("triad", spreads.0),
        ("copy", spreads.1),
    ]));
    crate::results::RunResult {
        cpus: vec![0],
        target: None,
        isa: None,
        stores: None,
        kernel_stores: Default::default(),
        inner_repeats: 1,
        best_gb_s: [(KernelId::Triad, triad), (KernelId::Copy, copy)].into(),
        spread: [(KernelId::Triad, spreads.0), (KernelId::Copy, spreads.1)].into(),
        validated: true,
        pages_held: true,
        pages_sampled: 0,
        pages_on_nodes: Default::default(),
        setup_s: 0.0,
        total_s: 1.0,
        measured_s: 1.0,
        warnings: Vec::new(),
        interference: Some(crate::trust::Interference {
            window_s: 1.0,
            busy: busy.is_some(),
            findings,
            ..Default::default()
        }),
        migrations: None,
        caches_unknown: None,
        detail: None,
    }
}

/// A point of `threads` threads with these runs.
pub(super) fn point_with(threads: usize, runs: Vec<crate::results::RunResult>) -> Record {
    let mut r = cell(0, 0, 0.0);
    r.point.numa = None;
    r.point.threads = threads;
    r.stats = Record::stats_of(&runs);
    r.runs = runs;
    r
}

pub(super) const STEADY: (f64, f64) = (1.1, 1.1);

#[test]
fn an_unsteady_kernel_in_one_of_ten_runs_leaves_that_run_out_of_that_kernel_only() {
    let mut runs: Vec<_> = (0..9)
        .map(|i| run(50.0 + i as f64 * 0.1, 40.0, STEADY, None))
        .collect();
    // The tenth run: copy varied 2×, triad was steady but slow.
    runs.push(run(30.0, 40.0, (1.1, 2.0), None));
    let r = point_with(2, runs);
    let copy = r.kernel_trust(KernelId::Copy);
    assert_eq!(
        (copy.trusted(), copy.runs, copy.cell()),
        (9, 10, "9/10 runs".to_string())
    );
    assert!(
        copy.doubt
            .unwrap()
            .starts_with("copy's repetitions varied 2.00×")
    );
    // Triad's own repetitions were steady in every run: all ten count.
    let triad = r.kernel_trust(KernelId::Triad);
    assert!(triad.whole() && triad.stats.unwrap().n == 10);
    // Other work in a run doubts every kernel of it.
    let mut runs: Vec<_> = (0..9).map(|_| run(50.0, 40.0, STEADY, None)).collect();
    runs.push(run(
        20.0,
        10.0,
        STEADY,
        Some("CPU 0 was 40 % busy with other work during the run: results may be low"),
    ));
    let r = point_with(2, runs);
    for k in [KernelId::Triad, KernelId::Copy] {
        let t = r.kernel_trust(k);
        assert_eq!((t.trusted(), t.runs), (9, 10));
        assert_eq!(
            t.stats.unwrap().mean,
            if k == KernelId::Triad { 50.0 } else { 40.0 }
        );
    }
    let text = summary(&[r], KernelId::Triad, false);
    assert!(text.contains("9/10 runs"), "{text}");
    // Every run's figures beside: the busy run pulls the mean to 47.
    assert!(
        text.contains(
            "9 of 10 runs trusted (all 10 runs: 47.00 ± 6.79 GB/s, min 20.00, max 50.00); left out: CPU 0 was 40 % busy"
        ),
        "{text}"
    );
    assert!(
        text.contains("best triad: 50.00 GB/s (9 of 10 runs trusted)"),
        "{text}"
    );
}

#[test]
fn every_runs_figures_stand_beside_the_trusted_ones_and_the_legend_reads_the_tables_kernel() {
    let mut runs: Vec<_> = (0..9).map(|_| run(50.0, 40.0, STEADY, None)).collect();
    // Copy varied 2× in the tenth run: only copy leaves it out.
    runs.push(run(50.0, 20.0, (1.1, 2.0), None));
    let records = [point_with(2, runs)];
    let long =
        |kernel, all_runs| summary_laid_out(&records, kernel, false, Layout::Long { all_runs });
    let copy = long(KernelId::Copy, true);
    let (header, row) = {
        let mut lines = copy.lines();
        (lines.next().unwrap(), lines.next().unwrap())
    };
    let words = |line: &str| line.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words(header).ends_with("sd trust all: copy GB/s all: min all: max all: sd"),
        "{copy}"
    );
    // Trusted: nine runs at 40; every run: the tenth's 20 pulls it to 38.
    assert!(
        words(row)
            .ends_with("40.00 ± 0.00 40.00 40.00 0.00 9/10 runs 38.00 ± 4.52 20.00 40.00 6.32"),
        "{row}"
    );
    assert!(
        copy.contains("\nall: the same figures over every run"),
        "{copy}"
    );
    // Without asking, no such columns; the legend explains the trust
    // column of the kernel the table shows, not triad's.
    let plain = long(KernelId::Copy, false);
    assert!(
        !plain.contains("all: copy") && !plain.contains("\nall: "),
        "{plain}"
    );
    assert!(
        plain.contains("trust: each run is judged on its own"),
        "{plain}"
    );
    let triad = long(KernelId::Triad, false);
    assert!(!triad.contains("trust: each run"), "{triad}");
    assert!(triad.contains("n = 10 runs per point"), "{triad}");
}

#[test]
fn an_untrusted_fast_point_is_never_the_best_and_a_tie_is_not_resolved() {
    // The fast point: every run other work. The slow one: quiet, steady.
    let fast = point_with(
        2,
        (0..3)
            .map(|_| {
                run(
                    60.0,
                    60.0,
                    STEADY,
                    Some("CPU 1 was 90 % busy with other work during the run: results may be low"),
                )
            })
            .collect(),
    );
    let slow = point_with(
        1,
        (0..3)
            .map(|i| run(30.0 + i as f64, 30.0, STEADY, None))
            .collect(),
    );
    let records = vec![fast, slow];
    let text = summary(&records, KernelId::Triad, false);
    assert!(text.contains("best triad: 31.00 GB/s with"), "{text}");
    assert!(
        text.contains("NOT TRUSTED for triad: 1 of 2 points"),
        "{text}"
    );
    // The untrusted point's figures are every run's: the legend says n
    // counts them there, not trusted runs.
    let legend = super::legend::long_legend(&records, KernelId::Triad, false);
    assert!(
        legend.contains(
            "n = the trusted runs of the 3 per point; all 3, none trusted, where NOT TRUSTED"
        ),
        "{legend}"
    );
    assert!(
        legend.contains("or every run's where none is: NOT"),
        "{legend}"
    );
    let v = StudyConclusion::find(&records, KernelId::Triad).unwrap();
    assert_eq!(v.best.point.threads, 1);
    assert!(v.runner_up.is_none() && v.resolved());
    // Another point's kernel varied in its runs: triad still judges it.
    let steady_triad = point_with(
        2,
        (0..3)
            .map(|i| run(57.8 + i as f64 * 0.05, 40.0, (1.1, 2.2), None))
            .collect(),
    );
    let noisy = point_with(
        1,
        vec![
            run(40.5, 40.0, STEADY, None),
            run(41.5, 40.0, STEADY, None),
            run(60.0, 40.0, STEADY, None),
        ],
    );
    let records = vec![steady_triad, noisy];
    let v = StudyConclusion::find(&records, KernelId::Triad).unwrap();
    assert_eq!(
        v.best.point.threads, 2,
        "the steady triad point is the best by triad"
    );
    // Overlapping points: the highest mean, and not resolved.
    let a = point_with(
        1,
        vec![
            run(50.0, 1.0, STEADY, None),
            run(54.0, 1.0, STEADY, None),
            run(52.0, 1.0, STEADY, None),
        ],
    );
    let b = point_with(
        2,
        vec![
            run(51.0, 1.0, STEADY, None),
            run(53.0, 1.0, STEADY, None),
            run(52.5, 1.0, STEADY, None),
        ],
    );
    let records = vec![a, b];
    let v = StudyConclusion::find(&records, KernelId::Triad).unwrap();
    assert!(!v.resolved());
    let text = summary(&records, KernelId::Triad, false);
    assert!(
        text.contains("best triad: not resolved; the highest mean is"),
        "{text}"
    );
    assert!(text.contains("runner-up: "), "{text}");
}

#[test]
fn the_best_points_sentence_names_what_sets_it_apart() {
    let mut r = cell(0, 0, 10.0);
    assert!(
        !configuration(&r).contains("offset"),
        "{}",
        configuration(&r)
    );
    r.point.offset = 1840;
    r.point.hugepages = crate::memory::Hugepages::Never;
    r.point.isa = Some(crate::kernels::Isa::Scalar);
    let words = configuration(&r);
    for part in ["scalar ISA", "never pages", "offset 1840"] {
        assert!(words.contains(part), "{part}: {words}");
    }
}
