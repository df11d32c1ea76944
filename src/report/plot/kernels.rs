//! Every kernel of a results file in one figure: small multiples (one
//! panel per kernel, each with its own y-axis, the series and their
//! colours shared, one legend) over threads or working set, and where the
//! study varies neither (a sweep over store modes, placements or policies
//! at one point), grouped bars: the kernels side by side, one bar per
//! configuration.

use super::bandwidth::{Varies, cache_points, collect_series, full_legend, untrusted_points};
use super::*;
use crate::kernels::KernelId;
use crate::results::Record;
use std::collections::BTreeSet;

/// A panel's height; the figure is as tall as its rows need.
const PANEL_HEIGHT: u32 = 300;
/// Room for the figure's title above the panels.
const TITLE_ROOM: u32 = 44;

/// The kernels measured in `records`, in the table's order.
fn kernels_of(records: &[Record]) -> Vec<KernelId> {
    let all: BTreeSet<KernelId> = records
        .iter()
        .flat_map(|r| r.stats.keys().copied())
        .collect();
    all.into_iter().collect()
}

/// What the panels' x-axis is.
#[derive(Clone, Copy)]
enum PlotAxis {
    Threads(f64),
    /// log2 of the working set per thread, from..to.
    Sizes(f64, f64),
}

/// The records the per-kernel curves are drawn from (the NUMA matrix and
/// programs that size their own arrays aside) and their x-axis.
fn axis(records: &[Record]) -> Option<(Vec<Record>, PlotAxis)> {
    let flat: Vec<Record> = records
        .iter()
        .filter(|r| r.point.numa.is_none())
        .cloned()
        .collect();
    let threads: BTreeSet<usize> = flat.iter().map(|r| r.point.threads).collect();
    if threads.len() >= 2 {
        let x_max = *threads.last()? as f64 + 0.5;
        return Some((flat, PlotAxis::Threads(x_max)));
    }
    let sized: Vec<Record> = flat
        .into_iter()
        .filter(|r| r.point.working_set_per_thread > 0)
        .collect();
    let sizes: BTreeSet<u64> = sized
        .iter()
        .map(|r| r.point.working_set_per_thread)
        .collect();
    if sizes.len() >= 3 {
        let lo = (*sizes.first()? as f64).log2() - 0.5;
        let hi = (*sizes.last()? as f64).log2() + 0.5;
        return Some((sized, PlotAxis::Sizes(lo, hi)));
    }
    None
}

fn x_of(axis: PlotAxis) -> impl Fn(&Record) -> f64 {
    move |r: &Record| match axis {
        PlotAxis::Threads(_) => r.point.threads as f64,
        PlotAxis::Sizes(..) => (r.point.working_set_per_thread as f64).log2(),
    }
}

/// All kernels vs threads (or vs working set), one panel each; `None`
/// with one kernel (its own plot says it all) or without such an axis.
pub fn kernels_plot(records: &[Record]) -> Option<String> {
    let kernels = kernels_of(records);
    if kernels.len() < 2 {
        return None;
    }
    let (records, axis) = axis(records)?;
    let cols = if kernels.len() <= 4 { 2 } else { 3 };
    let rows = kernels.len().div_ceil(cols);
    let size = (SIZE.0, TITLE_ROOM + PANEL_HEIGHT * rows as u32);
    let caches = records
        .first()
        .map(|r| r.cache_per_thread.clone())
        .unwrap_or_default();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let (panels, _) = root.split_horizontally(SIZE.0 - LEGEND_ROOM);
        let title = match axis {
            PlotAxis::Threads(_) => "every kernel: bandwidth (GB/s) vs threads",
            PlotAxis::Sizes(..) => "every kernel: bandwidth (GB/s) vs working set per thread",
        };
        let panels = panels.titled(title, TITLE_FONT).ok()?;
        let mut keys = Vec::new();
        let (mut ringed_any, mut squared_any) = (false, false);
        for (panel, &kernel) in panels.split_evenly((rows, cols)).iter().zip(&kernels) {
            let series = collect_series(&records, kernel, x_of(axis), true);
            if keys.is_empty() {
                keys = entries(&series);
            }
            let top = series
                .iter()
                .flat_map(|(_, p)| p.iter().map(|q| q.1 + q.2))
                .fold(0.0, f64::max)
                .max(0.1);
            let name = kernel.spec().name;
            let mut chart = match axis {
                PlotAxis::Threads(x_max) => {
                    let mut chart = counted_x_chart(
                        panel,
                        name,
                        ("threads", RATE_WITH_CI),
                        x_max,
                        top * 1.15,
                        false,
                    )?;
                    draw_series(&mut chart, &series)?;
                    chart
                }
                PlotAxis::Sizes(lo, hi) => size_axis_chart(
                    panel,
                    name,
                    ("working set per thread", RATE_WITH_CI),
                    &series,
                    &caches,
                    (lo, hi, YAxis::Linear(top * 1.15)),
                    false,
                )?,
            };
            let ringed = untrusted_points(&records, kernel, x_of(axis));
            ringed_any |= !ringed.is_empty();
            mark_untrusted(&mut chart, &ringed)?;
            let squared = cache_points(&records, kernel, x_of(axis));
            squared_any |= !squared.is_empty();
            mark_in_caches(&mut chart, &squared)?;
        }
        full_legend(&root, keys, None, ringed_any, squared_any)?;
        root.present().ok()?;
    }
    Some(svg)
}

