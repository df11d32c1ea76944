//! Core-to-core latency: one cache line bounced between two pinned threads
//! (multichase's `pingpong`, Intel MLC's `--c2c_latency` HITM case). Each
//! thread waits until the line holds the other's value, then writes its
//! own: every hop moves a modified line from one core's cache to the
//! other's, read for ownership. The report gives one hop (half a round
//! trip) in ns, as a distribution over timed chunks.

use super::{LatencyPoint, summarize};
use crate::error::{Error, Result};
use crate::team::Padded;
use crate::topology::Topology;
use crate::topology::cpulist::IdSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Round trips per timed chunk: tens of µs at 100 ns a hop, well above the
/// clock's resolution.
const CHUNK_TRIPS: u64 = 256;

/// What two CPUs share, nearest first: it explains their latency.
/// `llcs`: the topology's last-level cache domains, read once per study.
pub fn relation(topo: &Topology, llcs: &[IdSet], a: usize, b: usize) -> &'static str {
    let (Some(x), Some(y)) = (topo.cpu(a), topo.cpu(b)) else {
        return "unknown";
    };
    if x.siblings.contains(b) {
        "smt sibling"
    } else if llcs.iter().any(|d| d.contains(a) && d.contains(b)) {
        "same L3"
    } else if x.node == y.node {
        "same NUMA node"
    } else if x.package == y.package {
        "same socket"
    } else {
        "other socket"
    }
}

/// One hop's latency between CPUs `a` and `b`, sampled for `time` (at least
/// five chunks). `a` starts each round trip and times it. `at_end` runs
/// when sampling ends, while the answering thread still exists (a reading
/// of the CPUs' counters must count its time as membw's own), and its value
/// is returned with the point.
pub fn pingpong<T>(
    a: usize,
    b: usize,
    time: Duration,
    clock_ghz: Option<f64>,
    at_end: impl FnOnce() -> T,
) -> Result<(LatencyPoint, T)> {
    if a == b {
        return Err(Error::Runtime(format!(
            "CPU {a} cannot bounce a line with itself"
        )));
    }
    let line = Padded(AtomicU64::new(0));
    let done = Padded(AtomicBool::new(false));
    let pinned = |cpu: usize| {
        crate::sys::pin_current_thread(cpu)
            .map_err(|e| Error::Runtime(format!("cannot pin to CPU {cpu}: {e}")))
    };
    let samples = std::thread::scope(|s| {
        // The other side: answers every odd value with the next even one.
        let answer = s.spawn(|| {
            let pinned = pinned(b);
            if pinned.is_err() {
                done.0.store(true, Ordering::Release);
            }
            let mut want = 1u64;
            while !done.0.load(Ordering::Relaxed) {
                if line.0.load(Ordering::Acquire) == want {
                    line.0.store(want + 1, Ordering::Release);
                    want += 2;
                } else {
                    std::hint::spin_loop();
                }
            }
            pinned
        });
        let run = || -> Result<Vec<f64>> {
            pinned(a)?;
            let mut samples = Vec::new();
            let mut value = 0u64;
            let started = Instant::now();
            while samples.len() < 5 || (started.elapsed() < time && samples.len() < 100_000) {
                let t = Instant::now();
                for _ in 0..CHUNK_TRIPS {
                    line.0.store(value + 1, Ordering::Release);
                    while line.0.load(Ordering::Acquire) != value + 2 {
                        if done.0.load(Ordering::Relaxed) {
                            return Err(Error::Runtime(format!("CPU {b} stopped answering")));
                        }
                        std::hint::spin_loop();
                    }
                    value += 2;
                }
                samples.push(t.elapsed().as_secs_f64() * 1e9 / (2 * CHUNK_TRIPS) as f64);
            }
            Ok(samples)
        };
        let samples = run();
        let end = at_end();
        done.0.store(true, Ordering::Release);
        let answered = answer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        answered.and(samples).map(|s| (s, end))
    })?;
    // One hop moves one line: 64 bytes, one line, two hops a round trip.
    let (samples, end) = samples;
    Ok((summarize(samples, 2 * CHUNK_TRIPS as usize, clock_ghz), end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_bounces_between_two_threads_and_is_timed() {
        // On one CPU the two threads take turns (slow, but it must finish).
        let cpus = crate::sys::thread_affinity(0).unwrap();
        let (a, b) = (cpus[0], *cpus.last().unwrap());
        if a == b {
            crate::say!("skipped: one CPU only");
            return;
        }
        let (p, ()) = pingpong(a, b, Duration::from_millis(5), None, || ()).unwrap();
        assert!(p.chunks >= 5);
        assert!(p.min_ns > 0.0 && p.min_ns <= p.p50_ns && p.p50_ns <= p.p99_ns);
        assert!(pingpong(a, a, Duration::from_millis(1), None, || ()).is_err());
    }
}
