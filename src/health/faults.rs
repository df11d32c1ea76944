//! The node's hardware faults beside its rates: each is unhealthy
//! whatever was measured, and each is a count or a state rather than a
//! rate, so it is decided on a busy node too.

/// The node's hardware faults, whatever the rates: a device's link that
/// trained low, NVLink links down against the device's siblings, a DIMM's
/// memory errors (EDAC), a DIMM unlike its siblings (SMBIOS) and a GPU
/// memory's (DCGM's limits).
pub fn of(
    devices: &[crate::results::targets::Device],
    topo: &crate::topology::Topology,
) -> Vec<String> {
    // A device's link that trained below what it can do is a fault of the
    // hardware, whatever the rates: a x8 or Gen3 link on a Gen5 x16 card.
    let mut differences = Vec::new();
    differences.extend(devices.iter().filter_map(|d| {
        let why = d.facts.link?.degraded()?;
        Some(format!("{}: {why}", d.id.name))
    }));
    // And so is an NVLink link down: against the device's siblings.
    differences.extend(super::pairs::links_down(devices));
    // And a GPU memory's uncorrected errors, pending or failed remapping,
    // retired pages past DCGM's limits: counts, decided on a busy node too.
    differences.extend(devices.iter().flat_map(|d| {
        let faults = (d.facts.memory_health.iter()).flat_map(|h| h.findings());
        faults
            .map(|f| format!("{}: {f}", d.id.name))
            .collect::<Vec<_>>()
    }));
    // And a DIMM of the node with uncorrected errors, or corrected ones past
    // NHC's limit, whatever was measured (counts, not rates: decided on a
    // busy node too).
    differences.extend(crate::topology::edac::findings(&topo.memory_errors));
    // And a DIMM unlike its siblings in size or speed: the population
    // itself, no baseline needed (a missing one is the baseline's to say).
    differences.extend(crate::topology::smbios::population_findings(
        &topo.memory_devices,
    ));
    differences
}

/// The kernel log's memory and bus XIDs of the node's NVIDIA GPUs (DCGM's
/// health watch's), each a fault with its action; and, where the log
/// cannot be read, a note saying so: unread is never "none". Nothing on a
/// node without NVIDIA GPUs on its PCI bus.
pub fn xids(topo: &crate::topology::Topology) -> (Vec<String>, Option<String>) {
    use crate::topology::kernel_log::GpuXids;
    match GpuXids::of(topo) {
        None => (Vec::new(), None),
        Some(GpuXids::NotReadable { why }) => (
            Vec::new(),
            Some(format!("the GPUs' XIDs were not read: {why}")),
        ),
        Some(read) => (read.findings(), None),
    }
}
