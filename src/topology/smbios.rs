//! SMBIOS type 17 (Memory Device) entries, as the kernel exposes them under
//! `/sys/firmware/dmi/entries/17-*/raw` (readable by root): which DIMM slots
//! are populated and at what speed, for the theoretical peak; which are
//! empty, and in which channel where the board's names say.

use serde::Serialize;

/// A populated memory device from an SMBIOS type 17 structure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryDevice {
    /// Where it sits, as the board names it: device and bank locator
    /// (`P0-DIMMA1`, `P0_Node0_Channel0_Dimm0`), where the entry names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locator: Option<String>,
    /// The memory channel it sits in, where the locators name one
    /// ([`channel_of`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    pub size_mib: u64,
    /// Configured speed when given, else the rated speed (MT/s); `None`
    /// where the entry gives none or one no DDR or HBM runs at.
    pub mts: Option<u32>,
    /// Bits of data per transfer; `None` where the entry gives none or an
    /// implausible width (it would make a peak of 0 GB/s).
    pub data_width_bits: Option<u16>,
    /// What of the entry could not be believed, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

/// The speeds a DIMM or HBM stack runs at, MT/s: DDR-200 to well past
/// today's fastest MRDIMMs.
const PLAUSIBLE_MTS: std::ops::RangeInclusive<u32> = 100..=20_000;

/// An empty DIMM slot, as the board names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmptySlot {
    pub locator: Option<String>,
    pub channel: Option<String>,
}

/// One type 17 structure: a slot with its DIMM, or an empty one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    Populated(MemoryDevice),
    Empty(EmptySlot),
}

/// Parses one raw type 17 structure; `None` for an empty slot or garbage.
pub fn parse_memory_device(raw: &[u8]) -> Option<MemoryDevice> {
    match parse_slot(raw).ok()? {
        Slot::Populated(d) => Some(d),
        Slot::Empty(_) => None,
    }
}

