//! The long table of a study: a row per point, in reading order, its
//! configuration's columns (a device's, a CPU point's), its figures over
//! the trusted runs and, where asked, every run's beside them.

// A new kind must be decided wherever kinds are matched.
#![deny(clippy::wildcard_enum_match_arm)]

use super::Table;
use super::legend::{self, shows_peak};
use crate::kernels::KernelId;
use crate::results::{Band, KindsPresent, Measured, Record, Stats};
use crate::units::Bytes;

/// One row per record, sorted for reading, the best mean highlighted.
pub fn results_table(records: &[Record], kernel: KernelId) -> Table {
    table_in_order(&reading_order(records), kernel, false)
}

pub(super) fn stats_cell(s: Option<&Stats>, with_sd: bool) -> Vec<String> {
    let mut cells = match s {
        Some(s) => vec![
            match s.interval() {
                Some(ci) if s.n > 1 => format!("{:.2} ± {:.2}", s.mean, ci.half_width()),
                _ if s.n > 1 => format!("{:.2} ± 0.00", s.mean),
                _ => format!("{:.2}", s.mean),
            },
            format!("{:.2}", s.min),
            format!("{:.2}", s.max),
        ],
        None => vec!["-".into(), "-".into(), "-".into()],
    };
    if with_sd {
        cells.push(match s {
            Some(s) if s.n > 1 => format!("{:.2}", s.sd),
            _ => "-".into(),
        });
    }
    cells
}

/// The records in reading order: NUMA cells, placement, memory policy,
/// stores, threads, working set.
pub(super) fn reading_order(records: &[Record]) -> Vec<&Record> {
    let mut sorted: Vec<&Record> = records.iter().collect();
    sorted.sort_by(|a, b| {
        let key = |r: &Record| {
            (
                r.point.program().map(str::to_string),
                r.point.numa.map(|n| (n.all_cores, n.cpu_node, n.mem_node)),
                r.point.placement_text(),
                r.point.mem_text(),
                r.point.stores,
                r.point.isa.map(|i| i.to_string()),
                r.point.offset,
                r.point.gpu_memory,
                r.point.threads,
                r.point.working_set_per_thread,
            )
        };
        key(a).cmp(&key(b))
    });
    sorted
}

/// Position of the record with the highest mean rate of `kernel` over its
/// trusted runs (the first of equals), of the points with any.
pub(super) fn best_index(records: &[&Record], kernel: KernelId) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, r) in records.iter().enumerate() {
        if let Some(m) = r.trusted_mean(kernel)
            && best.is_none_or(|(_, b)| m > b)
        {
            best = Some((i, m));
        }
    }
    best.map(|b| b.0)
}

/// The ISA a point's kernels ran with, as its runs recorded it.
fn isa_of(r: &Record) -> Option<crate::kernels::Isa> {
    r.runs.first()?.isa
}

/// The columns of a CPU point's configuration.
const CPU_COLUMNS: [&str; 4] = ["threads", "placement", "mem", "stores"];

/// Which configuration columns a table has: a device's, a device's host
/// memory policy (where no CPU point's `mem` column holds it), the CPU's.
#[derive(Clone, Copy)]
struct TargetColumns {
    devices: bool,
    host_mem: bool,
    cpus: bool,
}

impl TargetColumns {
    fn of(records: &[&Record]) -> TargetColumns {
        let kinds = KindsPresent::of(records.iter().map(|r| r.point.measured()));
        TargetColumns {
            devices: kinds.devices,
            host_mem: !kinds.on_host && records.iter().any(|r| r.point.mem.is_some()),
            cpus: kinds.on_host,
        }
    }

    fn headers(self) -> Vec<String> {
        let mut headers = Vec::new();
        if self.devices {
            headers.push("device".into());
        }
        if self.host_mem {
            headers.push("host mem".into());
        }
        if self.cpus {
            headers.extend(CPU_COLUMNS.map(String::from));
        }
        headers
    }
}

/// A row's device column (where a device is in the table), then its CPU
/// columns (where a CPU point is): `-` where a point has none. A device's
/// policy (where its host buffers are) goes in the `mem` column.
fn target_cells(r: &Record, placement: String, columns: TargetColumns) -> Vec<String> {
    let mut cells = Vec::new();
    let measured = r.point.measured();
    if columns.devices {
        cells.push(r.point.device_name().unwrap_or("-").to_string());
    }
    let mem = || match r.point.mem_text() {
        text if text.is_empty() => "-".to_string(),
        text => text,
    };
    if columns.host_mem {
        cells.push(format!("{}{}", mem(), legend::own_node_mark(r)));
    }
    match measured {
        Measured::Device(_) if columns.cpus => {
            cells.extend(["-".into(), "-".into(), mem(), "-".into()])
        }
        Measured::Device(_) => {}
        Measured::Team(host) | Measured::Program(host, _) => cells.extend([
            host.threads.to_string(),
            placement,
            r.point.mem_text(),
            r.stores_label(),
        ]),
    }
    cells
}

/// A row's file and program cells, where the table has those columns.
fn label_cells(r: &Record, files: bool, programs: bool) -> Vec<String> {
    let file = files.then(|| r.file.clone().unwrap_or_default());
    let program = programs.then(|| r.point.program().unwrap_or("membw").to_string());
    file.into_iter().chain(program).collect()
}

/// One row per record in the order given, the best mean highlighted;
/// with `all_runs`, every run's figures beside the trusted runs'.
pub fn table_in_order(sorted: &[&Record], kernel: KernelId, all_runs: bool) -> Table {
    let columns = Columns::of(sorted, kernel, all_runs);
    Table {
        headers: columns.headers(kernel),
        rows: sorted.iter().map(|r| columns.row(r, kernel)).collect(),
        best: best_index(sorted, kernel),
    }
}

