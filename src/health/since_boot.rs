//! The node's memory error counts (EDAC) since boot, judged as NHC's
//! `check_hw_mcelog` and the sites' checks judge them: any uncorrected
//! error, or corrected errors past 9 a day on one DIMM. A counter that could
//! not be read is never taken for none: where its controller's total is
//! readable, the errors no readable DIMM holds are judged in its place, and
//! either way the unknown is said.

use super::verdict::{InputSource, UnknownInput};
use crate::topology::edac::{ControllerErrors, DimmErrors, MemoryErrors};

/// NHC's limit on corrected errors of one DIMM a day.
pub const CORRECTED_PER_DAY: u64 = 9;

/// What the since-boot rules found: each fault with the action an admin
/// takes, and each value they could not read.
#[derive(Debug, Default, PartialEq)]
pub struct Judged {
    pub findings: Vec<String>,
    pub unknown: Vec<UnknownInput>,
}

/// The DIMMs (and controllers) whose errors fail a node.
pub fn judge(errors: &MemoryErrors) -> Judged {
    let mut out = Judged::default();
    if let MemoryErrors::Counted { unknown, .. } = errors {
        out.unknown.extend(
            unknown
                .iter()
                .map(|u| UnknownInput::of(InputSource::Edac, u, None)),
        );
    }
    for c in errors.controllers() {
        controller(c, &mut out);
    }
    out
}

/// The faults only (the tests' shorthand).
#[cfg(test)]
pub fn findings(errors: &MemoryErrors) -> Vec<String> {
    judge(errors).findings
}

fn controller(c: &ControllerErrors, out: &mut Judged) {
    let days = c.seconds_since_reset.map(|s| s as f64 / 86_400.0);
    let names = c.dimm_names();
    let mut named = 0;
    for (d, name) in c.dimms.iter().zip(&names) {
        if let Some(ue) = d.uncorrected.filter(|&n| n > 0) {
            out.findings.push(format!(
                "{name}: {ue} uncorrected memory errors since boot (EDAC): drain the node and replace the DIMM"
            ));
            named += 1;
        } else if let Some((ce, per_day)) =
            (d.corrected).and_then(|ce| Some((ce, corrected_per_day(ce, days)?)))
        {
            out.findings.push(format!(
                "{name}: {ce} corrected memory errors since boot, {per_day:.0} a day (EDAC; more than {CORRECTED_PER_DAY} a day fails): replace the DIMM at the next drain"
            ));
            named += 1;
        }
    }
    let unread: Vec<&str> = (c.dimms.iter().zip(&names))
        .filter(|(d, _)| d.corrected.is_none() || d.uncorrected.is_none())
        .map(|(_, n)| n.as_str())
        .collect();
    if unread.is_empty() {
        // A driver that counts by controller only, or errors no DIMM took.
        if named == 0 && c.uncorrected.is_some_and(|n| n > 0) {
            out.findings.push(format!(
                "memory controller mc{}: {} uncorrected memory errors since boot (EDAC): drain the node; the DIMM is in the kernel log (rasdaemon, mcelog)",
                c.controller,
                c.uncorrected.unwrap_or_default()
            ));
        }
    } else {
        in_place_of_dimms(c, &unread, days, out);
    }
    say_unknowns(c, &unread, out);
}

/// Where some DIMMs' counters could not be read: the controller's errors
/// that no readable DIMM holds, judged by the same rules as a DIMM's.
fn in_place_of_dimms(c: &ControllerErrors, unread: &[&str], days: Option<f64>, out: &mut Judged) {
    let readable = |count: fn(&DimmErrors) -> Option<u64>| {
        (c.dimms.iter()).fold(0u64, |a, d| a.saturating_add(count(d).unwrap_or(0)))
    };
    let mc = c.controller;
    let which = format!(
        "not on a DIMM whose counter could be read ({})",
        unread.join(", ")
    );
    if let Some(rest) = (c.uncorrected).map(|t| t.saturating_sub(readable(|d| d.uncorrected)))
        && rest > 0
    {
        out.findings.push(format!(
            "memory controller mc{mc}: {rest} uncorrected memory errors since boot {which} (EDAC, the controller's count): drain the node and replace the DIMM"
        ));
    }
    if let Some(rest) = (c.corrected).map(|t| t.saturating_sub(readable(|d| d.corrected)))
        && let Some(per_day) = corrected_per_day(rest, days)
    {
        out.findings.push(format!(
            "memory controller mc{mc}: {rest} corrected memory errors since boot {which}, {per_day:.0} a day (EDAC, the controller's count; more than {CORRECTED_PER_DAY} a day fails): replace the DIMM at the next drain"
        ));
    }
}

/// Each of the controller's unknowns, with what was judged in its place.
fn say_unknowns(c: &ControllerErrors, unread: &[&str], out: &mut Judged) {
    let mc = c.controller;
    let totals = c.corrected.is_some() && c.uncorrected.is_some();
    let for_dimm = totals.then(|| format!("judged by mc{mc}'s own count (ce_count, ue_count)"));
    for d in &c.dimms {
        out.unknown.extend(
            (d.unknown.iter()).map(|u| UnknownInput::of(InputSource::Edac, u, for_dimm.clone())),
        );
    }
    // The controller's own counts: the rule on errors no DIMM took needs
    // them, the DIMMs' rules do not.
    let by_dimms = (!c.dimms.is_empty() && unread.is_empty())
        .then(|| format!("each of mc{mc}'s DIMMs judged by its own count"));
    for u in &c.unknown {
        (out.unknown).push(UnknownInput::of(InputSource::Edac, u, by_dimms.clone()));
    }
    // A missing period makes a count a rate of a day (10 or more fails).
    if let Some(u) = &c.period_unknown {
        let instead = match c.seconds_since_reset {
            Some(_) => "the uptime taken as the counters' period",
            None => "with no period, 10 corrected errors or more fail",
        };
        (out.unknown).push(UnknownInput::of(InputSource::Edac, u, Some(instead.into())));
    }
    // An entry no kernel names is counted by no rule.
    let odd = c.odd_entries.iter();
    (out.unknown).extend(odd.map(|u| UnknownInput::of(InputSource::Edac, u, None)));
}

/// The corrected errors' daily rate where it fails: 10 or more of them, at
/// more than [`CORRECTED_PER_DAY`] a day (a count with no known period
/// fails at 10).
pub fn corrected_per_day(corrected: u64, days: Option<f64>) -> Option<f64> {
    if corrected <= CORRECTED_PER_DAY {
        return None;
    }
    let per_day = days
        .filter(|&d| d > 0.0)
        .map_or(corrected as f64, |d| corrected as f64 / d);
    (per_day > CORRECTED_PER_DAY as f64).then_some(per_day)
}

#[cfg(test)]
#[path = "since_boot_tests.rs"]
mod tests;
