//! Plots across nodes: each node's rate against the median (slow nodes
//! marked), and the aggregate against the number of nodes.

use super::*;
use crate::kernels::KernelId;

/// One bar per node, slow nodes in the warning colour, the median and the
/// outlier threshold as lines: the picture an admin scans for a bad node.
pub fn nodes_plot(ranks: &crate::results::ranks::Ranks) -> Option<String> {
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
            .margin_right(12 + LEGEND_ROOM)
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
        let mut keys = vec![
            ("node".to_string(), PALETTE[0].to_rgba()),
            ("slow node".to_string(), PALETTE[1].to_rgba()),
        ];
        for (value, color, text) in [
            (median, BLACK, format!("median node · {median:.1} GB/s")),
            (
                median * ranks.outlier,
                PALETTE[1],
                format!("slow below · {:.0} % of the median", 100.0 * ranks.outlier),
            ),
        ] {
            chart
                .draw_series(LineSeries::new(
                    [(0.0, value), (n as f64, value)],
                    color.stroke_width(1),
                ))
                .ok()?;
            keys.push((text, color.to_rgba()));
        }
        let ringed: Vec<(f64, f64)> = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.untrusted.is_some())
            .map(|(i, n)| (i as f64 + 0.5, n.gb_s))
            .collect();
        mark_untrusted(&mut chart, &ringed)?;
        // Right of the bars, never over one.
        let y = legend(&root, &keys)?;
        if !ringed.is_empty() {
            untrusted_key(&root, y)?;
        }
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
        let mut chart = counted_x_chart(
            &root,
            &title,
            ("nodes", "GB/s (10^9 B/s)"),
            x_max,
            y_max,
            false,
        )?;
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

/// A fleet's history: one line per node over time (days since the first
/// sample), the nodes flagged drawn with a cross at their latest point.
pub fn history_plot(fleet: &crate::health::history::Fleet, kernel: KernelId) -> Option<String> {
    let t0 = fleet
        .trends
        .iter()
        .flat_map(|t| t.samples.iter().map(|s| s.0))
        .fold(f64::INFINITY, f64::min);
    let days = |t: f64| (t - t0) / 86400.0;
    let x_max = fleet
        .trends
        .iter()
        .flat_map(|t| t.samples.iter().map(|s| days(s.0)))
        .fold(0.0, f64::max)
        .max(1.0);
    let y_max = fleet.trends.iter().map(|t| t.latest).fold(1.0, f64::max) * 1.2;
    let first = humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(t0.max(0.0)),
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let title = format!(
            "{} per node over time",
            kernel.spec().label.trim_end_matches(':')
        );
        let x_desc = format!("days since {first}");
        let mut chart = framed_chart(
            &root,
            &title,
            (0.0..x_max * 1.05, 0.0..y_max),
            (&x_desc, "GB/s (10^9 B/s)"),
            None,
            None,
            false,
        )?;
        let flagged = |t: &crate::health::history::Trend| t.far_from_fleet || t.slower_than_history;
        for (i, t) in fleet.trends.iter().enumerate() {
            let c = if flagged(t) {
                RED.to_rgba()
            } else {
                color(i).mix(0.5)
            };
            let points: Vec<(f64, f64)> = t.samples.iter().map(|s| (days(s.0), s.1)).collect();
            chart
                .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(1)))
                .ok()?;
            if flagged(t) {
                let &(x, y) = points.last()?;
                chart
                    .draw_series([Cross::new((x, y), 6, RED.stroke_width(2))])
                    .ok()?;
                chart
                    .draw_series([Text::new(
                        t.host.clone(),
                        (x, y),
                        ("sans-serif", 13).into_font().color(&RED),
                    )])
                    .ok()?;
            }
        }
        root.present().ok()?;
    }
    Some(svg)
}
