//! NVIDIA's memory counters as NVML reads them (retired pages before
//! Ampere, remapped rows since, the recovery the driver asks for), each
//! with NVIDIA DCGM's limit and action (its level-1 diagnostic and health
//! watches), which admins already act on: a count, not a rate, so a busy
//! node shows them too. The simulated GPUs report them as NVML does.

use crate::results::targets::MemoryCounter;

/// DCGM fails a GPU with this many retired pages (single- plus double-bit).
pub const RETIRED_PAGES_LIMIT: u64 = 63;
/// DCGM fails a GPU with this many rows remapped for uncorrectable errors.
pub const UNCORRECTABLE_ROWS_LIMIT: u64 = 512;

/// What NVML counted of one GPU's memory beyond ECC; each absent where
/// NVML cannot say (no page retirement since Ampere, no row remapping
/// before it, no recovery field before driver r570).
#[derive(Debug, Clone, Copy, Default)]
pub struct NvidiaMemoryCounts {
    /// Pages retired for single- or double-bit errors, over the GPU's life.
    pub retired_pages: Option<u64>,
    /// A page waits for the next reset to be retired.
    pub retirement_pending: Option<bool>,
    /// Rows remapped for uncorrectable errors over the GPU's life, whether
    /// a remapping waits for a reset, whether one failed.
    pub remapped_rows: Option<(u64, bool, bool)>,
    /// nvml.h's GPU recovery action: 0 nothing, 1 a GPU reset, 2 a node
    /// reboot, 3 peer traffic drained, 4 drain and reset.
    pub recovery_action: Option<u32>,
}

/// The counters NVML gave, as membw's records carry them, with DCGM's
/// limits: `membw_gpu_<name>` is each one's metric.
pub fn counters(counts: &NvidiaMemoryCounts) -> Vec<MemoryCounter> {
    let mut out = Vec::new();
    if let Some(n) = counts.retired_pages {
        out.push(
            MemoryCounter::count(
                "retired_pages",
                n,
                "retired pages",
                "Pages an NVIDIA GPU retired for single- or double-bit errors over its life: 63 or more, replace it (DCGM).",
            )
            .failing_at(
                RETIRED_PAGES_LIMIT,
                "{n} retired pages (DCGM's limit 63): replace the GPU",
            ),
        );
    }
    if let Some(pending) = counts.retirement_pending {
        out.push(MemoryCounter::state(
            "retirement_pending",
            pending,
            "a page retirement waits for a reset: drain the node and reset the GPU",
            "1 when a page waits for a GPU reset to be retired.",
        ));
    }
    if let Some((rows, pending, failed)) = counts.remapped_rows {
        out.push(
            MemoryCounter::count(
                "remapped_rows_uncorrectable",
                rows,
                "rows remapped",
                "Rows a GPU remapped for uncorrectable errors over its life: 512 or more, replace it (DCGM).",
            )
            .failing_at(
                UNCORRECTABLE_ROWS_LIMIT,
                "{n} rows remapped for uncorrectable errors (DCGM's limit 512): replace the GPU",
            ),
        );
        out.push(MemoryCounter::state(
            "remap_pending",
            pending,
            "a row remapping waits for a reset: drain the node and reset the GPU",
            "1 when a row remapping waits for a GPU reset.",
        ));
        out.push(MemoryCounter::state(
            "remap_failed",
            failed,
            "a row remapping failed (no spare row left): replace the GPU",
            "1 when a row remapping failed (no spare row left): replace the GPU.",
        ));
    }
    if let Some(action) = counts.recovery_action {
        let counter = MemoryCounter {
            name: "recovery_action".into(),
            value: u64::from(action),
            reads: (action == 0).then(|| "no recovery asked".into()),
            help: "What the NVIDIA driver says the GPU needs (nvml.h: 0 none, 1 GPU reset, 2 node reboot, 3 drain peer traffic, 4 drain and reset).".into(),
            fails: None,
        };
        // The words are the action's own: none is asked for at 0.
        out.push(match recovery(action) {
            Some(finding) => counter.failing_at(1, &finding),
            None => counter,
        });
    }
    out
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
        n => format!(
            "the driver asks for recovery action {n} (see nvidia-smi -q): drain the node"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::targets::GpuMemoryHealth;

    #[test]
    fn each_of_dcgms_limits_decides_on_its_own_side() {
        let healthy = NvidiaMemoryCounts {
            retired_pages: Some(RETIRED_PAGES_LIMIT - 1),
            retirement_pending: Some(false),
            remapped_rows: Some((UNCORRECTABLE_ROWS_LIMIT - 1, false, false)),
            recovery_action: Some(0),
        };
        let health = |counts: NvidiaMemoryCounts| GpuMemoryHealth {
            ecc_enabled: Some(true),
            corrected_volatile: Some(40),
            uncorrected_volatile: Some(0),
            counters: counters(&counts),
        };
        assert_eq!(health(healthy).findings(), Vec::<String>::new());
        assert_eq!(
            health(healthy).describe(),
            "ECC on · 40 corrected, 0 uncorrected since the driver loaded · 62 retired pages · 511 rows remapped · no recovery asked"
        );
        let cases: [(NvidiaMemoryCounts, &str); 7] = [
            (
                NvidiaMemoryCounts {
                    recovery_action: Some(2),
                    ..healthy
                },
                "the driver asks for a node reboot: drain the node and reboot it",
            ),
            (
                NvidiaMemoryCounts {
                    recovery_action: Some(9),
                    ..healthy
                },
                "recovery action 9",
            ),
            (
                NvidiaMemoryCounts {
                    remapped_rows: Some((0, false, true)),
                    ..healthy
                },
                "a row remapping failed (no spare row left): replace the GPU",
            ),
            (
                NvidiaMemoryCounts {
                    remapped_rows: Some((UNCORRECTABLE_ROWS_LIMIT, false, false)),
                    ..healthy
                },
                "512 rows remapped for uncorrectable errors (DCGM's limit 512): replace the GPU",
            ),
            (
                NvidiaMemoryCounts {
                    remapped_rows: Some((0, true, false)),
                    ..healthy
                },
                "a row remapping waits for a reset",
            ),
            (
                NvidiaMemoryCounts {
                    retired_pages: Some(RETIRED_PAGES_LIMIT),
                    ..healthy
                },
                "63 retired pages (DCGM's limit 63): replace the GPU",
            ),
            (
                NvidiaMemoryCounts {
                    retirement_pending: Some(true),
                    ..healthy
                },
                "a page retirement waits for a reset",
            ),
        ];
        for (counts, want) in cases {
            let found = health(counts).findings();
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(found[0].contains(want), "{found:?} lacks {want}");
        }
        // What NVML cannot give is no counter at all, not a zero.
        assert!(counters(&NvidiaMemoryCounts::default()).is_empty());
        assert!(
            counters(&healthy)
                .iter()
                .all(MemoryCounter::has_metric_name)
        );
    }
}
