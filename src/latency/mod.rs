//! Idle memory latency by pointer chasing: one pinned thread follows a
//! random cyclic permutation of the cache lines of a working set, so every
//! load depends on the one before, each line is visited once per cycle, and
//! neither the adjacent-line nor the stride prefetcher can guess the next
//! address (no MSR is touched; no root needed).
//!
//! The chase runs in timed chunks; the report gives the distribution of
//! nanoseconds per load over the chunks (min, p50, p90, p99), not only a
//! mean.

pub mod c2c;
pub mod load;
/// The records latency results are kept in (the results model owns them).
pub use crate::results::latency_record as record;
pub use crate::results::latency_record::{ChaseOrder, PAGE_LOCAL_WINDOW, WorkingSetLatency};

use crate::error::{Error, Result};
use crate::kernels::chase::chase;
use crate::memory::Hugepages;
use crate::memory::policy::Policy;
use crate::sys::{self, MappedArray};
use std::time::{Duration, Instant};

/// Bytes of one cache line: one link per line.
pub const LINE: usize = 64;
/// Loads per timed chunk: long enough for the clock (tens of µs even in
/// L1), short enough for many chunks in DRAM (about 3 ms at 170 ns). The
/// cycle is random, so any stretch of it is a fair sample.
const CHUNK_LOADS: usize = 1 << 14;

/// A small, fast, seedable generator (SplitMix64): the permutation must be
/// random to the prefetchers, not to an adversary.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0), by Lemire's multiply-shift.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// `next[i]`: the line visited after line `i`, one cycle through all
/// `lines` lines (Sattolo's algorithm: a uniformly random cyclic
/// permutation).
pub fn cyclic_order(lines: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lines).collect();
    let mut rng = SplitMix(seed);
    for i in (1..lines).rev() {
        let j = rng.below(i);
        order.swap(i, j);
    }
    // `order` is now one cycle as a sequence; turn it into successor links.
    let mut next = vec![0; lines];
    for w in 0..lines {
        next[order[w]] = order[(w + 1) % lines];
    }
    next
}

/// `next[i]` for lines chased in random order within windows of
/// `window_lines` lines, each window whole before the next, the windows in
/// random order: the page-local chase. One cycle through all `lines`.
pub fn page_local_order(lines: usize, window_lines: usize, seed: u64) -> Vec<usize> {
    let window_lines = window_lines.max(1);
    let mut rng = SplitMix(seed);
    let mut windows: Vec<usize> = (0..lines.div_ceil(window_lines)).collect();
    shuffle(&mut windows, &mut rng);
    let mut sequence = Vec::with_capacity(lines);
    for w in windows {
        let start = sequence.len();
        sequence.extend(w * window_lines..((w + 1) * window_lines).min(lines));
        shuffle(&mut sequence[start..], &mut rng);
    }
    let mut next = vec![0; lines];
    for (w, &line) in sequence.iter().enumerate() {
        next[line] = sequence[(w + 1) % lines];
    }
    next
}

/// Fisher-Yates: every order equally likely.
fn shuffle(items: &mut [usize], rng: &mut SplitMix) {
    for i in (1..items.len()).rev() {
        let j = rng.below(i + 1);
        items.swap(i, j);
    }
}

