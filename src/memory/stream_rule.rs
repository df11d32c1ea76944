//! STREAM's rule for measuring memory: **each** array at least four times
//! the caches serving the CPUs that use it (STREAM's README: "each array
//! must be at least 4 times the size of the available cache memory").
//! This is the one definition: the default size, the dry run, the
//! warning, `--stores auto`'s choice and reason, a health check's refusal
//! and every summary read it, so that they can never disagree.

use crate::kernels::KernelId;
use crate::topology::cpulist::IdSet;
use crate::topology::{Topology, UnknownCaches};
use crate::units::{Bytes, ELEMENT_BYTES};
use serde::{Deserialize, Serialize};

/// How many times the caches each array must be.
pub const CACHE_MULTIPLE: u64 = 4;

/// Where arrays stand against the caches serving the CPUs that use them:
/// all of them within the caches (cache bandwidth); past the caches
/// together but each under STREAM's rule, where rates near memory's
/// still get help from the caches; the rule holds (memory); or, where
/// the caches' size is unknown, not judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    Caches,
    UnderRule,
    Memory,
    Unknown,
}

impl Band {
    /// Of `arrays` arrays of `array_bytes` each, against `cache_bytes`.
    pub fn of(array_bytes: u64, arrays: u64, cache_bytes: u64) -> Band {
        if array_bytes >= CACHE_MULTIPLE * cache_bytes {
            Band::Memory
        } else if array_bytes.saturating_mul(arrays.max(1)) <= cache_bytes {
            Band::Caches
        } else {
            Band::UnderRule
        }
    }

    /// The band as machines read it (CSV, JSON): `caches`, `under_rule`,
    /// `memory`.
    pub fn key(self) -> &'static str {
        match self {
            Band::Caches => "caches",
            Band::UnderRule => "under_rule",
            Band::Memory => "memory",
            Band::Unknown => "unknown",
        }
    }

    /// The band's words in tables and summaries.
    pub fn words(self) -> &'static str {
        match self {
            Band::Caches => "cache bandwidth",
            Band::UnderRule => "under STREAM's rule: caches may still help",
            Band::Memory => "memory (STREAM's rule holds)",
            Band::Unknown => "STREAM's rule not judged: caches of unknown size",
        }
    }
}

/// STREAM's rule over the caches of some CPUs, or, where their size is
/// unknown, a rule that cannot be judged: it then neither holds nor fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamRule {
    /// Bytes of every cache level that serves the CPUs used (0 where unknown).
    pub cache_bytes: u64,
    /// Why the caches' size is unknown, where it is.
    pub unknown: Option<UnknownCaches>,
}

impl StreamRule {
    pub fn over(cache_bytes: u64) -> StreamRule {
        StreamRule {
            cache_bytes,
            unknown: None,
        }
    }

    /// The rule for the caches serving `cpus`, unknown where their sizes are.
    pub fn for_cpus(topo: &Topology, cpus: &IdSet) -> StreamRule {
        match topo.known_cache_sum(cpus) {
            Ok(bytes) => StreamRule::over(bytes.0),
            Err(why) => StreamRule {
                cache_bytes: 0,
                unknown: Some(why),
            },
        }
    }

    /// The fewest elements per array for which it holds; None where the
    /// caches are unknown.
    pub fn min_elements(&self) -> Option<u64> {
        self.unknown
            .is_none()
            .then(|| (CACHE_MULTIPLE * self.cache_bytes).div_ceil(ELEMENT_BYTES))
    }

    /// Whether arrays of `elements` elements each measure memory; None
    /// where the caches are unknown.
    pub fn holds(&self, elements: u64) -> Option<bool> {
        self.unknown
            .is_none()
            .then(|| elements.saturating_mul(ELEMENT_BYTES) >= CACHE_MULTIPLE * self.cache_bytes)
    }

