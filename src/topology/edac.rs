//! The kernel's memory error counters (EDAC, `/sys/devices/system/edac/mc`):
//! corrected and uncorrected errors since the counters were reset (at
//! boot), per memory controller and per DIMM, with the DIMM's label where
//! the platform's driver gives one. What NHC's `check_hw_mcelog` and the
//! sites' node checks read beside bandwidth; world-readable, no root.

use super::files::Reader;
use crate::untrusted::Unknown;
use serde::{Deserialize, Serialize};

/// Where the counters live under the root.
const MC_DIR: &str = "sys/devices/system/edac/mc";

/// One DIMM's counters (a `dimmN`, or on drivers that count by chip-select
/// row, a `rankN`). A count that could not be read is `None` (`null`),
/// with its file and reason in `unknown`: never a zero.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimmErrors {
    /// The entry's name under its controller: `dimm0`, `rank3`.
    pub entry: String,
    /// The slot's name as the board prints it (`P1-DIMMA1`,
    /// `CPU_SrcID#0_MC#0_Chan#1_DIMM#0`), where the driver has one;
    /// escaped to one line.
    pub label: Option<String>,
    pub size_mib: Option<u64>,
    pub corrected: Option<u64>,
    pub uncorrected: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<Unknown>,
}

/// One memory controller's counters and its DIMMs'.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerErrors {
    pub controller: usize,
    /// The driver's name for it (`Skylake Socket#0 IMC#0`).
    pub name: Option<String>,
    /// The controller's totals: the DIMMs' and those no DIMM took.
    pub corrected: Option<u64>,
    pub uncorrected: Option<u64>,
    /// Seconds since the counters were reset (boot, or a write to
    /// `reset_counters`): the driver's figure, else the uptime.
    pub seconds_since_reset: Option<u64>,
    pub dimms: Vec<DimmErrors>,
    /// Its own counts (`ce_count`, `ue_count`) that could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<Unknown>,
    /// A `seconds_since_reset` that could not be read or believed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_unknown: Option<Unknown>,
    /// Entries under it no kernel names (`dimm01`): not counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub odd_entries: Vec<Unknown>,
}

impl ControllerErrors {
    /// Each DIMM as an admin finds it: `mc0 P1-DIMMA1` by its label, else
    /// `mc0 dimm1`; a label two DIMMs share also names the entry.
    pub fn dimm_names(&self) -> Vec<String> {
        let shared = |label: &str| {
            (self.dimms.iter())
                .filter(|d| d.label.as_deref() == Some(label))
                .count()
                > 1
        };
        (self.dimms.iter())
            .map(|d| match &d.label {
                Some(l) if shared(l) => format!("mc{} {l} ({})", self.controller, d.entry),
                Some(l) => format!("mc{} {l}", self.controller),
                None => format!("mc{} {}", self.controller, d.entry),
            })
            .collect()
    }
}

/// The node's memory error counters, or why there are none to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum MemoryErrors {
    Counted {
        controllers: Vec<ControllerErrors>,
        /// The kernel's boot (`/proc/sys/kernel/random/boot_id`): counts of
        /// two boots are not one series (the counters restart at boot).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        boot_id: Option<String>,
        /// What of the tree could not be read beside the controllers (the
        /// uptime, entries no kernel names).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unknown: Vec<Unknown>,
    },
    NotReadable {
        why: String,
    },
}

/// A count read, or `None` with why in `unknown`.
fn count(r: &Reader, file: &str, unknown: &mut Vec<Unknown>) -> Option<u64> {
    r.count(file).map_err(|u| unknown.push(u)).ok()
}

/// Entries that no kernel names (`dimm01`) as unknowns: not counted.
fn odd(dir: &str, names: Vec<String>, unknown: &mut Vec<Unknown>) {
    unknown.extend(names.into_iter().map(|name| {
        Unknown::new(
            format!("/{dir}/{name}"),
            "is not an entry the kernel names (a number with leading zeros): not counted",
        )
    }));
}

