//! Sizes: parsing `80M` / `6GiB` / `512MB`, and printing bytes for people.

use std::fmt;

/// Bytes of an f64 array element.
pub const ELEMENT_BYTES: u64 = 8;

/// A quantity of bytes. A type of its own so that it cannot be mixed up with
/// element counts.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const KIB: u64 = 1 << 10;
    pub const MIB: u64 = 1 << 20;
    pub const GIB: u64 = 1 << 30;

    pub fn mib(self) -> f64 {
        self.0 as f64 / Self::MIB as f64
    }
    pub fn gib(self) -> f64 {
        self.0 as f64 / Self::GIB as f64
    }
}

impl fmt::Display for Bytes {
    /// Binary units, as `lscpu` and `numactl -H` print them; a value that
    /// rounds up to 1024 of one unit is shown in the next (`1 MiB`, never
    /// `1024.0 KiB`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 3] = [
            (Bytes::KIB, "KiB"),
            (Bytes::MIB, "MiB"),
            (Bytes::GIB, "GiB"),
        ];
        let Some(mut i) = UNITS.iter().rposition(|&(size, _)| self.0 >= size) else {
            return write!(f, "{} B", self.0);
        };
        let mut shown = (self.0 as f64 / UNITS[i].0 as f64 * 10.0).round() / 10.0;
        if shown >= 1024.0 && i + 1 < UNITS.len() {
            i += 1;
            shown /= 1024.0;
        }
        let unit = UNITS[i].1;
        if shown.fract() == 0.0 {
            write!(f, "{shown:.0} {unit}")
        } else {
            write!(f, "{shown:.1} {unit}")
        }
    }
}

/// `1 thread`, `2 threads`.
/// A number as people write it: `75`, `12.5`, without trailing zeros.
pub fn trim_float(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// What `--size` asked for: a count of elements or a number of bytes per array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArraySize {
    Elements(u64),
    Bytes(Bytes),
}

impl ArraySize {
    pub fn elements(self) -> u64 {
        match self {
            ArraySize::Elements(n) => n,
            ArraySize::Bytes(b) => b.0 / ELEMENT_BYTES,
        }
    }
}

/// Parses `--size`: a bare count or a count with a decimal suffix (`k`, `M`,
/// `G`: 10^3, 10^6, 10^9) is a number of elements, as in STREAM's
/// `-DSTREAM_ARRAY_SIZE=80000000`; a value with a byte unit (`B`, `KB`, `MB`,
/// `GB`, `KiB`, `MiB`, `GiB`, `TiB`) is bytes per array.
pub fn parse_array_size(text: &str) -> Result<ArraySize, String> {
    parse_size(text, true)
}

/// The byte unit a unit of bits was likely meant as (`Gb` → `GB`): a
/// capital prefix with a lowercase `b` is how bits are written (`Gb/s`),
/// and membw counts bytes. An all-lowercase `gb` stays the casual
/// spelling of gigabytes.
pub fn bits_meant_as_bytes(unit: &str) -> Option<String> {
    let prefix = unit.trim().strip_suffix('b')?;
    ["K", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"]
        .contains(&prefix)
        .then(|| format!("{prefix}B"))
}

/// A size with its unit; `elements_too`: an element count is accepted
/// (and suggested), else bytes only.
fn parse_size(text: &str, elements_too: bool) -> Result<ArraySize, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    if num.is_empty() {
        return Err(format!("size '{text}' does not start with a number"));
    }
    let value: f64 = num
        .parse()
        .map_err(|_| format!("size '{text}': '{num}' is not a number"))?;
    if let Some(bytes) = bits_meant_as_bytes(unit) {
        return Err(format!(
            "size '{text}': '{}' is bits (a lowercase b); membw counts bytes: write {num}{bytes}",
            unit.trim()
        ));
    }
    // STREAM's sizes are often written as powers of ten: 1e9 elements.
    if let Some(exponent) = (unit.strip_prefix(['e', 'E']))
        .and_then(|e| e.parse::<i32>().ok())
        .filter(|_| elements_too)
    {
        return whole_elements(text, value * 10f64.powi(exponent));
    }
    // Units in any case but a lowercase b: `m` and `M` are elements,
    // `MB` bytes.
    let (scale, is_bytes) = match unit.trim().to_ascii_lowercase().as_str() {
        "" => (1.0, false),
        "k" => (1e3, false),
        "m" => (1e6, false),
        "g" => (1e9, false),
        "b" => (1.0, true),
        "kb" => (1e3, true),
        "mb" => (1e6, true),
        "gb" => (1e9, true),
        "tb" => (1e12, true),
        "kib" => (Bytes::KIB as f64, true),
        "mib" => (Bytes::MIB as f64, true),
        "gib" => (Bytes::GIB as f64, true),
        "tib" => ((1u64 << 40) as f64, true),
        _ => {
            let like = match elements_too {
                true => "an element count such as 80M or 8e7, or bytes such as 512MB or 6GiB",
                false => "bytes such as 512MB or 6GiB",
            };
            return Err(format!(
                "size '{text}': unknown unit '{}' (use {like})",
                unit.trim()
            ));
        }
    };
    let total = value * scale;
    if !is_bytes {
        return whole_elements(text, total);
    }
    if !total.is_finite() || total >= u64::MAX as f64 {
        return Err(format!("size '{text}' is too large"));
    }
    let size = ArraySize::Bytes(Bytes(total.round() as u64));
    if size.elements() == 0 {
        return Err(format!("size '{text}' is less than one 8-byte element"));
    }
    Ok(size)
}

