//! The node's NVIDIA GPUs as the PCI bus shows them in sysfs, with or
//! without a driver: the bus address, the NUMA node and CPUs the device is
//! attached to, and its PCIe link as it trained (`current_link_*`) against
//! what it can do (`max_link_*`). A Gen5 x16 card that came up at x8 or at
//! Gen3 is a common field failure that no bandwidth figure alone explains.
//!
//! The accelerators of the three GPU makers are listed, whoever made
//! them, by their PCI vendor and class ([`GpuVendor`]): NVIDIA's and AMD's
//! display and processing-accelerator functions, Intel's display ones. A
//! VM's emulated VGA or a board's management GPU (ASPEED, Matrox) is
//! another vendor and no compute device. Which backend drives each is the
//! vendor's: NVIDIA's runs today (`cuda`); the others say they do not.

use super::cpulist::{IdSet, parse_list};
use super::files::Reader;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// NVIDIA's PCI vendor id.
pub const NVIDIA: u16 = 0x10de;
/// AMD's (ATI's) PCI vendor id, its GPUs' and Instinct accelerators'.
pub const AMD: u16 = 0x1002;
/// Intel's PCI vendor id.
pub const INTEL: u16 = 0x8086;

/// A maker of GPUs, by the PCI ids its compute devices carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuVendor {
    Nvidia,
    Amd,
    Intel,
}

impl GpuVendor {
    pub const ALL: [GpuVendor; 3] = [GpuVendor::Nvidia, GpuVendor::Amd, GpuVendor::Intel];

    /// The vendor of a PCI function of `vendor` id and `class` (its class
    /// code's upper 16 bits, 0x0302), where it is a GPU's: 0x0300 VGA,
    /// 0x0302 3D controller (every NVIDIA data-centre GPU), 0x0380 other
    /// display controller (Intel's Data Center GPU Max, some AMD
    /// Instinct), 0x1200 processing accelerator (AMD Instinct MI-series).
    pub fn of(vendor: u16, class: u32) -> Option<GpuVendor> {
        match (vendor, class) {
            (NVIDIA, 0x0300 | 0x0302) => Some(GpuVendor::Nvidia),
            (AMD, 0x0300 | 0x0302 | 0x0380 | 0x1200) => Some(GpuVendor::Amd),
            (INTEL, 0x0300 | 0x0302 | 0x0380) => Some(GpuVendor::Intel),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            GpuVendor::Nvidia => "NVIDIA",
            GpuVendor::Amd => "AMD",
            GpuVendor::Intel => "Intel",
        }
    }
}
/// A PCI address as sysfs spells it (`0000:18:00.0`): GPU drivers write
/// an 8-digit domain in capitals (`00000000:18:00.0`).
pub fn normal_address(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    match id.split_once(':') {
        Some((domain, rest)) if domain.len() > 4 => {
            format!("{}:{rest}", &domain[domain.len() - 4..])
        }
        _ => id,
    }
}

/// Where sysfs lists every PCI function.
pub(super) const PCI_DIR: &str = "sys/bus/pci/devices";

/// One GPU on the bus.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PciGpu {
    /// Domain:bus:device.function, as `nvidia-smi` and CUDA's
    /// `CU_DEVICE_ATTRIBUTE_PCI_*` name it (`0000:18:00.0`).
    pub address: String,
    pub vendor: u16,
    pub device: u16,
    /// Its PCI class code's upper 16 bits (0x0302: 3D controller).
    #[serde(default)]
    pub class: u32,
    /// The NUMA node it is attached to (absent: the firmware does not say).
    pub numa_node: Option<usize>,
    /// The CPUs nearest to it.
    pub local_cpus: IdSet,
    /// The kernel driver bound to it (`nvidia`, `vfio-pci`), if any.
    pub driver: Option<String>,
    pub link: Option<PciLink>,
}

/// A PCIe link: as it trained, and the most both ends can do.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PciLink {
    pub current: LinkState,
    pub max: LinkState,
}

/// A link's rate per lane and its lanes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinkState {
    /// Gigatransfers per second per lane (2.5, 5, 8, 16, 32, 64).
    pub gt_s: f64,
    pub width: u32,
}

impl LinkState {
    /// PCIe's generation for this rate (Gen1 2.5 GT/s ... Gen6 64 GT/s).
    pub fn generation(&self) -> Option<u8> {
        const RATES: [f64; 6] = [2.5, 5.0, 8.0, 16.0, 32.0, 64.0];
        RATES
            .iter()
            .position(|r| (r - self.gt_s).abs() < 0.01)
            .map(|i| i as u8 + 1)
    }

