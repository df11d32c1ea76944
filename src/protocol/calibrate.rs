//! Repetitions sized by time for working sets that stay in the caches: on
//! a big node a repetition of the calls a byte count gives can last no
//! longer than the team's barriers, so the protocol times the kernels and
//! raises the calls until each repetition lasts long enough to time.

use super::{MIN_KERNEL_SECONDS, MIN_TICKS};
use crate::backend::Device;
use crate::plan::Plan;
use std::time::{Duration, Instant};

/// The device's round trip with no work (for the CPU team, the two
/// barriers around every kernel call), the fastest of 16.
pub(super) fn round_trip(device: &mut dyn Device) -> f64 {
    (0..16)
        .map(|_| {
            let t0 = Instant::now();
            device.sync();
            t0.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Most kernel calls one timed repetition may make.
const MAX_INNER_REPEATS: usize = 1 << 24;

/// How long a calibrated repetition lasts at least: 100 × the barriers it
/// pays, 20 ticks of the clock (STREAM's rule) and STREAM's 1 ms advice.
pub fn repetition_floor(barrier_s: f64, granularity: Duration) -> f64 {
    (100.0 * barrier_s)
        .max(MIN_TICKS * granularity.as_secs_f64())
        .max(MIN_KERNEL_SECONDS)
}

/// Kernel calls per repetition that make every kernel's repetition last at
/// least `floor` seconds: from the plan's calls, each kernel timed and the
/// calls raised (at least doubled) until its repetition is long enough.
pub(super) fn calibrate(plan: &Plan, device: &mut dyn Device, floor: f64) -> usize {
    let mut repeats = plan.inner_repeats.max(1);
    for &kernel in &plan.kernels {
        while repeats < MAX_INNER_REPEATS {
            device.sync();
            let t0 = Instant::now();
            device.run(kernel, repeats);
            let took = t0.elapsed().as_secs_f64();
            if took >= floor {
                break;
            }
            // Aim a quarter past the floor, so one more look usually ends it.
            let aim = (1.25 * floor / took.max(1e-9) * repeats as f64).ceil() as usize;
            repeats = aim.clamp(repeats * 2, MAX_INNER_REPEATS);
        }
    }
    repeats
}
