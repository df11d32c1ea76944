//! Each GPU platform's fabric (NVLink, xGMI) as metrics, named by the
//! platform's `FabricKind` (the CLI passes each platform's): no renderer
//! tests a fabric's name.

use super::{Series, scope_labels};
use crate::health::Scope;
use crate::health::verdict::Verdict;
use crate::results::targets::FabricKind;

/// Each platform's fabric as metrics (name, help, a series per GPU of the
/// check that reports it): the links up (`membw_gpu_nvlink_links_up`),
/// and where its library counts links down, the links it has.
pub(super) fn metrics(v: &Verdict, kinds: &[&FabricKind]) -> Vec<(String, String, Series)> {
    let mut out = Vec::new();
    for k in kinds {
        if k.counts_down {
            out.push((
                format!("membw_gpu_{}_links", k.metric),
                format!(
                    "{} links each GPU of the check has, as its management library reports them.",
                    k.name
                ),
                fabric_samples(v, k.name, |f| f.links),
            ));
        }
        let siblings = match k.counts_down {
            true => "",
            false => {
                " (its library reports only links that reach another GPU, none down: compare siblings)"
            }
        };
        out.push((
            format!("membw_gpu_{}_links_up", k.metric),
            format!(
                "{} links of each GPU of the check that are up{siblings}.",
                k.name
            ),
            fabric_samples(v, k.name, crate::results::targets::Fabric::up),
        ));
    }
    out
}

/// One series per GPU of the check that reports links of fabric `name`
/// (`NVLink`, `xGMI`).
fn fabric_samples(
    v: &Verdict,
    name: &str,
    count: fn(&crate::results::targets::Fabric) -> u32,
) -> Vec<(String, f64)> {
    (v.devices.iter().chain(v.device.iter()))
        .filter_map(|d| {
            let f = d.facts.fabric.as_ref().filter(|f| f.name == name)?;
            Some((
                scope_labels(Scope::Device(d.id.index), v),
                f64::from(count(f)),
            ))
        })
        .collect()
}
