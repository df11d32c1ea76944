//! The GPU registry: every vendor's platform, by the name `--backend`
//! takes, and what is looked up in it (the platform of a PCI maker, the
//! fabrics, the probe child). Adding a vendor is one line here.

use super::{cuda, gpu, hip, sim};
use crate::results::targets::GpuMemoryRead;
use crate::topology::pci::GpuVendor;

/// The vendors of the GPU backend, by the name `--backend` takes.
pub const PLATFORMS: &[&'static dyn gpu::Platform] = &[&sim::SIM, &cuda::Cuda, &hip::Hip];

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

/// In a probe process, what the platform asked of it, as its exit code;
/// `None` in every other membw process.
pub fn probe_child() -> Option<i32> {
    let asked = std::env::var(gpu::runtime::PROBE_VARIABLE).ok()?;
    Some(
        (PLATFORMS.iter())
            .find_map(|p| p.probe_child(&asked))
            .unwrap_or(2),
    )
}

/// Every vendor's GPUs' memory counters for `topo`: each platform whose
/// library reads some, or whose maker's GPUs are on the PCI bus of `topo`
/// (then the reason its library cannot read them). Nothing from a
/// platform with neither: a CPU node lists no libraries it lacks.
pub fn gpu_memory(topo: &crate::topology::Topology) -> Vec<GpuMemoryRead> {
    let on_bus = |vendor| topo.gpus.iter().any(|g| g.maker() == Some(vendor));
    (PLATFORMS.iter())
        .filter_map(|p| {
            let expected = p.vendor().is_some_and(on_bus);
            let (devices, not_readable) = match p.memory_counters() {
                Ok(devices) if !devices.is_empty() => (devices, None),
                Ok(_) if expected => (Vec::new(), Some("its library sees none of them".into())),
                Err(why) if expected => (Vec::new(), Some(why)),
                _ => return None,
            };
            Some(GpuMemoryRead {
                backend: p.name().to_string(),
                not_readable,
                devices,
            })
        })
        .collect()
}
