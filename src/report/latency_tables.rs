//! Latency records for people: one table per study (latency vs working
//! set, the NUMA matrix, bandwidth-latency curves), their plots, and the
//! comparison of two files.

use crate::latency::load::Mix;
use crate::latency::record::{LatencyExperiment, LatencyRecord};
use crate::units::Bytes;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Everything the records hold, as tables.
pub fn render(records: &[LatencyRecord]) -> String {
    let mut o = String::new();
    let of = |study: LatencyExperiment| -> Vec<&LatencyRecord> {
        records.iter().filter(|r| r.point.study == study).collect()
    };
    let (idle, matrix, loaded) = (
        of(LatencyExperiment::Idle),
        of(LatencyExperiment::Matrix),
        of(LatencyExperiment::Loaded),
    );
    if !idle.is_empty() && loaded.is_empty() {
        idle_tables(&mut o, &idle);
    }
    if !matrix.is_empty() {
        matrix_table(&mut o, &matrix);
    }
    if !loaded.is_empty() {
        loaded_tables(&mut o, &loaded);
    }
    let pairs = of(LatencyExperiment::C2c);
    if !pairs.is_empty() {
        super::c2c::render(&mut o, &pairs);
    }
    if o.is_empty() {
        o.push_str("no latency points\n");
    }
    trust_lines(&mut o, records);
    o
}

/// Which points cannot be trusted and why; or that every point can.
fn trust_lines(o: &mut String, records: &[LatencyRecord]) {
    let judged: Vec<&LatencyRecord> = records
        .iter()
        .filter(|r| r.interference.is_some())
        .collect();
    if judged.is_empty() {
        return;
    }
    let doubtful: Vec<(&LatencyRecord, &String)> = judged
        .iter()
        .flat_map(|r| {
            let findings = r.interference.iter().flat_map(|i| &i.findings);
            findings.map(move |f| (*r, f))
        })
        .collect();
    if doubtful.is_empty() {
        let _ = writeln!(
            o,
            "trusted: no other work on the measured CPUs and no steal during any of the {}",
            crate::units::plural(judged.len(), "point")
        );
        return;
    }
    for (r, finding) in doubtful {
        let _ = writeln!(
            o,
            "NOT TRUSTED: {} ({}): {finding}",
            Bytes(r.point.bytes),
            r.point.label()
        );
    }
}

/// Idle points grouped by what was chased (CPU, memory, page size), the
/// groups in the order they were measured.
fn idle_series(idle: &[&LatencyRecord]) -> Vec<(String, Vec<LatencyRecord>)> {
    let mut series: Vec<(String, Vec<LatencyRecord>)> = Vec::new();
    for r in idle {
        let label = r.point.label();
        match series.iter_mut().find(|(l, _)| *l == label) {
            Some((_, points)) => points.push((*r).clone()),
            None => series.push((label, vec![(*r).clone()])),
        }
    }
    for (_, v) in &mut series {
        v.sort_by_key(|r| r.point.bytes);
    }
    series
}

/// A point's memory policy as its table's title says it: where membw was
/// started under it (numactl's), the words `run`'s header uses.
fn memory(r: &LatencyRecord) -> String {
    if r.mem_inherited {
        format!("{}, {}", r.point.mem, crate::memory::inherited::SOURCE)
    } else {
        r.point.mem.to_string()
    }
}

