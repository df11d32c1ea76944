//! The same placement in the spellings of other tools, so a user can
//! reproduce membw's best configuration in their own application.

use crate::memory::Hugepages;
use crate::memory::policy::MemPolicy;
use crate::topology::cpulist::format_ranges;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spellings {
    /// `OMP_NUM_THREADS=.. OMP_PLACES=.. OMP_PROC_BIND=close`
    pub openmp: String,
    pub likwid_pin: String,
    pub numactl: String,
    pub srun: String,
    pub taskset: String,
    /// Open MPI, one rank per listed CPU.
    pub mpirun: String,
    /// GNU libgomp (gcc builds).
    #[serde(default)]
    pub gomp: String,
    /// Intel's runtime (icc/icx builds).
    #[serde(default)]
    pub kmp: String,
    /// Explicit huge pages for another program's heap (libhugetlbfs);
    /// empty on THP and base pages.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hugepages: String,
}

/// OMP_PLACES for thread i on `cpus[i]`: interval notation when the CPUs
/// form an arithmetic progression, explicit places otherwise.
pub fn omp_places(cpus: &[usize]) -> String {
    if let [first, second, ..] = cpus {
        let stride = *second as i64 - *first as i64;
        let progression = cpus.windows(2).all(|w| w[1] as i64 - w[0] as i64 == stride);
        if progression && stride > 0 {
            return if stride == 1 {
                format!("{{{first}}}:{}", cpus.len())
            } else {
                format!("{{{first}}}:{}:{stride}", cpus.len())
            };
        }
    }
    cpus.iter()
        .map(|c| format!("{{{c}}}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The reproduction lines for threads on `cpus` under a memory policy;
/// per-array policies have no numactl spelling, which the numactl line
/// then says.
pub fn spell_plan(cpus: &[usize], mem: &MemPolicy, pages: Hugepages) -> Spellings {
    let mut s = spell_policy(cpus, mem);
    if pages.explicit_bytes().is_some() {
        s.hugepages = format!(
            "HUGETLB_MORECORE={} LD_PRELOAD=libhugetlbfs.so   # heap on explicit huge pages (libhugetlbfs)",
            pages.name()
        );
    }
    s
}

fn spell_policy(cpus: &[usize], mem: &MemPolicy) -> Spellings {
    match mem.numactl() {
        Some(memory) => spell(cpus, &memory),
        None => {
            let mut s = spell(cpus, "");
            s.numactl.push_str(if mem.is_uniform() {
                "   # a split has no numactl equivalent"
            } else {
                "   # per-array policies have no numactl equivalent"
            });
            s
        }
    }
}

/// Every line, in the order people read them.
pub fn lines(s: &Spellings) -> Vec<&str> {
    let mut v: Vec<&str> = vec![&s.openmp];
    // Files written before these lines existed lack them.
    v.extend(
        [&s.gomp, &s.kmp]
            .into_iter()
            .filter(|l| !l.is_empty())
            .map(String::as_str),
    );
    v.extend([&s.likwid_pin, &s.numactl, &s.srun, &s.taskset, &s.mpirun].map(String::as_str));
    if !s.hugepages.is_empty() {
        v.push(&s.hugepages);
    }
    v
}

/// `numactl_memory` is the memory part of the numactl line (e.g.
/// `--membind=1`), empty for first touch.
pub fn spell(cpus: &[usize], numactl_memory: &str) -> Spellings {
    let list = format_ranges(cpus);
    let plain: Vec<String> = cpus.iter().map(usize::to_string).collect();
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    let set = format_ranges(&sorted);
    let memory = if numactl_memory.is_empty() {
        String::new()
    } else {
        format!(" {numactl_memory}")
    };
    Spellings {
        openmp: format!(
            "OMP_NUM_THREADS={} OMP_PLACES='{}' OMP_PROC_BIND=close",
            cpus.len(),
            omp_places(cpus)
        ),
        likwid_pin: format!("likwid-pin -c {list}"),
        numactl: format!("numactl --physcpubind={set}{memory}"),
        srun: format!("srun --cpu-bind=map_cpu:{}", plain.join(",")),
        taskset: format!("taskset -c {set}"),
        mpirun: format!(
            "mpirun -np {} --cpu-set {set} --bind-to core --map-by core",
            cpus.len()
        ),
        gomp: format!(
            "OMP_NUM_THREADS={} GOMP_CPU_AFFINITY='{}'",
            cpus.len(),
            plain.join(" ")
        ),
        kmp: format!(
            "OMP_NUM_THREADS={} KMP_AFFINITY=granularity=fine,explicit,proclist=[{}]",
            cpus.len(),
            plain.join(",")
        ),
        hugepages: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progressions_use_interval_notation() {
        assert_eq!(omp_places(&[0, 2, 4, 6]), "{0}:4:2");
        assert_eq!(omp_places(&[4, 5, 6]), "{4}:3");
        assert_eq!(omp_places(&[0, 64, 1]), "{0},{64},{1}");
        assert_eq!(omp_places(&[7]), "{7}");
    }

    #[test]
    fn every_tool_gets_a_line() {
        let s = spell(&[0, 2, 4, 5], "--membind=1");
        assert_eq!(
            s.openmp,
            "OMP_NUM_THREADS=4 OMP_PLACES='{0},{2},{4},{5}' OMP_PROC_BIND=close"
        );
        assert_eq!(s.likwid_pin, "likwid-pin -c 0,2,4-5");
        assert_eq!(s.numactl, "numactl --physcpubind=0,2,4-5 --membind=1");
        assert_eq!(s.srun, "srun --cpu-bind=map_cpu:0,2,4,5");
        assert_eq!(s.taskset, "taskset -c 0,2,4-5");
        assert_eq!(
            s.mpirun,
            "mpirun -np 4 --cpu-set 0,2,4-5 --bind-to core --map-by core"
        );
        assert_eq!(s.gomp, "OMP_NUM_THREADS=4 GOMP_CPU_AFFINITY='0 2 4 5'");
        assert_eq!(
            s.kmp,
            "OMP_NUM_THREADS=4 KMP_AFFINITY=granularity=fine,explicit,proclist=[0,2,4,5]"
        );
        assert_eq!(lines(&s).len(), 8);
    }
}
