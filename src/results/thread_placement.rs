//! Where each CPU thread of a run was, as membw planned it and as the
//! kernel reported it back: the CPU it was pinned to, the CPU it was found
//! on, the CPUs its affinity allowed, and, unpinned, how the scheduler
//! moved it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadPlacement {
    pub thread: usize,
    pub cpu: usize,
    /// Where the thread found itself after pinning (sched_getcpu).
    pub observed_cpu: Option<usize>,
    /// An unbound thread (`--no-pin`): how often the kernel moved it to
    /// another CPU while the repetitions ran (absent where it was pinned,
    /// or the kernel keeps no count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<u64>,
    /// An unbound thread: the CPU it was on as the repetitions ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_cpu: Option<usize>,
    /// The CPUs the kernel let the thread run on, read back after the
    /// team started (sched_getaffinity), as a CPU list: one CPU where
    /// membw or a wrapper (likwid-pin) pinned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
}

impl ThreadPlacement {
    /// The one CPU the kernel let it run on, where it was bound to one.
    pub fn bound_to(&self) -> Option<usize> {
        self.affinity.as_deref()?.trim().parse().ok()
    }

    /// The CPU to name it by: where it was bound (by membw or another
    /// tool), else where it last ran, else the CPU planned for it.
    pub fn named_cpu(&self, pinned: bool) -> usize {
        match pinned {
            true => self.cpu,
            false => (self.bound_to().or(self.last_cpu).or(self.observed_cpu)).unwrap_or(self.cpu),
        }
    }

    /// Thread `i` on `cpus[i]`, found where `observed(i)` says.
    pub fn list(cpus: &[usize], observed: impl Fn(usize) -> Option<usize>) -> Vec<Self> {
        cpus.iter()
            .enumerate()
            .map(|(thread, &cpu)| ThreadPlacement {
                thread,
                cpu,
                observed_cpu: observed(thread),
                migrations: None,
                last_cpu: None,
                affinity: None,
            })
            .collect()
    }
}
