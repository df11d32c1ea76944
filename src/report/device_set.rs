//! `membw run` on a device set: one table of every device alone and at
//! once, each kernel's best rate, then the aggregate and what the others'
//! load took from each.

use crate::results::device_set::DeviceSetReport;
use crate::trust::Trust;
use std::fmt::Write;

/// The trust column's word: a label says what happened.
fn trust_word(m: &crate::results::Measurement) -> &'static str {
    match m.trust() {
        Trust::Untrusted(_) => "NOT TRUSTED",
        Trust::Trusted { .. } => "trusted",
        Trust::NotJudged(_) => "not judged",
        Trust::Unwatched => "not watched",
    }
}

pub fn text(r: &DeviceSetReport) -> String {
    let mut o = String::new();
    let kernels = r.kernels();
    let names: Vec<String> = (r.alone.iter())
        .map(|a| {
            a.measurement
                .target()
                .device_name()
                .unwrap_or("?")
                .to_string()
        })
        .collect();
    let model = (r.alone.first())
        .and_then(|a| a.measurement.target().device().cloned())
        .and_then(|d| d.facts.model)
        .unwrap_or_default();
    let n = names.len();
    let _ = writeln!(
        o,
        "Devices: {n} ({}{}), each alone, one after another, then all {n} at once",
        names.join(", "),
        if model.is_empty() {
            String::new()
        } else {
            format!(": {model}")
        }
    );
    let _ = writeln!(
        o,
        "  best repetition of each kernel, GB/s; at once: every timed kernel started and ended together on all {n}\n"
    );
    let _ = write!(o, "  {:<8} {:<8}", "device", "mode");
    for k in &kernels {
        let _ = write!(o, " {:>10}", k.spec().name);
    }
    let _ = writeln!(o, "  trust");
    for (a, name) in r.alone.iter().zip(&names) {
        let m = &a.measurement;
        let _ = write!(o, "  {name:<8} {:<8}", "alone");
        for k in &kernels {
            let rate = (m.results.iter())
                .find(|x| x.kernel == *k)
                .map(|x| x.best_gb_s());
            let _ = write!(o, " {:>10}", rate.map_or("-".into(), |g| format!("{g:.2}")));
        }
        let _ = writeln!(o, "  {}", trust_word(&a.measurement));
        let _ = write!(o, "  {:<8} {:<8}", "", "at once");
        for k in &kernels {
            let rate = r.at_once_of(name, *k);
            let _ = write!(o, " {:>10}", rate.map_or("-".into(), |g| format!("{g:.2}")));
        }
        let _ = writeln!(o);
    }
    let _ = write!(o, "  {:<8} {:<8}", format!("all {n}"), "at once");
    for k in &kernels {
        let rate = (r.at_once.measurement.results.iter()).find(|x| x.kernel == *k);
        let _ = write!(
            o,
            " {:>10}",
            rate.map_or("-".into(), |x| format!("{:.2}", x.best_gb_s()))
        );
    }
    let _ = writeln!(o, "  {}", trust_word(&r.at_once.measurement));
    let _ = writeln!(
        o,
        "  (all {n}: every device's bytes over the slowest device's time, per repetition)"
    );
    footer(&mut o, r, &names, &kernels);
    o
}

/// What the others' load took from each device, and validation.
fn footer(
    o: &mut String,
    r: &DeviceSetReport,
    names: &[String],
    kernels: &[crate::kernels::KernelId],
) {
    if let Some(&last) = kernels.last() {
        let shares: Vec<String> = (r.alone.iter().zip(names))
            .filter_map(|(a, name)| {
                let alone = (a.measurement.results.iter()).find(|x| x.kernel == last)?;
                let together = r.at_once_of(name, last)?;
                Some(format!("{name} {:.2}", together / alone.best_gb_s()))
            })
            .collect();
        let _ = writeln!(
            o,
            "\n  {} at once / alone: {}\n  (each the ratio of two best repetitions of {}, no interval: a ratio within the kernel's spread is not resolved)",
            last.spec().name,
            shares.join(" · "),
            r.at_once.measurement.ntimes
        );
    }
    let failed: Vec<&String> = (r.alone.iter().zip(names))
        .filter(|(a, _)| !a.measurement.validation.passed)
        .map(|(_, n)| n)
        .collect();
    let _ = match (failed.is_empty(), r.at_once.measurement.validation.passed) {
        (true, true) => writeln!(o, "  validation: passed on every device, alone and at once"),
        _ => writeln!(
            o,
            "  validation: FAILED{}{}",
            if failed.is_empty() {
                String::new()
            } else {
                format!(
                    " alone on {}",
                    failed
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            if r.at_once.measurement.validation.passed {
                ""
            } else {
                "; at once"
            }
        ),
    };
}
