//! The node's memory error counters (EDAC) as metrics: what NHC's
//! `check_hw_mcelog` and a site's node checks alert on, beside the
//! bandwidth of the same check.

use crate::results::targets::GpuMemoryHealth;
use crate::topology::edac::MemoryErrors;

/// (name, help, samples as (labels, value)) for each metric.
pub(super) type Metrics = Vec<(String, String, super::Series)>;

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
            "membw_edac_readable".into(),
            "1 when the kernel's memory error counters (EDAC) could be read: an EDAC driver is loaded.".into(),
            vec![(String::new(), readable)],
        ),
        (
            "membw_edac_corrected_errors".into(),
            "Corrected memory errors since the counters were reset (boot), per DIMM (mc: memory controller; dimm: the slot's label), as EDAC counts them.".into(),
            corrected,
        ),
        (
            "membw_edac_uncorrected_errors".into(),
            "Uncorrected memory errors since the counters were reset (boot), per DIMM, as EDAC counts them: any one is a DIMM to replace.".into(),
            uncorrected,
        ),
    ]
}

/// Each GPU's memory counters, one series per GPU of the check that gives
/// the count, labelled as its other metrics (`gpu`, `uuid`): ECC errors
/// (every vendor's), then each counter the vendors supplied
/// (`membw_gpu_<name>`, its help theirs, the first GPU's that has it), in
/// the order they first appear. What DCGM's and the sites' checks alert
/// on. A counter whose name could not stand in a metric's is left out.
pub(super) fn gpu_metrics(v: &crate::health::verdict::Verdict) -> Metrics {
    let gpus: Vec<(String, &GpuMemoryHealth)> = (v.devices.iter().chain(v.device.iter()))
        .filter_map(|d| {
            let labels = super::scope_labels(crate::health::Scope::Device(d.id.index), v);
            Some((labels, d.facts.memory_health.as_ref()?))
        })
        .collect();
    let ecc = |count: fn(&GpuMemoryHealth) -> Option<u64>| -> super::Series {
        (gpus.iter())
            .filter_map(|(labels, h)| Some((labels.clone(), count(h)? as f64)))
            .collect()
    };
    let mut out: Metrics = vec![
        (
            "membw_gpu_ecc_corrected_errors".into(),
            "Corrected ECC errors in a GPU's memory since its driver loaded (volatile), where ECC is on.".into(),
            ecc(|h| h.corrected_volatile),
        ),
        (
            "membw_gpu_ecc_uncorrected_errors".into(),
            "Uncorrected ECC errors in a GPU's memory since its driver loaded (volatile): any one drains the node (DCGM).".into(),
            ecc(|h| h.uncorrected_volatile),
        ),
    ];
    let counters = (gpus.iter())
        .flat_map(|(labels, h)| h.counters.iter().map(move |c| (labels, c)))
        .filter(|(_, c)| c.has_metric_name());
    for (labels, c) in counters {
        let name = format!("membw_gpu_{}", c.name);
        let sample = (labels.clone(), c.value as f64);
        match out.iter_mut().find(|(n, _, _)| *n == name) {
            Some((_, _, series)) => series.push(sample),
            None => out.push((name, c.help.clone(), vec![sample])),
        }
    }
    out
}

/// How many values the check could not read, per source (0 where it read
/// every one): an alert on a node that is "healthy" only because a counter
/// held garbage.
pub(super) fn unknown_metrics(v: &crate::health::verdict::Verdict) -> Metrics {
    use crate::health::verdict::InputSource;
    let count = |source: InputSource| v.unknown.iter().filter(|u| u.source == source).count();
    vec![(
        "membw_check_unknown_inputs".into(),
        "Values the last membw check could not read or believe, per source (edac, smbios, baseline): each is named in its verdict's unknown list; with --unknown fail any one fails the check.".into(),
        (InputSource::ALL.iter())
            .map(|&s| (format!("source=\"{}\"", s.name()), count(s) as f64))
            .collect(),
    )]
}
