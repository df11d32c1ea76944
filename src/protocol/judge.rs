//! What the protocol makes of what it measured: the run's warnings (sizes
//! too small to time, a thread found off its CPU, a target's clock that
//! disagrees with the host's), the check of a target's own clock, and
//! validation against STREAM's recurrences.

use super::{EPSILON, Expected, Timed, sum_tolerance};
use crate::backend::ReadBack;
use crate::kernels::ArrayId;
use crate::plan::Plan;
use crate::results::measurement::{
    ArrayCheck, DeviceClock, ThreadPlacement, TimerCheck, Validation,
};
use crate::results::measurement::{KernelResult, kernel_statistics};
use crate::results::targets::method;
use crate::results::{CacheEvidence, InCaches};

/// What the kernels' stores showed of the caches: streaming stores clearly
/// faster for any kernel (its arrays were past the caches these threads
/// get) before regular ones at least as fast, before every kernel's
/// arrays within the caches below the last level (`own_bytes`, the
/// threads' own); nothing where neither was timed or so.
pub(super) fn cache_evidence(
    ran: &[(crate::kernels::KernelId, crate::kernels::KernelStores)],
    elements: usize,
    own_bytes: u64,
) -> Option<CacheEvidence> {
    let measured: Vec<_> = (ran.iter())
        .filter_map(|(k, s)| Some((*k, s.nt_over_regular()?, s)))
        .collect();
    if let Some(&(kernel, nt_over_regular, _)) =
        (measured.iter()).find(|(_, _, s)| s.shows_arrays_past_caches())
    {
        return Some(CacheEvidence::PastCaches {
            kernel,
            nt_over_regular,
        });
    }
    // Regular stores at least as fast as streaming ones: the caches served.
    if let Some(&(kernel, nt_over_regular, _)) = (measured.iter()).find(|(_, r, _)| *r <= 1.0) {
        return Some(CacheEvidence::Cached {
            kernel,
            nt_over_regular,
        });
    }
    let own = |k: &crate::kernels::KernelId| {
        crate::kernels::stores::arrays_bytes(*k, elements as u64) <= own_bytes
    };
    (own_bytes > 0 && !ran.is_empty() && ran.iter().all(|(k, _)| own(k)))
        .then_some(CacheEvidence::OwnCaches)
}

/// The warnings of a run, besides its backend's.
pub(super) fn warnings(
    plan: &Plan,
    in_caches: Option<InCaches>,
    threads: &[ThreadPlacement],
    min_time: f64,
    timer: &TimerCheck,
) -> Vec<String> {
    let mut warnings = size_warnings(plan, in_caches, min_time, timer);
    if let Some(why) = plan.caches_unknown {
        warnings.push(crate::results::not_judged(why));
    }
    if let Some(c) = timer.device_clock.filter(|c| c.over_host > 0) {
        warnings.push(format!(
            "the target's own clock timed {} of {} repetitions longer than the host's clock around them: those took the host's time; the target's clock is not to be trusted",
            c.over_host, c.repetitions
        ));
    }
    // Unbound threads are where the scheduler put them, not off a CPU.
    for t in threads.iter().filter(|_| plan.pinned) {
        if let Some(found) = t.observed_cpu.filter(|&c| c != t.cpu) {
            warnings.push(format!(
                "thread {} was pinned to CPU {} but found itself on CPU {found}",
                t.thread, t.cpu
            ));
        }
    }
    warnings
}

/// What the plan's size makes of the figures: arrays in the caches (a
/// point calibrated by time is meant to be there), repetitions too short
/// for the clock that timed them (its rule: `Clock::shortest_repetition_s`;
/// a plan whose calls were sized by that clock meets it, but where the
/// calls reached their limit); a suggested size is never one that still
/// sits in the caches.
fn size_warnings(
    plan: &Plan,
    in_caches: Option<InCaches>,
    min_time: f64,
    timer: &TimerCheck,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(c) = in_caches.filter(|_| !plan.calibrate) {
        warnings.push(c.warning());
    }
    let clock = plan.target.method().clock;
    let tick = timer.granularity_ns / 1e9;
    let shortest = clock.shortest_repetition_s(tick);
    // Calls sized by the clock were sized for it (with a margin): only a
    // repetition far under it (the target sped up) is worth a word.
    let slack = if plan.calibrate { 0.5 } else { 1.0 };
    if min_time.is_finite() && min_time < slack * shortest {
        let ticks = match (clock.own, clock.resolution_s) {
            (true, Some(t)) => min_time / t,
            _ => timer.min_kernel_ticks,
        };
        let took = format!(
            "the shortest repetition took {} ({ticks:.0} ticks of {}); {} times a repetition well from {} on",
            method::seconds(min_time),
            clock.name,
            clock.name,
            method::seconds(shortest)
        );
        warnings.push(if plan.calibrate {
            format!(
                "{took}, though the calls per repetition were sized for it: the target ran faster than when they were"
            )
        } else {
            let factor = (shortest * 10.0 / min_time).ceil() as u64;
            let stream = plan.in_caches.map_or(0, |c| c.stream_elements);
            format!(
                "{took}: use arrays of at least {} elements",
                (plan.elements as u64 * factor.max(2)).max(stream)
            )
        });
    }
    warnings
}