    /// The fact, where `arrays` arrays of `elements` elements each are
    /// under it: what ran measured the caches. None where it holds, and
    /// where it cannot be judged (see [`unknown`](Self::unknown)).
    pub fn in_caches(&self, elements: u64, arrays: u64) -> Option<InCaches> {
        let min = self.min_elements()?;
        (self.holds(elements) == Some(false)).then(|| InCaches {
            arrays_bytes: elements * ELEMENT_BYTES * arrays.max(1),
            array_bytes: Some(elements * ELEMENT_BYTES),
            cache_bytes: self.cache_bytes,
            stream_elements: min,
            seen: None,
        })
    }

    /// Where `arrays` arrays of `elements` each stand against it:
    /// [`Band::Unknown`] where the caches are.
    pub fn band(&self, elements: u64, arrays: u64) -> Band {
        match self.unknown {
            Some(_) => Band::Unknown,
            None => Band::of(
                elements.saturating_mul(ELEMENT_BYTES),
                arrays,
                self.cache_bytes,
            ),
        }
    }

    /// The words every place says it in, for `arrays` arrays of `elements`:
    /// `each array (645.6 MiB) is under 4 × the 484.0 MiB of caches
    /// serving these CPUs: under STREAM's rule: caches may still help`
    /// (`cache bandwidth` where STREAM's three arrays fit in the caches),
    /// `... is at least 4 × ...: memory (STREAM's rule holds)`, or where
    /// the caches are unknown `... STREAM's rule cannot be judged: ...`.
    pub fn describe(&self, elements: u64, arrays: u64) -> String {
        let bytes = elements.saturating_mul(ELEMENT_BYTES);
        let (array, caches) = (Bytes(bytes), Bytes(self.cache_bytes));
        if let Some(why) = self.unknown {
            return format!(
                "each array ({array}) against the caches serving these CPUs: {}",
                not_judged(why)
            );
        }
        match Band::of(bytes, arrays, self.cache_bytes) {
            Band::Memory => format!(
                "each array ({array}) is at least {CACHE_MULTIPLE} × the {caches} of caches serving these CPUs: memory (STREAM's rule holds)"
            ),
            band => format!(
                "each array ({array}) is under {CACHE_MULTIPLE} × the {caches} of caches serving these CPUs: {}; STREAM's rule for memory needs --size {} or more",
                band.words(),
                self.min_elements().unwrap_or_default()
            ),
        }
    }
}

/// The one sentence for a rule that cannot be judged, and why.
pub fn not_judged(why: UnknownCaches) -> String {
    format!("STREAM's rule cannot be judged, neither memory nor cache bandwidth: {why}")
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
    /// What the run showed of the caches (the stores timed beside each
    /// other), where it showed anything: sizes alone never claim "cache
    /// bandwidth" for caches these threads may not get.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<CacheEvidence>,
}

/// What a run showed of whether its arrays were in the caches.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "seen", rename_all = "snake_case")]
pub enum CacheEvidence {
    /// Streaming stores, which bypass the caches, ran clearly faster than
    /// regular ones for `kernel`: its arrays were not in the caches these
    /// threads get, whatever sysfs reports.
    PastCaches {
        kernel: KernelId,
        nt_over_regular: f64,
    },
    /// Regular stores were at least as fast as streaming ones for `kernel`.
    Cached {
        kernel: KernelId,
        nt_over_regular: f64,
    },
    /// Every storing kernel's arrays fit in the caches below the last level
    /// (the threads' own, shared with no other tenant).
    OwnCaches,
}

impl InCaches {
    /// The same fact with what the run showed.
    pub fn seen(self, seen: Option<CacheEvidence>) -> InCaches {
        InCaches { seen, ..self }
    }

    /// The fact, when each of `arrays` arrays of `elements` elements is
    /// under four times `cache_bytes`.
    pub fn of(elements: u64, arrays: u64, cache_bytes: u64) -> Option<InCaches> {
        StreamRule::over(cache_bytes).in_caches(elements, arrays)
    }

