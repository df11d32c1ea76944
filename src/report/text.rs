//! STREAM's text layout, so `grep "Triad:" | awk '{print $2}'` keeps working,
//! followed by a short summary for people.

use crate::results::measurement::KernelResult;
use crate::results::{Measurement, PeakUse, RunReport};
use crate::units::Bytes;
use std::fmt::Write;

const RULE: &str = "-------------------------------------------------------------";

/// STREAM's table header, byte for byte.
pub const TABLE_HEADER: &str = "Function    Best Rate MB/s  Avg time     Min time     Max time";

/// The table alone (what `-q` prints).
pub fn table(m: &Measurement) -> String {
    let mut out = String::new();
    out.push_str(TABLE_HEADER);
    out.push('\n');
    for r in &m.results {
        out.push_str(&table_row(r));
    }
    out
}

/// One row, with STREAM's printf: an 11-character label, then `%12.1f  %11.6f  %11.6f  %11.6f`.
fn table_row(r: &KernelResult) -> String {
    format!(
        "{:<11}{:>12.1}  {:>11.6}  {:>11.6}  {:>11.6}\n",
        r.kernel.spec().label,
        r.best_rate_mb_s,
        r.avg_time_s,
        r.min_time_s,
        r.max_time_s
    )
}

pub fn render(report: &RunReport) -> String {
    let m = &report.measurement;
    let mut o = String::new();
    let per_array = Bytes(m.bytes_per_array);
    let total = Bytes(m.bytes_per_array * m.arrays as u64);
    let _ = writeln!(o, "{RULE}");
    let _ = writeln!(o, "membw {} (STREAM-compatible output)", report.version);
    let _ = writeln!(o, "{RULE}");
    let _ = writeln!(o, "This system uses 8 bytes per array element.");
    let _ = writeln!(o, "{RULE}");
    let _ = writeln!(
        o,
        "Array size = {} (elements), Offset = {} (elements)",
        m.array_elements, m.offset
    );
    let _ = writeln!(
        o,
        "Memory per array = {:.1} MiB (= {:.1} GiB).",
        per_array.mib(),
        per_array.gib()
    );
    let _ = writeln!(
        o,
        "Total memory required = {:.1} MiB (= {:.1} GiB).",
        total.mib(),
        total.gib()
    );
    if let Some(reading) = &report.request.size_reading {
        let _ = writeln!(o, "Size read as elements: {reading}.");
    }
    let _ = writeln!(o, "Each kernel will be executed {} times.", m.ntimes);
    let _ = writeln!(
        o,
        " The *best* time for each kernel (excluding the first iteration)"
    );
    let _ = writeln!(o, " will be used to compute the reported bandwidth.");
    let _ = writeln!(o, "{RULE}");
    match m.host_threads() {
        Some(_) => super::run_header::threads_and_placement(&mut o, report),
        // A device has no threads, placement, policy or ISA of the host's.
        None => super::run_header::driven_from(&mut o, report),
    }
    let _ = writeln!(o, "{RULE}");
    super::measured::clock_lines(&mut o, m);
    let _ = writeln!(o, "{RULE}");
    o.push_str(&table(m));
    let _ = writeln!(o, "{RULE}");
    if m.validation.passed {
        let _ = writeln!(
            o,
            "Solution Validates: avg error less than {:.6e} on all {} arrays",
            m.validation.epsilon,
            m.validation.arrays.len()
        );
    } else {
        let _ = writeln!(o, "Failed Validation (see the error below)");
    }
    let _ = writeln!(o, "{RULE}");
    if let Some(ranks) = m.ranks() {
        o.push_str(&super::ranks::render(ranks));
        let _ = writeln!(o, "{RULE}");
    }
    o.push_str(&summary(
        m,
        report.peak.as_ref(),
        report.peak_unknown.as_deref(),
    ));
    if let Some(check) = &report.stores_check {
        o.push_str(&stores_check_line(check));
    }
    if let Some(spellings) = report.reproduce.as_ref().filter(|_| m.ranks().is_none()) {
        // Rank 0's placement alone would not reproduce a multi-rank run.
        o.push_str(&super::reproduce_block(
            "Reproduce this placement:",
            spellings,
        ));
    }
    o
}

