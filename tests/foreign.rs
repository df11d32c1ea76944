//! A STREAM-format program of the project's own (bench/stream-omp.c), built
//! with gcc, run under a placement and read back: the parts `membw exec`
//! is built from.

mod common;

use membw::foreign::{self, Launch, parse};
use std::collections::BTreeSet;
use std::time::Duration;

#[test]
fn a_gcc_stream_build_runs_pinned_and_its_table_is_read() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("stream-gcc");
    let Some(_) = common::tool(
        std::process::Command::new("gcc").args([
            "-O2",
            "-fopenmp",
            root.join("bench/stream-omp.c").to_str().unwrap(),
            "-o",
            exe.to_str().unwrap(),
        ]),
        "gcc",
    ) else {
        return;
    };
    let topo = membw::topology::Topology::live().unwrap();
    let cpus = topo.allowed_cpus.ids().to_vec();
    let argv = vec![
        exe.to_str().unwrap().to_string(),
        "2000000".into(),
        "4".into(),
    ];
    let ran = foreign::run(&Launch {
        argv: &argv,
        cpus: &cpus,
        policy: None,
        keep: &BTreeSet::new(),
        timeout: Duration::from_secs(60),
        sample_every: Duration::from_millis(10),
    })
    .unwrap();
    assert_eq!(ran.code, Some(0), "{:?}", ran.stderr_tail);
    let out = parse::parse(&ran.stdout).unwrap();
    assert_eq!(out.format, parse::Format::Stream);
    let kernels: Vec<_> = out.rates.iter().filter_map(|r| r.kernel).collect();
    assert_eq!(kernels.len(), 4, "{}", ran.stdout);
    assert!(out.rates.iter().all(|r| r.best_mb_s > 0.0));
    // Every thread the samples caught stayed on the CPUs it was given.
    assert!(!ran.threads.is_empty());
    for t in &ran.threads {
        assert!(t.cpus.iter().all(|c| cpus.contains(c)), "{t:?}");
    }
    assert!(
        ran.env_set
            .iter()
            .any(|(k, v)| k == "OMP_NUM_THREADS" && *v == cpus.len().to_string())
    );
}
