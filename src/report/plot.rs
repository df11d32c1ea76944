//! SVG plots of experiment records (plotters, SVG backend: no fonts needed).
//!
//! - bandwidth vs threads: one line per placement / memory policy / store
//!   mode, error bars of ± one standard deviation over repeats, and the
//!   theoretical peak as a horizontal line;
//! - bandwidth vs working-set size per thread, log scale, with the cache
//!   capacities per thread marked;
//! - the NUMA matrix as a heat map with the numbers written in.
//!
//! Each data series is exactly one `stroke-width="2"` polyline; axes, grid,
//! legend marks and the peak line are thinner (tests rely on that).

use crate::kernels::KernelId;
use crate::results::Record;
use crate::units::Bytes;
use plotters::prelude::*;
use std::collections::BTreeMap;

const SIZE: (u32, u32) = (900, 540);
/// Text large enough to read on a slide.
const TITLE_FONT: (&str, u32) = ("sans-serif", 26);
const AXIS_FONT: (&str, u32) = ("sans-serif", 18);
const TICK_FONT: (&str, u32) = ("sans-serif", 15);
const MINOR_GRID: RGBColor = RGBColor(242, 242, 242);
const MAJOR_GRID: RGBColor = RGBColor(210, 210, 210);

/// Okabe and Ito's colour-blind-safe palette, without its pale yellow
/// (black is kept for the peak line).
const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
];

/// A series: its label and (x, mean, sd) points sorted by x.
type Series = (String, Vec<(f64, f64, f64)>);

/// Which parts of a point vary across the records: computed once, so that
/// labelling is linear in the number of records.
struct Varies {
    program: bool,
    placement: bool,
    mem: bool,
    stores: bool,
    threads: bool,
}

impl Varies {
    fn of(records: &[Record]) -> Varies {
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
            program: records.iter().any(|r| r.point.program != p.program),
            placement: records.iter().any(|r| r.point.placement != p.placement),
            mem: records.iter().any(|r| r.point.mem != p.mem),
            stores: records.iter().any(|r| r.point.stores != p.stores),
            threads: records.iter().any(|r| r.point.threads != p.threads),
        }
    }

    /// A series label naming only what varies.
    fn label(&self, r: &Record, with_threads: bool) -> String {
        let mut parts = Vec::new();
        if self.program {
            parts.push(r.point.program.clone().unwrap_or_else(|| "membw".into()));
        }
        if self.placement || !with_threads {
            parts.push(r.point.placement.clone());
        }
        if self.mem {
            parts.push(format!("mem {}", r.point.mem));
        }
        if self.stores {
            parts.push(format!("{} stores", r.point.stores));
        }
        if !with_threads && self.threads {
            parts.push(format!("{} threads", r.point.threads));
        }
        if parts.is_empty() {
            parts.push(r.point.placement.clone());
        }
        parts.join(" · ")
    }
}

fn collect_series(
    records: &[Record],
    kernel: KernelId,
    x: impl Fn(&Record) -> f64,
    with_threads: bool,
) -> Vec<Series> {
    let varies = Varies::of(records);
    let mut map: BTreeMap<String, Vec<(f64, f64, f64)>> = BTreeMap::new();
    for r in records {
        if let Some(s) = r.stats.get(&kernel) {
            map.entry(varies.label(r, with_threads))
                .or_default()
                .push((x(r), s.mean, s.sd));
        }
    }
    map.into_iter()
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            (k, v)
        })
        .collect()
}

fn peak_of(records: &[Record]) -> Option<f64> {
    records.iter().filter_map(|r| r.peak_gb_s).reduce(f64::max)
}

