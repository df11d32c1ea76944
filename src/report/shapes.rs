//! `membw tune --backend DEVICE`: every launch shape of each kernel with
//! its rate and its own check, the one chosen against the default, and
//! how to run it again. The rates are calibration's (the best of three
//! alternated timings of each shape); the chosen shape's repetitions are
//! the run's.

use crate::kernels::KernelId;
use crate::results::measurement::{Measurement, ShapeRecord, ShapeTried};
use serde::Serialize;
use std::fmt::Write;

/// What a search of launch shapes found, for people and for JSON.
#[derive(Debug, Serialize)]
pub struct ShapeSearch {
    /// `device cuda0`.
    pub target: String,
    /// The `--backend` value that names it.
    pub backend: String,
    pub elements: usize,
    /// The device's memory peak, GB/s, where known.
    pub peak_gb_s: Option<f64>,
    pub kernels: Vec<KernelShapes>,
    /// Whether the run with the chosen shapes validated.
    pub validated: bool,
    /// The run's timed repetitions (each chosen shape's rate is the best
    /// of them).
    pub repetitions: usize,
    /// What watched the run concluded: other work, steal, a GPU's clocks
    /// held back, or that nothing did.
    pub trust: Vec<String>,
}

/// One kernel's shapes.
#[derive(Debug, Serialize)]
pub struct KernelShapes {
    pub kernel: KernelId,
    /// The shape chosen: the fastest, where it beat the default (the
    /// first) beyond the noise; else the default.
    pub chosen: String,
    /// The default's id.
    pub default: String,
    /// Where nothing was decided: the noise the fastest was within.
    pub kept_within: Option<f64>,
    /// The chosen shape's best rate over the run's repetitions, GB/s.
    pub run_gb_s: f64,
    /// Every shape, fastest first.
    pub shapes: Vec<ShapeTried>,
}

impl ShapeSearch {
    /// From a run whose plan asked for every shape, on a device with
    /// this memory peak.
    pub fn from_run(
        target: String,
        backend: String,
        peak_gb_s: Option<f64>,
        m: &Measurement,
    ) -> ShapeSearch {
        let kernels = (m.results.iter())
            .filter_map(|r| {
                let launch: &ShapeRecord = r.launch.as_ref()?;
                let mut shapes = launch.tried.clone();
                let default = shapes.first().map(|s| s.id.clone()).unwrap_or_default();
                shapes.sort_by(|a, b| b.best_gb_s.total_cmp(&a.best_gb_s));
                Some(KernelShapes {
                    kernel: r.kernel,
                    chosen: launch.id.clone(),
                    default,
                    kept_within: launch.kept_within,
                    run_gb_s: r.best_rate_mb_s / 1000.0,
                    shapes,
                })
            })
            .collect();
        ShapeSearch {
            target,
            backend,
            elements: m.array_elements as usize,
            peak_gb_s,
            kernels,
            validated: m.validation.passed,
            repetitions: m.ntimes,
            trust: m.trust().lines(""),
        }
    }
}

/// The search as people read it.
pub fn render(s: &ShapeSearch) -> String {
    let mut out = String::new();
    let count = s.kernels.first().map_or(0, |k| k.shapes.len());
    let _ = writeln!(
        out,
        "Launch shapes of {}, {} elements per array: {count} per kernel, each checked on its own, timed 3 times alternated (best shown)",
        s.target, s.elements
    );
    let width = (s.kernels.iter())
        .flat_map(|k| k.shapes.iter().map(|t| t.id.len()))
        .max()
        .unwrap_or(0);
    for k in &s.kernels {
        let _ = writeln!(out, "\n{}", k.kernel);
        for t in &k.shapes {
            let mark = if t.id == k.chosen { "▶" } else { " " };
            let share = (s.peak_gb_s)
                .map(|p| format!("{:5.1} % of peak", 100.0 * t.best_gb_s / p))
                .unwrap_or_default();
            let check = match (&t.invalid, t.checked) {
                (Some(why), _) => format!("WRONG: {why}"),
                (None, true) => "checked".into(),
                (None, false) => String::new(),
            };
            let default = if t.id == k.default { " (default)" } else { "" };
            let _ = writeln!(
                out,
                "  {mark} {:<width$}  {:9.1} GB/s  {share}  {check}{default}",
                t.id, t.best_gb_s
            );
        }
        let _ = writeln!(out, "  {}", verdict(k));
    }
    let _ = writeln!(
        out,
        "\nThen {} timed repetitions of each kernel in its chosen shape.",
        s.repetitions
    );
    for line in &s.trust {
        let _ = writeln!(out, "{line}");
    }
    if !s.validated {
        let _ = writeln!(
            out,
            "The run with the chosen shapes did NOT validate: no shape is worth keeping."
        );
    }
    let _ = writeln!(out, "Run a kernel in its chosen shape again:");
    for k in &s.kernels {
        let _ = writeln!(
            out,
            "  membw run --backend {} --kernels {} --shape {}",
            s.backend, k.kernel, k.chosen
        );
    }
    out
}

