//! The thin layer of Linux calls: thread affinity, anonymous mappings,
//! hugepage advice, host facts. Each `unsafe` block is small and says why it
//! is sound; callers above this module see only safe functions.

use std::io;
use std::time::Duration;

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "CPU {cpu} is beyond the {} CPUs of a cpu_set_t",
                libc::CPU_SETSIZE
            ),
        ));
    }
    // SAFETY: cpu_set_t is plain data for which all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE, checked above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 = this thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPU the calling thread is running on right now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only reads the thread state.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// The host name, as `hostname` prints it.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its full length, which is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    // SAFETY: utsname is plain data; all-zero is a valid value to pass to uname.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `uts` is a valid, writable utsname.
    if unsafe { libc::uname(&mut uts) } != 0 {
        return "unknown".into();
    }
    let bytes: Vec<u8> = uts
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c.to_ne_bytes()[0]) // c_char is i8 on x86, u8 on Arm
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

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
pub struct MappedArray {
    base: *mut libc::c_void,
    map_len: usize,
    data: *mut f64,
    len: usize,
}

// SAFETY: the mapping is owned memory like a Box<[f64]>; access goes through
// &self / &mut self, so the usual borrow rules make sharing sound.
unsafe impl Send for MappedArray {}
// SAFETY: as above; &MappedArray only hands out shared slices.
unsafe impl Sync for MappedArray {}

impl MappedArray {
    /// Maps `len` f64s (len > 0) starting on a 2 MiB boundary.
    pub fn new(len: usize) -> io::Result<MappedArray> {
        let bytes = len
            .checked_mul(8)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "array too large"))?;
        // Over-map by one hugepage so the data can start on a 2 MiB boundary.
        let map_len = bytes + HUGEPAGE_BYTES;
        // SAFETY: anonymous private mapping with no address hint; the result is checked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let offset = (HUGEPAGE_BYTES - (base as usize % HUGEPAGE_BYTES)) % HUGEPAGE_BYTES;
        // SAFETY: offset < HUGEPAGE_BYTES, so data..data+bytes lies inside the mapping.
        let data = unsafe { base.cast::<u8>().add(offset) }.cast::<f64>();
        Ok(MappedArray {
            base,
            map_len,
            data,
            len,
        })
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
    pub fn advise_hugepages(&self, use_them: bool) -> io::Result<()> {
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

impl Drop for MappedArray {
    fn drop(&mut self) {
        // SAFETY: base/map_len are exactly what mmap returned; nothing borrows
        // the memory any more since we hold &mut self.
        unsafe { libc::munmap(self.base, self.map_len) };
    }
}

/// The share of the resident memory in `[addr, addr + len)` that is in
/// transparent hugepages, from /proc/self/smaps (None where unreadable).
pub fn huge_share(addr: usize, len: usize) -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let (mut rss, mut huge, mut inside) = (0u64, 0u64, false);
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
        } else if inside {
            let kib = || words.clone().next().and_then(|w| w.parse::<u64>().ok());
            match first {
                "Rss:" => rss += kib().unwrap_or(0),
                "AnonHugePages:" => huge += kib().unwrap_or(0),
                _ => {}
            }
        }
    }
    (rss > 0).then(|| huge as f64 / rss as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_arrays_are_aligned_and_zeroed() {
        let mut a = MappedArray::new(1000).unwrap();
        assert_eq!(a.addr() % HUGEPAGE_BYTES, 0);
        assert!(a.as_slice().iter().all(|&x| x == 0.0));
        a.as_mut_slice()[999] = 1.5;
        assert_eq!(a.as_slice()[999], 1.5);
    }

    #[test]
    fn pinning_to_an_allowed_cpu_sticks() {
        let cpu = current_cpu().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            assert_eq!(current_cpu(), Some(cpu));
        })
        .join()
        .unwrap();
        assert!(pin_current_thread(100_000).is_err());
    }
}

/// NUMA memory policy modes of `mbind(2)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemPolicyMode {
    Preferred = 1,
    Bind = 2,
    Interleave = 3,
}

