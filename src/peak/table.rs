//! The built-in table of server CPUs: memory channels per socket and
//! rated MT/s, by model name or by CPUID family and model.

/// One row of the built-in table.
pub(super) struct CpuFamily {
    pub name: &'static str,
    pub channels: u32,
    pub mts: u32,
}

fn family(name: &'static str, channels: u32, mts: u32) -> Option<CpuFamily> {
    Some(CpuFamily {
        name,
        channels,
        mts,
    })
}

/// Matches a model-name string against the built-in table of server CPUs.
pub(super) fn lookup_model(model: &str) -> Option<CpuFamily> {
    let words: Vec<&str> = model.split_whitespace().collect();
    let after = |key: &str| {
        words
            .iter()
            .position(|w| w.eq_ignore_ascii_case(key))
            .and_then(|i| words.get(i + 1))
            .copied()
    };
    if let Some(num) = after("EPYC") {
        // 7xx1 Naples, 7xx2 Rome, 7xx3 Milan, 9xx4 Genoa, 9xx5 Turin, 8xx4 Siena.
        let digits: Vec<char> = num.chars().collect();
        if digits.len() < 4 {
            return None;
        }
        return match (digits[0], digits[3]) {
            ('7', '1') => family("AMD EPYC 7001 (Naples)", 8, 2666),
            ('7', '2') => family("AMD EPYC 7002 (Rome)", 8, 3200),
            ('7', '3') => family("AMD EPYC 7003 (Milan)", 8, 3200),
            ('9', '4') => family("AMD EPYC 9004 (Genoa)", 12, 4800),
            ('9', '5') => family("AMD EPYC 9005 (Turin)", 12, 6000),
            ('8', '4') => family("AMD EPYC 8004 (Siena)", 6, 4800),
            _ => None,
        };
    }
    if let Some(pos) = words.iter().position(|w| w.starts_with("E5-")) {
        let version = words.get(pos + 1).copied().unwrap_or("");
        return match version {
            "v2" => family("Intel Xeon E5 v2 (Ivy Bridge-EP)", 4, 1866),
            "v3" => family("Intel Xeon E5 v3 (Haswell-EP)", 4, 2133),
            "v4" => family("Intel Xeon E5 v4 (Broadwell-EP)", 4, 2400),
            _ => family("Intel Xeon E5 (Sandy Bridge-EP)", 4, 1600),
        };
    }
    for tier in ["Platinum", "Gold", "Silver", "Bronze"] {
        let Some(num) = after(tier) else { continue };
        // Xeon Scalable: the second digit is the generation, the first the class.
        let d: Vec<char> = num.chars().collect();
        if d.len() < 4 {
            return None;
        }
        let high = tier == "Platinum" || (tier == "Gold" && d[0] == '6');
        return match d[1] {
            '1' => family(
                "Intel Xeon Scalable 1st gen (Skylake-SP)",
                6,
                if high { 2666 } else { 2400 },
            ),
            '2' if tier == "Platinum" && d[0] == '9' => {
                family("Intel Xeon Platinum 9200 (Cascade Lake-AP)", 12, 2933)
            }
            '2' => family(
                "Intel Xeon Scalable 2nd gen (Cascade Lake)",
                6,
                if high { 2933 } else { 2666 },
            ),
            '3' => family(
                "Intel Xeon Scalable 3rd gen (Ice Lake-SP)",
                8,
                match tier {
                    "Silver" | "Bronze" => 2666,
                    _ if high => 3200,
                    _ => 2933,
                },
            ),
            '4' => family(
                "Intel Xeon Scalable 4th gen (Sapphire Rapids)",
                8,
                if high { 4800 } else { 4400 },
            ),
            '5' => family(
                "Intel Xeon Scalable 5th gen (Emerald Rapids)",
                8,
                if high { 5600 } else { 5200 },
            ),
            _ => None,
        };
    }
    if model.contains("Altra") {
        return family("Ampere Altra", 8, 3200);
    }
    None
}

/// x86 server CPUs by CPUID vendor, family and model, for a model name
/// that names no model number (a VM's `AMD EPYC`, a masked `Intel Xeon
/// Processor`). Family and model name a core generation, so the table
/// gives the generation's channels and rated MT/s.
pub(super) fn lookup_cpuid(vendor: &str, family_id: u32, model: u32) -> Option<CpuFamily> {
    match (vendor, family_id, model) {
        ("AuthenticAMD", 0x17, 0x00..=0x0f) => family("AMD EPYC 7001 (Naples)", 8, 2666),
        ("AuthenticAMD", 0x17, 0x30..=0x3f) => family("AMD EPYC 7002 (Rome)", 8, 3200),
        ("AuthenticAMD", 0x19, 0x00..=0x0f) => family("AMD EPYC 7003 (Milan)", 8, 3200),
        ("AuthenticAMD", 0x19, 0x10..=0x1f) => family("AMD EPYC 9004 (Genoa)", 12, 4800),
        ("AuthenticAMD", 0x1a, 0x00..=0x1f) => family("AMD EPYC 9005 (Turin)", 12, 6000),
        ("GenuineIntel", 6, 0x2d) => family("Intel Xeon E5 (Sandy Bridge-EP)", 4, 1600),
        ("GenuineIntel", 6, 0x3e) => family("Intel Xeon E5 v2 (Ivy Bridge-EP)", 4, 1866),
        ("GenuineIntel", 6, 0x3f) => family("Intel Xeon E5 v3 (Haswell-EP)", 4, 2133),
        ("GenuineIntel", 6, 0x4f) => family("Intel Xeon E5 v4 (Broadwell-EP)", 4, 2400),
        // Skylake-SP and Cascade Lake share model 0x55: the older, slower one.
        ("GenuineIntel", 6, 0x55) => {
            family("Intel Xeon Scalable (Skylake-SP or Cascade Lake)", 6, 2666)
        }
        ("GenuineIntel", 6, 0x6a) => family("Intel Xeon Scalable 3rd gen (Ice Lake-SP)", 8, 3200),
        ("GenuineIntel", 6, 0x8f) => {
            family("Intel Xeon Scalable 4th gen (Sapphire Rapids)", 8, 4800)
        }
        ("GenuineIntel", 6, 0xcf) => {
            family("Intel Xeon Scalable 5th gen (Emerald Rapids)", 8, 5600)
        }
        _ => None,
    }
}