fn color(i: usize) -> RGBAColor {
    PALETTE[i % PALETTE.len()].to_rgba()
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
    let peak = peak_of(&records);
    let x_max = *counts.last()? as f64 + 0.5;
    let y_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1 + q.2))
        .chain(peak)
        .fold(1.0, f64::max)
        * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let title = format!(
            "{} bandwidth vs threads",
            kernel.spec().label.trim_end_matches(':')
        );
        let mut chart = counted_x_chart(&root, &title, "threads", x_max, y_max)?;
        draw_series(&mut chart, &series)?;
        if let Some(p) = peak {
            chart
                .draw_series(LineSeries::new(
                    [(0.5, p), (x_max, p)],
                    BLACK.stroke_width(1),
                ))
                .ok()?
                .label(format!("theoretical peak {p:.1} GB/s"))
                .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));
        }
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .ok()?;
        root.present().ok()?;
    }
    Some(svg)
}

/// Labels only whole-number ticks (thread counts, powers of two).
type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A white chart with membw's frame: the title, a count (threads, nodes)
/// from 1 to `x_max` on x with integer ticks, GB/s from 0 to `y_max` on y.
fn counted_x_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    x_max: f64,
    y_max: f64,
) -> Option<Chart<'a, 'b>> {
    framed_chart(
        root,
        title,
        (0.5..x_max, 0.0..y_max),
        (x_desc, "GB/s (10^9 B/s)"),
        Some(((x_max as usize + 1).min(33), &integer_tick)),
    )
}

/// Writes an x tick's label.
type TickFormat = dyn Fn(&f64) -> String;

/// A white chart with membw's frame: the title, fonts and grid, the axis
/// descriptions, and on x optionally a tick count and a tick formatter.
fn framed_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    (x, y): (std::ops::Range<f64>, std::ops::Range<f64>),
    (x_desc, y_desc): (&str, &str),
    x_ticks: Option<(usize, &TickFormat)>,
) -> Option<Chart<'a, 'b>> {
    root.fill(&WHITE).ok()?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, TITLE_FONT)
        .margin(12)
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
    mesh.draw().ok()?;
    Some(chart)
}

fn integer_tick(x: &f64) -> String {
    if (x - x.round()).abs() < 1e-6 {
        format!("{x:.0}")
    } else {
        String::new()
    }
}

/// Reference lines (cache capacities, idle latency) are grey.
const GREY: RGBColor = RGBColor(120, 120, 120);

/// A thin reference line (dashed or not) with its label.
fn marker<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
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

fn draw_series<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    series: &[Series],
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
    size_axis_plot(
        &format!(
            "{} bandwidth vs working set per thread",
            kernel.spec().label.trim_end_matches(':')
        ),
        "working set per thread (all arrays), log scale",
        "GB/s (10^9 B/s)",
        &series,
        &caches,
        (lo, hi, y_max),
        SeriesLabelPosition::UpperRight,
    )
}

/// A plot over working-set sizes: x is log2(bytes) on a linear axis, so
/// ticks fall on powers of two; the cache capacities are marked.
fn size_axis_plot(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    caches: &BTreeMap<String, u64>,
    (lo, hi, y_max): (f64, f64, f64),
    legend: SeriesLabelPosition,
) -> Option<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
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
        let mut chart = framed_chart(
            &root,
            title,
            (lo..hi, 0.0..y_max),
            (x_desc, y_desc),
            Some((((hi - lo) as usize + 1).min(40), &power_of_two)),
        )?;
        for (name, &bytes) in caches {
            let x = (bytes as f64).log2();
            if x > lo && x < hi {
                marker(
                    &mut chart,
                    [(x, 0.0), (x, y_max)],
                    false,
                    GREY,
                    format!("{name} {}", Bytes(bytes)),
                    (x + 0.08, y_max * 0.97),
                )?;
            }
        }
        draw_series(&mut chart, series)?;
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(legend)
            .draw()
            .ok()?;
        root.present().ok()?;
    }
    Some(svg)
}

