//! Helpers shared by the integration tests: fixture trees made from the
//! compact machine descriptions in `tests/fixtures/*.json`.

#![allow(dead_code)]

use membw::topology::Topology;
use membw::topology::fixture::MachineSpec;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn spec(name: &str) -> MachineSpec {
    let path = fixtures_dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fresh scratch directory, removed when it drops. Tests write sysfs
/// trees (12,000 files for a 256-CPU fixture) and many small files: on
/// some VMs' disks creating a file costs 0.6 ms, 7 s for one such tree, so
/// the directory is made on a memory-backed file system where the host
/// has one with 4 GiB free (`membw::sys::memory_backed_dir`), and in the
/// usual temporary directory otherwise.
pub fn scratch_dir() -> tempfile::TempDir {
    static ROOT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    match ROOT.get_or_init(|| membw::sys::memory_backed_dir(4 << 30)) {
        Some(root) => tempfile::Builder::new()
            .prefix("membw-test")
            .tempdir_in(root),
        None => tempfile::tempdir(),
    }
    .unwrap()
}

/// Writes the named fixture into a fresh temporary directory.
pub fn tree(name: &str) -> tempfile::TempDir {
    let dir = scratch_dir();
    spec(name).write(dir.path()).unwrap();
    dir
}

/// The named fixture, shared read-only. It is written once into Cargo's
/// per-target scratch directory under a name that carries a hash of its
/// description and of the code that writes it, so every test binary and
/// every later run reuse it and nothing is left behind in /tmp (a static
/// `TempDir` is never dropped, so one per run would pile up there).
pub fn shared_tree(name: &str) -> PathBuf {
    static WRITTEN: Mutex<()> = Mutex::new(());
    let text = std::fs::read_to_string(fixtures_dir().join(format!("{name}.json"))).unwrap();
    let key = content_key(&[
        &text,
        include_str!("../../src/topology/fixture.rs"),
        include_str!("../../src/topology/cpulist.rs"),
    ]);
    let _guard = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
    cached_dir(&format!("{name}-{key:016x}"), |dir| spec(name).write(dir))
}

/// A hash of the given texts, to name a cached directory after its inputs.
pub fn content_key(parts: &[&str]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut hasher);
    hasher.finish()
}

