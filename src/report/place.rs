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
    let llc = LastLevel::of(v.topo);
    let _ = writeln!(o, "\n  thread   cpu  core  socket  node  {:>3}", llc.name);
    for (t, &c) in v.cpus.iter().enumerate() {
        let cpu = v.topo.cpu(c);
        let _ = writeln!(
            o,
            "  {t:>6} {c:>5} {:>5} {:>7} {:>5}  {:>3}",
            cpu.map_or(0, |x| x.core),
            cpu.map_or(0, |x| x.package),
            cpu.map_or(0, |x| x.node),
            llc.domain(c).map_or("-".to_string(), |d| d.to_string())
        );
    }
    o.push('\n');
    o.push_str(&super::reproduce_block("Reproduce with", v.spellings));
    o
}

pub fn json(v: &PlaceView) -> crate::error::Result<String> {
    let llc = LastLevel::of(v.topo);
    let threads: Vec<serde_json::Value> = v
        .cpus
        .iter()
        .enumerate()
        .map(|(t, &c)| {
            let cpu = v.topo.cpu(c);
            serde_json::json!({
                "thread": t, "cpu": c,
                "core": cpu.map(|x| x.core), "socket": cpu.map(|x| x.package), "node": cpu.map(|x| x.node),
                "llc": llc.domain(c),
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
    super::pretty(&doc)
}

/// The last-level cache domains (an EPYC's CCXs, a Xeon's socket-wide L3),
/// numbered in `topo`'s order: threads with different numbers share no
/// last-level cache, which "one core per CCX" asks.
struct LastLevel {
    /// `L3`, or `LLC` where no cache is known.
    name: String,
    domains: Vec<crate::topology::cpulist::IdSet>,
}

impl LastLevel {
    fn of(topo: &Topology) -> LastLevel {
        LastLevel {
            name: topo
                .last_level()
                .map_or("LLC".to_string(), |l| format!("L{l}")),
            domains: topo.llc_domains(),
        }
    }

    fn domain(&self, cpu: usize) -> Option<usize> {
        self.domains.iter().position(|d| d.contains(cpu))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_thread_names_its_last_level_cache_domain() {
        // Two Haswell sockets, one L3 each; CPU 24 is CPU 0's SMT sibling.
        let (_dir, topo) = crate::topology::fixture::machine("xeon-e5-2680v3-2s");
        let cpus = [0, 1, 12, 24];
        let spellings = crate::placement::spellings::spell(&cpus, "");
        let view = super::PlaceView {
            topo: &topo,
            request: "--cpus 0,1,12,24".into(),
            memory_policy: "local".into(),
            cpus: &cpus,
            spellings: &spellings,
        };
        let text = super::text(&view);
        let rows: Vec<&str> = text.lines().skip_while(|l| !l.contains("thread")).collect();
        assert!(rows[0].ends_with("node   L3"), "{text}");
        let llc: Vec<&str> = rows[1..5]
            .iter()
            .map(|r| r.split_whitespace().last().unwrap())
            .collect();
        assert_eq!(llc, ["0", "0", "1", "0"], "{text}");
        let json: serde_json::Value = serde_json::from_str(&super::json(&view).unwrap()).unwrap();
        assert_eq!(json["threads"][2]["llc"], 1);
    }
}