/// Latency (p50 ns per load) vs working set, one line per CPU and memory
/// placement, with the chasing CPU's cache capacities marked: the steps
/// should sit at them. `None` with fewer than three sizes.
pub fn latency_sizes_plot(
    series: &[(String, Vec<(u64, f64)>)],
    caches: &BTreeMap<String, u64>,
) -> Option<String> {
    let sizes: std::collections::BTreeSet<u64> = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .collect();
    if sizes.len() < 3 {
        return None;
    }
    let (lo, hi) = (
        (*sizes.first()? as f64).log2() - 0.5,
        (*sizes.last()? as f64).log2() + 0.5,
    );
    let y_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(1.0, f64::max)
        * 1.15;
    let series: Vec<Series> = series
        .iter()
        .map(|(l, p)| {
            let pts = p
                .iter()
                .map(|&(b, ns)| ((b as f64).log2(), ns, 0.0))
                .collect();
            (l.clone(), pts)
        })
        .collect();
    size_axis_plot(
        "Latency vs working set (dependent loads, random cycle)",
        "working set, log scale",
        "ns per load (p50)",
        &series,
        caches,
        (lo, hi, y_max),
        SeriesLabelPosition::UpperLeft,
    )
}

/// Loaded latency: the load threads' bandwidth on x, the chaser's p50 on
/// y, one line per traffic mix; the idle latency as a dashed horizontal
/// line and the theoretical peak as a vertical one when known.
pub fn loaded_plot(
    curves: &[(String, Vec<(f64, f64)>)],
    idle_ns: Option<f64>,
    peak_gb_s: Option<f64>,
) -> Option<String> {
    let points = || curves.iter().flat_map(|(_, p)| p.iter());
    points().next()?;
    let x_max = points().map(|p| p.0).chain(peak_gb_s).fold(1.0, f64::max) * 1.08;
    let y_max = points().map(|p| p.1).chain(idle_ns).fold(1.0, f64::max) * 1.15;
    let series: Vec<Series> = curves
        .iter()
        .map(|(l, p)| {
            let mut pts: Vec<(f64, f64, f64)> = p.iter().map(|&(x, y)| (x, y, 0.0)).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (l.clone(), pts)
        })
        .collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let mut chart = framed_chart(
            &root,
            "Loaded latency: bandwidth vs latency per mix",
            (0.0..x_max, 0.0..y_max),
            (
                "load threads' bandwidth, GB/s (10^9 B/s)",
                "chaser's latency, ns per load (p50)",
            ),
            None,
        )?;
        if let Some(idle) = idle_ns {
            let at = (x_max * 0.01, idle * 0.96);
            marker(
                &mut chart,
                [(0.0, idle), (x_max, idle)],
                true,
                GREY,
                format!("idle {idle:.0} ns"),
                at,
            )?;
        }
        if let Some(peak) = peak_gb_s {
            let at = (peak * 0.8, y_max * 0.97);
            marker(
                &mut chart,
                [(peak, 0.0), (peak, y_max)],
                false,
                BLACK,
                format!("peak {peak:.0} GB/s"),
                at,
            )?;
        }
        draw_series(&mut chart, &series)?;
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .ok()?;
        root.present().ok()?;
    }
    Some(svg)
}

/// The latency matrix (CPU node rows × memory node columns, p50 ns).
pub fn latency_matrix_plot(cells: &[(usize, usize, f64)]) -> Option<String> {
    heat_map(
        cells,
        "Latency ns per load (p50), CPU node × memory node",
        "ns",
    )
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
                    r.stats.get(&kernel)?.mean,
                ))
            })
            .collect();
        if cells.is_empty() {
            continue;
        }
        let title = format!(
            "{} GB/s, CPU node × memory node, {}",
            kernel.spec().label.trim_end_matches(':'),
            if all_cores {
                "all cores of the CPU node"
            } else {
                "one thread"
            }
        );
        if let Some(svg) = heat_map(&cells, &title, "GB/s") {
            out.push((title, svg));
        }
    }
    out
}

/// The heat map's colour for a share of the largest value: one hue from
/// pale (low) to dark (high), so lightness alone carries the value, which
/// colour-blind readers and grey-scale prints see too.
fn heat(t: f64) -> HSLColor {
    let t = t.clamp(0.0, 1.0);
    HSLColor(0.58, 0.65, 0.93 - 0.58 * t)
}

