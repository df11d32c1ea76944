//! The theoretical peak as it applies to one run's CPUs.

use super::targets::{NamedPeak, Target};
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
    /// Each kernel's best rate as a percentage of `used_gb_s` (a
    /// transfer's: of its link's peak).
    pub percent_of_peak: BTreeMap<String, f64>,
    /// What each kernel's percentage is of, by name (`memory peak`, `host
    /// link peak, both ways`), where the target names its peaks (a
    /// device has several); absent for the host's memory, whose peak is
    /// the sockets'.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub percent_of: BTreeMap<String, String>,
    /// Every peak the rates are shares of, named, where the target names
    /// its peaks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named: Vec<NamedPeak>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl PeakUse {
    /// The peak of the sockets `cpus` run on, and each rate (GB/s) against
    /// it; a transfer's against the host link's peak, where the target has
    /// one. A target that names its own peaks (a device) has each kernel's
    /// share named after what it is of.
    pub fn new(
        peak: Peak,
        topo: &Topology,
        cpus: &[usize],
        rates: impl IntoIterator<Item = (KernelId, f64)>,
        target: &Target,
    ) -> PeakUse {
        let sockets: IdSet = cpus
            .iter()
            .filter_map(|&c| topo.cpu(c).map(|x| x.package))
            .collect();
        let used_gb_s = peak.for_sockets(sockets.len());
        let of = |k: KernelId| match k.spec().path {
            Path::Memory => Some(used_gb_s),
            path => target.peak_of(path, None).map(|p| p.per_socket_gb_s),
        };
        let rates: Vec<(KernelId, f64)> = rates.into_iter().collect();
        let mut named: Vec<NamedPeak> = Vec::new();
        let mut percent_of = BTreeMap::new();
        for &(k, _) in &rates {
            if let Some(n) = target.named_peak(k.spec().path) {
                percent_of.insert(k.to_string(), n.name.clone());
                if !named.contains(&n) {
                    named.push(n);
                }
            }
        }
        PeakUse {
            percent_of_peak: (rates.into_iter())
                .filter_map(|(k, gb_s)| Some((k.to_string(), 100.0 * gb_s / of(k)?)))
                .collect(),
            peak,
            sockets_used: sockets.len(),
            used_gb_s,
            percent_of,
            named,
        }
    }

    /// What kernel `name`'s percentage is of, for a row: `peak` (the
    /// sockets'), or the target's named peak.
    pub fn share_of(&self, name: &str) -> &str {
        self.percent_of.get(name).map_or("peak", String::as_str)
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
