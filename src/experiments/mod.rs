//! Experiments: many configurations, each measured by the same protocol as
//! `membw run`, streamed to JSON Lines as they complete.
//!
//! A [`Point`] is one configuration; measuring it `repeat` times (fresh
//! arrays each time) gives one [`Record`], one line of the results file.

pub mod sweep;
pub mod tune;

use crate::error::{Error, Result};
use crate::kernels::{Isa, KernelId, StoreMode};
use crate::plan::StoresRequest;
use crate::protocol::Measurement;
use crate::report::Host;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;

/// One configuration of a sweep. Its JSON form is its identity: `--resume`
/// skips a point whose key is already in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub threads: usize,
    /// Placement label: `spread`, `per-l3=1`, `places {0:1}:8:2 close`, ...
    pub placement: String,
    /// Memory policy as given: `local`, `bind:1`, ...
    pub mem: String,
    pub stores: StoresRequest,
    pub kernels: Vec<KernelId>,
    pub elements: u64,
    /// Bytes of all arrays per thread: the working set a size sweep varies.
    pub working_set_per_thread: u64,
    pub ntimes: usize,
    /// For NUMA-matrix points: the CPU node and the memory node.
    pub numa: Option<NumaCell>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaCell {
    pub cpu_node: usize,
    pub mem_node: usize,
    /// One thread, or all cores of the CPU node.
    pub all_cores: bool,
}

impl Point {
    pub fn key(&self) -> String {
        serde_json::to_string(self).expect("plain data serializes")
    }
}

/// One measurement of a point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub cpus: Vec<usize>,
    pub isa: Isa,
    pub stores: StoreMode,
    pub inner_repeats: usize,
    /// Best rate of each kernel, GB/s.
    pub best_gb_s: BTreeMap<KernelId, f64>,
    /// max/min time of each kernel.
    pub spread: BTreeMap<KernelId, f64>,
    pub validated: bool,
    /// Whether every array's pages were where the memory policy said.
    pub pages_held: bool,
    pub setup_s: f64,
    pub total_s: f64,
    /// Seconds spent inside timed repetitions.
    pub measured_s: f64,
    pub warnings: Vec<String>,
}

impl RunResult {
    pub fn from_measurement(m: &Measurement) -> RunResult {
        RunResult {
            cpus: m.threads.iter().map(|t| t.cpu).collect(),
            isa: m.isa,
            stores: m.stores,
            inner_repeats: m.inner_repeats,
            best_gb_s: m
                .results
                .iter()
                .map(|r| (r.kernel, r.best_gb_s()))
                .collect(),
            spread: m.results.iter().map(|r| (r.kernel, r.spread)).collect(),
            validated: m.validation.passed,
            pages_held: m.pages.iter().all(|p| p.held),
            setup_s: m.setup_s,
            total_s: m.total_s,
            measured_s: m.results.iter().flat_map(|r| &r.times_s).sum(),
            warnings: m.warnings.clone(),
        }
    }
}

/// Mean ± standard deviation, min and max of the runs' best rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub mean: f64,
    pub sd: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Stats {
    pub fn of(values: &[f64]) -> Option<Stats> {
        if values.is_empty() {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(Stats {
            mean,
            sd: var.sqrt(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n,
        })
    }
}

/// One line of a results file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub schema_version: u32,
    /// `sweep` or `tune`.
    pub experiment: String,
    /// When the experiment started (RFC 3339); the same for all its lines.
    pub started: String,
    pub timestamp: String,
    pub host: Host,
    pub point: Point,
    pub runs: Vec<RunResult>,
    /// Per kernel, over the runs' best rates (GB/s).
    pub stats: BTreeMap<KernelId, Stats>,
    /// Theoretical peak of the sockets the threads ran on, when known.
    pub peak_gb_s: Option<f64>,
    pub peak_source: Option<String>,
    /// Cache capacity per thread at each level (`L1d`, `L2`, `L3`), bytes.
    pub cache_per_thread: BTreeMap<String, u64>,
}

impl Record {
    pub fn stats_of(runs: &[RunResult]) -> BTreeMap<KernelId, Stats> {
        let mut by_kernel: BTreeMap<KernelId, Vec<f64>> = BTreeMap::new();
        for r in runs {
            for (&k, &v) in &r.best_gb_s {
                by_kernel.entry(k).or_default().push(v);
            }
        }
        by_kernel
            .into_iter()
            .filter_map(|(k, v)| Some((k, Stats::of(&v)?)))
            .collect()
    }
}

/// Appends one record as one line and flushes, so a crash loses nothing
/// that completed.
pub fn append(file: &mut std::fs::File, record: &Record) -> std::io::Result<()> {
    let mut line = serde_json::to_string(record).expect("plain data serializes");
    line.push('\n');
    file.write_all(line.as_bytes())?;
    file.flush()
}

/// Reads a results file; a line that is not a record is an error naming it.
pub fn read_records(path: &Path) -> Result<Vec<Record>> {
    let file =
        std::fs::File::open(path).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    let mut records = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = serde_json::from_str(&line).map_err(|e| {
            Error::Usage(format!(
                "{}: line {} is not a membw result record: {e}",
                path.display(),
                i + 1
            ))
        })?;
        records.push(record);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_use_the_sample_standard_deviation() {
        let s = Stats::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.mean, s.min, s.max, s.n), (5.0, 2.0, 9.0, 8));
        assert!((s.sd - 2.138089935).abs() < 1e-6);
        assert_eq!(Stats::of(&[3.0]).unwrap().sd, 0.0);
        assert!(Stats::of(&[]).is_none());
    }
}