/// Which columns a long table has: each optional one only where some
/// point has something to put in it.
struct Columns {
    files: bool,
    programs: bool,
    /// A device has no threads, placement, policy or stores: its column
    /// names it, and the CPU columns appear only where a CPU point is.
    target: TargetColumns,
    sizes_vary: bool,
    /// The ISA the kernels ran with, where the points' differ: other code.
    isa: bool,
    /// STREAM's OFFSET, where the points' differ: another layout.
    offset: bool,
    /// Where a device's arrays lived, where the points' differ.
    gpu_memory: bool,
    numa: bool,
    /// The run count is a column only where it differs between points.
    runs_vary: bool,
    /// Mean ± sd, which STREAM tutorials ask for, where any point has runs.
    with_sd: bool,
    /// A share of the peak where a point has one, or where a point
    /// measured the caches (STREAM's rule): a cache rate must not read as
    /// the memory's.
    share: bool,
    doubts: bool,
    all_runs: bool,
}

impl Columns {
    fn of(sorted: &[&Record], kernel: KernelId, all_runs: bool) -> Columns {
        let any = |f: &dyn Fn(&Record) -> bool| sorted.iter().any(|r| f(r));
        Columns {
            files: any(&|r| r.file.is_some()),
            programs: any(&|r| r.point.program().is_some()),
            target: TargetColumns::of(sorted),
            sizes_vary: legend::sizes_vary(sorted),
            // Known ISAs that differ: a program's is unknown, not another.
            isa: {
                let known = sorted.iter().filter_map(|r| isa_of(r));
                known.clone().any(|i| Some(i) != known.clone().next())
            },
            offset: any(&|r| r.point.offset != sorted[0].point.offset),
            gpu_memory: any(&|r| r.point.gpu_memory != sorted[0].point.gpu_memory),
            numa: any(&|r| r.point.numa.is_some()),
            runs_vary: any(&|r| r.runs.len() != sorted[0].runs.len()),
            with_sd: any(&|r| r.kernel_trust(kernel).shown().is_some_and(|s| s.n > 1)),
            share: any(&|r| shows_peak(r) || r.in_caches()),
            doubts: any(&|r| !r.kernel_trust(kernel).whole()),
            all_runs,
        }
    }

    fn headers(&self, kernel: KernelId) -> Vec<String> {
        let labels = [(self.files, "file"), (self.programs, "program")];
        let mut headers: Vec<String> = (labels.iter().filter(|l| l.0))
            .map(|l| l.1.into())
            .collect();
        headers.extend(self.target.headers());
        if self.sizes_vary {
            let set = if self.target.cpus {
                "set/thread"
            } else {
                "set/device"
            };
            headers.push(set.into());
        }
        if self.isa {
            headers.push("isa".into());
        }
        if self.offset {
            headers.push("offset".into());
        }
        if self.gpu_memory {
            headers.push("memory".into());
        }
        if self.numa {
            headers.push("cpu→mem".into());
        }
        let name = kernel.spec().name;
        headers.extend([format!("{name} GB/s"), "min".into(), "max".into()]);
        let optional = [
            (self.with_sd, "sd"),
            (self.runs_vary, "runs"),
            (self.share, "% peak"),
            (self.doubts, "trust"),
        ];
        headers.extend(optional.iter().filter(|c| c.0).map(|c| c.1.to_string()));
        if self.all_runs {
            headers.extend([
                format!("all: {name} GB/s"),
                "all: min".into(),
                "all: max".into(),
            ]);
            if self.with_sd {
                headers.push("all: sd".into());
            }
        }
        headers
    }

    fn row(&self, r: &Record, kernel: KernelId) -> Vec<String> {
        let trust = r.kernel_trust(kernel);
        let s = trust.shown();
        // A NUMA cell's nodes have their own column.
        let placement = match r.point.numa {
            Some(n) if n.all_cores => "all cores".into(),
            Some(_) => "one thread".into(),
            None => r.point.placement_text(),
        };
        let mut row = label_cells(r, self.files, self.programs);
        row.extend(target_cells(r, placement, self.target));
        if self.sizes_vary {
            // A program sizes its own arrays: membw does not know them.
            row.push(match r.point.working_set_per_thread {
                0 => "-".into(),
                b => Bytes(b).to_string(),
            });
        }
        if self.isa {
            row.push(isa_of(r).map_or("-".into(), |i| i.to_string()));
        }
        if self.offset {
            row.push(r.point.offset.to_string());
        }
        if self.gpu_memory {
            row.push(r.point.gpu_memory.to_string());
        }
        if self.numa {
            let nodes = (r.point.numa).map(|n| format!("{} → {}", n.cpu_node, n.mem_node));
            row.push(nodes.unwrap_or_else(|| "-".into()));
        }
        row.extend(stats_cell(s, self.with_sd));
        if self.runs_vary {
            row.push(s.map_or("0".into(), |s| s.n.to_string()));
        }
        if self.share {
            row.push(match (r.band(), r.percent_of_peak(kernel)) {
                (Band::Caches, _) => "caches".into(),
                // Past the caches but under STREAM's rule (legend: u).
                (Band::UnderRule, Some(p)) => format!("{p:.1} u"),
                // Caches or sizes unknown: STREAM's rule not judged (legend: ?).
                (Band::Unknown, Some(p)) => format!("{p:.1} ?"),
                (_, Some(p)) => format!("{p:.1}"),
                (_, None) => "-".into(),
            });
        }
        if self.doubts {
            row.push(trust.cell());
        }
        if self.all_runs {
            row.extend(stats_cell(trust.all.as_ref(), self.with_sd));
        }
        row
    }
}
