//! Where each thread's chunk of the arrays begins and ends: contiguous
//! ranges like OpenMP's `schedule(static)`, on the boundaries that keep
//! first touch and huge pages right and the work even.

use super::{Hugepages, PAGE_ELEMENTS};
use crate::units::ELEMENT_BYTES;
use std::ops::Range;

/// Contiguous, page-aligned ranges, one per thread, like OpenMP's
/// `schedule(static)`; sizes differ by at most one page.
pub fn partition(elements: usize, threads: usize) -> Vec<Range<usize>> {
    partition_in(elements, threads, PAGE_ELEMENTS)
}

/// Elements per cache line: the finest chunk boundary.
pub const LINE_ELEMENTS: usize = 64 / ELEMENT_BYTES as usize;

/// Base pages per thread from which chunks split on page boundaries: below
/// it a page more or less is over 0.4 % of a thread's work, and at L1 size
/// (a page or two per array) the slowest thread did a third more than the
/// fastest. Such arrays live in the caches, where no page's node matters.
const PAGE_SPLIT_MIN_PAGES: usize = 256;

/// The chunk boundaries for arrays on `hugepages`: on explicit huge pages,
/// whole huge pages per thread where every thread gets at least one, so
/// that no huge page is first-touched by two threads (on two nodes);
/// otherwise base pages, keeping the work even; cache lines for arrays too
/// small for pages to split them evenly.
pub fn partition_for(elements: usize, threads: usize, hugepages: Hugepages) -> Vec<Range<usize>> {
    let base = if elements / threads.max(1) >= PAGE_SPLIT_MIN_PAGES * PAGE_ELEMENTS {
        PAGE_ELEMENTS
    } else {
        LINE_ELEMENTS
    };
    let unit = hugepages
        .explicit_bytes()
        .map(|b| b / ELEMENT_BYTES as usize)
        .filter(|&u| elements / u >= threads)
        .unwrap_or(base);
    partition_in(elements, threads, unit)
}

fn partition_in(elements: usize, threads: usize, unit: usize) -> Vec<Range<usize>> {
    let pages = elements.div_ceil(unit);
    let (per, extra) = (pages / threads, pages % threads);
    let mut start = 0;
    (0..threads)
        .map(|t| {
            // The extra units go to the last threads, which also hold the
            // partial last unit, so sizes stay within one unit of each other.
            let count = (per + usize::from(t >= threads - extra)) * unit;
            let end = (start + count).min(elements);
            let range = start..end;
            start = end;
            range
        })
        .collect()
}
