//! Rendering only: every output people or programs read is a pure function
//! of the results model (or the topology), one file per kind: STREAM's text
//! layout, JSON and CSV for `run`; tables, Markdown, HTML and SVG plots for
//! results files; the `place`, `tune` and `topo` views.

pub mod csv;
pub mod exec;
pub mod export;
pub mod far;
pub mod health;
pub mod history;
pub mod html;
pub mod json;
pub mod jsonl;
pub mod latency;
pub mod markdown;
pub mod nodes;
pub mod place;
pub mod plot;
pub mod png;
pub mod prom;
pub mod ranks;
pub mod study;
pub mod text;
pub mod tiers;
pub mod topo;
pub mod tune;

use crate::placement::spellings::{self, Spellings};
use std::fmt::Write;

/// The reproduce block every command prints the same way: a title, then
/// one indented line per tool.
pub fn reproduce_block(title: &str, s: &Spellings) -> String {
    let mut o = format!("{title}\n");
    for line in spellings::lines(s) {
        let _ = writeln!(o, "  {line}");
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
