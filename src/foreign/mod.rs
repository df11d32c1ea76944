//! Other people's bandwidth programs (a `stream.c` build, BabelStream,
//! likwid-bench) run under membw's placement and memory policy, and checked
//! the way membw checks its own threads: where each thread really ran and
//! where the pages landed.
//!
//! The placement reaches the program in every runtime's own terms
//! ([`placement_env`]) and through the process's affinity mask; the memory
//! policy is set before exec, as numactl does. While it runs, membw samples
//! its threads (`/proc/PID/task/*/stat`, sched_getaffinity) and its page
//! placement (move_pages on pages spread over its anonymous mappings, or
//! `/proc/PID/numa_maps` where the kernel refuses); [`parse`] reads what it
//! printed.

mod pages;
pub mod parse;

pub use pages::numa_pages;
use pages::{PageSample, sample_pages};

use crate::sys::{self, MemPolicyMode};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// What membw sets for the program: the variables of every OpenMP runtime.
pub fn placement_env(cpus: &[usize], pinned: bool) -> Vec<(&'static str, String)> {
    let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
    // Unbound (`--no-pin`): the runtimes told to bind nothing.
    if !pinned {
        return vec![
            ("OMP_NUM_THREADS", cpus.len().to_string()),
            ("OMP_PROC_BIND", "false".into()),
            ("KMP_AFFINITY", "disabled".into()),
        ];
    }
    vec![
        ("OMP_NUM_THREADS", cpus.len().to_string()),
        (
            "OMP_PLACES",
            cpus.iter()
                .map(|c| format!("{{{c}}}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("OMP_PROC_BIND", "close".into()),
        ("GOMP_CPU_AFFINITY", list.join(" ")),
        (
            "KMP_AFFINITY",
            format!("granularity=fine,explicit,proclist=[{}]", list.join(",")),
        ),
    ]
}

/// How to run one program.
pub struct Invocation<'a> {
    /// The program and its arguments.
    pub argv: &'a [String],
    /// The CPU of each thread, in thread order.
    pub cpus: &'a [usize],
    /// Whether the threads are bound (false: `--no-pin`, the program runs
    /// wherever this process may, its threads unbound).
    pub pinned: bool,
    /// The memory policy for the whole process, when not first touch.
    pub policy: Option<(MemPolicyMode, Vec<usize>)>,
    /// Variables the user set explicitly: membw leaves those alone.
    pub keep: &'a BTreeSet<String>,
    pub timeout: Duration,
    /// How often threads and pages are sampled.
    pub sample_every: Duration,
    /// Pass the program's output through to membw's stdout and stderr
    /// as it comes (it is kept for parsing too).
    pub show_output: bool,
    /// Set, the program and everything it started are killed (its process
    /// group, which a Ctrl-C at the terminal does not reach).
    pub stop: &'a crate::sys::Stop,
}

/// Where one of the program's threads was seen.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadSeen {
    pub tid: i32,
    /// Every CPU the samples found it on.
    pub cpus: Vec<usize>,
    /// Its affinity mask at the last sample.
    pub allowed: Vec<usize>,
}

/// How a program ended and what membw saw while it ran.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Ran {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub wall_s: f64,
    pub stdout: String,
    /// The last lines it wrote to stderr.
    pub stderr_tail: Vec<String>,
    /// The variables membw set (those the user had not).
    pub env_set: Vec<(String, String)>,
    pub threads: Vec<ThreadSeen>,
    /// Pages per NUMA node from the last page sample.
    pub pages_per_node: BTreeMap<usize, u64>,
    /// Sampled pages that were not yet present (never touched).
    pub pages_absent: u64,
    /// CPU time membw itself used while the program ran (sampling and
    /// reading its output): what watching cost.
    pub watch_cpu_s: f64,
    /// What else ran on the CPUs while the program ran.
    pub interference: crate::trust::Interference,
}

/// Why a program could not be started.
#[derive(Debug)]
pub struct LaunchError(pub String);