    /// The link's peak each way, GB/s: rate × lanes × line-code efficiency
    /// (8b/10b to Gen2, 128b/130b for Gen3 to Gen5, Gen6's FLIT 242/256)
    /// / 8 bits. Packet headers cost more in practice (a Gen5 x16 link
    /// moves about 53 of its 63 GB/s); this is the ceiling.
    pub fn gb_s(&self) -> f64 {
        let code = match self.gt_s {
            r if r <= 5.0 => 8.0 / 10.0,
            r if r <= 32.0 => 128.0 / 130.0,
            _ => 242.0 / 256.0,
        };
        self.gt_s * f64::from(self.width) * code / 8.0
    }
}

impl std::fmt::Display for LinkState {
    /// `Gen5 x16`, or the rate where it is no generation's.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.generation() {
            Some(g) => write!(f, "Gen{g} x{}", self.width),
            None => write!(f, "{} GT/s x{}", self.gt_s, self.width),
        }
    }
}

impl PciLink {
    /// Why the link is slower than it can be (trained at a lower rate or
    /// on fewer lanes), in words; `None` when it runs at its maximum.
    pub fn degraded(&self) -> Option<String> {
        let (now, max) = (self.current, self.max);
        let slower = now.gt_s + 0.01 < max.gt_s;
        let narrower = now.width < max.width;
        (slower || narrower).then(|| {
            format!(
                "its PCIe link trained at {now} ({:.1} GB/s each way), below the {max} ({:.1} GB/s) it can do",
                now.gb_s(),
                max.gb_s()
            )
        })
    }
}

/// `32.0 GT/s PCIe`, `8 GT/s`, `2.5 GT/s`: the rate; `Unknown` is none.
fn parse_speed(text: &str) -> Option<f64> {
    let number = text.split_whitespace().next()?;
    number.parse().ok().filter(|r: &f64| *r > 0.0)
}

/// Parses `0x10de` (sysfs's id files).
fn parse_hex(text: &str) -> Option<u32> {
    u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

impl PciGpu {
    /// Who made it (every GPU `read` lists has one).
    pub fn maker(&self) -> Option<GpuVendor> {
        GpuVendor::of(self.vendor, self.class)
    }

    /// What its PCI device id says it is, where that says more than the
    /// maker: AMD's Instinct GPUs, whose PCI functions are a card's GCDs
    /// (two per MI250X) or an APU's GPU (MI300A), from the public PCI ids.
    pub fn model(&self) -> Option<&'static str> {
        if self.maker() != Some(GpuVendor::Amd) {
            return None;
        }
        Some(match self.device {
            0x738c | 0x738e => "Instinct MI100",
            0x7408 => "Instinct MI250X, one GCD of two on its card",
            0x740c => "Instinct MI250X/MI250, one GCD of two on its card",
            0x740f => "Instinct MI210",
            0x74a0 => "Instinct MI300A, an APU: its HBM is the node's memory",
            0x74a1 => "Instinct MI300X",
            _ => return None,
        })
    }
}

/// Every GPU under `root`'s PCI bus, whoever made it, by address.
pub(super) fn read(r: &Reader) -> Vec<PciGpu> {
    let mut addresses: Vec<String> = std::fs::read_dir(r.path(PCI_DIR))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    addresses.sort();
    (addresses.into_iter())
        .filter_map(|address| read_one(r, address))
        .collect()
}

fn read_one(r: &Reader, address: String) -> Option<PciGpu> {
    let dir = format!("{PCI_DIR}/{address}");
    let file = |name: &str| r.text(&format!("{dir}/{name}"));
    let vendor = parse_hex(&file("vendor")?)? as u16;
    let class = parse_hex(&file("class")?)? >> 8;
    GpuVendor::of(vendor, class)?;
    let state = |speed: &str, width: &str| {
        Some(LinkState {
            gt_s: parse_speed(&file(speed)?)?,
            width: file(width)?.parse().ok().filter(|w| *w > 0)?,
        })
    };
    let link = state("current_link_speed", "current_link_width")
        .zip(state("max_link_speed", "max_link_width"))
        .map(|(current, max)| PciLink { current, max });
    let driver = std::fs::read_link(r.path(&format!("{dir}/driver")))
        .ok()
        .and_then(|p| Some(p.file_name()?.to_str()?.to_string()));
    Some(PciGpu {
        device: file("device").and_then(|d| parse_hex(&d)).unwrap_or(0) as u16,
        vendor,
        class,
        // -1: no node reported.
        numa_node: file("numa_node").and_then(|n| n.parse().ok()),
        local_cpus: (file("local_cpulist").and_then(|l| parse_list(&l).ok()))
            .map(IdSet::new)
            .unwrap_or_default(),
        driver,
        link,
        address,
    })
}

