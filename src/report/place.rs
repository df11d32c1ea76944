//! The `membw place` view: one row per thread with where its CPU sits, and
//! the reproduce lines; or the same as JSON.

use crate::placement::spellings::Spellings;
use crate::results::SCHEMA_VERSION;
use crate::topology::Topology;
use crate::topology::cpulist::format_ranges;
use std::fmt::Write;

/// A resolved placement and how it was asked for.
pub struct PlaceView<'a> {
    pub topo: &'a Topology,
    /// The request in the user's words.
    pub request: String,
    pub memory_policy: String,
    pub cpus: &'a [usize],
    pub spellings: &'a Spellings,
}

pub fn text(v: &PlaceView) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "Placement  {}", v.request);
    let _ = writeln!(
        o,
        "Threads    {} on CPUs {}",
        v.cpus.len(),
        format_ranges(v.cpus)
    );
    let _ = writeln!(o, "\n  thread   cpu  core  socket  node");
    for (t, &c) in v.cpus.iter().enumerate() {
        let cpu = v.topo.cpu(c);
        let _ = writeln!(
            o,
            "  {t:>6} {c:>5} {:>5} {:>7} {:>5}",
            cpu.map_or(0, |x| x.core),
            cpu.map_or(0, |x| x.package),
            cpu.map_or(0, |x| x.node)
        );
    }
    o.push('\n');
    o.push_str(&super::reproduce_block("Reproduce with", v.spellings));
    o
}

pub fn json(v: &PlaceView) -> crate::error::Result<String> {
    let threads: Vec<serde_json::Value> = v
        .cpus
        .iter()
        .enumerate()
        .map(|(t, &c)| {
            let cpu = v.topo.cpu(c);
            serde_json::json!({
                "thread": t, "cpu": c,
                "core": cpu.map(|x| x.core), "socket": cpu.map(|x| x.package), "node": cpu.map(|x| x.node),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "schema_version": SCHEMA_VERSION,
        "request": v.request,
        "memory_policy": v.memory_policy,
        "threads": threads,
        "spellings": v.spellings,
    });
    super::json::pretty(&doc)
}
