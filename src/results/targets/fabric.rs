//! A GPU's links to its peers (NVLink, xGMI): how many it has, which are up,
//! where each goes, and what one carries. A pair's path between two GPUs
//! and that path's peak are worked out from the two devices' fabrics, so a
//! pair cell can say what share of its path it reached and a check can
//! name a link that is down, as it names a PCIe link trained low.

use super::Device;
use serde::{Deserialize, Serialize};

/// Where a link that is up goes, when it is not a GPU: an NVSwitch (the
/// management library gives its PCI address, which is no GPU's).
pub const SWITCH: &str = "switch";

/// One device's peer links, as its management library reports them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fabric {
    /// `NVLink`.
    pub name: String,
    /// The version number the management library reports, as it reports
    /// it (NVML's numbering has changed between drivers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// Links the device has.
    pub links: u32,
    /// Where each link that is up goes: a GPU's PCI address, or
    /// [`SWITCH`].
    pub up_to: Vec<String>,
    /// What one link carries each way, GB/s, as the library reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_gb_s: Option<f64>,
}

impl Fabric {
    /// Links up.
    pub fn up(&self) -> u32 {
        self.up_to.len() as u32
    }

    /// Why the fabric is short of what the device has: links down, in
    /// words; `None` when every link is up, or none (a card without
    /// bridges uses none of the links its die has).
    pub fn degraded(&self) -> Option<String> {
        (self.up() > 0 && self.up() < self.links).then(|| {
            format!(
                "{} of its {} {} links are up ({} down)",
                self.up(),
                self.links,
                self.name,
                self.links - self.up()
            )
        })
    }

    fn links_to(&self, bus_id: &str) -> u32 {
        self.up_to.iter().filter(|b| *b == bus_id).count() as u32
    }
}

/// The fabric path between two devices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FabricPath {
    /// `NVLink`.
    pub name: String,
    /// Links the path has: the links between them, or through switches
    /// the fewer of the two devices' links to the switches.
    pub links: u32,
    /// Whether it crosses switches (NVSwitch) rather than direct links.
    pub switched: bool,
    /// What it carries each way at most, GB/s, where the link rate is
    /// known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_gb_s: Option<f64>,
}

/// The fabric path from `from` to `to`: the links between them where they
/// have direct ones; else, where both reach switches, the fewer of their
/// switch links; `None` without a fabric path (PCIe only, or unknown).
pub fn path(from: &Device, to: &Device) -> Option<FabricPath> {
    let (a, b) = (from.facts.fabric.as_ref()?, to.facts.fabric.as_ref()?);
    let rate = |links: u32| {
        let per_link = a.link_gb_s.zip(b.link_gb_s).map(|(x, y)| x.min(y));
        per_link.map(|r| r * f64::from(links))
    };
    let direct = to.facts.bus_id.as_deref().map_or(0, |id| a.links_to(id));
    if direct > 0 {
        return Some(FabricPath {
            name: a.name.clone(),
            links: direct,
            switched: false,
            peak_gb_s: rate(direct),
        });
    }
    let switched = a.links_to(SWITCH).min(b.links_to(SWITCH));
    (switched > 0).then(|| FabricPath {
        name: a.name.clone(),
        links: switched,
        switched: true,
        peak_gb_s: rate(switched),
    })
}

/// A vendor's GPU-to-GPU fabric as its tools name it and as far as its
/// management library can tell: the platform supplies it (its vendor's
/// folder), the devices' facts carry its name, and the CLI hands it to
/// the renderers, which read it (the
/// Prometheus metric, the path matrix, a path's short name) rather than
/// testing a vendor's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FabricKind {
    /// `NVLink`: the name the facts carry.
    pub name: &'static str,
    /// The metric names' part: `membw_gpu_nvlink_links_up`.
    pub metric: &'static str,
    /// How the vendor's topology tool writes a path of N links, as the
    /// prefix of N (`NV` for `nvidia-smi topo -m`'s `NV18`) and the tool;
    /// `None`: the name, a space and N.
    pub short: Option<(&'static str, &'static str)>,
    /// What its switches are called, where paths may cross them.
    pub switch: Option<&'static str>,
    /// Whether the library counts links that are down (NVML does; ROCm
    /// SMI reports only the links that reach a peer).
    pub counts_down: bool,
}

impl FabricKind {
    /// `NV18`, `NV16 switch`, `xGMI 2`: a path of `links` links as the
    /// vendor's tool writes it.
    pub fn path_name(&self, links: u32, switched: bool) -> String {
        let via = if switched { " switch" } else { "" };
        match self.short {
            Some((prefix, _)) => format!("{prefix}{links}{via}"),
            None => format!("{} {links}{via}", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::targets::{DeviceFacts, DeviceId};

    fn gpu(index: u32, fabric: Option<Fabric>) -> Device {
        Device {
            id: DeviceId {
                backend: "cuda".into(),
                index,
                name: format!("cuda{index}"),
            },
            facts: DeviceFacts {
                bus_id: Some(format!("0000:{index:02x}:00.0")),
                fabric,
                ..Default::default()
            },
        }
    }

    fn nvlink(links: u32, up_to: &[&str]) -> Option<Fabric> {
        Some(Fabric {
            name: "NVLink".into(),
            version: Some(4),
            links,
            up_to: up_to.iter().map(|s| s.to_string()).collect(),
            link_gb_s: Some(25.0),
        })
    }

    #[test]
    fn a_switched_pair_has_the_fewer_switch_links_of_the_two() {
        let a = gpu(0, nvlink(18, &[SWITCH; 18]));
        let b = gpu(1, nvlink(18, &[SWITCH; 16]));
        let p = path(&a, &b).unwrap();
        assert_eq!((p.links, p.switched, p.peak_gb_s), (16, true, Some(400.0)));
        assert_eq!(a.facts.fabric.unwrap().degraded(), None);
        let why = b.facts.fabric.unwrap().degraded().unwrap();
        assert!(
            why.contains("16 of its 18 NVLink links are up (2 down)"),
            "{why}"
        );
    }

    #[test]
    fn direct_links_count_only_those_to_the_peer_and_none_is_no_path() {
        let a = gpu(
            0,
            nvlink(6, &["0000:01:00.0", "0000:01:00.0", "0000:02:00.0"]),
        );
        let b = gpu(1, nvlink(6, &["0000:00:00.0", "0000:00:00.0"]));
        let c = gpu(3, nvlink(6, &[]));
        let p = path(&a, &b).unwrap();
        assert_eq!((p.links, p.switched), (2, false));
        assert_eq!(path(&a, &c), None);
        assert_eq!(path(&a, &gpu(4, None)), None);
    }
}
