//! Measurement sources: how one plan becomes one [`Measurement`]. The engine
//! calls nothing else to measure, so a new way of measuring (a foreign
//! program, MPI ranks) is one more implementation of [`Source`].

use crate::error::Result;
use crate::kernels::{KernelId, StoreMode};
use crate::plan::{Plan, Prepared, Settings};
use crate::protocol;
use crate::results::Measurement;
use crate::results::measurement::{
    ArrayCheck, KernelResult, ThreadPlacement, TimerCheck, Validation, kernel_statistics,
};
use crate::topology::Topology;
use std::time::Duration;

pub trait Source {
    /// Short name recorded with every result (`stream`, `fake`, `exec`).
    fn name(&self) -> &'static str;
    /// Resolves settings into the plan this source measures: the
    /// backend's own for membw's kernels, the host's CPU team otherwise.
    fn prepare(&self, topo: &Topology, settings: &Settings) -> Result<Prepared> {
        crate::plan::prepare(topo, settings)
    }
    /// Measures one plan. A failed validation is data, not an error.
    fn measure(&mut self, plan: &Plan, stop: &crate::sys::Stop) -> Result<Measurement>;
    /// The devices this source measures one by one, by index on the node:
    /// a device set's (`cuda:all`); `[None]` for one target.
    fn devices(&self) -> Vec<Option<u32>> {
        vec![None]
    }
    /// [`Source::prepare`] on one of [`Source::devices`].
    fn prepare_on(
        &self,
        device: Option<u32>,
        topo: &Topology,
        settings: &Settings,
    ) -> Result<Prepared> {
        let _ = device;
        self.prepare(topo, settings)
    }
    /// Where a health check measures device `device` of
    /// [`Source::devices`] (its backend's scopes); the host's node and
    /// NUMA domains unless the source says otherwise.
    fn scopes(&self, device: Option<u32>, topo: &Topology) -> Vec<crate::health::Scope> {
        let _ = device;
        crate::health::Scope::of_host(topo)
    }
    /// Whether this process prints and writes what was measured: false on
    /// the MPI ranks other than 0, which only send theirs to rank 0.
    fn reports(&self) -> bool {
        true
    }
}

/// STREAM's protocol in this process, over a backend: membw's pinned SIMD
/// team unless another is named.
pub struct StreamSource {
    pub backend: Box<dyn crate::backend::Backend>,
}

impl Default for StreamSource {
    fn default() -> Self {
        StreamSource {
            backend: Box::new(crate::backend::cpu::CpuTeam),
        }
    }
}

impl Source for StreamSource {
    fn name(&self) -> &'static str {
        "stream"
    }
    fn prepare(&self, topo: &Topology, settings: &Settings) -> Result<Prepared> {
        self.backend.prepare(topo, settings)
    }
    fn scopes(&self, _: Option<u32>, topo: &Topology) -> Vec<crate::health::Scope> {
        self.backend.health_scopes(topo)
    }
    /// STREAM's protocol over the backend's arrays, then judged.
    fn measure(&mut self, plan: &Plan, stop: &crate::sys::Stop) -> Result<Measurement> {
        protocol::measure(self.backend.as_mut(), plan, None, Some(stop)).map(|g| g.measurement)
    }
}

/// A deterministic stand-in that times nothing: every kernel runs at a
/// fixed rate per thread (×1.25 with non-temporal stores, as if free of
/// write-allocate), optionally after a delay. It lets the tests of sweep,
/// resume, signals, tune and reports run in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeSource {
    pub gb_s_per_thread: f64,
    pub delay: Duration,
    /// Threads on these CPUs run at this share of the rate (a slow memory
    /// domain, for the tests of `check`).
    pub slow: Option<(crate::topology::cpulist::IdSet, f64)>,
    /// Every measured CPU reports this percentage of its time taken by
    /// other work (a busy node, for the tests of `baseline --allow-busy`).
    pub busy_pct: Option<f64>,
    /// The node's rate saturates here, GB/s: more threads add nothing past
    /// it, as on a memory bus (for the tests of `tune`'s decisions).
    pub cap_gb_s: Option<f64>,
    /// Each repetition's time varies by this share (normal, one sigma), from
    /// a generator seeded by `seed=` (or the clock).
    pub noise: f64,
    pub rng: Rng,
    /// Every CPU measured so far: the busy CPUs a window reports, since the
    /// tick counters see every CPU in every window.
    pub seen_cpus: std::collections::BTreeSet<usize>,
}

