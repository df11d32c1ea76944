//! Memory calls: anonymous and hugetlb mappings, page-size advice and
//! checks, NUMA policy (mbind) and page locations (move_pages).

use std::io;

/// Size of a base page.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(v).unwrap_or(4096)
}

/// Size of a transparent hugepage on x86_64 and most aarch64 kernels.
pub const HUGEPAGE_BYTES: usize = 2 << 20;

/// An anonymous, private, zero-filled mapping of f64s, aligned to a hugepage.
///
/// Mapping touches no page: pages are placed by whoever writes them first
/// (first touch), which is why arrays are mapped rather than allocated.
/// The pages are base pages (which THP may merge) or, from
/// [`MappedArray::hugetlb`], explicit huge pages of one size.
pub struct MappedArray {
    base: *mut libc::c_void,
    map_len: usize,
    data: *mut f64,
    len: usize,
    /// The explicit huge page size in bytes; `None` for base pages.
    hugetlb: Option<usize>,
}

// SAFETY: the mapping is owned memory like a Box<[f64]>; access goes through
// &self / &mut self, so the usual borrow rules make sharing sound.
unsafe impl Send for MappedArray {}
// SAFETY: as above; &MappedArray only hands out shared slices.
unsafe impl Sync for MappedArray {}

fn array_bytes(len: usize) -> io::Result<usize> {
    len.checked_mul(8)
        .filter(|&b| b <= isize::MAX as usize / 2)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "array too large"))
}

