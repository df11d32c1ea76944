//! `membw kernels`: every kernel's loop and the bytes it is credited with,
//! the table STREAM's tutorials print by hand (copy 16 B, triad 24 B per
//! element), with what ordinary stores add on the bus.

use super::study::Table;
use crate::kernels::{KERNEL_GROUPS, KERNELS, Mover, Path, StoreMode};

/// The kernels and groups, for people.
pub fn text() -> String {
    let rows = KERNELS
        .iter()
        .map(|k| {
            let groups: Vec<&str> = (KERNEL_GROUPS.iter())
                .filter(|(name, members)| *name != "all" && members.contains(&k.id))
                .map(|(name, _)| *name)
                .collect();
            let (counted, bus) = (k.bytes_counted(), k.bytes_moved(StoreMode::Regular));
            let crosses = match k.path {
                Path::Memory => "memory",
                Path::HostLink {
                    by: Mover::CopyEngine,
                    ..
                } => "host link (copy engine)",
                Path::HostLink {
                    by: Mover::Kernel, ..
                } => "host link (device threads)",
                Path::HostLink {
                    by: Mover::Pageable,
                    ..
                } => "host link (staged, pageable)",
            };
            vec![
                k.name.to_string(),
                k.formula.to_string(),
                counted.to_string(),
                match bus == counted {
                    true => "-".into(),
                    false => format!("+{}", bus - counted),
                },
                k.flops_per_element.to_string(),
                crosses.to_string(),
                groups.join(", "),
            ]
        })
        .collect();
    let table = Table {
        headers: [
            "kernel", "loop", "B/elem", "write-alloc", "flops", "crosses", "groups",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        best: None,
    };
    format!(
        "{}B/elem: bytes per element as STREAM counts them (each array read or written once), the\n\
         bytes every GB/s of membw and STREAM is computed from\n\
         write-alloc: what ordinary stores add on the bus (each written line read first), which\n\
         --stores nt avoids; a run with regular stores prints the bus rate beside each kernel\n\
         groups for --kernels: {}; all: every memory kernel; transfers: a device's host link\n",
        table.plain(),
        KERNEL_GROUPS
            .iter()
            .filter(|(g, _)| !matches!(*g, "all" | "transfers"))
            .map(|(g, members)| format!("{g} ({})", members.len()))
            .collect::<Vec<_>>()
            .join(", ")
    )
}