/// Drawn in pixels rather than on a chart: cells, numbers and node labels
/// stay centered whatever the matrix size (one node included).
fn heat_map(cells: &[(usize, usize, f64)], title: &str, unit: &str) -> Option<String> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let rows: std::collections::BTreeSet<usize> = cells.iter().map(|c| c.0).collect();
    let cols: std::collections::BTreeSet<usize> = cells.iter().map(|c| c.1).collect();
    let (rows, cols): (Vec<usize>, Vec<usize>) =
        (rows.into_iter().collect(), cols.into_iter().collect());
    let max = cells.iter().map(|c| c.2).fold(f64::MIN_POSITIVE, f64::max);
    let cell: i32 = if rows.len().max(cols.len()) > 8 {
        48
    } else {
        72
    };
    let (left, top) = (90, 50);
    let scale_x = left + cell * cols.len() as i32 + 40;
    let width = (scale_x + 130).max(560);
    let height = top + cell * rows.len() as i32 + 70;
    let centered = |size: u32| {
        TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(HPos::Center, VPos::Center))
    };
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (width as u32, height as u32)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        root.draw(&Text::new(title.to_string(), (width / 2, 22), centered(16)))
            .ok()?;
        for &(r, c, v) in cells {
            let x = left + cell * cols.iter().position(|&n| n == c)? as i32;
            let y = top + cell * rows.iter().position(|&n| n == r)? as i32;
            let fill = heat(v / max);
            root.draw(&Rectangle::new(
                [(x, y), (x + cell, y + cell)],
                fill.filled(),
            ))
            .ok()?;
            root.draw(&Rectangle::new(
                [(x, y), (x + cell, y + cell)],
                WHITE.stroke_width(1),
            ))
            .ok()?;
            // White numbers on the dark cells.
            let ink = if v / max > 0.6 { WHITE } else { BLACK };
            root.draw(&Text::new(
                format!("{v:.1}"),
                (x + cell / 2, y + cell / 2),
                centered(14).color(&ink),
            ))
            .ok()?;
        }
        for (i, n) in cols.iter().enumerate() {
            let x = left + cell * i as i32 + cell / 2;
            root.draw(&Text::new(
                n.to_string(),
                (x, top + cell * rows.len() as i32 + 14),
                centered(13),
            ))
            .ok()?;
        }
        for (i, n) in rows.iter().enumerate() {
            let y = top + cell * i as i32 + cell / 2;
            root.draw(&Text::new(n.to_string(), (left - 14, y), centered(13)))
                .ok()?;
        }
        let grid_bottom = top + cell * rows.len() as i32;
        // The colour scale: 0 at the bottom, the largest cell at the top.
        let steps = 32;
        let bar_height = (grid_bottom - top).max(steps);
        for k in 0..steps {
            let y0 = grid_bottom - bar_height * (k + 1) / steps;
            let y1 = grid_bottom - bar_height * k / steps;
            let t = (k as f64 + 0.5) / steps as f64;
            root.draw(&Rectangle::new(
                [(scale_x, y0), (scale_x + 18, y1)],
                heat(t).filled(),
            ))
            .ok()?;
        }
        let left_text = |size: u32| {
            TextStyle::from(("sans-serif", size).into_font())
                .pos(Pos::new(HPos::Left, VPos::Center))
        };
        root.draw(&Text::new(
            format!("{max:.1} {unit}"),
            (scale_x + 24, grid_bottom - bar_height),
            left_text(13),
        ))
        .ok()?;
        root.draw(&Text::new(
            format!("0 {unit}"),
            (scale_x + 24, grid_bottom),
            left_text(13),
        ))
        .ok()?;
        root.draw(&Text::new(
            "memory node",
            (left + cell * cols.len() as i32 / 2, grid_bottom + 40),
            centered(14),
        ))
        .ok()?;
        root.draw(&Text::new(
            "CPU node",
            (left - 50, top + cell * rows.len() as i32 / 2),
            centered(14),
        ))
        .ok()?;
        root.present().ok()?;
    }
    Some(svg)
}