/// `CARGO_TARGET_TMPDIR/<name>`, made by `fill` when it is not there yet:
/// filled in a fresh directory beside it and renamed into place, so a
/// process that stops half-way or runs beside this one never sees half a
/// tree. Other versions of the same cache (`<stem>-<other key>`) are removed.
pub fn cached_dir(name: &str, fill: impl FnOnce(&Path) -> std::io::Result<()>) -> PathBuf {
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cached");
    let path = parent.join(name);
    if path.is_dir() {
        return path;
    }
    std::fs::create_dir_all(&parent).unwrap();
    let fresh = tempfile::tempdir_in(&parent).unwrap();
    fill(fresh.path()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let stem = name.rsplit_once('-').map_or(name, |(stem, _)| stem);
    remove_other_versions(&parent, stem, name);
    // Losing the race to a process beside this one leaves its copy in place.
    if std::fs::rename(fresh.path(), &path).is_err() && !path.is_dir() {
        panic!(
            "{name}: could not be put in place under {}",
            parent.display()
        );
    }
    path
}

fn remove_other_versions(parent: &Path, stem: &str, keep: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        let other = file_name.rsplit_once('-').is_some_and(|(s, _)| s == stem);
        if other && file_name != keep && !file_name.starts_with(".tmp") {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

pub fn topology(name: &str) -> Topology {
    Topology::read(&shared_tree(name)).unwrap()
}

/// Every fixture description in tests/fixtures.
pub const MACHINES: [&str; 9] = [
    "epyc-7742-2s-nps4",
    "epyc-7h12-2s",
    "xeon-e5-2680v3-2s",
    "xeon-e5-2650v3-2s-noht",
    "xeon-gold-6248-1s-nonuma",
    "grace-superchip-2s",
    "graviton3-1s",
    "graviton4-2s",
    "xeon-6-cxl-1s",
];

/// The membw binary under test: the one `MEMBW_TEST_BINARY` names (CI runs
/// the GPU suites and the aarch64 CLI suites against the portable release
/// binaries this way, the latter from the native harness), or the one
/// built for these tests.
fn binary_under_test() -> PathBuf {
    std::env::var_os("MEMBW_TEST_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| assert_cmd::cargo::cargo_bin("membw"))
}

/// The architecture the binary under test was built for (`x86_64`,
/// `aarch64`), from its ELF header's machine field; this harness's own
/// where the file says nothing known.
pub fn binary_arch() -> &'static str {
    use std::io::Read;
    let mut head = [0u8; 20];
    let read = std::fs::File::open(binary_under_test()).and_then(|mut f| f.read_exact(&mut head));
    match (read.is_ok(), u16::from_le_bytes([head[18], head[19]])) {
        (true, 0x3e) => "x86_64",
        (true, 0xb7) => "aarch64",
        _ => std::env::consts::ARCH,
    }
}

/// Whether the binary under test is another architecture's than this
/// harness (CI's aarch64 release binary, run from the native harness):
/// what the harness asks of its own CPU then says nothing of the binary's.
pub fn foreign_binary() -> bool {
    binary_arch() != std::env::consts::ARCH
}

/// The membw binary built for these tests, or the one `MEMBW_TEST_BINARY`
/// names, behind the target's runner as [`membw_argv`] says.
pub fn membw() -> assert_cmd::Command {
    let argv = membw_argv();
    let mut cmd = assert_cmd::Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    cmd
}

/// The words that start the membw under test: the binary, behind the
/// target's runner when there is one (qemu-user for aarch64, set in
/// .cargo/config.toml), for tests that start it through another program.
pub fn membw_argv() -> Vec<String> {
    // The runner of the binary's architecture, not the harness's: CI runs
    // the aarch64 release binary from the native harness, and nothing
    // registers qemu with the kernel's binfmt_misc there.
    let triple = binary_arch().to_uppercase();
    let runner = std::env::var(format!("CARGO_TARGET_{triple}_UNKNOWN_LINUX_GNU_RUNNER"))
        .unwrap_or_default();
    let binary = binary_under_test();
    let mut argv: Vec<String> = runner.split_whitespace().map(str::to_string).collect();
    argv.push(binary.display().to_string());
    argv
}

/// A `std::process::Command` for membw (behind the runner, see
/// [`membw_argv`]), for tests that need a child process.
pub fn membw_process() -> std::process::Command {
    let argv = membw_argv();
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    cmd
}

/// Runs `cmd` to its end and returns what it printed with its own peak
/// resident size, bytes: wait4's account of that one child, not
/// getrusage(RUSAGE_CHILDREN)'s largest of every child this binary waited
/// for. Linux starts a child's peak at its parent's peak when it execs
/// (std spawns with vfork), so a test that measures it runs in a test
/// binary of its own and never holds much memory itself.
pub fn output_and_peak_rss(cmd: &mut std::process::Command) -> (std::process::Output, u64) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut text = Vec::new();
        out.read_to_end(&mut text).map(|_| text)
    });
    let mut stderr = Vec::new();
    err.read_to_end(&mut stderr).unwrap();
    let stdout = stdout.join().unwrap().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain integers, for which all zeroes is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waits for this test's own child, writing into two live locals.
        let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if got == pid {
            break;
        }
        let error = std::io::Error::last_os_error();
        assert_eq!(
            error.kind(),
            std::io::ErrorKind::Interrupted,
            "wait4: {error}"
        );
    }
    // Reaped above: std's Child is dropped without waiting (it never does).
    drop(child);
    let output = std::process::Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout,
        stderr,
    };
    (output, usage.ru_maxrss as u64 * 1024)
}

