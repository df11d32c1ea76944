use super::*;

#[test]
fn a_sources_detail_keeps_its_json_field_name() {
    let run = |detail| RunResult {
        target: None,
        cpus: vec![0],
        isa: None,
        stores: None,
        kernel_stores: Default::default(),
        inner_repeats: 1,
        best_gb_s: BTreeMap::new(),
        spread: BTreeMap::new(),
        validated: true,
        pages_held: true,
        pages_sampled: 0,
        pages_on_nodes: Default::default(),
        setup_s: 0.0,
        total_s: 1.0,
        measured_s: 0.0,
        warnings: Vec::new(),
        interference: None,
        migrations: None,
        caches_unknown: None,
        detail,
    };
    let program: measurement::ProgramRun = serde_json::from_value(serde_json::json!({
        "exit_code": 0, "signal": null, "timed_out": false, "format": "stream",
        "stdout_tail": [], "stderr_tail": [], "ntimes": 7
    }))
    .unwrap();
    let with = serde_json::to_value(run(Some(Box::new(measurement::SourceDetail::Program(
        program,
    )))))
    .unwrap();
    assert_eq!(with["program"]["ntimes"], 7, "{with}");
    let back: RunResult = serde_json::from_value(with).unwrap();
    assert_eq!(back.program().and_then(|p| p.ntimes), Some(7));
    assert!(back.ranks().is_none());
    let without = serde_json::to_value(run(None)).unwrap();
    assert!(without.get("program").is_none() && without.get("ranks").is_none());
    let back: RunResult = serde_json::from_value(without).unwrap();
    assert!(back.detail.is_none());
}

#[test]
fn stats_use_the_sample_standard_deviation() {
    let s = Stats::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
    assert_eq!((s.mean, s.min, s.max, s.n), (5.0, 2.0, 9.0, 8));
    assert!((s.sd - 2.138089935).abs() < 1e-6);
    assert_eq!(Stats::of(&[3.0]).unwrap().sd, 0.0);
    assert!(Stats::of(&[]).is_none());
}

#[test]
fn a_programs_unknown_sizes_are_absent_and_old_zeros_read_the_same() {
    // Written before: a program that printed no sizes recorded zeros.
    let old = r#"{"threads":1,"placement":"spread","mem":"local","stores":"auto",
        "kernels":["triad"],"elements":0,"working_set_per_thread":0,"ntimes":0,
        "numa":null,"program":"stream-gcc"}"#;
    let point: Point = serde_json::from_str(old).unwrap();
    let now = serde_json::to_value(&point).unwrap();
    for unknown in ["elements", "working_set_per_thread", "ntimes"] {
        assert!(now.get(unknown).is_none(), "{unknown}: {now}");
    }
    assert_eq!(serde_json::from_value::<Point>(now).unwrap(), point);
    // The key --resume matches points by is the same for both spellings.
    let explicit: Point = serde_json::from_str(&old.replace(r#""elements":0,"#, "")).unwrap();
    assert_eq!(explicit.key(), point.key());
}
