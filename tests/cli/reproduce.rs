//! Every reproduce line membw prints runs, and puts the threads or ranks
//! on the CPUs it names: each line is executed with a probe that reports
//! its own affinity, wherever the tool is installed (CI installs them all
//! and starts a one-node Slurm; elsewhere a missing tool skips with its
//! package named).

use crate::common;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An OpenMP program that prints, for every thread, its number and the
/// CPUs it may run on: `probe thread 0: 1`.
const OMP_PROBE: &str = r#"
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
int main(void) {
  #pragma omp parallel
  {
    cpu_set_t s; CPU_ZERO(&s); sched_getaffinity(0, sizeof s, &s);
    char buf[8192]; int n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &s)) n += snprintf(buf + n, sizeof buf - n, "%s%d", n ? "," : "", c);
    #pragma omp critical
    printf("probe thread %d: %s\n", omp_get_thread_num(), buf);
  }
  return 0;
}
"#;

/// A process's (or a rank's) own CPUs, with the rank any launcher gives.
const RANK_PROBE: &str = r#"sh -c 'echo "probe rank ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}: $(sed -n "s/^Cpus_allowed_list:\t//p" /proc/self/status)"'"#;

/// Up to four allowed CPUs, last first, so that order shows.
fn cpus() -> Option<Vec<usize>> {
    let topo = membw::topology::Topology::live().unwrap();
    let mut cpus: Vec<usize> = topo.allowed_cpus.ids().iter().copied().take(4).collect();
    if cpus.len() < 2 {
        common::skip("one CPU: every placement is the same");
        return None;
    }
    cpus.reverse();
    Some(cpus)
}

/// `membw place --cpus LIST`'s spellings.
fn spellings(cpus: &[usize]) -> Value {
    let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
    let text = common::stdout(&["place", "--cpus", &list.join(","), "--format", "json"]);
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["spellings"].clone()
}

/// "N: a,b" lines → N → the CPU list (after any colour codes a tool
/// printed before them on the line, as likwid-pin does).
fn landed(stdout: &str, word: &str) -> BTreeMap<usize, String> {
    stdout
        .lines()
        .filter_map(|l| l[l.find(word)? + word.len()..].trim().split_once(": "))
        .map(|(n, cpus)| (n.parse().unwrap(), cpus.trim().to_string()))
        .collect()
}

