//! A point: one configuration of a study, the key `--resume` matches and
//! `compare` pairs by, with its typed placement, policy and target.

// A new kind must be decided wherever kinds are matched.
#![deny(clippy::wildcard_enum_match_arm)]

use super::{is_zero, is_zero_u64, measurement, targets};
use crate::kernels::{KernelId, StoresRequest};
use serde::{Deserialize, Serialize};

/// A rank's place among ranks that measured at the same time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConcurrentRank {
    pub rank: usize,
    pub ranks: usize,
}

/// One configuration of a sweep. Its JSON form is its identity: `--resume`
/// skips a point whose key is already in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// CPU threads; absent (0) for a device, which has none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub threads: usize,
    /// The placement, typed; it prints as the label tables show
    /// (`spread`, `per-l3=1`, `places {0:1}:8:2 close`, ...). Absent for a
    /// device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::placement::identity::PlacementId>,
    /// Memory policy as written, typed (`local`, `bind:1`,
    /// `interleave:all`, `split:0=75%,2=25%`, ...); absent for a device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<crate::memory::written::PolicySpec>,
    pub stores: StoresRequest,
    /// The arrays' page size; absent (auto) in files written before it was
    /// an axis, so their keys still match.
    #[serde(default, skip_serializing_if = "crate::memory::Hugepages::is_auto")]
    pub hugepages: crate::memory::Hugepages,
    pub kernels: Vec<KernelId>,
    /// Elements per array, the working set per thread (bytes of all
    /// arrays: what a size sweep varies) and repetitions; absent where
    /// unknown (a program that did not print them), never 0.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub elements: u64,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub working_set_per_thread: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ntimes: usize,
    /// For NUMA-matrix points: the CPU node and the memory node.
    pub numa: Option<NumaCell>,
    /// Bytes per element, when not 8 (another program's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_bytes: Option<u64>,
    /// STREAM's OFFSET between the arrays, in elements (`--offset`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: usize,
    /// The instruction set the kernels ran with, where it is not the
    /// host's widest (`--isa avx2` on an AVX-512 host): other code, so
    /// another point, never pooled with the default's runs. Absent for the
    /// widest, as in files from before it was part of the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isa: Option<crate::kernels::Isa>,
    /// Where a device's arrays lived, where not its own memory
    /// (`--gpu-memory managed`, `host:1`): another memory behind the same
    /// kernels, so another point. Absent for device memory, as in files
    /// from before it was an axis.
    #[serde(default, skip_serializing_if = "is_device_memory")]
    pub gpu_memory: crate::memory::gpu_memory::GpuMemory,
    /// One of several ranks a launcher started together that measured on
    /// their own (`mpirun ... membw run --independent`): they ran at the
    /// same time, so each rank is a point of its own, never another
    /// rank's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_rank: Option<ConcurrentRank>,
    /// A device measured at once with the others of its set (`--backend
    /// cuda:all`): how many devices ran, every timed kernel started and
    /// ended together; absent where it ran alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub together: Option<usize>,
    /// What measured the point, where it is not membw's CPU team: another
    /// program (`membw exec`), by label, whose elements, ntimes and working
    /// set are then its own, as it printed them, and not part of the key;
    /// or a device, by name. In files a program is the point's `program`
    /// (its label) and a device its `target`, as schema 1 wrote them.
    #[serde(flatten, with = "targets::in_point")]
    pub target: Option<targets::Target>,
}

/// The part of a point only host CPUs have (see [`Point::host`]).
#[derive(Debug, Clone, Copy)]
pub struct HostPart<'a> {
    pub threads: usize,
    point: &'a Point,
}

impl HostPart<'_> {
    /// The placement as it prints (`spread`, `per-l3=1 (rank 1 of 2)`),
    /// made only where it is printed.
    pub fn placement(&self) -> String {
        self.point.placement_text()
    }
}

