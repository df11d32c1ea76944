//! One file of a sysfs-style tree under a root path (the machine's `/`,
//! a captured tree or a fixture): read bounded and trimmed, or written
//! with the directories above it. Every reader of the topology and every
//! writer of a fixture goes through here.

use super::cpulist::parse_list;
use std::path::{Path, PathBuf};
use std::{fs, io};

/// Reads files relative to the root, trimming them; `None` when unreadable.
pub(super) struct Reader<'a> {
    pub(super) root: &'a Path,
}

impl Reader<'_> {
    pub(super) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }
    pub(super) fn text(&self, rel: &str) -> Option<String> {
        let bytes = read_bounded(&self.path(rel))?;
        String::from_utf8(bytes).ok().map(|s| s.trim().to_string())
    }
    pub(super) fn number<T: std::str::FromStr>(&self, rel: &str) -> Option<T> {
        self.text(rel)?.parse().ok()
    }
    pub(super) fn list(&self, rel: &str) -> Option<Vec<usize>> {
        parse_list(&self.text(rel)?).ok()
    }
    /// Ids of entries named `<prefix><number>` in a directory, the number
    /// spelled as the kernel spells it (`dimm1`, never `dimm01`).
    pub(super) fn numbered_entries(&self, rel: &str, prefix: &str) -> Vec<usize> {
        self.entries(rel, prefix).0
    }
    /// Ids of entries named `<prefix><number>`, and the names of those
    /// whose number has leading zeros (`dimm01`): no kernel writes them,
    /// and read as numbers they would count one entry twice.
    pub(super) fn entries(&self, rel: &str, prefix: &str) -> (Vec<usize>, Vec<String>) {
        let (mut ids, mut odd) = (Vec::new(), Vec::new());
        for e in std::fs::read_dir(self.path(rel))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(digits) = name.strip_prefix(prefix) else {
                continue;
            };
            let Ok(id) = digits.parse::<usize>() else {
                continue;
            };
            if digits.bytes().all(|b| b.is_ascii_digit()) && id.to_string() == digits {
                ids.push(id);
            } else {
                odd.push(name);
            }
        }
        ids.sort_unstable();
        odd.sort_unstable();
        (ids, odd)
    }
    /// A name the node gives itself (a label, a driver's name): one line,
    /// escaped ([`crate::untrusted::printable`]); `None` if empty.
    pub(super) fn name(&self, rel: &str) -> Option<String> {
        let text = self.text(rel)?;
        (!text.is_empty()).then(|| crate::untrusted::printable(&text))
    }
    /// A counter's value, or why it is unknown: missing, unreadable, not
    /// a count or beyond 64 bits.
    pub(super) fn count(&self, rel: &str) -> Result<u64, crate::untrusted::Unknown> {
        self.parsed(rel, crate::untrusted::parse_count)
    }
    /// A file's text through `parse`, or why it is unknown.
    pub(super) fn parsed<T>(
        &self,
        rel: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<T, crate::untrusted::Unknown> {
        let unknown = |why: String| crate::untrusted::Unknown::new(format!("/{rel}"), why);
        let path = self.path(rel);
        if std::fs::symlink_metadata(&path).is_err() {
            return Err(unknown("is missing".into()));
        }
        let bytes = read_bounded(&path).ok_or_else(|| unknown("cannot be read".into()))?;
        parse(&String::from_utf8_lossy(&bytes)).map_err(unknown)
    }
}

/// The most membw reads of one sysfs/procfs-style file (`/proc/cpuinfo` of
/// a 1024-CPU machine is about 1.5 MiB).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Reads a regular file, at most [`MAX_FILE_BYTES`]; `None` for anything
/// else (a FIFO or device in a fixture tree would hang or never end) or a
/// file that is longer.
pub fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= MAX_FILE_BYTES).then_some(bytes)
}

pub(super) const CPU_DIR: &str = "sys/devices/system/cpu";
pub(super) const NODE_DIR: &str = "sys/devices/system/node";

/// Writes a file, creating the directories above it.
pub(super) fn write_creating(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    fs::write(path, bytes)
}
