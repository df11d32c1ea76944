//! A GPU's memory health as its management library counts it: whether
//! ECC is on, its corrected and uncorrected errors (every vendor's
//! library counts them), and the vendor's own counters (pages retired,
//! rows remapped, a recovery the driver asks for) as data the vendor
//! supplies: each with its name, how it reads, and where it fails the GPU
//! with what action. A new vendor adds counters, not fields here.

use serde::{Deserialize, Serialize};

/// What the library reports; each count absent where it cannot say (ECC
/// off, an old driver).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuMemoryHealth {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_enabled: Option<bool>,
    /// Corrected and uncorrected ECC errors since the driver loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected_volatile: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected_volatile: Option<u64>,
    /// The vendor's own counters, those its library gave, in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<MemoryCounter>,
}

/// One of a vendor's memory counters and what it means, as the vendor's
/// folder defines it (NVIDIA's from DCGM's limits, AMD's from ROCm SMI).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryCounter {
    /// Its metric's name after `membw_gpu_` (`retired_pages`): lower-case
    /// letters, digits and `_`.
    pub name: String,
    /// A count, or a state as 1 (set) and 0.
    pub value: u64,
    /// How the counters' line reads it, `{n}` its value (`{n} retired
    /// pages`); absent for a state, which shows as its finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<String>,
    /// Its metric's help line: the vendor's words for `--prom`, not kept
    /// in records (the names are documented).
    #[serde(skip)]
    pub help: String,
    /// Where it fails the GPU; absent for a count recorded, not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fails: Option<CounterLimit>,
}

/// The least value of a counter that fails the GPU, and what is said then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterLimit {
    /// 1 for "any".
    pub at: u64,
    /// The finding with its action, `{n}` the value: `{n} retired pages
    /// (DCGM's limit 63): replace the GPU`.
    pub finding: String,
}

impl MemoryCounter {
    /// A count that reads `{n} <words>` and fails at `limit`, if any.
    pub fn count(name: &str, value: u64, words: &str, help: &str) -> MemoryCounter {
        MemoryCounter {
            name: name.into(),
            value,
            reads: Some(format!("{{n}} {words}")),
            help: help.into(),
            fails: None,
        }
    }

    /// A state (set or not) that fails the GPU when set, with `finding`.
    pub fn state(name: &str, set: bool, finding: &str, help: &str) -> MemoryCounter {
        MemoryCounter {
            name: name.into(),
            value: u64::from(set),
            reads: None,
            help: help.into(),
            fails: Some(CounterLimit {
                at: 1,
                finding: finding.into(),
            }),
        }
    }

    /// The counter, failing from `at` with `finding`.
    pub fn failing_at(mut self, at: u64, finding: &str) -> MemoryCounter {
        self.fails = Some(CounterLimit {
            at,
            finding: finding.into(),
        });
        self
    }

    /// Its finding, where its value reaches its limit.
    pub fn finding(&self) -> Option<String> {
        let limit = self.fails.as_ref().filter(|l| self.value >= l.at)?;
        Some(limit.finding.replace("{n}", &self.value.to_string()))
    }

    /// Whether its name may stand in a metric's name.
    pub fn has_metric_name(&self) -> bool {
        !self.name.is_empty()
            && (self.name.bytes())
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    }
}

/// One platform's GPUs' memory counters as its management library read
/// them for `topo`, without opening a device; or why it could not.
#[derive(Debug, Clone, Serialize)]
pub struct GpuMemoryRead {
    /// The backend whose library read them (`cuda`).
    pub backend: String,
    /// Why the library could not read them (it does not load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_readable: Option<String>,
    pub devices: Vec<GpuMemoryAt>,
}

/// A GPU's counters, by its PCI address.
#[derive(Debug, Clone, Serialize)]
pub struct GpuMemoryAt {
    /// `0000:18:00.0`.
    pub bus_id: String,
    pub health: GpuMemoryHealth,
}

impl GpuMemoryHealth {
    /// The counters in words, those the library gave: `ECC on · 7
    /// corrected, 2 uncorrected since the driver loaded · 8 retired pages`.
    pub fn describe(&self) -> String {
        let mut parts = vec![match self.ecc_enabled {
            Some(true) => "ECC on".to_string(),
            Some(false) => "ECC off".to_string(),
            None => "ECC unknown".to_string(),
        }];
        if let (Some(c), Some(u)) = (self.corrected_volatile, self.uncorrected_volatile) {
            parts.push(format!(
                "{c} corrected, {u} uncorrected since the driver loaded"
            ));
        }
        for c in &self.counters {
            parts.extend((c.reads.as_ref()).map(|r| r.replace("{n}", &c.value.to_string())));
        }
        parts.join(" · ")
    }

    /// Each fault with its action: uncorrected errors (which every
    /// vendor's checks fail on: DCGM, ROCm's RDC), then each counter at
    /// its vendor's limit; empty for a healthy memory (or one whose
    /// library said nothing).
    pub fn findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(n) = self.uncorrected_volatile.filter(|&n| n > 0) {
            out.push(format!(
                "{n} uncorrected ECC errors since the driver loaded: drain the node and reset the GPU"
            ));
        }
        out.extend(self.counters.iter().filter_map(MemoryCounter::finding));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vendor's counter, as data: it reads as its words say, fails from
    /// its limit and not below, and a count with no limit never fails.
    #[test]
    fn a_counter_fails_from_its_limit_with_its_own_words() {
        let spare = |n| {
            MemoryCounter::count("spare_rows_used", n, "spare rows used", "Spare rows used.")
                .failing_at(
                    10,
                    "{n} spare rows used (the vendor's limit 10): replace the GPU",
                )
        };
        let health = |counters| GpuMemoryHealth {
            ecc_enabled: Some(true),
            corrected_volatile: Some(4),
            uncorrected_volatile: Some(0),
            counters,
        };
        let under = health(vec![
            spare(9),
            MemoryCounter::count("bad_pages", 500, "bad pages", "Recorded."),
            MemoryCounter::state("swap_pending", false, "a swap waits: reset", "1 waiting."),
        ]);
        assert_eq!(under.findings(), Vec::<String>::new());
        assert_eq!(
            under.describe(),
            "ECC on · 4 corrected, 0 uncorrected since the driver loaded · 9 spare rows used · 500 bad pages"
        );
        let over = health(vec![
            spare(10),
            MemoryCounter::state("swap_pending", true, "a swap waits: reset", "1 waiting."),
        ]);
        assert_eq!(
            over.findings(),
            [
                "10 spare rows used (the vendor's limit 10): replace the GPU",
                "a swap waits: reset"
            ]
        );
        let ue = GpuMemoryHealth {
            uncorrected_volatile: Some(2),
            ..GpuMemoryHealth::default()
        };
        assert_eq!(
            ue.findings(),
            ["2 uncorrected ECC errors since the driver loaded: drain the node and reset the GPU"]
        );
        assert_eq!(GpuMemoryHealth::default().describe(), "ECC unknown");
        assert_eq!(GpuMemoryHealth::default().findings(), Vec::<String>::new());
        // A record's name that would break a metric's line is not one.
        assert!(spare(0).has_metric_name());
        for bad in ["", "Rows", "rows{x=\"1\"}", "rows pending", "rows\nx 1"] {
            let c = MemoryCounter::count(bad, 1, "x", "x");
            assert!(!c.has_metric_name(), "{bad:?}");
        }
    }
}
