//! Every command that reads a result file (report, compare, --resume of
//! sweep and latency, run -o) refuses a FIFO, a directory, a device and a
//! 200 MB single line in one line with exit code 2, at once, and without
//! reading the file whole. A test binary of its own: each child's peak
//! memory (`common::output_and_peak_rss`) starts from its parent's, which
//! other suites' tests would raise.

mod common;

use common::{membw_process, output_and_peak_rss};
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs membw with `args`, expects the one-line refusal, and returns the
/// child's peak resident memory, bytes.
fn refuses(args: &[&str], needle: &str) -> u64 {
    let started = Instant::now();
    let (out, peak) = output_and_peak_rss(
        membw_process()
            .args(args)
            .stdin(std::process::Stdio::null()),
    );
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "membw {args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: '{needle}' not in {stderr}"
    );
    assert!(out.stdout.is_empty(), "{args:?}");
    // Generous for a loaded CI machine; a hang would be minutes.
    assert!(took < Duration::from_secs(5), "{args:?} took {took:?}");
    peak
}

#[test]
fn hostile_files_end_in_one_line_quickly_and_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a path we own, with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let huge = dir.path().join("huge.jsonl");
    // In 1 MiB writes: a child's peak counts its parent's at the moment it
    // started, so this process never holds the 200 MB itself.
    let mut file = std::fs::File::create(&huge).unwrap();
    for _ in 0..200 {
        std::io::Write::write_all(&mut file, &[b'7'; 1 << 20]).unwrap();
    }
    drop(file);
    let folder = dir.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    let good = dir.path().join("good.jsonl");
    let made = membw_process()
        .args([
            "sweep", "--fake-source", "4", "--size", "1M", "--ntimes", "2",
        ])
        .arg("-o")
        .arg(&good)
        .output()
        .unwrap();
    assert!(made.status.success());

    let cases: [(&Path, &str); 4] = [
        (&fifo, "not a regular file"),
        (&folder, "not a regular file"),
        (Path::new("/dev/zero"), "not a regular file"),
        (&huge, "longer than 16 MiB"),
    ];
    let mut peak = 0;
    for (path, needle) in cases {
        let p = path.to_str().unwrap();
        let g = good.to_str().unwrap();
        // `report` reads a directory as a fleet's history: an empty one is refused.
        let report_needle = if path == folder {
            "a directory without .json or .jsonl files"
        } else {
            needle
        };
        for (args, needle) in [
            (&["report", p][..], report_needle),
            (&["compare", p, g], needle),
            (&["compare", g, p], needle),
            (&["report", g, p], report_needle),
            (&["sweep", "--fake-source", "4", "--resume", p], needle),
            (&["latency", "--sizes", "4KiB", "--resume", p], needle),
            (&["run", "--size", "1M", "-o", p], needle),
        ] {
            peak = peak.max(refuses(args, needle));
        }
    }
    // The 200 MB line is read no further than the 16 MiB line limit.
    assert!(
        peak < (16 << 20) + (64 << 20),
        "a child's peak memory was {} MiB",
        peak >> 20
    );
}
