//! Where the threads could run, as the kernel reports it after the team
//! started: a label says what happened, not what membw asked. Threads
//! membw left unpinned may still be bound, each to one CPU, by a wrapper
//! that intercepts thread creation (likwid-pin) or a process mask of one
//! CPU (numactl, taskset, a cpuset); the header and the record say who.

/// Who bound threads that membw did not pin, where the kernel reports
/// every one of them on a single CPU: `likwid-pin` where its preload
/// library is in the environment, else `another tool`. `None` where membw
/// pinned them, or any thread may run on several CPUs (it was free), or
/// no thread's affinity could be read.
/// `bound_to`: each thread's one CPU, where the kernel reports one.
pub fn bound_by(pinned: bool, bound_to: &[Option<usize>]) -> Option<String> {
    if pinned || bound_to.is_empty() {
        return None;
    }
    let each_on_one = bound_to.iter().all(Option::is_some);
    each_on_one.then(|| wrapper(|name| std::env::var(name).ok()).to_string())
}

/// The wrapper the environment names: likwid-pin leaves `LIKWID_PIN` and
/// its pthread wrapper in `LD_PRELOAD`; srun binding a task to CPUs
/// (`--cpu-bind=cores`, `map_cpu:...`) leaves `SLURM_CPU_BIND_TYPE`.
fn wrapper(var: impl Fn(&str) -> Option<String>) -> &'static str {
    let preload = var("LD_PRELOAD").unwrap_or_default();
    let slurm = var("SLURM_CPU_BIND_TYPE").unwrap_or_default();
    if var("LIKWID_PIN").is_some() || preload.contains("likwidpin") {
        "likwid-pin"
    } else if !slurm.is_empty() && !slurm.starts_with("none") {
        "Slurm (srun --cpu-bind)"
    } else {
        "another tool (a wrapper, or numactl/taskset/a cpuset of one CPU)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_left_free_or_pinned_by_membw_are_not_said_to_be_bound_by_another() {
        let one_each = [Some(1), Some(0)];
        assert!(bound_by(true, &one_each).is_none());
        assert!(bound_by(false, &one_each).is_some());
        // One thread free over two CPUs (or unread): not bound by anyone.
        assert!(bound_by(false, &[Some(1), None]).is_none());
        assert!(bound_by(false, &[]).is_none());
    }

    #[test]
    fn likwid_pin_is_named_by_what_it_leaves_in_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                (pairs.iter())
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(wrapper(env(&[("LIKWID_PIN", "1,0")])), "likwid-pin");
        const PRELOAD: &[(&str, &str)] = &[(
            "LD_PRELOAD",
            "/usr/lib/x86_64-linux-gnu/liblikwidpin.so.5.2",
        )];
        assert_eq!(wrapper(env(PRELOAD)), "likwid-pin");
        assert!(wrapper(env(&[])).starts_with("another tool"));
        let srun: &[(&str, &str)] = &[("SLURM_CPU_BIND_TYPE", "mask_cpu:")];
        assert_eq!(wrapper(env(srun)), "Slurm (srun --cpu-bind)");
        let unbound: &[(&str, &str)] = &[("SLURM_CPU_BIND_TYPE", "none")];
        assert!(wrapper(env(unbound)).starts_with("another tool"));
    }
}
