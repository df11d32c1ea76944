//! The GPU backend's tests, run on every vendor of the GPU-runtime layer
//! this host can load: the simulated device (`sim`, src/backend/sim/:
//! the layer over host memory), NVIDIA's driver API (`cuda`,
//! src/backend/cuda/) over the fake driver of tests/fake_cuda and AMD's
//! HIP (`hip`, src/backend/hip/) over the fake runtime of tests/fake_hip.
//! The same test passes on each with nothing of any outside its own
//! module; another vendor joins by an entry in `vendors()`. What only one
//! vendor has (NVML's UUIDs, a code object per target) stays in its own
//! file (cuda.rs, hip_runtime.rs).
//!
//! And the rule of issue 52: a device run, in every output format, says
//! nothing that only a CPU run means (the host clock's 1 ms rule, a CPU
//! list, first touch, a share of a peak it does not name), while a CPU run
//! still shows STREAM's rule where it applies.

use crate::common;

use crate::common::{fake_cuda_driver, fake_hip_runtime, membw, skip, usage_error};
use serde_json::Value;

/// One vendor, as the tests drive it.
pub(super) struct Vendor {
    /// `--backend` of its second device.
    pub(super) backend: &'static str,
    pub(super) env: Vec<(&'static str, String)>,
    /// What makes one element come back wrong.
    wrong: (&'static str, &'static str),
    /// What makes the dot kernel's launch fail, and how the refusal names
    /// the driver's call and error (the simulated device has no driver).
    failed_launch: Option<(&'static str, &'static str)>,
    /// Whether its driver gives each device a UUID (HIP's backend names
    /// a GPU by its PCI address alone).
    uuid: bool,
    /// Its multiprocessors and the blocks each holds (the runtimes say 6,
    /// HIP's occupancy 8): their product is the whole-wave grid.
    wave: (u64, u64),
    /// Builds of each kernel a default run times where no measured
    /// default is known (the fallback: NAME, NAME_spread, NAME_u2 and
    /// NAME_u1; both vendors' modules have every build).
    builds: usize,
}

pub(super) fn vendors() -> Vec<Vendor> {
    let mut v = vec![Vendor {
        backend: "sim:1",
        env: Vec::new(),
        wrong: ("MEMBW_SIM_DEVICE", "wrong-element=7"),
        failed_launch: None,
        uuid: true,
        wave: (8, 6),
        builds: 4,
    }];
    if let Some(dir) = fake_cuda_driver() {
        v.push(Vendor {
            backend: "cuda:1",
            env: vec![
                ("LD_LIBRARY_PATH", dir.to_string_lossy().into_owned()),
                ("FAKE_CUDA_DEVICES", "2".into()),
            ],
            wrong: ("FAKE_CUDA_WRONG", "1"),
            failed_launch: Some((
                "FAKE_CUDA_FAIL",
                "cuda1: cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED",
            )),
            uuid: true,
            wave: (4, 6),
            builds: 4,
        });
    }
    if let Some(dir) = fake_hip_runtime() {
        v.push(Vendor {
            backend: "hip:1",
            env: vec![
                ("LD_LIBRARY_PATH", dir.to_string_lossy().into_owned()),
                ("FAKE_HIP_DEVICES", "2".into()),
                ("FAKE_HIP_CUS", "4".into()),
            ],
            wrong: ("FAKE_HIP_WRONG", "1"),
            failed_launch: Some((
                "FAKE_HIP_FAIL",
                "hip1: hipModuleLaunchKernel: hipErrorLaunchFailure (719)",
            )),
            uuid: false,
            wave: (4, 8),
            builds: 4,
        });
    }
    v
}

impl Vendor {
    pub(super) fn membw(&self, args: &[&str]) -> assert_cmd::Command {
        let mut cmd = membw();
        cmd.args(args).envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// stdout and stderr of a command that must succeed.
    pub(super) fn ok(&self, args: &[&str]) -> (String, String) {
        let out = self.membw(args).output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "{} {args:?}: {stderr}", self.backend);
        (stdout, stderr)
    }

