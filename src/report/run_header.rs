//! The lines of a run's text header that STREAM's leaves out: where the
//! threads ran and the pages went, the kernels' code, the page size, the
//! host, MPI ranks, and how the clock that timed the run was checked.

use crate::kernels::Isa;
use crate::memory::gpu_memory::{DriverMemory, GpuMemory, GpuMemoryUse};
use crate::results::{Measurement, RunReport};
use crate::topology::cpulist::format_ranges;
use std::fmt::Write;

/// STREAM's thread counts, then where the threads ran.
pub(super) fn threads_and_placement(o: &mut String, report: &RunReport) {
    let m = &report.measurement;
    let _ = writeln!(o, "Number of Threads requested = {}", m.threads.len());
    let _ = writeln!(o, "Number of Threads counted = {}", m.threads.len());
    ranks_line(o, m);
    where_it_ran(o, report);
}

/// How many MPI ranks measured together, where they did.
pub(super) fn ranks_line(o: &mut String, m: &Measurement) {
    if let Some(ranks) = m.ranks() {
        let _ = writeln!(
            o,
            "MPI ranks = {} (array size: all ranks together; threads, placement and pages: rank 0's)",
            ranks.ranks.len()
        );
    }
}

/// What a device's run header says in place of threads and placement:
/// the target, the host that drove it (and its host buffers' policy and
/// pages, where transfers placed them), MPI ranks.
pub(super) fn driven_from(o: &mut String, report: &RunReport) {
    let m = &report.measurement;
    if let Some(target) = m.target().describe() {
        let _ = writeln!(o, "Target: {target}");
    }
    let host = &report.host;
    let cpu = host.cpu_model.as_deref().unwrap_or("unknown CPU");
    let driver = match m.threads.first() {
        Some(t) => format!(" on CPU {}", t.cpu),
        None => String::new(),
    };
    let _ = writeln!(o, "Driven from host: {} ({cpu}){driver}", host.hostname);
    if let Some(used) = (m.gpu_memory.as_ref()).filter(|u| u.asked != GpuMemory::Device) {
        let _ = writeln!(o, "Arrays: {}", arrays_line(used, m));
    }
    if !m.mem_policy.is_empty() {
        let _ = writeln!(
            o,
            "Host buffers: {} (pages found: {})",
            m.mem_policy,
            pages_summary(m)
        );
    }
    ranks_line(o, m);
}

/// Where a device's arrays lived, as asked and as found: what its driver
/// said each is, their host pages where they are host memory, their
/// first touch timed apart.
fn arrays_line(used: &GpuMemoryUse, m: &Measurement) -> String {
    let mut said: Vec<(DriverMemory, Vec<&str>)> = Vec::new();
    for f in &used.found {
        let Some(driver) = f.driver else { continue };
        match said.iter_mut().find(|(d, _)| *d == driver) {
            Some((_, arrays)) => arrays.push(&f.array),
            None => said.push((driver, vec![&f.array])),
        }
    }
    let said: Vec<String> = (said.iter())
        .map(|(driver, arrays)| format!("{} {}", arrays.join(", "), driver.words()))
        .collect();
    let mut line = format!(
        "--gpu-memory {}; the driver says: {}",
        used.asked,
        match said.is_empty() {
            true => "nothing".to_string(),
            false => said.join("; "),
        }
    );
    if used.asked.is_host() {
        line.push_str(&format!(" (pages found: {})", pages_summary(m)));
    }
    if let Some(touch) = used.first_touch {
        line.push_str(&format!(
            "; first touch {} in {:.1} ms{}, apart from the repetitions",
            crate::units::Bytes(touch.bytes),
            touch.seconds * 1e3,
            touch
                .gb_s()
                .map_or(String::new(), |r| format!(" ({r:.1} GB/s)"))
        ));
    }
    if let Some(share) = used.device_share {
        line.push_str(&format!(
            "; {:.0} % fit in the device's memory",
            share * 100.0
        ));
    }
    line
}

