//! A GPU's memory health as its management library counts it: ECC errors,
//! retired pages (before Ampere) and remapped rows (Ampere and later). The
//! limits and actions are NVIDIA DCGM's (its level-1 diagnostic and health
//! watches), which admins already act on: a count, not a rate, so a busy
//! node shows them too.

use serde::{Deserialize, Serialize};

/// DCGM fails a GPU with this many retired pages (single- plus double-bit).
pub const RETIRED_PAGES_LIMIT: u64 = 63;
/// DCGM fails a GPU with this many rows remapped for uncorrectable errors.
pub const UNCORRECTABLE_ROWS_LIMIT: u64 = 512;

/// What the library reports; each count absent where it cannot say (ECC
/// off, a GPU without page retirement or row remapping, an old driver).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuMemoryHealth {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_enabled: Option<bool>,
    /// Corrected and uncorrected ECC errors since the driver loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected_volatile: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected_volatile: Option<u64>,
    /// Pages retired for single- or double-bit errors, over the GPU's life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_pages: Option<u64>,
    /// Bad pages retired (reserved) as AMD's driver counts them: recorded,
    /// not judged (the driver's own threshold, `amdgpu.bad_page_threshold`,
    /// decides when the card is done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_pages: Option<u64>,
    /// A page waits for the next reset to be retired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retirement_pending: Option<bool>,
    /// Rows remapped for uncorrectable errors, over the GPU's life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remapped_uncorrectable: Option<u64>,
    /// A remapping waits for the next reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remap_pending: Option<bool>,
    /// A remapping failed: the GPU has no spare row left for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remap_failed: Option<bool>,
    /// What the driver itself says the GPU needs (NVML's GPU recovery
    /// action, drivers r570 and later), as nvml.h numbers it: 0 nothing,
    /// 1 a GPU reset, 2 a node reboot, 3 peer traffic drained, 4 drain
    /// and reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_action: Option<u32>,
}