/// A bar: (kernel slot, configuration, mean, half-width, untrusted, in
/// the caches).
type Bar = (usize, usize, f64, f64, bool, bool);

/// The configurations (what varies, one label each, in the order met) and
/// a bar per configuration and kernel.
fn bars_of(flat: &[Record], kernels: &[KernelId]) -> Option<(Vec<String>, Vec<Bar>)> {
    let varies = Varies::of(flat);
    let mut labels: Vec<String> = Vec::new();
    for r in flat {
        let label = varies.label(r, true);
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    let mut bars: Vec<Bar> = Vec::new();
    for r in flat {
        let c = labels.iter().position(|l| *l == varies.label(r, true))?;
        for (k, kernel) in kernels.iter().enumerate() {
            let trust = r.kernel_trust(*kernel);
            if let Some(s) = trust.shown() {
                let half = s.interval().map_or(0.0, |i| i.half_width());
                bars.push((k, c, s.mean, half, trust.none(), r.in_caches()));
            }
        }
    }
    Some((labels, bars))
}

/// The kernels side by side, one bar per configuration (what varies among
/// the points: store mode, placement, policy), each bar with its 95 %
/// interval; `None` where the records have a threads or size axis (the
/// curves show them) or nothing to draw.
pub fn kernels_bars(records: &[Record]) -> Option<String> {
    let flat: Vec<Record> = records
        .iter()
        .filter(|r| r.point.numa.is_none())
        .cloned()
        .collect();
    if flat.is_empty() || axis(&flat).is_some() {
        return None;
    }
    let kernels = kernels_of(&flat);
    let (labels, bars) = bars_of(&flat, &kernels)?;
    let top = bars.iter().map(|b| b.2 + b.3).fold(0.0, f64::max).max(0.1);
    let y_max = top * 1.15;
    let width = 0.8 / labels.len() as f64;
    let bar_x = |k: usize, c: usize| k as f64 - 0.4 + width * (c as f64 + 0.5);
    let names: Vec<&str> = kernels.iter().map(|k| k.spec().name).collect();
    let tick = move |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            names
                .get(i as usize)
                .map_or(String::new(), |n| n.to_string())
        } else {
            String::new()
        }
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let mut chart = framed_chart(
            &root,
            "every kernel, by configuration",
            (-0.5..kernels.len() as f64 - 0.5, 0.0..y_max),
            ("kernel", RATE_WITH_CI),
            Some((kernels.len(), &tick)),
            None,
            true,
        )?;
        for &(k, c, mean, half, ..) in &bars {
            let x = bar_x(k, c);
            let fill = color(c);
            chart
                .draw_series([Rectangle::new(
                    [(x - width * 0.45, 0.0), (x + width * 0.45, mean)],
                    fill.filled(),
                )])
                .ok()?;
            if half > 0.0 {
                chart
                    .draw_series([ErrorBar::new_vertical(
                        x,
                        mean - half,
                        mean,
                        mean + half,
                        BLACK.filled(),
                        6,
                    )])
                    .ok()?;
            }
        }
        let ringed: Vec<(f64, f64)> = bars
            .iter()
            .filter(|b| b.4)
            .map(|&(k, c, mean, ..)| (bar_x(k, c), mean))
            .collect();
        mark_untrusted(&mut chart, &ringed)?;
        let squared: Vec<(f64, f64)> = bars
            .iter()
            .filter(|b| b.5)
            .map(|&(k, c, mean, ..)| (bar_x(k, c), mean))
            .collect();
        mark_in_caches(&mut chart, &squared)?;
        let keys = labels
            .iter()
            .enumerate()
            .map(|(i, l)| (l.clone(), color(i)))
            .collect();
        full_legend(&root, keys, None, !ringed.is_empty(), !squared.is_empty())?;
        root.present().ok()?;
    }
    Some(svg)
}
