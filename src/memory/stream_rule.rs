//! STREAM's rule for measuring memory: **each** array at least four times
//! the caches serving the CPUs that use it (STREAM's README: "each array
//! must be at least 4 times the size of the available cache memory").
//! This is the one definition: the default size, the dry run, the
//! warning, `--stores auto`'s choice and reason, a health check's refusal
//! and every summary read it, so that they can never disagree.

use crate::units::{Bytes, ELEMENT_BYTES};
use serde::{Deserialize, Serialize};

/// How many times the caches each array must be.
pub const CACHE_MULTIPLE: u64 = 4;

/// STREAM's rule over the caches of some CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamRule {
    /// Bytes of every cache level that serves the CPUs used.
    pub cache_bytes: u64,
}

impl StreamRule {
    pub fn over(cache_bytes: u64) -> StreamRule {
        StreamRule { cache_bytes }
    }

    /// The fewest elements per array for which it holds.
    pub fn min_elements(&self) -> u64 {
        (CACHE_MULTIPLE * self.cache_bytes).div_ceil(ELEMENT_BYTES)
    }

    /// Whether arrays of `elements` elements each measure memory.
    pub fn holds(&self, elements: u64) -> bool {
        elements.saturating_mul(ELEMENT_BYTES) >= CACHE_MULTIPLE * self.cache_bytes
    }

    /// The fact, where `arrays` arrays of `elements` elements each are
    /// under it: what ran measured the caches.
    pub fn in_caches(&self, elements: u64, arrays: u64) -> Option<InCaches> {
        (!self.holds(elements)).then(|| InCaches {
            arrays_bytes: elements * ELEMENT_BYTES * arrays.max(1),
            array_bytes: Some(elements * ELEMENT_BYTES),
            cache_bytes: self.cache_bytes,
            stream_elements: self.min_elements(),
        })
    }

    /// The words every place says it in, for arrays of `elements`:
    /// `each array (645.6 MiB) is under 4 × the 484.0 MiB of caches
    /// serving these CPUs: cache bandwidth`, or `... is at least 4 × ...:
    /// memory (STREAM's rule holds)`.
    pub fn describe(&self, elements: u64) -> String {
        let array = Bytes(elements.saturating_mul(ELEMENT_BYTES));
        let caches = Bytes(self.cache_bytes);
        match self.holds(elements) {
            true => format!(
                "each array ({array}) is at least {CACHE_MULTIPLE} × the {caches} of caches serving these CPUs: memory (STREAM's rule holds)"
            ),
            false => format!(
                "each array ({array}) is under {CACHE_MULTIPLE} × the {caches} of caches serving these CPUs: cache bandwidth; STREAM's rule for memory needs --size {} or more",
                self.min_elements()
            ),
        }
    }
}

/// Arrays under four times the caches of the CPUs that use them, each:
/// what ran measured the caches.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InCaches {
    /// Bytes of all arrays.
    pub arrays_bytes: u64,
    /// Bytes of each array (absent in files from before the rule was
    /// per array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_bytes: Option<u64>,
    /// Bytes of every cache level that serves the CPUs used.
    pub cache_bytes: u64,
    /// The array length (elements) from which STREAM's rule holds.
    pub stream_elements: u64,
}

impl InCaches {
    /// The fact, when each of `arrays` arrays of `elements` elements is
    /// under four times `cache_bytes`.
    pub fn of(elements: u64, arrays: u64, cache_bytes: u64) -> Option<InCaches> {
        StreamRule::over(cache_bytes).in_caches(elements, arrays)
    }

    /// What a reader is told, once.
    pub fn warning(&self) -> String {
        let each = (self.array_bytes).map_or(String::new(), |b| format!(" ({})", Bytes(b)));
        format!(
            "cache bandwidth, not memory: each array{each} is under {CACHE_MULTIPLE} × the {} of caches serving these CPUs; STREAM's rule (each array ≥ {CACHE_MULTIPLE} × the caches) for memory needs --size {} or more (elements per array)",
            Bytes(self.cache_bytes),
            self.stream_elements
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host: 484 MiB of caches. 3 × 84623360 elements (645.6
    /// MiB each, 1.9 GiB together) passed a rule of the arrays together;
    /// each is under 4 × the caches, so they measure the caches.
    #[test]
    fn the_rule_is_per_array_at_both_sides_of_its_boundary() {
        let rule = StreamRule::over(484 << 20);
        assert_eq!(rule.min_elements(), 253_755_392);
        assert!(!rule.holds(84_623_360));
        assert!(rule.in_caches(84_623_360, 3).is_some());
        assert!(!rule.holds(rule.min_elements() - 1));
        assert!(rule.holds(rule.min_elements()));
        assert!(rule.in_caches(rule.min_elements(), 3).is_none());
        let words = rule.describe(84_623_360);
        assert!(
            words.contains("each array (645.6 MiB) is under 4 ×"),
            "{words}"
        );
        assert!(words.contains("--size 253755392"), "{words}");
        let c = rule.in_caches(84_623_360, 3).unwrap();
        assert!(
            c.warning()
                .contains("each array (645.6 MiB) is under 4 × the 484 MiB"),
            "{}",
            c.warning()
        );
        assert!(
            rule.describe(rule.min_elements())
                .contains("STREAM's rule holds")
        );
    }
}
