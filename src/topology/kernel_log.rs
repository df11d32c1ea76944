//! GPU faults the kernel log names: NVIDIA's XIDs, the driver's numbered
//! error events (`NVRM: Xid (PCI:0000:18:00): 79, pid=…, GPU has fallen
//! off the bus.`), of which those of memory and the bus are DCGM's health
//! watch's. Read from `/dev/kmsg` (root, or `kernel.dmesg_restrict=0`),
//! which holds the log since boot, or since the ring buffer's oldest record.
//! A fixture's `dev/kmsg` is a text file of the same records.

use serde::Serialize;
use std::io::Read;
use std::path::Path;

/// Bytes of log read at most: a big node's ring buffer is a few MiB.
const MAX_LOG_BYTES: usize = 32 << 20;

/// The memory and bus XIDs DCGM's health watch fails a GPU on, with what
/// each means and what an admin does.
const WATCHED: [(u32, &str, &str); 7] = [
    (
        48,
        "a double-bit ECC error",
        "drain the node and reset the GPU",
    ),
    (
        63,
        "a row remapping or page retirement was recorded",
        "drain the node and reset the GPU",
    ),
    (
        64,
        "a row remapping or page retirement failed to record",
        "drain the node, reset the GPU, and replace it if it recurs",
    ),
    (
        74,
        "an NVLink error",
        "drain the node, reset the GPU and check its links",
    ),
    (
        79,
        "the GPU fell off the bus",
        "drain the node and reboot it (reseat the GPU if it recurs)",
    ),
    (
        94,
        "a contained ECC error",
        "drain the node and reset the GPU",
    ),
    (
        95,
        "an uncontained ECC error",
        "drain the node and reset the GPU",
    ),
];

/// One XID event of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Xid {
    /// The GPU as the driver names it: `0000:18:00` (domain, bus, device).
    pub gpu: String,
    pub xid: u32,
}

/// The log's memory and bus XIDs, or why the log could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum GpuXids {
    Read { xids: Vec<Xid> },
    NotReadable { why: String },
}

impl GpuXids {
    /// The watched XIDs of `topo`'s kernel log where NVIDIA GPUs are on
    /// its PCI bus; `None` (the log not read) where none are.
    pub fn of(topo: &super::Topology) -> Option<GpuXids> {
        use super::pci::GpuVendor;
        (topo.gpus.iter())
            .any(|g| g.maker() == Some(GpuVendor::Nvidia))
            .then(|| GpuXids::read(&topo.root))
    }

    /// The watched XIDs in `root`'s kernel log.
    pub fn read(root: &Path) -> GpuXids {
        let path = root.join("dev/kmsg");
        let opened = {
            use std::os::unix::fs::OpenOptionsExt;
            // Not to wait for new records at the end of the log.
            (std::fs::OpenOptions::new())
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
        };
        let mut file = match opened {
            Ok(f) => f,
            Err(e) => return unreadable(&path, &e),
        };
        // /dev/kmsg gives one record a read; a file, what fits.
        let (mut log, mut buf) = (Vec::new(), vec![0u8; 64 << 10]);
        while log.len() < MAX_LOG_BYTES {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => log.extend_from_slice(&buf[..n]),
                // A record overwritten while read: the next one follows.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return unreadable(&path, &e),
            }
        }
        GpuXids::Read {
            xids: parse(&String::from_utf8_lossy(&log)),
        }
    }

    /// One line for `topo`: how many watched XIDs the log holds, or why
    /// it was not read.
    pub fn summary(&self) -> String {
        let ids: Vec<String> = WATCHED.iter().map(|(id, ..)| id.to_string()).collect();
        match self {
            GpuXids::NotReadable { why } => format!("not readable here: {why}"),
            GpuXids::Read { xids } if xids.is_empty() => format!(
                "none of the memory and bus XIDs ({}) in the kernel log",
                ids.join(", ")
            ),
            GpuXids::Read { xids } => format!(
                "{} of the memory and bus XIDs ({}) in the kernel log",
                xids.len(),
                ids.join(", ")
            ),
        }
    }

    /// Each GPU's watched XIDs, one finding per GPU and XID, with the
    /// action; empty where none (or the log was not read).
    pub fn findings(&self) -> Vec<String> {
        let GpuXids::Read { xids } = self else {
            return Vec::new();
        };
        let mut counted: Vec<(&Xid, usize)> = Vec::new();
        for x in xids {
            match counted.iter_mut().find(|(y, _)| *y == x) {
                Some((_, n)) => *n += 1,
                None => counted.push((x, 1)),
            }
        }
        (counted.iter())
            .filter_map(|(x, n)| {
                let (_, means, action) = WATCHED.iter().find(|(id, ..)| *id == x.xid)?;
                let times = if *n == 1 {
                    String::new()
                } else {
                    format!(", {n} times")
                };
                Some(format!(
                    "GPU {}: XID {} ({means}) in the kernel log{times}: {action}",
                    x.gpu, x.xid
                ))
            })
            .collect()
    }
}