/// Sets the NUMA policy of a whole mapped array before its pages are
/// touched. `nodes` must be non-empty.
pub fn mbind(array: &MappedArray, mode: MemPolicyMode, nodes: &[usize]) -> io::Result<()> {
    let max = nodes.iter().copied().max().unwrap_or(0);
    let mut mask = vec![0u64; max / 64 + 1];
    for &n in nodes {
        mask[n / 64] |= 1 << (n % 64);
    }
    // The kernel reads maxnode - 1 bits; pass one more than the mask holds.
    let maxnode = mask.len() as u64 * 64 + 1;
    let len = array.len * 8;
    // SAFETY: the range is the array's own page-aligned mapping, and `mask`
    // is a live buffer of the size maxnode describes; flags 0 moves nothing.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            array.data as usize,
            len,
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

/// Where the stop signals land: 0 while running, else the signal number.
static STOP_SIGNAL: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicI32>> =
    std::sync::OnceLock::new();

extern "C" fn on_stop_signal(signal: libc::c_int) {
    if let Some(flag) = STOP_SIGNAL.get() {
        flag.store(signal, std::sync::atomic::Ordering::Relaxed);
    }
    // A second signal of the same kind ends the process at once.
    // SAFETY: signal(2) is async-signal-safe; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// CPU time (user + system) this process has used so far, all its threads
/// together; waited-for children are not counted.
pub fn own_cpu_time() -> Duration {
    // SAFETY: getrusage writes one rusage struct into storage we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let t = |tv: libc::timeval| Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
    t(usage.ru_utime) + t(usage.ru_stime)
}

/// Whether a stop signal has arrived since [`stop_on_signals`].
pub fn stop_requested() -> bool {
    STOP_SIGNAL
        .get()
        .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed) != 0)
}

/// SIGINT (Ctrl-C), SIGTERM (Slurm's time limit) and SIGHUP store their
/// number in `flag`, so that work stops after the current repetition; a
/// second one kills as usual. Installed once per process.
pub fn stop_on_signals(flag: std::sync::Arc<std::sync::atomic::AtomicI32>) {
    if STOP_SIGNAL.set(flag).is_err() {
        return;
    }
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only does an atomic store and signal(2), both
        // async-signal-safe; the function pointer has the C signature.
        unsafe {
            libc::signal(
                signal,
                on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Arranges for a child to start in its own process group (so a timeout can
/// kill all of it), pinned to `cpus` (the union its threads may use) and
/// under a memory policy (numactl's way: set_mempolicy before exec, which
/// the program inherits). Masks are built here, before fork; the child only
/// makes three system calls.
pub fn place_child(
    cmd: &mut std::process::Command,
    cpus: &[usize],
    policy: Option<(MemPolicyMode, Vec<usize>)>,
) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only write inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond this system's CPU set size"),
            ));
        }
        // SAFETY: c is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    let (mode, mask) = match policy {
        Some((mode, nodes)) => {
            let max = nodes.iter().copied().max().unwrap_or(0);
            let mut mask = vec![0u64; max / 64 + 1];
            for n in nodes {
                mask[n / 64] |= 1 << (n % 64);
            }
            (Some(mode as libc::c_int), mask)
        }
        None => (None, Vec::new()),
    };
    let maxnode = mask.len() as u64 * 64 + 1;
    // SAFETY: the closure runs between fork and exec and only calls setpgid,
    // sched_setaffinity and set_mempolicy (async-signal-safe system calls)
    // on data prepared before the fork; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0
                || libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if let Some(mode) = mode
                && libc::syscall(libc::SYS_set_mempolicy, mode, mask.as_ptr(), maxnode) != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// The CPUs a thread (any task id) may run on; `None` when it is gone.
pub fn thread_affinity(tid: i32) -> Option<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the set is a valid, writable cpu_set_t of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return None;
    }
    // SAFETY: CPU_ISSET reads inside the set for ids below CPU_SETSIZE.
    Some(
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect(),
    )
}

/// Kills a whole process group (a program and every child it started).
pub fn kill_group(pgid: u32) {
    // SAFETY: kill(2) with a negative pid signals that process group only.
    unsafe {
        libc::kill(-(pgid as i32), libc::SIGKILL);
    }
}