/// Whether membw runs behind a target runner (qemu-user): there a load
/// loop is emulated and runs tens of times slower than natively, so tests
/// that compare a throttled load with a free one allow a smaller gap.
pub fn emulated() -> bool {
    membw_argv().len() > 1
}

/// Whether the kernel calls behind `--mem` work here: qemu-user does not
/// implement mbind. Tests of memory policies skip under it (and only under
/// a runner), saying why; natively a failing mbind fails them.
pub fn mbind_works() -> bool {
    if !emulated() {
        return true;
    }
    let out = membw()
        .args([
            "latency", "--sizes", "4KiB", "--time", "1ms", "--mem", "bind:0",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("Function not implemented") {
        skip(format!(
            "mbind is not implemented here (qemu-user): {}",
            stderr.trim()
        ));
        return false;
    }
    true
}

/// Runs membw with `args`, asserts success, returns stdout.
pub fn stdout(args: &[&str]) -> String {
    stdout_of(&mut membw(), args)
}

/// [`stdout`] with arrays sized [`on_small_caches`]: for a test that needs
/// arrays past the caches, not this host's (maybe 300 MiB) caches filled.
pub fn stdout_on_small_caches(args: &[&str]) -> String {
    stdout_of(on_small_caches(&mut membw()), args)
}

fn stdout_of(cmd: &mut assert_cmd::Command, args: &[&str]) -> String {
    let out = cmd.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "membw {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs membw with `args` and expects exit code 2 with a one-line error on
/// stderr that contains `needle`, and nothing on stdout.
pub fn usage_error(args: &[&str], needle: &str) {
    let out = membw().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "membw {args:?}: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "one line expected: {stderr}"
    );
    assert!(stderr.contains(needle), "'{needle}' not in: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "nothing on stdout after a usage error"
    );
}

/// Says that (part of) a test is skipped and why, in the test output
/// itself: libtest captures `eprintln!` of a passing test and shows it only
/// on failure, so a skip would be invisible on a green run. Writing to the
/// stderr handle directly is not captured.
pub fn skip(reason: impl std::fmt::Display) {
    use std::io::Write;
    let name = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr(), "SKIPPED {name}: {reason}");
}

/// Sends `signal` (its name: "INT", "TERM", "HUP") to a child this test
/// started, through `kill`, and waits for what it printed.
pub fn stop_with(child: std::process::Child, signal: &str) -> std::process::Output {
    let sent = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("kill -s {signal} {}", child.id()))
        .status()
        .unwrap();
    assert!(sent.success(), "kill -s {signal} {}", child.id());
    child.wait_with_output().unwrap()
}

/// Whether these tests run in CI (`CI=true`), where .ci/run installs and
/// sets up every tool they use, so a missing or unusable tool is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Whether these tests run as root (the owner of /proc/self is the
/// effective user).
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Something only root may do (reserve huge pages, make device nodes):
/// `true` as root; otherwise a skip saying so, in CI too, where the suite
/// runs once as root (.ci/run) and once as a normal user (.ci/easybuild.sh).
pub fn root_for(what: impl std::fmt::Display) -> bool {
    if is_root() {
        return true;
    }
    skip(format!("{what} needs root"));
    false
}

/// A tool the test needs is missing or unusable here: a failure in CI
/// (`why` says what .ci/run must do), a skip with the reason elsewhere.
pub fn unavailable(what: impl std::fmt::Display, why: impl std::fmt::Display) {
    assert!(!in_ci(), "{what} in CI: {why}");
    skip(what);
}

/// A tool that is not installed: skipped here, a failure in CI.
fn not_installed(name: &str, package: &str) {
    unavailable(
        format!("{name} not installed (Debian package {package})"),
        format!(".ci/run must install Debian package {package}"),
    );
}

