//! What `MEMBW_SIM_DEVICE` asks of the simulated node, for the tests: how
//! many devices it has, and which of them is faulty and how (a wrong
//! element, a memory that runs slow, a link trained narrow), each checked
//! and refused in one line.

use std::collections::BTreeMap;

/// The most devices a simulated node may have (a node of 8 GPUs, and
/// room for larger ones).
pub(super) const MAX_DEVICES: u32 = 64;
/// The most peer links a simulated device may have (NVLink 5's 18).
const MAX_LINKS: u32 = 18;

/// What `MEMBW_SIM_DEVICE` asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Setup {
    /// Devices on the node (`devices=N`), else [`super::DEVICES`].
    pub devices: Option<u32>,
    pub wrong_element: Option<usize>,
    pub peak_gb_s: Option<f64>,
    pub link_gb_s: Option<f64>,
    /// Lanes of every device's link (`lanes=N`).
    pub lanes: Option<u32>,
    pub clock: Option<f64>,
    /// Faults of single devices, by index.
    pub faults: BTreeMap<u32, SimFault>,
    /// Pairs without a direct path (`peer-down=I:J`), lower index first:
    /// their copies staged through host memory, their kernels unable to
    /// reach each other.
    pub peer_down: Vec<(u32, u32)>,
    /// Peer links (NVLink) each device has to the node's switches
    /// (`nvlink=N`); none asked, the devices have no fabric.
    pub nvlink: Option<u32>,
    /// Bytes of memory each device has (`memory=MIB`), else
    /// [`super::MEMORY_BYTES`]: small, an oversubscription is cheap.
    pub memory_bytes: Option<u64>,
    /// Its kernels cannot read pageable host memory (`pageable=no`), as a
    /// GPU without HMM, ATS or XNACK.
    pub no_pageable: bool,
    /// Each device's host link is this many NVLink-C2C links (`c2c=N`),
    /// sharing the link's rate, as a Grace Hopper's; none asked, a PCIe
    /// link.
    pub c2c: Option<u32>,
    /// Devices whose memory is a host NUMA node (`memory-node=I:N`), as a
    /// superchip's HBM is.
    pub memory_nodes: BTreeMap<u32, usize>,
}

/// What is wrong with one device.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct SimFault {
    /// Its kernels run at this share of their speed (`slow=I:F`): a
    /// memory that lost bandwidth.
    pub speed: Option<f64>,
    /// Its link trained at this many lanes (`lanes=I:N`).
    pub lanes: Option<u32>,
    /// Peer links down (`nvlink-down=I:K`).
    pub links_down: Option<u32>,
    /// NVLink-C2C links inactive (`c2c-down=I:K`).
    pub c2c_down: Option<u32>,
    /// Uncorrected ECC errors since the driver loaded (`ecc-ue=I:N`).
    pub ecc_uncorrected: Option<u64>,
    /// Pages retired (`retired-pages=I:N`), as a pre-Ampere GPU counts them.
    pub retired_pages: Option<u64>,
    /// A row remapping waits for a reset (`remap-pending=I`).
    pub remap_pending: bool,
}

/// A positive rate in GB/s.
fn rate(gb_s: &str) -> Result<f64, String> {
    (gb_s.parse().ok())
        .filter(|p: &f64| p.is_finite() && *p > 0.0)
        .ok_or_else(|| format!("'{gb_s}': a positive rate in GB/s"))
}

fn lanes(n: &str) -> Result<u32, String> {
    (n.parse().ok())
        .filter(|n| (1..=16).contains(n))
        .ok_or_else(|| format!("'{n}': lanes from 1 to 16"))
}

/// A device index below [`MAX_DEVICES`].
fn device(i: &str) -> Result<u32, String> {
    (i.parse().ok())
        .filter(|i| *i < MAX_DEVICES)
        .ok_or_else(|| format!("'{i}': a device index from 0 to {}", MAX_DEVICES - 1))
}

/// `I:VALUE`, with the device checked.
fn of_device(v: &str) -> Result<(u32, &str), String> {
    let (i, value) = v
        .split_once(':')
        .ok_or_else(|| format!("'{v}': expected DEVICE:VALUE"))?;
    Ok((device(i)?, value))
}