fn idle_tables(o: &mut String, idle: &[&LatencyRecord]) {
    for (_, points) in idle_series(idle) {
        let first = &points[0];
        let _ = writeln!(
            o,
            "Latency: {} · CPU {} · memory {} · pages: {}{}",
            first.point.order.describe(),
            first.point.cpu,
            memory(first),
            first.point.hugepages,
            first
                .clock_ghz
                .map_or(String::new(), |g| format!(" · clock {g:.2} GHz"))
        );
        let _ = writeln!(
            o,
            "\n  {:>11} {:>9} {:>9} {:>15} {:>9} {:>9} {:>8} {:>7} {:>7}",
            "working set",
            "min ns",
            "p50 ns",
            "p50 95 % CI",
            "p90 ns",
            "p99 ns",
            "cycles",
            "chunks",
            "huge"
        );
        for r in &points {
            let p = &r.latency;
            let _ = writeln!(
                o,
                "  {:>11} {:>9.2} {:>9.2} {:>15} {:>9.2} {:>9.2} {:>8} {:>7} {:>7}",
                Bytes(p.bytes).to_string(),
                p.min_ns,
                p.p50_ns,
                p.p50_ci
                    .map_or("-".into(), |i| format!("{:.2}-{:.2}", i.low, i.high)),
                p.p90_ns,
                p.p99_ns,
                p.p50_cycles.map_or("-".into(), |c| format!("{c:.1}")),
                p.chunks,
                p.huge_share
                    .map_or("-".into(), |h| format!("{:.0}%", 100.0 * h))
            );
        }
        let caches: Vec<String> = first
            .caches
            .iter()
            .map(|(name, &b)| format!("{name} {}", Bytes(b)))
            .collect();
        let _ = writeln!(
            o,
            "\nns per load over {}-load chunks; p50 95 % CI: the chunks' order statistics around the median;\ncycles = p50 × clock; huge = share of the working set in huge pages (THP or explicit){}\n",
            first.latency.loads_per_chunk,
            if caches.is_empty() {
                String::new()
            } else {
                format!("; caches of CPU {}: {}", first.point.cpu, caches.join(", "))
            }
        );
    }
}

fn matrix_cells(matrix: &[&LatencyRecord]) -> Vec<(usize, usize, f64)> {
    matrix
        .iter()
        .filter_map(|r| Some((r.point.cpu_node?, r.point.mem_node?, r.latency.p50_ns)))
        .collect()
}

fn matrix_table(o: &mut String, matrix: &[&LatencyRecord]) {
    let first = matrix[0];
    let _ = writeln!(
        o,
        "Latency matrix: p50 ns per load · {} working set · pages: {} · rows: CPU node (the CPU that chased), columns: memory node\n",
        Bytes(first.point.bytes),
        first.point.hugepages
    );
    let mems: std::collections::BTreeSet<usize> =
        matrix.iter().filter_map(|r| r.point.mem_node).collect();
    let mut rows: BTreeMap<(usize, usize), BTreeMap<usize, f64>> = BTreeMap::new();
    for r in matrix {
        if let (Some(cn), Some(mn)) = (r.point.cpu_node, r.point.mem_node) {
            rows.entry((cn, r.point.cpu))
                .or_default()
                .insert(mn, r.latency.p50_ns);
        }
    }
    let _ = write!(o, "  {:<16}", "");
    for m in &mems {
        let _ = write!(o, " {:>9}", format!("mem {m}"));
    }
    o.push('\n');
    for ((cn, cpu), cells) in &rows {
        let _ = write!(o, "  {:<16}", format!("node {cn} (CPU {cpu})"));
        for m in &mems {
            let _ = write!(
                o,
                " {:>9}",
                cells.get(m).map_or("-".into(), |v| format!("{v:.1}"))
            );
        }
        o.push('\n');
    }
    o.push('\n');
}

/// Loaded points grouped by chaser, load CPUs and memory, then by mix.
type Curves = BTreeMap<String, BTreeMap<Mix, Vec<LatencyRecord>>>;

fn loaded_curves(loaded: &[&LatencyRecord]) -> Curves {
    let mut out: Curves = BTreeMap::new();
    for r in loaded {
        let Some(load) = &r.load else { continue };
        let setup = format!(
            "chaser CPU {} · load CPUs {} · memory {} · {} working set · pages: {}",
            r.point.cpu,
            crate::topology::cpulist::IdSet::new(r.point.load_cpus.clone()),
            memory(r),
            Bytes(r.point.bytes),
            r.point.hugepages
        );
        out.entry(setup)
            .or_default()
            .entry(load.mix)
            .or_default()
            .push((*r).clone());
    }
    for mixes in out.values_mut() {
        for v in mixes.values_mut() {
            // Heaviest throttling (longest delay) first, as measured.
            v.sort_by(|a, b| {
                let d = |r: &LatencyRecord| r.load.as_ref().map_or(0.0, |l| l.delay_ns);
                d(b).total_cmp(&d(a))
            });
        }
    }
    out
}

