//! What measured: the target a backend declares for the plan it prepared.
//! One [`Target`] travels in the plan, the measurement, every run of a
//! record and (its identity only) the point. This module is the one place
//! that knows the kinds of target: everything else asks a target what it
//! has (host CPUs and their caches, a memory peak, a name, labels) and
//! never which kind it is (`tests/cli/layers.rs` holds the rest of the crate
//! to that), or, where behaviour differs by kind, matches on [`Measured`].

// A new kind must be decided wherever kinds are matched.
#![deny(clippy::wildcard_enum_match_arm)]

pub mod coherent_link;
mod device;
pub mod fabric;
pub mod memory_health;
pub mod method;

pub use coherent_link::CoherentLink;
pub use device::{
    Device, DeviceFacts, DeviceId, DevicePeaks, GpuReachAt, GpuReachRead, MemoryReach,
};
pub use fabric::{Fabric, FabricKind, FabricPath};
pub use memory_health::{CounterLimit, GpuMemoryAt, GpuMemoryHealth, GpuMemoryRead, MemoryCounter};
pub use method::{Clock, DeviceMethod, Method, Work};

use crate::kernels::{Isa, Path, StoreMode, StoresRequest};
use crate::peak::Peak;
use serde::{Deserialize, Serialize};

/// What a measurement ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    /// Host CPU threads running membw's kernels over host memory.
    Cpu(CpuCode),
    /// Another program, placed by membw (`membw exec`): its code and its
    /// arrays are its own. Its label names it in a point (`gcc`); a run
    /// does not repeat it.
    Program {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    /// A device with memory of its own, driven from the host (boxed: its
    /// facts are most of a target's bytes, and points carry targets).
    Device(Box<Device>),
}

/// What kind of thing did the work, with the part only that kind has: the
/// host CPUs' part `H` (a plan's CPUs, a point's threads, a run's thread
/// placements) for membw's team and for a program, the device for a
/// device. Code whose behaviour differs by kind matches on it with no
/// wildcard arm (clippy's `wildcard_enum_match_arm` is denied in each
/// module that does), so a new kind is a compile error wherever it must be
/// decided; an optional part, a number or a string never stands in for it.
#[derive(Debug, Clone, Copy)]
pub enum Measured<'a, H> {
    /// membw's CPU team: its threads, over host memory.
    Team(H),
    /// Another program, placed by membw: its threads, its own code; its
    /// label where it has one (`gcc`).
    Program(H, Option<&'a str>),
    /// A device with memory of its own: a host thread only drives it.
    Device(&'a Device),
}

impl<'a, H> Measured<'a, H> {
    /// The host CPUs' part, for rendering only what is present (a device
    /// has none): never to tell kinds apart, which a match does.
    pub fn host(self) -> Option<H> {
        match self {
            Measured::Team(host) | Measured::Program(host, _) => Some(host),
            Measured::Device(_) => None,
        }
    }

    /// The device, for rendering its name and facts (host work has none).
    pub fn device(self) -> Option<&'a Device> {
        match self {
            Measured::Device(d) => Some(d),
            Measured::Team(_) | Measured::Program(..) => None,
        }
    }

    /// `cpu`, `program` or `device sim1`: the kind as one word or two,
    /// for CSV and labels.
    pub fn label(&self) -> String {
        match self {
            Measured::Team(_) => "cpu".into(),
            Measured::Program(..) => "program".into(),
            Measured::Device(d) => format!("device {}", d.id.name),
        }
    }

    /// What a working set is per: each thread's share, or the device's
    /// whole.
    pub fn per(&self) -> &'static str {
        match self {
            Measured::Team(_) | Measured::Program(..) => "thread",
            Measured::Device(_) => "device",
        }
    }
}

/// Which kinds of work a set of points or records holds, each kind
/// decided by a match: what a table's columns and legend describe.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct KindsPresent {
    /// Work on host CPUs: membw's team or a program (threads, placement).
    pub on_host: bool,
    /// Work on devices.
    pub devices: bool,
}