    pub(super) fn run_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["run", "--backend", self.backend, "--format", "json"];
        all.extend(args);
        serde_json::from_str(&self.ok(&all).0).unwrap()
    }
}

/// Each vendor's library as the loader lists it, and what a request says
/// without it: one line naming the library and the loader's own words, on
/// every command, the device index or set unread.
type Refusals = [(&'static [&'static str], &'static str); 3];

const MISSING: [(&str, &str, Refusals); 2] = [
    (
        "libcuda.so",
        "a CUDA driver",
        [
            (
                &["run", "--backend", "cuda:0"],
                "no CUDA driver here: libcuda.so.1 does not load (libcuda.so.1: cannot open shared object file",
            ),
            (&["check", "--backend", "cuda"], "no CUDA driver here"),
            (
                &["sweep", "--backend", "cuda:1", "--kernels", "transfers"],
                "membw topo lists the GPUs on the PCI bus",
            ),
        ],
    ),
    (
        "libamdhip64",
        "ROCm",
        [
            (
                &["run", "--backend", "hip:0"],
                "no HIP runtime here: none of libamdhip64.so.7, libamdhip64.so.6, libamdhip64.so.5 loads (libamdhip64.so.7: cannot open shared object file",
            ),
            (&["check", "--backend", "hip:all"], "ROCm is not installed"),
            // A set that is no set is named before the runtime is looked for.
            (
                &["run", "--backend", "hip:x"],
                "invalid value 'hip:x' for '--backend <NAME[:N|:all|:LIST]>': 'x': column 1: 'x' is not a number",
            ),
        ],
    ),
];

#[test]
fn without_its_library_a_vendors_request_ends_in_one_line() {
    let ldconfig = std::process::Command::new("/sbin/ldconfig")
        .arg("-p")
        .output();
    let listed = ldconfig.map_or(String::new(), |o| {
        String::from_utf8_lossy(&o.stdout).into_owned()
    });
    for (library, what, refusals) in MISSING {
        if listed.contains(library) {
            skip(format!(
                "this host has {what}: the missing-library path cannot be shown"
            ));
            continue;
        }
        for (args, said) in refusals {
            usage_error(args, said);
        }
    }
}

#[test]
fn every_kernel_validates_in_the_launch_shape_that_timed_fastest() {
    for v in vendors() {
        let doc = v.run_json(&[
            "--kernels", "all", "--array-size", "200000", "--ntimes", "3",
        ]);
        let m = &doc["measurement"];
        assert_eq!(m["validation"]["passed"], true, "{}: {m}", v.backend);
        let target = &m["target"];
        assert_eq!(target["index"], 1, "{target}");
        assert!(target["bus_id"].is_string(), "{target}");
        assert_eq!(target["uuid"].is_string(), v.uuid, "{target}");
        assert_eq!(
            target["method"]["clock"]["own"], true,
            "{}: {target}",
            v.backend
        );
        for r in m["results"].as_array().unwrap() {
            let launch = &r["launch"];
            let shape = launch["shape"].as_str().unwrap_or_else(|| panic!("{r}"));
            let tried: Vec<&str> = (launch["tried"].as_array().unwrap().iter())
                .map(|t| t["shape"].as_str().unwrap())
                .collect();
            // 200000 elements are 98 tiles of 256 threads × 8: more than
            // one wave, so both shapes of each build were timed, and the
            // fastest ran.
            assert_eq!(tried.len(), 2 * v.builds, "{}: {r}", v.backend);
            let (multiprocessors, each) = v.wave;
            if v.builds > 1 {
                let other = format!(
                    "{} blocks of 256, accesses a quarter apart (one wave",
                    multiprocessors * each
                );
                assert!(tried.iter().any(|t| t.starts_with(&other)), "{other}: {r}");
            }
            assert!(tried.contains(&shape), "{r}");
            let wave = format!(
                "{} blocks of 256 (one wave: {each} per multiprocessor",
                multiprocessors * each
            );
            assert!(tried.iter().any(|t| t.starts_with(&wave)), "{wave}: {r}");
            assert!(
                tried
                    .iter()
                    .any(|t| t.starts_with("98 blocks of 256 (covering")),
                "{r}"
            );
        }
    }
}

#[test]
fn microsecond_kernels_are_timed_in_calibrated_calls_without_a_warning() {
    for v in vendors() {
        let doc = v.run_json(&["--array-size", "1000", "--ntimes", "4"]);
        let m = &doc["measurement"];
        assert_eq!(m["validation"]["passed"], true, "{m}");
        let floor = m["timer"]["repetition_floor_us"].as_f64().unwrap();
        // 20 ticks of the device's clock at least (0.5 µs or 1 µs ticks).
        assert!(floor >= 10.0, "{}: {floor}", v.backend);
        for r in m["results"].as_array().unwrap() {
            let min = r["min_time_s"].as_f64().unwrap() * 1e6;
            assert!(
                min >= 0.99 * floor,
                "{}: {min} µs < {floor}: {r}",
                v.backend
            );
        }
        assert!(m["inner_repeats"].as_u64().unwrap() >= 1);
        let warnings = m["warnings"].to_string();
        assert!(!warnings.contains("shortest repetition"), "{warnings}");
    }
}

#[test]
fn a_wrong_element_fails_validation_naming_the_array_written() {
    for v in vendors() {
        let out = v
            .membw(&["run", "--backend", v.backend, "--kernels", "copy,triad"])
            .args(["--array-size", "20000", "--ntimes", "3"])
            .env(v.wrong.0, v.wrong.1)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", v.backend);
        crate::common::assert_contains(&stderr, "Failed Validation: array a:");
    }
}

#[test]
fn a_failed_launch_ends_in_one_line_naming_the_call_and_the_error() {
    for v in vendors() {
        let Some((variable, said)) = v.failed_launch else {
            continue;
        };
        let out = v
            .membw(&["run", "--backend", v.backend, "--kernels", "copy,dot"])
            .args(["--array-size", "20000", "--ntimes", "3"])
            .env(variable, "dot")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{}: {stderr}", v.backend);
        assert!(stderr.contains(said), "{}: {stderr}", v.backend);
    }
}

#[test]
fn transfers_place_their_host_buffers_and_validate() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    for v in vendors() {
        let doc = v.run_json(&[
            "--kernels",
            "transfers,h2d-pageable,d2h-pageable",
            "--mem",
            "local",
            "--array-size",
            "50000",
            "--ntimes",
            "3",
        ]);
        let m = &doc["measurement"];
        assert_eq!(m["validation"]["passed"], true, "{}: {m}", v.backend);
        let pages = m["pages"].as_array().unwrap();
        assert_eq!(pages.len(), 2, "h and r: {m}");
        assert!(pages.iter().all(|p| p["held"] == true), "{m}");
        // Where the memory peak is known (NVML on a GPU), every share is
        // named after what it is of.
        if let Some(named) = doc["peak"]["percent_of"].as_object() {
            assert_eq!(named["h2d"], "host link peak (each way)", "{named:?}");
            assert_eq!(named["bidir"], "host link peak (both ways)", "{named:?}");
        }
    }
}

