//! The arrays: sizing, the fit check against available memory, mapping,
//! NUMA policy and hugepage advice, the split into per-thread chunks that
//! each thread first-touches itself, and where the pages ended up.

pub mod gpu_memory;
pub mod inherited;
mod partition;
pub mod policy;
pub mod pool;
mod split;
pub mod stream_rule;
pub mod written;

pub use partition::{LINE_ELEMENTS, partition, partition_for};
pub use split::place;

use crate::error::{Error, Input, Result};
use crate::kernels::{ARRAYS, ArrayId};
use crate::sys::{self, MappedArray};
use crate::topology::Topology;
use crate::units::{Bytes, ELEMENT_BYTES};
use policy::{MemPolicy, PagePlacement, Policy};
use std::collections::BTreeMap;
use std::ops::Range;

/// Elements per base page: chunk boundaries fall on page boundaries so
/// that no page is first-touched by two threads.
pub const PAGE_ELEMENTS: usize = 4096 / ELEMENT_BYTES as usize;

/// The page size of the arrays (`--hugepages`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Hugepages {
    /// Leave the arrays to the system's THP setting (no advice). Faulting in
    /// 2 MiB pages costs setup time and streaming access rarely misses the
    /// TLB, so membw does not force hugepages by default.
    #[serde(rename = "auto")]
    #[default]
    Auto,
    /// Ask for THP and fail if the kernel has THP disabled.
    #[serde(rename = "thp")]
    Thp,
    /// Ask the kernel not to use THP for the arrays: 4 KiB pages.
    #[serde(rename = "never")]
    Never,
    /// Explicit 2 MiB pages from the hugetlb pool (MAP_HUGETLB): huge for
    /// sure, where THP is best effort.
    #[serde(rename = "2M")]
    Explicit2M,
    /// Explicit 1 GiB pages from the hugetlb pool (x86 needs `pdpe1gb`).
    #[serde(rename = "1G")]
    Explicit1G,
}

impl Hugepages {
    pub const ALL: [Hugepages; 5] = [
        Hugepages::Auto,
        Hugepages::Thp,
        Hugepages::Never,
        Hugepages::Explicit2M,
        Hugepages::Explicit1G,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Hugepages::Auto => "auto",
            Hugepages::Thp => "thp",
            Hugepages::Never => "never",
            Hugepages::Explicit2M => "2M",
            Hugepages::Explicit1G => "1G",
        }
    }

    /// Reads a name as users write it: `thp`, `never`, `2M`, `2MiB`, `1g`.
    pub fn parse(text: &str) -> Option<Hugepages> {
        let t = text.trim().to_ascii_lowercase();
        let t = t.strip_suffix("ib").or(t.strip_suffix('b')).unwrap_or(&t);
        match t {
            "auto" => Some(Hugepages::Auto),
            "thp" => Some(Hugepages::Thp),
            "never" | "4k" => Some(Hugepages::Never),
            "2m" => Some(Hugepages::Explicit2M),
            "1g" => Some(Hugepages::Explicit1G),
            _ => None,
        }
    }

    /// The explicit huge page size in bytes; `None` for THP and base pages.
    pub fn explicit_bytes(self) -> Option<usize> {
        match self {
            Hugepages::Explicit2M => Some(2 << 20),
            Hugepages::Explicit1G => Some(1 << 30),
            _ => None,
        }
    }

    pub fn is_auto(&self) -> bool {
        *self == Hugepages::Auto
    }

    /// Advises the kernel on `array`'s pages as this page size asks: THP
    /// for `thp` (and for a mapping an explicit size could not get from
    /// the pool), base pages for `never`, nothing for `auto` (the system's
    /// setting decides).
    pub fn advise(self, array: &MappedArray) -> std::io::Result<()> {
        match self {
            Hugepages::Auto => Ok(()),
            Hugepages::Never => array.advise_hugepages(false),
            _ => array.advise_hugepages(true),
        }
    }

    /// Whether THP may back the arrays (so chunk boundaries need care).
    pub fn transparent(self) -> bool {
        matches!(self, Hugepages::Auto | Hugepages::Thp)
    }
}

impl std::fmt::Display for Hugepages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// STREAM's sizing rule: each array at least 4 × the sum of all caches serving
/// the CPUs used, and never below STREAM's own default of 10M elements
/// (that default alone where the caches are unknown: the plan then says
/// the rule cannot be judged); rounded up so every thread gets whole pages.
pub fn default_elements(topo: &Topology, cpus: &[usize]) -> u64 {
    let used = cpus.iter().copied().collect();
    let rule = stream_rule::StreamRule::for_cpus(topo, &used).min_elements();
    let elements = rule.unwrap_or(0).max(10_000_000);
    let unit = (PAGE_ELEMENTS * cpus.len().max(1)) as u64;
    elements.div_ceil(unit) * unit
}

