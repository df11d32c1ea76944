//! Latency plots: latency vs working set (cache capacities marked), the
//! loaded bandwidth-latency curve, and the CPU node × memory node matrix.

use super::*;
use std::collections::BTreeMap;

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
    // Latency by working set spans L1's ~1 ns to DRAM's ~100: read on a
    // log scale, or the caches' steps flatten onto zero.
    let values = || {
        series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.1.max(0.01)))
    };
    let y_lo = values().fold(f64::INFINITY, f64::min).log10().floor();
    let y_hi = values().fold(0.0, f64::max).log10() + 0.15;
    let series: Vec<PlotSeries> = series
        .iter()
        .map(|(l, p)| {
            let pts = p
                .iter()
                .map(|&(b, ns)| ((b as f64).log2(), ns.max(0.01).log10(), 0.0))
                .collect();
            (l.clone(), pts)
        })
        .collect();
    size_axis_plot(
        "Latency vs working set (dependent loads, random cycle)",
        "working set, log scale",
        "ns per load (p50), log scale",
        &series,
        caches,
        (lo, hi, YAxis::Log10(y_lo, y_hi.max(y_lo + 1.0))),
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
    let series: Vec<PlotSeries> = curves
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
            None,
            true,
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
        legend(&root, &entries(&series))?;
        root.present().ok()?;
    }
    Some(svg)
}

/// The latency matrix (CPU node rows × memory node columns, p50 ns).
pub fn latency_matrix_plot(cells: &[(usize, usize, f64)]) -> Option<String> {
    heat_map(
        cells,
        "Latency ns per load (p50), CPU node × memory node",
        ("CPU node", "memory node"),
        "ns",
        &[],
    )
}

/// The core-to-core matrix of one case, CPU × CPU (both halves).
pub fn c2c_plot(
    cells: &[(usize, usize, f64)],
    line: crate::latency::record::C2cLine,
) -> Option<String> {
    let title = match line {
        crate::latency::record::C2cLine::Modified => {
            "Core-to-core latency ns per hop (p50), modified line (HITM)"
        }
        crate::latency::record::C2cLine::Clean => {
            "Core-to-core latency ns per load (p50), clean line (HIT)"
        }
    };
    heat_map(cells, title, ("CPU", "CPU"), "ns", &[])
}