/// What the side measurement of the other store mode found.
fn stores_check_line(c: &crate::results::measurement::StoresCheck) -> String {
    use crate::results::estimate::Change;
    let cmp = &c.comparison;
    let interval = cmp.interval.map_or(String::new(), |i| {
        format!(" (95 % CI {:.3}-{:.3})", i.low, i.high)
    });
    let verdict = match cmp.change {
        Change::Higher => format!(
            "{} stores were faster here: run with --stores {}",
            c.other, c.other
        ),
        Change::Lower => format!("{} stores, as auto chose, were faster", c.used),
        Change::NoChange => "no difference beyond the noise".to_string(),
        Change::NotResolved => "not resolved: too few repetitions for an interval".to_string(),
    };
    // Best against the same kernel's best in the run, and the decision on
    // the repetitions (the ratio of their geometric means), each named:
    // a best beside a ratio of means read as one figure.
    let name = c.kernel.spec().name;
    format!(
        "  stores: {} by auto; {} stores measured for {name} too ({} repetitions): best {:.2} GB/s\n    \
         against {name}'s {:.2} GB/s in the run; repetitions {:.3}× the run's{interval}: {verdict}\n",
        c.used, c.other, cmp.n_b, c.other_best_gb_s, c.used_best_gb_s, cmp.ratio
    )
}

/// Each kernel's counted repetitions as an estimate: the mean rate and
/// its 95 % interval, with n, wrapped within 100 columns. Nothing where a
/// kernel has fewer than two counted repetitions (no interval of one).
fn repetition_estimates(m: &Measurement) -> String {
    let items: Vec<(String, usize)> = m
        .results
        .iter()
        .filter_map(|r| {
            let s = r.repetitions.as_ref()?;
            let i = s.interval()?;
            Some((
                format!(
                    "{} {:.2} ± {:.2}",
                    r.kernel.spec().name,
                    s.mean,
                    i.half_width()
                ),
                s.n,
            ))
        })
        .collect();
    let Some(&(_, n)) = items.first() else {
        return String::new();
    };
    let same_n = items.iter().all(|i| i.1 == n);
    let head = if same_n {
        format!("  repetitions, mean GB/s ± 95 % CI (n = {n}):")
    } else {
        "  repetitions, mean GB/s ± 95 % CI:".to_string()
    };
    let items: Vec<String> = items
        .into_iter()
        .map(|(item, n)| {
            if same_n {
                item
            } else {
                format!("{item} (n = {n})")
            }
        })
        .collect();
    wrapped(&head, &items)
}

/// `head` then the items, comma-separated, broken before an item that would
/// pass 100 columns (continuation lines indented by four).
fn wrapped(head: &str, items: &[String]) -> String {
    let mut o = head.to_string();
    let mut width = head.chars().count();
    for (k, item) in items.iter().enumerate() {
        let sep = if k + 1 < items.len() { "," } else { "" };
        let len = item.chars().count() + sep.len() + 1;
        if k > 0 && width + len > 100 {
            o.push_str("\n    ");
            width = 4;
        } else {
            o.push(' ');
        }
        o.push_str(item);
        o.push_str(sep);
        width += len;
    }
    o.push('\n');
    o
}

/// How steady the repetitions were (coefficient of variation of their
/// times), and the slowest thread where one lags the others by more than
/// 20 %: a core shared with another process, or a throttled one.
fn stability(m: &Measurement) -> String {
    let counted = |r: &crate::results::measurement::KernelResult| {
        crate::results::cv(r.times_s.get(1..).unwrap_or(&[])) * 100.0
    };
    let cvs: Vec<String> = m
        .results
        .iter()
        .filter(|r| r.times_s.len() > 2)
        .map(|r| format!("{} {:.1} %", r.kernel.spec().name, counted(r)))
        .collect();
    let mut o = String::new();
    o.push_str(&repetition_estimates(m));
    if !cvs.is_empty() {
        o.push_str(&wrapped("  repetition times vary (cv):", &cvs));
    }
    o.push_str(&super::measured::trust_lines(m));
    let lagging = m
        .results
        .iter()
        .filter_map(|r| r.slowest_thread().map(|(t, ratio)| (r, t, ratio)))
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .filter(|&(_, _, ratio)| ratio > 1.2);
    if let Some((r, t, ratio)) = lagging {
        let cpu = m.threads.get(t).map_or(String::new(), |p| {
            format!(" (CPU {})", p.named_cpu(m.pinned))
        });
        let _ = writeln!(
            o,
            "  slowest thread: {t}{cpu} took {ratio:.2}× the others' median time in {}: another process on that core, or a throttled core",
            r.kernel.spec().name
        );
    }
    o
}

