//! Arm parts by the `CPU implementer` and `CPU part` fields of
//! /proc/cpuinfo (Arm cores print no model name). The same core can sit in
//! different chips (a Neoverse V2 in NVIDIA Grace and in AWS Graviton4), so
//! the chip also looks at the DMI system vendor.

/// The core's name, e.g. `Arm Neoverse V2`.
pub fn core_name(implementer: &str, part: &str) -> Option<&'static str> {
    Some(match (implementer, part) {
        ("0x41", "0xd03") => "Arm Cortex-A53",
        ("0x41", "0xd07") => "Arm Cortex-A57",
        ("0x41", "0xd08") => "Arm Cortex-A72",
        ("0x41", "0xd0b") => "Arm Cortex-A76",
        ("0x41", "0xd0c") => "Arm Neoverse N1",
        ("0x41", "0xd40") => "Arm Neoverse V1",
        ("0x41", "0xd49") => "Arm Neoverse N2",
        ("0x41", "0xd4f") => "Arm Neoverse V2",
        ("0x41", "0xd8e") => "Arm Neoverse N3",
        ("0x41", "0xd84") => "Arm Neoverse V3",
        ("0x46", "0x001") => "Fujitsu A64FX",
        ("0x48", "0xd01") => "HiSilicon Kunpeng 920",
        ("0xc0", "0xac3") => "AmpereOne",
        _ => return None,
    })
}

/// A chip whose memory system is known: (description, GB/s per socket,
/// channels and MT/s when they apply).
pub type Chip = (String, f64, Option<(u32, u32)>);

/// The chip, from the core and the system vendor.
pub fn chip(implementer: &str, part: &str, system_vendor: Option<&str>) -> Option<Chip> {
    let amazon = system_vendor.is_some_and(|v| v.contains("Amazon"));
    let ddr = |name: &str, channels: u32, mts: u32| -> Chip {
        (
            format!("{name}: {channels} × DDR-{mts} per socket"),
            f64::from(channels) * f64::from(mts) * 8.0 / 1e3,
            Some((channels, mts)),
        )
    };
    Some(match (implementer, part) {
        ("0x46", "0x001") => (
            "Fujitsu A64FX: 4 HBM2 stacks × 256 GB/s".into(),
            1024.0,
            None,
        ),
        ("0x41", "0xd4f") if amazon => ddr("AWS Graviton4 (Neoverse V2)", 12, 5600),
        ("0x41", "0xd4f") => (
            "NVIDIA Grace (Neoverse V2), LPDDR5X: NVIDIA's per-CPU figure".into(),
            512.0,
            None,
        ),
        ("0x41", "0xd40") if amazon => ddr("AWS Graviton3 (Neoverse V1)", 8, 4800),
        ("0x41", "0xd0c") => ddr("Neoverse N1 (Ampere Altra, AWS Graviton2)", 8, 3200),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_core_in_two_chips_is_told_apart_by_the_vendor() {
        assert_eq!(core_name("0x41", "0xd4f"), Some("Arm Neoverse V2"));
        let grace = chip("0x41", "0xd4f", Some("NVIDIA")).unwrap();
        let graviton4 = chip("0x41", "0xd4f", Some("Amazon EC2")).unwrap();
        assert!(grace.0.contains("Grace") && graviton4.0.contains("Graviton4"));
        assert_eq!(graviton4.1, 12.0 * 5600.0 * 8.0 / 1e3);
        assert_eq!(chip("0x41", "0xd40", Some("Amazon EC2")).unwrap().1, 307.2);
        // A V1 elsewhere, or an N2: the core is named, the memory unknown.
        assert!(chip("0x41", "0xd40", None).is_none());
        assert!(chip("0x41", "0xd49", None).is_none());
        assert_eq!(core_name("0x41", "0xd49"), Some("Arm Neoverse N2"));
        assert_eq!(core_name("0x99", "0x001"), None);
    }
}