/// Why the log at `path` could not be read.
fn unreadable(path: &Path, e: &std::io::Error) -> GpuXids {
    GpuXids::NotReadable {
        why: match e.kind() {
            std::io::ErrorKind::PermissionDenied => {
                format!(
                    "{} needs root (kernel.dmesg_restrict is set)",
                    path.display()
                )
            }
            _ => format!("{}: {e}", path.display()),
        },
    }
}

/// The watched XIDs of a log's records (`PRIO,SEQ,USEC,FLAGS;MESSAGE`,
/// continuation lines indented), in order.
fn parse(log: &str) -> Vec<Xid> {
    (log.lines())
        .filter_map(|line| {
            let message = line.split_once(';').map_or(line, |(_, m)| m);
            let rest = message.split_once("NVRM: Xid (PCI:")?.1;
            let (gpu, rest) = rest.split_once(')')?;
            let number = rest.trim_start_matches(':').trim_start();
            let digits: String = number.chars().take_while(char::is_ascii_digit).collect();
            let xid = digits.parse().ok()?;
            WATCHED.iter().any(|(id, ..)| *id == xid).then(|| Xid {
                // Any process may write to the log (/dev/kmsg): one line.
                gpu: crate::untrusted::printable(&gpu.trim().to_lowercase()),
                xid,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watched_xids_are_found_counted_and_the_others_left() {
        let log = "\
6,1200,8811,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.172.08\n\
4,1300,9911,-;NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python, Graphics Exception\n\
4,1301,9912,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n\
 SUBSYSTEM=pci\n\
4,1400,9990,-;NVRM: Xid (PCI:0000:9A:00): 95, pid=7, name=a.out, Uncontained: FBHUB. RST: Yes, D-RST: No\n\
4,1401,9991,-;NVRM: Xid (PCI:0000:9A:00): 95, pid=7, name=a.out, Uncontained: FBHUB.\n";
        let xids = parse(log);
        assert_eq!(
            xids,
            vec![
                Xid {
                    gpu: "0000:18:00".into(),
                    xid: 79
                },
                Xid {
                    gpu: "0000:9a:00".into(),
                    xid: 95
                },
                Xid {
                    gpu: "0000:9a:00".into(),
                    xid: 95
                },
            ]
        );
        assert_eq!(
            GpuXids::Read { xids }.findings(),
            vec![
                "GPU 0000:18:00: XID 79 (the GPU fell off the bus) in the kernel log: drain the node and reboot it (reseat the GPU if it recurs)",
                "GPU 0000:9a:00: XID 95 (an uncontained ECC error) in the kernel log, 2 times: drain the node and reset the GPU",
            ]
        );
        let unread = GpuXids::NotReadable { why: "x".into() };
        assert_eq!(unread.findings(), Vec::<String>::new());
    }

    #[test]
    fn a_log_file_is_read_and_a_missing_one_is_not_readable() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            GpuXids::read(dir.path()),
            GpuXids::NotReadable { .. }
        ));
        std::fs::create_dir(dir.path().join("dev")).unwrap();
        std::fs::write(
            dir.path().join("dev/kmsg"),
            "4,1,2,-;NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=x, DBE\n",
        )
        .unwrap();
        let read = GpuXids::read(dir.path());
        assert_eq!(read.findings().len(), 1, "{read:?}");
    }

    proptest::proptest! {
        /// Any log: watched XIDs only, each GPU's name and finding on one
        /// line; never a panic.
        #[test]
        fn any_log_gives_watched_xids_on_one_line(
            noise in ".{0,60}",
            gpu in ".{0,16}",
            xid in 0u32..200,
        ) {
            let log = format!("4,1,2,-;{noise}\n4,2,3,-;NVRM: Xid (PCI:{gpu}): {xid}, pid=1\n{noise}");
            let xids = parse(&log);
            for x in &xids {
                proptest::prop_assert!(WATCHED.iter().any(|(id, ..)| *id == x.xid));
                proptest::prop_assert!(!x.gpu.chars().any(crate::untrusted::needs_escape));
            }
            for line in (GpuXids::Read { xids }).findings() {
                proptest::prop_assert!(!line.chars().any(crate::untrusted::needs_escape), "{line:?}");
            }
        }
    }
}