/// The part for people: GB/s, stability and write-allocate traffic.
fn summary(m: &Measurement, peak: Option<&PeakUse>, unknown: Option<&str>) -> String {
    let mut o = String::new();
    let counted = m.ntimes.saturating_sub(1);
    let what = match m.in_caches.map(|c| (c.band(), c.seen)) {
        // Sizes alone do not say these threads got the caches sysfs reports.
        Some((crate::results::Band::Caches, None)) => {
            "; the arrays fit in the caches sysfs reports, not measured whether these threads got them"
        }
        Some((crate::results::Band::Caches, _)) => {
            "; cache bandwidth: the arrays fit in the caches"
        }
        Some(_) => "; under STREAM's rule: caches may still help",
        None if m.caches_unknown.is_some() => {
            "; STREAM's rule not judged: caches of unknown size, neither memory nor cache bandwidth"
        }
        None => "",
    };
    let _ = writeln!(
        o,
        "Summary (GB/s = 10^9 B/s, best of {counted} timed repetitions{what}):"
    );
    // Names as wide as the longest (bidir-kernel), at least STREAM's 7.
    let width = (m.results.iter())
        .map(|r| r.kernel.spec().name.len())
        .max()
        .unwrap_or(0)
        .max(7);
    for r in &m.results {
        let _ = write!(
            o,
            "  {:<width$}{:>9.2} GB/s   spread {:>5.3} (max/min time)",
            r.kernel.spec().name,
            r.best_gb_s(),
            r.spread
        );
        let name = r.kernel.spec().name;
        if let Some((p, of)) =
            peak.and_then(|p| Some((p.percent_of_peak.get(name)?, p.share_of(name))))
        {
            let _ = write!(o, "   {p:>5.1} % of {of}");
        }
        // In the caches no write-allocate line goes to the memory bus.
        if r.dram_bytes_per_element != r.bytes_per_element && m.in_caches.is_none() {
            let _ = write!(
                o,
                "   {:.2} GB/s on the bus with write-allocate ({} B/elem, not {})",
                r.dram_gb_s(),
                r.dram_bytes_per_element,
                r.bytes_per_element
            );
        }
        o.push('\n');
    }
    o.push_str(&stability(m));
    o.push_str(&super::measured::launch_lines(m));
    o.push_str(&super::measured::peak_lines(m, peak, unknown));
    o.push_str(&super::measured::setup_line(m));
    o
}

/// The text exporter: what people read in a terminal.
pub struct Text;

impl super::view::TextExporter for Text {
    fn format(&self) -> super::view::Format {
        super::view::Format::Text
    }
    fn commands(&self) -> &'static [&'static str] {
        &[
            "run", "exec", "latency", "report", "compare", "sweep", "check", "baseline", "topo",
            "place", "tune", "peers",
        ]
    }
    fn render(&self, doc: &super::view::View) -> Option<crate::error::Result<String>> {
        use super::view::View;
        Some(Ok(match doc {
            View::Run {
                report,
                quiet: true,
            } => table(&report.measurement),
            View::Run { report, .. } => render(report),
            View::Devices(set) => super::device_set::text(set),
            View::Peers(r) => super::peers::text(r),
            View::Exec(view) => super::program_run::text(view),
            View::Latency(report) => super::latency_tables::render(&report.records),
            View::Study {
                records,
                kernel,
                layout,
                ..
            } => super::study::summary_laid_out(records, *kernel, false, *layout),
            View::Summary { records, kernel } => super::study::summary(records, *kernel, false),
            View::LatencyExperiment {
                records,
                plots,
                dir,
            } => super::latency_tables::document(records, plots, dir, false),
            View::Nodes { text, .. } => text.to_string(),
            View::Compare(c) => c.render(false),
            View::Check(v) => super::health::check(v),
            View::Baseline(b) => super::health::baseline(b),
            View::Topo(view) => super::topo::text(view),
            View::Place(view) => super::place::text(view),
            View::Tune(view) => super::tune_verdict::text(view),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::{KernelId, StoreMode};
    use crate::results::measurement::kernel_statistics;

    #[test]
    fn rows_use_streams_printf_layout() {
        let r = kernel_statistics(
            KernelId::Triad,
            Some(StoreMode::Nt),
            10_000_000,
            vec![1.0, 0.014735, 0.014967],
        );
        let row = table_row(&r);
        // STREAM: "Triad:          16287.5     0.014848     0.014735     0.014967"
        assert_eq!(
            row,
            "Triad:          16287.8     0.014851     0.014735     0.014967\n"
        );
        let fields: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(fields[0], "Triad:");
        assert_eq!(fields[1], "16287.8");
    }
}
