//! The `membw tune` verdict: the candidates ranked, the best one against one
//! thread on every core and against the peak, and how to reproduce it.

use crate::kernels::KernelId;
use crate::results::Record;
use std::fmt::Write;
use std::time::Duration;

/// What a search found, ready to render.
pub struct TuneView<'a> {
    pub kernel: KernelId,
    /// Measured candidates, best first, with their mean rates.
    pub ranked: &'a [(&'a Record, f64)],
    pub tried: usize,
    pub candidates: usize,
    pub elapsed: Duration,
    pub budget: Duration,
    /// One thread on every core, when it was measured.
    pub baseline: Option<&'a Record>,
    /// The mpirun mapping giving MPI ranks the best placement, when there is one.
    pub mpi_map: Option<&'a str>,
}

pub fn text(v: &TuneView) -> String {
    let mut o = String::new();
    let name = v.kernel.spec().name;
    let _ = writeln!(
        o,
        "Candidates tried: {} of {} in {:.0} s (budget {})",
        v.tried,
        v.candidates,
        v.elapsed.as_secs_f64(),
        humantime::format_duration(v.budget)
    );
    let top: Vec<&Record> = v.ranked.iter().take(12).map(|(r, _)| *r).collect();
    o.push_str(&super::study::table_in_order(&top, v.kernel).plain());
    let _ = writeln!(o, "{}", super::study::legend(top.iter().copied()));
    let Some(&(best, rate)) = v.ranked.first() else {
        return o;
    };
    let _ = writeln!(
        o,
        "\nBest sustained {name}: {rate:.2} GB/s with {} ({}, {} stores)",
        best.point.placement,
        crate::units::plural(best.point.threads, "thread"),
        best.stores_label()
    );
    match v.baseline.and_then(|b| Some((b, b.mean(v.kernel)?))) {
        Some((b, _)) if std::ptr::eq(b, best) => {
            let _ = writeln!(
                o,
                "  that is one thread on every core: no subset of cores does better here"
            );
        }
        Some((_, base)) => {
            let _ = writeln!(
                o,
                "  {:+.1} % against one thread on every core ({base:.2} GB/s)",
                100.0 * (rate / base - 1.0)
            );
        }
        None => {}
    }
    match (best.percent_of_peak(v.kernel), best.peak_gb_s) {
        (Some(pct), Some(p)) => {
            let _ = writeln!(
                o,
                "  {pct:.1} % of the theoretical peak of the sockets used ({p:.1} GB/s)"
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "  theoretical peak unknown (give --peak or --channels/--mts)"
            );
        }
    }
    if let Some(s) = &best.reproduce {
        o.push('\n');
        o.push_str(&super::reproduce_block("Reproduce it:", s));
    }
    if let Some(map) = v.mpi_map {
        let _ = writeln!(
            o,
            "  one MPI rank per thread of it: mpirun -np {} {map} --bind-to core",
            best.point.threads
        );
    }
    o
}