/// Where the threads ran and the pages went, the kernels' ISA and
/// stores, the page size and the host: what STREAM's header leaves out.
pub(super) fn where_it_ran(o: &mut String, report: &RunReport) {
    let m = &report.measurement;
    let cpus: Vec<usize> = m.threads.iter().map(|t| t.cpu).collect();
    if let Some(by) = &m.bound_by {
        // Not pinned by membw, yet each thread on one CPU: said as read back.
        let list = |f: &dyn Fn(&crate::results::measurement::ThreadPlacement) -> String| {
            m.threads.iter().map(f).collect::<Vec<_>>().join(",")
        };
        let _ = writeln!(
            o,
            "Thread affinity (thread i on the i-th CPU, read back from the kernel) = {}: pinned by {by}, not by membw",
            list(&|t| t.bound_to().map_or("?".into(), |c| c.to_string()))
        );
    } else if m.pinned {
        let _ = writeln!(
            o,
            "Thread affinity (thread i on the i-th CPU) = {}",
            format_ranges(&cpus)
        );
    } else {
        unbound_threads(o, m);
    }
    let _ = writeln!(o, "Placement: {}", report.request.placement);
    let mut policy = m.mem_policy.clone();
    if report.request.inherited_mem_policy.is_some() {
        policy.push_str(", ");
        policy.push_str(crate::memory::inherited::SOURCE);
    }
    if let Some(mems) = &report.request.cpuset_mems {
        policy.push_str(&format!("; the cpuset allows memory on nodes {mems} only"));
    }
    let _ = writeln!(
        o,
        "Memory policy: {policy} (pages found: {})",
        pages_summary(m)
    );
    let isa = m.isa.map_or("unknown".into(), |i| match i {
        // Vector-length agnostic: say what this CPU's vectors are.
        Isa::Sve => format!("sve ({}-bit vectors)", 64 * i.lanes()),
        _ => i.to_string(),
    });
    match kernel_stores(m) {
        // What ran, per kernel: one line where every kernel's was alike.
        Some(KernelStoresLines::Alike(mode, why)) => {
            let _ = writeln!(o, "Kernels: {isa} ISA, {mode} stores ({why})");
        }
        Some(KernelStoresLines::Each(lines)) => {
            let _ = writeln!(o, "Kernels: {isa} ISA, stores chosen by kernel (auto):");
            for line in lines {
                let _ = writeln!(o, "  {line}");
            }
        }
        None => {
            let _ = writeln!(
                o,
                "Kernels: {isa} ISA, {} stores ({})",
                m.stores.map_or("unknown".into(), |s| s.to_string()),
                report.request.stores_reason
            );
        }
    }
    let _ = writeln!(
        o,
        "Hugepages: {} (system THP mode: {})",
        m.hugepages.name(),
        report.host.thp_mode.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(
        o,
        "Host: {} ({})",
        report.host.hostname,
        report.host.cpu_model.as_deref().unwrap_or("unknown CPU")
    );
    if let Some(clocks) = &report.host.clocks {
        let _ = writeln!(o, "CPU clocks: {clocks}");
    }
}

/// What the scheduler did with unbound threads (`--no-pin`): where each
/// ran at first touch and at the end, and how often the kernel moved it while measured.
fn unbound_threads(o: &mut String, m: &Measurement) {
    let list = |f: &dyn Fn(&crate::results::measurement::ThreadPlacement) -> Option<String>| {
        (m.threads.iter())
            .map(|t| f(t).unwrap_or_else(|| "?".into()))
            .collect::<Vec<_>>()
            .join(",")
    };
    let _ = writeln!(
        o,
        "Thread affinity = none: threads unbound, placed and moved by the scheduler \
         (OMP_NUM_THREADS={} OMP_PROC_BIND=false)",
        m.threads.len()
    );
    let moved: Option<u64> = m.threads.iter().map(|t| t.migrations).sum();
    let _ = writeln!(
        o,
        "   on {} {} at first touch, {} at the end; moved {} while measured",
        if m.threads.len() == 1 { "CPU" } else { "CPUs" },
        list(&|t| t.observed_cpu.map(|c| c.to_string())),
        list(&|t| t.last_cpu.map(|c| c.to_string())),
        moved.map_or(
            "an unknown number of times (the kernel keeps no count)".into(),
            |n| {
                format!(
                    "{} ({} by thread)",
                    crate::units::plural(n as usize, "time"),
                    list(&|t| t.migrations.map(|n| n.to_string()))
                )
            }
        )
    );
}

/// `a: node 0 100%, 100% local · b: ...`
pub(super) fn pages_summary(m: &Measurement) -> String {
    if m.pages.is_empty() {
        return "not checked".into();
    }
    m.pages
        .iter()
        .map(|p| {
            let nodes: Vec<String> = p
                .nodes
                .iter()
                .map(|(n, share)| format!("node {n} {:.0}%", share * 100.0))
                .collect();
            // Mostly elsewhere: say remote, the word the experiment is about.
            let local = p.local_share.map_or(String::new(), |s| {
                if s < 0.5 {
                    format!(", {:.0}% remote", (1.0 - s) * 100.0)
                } else {
                    format!(", {:.0}% local", s * 100.0)
                }
            });
            let verdict = if p.held { "" } else { " NOT AS ASKED" };
            let size = match p.kernel_page_kib {
                Some(kib) if kib > 4 => format!(", {} pages", crate::units::Bytes(kib * 1024)),
                _ => String::new(),
            };
            format!("{}: {}{local}{size}{verdict}", p.array, nodes.join(" "))
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A run's stores as the `Kernels:` line gives them.
pub(super) enum KernelStoresLines {
    /// Every kernel that writes ran one mode for one reason.
    Alike(crate::kernels::StoreMode, String),
    /// `copy   nt       measured: ...`, a line each.
    Each(Vec<String>),
}

/// What each kernel's stores were and why, from the run's results (absent
/// in files from before stores were chosen per kernel, and for a device).
pub(super) fn kernel_stores(m: &Measurement) -> Option<KernelStoresLines> {
    let ran: Vec<_> = (m.results.iter())
        .filter(|r| !r.kernel.spec().writes.is_empty())
        .filter_map(|r| Some((r.kernel, r.stores?)))
        .collect();
    let (_, first) = ran.first()?;
    let all: Vec<_> = ran.iter().map(|(_, s)| *s).collect();
    if let Some(why) = first.why_every(&all) {
        let why = match first.basis {
            crate::kernels::StoresBasis::Requested => why,
            _ => format!("auto: {why}"),
        };
        return Some(KernelStoresLines::Alike(first.mode, why));
    }
    let width = (ran.iter().map(|(k, _)| k.spec().name.len()).max()).unwrap_or(0);
    let lines = (ran.iter())
        .map(|(k, s)| {
            format!(
                "{:<width$}  {:<7}  {}",
                k.spec().name,
                s.mode.name(),
                s.why()
            )
        })
        .collect();
    Some(KernelStoresLines::Each(lines))
}
