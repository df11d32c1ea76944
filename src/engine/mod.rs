//! The measurement engine: one engine, several experiment kinds. Every kind
//! is a [`probe::Probe`] that owns only how one point is measured;
//! [`probe::drive`] runs its jobs and keeps their points through a
//! [`Session`] (start, host, stop, results file, resume, records).
//!
//! Bandwidth: jobs (settings already resolved into plans) go through a
//! [`Source`] and come out as [`Record`]s. `run` is the one-job case
//! ([`Engine::measure`]), `sweep` the many-job case ([`Engine::run`]),
//! `tune` a search that hands the engine one job at a time
//! ([`tune::search`]). Latency: [`latency::measure`].

pub mod check;
pub mod latency_probes;
pub mod probe;
pub mod program_source;
pub mod scopes;
pub mod session;
pub mod set_source;
pub mod source;
pub mod stores_check;
pub mod sweep;
pub mod together;
pub mod tune_search;
pub mod verdict;

pub use source::{FakeSource, Source, StreamSource};

pub use session::Session;

use crate::error::Result;
use crate::peak::Peak;
use crate::placement::spellings::{self, Spellings};
use crate::plan::Plan;
use crate::results::{Bandwidth, Measured, Measurement, PeakUse, Point, Record, RunResult};
use crate::topology::Topology;
use std::time::Instant;

/// A point ready to measure.
pub struct Job {
    pub point: Point,
    pub plan: Plan,
    /// For progress lines: `spread × 4 · local · 1 MiB/thread`.
    pub label: String,
    /// What measures it.
    pub by: By,
}

/// Which source measures a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum By {
    /// The engine's own source (membw's kernels, or the fake).
    #[default]
    Engine,
    /// The engine's `n`-th program (`sweep --exec`), see [`Engine::with_programs`].
    Program(usize),
}

impl Job {
    /// The lines that reproduce this job's placement and memory policy.
    pub fn reproduce(&self) -> Spellings {
        spellings::spell_plan(&self.plan.cpus, &self.plan.mem, self.plan.hugepages)
    }
}

/// The one stop mechanism (`sys::Stop`): the engine stops after the
/// current repetition once it is set.
pub use crate::sys::Stop;

/// How a batch of jobs ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    pub written: usize,
    pub skipped: usize,
    pub interrupted: bool,
}

/// The session of a bandwidth experiment.
pub type BandwidthSession = Session<Point, Bandwidth>;

pub struct Engine<'a> {
    topo: &'a Topology,
    source: &'a mut dyn Source,
    peak: Option<Peak>,
    /// Other programs of a sweep (`--exec LABEL=...`), by label.
    programs: Vec<(String, Box<dyn Source>)>,
    clock: Instant,
    /// Seconds inside timed repetitions, over every measurement so far.
    measured_s: f64,
}

