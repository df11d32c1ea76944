//! Where a GPU's kernels find their arrays: its own memory (the default),
//! memory the driver migrates on demand (managed), host memory pinned and
//! mapped for the device (its kernels cross the link), or ordinary
//! pageable memory the device reads through the host's page tables
//! (system). Each is another memory behind the same kernels, so each is a
//! point of its own: one for a run, an axis for a sweep.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a GPU's arrays live, as asked (`--gpu-memory`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GpuMemory {
    /// The device's own memory, as its driver allocates it.
    #[default]
    Device,
    /// Managed memory (the driver migrates its pages), first written by the host
    /// as a ported code does; `prefetch`: moved to the device before its
    /// first kernel, as a tuned code does.
    Managed { prefetch: bool },
    /// Pinned host memory on a NUMA node (the device's own where none is
    /// named), mapped into the device: every access crosses the link.
    Host { node: Option<usize> },
    /// Pageable host memory on a NUMA node, as `malloc` gives it, which
    /// the device reads where it can address pageable memory (HMM, ATS,
    /// AMD's XNACK).
    System { node: Option<usize> },
}

/// Why a `--gpu-memory` value is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadGpuMemory(pub String);

impl GpuMemory {
    /// Whether its arrays are host memory membw maps and places (host,
    /// system), whose pages are found on host nodes.
    pub fn is_host(self) -> bool {
        matches!(self, GpuMemory::Host { .. } | GpuMemory::System { .. })
    }

    /// Whether its arrays may be larger than the device's memory: the
    /// driver moves managed pages in and out, and system memory is the
    /// host's.
    pub fn may_oversubscribe(self) -> bool {
        matches!(self, GpuMemory::Managed { .. } | GpuMemory::System { .. })
    }

    /// The host node it names, where it names one.
    pub fn node(self) -> Option<usize> {
        match self {
            GpuMemory::Host { node } | GpuMemory::System { node } => node,
            _ => None,
        }
    }

    /// The same place on `node`, where it is host memory.
    pub fn on_node(self, node: Option<usize>) -> GpuMemory {
        match self {
            GpuMemory::Host { .. } => GpuMemory::Host { node },
            GpuMemory::System { .. } => GpuMemory::System { node },
            other => other,
        }
    }
}

impl fmt::Display for GpuMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, node) = match *self {
            GpuMemory::Device => return f.write_str("device"),
            GpuMemory::Managed { prefetch: false } => return f.write_str("managed"),
            GpuMemory::Managed { prefetch: true } => return f.write_str("managed:prefetch"),
            GpuMemory::Host { node } => ("host", node),
            GpuMemory::System { node } => ("system", node),
        };
        match node {
            Some(n) => write!(f, "{kind}:{n}"),
            None => f.write_str(kind),
        }
    }
}

/// The NUMA nodes a value may name: as many as Linux's default
/// `CONFIG_NODES_SHIFT` allows at most.
const MAX_NODE: usize = 1023;

impl std::str::FromStr for GpuMemory {
    type Err = BadGpuMemory;

    fn from_str(text: &str) -> Result<GpuMemory, BadGpuMemory> {
        let bad = |why: &str| BadGpuMemory(format!("'{text}': {why}"));
        let (kind, arg) = match text.split_once(':') {
            Some((kind, arg)) => (kind, Some(arg)),
            None => (text, None),
        };
        let node = |arg: Option<&str>| match arg {
            None => Ok(None),
            Some(n) => (n.parse::<usize>().ok())
                .filter(|n| *n <= MAX_NODE)
                .map(Some)
                .ok_or_else(|| bad(&format!("the NUMA node is a number from 0 to {MAX_NODE}"))),
        };
        match (kind, arg) {
            ("device", None) => Ok(GpuMemory::Device),
            ("managed", None) => Ok(GpuMemory::Managed { prefetch: false }),
            ("managed", Some("prefetch")) => Ok(GpuMemory::Managed { prefetch: true }),
            ("managed", Some(_)) => Err(bad("managed takes :prefetch or nothing")),
            ("host", arg) => Ok(GpuMemory::Host { node: node(arg)? }),
            ("system", arg) => Ok(GpuMemory::System { node: node(arg)? }),
            ("device", Some(_)) => Err(bad("device memory takes no node")),
            _ => Err(bad(
                "device, managed, managed:prefetch, host[:NODE] or system[:NODE]",
            )),
        }
    }
}

impl Serialize for GpuMemory {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GpuMemory {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<GpuMemory, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map_err(|e: BadGpuMemory| serde::de::Error::custom(e.0))
    }
}

/// What the driver says of one array's memory, read back after it was
/// allocated (its pointer attributes), beside where it was asked to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriverMemory {
    /// The device's own memory.
    Device,
    /// Managed memory, which the driver migrates.
    Managed,
    /// Host memory registered with the driver (pinned, mapped).
    Host,
    /// Memory the driver has no record of: pageable host memory.
    Pageable,
}

impl DriverMemory {
    /// What it is, in words.
    pub fn words(self) -> &'static str {
        match self {
            DriverMemory::Device => "device memory",
            DriverMemory::Managed => "managed memory",
            DriverMemory::Host => "pinned host memory",
            DriverMemory::Pageable => "pageable host memory",
        }
    }

    /// What the driver must say of memory asked for at `asked`.
    pub fn expected(asked: GpuMemory) -> DriverMemory {
        match asked {
            GpuMemory::Device => DriverMemory::Device,
            GpuMemory::Managed { .. } => DriverMemory::Managed,
            GpuMemory::Host { .. } => DriverMemory::Host,
            GpuMemory::System { .. } => DriverMemory::Pageable,
        }
    }
}