/// Parses one raw type 17 structure, or says why it is not one.
pub fn parse_slot(raw: &[u8]) -> Result<Slot, String> {
    let (Some(&kind), Some(&len)) = (raw.first(), raw.get(1)) else {
        return Err(format!("is {} bytes, not an SMBIOS structure", raw.len()));
    };
    let len = len as usize;
    if kind != 17 || len < 0x17 || raw.len() < len {
        return Err(format!(
            "is not a memory device entry (type {kind}, {len} of {} bytes formatted)",
            raw.len()
        ));
    }
    let word = |off: usize| -> Option<u16> {
        (off + 2 <= len).then(|| u16::from_le_bytes([raw[off], raw[off + 1]]))
    };
    let dword = |off: usize| -> Option<u32> {
        (off + 4 <= len)
            .then(|| u32::from_le_bytes([raw[off], raw[off + 1], raw[off + 2], raw[off + 3]]))
    };
    // The strings follow the formatted area, each NUL-terminated, numbered
    // from 1; a structure's string 0 is none.
    let strings: Vec<&[u8]> = raw[len..]
        .split(|&b| b == 0)
        .take_while(|s| !s.is_empty())
        .collect();
    let string = |off: usize| {
        let n = usize::from(*raw.get(off).filter(|_| off < len)?);
        let text = strings.get(n.checked_sub(1)?)?;
        let text = crate::untrusted::printable(String::from_utf8_lossy(text).trim());
        Some(text).filter(|s| !s.is_empty())
    };
    let (device, bank) = (string(0x10), string(0x11));
    let channel = channel_of(device.as_deref(), bank.as_deref());
    let locator = match (device, bank) {
        (Some(device), Some(bank)) => Some(format!("{device} ({bank})")),
        (device, bank) => device.or(bank),
    };
    let size_mib = match word(0x0C).ok_or("has no size")? {
        0 => return Ok(Slot::Empty(EmptySlot { locator, channel })),
        0xFFFF => return Err("gives its size as unknown (0xFFFF)".into()),
        0x7FFF => u64::from(dword(0x1C).ok_or("has no extended size")? & 0x7FFF_FFFF),
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
    let mut unknown = Vec::new();
    let mts = match speed(0x20, 0x58).or_else(|| speed(0x15, 0x54)) {
        Some(mts) if PLAUSIBLE_MTS.contains(&mts) => Some(mts),
        Some(mts) => {
            unknown.push(format!(
                "speed {mts} MT/s is outside what DDR or HBM runs at ({}-{})",
                PLAUSIBLE_MTS.start(),
                PLAUSIBLE_MTS.end()
            ));
            None
        }
        None => {
            unknown.push("gives no speed".into());
            None
        }
    };
    // DDR's 64 bits (32 per DDR5 sub-channel, 16 for LPDDR), up to HBM's
    // 1024 per stack, in whole bytes; 0xFFFF is SMBIOS's "unknown".
    let data_width_bits = match word(0x0A) {
        Some(w) if (8..=1024).contains(&w) && w % 8 == 0 => Some(w),
        Some(w) => {
            unknown.push(match w {
                0xFFFF | 0 => "gives no data width".to_string(),
                w => format!("data width {w} bits is not one a memory device has"),
            });
            None
        }
        None => None,
    };
    Ok(Slot::Populated(MemoryDevice {
        locator,
        channel,
        size_mib,
        mts,
        data_width_bits,
        unknown,
    }))
}

/// The memory channel a slot sits in, where the board's names say: a bank
/// locator that names a channel (`P0 CHANNEL A`, `P0_Node0_Channel0_Dimm0`
/// less its `_Dimm0`), or a device locator of a channel letter and a slot
/// number (`P1-DIMMA1`, `CPU1_DIMM_B2`: all but the number). `None` for
/// names that number slots only (`DIMM 3`, `PROC 1 DIMM 4`, Dell's `A1`,
/// whose letters are sockets): no rule guesses a channel.
pub fn channel_of(device: Option<&str>, bank: Option<&str>) -> Option<String> {
    if let Some(bank) = bank
        && let Some(at) = bank.to_ascii_uppercase().find("CHANNEL")
    {
        let upper = bank.to_ascii_uppercase();
        // Everything up to the slot's own part, if it names one after.
        let end = (upper[at..]
            .find("_DIMM")
            .or_else(|| upper[at..].find(" DIMM")))
        .map_or(bank.len(), |i| at + i);
        return Some(bank[..end].to_string());
    }
    let device = device?;
    let stem = device.trim_end_matches(|c: char| c.is_ascii_digit());
    let upper = stem.to_ascii_uppercase();
    let letter_before_number = stem.len() < device.len()
        && stem.ends_with(|c: char| c.is_ascii_alphabetic())
        && !upper.ends_with("DIMM");
    (letter_before_number && upper.contains("DIMM")).then(|| stem.to_string())
}

/// The type 17 entries under a root.
#[derive(Default)]
pub(super) struct Entries {
    pub populated: Vec<MemoryDevice>,
    pub empty: Vec<EmptySlot>,
    /// Entries that could not be read or parsed, and values of populated
    /// ones not believed.
    pub unknown: Vec<crate::untrusted::Unknown>,
}

/// Every populated memory device under `root`, and every empty slot; all
/// empty when the entries are absent or unreadable (not root).
pub(super) fn read(root: &std::path::Path) -> Entries {
    let Ok(dir) = std::fs::read_dir(root.join("sys/firmware/dmi/entries")) else {
        return Entries::default();
    };
    let mut entries: Vec<_> = dir
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("17-"))
        .map(|e| e.path())
        .collect();
    entries.sort();
    let mut out = Entries::default();
    for entry in entries {
        let path = entry.join("raw");
        let file = format!("/{}", path.strip_prefix(root).unwrap_or(&path).display());
        let unknown = |why: String| crate::untrusted::Unknown::new(file.clone(), why);
        let Some(raw) = super::read_bounded(&path) else {
            // Not root: none of them can be read, and that is no fault.
            if path.exists() && std::fs::File::open(&path).is_err() {
                return Entries::default();
            }
            out.unknown.push(unknown("cannot be read".into()));
            continue;
        };
        match parse_slot(&raw) {
            Ok(Slot::Populated(d)) => {
                out.unknown
                    .extend(d.unknown.iter().map(|w| unknown(w.clone())));
                out.populated.push(d);
            }
            Ok(Slot::Empty(e)) => out.empty.push(e),
            Err(why) => out.unknown.push(unknown(why)),
        }
    }
    out
}

/// A minimal SMBIOS 3.x type 17 (Memory Device) structure: formatted area of
/// 0x54 bytes, then two strings (locator, bank) and the double NUL.
pub fn memory_device_record(handle: u16, size_mib: u32, mts: u16) -> Vec<u8> {
    let (device, bank) = (format!("DIMM {handle}"), format!("BANK {handle}"));
    slot_record(handle, size_mib, mts, &device, &bank)
}

