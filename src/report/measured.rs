//! How a run was measured, as people read it: the clock that timed it and
//! how that clock was checked, the calls a repetition made, each kernel's
//! launch, what watched the window and what it concluded, what the setup
//! was, and every peak a rate is a share of, named. Each line is read off
//! the target's method (`results::targets::Method`) and the measurement,
//! never off what kind of target ran.

use crate::results::targets::method::seconds;
use crate::results::{Measurement, PeakUse};
use std::fmt::Write;

/// The clock lines of the STREAM-compatible header: STREAM's own where
/// the host's clock timed the run; where the target's own clock did, what
/// it is and how the host's agreed with it. Then the calls a repetition
/// made, where there were more than one.
pub(super) fn clock_lines(o: &mut String, m: &Measurement) {
    let method = m.target().method();
    let timer = &m.timer;
    if !method.clock.own {
        stream_clock_lines(o, timer);
    }
    if let Some(c) = &timer.device_clock {
        let _ = writeln!(
            o,
            "Times below are {}, checked against the host clock around each repetition:",
            method.clock.describe()
        );
        let _ = writeln!(
            o,
            "   host/device median {:.3}; {} of {} longer than the host's (those take the host's time)",
            c.host_over_device, c.over_host, c.repetitions
        );
    }
    if m.inner_repeats > 1 {
        let floor = (timer.repetition_floor_us).map_or(String::new(), |us| {
            format!(", so that each lasts {} at least", seconds(us / 1e6))
        });
        let _ = writeln!(
            o,
            "Each repetition makes {} calls of each kernel{floor}; the rates count every call.",
            m.inner_repeats
        );
    }
}

/// STREAM's lines on the host clock and the test's length.
fn stream_clock_lines(o: &mut String, timer: &crate::results::measurement::TimerCheck) {
    let tick_us = timer.granularity_ns / 1e3;
    let _ = writeln!(
        o,
        "Your clock granularity/precision appears to be {tick_us:.3} microseconds."
    );
    let _ = writeln!(
        o,
        "Each test below will take on the order of {:.0} microseconds.",
        timer.timing_test_us
    );
    let _ = writeln!(
        o,
        "   (= {:.0} clock ticks)",
        timer.timing_test_us / tick_us.max(1e-9)
    );
    let _ = writeln!(o, "Increase the size of the arrays if this shows that");
    let _ = writeln!(o, "you are not getting at least 20 clock ticks per test.");
}

/// Each kernel's launch, where the target launched it: kernels launched
/// alike on one line; where shapes were timed against each other, the
/// rates that chose one.
pub(super) fn launch_lines(m: &Measurement) -> String {
    let mut o = String::new();
    let mut alike: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    let id = |id: &str| match id {
        "" => String::new(),
        id => format!(" [{id}]"),
    };
    for r in &m.results {
        let Some(launch) = &r.launch else { continue };
        let name = r.kernel.spec().name;
        let (mine, others): (Vec<_>, Vec<_>) =
            (launch.tried.iter()).partition(|t| t.shape == launch.shape);
        match mine.first() {
            Some(mine) => {
                let others: Vec<String> = (others.iter())
                    .map(|t| format!("{:.1} GB/s for {}", t.best_gb_s, t.shape))
                    .collect();
                let decided = match launch.kept_within {
                    Some(noise) => format!(
                        "kept, the default, at {:.1} GB/s: no shape differed beyond the noise ({:.0} %):",
                        mine.best_gb_s,
                        100.0 * noise
                    ),
                    None => format!("chosen at {:.1} GB/s over", mine.best_gb_s),
                };
                let _ = writeln!(
                    o,
                    "  launch: {name} {}{}\n    {decided} {}",
                    launch.shape,
                    id(&launch.id),
                    others.join(", ")
                );
            }
            None if launch.measured_on.is_some() => {
                let _ = writeln!(
                    o,
                    "  launch: {name} {}{}\n    the shape measured fastest on {} (docs/guide/gpu.md); membw tune --backend DEVICE searches them all",
                    launch.shape,
                    id(&launch.id),
                    launch.measured_on.as_deref().unwrap_or_default()
                );
            }
            None => match alike.iter_mut().find(|(shape, ..)| *shape == launch.shape) {
                Some((.., kernels)) => kernels.push(name),
                None => alike.push((&launch.shape, &launch.id, vec![name])),
            },
        }
    }
    for (shape, shape_id, kernels) in alike {
        let _ = writeln!(
            o,
            "  launch: {} {shape}{}",
            kernels.join(", "),
            id(shape_id)
        );
    }
    o
}

/// The trust lines: what the window's observers concluded.
pub(super) fn trust_lines(m: &Measurement) -> String {
    (m.trust().lines("  ").into_iter())
        .map(|l| l + "\n")
        .collect()
}

/// The peak lines under the summary: each peak a rate is a share of, by
/// name, with its source; or why none is known.
pub(super) fn peak_lines(m: &Measurement, peak: Option<&PeakUse>, unknown: Option<&str>) -> String {
    let mut o = String::new();
    match peak {
        Some(p) if !p.named.is_empty() => {
            for n in &p.named {
                let _ = writeln!(
                    o,
                    "  {}: {:.1} GB/s\n    source: {}",
                    n.name, n.gb_s, n.source
                );
            }
        }
        Some(p) => {
            let _ = writeln!(
                o,
                "  peak for the {} used: {:.1} GB/s of {}\n    source: {}",
                crate::units::plural(p.sockets_used, "socket"),
                p.used_gb_s,
                p.peak,
                p.peak.detail
            );
        }
        // Across ranks the aggregate spans other nodes' sockets: each node
        // is held against its own peak in the node table instead.
        None if m
            .ranks()
            .is_some_and(|r| r.nodes.iter().any(|n| n.of_peak.is_some())) =>
        {
            let _ = writeln!(
                o,
                "  theoretical peak: each node's, in the node table above (of peak)"
            );
        }
        None if unknown.is_some_and(crate::peak::share::is_not_theirs) => {
            let _ = writeln!(o, "  no share of the peak: {}", unknown.unwrap_or_default());
        }
        None => {
            let _ = writeln!(
                o,
                "  theoretical peak unknown: {}",
                unknown.unwrap_or(
                    "give --peak 409.6GB/s, or --channels N --mts R, to see percentages"
                )
            );
        }
    }
    o
}

/// The setup line: what it consisted of, as the target's method says.
pub(super) fn setup_line(m: &Measurement) -> String {
    format!(
        "  setup ({}) {:.3} s, whole run {:.3} s\n",
        m.target().method().setup,
        m.setup_s,
        m.total_s
    )
}
