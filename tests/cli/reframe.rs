//! The ReFrame tests shipped in contrib/reframe run under ReFrame itself,
//! on the fake source, with references taken from a membw baseline. In CI
//! ReFrame comes from PyPI (.ci/run); locally the test says why it skips.

use crate::common;

use std::process::Command;

#[test]
fn the_reframe_tests_take_their_references_from_a_baseline() {
    if common::tool(
        Command::new("reframe").arg("--version"),
        "reframe-hpc (pip)",
    )
    .is_none()
    {
        return;
    }
    let dir = crate::common::scratch_dir();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let membw = common::membw_argv().join(" ");
    // A wrapper that adds the fake source: ReFrame runs one executable.
    let wrapper = dir.path().join("membw");
    std::fs::write(
        &wrapper,
        format!("#!/bin/bash\nexec {membw} \"$@\" --fake-source 4\n"),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    let baseline = dir.path().join("baseline.json");
    let made = Command::new(&wrapper)
        .args(["baseline", "--rounds", "2", "-o"])
        .arg(&baseline)
        .output()
        .unwrap();
    crate::common::assert_success(&made);
    let reframe = |tolerance: &str| {
        Command::new("reframe")
            .arg("-C")
            .arg(root.join("contrib/reframe/settings.py"))
            .arg("-c")
            .arg(root.join("contrib/reframe/membw_check.py"))
            .arg("-r")
            .arg("--prefix")
            .arg(dir.path().join("rfm"))
            .arg("-S")
            .arg(format!("membw={}", wrapper.display()))
            .arg("-S")
            .arg(format!("baseline={}", baseline.display()))
            .arg("-S")
            .arg(format!("tolerance={tolerance}"))
            // The failing check would otherwise use its whole 20 s budget.
            .arg("-S")
            .arg("MembwCheck.extra=--budget,1s")
            // ReFrame's own log (rfm-*.log) goes to TMPDIR: not /tmp.
            .env("TMPDIR", dir.path())
            .output()
            .unwrap()
    };
    // One run (ReFrame takes seconds to start): triad's reference is the
    // baseline's, copy's is one the node cannot reach. Only copy fails, so
    // each kernel's reference comes from the baseline.
    let text = std::fs::read_to_string(&baseline).unwrap();
    let copy_at = text.find("\"copy\"").unwrap();
    let (before, after) = text.split_at(copy_at);
    let raised = after.replacen("\"median_gb_s\": ", "\"median_gb_s\": 10", 1);
    std::fs::write(&baseline, format!("{before}{raised}")).unwrap();
    let out = reframe("0.1");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("MembwNodeBandwidth") && text.contains("MembwCheck"),
        "{text}"
    );
    let failure = text
        .split("FAILURE INFO for MembwNodeBandwidth")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    let failure = failure.split("FAILURE INFO for").next().unwrap_or(failure);
    assert!(
        failure.contains("copy") && !failure.contains("triad"),
        "{failure}"
    );
}
