//! Core-to-core latency between two pinned threads, in Intel MLC's two
//! cases (`--c2c_latency`): a modified line bounced back and forth
//! (multichase's `pingpong`, HITM), and a clean line one core holds and
//! the other loads (HIT). The report gives one hop in ns, as a
//! distribution over timed chunks.

use super::{WorkingSetLatency, summarize};
use crate::error::{Error, Result};
use crate::kernels::chase::{chase, flush_lines};
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

/// What the line holds when the timed load reaches it: MLC's HITM and HIT.
pub use crate::results::latency_record::C2cLine;

/// One sample per chunk from this thread (pinned on `a`) while `serve` runs
/// on `b`, for `time` (at least five chunks, at most 100 000). `serve` must
/// return once `done` is set; `chunk` must give up (an error) if it sees
/// `done` set by the other side failing to pin. `at_end` runs when sampling
/// ends, while the serving thread still exists (a reading of the CPUs'
/// counters must count its time as membw's own), and its value is returned
/// with the samples.
fn between<T>(
    (a, b): (usize, usize),
    time: Duration,
    at_end: impl FnOnce() -> T,
    serve: impl FnOnce(&AtomicBool) + Send,
    mut chunk: impl FnMut(&AtomicBool) -> Result<f64>,
) -> Result<(Vec<f64>, T)> {
    if a == b {
        return Err(Error::Runtime(format!(
            "CPU {a} cannot bounce a line with itself"
        )));
    }
    let done = Padded(AtomicBool::new(false));
    let pinned = |cpu: usize| {
        crate::sys::pin_current_thread(cpu)
            .map_err(|e| Error::Runtime(format!("cannot pin to CPU {cpu}: {e}")))
    };
    std::thread::scope(|s| {
        let server = s.spawn(|| {
            let pinned = pinned(b);
            if pinned.is_ok() {
                serve(&done.0);
            }
            done.0.store(true, Ordering::Release);
            pinned
        });
        let mut run = || -> Result<Vec<f64>> {
            pinned(a)?;
            let mut samples = Vec::new();
            let started = Instant::now();
            while samples.len() < 5 || (started.elapsed() < time && samples.len() < 100_000) {
                samples.push(chunk(&done.0)?);
            }
            Ok(samples)
        };
        let samples = run();
        let end = at_end();
        done.0.store(true, Ordering::Release);
        let served = server
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        served.and(samples).map(|s| (s, end))
    })
}

/// Waits until `flag` holds `want`; an error if the other side stopped.
fn await_value(flag: &AtomicU64, want: u64, done: &AtomicBool, other: usize) -> Result<()> {
    while flag.load(Ordering::Acquire) != want {
        if done.load(Ordering::Relaxed) {
            return Err(Error::Runtime(format!("CPU {other} stopped answering")));
        }
        std::hint::spin_loop();
    }
    Ok(())
}

/// The serving side: until `done`, waits for each odd value in `flag`,
/// runs `on_turn`, and answers with the next even value.
fn answer(flag: &AtomicU64, done: &AtomicBool, mut on_turn: impl FnMut()) {
    let mut want = 1u64;
    while !done.load(Ordering::Relaxed) {
        if flag.load(Ordering::Acquire) == want {
            on_turn();
            flag.store(want + 1, Ordering::Release);
            want += 2;
        } else {
            std::hint::spin_loop();
        }
    }
}

/// One hop's latency between CPUs `a` and `b` for a line in state `line`:
/// [`pingpong`] for a modified line, [`shared_read`] for a clean one.
pub fn measure<T>(
    line: C2cLine,
    (a, b): (usize, usize),
    time: Duration,
    clock_ghz: Option<f64>,
    at_end: impl FnOnce() -> T,
) -> Result<(WorkingSetLatency, T)> {
    match line {
        C2cLine::Modified => pingpong(a, b, time, clock_ghz, at_end),
        C2cLine::Clean => shared_read(a, b, time, clock_ghz, at_end),
    }
}

/// One hop of a modified line (HITM): `a` writes an odd value and waits for
/// `b` to answer with the next even one, so every hop moves the line from
/// one core's cache to the other's, read for ownership. `a` times chunks of
/// round trips; a hop is half of one.
fn pingpong<T>(
    a: usize,
    b: usize,
    time: Duration,
    clock_ghz: Option<f64>,
    at_end: impl FnOnce() -> T,
) -> Result<(WorkingSetLatency, T)> {
    let line = Padded(AtomicU64::new(0));
    let mut value = 0u64;
    let (samples, end) = between(
        (a, b),
        time,
        at_end,
        |done| answer(&line.0, done, || ()),
        |done| {
            let t = Instant::now();
            for _ in 0..CHUNK_TRIPS {
                line.0.store(value + 1, Ordering::Release);
                await_value(&line.0, value + 2, done, b)?;
                value += 2;
            }
            Ok(t.elapsed().as_secs_f64() * 1e9 / (2 * CHUNK_TRIPS) as f64)
        },
    )?;
    Ok((summarize(samples, 2 * CHUNK_TRIPS as usize, clock_ghz), end))
}