/// [`memory_device_record`] with the board's names for the slot; a size of
/// 0 is an empty slot.
pub fn slot_record(handle: u16, size_mib: u32, mts: u16, device: &str, bank: &str) -> Vec<u8> {
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
    f.extend_from_slice(format!("{device}\0{bank}\0\0").as_bytes());
    f
}

/// A fixture's DIMMs, as entries to write under its root (path, bytes):
/// one in each channel of each socket, named as Supermicro's boards name
/// them.
pub(super) fn fixture_entries(sockets: usize, channels: usize, mts: u16) -> Vec<(String, Vec<u8>)> {
    (0..channels * sockets)
        .map(|i| {
            let (socket, c) = (i / channels, i % channels);
            let channel = match u8::try_from(c).ok().filter(|&c| c < 26) {
                Some(c) => char::from(b'A' + c).to_string(),
                None => format!("Z{c}"),
            };
            let record = slot_record(
                i as u16,
                64 * 1024,
                mts,
                &format!("P{socket}-DIMM{channel}1"),
                &format!("P{socket} CHANNEL {channel}"),
            );
            (format!("sys/firmware/dmi/entries/17-{i}/raw"), record)
        })
        .collect()
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
                channel: None,
                size_mib: 32 * 1024,
                mts: Some(3200),
                data_width_bits: Some(64),
                unknown: Vec::new(),
            }
        );
        let mut empty = memory_device_record(1, 0, 3200);
        assert_eq!(parse_memory_device(&empty), None);
        assert_eq!(
            parse_slot(&empty),
            Ok(Slot::Empty(EmptySlot {
                locator: Some("DIMM 1 (BANK 1)".into()),
                channel: None
            }))
        );
        empty[0] = 16;
        assert_eq!(parse_memory_device(&empty), None);
        assert_eq!(parse_memory_device(&[17]), None);
        assert_eq!(parse_memory_device(&[]), None);
    }

    #[test]
    fn channels_are_read_from_names_that_give_them_and_never_guessed() {
        let cases = [
            (Some("P1-DIMMA1"), None, Some("P1-DIMMA")),
            (Some("CPU1_DIMM_B2"), None, Some("CPU1_DIMM_B")),
            (Some("DIMM 0"), Some("P0 CHANNEL A"), Some("P0 CHANNEL A")),
            (
                Some("P0-DIMMF1"),
                Some("P0_Node0_Channel5_Dimm0"),
                Some("P0_Node0_Channel5"),
            ),
            (Some("DIMM 3"), Some("BANK 3"), None),
            (Some("DIMM1"), None, None),
            (Some("PROC 1 DIMM 4"), None, None),
            (Some("A1"), Some("Not Specified"), None),
            (None, None, None),
        ];
        for (device, bank, want) in cases {
            assert_eq!(
                channel_of(device, bank).as_deref(),
                want,
                "{device:?} {bank:?}"
            );
        }
    }

    proptest::proptest! {
        /// Any bytes: an entry or the reason it is none, and a populated
        /// entry's speed and width within what memory has, or unknown.
        #[test]
        fn any_bytes_are_a_slot_or_a_reason(
            mut raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..160),
            real in proptest::prelude::any::<bool>(),
        ) {
            if real && raw.len() >= 2 {
                // Mostly a type 17 header, so that the fields are reached.
                raw[0] = 17;
                raw[1] = raw[1].max(0x17);
            }
            match parse_slot(&raw) {
                Ok(Slot::Populated(d)) => {
                    proptest::prop_assert!(d.mts.is_none_or(|m| PLAUSIBLE_MTS.contains(&m)));
                    proptest::prop_assert!(d.data_width_bits.is_none_or(|w| w >= 8 && w % 8 == 0));
                    proptest::prop_assert_eq!(
                        d.unknown.len(),
                        usize::from(d.mts.is_none()) + usize::from(d.data_width_bits.is_none())
                    );
                    let names = d.locator.iter().chain(&d.channel);
                    for name in names {
                        proptest::prop_assert!(!name.chars().any(char::is_control));
                    }
                }
                Ok(Slot::Empty(_)) => {}
                Err(why) => proptest::prop_assert!(!why.is_empty()),
            }
        }
    }
}