/// A delay as `--delays` spells it (`10us`, `500ns`, `0`).
fn delay_text(ns: f64) -> String {
    match ns {
        0.0 => "0".into(),
        _ => humantime::format_duration(std::time::Duration::from_nanos(ns as u64)).to_string(),
    }
}

fn loaded_tables(o: &mut String, loaded: &[&LatencyRecord]) {
    for (setup, mixes) in loaded_curves(loaded) {
        let idle = mixes.values().flatten().find_map(|r| r.idle_p50_ns);
        let _ = writeln!(
            o,
            "Loaded latency · {setup}{}",
            idle.map_or(String::new(), |i| format!(" · idle p50 {i:.1} ns"))
        );
        let _ = writeln!(
            o,
            "\n  {:<9} {:>9} {:>8} {:>10} {:>10} {:>9} {:>9} {:>7}",
            "mix", "delay", "threads", "load GB/s", "bus GB/s", "p50 ns", "p99 ns", "× idle"
        );
        for (mix, points) in &mixes {
            for r in points {
                let Some(load) = &r.load else { continue };
                let _ = writeln!(
                    o,
                    "  {:<9} {:>9} {:>8} {:>10.2} {:>10.2} {:>9.1} {:>9.1} {:>7}",
                    mix,
                    delay_text(load.delay_ns),
                    load.threads,
                    load.gb_s,
                    load.bus_gb_s,
                    r.latency.p50_ns,
                    r.latency.p99_ns,
                    idle.map_or("-".into(), |i| format!("{:.2}", r.latency.p50_ns / i))
                );
            }
        }
        let _ = writeln!(
            o,
            "\nload GB/s counts bytes as STREAM does (2:1 = add, 3:1 = striad); bus GB/s adds the write-allocate reads of regular stores\n"
        );
    }
}

/// The plots the records make: (title, file name, SVG).
pub fn plots(records: &[LatencyRecord]) -> Vec<super::Plot> {
    let mut out = Vec::new();
    let of = |study: LatencyExperiment| -> Vec<&LatencyRecord> {
        records.iter().filter(|r| r.point.study == study).collect()
    };
    let idle = of(LatencyExperiment::Idle);
    let series: Vec<(String, Vec<(u64, f64)>)> = idle_series(&idle)
        .into_iter()
        .map(|(label, v)| {
            let pts = v
                .iter()
                .map(|r| (r.point.bytes, r.latency.p50_ns))
                .collect();
            (label, pts)
        })
        .collect();
    let caches = idle.first().map(|r| r.caches.clone()).unwrap_or_default();
    if let Some(svg) = crate::report::plot::latency_sizes_plot(&series, &caches) {
        out.push(super::Plot {
            title: "latency vs working set".into(),
            file: "latency-sizes.svg".into(),
            svg,
        });
    }
    let loaded = of(LatencyExperiment::Loaded);
    for (i, (setup, mixes)) in loaded_curves(&loaded).into_iter().enumerate() {
        let curves: Vec<(String, Vec<(f64, f64)>)> = mixes
            .iter()
            .map(|(mix, v)| {
                let pts = v
                    .iter()
                    .filter_map(|r| Some((r.load.as_ref()?.gb_s, r.latency.p50_ns)))
                    .collect();
                (mix.to_string(), pts)
            })
            .collect();
        let any = mixes.values().flatten().next();
        let idle_ns = any.and_then(|r| r.idle_p50_ns);
        let peak = any.and_then(|r| r.peak_gb_s);
        if let Some(svg) = crate::report::plot::loaded_plot(&curves, idle_ns, peak) {
            let file = if i == 0 {
                "latency-loaded.svg".to_string()
            } else {
                format!("latency-loaded-{}.svg", i + 1)
            };
            out.push(super::Plot {
                title: format!("loaded latency, {setup}"),
                file,
                svg,
            });
        }
    }
    let cells = matrix_cells(&of(LatencyExperiment::Matrix));
    if !cells.is_empty()
        && let Some(svg) = crate::report::plot::latency_matrix_plot(&cells)
    {
        out.push(super::Plot {
            title: "latency matrix".into(),
            file: "latency-matrix.svg".into(),
            svg,
        });
    }
    out.extend(super::c2c::plots(&of(LatencyExperiment::C2c)));
    out
}

