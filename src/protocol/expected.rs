//! What every array holds after a run, by STREAM's recurrence, and the
//! rule each element (and each reduction) is checked by.

use crate::kernels::{ARRAYS, ArrayId, KernelId};

/// STREAM's tolerance for 8-byte reals.
pub const EPSILON: f64 = 1e-13;
/// First-touch values of a, b, c (STREAM's), d, and a device's host
/// buffers h (what it is sent) and r (what it sends back).
pub const INITIAL_VALUES: [f64; ARRAYS] = [1.0, 2.0, 0.0, 1.0, 5.0, 0.0];

/// What every array should hold after the run, by STREAM's recurrence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expected {
    pub values: [f64; ARRAYS],
    /// The value of `a` when the read kernel last ran.
    pub read_a: Option<f64>,
    /// The value of `a·b` when the dot kernel last ran.
    pub dot_ab: Option<f64>,
}

/// The values after the timing test and `ntimes` repetitions of
/// `kernels`, each called `calls` times a repetition and advancing them by
/// its spec's recurrence each time.
pub fn expected_values(kernels: &[KernelId], ntimes: usize, calls: usize) -> Expected {
    let mut element = INITIAL_VALUES;
    element[ArrayId::A.index()] *= 2.0; // the timing test
    let (mut read_a, mut dot_ab) = (None, None);
    for _ in 0..ntimes {
        for &k in kernels {
            for _ in 0..calls.max(1) {
                let term = (k.spec().step)(&mut element);
                match k {
                    KernelId::Read => read_a = term,
                    KernelId::Dot => dot_ab = term,
                    _ => {}
                }
            }
        }
    }
    Expected {
        values: element,
        read_a,
        dot_ab,
    }
}

/// The relative error a sum of `n` equal terms may carry in any order of
/// addition: (n−1) roundings of at most half an ulp each, bounded by n·ε.
/// The reductions (read, dot) are checked against the exact sum with it.
pub fn sum_tolerance(n: usize) -> f64 {
    (n as f64 * f64::EPSILON).max(EPSILON)
}

/// An element's error against `want`, and whether it exceeds epsilon.
/// Values that overflowed (update over many repetitions) must match exactly.
pub(super) fn element_error(x: f64, want: f64) -> (f64, bool) {
    if !want.is_finite() {
        return if x == want {
            (0.0, false)
        } else {
            (f64::INFINITY, true)
        };
    }
    let err = (x - want).abs();
    // NaN compares false: an element that became NaN counts as bad.
    let within = err <= EPSILON * want.abs().max(f64::MIN_POSITIVE);
    (err, !within)
}

/// The sum of absolute errors of `values` against `want`, and how many
/// elements exceed epsilon: the rule every backend reads its arrays back by.
pub fn array_errors(values: &[f64], want: f64) -> (f64, u64) {
    values.iter().fold((0.0, 0), |(sum, bad), &x| {
        let (err, over) = element_error(x, want);
        (sum + err, bad + u64::from(over))
    })
}
