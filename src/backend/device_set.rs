//! Device sets: `--backend cuda:all` or `cuda:0-3,6`, one backend per
//! device of a GPU platform, in the order written.

use super::{Backend, by_name, cuda, gpu, hip, sim};
use crate::topology::pci::GpuVendor;

/// The vendors of the GPU backend, by the name `--backend` takes.
pub const PLATFORMS: &[&'static dyn gpu::Platform] = &[&sim::SIM, &cuda::CUDA, &hip::HIP];

/// Every platform's fabric, each once, in the registry's order.
pub fn fabric_kinds() -> Vec<&'static gpu::FabricKind> {
    let mut kinds: Vec<&'static gpu::FabricKind> = Vec::new();
    for kind in PLATFORMS.iter().filter_map(|p| p.fabric()) {
        if !kinds.iter().any(|k| k.name == kind.name) {
            kinds.push(kind);
        }
    }
    kinds
}

/// The fabric a device's facts name, as its platform describes it.
pub fn fabric_kind(name: &str) -> Option<&'static gpu::FabricKind> {
    fabric_kinds().into_iter().find(|k| k.name == name)
}

/// The platform that drives GPUs of `vendor` on the PCI bus, if any.
pub fn platform_for(vendor: GpuVendor) -> Option<&'static dyn gpu::Platform> {
    PLATFORMS
        .iter()
        .copied()
        .find(|p| p.vendor() == Some(vendor))
}

/// The backends `spec` names, one per device: a device set (`cuda:all`,
/// `sim:0-3,6`, the CPU-list grammar) in the order written, or the one
/// backend [`by_name`] gives.
pub fn set_by_name(spec: &str) -> std::result::Result<Vec<Box<dyn Backend>>, String> {
    match platform_set(spec)? {
        Some((platform, indices)) => indices
            .into_iter()
            .map(|i| gpu::GpuBackend::make(platform, Some(i)))
            .collect(),
        None => by_name(spec).map(|b| vec![b]),
    }
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
    if selection.parse::<u32>().is_ok() {
        // One device, checked as by_name checks it.
        by_name(spec)?;
        return Ok(Some((platform, vec![selection.parse().unwrap_or(0)])));
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

/// The variable that makes a membw process a probe of a vendor's runtime
/// (`NAME:WHAT`, by its platform's name): a child the platform starts to
/// try a call that may crash, before it makes that call in membw itself.
pub const PROBE_VARIABLE: &str = "MEMBW_PROBE";

/// In a probe process, what the platform asked of it, as its exit code;
/// `None` in every other membw process.
pub fn probe_child() -> Option<i32> {
    let asked = std::env::var(PROBE_VARIABLE).ok()?;
    Some(
        (PLATFORMS.iter())
            .find_map(|p| p.probe_child(&asked))
            .unwrap_or(2),
    )
}