/// One bar per node, slow nodes in the warning colour, the median and the
/// outlier threshold as lines: the picture an admin scans for a bad node.
pub fn nodes_plot(ranks: &crate::ranks::Ranks) -> Option<String> {
    let nodes = &ranks.nodes;
    if nodes.is_empty() {
        return None;
    }
    let median = nodes
        .iter()
        .find(|n| n.of_median > 0.0)
        .map_or(0.0, |n| n.gb_s / n.of_median);
    let y_max = nodes.iter().map(|n| n.gb_s).fold(median, f64::max).max(1.0) * 1.15;
    let n = nodes.len();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{} bandwidth per node",
                    ranks.kernel.spec().label.trim_end_matches(':')
                ),
                TITLE_FONT,
            )
            .margin(12)
            .x_label_area_size(if n > 12 { 90 } else { 40 })
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n as f64, 0f64..y_max)
            .ok()?;
        let names: Vec<String> = nodes.iter().map(|n| n.host.clone()).collect();
        let label = move |x: &f64| {
            let i = x.floor() as usize;
            // Centre ticks only (x = i + 0.5).
            if (x - i as f64 - 0.5).abs() < 1e-6 {
                names.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .label_style(TICK_FONT)
            .axis_desc_style(AXIS_FONT)
            .light_line_style(MINOR_GRID)
            .bold_line_style(MAJOR_GRID)
            .disable_x_mesh()
            .x_desc("node")
            .y_desc("GB/s (10^9 B/s)")
            .x_labels(2 * n + 1)
            .x_label_formatter(&label)
            .draw()
            .ok()?;
        chart
            .draw_series(nodes.iter().enumerate().map(|(i, node)| {
                let fill = if node.slow { PALETTE[1] } else { PALETTE[0] };
                Rectangle::new(
                    [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, node.gb_s)],
                    fill.filled(),
                )
            }))
            .ok()?;
        for (value, style, text) in [
            (
                median,
                BLACK.stroke_width(1),
                format!("median node {median:.1} GB/s"),
            ),
            (
                median * ranks.outlier,
                PALETTE[1].stroke_width(1),
                format!("slow below {:.0} % of the median", 100.0 * ranks.outlier),
            ),
        ] {
            chart
                .draw_series(LineSeries::new([(0.0, value), (n as f64, value)], style))
                .ok()?
                .label(text)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        }
        chart
            .configure_series_labels()
            .label_font(TICK_FONT)
            .background_style(WHITE.mix(0.85))
            .border_style(MAJOR_GRID)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .ok()?;
        root.present().ok()?;
    }
    Some(svg)
}

/// The aggregate of MPI runs against their node count, one point per run.
pub fn aggregate_plot(points: &[(usize, f64)], kernel: KernelId) -> Option<String> {
    let counts: std::collections::BTreeSet<usize> = points.iter().map(|p| p.0).collect();
    if counts.len() < 2 {
        return None;
    }
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let x_max = *counts.last()? as f64 + 0.5;
    let y_max = sorted.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let title = format!(
            "{} aggregate vs nodes",
            kernel.spec().label.trim_end_matches(':')
        );
        let mut chart = counted_x_chart(&root, &title, "nodes", x_max, y_max)?;
        chart
            .draw_series(LineSeries::new(
                sorted.iter().map(|p| (p.0 as f64, p.1)),
                PALETTE[0].stroke_width(2),
            ))
            .ok()?;
        chart
            .draw_series(
                sorted
                    .iter()
                    .map(|p| Circle::new((p.0 as f64, p.1), 4, PALETTE[0].filled())),
            )
            .ok()?;
        root.present().ok()?;
    }
    Some(svg)
}
