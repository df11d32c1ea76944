//! What measured: the identity a backend declares for the plan it prepared.
//! One [`Target`] travels in the plan, the measurement, every run of a
//! record and (for a device) the point, so that renderers show what the
//! target has (threads and an ISA for the CPU team, a name and its own
//! peak for a device) and never ask which source ran.

use crate::kernels::{Isa, StoreMode};
use crate::peak::{Peak, PeakSource};
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
    /// A device with memory of its own, driven from the host.
    Device(DeviceId),
}

/// The CPU kernels' code: instruction set and store instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuCode {
    pub isa: Isa,
    pub stores: StoreMode,
}

/// A device as its backend names it. Unknown values are absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceId {
    /// The backend that drives it (what `--backend` took).
    pub backend: String,
    /// The device's own name (`sim0`, a GPU's name).
    pub name: String,
    /// Its model, as the driver reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Bytes of memory it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Its theoretical memory bandwidth, GB/s (10^9 B/s), as its backend
    /// declares it: the device's own peak, not the host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_gb_s: Option<f64>,
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
                target: other.clone(),
            },
        };
        fields.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Target>, D::Error> {
        let fields = Fields::deserialize(d)?;
        Ok(match fields.program {
            Some(label) => Some(Target::Program { label: Some(label) }),
            None => fields.target,
        })
    }
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

    /// The CPU code, for a CPU target.
    pub fn cpu_code(&self) -> Option<CpuCode> {
        match self {
            Target::Cpu(code) => Some(*code),
            _ => None,
        }
    }

    pub fn isa(&self) -> Option<Isa> {
        self.cpu_code().map(|c| c.isa)
    }

    pub fn stores(&self) -> Option<StoreMode> {
        self.cpu_code().map(|c| c.stores)
    }

    pub fn device(&self) -> Option<&DeviceId> {
        match self {
            Target::Device(d) => Some(d),
            _ => None,
        }
    }

    /// `cpu`, `program` or `device`: the word records and labels use.
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Cpu(_) => "cpu",
            Target::Program { .. } => "program",
            Target::Device(_) => "device",
        }
    }
}

impl DeviceId {
    /// The device's own peak, where its backend declares one.
    pub fn peak(&self) -> Option<Peak> {
        Some(Peak {
            per_socket_gb_s: self.peak_gb_s?,
            sockets: 0,
            channels_per_socket: None,
            mts: None,
            source: PeakSource::Device,
            detail: format!(
                "{}'s own peak, declared by the {} backend",
                self.name, self.backend
            ),
        })
    }

    /// `device sim0 (membw's simulated device, 1.0 GiB)`: for people.
    pub fn describe(&self) -> String {
        let mut facts: Vec<String> = Vec::new();
        facts.extend(self.model.clone());
        facts.extend(
            self.memory_bytes
                .map(|b| crate::units::Bytes(b).to_string()),
        );
        facts.push(format!("backend {}", self.backend));
        format!("device {} ({})", self.name, facts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_tagged_by_kind_and_a_devices_unknowns_are_absent() {
        let cpu = serde_json::to_string(&Target::cpu(Isa::Avx2, StoreMode::Nt)).unwrap();
        assert_eq!(cpu, r#"{"kind":"cpu","isa":"avx2","stores":"nt"}"#);
        let device = Target::Device(DeviceId {
            backend: "sim".into(),
            name: "sim0".into(),
            model: None,
            memory_bytes: None,
            peak_gb_s: Some(400.0),
        });
        let text = serde_json::to_string(&device).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"device","backend":"sim","name":"sim0","peak_gb_s":400.0}"#
        );
        assert_eq!(serde_json::from_str::<Target>(&text).unwrap(), device);
        assert_eq!(device.isa(), None);
        assert_eq!(device.stores(), None);
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
