//! Device sets: `--backend cuda:all` or `cuda:0-3,6`, one backend per
//! device of a GPU platform, in the order written.

use super::registry::PLATFORMS;
use super::{Backend, by_name, gpu};

/// The backends of a set [`platform_set`] found: each index was found
/// among the devices the platform counted, so the driver is not asked
/// again.
pub fn set_backends((platform, indices): PlatformSet) -> Vec<Box<dyn Backend>> {
    (indices.into_iter())
        .map(|i| gpu::GpuBackend::counted(platform, i))
        .collect()
}

/// A GPU platform and indices of its devices.
pub type PlatformSet = (&'static dyn gpu::Platform, Vec<u32>);

/// The GPU platform and device indices `spec` names (`cuda:all`,
/// `sim:0-3,6`, `cuda:2`, `cuda`), or None for the host's backends (whose
/// errors [`by_name`] words).
pub fn platform_set(spec: &str) -> std::result::Result<Option<PlatformSet>, String> {
    let (name, selection) = spec.split_once(':').unwrap_or((spec, "0"));
    let Some(&platform) = PLATFORMS.iter().find(|p| p.name() == name) else {
        return by_name(spec).map(|_| None);
    };
    if let Ok(index) = selection.parse::<u32>() {
        // One device, checked as GpuBackend::make checks it (no backend
        // made here to be thrown away).
        let count = platform.count()?;
        if index >= count {
            return Err(platform.missing(index, count));
        }
        return Ok(Some((platform, vec![index])));
    }
    // A list that is no list is named before the platform is asked for
    // its devices (on a node without the vendor's runtime too).
    let listed = match selection {
        "all" => None,
        list => Some(crate::topology::cpulist::parse_list(list).map_err(|e| {
            format!("'{list}': {e} (a device set is all, N, or a list such as 0-3,6)")
        })?),
    };
    let count = platform.count()?;
    let indices: Vec<u32> = match listed {
        None => (0..count).collect(),
        Some(ids) => {
            let mut seen = std::collections::BTreeSet::new();
            let mut indices = Vec::new();
            for id in ids {
                let index = u32::try_from(id).unwrap_or(u32::MAX);
                if index >= count {
                    return Err(platform.missing(index, count));
                }
                if seen.insert(index) {
                    indices.push(index);
                }
            }
            indices
        }
    };
    if indices.is_empty() {
        return Err(format!("'{selection}' names no device"));
    }
    Ok(Some((platform, indices)))
}

/// The backends of one rank of a multi-rank run: a device backend named
/// without an index gives each rank of a node its own device by its local
/// rank (one rank per GPU); a device set (`cuda:all`, `cuda:0-7`) is
/// shared out among the node's ranks in equal runs, in the order written
/// (one rank drives several GPUs); anything else is `by_name`'s.
pub fn for_rank(
    spec: &str,
    local_rank: Option<usize>,
    local_size: Option<usize>,
) -> std::result::Result<Vec<Box<dyn Backend>>, String> {
    if let Some((platform, indices)) = platform_set(spec)?.filter(|(_, d)| d.len() > 1) {
        let mine = share_of_set(&indices, local_rank, local_size)?;
        return Ok((mine.iter())
            .map(|&i| gpu::GpuBackend::counted(platform, i))
            .collect());
    }
    match local_rank {
        Some(l) if !spec.contains(':') && !["cpu", "portable"].contains(&spec) => {
            by_name(&format!("{spec}:{l}")).map_err(|e| format!("local rank {l}: {e}"))
        }
        _ => by_name(spec),
    }
    .map(|b| vec![b])
}

/// Local rank `rank`'s run of `devices` among the node's `size` ranks.
pub(super) fn share_of_set(
    devices: &[u32],
    rank: Option<usize>,
    size: Option<usize>,
) -> std::result::Result<Vec<u32>, String> {
    let (Some(rank), Some(size)) = (rank, size) else {
        return Err("a device set is shared among a node's ranks, and the launcher does not say how many ranks this node has (or its nodes have different counts): give each rank one device (cuda)".into());
    };
    if size == 0 || !devices.len().is_multiple_of(size) || rank >= size {
        return Err(format!(
            "{} devices do not share out evenly among the node's {size} ranks: give a set of a multiple of {size}",
            devices.len()
        ));
    }
    let each = devices.len() / size;
    Ok(devices[rank * each..(rank + 1) * each].to_vec())
}
