//! SVG plots (plotters, SVG backend: no fonts needed): the chart
//! primitives every plot shares (size, fonts, palette, frame, markers,
//! series, the size axis, the heat map) here, and one module per domain:
//! [`bandwidth`] (threads, sizes, NUMA matrix), [`kernels`] (every kernel
//! in one figure), [`latency`] (sizes, loaded curve, matrix) and [`nodes`]
//! (per-node and per-node-count).
//!
//! Each data series is exactly one `stroke-width="2"` polyline; axes, grid,
//! legend marks and the peak line are thinner (tests rely on that).

pub mod bandwidth;
mod heat;
pub mod kernels;
pub mod latency_charts;
pub mod nodes;

pub use bandwidth::{numa_plots, sizes_plot, threads_plot};
pub use latency_charts::{c2c_plot, latency_matrix_plot, latency_sizes_plot, loaded_plot};
pub use nodes::{aggregate_plot, nodes_plot};

use crate::units::Bytes;
use heat::heat_map;
use plotters::prelude::*;
use std::collections::BTreeMap;

pub(super) const SIZE: (u32, u32) = (1000, 540);
/// Room right of the plotting area for the legend, which never covers data.
pub(super) const LEGEND_ROOM: u32 = 250;
/// Text large enough to read on a slide.
pub(super) const TITLE_FONT: (&str, u32) = ("sans-serif", 26);
pub(super) const AXIS_FONT: (&str, u32) = ("sans-serif", 18);
pub(super) const TICK_FONT: (&str, u32) = ("sans-serif", 15);
pub(super) const MINOR_GRID: RGBColor = RGBColor(242, 242, 242);
pub(super) const MAJOR_GRID: RGBColor = RGBColor(210, 210, 210);

/// Okabe and Ito's colour-blind-safe palette, without its pale yellow
/// (black is kept for the peak line).
pub(super) const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
];

/// A series: its label and (x, mean, sd) points sorted by x.
pub(super) type PlotSeries = (String, Vec<(f64, f64, f64)>);

pub(super) fn color(i: usize) -> RGBAColor {
    PALETTE[i % PALETTE.len()].to_rgba()
}

/// Labels only whole-number ticks (thread counts, powers of two).
pub(super) type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The y axis of a plot whose points are means with error bars: what the
/// bars are, on the plot itself.
pub(super) const RATE_WITH_CI: &str = "GB/s (10^9 B/s): mean, bars its 95 % CI";

/// A white chart with membw's frame: the title, a count (threads, nodes)
/// from 1 to `x_max` on x with integer ticks, GB/s (`y_desc`) from 0 to
/// `y_max` on y.
pub(super) fn counted_x_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    x_max: f64,
    y_max: f64,
    legend_room: bool,
) -> Option<Chart<'a, 'b>> {
    framed_chart(
        root,
        title,
        (0.5..x_max, 0.0..y_max),
        (x_desc, y_desc),
        Some(((x_max as usize + 1).min(33), &integer_tick)),
        None,
        legend_room,
    )
}

/// Writes an x tick's label.
pub(super) type TickFormat = dyn Fn(&f64) -> String;

/// A white chart with membw's frame: the title, fonts and grid, the axis
/// descriptions, and on x optionally a tick count and a tick formatter.
pub(super) fn framed_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    (x, y): (std::ops::Range<f64>, std::ops::Range<f64>),
    (x_desc, y_desc): (&str, &str),
    x_ticks: Option<(usize, &TickFormat)>,
    y_ticks: Option<(usize, &TickFormat)>,
    legend_room: bool,
) -> Option<Chart<'a, 'b>> {
    root.fill(&WHITE).ok()?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, TITLE_FONT)
        .margin(12)
        .margin_right(12 + if legend_room { LEGEND_ROOM } else { 0 })
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x, y)
        .ok()?;
    let mut mesh = chart.configure_mesh();
    mesh.label_style(TICK_FONT)
        .axis_desc_style(AXIS_FONT)
        .light_line_style(MINOR_GRID)
        .bold_line_style(MAJOR_GRID)
        .x_desc(x_desc)
        .y_desc(y_desc);
    if let Some((count, format)) = x_ticks {
        mesh.x_labels(count).x_label_formatter(format);
    }
    if let Some((count, format)) = y_ticks {
        mesh.y_labels(count).y_label_formatter(format);
    }
    mesh.draw().ok()?;
    Some(chart)
}

pub(super) fn integer_tick(x: &f64) -> String {
    if (x - x.round()).abs() < 1e-6 {
        format!("{x:.0}")
    } else {
        String::new()
    }
}

/// Reference lines (cache capacities, idle latency) are grey.
pub(super) const GREY: RGBColor = RGBColor(120, 120, 120);