/// The driver's recovery action in words, with what an admin does;
/// `None` for "nothing".
fn recovery(action: u32) -> Option<String> {
    Some(match action {
        0 => return None,
        1 => "the driver asks for a GPU reset: drain the node and reset the GPU".into(),
        2 => "the driver asks for a node reboot: drain the node and reboot it".into(),
        3 => "the driver asks that peer-to-peer traffic be drained: stop the jobs using the GPU, then check again".into(),
        4 => "the driver runs the GPU at reduced capacity: drain the node and reset the GPU".into(),
        n => format!("the driver asks for recovery action {n} (see nvidia-smi -q): drain the node"),
    })
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
        let waiting = |pending: Option<bool>| {
            if pending == Some(true) {
                ", one waiting for a reset"
            } else {
                ""
            }
        };
        if let Some(n) = self.retired_pages {
            let pending = waiting(self.retirement_pending);
            parts.push(format!("{n} retired pages{pending}"));
        }
        if let Some(n) = self.bad_pages {
            let pending = waiting(self.retirement_pending);
            parts.push(format!("{n} bad pages retired{pending}"));
        }
        if let Some(n) = self.remapped_uncorrectable {
            let pending = waiting(self.remap_pending);
            let failed = if self.remap_failed == Some(true) {
                ", one failed"
            } else {
                ""
            };
            parts.push(format!("{n} rows remapped{pending}{failed}"));
        }
        if self.recovery_action == Some(0) {
            parts.push("no recovery asked".into());
        }
        parts.join(" · ")
    }

    /// Each fault with its action, as DCGM decides them; empty for a
    /// healthy memory (or one whose library said nothing).
    pub fn findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(n) = self.uncorrected_volatile.filter(|&n| n > 0) {
            out.push(format!(
                "{n} uncorrected ECC errors since the driver loaded: drain the node and reset the GPU"
            ));
        }
        if self.remap_failed == Some(true) {
            out.push("a row remapping failed (no spare row left): replace the GPU".into());
        }
        if let Some(n) = (self.remapped_uncorrectable).filter(|&n| n >= UNCORRECTABLE_ROWS_LIMIT) {
            out.push(format!(
                "{n} rows remapped for uncorrectable errors (DCGM's limit {UNCORRECTABLE_ROWS_LIMIT}): replace the GPU"
            ));
        }
        if self.remap_pending == Some(true) {
            out.push("a row remapping waits for a reset: drain the node and reset the GPU".into());
        }
        if let Some(n) = self.retired_pages.filter(|&n| n >= RETIRED_PAGES_LIMIT) {
            out.push(format!(
                "{n} retired pages (DCGM's limit {RETIRED_PAGES_LIMIT}): replace the GPU"
            ));
        }
        if self.retirement_pending == Some(true) {
            out.push(
                "a page retirement waits for a reset: drain the node and reset the GPU".into(),
            );
        }
        out.extend(self.recovery_action.and_then(recovery));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_of_dcgms_limits_decides_on_its_own_side() {
        let healthy = GpuMemoryHealth {
            ecc_enabled: Some(true),
            corrected_volatile: Some(40),
            uncorrected_volatile: Some(0),
            retired_pages: Some(RETIRED_PAGES_LIMIT - 1),
            retirement_pending: Some(false),
            remapped_uncorrectable: Some(UNCORRECTABLE_ROWS_LIMIT - 1),
            remap_pending: Some(false),
            remap_failed: Some(false),
            bad_pages: None,
            recovery_action: Some(0),
        };
        assert_eq!(healthy.findings(), Vec::<String>::new());
        assert_eq!(GpuMemoryHealth::default().findings(), Vec::<String>::new());
        let cases: [(GpuMemoryHealth, &str); 8] = [
            (
                GpuMemoryHealth {
                    recovery_action: Some(2),
                    ..healthy.clone()
                },
                "the driver asks for a node reboot: drain the node and reboot it",
            ),
            (
                GpuMemoryHealth {
                    recovery_action: Some(9),
                    ..healthy.clone()
                },
                "recovery action 9",
            ),
            (
                GpuMemoryHealth {
                    uncorrected_volatile: Some(1),
                    ..healthy.clone()
                },
                "1 uncorrected ECC errors since the driver loaded: drain the node and reset the GPU",
            ),
            (
                GpuMemoryHealth {
                    remap_failed: Some(true),
                    ..healthy.clone()
                },
                "replace the GPU",
            ),
            (
                GpuMemoryHealth {
                    remapped_uncorrectable: Some(UNCORRECTABLE_ROWS_LIMIT),
                    ..healthy.clone()
                },
                "512 rows remapped for uncorrectable errors",
            ),
            (
                GpuMemoryHealth {
                    remap_pending: Some(true),
                    ..healthy.clone()
                },
                "a row remapping waits for a reset",
            ),
            (
                GpuMemoryHealth {
                    retired_pages: Some(RETIRED_PAGES_LIMIT),
                    ..healthy.clone()
                },
                "63 retired pages (DCGM's limit 63): replace the GPU",
            ),
            (
                GpuMemoryHealth {
                    retirement_pending: Some(true),
                    ..healthy.clone()
                },
                "a page retirement waits for a reset",
            ),
        ];
        assert_eq!(
            healthy.describe(),
            "ECC on · 40 corrected, 0 uncorrected since the driver loaded · 62 retired pages · 511 rows remapped · no recovery asked"
        );
        let amd = GpuMemoryHealth {
            ecc_enabled: Some(false),
            bad_pages: Some(3),
            retirement_pending: Some(true),
            ..GpuMemoryHealth::default()
        };
        assert_eq!(
            amd.describe(),
            "ECC off · 3 bad pages retired, one waiting for a reset"
        );
        for (health, want) in cases {
            let found = health.findings();
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(found[0].contains(want), "{found:?} lacks {want}");
        }
    }
}