    /// Which of the two bands under the rule: all arrays within the
    /// caches, or past them together.
    pub fn band(&self) -> Band {
        let past = matches!(self.seen, Some(CacheEvidence::PastCaches { .. }));
        match self.arrays_bytes <= self.cache_bytes && !past {
            true => Band::Caches,
            false => Band::UnderRule,
        }
    }

    /// What a reader is told, once.
    pub fn warning(&self) -> String {
        let each = (self.array_bytes).map_or(String::new(), |b| format!(" ({})", Bytes(b)));
        let (arrays, caches) = (Bytes(self.arrays_bytes), Bytes(self.cache_bytes));
        let lead = match (self.band(), self.seen) {
            // Past the caches together: the stores only confirm what the
            // sizes say (the rule's wording below).
            (
                _,
                Some(CacheEvidence::PastCaches {
                    kernel,
                    nt_over_regular,
                }),
            ) if self.arrays_bytes <= self.cache_bytes => format!(
                "not in the caches: the arrays ({arrays} together) are within the {caches} of caches sysfs reports serving these CPUs, but streaming stores, which bypass the caches, ran {nt_over_regular:.2}× regular ones for {kernel}: these threads get less cache than that (a VM's share, a cache shared with other tenants)"
            ),
            (
                Band::Caches,
                Some(CacheEvidence::Cached {
                    kernel,
                    nt_over_regular,
                }),
            ) => format!(
                "cache bandwidth, not memory: the arrays ({arrays} together) fit in the {caches} of caches serving these CPUs, and streaming stores ran {nt_over_regular:.2}× regular ones for {kernel}"
            ),
            (Band::Caches, Some(CacheEvidence::OwnCaches)) => format!(
                "cache bandwidth, not memory: the arrays ({arrays} together) fit in the caches below the last level of these CPUs, theirs alone"
            ),
            (Band::Caches, None) => format!(
                "cache bandwidth if these threads get the caches: the arrays ({arrays} together) fit in the {caches} of caches sysfs reports serving these CPUs (not measured: --stores auto times streaming stores beside regular ones)"
            ),
            _ => format!(
                "under STREAM's rule, caches may still help: the arrays ({} together) exceed the {} of caches serving these CPUs, but each array{each} is under {CACHE_MULTIPLE} × them",
                Bytes(self.arrays_bytes),
                Bytes(self.cache_bytes)
            ),
        };
        format!(
            "{lead}; STREAM's rule (each array ≥ {CACHE_MULTIPLE} × the caches) for memory needs --size {} or more (elements per array)",
            self.stream_elements
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host: 484 MiB of caches. 3 × 84623360 elements (645.6
    /// MiB each, 1.9 GiB together) passed a rule of the arrays together;
    /// each is under 4 × the caches, so the rule does not hold.
    #[test]
    fn the_rule_is_per_array_at_both_sides_of_its_boundary() {
        let rule = StreamRule::over(484 << 20);
        let min = rule.min_elements().unwrap();
        assert_eq!(min, 253_755_392);
        assert_eq!(rule.holds(84_623_360), Some(false));
        assert!(rule.in_caches(84_623_360, 3).is_some());
        assert_eq!(rule.holds(min - 1), Some(false));
        assert_eq!(rule.holds(min), Some(true));
        assert!(rule.in_caches(min, 3).is_none());
        let words = rule.describe(84_623_360, 3);
        assert!(
            words.contains("each array (645.6 MiB) is under 4 ×"),
            "{words}"
        );
        assert!(words.contains("--size 253755392"), "{words}");
        let c = rule.in_caches(84_623_360, 3).unwrap();
        // Streaming stores faster past the caches confirm the sizes: the
        // arrays are never said to be "within" caches they exceed.
        let past = c.seen(Some(CacheEvidence::PastCaches {
            kernel: KernelId::Copy,
            nt_over_regular: 1.66,
        }));
        assert!(!past.warning().contains("are within"), "{}", past.warning());
        assert!(
            past.warning().starts_with("under STREAM's rule"),
            "{}",
            past.warning()
        );
        assert!(
            c.warning().contains(
                "exceed the 484 MiB of caches serving these CPUs, but each array (645.6 MiB) is under 4 × them"
            ),
            "{}",
            c.warning()
        );
        assert!(rule.describe(min, 3).contains("STREAM's rule holds"));
    }

    proptest::proptest! {
        /// Unknown caches neither hold nor fail the rule, at any size,
        /// whatever sum of the known ones is left in the rule.
        #[test]
        fn unknown_caches_neither_hold_nor_fail_the_rule(
            elements in 1u64..u64::MAX / 8,
            arrays in 1u64..4,
            known in 0u64..1 << 40,
            level in 1u8..4,
        ) {
            let why = UnknownCaches::SizeUnknown {
                level,
                kind: crate::topology::CacheKind::Data,
            };
            let rule = StreamRule { cache_bytes: known, unknown: Some(why) };
            proptest::prop_assert_eq!(rule.holds(elements), None);
            proptest::prop_assert!(rule.in_caches(elements, arrays).is_none());
            proptest::prop_assert_eq!(rule.min_elements(), None);
            let words = rule.describe(elements, arrays);
            proptest::prop_assert!(words.contains("cannot be judged"), "{}", words);
            proptest::prop_assert!(!words.contains("STREAM's rule holds"), "{}", words);
            proptest::prop_assert!(!words.contains(" of caches serving"), "{}", words);
        }
    }

    /// The VM: 34.1 MiB of caches. STREAM's default 10M elements
    /// (76.3 MiB an array, 229 MiB together) ran at DRAM rates but were
    /// called cache bandwidth: they are past the caches, under the rule.
    #[test]
    fn three_bands_at_both_sides_of_each_boundary() {
        let caches: u64 = 34_100 << 10;
        let array = 10_000_000 * ELEMENT_BYTES;
        assert_eq!(Band::of(array, 3, caches), Band::UnderRule);
        // All three arrays within the caches: cache bandwidth.
        assert_eq!(Band::of(caches / 3, 3, caches), Band::Caches);
        assert_eq!(Band::of(caches / 3 + 1, 3, caches), Band::UnderRule);
        // Each array at 4 × the caches: memory.
        assert_eq!(Band::of(4 * caches - 1, 3, caches), Band::UnderRule);
        assert_eq!(Band::of(4 * caches, 3, caches), Band::Memory);
        let fact = InCaches::of(10_000_000, 3, caches).unwrap();
        assert_eq!(fact.band(), Band::UnderRule);
        assert!(
            fact.warning()
                .starts_with("under STREAM's rule, caches may still help"),
            "{}",
            fact.warning()
        );
        // Sizes alone claim no cache bandwidth: what the run showed does.
        let small = InCaches::of(1_000, 3, caches).unwrap();
        assert!(
            small
                .warning()
                .starts_with("cache bandwidth if these threads get the caches"),
            "{}",
            small.warning()
        );
        let own = small.seen(Some(CacheEvidence::OwnCaches));
        assert!(own.warning().starts_with("cache bandwidth, not memory"));
        assert_eq!(own.band(), Band::Caches);
        let past = small.seen(Some(CacheEvidence::PastCaches {
            kernel: KernelId::Copy,
            nt_over_regular: 1.6,
        }));
        assert_eq!(past.band(), Band::UnderRule);
        assert!(
            past.warning().contains(
                "streaming stores, which bypass the caches, ran 1.60× regular ones for copy"
            ),
            "{}",
            past.warning()
        );
        assert!(
            StreamRule::over(caches)
                .describe(10_000_000, 3)
                .contains("under STREAM's rule: caches may still help")
        );
    }
}
