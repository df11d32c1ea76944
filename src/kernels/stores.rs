//! The store instructions: what a user asks for ([`StoresRequest`]), and
//! what each kernel runs with and why ([`KernelStores`]).
//!
//! `auto` decides per kernel, by what that kernel's arrays do, not by
//! STREAM's reporting rule (which says whether a figure may be called
//! memory bandwidth, not which stores are faster):
//!
//! - the arrays it touches together fit in the caches below the last level
//!   of the threads (their own L1 and L2, which no other tenant shares):
//!   regular stores, whose lines stay in the caches;
//! - they are at least [`EXCEED_MULTIPLE`] × every cache serving the
//!   threads: streaming stores, which skip the write-allocate read of
//!   lines no cache could keep;
//! - in between, where a VM's share of the last-level cache, an L3 shared
//!   with other tenants or a victim cache decide, or where the caches are
//!   unknown: both are timed before the repetitions and the faster is kept
//!   ([`StoresBasis::Measured`], filled in by the protocol).

use super::{Isa, KernelId, StoreMode};
use crate::units::{Bytes, ELEMENT_BYTES};
use serde::{Deserialize, Serialize};

/// The store instructions asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoresRequest {
    /// Per kernel, by what its arrays do against the caches (this module).
    Auto,
    Regular,
    Nt,
}

impl StoresRequest {
    pub fn name(self) -> &'static str {
        match self {
            StoresRequest::Auto => "auto",
            StoresRequest::Regular => "regular",
            StoresRequest::Nt => "nt",
        }
    }
}

impl std::fmt::Display for StoresRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// From this many times every cache serving the threads, a kernel's arrays
/// together leave at most a quarter of their lines to be found there
/// again, whatever the replacement policy: streaming stores without a
/// measurement.
pub const EXCEED_MULTIPLE: u64 = 4;

/// The caches serving the threads, as sysfs reports them (0: unknown).
/// A VM's or a shared last-level cache's size is what the host reports,
/// not what these threads get: only the levels below it are theirs alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadCaches {
    /// Every level below the last (L1, L2), summed over the threads' cores.
    pub below_last: u64,
    /// Every level, the last included.
    pub all: u64,
}

impl ThreadCaches {
    /// The caches serving `cpus`: the levels below the last (the threads'
    /// own) and all.
    pub fn serving(topo: &crate::topology::Topology, cpus: &[usize]) -> ThreadCaches {
        let used = cpus.iter().copied().collect();
        // Unknown caches leave both at 0: auto then times both modes.
        let Ok(all) = topo.known_cache_sum(&used).map(|b| b.0) else {
            return ThreadCaches::default();
        };
        ThreadCaches {
            below_last: all.saturating_sub(topo.llc_sum(&used).0),
            all,
        }
    }
}

/// The store instructions one kernel ran with, and why.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KernelStores {
    pub mode: StoreMode,
    #[serde(flatten)]
    pub basis: StoresBasis,
}

/// Why a kernel ran the stores it ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "basis", rename_all = "snake_case")]
pub enum StoresBasis {
    /// `--stores regular` or `--stores nt`.
    Requested,
    /// The ISA's kernels have no streaming stores (the portable loops).
    NoStreamingStores,
    /// The kernel writes nothing: its stores do not matter.
    NoWrites,
    /// Its arrays together fit in the threads' caches below the last level.
    Fits {
        arrays_bytes: u64,
        below_last_bytes: u64,
    },
    /// Its arrays together are at least [`EXCEED_MULTIPLE`] × all the caches.
    Exceeds { arrays_bytes: u64, cache_bytes: u64 },
    /// Near the edge: to be timed before the repetitions (a plan's).
    NearEdge { arrays_bytes: u64, cache_bytes: u64 },
    /// Near the edge, and not timed (ranks under a gate keep the plan's
    /// stores; a target that cannot switch): the mode its size leans to.
    Untimed { arrays_bytes: u64, cache_bytes: u64 },
    /// Near the edge: both modes timed before the repetitions, alternated,
    /// on these arrays and threads, the faster best kept (`within`: the
    /// rounds' noise, where it was not ahead beyond it).
    Measured {
        arrays_bytes: u64,
        cache_bytes: u64,
        regular_gb_s: f64,
        nt_gb_s: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        within: Option<f64>,
        /// Kept with the other timed kernels' mode: each kernel's faster
        /// mode, mixed, ran slower (one kernel's streaming stores evicted
        /// lines the next would have found).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        together: bool,
    },
}

/// Bytes of the distinct arrays `kernel` touches, `elements` each (a
/// device's host buffers are not the CPU team's).
pub fn arrays_bytes(kernel: KernelId, elements: u64) -> u64 {
    let mut arrays: Vec<_> = (kernel.spec().arrays())
        .filter(|a| !a.host_buffer())
        .collect();
    arrays.sort();
    arrays.dedup();
    elements
        .saturating_mul(ELEMENT_BYTES)
        .saturating_mul(arrays.len() as u64)
}