/// How to measure.
#[derive(Debug, Clone)]
pub struct LatencyPlan {
    pub cpu: usize,
    pub sizes: Vec<u64>,
    /// Page sizes to chase on, each a curve (idle study); the other
    /// studies use the first.
    pub hugepages: Vec<Hugepages>,
    pub policy: Policy,
    /// Orders to chase in, each a curve (idle study); the other studies
    /// use the first.
    pub orders: Vec<ChaseOrder>,
    /// Timed chasing per working set (after one warm-up cycle).
    pub time_per_size: Duration,
    pub clock_ghz: Option<f64>,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Measures every working set of the plan in turn, pinned to its CPU.
pub fn measure(plan: &LatencyPlan) -> Result<Vec<WorkingSetLatency>> {
    pin(plan.cpu)?;
    plan.sizes
        .iter()
        .map(|&s| {
            Chain::build(s, plan.hugepages[0], &plan.policy, plan.orders[0])
                .map(|mut c| c.sample(plan.time_per_size, plan.clock_ghz))
        })
        .collect()
}

/// Pins the calling thread, which then chases from that CPU.
pub fn pin(cpu: usize) -> Result<()> {
    sys::pin_current_thread(cpu)
        .map_err(|e| Error::Runtime(format!("cannot pin to CPU {cpu}: {e}")))
}

/// A working set linked into one random cycle, placed and touched by the
/// calling thread, ready to chase.
pub struct Chain {
    array: MappedArray,
    bytes: u64,
    lines: usize,
    order: ChaseOrder,
    /// Where the chase stopped last: the next sample continues from there.
    at: usize,
}

impl Chain {
    /// Maps `bytes` under `policy`, links its lines in one cycle in `order`
    /// and chases one whole cycle untimed, so caches and TLBs are as the
    /// timed chunks find them.
    pub fn build(
        bytes: u64,
        hugepages: Hugepages,
        policy: &Policy,
        order: ChaseOrder,
    ) -> Result<Chain> {
        // One link per line, or per stride where the order spaces them.
        let words_per_link = order.stride_bytes() as usize / 8;
        let lines = (bytes as usize / (words_per_link * 8)).max(2);
        let words = lines * words_per_link;
        let mut array = match hugepages.explicit_bytes() {
            Some(page) => MappedArray::hugetlb(words, page, 0),
            None => MappedArray::new(words, 0),
        }
        .map_err(|e| Error::Runtime(format!("mapping {bytes} bytes on {hugepages} pages: {e}")))?;
        // Advice and policy before the first touch, which places the pages.
        let _ = hugepages.advise(&array);
        crate::memory::place(&array, policy, std::slice::from_ref(&(0..words)), hugepages)
            .map_err(|e| Error::Runtime(format!("memory policy {policy}: {e}")))?;
        let seed = 0x6d65_6d62_7700 ^ bytes;
        let next = match order {
            ChaseOrder::Random => cyclic_order(lines, seed),
            ChaseOrder::PageLocal => page_local_order(
                lines,
                (PAGE_LOCAL_WINDOW / order.stride_bytes()) as usize,
                seed,
            ),
        };
        // Where a stride holds several lines, each link sits in one of them
        // at random: links at one fixed offset would be a pattern for a
        // prefetcher to learn.
        let word = |link: usize| {
            let lines_per_link = words_per_link * 8 / LINE;
            let line = SplitMix(seed ^ link as u64).below(lines_per_link);
            link * words_per_link + line * (LINE / 8)
        };
        let chain = array.as_mut_words();
        for (link, &to) in next.iter().enumerate() {
            chain[word(link)] = word(to) as u64;
        }
        let mut c = Chain {
            array,
            bytes,
            lines,
            order,
            at: 0,
        };
        c.at = chase(c.array.as_mut_words(), word(0), lines);
        Ok(c)
    }

