//! The node's DIMM population as SMBIOS gives it, judged against itself:
//! the summary `topo` shows, and the DIMMs or channels unlike the others
//! that a check fails a node on when no baseline gives its own.

use super::smbios::{EmptySlot, MemoryDevice};

/// One line for `topo`: the DIMMs by kind, the channels they fill where
/// the names give them, the empty slots; or why SMBIOS gave none.
pub fn summary(root: &std::path::Path, devices: &[MemoryDevice], empty: &[EmptySlot]) -> String {
    if devices.is_empty() {
        let dir = root.join("sys/firmware/dmi/entries");
        let listed = std::fs::read_dir(&dir).map(|entries| {
            (entries.flatten()).any(|e| e.file_name().to_string_lossy().starts_with("17-"))
        });
        return match listed {
            Ok(true) | Err(_) if dir.exists() => {
                "not readable here: SMBIOS's memory entries need root".into()
            }
            Err(_) => {
                "not readable here: no SMBIOS tables (/sys/firmware/dmi/entries is absent)".into()
            }
            Ok(_) => "none: the firmware's SMBIOS lists no memory device".into(),
        };
    }
    let kinds: Vec<String> = (kinds(devices).iter())
        .map(|&((mib, mts), n)| format!("{n} × {} at {mts} MT/s", crate::units::Bytes(mib << 20)))
        .collect();
    let mut line = kinds.join(" + ");
    let unknown = devices.iter().filter(|d| d.mts.is_none()).count();
    if unknown > 0 {
        let sep = if line.is_empty() { "" } else { " + " };
        line.push_str(&format!("{sep}{unknown} of unknown speed"));
    }
    let mut channels: Vec<&str> = devices
        .iter()
        .filter_map(|d| d.channel.as_deref())
        .collect();
    channels.sort_unstable();
    channels.dedup();
    if !channels.is_empty() {
        line.push_str(&format!(
            " in {}",
            crate::units::plural(channels.len(), "channel")
        ));
    }
    match empty.len() {
        0 => line.push_str(" · no empty slot"),
        n if n <= 4 => {
            let names: Vec<&str> = (empty.iter())
                .map(|e| e.locator.as_deref().unwrap_or("unnamed"))
                .collect();
            line.push_str(&format!(" · empty: {}", names.join(", ")));
        }
        n => line.push_str(&format!(" · {n} empty slots")),
    }
    line
}

/// The DIMMs' kinds (size MiB, MT/s) with how many of each, in the order
/// first seen; a DIMM of unknown speed is of no kind (it neither passes
/// nor fails a comparison).
fn kinds(devices: &[MemoryDevice]) -> Vec<((u64, u32), usize)> {
    let mut kinds: Vec<((u64, u32), usize)> = Vec::new();
    for k in devices.iter().filter_map(kind) {
        match kinds.iter_mut().find(|(seen, _)| *seen == k) {
            Some((_, n)) => *n += 1,
            None => kinds.push((k, 1)),
        }
    }
    kinds
}

/// A DIMM's size and speed, where its speed is known.
fn kind(d: &MemoryDevice) -> Option<(u64, u32)> {
    Some((d.size_mib, d.mts?))
}

/// DIMMs unlike the others in size or speed, each named with what its
/// siblings have: a DIMM of another size leaves its channel's capacity
/// unlike the others' (the memory interleaves unevenly), one of another
/// speed runs its channels at the slowest. Decided from the population
/// alone, no baseline; empty where every DIMM agrees.
pub fn population_findings(devices: &[MemoryDevice]) -> Vec<String> {
    let mut kinds = kinds(devices);
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
        .filter_map(|d| Some((d, kind(d).filter(|&k| k != usual)?)))
        .map(|(d, k)| {
            let name = d.locator.as_deref().unwrap_or("a DIMM");
            format!(
                "{name}: {} where its {most} siblings have {} (SMBIOS): replace it with one like them",
                words(k),
                words(usual)
            )
        })
        .collect()
}