impl KernelStores {
    /// What `kernel` runs with for `request`, from its arrays of
    /// `elements` each against the threads' `caches`.
    pub fn decide(
        request: StoresRequest,
        isa: Isa,
        kernel: KernelId,
        elements: u64,
        caches: ThreadCaches,
    ) -> KernelStores {
        let at = |mode, basis| KernelStores { mode, basis };
        match request {
            StoresRequest::Regular => return at(StoreMode::Regular, StoresBasis::Requested),
            StoresRequest::Nt => return at(StoreMode::Nt, StoresBasis::Requested),
            StoresRequest::Auto => {}
        }
        if !isa.has_streaming_stores() {
            return at(StoreMode::Regular, StoresBasis::NoStreamingStores);
        }
        if kernel.spec().writes.is_empty() {
            return at(StoreMode::Regular, StoresBasis::NoWrites);
        }
        let arrays_bytes = arrays_bytes(kernel, elements);
        let cache_bytes = caches.all;
        if cache_bytes > 0 && arrays_bytes >= EXCEED_MULTIPLE.saturating_mul(cache_bytes) {
            return at(
                StoreMode::Nt,
                StoresBasis::Exceeds {
                    arrays_bytes,
                    cache_bytes,
                },
            );
        }
        if caches.below_last > 0 && arrays_bytes <= caches.below_last {
            return at(
                StoreMode::Regular,
                StoresBasis::Fits {
                    arrays_bytes,
                    below_last_bytes: caches.below_last,
                },
            );
        }
        at(
            Self::lean(arrays_bytes, cache_bytes),
            StoresBasis::NearEdge {
                arrays_bytes,
                cache_bytes,
            },
        )
    }

    /// Near the edge, the mode the size leans to (timed first; kept where
    /// nothing is timed, as for ranks): regular where the arrays are
    /// within what sysfs reports, streaming past it or where it is unknown.
    fn lean(arrays_bytes: u64, cache_bytes: u64) -> StoreMode {
        match cache_bytes > 0 && arrays_bytes <= cache_bytes {
            true => StoreMode::Regular,
            false => StoreMode::Nt,
        }
    }

    /// Whether the protocol times both modes before the repetitions.
    pub fn to_measure(&self) -> bool {
        matches!(self.basis, StoresBasis::NearEdge { .. })
    }

    /// A choice left to be timed that was not: the mode its size leans to.
    pub fn untimed(self) -> KernelStores {
        match self.basis {
            StoresBasis::NearEdge {
                arrays_bytes,
                cache_bytes,
            } => KernelStores {
                mode: self.mode,
                basis: StoresBasis::Untimed {
                    arrays_bytes,
                    cache_bytes,
                },
            },
            _ => self,
        }
    }

    /// The modes to time, the one kept when they tie first.
    pub fn candidates(&self) -> [StoreMode; 2] {
        match self.mode {
            StoreMode::Regular => [StoreMode::Regular, StoreMode::Nt],
            StoreMode::Nt => [StoreMode::Nt, StoreMode::Regular],
        }
    }

    /// The measured choice: `mode` kept after both modes ran at these
    /// best rates (by [`candidates`](Self::candidates)' order); `within`
    /// where neither beat the other beyond the noise; `together` where the
    /// mode is the other timed kernels' (their mix was slower).
    pub fn measured(
        &self,
        mode: StoreMode,
        best_gb_s: [f64; 2],
        within: Option<f64>,
        together: bool,
    ) -> Self {
        let (arrays_bytes, cache_bytes) = match self.basis {
            StoresBasis::NearEdge {
                arrays_bytes,
                cache_bytes,
            } => (arrays_bytes, cache_bytes),
            _ => (0, 0),
        };
        let [first, _] = self.candidates();
        let rate = |m: StoreMode| {
            if m == first {
                best_gb_s[0]
            } else {
                best_gb_s[1]
            }
        };
        KernelStores {
            mode,
            basis: StoresBasis::Measured {
                arrays_bytes,
                cache_bytes,
                regular_gb_s: rate(StoreMode::Regular),
                nt_gb_s: rate(StoreMode::Nt),
                within,
                together,
            },
        }
    }

    /// Where streaming stores were timed beside regular ones: how many
    /// times faster they were (below 1: slower).
    pub fn nt_over_regular(&self) -> Option<f64> {
        match self.basis {
            StoresBasis::Measured {
                regular_gb_s,
                nt_gb_s,
                ..
            } if regular_gb_s > 0.0 => Some(nt_gb_s / regular_gb_s),
            _ => None,
        }
    }

