//! `membw run --backend cuda:all` (or `sim:0-3`): every device of a set
//! measured alone, one after another, then all of them at once, every
//! timed kernel started and ended together.

use super::RunReport;
use crate::kernels::KernelId;
use serde::Serialize;

/// What a device set's run measured, in both modes.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceSetReport {
    pub schema_version: u32,
    /// Always `membw-device-set`.
    pub kind: &'static str,
    /// Each device alone, in the set's order.
    pub alone: Vec<RunReport>,
    /// All at once: the table is the aggregate (every device's bytes over
    /// the slowest one's time, per repetition); each device's own figures
    /// under the others' load are its `measurement.ranks.ranks`.
    pub at_once: RunReport,
}

impl DeviceSetReport {
    pub fn new(alone: Vec<RunReport>, at_once: RunReport) -> DeviceSetReport {
        DeviceSetReport {
            schema_version: 1,
            kind: "membw-device-set",
            alone,
            at_once,
        }
    }

    /// The kernels, in the order measured.
    pub fn kernels(&self) -> Vec<KernelId> {
        (self.at_once.measurement.results.iter())
            .map(|r| r.kernel)
            .collect()
    }

    /// Each device's best rate of `kernel` at once with the others, GB/s,
    /// by device name.
    pub fn at_once_of(&self, device: &str, kernel: KernelId) -> Option<f64> {
        let ranks = self.at_once.measurement.ranks()?;
        (ranks.ranks.iter())
            .find(|r| r.device.as_deref() == Some(device))
            .and_then(|r| r.best_gb_s.get(&kernel).copied())
    }
}
