//! A device as records keep it: its **identity** (which backend drove
//! which device: what a point is keyed by, never a measured fact) and its
//! **facts** (model, memory, driver, where it is attached, named peaks),
//! which a driver may report differently from one run to the next and
//! which therefore travel only with runs and baselines.

use crate::peak::{Peak, PeakSource};
use serde::{Deserialize, Serialize};

/// A device: who it is, and what its backend said of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "Wire", into = "Wire")]
pub struct Device {
    pub id: DeviceId,
    pub facts: DeviceFacts,
}

/// What identifies a device: the backend that drove it and its index
/// there (`sim:1`, later `cuda:0`), with the short name people read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceId {
    pub backend: String,
    pub index: u32,
    /// `sim1`: the backend's name for it, stable from run to run.
    pub name: String,
}

impl DeviceId {
    /// Device `index` of the backend named `backend`, named as the
    /// backends name theirs (`cuda0`).
    pub fn of(backend: &str, index: u32) -> DeviceId {
        DeviceId {
            backend: backend.to_string(),
            index,
            name: format!("{backend}{index}"),
        }
    }
}

/// What a backend reports of a device. Unknown facts are absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceFacts {
    /// Its model, as the driver reports it.
    pub model: Option<String>,
    /// Bytes of memory it has.
    pub memory_bytes: Option<u64>,
    /// The driver (and its version) that drove it.
    pub driver: Option<String>,
    /// The host NUMA node it is attached to.
    pub numa_node: Option<usize>,
    /// Its unique id (a GPU's `GPU-...` UUID, as nvidia-smi prints it).
    pub uuid: Option<String>,
    /// Its PCI address (`0000:18:00.0`).
    pub bus_id: Option<String>,
    /// Its PCIe link, as trained and at most.
    pub link: Option<crate::topology::pci::PciLink>,
    /// Its coherent link to the CPU (NVLink-C2C), where it has one: the
    /// host link in place of the PCIe function's.
    pub host_fabric: Option<super::coherent_link::CoherentLink>,
    /// Its multiprocessors (compute units): what a launch fills.
    pub multiprocessors: Option<u32>,
    /// Its last-level cache (a GPU's L2), bytes: STREAM's rule on it.
    pub cache_bytes: Option<u64>,
    /// Its links to its peers (NVLink), where its library reports them.
    pub fabric: Option<super::fabric::Fabric>,
    /// Its memory's ECC errors, retired pages and remapped rows, where
    /// its library reports them.
    pub memory_health: Option<super::memory_health::GpuMemoryHealth>,
    /// What memory beyond its own its kernels reach, as its driver says.
    pub reach: Option<MemoryReach>,
    pub peaks: DevicePeaks,
    /// How it is measured, as its backend declares it.
    pub method: super::method::DeviceMethod,
}

/// What memory beyond its own a GPU's kernels reach, as its driver's
/// attributes say (unknown where it was not read).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryReach {
    /// It has managed memory (the drivers' `MANAGED_MEMORY` attribute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed: Option<bool>,
    /// It and the host may touch managed memory at once, pages migrating
    /// on demand (`CONCURRENT_MANAGED_ACCESS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_managed: Option<bool>,
    /// Its kernels read pageable host memory (`PAGEABLE_MEMORY_ACCESS`:
    /// HMM or ATS; on AMD, with XNACK on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pageable: Option<bool>,
    /// Through the host's own page tables (ATS: Grace's C2C, MI300A).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_page_tables: Option<bool>,
    /// AMD: page faults retried (XNACK), which reading pageable memory
    /// needs (`HSA_XNACK=1` where the GPU supports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xnack: Option<bool>,
    /// Where it cannot read pageable memory: what is missing, in its
    /// vendor's words (the attribute, the variable that turns it on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pageable_missing: Option<String>,
    /// Its own memory as a host NUMA node, where its driver says it is
    /// one (a GH200's HBM, without CPUs; an MI300A's, the APU's node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_node: Option<usize>,
}

/// What memory each GPU a platform's driver sees reaches, by PCI
/// address, read without opening one (for `topo`); or why not.
#[derive(Debug, Clone, Serialize)]
pub struct GpuReachRead {
    /// The backend whose driver read them (`cuda`).
    pub backend: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_readable: Option<String>,
    pub devices: Vec<GpuReachAt>,
}

/// One GPU's reach, by its PCI address.
#[derive(Debug, Clone, Serialize)]
pub struct GpuReachAt {
    /// `0000:18:00.0`.
    pub bus_id: String,
    pub reach: MemoryReach,
    /// Its coherent link to the CPU, where its management library
    /// reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_fabric: Option<super::coherent_link::CoherentLink>,
}

