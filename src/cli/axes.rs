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
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) flags: super::flags::PlacementFlags,

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
        !(self.flags.strategy.is_empty()
            && !self.flags.no_pin
            && self.flags.cpus.is_empty()
            && self.flags.places.is_empty()
            && self.flags.pin.is_empty()
            && self.flags.gomp_affinity.is_empty()
            && self.flags.kmp_affinity.is_empty())
    }

    /// Fills the axes no flag gave from the variables people set for
    /// STREAM, as `run` reads them, so that the study (and the results
    /// file) says what ran; the line for the header, if any was used.
    pub(crate) fn take_environment(&mut self, vars: &Vars) -> Result<Option<String>> {
        if self.ignore_env.ignore_env {
            return Ok(None);
        }
        let from = env::placement(vars, self.any_placement(), !self.flags.threads.is_empty())?;
        if let Some(n) = from.threads {
            self.flags.threads = vec![n.to_string()];
        }
        match from.spec {
            Some(Spec::Places { places, bind }) => {
                self.flags.places = vec![places.text];
                self.flags.bind = Some(bind);
            }
            Some(Spec::Gomp(list)) => self.flags.gomp_affinity = vec![list.text],
            Some(Spec::Kmp(kmp)) => self.flags.kmp_affinity = vec![kmp.text],
            Some(Spec::Unpinned) => self.flags.no_pin = true,
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
        if self.flags.no_pin {
            out.push(Spec::Unpinned);
        }
        for s in &self.flags.strategy {
            if s.trim().is_empty() {
                return Err(Error::Usage(format!(
                    "--strategy '{}': an empty item (compact, spread, per-socket=K, ... separated by commas)",
                    self.flags.strategy.join(",")
                )));
            }
            out.push(Spec::strategy(s.trim())?);
        }
        for c in &self.flags.cpus {
            out.push(Spec::cpus(c)?);
        }
        let bind = self.flags.bind.unwrap_or(Bind::Close);
        for p in &self.flags.places {
            out.push(Spec::places(p, bind)?);
        }
        for e in &self.flags.pin {
            out.push(Spec::likwid(e)?);
        }
        for g in &self.flags.gomp_affinity {
            out.push(Spec::gomp(g)?);
        }
        for k in &self.flags.kmp_affinity {
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
        if self.flags.threads.is_empty() {
            return Ok(vec![None]);
        }
        let mut counts = Vec::new();
        for list in &self.flags.threads {
            counts.extend(sweep::parse_threads(list, topo)?);
        }
        Ok(counts)
    }
}
