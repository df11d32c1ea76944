//! How a target is measured: the clock that times its repetitions and
//! the rule that clock sets for a repetition's length, what watches its
//! windows, what its setup consists of, and who does its work. Judges,
//! warnings, trust lines and renderers read a [`Method`]; none of them
//! asks what kind of target ran. A device declares its own (its backend
//! knows its clock and its observers); the CPU team's and a program's are
//! the host's.

use serde::{Deserialize, Serialize};

/// STREAM's rule for any clock: a repetition at least this many of its
/// ticks long.
pub const MIN_TICKS: f64 = 20.0;
/// STREAM's advice for the host's clock: a repetition at least this long
/// (seconds), so that what the operating system does around it (a timer
/// read, a scheduling tick) stays a small part of it.
pub const MIN_HOST_SECONDS: f64 = 1e-3;

/// How a target is measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Method {
    pub clock: Clock,
    /// What its setup (before the first timed repetition) consists of.
    pub setup: String,
    /// What watches its timed windows, for people.
    pub observers: Vec<String>,
    /// Who does the work.
    pub work: Work,
}

/// Who does a target's work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// The host CPUs the plan runs on, over host memory: threads, their
    /// placement, the memory policy, the host's caches and the
    /// reproduce lines describe it.
    HostCpus,
    /// The target itself, driven by one host thread (a device): no CPU
    /// of the host's shares its work, and the host's caches hold none of
    /// its arrays.
    Driven,
}

/// What times a target's repetitions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Clock {
    /// `CUDA events`; the host's is `the host clock`.
    pub name: String,
    /// Whether it is the target's own: the protocol then keeps the host's
    /// clock around each repetition too, and checks the two.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own: bool,
    /// Its tick, seconds, where its maker states it (the host clock's is
    /// measured in every run instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_s: Option<f64>,
}

impl Clock {
    /// The host's monotonic clock.
    pub fn host() -> Clock {
        Clock {
            name: "the host clock".into(),
            own: false,
            resolution_s: None,
        }
    }

    /// The shortest repetition this clock times well, where the host's
    /// clock ticks every `host_tick_s`: STREAM's 20 ticks of it; and for
    /// the host's clock, STREAM's 1 ms besides (what the operating
    /// system does around a repetition is in the host's time, never in a
    /// device's events).
    pub fn shortest_repetition_s(&self, host_tick_s: f64) -> f64 {
        match (self.own, self.resolution_s) {
            (true, Some(tick)) => MIN_TICKS * tick,
            (true, None) => MIN_TICKS * host_tick_s,
            (false, _) => (MIN_TICKS * host_tick_s).max(MIN_HOST_SECONDS),
        }
    }

    /// `CUDA events (0.5 µs)`: its name and tick, for people.
    pub fn describe(&self) -> String {
        match self.resolution_s {
            Some(s) => format!("{} ({} tick)", self.name, seconds(s)),
            None => self.name.clone(),
        }
    }
}

/// `0.5 µs`, `2 ms`: a short time for people.
pub fn seconds(s: f64) -> String {
    let (value, unit) = match s {
        s if s < 0.1e-6 => (s * 1e9, "ns"),
        s if s < 1e-3 => (s * 1e6, "µs"),
        s if s < 1.0 => (s * 1e3, "ms"),
        s => (s, "s"),
    };
    let value = (value * 100.0).round() / 100.0;
    format!("{} {unit}", crate::units::trim_float(value))
}

/// What a device's backend declares of how it is measured (files from
/// before it was declared read with none of it).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DeviceMethod {
    #[serde(default)]
    pub clock: Clock,
    /// `context, module load (PTX compiled by the driver), allocations,
    /// fill kernels`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub setup: String,
    /// `NVML violation counters (clocks held back by power or heat)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observers: Vec<String>,
}

impl DeviceMethod {
    pub fn is_empty(&self) -> bool {
        *self == DeviceMethod::default()
    }
}

impl Method {
    /// The CPU team's: the host clock around the team's barriers, the
    /// CPUs' tick counters, arrays mapped and first touched by their
    /// threads.
    pub fn cpu_team() -> Method {
        Method {
            clock: Clock::host(),
            setup: "map + parallel first touch".into(),
            observers: vec![CPU_TICKS.into()],
            work: Work::HostCpus,
        }
    }

    /// Another program's: its own timers, on the host's CPUs.
    pub fn program() -> Method {
        Method {
            clock: Clock {
                name: "the program's own timer".into(),
                own: false,
                resolution_s: None,
            },
            setup: "the program's own".into(),
            observers: vec![CPU_TICKS.into()],
            work: Work::HostCpus,
        }
    }

    /// A device's, as its backend declared it; where it declared nothing
    /// (files from before), its own clock of unknown tick.
    pub fn device(declared: &DeviceMethod) -> Method {
        let mut clock = declared.clock.clone();
        clock.own = true;
        if clock.name.is_empty() {
            clock.name = "the device's own clock".into();
        }
        Method {
            clock,
            setup: match declared.setup.as_str() {
                "" => "the device's setup".into(),
                s => s.into(),
            },
            observers: declared.observers.clone(),
            work: Work::Driven,
        }
    }
}

/// The CPU tick counters, as [`Method::observers`] names them.
pub const CPU_TICKS: &str = "the CPUs' tick counters (/proc/stat)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_sets_the_shortest_repetition_it_times() {
        let host = Clock::host();
        // 20 ns ticks: STREAM's 1 ms rules; 100 µs ticks: 20 of them.
        assert_eq!(host.shortest_repetition_s(20e-9), 1e-3);
        assert!((host.shortest_repetition_s(100e-6) - 2e-3).abs() < 1e-12);
        let events = Clock {
            name: "CUDA events".into(),
            own: true,
            resolution_s: Some(0.5e-6),
        };
        // A device's events: 20 of their ticks, never the host's 1 ms.
        assert!((events.shortest_repetition_s(20e-9) - 10e-6).abs() < 1e-15);
        assert_eq!(events.describe(), "CUDA events (0.5 µs tick)");
        let old = Method::device(&DeviceMethod::default());
        assert!(old.clock.own && old.clock.name.contains("own clock"));
        assert_eq!(
            (old.work, Method::cpu_team().work),
            (Work::Driven, Work::HostCpus)
        );
    }

    #[test]
    fn short_times_read_in_their_unit() {
        assert_eq!(seconds(0.5e-6), "0.5 µs");
        assert_eq!(seconds(188.2e-6), "188.2 µs");
        assert_eq!(seconds(0.0123), "12.3 ms");
        assert_eq!(seconds(2.5), "2.5 s");
    }
}