/// The most of a program's output membw keeps.
const MAX_OUTPUT: u64 = 16 << 20;

/// Runs the program to its end (or the timeout, which kills its whole
/// process group), sampling its threads and pages meanwhile.
pub fn run(l: &Invocation) -> Result<Ran, LaunchError> {
    let (program, args) = l
        .argv
        .split_first()
        .ok_or_else(|| LaunchError("no program given".into()))?;
    let Placed {
        mut cmd,
        env_set,
        union,
    } = placed_command(l, program, args)?;
    let watch_cpu = sys::own_cpu_time();
    let children_cpu = sys::children_cpu_time();
    let counters = crate::trust::Snapshot::take();
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| LaunchError(format!("{program}: {e}")))?;
    let pid = child.id();
    let show = l.show_output;
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        show.then(|| Box::new(std::io::stdout()) as Box<dyn Write + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        show.then(|| Box::new(std::io::stderr()) as Box<dyn Write + Send>),
    );
    let mut seen: BTreeMap<i32, ThreadSeen> = BTreeMap::new();
    let mut timed_out = false;
    // Pages are sampled at 0.1, 0.2, 0.4, 0.8 s and then every second, so
    // that a short program is seen after its first touch and a long one
    // near its end.
    let mut pages = PageSample::default();
    let mut next_pages = Duration::from_millis(100);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(LaunchError(format!("waiting for {program}: {e}"))),
        }
        sample_threads(pid, &mut seen);
        let elapsed = started.elapsed();
        if elapsed >= next_pages {
            if let Some(p) = sample_pages(pid) {
                pages = p;
            }
            next_pages = (next_pages * 2).min(elapsed + Duration::from_secs(1));
        }
        if started.elapsed() > l.timeout {
            timed_out = true;
            sys::kill_group(pid);
        }
        // The program runs in its own process group, which a Ctrl-C at the
        // terminal does not reach: membw passes the stop on.
        if l.stop.requested() {
            sys::kill_group(pid);
        }
        std::thread::sleep(l.sample_every);
    };
    use std::os::unix::process::ExitStatusExt;
    let wall_s = started.elapsed().as_secs_f64();
    let program_ticks = (sys::children_cpu_time()
        .saturating_sub(children_cpu)
        .as_secs_f64()
        * sys::ticks_per_second())
    .round() as u64;
    let interference = counters.until(
        &crate::trust::Snapshot::take(),
        crate::trust::JudgedCpus::node(&union),
        program_ticks,
        crate::trust::Effect::Bandwidth,
    );
    let stderr = err.join().unwrap_or_default();
    let stdout = out.join().unwrap_or_default();
    let watch_cpu_s = sys::own_cpu_time().saturating_sub(watch_cpu).as_secs_f64();
    let tail: Vec<String> = stderr.lines().rev().take(5).map(str::to_string).collect();
    Ok(Ran {
        code: status.code(),
        signal: status.signal(),
        timed_out,
        wall_s,
        stdout,
        stderr_tail: tail.into_iter().rev().collect(),
        env_set,
        threads: seen.into_values().collect(),
        pages_per_node: pages.per_node,
        pages_absent: pages.absent,
        watch_cpu_s,
        interference,
    })
}

/// The program's command, placed.
struct Placed {
    cmd: std::process::Command,
    /// The placement variables it gets.
    env_set: Vec<(String, String)>,
    /// Its threads' CPUs, sorted, each once.
    union: Vec<usize>,
}

fn placed_command(l: &Invocation, program: &str, args: &[String]) -> Result<Placed, LaunchError> {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let env_set: Vec<(String, String)> = placement_env(l.cpus, l.pinned)
        .into_iter()
        .filter(|(k, _)| !l.keep.contains(*k))
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    cmd.envs(env_set.iter().map(|(k, v)| (k, v)));
    let mut union: Vec<usize> = match l.pinned {
        true => l.cpus.to_vec(),
        // Unbound: every CPU this process may use.
        false => sys::thread_affinity(std::process::id() as i32).unwrap_or_else(|| l.cpus.to_vec()),
    };
    union.sort_unstable();
    union.dedup();
    sys::place_child(&mut cmd, &union, l.policy.clone()).map_err(|e| LaunchError(e.to_string()))?;
    Ok(Placed {
        cmd,
        env_set,
        union,
    })
}

