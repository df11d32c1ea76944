//! Repetitions sized by the clock that times them. A working set that
//! stays in the CPUs' caches, on a big node, makes a repetition no longer
//! than the team's barriers; a device's kernel on a small array lasts a
//! few of its clock's ticks. Where the plan asks (the CPU team's cached
//! working sets; every device plan), the protocol times the kernels and
//! raises the calls per repetition until each lasts long enough for its
//! clock; and where a target can run a kernel more than one way (a GPU's
//! launch shapes), it times each way and keeps the fastest.

use crate::backend::{ShapeName, TargetArrays};
use crate::kernels::gpu_builds::ShapeChoice;
use crate::kernels::{KernelId, KernelStores};
use crate::plan::Plan;
use crate::results::measurement::{ShapeRecord, ShapeTried};
use crate::results::targets::Clock;
use std::time::{Duration, Instant};

/// The device's round trip with no work (for the CPU team, the two
/// barriers around every kernel call), the fastest of 16.
pub(super) fn round_trip(device: &mut dyn TargetArrays) -> f64 {
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
/// Timings of each launch shape, alternated, the best of which decides.
const SHAPE_ROUNDS: usize = 3;

/// How long a calibrated repetition lasts at least: 100 × the round trip
/// it pays, and what its clock times well (20 of its ticks; for the
/// host's clock, STREAM's 1 ms too).
pub fn repetition_floor(barrier_s: f64, clock: &Clock, granularity: Duration) -> f64 {
    (100.0 * barrier_s).max(clock.shortest_repetition_s(granularity.as_secs_f64()))
}

/// What calibration decided.
pub(super) struct Calibrated {
    /// Kernel calls per repetition.
    pub calls: usize,
    /// Each kernel's launch (by the plan's order), where it had shapes.
    pub launches: Vec<Option<ShapeRecord>>,
}

/// One timed call of `repeats` of `kernel`: the target's own time where
/// it keeps one, the host's otherwise.
fn time(device: &mut dyn TargetArrays, kernel: KernelId, repeats: usize) -> f64 {
    device.sync();
    let t0 = Instant::now();
    device.run(kernel, repeats);
    let host = t0.elapsed().as_secs_f64();
    device.device_seconds().filter(|s| *s > 0.0).unwrap_or(host)
}

/// Kernel calls per repetition that make every kernel's repetition last at
/// least `floor` seconds: from the plan's calls, each kernel timed and the
/// calls raised (at least doubled) until its repetition is long enough;
/// and each kernel's fastest launch shape, where the target has several.
pub(super) fn calibrate(plan: &Plan, device: &mut dyn TargetArrays, floor: f64) -> Calibrated {
    let mut repeats = plan.inner_repeats.max(1);
    let mut launches = Vec::with_capacity(plan.kernels.len());
    for &kernel in &plan.kernels {
        repeats = long_enough(device, kernel, repeats, floor);
        let launch = fastest_shape(plan, device, kernel, repeats);
        if launch.is_some() {
            // The faster shape may be short of the floor again.
            repeats = long_enough(device, kernel, repeats, floor);
        }
        launches.push(launch);
    }
    Calibrated {
        calls: repeats,
        launches,
    }
}

/// Each call timed this many times, the fastest deciding: a first call
/// that paid for cold caches or page tables must not make the calls look
/// long enough.
const LOOKS: usize = 3;
/// The margin over the floor that calls are sized for: repetitions run
/// a little faster than the calibration's once everything is warm.
const MARGIN: f64 = 1.2;

/// The calls, from `repeats` up, that make `kernel` last `floor`.
fn long_enough(
    device: &mut dyn TargetArrays,
    kernel: KernelId,
    mut repeats: usize,
    floor: f64,
) -> usize {
    let floor = MARGIN * floor;
    while repeats < MAX_INNER_REPEATS {
        let took = (0..LOOKS)
            .map(|_| time(device, kernel, repeats))
            .fold(f64::INFINITY, f64::min);
        if took >= floor {
            break;
        }
        // Aim a quarter past the floor, so one more look usually ends it.
        let aim = (1.25 * floor / took.max(1e-9) * repeats as f64).ceil() as usize;
        // At least twice as many, never past the cap (twice may be past it:
        // clamp's bounds would cross).
        repeats = aim.max(repeats * 2).min(MAX_INNER_REPEATS);
    }
    repeats
}

/// Every shape of `kernel` timed `SHAPE_ROUNDS` times, alternated, at
/// `repeats` calls; the fastest (its best time) is chosen where it beats
/// the default beyond the noise ([`choose`]), and kept on the device.
/// Where the plan asks for every shape (`membw tune`), each is first
/// checked on its own, and one found wrong is never chosen. `None` where
/// there is nothing to choose.
fn fastest_shape(
    plan: &Plan,
    device: &mut dyn TargetArrays,
    kernel: KernelId,
    repeats: usize,
) -> Option<ShapeRecord> {
    let shapes = device.shapes(kernel);
    let launch = |shape: &ShapeName, tried, kept_within| ShapeRecord {
        shape: shape.label.clone(),
        id: shape.id.clone(),
        measured_on: shape.measured_on.map(String::from),
        tried,
        kept_within,
    };
    if shapes.len() < 2 {
        return shapes.first().map(|shape| launch(shape, Vec::new(), None));
    }
    let checked = plan.shapes == ShapeChoice::Every;
    let invalid: Vec<Option<String>> = (0..shapes.len())
        .map(|i| match checked {
            true => device.check_shape(kernel, i).err(),
            false => None,
        })
        .collect();
    let mut best = vec![f64::INFINITY; shapes.len()];
    let mut worst = vec![0.0_f64; shapes.len()];
    for _ in 0..SHAPE_ROUNDS {
        for i in 0..shapes.len() {
            device.choose_shape(kernel, i);
            let took = time(device, kernel, repeats);
            best[i] = best[i].min(took);
            worst[i] = worst[i].max(took);
        }
    }
    let eligible: Vec<f64> = (best.iter().zip(&invalid))
        .map(|(&b, bad)| if bad.is_some() { f64::INFINITY } else { b })
        .collect();
    let (chosen, kept_within) = choose(&eligible, &worst);
    device.choose_shape(kernel, chosen);
    let bytes = (kernel.spec().bytes_counted() * (plan.elements * repeats) as u64) as f64;
    let tried = (shapes.iter().zip(&best).zip(invalid))
        .map(|((shape, &s), invalid)| ShapeTried {
            shape: shape.label.clone(),
            id: shape.id.clone(),
            best_gb_s: bytes / s / 1e9,
            checked,
            invalid,
        })
        .collect();
    Some(launch(&shapes[chosen], tried, kept_within))
}

/// The kernels near the cache edge timed with both store modes, in the
/// run's own order and calls (`repeats`), so that what one kernel's
/// stores leave in the caches for the next counts as it will in the run:
/// `STORES_ROUNDS` rounds, each the whole sequence once with every such
/// kernel on the mode its size leans to and once on the other. Each kernel
/// keeps its better best ([`faster_stores`]). Where that mixes modes, the
/// mix is timed too (beside the first configuration again), and kept only
/// where its slowest kernel against that kernel's best anywhere is no
/// further behind than in either configuration alike (streaming stores of
/// one kernel evict lines the next would find); else the alike one whose
/// slowest kernel is least behind. Each timed
/// entry of `stores` (by the plan's kernels) becomes the measured choice,
/// left set on the target; a target that cannot switch leaves them untimed.
pub(super) fn choose_stores(
    plan: &Plan,
    device: &mut dyn TargetArrays,
    repeats: usize,
    stores: &mut [Option<KernelStores>],
) {
    let edge: Vec<(usize, KernelStores)> = (stores.iter().enumerate())
        .filter_map(|(k, s)| Some((k, s.filter(KernelStores::to_measure)?)))
        .collect();
    let Some(&(first, planned)) = edge.first() else {
        return;
    };
    if !device.use_stores(plan.kernels[first], planned.mode) {
        for (k, planned) in &edge {
            stores[*k] = Some(planned.untimed());
        }
        return;
    }
    let repeats = repeats.max(1);
    // Each edge kernel's mode in a configuration: its candidates' `pick`-th.
    let lean = vec![0; edge.len()];
    let other = vec![1; edge.len()];
    let [took_lean, took_other] = time_configs(plan, device, repeats, &edge, [&lean, &other]);
    let mut picks = Vec::with_capacity(edge.len());
    let mut within = Vec::with_capacity(edge.len());
    for e in 0..edge.len() {
        let (pick, noise) = faster_stores(&[took_lean[e], took_other[e]]);
        picks.push(pick);
        within.push(noise);
    }
    // Where a kernel's own faster mode was overruled for the others'.
    let mut together = vec![false; edge.len()];
    if picks.iter().any(|&p| p != picks[0]) {
        // Each configuration's worst kernel against that kernel's best in
        // any: the mix where it leaves no kernel further behind than either
        // configuration alike does, else the alike one that leaves less.
        let [mixed, again] = time_configs(plan, device, repeats, &edge, [&picks, &lean]);
        let timed = [&took_lean, &took_other, &mixed, &again];
        let fastest = |e: usize| {
            timed
                .iter()
                .map(|t| best(&t[e]))
                .fold(f64::INFINITY, f64::min)
        };
        let worst = |took: &[[f64; STORES_ROUNDS]]| {
            (0..edge.len())
                .map(|e| fastest(e) / best(&took[e]))
                .fold(f64::INFINITY, f64::min)
        };
        let alike = match worst(&took_lean).max(worst(&again)) >= worst(&took_other) {
            true => (lean, worst(&took_lean).max(worst(&again))),
            false => (other, worst(&took_other)),
        };
        if worst(&mixed) < alike.1 {
            together = (picks.iter().zip(&alike.0)).map(|(p, a)| p != a).collect();
            picks = alike.0;
        }
    }
    let bytes = |k: usize| {
        (plan.kernels[k].spec().bytes_counted() * (plan.elements * repeats) as u64) as f64
    };
    for (e, &(k, planned)) in edge.iter().enumerate() {
        let mode = planned.candidates()[picks[e]];
        device.use_stores(plan.kernels[k], mode);
        let rates = [best(&took_lean[e]), best(&took_other[e])].map(|t| bytes(k) / t / 1e9);
        let within = if together[e] { None } else { within[e] };
        stores[k] = Some(planned.measured(mode, rates, within, together[e]));
    }
}

/// The fastest of a mode's rounds.
fn best(took: &[f64; STORES_ROUNDS]) -> f64 {
    took.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Each configuration's times (`[config][edge kernel][round]`): rounds
/// alternate the configurations, each running the plan's kernels in order
/// as repetitions do, [`WARM_PASSES`] times untimed and once timed: the
/// untimed passes leave the caches as that configuration's own repetitions
/// would (streaming stores of the other one have just evicted the arrays).
fn time_configs(
    plan: &Plan,
    device: &mut dyn TargetArrays,
    repeats: usize,
    edge: &[(usize, KernelStores)],
    configs: [&[usize]; 2],
) -> [Vec<[f64; STORES_ROUNDS]>; 2] {
    let mut by_round = vec![[vec![0.0; edge.len()], vec![0.0; edge.len()]]; STORES_ROUNDS];
    for round in by_round.iter_mut() {
        for (c, picks) in configs.iter().enumerate() {
            for (&(k, planned), &pick) in edge.iter().zip(picks.iter()) {
                device.use_stores(plan.kernels[k], planned.candidates()[pick]);
            }
            for _ in 0..WARM_PASSES {
                for &kernel in &plan.kernels {
                    device.run(kernel, repeats);
                }
            }
            for (k, &kernel) in plan.kernels.iter().enumerate() {
                let t = time(device, kernel, repeats);
                if let Some(e) = edge.iter().position(|(i, _)| *i == k) {
                    round[c][e] = t;
                }
            }
        }
    }
    std::array::from_fn(|c| {
        (0..edge.len())
            .map(|e| std::array::from_fn(|r| by_round[r][c][e]))
            .collect()
    })
}

/// Untimed passes of a configuration before its timed one: at arrays near
/// the edge a cache's replacement policy takes more than one pass to keep
/// what the configuration's own repetitions keep.
const WARM_PASSES: usize = 2;

/// Rounds of each configuration of the stores, alternated: the best
/// decides, the median's distance from it is the noise (one slow round, a
/// neighbour's burst, moves the median little).
const STORES_ROUNDS: usize = 5;

/// Which of two modes' timings (`took[i]`: mode `i`'s rounds) to keep:
/// the one with the better best, and, where it is not ahead by more than
/// the noise (the wider of the two modes' median over best, at least
/// [`SHAPE_MARGIN`]), that noise: a choice that decided nothing says so.
/// The better best is kept even then: two modes inside the noise cost
/// little either way, and one a few percent ahead is more often right.
fn faster_stores(took: &[[f64; STORES_ROUNDS]; 2]) -> (usize, Option<f64>) {
    let best = took.map(|t| best(&t));
    let noise = (0..2)
        .filter_map(|i| {
            let median = crate::results::median(&took[i])?;
            Some(median / best[i] - 1.0).filter(|n| n.is_finite())
        })
        .fold(SHAPE_MARGIN, f64::max);
    let faster = usize::from(best[1] < best[0]);
    let (slow, fast) = (best[1 - faster], best[faster]);
    match fast < slow * (1.0 - noise) {
        true => (faster, None),
        false => (faster, Some(noise)),
    }
}

/// The least a faster shape must gain over the first to be chosen: the
/// rounds' own spread, and never less than this share.
const SHAPE_MARGIN: f64 = 0.02;

/// The shape to run, from each shape's best and worst time over the
/// rounds: the fastest, where it beats the first (the stated default) by
/// more than the noise of the two (the wider spread of their rounds, at
/// least [`SHAPE_MARGIN`]); else the first. Where another shape came
/// within the noise of the first, either way round, nothing was decided:
/// the noise comes back, so the record says so. Only the two compared
/// count: among dozens of shapes (`membw tune`) one unsteady round
/// elsewhere must not hide a clear winner.
fn choose(best: &[f64], worst: &[f64]) -> (usize, Option<f64>) {
    let fastest = (0..best.len())
        .min_by(|&a, &b| best[a].total_cmp(&best[b]))
        .unwrap_or(0);
    let spread = |i: usize| Some(worst[i] / best[i] - 1.0).filter(|s| s.is_finite());
    let noise = [spread(0), spread(fastest)]
        .into_iter()
        .flatten()
        .fold(SHAPE_MARGIN, f64::max);
    if fastest != 0 && best[fastest] < best[0] * (1.0 - noise) {
        return (fastest, None);
    }
    let close = (best.iter().skip(1)).any(|&b| b < best[0] * (1.0 + noise));
    (0, close.then_some(noise))
}

#[cfg(test)]
mod tests {
    /// Streaming stores 1.3× faster in every round: chosen; a cold first
    /// round of one mode moves the median little; a 1 % gap is a tie, the
    /// first mode kept and the noise said.
    #[test]
    fn stores_are_chosen_beyond_the_median_noise() {
        let steady = [[1.0, 1.01, 1.0, 1.02, 1.0], [0.77, 0.78, 0.77, 0.77, 0.78]];
        assert_eq!(super::faster_stores(&steady), (1, None));
        let cold = [[2.1, 1.0, 1.01, 1.0, 1.0], [0.77, 0.77, 0.78, 0.77, 0.78]];
        assert_eq!(super::faster_stores(&cold), (1, None));
        let first_ahead = [[0.8, 0.8, 0.81, 0.8, 0.8], [1.0, 1.0, 1.0, 1.01, 1.0]];
        assert_eq!(super::faster_stores(&first_ahead), (0, None));
        // A 1 % gap: the better best kept, said to be inside the noise.
        let (kept, noise) = super::faster_stores(&[[1.0; 5], [0.99; 5]]);
        assert_eq!((kept, noise), (1, Some(super::SHAPE_MARGIN)));
        let (kept, noise) = super::faster_stores(&[[0.99; 5], [1.0; 5]]);
        assert_eq!((kept, noise), (0, Some(super::SHAPE_MARGIN)));
        // Rounds that wander 10 % hide a 5 % gain: kept, and not decided.
        let noisy = [[1.0, 1.1, 1.1, 1.0, 1.1], [0.95, 1.05, 1.05, 1.05, 0.95]];
        let (kept, noise) = super::faster_stores(&noisy);
        assert_eq!(kept, 1);
        // The wider of the two modes' median over best: 1.05 / 0.95.
        assert!((noise.unwrap() - (1.05 / 0.95 - 1.0)).abs() < 1e-9);
    }

    #[test]
    fn a_shape_is_chosen_over_the_default_only_beyond_the_noise() {
        // 10 % faster, rounds steady: chosen.
        assert_eq!(super::choose(&[1.0, 0.9], &[1.01, 0.91]), (1, None));
        // 1 % faster: inside the 2 % floor, the default kept and why.
        assert_eq!(super::choose(&[1.0, 0.99], &[1.0, 0.99]), (0, Some(0.02)));
        // 10 % faster, but one shape's rounds spread 20 %: kept.
        let (chosen, noise) = super::choose(&[1.0, 0.9], &[1.2, 0.9]);
        assert_eq!(chosen, 0);
        assert!((noise.unwrap() - 0.2).abs() < 1e-12);
        // The default fastest, the others well behind: chosen outright.
        assert_eq!(
            super::choose(&[0.8, 1.0, 1.1], &[0.81, 1.0, 1.1]),
            (0, None)
        );
        // The default fastest by 1 %: kept, and said to be inside the noise.
        assert_eq!(super::choose(&[1.0, 1.01], &[1.0, 1.01]), (0, Some(0.02)));
        // A third shape's unsteady rounds do not hide a clear winner.
        assert_eq!(
            super::choose(&[1.0, 0.9, 1.5], &[1.01, 0.91, 3.0]),
            (1, None)
        );
    }
}
