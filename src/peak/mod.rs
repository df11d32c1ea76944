//! Theoretical peak memory bandwidth: channels × MT/s × 8 B per socket.
//!
//! Sources, in order: the user (`--peak`, or `--channels` with `--mts`);
//! SMBIOS memory devices (type 17, readable by root), where populated DIMMs
//! per socket stand in for channels; a built-in table of server CPUs; else
//! unknown, and no percentage is printed. Every figure carries its source.

use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::fmt;
use table::{lookup_cpuid, lookup_model};

pub mod share;
mod table;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeakSource {
    User,
    Smbios,
    Table,
    /// The firmware's figure for the memory tier the pages are on (ACPI HMAT).
    Firmware,
    /// A device's own figure, as its backend declares it.
    Device,
}

/// A per-socket peak and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    /// GB/s (10^9 B/s) of one socket (of a device: the device's).
    pub per_socket_gb_s: f64,
    /// Sockets of the node; absent (0) for a device, which has none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sockets: usize,
    pub channels_per_socket: Option<u32>,
    pub mts: Option<u32>,
    pub source: PeakSource,
    /// How the figure was obtained, for people.
    pub detail: String,
}

impl Peak {
    /// Where the figure came from, in a few words.
    pub fn source_name(&self) -> &'static str {
        match self.source {
            PeakSource::User => "given by the user",
            PeakSource::Smbios => "from SMBIOS",
            PeakSource::Table => "from the built-in table",
            PeakSource::Firmware => "from the firmware (HMAT)",
            PeakSource::Device => "declared by the device's backend",
        }
    }

    /// The whole node's peak (a device's own).
    pub fn node_gb_s(&self) -> f64 {
        self.per_socket_gb_s * self.sockets.max(1) as f64
    }

    /// The peak available to threads spread over `sockets_used` sockets.
    pub fn for_sockets(&self, sockets_used: usize) -> f64 {
        self.per_socket_gb_s * sockets_used.clamp(1, self.sockets.max(1)) as f64
    }
}

impl fmt::Display for Peak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1} GB/s", self.node_gb_s())?;
        match (self.channels_per_socket, self.mts) {
            (Some(ch), Some(mts)) => write!(
                f,
                " ({} socket{} × {ch} channels × {mts} MT/s × 8 B)",
                self.sockets,
                if self.sockets == 1 { "" } else { "s" }
            )?,
            _ if self.sockets > 1 => write!(
                f,
                " ({} sockets × {:.1} GB/s)",
                self.sockets, self.per_socket_gb_s
            )?,
            _ => {}
        }
        Ok(())
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What the user said about the peak, if anything.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum PeakRequest {
    /// Find it: SMBIOS, then the built-in table.
    #[default]
    Detect,
    /// The whole node's peak.
    Node(GivenRate),
    /// Memory channels per socket and their transfer rate.
    Channels { channels: u32, mts: u32 },
}

/// A bandwidth the user gave, and whether it carried a unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GivenRate {
    pub gb_s: f64,
    /// False for a bare number, taken as GB/s (said in the peak's source).
    pub unit: bool,
}

/// Parses `--peak` with the byte units `--size` takes, any case, per
/// second: `409.6GB/s`, `409.6 GB/s`, `409.6GB` (per second understood),
/// `0.4TB/s`, `409600MB/s`; a bare `409.6` is GB/s.
pub fn parse_peak(text: &str) -> std::result::Result<GivenRate, String> {
    let t = text.trim();
    let per_second = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("/S"))
        .unwrap_or(t);
    // The number (exponents allowed) and the byte unit of `--size`'s
    // table, read from one unit of it.
    let head = per_second.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let (number, unit) = (head.trim(), &per_second[head.len()..]);
    let not_a_rate = || format!("peak '{text}' is not a bandwidth (e.g. 409.6GB/s)");
    let value: f64 = number.parse().map_err(|_| not_a_rate())?;
    let given = match (unit.is_empty(), per_second.len() == t.len()) {
        (true, true) => GivenRate {
            gb_s: value,
            unit: false,
        },
        (true, false) => {
            return Err(format!(
                "peak '{text}' needs a unit before /s (e.g. 409.6GB/s)"
            ));
        }
        (false, _) if crate::units::bits_meant_as_bytes(unit).is_some() => {
            let bytes = crate::units::bits_meant_as_bytes(unit).unwrap_or_default();
            return Err(format!(
                "peak '{text}': '{unit}' is bits (a lowercase b); membw counts bytes: write {number}{bytes}/s"
            ));
        }
        (false, _) => match crate::units::parse_array_size(&format!("1{unit}")) {
            Ok(crate::units::ArraySize::Bytes(b)) => GivenRate {
                gb_s: value * b.0 as f64 / 1e9,
                unit: true,
            },
            _ => return Err(not_a_rate()),
        },
    };
    // No memory system is below 0.1 GB/s or above a petabyte per second.
    if !(given.gb_s.is_finite() && (0.1..=1e6).contains(&given.gb_s)) {
        return Err(format!(
            "peak '{text}' is outside 0.1 GB/s to 1 PB/s (e.g. 409.6GB/s)"
        ));
    }
    Ok(given)
}

