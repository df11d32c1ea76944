//! Heat maps (the NUMA matrices): one coloured cell per pair of nodes,
//! with its value and a colour scale.

use super::*;

/// The heat map's colour for a share of the largest value: one hue from
/// pale (low) to dark (high), so lightness alone carries the value, which
/// colour-blind readers and grey-scale prints see too.
pub(super) fn heat(t: f64) -> HSLColor {
    let t = t.clamp(0.0, 1.0);
    HSLColor(0.58, 0.65, 0.93 - 0.58 * t)
}

/// Drawn in pixels rather than on a chart: cells, numbers and node labels
/// stay centered whatever the matrix size (one node included).
/// A heat map's colour scale at `scale_x`, from `grid_bottom` (0) up to `top` (the
/// largest cell, `max`).
fn heat_scale(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    (scale_x, top, grid_bottom): (i32, i32, i32),
    max: f64,
    unit: &str,
) -> Option<()> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
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
        TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(HPos::Left, VPos::Center))
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
    Some(())
}

/// Rows and columns past which cells shrink and carry no number (the
/// colour and the table say it): a 128-CPU matrix stays a page wide.
const NUMBERED: usize = 32;

/// Where the heat map's cells lie: their node numbers, the cell's side,
/// the grid's top-left corner, and one label in every `every`.
struct HeatGrid<'a> {
    rows: &'a [usize],
    cols: &'a [usize],
    cell: i32,
    left: i32,
    top: i32,
    every: usize,
}

/// The node numbers along both sides of the grid and the axes' names.
fn heat_axes(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    g: &HeatGrid,
    (row_axis, col_axis): (&str, &str),
) -> Option<()> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let centered = |size: u32| {
        TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(HPos::Center, VPos::Center))
    };
    let grid_bottom = g.top + g.cell * g.rows.len() as i32;
    for (i, n) in g.cols.iter().enumerate().step_by(g.every) {
        let x = g.left + g.cell * i as i32 + g.cell / 2;
        root.draw(&Text::new(
            n.to_string(),
            (x, grid_bottom + 14),
            centered(13),
        ))
        .ok()?;
    }
    for (i, n) in g.rows.iter().enumerate().step_by(g.every) {
        let y = g.top + g.cell * i as i32 + g.cell / 2;
        root.draw(&Text::new(n.to_string(), (g.left - 14, y), centered(13)))
            .ok()?;
    }
    root.draw(&Text::new(
        col_axis.to_string(),
        (g.left + g.cell * g.cols.len() as i32 / 2, grid_bottom + 40),
        centered(14),
    ))
    .ok()?;
    root.draw(&Text::new(
        row_axis.to_string(),
        (g.left - 50, g.top + g.cell * g.rows.len() as i32 / 2),
        centered(14),
    ))
    .ok()?;
    Some(())
}

/// `axes`: what the rows and the columns are (`CPU node`, `memory node`);
/// `untrusted`: cells measured beside other work, outlined in red with a
/// `?` after their number, and said so under the title.
pub(crate) fn heat_map(
    cells: &[(usize, usize, f64)],
    title: &str,
    (row_axis, col_axis): (&str, &str),
    unit: &str,
    untrusted: &[(usize, usize)],
) -> Option<String> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let rows: std::collections::BTreeSet<usize> = cells.iter().map(|c| c.0).collect();
    let cols: std::collections::BTreeSet<usize> = cells.iter().map(|c| c.1).collect();
    let (rows, cols): (Vec<usize>, Vec<usize>) =
        (rows.into_iter().collect(), cols.into_iter().collect());
    let max = cells.iter().map(|c| c.2).fold(f64::MIN_POSITIVE, f64::max);
    let side = rows.len().max(cols.len());
    let numbered = side <= NUMBERED;
    let cell: i32 = match side {
        0..=8 => 72,
        9..=NUMBERED => 48,
        _ => (1600 / side as i32).clamp(6, 24),
    };
    // Past NUMBERED, every label would overlap: one in every `every`.
    let every = if numbered { 1 } else { side.div_ceil(16) };
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
        let title = match untrusted.is_empty() {
            true => title.to_string(),
            false => format!("{title} · red, ?: NOT TRUSTED"),
        };
        root.draw(&Text::new(title, (width / 2, 22), centered(16)))
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
            let doubted = untrusted.contains(&(r, c));
            root.draw(&Rectangle::new(
                [(x, y), (x + cell, y + cell)],
                match doubted {
                    true => RED.stroke_width(3),
                    false => WHITE.stroke_width(1),
                },
            ))
            .ok()?;
            if !numbered {
                continue;
            }
            // White numbers on the dark cells.
            let ink = if v / max > 0.6 { WHITE } else { BLACK };
            let mark = if doubted { "?" } else { "" };
            root.draw(&Text::new(
                format!("{v:.1}{mark}"),
                (x + cell / 2, y + cell / 2),
                centered(14).color(&ink),
            ))
            .ok()?;
        }
        let grid_bottom = top + cell * rows.len() as i32;
        heat_scale(&root, (scale_x, top, grid_bottom), max, unit)?;
        let grid = HeatGrid {
            rows: &rows,
            cols: &cols,
            cell,
            left,
            top,
            every,
        };
        heat_axes(&root, &grid, (row_axis, col_axis))?;
        root.present().ok()?;
    }
    Some(svg)
}