    /// Chases in timed chunks for about `time` (at least 5 chunks) and
    /// summarizes the chunks' nanoseconds per load.
    pub fn sample(&mut self, time: Duration, clock_ghz: Option<f64>) -> WorkingSetLatency {
        let per_chunk = CHUNK_LOADS;
        let chain: &[u64] = self.array.as_mut_words();
        let mut at = self.at;
        let mut samples = Vec::new();
        let started = Instant::now();
        while samples.len() < 5 || (started.elapsed() < time && samples.len() < 100_000) {
            let t = Instant::now();
            at = chase(chain, at, per_chunk);
            samples.push(t.elapsed().as_secs_f64() * 1e9 / per_chunk as f64);
        }
        self.at = at;
        let huge_share = crate::sys::page_use(self.array.addr(), self.array.len() * 8)
            .and_then(|u| u.huge_share());
        let mut point = summarize(samples, per_chunk, clock_ghz);
        (point.bytes, point.lines, point.huge_share) = (self.bytes, self.lines as u64, huge_share);
        point.order = Some(self.order);
        point
    }
}

/// The distribution of ns per load over timed chunks of `per_chunk` loads
/// (one line's worth of bytes; the caller says what was chased).
pub(crate) fn summarize(
    mut samples: Vec<f64>,
    per_chunk: usize,
    clock_ghz: Option<f64>,
) -> WorkingSetLatency {
    let mean = samples.iter().sum::<f64>() / samples.len().max(1) as f64;
    samples.sort_by(f64::total_cmp);
    let p50 = percentile(&samples, 0.5);
    WorkingSetLatency {
        bytes: LINE as u64,
        lines: 1,
        min_ns: samples.first().copied().unwrap_or(f64::NAN),
        p50_ns: p50,
        p90_ns: percentile(&samples, 0.9),
        p99_ns: percentile(&samples, 0.99),
        mean_ns: mean,
        p50_cycles: clock_ghz.map(|ghz| p50 * ghz),
        p50_ci: crate::results::estimate::Interval::of_median(
            &samples,
            crate::results::estimate::LEVEL,
        ),
        chunks: samples.len(),
        loads_per_chunk: per_chunk,
        huge_share: None,
        order: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_order_is_one_cycle_through_every_line(lines in 2usize..5000, seed: u64) {
            let next = cyclic_order(lines, seed);
            let mut seen = vec![false; lines];
            let mut at = 0;
            for _ in 0..lines {
                prop_assert!(!seen[at], "line {} visited twice", at);
                seen[at] = true;
                at = next[at];
            }
            prop_assert_eq!(at, 0);
            prop_assert!(seen.iter().all(|&s| s));
        }
    }

    proptest! {
        #[test]
        fn the_page_local_order_is_one_cycle_that_finishes_each_window_first(
            lines in 2usize..5000, window in 1usize..300, seed: u64,
        ) {
            let next = page_local_order(lines, window, seed);
            let mut seen = vec![false; lines];
            let mut at = 0;
            let mut window_changes = 0;
            for _ in 0..lines {
                prop_assert!(!seen[at], "line {} visited twice", at);
                seen[at] = true;
                window_changes += usize::from(next[at] / window != at / window);
                at = next[at];
            }
            prop_assert_eq!(at, 0);
            // Each window is entered once: the cycle leaves it only when done.
            let windows = lines.div_ceil(window);
            prop_assert_eq!(window_changes, if windows > 1 { windows } else { 0 });
        }
    }

    #[test]
    fn page_local_lines_are_random_within_their_window() {
        let window = 4096;
        let next = page_local_order(1 << 16, window, 7);
        let adjacent = next
            .iter()
            .enumerate()
            .filter(|&(i, &n)| n == i + 1)
            .count();
        assert!(adjacent < 40, "{adjacent} adjacent links");
    }

    #[test]
    fn neighbours_rarely_follow_each_other() {
        // A prefetcher would love next[i] == i + 1.
        let next = cyclic_order(1 << 16, 7);
        let adjacent = next
            .iter()
            .enumerate()
            .filter(|&(i, &n)| n == i + 1)
            .count();
        assert!(adjacent < 10, "{adjacent} adjacent links");
    }

    #[test]
    fn a_small_working_set_is_chased_and_summarized() {
        let plan = LatencyPlan {
            cpu: sys::current_cpu().unwrap(),
            sizes: vec![16 << 10],
            hugepages: vec![Hugepages::Never],
            policy: Policy::Local,
            orders: vec![ChaseOrder::Random],
            time_per_size: Duration::from_millis(20),
            clock_ghz: Some(2.0),
        };
        let p = &measure(&plan).unwrap()[0];
        assert_eq!(p.lines, 256);
        assert!(p.chunks >= 5 && p.loads_per_chunk == CHUNK_LOADS);
        assert!(
            p.min_ns > 0.0 && p.min_ns <= p.p50_ns && p.p50_ns <= p.p90_ns && p.p90_ns <= p.p99_ns
        );
        assert_eq!(p.p50_cycles, Some(p.p50_ns * 2.0));
        assert_eq!(p.order, Some(ChaseOrder::Random));
    }
}