/// The GPU at `address`, matched the way CUDA reports it (domain, bus and
/// device numbers, any case): `0000:18:00.0` is `00000000:18:00.0` to NVML.
pub fn find<'a>(gpus: &'a [PciGpu], address: &str) -> Option<&'a PciGpu> {
    let key = |a: &str| -> Option<(u32, u32, u32)> {
        let mut parts = a.rsplitn(3, ':');
        let dev_fn = parts.next()?;
        let bus = parts.next()?;
        let domain = parts.next().unwrap_or("0");
        let dev = dev_fn.split('.').next()?;
        Some((parse_hex(domain)?, parse_hex(bus)?, parse_hex(dev)?))
    };
    let want = key(address)?;
    gpus.iter().find(|g| key(&g.address) == Some(want))
}

/// A GPU in a fixture tree (`tests/fixtures/*.json`'s `gpus`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureGpu {
    pub address: String,
    /// PCI vendor id: NVIDIA's where absent (0x1002: AMD).
    #[serde(default = "nvidia")]
    pub vendor: u16,
    /// PCI class (upper 16 bits): a 3D controller's where absent (0x1200:
    /// a processing accelerator, AMD Instinct's).
    #[serde(default = "controller_3d")]
    pub class: u32,
    /// PCI device id (0x2330: H100 SXM5 80GB).
    pub device: u16,
    pub node: usize,
    pub max: LinkState,
    /// As it trained; the maximum when absent.
    #[serde(default)]
    pub current: Option<LinkState>,
}

fn nvidia() -> u16 {
    NVIDIA
}

fn controller_3d() -> u32 {
    0x0302
}

/// Writes a fixture's GPUs as sysfs shows them (directories, where the
/// live bus has symlinks into `devices/`).
pub(super) fn write_fixture(
    dir: &Path,
    gpus: &[FixtureGpu],
    cpus_of_node: impl Fn(usize) -> String,
) -> std::io::Result<()> {
    for g in gpus {
        let base = dir.join(PCI_DIR).join(&g.address);
        let current = g.current.unwrap_or(g.max);
        let speed = |l: &LinkState| format!("{:.1} GT/s PCIe\n", l.gt_s);
        let files = [
            ("vendor", format!("0x{:04x}\n", g.vendor)),
            ("device", format!("0x{:04x}\n", g.device)),
            ("class", format!("0x{:04x}00\n", g.class)),
            ("numa_node", format!("{}\n", g.node)),
            ("local_cpulist", format!("{}\n", cpus_of_node(g.node))),
            ("current_link_speed", speed(&current)),
            ("current_link_width", format!("{}\n", current.width)),
            ("max_link_speed", speed(&g.max)),
            ("max_link_width", format!("{}\n", g.max.width)),
        ];
        for (name, text) in files {
            super::files::write_creating(&base.join(name), text.as_bytes())?;
        }
    }
    Ok(())
}

