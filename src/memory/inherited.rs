//! The memory policy membw starts with. `numactl --membind 1 membw run`
//! hands membw a bind policy that its default (`local`: first touch, under
//! the process's policy) would follow without saying so; membw reads it,
//! measures under it, and names it.

/// Where an inherited policy comes from, as headers say it.
pub const SOURCE: &str = "inherited (numactl or the parent process)";

/// The process's own policy in `--mem`'s words, when it is not the
/// default: `bind:1`, `interleave:0-3`, `preferred:2`.
pub fn policy() -> Option<String> {
    let (mode, nodes) = crate::sys::process_policy().ok()?;
    let list = crate::topology::cpulist::format_ranges(&nodes);
    match (mode, nodes.as_slice()) {
        (_, []) => None,
        // preferred, or preferred-many with one node
        (1, [one]) | (5, [one]) => Some(format!("preferred:{one}")),
        (2, _) => Some(format!("bind:{list}")),
        (3, _) => Some(format!("interleave:{list}")),
        (6, _) => Some(format!("weighted-interleave:{list}")),
        _ => None,
    }
}

/// The nodes a cpuset confines this process's memory to, when it leaves
/// out some node that has memory.
pub fn cpuset_mems(topo: &crate::topology::Topology) -> Option<String> {
    let with_memory: Vec<usize> = topo
        .nodes
        .iter()
        .filter(|n| n.mem_total.is_some_and(|b| b.0 > 0))
        .map(|n| n.id)
        .collect();
    with_memory
        .iter()
        .any(|n| !topo.allowed_mems.contains(*n))
        .then(|| topo.allowed_mems.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cpuset_that_leaves_out_a_memory_node_is_named() {
        let (_dir, mut topo) = crate::topology::fixture::machine("xeon-e5-2680v3-2s");
        assert_eq!(super::cpuset_mems(&topo), None);
        topo.allowed_mems = crate::topology::cpulist::IdSet::new(vec![1]);
        assert_eq!(super::cpuset_mems(&topo).as_deref(), Some("1"));
    }

    #[test]
    fn the_test_process_has_the_policy_its_runner_gave_it() {
        // Under `numactl --membind 0 cargo test` this reads bind:0; tests
        // run under the default policy otherwise.
        let (mode, _) = match crate::sys::process_policy() {
            Ok(p) => p,
            // qemu-user (the aarch64 leg of CI) does not implement it.
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => return,
            Err(e) => panic!("get_mempolicy: {e}"),
        };
        assert!((0..=6).contains(&mode), "{mode}");
        assert_eq!(super::policy().is_none(), matches!(mode, 0 | 4));
    }
}