/// Runs an external tool the test checks membw with. Where it is not
/// installed the test is skipped locally, saying why, and fails in CI
/// (CI=true), whose .ci/run installs every tool the tests use. A tool that
/// runs but fails is a failure everywhere: it was given membw's output.
pub fn tool(cmd: &mut std::process::Command, package: &str) -> Option<std::process::Output> {
    let name = cmd.get_program().to_string_lossy().into_owned();
    match cmd.output() {
        Ok(out) => {
            assert!(
                out.status.success(),
                "{name} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Some(out)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            not_installed(&name, package);
            None
        }
        Err(e) => panic!("{name}: {e}"),
    }
}

/// Whether a tool the test launches membw with works here, tried with a
/// harmless command (`srun --version`, `sinfo`). A tool that is missing, or
/// installed but unusable (Slurm without a configuration, mpirun that
/// cannot start), skips the test locally with the reason and fails it in
/// CI, where .ci/run installs and sets up every tool.
pub fn usable(cmd: &mut std::process::Command, package: &str) -> bool {
    let name = cmd.get_program().to_string_lossy().into_owned();
    match cmd.output() {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            unavailable(
                format!("{name} is installed but cannot run here ({})", first.trim()),
                format!(".ci/run must set up Debian package {package}"),
            );
            false
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            not_installed(&name, package);
            false
        }
        Err(e) => panic!("{name}: {e}"),
    }
}

/// Whether the slow suites run: the QEMU guests (minutes of emulated
/// kernels), the MPI builds and jobs, the README's and the guide's
/// examples and samples, and the longer rounds of a few tests
/// (docs/guide/testing.md lists them). They always run in CI; elsewhere
/// `MEMBW_SLOW_TESTS=1` turns them on, and otherwise the test says it
/// skipped and how to run it, so `cargo test` stays within two minutes.
pub fn slow_tests(suite: &str) -> bool {
    if slow_tests_on() {
        return true;
    }
    skip(format!(
        "{suite} is a slow suite: MEMBW_SLOW_TESTS=1 cargo test runs it (CI always does)"
    ));
    false
}

/// Whether the slow suites run (CI, or `MEMBW_SLOW_TESTS=1`), for a test
/// that runs either way but does more of its work then.
pub fn slow_tests_on() -> bool {
    in_ci() || std::env::var("MEMBW_SLOW_TESTS").as_deref() == Ok("1")
}

/// An array length (elements, as `--size` takes it) at which each array
/// is at least four times the caches of every CPU this process may use
/// (STREAM's rule), and never under `floor`: a size that is DRAM on a
/// 32 MiB L3 sits in a 300 MiB one.
pub fn dram_elements(floor: u64) -> String {
    let topo = Topology::live().unwrap();
    rule_elements(
        topo.known_cache_sum(&topo.allowed_cpus).map_or(0, |b| b.0),
        floor,
    )
}

/// STREAM's rule in elements (each array four times `caches` bytes of
/// doubles), never under `floor`.
fn rule_elements(caches: u64, floor: u64) -> String {
    (4 * caches).div_ceil(8).max(floor).to_string()
}

/// The captured host whose caches stand in for this one's in tests whose
/// arrays need only leave the caches (a check refuses cache-resident
/// ones): CPUs 0-3 share 16 MiB of L3, so STREAM's rule asks about 70 MiB
/// an array where a 300 MiB L3 asks over 1 GiB, and the test measures
/// what it tests (scopes, verdicts, trust) rather than page faults.
const SMALL_CACHES: &str = "epyc-7742-2s-nps4";

/// `cmd` sized by [`SMALL_CACHES`]' caches, unless `MEMBW_CACHES_FROM`
/// already names a tree (the fixture legs of .ci/run), whose caches it
/// keeps.
pub fn on_small_caches(cmd: &mut assert_cmd::Command) -> &mut assert_cmd::Command {
    if std::env::var_os("MEMBW_CACHES_FROM").is_none() {
        cmd.env("MEMBW_CACHES_FROM", shared_tree(SMALL_CACHES));
    }
    cmd
}

/// [`dram_elements`] for a command run [`on_small_caches`].
pub fn small_dram_elements(floor: u64) -> String {
    if std::env::var_os("MEMBW_CACHES_FROM").is_some() {
        return dram_elements(floor);
    }
    let allowed = Topology::live().unwrap().allowed_cpus;
    rule_elements(
        topology(SMALL_CACHES).known_cache_sum(&allowed).unwrap().0,
        floor,
    )
}