impl FakeSource {
    /// `RATE[,delay=DURATION][,slow=CPUS@SHARE][,busy=PCT]`: GB/s per
    /// thread, e.g. `5`, `5,delay=20ms`, `5,slow=4-7@0.6` or `5,busy=40`.
    pub fn parse(text: &str) -> std::result::Result<FakeSource, String> {
        let mut parts = text.split(',');
        let rate: f64 = parts
            .next()
            .unwrap_or("")
            .trim()
            .parse()
            .ok()
            .filter(|r: &f64| r.is_finite() && *r > 0.0)
            .ok_or_else(|| format!("'{text}': the rate is a positive number of GB/s"))?;
        let mut delay = Duration::ZERO;
        let mut slow = None;
        let mut busy_pct = None;
        let mut cap_gb_s = None;
        let mut noise = 0.0;
        let mut rng = Rng::from_clock();
        for p in parts {
            match p.trim().split_once('=') {
                Some(("delay", d)) => {
                    delay = humantime::parse_duration(d).map_err(|e| format!("'{d}': {e}"))?;
                }
                Some(("slow", v)) => {
                    let (cpus, share) = v
                        .split_once('@')
                        .ok_or_else(|| format!("'{v}': expected CPUS@SHARE"))?;
                    let cpus = crate::topology::cpulist::parse_list(cpus)
                        .map_err(|e| format!("'{cpus}': {e}"))?;
                    let share: f64 = share
                        .parse()
                        .ok()
                        .filter(|s: &f64| *s > 0.0 && s.is_finite())
                        .ok_or_else(|| format!("'{share}': a positive share"))?;
                    slow = Some((cpus.into_iter().collect(), share));
                }
                Some(("busy", v)) => {
                    busy_pct = Some(
                        v.parse()
                            .ok()
                            .filter(|p: &f64| (0.0..=100.0).contains(p))
                            .ok_or_else(|| format!("'{v}': a percentage from 0 to 100"))?,
                    );
                }
                Some(("cap", v)) => {
                    cap_gb_s = Some(
                        v.parse()
                            .ok()
                            .filter(|c: &f64| *c > 0.0 && c.is_finite())
                            .ok_or_else(|| format!("'{v}': a positive rate in GB/s"))?,
                    );
                }
                Some(("noise", v)) => {
                    noise = v
                        .parse::<f64>()
                        .ok()
                        .filter(|p| (0.0..=30.0).contains(p))
                        .ok_or_else(|| format!("'{v}': a percentage from 0 to 30"))?
                        / 100.0;
                }
                Some(("seed", v)) => {
                    rng = Rng::new(v.parse().map_err(|_| format!("'{v}': a whole number"))?);
                }
                _ => {
                    return Err(format!(
                        "'{p}': expected delay=DURATION, slow=CPUS@SHARE, busy=PCT, cap=GBS, noise=PCT or seed=N"
                    ));
                }
            }
        }
        Ok(FakeSource {
            gb_s_per_thread: rate,
            delay,
            slow,
            busy_pct,
            cap_gb_s,
            noise,
            rng,
            seen_cpus: Default::default(),
        })
    }

    /// The rate this source reports for a plan, GB/s.
    pub fn rate(&self, plan: &Plan) -> f64 {
        let stores = if plan.stores() == Some(StoreMode::Nt) {
            1.25
        } else {
            1.0
        };
        let per_thread = |cpu: &usize| match &self.slow {
            Some((cpus, share)) if cpus.contains(*cpu) => *share,
            _ => 1.0,
        };
        let rate = self.gb_s_per_thread * plan.cpus.iter().map(per_thread).sum::<f64>() * stores;
        self.cap_gb_s.map_or(rate, |cap| rate.min(cap))
    }
}

