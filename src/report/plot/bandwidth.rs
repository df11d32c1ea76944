//! Bandwidth plots of experiment records: bandwidth vs threads (one line
//! per placement, memory policy or store mode; error bars of the 95 %
//! interval of the mean; the peak as a line when the data reach near it), vs working set per thread (log scale,
//! cache capacities marked), and the NUMA matrix as a heat map.

use super::*;
use crate::kernels::KernelId;
use crate::results::Record;
use std::collections::BTreeMap;

/// Which parts of a point vary across the records: computed once, so that
/// labelling is linear in the number of records.
pub struct Varies {
    program: bool,
    placement: bool,
    mem: bool,
    stores: bool,
    threads: bool,
}

impl Varies {
    pub(super) fn of(records: &[Record]) -> Varies {
        let Some(first) = records.first() else {
            return Varies {
                program: false,
                placement: false,
                mem: false,
                stores: false,
                threads: false,
            };
        };
        let p = &first.point;
        Varies {
            program: records.iter().any(|r| r.point.program() != p.program()),
            placement: records.iter().any(|r| r.point.placement != p.placement),
            mem: records.iter().any(|r| r.point.mem != p.mem),
            stores: records.iter().any(|r| r.point.stores != p.stores),
            threads: records.iter().any(|r| r.point.threads != p.threads),
        }
    }

    /// A series label naming only what varies.
    pub(super) fn label(&self, r: &Record, with_threads: bool) -> String {
        let mut parts = Vec::new();
        if self.program {
            parts.push(r.point.program().unwrap_or("membw").to_string());
        }
        if self.placement || !with_threads {
            parts.push(r.point.placement_text());
        }
        if self.mem {
            parts.push(format!("mem {}", r.point.mem_text()));
        }
        if self.stores {
            parts.push(format!("{} stores", r.stores_label()));
        }
        if !with_threads && self.threads {
            parts.push(crate::units::plural(r.point.threads, "thread"));
        }
        if parts.is_empty() {
            parts.push(r.point.placement_text());
        }
        parts.join(" · ")
    }
}

pub(super) fn collect_series(
    records: &[Record],
    kernel: KernelId,
    x: impl Fn(&Record) -> f64,
    with_threads: bool,
) -> Vec<PlotSeries> {
    let varies = Varies::of(records);
    let mut map: BTreeMap<String, Vec<(f64, f64, f64)>> = BTreeMap::new();
    for r in records {
        if let Some(s) = r.kernel_trust(kernel).shown() {
            // Error bars: the 95 % interval of the mean (none of one run).
            let half = s.interval().map_or(0.0, |i| i.half_width());
            map.entry(varies.label(r, with_threads))
                .or_default()
                .push((x(r), s.mean, half));
        }
    }
    map.into_iter()
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            (k, v)
        })
        .collect()
}

/// The points (x, mean) of `kernel` whose runs were NOT TRUSTED.
pub(super) fn untrusted_points(
    records: &[Record],
    kernel: KernelId,
    x: impl Fn(&Record) -> f64,
) -> Vec<(f64, f64)> {
    marked_points(records, kernel, x, |r| r.kernel_trust(kernel).none())
}

/// The points (x, mean) of `kernel` that measured the caches.
pub(super) fn cache_points(
    records: &[Record],
    kernel: KernelId,
    x: impl Fn(&Record) -> f64,
) -> Vec<(f64, f64)> {
    marked_points(records, kernel, x, Record::in_caches)
}

/// The points (x, mean) of `kernel` of the records `marked` picks.
fn marked_points(
    records: &[Record],
    kernel: KernelId,
    x: impl Fn(&Record) -> f64,
    marked: impl Fn(&Record) -> bool,
) -> Vec<(f64, f64)> {
    (records.iter().filter(|r| marked(r)))
        .filter_map(|r| Some((x(r), r.kernel_trust(kernel).shown()?.mean)))
        .collect()
}