/// Runs `line` with `program` appended, in bash; None when its tool is
/// missing (skipped, or a failure in CI).
fn run(line: &str, program: &str, tool: &str, package: &str) -> Option<String> {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        common::unavailable(
            format!("{tool} not installed (Debian package {package})"),
            format!(".ci/run must install Debian package {package}"),
        );
        return None;
    }
    let out = Command::new("bash")
        .args(["-c", &format!("{line} {program}")])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{line} {program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The OpenMP probe built with `compiler` (gcc: libgomp; clang: LLVM's
/// libomp, which reads KMP_AFFINITY as Intel's runtime does).
fn omp_probe(dir: &Path, compiler: &str, package: &str) -> Option<PathBuf> {
    let src = dir.join("probe.c");
    std::fs::write(&src, OMP_PROBE).unwrap();
    let exe = dir.join(format!("probe-{compiler}"));
    match Command::new(compiler)
        .args(["-fopenmp", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
    {
        Ok(o) if o.status.success() => Some(exe),
        Ok(o) => {
            common::unavailable(
                format!(
                    "{compiler} -fopenmp failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .next()
                        .unwrap_or("")
                ),
                format!(".ci/run must install Debian package {package}"),
            );
            None
        }
        Err(_) => {
            common::unavailable(
                format!("{compiler} not installed (Debian package {package})"),
                format!(".ci/run must install Debian package {package}"),
            );
            None
        }
    }
}

/// Thread i on the i-th CPU, each on that CPU alone.
fn threads_on(stdout: &str, cpus: &[usize], line: &str) {
    let want: BTreeMap<usize, String> = cpus.iter().map(|c| c.to_string()).enumerate().collect();
    assert_eq!(landed(stdout, "probe thread"), want, "{line}\n{stdout}");
}

#[test]
fn openmp_gnu_intel_and_likwid_lines_put_thread_i_on_the_ith_cpu() {
    let Some(cpus) = cpus() else { return };
    let s = spellings(&cpus);
    let dir = crate::common::scratch_dir();
    if let Some(gcc) = omp_probe(dir.path(), "gcc", "gcc") {
        let gcc = gcc.to_str().unwrap();
        for key in ["openmp", "gomp"] {
            let line = s[key].as_str().unwrap();
            let out = run(line, gcc, "gcc", "gcc").unwrap();
            threads_on(&out, &cpus, line);
        }
        let line = s["likwid_pin"].as_str().unwrap();
        if let Some(out) = run(line, gcc, "likwid-pin", "likwid") {
            threads_on(&out, &cpus, line);
        }
    }
    // Intel's variable, read by LLVM's runtime as by Intel's.
    if let Some(clang) = omp_probe(dir.path(), "clang", "clang libomp-dev") {
        let line = s["kmp"].as_str().unwrap();
        let out = run(line, clang.to_str().unwrap(), "clang", "clang").unwrap();
        threads_on(&out, &cpus, line);
    }
}

#[test]
fn numactl_and_taskset_lines_give_the_process_exactly_the_cpus() {
    let Some(cpus) = cpus() else { return };
    let s = spellings(&cpus);
    let mut sorted = cpus.clone();
    sorted.sort_unstable();
    for (key, tool, package) in [
        ("taskset", "taskset", "util-linux"),
        ("numactl", "numactl", "numactl"),
    ] {
        let line = s[key].as_str().unwrap();
        if let Some(out) = run(line, RANK_PROBE, tool, package) {
            let got = landed(&out, "probe rank");
            let listed: Vec<usize> = membw::topology::cpulist::parse_list(&got[&0]).unwrap();
            assert_eq!(listed, sorted, "{line}: {out}");
        }
    }
}

/// Rank r on one CPU each, together the CPUs listed; `ordered` when rank
/// r must be on the r-th CPU as printed.
fn ranks_on(stdout: &str, cpus: &[usize], ordered: bool, line: &str) {
    let got = landed(stdout, "probe rank");
    assert_eq!(got.len(), cpus.len(), "{line}\n{stdout}");
    let mut on: Vec<usize> = got
        .values()
        .map(|c| c.parse().unwrap_or(usize::MAX))
        .collect();
    if ordered {
        assert_eq!(on, cpus, "{line}\n{stdout}");
    }
    on.sort_unstable();
    let mut want = cpus.to_vec();
    want.sort_unstable();
    assert_eq!(on, want, "{line}: one CPU per rank\n{stdout}");
}

#[test]
fn mpi_lines_put_one_rank_on_each_cpu() {
    let Some(cpus) = cpus() else { return };
    let s = spellings(&cpus);
    // Open MPI binds in ascending order of the list; Hydra in the order given.
    let line = s["mpirun"].as_str().unwrap();
    if let Some(out) = run(line, RANK_PROBE, "mpirun", "openmpi-bin") {
        ranks_on(&out, &cpus, false, line);
    }
    let line = s["mpich"].as_str().unwrap();
    if let Some(out) = run(line, RANK_PROBE, "mpiexec.hydra", "mpich") {
        ranks_on(&out, &cpus, true, line);
    }
}

#[test]
fn the_srun_line_puts_task_i_on_the_ith_cpu() {
    let Some(cpus) = cpus() else { return };
    if !common::slow_tests("the Slurm reproduce test") {
        return;
    }
    if !common::slurm_node_up() {
        return;
    }
    let s = spellings(&cpus);
    let line = s["srun"].as_str().unwrap();
    let out = run(line, RANK_PROBE, "srun", "slurm-wlm").unwrap();
    ranks_on(&out, &cpus, true, line);
}

/// A file written by an older membw holds rank lines that no longer run
/// (Open MPI 4.1 refuses `--cpu-set 0-1 --map-by core`): report prints
/// today's, derived from the CPUs the runs used.
#[test]
fn reports_of_older_files_print_rank_lines_that_run() {
    let dir = crate::common::scratch_dir();
    let study = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/study/threads.jsonl"),
    )
    .unwrap();
    let old: String = study
        .lines()
        .map(|line| {
            let mut r: Value = serde_json::from_str(line).unwrap();
            if let Some(s) = r.get_mut("reproduce").filter(|s| s.is_object()) {
                let n = s["srun"].as_str().unwrap().to_string();
                s["srun"] = "srun --cpu-bind=map_cpu:0,1".into();
                s["mpirun"] = "mpirun -np 2 --cpu-set 0-1 --bind-to core --map-by core".into();
                assert!(n.starts_with("srun"), "{n}");
            }
            format!("{r}\n")
        })
        .collect();
    let path = dir.path().join("old.jsonl");
    std::fs::write(&path, old).unwrap();
    let out = common::stdout(&["report", path.to_str().unwrap()]);
    assert!(!out.contains("--cpu-set"), "{out}");
    assert!(!out.contains("srun --cpu-bind"), "{out}");
    assert!(
        out.contains("srun -n 2 --cpu-bind=map_cpu:")
            && out.contains("--bind-to cpu-list:ordered")
            && out.contains("mpiexec.hydra -n 2 -bind-to user:"),
        "{out}"
    );
}

/// A line holds only what runs with a program pasted after it: what a
/// line cannot say (a per-array policy numactl has no words for, an old
/// file's trailing comment) is a note under the lines.
#[test]
fn no_printed_line_ends_in_a_comment() {
    // A copy: report writes its plots beside the file it reads.
    let dir = crate::common::scratch_dir();
    let study = dir.path().join("tiers-guest.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/study/tiers-guest.jsonl"),
        &study,
    )
    .unwrap();
    let out = common::stdout(&["report", study.to_str().unwrap()]);
    let block = out.split("Reproduce it:").nth(1).expect(&out);
    let lines: Vec<&str> = block.lines().filter(|l| l.starts_with("    ")).collect();
    assert!(
        lines.iter().any(|l| l.contains("numactl --physcpubind=")),
        "{out}"
    );
    assert!(lines.iter().all(|l| !l.contains('#')), "{out}");
    assert!(
        block.contains("  note: per-array policies have no numactl equivalent"),
        "{out}"
    );
    let place = common::stdout(&["place", "--cpus", "0", "--mem", "a=bind:0,b=local,c=local"]);
    assert!(!place.contains('#'), "{place}");
    crate::common::assert_contains(&place, "  note: numactl places the CPUs only");
}