/// Whether a Slurm node is up to take `srun` (.ci/run starts a one-node
/// cluster with .ci/slurm-single-node.sh); where none is, the test skips,
/// and fails in CI.
pub fn slurm_node_up() -> bool {
    let up = std::process::Command::new("sinfo")
        .args(["-h", "-o", "%t"])
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("idle"));
    if !up {
        unavailable(
            "no Slurm node up (run .ci/slurm-single-node.sh as root)",
            ".ci/run must run .ci/slurm-single-node.sh",
        );
    }
    up
}

/// Small arrays and few repetitions for a simulated device: its kernels
/// run on the host thread of a debug build.
pub const SIM_SMALL: [&str; 4] = ["--array-size", "262144", "--ntimes", "3"];

/// `membw run --backend BACKEND` with [`SIM_SMALL`] and `extra`: its stdout.
pub fn run_on(backend: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", "--backend", backend];
    args.extend(SIM_SMALL);
    args.extend(extra);
    stdout(&args)
}

/// The directory holding the fake `libcuda.so.1`, built once with the C
/// compiler; `None` (and a skip saying why) where it cannot be used.
/// membw with a fake vendor library's directory first on the library path.
pub fn with_fake(dir: &Path) -> assert_cmd::Command {
    let mut cmd = membw();
    cmd.env("LD_LIBRARY_PATH", dir);
    cmd
}

/// A checking script's stdout and stderr together, the script having
/// succeeded (`tools/cuda_ptx.py --check`).
pub fn passed_check(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    said
}

/// A command's exit code (-1 for a signal), stdout and stderr.
pub fn output(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn fake_cuda_driver() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let source = include_str!("../fake_cuda/libcuda.c");
    fake_library(&BUILT, "fake_cuda/libcuda.c", source, "libcuda.so.1")
}

/// The directory holding the fake NVML (`libnvidia-ml.so.1`, over the
/// fake CUDA driver's GPUs), as [`fake_cuda_driver`].
pub fn fake_nvml() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let source = include_str!("../fake_cuda/libnvidia-ml.c");
    fake_library(
        &BUILT,
        "fake_cuda/libnvidia-ml.c",
        source,
        "libnvidia-ml.so.1",
    )
}

/// The directory holding the fake `libamdhip64.so.5`, as
/// [`fake_cuda_driver`].
pub fn fake_hip_runtime() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let source = include_str!("../fake_hip/libamdhip64.c");
    fake_library(&BUILT, "fake_hip/libamdhip64.c", source, "libamdhip64.so.5")
}

/// The fake ROCm SMI (tests/fake_hip/librocm_smi64.c), built once into a
/// cached directory: with the fake HIP runtime's on the library path, the
/// same GPUs' xGMI links and throttle status.
pub fn fake_rocm_smi() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let source = include_str!("../fake_hip/librocm_smi64.c");
    fake_library(
        &BUILT,
        "fake_hip/librocm_smi64.c",
        source,
        "librocm_smi64.so.5",
    )
}