#[test]
fn a_baseline_of_the_device_checks_healthy_against_itself() {
    // Host buffers and host arrays are bound with mbind, which qemu-user
    // (the Arm leg) does not implement.
    if !crate::common::mbind_works() {
        return;
    }
    for v in vendors() {
        let (_dir, _, file) = crate::common::scratch_file("gpu.json");
        // The simulated device's work is the host's: a busy test host
        // is not what is tested here.
        let small = ["--array-size", "200000", "--rounds", "3", "--allow-busy"];
        let mut args = vec!["baseline", "--backend", v.backend, "-o", &file];
        args.extend(small);
        v.ok(&args);
        let check = ["check", "--backend", v.backend, "--baseline", &file];
        let out = v.membw(&check).args(["--format", "json"]).output().unwrap();
        let verdict: Value = serde_json::from_slice(&out.stdout).unwrap();
        crate::common::assert_verdict_or_busy(&out, &verdict);
        let name = v.backend.replace(':', "");
        assert_eq!(verdict["device"]["name"], name.as_str(), "{verdict}");
    }
}

/// What only a CPU run says: STREAM's host-clock lines and rule, a CPU
/// list (or an empty one), first touch, a peak by its sockets, a share of
/// a peak not named beside it.
const CPU_SHAPED: [&str; 12] = [
    "clock granularity",
    "clock ticks",
    "results below ~1 ms",
    "at least 20 clock ticks",
    "first touch",
    "CPUs  and",
    "CPU  and",
    "Number of Threads",
    "Thread affinity",
    "for the sockets used",
    "% of peak",
    "memory channels missing",
];