impl Source for FakeSource {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn measure(&mut self, plan: &Plan, _: &crate::sys::Stop) -> Result<Measurement> {
        std::thread::sleep(self.delay);
        let rate = self.rate(plan) * 1e9;
        let calls = plan.elements * plan.inner_repeats;
        let results: Vec<KernelResult> = (plan.kernels.iter().enumerate())
            .map(|(i, &k): (usize, &KernelId)| {
                let seconds = k.spec().bytes_counted() as f64 * calls as f64 / rate;
                let times = (0..plan.ntimes)
                    .map(|_| seconds * (1.0 + self.noise * self.rng.normal()).max(0.1))
                    .collect();
                // Each kernel's stores as planned; the fake times nothing,
                // so a choice near the cache edge stays the size's lean.
                let stores = plan.kernel_stores(i).map(|s| s.untimed());
                let mut r =
                    kernel_statistics(k, stores.map(|s| s.mode).or(plan.stores()), calls, times);
                r.stores = stores;
                r
            })
            .collect();
        let min_kernel_ticks = results
            .iter()
            .map(|r| r.min_time_s * 1e9)
            .fold(f64::MAX, f64::min);
        let arrays = plan.arrays_needed();
        let threads = ThreadPlacement::list(&plan.cpus, |t| plan.cpus.get(t).copied());
        let validation = Validation {
            passed: true,
            epsilon: protocol::EPSILON,
            arrays: arrays
                .iter()
                .map(|a| ArrayCheck {
                    array: a.name().into(),
                    expected: 0.0,
                    avg_rel_error: 0.0,
                    bad_elements: 0,
                })
                .collect(),
            read_rel_error: None,
            dot_rel_error: None,
            sum_tolerance: protocol::EPSILON,
        };
        let timer = TimerCheck {
            granularity_ns: 1.0,
            timing_test_us: 0.0,
            min_kernel_ticks,
            barrier_us: None,
            device_clock: None,
            repetition_floor_us: None,
        };
        let mut m = protocol::planned(plan, threads, results, validation, timer);
        m.total_s = m.measured_s() + self.delay.as_secs_f64();
        self.seen_cpus.extend(plan.cpus.iter().copied());
        m.interference = self
            .busy_pct
            .map(|pct| fake_interference(&self.seen_cpus, &plan.cpus, pct));
        Ok(m)
    }
}

/// A small deterministic generator (xorshift64*) for the fake source's
/// noise: tests repeat a noisy experiment under seeds they name.
#[derive(Debug, Clone, PartialEq)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Spread small seeds over the state; the state must not be 0.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn from_clock() -> Rng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Rng::new(nanos ^ u64::from(std::process::id()))
    }

    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((x >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// What the tick counters would show over a one-second window with
/// `pct` % of the time of each CPU in `cpus` taken by other work, `measured`
/// being those membw ran on.
fn fake_interference(
    cpus: &std::collections::BTreeSet<usize>,
    measured: &[usize],
    pct: f64,
) -> crate::trust::Interference {
    let ticks = crate::sys::ticks_per_second();
    let loads: Vec<crate::trust::CpuLoad> = cpus
        .iter()
        .map(|&cpu| crate::trust::CpuLoad {
            cpu,
            measured: measured.contains(&cpu),
            other_pct: pct,
            steal_pct: 0.0,
            other_ticks: (pct / 100.0 * ticks).round() as i64,
        })
        .collect();
    let mut tally = crate::trust::Tally::new(ticks);
    tally.add(&crate::trust::Interference {
        window_s: 1.0,
        cpus: loads,
        findings: Vec::new(),
        busy: false,
        not_judged: None,
    });
    tally.judge(true, crate::trust::Effect::Bandwidth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_specs_parse() {
        assert_eq!(
            FakeSource::parse("5,delay=20ms,seed=1").unwrap(),
            FakeSource {
                gb_s_per_thread: 5.0,
                delay: Duration::from_millis(20),
                slow: None,
                busy_pct: None,
                cap_gb_s: None,
                noise: 0.0,
                rng: FakeSource::parse("5,seed=1").unwrap().rng,
                seen_cpus: Default::default(),
            }
        );
        let slow = FakeSource::parse("5,slow=2-3@0.5").unwrap().slow.unwrap();
        assert_eq!((slow.0.ids(), slow.1), (&[2, 3][..], 0.5));
        assert!(FakeSource::parse("5,slow=2-3").is_err());
        assert!(FakeSource::parse("5,slow=2@0").is_err());
        assert!(FakeSource::parse("-1").is_err());
        assert!(FakeSource::parse("5,speed=2").is_err());
        assert!(FakeSource::parse("5,delay=soon").is_err());
        assert_eq!(FakeSource::parse("5,busy=40").unwrap().busy_pct, Some(40.0));
        assert!(FakeSource::parse("5,busy=140").is_err());
        assert_eq!(FakeSource::parse("5,cap=8").unwrap().cap_gb_s, Some(8.0));
        assert_eq!(FakeSource::parse("5,noise=2").unwrap().noise, 0.02);
        for bad in ["5,cap=0", "5,noise=50", "5,seed=x"] {
            assert!(FakeSource::parse(bad).is_err(), "{bad}");
        }
        let i = fake_interference(&[0, 1, 2].into(), &[0, 1], 40.0);
        assert!(
            i.busy && i.findings[0].starts_with("CPUs 0-1 were 40 % busy"),
            "{i:?}"
        );
        assert!(!fake_interference(&[0].into(), &[0], 0.0).busy);
    }
}