    /// The evidence the timing gives about the caches: streaming stores,
    /// which bypass them, clearly faster (beyond the noise the choice was
    /// made in) say the arrays were not in the caches these threads get.
    pub fn shows_arrays_past_caches(&self) -> bool {
        match self.basis {
            StoresBasis::Measured {
                within: None,
                regular_gb_s,
                nt_gb_s,
                ..
            } => self.mode == StoreMode::Nt && nt_gb_s > regular_gb_s,
            _ => false,
        }
    }

    /// Why, for every kernel at once, where each has this one's mode and
    /// kind of reason and the reason holds no figure of its own: `every
    /// kernel's arrays are at least 4 × the 304.2 MiB of caches serving
    /// these CPUs`. `None` for a measured choice, whose rates are its own.
    pub fn why_every(&self, others: &[KernelStores]) -> Option<String> {
        let kind = std::mem::discriminant(&self.basis);
        let alike =
            |s: &KernelStores| s.mode == self.mode && std::mem::discriminant(&s.basis) == kind;
        if !others.iter().all(alike) {
            return None;
        }
        Some(match self.basis {
            StoresBasis::Measured { .. } => return None,
            StoresBasis::Fits {
                below_last_bytes, ..
            } => format!(
                "every kernel's arrays fit in the {} of caches below the last level of these CPUs",
                Bytes(below_last_bytes)
            ),
            StoresBasis::Exceeds { cache_bytes, .. } => format!(
                "every kernel's arrays are at least {EXCEED_MULTIPLE} × the {} of caches serving these CPUs",
                Bytes(cache_bytes)
            ),
            StoresBasis::NearEdge { cache_bytes, .. } => format!(
                "every kernel's arrays are near {}: both modes timed before the run, the faster kept, {} on a tie",
                caches_words(cache_bytes),
                self.mode
            ),
            StoresBasis::Untimed { cache_bytes, .. } => format!(
                "every kernel's arrays are near {}; not timed (ranks, and a backend that cannot switch, keep the plan's stores): the mode their size leans to",
                caches_words(cache_bytes)
            ),
            _ => self.why(),
        })
    }

    /// Why, in words: `measured: nt 48.6 GB/s, regular 39.2 GB/s (1.24×);
    /// its arrays (229 MiB) are between the 4.2 MiB of caches below the last
    /// level and 4 × the 484 MiB of all caches serving these CPUs`.
    pub fn why(&self) -> String {
        match self.basis {
            StoresBasis::Requested => "requested".into(),
            StoresBasis::NoStreamingStores => "the ISA has no streaming stores".into(),
            StoresBasis::NoWrites => "writes nothing".into(),
            StoresBasis::Fits {
                arrays_bytes,
                below_last_bytes,
            } => format!(
                "its arrays ({}) fit in the {} of caches below the last level of these CPUs",
                Bytes(arrays_bytes),
                Bytes(below_last_bytes)
            ),
            StoresBasis::Exceeds {
                arrays_bytes,
                cache_bytes,
            } => format!(
                "its arrays ({}) are at least {EXCEED_MULTIPLE} × the {} of caches serving these CPUs",
                Bytes(arrays_bytes),
                Bytes(cache_bytes)
            ),
            StoresBasis::NearEdge {
                arrays_bytes,
                cache_bytes,
            } => format!(
                "its arrays ({}) are near {}: both modes timed before the run, the faster kept, {} on a tie",
                Bytes(arrays_bytes),
                caches_words(cache_bytes),
                self.mode
            ),
            StoresBasis::Untimed {
                arrays_bytes,
                cache_bytes,
            } => format!(
                "its arrays ({}) are near {}; not timed (ranks, and a backend that cannot switch, keep the plan's stores): the mode their size leans to",
                Bytes(arrays_bytes),
                caches_words(cache_bytes)
            ),
            StoresBasis::Measured {
                arrays_bytes,
                cache_bytes,
                regular_gb_s,
                nt_gb_s,
                within,
                together,
            } => {
                let ratio = nt_gb_s / regular_gb_s.max(f64::MIN_POSITIVE);
                let verdict = match (within, together) {
                    (_, true) => {
                        "kept with the other kernels' mode: each one's faster, mixed, ran slower"
                            .to_string()
                    }
                    (Some(noise), _) => format!(
                        "the faster best, inside the rounds' {:.0} % noise",
                        100.0 * noise
                    ),
                    (None, _) => "the faster, kept".to_string(),
                };
                format!(
                    "measured: nt {nt_gb_s:.1} GB/s, regular {regular_gb_s:.1} GB/s, nt/regular {ratio:.2}× ({verdict}); its arrays ({}) are near {}",
                    Bytes(arrays_bytes),
                    caches_words(cache_bytes)
                )
            }
        }
    }
}

/// The caches a decision weighed, as sysfs reported them.
fn caches_words(cache_bytes: u64) -> String {
    match cache_bytes {
        0 => "caches of unknown size".to_string(),
        b => format!("the {} of caches sysfs reports", Bytes(b)),
    }
}

#[cfg(test)]
#[path = "stores_tests.rs"]
mod tests;
