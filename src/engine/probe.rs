//! Probes: the experiment kinds the engine drives. A probe says what one
//! job of its kind measures; [`drive`] owns everything around it, the same
//! for every kind: the order of the jobs, skipping what a resumed file
//! holds, stopping between jobs once a signal asks, dropping a job a signal
//! cut short, and keeping each measured point in the session (stamped,
//! appended to the results file, kept for the report).
//!
//! The kinds: the bandwidth kernels and a device's host-link transfers
//! ([`super::Engine`]'s jobs, one record per job and its repeats), and the
//! idle and NUMA-matrix chases and the core-to-core pairs
//! ([`super::latency_probes`]). A new kind is one implementation of [`Probe`].
//! The loaded chase is the one kind outside it: its load threads measure
//! all the delays of a mix in one go, so it keeps its points through the
//! same [`Session`] as they come.

use super::session::{Keyed, Session};
use super::{Outcome, Stop};
use crate::error::{Error, Result};
use serde::Serialize;

/// One experiment kind.
pub trait Probe {
    /// What the probe needs to measure one point (a bandwidth job's plan,
    /// a chase's CPU and memory policy).
    type Job;
    /// What identifies the point in a results file.
    type Point: Keyed + Serialize;
    /// What the point's record holds besides its identity.
    type Payload: Serialize;

    /// The identity a resumed file is checked against before `job` runs.
    fn point(&self, job: &Self::Job) -> Self::Point;

    /// Measures `job`: its point as it ran (a program may report its own
    /// sizes) and its payload, or `None` when `stop` cut it short.
    fn measure(
        &mut self,
        job: &Self::Job,
        stop: &Stop,
    ) -> Result<Option<(Self::Point, Self::Payload)>>;
}

/// Measures each of `jobs` not done yet, in order, into `session`.
pub fn drive<P: Probe>(
    probe: &mut P,
    jobs: &[P::Job],
    session: &mut Session<P::Point, P::Payload>,
) -> Result<Outcome> {
    let mut outcome = Outcome {
        written: 0,
        skipped: 0,
        interrupted: false,
    };
    for job in jobs {
        if session.signal().is_some() {
            break;
        }
        if session.skip(&probe.point(job)) {
            outcome.skipped += 1;
            continue;
        }
        let measured = match probe.measure(job, &session.stop) {
            // The signal cut into the job: not kept.
            Err(Error::Interrupted { .. }) if session.signal().is_some() => break,
            measured => measured?,
        };
        // A job cut short, or a program the signal killed: not kept.
        let Some((point, payload)) = measured.filter(|_| session.signal().is_none()) else {
            break;
        };
        session.keep(point, payload)?;
        outcome.written += 1;
    }
    outcome.interrupted = session.signal().is_some();
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Host;
    use crate::results::append::ResultsFile;

    #[derive(Debug, Clone, PartialEq, Serialize)]
    struct Numbered(u32);

    #[derive(Debug, Clone, Copy, PartialEq, Serialize)]
    struct Doubled {
        doubled: u32,
    }

    impl Keyed for Numbered {
        fn key(&self) -> String {
            self.0.to_string()
        }
    }

    /// Doubles its job; the signal arrives while it measures `stop_at`.
    struct Doubler {
        stop_at: Option<u32>,
        measured: Vec<u32>,
    }

    impl Probe for Doubler {
        type Job = u32;
        type Point = Numbered;
        type Payload = Doubled;

        fn point(&self, job: &u32) -> Numbered {
            Numbered(*job)
        }

        fn measure(&mut self, job: &u32, stop: &Stop) -> Result<Option<(Numbered, Doubled)>> {
            self.measured.push(*job);
            if self.stop_at == Some(*job) {
                stop.request(15);
            }
            Ok(Some((Numbered(*job), Doubled { doubled: job * 2 })))
        }
    }

    fn session(file: Option<ResultsFile>) -> Session<Numbered, Doubled> {
        let host = Host {
            hostname: "test".into(),
            cpu_model: None,
            kernel: "test".into(),
            online_cpus: 1,
            numa_nodes: 1,
            sockets: 1,
            thp_mode: None,
            interleave_weights: None,
            clocks: None,
        };
        Session::new("probe-test", host, Stop::default(), file)
    }

    /// The key of the point a line of the test's file holds.
    fn key(line: &str) -> std::result::Result<String, String> {
        let record: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        Ok(record["point"].to_string())
    }

    #[test]
    fn every_job_is_measured_once_in_order_and_kept() {
        let mut probe = Doubler {
            stop_at: None,
            measured: Vec::new(),
        };
        let mut out = session(None);
        let outcome = drive(&mut probe, &[3, 1, 2], &mut out).unwrap();
        assert_eq!((outcome.written, outcome.skipped), (3, 0));
        assert!(!outcome.interrupted);
        assert_eq!(probe.measured, [3, 1, 2]);
        let kept: Vec<_> = (out.records.iter())
            .map(|r| (r.point.0, r.payload.doubled))
            .collect();
        assert_eq!(kept, [(3, 6), (1, 2), (2, 4)]);
    }

    #[test]
    fn a_signal_drops_the_job_it_cut_and_runs_no_other() {
        let mut probe = Doubler {
            stop_at: Some(1),
            measured: Vec::new(),
        };
        let mut out = session(None);
        let outcome = drive(&mut probe, &[3, 1, 2], &mut out).unwrap();
        assert!(outcome.interrupted);
        assert_eq!(outcome.written, 1);
        assert_eq!(probe.measured, [3, 1]);
        assert_eq!(out.records.len(), 1);
    }

    #[test]
    fn a_resumed_file_skips_its_points_without_measuring_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let file = ResultsFile::create(&path).unwrap();
        let mut first = Doubler {
            stop_at: None,
            measured: Vec::new(),
        };
        drive(&mut first, &[1, 2], &mut session(Some(file))).unwrap();
        let (file, _) = ResultsFile::resume_with(&path, key).unwrap();
        let mut again = Doubler {
            stop_at: None,
            measured: Vec::new(),
        };
        let mut out = session(Some(file));
        let outcome = drive(&mut again, &[1, 2, 3], &mut out).unwrap();
        assert_eq!((outcome.written, outcome.skipped), (1, 2));
        assert_eq!(again.measured, [3]);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 3);
    }
}
