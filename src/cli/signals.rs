//! Signals and what must be undone when one stops a command: the one stop
//! flag the handlers set (work stops after the current repetition), its
//! name for messages, and `--weights`, put back when its guard drops.

use crate::engine::Stop;
use crate::error::{Error, Result};
use crate::topology::Topology;

pub(crate) fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT (Ctrl-C)".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        other => format!("signal {other}"),
    }
}

/// SIGINT, SIGTERM and SIGHUP set the flag; work stops after the current
/// repetition.
/// The stop flag the signal handlers set, installed on first use; every
/// later call returns the same flag.
pub(crate) fn stop_flag() -> Stop {
    static STOP: std::sync::OnceLock<Stop> = std::sync::OnceLock::new();
    STOP.get_or_init(|| {
        let stop = Stop::default();
        crate::sys::stop_on_signals(&stop);
        stop
    })
    .clone()
}

/// Applies `--weights` (when given) for the command's life: the signal
/// handlers go in first, so that a stop signal ends the run gracefully and
/// the guard puts the weights back; the topology is read again so that
/// policies see the new weights.
pub(crate) fn with_weights(
    text: Option<&str>,
    topo: Topology,
) -> Result<(Topology, Option<crate::topology::weights::WeightsGuard>)> {
    let Some(text) = text else {
        return Ok((topo, None));
    };
    let weights = crate::topology::weights::parse(text, &topo)?;
    stop_flag();
    let guard =
        crate::topology::weights::WeightsGuard::apply(&topo, &weights, crate::sys::is_root())?;
    let topo = Topology::read(&topo.root).map_err(Error::Runtime)?;
    Ok((topo, Some(guard)))
}