fn assert_speaks_gpu(what: &str, text: &str) {
    for shape in CPU_SHAPED {
        assert!(!text.contains(shape), "{what} says '{shape}':\n{text}");
    }
}

#[test]
fn a_device_run_says_nothing_only_a_cpu_run_means_in_any_format() {
    for v in vendors() {
        let dir = crate::common::scratch_dir();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        let (results, prom) = (path("run.jsonl"), path("run.prom"));
        // Kernels of microseconds, timed by the device's own clock.
        let run = ["run", "--backend", v.backend, "--array-size", "2000"];
        let (text, stderr) = v.ok(&[&run[..], &["-o", &results, "--prom", &prom]].concat());
        assert_speaks_gpu("run", &format!("{text}{stderr}"));
        crate::common::assert_contains(&text, "Times below are");
        // A peak, where the vendor knows one (the fake driver has no NVML).
        let peak = !text.contains("theoretical peak unknown");
        assert!(!peak || text.contains("% of memory peak"), "{text}");
        assert!(!peak || text.contains("memory peak: "), "{text}");
        crate::common::assert_contains(&text, "  launch: ");
        assert!(!text.contains("setup (map"), "{text}");
        // A window the observers cannot judge is not "trusted".
        if text.contains("not judged: ") {
            assert!(!text.contains("  trusted: "), "{text}");
        }
        for format in ["json", "jsonl", "csv", "markdown"] {
            let (out, err) = v.ok(&[&run[..], &["--format", format]].concat());
            assert_speaks_gpu(format, &format!("{out}{err}"));
        }
        assert_speaks_gpu("--prom", &std::fs::read_to_string(&prom).unwrap());
        for format in ["text", "markdown", "html", "csv"] {
            let (out, err) = v.ok(&["report", &results, "--format", format]);
            assert_speaks_gpu(&format!("report --format {format}"), &format!("{out}{err}"));
        }
        // Its JSON names what every share is of.
        let doc: Value =
            serde_json::from_str(&v.ok(&[&run[..], &["--format", "json"]].concat()).0).unwrap();
        if let Some(shares) = doc["peak"]["percent_of_peak"].as_object() {
            let named = doc["peak"]["percent_of"].as_object().unwrap();
            assert_eq!(shares.len(), named.len(), "{doc}");
        }
    }
}

#[test]
fn a_cpu_run_still_shows_streams_rule_where_it_applies() {
    // Arrays of 64 KiB each, under every host's caches: STREAM's rule
    // applies, and says so in the text and the JSON.
    let out = membw()
        .args([
            "run", "--size", "8192", "--ntimes", "3", "--no-stores-check",
        ])
        .output()
        .unwrap();
    let (text, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    crate::common::assert_contains(&text, "clock granularity");
    crate::common::assert_contains(&text, "Thread affinity");
    crate::common::assert_contains(&text, "setup (map + parallel first touch)");
    assert!(
        stderr.contains("STREAM's rule") || text.contains("STREAM's rule"),
        "{stderr}{text}"
    );
}

/// A newcomer on a GPU node finds the GPU from the help: `membw --help`
/// says how, and every command that measures bandwidth shows --backend
/// with its values.
#[test]
fn the_gpu_is_found_from_the_help() {
    let top = common::stdout(&["--help"]);
    crate::common::assert_contains(&top, "membw run --backend cuda:0");
    for command in ["run", "sweep", "baseline", "check"] {
        let help = common::stdout(&[command, "--help"]);
        assert!(
            help.contains("--backend <NAME[:N|:all|:LIST]>")
                && help.contains("cuda:N (NVIDIA GPU N"),
            "{command}: {help}"
        );
    }
}