/// The files of every GPU on the bus that `read` uses, for `topo --capture`.
pub(super) const CAPTURED_FILES: [&str; 9] = [
    "vendor", "device", "class", "numa_node", "local_cpulist", "current_link_speed",
    "current_link_width", "max_link_speed", "max_link_width",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_knows_its_generation_peak_and_whether_it_trained_low() {
        let gen5 = LinkState {
            gt_s: 32.0,
            width: 16,
        };
        assert_eq!(gen5.to_string(), "Gen5 x16");
        assert!((gen5.gb_s() - 63.0).abs() < 0.1, "{}", gen5.gb_s());
        let gen1 = LinkState {
            gt_s: 2.5,
            width: 1,
        };
        assert!((gen1.gb_s() - 0.25).abs() < 1e-9);
        let full = PciLink {
            current: gen5,
            max: gen5,
        };
        assert_eq!(full.degraded(), None);
        let x8 = PciLink {
            current: LinkState { width: 8, ..gen5 },
            max: gen5,
        };
        let why = x8.degraded().unwrap();
        assert!(why.contains("Gen5 x8") && why.contains("Gen5 x16"), "{why}");
        let gen3 = PciLink {
            current: LinkState { gt_s: 8.0, ..gen5 },
            max: gen5,
        };
        assert!(gen3.degraded().unwrap().contains("Gen3 x16"));
        assert_eq!(parse_speed("Unknown"), None);
        assert_eq!(parse_speed("8 GT/s"), Some(8.0));
    }

    #[test]
    fn a_gpu_is_found_by_cuda_s_and_nvml_s_spellings_of_its_address() {
        let gpu = PciGpu {
            address: "0000:1b:00.0".into(),
            vendor: NVIDIA,
            device: 0x2330,
            class: 0x0302,
            numa_node: Some(0),
            local_cpus: IdSet::default(),
            driver: None,
            link: None,
        };
        let gpus = [gpu];
        assert!(find(&gpus, "00000000:1B:00.0").is_some());
        assert!(find(&gpus, "0000:1b:00.0").is_some());
        assert!(find(&gpus, "0000:1c:00.0").is_none());
        assert!(find(&gpus, "garbage").is_none());
    }

    #[test]
    fn every_makers_gpus_are_listed_and_no_other_display_function() {
        assert_eq!(GpuVendor::of(NVIDIA, 0x0302), Some(GpuVendor::Nvidia));
        assert_eq!(GpuVendor::of(AMD, 0x1200), Some(GpuVendor::Amd));
        assert_eq!(GpuVendor::of(AMD, 0x0380), Some(GpuVendor::Amd));
        assert_eq!(GpuVendor::of(INTEL, 0x0380), Some(GpuVendor::Intel));
        // Intel's network card, NVIDIA's audio function, ASPEED's BMC VGA.
        assert_eq!(GpuVendor::of(INTEL, 0x0200), None);
        assert_eq!(GpuVendor::of(NVIDIA, 0x0403), None);
        assert_eq!(GpuVendor::of(0x1a03, 0x0300), None);
        let gpu = |device| PciGpu {
            address: "0000:c1:00.0".into(),
            vendor: AMD,
            device,
            class: 0x1200,
            numa_node: None,
            local_cpus: Default::default(),
            link: None,
            driver: None,
        };
        assert!(gpu(0x7408).model().unwrap().contains("one GCD of two"));
        assert!(gpu(0x74a0).model().unwrap().contains("APU"));
        assert_eq!(gpu(0x1234).model(), None);
        assert_eq!(normal_address("00000000:1B:00.0"), "0000:1b:00.0");
        assert_eq!(normal_address("0000:1b:00.0"), "0000:1b:00.0");
    }

    #[test]
    fn only_gpu_makers_display_functions_are_gpus() {
        let dir = tempfile::tempdir().unwrap();
        let spec = FixtureGpu {
            address: "0000:18:00.0".into(),
            vendor: NVIDIA,
            class: 0x0302,
            device: 0x2330,
            node: 1,
            max: LinkState {
                gt_s: 32.0,
                width: 16,
            },
            current: Some(LinkState {
                gt_s: 16.0,
                width: 16,
            }),
        };
        write_fixture(dir.path(), &[spec], |_| "8-15".into()).unwrap();
        // QEMU's VGA: another vendor on the same bus.
        let vga = dir.path().join(PCI_DIR).join("0000:00:02.0");
        std::fs::create_dir_all(&vga).unwrap();
        std::fs::write(vga.join("vendor"), "0x1234\n").unwrap();
        std::fs::write(vga.join("class"), "0x030000\n").unwrap();
        let gpus = read(&Reader { root: dir.path() });
        assert_eq!(gpus.len(), 1);
        let g = &gpus[0];
        assert_eq!((g.numa_node, g.device), (Some(1), 0x2330));
        assert_eq!(g.local_cpus.to_string(), "8-15");
        assert!(g.link.unwrap().degraded().unwrap().contains("Gen4 x16"));
    }

    /// `topo --capture` keeps the GPUs: their files come back as a tree
    /// that reads the same.
    #[test]
    fn a_capture_keeps_the_gpus() {
        let source = tempfile::tempdir().unwrap();
        let gpu = FixtureGpu {
            address: "0000:9a:00.0".into(),
            vendor: AMD,
            class: 0x1200,
            device: 0x74a1,
            node: 0,
            max: LinkState {
                gt_s: 32.0,
                width: 16,
            },
            current: None,
        };
        write_fixture(source.path(), &[gpu], |_| "0-3".into()).unwrap();
        std::fs::create_dir_all(source.path().join("sys/devices/system/cpu")).unwrap();
        let dest = tempfile::tempdir().unwrap();
        super::super::capture::capture(source.path(), dest.path()).unwrap();
        let read_back = |root: &Path| read(&Reader { root });
        assert_eq!(read_back(dest.path()), read_back(source.path()));
        assert_eq!(read_back(dest.path()).len(), 1);
    }
}
