//! The exit-code table of `docs/guide/health.md`, row by row, through the
//! real binary: a site drains a node on exit 1, so 1 must only ever mean
//! "measured and found unhealthy", and `check` must never harm the node
//! it checks (a `--prom` or `-o` that is a device, a FIFO or a directory
//! is refused before anything is measured, and is still what it was).
//! Device nodes and FIFOs are made in a temporary directory, never the
//! system's own /dev entries.

use crate::common;

use crate::common::{membw, shared_tree};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const NPS4: &str = "epyc-7742-2s-nps4";

/// A fake source that sleeps 3 s before each measurement: a command that
/// ends well before that measured nothing.
const SLOW_FAKE: &str = "4,delay=3s";

fn nps4() -> String {
    shared_tree(NPS4).to_string_lossy().into_owned()
}

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn run(args: &[&str]) -> Ran {
    let start = Instant::now();
    let out = membw().args(args).output().unwrap();
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: start.elapsed(),
    }
}

/// Exit 2, one line on stderr holding every needle, and nothing measured:
/// the 3 s fake measurement never started.
fn refused_before_measuring(args: &[&str], needles: &[&str]) -> Ran {
    let r = run(args);
    assert_eq!(r.code, Some(2), "membw {args:?}: {}", r.stderr);
    assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
    for n in needles {
        assert!(r.stderr.contains(n), "'{n}' not in: {}", r.stderr);
    }
    assert!(
        r.took < Duration::from_secs(2),
        "membw {args:?} took {:?}: it measured before refusing",
        r.took
    );
    assert!(!r.stderr.contains("round 1"), "{}", r.stderr);
    r
}