/// The peak of the memory the arrays are placed on, where firmware
/// states the bandwidth of every node involved (ACPI HMAT) and the policy
/// places pages by node rather than by thread: `None` for first touch or
/// a node without figures. A node set is bounded by its slowest member
/// for its share: `min(bandwidth_n / share_n)`.
pub fn tier_peak(topo: &Topology, policy: &crate::memory::policy::MemPolicy) -> Option<Peak> {
    use crate::memory::policy::{Policy, expected_shares};
    if !policy.is_uniform() {
        return None;
    }
    let shares: std::collections::BTreeMap<usize, f64> = match &policy.arrays[0] {
        Policy::Local => return None,
        Policy::Preferred(n) => [(*n, 1.0)].into(),
        Policy::Bind(set) | Policy::Interleave(set) => set
            .ids()
            .iter()
            .map(|&n| (n, 1.0 / set.len() as f64))
            .collect(),
        p => expected_shares(p)?,
    };
    let mut bound = f64::INFINITY;
    let mut parts = Vec::new();
    for (&n, &share) in shares.iter().filter(|(_, s)| **s > 0.0) {
        let gb_s = topo.node(n)?.hmat.as_ref()?.read_gb_s()?;
        bound = bound.min(gb_s / share);
        parts.push(format!("node {n} {gb_s:.1} GB/s"));
    }
    bound.is_finite().then(|| Peak {
        per_socket_gb_s: bound,
        sockets: 1,
        channels_per_socket: None,
        mts: None,
        source: PeakSource::Firmware,
        detail: format!(
            "firmware-reported (ACPI HMAT) read bandwidth of the memory used: {}",
            parts.join(", ")
        ),
    })
}

/// The peak for arrays under `policy`: the user's, else the memory tier's
/// firmware figure, else the machine's estimate.
pub fn for_policy(
    topo: &Topology,
    request: &PeakRequest,
    policy: &crate::memory::policy::MemPolicy,
) -> Option<Peak> {
    let sockets = topo.packages().len().max(1);
    user_peak(request, sockets)
        .or_else(|| tier_peak(topo, policy))
        .or_else(|| estimate(topo, request))
        .filter(|peak| share::not_theirs(peak, topo).is_none())
}

/// The peak that measurements on this process's CPUs are shares of: the
/// best-sourced one, where it belongs to them ([`share`]); else why none
/// is printed.
pub fn for_cpus_used(topo: &Topology, request: &PeakRequest) -> Result<Option<Peak>, String> {
    match estimate(topo, request) {
        Some(peak) => match share::not_theirs(&peak, topo) {
            Some(why) => Err(why),
            None => Ok(Some(peak)),
        },
        None => Ok(None),
    }
}

/// Picks the best-sourced peak for this machine; `None` when unknown.
pub fn estimate(topo: &Topology, request: &PeakRequest) -> Option<Peak> {
    let sockets = topo.packages().len().max(1);
    user_peak(request, sockets)
        .or_else(|| smbios_peak(topo, sockets))
        .or_else(|| table_peak(topo, sockets))
}

fn user_peak(request: &PeakRequest, sockets: usize) -> Option<Peak> {
    match *request {
        PeakRequest::Node(total) => Some(Peak {
            per_socket_gb_s: total.gb_s / sockets as f64,
            sockets,
            channels_per_socket: None,
            mts: None,
            source: PeakSource::User,
            detail: if total.unit {
                "given by the user for the whole node".into()
            } else {
                "given by the user for the whole node (a number without a unit, taken as GB/s)"
                    .into()
            },
        }),
        PeakRequest::Channels { channels, mts } => Some(Peak {
            per_socket_gb_s: channels as f64 * mts as f64 * 8.0 / 1e3,
            sockets,
            channels_per_socket: Some(channels),
            mts: Some(mts),
            source: PeakSource::User,
            detail: "memory channels and MT/s given by the user".into(),
        }),
        PeakRequest::Detect => None,
    }
}

