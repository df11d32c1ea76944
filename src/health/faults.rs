//! The node's hardware faults beside its rates: each is unhealthy
//! whatever was measured, and each is a count or a state rather than a
//! rate, so it is decided on a busy node too.

use super::verdict::UnknownInput;

/// Everything a check finds wrong with the node's hardware.
pub struct Found {
    /// Every fault, the memory's changes first.
    pub faults: Vec<String>,
    /// The faults that take host memory bandwidth (a DIMM missing or
    /// unlike its siblings, less memory, a slower speed): a slow host
    /// memory scope is explained by them.
    pub memory_changes: Vec<String>,
    /// Sources that could not be read or compared, said rather than passed.
    pub notes: Vec<String>,
    /// Values that could not be read or were not believed, each with what
    /// was judged in its place.
    pub unknown: Vec<UnknownInput>,
}

/// The node's faults: `changes` (its memory hardware against the
/// baseline's identity), or without a baseline its DIMM population against
/// itself; the devices' and DIMMs' faults; its GPUs' XIDs; and its EDAC
/// counts' growth since the baseline's.
pub fn found(
    devices: &[crate::results::targets::Device],
    topo: &crate::topology::Topology,
    baseline: Option<&super::Baseline>,
    changes: Vec<String>,
) -> Found {
    let mut memory_changes = changes;
    if baseline.is_none() {
        memory_changes.extend(population(topo));
    }
    let mut faults = memory_changes.clone();
    faults.extend(of(devices));
    // A DIMM of the node with uncorrected errors, or corrected ones past
    // NHC's limit, whatever was measured (counts, not rates: decided on a
    // busy node too).
    let since_boot = super::since_boot::judge(&topo.memory_errors);
    faults.extend(since_boot.findings);
    let mut unknown = since_boot.unknown;
    // A DIMM's speed or width not believed is left out of the population
    // and the peak: said, judged by neither.
    let smbios = super::verdict::InputSource::Smbios;
    unknown.extend((topo.memory_device_unknown.iter()).map(|u| UnknownInput::of(smbios, u, None)));
    let (xids, unread) = xids(topo);
    faults.extend(xids);
    let mut notes: Vec<String> = unread.into_iter().collect();
    if let Some(b) = baseline {
        let (short, unread) = host_fabrics_against(devices, b);
        faults.extend(short);
        notes.extend(unread);
        let hostname = crate::sys::hostname();
        let counts = super::memory_errors::Counts {
            then: b.memory_errors.as_ref(),
            now: &topo.memory_errors,
            same_node: b.hosts == [hostname],
        };
        let (grown, note) = super::memory_errors::since_baseline(&counts, &faults);
        if note.is_none() {
            unknown.extend(super::memory_errors::unknown_in_baseline(&counts));
        }
        faults.extend(grown);
        notes.extend(note);
    }
    Found {
        faults,
        memory_changes,
        notes,
        unknown,
    }
}

/// The devices' hardware faults, whatever the rates: a device's link that
/// trained low, NVLink links down against the device's siblings, a GPU
/// memory's errors (DCGM's limits).
fn of(devices: &[crate::results::targets::Device]) -> Vec<String> {
    // A device's link that trained below what it can do is a fault of the
    // hardware, whatever the rates: a x8 or Gen3 link on a Gen5 x16 card.
    let mut differences = Vec::new();
    differences.extend(devices.iter().filter_map(|d| {
        let why = d.facts.link?.degraded()?;
        Some(format!("{}: {why}", d.id.name))
    }));
    // And so is an NVLink link down: against the device's siblings; and
    // a coherent link to the CPU (NVLink-C2C) with links not active.
    differences.extend(super::pairs::links_down(devices));
    differences.extend(devices.iter().filter_map(|d| {
        let why = d.facts.host_fabric.as_ref()?.degraded()?;
        Some(format!("{}: {why}", d.id.name))
    }));
    // And a GPU memory's uncorrected errors, pending or failed remapping,
    // retired pages past DCGM's limits: counts, decided on a busy node too.
    differences.extend(devices.iter().flat_map(|d| {
        let faults = (d.facts.memory_health.iter()).flat_map(|h| h.findings());
        faults
            .map(|f| format!("{}: {f}", d.id.name))
            .collect::<Vec<_>>()
    }));
    differences
}

/// The devices' coherent links to the CPU against the baseline's: one
/// gone (its library answered, and named none) or short of its links or
/// their rate is a fault; one the library did not answer for is a note,
/// neither passed nor failed.
fn host_fabrics_against(
    devices: &[crate::results::targets::Device],
    baseline: &super::Baseline,
) -> (Vec<String>, Vec<String>) {
    let (mut faults, mut notes) = (Vec::new(), Vec::new());
    let then = |d: &crate::results::targets::Device| {
        (baseline.scopes.iter())
            .filter_map(|s| s.device.as_ref())
            .find(|b| b.id == d.id)
            .and_then(|b| b.facts.host_fabric.clone())
    };
    for d in devices {
        let Some(then) = then(d) else { continue };
        let name = &d.id.name;
        match &d.facts.host_fabric {
            Some(now) => faults.extend(now.short_of(&then).map(|why| format!("{name}: {why}"))),
            // Its management library read the device (its memory's
            // counters) and names no such link.
            None if d.facts.memory_health.is_some() => faults.push(format!(
                "{name}: its {} link is missing ({} links in the baseline)",
                then.name, then.links
            )),
            None => notes.push(format!(
                "{name}: its {} link was not read (its management library did not answer); the baseline's has {} links",
                then.name, then.links
            )),
        }
    }
    (faults, notes)
}

/// The DIMM population's faults where no baseline gives the node's own: a
/// DIMM unlike its siblings in size or speed, a channel emptier than the
/// others (SMBIOS). With a baseline, its population is the reference
/// (a node populated so by design passes against its own).
fn population(topo: &crate::topology::Topology) -> Vec<String> {
    use crate::topology::dimms;
    let mut out = dimms::population_findings(&topo.memory_devices);
    out.extend(dimms::empty_channel_findings(
        &topo.memory_devices, &topo.empty_memory_slots,
    ));
    out
}

/// The kernel log's memory and bus XIDs of the node's NVIDIA GPUs (DCGM's
/// health watch's), each a fault with its action; and, where the log
/// cannot be read, a note saying so: unread is never "none". Nothing on a
/// node without NVIDIA GPUs on its PCI bus.
fn xids(topo: &crate::topology::Topology) -> (Vec<String>, Option<String>) {
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
