//! What the protocol makes of what it measured: the run's warnings (sizes
//! too small to time, a thread found off its CPU, a target's clock that
//! disagrees with the host's), the check of a target's own clock, and
//! validation against STREAM's recurrences.

use super::{EPSILON, Expected, MIN_KERNEL_SECONDS, MIN_TICKS, sum_tolerance};
use crate::backend::ReadBack;
use crate::kernels::ArrayId;
use crate::plan::Plan;
use crate::results::measurement::{
    ArrayCheck, DeviceClock, ThreadPlacement, TimerCheck, Validation,
};

/// The warnings of a run, besides its backend's.
pub(super) fn warnings(
    plan: &Plan,
    threads: &[ThreadPlacement],
    min_time: f64,
    timer: &TimerCheck,
) -> Vec<String> {
    let mut warnings = size_warnings(plan, min_time, timer);
    if let Some(c) = timer.device_clock.filter(|c| c.over_host > 0) {
        warnings.push(format!(
            "the target's own clock timed {} of {} repetitions longer than the host's clock around them: those took the host's time; the target's clock is not to be trusted",
            c.over_host, c.repetitions
        ));
    }
    for t in threads {
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
/// point calibrated by time is meant to be there), kernels too short to
/// time; a suggested size is never one that still sits in the caches.
fn size_warnings(plan: &Plan, min_time: f64, timer: &TimerCheck) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(c) = plan.in_caches.filter(|_| !plan.calibrate) {
        warnings.push(c.warning());
    }
    if min_time.is_finite() && (timer.min_kernel_ticks < MIN_TICKS || min_time < MIN_KERNEL_SECONDS)
    {
        let factor = (MIN_KERNEL_SECONDS * 10.0 / min_time).ceil() as u64;
        let stream = plan.in_caches.map_or(0, |c| c.stream_elements);
        warnings.push(format!(
            "the shortest kernel took {:.1} us ({:.0} clock ticks); results below ~1 ms are unreliable: use arrays of at least {} elements",
            min_time * 1e6,
            timer.min_kernel_ticks,
            (plan.elements as u64 * factor.max(2)).max(stream)
        ));
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