/// Two latency files side by side: every point measured in both, p50 of
/// each and their ratio.
pub fn compare(a: &[LatencyRecord], b: &[LatencyRecord], markdown: bool) -> String {
    let describe = |r: &LatencyRecord| {
        let p = &r.point;
        // A core-to-core point is a pair and a case; its memory is one line.
        if let Some(peer) = p.peer_cpu {
            let line = p.line.unwrap_or(crate::latency::record::C2cLine::Modified);
            return format!("c2c CPU {} ↔ CPU {peer} · {line} line", p.cpu);
        }
        let mut d = format!(
            "{} CPU {} → {} · {}",
            p.study.name(),
            p.cpu,
            p.mem,
            Bytes(p.bytes)
        );
        if let (Some(mix), Some(delay)) = (p.mix, p.delay_ns) {
            d.push_str(&format!(" · {mix} delay {}", delay_text(delay)));
        }
        if p.hugepages != crate::memory::Hugepages::Thp {
            d.push_str(&format!(" · {} pages", p.hugepages));
        }
        d
    };
    let index: BTreeMap<String, &LatencyRecord> = b.iter().map(|r| (r.point.key(), r)).collect();
    let rows: Vec<(String, f64, f64)> = a
        .iter()
        .filter_map(|r| {
            let other = index.get(&r.point.key())?;
            Some((describe(r), r.latency.p50_ns, other.latency.p50_ns))
        })
        .collect();
    let mut o = String::new();
    if rows.is_empty() {
        o.push_str("no point was measured in both files\n");
        return o;
    }
    let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(5);
    if markdown {
        o.push_str("| point | A p50 ns | B p50 ns | B/A |\n|---|---:|---:|---:|\n");
        for (d, x, y) in &rows {
            let _ = writeln!(o, "| {d} | {x:.2} | {y:.2} | {:.3} |", y / x);
        }
    } else {
        let _ = writeln!(
            o,
            "  {:<width$} {:>10} {:>10} {:>7}",
            "point", "A p50 ns", "B p50 ns", "B/A"
        );
        for (d, x, y) in &rows {
            let _ = writeln!(o, "  {d:<width$} {x:>10.2} {y:>10.2} {:>7.3}", y / x);
        }
    }
    let _ = writeln!(
        o,
        "{} of {} of A are in B; B/A above 1 means B waited longer",
        rows.len(),
        crate::units::plural(a.len(), "point")
    );
    o
}
/// `membw report` on a latency file: the tables, then each plot as a line
/// naming its file in `dir` (or as Markdown with the images linked).
pub fn document(
    records: &[LatencyRecord],
    plots: &[super::Plot],
    dir: &std::path::Path,
    markdown: bool,
) -> String {
    use std::fmt::Write;
    let tables = render(records);
    let mut o = String::new();
    if markdown {
        let _ = writeln!(o, "## Latency\n\n```text\n{tables}```\n");
        for p in plots {
            let _ = writeln!(o, "![{}]({})\n", p.title, dir.join(&p.file).display());
        }
    } else {
        o.push_str(&tables);
        for p in plots {
            let _ = writeln!(o, "plot: {} ({})", dir.join(&p.file).display(), p.title);
        }
    }
    o
}
