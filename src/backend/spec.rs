//! What `--backend` names, parsed once: a backend of the host's memory
//! (`cpu`, `portable`) or devices of a GPU platform (`cuda`, `cuda:2`,
//! `cuda:all`, `sim:0-3,6`). Parsing checks the words only; which devices
//! exist is the driver's answer, asked when backends are made.

use super::registry::PLATFORMS;
use super::{BACKENDS, gpu, names};

/// Which of a platform's devices a spec names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSelection {
    /// The platform alone (`cuda`): device 0, or each MPI rank's own by
    /// its local rank.
    Default,
    /// One device by the driver's index (`cuda:2`).
    One(u32),
    /// Every device the driver counts (`cuda:all`).
    All,
    /// A list, in the order written, each once (`cuda:0-3,6`).
    List(Vec<u32>),
}

/// A parsed `--backend`, kept with the text it was written as (what
/// studies store and errors quote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSpec {
    written: String,
    pub target: SpecTarget,
}

/// What a spec names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecTarget {
    /// A backend of the host's memory, by its registry name.
    Host(&'static str),
    /// DeviceSelection of the GPU platform of this name.
    Gpu {
        platform: &'static str,
        devices: DeviceSelection,
    },
}

impl std::fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.written)
    }
}

impl std::str::FromStr for BackendSpec {
    type Err = String;

    /// `NAME`, `NAME:N`, `NAME:all` or `NAME:LIST`; an unknown name, an
    /// index for the host's memory or a list that is no list is refused.
    fn from_str(spec: &str) -> Result<BackendSpec, String> {
        let (name, selection) = match spec.split_once(':') {
            Some((name, selection)) => (name, Some(selection)),
            None => (spec, None),
        };
        let target = if let Some(platform) = PLATFORMS.iter().find(|p| p.name() == name) {
            SpecTarget::Gpu {
                platform: platform.name(),
                devices: devices(selection)?,
            }
        } else if let Some(&(host, make)) = BACKENDS.iter().find(|(n, _)| *n == name) {
            if selection.is_some() {
                // The host's backends say they have no devices at all.
                return Err(make(Some(0)).err().unwrap_or_default());
            }
            SpecTarget::Host(host)
        } else {
            return Err(format!(
                "unknown backend '{name}' (choose from {})",
                names()
            ));
        };
        Ok(BackendSpec {
            written: spec.to_string(),
            target,
        })
    }
}

/// The devices after `NAME:`.
fn devices(selection: Option<&str>) -> Result<DeviceSelection, String> {
    let Some(selection) = selection else {
        return Ok(DeviceSelection::Default);
    };
    if selection == "all" {
        return Ok(DeviceSelection::All);
    }
    if let Ok(index) = selection.parse::<u32>() {
        return Ok(DeviceSelection::One(index));
    }
    let ids = crate::topology::cpulist::parse_list(selection).map_err(|e| {
        format!("'{selection}': {e} (a device set is all, N, or a list such as 0-3,6)")
    })?;
    let mut indices: Vec<u32> = Vec::new();
    for id in ids {
        let index = u32::try_from(id).unwrap_or(u32::MAX);
        if !indices.contains(&index) {
            indices.push(index);
        }
    }
    if indices.is_empty() {
        return Err(format!("'{selection}' names no device"));
    }
    Ok(DeviceSelection::List(indices))
}

impl BackendSpec {
    /// The host's CPU team: the default.
    pub fn cpu() -> BackendSpec {
        "cpu"
            .parse()
            .unwrap_or_else(|_| unreachable!("cpu is registered"))
    }

    /// The spec as written (`cuda:0`).
    pub fn written(&self) -> &str {
        &self.written
    }

    /// Every device of the GPU platform `platform` (`cuda:all`).
    pub fn all_of(platform: &'static dyn gpu::Platform) -> BackendSpec {
        BackendSpec {
            written: format!("{}:all", platform.name()),
            target: SpecTarget::Gpu {
                platform: platform.name(),
                devices: DeviceSelection::All,
            },
        }
    }

    /// The GPU platform it names, where it names one.
    pub(super) fn platform(&self) -> Option<(&'static dyn gpu::Platform, &DeviceSelection)> {
        match &self.target {
            SpecTarget::Gpu { platform, devices } => {
                let found = PLATFORMS.iter().find(|p| p.name() == *platform)?;
                Some((*found, devices))
            }
            SpecTarget::Host(_) => None,
        }
    }
}

impl serde::Serialize for BackendSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.written)
    }
}

impl<'de> serde::Deserialize<'de> for BackendSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<BackendSpec, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(spec: &str) -> Result<SpecTarget, String> {
        spec.parse::<BackendSpec>().map(|s| s.target)
    }

    #[test]
    fn a_spec_is_parsed_once_into_what_it_names() {
        assert_eq!(parsed("cpu"), Ok(SpecTarget::Host("cpu")));
        let gpu = |devices| SpecTarget::Gpu {
            platform: "sim",
            devices,
        };
        assert_eq!(parsed("sim"), Ok(gpu(DeviceSelection::Default)));
        assert_eq!(parsed("sim:2"), Ok(gpu(DeviceSelection::One(2))));
        assert_eq!(parsed("sim:all"), Ok(gpu(DeviceSelection::All)));
        assert_eq!(
            parsed("sim:3,0-1,3"),
            Ok(gpu(DeviceSelection::List(vec![3, 0, 1])))
        );
        assert_eq!(
            "sim:all".parse::<BackendSpec>().unwrap().to_string(),
            "sim:all"
        );
    }

    #[test]
    fn a_bad_spec_is_refused_by_its_words_alone() {
        let err = |spec: &str| parsed(spec).unwrap_err();
        assert!(err("gpu").contains("unknown backend 'gpu'"));
        assert!(err("cpu:1").contains("no devices to number"));
        assert!(err("sim:0-").contains("a device set is all, N, or a list"));
    }
}
