//! The cache-level study (`membw sweep --working-sets 16KiB..1GiB`): each
//! kernel's bandwidth where its working set stays in L1, L2 and L3 and
//! where it leaves them for DRAM, read off the size sweep with the caches
//! of the CPUs that ran (as the size plots mark them).

use crate::kernels::KernelId;
use crate::results::{Measured, Record};
use crate::units::Bytes;
use std::collections::BTreeMap;

/// Of a cache's capacity per thread, the share a working set may fill and
/// still be served by it (the rest goes to code, stacks and conflicts).
const FITS: f64 = 0.75;
/// STREAM's rule: arrays of at least 4 × the caches measure memory.
const DRAM_FACTOR: u64 = 4;

/// A level and the working sets per thread it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub name: String,
    /// Working sets per thread up to this (a cache), or from this (DRAM).
    pub bound: u64,
    pub dram: bool,
}

/// Which level serves a working set per thread: the smallest cache it fits
/// in, DRAM from 4 × the largest, none in between.
fn level_of(levels: &[Level], working_set: u64) -> Option<usize> {
    levels.iter().position(|l| match l.dram {
        false => working_set <= l.bound,
        true => working_set >= l.bound,
    })
}

/// The levels of the caches recorded with the records (L1d, L2, L3 per
/// thread, ascending), then DRAM.
fn levels(caches: &BTreeMap<String, u64>) -> Vec<Level> {
    let mut sized: Vec<(&String, u64)> = (caches.iter())
        .filter(|(_, b)| **b > 0)
        .map(|(n, b)| (n, *b))
        .collect();
    sized.sort_by_key(|&(_, b)| b);
    let mut out: Vec<Level> = sized
        .iter()
        .map(|&(name, bytes)| Level {
            name: name.trim_end_matches('d').to_string(),
            bound: (bytes as f64 * FITS) as u64,
            dram: false,
        })
        .collect();
    if let Some(&(_, largest)) = sized.last() {
        out.push(Level {
            name: "DRAM".into(),
            bound: largest * DRAM_FACTOR,
            dram: true,
        });
    }
    out
}

/// One level's figure: the best mean rate, and whether it comes from a
/// trusted point (an untrusted one stands in only where no trusted point
/// fell in the level), with that point's statistics for its ± and n.
pub type Cell = Option<(f64, bool, crate::results::Stats)>;

/// A row of the study: a kernel at a thread count, a cell per level.
pub type Row = (KernelId, usize, Vec<Cell>);

/// Each kernel's and thread count's best mean rate per level; `None`
/// unless a size sweep covers at least two levels. Each point is placed by
/// its own caches per thread (an L3's share shrinks as threads grow); the
/// levels returned, for the header, are those of points of the most
/// threads when the thread counts differ.
// A new kind must be decided wherever kinds are matched.
#[deny(clippy::wildcard_enum_match_arm)]
pub fn study(records: &[Record]) -> Option<(Vec<Level>, Vec<Row>)> {
    // Each point with the host caches that serve its threads (a device's
    // arrays are in its own memory), membw's own (a program's sizes are
    // its own).
    let sized: Vec<(&Record, &BTreeMap<String, u64>)> = records
        .iter()
        .filter(|r| r.point.numa.is_none() && r.point.working_set_per_thread > 0)
        .filter_map(|r| match r.point.measured() {
            Measured::Team(_) => Some((r, r.host_caches()?)),
            Measured::Program(..) | Measured::Device(_) => None,
        })
        .collect();
    let (_, widest) = sized.iter().max_by_key(|(r, _)| r.point.threads)?;
    let levels = levels(widest);
    let mut best: BTreeMap<(KernelId, usize), Vec<Cell>> = BTreeMap::new();
    let mut covered = vec![false; levels.len()];
    for (r, caches) in &sized {
        let own = self::levels(caches);
        let Some(l) = level_of(&own, r.point.working_set_per_thread).filter(|&l| l < levels.len())
        else {
            continue;
        };
        covered[l] = true;
        let trusted = r.untrusted().is_none();
        for (&kernel, stats) in &r.stats {
            let row = best
                .entry((kernel, r.point.threads))
                .or_insert_with(|| vec![None; levels.len()]);
            // Trusted beats untrusted; then the higher mean.
            let better = row[l]
                .as_ref()
                .is_none_or(|(b, t, _)| (trusted, stats.mean) > (*t, *b));
            if better {
                row[l] = Some((stats.mean, trusted, *stats));
            }
        }
    }
    if covered.iter().filter(|c| **c).count() < 2 {
        return None;
    }
    let rows = best.into_iter().map(|((k, t), v)| (k, t, v)).collect();
    Some((levels, rows))
}

