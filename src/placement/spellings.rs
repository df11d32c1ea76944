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
    /// Open MPI, one rank per listed CPU, in ascending order.
    pub mpirun: String,
    /// MPICH's Hydra, rank i on the i-th CPU.
    #[serde(default)]
    pub mpich: String,
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
    /// What the lines cannot say, printed after them (a line itself holds
    /// only what runs when pasted, with a program after it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
            "HUGETLB_MORECORE={} LD_PRELOAD=libhugetlbfs.so",
            pages.name()
        );
        s.notes.push(
            "HUGETLB_MORECORE puts another program's heap on explicit huge pages (libhugetlbfs)"
                .into(),
        );
    }
    s
}

fn spell_policy(cpus: &[usize], mem: &MemPolicy) -> Spellings {
    match mem.numactl() {
        Some(memory) => spell(cpus, &memory),
        None => {
            let mut s = spell(cpus, "");
            s.notes.push(
                if mem.is_uniform() {
                    "numactl places the CPUs only: a split has no numactl equivalent"
                } else {
                    "numactl places the CPUs only: per-array policies have no numactl equivalent"
                }
                .into(),
            );
            s
        }
    }
}

/// The lines for threads of one process (OpenMP's variables, likwid-pin,
/// numactl, taskset), then those for one MPI rank or Slurm task per CPU,
/// each group under its title, in the order people read them.
pub fn groups(s: &Spellings) -> [(&'static str, Vec<&str>); 2] {
    // Files written before some lines existed lack them.
    let mut threads: Vec<&str> = [
        &s.openmp, &s.gomp, &s.kmp, &s.likwid_pin, &s.numactl, &s.taskset,
    ]
    .into_iter()
    .filter(|l| !l.is_empty())
    .map(String::as_str)
    .collect();
    if !s.hugepages.is_empty() {
        threads.push(&s.hugepages);
    }
    let ranks: Vec<&str> = [&s.srun, &s.mpirun, &s.mpich]
        .into_iter()
        .filter(|l| !l.is_empty())
        .map(String::as_str)
        .collect();
    [
        ("threads of one process:", threads),
        ("one rank per CPU (Slurm, Open MPI, MPICH):", ranks),
    ]
}

/// Every line, threads' first.
pub fn lines(s: &Spellings) -> Vec<&str> {
    groups(s).into_iter().flat_map(|(_, l)| l).collect()
}

impl Spellings {
    /// The lines as today's membw writes them, for `cpus`: a file written
    /// by an older membw may hold spellings that no longer run (Open MPI
    /// 4.1 refuses `--cpu-set` with `--map-by core`; a trailing `# ...`
    /// comment swallows the program pasted after it), and what is printed
    /// must run. The rank lines depend on the CPUs alone; comments become
    /// notes.
    pub fn refresh(&mut self, cpus: &[usize]) {
        for line in [&mut self.numactl, &mut self.hugepages] {
            if let Some(at) = line.find("   # ") {
                self.notes.push(line[at + 5..].trim().to_string());
                line.truncate(at);
            }
        }
        if cpus.is_empty() {
            return;
        }
        let today = spell(cpus, "");
        self.srun = today.srun;
        self.mpirun = today.mpirun;
        self.mpich = today.mpich;
    }
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
        srun: format!(
            "srun -n {} --cpu-bind=map_cpu:{}",
            cpus.len(),
            plain.join(",")
        ),
        taskset: format!("taskset -c {set}"),
        // Open MPI 4.1 binds every rank to the whole of a --cpu-set, and
        // refuses one with --map-by core: a list, one CPU per rank, in
        // ascending order.
        mpirun: format!(
            "mpirun -np {} --cpu-list {} --bind-to cpu-list:ordered",
            cpus.len(),
            sorted
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        // Hydra's own name: a plain mpiexec is Open MPI's on many nodes.
        mpich: format!(
            "mpiexec.hydra -n {} -bind-to user:{}",
            cpus.len(),
            plain.join(",")
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
        notes: Vec::new(),
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
        assert_eq!(s.srun, "srun -n 4 --cpu-bind=map_cpu:0,2,4,5");
        assert_eq!(s.taskset, "taskset -c 0,2,4-5");
        assert_eq!(
            s.mpirun,
            "mpirun -np 4 --cpu-list 0,2,4,5 --bind-to cpu-list:ordered"
        );
        assert_eq!(s.mpich, "mpiexec.hydra -n 4 -bind-to user:0,2,4,5");
        assert_eq!(s.gomp, "OMP_NUM_THREADS=4 GOMP_CPU_AFFINITY='0 2 4 5'");
        assert_eq!(
            s.kmp,
            "OMP_NUM_THREADS=4 KMP_AFFINITY=granularity=fine,explicit,proclist=[0,2,4,5]"
        );
        assert_eq!(lines(&s).len(), 9);
        let [threads, ranks] = groups(&s);
        assert_eq!((threads.1.len(), ranks.1.len()), (6, 3));
    }
}