fn is_device_memory(place: &crate::memory::gpu_memory::GpuMemory) -> bool {
    *place == crate::memory::gpu_memory::GpuMemory::Device
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaCell {
    pub cpu_node: usize,
    pub mem_node: usize,
    /// One thread, or all cores of the CPU node.
    pub all_cores: bool,
}

impl Point {
    /// The label of the program measured at this point, if one was.
    pub fn program(&self) -> Option<&str> {
        match self.measured() {
            targets::Measured::Program(_, label) => label,
            targets::Measured::Team(_) | targets::Measured::Device(_) => None,
        }
    }

    /// What kind of thing did the point's work, with its part: the host
    /// CPUs' threads and placement (membw's team, a program), or the
    /// device. Where behaviour differs by kind, match on this.
    pub fn measured(&self) -> targets::Measured<'_, HostPart<'_>> {
        let part = HostPart {
            threads: self.threads,
            point: self,
        };
        match &self.target {
            // The team's code is its runs', not the key's.
            None => targets::Measured::Team(part),
            Some(target) => target.measured(part),
        }
    }

    /// What host CPUs did at the point, where they did its work (membw's
    /// team, or a program): its threads and their placement, for
    /// rendering what is present. A device's point has none.
    pub fn host(&self) -> Option<HostPart<'_>> {
        self.measured().host()
    }

    /// Whether its threads were bound to their CPUs (all but `unpinned`).
    pub fn pinned(&self) -> bool {
        (self.placement.as_ref())
            .is_none_or(|p| p.scheme != crate::placement::identity::Scheme::Unpinned)
    }

    /// What a working set is per: `thread`, or `device`.
    pub fn per(&self) -> &'static str {
        self.measured().per()
    }

    /// The device's name (`sim1`) where a device measured the point.
    pub fn device_name(&self) -> Option<&str> {
        self.target.as_ref().and_then(targets::Target::device_name)
    }

    /// The placement as it prints; empty for a device.
    pub fn placement_text(&self) -> String {
        let placed = (self.placement.as_ref()).map_or(String::new(), |p| p.to_string());
        match self.concurrent_rank {
            Some(r) => format!("{placed} (rank {} of {})", r.rank, r.ranks),
            None => placed,
        }
    }

    /// The memory policy as it prints; empty for a device.
    pub fn mem_text(&self) -> String {
        self.mem.as_ref().map_or(String::new(), |m| m.to_string())
    }

    /// What identifies the point for `--resume`: its JSON form, less what
    /// a program only tells by running (its own sizes).
    pub fn key(&self) -> String {
        let identity = match self.program() {
            Some(_) => Point {
                elements: 0,
                ntimes: 0,
                working_set_per_thread: 0,
                element_bytes: None,
                ..self.clone()
            },
            None => self.clone(),
        };
        serde_json::to_string(&identity).unwrap_or_default()
    }

    /// A program's point with the sizes the program printed in `run`.
    pub fn with_program_sizes(mut self, run: &measurement::ProgramRun) -> Point {
        if let Some(n) = run.array_elements {
            let element = run.element_bytes.unwrap_or(crate::units::ELEMENT_BYTES);
            self.elements = n;
            self.element_bytes = run
                .element_bytes
                .filter(|&b| b != crate::units::ELEMENT_BYTES);
            // STREAM's three arrays.
            self.working_set_per_thread =
                n.saturating_mul(element).saturating_mul(3) / self.threads.max(1) as u64;
        }
        if let Some(n) = run.ntimes {
            self.ntimes = n;
        }
        self
    }

    /// A short label for tables, progress and lists, naming what tells
    /// the point apart: `spread × 4 · local · nt stores`, `gcc: spread × 4
    /// · local` for a program, `one thread of node 0 → memory node 1` in a
    /// NUMA matrix, or `device sim0` for a device.
    pub fn label(&self) -> String {
        let mut s = match (self.device_name(), self.numa) {
            (Some(name), _) if self.mem.is_some() => {
                format!("device {name} · host {}", self.mem_text())
            }
            (Some(name), _) => format!("device {name}"),
            // The matrix's own words: its cases differ by nodes, not by
            // the strategy that places them.
            (None, Some(cell)) => format!(
                "{} of node {} → memory node {}",
                match cell.all_cores {
                    true => format!("all cores ({} threads)", self.threads),
                    false => "one thread".into(),
                },
                cell.cpu_node,
                cell.mem_node
            ),
            (None, None) => format!(
                "{} × {} · {}",
                self.placement_text(),
                self.threads,
                self.mem_text()
            ),
        };
        if let Some(program) = self.program() {
            s = format!("{program}: {s}");
        }
        if self.stores != StoresRequest::Auto {
            s.push_str(&format!(" · {} stores", self.stores));
        }
        if !self.hugepages.is_auto() {
            s.push_str(&format!(" · {} pages", self.hugepages));
        }
        if let Some(isa) = self.isa {
            s.push_str(&format!(" · {isa} ISA"));
        }
        if self.offset != 0 {
            s.push_str(&format!(" · offset {}", self.offset));
        }
        if !is_device_memory(&self.gpu_memory) {
            s.push_str(&format!(" · {} memory", self.gpu_memory));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use targets::Target;

    #[test]
    fn one_target_field_reads_and_writes_as_schema_1_did() {
        // A program is the point's `program`, a device its `target`.
        let text = r#"{"threads":2,"placement":"spread","mem":"local","stores":"auto","kernels":["triad"],"numa":null,"program":"gcc"}"#;
        let point: Point = serde_json::from_str(text).unwrap();
        assert_eq!(point.program(), Some("gcc"));
        assert_eq!(
            point.target,
            Some(Target::Program {
                label: Some("gcc".into())
            })
        );
        let written: serde_json::Value = serde_json::to_value(&point).unwrap();
        assert_eq!(written["program"], "gcc");
        assert!(written.get("target").is_none(), "{written}");
        // membw's CPU team has neither.
        let cpu = Point {
            target: None,
            ..point.clone()
        };
        let written = serde_json::to_value(&cpu).unwrap();
        assert!(written.get("program").is_none() && written.get("target").is_none());
        assert_eq!(serde_json::from_value::<Point>(written).unwrap(), cpu);
    }

    #[test]
    fn a_label_names_what_tells_points_apart() {
        let text = r#"{"threads":2,"placement":"spread","mem":"local","stores":"auto","kernels":["triad"],"numa":null,"program":"gcc"}"#;
        let gcc: Point = serde_json::from_str(text).unwrap();
        assert_eq!(gcc.label(), "gcc: spread × 2 · local");
        let team = Point {
            target: None,
            ..gcc.clone()
        };
        assert_eq!(team.label(), "spread × 2 · local");
        let shifted = Point {
            offset: 1840,
            ..team.clone()
        };
        assert_eq!(shifted.label(), "spread × 2 · local · offset 1840");
        // A NUMA matrix's cell, in the matrix's words, not its strategy's.
        let cell = |all_cores| NumaCell {
            cpu_node: 0,
            mem_node: 1,
            all_cores,
        };
        let one = Point {
            threads: 1,
            numa: Some(cell(false)),
            ..team.clone()
        };
        assert_eq!(one.label(), "one thread of node 0 → memory node 1");
        let all = Point {
            threads: 12,
            numa: Some(cell(true)),
            ..team
        };
        assert_eq!(
            all.label(),
            "all cores (12 threads) of node 0 → memory node 1"
        );
    }
}