impl KindsPresent {
    pub fn of<'a, H: 'a>(kinds: impl IntoIterator<Item = Measured<'a, H>>) -> KindsPresent {
        let mut present = KindsPresent::default();
        for kind in kinds {
            match kind {
                Measured::Team(_) | Measured::Program(..) => present.on_host = true,
                Measured::Device(_) => present.devices = true,
            }
        }
        present
    }
}

/// The CPU kernels' code: instruction set and store instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuCode {
    pub isa: Isa,
    pub stores: StoreMode,
}

/// A point's target as files keep it: a program by its label
/// (`"program": "gcc"`), a device as `"target"`, the CPU team as neither.
pub(crate) mod in_point {
    use super::Target;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Fields {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        program: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<Target>,
    }

    pub fn serialize<S: Serializer>(target: &Option<Target>, s: S) -> Result<S::Ok, S::Error> {
        let fields = match target {
            Some(Target::Program { label }) => Fields {
                program: label.clone(),
                target: None,
            },
            other => Fields {
                program: None,
                target: other.as_ref().map(Target::identity),
            },
        };
        fields.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Target>, D::Error> {
        let fields = Fields::deserialize(d)?;
        Ok(match fields.program {
            Some(label) => Some(Target::Program { label: Some(label) }),
            // Files written before identities were kept apart carry a
            // device's facts in its point: a key never holds them.
            None => fields.target.as_ref().map(Target::identity),
        })
    }
}

/// A peak by what it is of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedPeak {
    /// `memory peak of cuda0`, `host link peak of cuda0, each way`.
    pub name: String,
    pub gb_s: f64,
    /// Where the figure comes from.
    pub source: String,
}

impl Target {
    /// A CPU target of this code.
    pub fn cpu(isa: Isa, stores: StoreMode) -> Target {
        Target::Cpu(CpuCode { isa, stores })
    }

    /// The target of a record written before targets were recorded (schema
    /// 1): membw's CPU team where an ISA was recorded, another program
    /// where it was not.
    pub fn of_schema1(isa: Option<Isa>, stores: Option<StoreMode>) -> Target {
        match (isa, stores) {
            (Some(isa), Some(stores)) => Target::cpu(isa, stores),
            _ => Target::Program { label: None },
        }
    }

    /// What the target is, less what its backend reported of it: what a
    /// point is keyed by (a device's peaks or memory never are).
    pub fn identity(&self) -> Target {
        match self {
            Target::Device(d) => Target::Device(Box::new(d.identity())),
            Target::Cpu(_) | Target::Program { .. } => self.clone(),
        }
    }

