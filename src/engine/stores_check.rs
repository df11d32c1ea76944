//! `run --stores auto`'s side measurement: `auto` picks streaming stores
//! where STREAM's rule holds (each array at least 4 × the caches), a rule that parts with
//! full-line writes (SpecI2M) or few cores per socket can break. After the
//! run, one kernel runs again with the other store instructions, briefly,
//! on arrays of the same size on the same CPUs, and the two are compared
//! as any two measurements are: a ratio with its interval, "no change"
//! inside the noise.

use super::{Engine, Stop};
use crate::error::Result;
use crate::kernels::{KernelId, StoreMode, StoresRequest};
use crate::plan::{Plan, Settings};
use crate::results::Measurement;
use crate::results::estimate::{Comparison, LEVEL};
use crate::results::measurement::StoresCheck;

/// Repetitions of the side measurement, the first not counted: enough for
/// an interval, few enough to cost a fraction of the run.
const REPETITIONS: usize = 6;

/// Measures `kernel` of the run with the store mode `auto` did not pick,
/// where there is one to pick: the CPU team's kernels, `--stores auto`, an
/// ISA with streaming stores, a kernel that stores. `None` otherwise.
pub fn measure_other(
    engine: &mut Engine,
    settings: &Settings,
    plan: &Plan,
    run: &Measurement,
    stop: &Stop,
) -> Result<Option<StoresCheck>> {
    let (Some(used), Some(isa)) = (plan.stores(), plan.target.cpu_code().map(|c| c.isa)) else {
        return Ok(None);
    };
    if settings.stores != StoresRequest::Auto || !isa.has_streaming_stores() {
        return Ok(None);
    }
    let stores =
        |r: &&crate::results::measurement::KernelResult| !r.kernel.spec().writes.is_empty();
    let Some(ran) = (run.results.iter().find(|r| r.kernel == KernelId::Triad))
        .or_else(|| run.results.iter().find(stores))
    else {
        return Ok(None);
    };
    // Timed beside each other before the run already: nothing to add.
    if ran.stores.is_some_and(|s| s.nt_over_regular().is_some()) {
        return Ok(None);
    }
    let (other, request) = match used {
        StoreMode::Nt => (StoreMode::Regular, StoresRequest::Regular),
        StoreMode::Regular => (StoreMode::Nt, StoresRequest::Nt),
    };
    let mut side = settings.clone();
    side.stores = request;
    side.measure.kernels = vec![ran.kernel];
    side.measure.ntimes = REPETITIONS.min(settings.measure.ntimes);
    let prepared = engine.prepare(&side)?;
    let measured = engine.measure(&prepared.plan, crate::engine::By::Engine, stop)?;
    let Some(theirs) = measured.results.iter().find(|r| r.kernel == ran.kernel) else {
        return Ok(None);
    };
    let comparison = Comparison::of(&ran.repetition_rates(), &theirs.repetition_rates(), LEVEL);
    Ok(comparison.map(|comparison| StoresCheck {
        kernel: ran.kernel,
        used,
        other,
        used_best_gb_s: ran.best_gb_s(),
        other_best_gb_s: theirs.best_gb_s(),
        comparison,
    }))
}