/// Reads a child's pipe to its end (at most `MAX_OUTPUT` bytes) on a
/// thread of its own, echoing it where asked.
fn drain(
    pipe: Option<Box<dyn Read + Send>>,
    echo: Option<Box<dyn Write + Send>>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(p) = pipe {
            let mut p = p.take(MAX_OUTPUT);
            let mut echo = echo;
            let mut buf = [0u8; 8192];
            loop {
                match p.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        text.extend_from_slice(&buf[..n]);
                        // A closed terminal stops the echo, not the reading.
                        if echo.as_mut().is_some_and(|e| {
                            e.write_all(&buf[..n]).and_then(|()| e.flush()).is_err()
                        }) {
                            echo = None;
                        }
                    }
                }
            }
        }
        String::from_utf8_lossy(&text).into_owned()
    })
}

/// Adds where each of the process's threads is now (field 39 of
/// `/proc/PID/task/TID/stat`, the CPU it last ran on) and its mask.
fn sample_threads(pid: u32, seen: &mut BTreeMap<i32, ThreadSeen>) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for task in tasks.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<i32>().ok())
        else {
            continue;
        };
        let Some(cpu) = std::fs::read_to_string(task.path().join("stat"))
            .ok()
            .and_then(|s| sys::parse_task_stat(0, &s))
            .map(|t| t.cpu)
        else {
            continue;
        };
        let entry = seen.entry(tid).or_insert_with(|| ThreadSeen {
            tid,
            cpus: Vec::new(),
            allowed: Vec::new(),
        });
        if !entry.cpus.contains(&cpu) {
            entry.cpus.push(cpu);
            entry.cpus.sort_unstable();
        }
        if let Some(mask) = sys::thread_affinity(tid) {
            entry.allowed = mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pages::{anonymous_ranges, spread_pages};
    use super::*;

    #[test]
    fn only_private_anonymous_writable_mappings_are_sampled() {
        let maps = "\
55d0c0000000-55d0c0002000 r--p 00000000 08:01 1234 /usr/bin/stream
55d0c0200000-55d0c0221000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0010000000 rw-p 00000000 00:00 0 
7f0010000000-7f0010001000 ---p 00000000 00:00 0 
7f0020000000-7f0020004000 rw-p 00002000 08:01 99 /usr/lib/libc.so.6
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0 [vdso]
";
        assert_eq!(
            anonymous_ranges(maps),
            vec![
                (0x55d0c0200000, 0x55d0c0221000),
                (0x7f0000000000, 0x7f0010000000)
            ]
        );
    }

    #[test]
    fn samples_spread_over_ranges_in_proportion_to_their_size() {
        let page = 4096;
        // 10 pages, then 30 pages: a quarter of the samples in the first.
        let ranges = [
            (0x10000, 0x10000 + 10 * page),
            (0x900000, 0x900000 + 30 * page),
        ];
        let at = spread_pages(&ranges, page, 8);
        assert_eq!(at.len(), 8);
        assert_eq!(at.iter().filter(|&&a| a < 0x900000).count(), 2);
        assert!(at.windows(2).all(|w| w[0] < w[1]));
        assert!(
            at.iter()
                .all(|&a| ranges.iter().any(|&(f, t)| a >= f && a < t))
        );
        // Fewer pages than asked for: each page once.
        assert_eq!(spread_pages(&ranges, page, 1000).len(), 40);
        assert!(spread_pages(&[], page, 8).is_empty());
    }

    #[test]
    fn a_live_process_pages_are_found_on_its_nodes() {
        let mut touched = vec![0u8; 64 << 20];
        for b in touched.iter_mut().step_by(4096) {
            *b = 1;
        }
        let sample = sample_pages(std::process::id()).expect("own maps are readable");
        let present: u64 = sample.per_node.values().sum();
        // The 64 MiB just touched dominate this test process's anonymous memory.
        assert!(
            present > sample.absent,
            "{present} present, {} absent",
            sample.absent
        );
        let topo = crate::topology::Topology::read(std::path::Path::new("/")).unwrap();
        let nodes: Vec<usize> = topo.nodes.iter().map(|n| n.id).collect();
        assert!(
            sample.per_node.keys().all(|n| nodes.contains(n)),
            "{nodes:?}"
        );
        std::hint::black_box(&touched);
    }

    #[test]
    fn numa_maps_are_summed_per_node() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("numa_maps");
        std::fs::write(
            &path,
            "7f00 default anon=10 dirty=10 N0=6 N1=4 kernelpagesize_kB=4\n7f10 bind:1 anon=5 N1=5\n\
             5600 default file=/usr/bin/stream mapped=3 N0=3\n",
        )
        .unwrap();
        let pages = numa_pages(path.to_str().unwrap()).unwrap();
        assert_eq!(pages, BTreeMap::from([(0, 6), (1, 9)]));
    }

    #[test]
    fn a_program_runs_pinned_with_the_runtimes_variables() {
        let cpu = *crate::topology::Topology::live()
            .unwrap()
            .allowed_cpus
            .ids()
            .last()
            .unwrap();
        let argv: Vec<String> = [
            "sh",
            "-c",
            "echo $OMP_NUM_THREADS $OMP_PLACES $GOMP_CPU_AFFINITY; grep Cpus_allowed_list /proc/self/status; sleep 0.3",
        ]
        .map(String::from)
        .to_vec();
        let keep = BTreeSet::from(["OMP_PROC_BIND".to_string()]);
        let ran = run(&Invocation {
            argv: &argv,
            cpus: &[cpu],
            pinned: true,
            policy: None,
            keep: &keep,
            timeout: Duration::from_secs(20),
            sample_every: Duration::from_millis(20),
            show_output: false,
            stop: &crate::sys::Stop::default(),
        })
        .unwrap();
        assert_eq!(ran.code, Some(0));
        assert!(
            ran.stdout.starts_with(&format!("1 {{{cpu}}} {cpu}\n")),
            "{}",
            ran.stdout
        );
        assert!(
            ran.stdout.contains(&format!("Cpus_allowed_list:\t{cpu}\n")),
            "{}",
            ran.stdout
        );
        assert!(ran.env_set.iter().all(|(k, _)| k != "OMP_PROC_BIND"));
        assert!(!ran.threads.is_empty());
        assert!(
            ran.threads
                .iter()
                .all(|t| t.cpus == [cpu] && t.allowed == [cpu]),
            "{:?}",
            ran.threads
        );
    }

    #[test]
    fn a_hanging_program_is_killed_with_its_children() {
        let argv: Vec<String> = ["sh", "-c", "sleep 30 & sleep 30"]
            .map(String::from)
            .to_vec();
        let started = Instant::now();
        let ran = run(&Invocation {
            argv: &argv,
            cpus: &[0],
            pinned: true,
            policy: None,
            keep: &BTreeSet::new(),
            timeout: Duration::from_millis(300),
            sample_every: Duration::from_millis(20),
            show_output: false,
            stop: &crate::sys::Stop::default(),
        })
        .unwrap();
        assert!(ran.timed_out);
        assert_eq!(ran.signal, Some(libc::SIGKILL));
        // The background sleep held stdout open: it died too, or this would wait 30 s.
        assert!(started.elapsed() < Duration::from_secs(10));
        let missing = run(&Invocation {
            argv: &["/nonexistent/stream".to_string()],
            cpus: &[0],
            pinned: true,
            policy: None,
            keep: &BTreeSet::new(),
            timeout: Duration::from_secs(1),
            sample_every: Duration::from_millis(20),
            show_output: false,
            stop: &crate::sys::Stop::default(),
        });
        assert!(missing.unwrap_err().0.contains("/nonexistent/stream"));
    }
}