/// `I:N`: device I (checked) and its number N, `what` saying what N is
/// where it is none.
fn device_value<T: std::str::FromStr>(v: &str, what: &str) -> Result<(u32, T), String> {
    let (i, n) = of_device(v)?;
    let n = n.parse().map_err(|_| format!("'{n}': {what}"))?;
    Ok((i, n))
}

impl Setup {
    pub(super) fn parse(text: &str) -> Result<Setup, String> {
        let mut setup = Setup::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.split_once('=') {
                Some(("devices", n)) => {
                    setup.devices = Some(
                        (n.parse().ok())
                            .filter(|n| (1..=MAX_DEVICES).contains(n))
                            .ok_or_else(|| format!("'{n}': from 1 to {MAX_DEVICES} devices"))?,
                    );
                }
                Some(("wrong-element", n)) => {
                    setup.wrong_element = Some(
                        n.parse()
                            .map_err(|_| format!("'{n}': an element index (0, 1, ...)"))?,
                    );
                }
                Some(("peak", gb_s)) => setup.peak_gb_s = Some(rate(gb_s)?),
                Some(("link", gb_s)) => setup.link_gb_s = Some(rate(gb_s)?),
                Some(("lanes", n)) if !n.contains(':') => setup.lanes = Some(lanes(n)?),
                Some(("nvlink", n)) => {
                    setup.nvlink = Some(
                        (n.parse().ok())
                            .filter(|n| (1..=MAX_LINKS).contains(n))
                            .ok_or_else(|| format!("'{n}': from 1 to {MAX_LINKS} links"))?,
                    );
                }
                Some((key, v)) if setup.device_item(key, v)? => {}
                Some(("memory", mib)) => {
                    setup.memory_bytes = Some(
                        (mib.parse::<u64>().ok())
                            .filter(|m| (1..=1 << 20).contains(m))
                            .ok_or_else(|| format!("'{mib}': MiB of memory, 1 to 1048576"))?
                            << 20,
                    );
                }
                Some(("c2c", n)) => {
                    setup.c2c = Some(
                        (n.parse().ok())
                            .filter(|n| (1..=MAX_LINKS).contains(n))
                            .ok_or_else(|| format!("'{n}': from 1 to {MAX_LINKS} links"))?,
                    );
                }
                Some(("pageable", "no")) => setup.no_pageable = true,
                Some(("pageable", "yes")) => setup.no_pageable = false,
                Some(("clock", f)) => {
                    setup.clock = Some(
                        (f.parse().ok())
                            .filter(|f: &f64| f.is_finite() && *f > 0.0)
                            .ok_or_else(|| format!("'{f}': a positive factor"))?,
                    );
                }
                _ => {
                    return Err(format!(
                        "'{item}': expected devices=N, wrong-element=N, peak=GBS, link=GBS, lanes=[I:]N, slow=I:F, peer-down=I:J, nvlink=N, nvlink-down=I:K, c2c=N, c2c-down=I:K, memory-node=I:N, ecc-ue=I:N, retired-pages=I:N, remap-pending=I, memory=MIB, pageable=yes|no or clock=F"
                    ));
                }
            }
        }
        let count = setup.devices.unwrap_or(super::DEVICES);
        let named = (setup.faults.keys().copied())
            .chain(setup.peer_down.iter().map(|p| p.1))
            .chain(setup.memory_nodes.keys().copied());
        if let Some(i) = named.filter(|&i| i >= count).min() {
            return Err(format!(
                "device {i} is not on the simulated node of {count} (devices=N makes more)"
            ));
        }
        setup.check_links()?;
        Ok(setup)
    }

    /// An item that names one device (`slow=I:F`, `c2c-down=I:K`, ...),
    /// taken; whether `key` is one.
    fn device_item(&mut self, key: &str, v: &str) -> Result<bool, String> {
        match (key, v) {
            ("lanes", v) if v.contains(':') => {
                let (i, n) = of_device(v)?;
                self.faults.entry(i).or_default().lanes = Some(lanes(n)?);
            }
            ("slow", v) => {
                let (i, f) = of_device(v)?;
                let speed = (f.parse().ok())
                    .filter(|f: &f64| *f > 0.0 && *f <= 1.0)
                    .ok_or_else(|| format!("'{f}': a share of the speed, above 0 and at most 1"))?;
                self.faults.entry(i).or_default().speed = Some(speed);
            }
            ("peer-down", v) => {
                let (i, j) = of_device(v)?;
                let j = device(j)?;
                if i == j {
                    return Err(format!("'{v}': a pair is two devices"));
                }
                self.peer_down.push((i.min(j), i.max(j)));
            }
            ("nvlink-down", v) => {
                let (i, k) = device_value(v, "a count of links")?;
                self.faults.entry(i).or_default().links_down = Some(k);
            }
            ("ecc-ue", v) => {
                let (i, n) = device_value(v, "a count of errors")?;
                self.faults.entry(i).or_default().ecc_uncorrected = Some(n);
            }
            ("retired-pages", v) => {
                let (i, n) = device_value(v, "a count of pages")?;
                self.faults.entry(i).or_default().retired_pages = Some(n);
            }
            ("remap-pending", i) => {
                self.faults.entry(device(i)?).or_default().remap_pending = true;
            }
            ("c2c-down", v) => {
                let (i, k) = device_value(v, "a count of links")?;
                self.faults.entry(i).or_default().c2c_down = Some(k);
            }
            ("memory-node", v) => {
                let (i, n) = device_value(v, "a NUMA node")?;
                self.memory_nodes.insert(i, n);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Links down only where there are links, and no more than there are.
    fn check_links(&self) -> Result<(), String> {
        for (i, f) in &self.faults {
            match (f.c2c_down, self.c2c) {
                (Some(down), None) => {
                    return Err(format!(
                        "c2c-down={i}:{down}: the devices have no C2C links (c2c=N gives them some)"
                    ));
                }
                (Some(down), Some(n)) if down >= n => {
                    return Err(format!(
                        "c2c-down={i}:{down}: device {i} has {n} C2C links, one of which stays active"
                    ));
                }
                _ => {}
            }
            let Some(down) = f.links_down else { continue };
            match self.nvlink {
                None => {
                    return Err(format!(
                        "nvlink-down={i}:{down}: the devices have no links (nvlink=N gives them some)"
                    ));
                }
                Some(n) if down > n => {
                    return Err(format!("nvlink-down={i}:{down}: device {i} has {n} links"));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Device `index`'s memory health, as NVML reports an Ampere GPU's
    /// with ECC on: counts of zero unless a fault was asked for.
    pub(super) fn memory_health(&self, index: u32) -> crate::results::targets::GpuMemoryHealth {
        let fault = self.fault(index);
        let counts = crate::backend::cuda::dcgm::NvidiaMemoryCounts {
            retired_pages: fault.retired_pages,
            remapped_rows: Some((0, fault.remap_pending, false)),
            ..Default::default()
        };
        crate::results::targets::GpuMemoryHealth {
            ecc_enabled: Some(true),
            corrected_volatile: Some(0),
            uncorrected_volatile: Some(fault.ecc_uncorrected.unwrap_or(0)),
            counters: crate::backend::cuda::dcgm::counters(&counts),
        }
    }

    /// The share of device `index`'s peer links that are up (1 without
    /// links: its peer copies are not slowed).
    pub(super) fn links_up(&self, index: u32) -> f64 {
        match (self.nvlink, self.fault(index).links_down) {
            (Some(n), Some(down)) => f64::from(n - down) / f64::from(n),
            _ => 1.0,
        }
    }

    /// Device `index`'s coherent link to the host: `c2c=N` links sharing
    /// the host link's rate (`gb_s`), those of `c2c-down` inactive.
    pub(super) fn host_fabric(
        &self,
        index: u32,
        gb_s: f64,
    ) -> Option<crate::results::targets::CoherentLink> {
        let links = self.c2c?;
        Some(crate::results::targets::CoherentLink {
            name: "NVLink-C2C".into(),
            links,
            active: links - self.fault(index).c2c_down.unwrap_or(0),
            link_gb_s: Some(gb_s / f64::from(links)),
        })
    }

    /// Device `index`'s fabric: `nvlink=N` links to the node's switches,
    /// those of `nvlink-down` down, each of NVLink 4's 25 GB/s a way.
    pub(super) fn fabric(&self, index: u32) -> Option<crate::results::targets::Fabric> {
        let links = self.nvlink?;
        let up = links - self.fault(index).links_down.unwrap_or(0);
        Some(crate::results::targets::Fabric {
            // The simulated node imitates an NVSwitch system.
            name: crate::backend::cuda::NVLINK.name.into(),
            version: None,
            links,
            up_to: vec![crate::results::targets::fabric::SWITCH.into(); up as usize],
            link_gb_s: Some(25.0),
        })
    }

    pub(super) fn from_env() -> Result<Setup, String> {
        let Ok(text) = std::env::var(super::SETUP_VARIABLE) else {
            return Ok(Setup::default());
        };
        Setup::parse(&text).map_err(|e| format!("{}={text}: {e}", super::SETUP_VARIABLE))
    }

    /// Whether devices `a` and `b` lack a direct path.
    pub(super) fn peer_down(&self, a: u32, b: u32) -> bool {
        self.peer_down.contains(&(a.min(b), a.max(b)))
    }

    /// Devices on the node.
    pub(super) fn count(&self) -> u32 {
        self.devices.unwrap_or(super::DEVICES)
    }

    /// What is wrong with device `index` (nothing, mostly).
    pub(super) fn fault(&self, index: u32) -> SimFault {
        self.faults.get(&index).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_setup_is_read_or_refused_in_one_line() {
        let s = Setup::parse("wrong-element=3, peak=250").unwrap();
        assert_eq!((s.wrong_element, s.peak_gb_s), (Some(3), Some(250.0)));
        assert_eq!(Setup::parse("").unwrap(), Setup::default());
        assert!(
            Setup::parse("wrong-element=-1")
                .unwrap_err()
                .contains("'-1'")
        );
        assert!(Setup::parse("peak=0").unwrap_err().contains("'0'"));
        assert_eq!(Setup::parse("link=25").unwrap().link_gb_s, Some(25.0));
        assert!(Setup::parse("speed=2").unwrap_err().contains("'speed=2'"));
    }

    #[test]
    fn faults_belong_to_one_device_of_the_node() {
        let s = Setup::parse("devices=8,slow=3:0.8,lanes=5:8").unwrap();
        assert_eq!(s.count(), 8);
        assert_eq!(s.fault(3).speed, Some(0.8));
        assert_eq!(s.fault(5).lanes, Some(8));
        assert_eq!(s.fault(0), SimFault::default());
        // Past the node, a speed past whole, too many, no lanes.
        assert!(Setup::parse("slow=5:0.8").unwrap_err().contains("device 5"));
        assert!(Setup::parse("slow=1:1.5").unwrap_err().contains("'1.5'"));
        assert!(Setup::parse("devices=65").unwrap_err().contains("'65'"));
        assert!(Setup::parse("lanes=1:0").unwrap_err().contains("'0'"));
        let s = Setup::parse("devices=8,peer-down=6:2").unwrap();
        assert!(s.peer_down(2, 6) && s.peer_down(6, 2) && !s.peer_down(2, 5));
        assert!(
            Setup::parse("peer-down=1:1")
                .unwrap_err()
                .contains("two devices")
        );
        assert!(
            Setup::parse("peer-down=0:5")
                .unwrap_err()
                .contains("device 5")
        );
    }

    #[test]
    fn links_down_are_some_of_the_links_there_are() {
        let s = Setup::parse("devices=4,nvlink=18,nvlink-down=2:4").unwrap();
        assert_eq!(s.fabric(2).unwrap().up(), 14);
        assert_eq!(s.fabric(0).unwrap().up(), 18);
        assert!((s.links_up(2) - 14.0 / 18.0).abs() < 1e-12);
        assert_eq!(s.links_up(1), 1.0);
        assert_eq!(Setup::parse("devices=2").unwrap().fabric(0), None);
        let e = Setup::parse("nvlink=4,nvlink-down=1:5").unwrap_err();
        assert!(
            e.contains("nvlink-down=1:5") && e.contains("has 4 links"),
            "{e}"
        );
        assert!(
            Setup::parse("nvlink-down=1:2")
                .unwrap_err()
                .contains("no links")
        );
        assert!(Setup::parse("nvlink=19").unwrap_err().contains("'19'"));
    }
}
