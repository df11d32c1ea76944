//! SMBIOS type 17 (Memory Device) entries, as the kernel exposes them under
//! `/sys/firmware/dmi/entries/17-*/raw` (readable by root): which DIMM slots
//! are populated and at what speed, for the theoretical peak.

use serde::Serialize;

/// A populated memory device from an SMBIOS type 17 structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemoryDevice {
    pub size_mib: u64,
    /// Configured speed when given, else the rated speed (MT/s).
    pub mts: u32,
    pub data_width_bits: u16,
}

/// Parses one raw type 17 structure; `None` for an empty slot or garbage.
pub fn parse_memory_device(raw: &[u8]) -> Option<MemoryDevice> {
    let len = *raw.get(1)? as usize;
    if *raw.first()? != 17 || len < 0x17 || raw.len() < len {
        return None;
    }
    let word = |off: usize| -> Option<u16> {
        (off + 2 <= len).then(|| u16::from_le_bytes([raw[off], raw[off + 1]]))
    };
    let dword = |off: usize| -> Option<u32> {
        (off + 4 <= len)
            .then(|| u32::from_le_bytes([raw[off], raw[off + 1], raw[off + 2], raw[off + 3]]))
    };
    let size_mib = match word(0x0C)? {
        0 | 0xFFFF => return None,
        0x7FFF => u64::from(dword(0x1C)? & 0x7FFF_FFFF),
        s if s & 0x8000 != 0 => u64::from(s & 0x7FFF) / 1024, // KiB granularity
        s => u64::from(s),
    };
    let speed = |word_off: usize, ext_off: usize| -> Option<u32> {
        match word(word_off)? {
            0 => None,
            0xFFFF => dword(ext_off).filter(|&v| v > 0),
            v => Some(u32::from(v)),
        }
    };
    let mts = speed(0x20, 0x58).or_else(|| speed(0x15, 0x54))?;
    Some(MemoryDevice {
        size_mib,
        mts,
        data_width_bits: word(0x0A).filter(|&w| w != 0 && w != 0xFFFF).unwrap_or(64),
    })
}

/// Every populated memory device under `root`; empty when the entries are
/// absent or unreadable (not root).
pub(super) fn read(root: &std::path::Path) -> Vec<MemoryDevice> {
    let Ok(dir) = std::fs::read_dir(root.join("sys/firmware/dmi/entries")) else {
        return Vec::new();
    };
    let mut entries: Vec<_> = dir
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("17-"))
        .map(|e| e.path())
        .collect();
    entries.sort();
    entries
        .iter()
        .filter_map(|p| super::read_bounded(&p.join("raw")))
        .filter_map(|raw| parse_memory_device(&raw))
        .collect()
}

/// A minimal SMBIOS 3.x type 17 (Memory Device) structure: formatted area of
/// 0x54 bytes, then two strings (locator, bank) and the double NUL.
pub fn memory_device_record(handle: u16, size_mib: u32, mts: u16) -> Vec<u8> {
    let mut f = vec![0u8; 0x54];
    f[0] = 17;
    f[1] = 0x54;
    f[2..4].copy_from_slice(&handle.to_le_bytes());
    f[0x08..0x0A].copy_from_slice(&72u16.to_le_bytes()); // total width (ECC)
    f[0x0A..0x0C].copy_from_slice(&64u16.to_le_bytes()); // data width
    if size_mib < 0x7FFF {
        f[0x0C..0x0E].copy_from_slice(&(size_mib as u16).to_le_bytes());
    } else {
        // 32 GiB and up: the extended size field holds the value.
        f[0x0C..0x0E].copy_from_slice(&0x7FFFu16.to_le_bytes());
        f[0x1C..0x20].copy_from_slice(&size_mib.to_le_bytes());
    }
    f[0x10] = 1; // device locator: string 1
    f[0x11] = 2; // bank locator: string 2
    f[0x12] = 0x1A; // DDR4
    f[0x15..0x17].copy_from_slice(&mts.to_le_bytes()); // rated speed
    f[0x20..0x22].copy_from_slice(&mts.to_le_bytes()); // configured speed
    f.extend_from_slice(format!("DIMM {handle}\0BANK {handle}\0\0").as_bytes());
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smbios_memory_devices_parse() {
        let d = parse_memory_device(&memory_device_record(3, 32 * 1024, 3200)).unwrap();
        assert_eq!(
            d,
            MemoryDevice {
                size_mib: 32 * 1024,
                mts: 3200,
                data_width_bits: 64
            }
        );
        let mut empty = memory_device_record(1, 0, 3200);
        assert_eq!(parse_memory_device(&empty), None);
        empty[0] = 16;
        assert_eq!(parse_memory_device(&empty), None);
        assert_eq!(parse_memory_device(&[17]), None);
        assert_eq!(parse_memory_device(&[]), None);
    }
}
