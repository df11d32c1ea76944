//! The kernel's memory error counters (EDAC, `/sys/devices/system/edac/mc`):
//! corrected and uncorrected errors since the counters were reset (at
//! boot), per memory controller and per DIMM, with the DIMM's label where
//! the platform's driver gives one. What NHC's `check_hw_mcelog` and the
//! sites' node checks read beside bandwidth; world-readable, no root.

use super::files::Reader;
use serde::{Deserialize, Serialize};

/// Where the counters live under the root.
const MC_DIR: &str = "sys/devices/system/edac/mc";

/// One DIMM's counters (a `dimmN`, or on drivers that count by chip-select
/// row, a `rankN`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimmErrors {
    /// The entry's name under its controller: `dimm0`, `rank3`.
    pub entry: String,
    /// The slot's name as the board prints it (`P1-DIMMA1`,
    /// `CPU_SrcID#0_MC#0_Chan#1_DIMM#0`), where the driver has one.
    pub label: Option<String>,
    pub size_mib: Option<u64>,
    pub corrected: u64,
    pub uncorrected: u64,
}

impl DimmErrors {
    /// The DIMM as an admin finds it: its label, else controller and entry.
    pub fn name(&self, controller: usize) -> String {
        match &self.label {
            Some(label) => format!("mc{controller} {label}"),
            None => format!("mc{controller} {}", self.entry),
        }
    }
}

/// One memory controller's counters and its DIMMs'.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerErrors {
    pub controller: usize,
    /// The driver's name for it (`Skylake Socket#0 IMC#0`).
    pub name: Option<String>,
    pub corrected: u64,
    pub uncorrected: u64,
    /// Seconds since the counters were reset (boot, or a write to
    /// `reset_counters`): the driver's figure, else the uptime.
    pub seconds_since_reset: Option<u64>,
    pub dimms: Vec<DimmErrors>,
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
    },
    NotReadable {
        why: String,
    },
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
        // Counters that do not say when they were reset count since boot.
        let uptime_s = (r.text("proc/uptime"))
            .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
            .map(|s| s as u64);
        let mut controllers = Vec::new();
        for id in r.numbered_entries(MC_DIR, "mc") {
            let dir = format!("{MC_DIR}/mc{id}");
            let (Some(corrected), Some(uncorrected)) = (
                r.number(&format!("{dir}/ce_count")),
                r.number(&format!("{dir}/ue_count")),
            ) else {
                return MemoryErrors::NotReadable {
                    why: format!("/{dir}/ce_count or ue_count is missing or unreadable"),
                };
            };
            controllers.push(ControllerErrors {
                controller: id,
                name: r.text(&format!("{dir}/mc_name")).filter(|n| !n.is_empty()),
                corrected,
                uncorrected,
                seconds_since_reset: r.number(&format!("{dir}/seconds_since_reset")).or(uptime_s),
                dimms: dimms(r, &dir),
            });
        }
        if controllers.is_empty() {
            return MemoryErrors::NotReadable {
                why: "the EDAC core is loaded but no memory controller driver registered".into(),
            };
        }
        MemoryErrors::Counted {
            controllers,
            boot_id: r.text("proc/sys/kernel/random/boot_id"),
        }
    }

    pub fn controllers(&self) -> &[ControllerErrors] {
        match self {
            MemoryErrors::Counted { controllers, .. } => controllers,
            MemoryErrors::NotReadable { .. } => &[],
        }
    }

    /// One line for `topo`: the totals, and each DIMM that has errors.
    pub fn summary(&self) -> String {
        let controllers = match self {
            MemoryErrors::NotReadable { why } => return format!("not readable here: {why}"),
            MemoryErrors::Counted { controllers, .. } => controllers,
        };
        let sum = |f: fn(&ControllerErrors) -> u64| controllers.iter().map(f).sum::<u64>();
        let dimms: usize = controllers.iter().map(|c| c.dimms.len()).sum();
        let mut line = format!(
            "EDAC: {} corrected, {} uncorrected since boot ({}, {})",
            sum(|c| c.corrected),
            sum(|c| c.uncorrected),
            crate::units::plural(controllers.len(), "memory controller"),
            crate::units::plural(dimms, "DIMM")
        );
        let with_errors: Vec<String> = (controllers.iter())
            .flat_map(|c| c.dimms.iter().map(move |d| (c.controller, d)))
            .filter(|(_, d)| d.corrected + d.uncorrected > 0)
            .map(|(c, d)| format!("{}: {} CE, {} UE", d.name(c), d.corrected, d.uncorrected))
            .collect();
        if !with_errors.is_empty() {
            line.push_str(&format!(": {}", with_errors.join(" · ")));
        }
        line
    }
}