/// A fake GPU library built once from `tests/PATH` (whose text is
/// `source`, with the kernels it shares) into a cached directory as
/// `name`.
fn fake_library(
    built: &'static std::sync::OnceLock<Result<PathBuf, String>>,
    path: &str,
    source: &str,
    name: &str,
) -> Option<PathBuf> {
    // Built for the binary's architecture: CI's Arm leg drives the
    // aarch64 binary's GPU backends under qemu-user, which loads them.
    let compiler = match (binary_arch(), foreign_binary()) {
        (_, false) => "cc",
        ("aarch64", true) => "aarch64-linux-gnu-gcc",
        (arch, true) => {
            skip(format!("{name} (fake): no C compiler known for {arch}"));
            return None;
        }
    };
    let built = built.get_or_init(|| {
        let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(path);
        let key = content_key(&[
            compiler,
            source,
            include_str!("../fake_gpu/kernels.h"),
            include_str!("../fake_gpu/pairs.h"),
            include_str!("../fake_gpu/memory.h"),
        ]);
        // Each library its own cache entry: one fake does not evict another.
        let stem = path
            .rsplit('/')
            .next()
            .unwrap_or(path)
            .trim_end_matches(".c");
        let mut failure = None;
        let dir = cached_dir(&format!("{stem}-{key:016x}"), |dir| {
            let out = std::process::Command::new(compiler)
                .args(["-shared", "-fPIC", "-O2", "-o"])
                .arg(dir.join(name))
                .arg(&file)
                .output()
                .map_err(|e| format!("{compiler}: {e}"));
            match out {
                Ok(out) if out.status.success() => {}
                Ok(out) => failure = Some(String::from_utf8_lossy(&out.stderr).into_owned()),
                Err(e) => failure = Some(e),
            }
            Ok(())
        });
        match failure {
            // A failed build must not stay cached as an empty directory.
            Some(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
            None => Ok(dir),
        }
    });
    match built {
        Ok(dir) => Some(dir.clone()),
        Err(e) => {
            unavailable(
                format!("the fake {name} does not build ({e})"),
                ".ci/run must install gcc (gcc-aarch64-linux-gnu for the Arm leg)",
            );
            None
        }
    }
}

/// STREAM's own header, as stream.c prints it, with `bytes` per element.
pub fn stream_output_script(dir: &std::path::Path, bytes: u64) -> String {
    let path = dir.join(format!("stream-{bytes}"));
    let text = format!(
        "#!/bin/sh\ncat <<'OUT'\nSTREAM version $Revision: 5.10 $\n\
         This system uses {bytes} bytes per array element.\n\
         Array size = 3000000 (elements), Offset = 0 (elements)\n\
         Each kernel will be executed 7 times.\n\
         Function    Best Rate MB/s  Avg time     Min time     Max time\n\
         Copy:           25000.0     0.002000     0.001920     0.002100\n\
         Scale:          20000.0     0.002500     0.002400     0.002600\n\
         Add:            24000.0     0.003100     0.003000     0.003200\n\
         Triad:          24000.0     0.003100     0.003000     0.003200\n\
         Solution Validates: avg error less than 1.000000e-13 on all three arrays\nOUT\n"
    );
    std::fs::write(&path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// The value of a GPU's memory counter `name` in its `memory_health`
/// (`counters`: the vendor's, by name); `None` where the record has none.
pub fn memory_counter(health: &serde_json::Value, name: &str) -> Option<u64> {
    (health["counters"].as_array()?.iter())
        .find(|c| c["name"] == name)
        .and_then(|c| c["value"].as_u64())
}

/// Asserts that `text` (a command's output) holds `needle`, showing both
/// where it does not.
#[track_caller]
pub fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} is not in:\n{text}");
}

/// Asserts that a check of a device ended in a verdict: healthy (0),
/// short on a loaded machine (1), or not judged because the tests beside
/// it kept its CPU busy (2, and the verdict says so): never a usage error.
#[track_caller]
pub fn assert_verdict_or_busy(out: &std::process::Output, verdict: &serde_json::Value) {
    let declined = verdict["judged"] == false
        && (verdict["reason"].as_str()).is_some_and(|r| r.contains("busy with other work"));
    assert!(
        matches!(out.status.code(), Some(0 | 1)) || (out.status.code() == Some(2) && declined),
        "{out:?}"
    );
}

/// Asserts that a command exited 0, showing its stderr where it did not.
#[track_caller]
pub fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A scratch directory (removed when it drops) and a file `name` in it,
/// as a path and as the string a command line takes.
pub fn scratch_file(name: &str) -> (tempfile::TempDir, PathBuf, String) {
    let dir = scratch_dir();
    let path = dir.path().join(name);
    let text = path.to_str().unwrap().to_string();
    (dir, path, text)
}
