//! Rendering only: every output people or programs read is a pure function
//! of the results model (or the topology), one file per kind: STREAM's text
//! layout, JSON and CSV for `run`; tables, Markdown, HTML and SVG plots for
//! results files; the `place`, `tune` and `topo` views.

pub mod c2c;
pub mod csv;
pub mod device_set;
pub mod export;
pub mod far;
pub mod health;
pub mod history;
pub mod html;
pub mod json;
pub mod jsonl;
pub mod kernels;
pub mod latency_tables;
pub mod levels;
pub mod markdown;
pub mod measured;
pub mod nodes;
pub mod peers;
pub mod place;
pub mod plan;
pub mod plot;
#[cfg(feature = "png")]
pub mod png;
pub mod program_run;
pub mod prom;
pub mod ranks;
pub mod run_header;
pub mod shapes;
#[cfg(test)]
mod slow_nodes_props;
pub mod study;
pub mod text;
pub mod tiers;
pub mod topo;
pub mod tune_verdict;
pub mod view;

use crate::placement::spellings::{self, Spellings};
use crate::results::estimate::{Change, Comparison};
use std::fmt::Write;

/// The reproduce block every command prints the same way: a title, then
/// the lines for threads and those for ranks, each group under its own
/// title, one indented line per tool.
pub fn reproduce_block(title: &str, s: &Spellings) -> String {
    let mut o = format!("{title}\n");
    for (group, lines) in spellings::groups(s) {
        let _ = writeln!(o, "  {group}");
        for line in lines {
            let _ = writeln!(o, "    {line}");
        }
    }
    for note in &s.notes {
        let _ = writeln!(o, "  note: {note}");
    }
    o
}

/// One plot of a report: its title, the file name it is written to, and
/// the SVG itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    pub title: String,
    pub file: String,
    pub svg: String,
}

/// A ratio as a signed percentage with its interval, as every comparison
/// prints it: `+9.3 % (95 % CI +7.1 to +11.5 %)`, or with no interval
/// `+9.3 % (one run each: no interval)`.
pub fn change_text(c: &Comparison) -> String {
    let pct = |r: f64| format!("{:+.1}", 100.0 * (r - 1.0));
    match c.interval {
        Some(i) => format!(
            "{} % ({:.0} % CI {} to {} %)",
            pct(c.ratio),
            100.0 * i.level,
            pct(i.low),
            pct(i.high)
        ),
        None => format!("{} % (one run each: no interval)", pct(c.ratio)),
    }
}

/// A mean with its interval and n: `18.90 GB/s ± 0.48 (95 % CI, n = 9)`;
/// a single run is its value and `n = 1`.
pub fn estimate_text(s: &crate::results::Stats, unit: &str) -> String {
    match s.interval() {
        Some(i) => format!(
            "{:.2} {unit} ± {:.2} ({:.0} % CI, n = {})",
            s.mean,
            i.half_width(),
            100.0 * i.level,
            s.n
        ),
        None => format!("{:.2} {unit} (n = {})", s.mean, s.n),
    }
}

/// A confidence level as people write it: 95, 97.5, 99.9.
pub fn level_text(level: f64) -> String {
    let p = format!("{:.2}", 100.0 * level);
    p.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// What a row's comparison decided, in a word or two.
pub fn change_word(c: &Comparison) -> String {
    match c.change {
        Change::Higher => format!("higher ({:+.1} %)", c.percent()),
        Change::Lower => format!("lower ({:+.1} %)", c.percent()),
        Change::NoChange => "no change".into(),
        Change::NotResolved => "not resolved".into(),
    }
}

/// Any document as pretty JSON.
pub fn pretty<T: serde::Serialize>(value: &T) -> crate::error::Result<String> {
    let mut s = serde_json::to_string_pretty(value)
        .map_err(|e| crate::error::Error::Runtime(format!("writing JSON: {e}")))?;
    s.push('\n');
    Ok(s)
}