/// A thin reference line (dashed or not) with its label.
pub(super) fn marker<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    line: [(f64, f64); 2],
    dashed: bool,
    color: RGBColor,
    label: String,
    at: (f64, f64),
) -> Option<()> {
    let style = color.stroke_width(1);
    if dashed {
        chart
            .draw_series(DashedLineSeries::new(line, 6, 4, style))
            .ok()?;
    } else {
        chart.draw_series(LineSeries::new(line, style)).ok()?;
    }
    chart
        .draw_series([Text::new(
            label,
            at,
            ("sans-serif", 13).into_font().color(&color),
        )])
        .ok()?;
    Some(())
}

pub(super) fn draw_series<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    series: &[PlotSeries],
) -> Option<()> {
    for (i, (label, points)) in series.iter().enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|p| (p.0, p.1)),
                c.stroke_width(2),
            ))
            .ok()?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c));
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&(x, m, sd)| ErrorBar::new_vertical(x, m - sd, m, m + sd, c.filled(), 6)),
            )
            .ok()?;
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&(x, m, _)| Circle::new((x, m), 3, c.filled())),
            )
            .ok()?;
    }
    Some(())
}

/// The legend every plot with series draws, right of the plotting area (in
/// the room `framed_chart` leaves) so that it never covers a point: a
/// square of each series' colour and its label, long labels broken at
/// their ` · ` separators.
/// Returns where the next entry would go.
pub(super) fn legend(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    entries: &[(String, RGBAColor)],
) -> Option<i32> {
    const WRAP: usize = 28;
    let x = (SIZE.0 - LEGEND_ROOM) as i32;
    let mut y = 60;
    for (label, c) in entries {
        root.draw(&Rectangle::new([(x, y - 6), (x + 12, y + 6)], c.filled()))
            .ok()?;
        let mut line = String::new();
        for part in label.split(" · ") {
            if !line.is_empty() && line.chars().count() + part.chars().count() + 3 > WRAP {
                root.draw(&Text::new(
                    line.clone(),
                    (x + 20, y - 8),
                    ("sans-serif", 15).into_font(),
                ))
                .ok()?;
                line.clear();
                y += 19;
            }
            if !line.is_empty() {
                line.push_str(" · ");
            }
            line.push_str(part);
        }
        root.draw(&Text::new(
            line,
            (x + 20, y - 8),
            ("sans-serif", 15).into_font(),
        ))
        .ok()?;
        y += 26;
    }
    Some(y)
}

/// The ring drawn around a point that is NOT TRUSTED for the plotted
/// kernel (no run of it trusted): the table beside the plot says why.
const RING: i32 = 8;

/// Rings the untrusted points (x, mean) on `chart`.
pub(super) fn mark_untrusted<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    points: &[(f64, f64)],
) -> Option<()> {
    chart
        .draw_series(
            points
                .iter()
                .map(|&p| Circle::new(p, RING, BLACK.stroke_width(1))),
        )
        .ok()?;
    Some(())
}

/// Squares around the points (x, mean) that measured the caches (STREAM's
/// rule): a cache rate must not read as the memory's.
pub(super) fn mark_in_caches<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    points: &[(f64, f64)],
) -> Option<()> {
    let half = RING;
    chart
        .draw_series(points.iter().map(|&p| {
            EmptyElement::at(p)
                + Rectangle::new([(-half, -half), (half, half)], BLACK.stroke_width(1))
        }))
        .ok()?;
    Some(())
}

/// The legend's key for the squares, at `y`.
pub(super) fn caches_key(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    y: i32,
) -> Option<()> {
    let x = (SIZE.0 - LEGEND_ROOM) as i32;
    root.draw(&Rectangle::new(
        [(x + 6 - RING, y - RING), (x + 6 + RING, y + RING)],
        BLACK.stroke_width(1),
    ))
    .ok()?;
    key_text(root, x, y, ["cache bandwidth: arrays", "within the caches"])
}

/// The legend's key for the rings, at `y` below the series' entries.
pub(super) fn untrusted_key(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    y: i32,
) -> Option<()> {
    let x = (SIZE.0 - LEGEND_ROOM) as i32;
    root.draw(&Circle::new((x + 6, y), RING, BLACK.stroke_width(1)))
        .ok()?;
    key_text(
        root,
        x,
        y,
        ["NOT TRUSTED: no run", "trusted (the table says why)"],
    )
}

/// A legend key's two lines of text, right of its mark at (`x`, `y`).
fn key_text(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    x: i32,
    y: i32,
    lines: [&str; 2],
) -> Option<()> {
    for (i, line) in lines.iter().enumerate() {
        root.draw(&Text::new(
            line.to_string(),
            (x + 20, y - 8 + 19 * i as i32),
            ("sans-serif", 15).into_font(),
        ))
        .ok()?;
    }
    Some(())
}

/// The legend entries of `series`, in their colours.
pub(super) fn entries(series: &[PlotSeries]) -> Vec<(String, RGBAColor)> {
    series
        .iter()
        .enumerate()
        .map(|(i, (label, _))| (label.clone(), color(i)))
        .collect()
}