impl<'a> Engine<'a> {
    pub fn new(topo: &'a Topology, source: &'a mut dyn Source, peak: Option<Peak>) -> Engine<'a> {
        Engine {
            topo,
            source,
            peak,
            programs: Vec::new(),
            clock: Instant::now(),
            measured_s: 0.0,
        }
    }

    pub fn source_name(&self) -> &'static str {
        self.source.name()
    }

    /// Whether this process reports what it measured (not so on MPI ranks
    /// other than 0).
    pub fn reports(&self) -> bool {
        self.source.reports()
    }

    /// Wall time outside timed repetitions, as a share of the engine's life
    /// (mapping, first touch, validation, thread start); `None` before any
    /// measurement.
    pub fn overhead_share(&self) -> Option<f64> {
        let wall = self.clock.elapsed().as_secs_f64();
        (self.measured_s > 0.0 && wall > 0.0).then(|| (1.0 - self.measured_s / wall).max(0.0))
    }

    /// The theoretical peak of what `plan` ran on, with each rate against
    /// it: the sockets its CPUs are on, or a device's own peak. `in_caches`
    /// is the run's (what it showed of the caches), else the plan's.
    pub fn peak_use(
        &self,
        plan: &Plan,
        in_caches: Option<crate::results::InCaches>,
        rates: impl IntoIterator<Item = (crate::kernels::KernelId, f64)>,
    ) -> Option<PeakUse> {
        // Rates of the caches are no share of the memory's peak (arrays
        // past the caches but under STREAM's rule are, with the warning).
        let rates: Vec<_> = match in_caches.map(|c| c.band()) {
            Some(crate::results::Band::Caches) => Vec::new(),
            _ => rates.into_iter().collect(),
        };
        let peak = plan.target.memory_peak(self.peak.as_ref())?;
        let cpus = plan.host_cpus().unwrap_or_default();
        Some(PeakUse::new(peak, self.topo, cpus, rates, &plan.target))
    }

    /// Adds the programs a sweep measures besides membw's kernels; a job
    /// `By::Program(n)` is measured by the `n`-th.
    pub fn with_programs(mut self, programs: Vec<(String, Box<dyn Source>)>) -> Self {
        self.programs = programs;
        self
    }

    /// The source of a job.
    fn source_for(&mut self, by: By) -> &mut dyn Source {
        match by {
            By::Program(n) if n < self.programs.len() => self.programs[n].1.as_mut(),
            By::Program(_) | By::Engine => &mut *self.source,
        }
    }

    /// Resolves settings into the plan the engine's own source measures
    /// (the backend prepares its own: CPU threads, or a device).
    pub fn prepare(&self, settings: &crate::plan::Settings) -> Result<crate::plan::Prepared> {
        self.source.prepare(self.topo, settings)
    }

    /// Measures one plan by the source `by` names (the engine's own, or a
    /// program's in a study): the only place a source is called. `stop`
    /// ends it between repetitions. The engine adds what every
    /// measurement carries (the governor's warning) and counts its time.
    pub fn measure(&mut self, plan: &Plan, by: By, stop: &Stop) -> Result<Measurement> {
        let mut m = self.source_for(by).measure(plan, stop)?;
        // A governor that lowers idle clocks is a reason a run is low.
        if let Some(saving) = plan.host_cpus().and_then(|c| self.topo.power.saving_on(c)) {
            m.warnings.push(format!(
                "clock governor {saving}: it lowers the clock between bursts, so rates may be low; STREAM's tutorials set performance (cpupower frequency-set -g performance)"
            ));
        }
        self.measured_s += m.measured_s();
        Ok(m)
    }

    /// Measures each job `repeat` times and keeps one record per job in
    /// `session`, skipping jobs whose point the session has (a resumed
    /// file). Stops after the current repetition once the session's stop is
    /// set; a job cut short is not kept.
    pub fn run(
        &mut self,
        jobs: &[Job],
        repeat: usize,
        session: &mut BandwidthSession,
        on_run: &mut dyn FnMut(&Job, &RunResult),
    ) -> Result<Outcome> {
        let mut probe = Bandwidths {
            engine: self,
            repeat,
            on_run,
        };
        probe::drive(&mut probe, jobs, session)
    }

    /// What a measured job's record holds: its point (with a program's own
    /// sizes) and its payload.
    // A new kind must be decided wherever kinds are matched.
    #[deny(clippy::wildcard_enum_match_arm)]
    pub fn payload(&self, job: &Job, runs: Vec<RunResult>) -> (Point, Bandwidth) {
        let peak = self.peak_use(&job.plan, job.plan.in_caches, []);
        let point = match runs.last().and_then(|r| r.program()) {
            Some(program) => job.point.clone().with_program_sizes(program),
            None => job.point.clone(),
        };
        let source = match job.by {
            By::Program(n) if n < self.programs.len() => self.programs[n].1.name(),
            By::Program(_) | By::Engine => self.source.name(),
        };
        // What only work on host CPUs has: the host's reason for an
        // unknown peak, its caches, the lines that place it again.
        let (peak_unknown, cache_per_thread, reproduce) = match job.plan.measured() {
            Measured::Team(cpus) | Measured::Program(cpus, _) => (
                peak.is_none()
                    .then(|| crate::peak::unknown_reason(self.topo)),
                self.topo.cache_per_thread(cpus),
                Some(job.reproduce()),
            ),
            // A device's reason is its backend's warning; no host cache
            // holds its arrays.
            Measured::Device(_) => (None, self.topo.cache_per_thread(&[]), None),
        };
        let payload = Bandwidth {
            source: source.into(),
            stats: Record::stats_of(&runs),
            peak_unknown,
            peak_gb_s: peak.as_ref().map(|p| p.used_gb_s),
            peak_source: peak.map(|p| p.peak.detail),
            cache_per_thread,
            reproduce,
            runs,
        };
        (point, payload)
    }
}

