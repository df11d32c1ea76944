//! What every experiment shares, whatever it measures: when it started, the
//! host, the stop flag the signals set, the results file with the points
//! already in it, and the records so far. A kind of experiment only says
//! how a point is measured; it hands each point and its payload to
//! [`Session::keep`], which stamps, writes and keeps it.

use super::Stop;
use crate::error::{Error, Result};
use crate::results::append::ResultsFile;
use crate::results::{Envelope, Host};
use serde::Serialize;
use std::collections::HashSet;

/// What identifies a point for `--resume`.
pub trait Keyed {
    fn key(&self) -> String;
}

impl Keyed for crate::results::Point {
    fn key(&self) -> String {
        crate::results::Point::key(self)
    }
}

impl Keyed for crate::results::latency_record::LatencyKey {
    fn key(&self) -> String {
        crate::results::latency_record::LatencyKey::key(self)
    }
}

pub struct Session<P, D> {
    pub experiment: &'static str,
    /// When the experiment started (RFC 3339): one value for all its records.
    pub started: String,
    pub host: Host,
    pub stop: Stop,
    pub file: Option<ResultsFile>,
    /// Keys of the points already in a resumed file.
    done: HashSet<String>,
    /// How many points were found done and skipped.
    pub skipped: usize,
    /// The keys of those points, in the order the study reached them: what
    /// a resumed run's report takes from the file.
    pub resumed: Vec<String>,
    /// Every record kept, in order.
    pub records: Vec<Envelope<P, D>>,
    /// The study every record is stamped with, when the command has one.
    pub study: Option<crate::results::study::Study>,
}

impl<P: Keyed + Serialize, D: Serialize> Session<P, D> {
    /// A session writing to `file` (when given), whose points count as done.
    pub fn new(
        experiment: &'static str,
        host: Host,
        stop: Stop,
        mut file: Option<ResultsFile>,
    ) -> Self {
        let done = file
            .as_mut()
            .map(|f| std::mem::take(&mut f.done))
            .unwrap_or_default();
        Session {
            experiment,
            started: crate::results::now(),
            host,
            stop,
            file,
            done,
            skipped: 0,
            resumed: Vec::new(),
            records: Vec::new(),
            study: None,
        }
    }

    /// Whether `point` is in the resumed file; counted when it is.
    pub fn skip(&mut self, point: &P) -> bool {
        let key = point.key();
        let done = self.done.contains(&key);
        if done {
            self.skipped += 1;
            self.resumed.push(key);
        }
        done
    }

    /// Whether `point` is in the resumed file, not counted.
    pub fn has(&self, point: &P) -> bool {
        self.done.contains(&point.key())
    }

    /// Stamps one measured point, appends it to the file and keeps it;
    /// false once a signal asked to stop.
    pub fn keep(&mut self, point: P, payload: D) -> Result<bool> {
        let mut record = Envelope::new(self.experiment, &self.started, &self.host, point, payload);
        record.study.clone_from(&self.study);
        if let Some(file) = &mut self.file {
            file.append(&record).map_err(|e| {
                Error::Runtime(format!(
                    "{}: cannot append a point: {e}",
                    file.path.display()
                ))
            })?;
            for notice in file.notices.drain(..) {
                crate::say!("membw: {}: {notice}", file.path.display());
            }
        }
        self.records.push(record);
        Ok(self.stop.signal().is_none())
    }

    /// The signal that stopped the session, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.stop.signal()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::latency_record::{
        Latency, LatencyExperiment, LatencyKey, WorkingSetLatency,
    };

    fn key(bytes: u64) -> LatencyKey {
        LatencyKey {
            study: LatencyExperiment::Idle,
            cpu: 0,
            cpu_node: None,
            mem: Default::default(),
            mem_node: None,
            bytes,
            hugepages: crate::memory::Hugepages::Thp,
            order: Default::default(),
            load_cpus: Vec::new(),
            mix: None,
            delay_ns: None,
            peer_cpu: None,
            line: None,
        }
    }

    fn payload() -> Latency {
        Latency {
            latency: WorkingSetLatency {
                bytes: 4096,
                lines: 64,
                min_ns: 1.0,
                p50_ns: 1.0,
                p90_ns: 1.0,
                p99_ns: 1.0,
                mean_ns: 1.0,
                p50_cycles: None,
                p50_ci: None,
                chunks: 1,
                loads_per_chunk: 1,
                huge_share: None,
                order: None,
            },
            load: None,
            idle_p50_ns: None,
            clock_ghz: None,
            caches: Default::default(),
            peak_gb_s: None,
            interference: None,
            relation: None,
            mem_inherited: false,
        }
    }

    fn host() -> Host {
        serde_json::from_value(serde_json::json!({
            "hostname": "h", "cpu_model": null, "kernel": "k",
            "online_cpus": 2, "numa_nodes": 1, "sockets": 1, "thp_mode": null
        }))
        .unwrap()
    }

    #[test]
    fn resumed_points_are_skipped_and_kept_points_written_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.jsonl");
        let file = ResultsFile::create(&path).unwrap();
        let mut s: Session<LatencyKey, Latency> =
            Session::new("latency", host(), Stop::default(), Some(file));
        assert!(s.keep(key(4096), payload()).unwrap());
        drop(s);
        let (file, torn) = ResultsFile::resume_with(&path, |t| {
            crate::results::latency_record::parse(t).map(|r| r.point.key())
        })
        .unwrap();
        assert_eq!(torn, None);
        let stop = Stop::default();
        let mut s: Session<LatencyKey, Latency> =
            Session::new("latency", host(), stop.clone(), Some(file));
        assert!(s.skip(&key(4096)) && !s.skip(&key(8192)));
        assert_eq!(s.skipped, 1);
        stop.request(15);
        // The point measured when the signal came is kept; the caller stops.
        assert!(!s.keep(key(8192), payload()).unwrap());
        assert_eq!(s.signal(), Some(15));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(
            text.lines()
                .all(|l| l.contains("\"experiment\":\"latency\""))
        );
    }
}
