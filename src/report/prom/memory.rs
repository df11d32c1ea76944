//! The node's memory error counters (EDAC) as metrics: what NHC's
//! `check_hw_mcelog` and a site's node checks alert on, beside the
//! bandwidth of the same check.

use crate::results::targets::GpuMemoryHealth;
use crate::topology::edac::MemoryErrors;

/// (name, help, samples as (labels, value)) for each metric.
pub(super) type Metrics = Vec<(&'static str, &'static str, super::Series)>;

/// Whether the counters could be read, and each DIMM's corrected and
/// uncorrected errors (a controller's own where it lists no DIMMs),
/// labelled `mc`, `entry` (`dimm1`: unique within its controller, so that
/// two DIMMs of one label are two series) and `dimm` (the board's slot
/// name where the driver gives one). A count that could not be read has no
/// sample: `membw_check_unknown_inputs` counts it.
pub(super) fn metrics(errors: &MemoryErrors) -> Metrics {
    let readable = match errors {
        MemoryErrors::Counted { .. } => 1.0,
        MemoryErrors::NotReadable { .. } => 0.0,
    };
    let (mut corrected, mut uncorrected) = (Vec::new(), Vec::new());
    let mut sample = |labels: &str, ce: Option<u64>, ue: Option<u64>| {
        corrected.extend(ce.map(|n| (labels.to_string(), n as f64)));
        uncorrected.extend(ue.map(|n| (labels.to_string(), n as f64)));
    };
    for c in errors.controllers() {
        let mc = format!("mc=\"{}\"", c.controller);
        if c.dimms.is_empty() {
            sample(&mc, c.corrected, c.uncorrected);
        }
        for d in &c.dimms {
            let dimm = d.label.as_deref().unwrap_or(&d.entry);
            let labels = format!(
                "{mc},entry=\"{}\",dimm=\"{}\"",
                super::label(&d.entry),
                super::label(dimm)
            );
            sample(&labels, d.corrected, d.uncorrected);
        }
    }
    vec![
        (
            "membw_edac_readable",
            "1 when the kernel's memory error counters (EDAC) could be read: an EDAC driver is loaded.",
            vec![(String::new(), readable)],
        ),
        (
            "membw_edac_corrected_errors",
            "Corrected memory errors since the counters were reset (boot), per DIMM (mc: memory controller; dimm: the slot's label), as EDAC counts them.",
            corrected,
        ),
        (
            "membw_edac_uncorrected_errors",
            "Uncorrected memory errors since the counters were reset (boot), per DIMM, as EDAC counts them: any one is a DIMM to replace.",
            uncorrected,
        ),
    ]
}

/// Each GPU's memory counters (NVML, ROCm SMI), one series per GPU of the
/// check that gives the count, labelled as its other metrics (`gpu`,
/// `uuid`): what DCGM's and the sites' checks alert on.
pub(super) fn gpu_metrics(v: &crate::health::verdict::Verdict) -> Metrics {
    let gpus: Vec<(String, &GpuMemoryHealth)> = (v.devices.iter().chain(v.device.iter()))
        .filter_map(|d| {
            let labels = super::scope_labels(crate::health::Scope::Device(d.id.index), v);
            Some((labels, d.facts.memory_health.as_ref()?))
        })
        .collect();
    let series = |count: fn(&GpuMemoryHealth) -> Option<f64>| -> super::Series {
        (gpus.iter())
            .filter_map(|(labels, h)| Some((labels.clone(), count(h)?)))
            .collect()
    };
    vec![
        (
            "membw_gpu_ecc_corrected_errors",
            "Corrected ECC errors in a GPU's memory since its driver loaded (volatile), where ECC is on.",
            series(|h| h.corrected_volatile.map(|n| n as f64)),
        ),
        (
            "membw_gpu_ecc_uncorrected_errors",
            "Uncorrected ECC errors in a GPU's memory since its driver loaded (volatile): any one drains the node (DCGM).",
            series(|h| h.uncorrected_volatile.map(|n| n as f64)),
        ),
        (
            "membw_gpu_retired_pages",
            "Pages an NVIDIA GPU retired for single- or double-bit errors over its life: 63 or more, replace it (DCGM).",
            series(|h| h.retired_pages.map(|n| n as f64)),
        ),
        (
            "membw_gpu_bad_pages",
            "Bad pages an AMD GPU's driver retired (ROCm SMI), recorded, not judged.",
            series(|h| h.bad_pages.map(|n| n as f64)),
        ),
        (
            "membw_gpu_retirement_pending",
            "1 when a page waits for a GPU reset to be retired.",
            series(|h| flag(h.retirement_pending)),
        ),
        (
            "membw_gpu_remapped_rows_uncorrectable",
            "Rows a GPU remapped for uncorrectable errors over its life: 512 or more, replace it (DCGM).",
            series(|h| h.remapped_uncorrectable.map(|n| n as f64)),
        ),
        (
            "membw_gpu_remap_pending",
            "1 when a row remapping waits for a GPU reset.",
            series(|h| flag(h.remap_pending)),
        ),
        (
            "membw_gpu_remap_failed",
            "1 when a row remapping failed (no spare row left): replace the GPU.",
            series(|h| flag(h.remap_failed)),
        ),
        (
            "membw_gpu_recovery_action",
            "What the NVIDIA driver says the GPU needs (nvml.h: 0 none, 1 GPU reset, 2 node reboot, 3 drain peer traffic, 4 drain and reset).",
            series(|h| h.recovery_action.map(f64::from)),
        ),
    ]
}

/// A state as a gauge: 1 set, 0 not.
fn flag(state: Option<bool>) -> Option<f64> {
    state.map(|b| if b { 1.0 } else { 0.0 })
}

/// How many values the check could not read, per source (0 where it read
/// every one): an alert on a node that is "healthy" only because a counter
/// held garbage.
pub(super) fn unknown_metrics(v: &crate::health::verdict::Verdict) -> Metrics {
    use crate::health::verdict::InputSource;
    let count = |source: InputSource| v.unknown.iter().filter(|u| u.source == source).count();
    vec![(
        "membw_check_unknown_inputs",
        "Values the last membw check could not read or believe, per source (edac, smbios, baseline): each is named in its verdict's unknown list; with --unknown fail any one fails the check.",
        (InputSource::ALL.iter())
            .map(|&s| (format!("source=\"{}\"", s.name()), count(s) as f64))
            .collect(),
    )]
}