/// The legend right of the plot: the series, extra keys (the peak), the
/// rings' key when some point is ringed, and the squares' when some point
/// measured the caches.
pub(super) fn full_legend(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    mut keys: Vec<(String, RGBAColor)>,
    extra: Option<(String, RGBAColor)>,
    ringed: bool,
    squared: bool,
) -> Option<()> {
    keys.extend(extra);
    let mut y = legend(root, &keys)?;
    if ringed {
        untrusted_key(root, y)?;
        y += 48;
    }
    if squared {
        caches_key(root, y)?;
    }
    Some(())
}

fn peak_of(records: &[Record]) -> Option<f64> {
    records.iter().filter_map(|r| r.peak_gb_s).reduce(f64::max)
}

/// Bandwidth vs threads; `None` when the records have one thread count.
pub fn threads_plot(records: &[Record], kernel: KernelId) -> Option<String> {
    let records: Vec<Record> = records
        .iter()
        .filter(|r| r.point.numa.is_none())
        .cloned()
        .collect();
    let counts: std::collections::BTreeSet<usize> =
        records.iter().map(|r| r.point.threads).collect();
    if counts.len() < 2 {
        return None;
    }
    let series = collect_series(&records, kernel, |r| r.point.threads as f64, true);
    let x_max = *counts.last()? as f64 + 0.5;
    let top = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1 + q.2))
        .fold(0.0, f64::max)
        .max(0.1);
    // The axis fits the data; the peak is a line only within reach of it,
    // else a note, so that curves far below it keep their shape.
    let (peak, y_max) = match peak_of(&records) {
        Some(p) if p * 1.05 <= top * 1.5 => (Some((p, true)), (top * 1.15).max(p * 1.05)),
        Some(p) => (Some((p, false)), top * 1.15),
        None => (None, top * 1.15),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let title = format!(
            "{} bandwidth vs threads",
            kernel.spec().label.trim_end_matches(':')
        );
        let mut chart =
            counted_x_chart(&root, &title, ("threads", RATE_WITH_CI), x_max, y_max, true)?;
        draw_series(&mut chart, &series)?;
        match peak {
            Some((p, true)) => {
                chart
                    .draw_series(LineSeries::new(
                        [(0.5, p), (x_max, p)],
                        BLACK.stroke_width(1),
                    ))
                    .ok()?
                    .label(format!("theoretical peak {p:.1} GB/s"))
                    .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));
            }
            Some((p, false)) => {
                // The best point as the table's verdict names it, not the
                // top of an error bar.
                let best = match crate::report::study::StudyConclusion::find(&records, kernel) {
                    Some(v) => format!(
                        " (the best point is {:.1} % of it)",
                        v.best
                            .percent_of_peak(kernel)
                            .unwrap_or(100.0 * v.mean() / p)
                    ),
                    None => String::new(),
                };
                chart
                    .draw_series([Text::new(
                        format!("theoretical peak {p:.1} GB/s, above the scale{best}"),
                        (0.55, y_max * 0.97),
                        ("sans-serif", 14).into_font(),
                    )])
                    .ok()?;
            }
            None => {}
        }
        let ringed = untrusted_points(&records, kernel, |r| r.point.threads as f64);
        mark_untrusted(&mut chart, &ringed)?;
        let squared = cache_points(&records, kernel, |r| r.point.threads as f64);
        mark_in_caches(&mut chart, &squared)?;
        let peak_key = match peak {
            Some((p, true)) => Some((format!("theoretical peak {p:.1} GB/s"), BLACK.to_rgba())),
            _ => None,
        };
        let keys = entries(&series);
        full_legend(
            &root,
            keys,
            peak_key,
            !ringed.is_empty(),
            !squared.is_empty(),
        )?;
        root.present().ok()?;
    }
    Some(svg)
}

