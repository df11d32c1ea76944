//! The QEMU test bed (tests/vm/run.sh): real kernels with 2 sockets and SMT,
//! 4 NUMA nodes, a CPU-less memory node, memory tiers and 64 CPUs, checked
//! from inside.
//!
//! A slow suite: runs in CI or with MEMBW_SLOW_TESTS=1.
//! Skipped (with a message) where qemu, a kernel or busybox is missing; in CI
//! (CI=true) a skip is a failure, since .ci/run installs them.
//!
//! Native x86_64 only: the guests are x86_64 kernels, which cannot run the
//! aarch64 build that `--target aarch64-unknown-linux-gnu` tests.
#![cfg(target_arch = "x86_64")]

mod common;

#[test]
fn guests_report_what_qemu_was_told() {
    if !common::slow_tests("the QEMU test bed (about 6 minutes)") {
        return;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let out = std::process::Command::new("bash")
        .arg(format!("{root}/tests/vm/run.sh"))
        .current_dir(root)
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => println!("{stdout}"),
        Some(77) if std::env::var("CI").as_deref() != Ok("true") => {
            common::skip(format!("QEMU test bed: {}", stderr.trim()));
        }
        code => panic!("tests/vm/run.sh exited with {code:?}\n{stdout}\n{stderr}"),
    }
}
