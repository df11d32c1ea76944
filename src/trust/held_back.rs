//! A device's clocks held back by power or heat over a window: its
//! observer's finding, as the CPUs' tick counters have theirs.

use super::Effect;
use serde::{Deserialize, Serialize};

/// How a device's clocks were held back over a window, by cause: for how
/// long, where its management library counts the time (NVML's violation
/// counters), or what held them back as the window opened and closed,
/// where it reports a status (ROCm SMI's throttle status).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldBack {
    /// The device, by PCI address.
    pub bus_id: String,
    pub window_s: f64,
    /// Seconds its clocks were held back by its power limit, where the
    /// library counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_s: Option<f64>,
    /// Seconds they were held back by heat, where the library counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thermal_s: Option<f64>,
    /// What held them back as the window opened or as it closed, where the
    /// library reports a status (`power (PPT0)`, `heat (HBM)`); empty
    /// where nothing did, or where it counts time instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at_ends: Vec<String>,
    /// Its multiprocessors' and its memory's clocks as the window closed,
    /// MHz, where the library says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mhz: Option<u32>,
}

impl HeldBack {
    /// The finding, where the clocks were held back at all (a microsecond
    /// of slack for the counters' own granularity).
    pub fn finding(&self, effect: Effect) -> Option<String> {
        if !self.at_ends.is_empty() {
            return Some(format!(
                "the device {} had its clocks held back as the window opened or closed ({}): {}",
                self.bus_id,
                self.at_ends.join(", "),
                effect.words()
            ));
        }
        let (power, heat) = (self.power_s.unwrap_or(0.0), self.thermal_s.unwrap_or(0.0));
        (power.max(heat) > 1e-6).then(|| {
            format!(
                "the device {} had its clocks held back {:.0} % of the window (power {:.1} ms, heat {:.1} ms): {}",
                self.bus_id,
                100.0 * power.max(heat) / self.window_s.max(1e-9),
                power * 1e3,
                heat * 1e3,
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
        // A status read at the window's ends does not see between them.
        let when = match self.power_s.is_some() || self.thermal_s.is_some() {
            true => "never held back",
            false => "not held back as the window opened and closed",
        };
        format!("the clocks of {} {when} by power or heat{now}", self.bus_id)
    }
}
