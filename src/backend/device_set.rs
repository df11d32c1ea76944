//! Device sets: `--backend cuda:all` or `cuda:0-3,6`, one backend per
//! device of a GPU platform, in the order written.

use super::spec::{BackendSpec, DeviceSelection, SpecTarget};
use super::{BACKENDS, Backend, gpu};

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

/// The backend of one device or of the host's memory that `spec` names,
/// or why there is none (a set, where one is measured).
pub fn make_one(spec: &BackendSpec) -> std::result::Result<Box<dyn Backend>, String> {
    match (&spec.target, spec.platform()) {
        (SpecTarget::Host(name), _) => {
            let make = (BACKENDS.iter().find(|(n, _)| n == name))
                .map(|(_, make)| make)
                .ok_or_else(|| format!("unknown backend '{name}'"))?;
            make(None)
        }
        (SpecTarget::Gpu { .. }, Some((platform, DeviceSelection::Default))) => {
            gpu::GpuBackend::make(platform, None)
        }
        (SpecTarget::Gpu { .. }, Some((platform, &DeviceSelection::One(index)))) => {
            gpu::GpuBackend::make(platform, Some(index))
        }
        (SpecTarget::Gpu { platform, .. }, _) => Err(format!(
            "'{spec}' names a set of devices, and this command measures one: write {platform}:0 (run, baseline and check take sets)"
        )),
    }
}

/// The backend `text` names (`sim:1`), parsed and made: for tests and
/// callers that hold the words.
pub fn by_name(text: &str) -> std::result::Result<Box<dyn Backend>, String> {
    make_one(&text.parse()?)
}

/// The GPU platform and device indices `spec` names (`cuda:all`,
/// `sim:0-3,6`, `cuda:2`, `cuda`), each checked against the devices the
/// driver counts; None for the host's backends.
pub fn platform_set(spec: &BackendSpec) -> std::result::Result<Option<PlatformSet>, String> {
    let Some((platform, devices)) = spec.platform() else {
        return Ok(None);
    };
    let count = platform.count()?;
    let indices = match devices {
        DeviceSelection::Default => vec![0],
        &DeviceSelection::One(index) => vec![index],
        DeviceSelection::All => (0..count).collect(),
        DeviceSelection::List(indices) => indices.clone(),
    };
    if let Some(&past) = indices.iter().find(|&&i| i >= count) {
        return Err(platform.missing(past, count));
    }
    if indices.is_empty() {
        return Err(format!("'{spec}' names no device"));
    }
    Ok(Some((platform, indices)))
}

/// The backends of one rank of a multi-rank run: a device backend named
/// without an index gives each rank of a node its own device by its local
/// rank (one rank per GPU); a device set (`cuda:all`, `cuda:0-7`) is
/// shared out among the node's ranks in equal runs, in the order written
/// (one rank drives several GPUs); anything else is [`make_one`]'s.
pub fn for_rank(
    spec: &BackendSpec,
    local_rank: Option<usize>,
    local_size: Option<usize>,
) -> std::result::Result<Vec<Box<dyn Backend>>, String> {
    if let Some((platform, indices)) = platform_set(spec)?.filter(|(_, d)| d.len() > 1) {
        let mine = share_of_set(&indices, local_rank, local_size)?;
        return Ok((mine.iter())
            .map(|&i| gpu::GpuBackend::counted(platform, i))
            .collect());
    }
    match (spec.platform(), local_rank) {
        (Some((platform, DeviceSelection::Default)), Some(l)) => {
            let index = u32::try_from(l).unwrap_or(u32::MAX);
            gpu::GpuBackend::make(platform, Some(index)).map_err(|e| format!("local rank {l}: {e}"))
        }
        _ => make_one(spec),
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
