//! The theoretical peak as it applies to one run's CPUs.

use crate::kernels::{KernelId, Path};
use crate::peak::Peak;
use crate::topology::Topology;
use crate::topology::cpulist::IdSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The peak as it applies to the CPUs of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeakUse {
    #[serde(flatten)]
    pub peak: Peak,
    /// Sockets holding at least one thread; absent (0) for a device.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sockets_used: usize,
    /// Peak of those sockets, GB/s.
    pub used_gb_s: f64,
    /// Each kernel's best rate as a percentage of `used_gb_s`.
    pub percent_of_peak: BTreeMap<String, f64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl PeakUse {
    /// The peak of the sockets `cpus` run on, and each rate (GB/s) against
    /// it; a transfer's against the host link's peak, `link(kernel)` GB/s,
    /// where the target has one.
    pub fn new(
        peak: Peak,
        topo: &Topology,
        cpus: &[usize],
        rates: impl IntoIterator<Item = (KernelId, f64)>,
        link: impl Fn(KernelId) -> Option<f64>,
    ) -> PeakUse {
        let sockets: IdSet = cpus
            .iter()
            .filter_map(|&c| topo.cpu(c).map(|x| x.package))
            .collect();
        let used_gb_s = peak.for_sockets(sockets.len());
        let of = |k: KernelId| match k.spec().path {
            Path::Memory => Some(used_gb_s),
            Path::HostLink { .. } => link(k),
        };
        PeakUse {
            percent_of_peak: (rates.into_iter())
                .filter_map(|(k, gb_s)| Some((k.to_string(), 100.0 * gb_s / of(k)?)))
                .collect(),
            peak,
            sockets_used: sockets.len(),
            used_gb_s,
        }
    }

    /// A warning when a kernel measured more than the peak: the peak is
    /// wrong (a bare `--peak` in the wrong unit, a table row too low).
    pub fn implausible(&self) -> Option<String> {
        let memory = |k: &str| KernelId::parse(k).is_some_and(|k| k.spec().path == Path::Memory);
        let (kernel, pct) = (self.percent_of_peak.iter())
            .filter(|(k, _)| memory(k))
            .max_by(|a, b| a.1.total_cmp(b.1))?;
        (*pct > 100.0).then(|| {
            format!(
                "{kernel} measured {:.1} GB/s, above the theoretical peak of {:.1} GB/s ({}): the peak is wrong; give --peak for the whole node with its unit (409.6GB/s)",
                pct * self.used_gb_s / 100.0,
                self.used_gb_s,
                self.peak.detail
            )
        })
    }
}
