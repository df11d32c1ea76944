//! STREAM's rule for measuring memory: arrays large enough that no cache
//! holds them. Where a plan's arrays are smaller, what ran measured the
//! caches, and every report says so.

use serde::{Deserialize, Serialize};

/// Arrays under four times the caches of the CPUs that use them, STREAM's
/// rule for measuring memory: what ran measured the caches.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InCaches {
    /// Bytes of all arrays.
    pub arrays_bytes: u64,
    /// Bytes of every cache level that serves the CPUs used.
    pub cache_bytes: u64,
    /// The array length (elements) from which STREAM's rule holds.
    pub stream_elements: u64,
}

impl InCaches {
    /// The fact, when `arrays` arrays of `elements` elements fit in four
    /// times `cache_bytes`.
    pub fn of(elements: u64, arrays: u64, cache_bytes: u64) -> Option<InCaches> {
        let arrays = arrays.max(1);
        let arrays_bytes = elements * crate::units::ELEMENT_BYTES * arrays;
        (arrays_bytes < 4 * cache_bytes).then(|| InCaches {
            arrays_bytes,
            cache_bytes,
            stream_elements: (4 * cache_bytes).div_ceil(crate::units::ELEMENT_BYTES * arrays),
        })
    }

    /// What a reader is told, once.
    pub fn warning(&self) -> String {
        format!(
            "cache bandwidth, not memory: the arrays ({}) fit in 4 × the {} of caches serving these CPUs; STREAM's rule (arrays ≥ 4 × the caches) for memory needs --size {} or more (elements per array)",
            crate::units::Bytes(self.arrays_bytes),
            crate::units::Bytes(self.cache_bytes),
            self.stream_elements
        )
    }
}
