//! A study's table turned: one part of its points down, another across
//! (`report --rows threads --columns mem`), the layout of STREAM tutorials'
//! tables (threads down, local | remote across). Parts that vary but are
//! neither rows nor columns stay in the row's label, so no two points
//! share a cell.

// A new kind must be decided wherever kinds are matched.
#![deny(clippy::wildcard_enum_match_arm)]

use super::{Table, best_index, reading_order};
use crate::kernels::KernelId;
use crate::results::{HostPart, Measured, Record};
use crate::units::Bytes;

/// A part of a point a pivot can lay out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    Threads,
    Placement,
    Mem,
    Stores,
    Size,
    Hugepages,
    /// The instruction set the kernels ran with: other code, another point.
    Isa,
    /// STREAM's OFFSET between the arrays: another layout, another point.
    Offset,
    Program,
    Device,
    /// The results file (`report --by-file`).
    File,
}

impl Axis {
    pub const ALL: [Axis; 11] = [
        Axis::Threads,
        Axis::Placement,
        Axis::Mem,
        Axis::Stores,
        Axis::Size,
        Axis::Hugepages,
        Axis::Isa,
        Axis::Offset,
        Axis::Program,
        Axis::Device,
        Axis::File,
    ];

    /// Its name, as the table and the command line spell it.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Threads => "threads",
            Axis::Placement => "placement",
            Axis::Mem => "mem",
            Axis::Stores => "stores",
            Axis::Size => "size",
            Axis::Hugepages => "hugepages",
            Axis::Isa => "isa",
            Axis::Offset => "offset",
            Axis::Program => "program",
            Axis::Device => "device",
            Axis::File => "file",
        }
    }

    pub fn parse(text: &str) -> Option<Axis> {
        Axis::ALL.into_iter().find(|a| a.name() == text.trim())
    }

    /// The point's value of this part, as the long table writes it.
    fn value(self, r: &Record) -> String {
        let p = &r.point;
        let on_host = |value: &dyn Fn(HostPart) -> String| match p.measured() {
            Measured::Team(host) | Measured::Program(host, _) => value(host),
            // A device has no threads, placement or store choice of its own.
            Measured::Device(_) => "-".into(),
        };
        match self {
            Axis::Threads => on_host(&|h| h.threads.to_string()),
            Axis::Placement => on_host(&|h| h.placement()),
            Axis::Mem => p.mem_text(),
            Axis::Stores => on_host(&|_| r.stores_label()),
            Axis::Size => match p.working_set_per_thread {
                0 => "-".into(),
                b => format!("{}/{}", Bytes(b), p.per()),
            },
            Axis::Hugepages => p.hugepages.to_string(),
            // The point's where it is not the host's widest, else what ran.
            Axis::Isa => (p.isa.or_else(|| r.runs.iter().find_map(|run| run.isa)))
                .map_or("-".into(), |isa| isa.to_string()),
            // Named, as a bare number beside the threads would not be.
            Axis::Offset => format!("offset {}", p.offset),
            Axis::Program => p.program().unwrap_or("membw").to_string(),
            Axis::Device => p.device_name().unwrap_or("-").to_string(),
            Axis::File => r.file.clone().unwrap_or_else(|| "-".into()),
        }
    }
}

/// Why a pivot cannot be laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PivotError {
    /// Rows and columns name the same part.
    SameAxis(Axis),
    /// Two points land in one cell: they differ in nothing an axis names
    /// (their kernels, repetitions or element counts).
    SharedCell { row: String, column: String },
}

impl std::fmt::Display for PivotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PivotError::SameAxis(a) => write!(f, "'{}' cannot be both rows and columns", a.name()),
            PivotError::SharedCell { row, column } => write!(
                f,
                "two points fall in row '{row}', column '{column}': they differ in what no axis names \
                 (kernels, repetitions or elements); report their files one at a time"
            ),
        }
    }
}

/// The turned table and what its cells hold.
#[derive(Debug, Clone)]
pub struct Pivot {
    pub table: Table,
    pub legend: String,
    /// Each cell's mean (GB/s), row by row: the CSV's numbers.
    pub means: Vec<Vec<Option<f64>>>,
}