/// Bandwidth vs working set per thread; `None` without a size axis.
pub fn sizes_plot(records: &[Record], kernel: KernelId) -> Option<String> {
    // Programs size their own arrays (0 here): no place on a size axis.
    let records: Vec<Record> = records
        .iter()
        .filter(|r| r.point.numa.is_none() && r.point.working_set_per_thread > 0)
        .cloned()
        .collect();
    let sizes: std::collections::BTreeSet<u64> = records
        .iter()
        .map(|r| r.point.working_set_per_thread)
        .collect();
    if sizes.len() < 3 {
        return None;
    }
    // x is log2(bytes) on a linear axis, so ticks fall on powers of two.
    let series = collect_series(
        &records,
        kernel,
        |r| (r.point.working_set_per_thread as f64).log2(),
        false,
    );
    let (lo, hi) = (
        (*sizes.first()? as f64).log2() - 0.5,
        (*sizes.last()? as f64).log2() + 0.5,
    );
    let y_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1 + q.2))
        .fold(1.0, f64::max)
        * 1.15;
    let caches = records
        .first()
        .map(|r| r.cache_per_thread.clone())
        .unwrap_or_default();
    let ringed = untrusted_points(&records, kernel, |r| {
        (r.point.working_set_per_thread as f64).log2()
    });
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let mut chart = size_axis_chart(
            &root,
            &format!(
                "{} bandwidth vs working set per thread",
                kernel.spec().label.trim_end_matches(':')
            ),
            (
                "working set per thread (all arrays), log scale",
                RATE_WITH_CI,
            ),
            &series,
            &caches,
            (lo, hi, YAxis::Linear(y_max)),
            true,
        )?;
        mark_untrusted(&mut chart, &ringed)?;
        let squared = cache_points(&records, kernel, |r| {
            (r.point.working_set_per_thread as f64).log2()
        });
        mark_in_caches(&mut chart, &squared)?;
        full_legend(
            &root,
            entries(&series),
            None,
            !ringed.is_empty(),
            !squared.is_empty(),
        )?;
        root.present().ok()?;
    }
    Some(svg)
}

/// The NUMA matrix (CPU node rows × memory node columns) as heat maps, one
/// per mode (1 thread, all cores) present in the records.
pub fn numa_plots(records: &[Record], kernel: KernelId) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for all_cores in [false, true] {
        let cells: Vec<(usize, usize, f64)> = records
            .iter()
            .filter_map(|r| {
                let n = r.point.numa?;
                (n.all_cores == all_cores).then_some((
                    n.cpu_node,
                    n.mem_node,
                    r.kernel_trust(kernel).shown()?.mean,
                ))
            })
            .collect();
        if cells.is_empty() {
            continue;
        }
        let untrusted: Vec<(usize, usize)> = records
            .iter()
            .filter(|r| r.kernel_trust(kernel).none())
            .filter_map(|r| r.point.numa.filter(|n| n.all_cores == all_cores))
            .map(|n| (n.cpu_node, n.mem_node))
            .collect();
        let title = format!(
            "{} GB/s, CPU node × memory node, {}",
            kernel.spec().label.trim_end_matches(':'),
            if all_cores {
                "all cores of the CPU node"
            } else {
                "one thread"
            }
        );
        if let Some(svg) = heat_map(
            &cells,
            &title,
            ("CPU node", "memory node"),
            "GB/s",
            &untrusted,
        ) {
            out.push((title, svg));
        }
    }
    out
}

/// Bandwidth vs the share of pages on the far node, one line per kernel
/// (the tier study); `None` without one.
pub fn far_share_plot(records: &[Record]) -> Option<String> {
    let (near, far, kernels) = crate::report::far::study(records)?;
    let series: Vec<PlotSeries> = kernels
        .iter()
        .map(|k| {
            let points = k.by_share.iter().map(|&(x, y)| (x, y, 0.0)).collect();
            (k.kernel.spec().name.to_string(), points)
        })
        .collect();
    let x_max = kernels
        .iter()
        .flat_map(|k| k.by_share.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let y_max = kernels.iter().map(|k| k.best_gb_s).fold(1.0, f64::max) * 1.15;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let title = format!("bandwidth vs share of pages on node {far} (near: node {near})");
        let tick = |x: &f64| format!("{x:.0} %");
        let mut chart = framed_chart(
            &root,
            &title,
            (-1.0..x_max + 1.0, 0.0..y_max),
            (&format!("pages on far node {far}"), "GB/s (10^9 B/s)"),
            Some((11, &tick)),
            None,
            true,
        )?;
        draw_series(&mut chart, &series)?;
        legend(&root, &entries(&series))?;
        root.present().ok()?;
    }
    Some(svg)
}
