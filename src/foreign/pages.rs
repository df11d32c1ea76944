//! Where another program's pages are: a sample of its anonymous memory
//! located page by page (move_pages), and numa_maps for the whole.

use crate::sys::{self};
use std::collections::BTreeMap;
use std::path::Path;

/// Where a sample of a program's pages are.
#[derive(Default)]
pub(super) struct PageSample {
    pub(super) per_node: BTreeMap<usize, u64>,
    pub(super) absent: u64,
}

/// The most pages one sample asks about: shares to about 3 %, at a cost
/// that does not grow with the program.
pub(super) const PAGES_PER_SAMPLE: usize = 1024;

/// The node of pages spread evenly over the program's anonymous mappings
/// (its heap and mmapped arrays, which its policy governs), by move_pages.
/// Reading `/proc/PID/numa_maps` instead walks every page table under the
/// program's memory lock: about 9 ms of CPU for a 480 MB STREAM here, more
/// than 1 % of a short run. It is the fallback where move_pages is refused.
pub(super) fn sample_pages(pid: u32) -> Option<PageSample> {
    let maps = crate::topology::read_bounded(Path::new(&format!("/proc/{pid}/maps")))?;
    let ranges = anonymous_ranges(&String::from_utf8_lossy(&maps));
    let addresses = spread_pages(&ranges, sys::page_size(), PAGES_PER_SAMPLE);
    match sys::process_page_nodes(pid, &addresses) {
        Ok(nodes) => {
            let mut sample = PageSample::default();
            for node in nodes {
                match node {
                    Some(n) => *sample.per_node.entry(n).or_insert(0) += 1,
                    None => sample.absent += 1,
                }
            }
            Some(sample)
        }
        Err(_) => Some(PageSample {
            per_node: numa_pages(&format!("/proc/{pid}/numa_maps"))?,
            absent: 0,
        }),
    }
}

/// The address ranges of the private anonymous mappings in a maps file:
/// no backing file (inode 0), or the heap; not the stack or the kernel's
/// vdso pages.
pub(super) fn anonymous_ranges(maps: &str) -> Vec<(usize, usize)> {
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (range, perms) = (fields.next()?, fields.next()?);
            let inode = fields.nth(2)?;
            let name = fields.next().unwrap_or("");
            let anonymous = inode == "0" && (name.is_empty() || name == "[heap]");
            if !anonymous || !perms.starts_with("rw") {
                return None;
            }
            let (from, to) = range.split_once('-')?;
            let from = usize::from_str_radix(from, 16).ok()?;
            let to = usize::from_str_radix(to, 16).ok()?;
            (to > from).then_some((from, to))
        })
        .collect()
}

/// At most `count` page addresses spread evenly over `ranges` taken end to
/// end, so that each range gets samples in proportion to its size.
pub(super) fn spread_pages(ranges: &[(usize, usize)], page: usize, count: usize) -> Vec<usize> {
    let total: usize = ranges.iter().map(|(a, b)| (b - a) / page).sum();
    let count = count.min(total);
    let mut addresses = Vec::with_capacity(count);
    let (mut range, mut before) = (0, 0);
    for i in 0..count {
        // The middle page of the i-th of `count` equal stretches.
        let index = (2 * i + 1) * total / (2 * count);
        while index >= before + (ranges[range].1 - ranges[range].0) / page {
            before += (ranges[range].1 - ranges[range].0) / page;
            range += 1;
        }
        addresses.push(ranges[range].0 + (index - before) * page);
    }
    addresses
}

/// Pages per node over the anonymous mappings of a numa_maps file
/// (`N0=12 N1=3`): the memory the program allocated, which its policy
/// governs; its binary and libraries stay where the page cache has them.
pub fn numa_pages(path: &str) -> Option<BTreeMap<usize, u64>> {
    let text = crate::topology::read_bounded(Path::new(path))?;
    let text = String::from_utf8_lossy(&text);
    let mut pages = BTreeMap::new();
    let anonymous = text.lines().filter(|l| l.contains(" anon="));
    for word in anonymous.flat_map(str::split_whitespace) {
        if let Some((node, count)) = word
            .strip_prefix('N')
            .and_then(|w| w.split_once('='))
            .and_then(|(n, c)| Some((n.parse::<usize>().ok()?, c.parse::<u64>().ok()?)))
        {
            *pages.entry(node).or_insert(0) += count;
        }
    }
    (!pages.is_empty()).then_some(pages)
}