/// A controller's DIMMs (or rows), in number order.
fn dimms(r: &Reader, dir: &str) -> Vec<DimmErrors> {
    let mut out = Vec::new();
    // Either kind of entry names its files dimm_* (the kernel's EDAC ABI).
    for prefix in ["dimm", "rank"] {
        for id in r.numbered_entries(dir, prefix) {
            let entry = format!("{prefix}{id}");
            let path = format!("{dir}/{entry}");
            let count = |what: &str| r.number(&format!("{path}/dimm_{what}_count"));
            let (Some(corrected), Some(uncorrected)) = (count("ce"), count("ue")) else {
                continue;
            };
            out.push(DimmErrors {
                entry,
                label: r
                    .text(&format!("{path}/dimm_label"))
                    .filter(|l| !l.is_empty()),
                size_mib: r.number(&format!("{path}/size")),
                corrected,
                uncorrected,
            });
        }
    }
    out
}

/// The DIMM errors a check fails a node on, each with the action an admin
/// takes: any uncorrected error since boot, and corrected errors past
/// NHC's `check_hw_mcelog` limit (more than 9 a day on one DIMM), counted
/// only from 10 on so that one error soon after boot is not a rate.
pub fn findings(errors: &MemoryErrors) -> Vec<String> {
    let mut out = Vec::new();
    for c in errors.controllers() {
        let days = c.seconds_since_reset.map(|s| s as f64 / 86_400.0);
        let mut named = 0;
        for d in &c.dimms {
            let name = d.name(c.controller);
            if d.uncorrected > 0 {
                out.push(format!(
                    "{name}: {} uncorrected memory errors since boot (EDAC): drain the node and replace the DIMM",
                    d.uncorrected
                ));
                named += 1;
            } else if let Some(per_day) = corrected_per_day(d.corrected, days) {
                out.push(format!(
                    "{name}: {} corrected memory errors since boot, {per_day:.0} a day (EDAC; more than {CORRECTED_PER_DAY} a day fails): replace the DIMM at the next drain",
                    d.corrected
                ));
                named += 1;
            }
        }
        // A driver that counts by controller only, or errors no DIMM took.
        if named == 0 && c.uncorrected > 0 {
            out.push(format!(
                "memory controller mc{}: {} uncorrected memory errors since boot (EDAC): drain the node; the DIMM is in the kernel log (rasdaemon, mcelog)",
                c.controller, c.uncorrected
            ));
        }
    }
    out
}

/// NHC's limit on corrected errors of one DIMM a day.
pub const CORRECTED_PER_DAY: u64 = 9;

/// The corrected errors' daily rate where it fails: 10 or more of them, at
/// more than [`CORRECTED_PER_DAY`] a day (a count with no known period
/// fails at 10).
fn corrected_per_day(corrected: u64, days: Option<f64>) -> Option<f64> {
    if corrected <= CORRECTED_PER_DAY {
        return None;
    }
    let per_day = days
        .filter(|&d| d > 0.0)
        .map_or(corrected as f64, |d| corrected as f64 / d);
    (per_day > CORRECTED_PER_DAY as f64).then_some(per_day)
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
        assert!(findings(&errors).is_empty());
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
        assert_eq!((c.controller, c.corrected, c.uncorrected), (0, 3, 2));
        assert_eq!(c.name.as_deref(), Some("Skylake Socket#0 IMC#0"));
        assert_eq!(c.dimms[1].label.as_deref(), Some("P1-DIMMA2"));
        assert_eq!(c.dimms[1].size_mib, Some(32768));
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
    fn an_uncorrected_error_fails_and_names_the_dimm_and_the_action() {
        assert!(findings(&read(tree((0, 0), (0, 0), 600).path())).is_empty());
        let found = findings(&read(tree((0, 0), (0, 1), 600).path()));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("mc0 P1-DIMMA2: 1 uncorrected memory errors since boot"));
        assert!(found[0].ends_with("drain the node and replace the DIMM"));
    }

    #[test]
    fn corrected_errors_fail_past_nine_a_day_from_ten_on() {
        let day = 86_400;
        // Nine in an hour: under the count that makes a rate.
        assert!(findings(&read(tree((9, 0), (0, 0), 3600).path())).is_empty());
        // Ten in ten days: one a day.
        assert!(findings(&read(tree((10, 0), (0, 0), 10 * day).path())).is_empty());
        // Ten in one day, and 100 in ten days: past nine a day.
        for (ce, since) in [(10, day), (100, 10 * day)] {
            let found = findings(&read(tree((ce, 0), (0, 0), since).path()));
            assert_eq!(found.len(), 1, "{ce} in {since} s: {found:?}");
            assert!(
                found[0].contains("replace the DIMM at the next drain"),
                "{}",
                found[0]
            );
        }
    }

    #[test]
    fn a_controller_that_counts_no_dimm_is_named_itself() {
        let root = tree((0, 0), (0, 0), 600);
        let mc = root.path().join(MC_DIR).join("mc0");
        std::fs::write(mc.join("ue_count"), "4\n").unwrap();
        let found = findings(&read(root.path()));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("memory controller mc0: 4 uncorrected"),
            "{}",
            found[0]
        );
    }
}