fn smbios_peak(topo: &Topology, sockets: usize) -> Option<Peak> {
    let devices = &topo.memory_devices;
    if devices.is_empty() {
        return None;
    }
    // One DIMM of unknown speed or width leaves the peak unknown: its
    // channels may be the slowest.
    let mts = devices.iter().map(|d| d.mts).collect::<Option<Vec<_>>>()?;
    let mts = mts.into_iter().min()?;
    let widths = (devices.iter()).map(|d| d.data_width_bits.map(u32::from));
    let bytes_per_transfer = widths.collect::<Option<Vec<_>>>()?.into_iter().min()? / 8;
    let per_socket = (devices.len() / sockets).max(1) as u32;
    Some(Peak {
        per_socket_gb_s: per_socket as f64 * mts as f64 * bytes_per_transfer as f64 / 1e3,
        sockets,
        channels_per_socket: Some(per_socket),
        mts: Some(mts),
        source: PeakSource::Smbios,
        detail: format!(
            "SMBIOS: {} populated DIMMs at {mts} MT/s, taken as one DIMM per channel",
            devices.len()
        ),
    })
}

/// Why no peak is known for this machine, and what to give instead.
pub fn unknown_reason(topo: &Topology) -> String {
    if let Err(why) = for_cpus_used(topo, &PeakRequest::Detect) {
        return why;
    }
    let info = &topo.cpu_info;
    let cpu = match (&info.model_name, info.family, info.model) {
        (Some(name), Some(f), Some(m)) => format!("'{name}' (CPUID family {f}, model {m})"),
        (Some(name), _, _) => format!("'{name}'"),
        _ => "this CPU".into(),
    };
    let smbios = if topo.memory_devices.is_empty() {
        if crate::sys::is_root() {
            "no SMBIOS memory devices are readable (a VM hides them)"
        } else {
            "no SMBIOS memory devices are readable (they need root: sudo membw ...)"
        }
    } else {
        "SMBIOS lists no usable memory speed"
    };
    format!(
        "{smbios} and {cpu} is not in the built-in table; give the node's peak (--peak 409.6GB/s) or your DIMMs' channels per socket and MT/s (--channels N --mts R, from the board's manual or dmidecode -t memory)"
    )
}

/// aarch64 chips, by implementer, part and system vendor.
fn lookup_arm(topo: &Topology) -> Option<crate::topology::arm::Chip> {
    let info = &topo.cpu_info;
    crate::topology::arm::chip(
        info.implementer.as_deref()?,
        info.part.as_deref()?,
        info.system_vendor.as_deref(),
    )
}