/// The study's lines for the sweep summary and `membw report`.
pub fn findings(records: &[Record]) -> Vec<String> {
    let Some((levels, rows)) = study(records) else {
        return Vec::new();
    };
    let heads: Vec<String> = levels
        .iter()
        .map(|l| match l.dram {
            false => format!("{} (≤{})", l.name, Bytes(l.bound)),
            true => format!("{} (≥{})", l.name, Bytes(l.bound)),
        })
        .collect();
    let runs = rows
        .iter()
        .flat_map(|(_, _, cells)| cells.iter().flatten().map(|c| c.2.n))
        .min()
        .unwrap_or(0);
    let mut doubted = false;
    let texts: Vec<(String, Vec<String>)> = rows
        .into_iter()
        .map(|(kernel, threads, cells)| {
            let name = format!("  {:<8} {threads:>7}", kernel.spec().name);
            let cells = cells.into_iter().map(|cell| match cell {
                None => "-".to_string(),
                Some((g, trusted, stats)) => {
                    doubted |= !trusted;
                    let pm = (stats.ci.as_ref())
                        .map_or(String::new(), |ci| format!(" ±{:.1}", ci.half_width()));
                    format!("{g:.1}{pm}{}", if trusted { "" } else { "?" })
                }
            });
            (name, cells.collect())
        })
        .collect();
    let width = (heads.iter().chain(texts.iter().flat_map(|t| &t.1)))
        .map(|h| h.chars().count())
        .max()
        .unwrap_or(8);
    let spread = match runs {
        0 | 1 => "one run a point, so no interval: sweep --repeat 3 gives one".to_string(),
        n => format!("± its 95 % interval, n ≥ {n} runs a point"),
    };
    let mut lines = vec![format!(
        "Cache levels: the best mean GB/s of the working sets per thread each level serves ({spread})"
    )];
    let mut head = format!("  {:<8} {:>7}", "kernel", "threads");
    for h in &heads {
        head.push_str(&format!("  {h:>width$}"));
    }
    lines.push(head);
    for (name, cells) in texts {
        let mut line = name;
        for text in cells {
            line.push_str(&format!("  {text:>width$}"));
        }
        lines.push(line);
    }
    if doubted {
        lines.push("  ?: only points NOT TRUSTED fell in this level".into());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_sets_fall_in_the_level_that_serves_them() {
        let caches: BTreeMap<String, u64> = [
            ("L1d".to_string(), 32 << 10),
            ("L2".to_string(), 512 << 10),
            ("L3".to_string(), 16 << 20),
        ]
        .into();
        let levels = levels(&caches);
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["L1", "L2", "L3", "DRAM"]);
        assert_eq!(level_of(&levels, 16 << 10), Some(0));
        assert_eq!(level_of(&levels, 32 << 10), Some(1), "a full L1 spills");
        assert_eq!(level_of(&levels, 256 << 10), Some(1));
        assert_eq!(level_of(&levels, 4 << 20), Some(2));
        assert_eq!(level_of(&levels, 32 << 20), None, "between L3 and DRAM");
        assert_eq!(level_of(&levels, 64 << 20), Some(3));
    }
}