impl MemoryReach {
    /// Its facts in words, the known ones: `reads pageable memory (host
    /// page tables), concurrent managed access`.
    pub fn words(&self) -> Vec<String> {
        let yes_no = |fact: Option<bool>, yes: &str, no: &str| {
            fact.map(|f| if f { yes.to_string() } else { no.to_string() })
        };
        [
            yes_no(self.managed, "managed memory", "no managed memory"),
            yes_no(
                self.concurrent_managed,
                "concurrent managed access",
                "no concurrent managed access",
            ),
            yes_no(
                self.pageable,
                "reads pageable memory",
                "does not read pageable memory",
            ),
            yes_no(
                self.host_page_tables,
                "through the host's page tables (ATS)",
                "not through the host's page tables",
            ),
            yes_no(self.xnack, "XNACK on", "XNACK off"),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// A device's theoretical rates, GB/s (10^9 B/s), by what they are of.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DevicePeaks {
    /// Its own memory: what the stream kernels are a share of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gb_s: Option<f64>,
    /// The link to the host, each way: what a transfer is a share of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_link_gb_s: Option<f64>,
    /// Where the memory peak comes from, where the backend computed it
    /// (`NVML's 2619 MHz memory clock × 5120-bit bus, 2 transfers a
    /// clock`); absent where the backend declares it as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_from: Option<String>,
}

impl DevicePeaks {
    fn is_empty(&self) -> bool {
        *self == DevicePeaks::default()
    }
}

/// The one form files hold: flat, as schema 1 wrote a device (its
/// `peak_gb_s`, the memory's, is read and never written again).
#[derive(Serialize, Deserialize)]
struct Wire {
    backend: String,
    #[serde(default)]
    index: u32,
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    driver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    numa_node: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bus_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    link: Option<crate::topology::pci::PciLink>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host_fabric: Option<super::coherent_link::CoherentLink>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    multiprocessors: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cache_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fabric: Option<super::fabric::Fabric>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory_health: Option<super::memory_health::GpuMemoryHealth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reach: Option<MemoryReach>,
    #[serde(default, skip_serializing_if = "DevicePeaks::is_empty")]
    peaks: DevicePeaks,
    #[serde(default, skip_serializing_if = "super::method::DeviceMethod::is_empty")]
    method: super::method::DeviceMethod,
    /// Schema 1's only peak: the device memory's.
    #[serde(default, skip_serializing)]
    peak_gb_s: Option<f64>,
}

impl From<Wire> for Device {
    fn from(w: Wire) -> Device {
        let mut peaks = w.peaks;
        peaks.memory_gb_s = peaks.memory_gb_s.or(w.peak_gb_s);
        // A document's names may have been written by anyone: one line each.
        let line = |t: Option<String>| t.map(|t| crate::untrusted::printable(&t));
        Device {
            id: DeviceId {
                backend: crate::untrusted::printable(&w.backend),
                index: w.index,
                name: crate::untrusted::printable(&w.name),
            },
            facts: DeviceFacts {
                model: line(w.model),
                memory_bytes: w.memory_bytes,
                driver: line(w.driver),
                numa_node: w.numa_node,
                uuid: line(w.uuid),
                bus_id: line(w.bus_id),
                link: w.link,
                host_fabric: w.host_fabric.map(|l| super::coherent_link::CoherentLink {
                    name: crate::untrusted::printable(&l.name),
                    ..l
                }),
                multiprocessors: w.multiprocessors,
                cache_bytes: w.cache_bytes,
                fabric: w.fabric,
                memory_health: w.memory_health,
                reach: w.reach.map(|reach| MemoryReach {
                    pageable_missing: line(reach.pageable_missing),
                    ..reach
                }),
                peaks,
                method: w.method,
            },
        }
    }
}

impl From<Device> for Wire {
    fn from(d: Device) -> Wire {
        Wire {
            backend: d.id.backend,
            index: d.id.index,
            name: d.id.name,
            model: d.facts.model,
            memory_bytes: d.facts.memory_bytes,
            driver: d.facts.driver,
            numa_node: d.facts.numa_node,
            uuid: d.facts.uuid,
            bus_id: d.facts.bus_id,
            link: d.facts.link,
            host_fabric: d.facts.host_fabric,
            multiprocessors: d.facts.multiprocessors,
            cache_bytes: d.facts.cache_bytes,
            fabric: d.facts.fabric,
            memory_health: d.facts.memory_health,
            reach: d.facts.reach,
            peaks: d.facts.peaks,
            method: d.facts.method,
            peak_gb_s: None,
        }
    }
}

impl Device {
    /// The device without its facts: what a point is keyed by.
    pub fn identity(&self) -> Device {
        Device {
            id: self.id.clone(),
            facts: DeviceFacts::default(),
        }
    }

    /// Its memory's peak, where its backend declares one.
    pub fn memory_peak(&self) -> Option<Peak> {
        let mut peak = self.peak(self.facts.peaks.memory_gb_s?, "memory")?;
        if let Some(from) = &self.facts.peaks.memory_from {
            peak.detail = format!("{}'s memory peak, from {from}", self.id.name);
        }
        Some(peak)
    }

    /// Its host link's peak, each way, where its backend declares one.
    pub fn host_link_peak(&self) -> Option<Peak> {
        self.peak(self.facts.peaks.host_link_gb_s?, "host link")
    }

    fn peak(&self, gb_s: f64, of: &str) -> Option<Peak> {
        Some(Peak {
            per_socket_gb_s: gb_s,
            sockets: 0,
            channels_per_socket: None,
            mts: None,
            source: PeakSource::Device,
            detail: format!(
                "{}'s {of} peak, declared by the {} backend",
                self.id.name, self.id.backend
            ),
        })
    }

    /// Labels (name, value) that name it in metrics.
    pub fn labels(&self) -> Vec<(&'static str, String)> {
        vec![
            ("scope", "device".into()),
            ("device", self.id.name.clone()),
            ("backend", self.id.backend.clone()),
            ("index", self.id.index.to_string()),
            // The spelling that selects it: cuda:0.
            ("gpu", format!("{}:{}", self.id.backend, self.id.index)),
        ]
        .into_iter()
        .chain(self.facts.uuid.clone().map(|u| ("uuid", u)))
        .collect()
    }

    /// `device sim1 (membw simulated device, 1.0 GiB, node 0, memory 1000
    /// GB/s, host link 64 GB/s, backend sim)`: for people.
    pub fn describe(&self) -> String {
        let f = &self.facts;
        let mut facts: Vec<String> = Vec::new();
        facts.extend(f.model.clone());
        facts.extend(f.memory_bytes.map(|b| crate::units::Bytes(b).to_string()));
        facts.extend(f.bus_id.clone());
        facts.extend(f.numa_node.map(|n| format!("host node {n}")));
        facts.extend(f.link.map(|l| format!("PCIe {}", l.current)));
        facts.extend(
            (f.fabric.as_ref()).map(|n| format!("{} {} of {} links up", n.name, n.up(), n.links)),
        );
        let gb_s = |p: f64| crate::units::trim_float((p * 10.0).round() / 10.0);
        facts.extend((f.peaks.memory_gb_s).map(|p| format!("memory peak {} GB/s", gb_s(p))));
        facts.extend((f.peaks.host_link_gb_s).map(|p| format!("host link peak {} GB/s", gb_s(p))));
        facts.extend(f.driver.clone());
        facts.push(format!("backend {}", self.id.backend));
        format!("device {} ({})", self.id.name, facts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_1_devices_read_with_their_peak_as_the_memorys() {
        let old =
            r#"{"backend":"sim","name":"sim0","model":"m","memory_bytes":8,"peak_gb_s":400.0}"#;
        let d: Device = serde_json::from_str(old).unwrap();
        assert_eq!(d.id.index, 0);
        assert_eq!(d.facts.peaks.memory_gb_s, Some(400.0));
        assert_eq!(d.facts.peaks.host_link_gb_s, None);
        let written = serde_json::to_string(&d).unwrap();
        assert_eq!(
            written,
            r#"{"backend":"sim","index":0,"name":"sim0","model":"m","memory_bytes":8,"peaks":{"memory_gb_s":400.0}}"#
        );
        assert_eq!(serde_json::from_str::<Device>(&written).unwrap(), d);
    }

    #[test]
    fn an_identity_has_no_facts_and_names_both_peaks_apart() {
        let d = Device {
            id: DeviceId {
                backend: "sim".into(),
                index: 2,
                name: "sim2".into(),
            },
            facts: DeviceFacts {
                peaks: DevicePeaks {
                    memory_gb_s: Some(1000.0),
                    host_link_gb_s: Some(64.0),
                    memory_from: None,
                },
                ..Default::default()
            },
        };
        assert_eq!(
            serde_json::to_string(&d.identity()).unwrap(),
            r#"{"backend":"sim","index":2,"name":"sim2"}"#
        );
        assert_eq!(d.memory_peak().unwrap().per_socket_gb_s, 1000.0);
        assert!(d.host_link_peak().unwrap().detail.contains("host link"));
        assert!(
            d.describe().contains("host link peak 64 GB/s"),
            "{}",
            d.describe()
        );
    }
}
