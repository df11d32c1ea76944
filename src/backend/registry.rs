//! The GPU registry: every vendor's platform, by the name `--backend`
//! takes, and what is looked up in it (the platform of a PCI maker, the
//! fabrics, the probe child). Adding a vendor is one line here.

use super::{cuda, gpu, hip, sim};
use crate::results::targets::{GpuMemoryRead, GpuReachRead};
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

/// Each GPU maker a platform drives, with the `--backend` that names it.
pub fn gpu_drivers() -> Vec<(GpuVendor, &'static str)> {
    (PLATFORMS.iter())
        .filter_map(|p| Some((p.vendor()?, p.name())))
        .collect()
}

/// The platform that drives GPUs of `vendor` on the PCI bus, if any.
pub fn platform_for(vendor: GpuVendor) -> Option<&'static dyn gpu::Platform> {
    PLATFORMS
        .iter()
        .copied()
        .find(|p| p.vendor() == Some(vendor))
}

/// The GPUs a node check measures beside the CPUs: every device of the
/// first platform (in the registry's order) that loads and sees one; the
/// simulated device's where `simulated` (it stands for them all). With
/// them, one line per group of the PCI bus's GPUs that it leaves out: a
/// second maker's, a maker whose runtime does not load or sees none, a
/// maker membw has no backend for.
pub fn node_gpus(
    topo: &crate::topology::Topology,
    simulated: bool,
) -> (Option<super::PlatformSet>, Vec<String>) {
    let on_bus = |vendor| {
        (topo.gpus.iter())
            .filter(|g| g.maker() == Some(vendor))
            .count()
    };
    let the = |n: usize, maker: &str| match n {
        1 => format!("the {maker} GPU on its PCI bus"),
        _ => format!("the {n} {maker} GPUs on its PCI bus"),
    };
    let mut found: Option<super::PlatformSet> = None;
    let mut left_out = Vec::new();
    for p in PLATFORMS
        .iter()
        .filter(|p| (p.vendor().is_none()) == simulated)
    {
        let there = p.vendor().map_or(0, on_bus);
        let maker = p.vendor().map_or("", GpuVendor::name);
        let all = super::BackendSpec::all_of(*p);
        if found.is_some() {
            if there > 0 {
                left_out.push(format!(
                    "{}: --backend {all} checks them",
                    the(there, maker)
                ));
            }
            continue;
        }
        match super::platform_set(&all) {
            Ok(Some(set)) if !set.1.is_empty() => found = Some(set),
            Ok(_) if there > 0 => left_out.push(format!(
                "{}: {} sees none",
                the(there, maker),
                p.id().counter
            )),
            Err(why) if there > 0 => left_out.push(format!("{}: {why}", the(there, maker))),
            _ => {}
        }
    }
    // A maker no platform drives (Intel's GPUs): named, never measured.
    // The simulated node stands for every GPU.
    let undriven = GpuVendor::ALL
        .into_iter()
        .filter(|&m| platform_for(m).is_none());
    for maker in undriven.filter(|_| !simulated) {
        let there = on_bus(maker);
        if there > 0 {
            left_out.push(format!(
                "{}: membw has no backend for them",
                the(there, maker.name())
            ));
        }
    }
    (found, left_out)
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
    read_each(topo, |p| p.memory_counters())
        .map(|(backend, not_readable, devices)| GpuMemoryRead {
            backend,
            not_readable,
            devices,
        })
        .collect()
}

/// What memory every vendor's GPUs reach, for `topo`, as their drivers
/// say: from the same platforms as [`gpu_memory`].
pub fn gpu_reach(topo: &crate::topology::Topology) -> Vec<GpuReachRead> {
    read_each(topo, |p| p.reach())
        .map(|(backend, not_readable, devices)| GpuReachRead {
            backend,
            not_readable,
            devices,
        })
        .collect()
}

/// What `read` reads of each platform's GPUs: the backend, why it could
/// not, what it read; from each platform whose library reads some, or
/// whose maker's GPUs are on the PCI bus of `topo`.
fn read_each<'a, T: 'a>(
    topo: &'a crate::topology::Topology,
    read: impl Fn(&dyn gpu::Platform) -> Result<Vec<T>, String> + 'a,
) -> impl Iterator<Item = (String, Option<String>, Vec<T>)> + 'a {
    let on_bus = |vendor| topo.gpus.iter().any(|g| g.maker() == Some(vendor));
    (PLATFORMS.iter()).filter_map(move |p| {
        let expected = p.vendor().is_some_and(on_bus);
        let (devices, not_readable) = match read(*p) {
            Ok(devices) if !devices.is_empty() => (devices, None),
            Ok(_) if expected => (Vec::new(), Some("its library sees none of them".into())),
            Err(why) if expected => (Vec::new(), Some(why)),
            _ => return None,
        };
        Some((p.name().to_string(), not_readable, devices))
    })
}