/// Where a device's arrays were asked to live and what was found there:
/// what a record keeps of `--gpu-memory` beside the pages of host memory
/// (its `pages`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuMemoryUse {
    /// Where they were asked to live, the host node resolved.
    pub asked: GpuMemory,
    /// Each array, as its driver's pointer attributes said after it was
    /// allocated.
    pub found: Vec<ArrayFound>,
    /// The first pass over the arrays on the device after the host wrote
    /// them (managed: where its pages migrate, after the prefetch where
    /// one was asked), timed by the device's clock apart from the
    /// repetitions; absent for device memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_touch: Option<FirstTouch>,
    /// The share of the arrays the device's memory holds, where it holds
    /// less than all (managed or system memory oversubscribed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_share: Option<f64>,
}

/// One array, as its driver said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrayFound {
    /// `a`, `b`, `c`: STREAM's name of it.
    pub array: String,
    /// What the driver said it is; absent where it could not say (its
    /// call failed: the reason is the run's warning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<DriverMemory>,
}

/// A timed first pass over the arrays.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FirstTouch {
    pub seconds: f64,
    /// Bytes of all arrays it wrote.
    pub bytes: u64,
}

impl FirstTouch {
    /// GB/s (10^9 B/s), where its time is not zero.
    pub fn gb_s(&self) -> Option<f64> {
        (self.seconds > 0.0).then(|| self.bytes as f64 / self.seconds / 1e9)
    }
}

impl GpuMemoryUse {
    /// What the run should say of it: each array the driver says is not
    /// what was asked, an oversubscription, the first touch's rate.
    pub fn findings(&self) -> Vec<String> {
        let expected = DriverMemory::expected(self.asked);
        let mut out: Vec<String> = (self.found.iter())
            .filter_map(|f| Some((f, f.driver?)))
            .filter(|(_, driver)| *driver != expected)
            .map(|(f, driver)| {
                format!(
                    "array {} was asked for in {} (--gpu-memory {}), and the driver says it is {}",
                    f.array,
                    expected.words(),
                    self.asked,
                    driver.words()
                )
            })
            .collect();
        if let Some(share) = self.device_share {
            out.push(format!(
                "the arrays are {:.0} % more than the device's memory: {:.0} % of them fit, and the rest crosses the host link on every pass",
                (1.0 / share - 1.0) * 100.0,
                share * 100.0
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_place_is_spelled_as_it_parses() {
        for text in [
            "device", "managed", "managed:prefetch", "host", "host:1", "system", "system:3",
        ] {
            let place: GpuMemory = text.parse().unwrap();
            assert_eq!(place.to_string(), text);
            let json = serde_json::to_string(&place).unwrap();
            assert_eq!(serde_json::from_str::<GpuMemory>(&json).unwrap(), place);
        }
        assert_eq!(
            "host:2".parse::<GpuMemory>().unwrap(),
            GpuMemory::Host { node: Some(2) }
        );
    }

    #[test]
    fn a_bad_place_names_what_is_wrong() {
        for (text, why) in [
            ("hbm", "device, managed"),
            ("host:x", "a number from 0 to 1023"),
            ("system:1024", "a number from 0 to 1023"),
            ("managed:1", ":prefetch"),
            ("device:0", "takes no node"),
            ("", "device, managed"),
        ] {
            let e = text.parse::<GpuMemory>().unwrap_err().0;
            assert!(
                e.contains(why) && e.contains(&format!("'{text}'")),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn what_the_driver_did_not_give_is_said_and_what_it_gave_is_not() {
        let found = |array: &str, driver| ArrayFound {
            array: array.into(),
            driver,
        };
        let mut used = GpuMemoryUse {
            asked: GpuMemory::Managed { prefetch: false },
            found: vec![
                found("a", Some(DriverMemory::Managed)),
                found("b", Some(DriverMemory::Device)),
                found("c", None),
            ],
            first_touch: None,
            device_share: None,
        };
        let said = used.findings();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].contains("array b was asked for in managed memory"),
            "{said:?}"
        );
        assert!(
            said[0].contains("the driver says it is device memory"),
            "{said:?}"
        );
        used.found.truncate(1);
        used.device_share = Some(0.5);
        let said = used.findings();
        assert!(
            said[0].contains("100 % more than the device's memory: 50 % of them fit"),
            "{said:?}"
        );
        let touch = FirstTouch {
            seconds: 0.5,
            bytes: 2_000_000_000,
        };
        assert_eq!(touch.gb_s(), Some(4.0));
        assert_eq!(
            FirstTouch {
                seconds: 0.0,
                ..touch
            }
            .gb_s(),
            None
        );
    }

    #[test]
    fn only_managed_and_system_memory_outgrow_the_device() {
        assert!(!GpuMemory::Device.may_oversubscribe());
        assert!(!GpuMemory::Host { node: None }.may_oversubscribe());
        assert!(GpuMemory::Managed { prefetch: true }.may_oversubscribe());
        assert!(GpuMemory::System { node: Some(0) }.may_oversubscribe());
        assert_eq!(
            DriverMemory::expected(GpuMemory::System { node: None }),
            DriverMemory::Pageable
        );
    }
}
