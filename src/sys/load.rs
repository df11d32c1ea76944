//! What else ran on the CPUs: each CPU's busy, idle and steal time from
//! `/proc/stat`, and this process's own threads' CPU time and last CPU from
//! `/proc/self/task/*/stat`. Both count in the kernel's clock ticks
//! (USER_HZ), charged at the same tick, so on a CPU that runs one of
//! membw's threads its busy time less that thread's time is other work.

/// One CPU's counters from a `cpuN` line of `/proc/stat`, in ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub cpu: usize,
    /// user + nice + system + irq + softirq (guest time is inside user).
    pub busy: u64,
    /// idle + iowait.
    pub idle: u64,
    /// Time the hypervisor ran something else while this virtual CPU wanted to run.
    pub steal: u64,
}

impl CpuTicks {
    /// Every tick this CPU accounted for.
    pub fn total(&self) -> u64 {
        self.busy + self.idle + self.steal
    }
}

/// One thread of this process: its CPU time (utime + stime) and the CPU it
/// last ran on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskTicks {
    pub tid: u32,
    pub ticks: u64,
    pub cpu: usize,
}

/// The per-CPU lines of `/proc/stat` text (the `cpu` total line is left out).
pub fn parse_proc_stat(text: &str) -> Vec<CpuTicks> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_ascii_whitespace();
            let cpu = words.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = words.map_while(|w| w.parse().ok()).collect();
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            Some(CpuTicks {
                cpu,
                busy: at(0) + at(1) + at(2) + at(5) + at(6),
                idle: at(3) + at(4),
                steal: at(7),
            })
        })
        .collect()
}

/// One `/proc/<pid>/task/<tid>/stat` line: utime and stime (fields 14 and
/// 15) and processor (field 39). The command name (field 2) may hold
/// spaces and parentheses, so fields are counted after its last `)`.
pub fn parse_task_stat(tid: u32, text: &str) -> Option<TaskTicks> {
    let rest = &text[text.rfind(')')? + 1..];
    // rest starts at field 3 (state): field n is rest's word n - 3.
    let words: Vec<&str> = rest.split_ascii_whitespace().collect();
    let field = |n: usize| words.get(n - 3)?.parse::<u64>().ok();
    Some(TaskTicks {
        tid,
        ticks: field(14)? + field(15)?,
        cpu: usize::try_from(field(39)?).ok()?,
    })
}

/// Every CPU's counters now; empty where `/proc/stat` cannot be read.
pub fn cpu_ticks() -> Vec<CpuTicks> {
    std::fs::read_to_string("/proc/stat")
        .map(|t| parse_proc_stat(&t))
        .unwrap_or_default()
}

/// This process's threads now (threads that have ended are gone).
pub fn own_task_ticks() -> Vec<TaskTicks> {
    task_ticks(std::path::Path::new("/proc/self/task"))
}

/// The threads of a process's `task` directory now.
fn task_ticks(tasks: &std::path::Path) -> Vec<TaskTicks> {
    let Ok(dir) = std::fs::read_dir(tasks) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| {
            let tid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let text = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            parse_task_stat(tid, &text)
        })
        .collect()
}

/// The threads of the other ranks a launcher started beside this process
/// on this node: processes of the same program (`/proc/PID/exe`) with the
/// same parent (the launcher's daemon: prted, orted, hydra_pmi_proxy,
/// slurmstepd). A rank's trust tells their time apart from other work.
/// Empty outside a launch of several ranks (two membw runs from one shell
/// are other work to each other).
pub fn sibling_task_ticks() -> Vec<TaskTicks> {
    if !in_launch_group() {
        return Vec::new();
    }
    let (me, parent) = (std::process::id(), std::os::unix::process::parent_id());
    let Ok(exe) = std::fs::read_link("/proc/self/exe") else {
        return Vec::new();
    };
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut ticks = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        let ppid = (stat.rfind(')').map(|i| &stat[i + 1..]))
            .and_then(|rest| rest.split_ascii_whitespace().nth(1)?.parse::<u32>().ok());
        if pid == me
            || ppid != Some(parent)
            || std::fs::read_link(path.join("exe")).ok() != Some(exe.clone())
        {
            continue;
        }
        ticks.extend(task_ticks(&path.join("task")));
    }
    ticks
}