impl MemoryErrors {
    /// Every memory controller's counters under `root`.
    pub(super) fn read(r: &Reader) -> MemoryErrors {
        if !r.path(MC_DIR).is_dir() {
            return MemoryErrors::NotReadable {
                // One line of `topo` (120 columns): the drivers are in
                // docs/guide/health.md.
                why: format!(
                    "no EDAC driver (/{MC_DIR} is absent): a VM, or e.g. skx_edac not loaded"
                ),
            };
        }
        let mut unknown = Vec::new();
        // Counters that do not say when they were reset count since boot.
        let uptime = r.parsed("proc/uptime", crate::untrusted::parse_seconds);
        let uptime_s = uptime.as_ref().ok().copied();
        let (ids, odd_names) = r.entries(MC_DIR, "mc");
        odd(MC_DIR, odd_names, &mut unknown);
        let controllers: Vec<ControllerErrors> = ids
            .into_iter()
            .map(|id| controller(r, id, uptime_s))
            .collect();
        // An uptime that is not believed is said; one that is absent only
        // where a controller needed it for its period.
        if let Err(u) = uptime {
            let needed = controllers.iter().any(|c| c.seconds_since_reset.is_none());
            if needed || r.path("proc/uptime").exists() {
                unknown.insert(0, u);
            }
        }
        if controllers.is_empty() {
            return MemoryErrors::NotReadable {
                why: "the EDAC core is loaded but no memory controller driver registered".into(),
            };
        }
        MemoryErrors::Counted {
            controllers,
            boot_id: r.name("proc/sys/kernel/random/boot_id"),
            unknown,
        }
    }

    pub fn controllers(&self) -> &[ControllerErrors] {
        match self {
            MemoryErrors::Counted { controllers, .. } => controllers,
            MemoryErrors::NotReadable { .. } => &[],
        }
    }

    /// Every value that could not be read, the tree's, the controllers'
    /// and the DIMMs'.
    pub fn unknowns(&self) -> Vec<&Unknown> {
        let MemoryErrors::Counted {
            controllers,
            unknown,
            ..
        } = self
        else {
            return Vec::new();
        };
        let mut out: Vec<&Unknown> = unknown.iter().collect();
        for c in controllers {
            out.extend(
                c.unknown
                    .iter()
                    .chain(&c.period_unknown)
                    .chain(&c.odd_entries),
            );
            out.extend(c.dimms.iter().flat_map(|d| &d.unknown));
        }
        out
    }

    /// One line for `topo`: the totals, each DIMM that has errors, and how
    /// many counters could not be read.
    pub fn summary(&self) -> String {
        let controllers = match self {
            MemoryErrors::NotReadable { why } => return format!("not readable here: {why}"),
            MemoryErrors::Counted { controllers, .. } => controllers,
        };
        let sum = |f: fn(&ControllerErrors) -> Option<u64>| {
            (controllers.iter()).fold(0u64, |a, c| a.saturating_add(f(c).unwrap_or(0)))
        };
        let dimms: usize = controllers.iter().map(|c| c.dimms.len()).sum();
        let mut line = format!(
            "EDAC: {} corrected, {} uncorrected since boot ({}, {})",
            sum(|c| c.corrected),
            sum(|c| c.uncorrected),
            crate::units::plural(controllers.len(), "memory controller"),
            crate::units::plural(dimms, "DIMM")
        );
        let shown = |n: Option<u64>| n.map_or("?".to_string(), |n| n.to_string());
        let with_errors: Vec<String> = (controllers.iter())
            .flat_map(|c| c.dimms.iter().zip(c.dimm_names()))
            .filter(|(d, _)| d.corrected != Some(0) || d.uncorrected != Some(0))
            .map(|(d, name)| {
                format!(
                    "{name}: {} CE, {} UE",
                    shown(d.corrected),
                    shown(d.uncorrected)
                )
            })
            .collect();
        if !with_errors.is_empty() {
            line.push_str(&format!(": {}", with_errors.join(" · ")));
        }
        let unknown = self.unknowns();
        if let Some(first) = unknown.first() {
            line.push_str(&format!(
                "; {} unknown ({first}{})",
                crate::units::plural(unknown.len(), "value"),
                if unknown.len() > 1 { ", …" } else { "" }
            ));
        }
        line
    }
}

/// One controller's counters and its DIMMs'.
fn controller(r: &Reader, id: usize, uptime_s: Option<u64>) -> ControllerErrors {
    let dir = format!("{MC_DIR}/mc{id}");
    let mut unknown = Vec::new();
    let corrected = count(r, &format!("{dir}/ce_count"), &mut unknown);
    let uncorrected = count(r, &format!("{dir}/ue_count"), &mut unknown);
    // A driver that keeps no reset time counts since boot; one that keeps
    // a time longer than the kernel has been up is not believed.
    let since = format!("{dir}/seconds_since_reset");
    let (seconds_since_reset, period_unknown) =
        match r.parsed(&since, crate::untrusted::parse_seconds) {
            Ok(s) if uptime_s.is_some_and(|up| s > up.saturating_add(60)) => {
                let why = format!(
                    "holds {s} s, more than the {} s the kernel has been up: the uptime is used",
                    uptime_s.unwrap_or_default()
                );
                (uptime_s, Some(Unknown::new(format!("/{since}"), why)))
            }
            Ok(s) => (Some(s), None),
            Err(u) if r.path(&since).exists() => (uptime_s, Some(u)),
            Err(_) => (uptime_s, None),
        };
    let mut odd_entries = Vec::new();
    ControllerErrors {
        controller: id,
        name: r.name(&format!("{dir}/mc_name")),
        corrected,
        uncorrected,
        seconds_since_reset,
        dimms: dimms(r, &dir, &mut odd_entries),
        unknown,
        period_unknown,
        odd_entries,
    }
}