/// `total` elements, a whole positive count that fits.
fn whole_elements(text: &str, total: f64) -> Result<ArraySize, String> {
    if !total.is_finite() || total >= u64::MAX as f64 {
        return Err(format!("size '{text}' is too large"));
    }
    if total.fract() != 0.0 {
        return Err(format!("size '{text}' is not a whole number of elements"));
    }
    match total as u64 {
        0 => Err(format!("size '{text}' is zero elements")),
        n => Ok(ArraySize::Elements(n)),
    }
}

/// Both readings of a size whose suffix is a bare `k`, `M`, `G` or `T`
/// (elements, as STREAM counts, where a user may have meant bytes):
/// `1G = 10⁹ elements × 8 B = 8 GB per array; for bytes write 1GB`.
/// None for a plain count or a size with a byte unit.
pub fn ambiguous_reading(text: &str) -> Option<String> {
    let t = text.trim();
    let unit = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '_');
    let power = match unit.to_ascii_lowercase().as_str() {
        "k" => "10³",
        "m" => "10⁶",
        "g" => "10⁹",
        _ => return None,
    };
    let elements = parse_array_size(t).ok()?.elements();
    let count = match &t[..t.len() - unit.len()] {
        "1" => power.to_string(),
        n => format!("{n} × {power}"),
    };
    Some(format!(
        "{t} = {count} elements × 8 B = {} per array; for bytes write {t}B",
        decimal_bytes(elements * ELEMENT_BYTES)
    ))
}

/// Bytes in decimal units (`8 GB`, `800 MB`), as a size is written.
fn decimal_bytes(bytes: u64) -> String {
    let units = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    let b = bytes as f64;
    units
        .iter()
        .find(|(scale, _)| b >= *scale)
        .map_or(format!("{bytes} B"), |(scale, unit)| {
            let v = b / scale;
            if v.fract() == 0.0 {
                format!("{v:.0} {unit}")
            } else {
                format!("{v:.1} {unit}")
            }
        })
}

/// Parses a plain byte quantity such as `64MiB` or `2GB` (for limits and sweeps).
pub fn parse_bytes(text: &str) -> Result<Bytes, String> {
    match parse_size(text, false)? {
        ArraySize::Bytes(b) => Ok(b),
        ArraySize::Elements(_) => {
            let t = text.trim();
            let spelled = match t.strip_suffix(['k', 'K', 'm', 'M', 'g', 'G']) {
                Some(n) => {
                    let prefix = t[n.len()..].to_uppercase();
                    format!("{n}{prefix}iB or {n}{prefix}B")
                }
                None => format!("{t}B"),
            };
            Err(format!(
                "'{text}' needs a byte unit (B, KB, MB, GB, KiB, MiB, GiB): write {spelled}"
            ))
        }
    }
}