fn table_peak(topo: &Topology, sockets: usize) -> Option<Peak> {
    let info = &topo.cpu_info;
    let by_cpuid = || {
        let f = lookup_cpuid(info.vendor.as_deref()?, info.family?, info.model?)?;
        Some((
            f,
            format!(" (by CPUID family {}, model {})", info.family?, info.model?),
        ))
    };
    let by_name = info
        .model_name
        .as_deref()
        .and_then(lookup_model)
        .map(|f| (f, String::new()));
    if let Some((f, how)) = by_name.or_else(by_cpuid) {
        return Some(Peak {
            per_socket_gb_s: f.channels as f64 * f.mts as f64 * 8.0 / 1e3,
            sockets,
            channels_per_socket: Some(f.channels),
            mts: Some(f.mts),
            source: PeakSource::Table,
            detail: format!(
                "built-in table{how}: {}, rated {} × {} MT/s per socket; DIMMs may run slower",
                f.name, f.channels, f.mts
            ),
        });
    }
    let (name, gb_s, chmts) = lookup_arm(topo)?;
    Some(Peak {
        per_socket_gb_s: gb_s,
        sockets,
        channels_per_socket: chmts.map(|c| c.0),
        mts: chmts.map(|c| c.1),
        source: PeakSource::Table,
        detail: format!("built-in table: {name}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_knows_common_server_cpus() {
        let per_socket =
            |m: &str| lookup_model(m).map(|f| f.channels as f64 * f.mts as f64 * 8.0 / 1e3);
        assert_eq!(per_socket("AMD EPYC 7H12 64-Core Processor"), Some(204.8));
        assert_eq!(per_socket("AMD EPYC 7742 64-Core Processor"), Some(204.8));
        assert_eq!(per_socket("AMD EPYC 9654 96-Core Processor"), Some(460.8));
        assert_eq!(
            per_socket("Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz"),
            Some(68.256)
        );
        assert_eq!(
            per_socket("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz"),
            Some(127.968)
        );
        assert_eq!(per_socket("Intel(R) Xeon(R) Platinum 8480+"), Some(307.2));
        assert_eq!(
            per_socket("Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz"),
            Some(170.624)
        );
        assert_eq!(
            per_socket("Intel(R) Xeon(R) Gold 6348 CPU @ 2.60GHz"),
            Some(204.8)
        );
        assert_eq!(per_socket("AMD EPYC"), None);
        // A VM's generic "AMD EPYC" is recognised by CPUID instead.
        let genoa = lookup_cpuid("AuthenticAMD", 25, 17).unwrap();
        assert_eq!(
            (genoa.name, genoa.channels, genoa.mts),
            ("AMD EPYC 9004 (Genoa)", 12, 4800)
        );
        assert_eq!(lookup_cpuid("GenuineIntel", 6, 0x8f).unwrap().mts, 4800);
        assert!(lookup_cpuid("AuthenticAMD", 25, 0xa0).is_none());
        assert!(lookup_cpuid("GenuineIntel", 25, 17).is_none());
        assert_eq!(per_socket("Intel(R) Core(TM) i7-8700"), None);
        assert_eq!(per_socket(""), None);
    }

    #[test]
    fn peaks_parse() {
        let gb = |t: &str| parse_peak(t).map(|r| (r.gb_s, r.unit));
        assert_eq!(gb("409.6GB/s"), Ok((409.6, true)));
        assert_eq!(gb("409.6 GB/s"), Ok((409.6, true)));
        assert_eq!(gb("400GB"), Ok((400.0, true)));
        assert_eq!(gb("400gb/S"), Ok((400.0, true)));
        assert_eq!(gb("0.5TB/s"), Ok((500.0, true)));
        assert_eq!(gb("409600MB/s"), Ok((409.6, true)));
        assert_eq!(gb("100"), Ok((100.0, false)));
        assert!(parse_peak("100/s").is_err());
        assert!(parse_peak("fast").is_err());
        assert!(parse_peak("-3").is_err());
    }

    #[test]
    fn user_figures_are_per_socket() {
        let req = PeakRequest::Channels {
            channels: 8,
            mts: 3200,
        };
        let p = user_peak(&req, 2).unwrap();
        assert_eq!(p.node_gb_s(), 409.6);
        assert_eq!(p.for_sockets(1), 204.8);
        let given = GivenRate {
            gb_s: 300.0,
            unit: true,
        };
        let p = user_peak(&PeakRequest::Node(given), 2).unwrap();
        assert_eq!((p.per_socket_gb_s, p.channels_per_socket), (150.0, None));
        assert!(user_peak(&PeakRequest::Detect, 2).is_none());
    }
}

#[cfg(test)]
mod tier_tests {
    use super::*;
    use crate::memory::written::parse;

    #[test]
    fn firmware_bandwidth_bounds_each_placement_by_its_slowest_share() {
        // Near node 0: 307.2 GB/s, far (CXL) node 1: 61.44 GB/s, weights 5:1.
        let (_dir, topo) = crate::topology::fixture::machine("xeon-6-cxl-1s");
        let peak = |mem: &str| tier_peak(&topo, &parse(mem, &topo).unwrap()).map(|p| p.node_gb_s());
        let near = |v: Option<f64>, want: f64| assert!((v.unwrap() - want).abs() < 1e-6, "{v:?}");
        near(peak("bind:1"), 61.44);
        near(peak("interleave:0,1"), 122.88);
        near(peak("split:0=80%,1=20%"), 307.2);
        near(peak("weighted-interleave:0,1"), 368.64);
        assert_eq!(peak("local"), None);
        let p = tier_peak(&topo, &parse("bind:1", &topo).unwrap()).unwrap();
        assert_eq!(p.source, PeakSource::Firmware);
        assert!(p.detail.contains("ACPI HMAT"), "{}", p.detail);
    }
}