    /// Its kind, with `host` as the host CPUs' part where they did the
    /// work.
    pub fn measured<H>(&self, host: H) -> Measured<'_, H> {
        match self {
            Target::Cpu(_) => Measured::Team(host),
            Target::Program { label } => Measured::Program(host, label.as_deref()),
            Target::Device(d) => Measured::Device(d),
        }
    }

    /// What a point made by a plan of this target keeps of it: a device's
    /// identity; nothing for the CPU team, whose code is the run's, or for
    /// a program, whose label the command that ran it adds.
    pub fn in_point(&self) -> Option<Target> {
        self.device()
            .map(|d| Target::Device(Box::new(d.identity())))
    }

    /// The CPU code, for a CPU target.
    pub fn cpu_code(&self) -> Option<CpuCode> {
        match self {
            Target::Cpu(code) => Some(*code),
            Target::Program { .. } | Target::Device(_) => None,
        }
    }

    /// The same target with the stores a CPU team's run used (a measured
    /// choice may differ from the plan's); any other target as it is.
    pub fn with_stores(&self, stores: StoreMode) -> Target {
        match self {
            Target::Cpu(code) => Target::cpu(code.isa, stores),
            Target::Program { .. } | Target::Device(_) => self.clone(),
        }
    }

    /// The device, with its facts: what a baseline keeps of a device scope
    /// and a verdict names. Not for branching: ask the target instead.
    pub fn device(&self) -> Option<&Device> {
        self.measured(()).device()
    }

    /// The host NUMA node that is the device's own memory, where its
    /// driver says one is (a GH200's HBM node, an MI300A's APU node).
    pub fn own_memory_node(&self) -> Option<usize> {
        self.device()?.facts.reach.as_ref()?.memory_node
    }

    /// The device's index on its node: which one of a set a plan measures
    /// (a health scope's name, the member of a set that runs it).
    pub fn device_index(&self) -> Option<u32> {
        self.device().map(|d| d.id.index)
    }

    /// The device's short name (`sim1`) where the target is one: the
    /// `device` column of a table.
    pub fn device_name(&self) -> Option<&str> {
        self.device().map(|d| d.id.name.as_str())
    }

    /// The host NUMA node a device is attached to, where it says.
    pub fn attached_node(&self) -> Option<usize> {
        self.device().and_then(|d| d.facts.numa_node)
    }

    /// Why no peak holds a device's rates, where the target is a device
    /// without one (a host's reason is its topology's).
    pub fn no_peak_reason(&self) -> Option<String> {
        self.device().map(|d| {
            format!(
                "the {} backend declares no memory peak for {} (its warning says why)",
                d.id.backend, d.id.name
            )
        })
    }

    /// How it is measured: its clock and that clock's rule, what watches
    /// it, its setup, who does its work.
    pub fn method(&self) -> Method {
        match self {
            Target::Cpu(_) => Method::cpu_team(),
            Target::Program { .. } => Method::program(),
            Target::Device(d) => Method::device(&d.facts.method),
        }
    }

    /// The memory peak a stream kernel's rate is a share of: a device's
    /// own, or the host's (`host`) for work in host memory.
    pub fn memory_peak(&self, host: Option<&Peak>) -> Option<Peak> {
        match self {
            Target::Device(d) => d.memory_peak(),
            Target::Cpu(_) | Target::Program { .. } => host.cloned(),
        }
    }

    /// The peak of the link between the host and the target's memory, each
    /// way, where it has one of its own.
    pub fn host_link_peak(&self) -> Option<Peak> {
        self.device().and_then(Device::host_link_peak)
    }

    /// The peak of what a kernel's bytes cross: the memory's (as
    /// [`memory_peak`](Self::memory_peak)), or the host link's, both ways
    /// counted for a transfer both ways at once.
    pub fn peak_of(&self, path: Path, host: Option<&Peak>) -> Option<Peak> {
        match path {
            Path::Memory => self.memory_peak(host),
            Path::HostLink { both_ways, .. } => {
                let mut link = self.host_link_peak()?;
                if both_ways {
                    link.per_socket_gb_s *= 2.0;
                    link.detail = format!("{}, both ways", link.detail);
                }
                Some(link)
            }
        }
    }

    /// The peak a rate over `path` is a share of, by name, where the
    /// target names its peaks (a device has one per kind of traffic);
    /// `None` for the host's memory, whose peak is the sockets'.
    pub fn named_peak(&self, path: Path) -> Option<NamedPeak> {
        self.device()?;
        let peak = self.peak_of(path, None)?;
        let name = match path {
            Path::Memory => "memory peak",
            Path::HostLink {
                both_ways: false, ..
            } => "host link peak (each way)",
            Path::HostLink {
                both_ways: true, ..
            } => "host link peak (both ways)",
        };
        Some(NamedPeak {
            name: name.into(),
            gb_s: peak.per_socket_gb_s,
            source: peak.detail,
        })
    }

    /// `cpu`, `program` or `device sim1`: the target as one word or two,
    /// for CSV and labels.
    pub fn label(&self) -> String {
        self.measured(()).label()
    }

    /// A line for a report's header, where the host's threads and placement
    /// do not say what ran: `device sim1 (…, memory peak 1000 GB/s, …)`.
    pub fn describe(&self) -> Option<String> {
        self.device().map(Device::describe)
    }

    /// Labels (name, value) that name the target where the node's threads
    /// do not, as metrics carry them: `scope=device`, `device=sim1`,
    /// `backend=sim`, `index=1`. Empty for work on the host's CPUs.
    pub fn labels(&self) -> Vec<(&'static str, String)> {
        self.device().map_or_else(Vec::new, Device::labels)
    }

    /// The stores a point's runs used where it asked for `requested`:
    /// `auto→nt` for the CPU team, the program's or the device's own.
    pub fn stores_label(&self, requested: StoresRequest) -> String {
        match (requested, self) {
            (StoresRequest::Auto, Target::Cpu(code)) => format!("auto→{}", code.stores),
            (StoresRequest::Auto, Target::Program { .. }) => "program's".into(),
            (StoresRequest::Auto, Target::Device(_)) => "device's".into(),
            (s, _) => s.to_string(),
        }
    }

    /// Whether two targets are the same device (or both not one): what a
    /// check holds a baseline's device scope to.
    pub fn same_device(&self, other: Option<&Device>) -> bool {
        self.device().map(|d| &d.id) == other.map(|d| &d.id)
    }

    /// `this node's CPUs`, or the device described: what a check says it
    /// measures.
    pub fn what_is_measured(device: Option<&Device>) -> String {
        device.map_or("this node's CPUs".into(), Device::describe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_tagged_by_kind_and_a_devices_unknowns_are_absent() {
        let cpu = serde_json::to_string(&Target::cpu(Isa::Avx2, StoreMode::Nt)).unwrap();
        assert_eq!(cpu, r#"{"kind":"cpu","isa":"avx2","stores":"nt"}"#);
        let device = Target::Device(Box::new(Device {
            id: DeviceId {
                backend: "sim".into(),
                index: 1,
                name: "sim1".into(),
            },
            facts: DeviceFacts {
                peaks: DevicePeaks {
                    memory_gb_s: Some(400.0),
                    host_link_gb_s: None,
                    memory_from: None,
                },
                ..Default::default()
            },
        }));
        let text = serde_json::to_string(&device).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"device","backend":"sim","index":1,"name":"sim1","peaks":{"memory_gb_s":400.0}}"#
        );
        assert_eq!(serde_json::from_str::<Target>(&text).unwrap(), device);
        // Its identity: the point's key, with no reported fact in it.
        assert_eq!(
            serde_json::to_string(&device.identity()).unwrap(),
            r#"{"kind":"device","backend":"sim","index":1,"name":"sim1"}"#
        );
        assert_eq!(device.measured(&[3][..]).host(), None);
        assert_eq!(device.memory_peak(None).unwrap().per_socket_gb_s, 400.0);
        assert_eq!(device.label(), "device sim1");
        let cpu = Target::cpu(Isa::Avx2, StoreMode::Nt);
        assert_eq!(cpu.measured(&[3][..]).host(), Some(&[3][..]));
        assert!(cpu.labels().is_empty() && cpu.describe().is_none());
        assert_eq!(cpu.stores_label(StoresRequest::Auto), "auto→nt");
        assert_eq!(device.cpu_code(), None);
        assert_eq!(
            serde_json::to_string(&Target::Program { label: None }).unwrap(),
            r#"{"kind":"program"}"#
        );
    }

    #[test]
    fn schema_1_records_read_as_the_cpu_team_or_a_program() {
        assert_eq!(
            Target::of_schema1(Some(Isa::Sse2), Some(StoreMode::Regular)),
            Target::cpu(Isa::Sse2, StoreMode::Regular)
        );
        assert_eq!(
            Target::of_schema1(None, None),
            Target::Program { label: None }
        );
    }
}