/// `10%`, `0.1` or `10`: a share above 0 and below 1 (tolerances, outlier
/// thresholds, shares of a peak). A bare number from 1 up cannot be a
/// fraction below 1, so it is a percentage: `10` is 10 %.
pub fn parse_share(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let share = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t
            .parse::<f64>()
            .map(|v| if v >= 1.0 { v / 100.0 } else { v }),
    }
    .map_err(|_| format!("'{text}': a share such as 10% or 0.1"))?;
    if !(share > 0.0 && share < 1.0) {
        return Err(format!(
            "'{text}': must be above 0 % and below 100 % (10% or 0.1 is a tenth)"
        ));
    }
    Ok(share)
}

/// `25%` or `25`: a percentage from 0 to 100 inclusive (split shares,
/// far-memory shares), returned in percent.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    text.trim()
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|p| (0.0..=100.0).contains(p))
        .ok_or_else(|| format!("'{text}' is not a share of 0 to 100 %"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_read_as_percent_fraction_or_a_bare_percentage() {
        for (text, share) in [
            ("10%", 0.1),
            ("0.1", 0.1),
            ("10", 0.1),
            ("1", 0.01),
            ("99.5", 0.995),
        ] {
            let got = parse_share(text).unwrap();
            assert!((got - share).abs() < 1e-12, "{text}: {got}");
        }
        for bad in ["0", "100", "100%", "-5%", "150", "ten"] {
            assert!(parse_share(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn element_counts_use_decimal_suffixes() {
        assert_eq!(parse_array_size("80M"), Ok(ArraySize::Elements(80_000_000)));
        assert_eq!(
            parse_array_size("800000000"),
            Ok(ArraySize::Elements(800_000_000))
        );
        assert_eq!(parse_array_size("2.5k"), Ok(ArraySize::Elements(2500)));
        assert_eq!(parse_array_size("10_000"), Ok(ArraySize::Elements(10_000)));
    }

    #[test]
    fn byte_units_give_bytes_per_array() {
        assert_eq!(
            parse_array_size("6GiB").unwrap().elements(),
            6 * (1 << 30) / 8
        );
        assert_eq!(parse_array_size("512MB").unwrap().elements(), 64_000_000);
        assert_eq!(parse_bytes("1KiB"), Ok(Bytes(1024)));
        // Any case, as users type them.
        assert_eq!(parse_bytes("1gb"), Ok(Bytes(1_000_000_000)));
        assert_eq!(parse_bytes("2mib"), Ok(Bytes(2 << 20)));
        assert_eq!(parse_array_size("80m"), Ok(ArraySize::Elements(80_000_000)));
    }

    #[test]
    fn bad_sizes_are_refused_with_the_bad_part_named() {
        assert!(parse_array_size("0").unwrap_err().contains("zero"));
        assert!(
            parse_array_size("4B")
                .unwrap_err()
                .contains("less than one 8-byte element")
        );
        assert!(parse_array_size("abc").unwrap_err().contains("number"));
        assert!(parse_array_size("12XB").unwrap_err().contains("'XB'"));
        assert!(
            parse_array_size("1..2M")
                .unwrap_err()
                .contains("not a number")
        );
        assert!(parse_bytes("12").is_err());
    }

    #[test]
    fn bytes_print_in_binary_units() {
        assert_eq!(Bytes(512).to_string(), "512 B");
        assert_eq!(Bytes(48 * 1024).to_string(), "48 KiB");
        assert_eq!(Bytes(3 * Bytes::MIB / 2).to_string(), "1.5 MiB");
        // Rounding never shows 1024 of a unit.
        assert_eq!(Bytes(Bytes::MIB - 1).to_string(), "1 MiB");
        assert_eq!(Bytes(Bytes::GIB - 100).to_string(), "1 GiB");
        assert_eq!(Bytes(1000).to_string(), "1000 B");
        assert_eq!(Bytes(16 * Bytes::GIB).to_string(), "16 GiB");
    }
}

#[cfg(test)]
mod reading_tests {
    use super::*;

    #[test]
    fn a_bare_decimal_suffix_reads_both_ways_and_a_byte_unit_not() {
        assert_eq!(
            ambiguous_reading("1G").as_deref(),
            Some("1G = 10⁹ elements × 8 B = 8 GB per array; for bytes write 1GB")
        );
        assert_eq!(
            ambiguous_reading("100k").as_deref(),
            Some("100k = 100 × 10³ elements × 8 B = 800 kB per array; for bytes write 100kB")
        );
        for plain in ["80000000", "512MB", "6GiB", "2mb", "x"] {
            assert_eq!(ambiguous_reading(plain), None, "{plain}");
        }
    }
}