/// A plot over working-set sizes: x is log2(bytes) on a linear axis, so
/// ticks fall on powers of two; the cache capacities are marked.
/// The value axis of a plot over working-set sizes.
#[derive(Debug, Clone, Copy)]
pub(super) enum YAxis {
    /// From 0 to the value.
    Linear(f64),
    /// Values given as log10, from the first to the second.
    Log10(f64, f64),
}

pub(super) fn size_axis_plot(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[PlotSeries],
    caches: &BTreeMap<String, u64>,
    axes: (f64, f64, YAxis),
) -> Option<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        size_axis_chart(&root, title, (x_desc, y_desc), series, caches, axes, true)?;
        self::legend(&root, &entries(series))?;
        root.present().ok()?;
    }
    Some(svg)
}

/// The chart of [`size_axis_plot`] drawn on `area` (a whole figure, or one
/// panel of the kernels' figure), its legend left to the caller.
pub(super) fn size_axis_chart<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    series: &[PlotSeries],
    caches: &BTreeMap<String, u64>,
    (lo, hi, y): (f64, f64, YAxis),
    legend_room: bool,
) -> Option<Chart<'a, 'b>> {
    let (y_lo, y_max) = match y {
        YAxis::Linear(max) => (0.0, max),
        YAxis::Log10(lo, hi) => (lo, hi),
    };
    // Past a dozen powers of two the labels would run into each other:
    // then every other one is written.
    let every = if hi - lo > 13.0 { 2 } else { 1 };
    let power_of_two = move |x: &f64| {
        if (x - x.round()).abs() < 1e-6 && (x.round() as i64).rem_euclid(every) == 0 {
            Bytes(2f64.powf(x.round()) as u64).to_string()
        } else {
            String::new()
        }
    };
    let log_y = matches!(y, YAxis::Log10(..));
    // On a log axis y holds log10 of the value: ticks at 1-2-5 steps.
    let decades = move |v: &f64| {
        let decade = 10f64.powf(v.floor());
        let lead = 10f64.powf(*v) / decade;
        match [1.0, 2.0, 5.0, 10.0]
            .iter()
            .find(|&&m| (lead - m).abs() < 0.03 * m)
        {
            Some(m) if log_y => crate::units::trim_float(m * decade),
            _ if log_y => String::new(),
            _ => format!("{v}"),
        }
    };
    let mut chart = framed_chart(
        area,
        title,
        (lo..hi, y_lo..y_max),
        (x_desc, y_desc),
        Some((((hi - lo) as usize + 1).min(40), &power_of_two)),
        log_y.then_some((((y_max - y_lo) * 30.0) as usize, &decades as &TickFormat)),
        legend_room,
    )?;
    for (name, &bytes) in caches {
        let x = (bytes as f64).log2();
        if x > lo && x < hi {
            marker(
                &mut chart,
                [(x, y_lo), (x, y_max)],
                false,
                GREY,
                format!("{name} {}", Bytes(bytes)),
                (x + 0.08, y_lo + (y_max - y_lo) * 0.97),
            )?;
        }
    }
    draw_series(&mut chart, series)?;
    Some(chart)
}

/// The plots of a bandwidth results file for one kernel: vs threads, vs
/// working set, and the NUMA matrices, each where the records vary so.
pub fn plots(
    records: &[crate::results::Record],
    kernel: crate::kernels::KernelId,
) -> Vec<crate::report::Plot> {
    let name = kernel.spec().name;
    let mut out = Vec::new();
    if let Some(svg) = bandwidth::threads_plot(records, kernel) {
        out.push(crate::report::Plot {
            title: format!("{name} bandwidth vs threads"),
            file: format!("{name}-threads.svg"),
            svg,
        });
    }
    if let Some(svg) = bandwidth::sizes_plot(records, kernel) {
        out.push(crate::report::Plot {
            title: format!("{name} bandwidth vs working set per thread"),
            file: format!("{name}-sizes.svg"),
            svg,
        });
    }
    if let Some(svg) = bandwidth::far_share_plot(records) {
        out.push(crate::report::Plot {
            title: "bandwidth vs far-memory share".into(),
            file: "far-share.svg".into(),
            svg,
        });
    }
    if let Some(svg) = kernels::kernels_plot(records) {
        out.push(crate::report::Plot {
            title: "every kernel, one panel each".into(),
            file: "kernels.svg".into(),
            svg,
        });
    }
    if let Some(svg) = kernels::kernels_bars(records) {
        out.push(crate::report::Plot {
            title: "every kernel, by configuration".into(),
            file: "kernels-bars.svg".into(),
            svg,
        });
    }
    for (i, (title, svg)) in bandwidth::numa_plots(records, kernel)
        .into_iter()
        .enumerate()
    {
        out.push(crate::report::Plot {
            title,
            file: format!("{name}-numa-{}.svg", if i == 0 { "a" } else { "b" }),
            svg,
        });
    }
    out
}