/// The records' `kernel` rates laid out `rows` down and `columns` across.
pub fn pivot(
    records: &[Record],
    kernel: KernelId,
    rows: Axis,
    columns: Axis,
) -> Result<Pivot, PivotError> {
    if rows == columns {
        return Err(PivotError::SameAxis(rows));
    }
    let sorted = reading_order(records);
    // Parts that still tell points apart once rows and columns are known
    // go in the row's label (not a size that follows from the threads).
    let mut rest: Vec<Axis> = Vec::new();
    for a in Axis::ALL {
        if [rows, columns].contains(&a) {
            continue;
        }
        let known = |r: &Record| {
            let mut key = vec![rows.value(r), columns.value(r)];
            key.extend(rest.iter().map(|k| k.value(r)));
            key
        };
        let tells_apart = sorted.iter().enumerate().any(|(i, x)| {
            sorted[i + 1..]
                .iter()
                .any(|y| known(x) == known(y) && a.value(x) != a.value(y))
        });
        if tells_apart {
            rest.push(a);
        }
    }
    let row_of = |r: &Record| {
        let mut parts = vec![rows.value(r)];
        parts.extend(rest.iter().map(|a| a.value(r)));
        parts.join(" · ")
    };
    let mut row_names: Vec<String> = Vec::new();
    let mut column_names: Vec<String> = Vec::new();
    for r in &sorted {
        for (names, name) in [
            (&mut row_names, row_of(r)),
            (&mut column_names, columns.value(r)),
        ] {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let mut cells = vec![vec![String::from("-"); column_names.len()]; row_names.len()];
    let mut means = vec![vec![None; column_names.len()]; row_names.len()];
    let mut best_row = None;
    let best = best_index(&sorted, kernel).map(|i| sorted[i]);
    let (mut untrusted, mut cached) = (false, false);
    for r in &sorted {
        let (row, column) = (row_of(r), columns.value(r));
        let i = row_names.iter().position(|n| *n == row).unwrap_or(0);
        let j = column_names.iter().position(|n| *n == column).unwrap_or(0);
        if cells[i][j] != "-" {
            return Err(PivotError::SharedCell { row, column });
        }
        let trust = r.kernel_trust(kernel);
        means[i][j] = trust.shown().map(|s| s.mean);
        let mut cell = super::stats_cell(trust.shown(), false).swap_remove(0);
        if trust.none() {
            cell.push_str(" !");
            untrusted = true;
        }
        if r.in_caches() {
            cell.push_str(" c");
            cached = true;
        }
        cells[i][j] = cell;
        if best.is_some_and(|b| std::ptr::eq(b, *r)) {
            best_row = Some(i);
        }
    }
    let mut corner = vec![rows.name()];
    corner.extend(rest.iter().map(|a| a.name()));
    let mut headers = vec![format!("{} \\ {}", corner.join(" · "), columns.name())];
    headers.extend(column_names);
    let rows = (row_names.into_iter().zip(cells))
        .map(|(name, cells)| std::iter::once(name).chain(cells).collect())
        .collect();
    let mut legend = format!("cells: {} GB/s; -: not measured", kernel.spec().name);
    if untrusted {
        legend.push_str("; !: NOT TRUSTED");
    }
    if cached {
        legend.push_str("; c: the arrays fit in the caches");
    }
    Ok(Pivot {
        table: Table {
            headers,
            rows,
            best: best_row,
        },
        legend,
        means,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point of a threads × policy sweep: `threads` threads, memory bound
    /// to `mem`, one run at `gb_s`.
    fn point(threads: usize, mem: usize, gb_s: f64) -> Record {
        let mut r = super::super::tests::cell(0, mem, gb_s);
        r.point.numa = None;
        r.point.threads = threads;
        r
    }

    #[test]
    fn threads_go_down_and_policies_across_and_nothing_else_is_lost() {
        let records = vec![
            point(1, 0, 10.0),
            point(1, 1, 7.0),
            point(2, 0, 19.0),
            point(2, 1, 12.5),
        ];
        let p = pivot(&records, KernelId::Triad, Axis::Threads, Axis::Mem).unwrap();
        assert_eq!(p.table.headers, ["threads \\ mem", "bind:0", "bind:1"]);
        assert_eq!(p.table.rows[0], ["1", "10.00", "7.00"]);
        assert_eq!(p.table.rows[1], ["2", "19.00", "12.50"]);
        assert_eq!(p.table.best, Some(1), "the 19 GB/s row");
        // Turned the other way, with a cell never measured.
        let p = pivot(&records[..3], KernelId::Triad, Axis::Mem, Axis::Threads).unwrap();
        assert_eq!(p.table.rows[1], ["bind:1", "7.00", "-"]);
    }

    #[test]
    fn a_part_that_still_tells_points_apart_joins_the_row_label() {
        let mut regular = point(1, 0, 10.0);
        regular.point.stores = crate::plan::StoresRequest::Regular;
        let mut nt = point(1, 0, 14.0);
        nt.point.stores = crate::plan::StoresRequest::Nt;
        let mut remote = point(1, 1, 8.0);
        remote.point.stores = crate::plan::StoresRequest::Nt;
        let p = pivot(
            &[regular, nt, remote],
            KernelId::Triad,
            Axis::Threads,
            Axis::Mem,
        )
        .unwrap();
        assert_eq!(p.table.headers[0], "threads · stores \\ mem");
        assert_eq!(p.table.rows.len(), 2, "{:?}", p.table.rows);
        assert!(
            p.table
                .rows
                .iter()
                .any(|r| r[0] == "1 · nt" && r[1] == "14.00" && r[2] == "8.00")
        );
    }

    #[test]
    fn points_no_axis_tells_apart_and_one_axis_twice_are_refused() {
        let mut other = point(1, 0, 11.0);
        other.point.ntimes = 20;
        let records = [point(1, 0, 10.0), other];
        assert!(matches!(
            pivot(&records, KernelId::Triad, Axis::Threads, Axis::Mem),
            Err(PivotError::SharedCell { .. })
        ));
        assert_eq!(
            pivot(&records, KernelId::Triad, Axis::Mem, Axis::Mem).unwrap_err(),
            PivotError::SameAxis(Axis::Mem)
        );
    }
}