/// The decision for one kernel, as a measurement's conclusion: which, by
/// how much, and "not resolved" inside the noise.
fn verdict(k: &KernelShapes) -> String {
    let rate = |id: &str| (k.shapes.iter().find(|t| t.id == id)).map_or(0.0, |t| t.best_gb_s);
    let (chosen, default) = (rate(&k.chosen), rate(&k.default));
    match k.kept_within {
        Some(noise) => format!(
            "not resolved: no shape beat the default {} beyond the noise ({:.0} %); it ran at {:.1} GB/s, the best of the repetitions",
            k.default,
            100.0 * noise,
            k.run_gb_s
        ),
        None if k.chosen == k.default => format!(
            "chosen: the default {}, fastest beyond the noise; {:.1} GB/s, the best of the repetitions",
            k.default, k.run_gb_s
        ),
        None => format!(
            "chosen: {}, {:+.1} % over the default {} beyond the noise; {:.1} GB/s, the best of the repetitions",
            k.chosen,
            100.0 * (chosen / default - 1.0),
            k.default,
            k.run_gb_s
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tried(id: &str, gb_s: f64, invalid: Option<&str>) -> ShapeTried {
        ShapeTried {
            shape: String::new(),
            id: id.into(),
            best_gb_s: gb_s,
            checked: true,
            invalid: invalid.map(String::from),
        }
    }

    fn search(kept_within: Option<f64>, chosen: &str) -> ShapeSearch {
        ShapeSearch {
            target: "cuda0 (GPU)".into(),
            backend: "cuda:0".into(),
            elements: 1 << 25,
            peak_gb_s: Some(1000.0),
            kernels: vec![KernelShapes {
                kernel: KernelId::Triad,
                chosen: chosen.into(),
                default: "w16.u4.b256.wave".into(),
                kept_within,
                run_gb_s: 905.0,
                shapes: vec![
                    tried("w16.u1.b256.cover", 910.0, None),
                    tried("w16.u4.b256.wave", 850.0, None),
                    tried("w8.u1.b1024.cover", 990.0, Some("a[999] is 1, not 17")),
                ],
            }],
            validated: true,
            repetitions: 10,
            trust: vec!["trusted: nothing else ran".into()],
        }
    }

    #[test]
    fn the_chosen_shape_is_marked_with_its_gain_and_a_wrong_one_says_why() {
        let text = render(&search(None, "w16.u1.b256.cover"));
        assert!(text.contains("▶ w16.u1.b256.cover"), "{text}");
        assert!(text.contains("91.0 % of peak"), "{text}");
        assert!(
            text.contains("+7.1 % over the default w16.u4.b256.wave"),
            "{text}"
        );
        assert!(text.contains("WRONG: a[999] is 1, not 17"), "{text}");
        assert!(text.contains("(default)"), "{text}");
        assert!(text.contains("Then 10 timed repetitions"), "{text}");
        assert!(text.contains("trusted: nothing else ran"), "{text}");
        assert!(
            text.contains("membw run --backend cuda:0 --kernels triad --shape w16.u1.b256.cover"),
            "{text}"
        );
    }

    #[test]
    fn a_gain_inside_the_noise_is_not_resolved() {
        let text = render(&search(Some(0.08), "w16.u4.b256.wave"));
        assert!(text.contains("not resolved"), "{text}");
        assert!(text.contains("noise (8 %)"), "{text}");
        assert!(text.contains("▶ w16.u4.b256.wave"), "{text}");
    }
}