/// Channels with fewer DIMMs than most channels hold, each named by its
/// first empty slot: a DIMM missing, or one the firmware disabled (it then
/// reads as an empty slot), takes the channel's bandwidth. Decided only
/// where the locators name channels ([`channel_of`]), across two or more
/// channels, and where one count is the most common (no majority, no
/// rule). Empty where every channel holds alike.
pub fn empty_channel_findings(devices: &[MemoryDevice], empty: &[EmptySlot]) -> Vec<String> {
    // Each channel: DIMMs in it, and its empty slots' names.
    let mut channels: Vec<(&str, usize, Vec<&str>)> = Vec::new();
    let slots = (devices.iter().map(|d| (&d.channel, None))).chain(
        (empty.iter()).map(|e| (&e.channel, Some(e.locator.as_deref().unwrap_or("a slot")))),
    );
    for (channel, empty_slot) in slots {
        let Some(name) = channel.as_deref() else {
            return Vec::new();
        };
        let i = match channels.iter().position(|(c, ..)| *c == name) {
            Some(i) => i,
            None => {
                channels.push((name, 0, Vec::new()));
                channels.len() - 1
            }
        };
        match empty_slot {
            None => channels[i].1 += 1,
            Some(slot) => channels[i].2.push(slot),
        }
    }
    let mut counts: Vec<(usize, usize)> = Vec::new();
    for &(_, n, _) in &channels {
        match counts.iter_mut().find(|(k, _)| *k == n) {
            Some((_, times)) => *times += 1,
            None => counts.push((n, 1)),
        }
    }
    counts.sort_by_key(|&(n, times)| (std::cmp::Reverse(times), n));
    let usual = match counts.as_slice() {
        [(usual, most), rest @ ..] if channels.len() >= 2 && rest.iter().all(|r| r.1 < *most) => {
            (*usual, *most)
        }
        _ => return Vec::new(),
    };
    (channels.iter())
        .filter(|(_, n, empty)| *n < usual.0 && !empty.is_empty())
        .map(|(channel, n, empty)| {
            format!(
                "{}: empty, so channel {channel} holds {} where {} of the {} channels hold {} (SMBIOS): a DIMM missing or disabled by the firmware; reseat or replace it",
                empty[0],
                crate::units::plural(*n, "DIMM"),
                usual.1,
                channels.len(),
                crate::units::plural(usual.0, "DIMM")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::smbios::{
        Slot, memory_device_record, parse_memory_device, parse_slot, slot_record,
    };

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

    /// Eight channels of two slots on a Supermicro-named board, slot 1 of
    /// each populated except where `missing`.
    fn board(missing: &[char]) -> (Vec<MemoryDevice>, Vec<EmptySlot>) {
        let (mut populated, mut empty) = (Vec::new(), Vec::new());
        for (i, ch) in ('A'..='H').enumerate() {
            for slot in 1..=2u16 {
                let size = if slot == 1 && !missing.contains(&ch) {
                    32 * 1024
                } else {
                    0
                };
                let name = format!("P1-DIMM{ch}{slot}");
                let raw = slot_record(i as u16 * 2 + slot, size, 4800, &name, "");
                match parse_slot(&raw).unwrap() {
                    Slot::Populated(d) => populated.push(d),
                    Slot::Empty(e) => empty.push(e),
                }
            }
        }
        (populated, empty)
    }

    #[test]
    fn a_channel_emptier_than_the_others_is_named_by_its_empty_slot() {
        let (dimms, empty) = board(&[]);
        assert_eq!(dimms[2].channel.as_deref(), Some("P1-DIMMC"));
        assert_eq!(empty_channel_findings(&dimms, &empty), Vec::<String>::new());
        let (dimms, empty) = board(&['C']);
        assert_eq!(
            empty_channel_findings(&dimms, &empty),
            vec![
                "P1-DIMMC1: empty, so channel P1-DIMMC holds 0 DIMMs where 7 of the 8 channels hold 1 DIMM (SMBIOS): a DIMM missing or disabled by the firmware; reseat or replace it"
            ]
        );
        // Half the channels empty: no majority to hold them against.
        let (dimms, empty) = board(&['A', 'B', 'C', 'D']);
        assert_eq!(empty_channel_findings(&dimms, &empty), Vec::<String>::new());
        // Slots whose names give no channel: no rule.
        let dimms: Vec<MemoryDevice> = (0..7)
            .map(|i| parse_memory_device(&memory_device_record(i, 32 * 1024, 4800)).unwrap())
            .collect();
        let empty = [EmptySlot {
            locator: Some("DIMM 7".into()),
            channel: None,
        }];
        assert_eq!(empty_channel_findings(&dimms, &empty), Vec::<String>::new());
    }

    #[test]
    fn the_summary_counts_kinds_channels_and_empty_slots_or_says_why_there_are_none() {
        let root = tempfile::tempdir().unwrap();
        let (dimms, empty) = board(&[]);
        assert_eq!(
            summary(root.path(), &dimms, &empty[..2]),
            "8 × 32 GiB at 4800 MT/s in 8 channels · empty: P1-DIMMA2, P1-DIMMB2"
        );
        assert_eq!(
            summary(root.path(), &dimms[..1], &empty),
            "1 × 32 GiB at 4800 MT/s in 1 channel · 8 empty slots"
        );
        assert!(summary(root.path(), &[], &[]).contains("/sys/firmware/dmi/entries is absent"));
        let entry = root.path().join("sys/firmware/dmi/entries/17-0");
        std::fs::create_dir_all(&entry).unwrap();
        assert_eq!(
            summary(root.path(), &[], &[]),
            "not readable here: SMBIOS's memory entries need root"
        );
    }
}