impl MappedArray {
    /// Maps `len` f64s (len > 0) of base pages starting `start` bytes (a
    /// multiple of 8) past a 2 MiB boundary.
    pub fn new(len: usize, start: usize) -> io::Result<MappedArray> {
        let start = start / 8 * 8;
        // Over-map by one hugepage so the data can start on a 2 MiB boundary.
        let map_len = array_bytes(len)?
            .checked_add(HUGEPAGE_BYTES + start)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "array too large"))?;
        let base = map(map_len, libc::MAP_NORESERVE)?;
        let offset = (HUGEPAGE_BYTES - (base as usize % HUGEPAGE_BYTES)) % HUGEPAGE_BYTES + start;
        // SAFETY: offset < HUGEPAGE_BYTES + start, so data..data+bytes lies inside the mapping.
        let data = unsafe { base.cast::<u8>().add(offset) }.cast::<f64>();
        Ok(MappedArray {
            base,
            map_len,
            data,
            len,
            hugetlb: None,
        })
    }

    /// Maps `len` f64s on explicit huge pages of `page` bytes (a power of
    /// two the kernel has a pool for: 2 MiB, 1 GiB), the data starting
    /// `offset` bytes (a multiple of 8) into the first page. The mapping
    /// reserves its pages from the pool now (no MAP_NORESERVE): a pool too
    /// small fails here with ENOMEM instead of a SIGBUS at first touch.
    pub fn hugetlb(len: usize, page: usize, offset: usize) -> io::Result<MappedArray> {
        if !page.is_power_of_two() || page < HUGEPAGE_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{page} bytes is not a huge page size"),
            ));
        }
        let offset = offset / 8 * 8 % page;
        let map_len = (array_bytes(len)? + offset).next_multiple_of(page);
        let size_flag = (page.trailing_zeros() as libc::c_int) << libc::MAP_HUGE_SHIFT;
        let base = map(map_len, libc::MAP_HUGETLB | size_flag)?;
        // SAFETY: offset < page <= map_len - bytes, so the data lies inside the mapping.
        let data = unsafe { base.cast::<u8>().add(offset) }.cast::<f64>();
        Ok(MappedArray {
            base,
            map_len,
            data,
            len,
            hugetlb: Some(page),
        })
    }

    /// The explicit huge page size, `None` for base pages.
    /// Locks the array's pages in memory (`mlock`), as a device's pinned
    /// host buffer is: they are faulted in where the policy puts them and
    /// can no longer be swapped or migrated. Fails past `ulimit -l`.
    pub fn lock(&self) -> io::Result<()> {
        let bytes = array_bytes(self.len)?;
        // SAFETY: data..data+bytes lies inside this mapping, which we own;
        // mlock changes no byte and the munmap in Drop unlocks the pages.
        match unsafe { libc::mlock(self.data.cast(), bytes) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    pub fn hugetlb_page(&self) -> Option<usize> {
        self.hugetlb
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[f64] {
        // SAFETY: data is aligned, valid for len f64s (zero-filled by mmap) and
        // lives as long as self.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        // SAFETY: as in as_slice, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.data, self.len) }
    }

    /// The same memory as 64-bit words (a pointer chase stores indices).
    pub fn as_mut_words(&mut self) -> &mut [u64] {
        // SAFETY: u64 has f64's size and alignment and every bit pattern is
        // a valid u64; the mapping is valid for len of them and &mut self
        // guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.data.cast::<u64>(), self.len) }
    }

    /// Asks for (or against) transparent hugepages on the array's range.
    /// Explicit huge pages take no advice (they are huge already).
    pub fn advise_hugepages(&self, use_them: bool) -> io::Result<()> {
        if self.hugetlb.is_some() {
            return Ok(());
        }
        let advice = if use_them {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: the range is part of our own live mapping.
        let rc = unsafe { libc::madvise(self.base, self.map_len, advice) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Address of the first element, for page-location queries.
    pub fn addr(&self) -> usize {
        self.data as usize
    }
}

/// An anonymous private read-write mapping of `len` bytes with `flags`.
fn map(len: usize, flags: libc::c_int) -> io::Result<*mut libc::c_void> {
    // SAFETY: anonymous private mapping with no address hint; the result is checked.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(base)
    }
}

impl Drop for MappedArray {
    fn drop(&mut self) {
        // SAFETY: base/map_len are exactly what mmap returned; nothing borrows
        // the memory any more since we hold &mut self.
        unsafe { libc::munmap(self.base, self.map_len) };
    }
}

/// How the memory in a range is paged, from `/proc/self/smaps`, summed
/// over the mappings that overlap it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageUse {
    /// Resident base and THP memory (hugetlb pages are not counted here).
    pub resident_kib: u64,
    /// Of that, transparent hugepages.
    pub thp_kib: u64,
    /// Explicit (hugetlb) huge pages in use.
    pub hugetlb_kib: u64,
    /// Every `KernelPageSize` of the overlapping mappings, ascending.
    pub kernel_page_kib: Vec<u64>,
}

impl PageUse {
    /// The share of the range's memory in huge pages of either kind.
    pub fn huge_share(&self) -> Option<f64> {
        let all = self.resident_kib + self.hugetlb_kib;
        (all > 0).then(|| (self.thp_kib + self.hugetlb_kib) as f64 / all as f64)
    }
}

/// How `[addr, addr + len)` of this process is paged (None where smaps is
/// unreadable or nothing overlaps).
/// Locks `len` doubles of memory at `addr` in RAM (`mlock`), as a
/// driver pins a host buffer it registers: faulted in where their policy
/// puts them, never swapped or migrated. Fails past `ulimit -l`, or where
/// the range is not mapped; unlocked when it is unmapped.
pub fn lock_range(addr: *const f64, len: usize) -> io::Result<()> {
    let bytes = array_bytes(len)?;
    // SAFETY: mlock reads and writes no byte of the range; an unmapped
    // range is an error (ENOMEM), not undefined behaviour.
    match unsafe { libc::mlock(addr.cast(), bytes) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

pub fn page_use(addr: usize, len: usize) -> Option<PageUse> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    parse_smaps(&text, addr, len)
}

fn parse_smaps(text: &str, addr: usize, len: usize) -> Option<PageUse> {
    let (mut found, mut inside) = (PageUse::default(), false);
    let mut any = false;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let first = words.next()?;
        if let Some((from, to)) = first.split_once('-').filter(|_| !first.ends_with(':')) {
            let (Ok(from), Ok(to)) = (
                usize::from_str_radix(from, 16),
                usize::from_str_radix(to, 16),
            ) else {
                continue;
            };
            inside = from < addr + len && to > addr;
            any |= inside;
        } else if inside {
            let kib = words
                .next()
                .and_then(|w| w.parse::<u64>().ok())
                .unwrap_or(0);
            match first {
                "Rss:" => found.resident_kib += kib,
                "AnonHugePages:" => found.thp_kib += kib,
                "Private_Hugetlb:" | "Shared_Hugetlb:" => found.hugetlb_kib += kib,
                "KernelPageSize:" if !found.kernel_page_kib.contains(&kib) => {
                    found.kernel_page_kib.push(kib);
                    found.kernel_page_kib.sort_unstable();
                }
                _ => {}
            }
        }
    }
    any.then_some(found)
}

/// NUMA memory policy modes of `mbind(2)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemPolicyMode {
    Preferred = 1,
    Bind = 2,
    Interleave = 3,
    /// Linux 6.9+: interleave by the weights in
    /// `/sys/kernel/mm/mempolicy/weighted_interleave/`.
    WeightedInterleave = 6,
}

/// Sets the NUMA policy of a whole mapped array before its pages are
/// touched. `nodes` must be non-empty.
pub fn mbind(array: &MappedArray, mode: MemPolicyMode, nodes: &[usize]) -> io::Result<()> {
    mbind_range(array, 0..array.len, mode, nodes)
}

/// Sets the NUMA policy of elements `range` of `array` (their pages, the
/// range widened to whole pages of the array's page size).
pub fn mbind_range(
    array: &MappedArray,
    range: std::ops::Range<usize>,
    mode: MemPolicyMode,
    nodes: &[usize],
) -> io::Result<()> {
    let page = array.hugetlb.unwrap_or_else(page_size);
    let base = array.data as usize;
    let start = (base + range.start * 8) / page * page;
    let end = (base + range.end * 8)
        .next_multiple_of(page)
        .min(array.base as usize + array.map_len);
    if end <= start {
        return Ok(());
    }
    let mask = node_mask(nodes);
    // The kernel reads maxnode - 1 bits; pass one more than the mask holds.
    let maxnode = mask.len() as u64 * 64 + 1;
    // SAFETY: [start, end) lies inside the array's own mapping, aligned to
    // its page size, and `mask` is a live buffer of the size maxnode
    // describes; flags 0 moves nothing.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            start,
            end - start,
            mode as libc::c_int,
            mask.as_ptr(),
            maxnode,
            0u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// This process's own NUMA policy, as `numactl` or the parent process left
/// it: the mode number of `set_mempolicy(2)` (0 default, 1 preferred, 2
/// bind, 3 interleave, 4 local, 5 preferred-many, 6 weighted interleave)
/// and its nodes.
pub fn process_policy() -> io::Result<(i32, Vec<usize>)> {
    let mut mode: libc::c_int = 0;
    // 4096 nodes: more than Linux's MAX_NUMNODES on any distribution kernel.
    let mut mask = vec![0u64; 64];
    let maxnode = (mask.len() * 64) as u64;
    // SAFETY: `mode` and `mask` are live buffers of the sizes passed; a
    // null address and flags 0 ask for the calling thread's policy.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            maxnode,
            std::ptr::null::<libc::c_void>(),
            0u64,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let nodes = (0..mask.len() * 64)
        .filter(|&n| mask[n / 64] & (1 << (n % 64)) != 0)
        .collect();
    Ok((mode, nodes))
}

/// A node bitmask as the NUMA system calls read it.
pub(super) fn node_mask(nodes: &[usize]) -> Vec<u64> {
    let max = nodes.iter().copied().max().unwrap_or(0);
    let mut mask = vec![0u64; max / 64 + 1];
    for &n in nodes {
        mask[n / 64] |= 1 << (n % 64);
    }
    mask
}

/// The NUMA node of each page holding the given element indices of
/// `array` (move_pages in query mode); `None` for a page not present.
pub fn page_nodes(array: &MappedArray, elements: &[usize]) -> io::Result<Vec<Option<usize>>> {
    let base = array.data as usize;
    let addresses: Vec<usize> = elements
        .iter()
        .map(|&i| base + i.min(array.len.saturating_sub(1)) * 8)
        .collect();
    process_page_nodes(0, &addresses)
}

/// The NUMA node of the page at each address in process `pid` (0: this
/// one), asked with move_pages in query mode: nothing moves, and unlike
/// reading `/proc/PID/numa_maps` it costs the same for a 1 GiB process as
/// for a small one. `None` for a page not present.
pub fn process_page_nodes(pid: u32, addresses: &[usize]) -> io::Result<Vec<Option<usize>>> {
    let pages: Vec<*mut libc::c_void> = addresses.iter().map(|&a| a as *mut libc::c_void).collect();
    let mut status = vec![0i32; pages.len()];
    // SAFETY: `pages` and `status` are live buffers of `pages.len()` entries;
    // a null `nodes` pointer asks only where the pages are (nothing moves).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(status
        .into_iter()
        .map(|s| usize::try_from(s).ok())
        .collect())
}

/// Faults in the pages of `chunk` for writing in one call (Linux 5.14+), on
/// behalf of the calling thread: the same placement as touching them one by
/// one, with far fewer trips into the kernel. Returns false where the kernel
/// lacks it (the caller's own writes then fault the pages in).
pub fn populate_for_write(chunk: &mut [f64]) -> bool {
    let page = page_size();
    let start = chunk.as_ptr() as usize;
    let aligned = start.next_multiple_of(page);
    let end = (start + std::mem::size_of_val(chunk)) / page * page;
    if end <= aligned {
        return false;
    }
    // SAFETY: the range lies inside `chunk`, which we borrow mutably; populating
    // allocates zeroed pages and changes no byte that we could observe.
    let rc = unsafe {
        libc::madvise(
            aligned as *mut libc::c_void,
            end - aligned,
            libc::MADV_POPULATE_WRITE,
        )
    };
    rc == 0
}

/// Asks for base pages (no THP) on the 2 MiB-aligned region of `array`
/// around element `index`, so that the pages on either side of it can be
/// first-touched by different threads.
pub fn no_hugepage_around(array: &MappedArray, index: usize) -> io::Result<()> {
    let addr = array.data as usize + index * 8;
    let start = addr / HUGEPAGE_BYTES * HUGEPAGE_BYTES;
    let map_start = array.base as usize;
    let map_end = map_start + array.map_len;
    let (start, end) = (start.max(map_start), (start + HUGEPAGE_BYTES).min(map_end));
    // SAFETY: [start, end) lies inside our own live mapping.
    let rc = unsafe {
        libc::madvise(
            start as *mut libc::c_void,
            end - start,
            libc::MADV_NOHUGEPAGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_arrays_are_aligned_and_zeroed() {
        let mut a = MappedArray::new(1000, 0).unwrap();
        assert_eq!(a.addr() % HUGEPAGE_BYTES, 0);
        assert!(a.as_slice().iter().all(|&x| x == 0.0));
        a.as_mut_slice()[999] = 1.5;
        assert_eq!(a.as_slice()[999], 1.5);
    }

    #[test]
    fn smaps_sums_the_mappings_over_a_range() {
        let smaps = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Rss:                4096 kB
AnonHugePages:      2048 kB
KernelPageSize:        4 kB
7f0000400000-7f0000800000 rw-p 00000000 00:00 0 /anon_hugepage (deleted)
Rss:                   0 kB
Private_Hugetlb:    4096 kB
KernelPageSize:     2048 kB
7f0000800000-7f0000a00000 rw-p 00000000 00:00 0
Rss:                2048 kB
KernelPageSize:        4 kB
";
        let both = parse_smaps(smaps, 0x7f00_0000_0000, 0x80_0000).unwrap();
        assert_eq!(both.resident_kib, 4096);
        assert_eq!(both.thp_kib, 2048);
        assert_eq!(both.hugetlb_kib, 4096);
        assert_eq!(both.kernel_page_kib, vec![4, 2048]);
        assert_eq!(both.huge_share(), Some(0.75));
        let huge = parse_smaps(smaps, 0x7f00_0040_0000, 0x40_0000).unwrap();
        assert_eq!(huge.kernel_page_kib, vec![2048]);
        assert!(parse_smaps(smaps, 0x1000, 0x1000).is_none());
    }

    #[test]
    fn a_page_size_that_is_not_huge_is_refused() {
        assert!(MappedArray::hugetlb(100, 4096, 0).is_err());
        assert!(MappedArray::hugetlb(100, 3 << 20, 0).is_err());
    }
}