/// Whether a launcher's daemon started this process (Open MPI's prted or
/// orted, MPICH's hydra_pmi_proxy, Slurm's slurmstepd, or mpirun itself),
/// which starts a node's ranks as its children.
fn in_launch_group() -> bool {
    const DAEMONS: [&str; 7] = [
        "prted", "orted", "hydra_pmi_proxy", "slurmstepd", "mpirun", "mpiexec", "prterun",
    ];
    static GROUP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *GROUP.get_or_init(|| {
        let parent = std::os::unix::process::parent_id();
        let comm = std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
        DAEMONS.iter().any(|d| comm.trim().starts_with(d))
    })
}

/// One of this process's threads as the scheduler has moved it: its name,
/// the CPU it last ran on, and how often the kernel has moved it between
/// CPUs so far (`se.nr_migrations` of `/proc/self/task/TID/sched`, where
/// the kernel keeps it: most distributions' do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskMoves {
    pub tid: u32,
    pub name: String,
    pub cpu: usize,
    pub migrations: Option<u64>,
}

/// Every thread of this process, as the scheduler has moved it.
pub fn own_task_moves() -> Vec<TaskMoves> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| {
            let tid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let cpu = parse_task_stat(tid, &stat)?.cpu;
            let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            let sched = std::fs::read_to_string(entry.path().join("sched")).unwrap_or_default();
            Some(TaskMoves {
                tid,
                name: name.trim().to_string(),
                cpu,
                migrations: parse_migrations(&sched),
            })
        })
        .collect()
}

/// `se.nr_migrations : 12` of a sched file.
fn parse_migrations(sched: &str) -> Option<u64> {
    sched.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == "se.nr_migrations").then(|| value.trim().parse().ok())?
    })
}

/// A child's CPU time so far (utime + stime of all its threads), in ticks.
pub fn process_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_task_stat(pid, &text).map(|t| t.ticks)
}

/// Clock ticks per second of the counters above.
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sched_file_gives_the_migrations() {
        let text = "membw-0 (1234, #threads: 3)\n---\nse.exec_start : 1.5\nse.nr_migrations                             :                   12\nnr_switches : 40\n";
        assert_eq!(parse_migrations(text), Some(12));
        assert_eq!(parse_migrations("nr_switches : 40\n"), None);
        // This thread's own, on a kernel that keeps them.
        let mine = own_task_moves();
        assert!(!mine.is_empty());
    }

    #[test]
    fn proc_stat_lines_become_busy_idle_and_steal() {
        let text = "cpu  10 0 5 100 0 0 0 0 0 0\n\
                    cpu0 4 1 2 50 3 1 1 7 9 0\n\
                    cpu1 6 0 3 40 0 0 0 0 0 0\n\
                    intr 123\n";
        let cpus = parse_proc_stat(text);
        assert_eq!(cpus.len(), 2);
        assert_eq!(
            cpus[0],
            CpuTicks {
                cpu: 0,
                busy: 4 + 1 + 2 + 1 + 1,
                idle: 53,
                steal: 7
            }
        );
        assert_eq!(cpus[1].total(), 49);
    }

    #[test]
    fn a_task_name_with_spaces_and_parentheses_is_skipped_over() {
        let mut fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        fields[14 - 3] = "120".into();
        fields[15 - 3] = "30".into();
        fields[39 - 3] = "1".into();
        let text = format!("4242 (a (b) c) {}", fields.join(" "));
        let t = parse_task_stat(4242, &text).unwrap();
        assert_eq!((t.ticks, t.cpu), (150, 1));
        assert_eq!(parse_task_stat(1, "garbage"), None);
    }

    #[test]
    fn the_live_files_parse() {
        assert!(!cpu_ticks().is_empty());
        let me = own_task_ticks();
        assert!(!me.is_empty());
        assert!(ticks_per_second() > 0.0);
    }
}