/// Checks a target's own times against the host's around the same work:
/// a repetition its clock made longer than the host's (by more than a
/// tick) takes the host's time instead.
pub(super) fn device_clock(times: &mut [f64], host_times: &[f64], tick: f64) -> DeviceClock {
    let mut ratios = Vec::with_capacity(times.len());
    let mut over_host = 0;
    for (time, &host) in times.iter_mut().zip(host_times) {
        if *time > host + tick || !time.is_finite() || *time <= 0.0 {
            over_host += 1;
            *time = host;
        }
        ratios.push(host / *time);
    }
    DeviceClock {
        repetitions: ratios.len(),
        over_host,
        host_over_device: crate::results::estimate::median(&ratios).unwrap_or(1.0),
    }
}

pub(super) fn validation(expected: &Expected, errors: &ReadBack) -> Validation {
    let n = errors.elements.max(1) as f64;
    let checks: Vec<ArrayCheck> = ArrayId::ALL
        .into_iter()
        .filter(|&id| errors.mapped[id.index()])
        .map(|id| {
            let want = expected.values[id.index()];
            let avg = errors.abs_error[id.index()] / n;
            ArrayCheck {
                array: id.name().into(),
                expected: want,
                avg_rel_error: match want {
                    0.0 => avg,
                    _ if !want.is_finite() => avg, // 0 when every element matched
                    _ => avg / want.abs(),
                },
                bad_elements: errors.bad[id.index()],
            }
        })
        .collect();
    // Every element of a (and b) holds the same value, so the exact sum is
    // n times it; a sum that overflowed must be the same infinity.
    let rel_error = |term: f64, got: f64| {
        let want = term * errors.elements as f64;
        match want {
            _ if got == want => 0.0,
            0.0 => got.abs(),
            _ if !want.is_finite() => f64::INFINITY,
            _ => (got - want).abs() / want.abs(),
        }
    };
    let read_rel_error = expected.read_a.map(|a| rel_error(a, errors.read_sum));
    let dot_rel_error = expected.dot_ab.map(|ab| rel_error(ab, errors.dot_sum));
    let sum_tolerance = sum_tolerance(errors.elements);
    // STREAM judges the average error alone; one wrong element of millions
    // (a flipped bit, a device's bad word) averages away below epsilon, so
    // membw fails any element over its own tolerance too.
    let passed = checks
        .iter()
        .all(|c| c.avg_rel_error <= EPSILON && c.bad_elements == 0)
        && [read_rel_error, dot_rel_error]
            .into_iter()
            .flatten()
            .all(|e| e <= sum_tolerance);
    Validation {
        passed,
        epsilon: EPSILON,
        arrays: checks,
        read_rel_error,
        dot_rel_error,
        sum_tolerance,
    }
}

/// Each kernel's statistics over its timed repetitions, and each thread's
/// median time where the backend timed its threads.
pub(super) fn kernel_results(plan: &Plan, d: &Timed) -> Vec<KernelResult> {
    plan.kernels
        .iter()
        .enumerate()
        .map(|(k, &kernel)| {
            let times = d.times[k * plan.ntimes..(k + 1) * plan.ntimes].to_vec();
            let stores = d.stores[k];
            let mut r = kernel_statistics(
                kernel,
                stores.map(|s| s.mode).or(plan.stores()),
                plan.elements * d.inner_repeats,
                times,
            );
            r.stores = stores;
            if d.threads_timed {
                r.thread_times_s = thread_medians(&d.thread_times, plan, k);
            }
            r.launch = d.launches[k].clone();
            r
        })
        .collect()
}

/// Kernel `k`'s per-thread times: each thread's median over the counted
/// repetitions (the first is not counted, as for the kernel's own times).
fn thread_medians(thread_times: &[f64], plan: &Plan, k: usize) -> Vec<f64> {
    let threads = plan.cpus.len();
    (0..threads)
        .map(|t| {
            let own: Vec<f64> = (1..plan.ntimes)
                .filter_map(|rep| thread_times.get((k * plan.ntimes + rep) * threads + t))
                .copied()
                .collect();
            crate::results::median(&own).unwrap_or(0.0)
        })
        .collect()
}
