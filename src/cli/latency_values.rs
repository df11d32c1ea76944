//! Value parsers of `membw latency`'s own flags: the load threads' CPUs,
//! mixes and delays, and the chase orders. Each error names the bad value.

use crate::latency::load::Mix;
use crate::latency::record::ChaseOrder;
use crate::placement::Written;
use std::time::Duration;

/// The most delays a loaded study takes.
const MAX_DELAYS: usize = 64;
/// A delay longer than this is no load at all.
const MAX_DELAY: Duration = Duration::from_millis(10);

/// `--load-cpus`: a CPU list, parsed (the topology checks it later).
pub(crate) fn parse_load_cpus(text: &str) -> std::result::Result<Written<Vec<usize>>, String> {
    Written::parse(text, |t| {
        crate::topology::cpulist::parse_list(t).map_err(|e| e.to_string())
    })
}

/// `--mix`, parsed: each mix once, in the order given.
#[derive(Debug, Clone)]
pub(crate) struct Mixes(pub(crate) Vec<Mix>);

pub(crate) fn parse_mixes(text: &str) -> std::result::Result<Mixes, String> {
    each_once(text, Mix::parse, |name| {
        format!("unknown mix '{name}' (choose from read, 2:1, 3:1, copy, nt-write)")
    })
    .map(Mixes)
}

/// `--chase`, parsed: each order once, in the order given.
#[derive(Debug, Clone)]
pub(crate) struct ChaseOrders(pub(crate) Vec<ChaseOrder>);

pub(crate) fn parse_orders(text: &str) -> std::result::Result<ChaseOrders, String> {
    each_once(text, ChaseOrder::parse, |name| {
        format!("'{name}' is not a chase order (random, page-local)")
    })
    .map(ChaseOrders)
}

/// The names of a comma-separated list, each parsed and kept once, in the
/// order given; the first that does not parse is the error.
fn each_once<T: PartialEq>(
    text: &str,
    parse: fn(&str) -> Option<T>,
    unknown: impl Fn(&str) -> String,
) -> std::result::Result<Vec<T>, String> {
    let mut items = Vec::new();
    for name in text.split(',') {
        let item = parse(name).ok_or_else(|| unknown(name.trim()))?;
        if !items.contains(&item) {
            items.push(item);
        }
    }
    Ok(items)
}

/// `--delays`, parsed: nanoseconds after each cache line, counted before
/// they are parsed.
#[derive(Debug, Clone)]
pub(crate) struct Delays(pub(crate) Vec<f64>);

pub(crate) fn parse_delays(text: &str) -> std::result::Result<Delays, String> {
    if text.split(',').count() > MAX_DELAYS {
        return Err(format!("at most {MAX_DELAYS} delays"));
    }
    let mut v = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let d = if part == "0" {
            Duration::ZERO
        } else {
            humantime::parse_duration(part)
                .map_err(|e| format!("'{part}' is not a duration: {e}"))?
        };
        if d > MAX_DELAY {
            return Err(format!(
                "'{part}' is over {} (no load at all)",
                humantime::format_duration(MAX_DELAY)
            ));
        }
        v.push(d.as_nanos() as f64);
    }
    Ok(Delays(v))
}
