//! The node's memory error counters (EDAC) as metrics: what NHC's
//! `check_hw_mcelog` and a site's node checks alert on, beside the
//! bandwidth of the same check.

use crate::topology::edac::MemoryErrors;

/// (name, help, samples as (labels, value)) for each metric.
pub(super) type Metrics = Vec<(&'static str, &'static str, super::Series)>;

/// Whether the counters could be read, and each DIMM's corrected and
/// uncorrected errors (a controller's own where it lists no DIMMs),
/// labelled `mc` and `dimm` (the board's slot name where the driver
/// gives one).
pub(super) fn metrics(errors: &MemoryErrors) -> Metrics {
    let readable = match errors {
        MemoryErrors::Counted { .. } => 1.0,
        MemoryErrors::NotReadable { .. } => 0.0,
    };
    let (mut corrected, mut uncorrected) = (Vec::new(), Vec::new());
    if let MemoryErrors::Counted { controllers } = errors {
        for c in controllers {
            let mc = format!("mc=\"{}\"", c.controller);
            if c.dimms.is_empty() {
                corrected.push((mc.clone(), c.corrected as f64));
                uncorrected.push((mc.clone(), c.uncorrected as f64));
            }
            for d in &c.dimms {
                let dimm = d.label.as_deref().unwrap_or(&d.entry);
                let labels = format!("{mc},dimm=\"{}\"", super::label(dimm));
                corrected.push((labels.clone(), d.corrected as f64));
                uncorrected.push((labels, d.uncorrected as f64));
            }
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
