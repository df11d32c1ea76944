//! How the CPUs' clocks are governed: cpufreq's driver and governor per
//! CPU, and whether turbo (boost) is on. STREAM tutorials tell readers to
//! set the performance governor before measuring: a run below its peak on
//! a `powersave` node may be the clock, not the memory.

use super::cpulist::IdSet;
use super::files::Reader;
use serde::Serialize;

const CPU_DIR: &str = "sys/devices/system/cpu";

/// One cpufreq governor and the CPUs it sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Governor {
    pub name: String,
    pub cpus: IdSet,
}

/// The clock policy, as cpufreq states it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Power {
    /// cpufreq's scaling driver (`intel_pstate`, `acpi-cpufreq`,
    /// `amd-pstate-epp`, `cppc_cpufreq`); none where the kernel exposes no
    /// cpufreq (most VMs, or firmware that keeps the clocks).
    pub driver: Option<String>,
    /// Each governor and the CPUs under it.
    pub governors: Vec<Governor>,
    /// Turbo or boost: on, off, or not stated.
    pub turbo: Option<bool>,
}

impl Power {
    pub(super) fn read(r: &Reader, online: &[usize]) -> Power {
        let mut governors: Vec<(String, Vec<usize>)> = Vec::new();
        for &cpu in online {
            let Some(g) = r.text(&format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")) else {
                continue;
            };
            match governors.iter_mut().find(|(name, _)| *name == g) {
                Some((_, cpus)) => cpus.push(cpu),
                None => governors.push((g, vec![cpu])),
            }
        }
        let first = online.first().copied().unwrap_or(0);
        let driver = r.text(&format!("{CPU_DIR}/cpu{first}/cpufreq/scaling_driver"));
        // intel_pstate says the opposite (no_turbo); other drivers say boost.
        let turbo = (r
            .number::<u8>(&format!("{CPU_DIR}/intel_pstate/no_turbo"))
            .map(|n| n == 0))
        .or_else(|| {
            r.number::<u8>(&format!("{CPU_DIR}/cpufreq/boost"))
                .map(|n| n == 1)
        })
        .or_else(|| {
            r.number::<u8>(&format!("{CPU_DIR}/amd_pstate/cpb_boost"))
                .map(|n| n == 1)
        });
        Power {
            driver,
            governors: (governors.into_iter())
                .map(|(name, cpus)| Governor {
                    name,
                    cpus: IdSet::new(cpus),
                })
                .collect(),
            turbo,
        }
    }

    /// One line for `topo` and the run header: `performance on CPUs 0-63
    /// (intel_pstate), turbo on`.
    pub fn summary(&self) -> String {
        if self.governors.is_empty() {
            return "not exposed (no cpufreq: a VM, or firmware sets the clocks)".into();
        }
        let governors: Vec<String> = (self.governors.iter())
            .map(|g| format!("{} on CPUs {}", g.name, g.cpus))
            .collect();
        let driver = self
            .driver
            .as_deref()
            .map_or(String::new(), |d| format!(" ({d})"));
        let turbo = match self.turbo {
            Some(true) => ", turbo on",
            Some(false) => ", turbo off",
            None => "",
        };
        format!("{}{driver}{turbo}", governors.join(", "))
    }

    /// The CPUs of `used` whose governor lowers the clock when it sees
    /// idle time (`powersave`, or `ondemand`/`conservative`/`schedutil`
    /// where the driver is not intel_pstate, whose `powersave` is active
    /// HWP), with the governor: a reason a run may be low.
    pub fn saving_on(&self, used: &[usize]) -> Option<String> {
        let hwp = self.driver.as_deref() == Some("intel_pstate");
        let saving = |g: &str| match g {
            "powersave" => true,
            "ondemand" | "conservative" | "schedutil" => !hwp,
            _ => false,
        };
        let found: Vec<String> = (self.governors.iter())
            .filter(|g| saving(&g.name))
            .filter_map(|g| {
                let hit: Vec<usize> = used
                    .iter()
                    .copied()
                    .filter(|c| g.cpus.contains(*c))
                    .collect();
                (!hit.is_empty()).then(|| format!("{} on CPUs {}", g.name, IdSet::new(hit)))
            })
            .collect();
        (!found.is_empty()).then(|| found.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn governors_are_grouped_and_turbo_read_from_either_driver() {
        let dir = tree(&[
            (
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                "performance\n",
            ),
            (
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
                "acpi-cpufreq\n",
            ),
            (
                "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
                "ondemand\n",
            ),
            (
                "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor",
                "performance\n",
            ),
            ("sys/devices/system/cpu/cpufreq/boost", "1\n"),
        ]);
        let p = Power::read(&Reader { root: dir.path() }, &[0, 1, 2]);
        assert_eq!(
            p.summary(),
            "performance on CPUs 0,2, ondemand on CPUs 1 (acpi-cpufreq), turbo on"
        );
        assert_eq!(p.saving_on(&[0, 1]), Some("ondemand on CPUs 1".into()));
        assert_eq!(p.saving_on(&[0, 2]), None);
        // intel_pstate: no_turbo says the opposite, and its powersave is
        // the one that saves while ondemand does not exist there.
        let dir = tree(&[
            (
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                "powersave\n",
            ),
            (
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
                "intel_pstate\n",
            ),
            ("sys/devices/system/cpu/intel_pstate/no_turbo", "1\n"),
        ]);
        let p = Power::read(&Reader { root: dir.path() }, &[0]);
        assert_eq!(p.turbo, Some(false));
        assert_eq!(p.saving_on(&[0]), Some("powersave on CPUs 0".into()));
        // No cpufreq at all: said, never guessed.
        let dir = tree(&[]);
        let p = Power::read(&Reader { root: dir.path() }, &[0]);
        assert!(p.summary().starts_with("not exposed"), "{}", p.summary());
        assert_eq!(p.saving_on(&[0]), None);
    }
}