/// Lines a shared-read chunk loads: one per 4 KiB page, at a different
/// offset in each, so no two share an L1 set or a prefetcher's page.
const CLEAN_LINES: usize = 64;

/// One load of a clean line that another core holds (HIT): each chunk,
/// `a` flushes [`CLEAN_LINES`] lines from every cache, `b` reads them (so
/// it alone holds them, unmodified), and `a` times a dependent chase
/// through them in random order. A sample is the chase's time per load.
fn shared_read<T>(
    a: usize,
    b: usize,
    time: Duration,
    clock_ghz: Option<f64>,
    at_end: impl FnOnce() -> T,
) -> Result<(WorkingSetLatency, T)> {
    const PAGE_WORDS: usize = 4096 / 8;
    const LINE_WORDS: usize = super::LINE / 8;
    let at: Vec<usize> = (0..CLEAN_LINES)
        .map(|k| k * PAGE_WORDS + (k % (PAGE_WORDS / LINE_WORDS)) * LINE_WORDS)
        .collect();
    let mut words = vec![0u64; CLEAN_LINES * PAGE_WORDS];
    let order = super::cyclic_order(CLEAN_LINES, 0xc2c);
    for (k, &next) in order.iter().enumerate() {
        words[at[k]] = at[next] as u64;
    }
    if !flush_lines(&words, &at) {
        return Err(Error::Runtime(
            "the shared-read test flushes lines from the caches, which membw does only on x86-64 and aarch64".into(),
        ));
    }
    let (words, at) = (&words, &at);
    let turn = Padded(AtomicU64::new(0));
    let mut round = 0u64;
    let (samples, end) = between(
        (a, b),
        time,
        at_end,
        |done| {
            answer(&turn.0, done, || {
                let held: u64 = at.iter().map(|&i| words[i]).fold(0, u64::wrapping_add);
                std::hint::black_box(held);
            })
        },
        |done| {
            flush_lines(words, at);
            turn.0.store(round + 1, Ordering::Release);
            await_value(&turn.0, round + 2, done, b)?;
            round += 2;
            let t = Instant::now();
            let back = chase(words, at[0], CLEAN_LINES);
            let ns = t.elapsed().as_secs_f64() * 1e9 / CLEAN_LINES as f64;
            debug_assert_eq!(back, at[0], "the chase is one cycle through every line");
            Ok(ns)
        },
    )?;
    Ok((summarize(samples, CLEAN_LINES, clock_ghz), end))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first and last CPUs this test may use, or None (said) on one.
    fn two_cpus() -> Option<(usize, usize)> {
        let cpus = crate::sys::thread_affinity(0).unwrap();
        let (a, b) = (cpus[0], *cpus.last().unwrap());
        if a == b {
            crate::say!("skipped: one CPU only");
            return None;
        }
        Some((a, b))
    }

    #[test]
    fn a_line_bounces_between_two_threads_and_is_timed() {
        let Some((a, b)) = two_cpus() else { return };
        let (p, ()) = pingpong(a, b, Duration::from_millis(5), None, || ()).unwrap();
        assert!(p.chunks >= 5);
        assert!(p.min_ns > 0.0 && p.min_ns <= p.p50_ns && p.p50_ns <= p.p99_ns);
        assert!(pingpong(a, a, Duration::from_millis(1), None, || ()).is_err());
    }

    #[test]
    fn a_clean_line_is_loaded_from_the_other_thread_and_timed() {
        let Some((a, b)) = two_cpus() else { return };
        let (p, n) = shared_read(a, b, Duration::from_millis(5), None, || 7).unwrap();
        assert_eq!(n, 7, "at_end's value comes back");
        assert!(p.chunks >= 5);
        assert_eq!(p.loads_per_chunk, CLEAN_LINES);
        assert!(p.min_ns > 0.0 && p.min_ns <= p.p50_ns && p.p50_ns <= p.p99_ns);
        assert!(shared_read(b, b, Duration::from_millis(1), None, || ()).is_err());
    }

    #[test]
    fn flushing_lines_keeps_their_values() {
        let words: Vec<u64> = (0..1024).collect();
        let at = [0, 8, 512, 1023];
        let flushed = flush_lines(&words, &at);
        assert_eq!(
            flushed,
            cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
        );
        assert!(words.iter().enumerate().all(|(i, &w)| w == i as u64));
    }
}