/// A controller's DIMMs (or rows), in number order, each kept whatever
/// could be read of it.
fn dimms(r: &Reader, dir: &str, odd_entries: &mut Vec<Unknown>) -> Vec<DimmErrors> {
    let mut out = Vec::new();
    // Either kind of entry names its files dimm_* (the kernel's EDAC ABI).
    for prefix in ["dimm", "rank"] {
        let (ids, odd_names) = r.entries(dir, prefix);
        odd(dir, odd_names, odd_entries);
        for id in ids {
            let entry = format!("{prefix}{id}");
            let path = format!("{dir}/{entry}");
            let mut unknown = Vec::new();
            let mut count =
                |what: &str| count(r, &format!("{path}/dimm_{what}_count"), &mut unknown);
            let (corrected, uncorrected) = (count("ce"), count("ue"));
            out.push(DimmErrors {
                entry,
                label: r.name(&format!("{path}/dimm_label")),
                size_mib: r.number(&format!("{path}/size")),
                corrected,
                uncorrected,
                unknown,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An EDAC tree with one controller of two DIMMs under a temporary root.
    fn tree(dimm0: (u64, u64), dimm1: (u64, u64), since_s: u64) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let mc = dir.path().join(MC_DIR).join("mc0");
        let write = |rel: &str, text: String| {
            let p = mc.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text + "\n").unwrap();
        };
        write("mc_name", "Skylake Socket#0 IMC#0".into());
        write("ce_count", (dimm0.0 + dimm1.0).to_string());
        write("ue_count", (dimm0.1 + dimm1.1).to_string());
        write("seconds_since_reset", since_s.to_string());
        for (i, (ce, ue)) in [dimm0, dimm1].into_iter().enumerate() {
            write(&format!("dimm{i}/dimm_ce_count"), ce.to_string());
            write(&format!("dimm{i}/dimm_ue_count"), ue.to_string());
            write(&format!("dimm{i}/dimm_label"), format!("P1-DIMMA{}", i + 1));
            write(&format!("dimm{i}/size"), "32768".into());
        }
        dir
    }

    fn read(root: &std::path::Path) -> MemoryErrors {
        MemoryErrors::read(&Reader { root })
    }

    fn write(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(MC_DIR).join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_tree_without_edac_says_why_it_has_no_counts() {
        let empty = tempfile::tempdir().unwrap();
        let errors = read(empty.path());
        assert!(
            errors
                .summary()
                .starts_with("not readable here: no EDAC driver"),
            "{}",
            errors.summary()
        );
        assert!(errors.controllers().is_empty());
        std::fs::create_dir_all(empty.path().join(MC_DIR)).unwrap();
        assert!(
            read(empty.path())
                .summary()
                .contains("no memory controller driver registered")
        );
    }

    #[test]
    fn counts_are_read_per_controller_and_dimm() {
        let root = tree((3, 0), (0, 2), 86_400);
        let errors = read(root.path());
        let c = &errors.controllers()[0];
        assert_eq!(
            (c.controller, c.corrected, c.uncorrected),
            (0, Some(3), Some(2))
        );
        assert_eq!(c.name.as_deref(), Some("Skylake Socket#0 IMC#0"));
        assert_eq!(c.dimms[1].label.as_deref(), Some("P1-DIMMA2"));
        assert_eq!(c.dimms[1].size_mib, Some(32768));
        assert!(errors.unknowns().is_empty());
        let line = errors.summary();
        assert!(
            line.starts_with(
                "EDAC: 3 corrected, 2 uncorrected since boot (1 memory controller, 2 DIMMs)"
            ),
            "{line}"
        );
        assert!(
            line.contains("mc0 P1-DIMMA1: 3 CE, 0 UE · mc0 P1-DIMMA2: 0 CE, 2 UE"),
            "{line}"
        );
    }

    #[test]
    fn an_unreadable_count_is_unknown_with_its_file_never_zero_or_dropped() {
        let root = tree((0, 0), (0, 0), 86_400);
        write(root.path(), "mc0/dimm1/dimm_ce_count", "garbage\n");
        write(root.path(), "mc0/ue_count", "99999999999999999999999\n");
        let errors = read(root.path());
        let c = &errors.controllers()[0];
        assert_eq!(c.dimms.len(), 2, "the DIMM is kept");
        assert_eq!(
            (c.dimms[1].corrected, c.dimms[1].uncorrected),
            (None, Some(0))
        );
        assert_eq!(c.uncorrected, None);
        let unknown: Vec<String> = errors.unknowns().iter().map(|u| u.to_string()).collect();
        assert_eq!(
            unknown,
            [
                "/sys/devices/system/edac/mc/mc0/ue_count holds '99999999999999999999999', beyond a 64-bit counter",
                "/sys/devices/system/edac/mc/mc0/dimm1/dimm_ce_count holds 'garbage', not a count",
            ]
        );
        assert!(
            errors.summary().contains("mc0 P1-DIMMA2: ? CE, 0 UE"),
            "{}",
            errors.summary()
        );
        assert!(
            errors.summary().contains("; 2 values unknown ("),
            "{}",
            errors.summary()
        );
        // One controller unreadable does not hide another's counts.
        write(root.path(), "mc1/ce_count", "0\n");
        write(root.path(), "mc1/ue_count", "5\n");
        let errors = read(root.path());
        assert_eq!(errors.controllers()[1].uncorrected, Some(5));
    }

    #[test]
    fn labels_are_one_line_and_entries_are_counted_once() {
        let root = tree((0, 0), (0, 5), 86_400);
        write(
            root.path(),
            "mc0/dimm1/dimm_label",
            "P0-DIMMA2\nmembw: node healthy\n",
        );
        // A number spelled with leading zeros names no new DIMM.
        write(root.path(), "mc0/dimm01/dimm_ue_count", "5\n");
        write(root.path(), "mc00/ce_count", "1\n");
        let errors = read(root.path());
        let c = &errors.controllers()[0];
        assert_eq!(errors.controllers().len(), 1);
        assert_eq!(c.dimms.len(), 2);
        assert_eq!(
            c.dimms[1].label.as_deref(),
            Some("P0-DIMMA2\\nmembw: node healthy")
        );
        let unknown: Vec<String> = errors.unknowns().iter().map(|u| u.file.clone()).collect();
        assert_eq!(
            unknown,
            [
                "/sys/devices/system/edac/mc/mc00",
                "/sys/devices/system/edac/mc/mc0/dimm01"
            ]
        );
    }

    #[test]
    fn a_reset_time_past_the_uptime_or_past_30_years_is_not_believed() {
        let root = tree((0, 0), (0, 0), 86_400);
        std::fs::create_dir_all(root.path().join("proc")).unwrap();
        std::fs::write(root.path().join("proc/uptime"), "3600.5 100.0\n").unwrap();
        let errors = read(root.path());
        assert_eq!(errors.controllers()[0].seconds_since_reset, Some(3600));
        assert!(
            errors.unknowns()[0]
                .why
                .contains("more than the 3600 s the kernel has been up")
        );
        std::fs::write(root.path().join("proc/uptime"), "1e12 0\n").unwrap();
        let errors = read(root.path());
        assert!(
            errors.unknowns()[0].why.contains("more than 30 years"),
            "{:?}",
            errors.unknowns()
        );
        assert_eq!(errors.controllers()[0].seconds_since_reset, Some(86_400));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Any bytes in any counter, label or period file: a count equal to
        /// the text's, or an unknown naming the file; labels on one line.
        #[test]
        fn any_bytes_in_the_tree_are_a_value_or_an_unknown(
            ce in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..30),
            label in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..30),
            since in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..30),
        ) {
            let root = tree((0, 0), (0, 0), 86_400);
            let mc = root.path().join(MC_DIR).join("mc0");
            std::fs::write(mc.join("dimm1/dimm_ce_count"), &ce).unwrap();
            std::fs::write(mc.join("dimm1/dimm_label"), &label).unwrap();
            std::fs::write(mc.join("seconds_since_reset"), &since).unwrap();
            let errors = read(root.path());
            let c = &errors.controllers()[0];
            let d = &c.dimms[1];
            let text = String::from_utf8_lossy(&ce);
            proptest::prop_assert_eq!(d.corrected, crate::untrusted::parse_count(&text).ok());
            proptest::prop_assert_eq!(d.corrected.is_none(), d.unknown.len() == 1);
            proptest::prop_assert!(c.seconds_since_reset.is_none_or(|s| s <= crate::untrusted::MOST_SECONDS_UP));
            for name in d.label.iter() {
                proptest::prop_assert!(!name.chars().any(char::is_control));
            }
            let _ = errors.summary();
        }
    }
}
