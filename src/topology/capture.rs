//! `membw topo --capture`: copies the files membw reads from this machine
//! into a tree that `--sysroot` (and the tests) can read back.

use std::fs;
use std::io;
use std::path::Path;

/// The files `membw topo` reads, relative to the root, for `--capture`.
/// Directories are walked; missing paths are skipped.
const CAPTURE_PATHS: &[&str] = &[
    "sys/devices/system/cpu/online",
    "sys/devices/system/cpu/possible",
    "sys/devices/system/cpu/present",
    "sys/devices/system/node",
    "sys/kernel/mm/transparent_hugepage/enabled",
    "sys/devices/system/cpu/intel_pstate/no_turbo",
    "sys/devices/system/cpu/cpufreq/boost",
    "sys/devices/system/cpu/amd_pstate/cpb_boost",
    "sys/firmware/dmi/entries",
    "sys/class/dmi/id/sys_vendor",
    "sys/devices/system/edac/mc",
    "proc/uptime",
    "proc/cpuinfo",
    "proc/meminfo",
    "proc/self/status",
    "proc/self/cgroup",
];

/// Copies the topology-relevant files of `source` (normally `/`) into `dest`.
/// Returns the number of files written.
pub fn capture(source: &Path, dest: &Path) -> io::Result<usize> {
    let mut count = 0;
    for rel in CAPTURE_PATHS {
        count += copy_tree(source, dest, Path::new(rel), 0)?;
    }
    // Per-CPU topology and caches: only the files the reader uses.
    let cpu_dir = source.join("sys/devices/system/cpu");
    for entry in fs::read_dir(&cpu_dir)?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name
            .strip_prefix("cpu")
            .is_none_or(|n| n.parse::<usize>().is_err())
        {
            continue;
        }
        let rel = Path::new("sys/devices/system/cpu").join(&*name);
        count += copy_tree(source, dest, &rel.join("topology"), 0)?;
        count += copy_tree(source, dest, &rel.join("cache"), 0)?;
        for file in ["scaling_governor", "scaling_driver", "cpuinfo_max_freq"] {
            count += copy_tree(source, dest, &rel.join("cpufreq").join(file), 0)?;
        }
    }
    // The GPUs' PCI functions: the few files `pci::read` uses, written as
    // directories where the bus has symlinks.
    let pci = Path::new(super::pci::PCI_DIR);
    for entry in fs::read_dir(source.join(pci))
        .into_iter()
        .flatten()
        .flatten()
    {
        let function = pci.join(entry.file_name());
        let id = |name: &str| {
            let text = fs::read_to_string(source.join(&function).join(name)).ok()?;
            u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
        };
        let (Some(vendor), Some(class)) = (id("vendor"), id("class")) else {
            continue;
        };
        if super::pci::GpuVendor::of(vendor as u16, class >> 8).is_none() {
            continue;
        }
        for file in super::pci::CAPTURED_FILES {
            if let Ok(bytes) = fs::read(source.join(&function).join(file)) {
                super::files::write_creating(&dest.join(&function).join(file), &bytes)?;
                count += 1;
            }
        }
    }
    Ok(count)
}

/// Copies regular files under `rel`, following no symlinks out of the tree,
/// at most a few levels deep (sysfs is full of loops).
fn copy_tree(source: &Path, dest: &Path, rel: &Path, depth: usize) -> io::Result<usize> {
    let from = source.join(rel);
    let Ok(meta) = fs::symlink_metadata(&from) else {
        return Ok(0);
    };
    if meta.is_file() {
        // Some sysfs files refuse reads (write-only or privileged): skip them.
        let Ok(bytes) = fs::read(&from) else {
            return Ok(0);
        };
        super::files::write_creating(&dest.join(rel), &bytes)?;
        return Ok(1);
    }
    if !meta.is_dir() || depth > 3 {
        return Ok(0);
    }
    let mut count = 0;
    for entry in fs::read_dir(&from)?.flatten() {
        let name = entry.file_name();
        let keep = |n: &str| {
            // Under node/: node dirs and their lists; skip per-node device links.
            !matches!(
                n,
                "power" | "subsystem" | "uevent" | "hugepages" | "memory_side_cache"
            ) && !n.starts_with("memory")
                && !n.starts_with("access")
        };
        if keep(&name.to_string_lossy()) {
            count += copy_tree(source, dest, &rel.join(&name), depth + 1)?;
        }
    }
    Ok(count)
}
