//! The thin layer of Linux calls: thread affinity, host facts, signals and
//! child processes here; mappings, page sizes and NUMA policy in
//! [`memory`]. Each `unsafe` block is small and says why it is sound;
//! callers above this module see only safe functions.

mod libraries;
mod load;
mod lock;
mod memory;

pub use libraries::{may_load_shared_libraries, why_not_loadable};

pub use load::*;
pub use lock::*;
pub use memory::*;

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

/// The CPUs the kernel lets this thread run on (sched_getaffinity): what a
/// pin, a wrapper (likwid-pin, numactl, taskset) or a cpuset left it.
pub fn current_affinity() -> Option<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data for which all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed; pid 0
    // is this thread.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return None;
    }
    // SAFETY: every index is below CPU_SETSIZE; `set` was filled above.
    let on = |cpu: usize| unsafe { libc::CPU_ISSET(cpu, &set) };
    Some((0..libc::CPU_SETSIZE as usize).filter(|&c| on(c)).collect())
}

/// Whether membw runs as root (may change system-wide settings).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
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
    // Any root process may set it: one line wherever it is printed.
    crate::untrusted::printable(&String::from_utf8_lossy(&buf[..end]))
}

/// A memory-backed directory with room for many small files, where the
/// host has one: `/dev/shm` when it is a tmpfs this process may write and
/// execute in with at least `room` bytes free. For scratch trees (a
/// fixture's sysfs: 12,000 files for 256 CPUs), whose every file costs
/// 0.6 ms to create on some VMs' disks.
pub fn memory_backed_dir(room: u64) -> Option<std::path::PathBuf> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let dir = c"/dev/shm";
    // SAFETY: plain-data structs; all-zero is a valid value to pass.
    let (mut fs, mut vfs): (libc::statfs, libc::statvfs) = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string, and structs each call only writes into.
    let read = unsafe {
        libc::statfs(dir.as_ptr(), &mut fs) == 0 && libc::statvfs(dir.as_ptr(), &mut vfs) == 0
    };
    // SAFETY: access(2) with a valid C string.
    let usable = unsafe { libc::access(dir.as_ptr(), libc::W_OK | libc::X_OK) == 0 };
    let free = vfs.f_bavail.saturating_mul(vfs.f_frsize);
    (read
        && usable
        && fs.f_type == TMPFS_MAGIC
        && vfs.f_flag & libc::ST_NOEXEC == 0
        && free >= room)
        .then(|| std::path::PathBuf::from("/dev/shm"))
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
    crate::untrusted::printable(&String::from_utf8_lossy(&bytes))
}

/// The one way work is asked to stop: set by the signal handlers (SIGINT,
/// SIGTERM, SIGHUP, once [`stop_on_signals`] installed them on it) or by a
/// test; read between repetitions, between points and while another
/// program runs. Holds the signal number, 0 while running. Clones share
/// the flag.
#[derive(Debug, Clone, Default)]
pub struct Stop(pub std::sync::Arc<std::sync::atomic::AtomicI32>);

impl Stop {
    pub fn request(&self, signal: i32) {
        self.0.store(signal, std::sync::atomic::Ordering::Relaxed);
    }
    /// The signal that asked to stop, if one did.
    pub fn signal(&self) -> Option<i32> {
        Some(self.0.load(std::sync::atomic::Ordering::Relaxed)).filter(|&s| s != 0)
    }
    pub fn requested(&self) -> bool {
        self.signal().is_some()
    }
}

/// Where the stop signals land: the installed [`Stop`]'s flag.
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
    rusage_cpu_time(libc::RUSAGE_SELF)
}

/// CPU time (user + system) of this process's children that have ended
/// and been waited for, all together.
pub fn children_cpu_time() -> Duration {
    rusage_cpu_time(libc::RUSAGE_CHILDREN)
}

/// CPU time (user + system) the calling thread has used, to the
/// nanosecond: a clock that stands still while the thread waits for a CPU.
pub fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into storage we own; the
    // calling thread's CPU clock always exists on Linux.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// User + system time of getrusage(2)'s `who`; zero if it fails.
fn rusage_cpu_time(who: libc::c_int) -> Duration {
    // SAFETY: getrusage writes one rusage struct into storage we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; callers pass RUSAGE_SELF or RUSAGE_CHILDREN.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let t = |tv: libc::timeval| Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
    t(usage.ru_utime) + t(usage.ru_stime)
}

/// Ignores SIGXFSZ: a write past RLIMIT_FSIZE then fails with EFBIG, which
/// membw handles as any failed write, rather than ending the process with
/// a partial line in a results file.
pub fn ignore_file_size_limit_signal() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// SIGINT (Ctrl-C), SIGTERM (Slurm's time limit) and SIGHUP store their
/// number in `flag`, so that work stops after the current repetition; a
/// second one kills as usual. Installed once per process.
pub fn stop_on_signals(stop: &Stop) {
    if STOP_SIGNAL.set(stop.0.clone()).is_err() {
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
        Some((mode, nodes)) => (Some(mode as libc::c_int), memory::node_mask(&nodes)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_cpu_clock_runs_while_it_works_and_stands_still_while_it_sleeps() {
        let before = thread_cpu_time();
        std::thread::sleep(Duration::from_millis(50));
        let slept = thread_cpu_time() - before;
        assert!(slept < Duration::from_millis(25), "{slept:?} of CPU asleep");
        // Busy until the clock has moved a millisecond (bounded in wall time).
        let (began, wall) = (thread_cpu_time(), std::time::Instant::now());
        while thread_cpu_time() - began < Duration::from_millis(1) {
            assert!(
                wall.elapsed() < Duration::from_secs(30),
                "the clock did not move"
            );
        }
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

    #[test]
    fn a_memory_backed_dir_is_named_only_with_the_room_asked() {
        // No file system has 2^64 bytes free.
        assert_eq!(memory_backed_dir(u64::MAX), None);
        if let Some(dir) = memory_backed_dir(0) {
            let file = tempfile::NamedTempFile::new_in(&dir).unwrap();
            assert!(file.path().starts_with("/dev/shm"));
        }
    }
}