/// The bandwidth probe: each job measured `repeat` times, one record.
struct Bandwidths<'e, 'a, 'r> {
    engine: &'e mut Engine<'a>,
    repeat: usize,
    /// Told of every repetition as it ends (progress lines).
    on_run: &'r mut dyn FnMut(&Job, &RunResult),
}

impl probe::Probe for Bandwidths<'_, '_, '_> {
    type Job = Job;
    type Point = Point;
    type Payload = Bandwidth;

    fn point(&self, job: &Job) -> Point {
        job.point.clone()
    }

    fn measure(&mut self, job: &Job, stop: &Stop) -> Result<Option<(Point, Bandwidth)>> {
        let mut runs = Vec::with_capacity(self.repeat);
        while runs.len() < self.repeat && stop.signal().is_none() {
            let m = self.engine.measure(&job.plan, job.by, stop)?;
            if stop.signal().is_some() {
                // A program killed by the signal, or a run it cut into.
                break;
            }
            let r = RunResult::from_measurement(&m);
            (self.on_run)(job, &r);
            runs.push(r);
        }
        Ok((runs.len() == self.repeat).then(|| self.engine.payload(job, runs)))
    }
}

#[cfg(test)]
mod tests {
    use super::sweep::{SweepSpec, expand};
    use super::*;
    use crate::kernels::KernelId;
    use crate::placement::{Spec, Strategy};
    use crate::plan::StoresRequest;

    fn jobs(topo: &Topology) -> Vec<Job> {
        let spec = SweepSpec {
            threads: vec![Some(1), None],
            placements: vec![
                Spec::Strategy(Strategy::Compact),
                Spec::Strategy(Strategy::Spread),
            ],
            smt: false,
            mems: vec![(Default::default(), Default::default())],
            stores: vec![StoresRequest::Regular, StoresRequest::Nt],
            hugepages: vec![crate::memory::Hugepages::Auto],
            isas: vec![None],
            offsets: vec![0],
            gpu_memories: vec![Default::default()],
            sizes: Vec::new(),
            numa_matrix: None,
            cpu_nodes: None,
            measure: measure(vec![KernelId::Copy, KernelId::Triad]),
        };
        expand(topo, &spec, &|s| crate::plan::prepare(topo, s)).unwrap()
    }

    fn measure(kernels: Vec<KernelId>) -> crate::plan::Measure {
        crate::plan::Measure {
            elements: Some(1 << 20),
            ntimes: 3,
            kernels,
            isa: None,
            hugepages: crate::memory::Hugepages::Auto,
            offset: 0,
            shapes: Default::default(),
            gpu_memory: Default::default(),
        }
    }

    fn fake() -> FakeSource {
        FakeSource::parse("2").unwrap()
    }

