//! What the node says about itself, read as hostile: names (DIMM labels,
//! SMBIOS locators, GPU and host names, a baseline's slots) come from
//! firmware and from files any root process can write, and counters from
//! drivers that may be broken. A name is passed on escaped, so that no
//! input can add a line to what a health checker reads; a number is a value
//! in its plausible range or an [`Unknown`] with its file and reason, never
//! a zero taken for "healthy".

use serde::{Deserialize, Serialize};

/// A value that could not be read or is outside what it can be: where it
/// came from (a file under the root, or a field of a document) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unknown {
    pub file: String,
    pub why: String,
}

impl Unknown {
    pub fn new(file: impl Into<String>, why: impl Into<String>) -> Unknown {
        Unknown {
            file: printable(&file.into()),
            why: why.into(),
        }
    }
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.file, self.why)
    }
}

/// `text` with every control character, line or paragraph separator and
/// backslash escaped (`\n`, `\r`, `\t`, `\\`, `\u{1b}`): one line in any
/// output, and the escape never read as the character it stands for.
pub fn printable(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Whether `c` is shown escaped: it could end or rewrite a line.
pub fn needs_escape(c: char) -> bool {
    // U+2028 and U+2029 end a line in JavaScript and some terminals; a
    // backslash is escaped only where something else is, so plain Windows
    // paths stay as they were.
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

/// A name read from a document (`#[serde(deserialize_with = ...)]`), made
/// [`printable`]: a results file or a verdict is input like the node's own
/// files, and its host and CPU names reach report headers, tables and
/// checkers' lines. Names written by membw are printable already, so a
/// file read and written again is unchanged.
pub fn printable_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    String::deserialize(d).map(|s| printable(&s))
}

/// [`printable_name`] for a name that may be absent (`null`, or missing
/// where the field also has `#[serde(default)]`).
pub fn printable_name_opt<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d).map(|s| s.map(|s| printable(&s)))
}

/// [`printable_name`] for a list of names (a baseline's hosts, its slots).
pub fn printable_names<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Vec::<String>::deserialize(d).map(|v| v.iter().map(|s| printable(s)).collect())
}

/// A value's text as an error shows it: printable and at most 24
/// characters, so that a file of garbage is not copied into the verdict.
pub fn excerpt(text: &str) -> String {
    let short: String = text.chars().take(24).collect();
    let more = if short.len() < text.len() { "…" } else { "" };
    format!("'{}{more}'", printable(&short))
}

/// A counter's text: decimal digits, at most 2^64 − 1 (a kernel counter is
/// an unsigned long); anything else is why it is not one.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("is empty".into());
    }
    if !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("holds {}, not a count", excerpt(t)));
    }
    t.parse::<u64>()
        .map_err(|_| format!("holds {}, beyond a 64-bit counter", excerpt(t)))
}

/// Seconds a counter or the kernel can have been running: up to 30 years.
/// A figure past it (a clock or a driver gone wrong) would make any count
/// a harmless rate.
pub const MOST_SECONDS_UP: u64 = 30 * 365 * 86_400;

/// A duration's text in seconds (`/proc/uptime`'s first field, a
/// `seconds_since_reset`): finite, not negative, at most
/// [`MOST_SECONDS_UP`]; whole seconds.
pub fn parse_seconds(text: &str) -> Result<u64, String> {
    let t = text.split_whitespace().next().unwrap_or("");
    let s: f64 = t
        .parse()
        .map_err(|_| format!("holds {}, not a number of seconds", excerpt(t)))?;
    if !s.is_finite() || s < 0.0 {
        return Err(format!("holds {}, not a duration", excerpt(t)));
    }
    if s > MOST_SECONDS_UP as f64 {
        return Err(format!("holds {}, more than 30 years", excerpt(t)));
    }
    Ok(s as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_name_stays_on_one_line_and_cannot_start_another() {
        let forged = "P0-DIMMA2\nmembw: node healthy\r\u{1b}[2K\u{2028}x\\n";
        let shown = printable(forged);
        assert_eq!(
            shown,
            "P0-DIMMA2\\nmembw: node healthy\\r\\u{1b}[2K\\u{2028}x\\\\n"
        );
        assert!(!shown.chars().any(needs_escape));
        // What needs nothing is passed as it was, backslashes too.
        assert_eq!(printable("CPU_SrcID#0_MC#0\\x"), "CPU_SrcID#0_MC#0\\x");
    }

    #[test]
    fn counts_are_digits_within_64_bits_and_say_what_else_they_held() {
        assert_eq!(parse_count("50\n"), Ok(50));
        assert_eq!(parse_count("18446744073709551615"), Ok(u64::MAX));
        for (text, why) in [
            ("garbage", "holds 'garbage', not a count"),
            ("-1", "holds '-1', not a count"),
            ("+5", "holds '+5', not a count"),
            ("", "is empty"),
            (
                "18446744073709551616",
                "holds '18446744073709551616', beyond a 64-bit counter",
            ),
        ] {
            assert_eq!(parse_count(text), Err(why.to_string()), "{text:?}");
        }
        let long = "9".repeat(100);
        assert!(parse_count(&long).unwrap_err().contains("…'"));
    }

    #[test]
    fn durations_are_plausible_seconds() {
        assert_eq!(parse_seconds("86400.52 1234.00\n"), Ok(86_400));
        for text in ["inf", "NaN", "-3", "1e300", "abc", ""] {
            assert!(parse_seconds(text).is_err(), "{text}");
        }
        assert!(
            parse_seconds("1e10")
                .unwrap_err()
                .contains("more than 30 years")
        );
    }

    proptest! {
        #[test]
        fn any_text_is_one_printable_line(text in any::<String>()) {
            let shown = printable(&text);
            prop_assert!(!shown.chars().any(needs_escape));
            prop_assert!(!excerpt(&text).chars().any(needs_escape));
        }

        #[test]
        fn any_bytes_give_a_count_or_a_reason(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let text = String::from_utf8_lossy(&bytes);
            match parse_count(&text) {
                Ok(n) => prop_assert_eq!(text.trim().parse::<u64>().ok(), Some(n)),
                Err(why) => prop_assert!(!why.chars().any(needs_escape)),
            }
            if let Ok(s) = parse_seconds(&text) {
                prop_assert!(s <= MOST_SECONDS_UP);
            }
        }
    }
}
