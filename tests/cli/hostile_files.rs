//! Every command that reads a result file (report, compare, --resume of
//! sweep and latency, run -o) refuses a FIFO, a directory, a device and a
//! 200 MB single line in one line with exit code 2, at once, and without
//! reading the file whole. One test in its own file: it measures its
//! children's peak memory, which other tests' children would disturb.

use crate::common::membw_process;
use std::path::Path;
use std::time::{Duration, Instant};

/// The peak resident memory of any child waited for so far, bytes.
fn children_max_rss() -> u64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage struct.
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    usage.ru_maxrss as u64 * 1024
}

fn refuses(args: &[&str], needle: &str) {
    let started = Instant::now();
    let out = membw_process()
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
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
}

#[test]
fn hostile_files_end_in_one_line_quickly_and_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a path we own, with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let huge = dir.path().join("huge.jsonl");
    std::fs::write(&huge, vec![b'7'; 200 << 20]).unwrap();
    let folder = dir.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    let good = dir.path().join("good.jsonl");
    let made = membw_process()
        .args([
            "sweep",
            "--fake-source",
            "4",
            "--size",
            "1M",
            "--ntimes",
            "2",
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
    let before = children_max_rss();
    for (path, needle) in cases {
        let p = path.to_str().unwrap();
        let g = good.to_str().unwrap();
        // `report` reads a directory as a fleet's history: an empty one is refused.
        let report_needle = if path == folder {
            "a directory without .json or .jsonl files"
        } else {
            needle
        };
        refuses(&["report", p], report_needle);
        refuses(&["compare", p, g], needle);
        refuses(&["compare", g, p], needle);
        refuses(&["report", g, p], report_needle);
        refuses(&["sweep", "--fake-source", "4", "--resume", p], needle);
        refuses(&["latency", "--sizes", "4KiB", "--resume", p], needle);
        refuses(&["run", "--size", "1M", "-o", p], needle);
    }
    let peak = children_max_rss();
    // The 200 MB line is read no further than the 16 MiB line limit.
    assert!(
        peak < before.max(16 << 20) + (64 << 20),
        "a child's peak memory was {} MiB",
        peak >> 20
    );
}
