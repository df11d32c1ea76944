//! Sweep's placement axes: run's placement flags, each taking several
//! values, each value a point.
//!
//! One list convention for every axis: repeat the flag for several values
//! (`--places cores --places sockets`); an axis whose values never hold a
//! comma also takes them comma-separated in one flag (`--strategy
//! compact,spread`, `--threads 1,2,4`). `--mem` also takes `;` between
//! policies, as it always has.

use super::env::{self, Vars};
use super::values::CpuNodeArg;
use crate::engine::sweep;
use crate::error::{Error, Result};
use crate::placement::{Spec, omp::Bind};
use crate::topology::Topology;
use clap::Args;

#[derive(Args, Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct PlacementAxes {
    /// Thread counts: 1-12, 1,2,4,8,16, 2-16:2, or cores (1 to all); repeat to join lists
    /// [default: OMP_NUM_THREADS, else one per core]
    #[arg(long, help_heading = "Axes")]
    #[serde(default)]
    pub(crate) threads: Vec<String>,

    /// Strategies: compact, spread, per-socket=K, per-numa=K, per-l3=K, stride=S (comma-separated or repeated)
    #[arg(long, value_delimiter = ',', help_heading = "Axes")]
    #[serde(default)]
    pub(crate) strategy: Vec<String>,

    /// CPU lists, one per flag (repeat for several): thread 0, 1, ... on these CPUs in order
    #[arg(long, help_heading = "Axes")]
    #[serde(default)]
    pub(crate) cpus: Vec<String>,

    /// OpenMP places, one per flag (repeat for several)
    #[arg(long, help_heading = "Axes")]
    pub(crate) places: Vec<String>,

    /// OMP_PROC_BIND for every --places: close, spread, primary
    #[arg(long, requires = "places", value_parser = super::args::parse_bind, help_heading = "Axes")]
    pub(crate) bind: Option<Bind>,

    /// likwid-pin expressions, one per flag (repeat for several)
    #[arg(long, help_heading = "Axes")]
    pub(crate) pin: Vec<String>,

    /// GOMP_CPU_AFFINITY lists, one per flag (repeat for several)
    #[arg(long, value_name = "LIST", help_heading = "Axes")]
    #[serde(default)]
    pub(crate) gomp_affinity: Vec<String>,

    /// KMP_AFFINITY values, one per flag (repeat for several)
    #[arg(long, value_name = "SPEC", help_heading = "Axes")]
    #[serde(default)]
    pub(crate) kmp_affinity: Vec<String>,

    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) smt: super::flags::Smt,

    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) cpunode: CpuNodeArg,

    #[command(flatten)]
    #[serde(skip)]
    pub(crate) ignore_env: super::flags::IgnoreEnv,
}

impl PlacementAxes {
    fn any_placement(&self) -> bool {
        !(self.strategy.is_empty()
            && self.cpus.is_empty()
            && self.places.is_empty()
            && self.pin.is_empty()
            && self.gomp_affinity.is_empty()
            && self.kmp_affinity.is_empty())
    }

    /// Fills the axes no flag gave from the variables people set for
    /// STREAM, as `run` reads them, so that the study (and the results
    /// file) says what ran; the line for the header, if any was used.
    pub(crate) fn take_environment(&mut self, vars: &Vars) -> Result<Option<String>> {
        if self.ignore_env.ignore_env {
            return Ok(None);
        }
        let from = env::placement(vars, self.any_placement(), !self.threads.is_empty())?;
        if let Some(n) = from.threads {
            self.threads = vec![n.to_string()];
        }
        match from.spec {
            Some(Spec::Places { places, bind }) => {
                self.places = vec![places.text];
                self.bind = Some(bind);
            }
            Some(Spec::Gomp(list)) => self.gomp_affinity = vec![list.text],
            Some(Spec::Kmp(kmp)) => self.kmp_affinity = vec![kmp.text],
            _ => {}
        }
        let mut line = Vec::new();
        if !from.used.is_empty() {
            line.push(format!("from environment {}", from.used.join(" ")));
        }
        if !from.unused.is_empty() {
            line.push(format!("not used: {}", from.unused.join(", ")));
        }
        Ok((!line.is_empty()).then(|| {
            format!(
                "membw: placement {} (--ignore-env ignores the environment)",
                line.join("; ")
            )
        }))
    }

    /// Every placement of the study, in the order of the flags' help;
    /// membw's default when none is given.
    pub(crate) fn placements(&self) -> Result<Vec<Spec>> {
        let mut out = Vec::new();
        for s in &self.strategy {
            if s.trim().is_empty() {
                return Err(Error::Usage(format!(
                    "--strategy '{}': an empty item (compact, spread, per-socket=K, ... separated by commas)",
                    self.strategy.join(",")
                )));
            }
            out.push(Spec::strategy(s.trim())?);
        }
        for c in &self.cpus {
            out.push(Spec::cpus(c)?);
        }
        let bind = self.bind.unwrap_or(Bind::Close);
        for p in &self.places {
            out.push(Spec::places(p, bind)?);
        }
        for e in &self.pin {
            out.push(Spec::likwid(e)?);
        }
        for g in &self.gomp_affinity {
            out.push(Spec::gomp(g)?);
        }
        for k in &self.kmp_affinity {
            out.push(Spec::kmp(k)?);
        }
        if out.is_empty() {
            out.push(Spec::Default);
        }
        Ok(out)
    }

    /// The thread counts: every list given, in order; the placement's own
    /// count when none is.
    pub(crate) fn thread_counts(&self, topo: &Topology) -> Result<Vec<Option<usize>>> {
        if self.threads.is_empty() {
            return Ok(vec![None]);
        }
        let mut counts = Vec::new();
        for list in &self.threads {
            counts.extend(sweep::parse_threads(list, topo)?);
        }
        Ok(counts)
    }
}
