//! SMBIOS type 17 (Memory Device) entries, as the kernel exposes them under
//! `/sys/firmware/dmi/entries/17-*/raw` (readable by root): which DIMM slots
//! are populated and at what speed, for the theoretical peak.

use serde::Serialize;

/// A populated memory device from an SMBIOS type 17 structure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryDevice {
    /// Where it sits, as the board names it: device and bank locator
    /// (`P0-DIMMA1`, `P0_Node0_Channel0_Dimm0`), where the entry names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locator: Option<String>,
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
    // The strings follow the formatted area, each NUL-terminated, numbered
    // from 1; a structure's string 0 is none.
    let strings: Vec<&[u8]> = raw[len..]
        .split(|&b| b == 0)
        .take_while(|s| !s.is_empty())
        .collect();
    let string = |off: usize| {
        let n = usize::from(*raw.get(off).filter(|_| off < len)?);
        let text = strings.get(n.checked_sub(1)?)?;
        Some(String::from_utf8_lossy(text).trim().to_string()).filter(|s| !s.is_empty())
    };
    let locator = match (string(0x10), string(0x11)) {
        (Some(device), Some(bank)) => Some(format!("{device} ({bank})")),
        (device, bank) => device.or(bank),
    };
    Some(MemoryDevice {
        locator,
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

/// DIMMs unlike the others in size or speed, each named with what its
/// siblings have: a DIMM of another size leaves its channel's capacity
/// unlike the others' (the memory interleaves unevenly), one of another
/// speed runs its channels at the slowest. Decided from the population
/// alone, no baseline; empty where every DIMM agrees.
pub fn population_findings(devices: &[MemoryDevice]) -> Vec<String> {
    let kind = |d: &MemoryDevice| (d.size_mib, d.mts);
    let mut kinds: Vec<((u64, u32), usize)> = Vec::new();
    for d in devices {
        match kinds.iter_mut().find(|(k, _)| *k == kind(d)) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind(d), 1)),
        }
    }
    if kinds.len() < 2 {
        return Vec::new();
    }
    let words =
        |(mib, mts): (u64, u32)| format!("{} at {mts} MT/s", crate::units::Bytes(mib << 20));
    kinds.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    let (usual, most) = kinds[0];
    if kinds[1].1 == most {
        // No majority to call the others odd: the mix, said once.
        let mix: Vec<String> = (kinds.iter())
            .map(|&(k, n)| format!("{n} × {}", words(k)))
            .collect();
        return vec![format!(
            "the DIMMs differ ({}, SMBIOS): channels of unlike capacity or speed interleave unevenly; populate them alike",
            mix.join(", ")
        )];
    }
    (devices.iter())
        .filter(|d| kind(d) != usual)
        .map(|d| {
            let name = d.locator.as_deref().unwrap_or("a DIMM");
            format!(
                "{name}: {} where its {most} siblings have {} (SMBIOS): replace it with one like them",
                words(kind(d)),
                words(usual)
            )
        })
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
                locator: Some("DIMM 3 (BANK 3)".into()),
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

    #[test]
    fn a_dimm_unlike_its_siblings_is_named_and_a_mix_without_majority_said_once() {
        let dimm = |i, mib, mts| parse_memory_device(&memory_device_record(i, mib, mts)).unwrap();
        let mut node: Vec<MemoryDevice> = (0..8).map(|i| dimm(i, 64 * 1024, 4800)).collect();
        assert_eq!(population_findings(&node), Vec::<String>::new());
        node[5] = dimm(5, 16 * 1024, 4800);
        assert_eq!(
            population_findings(&node),
            vec![
                "DIMM 5 (BANK 5): 16 GiB at 4800 MT/s where its 7 siblings have 64 GiB at 4800 MT/s (SMBIOS): replace it with one like them"
            ]
        );
        let half: Vec<MemoryDevice> = (0..4)
            .map(|i| dimm(i, 32 * 1024, if i < 2 { 3200 } else { 2933 }))
            .collect();
        let found = population_findings(&half);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .starts_with("the DIMMs differ (2 × 32 GiB at 3200 MT/s, 2 × 32 GiB at 2933 MT/s"),
            "{found:?}"
        );
    }
}