/// A baseline of the NPS4 fixture at 4 GB/s per thread, in `dir`.
fn fixture_baseline(dir: &Path) -> PathBuf {
    let path = dir.join("b.json");
    let r = run(&[
        "baseline",
        "--sysroot",
        &nps4(),
        "--fake-source",
        "4",
        "--rounds",
        "2",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    path
}

/// Makes a character device (like /dev/null), a block device, a FIFO, a
/// socket and a directory in `dir`; `None` for a normal user (a skip), or
/// where root may not mknod (a failure in CI).
fn special_files(dir: &Path) -> Option<Vec<(PathBuf, &'static str)>> {
    let node = |name: &str, mode: libc::mode_t, major: u32, minor: u32| {
        let path = dir.join(name);
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mknod only creates the node.
        let rc = unsafe { libc::mknod(c.as_ptr(), mode | 0o600, libc::makedev(major, minor)) };
        (rc == 0).then_some(path)
    };
    if !common::root_for("mknod (device nodes)") {
        return None;
    }
    let Some(chr) = node("null", libc::S_IFCHR, 1, 3) else {
        common::unavailable(
            "mknod (device nodes) as root",
            "CI runs as root: a container without CAP_MKNOD?",
        );
        return None;
    };
    let blk = node("loop", libc::S_IFBLK, 7, 0).unwrap();
    let fifo = node("fifo", libc::S_IFIFO, 0, 0).unwrap();
    let socket = dir.join("socket");
    std::mem::forget(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let d = dir.join("dir");
    std::fs::create_dir(&d).unwrap();
    Some(vec![
        (chr, "a character device"),
        (blk, "a block device"),
        (fifo, "a FIFO"),
        (socket, "a socket"),
        (d, "a directory"),
    ])
}

fn file_type(path: &Path) -> std::fs::FileType {
    std::fs::symlink_metadata(path).unwrap().file_type()
}

/// Row 2: `--prom` on check, run and latency that is not a regular file
/// (directly or through a link) is refused before measuring, naming the
/// flag and what the path is, and the node stays what it was.
#[test]
fn a_prom_path_that_is_not_a_regular_file_is_refused_and_left_alone() {
    let dir = crate::common::scratch_dir();
    let Some(specials) = special_files(dir.path()) else {
        return;
    };
    let root = nps4();
    for (path, kind) in &specials {
        let before = file_type(path);
        let link = dir.path().join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(path, &link).unwrap();
        for target in [path, &link] {
            let p = target.to_str().unwrap();
            let needles = ["--prom", p, kind];
            refused_before_measuring(
                &[
                    "check", "--sysroot", &root, "--fake-source", SLOW_FAKE, "--prom", p,
                ],
                &needles,
            );
            refused_before_measuring(
                &[
                    "run", "--fake-source", SLOW_FAKE, "--size", "1M", "--prom", p,
                ],
                &needles,
            );
            refused_before_measuring(
                &["latency", "--sizes", "4KiB", "--time", "5ms", "--prom", p],
                &needles,
            );
        }
        assert_eq!(file_type(path), before, "{} changed", path.display());
        assert!(file_type(&link).is_symlink());
    }
    let chr = &specials[0].0;
    assert!(file_type(chr).is_char_device());
    // Nothing was left beside them.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["dir", "fifo", "link", "loop", "null", "socket"]);
}

/// Row 2: a destination that cannot be written (`--prom`, baseline's
/// `-o`) is refused before measuring, naming the flag.
#[test]
fn an_unwritable_destination_is_refused_before_measuring() {
    let dir = crate::common::scratch_dir();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("x");
    let under_file = under_file.to_str().unwrap();
    let root = nps4();
    let check = ["check", "--sysroot", &root, "--fake-source", SLOW_FAKE];
    for p in [under_file, "/nonexistent/dir/m.prom"] {
        refused_before_measuring(&[&check[..], &["--prom", p]].concat(), &["--prom", p]);
        refused_before_measuring(
            &[
                "baseline", "--sysroot", &root, "--fake-source", SLOW_FAKE, "-o", p,
            ],
            &["--output", p],
        );
    }
    // An existing directory or file is not a new baseline.
    let d = dir.path().to_str().unwrap();
    refused_before_measuring(
        &[
            "baseline", "--sysroot", &root, "--fake-source", SLOW_FAKE, "-o", d,
        ],
        &["--output", "a directory"],
    );
    refused_before_measuring(
        &[
            "baseline",
            "--sysroot",
            &root,
            "--fake-source",
            SLOW_FAKE,
            "-o",
            file.to_str().unwrap(),
        ],
        &["--output", "already exists"],
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    // run's results file too.
    refused_before_measuring(
        &[
            "run", "--fake-source", SLOW_FAKE, "--size", "1M", "-o", under_file,
        ],
        &["--output", "Not a directory"],
    );
}

/// Row 2: every way a baseline cannot be read is exit 2, never 1.
#[test]
fn every_unreadable_baseline_is_exit_2() {
    let dir = crate::common::scratch_dir();
    let good = std::fs::read_to_string(fixture_baseline(dir.path())).unwrap();
    let file = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.to_string_lossy().into_owned()
    };
    let (a, b) = (dir.path().join("loop-a"), dir.path().join("loop-b"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let plain = file("plain", "x");
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the FIFO.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let cases: Vec<(String, &str)> = vec![
        ("/nonexistent/b.json".into(), "No such file"),
        (a.to_string_lossy().into_owned(), "symbolic links"),
        (format!("{plain}/b.json"), "Not a directory"),
        ("/proc/self/mem".into(), "/proc/self/mem"),
        (
            dir.path().to_string_lossy().into_owned(),
            "not a regular file",
        ),
        (fifo.to_string_lossy().into_owned(), "not a regular file"),
        (file("empty.json", "\n"), "empty, not a membw baseline"),
        (file("torn.json", &good[..good.len() / 2]), "not JSON"),
        (
            file("other.json", "{\"kind\": \"membw-check\"}"),
            "not a membw baseline",
        ),
        (
            file(
                "newer.json",
                &good.replacen("\"schema_version\": 1", "\"schema_version\": 9", 1),
            ),
            "schema version 9",
        ),
    ];
    let root = nps4();
    for (path, needle) in &cases {
        refused_before_measuring(
            &[
                "check", "--sysroot", &root, "--fake-source", SLOW_FAKE, "--baseline", path,
            ],
            &[path, needle],
        );
    }
    // The same files as a fleet's inputs.
    refused_before_measuring(
        &[
            "baseline",
            "--from",
            &cases[1].0,
            "-o",
            &dir.path().join("f.json").to_string_lossy(),
        ],
        &["--from", "symbolic links"],
    );
}

/// Row 2: every field of a baseline that no check could measure or
/// compare with is named, with the file, and nothing is measured.
#[test]
fn every_invalid_baseline_field_is_named() {
    let dir = crate::common::scratch_dir();
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_baseline(dir.path())).unwrap())
            .unwrap();
    type Edit = fn(&mut serde_json::Value);
    let cases: [(Edit, &str); 16] = [
        (
            |b| b["scopes"][0]["elements"] = 0.into(),
            "scopes[0].elements is 0",
        ),
        (
            |b| b["scopes"][0]["elements"] = 1.into(),
            "scopes[0].elements is 1: under STREAM's rule here (",
        ),
        (
            |b| b["scopes"][0]["elements"] = 1_000_000_000_000_000u64.into(),
            "scopes[0].elements is 1000000000000000: 3 arrays",
        ),
        (
            |b| b["scopes"][0]["elements"] = (-3).into(),
            "scopes[0].elements cannot be read",
        ),
        (
            |b| b["scopes"][8]["scope"] = "numa:99".into(),
            "scopes[8].scope is numa:99, a NUMA node this process cannot use here",
        ),
        (
            |b| b["scopes"][1]["scope"] = "node".into(),
            "scopes[1].scope is node again (scopes[0])",
        ),
        (
            |b| b["scopes"][0]["stores"] = "fast".into(),
            "scopes[0].stores cannot be read: unknown variant `fast`",
        ),
        (
            |b| b["scopes"][0]["threads"] = 0.into(),
            "scopes[0].threads is 0",
        ),
        (
            |b| b["scopes"][2]["threads"] = 7.into(),
            "scopes[2].threads is 7, but NUMA node 1 has 16 usable cores here",
        ),
        (
            |b| b["scopes"][0]["kernels"]["copy"]["median_gb_s"] = (-1.0).into(),
            "scopes[0].kernels.copy.median_gb_s holds -1",
        ),
        (
            |b| b["scopes"][0]["kernels"]["triad"]["rounds"][1] = 0.0.into(),
            "scopes[0].kernels.triad.rounds holds 0",
        ),
        (
            |b| b["scopes"][0]["kernels"]["copy"]["rounds"] = serde_json::json!([]),
            "scopes[0].kernels.copy.rounds is empty",
        ),
        (
            |b| b["scopes"][0]["kernels"]["bogus"] = 1.into(),
            "scopes[0].kernels has a key that cannot be read: unknown variant `bogus`",
        ),
        (
            |b| b["protocol"]["ntimes"] = 1.into(),
            "protocol.ntimes is 1, outside 2-100000",
        ),
        (
            |b| b["protocol"]["kernels"] = serde_json::json!(["copy"]),
            "scopes[0].kernels.triad is not among protocol.kernels",
        ),
        (|b| b["scopes"] = serde_json::json!([]), "scopes is empty"),
    ];
    let root = nps4();
    for (i, (edit, needle)) in cases.iter().enumerate() {
        let mut b = good.clone();
        edit(&mut b);
        let path = dir.path().join(format!("edit{i}.json"));
        std::fs::write(&path, b.to_string()).unwrap();
        let p = path.to_str().unwrap();
        let r = refused_before_measuring(
            &[
                "check", "--sysroot", &root, "--fake-source", SLOW_FAKE, "--baseline", p,
            ],
            &[&format!("membw: error: {p}: {needle}")],
        );
        assert!(
            r.stderr
                .trim_end()
                .ends_with("; make a new baseline with membw baseline -o FILE"),
            "{}",
            r.stderr
        );
    }
}

/// Row 2: no baseline and nothing to compare with. A virtual machine's
/// one NUMA domain cannot be held against the host socket's peak.
#[test]
fn a_vm_slice_without_a_baseline_is_not_judged_against_the_hosts_peak() {
    let vm = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/live-vm");
    let vm = vm.to_str().unwrap();
    let r = refused_before_measuring(
        &["check", "--sysroot", vm, "--fake-source", SLOW_FAKE],
        &[
            "no baseline and nothing to compare against: one NUMA domain",
            "virtual machine",
            "from the built-in table",
            "membw baseline -o FILE",
        ],
    );
    assert!(r.stdout.is_empty());
    // The user's own figure for the slice still judges it.
    let r = run(&[
        "check", "--sysroot", vm, "--fake-source", "4", "--peak", "12GB/s",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("membw check: healthy · against 50 % of the theoretical peak"),
        "{}",
        r.stdout
    );
    // Several domains: held against each other, and the label says so.
    let r = run(&[
        "check",
        "--sysroot",
        &nps4(),
        "--fake-source",
        "4",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["against"], "the other NUMA domains and 50 % of the theoretical peak",
        "{v}"
    );
}

/// Row 2: a node that is never idle gets a baseline only with
/// --allow-busy, which records what ran; every check against it says so.
#[test]
fn a_busy_baseline_needs_allow_busy_and_every_check_says_so() {
    let (dir, path, p) = crate::common::scratch_file("busy.json");
    let root = nps4();
    let make = [
        "baseline", "--sysroot", &root, "--fake-source", "4,busy=40", "--rounds", "2", "-o", &p,
    ];
    let r = run(&make);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("could not make a baseline: CPUs")
            && r.stderr.contains("--allow-busy")
            && r.stderr.contains("(nothing written)"),
        "{}",
        r.stderr
    );
    assert!(!path.exists());
    let r = run(&[&make[..], &["--allow-busy"]].concat());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("Made on a busy node (--allow-busy)"),
        "{}",
        r.stdout
    );
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(recorded["interference"]["busy"], true);
    // A quiet check against it passes, and says what the baseline saw.
    let prom = dir.path().join("m.prom");
    let check = [
        "check", "--sysroot", &root, "--fake-source", "4", "--baseline", &p,
    ];
    let r = run(&[&check[..], &["--prom", prom.to_str().unwrap()]].concat());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout
            .contains("note: the baseline was made on a busy node (--allow-busy): CPUs"),
        "{}",
        r.stdout
    );
    assert!(
        std::fs::read_to_string(&prom)
            .unwrap()
            .contains("membw_check_baseline_busy 1\n")
    );
    let r = run(&[&check[..], &["--format", "json"]].concat());
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["healthy"], true);
    assert!(
        v["baseline_interference"]["findings"][0]
            .as_str()
            .unwrap()
            .contains("busy with other work"),
        "{v}"
    );
    // A baseline made on a quiet node carries no such mark.
    let quiet = dir.path().join("quiet.json");
    let r = run(&[
        "baseline",
        "--sysroot",
        &root,
        "--fake-source",
        "4",
        "--rounds",
        "1",
        "-o",
        quiet.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = run(&[
        "check",
        "--sysroot",
        &root,
        "--fake-source",
        "4",
        "--baseline",
        quiet.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(v.get("baseline_interference").is_none(), "{v}");
}

/// `membw ARGS` with stdout on a full disk: its exit code and stderr;
/// `None` where there is no /dev/full.
fn on_a_full_disk(args: &[&str]) -> Option<(Option<i32>, String)> {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        common::skip("no /dev/full here");
        return None;
    };
    let out = common::membw_process()
        .args(args)
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    Some((out.status.code(), stderr))
}

/// Row 2: an output that fails at the end (stdout on a full disk) is not
/// a verdict on the node.
#[test]
fn a_failed_write_is_exit_2_not_a_drain() {
    let Some((code, stderr)) =
        on_a_full_disk(&["check", "--sysroot", &nps4(), "--fake-source", "4"])
    else {
        return;
    };
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("membw: error: could not check: writing to stdout"),
        "{stderr}"
    );
}

/// A baseline whose printout fails is still made: the error says it is
/// in its file (exit 2, not a verdict on the node).
#[test]
fn a_baseline_whose_printout_fails_says_it_was_written() {
    let (_dir, _, b) = crate::common::scratch_file("b.json");
    let root = nps4();
    let args = [
        "baseline", "--sysroot", &root, "--fake-source", "4", "--rounds", "1", "-o", &b,
    ];
    let Some((code, stderr)) = on_a_full_disk(&args) else {
        return;
    };
    assert_eq!(code, Some(2), "{stderr}");
    crate::common::assert_contains(
        &stderr,
        &format!("error: baseline in {b}, but printing it failed: writing to stdout"),
    );
    assert!(
        std::fs::read_to_string(b)
            .unwrap()
            .contains("membw-baseline")
    );
}

/// Rows 0 and 1 against the same baseline, and the signal row: a check
/// stopped by SIGTERM gives no verdict and leaves the Prometheus file.
#[test]
fn healthy_unhealthy_and_stopped() {
    let dir = crate::common::scratch_dir();
    let b = fixture_baseline(dir.path());
    let b = b.to_str().unwrap();
    let root = nps4();
    let check = ["check", "--sysroot", &root, "--baseline", b];
    let r = run(&[&check[..], &["--fake-source", "4"]].concat());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = run(&[
        &check[..],
        &[
            "--fake-source",
            "4,delay=100ms,slow=48-63@0.6",
            "--budget",
            "1s",
        ],
    ]
    .concat());
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.starts_with("membw: NUMA node 3 copy"),
        "{}",
        r.stderr
    );
    let prom = dir.path().join("m.prom");
    std::fs::write(&prom, "membw_check_healthy 1\n").unwrap();
    let child = common::membw_process()
        .args(check)
        .args([
            "--fake-source",
            "4,delay=200ms,slow=48-63@0.6",
            "--budget",
            "30s",
            "--prom",
        ])
        .arg(&prom)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let out = common::stop_with(child, "TERM");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    crate::common::assert_contains(&stderr, "stopped by SIGTERM: no verdict");
    assert_eq!(
        std::fs::read_to_string(&prom).unwrap(),
        "membw_check_healthy 1\n"
    );
}

/// contrib/nhc/membw.nhc: NHC marks the node down (`die`) on exit 1 only;
/// exit 2 is logged and the node left up, each with membw's last line
/// (a warning before it, as of a GPU the check leaves out, is no reason).
/// NHC's `die` and `log` are stand-ins that record their arguments.
#[test]
fn the_nhc_check_marks_down_only_an_unhealthy_node() {
    let dir = crate::common::scratch_dir();
    let b = fixture_baseline(dir.path());
    let wrapper = dir.path().join("membw");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/bash\n[ \"$1\" = --version ] && exec {0} --version\necho 'membw: this check leaves out the AMD GPU on its PCI bus: --backend hip:all checks them' >&2\nexec {0} \"$@\" --sysroot {1} --fake-source \"4,delay=100ms${{SLOW:+,slow=48-63@0.5}}\"\n",
            common::membw_argv().join(" "),
            nps4()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    let check = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/nhc/membw.nhc");
    // intel-cmt-cat's membw: its usage on stderr and exit 1 for anything
    // it does not know, --version included.
    let intel = dir.path().join("intel-cmt-cat-membw");
    std::fs::write(
        &intel,
        "#!/bin/bash\necho \"Usage: $0 -c <cpu> -b <BW [MB/s]> <operation type>\" >&2\nexit 1\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&intel)
        .status()
        .unwrap();
    let nhc_with = |binary: &Path, slow: bool, baseline: &Path| {
        let script = format!(
            "die() {{ echo \"die $*\"; }}; log() {{ echo \"log $*\"; }}; source {}; check_membw {} 1s; echo \"returned $?\"",
            check.display(),
            baseline.display()
        );
        let mut cmd = std::process::Command::new("bash");
        cmd.arg("-c").arg(script).env("MEMBW", binary);
        if slow {
            cmd.env("SLOW", "1");
        }
        String::from_utf8(cmd.output().unwrap().stdout).unwrap()
    };
    let nhc = |slow: bool, baseline: &Path| nhc_with(&wrapper, slow, baseline);
    assert_eq!(nhc(false, &b), "returned 0\n");
    let other = nhc_with(&intel, true, &b);
    assert!(
        other.starts_with("log membw: no verdict: ") && other.contains("is not membw"),
        "{other}"
    );
    assert!(other.ends_with("returned 0\n"), "{other}");
    let down = nhc(true, &b);
    assert!(
        down.starts_with("die 1 NUMA node 3 copy 40.0 GB/s is 50 % of its baseline")
            && down.ends_with("returned 1\n"),
        "{down}"
    );
    let missing = nhc(false, &dir.path().join("missing.json"));
    assert!(
        missing.starts_with("log membw: no verdict (exit 2): --baseline")
            && missing.ends_with("returned 0\n"),
        "{missing}"
    );
}
