//! Placing an array under its policy before first touch: one mbind for
//! the whole array, or for a split, consecutive ranges of each thread's
//! chunk bound to each node in its share.

use super::policy::{Policy, SplitPart};
use super::{Hugepages, PAGE_ELEMENTS};
use crate::sys::{self, MappedArray};
use crate::units::ELEMENT_BYTES;
use std::ops::Range;

/// Applies `policy` to a mapped, untouched array: one mbind for the whole
/// array, or for a split, one per node within each thread's range.
pub fn place(
    array: &MappedArray,
    policy: &Policy,
    ranges: &[Range<usize>],
    hugepages: Hugepages,
) -> std::io::Result<()> {
    if let Some((mode, nodes)) = policy.mbind_args() {
        return sys::mbind(array, mode, &nodes);
    }
    let Policy::Split(parts) = policy else {
        return Ok(());
    };
    for range in ranges {
        for (nodes, piece) in split_range(
            range,
            parts,
            split_unit(array, range, parts.len(), hugepages),
        ) {
            sys::mbind_range(array, piece, sys::MemPolicyMode::Bind, &[nodes])?;
        }
    }
    Ok(())
}

/// The granule of a split's ranges, in elements: the explicit page size;
/// under THP 2 MiB where every piece can hold some (so THP still applies
/// and the mapping count stays small); else the base page.
fn split_unit(
    array: &MappedArray,
    range: &Range<usize>,
    parts: usize,
    hugepages: Hugepages,
) -> usize {
    let elements = |bytes: usize| bytes / ELEMENT_BYTES as usize;
    match array.hugetlb_page() {
        Some(page) => elements(page),
        None if hugepages.transparent()
            && range.len() >= 4 * parts * elements(sys::HUGEPAGE_BYTES) =>
        {
            elements(sys::HUGEPAGE_BYTES)
        }
        None => PAGE_ELEMENTS,
    }
}

/// The consecutive pieces of `range` for each node of a split, their
/// boundaries rounded to `unit` elements (the last piece takes the rest).
pub(super) fn split_range(
    range: &Range<usize>,
    parts: &[SplitPart],
    unit: usize,
) -> Vec<(usize, Range<usize>)> {
    let mut pieces = Vec::new();
    let (mut at, mut cumulative) = (range.start, 0.0);
    for (k, part) in parts.iter().enumerate() {
        cumulative += part.share();
        let end = if k + 1 == parts.len() {
            range.end
        } else {
            let exact = cumulative * range.len() as f64 / unit as f64;
            (range.start + exact.round() as usize * unit).clamp(at, range.end)
        };
        if end > at {
            pieces.push((part.node, at..end));
        }
        at = end;
    }
    pieces
}