    /// A 2-socket, 24-core Xeon: the jobs and trials do not depend on the
    /// machine the tests run on (the fake source measures nothing).
    fn machine() -> &'static Topology {
        // Only the topology is kept: a static's temporary directory would
        // never be dropped, and a run's worth would pile up in /tmp.
        static MACHINE: std::sync::OnceLock<Topology> = std::sync::OnceLock::new();
        MACHINE.get_or_init(|| crate::topology::fixture::machine("xeon-e5-2680v3-2s").1)
    }

    fn session(file: Option<crate::results::append::ResultsFile>) -> BandwidthSession {
        let topo = machine();
        Session::new(
            "sweep",
            crate::results::Host::describe(topo),
            Stop::default(),
            file,
        )
    }

    #[test]
    fn every_job_becomes_one_record_with_its_repeats() {
        let topo = machine();
        let jobs = jobs(topo);
        let mut source = fake();
        let mut engine = Engine::new(topo, &mut source, None);
        let mut sink = session(None);
        let mut runs = 0;
        let outcome = engine
            .run(&jobs, 3, &mut sink, &mut |_, _| runs += 1)
            .unwrap();
        assert_eq!(outcome.written, jobs.len());
        assert_eq!(runs, 3 * jobs.len());
        assert!(!outcome.interrupted);
        let records = &sink.records;
        for (r, job) in records.iter().zip(&jobs) {
            assert_eq!(r.point, job.point);
            assert_eq!(r.started, records[0].started);
            assert_eq!(r.experiment, "sweep");
            assert_eq!(r.source, "fake");
            let s = r.stats[&KernelId::Triad];
            assert_eq!(s.n, 3);
            let nt = if job.plan.stores() == Some(crate::kernels::StoreMode::Nt) {
                1.25
            } else {
                1.0
            };
            assert!((s.mean - 2.0 * job.plan.cpus.len() as f64 * nt).abs() < 1e-9);
            assert_eq!(r.reproduce, Some(job.reproduce()));
        }
    }

    #[test]
    fn points_already_in_a_resumed_file_are_skipped() {
        let topo = machine();
        let jobs = jobs(topo);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut source = fake();
        let mut engine = Engine::new(topo, &mut source, None);
        let file = crate::results::append::ResultsFile::create(&path).unwrap();
        let mut first = session(Some(file));
        engine
            .run(&jobs[..2], 1, &mut first, &mut |_, _| {})
            .unwrap();
        drop(first);
        let (file, _) = crate::results::append::ResultsFile::resume(&path).unwrap();
        let mut sink = session(Some(file));
        let outcome = engine.run(&jobs, 1, &mut sink, &mut |_, _| {}).unwrap();
        assert_eq!((outcome.written, outcome.skipped), (jobs.len() - 2, 2));
        assert!(
            sink.records
                .iter()
                .all(|r| jobs[..2].iter().all(|j| j.point != r.point))
        );
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        assert_eq!(lines, jobs.len());
    }

    #[test]
    fn a_stop_keeps_completed_points_and_drops_the_one_cut_short() {
        let topo = machine();
        let jobs = jobs(topo);
        let mut source = fake();
        let mut engine = Engine::new(topo, &mut source, None);
        let mut sink = session(None);
        let stop = sink.stop.clone();
        let mut runs = 0;
        // The signal arrives during the second run of the second point.
        let outcome = engine
            .run(&jobs, 2, &mut sink, &mut |_, _| {
                runs += 1;
                if runs == 3 {
                    stop.request(15);
                }
            })
            .unwrap();
        assert!(outcome.interrupted);
        assert_eq!(outcome.written, 1);
        assert_eq!(sink.records.len(), 1);
        assert_eq!(sink.records[0].point, jobs[0].point);
    }

    #[test]
    fn a_race_stays_within_its_budget() {
        let topo = machine();
        let trials = tune_search::trials(
            topo,
            &tune_search::TuneSpec {
                kernel: KernelId::Triad,
                measure: measure(vec![KernelId::Triad]),
                mem: (Default::default(), Default::default()),
                stores: vec![StoresRequest::Auto],
            },
            &|s| crate::plan::prepare(topo, s),
        )
        .unwrap();
        assert!(trials.len() >= 2);
        assert!(
            trials[0].baseline
                && trials[1..]
                    .iter()
                    .all(|t| !t.baseline || t.job.point.stores != trials[0].job.point.stores)
        );
        let mut source = FakeSource::parse("2,delay=30ms").unwrap();
        let mut engine = Engine::new(topo, &mut source, None);
        let mut sink = session(None);
        // Room for the first trial only: each takes at least 60 ms.
        let raced = tune_search::race(
            &mut engine,
            &trials,
            KernelId::Triad,
            2,
            std::time::Duration::from_millis(70),
            &Stop::default(),
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(raced.tried, 1);
        assert_eq!(raced.runs[0].len(), 2);
        assert!(raced.runs[1..].iter().all(Vec::is_empty));
        let (point, payload) = engine.payload(&trials[0].job, raced.runs[0].clone());
        sink.keep(point, payload).unwrap();
        let ranked = tune_search::ranking(&sink.records, KernelId::Triad);
        assert_eq!(ranked[0].0.point, trials[0].job.point);
        let base = tune_search::baseline(&trials, &sink.records, KernelId::Triad);
        assert_eq!(base.map(|r| &r.point), Some(&trials[0].job.point));
    }
}
