//! What this process's cgroups say: the tightest memory limit on its path,
//! and how long CPU limits have throttled it.

use super::files::Reader;
use crate::units::Bytes;
use std::path::{Path, PathBuf};

/// The tightest memory limit on this process's cgroup path (v2 or v1), and
/// the usage of the cgroup holding it.
pub(super) fn read_cgroup_memory(r: &Reader) -> (Option<Bytes>, Option<Bytes>) {
    let Some(text) = r.text("proc/self/cgroup") else {
        return (None, None);
    };
    let mut best: Option<(Bytes, Option<Bytes>)> = None;
    let mut consider = |limit: Option<u64>, usage: Option<u64>| {
        // v1 reports "no limit" as a number near 2^63.
        if let Some(l) = limit.filter(|&l| l < (1 << 62))
            && best.is_none_or(|(b, _)| l < b.0)
        {
            best = Some((Bytes(l), usage.map(Bytes)));
        }
    };
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (base, limit_file, usage_file) = if controllers.is_empty() {
            ("sys/fs/cgroup", "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                "sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        // Walk from our cgroup up to the root: any ancestor's limit applies.
        let mut dir = PathBuf::from(path.trim_start_matches('/'));
        loop {
            let d = Path::new(base).join(&dir);
            let d = d.to_string_lossy();
            consider(
                r.number(&format!("{d}/{limit_file}")),
                r.number(&format!("{d}/{usage_file}")),
            );
            if !dir.pop() {
                break;
            }
        }
    }
    match best {
        Some((l, u)) => (Some(l), u),
        None => (None, None),
    }
}

/// CPU time the cgroup limits (`cpu.max`, v1 `cpu.cfs_quota_us`) have
/// throttled this process's cgroup and its ancestors so far: a count that
/// grows while a check runs means its threads were stopped, whatever the
/// memory did. `None` where no cgroup says.
pub fn cpu_throttled(root: &Path) -> Option<std::time::Duration> {
    let r = Reader { root };
    let text = r.text("proc/self/cgroup")?;
    let mut total_ns: Option<u64> = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        // v2 counts microseconds, v1 nanoseconds.
        let (base, field, ns_per_unit) = if controllers.is_empty() {
            ("sys/fs/cgroup", "throttled_usec", 1000)
        } else if controllers.split(',').any(|c| c == "cpu") {
            let v1 = if r.path("sys/fs/cgroup/cpu,cpuacct").is_dir() {
                "sys/fs/cgroup/cpu,cpuacct"
            } else {
                "sys/fs/cgroup/cpu"
            };
            (v1, "throttled_time", 1)
        } else {
            continue;
        };
        let mut dir = PathBuf::from(path.trim_start_matches('/'));
        loop {
            let stat = Path::new(base).join(&dir).join("cpu.stat");
            if let Some(text) = r.text(&stat.to_string_lossy()) {
                let value = text.lines().find_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    (k == field).then(|| v.trim().parse::<u64>().ok())?
                });
                if let Some(v) = value {
                    *total_ns.get_or_insert(0) += v.saturating_mul(ns_per_unit);
                }
            }
            if !dir.pop() {
                break;
            }
        }
    }
    total_ns.map(std::time::Duration::from_nanos)
}