/// Refuses, before anything is mapped, an array set larger than what the
/// machine (and our cgroup) can give.
pub fn check_fits(topo: &Topology, arrays: usize, elements: u64) -> Result<()> {
    let needed = Bytes(
        elements
            .checked_mul(ELEMENT_BYTES * arrays as u64)
            .ok_or_else(|| {
                Error::input(
                    Input::Size,
                    elements.to_string(),
                    "the arrays' size overflows",
                )
            })?,
    );
    if let Some(available) = topo.memory.allocatable()
        && needed > available
    {
        {
            let limit = match topo.memory.cgroup_limit {
                Some(l) if Some(available) != topo.memory.available => {
                    format!(" (cgroup limit {l})")
                }
                _ => String::new(),
            };
            return Err(Error::about(
                Input::Size,
                format!(
                    "{arrays} arrays of {elements} elements need {needed} but only {available} is available{limit}"
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses arrays bound to nodes (`bind:N`) that cannot hold them: more
/// bytes than those nodes have in all. Bound memory has nowhere else to
/// go: the kernel would kill membw for it (a check's scope of a small
/// memory-only node, `--mem bind:N` on a small node). Free memory is not
/// judged: the page cache gives way.
pub fn check_fits_bound(
    topo: &Topology,
    mem: &MemPolicy,
    arrays: &[ArrayId],
    elements: u64,
) -> Result<()> {
    let mut bound: Vec<(&crate::topology::cpulist::IdSet, usize)> = Vec::new();
    for &id in arrays {
        if let Policy::Bind(nodes) = mem.get(id) {
            match bound.iter_mut().find(|(n, _)| *n == nodes) {
                Some((_, count)) => *count += 1,
                None => bound.push((nodes, 1)),
            }
        }
    }
    for (nodes, count) in bound {
        let total: Option<u64> = (nodes.ids().iter())
            .map(|&n| Some(topo.node(n)?.mem_total?.0))
            .sum();
        let needed = elements.saturating_mul(ELEMENT_BYTES * count as u64);
        if let Some(total) = total
            && needed > total
        {
            return Err(Error::about(
                Input::Mem,
                format!(
                    "{count} arrays of {elements} elements bound to node {nodes} need {}, more than the {} it has (a smaller --size fits)",
                    Bytes(needed),
                    Bytes(total)
                ),
            ));
        }
    }
    Ok(())
}

/// The mapped arrays; `None` for an array no selected kernel uses.
pub struct Arrays {
    arrays: [Option<MappedArray>; ARRAYS],
    pub elements: usize,
    hugepages: Hugepages,
}

/// One thread's share of every mapped array.
pub struct Chunk<'a> {
    pub arrays: [Option<&'a mut [f64]>; ARRAYS],
    /// Index of the chunk's first element in the whole array.
    pub offset: usize,
}

impl Chunk<'_> {
    /// The chunk of array `id`. The plan maps every array its kernels
    /// use (`Arrays::map` takes the kernels' union), so a miss is a bug in
    /// membw, not something input can cause.
    pub fn get(&mut self, id: ArrayId) -> &mut [f64] {
        self.arrays[id.index()]
            .as_deref_mut()
            .expect("kernel uses an array that was mapped")
    }
}

/// Where array `id` starts in its explicit-huge-page mapping. The pool
/// hands out pages in address order, so arrays that all started at a page
/// boundary would start (and stay) on the same cache sets and DRAM banks:
/// on this project's test VM, add and triad on 1 GiB arrays of 2 MiB pages
/// ran at 0.6-0.8× of THP without a stagger and at THP's speed with one.
/// STREAM's `OFFSET` is the same remedy. (THP pages come from wherever the
/// allocator finds them, and need none.)
pub fn stagger_bytes(id: ArrayId) -> usize {
    id.index() * (4096 + 64)
}

/// Where array `id`'s first element lies past its mapping's alignment:
/// STREAM's OFFSET (`offset` elements for b, twice for c, as its static
/// arrays a[N+OFFSET], b[...], c[...] follow each other), plus the stagger
/// of explicit huge pages.
pub fn start_bytes(id: ArrayId, offset: usize, hugetlb: bool) -> usize {
    let stagger = if hugetlb { stagger_bytes(id) } else { 0 };
    stagger + id.index() * offset * ELEMENT_BYTES as usize
}

/// Pages checked per array; smaller arrays are checked whole.
const MAX_PAGE_SAMPLES: usize = 4096;

/// Which of `pages` pages to check: all of them when there are at most
/// `max`, else `max` spread by the golden-ratio sequence. A fixed stride
/// would alias with interleave's round-robin (a stride of 4 over 2 nodes
/// sees one node only) and with hugepage boundaries.
fn sample_pages(pages: usize, max: usize) -> Vec<usize> {
    if pages <= max {
        return (0..pages).collect();
    }
    const PHI_FRACTION: f64 = 0.618_033_988_749_894_9;
    let mut picks: Vec<usize> = (0..max)
        .map(|k| ((k as f64 * PHI_FRACTION).fract() * pages as f64) as usize)
        .collect();
    picks.sort_unstable();
    picks.dedup();
    picks
}

impl Arrays {
    /// Maps (without touching) the arrays in `needed`, each under its NUMA
    /// policy: mbind happens here, before any page exists. A split policy
    /// is placed within each of the threads' `ranges`.
    pub fn map(
        needed: &[ArrayId],
        elements: usize,
        offset: usize,
        hugepages: Hugepages,
        mem: &MemPolicy,
        ranges: &[Range<usize>],
    ) -> Result<Arrays> {
        let mut arrays: [Option<MappedArray>; ARRAYS] = Default::default();
        for &id in needed {
            let array = match hugepages.explicit_bytes() {
                Some(page) => MappedArray::hugetlb(elements, page, start_bytes(id, offset, true)),
                None => MappedArray::new(elements, start_bytes(id, offset, false)),
            }
            .map_err(|e| {
                Error::Runtime(format!(
                    "cannot map array {} on {hugepages} pages: {e}",
                    id.name()
                ))
            })?;
            place(&array, mem.get(id), ranges, hugepages).map_err(|e| {
                Error::Runtime(format!("mbind {} on array {}: {e}", mem.get(id), id.name()))
            })?;
            hugepages.advise(&array).map_err(|e: std::io::Error| {
                Error::Runtime(format!("madvise on array {}: {e}", id.name()))
            })?;
            arrays[id.index()] = Some(array);
        }
        Ok(Arrays {
            arrays,
            elements,
            hugepages,
        })
    }

    /// Keeps THP off the 2 MiB regions that straddle a boundary between two
    /// threads' chunks: a huge page there would be faulted in whole by
    /// whichever thread touched it first, putting part of the other thread's
    /// chunk on the wrong node. Chunk interiors keep whatever THP gives them.
    ///
    /// Only arrays placed by first touch need it: under bind, preferred or
    /// interleave the toucher does not decide the node, and splitting the
    /// mapping into several VMAs restarts interleave's round-robin in each
    /// piece (on a 2-node kernel a 16 MiB array came out 76 %/24 %).
    pub fn split_hugepages_at(&self, ranges: &[Range<usize>], mem: &MemPolicy) -> Result<()> {
        let first_touch = ArrayId::ALL
            .into_iter()
            .filter(|&id| *mem.get(id) == Policy::Local)
            .filter_map(|id| self.array(id));
        for array in first_touch {
            // A boundary on a 2 MiB address needs nothing (an --offset
            // moves the array's start off one).
            let base = array.as_slice().as_ptr() as usize;
            for r in ranges.iter().skip(1).filter(|r| {
                !(base + r.start * ELEMENT_BYTES as usize).is_multiple_of(sys::HUGEPAGE_BYTES)
            }) {
                sys::no_hugepage_around(array, r.start)
                    .map_err(|e| Error::Runtime(format!("madvise at a chunk boundary: {e}")))?;
            }
        }
        Ok(())
    }

    pub fn has(&self, id: ArrayId) -> bool {
        self.arrays[id.index()].is_some()
    }

    pub fn array(&self, id: ArrayId) -> Option<&MappedArray> {
        self.arrays[id.index()].as_ref()
    }

    pub fn array_mut(&mut self, id: ArrayId) -> Option<&mut MappedArray> {
        self.arrays[id.index()].as_mut()
    }

    /// Samples up to `MAX_SAMPLES` pages of every array and reports, per
    /// array, the share of pages on each node and whether the policy held.
    /// `thread_nodes[t]` is the node of the thread that touched `ranges[t]`.
    pub fn page_placement(
        &self,
        mem: &MemPolicy,
        ranges: &[Range<usize>],
        thread_nodes: &[Option<usize>],
    ) -> (Vec<PagePlacement>, Vec<String>) {
        self.page_placement_of(&ArrayId::ALL, mem, ranges, thread_nodes)
    }

    /// [`page_placement`](Self::page_placement) of the arrays `ids` only.
    pub fn page_placement_of(
        &self,
        ids: &[ArrayId],
        mem: &MemPolicy,
        ranges: &[Range<usize>],
        thread_nodes: &[Option<usize>],
    ) -> (Vec<PagePlacement>, Vec<String>) {
        let mut placements = Vec::new();
        let mut warnings = Vec::new();
        for &id in ids {
            let Some(array) = self.array(id) else {
                continue;
            };
            let pages = self.elements.div_ceil(PAGE_ELEMENTS);
            let samples: Vec<usize> = sample_pages(pages, MAX_PAGE_SAMPLES)
                .into_iter()
                .map(|p| p * PAGE_ELEMENTS)
                .collect();
            let found = match sys::page_nodes(array, &samples) {
                Ok(f) => f,
                Err(e) => {
                    warnings.push(format!(
                        "cannot query page locations of array {}: {e}",
                        id.name()
                    ));
                    continue;
                }
            };
            let present: Vec<(usize, usize)> = samples
                .iter()
                .zip(&found)
                .filter_map(|(&i, n)| n.map(|n| (i, n)))
                .collect();
            // Counted, then divided once: a share of all pages reads 1, not
            // a sum of fractions (1.0000000000000007).
            let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
            for &(_, n) in &present {
                *counts.entry(n).or_default() += 1;
            }
            let nodes: BTreeMap<usize, f64> = counts
                .into_iter()
                .map(|(n, c)| (n, c as f64 / present.len() as f64))
                .collect();
            let policy = mem.get(id);
            // Under every policy: a bind or interleave to another node
            // shows as remote (`numactl --cpunodebind 0 --membind 1`).
            let local_share = (!present.is_empty()).then(|| {
                let local = present
                    .iter()
                    .filter(|&&(i, n)| {
                        let owner = ranges.iter().position(|r| r.contains(&i));
                        owner.and_then(|t| thread_nodes.get(t).copied().flatten()) == Some(n)
                    })
                    .count();
                local as f64 / present.len() as f64
            });
            let (mut held, why) = policy::judge(policy, &nodes, local_share);
            if let Some(why) = why {
                warnings.push(format!(
                    "memory policy {policy} did not hold for array {}: {why}",
                    id.name()
                ));
            }
            let paging = sys::page_use(array.addr(), self.elements * ELEMENT_BYTES as usize);
            let kernel_page_kib = paging.as_ref().and_then(|u| match u.kernel_page_kib[..] {
                [one] => Some(one),
                _ => None,
            });
            if let Some(want) = self.hugepages.explicit_bytes().map(|b| b as u64 / 1024)
                && kernel_page_kib != Some(want)
            {
                held = false;
                warnings.push(format!(
                    "array {} is not on {} pages: KernelPageSize {:?} kB in smaps",
                    id.name(),
                    self.hugepages,
                    paging
                        .as_ref()
                        .map(|u| u.kernel_page_kib.clone())
                        .unwrap_or_default()
                ));
            }
            placements.push(PagePlacement {
                array: id.name().into(),
                policy: policy.to_string(),
                pages_sampled: samples.len(),
                pages_missing: samples.len() - present.len(),
                nodes,
                local_share,
                held,
                kernel_page_kib,
                huge_share: paging.and_then(|u| u.huge_share()),
            });
        }
        (placements, warnings)
    }

    /// Splits every array along `ranges` into one [`Chunk`] per thread.
    pub fn chunks(&mut self, ranges: &[Range<usize>]) -> Vec<Chunk<'_>> {
        let mut per_array: Vec<Vec<Option<&mut [f64]>>> = self
            .arrays
            .iter_mut()
            .map(|slot| match slot {
                Some(array) => split_ranges(array.as_mut_slice(), ranges)
                    .into_iter()
                    .map(Some)
                    .collect(),
                None => ranges.iter().map(|_| None).collect(),
            })
            .collect();
        let mut columns: Vec<_> = per_array.iter_mut().map(|v| v.drain(..)).collect();
        ranges
            .iter()
            .map(|r| Chunk {
                arrays: std::array::from_fn(|i| columns[i].next().flatten()),
                offset: r.start,
            })
            .collect()
    }
}

fn split_ranges<'a>(mut rest: &'a mut [f64], ranges: &[Range<usize>]) -> Vec<&'a mut [f64]> {
    let mut consumed = 0;
    ranges
        .iter()
        .map(|r| {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - consumed);
            let (chunk, tail) = tail.split_at_mut(r.len());
            consumed = r.end;
            rest = tail;
            chunk
        })
        .collect()
}

#[cfg(test)]
mod tests;
