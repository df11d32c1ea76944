//! A device's clocks held back by power or heat over a window: its
//! observer's finding, as the CPUs' tick counters have theirs.

use super::Effect;
use serde::{Deserialize, Serialize};

/// How long a device's clocks were held back over a window, by cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldBack {
    /// The device, by PCI address.
    pub bus_id: String,
    pub window_s: f64,
    /// Seconds its clocks were held back by its power limit.
    pub power_s: f64,
    /// Seconds they were held back by heat.
    pub thermal_s: f64,
    /// Its multiprocessors' and its memory's clocks as the window closed,
    /// MHz, where NVML says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mhz: Option<u32>,
}

impl HeldBack {
    /// The finding, where the clocks were held back at all (a microsecond
    /// of slack for the counters' own granularity).
    pub fn finding(&self, effect: Effect) -> Option<String> {
        let held = self.power_s.max(self.thermal_s);
        (held > 1e-6).then(|| {
            format!(
                "the device {} had its clocks held back {:.0} % of the window (power {:.1} ms, heat {:.1} ms): {}",
                self.bus_id,
                100.0 * held / self.window_s.max(1e-9),
                self.power_s * 1e3,
                self.thermal_s * 1e3,
                effect.words()
            )
        })
    }
}

impl HeldBack {
    /// What a window in which nothing held the clocks back says, for the
    /// trust line: `the clocks of 0000:18:00.0 never held back by power or
    /// heat (SM 1980 MHz, memory 2619 MHz)`.
    pub fn quiet_part(&self) -> String {
        let clocks: Vec<String> = [("SM", self.sm_mhz), ("memory", self.memory_mhz)]
            .into_iter()
            .filter_map(|(what, mhz)| Some(format!("{what} {} MHz", mhz?)))
            .collect();
        let now = match clocks.is_empty() {
            true => String::new(),
            false => format!(" ({})", clocks.join(", ")),
        };
        format!(
            "the clocks of {} never held back by power or heat{now}",
            self.bus_id
        )
    }
}
