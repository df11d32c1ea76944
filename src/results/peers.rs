//! `membw peers`: the GPU↔GPU matrix as a document (`--format json`,
//! kind `membw-peers`): one cell per ordered pair and method, its rate
//! over the repetitions with the interval of their mean, the path the
//! driver gave the pair and whether what arrived was right.

use super::targets::{Device, FabricPath};
use super::{Host, Stats};
use serde::{Deserialize, Serialize};

pub const PEERS_KIND: &str = "membw-peers";

/// How one cell of the matrix copies, nvbandwidth's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PeerMethod {
    /// The copy engine, queued by the source: it writes the peer.
    CeWrite,
    /// The copy engine, queued by the destination: it reads the peer.
    CeRead,
    /// The source's threads store into the peer's memory.
    SmWrite,
    /// The destination's threads load from the peer's memory.
    SmRead,
    /// The copy engine both ways at once, queued by the source.
    CeBidir,
}

impl PeerMethod {
    pub const ALL: [PeerMethod; 5] = [
        PeerMethod::CeWrite,
        PeerMethod::CeRead,
        PeerMethod::SmWrite,
        PeerMethod::SmRead,
        PeerMethod::CeBidir,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PeerMethod::CeWrite => "ce-write",
            PeerMethod::CeRead => "ce-read",
            PeerMethod::SmWrite => "sm-write",
            PeerMethod::SmRead => "sm-read",
            PeerMethod::CeBidir => "ce-bidir",
        }
    }

    pub fn parse(name: &str) -> Option<PeerMethod> {
        PeerMethod::ALL.into_iter().find(|m| m.name() == name)
    }

    /// What it does, in a few words (a table's title).
    pub fn describe(self) -> &'static str {
        match self {
            PeerMethod::CeWrite => "copy engine, the source writes",
            PeerMethod::CeRead => "copy engine, the destination reads",
            PeerMethod::SmWrite => "copy kernel on the source, storing to the peer",
            PeerMethod::SmRead => "copy kernel on the destination, loading from the peer",
            PeerMethod::CeBidir => "copy engine, both ways at once (bytes of both)",
        }
    }

    /// Whether it needs the direct path: a kernel cannot reach a peer the
    /// driver only stages copies to.
    pub fn needs_direct(self) -> bool {
        matches!(self, PeerMethod::SmWrite | PeerMethod::SmRead)
    }

    pub fn both_ways(self) -> bool {
        self == PeerMethod::CeBidir
    }

    /// Whether the destination queues it (and its events time it).
    pub fn by_destination(self) -> bool {
        matches!(self, PeerMethod::CeRead | PeerMethod::SmRead)
    }
}

/// One ordered pair, by one method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerCell {
    /// The source device's index, and the destination's.
    pub from: u32,
    pub to: u32,
    /// `ce-write`, `ce-read`, `sm-write`, `sm-read` or `ce-bidir`.
    pub method: String,
    /// `direct` (peer access: NVLink or PCIe P2P) or `staged` (the
    /// driver copies through host memory), as the queuing device has it.
    pub path: String,
    /// Bytes one repetition moves (both ways' for `ce-bidir`).
    pub bytes: u64,
    /// The best repetition's rate, GB/s; absent where not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_gb_s: Option<f64>,
    /// Every repetition's rate: mean, sd, min, max, n and the 95 %
    /// interval of the mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rates: Option<Stats>,
    /// What came back wrong, where something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrong: Option<String>,
    /// Why it was not measured (a kernel cannot reach a staged peer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// The pair's NVLink path (links, through switches or not, its peak
    /// each way), where both devices' management library reports links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricPath>,
}

impl PeerCell {
    pub fn method(&self) -> Option<PeerMethod> {
        PeerMethod::parse(&self.method)
    }

    /// What the path carries at most for this cell's bytes (both ways'
    /// for `ce-bidir`), GB/s.
    pub fn path_peak_gb_s(&self) -> Option<f64> {
        let each_way = self.fabric.as_ref()?.peak_gb_s?;
        let ways = if self.method().is_some_and(PeerMethod::both_ways) {
            2.0
        } else {
            1.0
        };
        Some(each_way * ways)
    }

    /// The best rate's share of the path's peak.
    pub fn share_of_path(&self) -> Option<f64> {
        Some(self.best_gb_s? / self.path_peak_gb_s()?)
    }
}

/// Gives each cell its pair's fabric path, from the devices' facts.
pub fn add_paths(cells: &mut [PeerCell], devices: &[Device]) {
    let find = |i: u32| devices.iter().find(|d| d.id.index == i);
    for c in cells {
        if let (Some(a), Some(b)) = (find(c.from), find(c.to)) {
            c.fabric = super::targets::fabric::path(a, b);
        }
    }
}

/// The whole matrix.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerReport {
    pub schema_version: u32,
    /// Always `membw-peers`.
    pub kind: String,
    pub timestamp: String,
    pub host: Host,
    /// Every device of the set, in the order measured.
    pub devices: Vec<Device>,
    /// Doubles per buffer, and timed repetitions per cell.
    pub elements: u64,
    pub ntimes: usize,
    pub cells: Vec<PeerCell>,
    /// How the devices' vendor names its fabric's paths (`NV18`), as its
    /// platform supplies it: for the path matrix, not kept in files.
    #[serde(skip)]
    pub fabric: Option<&'static super::targets::FabricKind>,
}

impl PeerReport {
    /// The cell of one ordered pair and method.
    pub fn cell(&self, method: PeerMethod, from: u32, to: u32) -> Option<&PeerCell> {
        (self.cells.iter()).find(|c| c.from == from && c.to == to && c.method() == Some(method))
    }

    /// The methods measured, in order.
    pub fn methods(&self) -> Vec<PeerMethod> {
        let mut out: Vec<PeerMethod> = Vec::new();
        for m in self.cells.iter().filter_map(PeerCell::method) {
            if !out.contains(&m) {
                out.push(m);
            }
        }
        out
    }

    /// Every wrong copy, as `cuda0 → cuda1 ce-write: element 3 held …`.
    pub fn wrong(&self) -> Vec<String> {
        (self.cells.iter())
            .filter_map(|c| {
                let w = c.wrong.as_ref()?;
                Some(format!("{} → {} {}: {w}", c.from, c.to, c.method))
            })
            .collect()
    }
}
