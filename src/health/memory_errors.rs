//! A node's memory error counters (EDAC) against its own baseline's: a DIMM
//! whose corrected errors grew since the baseline faster than NHC's limit
//! and faster than before it. The since-boot rule ([`since_boot`])
//! averages over the whole uptime, so a burst on a node up for months
//! hides in it; the baseline's counts give the window that shows it.
//!
//! [`since_boot`]: super::since_boot

use super::since_boot::CORRECTED_PER_DAY;
use crate::topology::edac::{ControllerErrors, MemoryErrors};

/// Where this node's counts can be held against the baseline's.
pub struct Counts<'a> {
    /// The baseline's counts, where it recorded them.
    pub then: Option<&'a MemoryErrors>,
    pub now: &'a MemoryErrors,
    /// Whether the baseline was made on this node (a fleet's or another
    /// node's counts are not this node's history).
    pub same_node: bool,
}

/// Each DIMM whose corrected errors grew too fast since the baseline, with
/// the action, leaving out the DIMMs `named` already (by the since-boot
/// rule); and a note where the counts could not be compared.
pub fn since_baseline(counts: &Counts, named: &[String]) -> (Vec<String>, Option<String>) {
    let (Some(then), MemoryErrors::Counted { boot_id, .. }) = (counts.then, counts.now) else {
        return (Vec::new(), None);
    };
    let not_compared = |why: &str| {
        Some(format!(
            "EDAC counts not held against the baseline's: {why}; corrected errors judged since boot only"
        ))
    };
    if !counts.same_node {
        return (Vec::new(), not_compared("the baseline is another node's"));
    }
    let then_boot = match then {
        MemoryErrors::Counted { boot_id, .. } => boot_id,
        MemoryErrors::NotReadable { .. } => return (Vec::new(), None),
    };
    match (then_boot, boot_id) {
        (Some(a), Some(b)) if a != b => {
            return (
                Vec::new(),
                not_compared("the node rebooted since the baseline"),
            );
        }
        (Some(_), Some(_)) => {}
        _ => {
            return (
                Vec::new(),
                not_compared(
                    "the boot of the baseline's counts or of these is unknown (no boot_id)",
                ),
            );
        }
    }
    let pairs: Vec<(&ControllerErrors, &ControllerErrors)> = (counts.now.controllers().iter())
        .filter_map(|now| {
            let before = (then.controllers().iter()).find(|c| c.controller == now.controller)?;
            Some((before, now))
        })
        .collect();
    if pairs.iter().any(|(before, now)| was_reset(before, now)) {
        return (
            Vec::new(),
            not_compared("the counters were reset since the baseline"),
        );
    }
    let out = (pairs.iter())
        .flat_map(|(before, now)| grown(before, now, named))
        .collect();
    (out, None)
}

/// The DIMMs whose corrected count the baseline could not read while this
/// check can: their growth since the baseline is not judged (the
/// since-boot rule still is), and said.
pub fn unknown_in_baseline(counts: &Counts) -> Vec<super::verdict::UnknownInput> {
    use super::verdict::{InputSource, UnknownInput};
    let Some(then) = counts.then else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, before) in then.controllers().iter().enumerate() {
        let Some(now) =
            (counts.now.controllers().iter()).find(|c| c.controller == before.controller)
        else {
            continue;
        };
        for (j, old) in before.dimms.iter().enumerate() {
            let readable_now =
                (now.dimms.iter()).any(|d| d.entry == old.entry && d.corrected.is_some());
            if old.corrected.is_none() && readable_now {
                let field = format!("memory_errors.controllers[{i}].dimms[{j}].corrected");
                let why = format!(
                    "(mc{} {}) was unknown when the baseline was made",
                    before.controller, old.entry
                );
                let instead = "its corrected errors judged since boot only".to_string();
                let u = crate::untrusted::Unknown::new(field, why);
                out.push(UnknownInput::of(InputSource::Baseline, &u, Some(instead)));
            }
        }
    }
    out
}

/// Whether a controller's counters were reset between two readings of one
/// boot (`reset_counters`): its time since reset went back, or a count fell.
fn was_reset(before: &ControllerErrors, now: &ControllerErrors) -> bool {
    let fell = |a: Option<u64>, b: Option<u64>| matches!((a, b), (Some(a), Some(b)) if b < a);
    let dimms_fell = (now.dimms.iter()).any(|d| {
        (before.dimms.iter())
            .find(|o| o.entry == d.entry)
            .is_some_and(|o| fell(o.corrected, d.corrected) || fell(o.uncorrected, d.uncorrected))
    });
    fell(before.seconds_since_reset, now.seconds_since_reset)
        || fell(before.corrected, now.corrected)
        || fell(before.uncorrected, now.uncorrected)
        || dimms_fell
}

/// One controller's DIMMs whose corrected errors since the baseline are
/// 10 or more, at more than [`CORRECTED_PER_DAY`] a day and more than
/// their rate before the baseline.
fn grown(before: &ControllerErrors, now: &ControllerErrors, named: &[String]) -> Vec<String> {
    let (Some(then_s), Some(now_s)) = (before.seconds_since_reset, now.seconds_since_reset) else {
        return Vec::new();
    };
    let Some(days) = (now_s > then_s).then(|| (now_s - then_s) as f64 / 86_400.0) else {
        return Vec::new();
    };
    let days_before = then_s as f64 / 86_400.0;
    let mut out = Vec::new();
    for (d, name) in now.dimms.iter().zip(now.dimm_names()) {
        let Some(old) = before.dimms.iter().find(|o| o.entry == d.entry) else {
            continue;
        };
        // A count unknown then or now is said by the since-boot rules.
        let (Some(was), Some(is)) = (old.corrected, d.corrected) else {
            continue;
        };
        let grew = is.saturating_sub(was);
        let (rate, rate_before) = (
            grew as f64 / days,
            if days_before > 0.0 {
                was as f64 / days_before
            } else {
                0.0
            },
        );
        let limit = rate_before.max(CORRECTED_PER_DAY as f64);
        if grew > CORRECTED_PER_DAY
            && rate > limit
            && !named.iter().any(|f| f.starts_with(&format!("{name}:")))
        {
            out.push(format!(
                "{name}: {grew} corrected memory errors since the baseline {days:.1} days ago, {rate:.0} a day where it had {rate_before:.1} a day before (EDAC; more than {CORRECTED_PER_DAY} a day fails): replace the DIMM at the next drain"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::edac::DimmErrors;

    const DAY: u64 = 86_400;

    /// One controller of two DIMMs, counted `since` seconds after the
    /// counters' reset, in boot `boot`.
    fn counted(ce: [u64; 2], since: u64, boot: &str) -> MemoryErrors {
        MemoryErrors::Counted {
            controllers: vec![ControllerErrors {
                controller: 0,
                name: None,
                corrected: Some(ce.iter().sum()),
                uncorrected: Some(0),
                seconds_since_reset: Some(since),
                unknown: Vec::new(),
                period_unknown: None,
                odd_entries: Vec::new(),
                dimms: (0..2)
                    .map(|i| DimmErrors {
                        entry: format!("dimm{i}"),
                        label: Some(format!("P0-DIMMA{}", i + 1)),
                        size_mib: None,
                        corrected: Some(ce[i]),
                        uncorrected: Some(0),
                        unknown: Vec::new(),
                    })
                    .collect(),
            }],
            boot_id: Some(boot.into()),
            unknown: Vec::new(),
        }
    }

    fn judge(
        then: &MemoryErrors,
        now: &MemoryErrors,
        same_node: bool,
    ) -> (Vec<String>, Option<String>) {
        let counts = Counts {
            then: Some(then),
            now,
            same_node,
        };
        since_baseline(&counts, &[])
    }

    #[test]
    fn a_burst_since_the_baseline_fails_where_the_since_boot_average_hides_it() {
        // Up 100 days; the baseline at day 99 with 5 errors; 40 more since.
        let then = counted([5, 0], 99 * DAY, "b");
        let now = counted([45, 0], 100 * DAY, "b");
        // Since boot: 45 in 100 days, under NHC's 9 a day.
        assert!(crate::health::since_boot::findings(&now).is_empty());
        let (found, note) = judge(&then, &now, true);
        assert_eq!(note, None);
        assert_eq!(
            found,
            vec![
                "mc0 P0-DIMMA1: 40 corrected memory errors since the baseline 1.0 days ago, 40 a day where it had 0.1 a day before (EDAC; more than 9 a day fails): replace the DIMM at the next drain"
            ]
        );
        // Nine more in a day: under the count that makes a rate.
        assert!(
            judge(&then, &counted([14, 0], 100 * DAY, "b"), true)
                .0
                .is_empty()
        );
        // Ten more in two days: five a day, under the limit.
        let slow = counted([15, 0], 101 * DAY, "b");
        assert!(judge(&then, &slow, true).0.is_empty());
    }

    #[test]
    fn a_dimm_at_its_baseline_rate_or_named_already_is_not_named_again() {
        // 20 a day before the baseline and 20 a day since: no faster.
        let then = counted([0, 200], 10 * DAY, "b");
        let now = counted([0, 400], 20 * DAY, "b");
        assert!(judge(&then, &now, true).0.is_empty());
        // 30 a day since: faster than before, and past nine.
        let now = counted([0, 500], 20 * DAY, "b");
        assert_eq!(judge(&then, &now, true).0.len(), 1);
        let named = ["mc0 P0-DIMMA2: 500 corrected memory errors since boot".to_string()];
        let counts = Counts {
            then: Some(&then),
            now: &now,
            same_node: true,
        };
        assert!(since_baseline(&counts, &named).0.is_empty());
    }

    #[test]
    fn counts_of_another_boot_or_node_are_not_compared_and_say_so() {
        let then = counted([0, 0], DAY, "a");
        let now = counted([100, 0], 2 * DAY, "b");
        let (found, note) = judge(&then, &now, true);
        assert!(found.is_empty());
        assert!(
            note.unwrap()
                .contains("the node rebooted since the baseline")
        );
        let (found, note) = judge(&then, &counted([100, 0], 2 * DAY, "a"), false);
        assert!(found.is_empty());
        assert!(note.unwrap().contains("the baseline is another node's"));
        // Counters written back to 0 (reset_counters) within one boot.
        let (found, note) = judge(
            &counted([50, 0], DAY, "a"),
            &counted([0, 0], 2 * DAY, "a"),
            true,
        );
        assert!(found.is_empty());
        assert!(note.unwrap().contains("the counters were reset"));
        // A baseline without counts: nothing to say.
        let counts = Counts {
            then: None,
            now: &now,
            same_node: true,
        };
        assert_eq!(since_baseline(&counts, &[]), (Vec::new(), None));
    }

    #[test]
    fn a_count_the_baseline_could_not_read_is_said_not_compared() {
        let mut then = counted([0, 0], DAY, "b");
        if let MemoryErrors::Counted { controllers, .. } = &mut then {
            controllers[0].dimms[1].corrected = None;
        }
        let now = counted([0, 400], 2 * DAY, "b");
        let counts = Counts {
            then: Some(&then),
            now: &now,
            same_node: true,
        };
        assert!(since_baseline(&counts, &[]).0.is_empty());
        let unknown = unknown_in_baseline(&counts);
        assert_eq!(unknown.len(), 1);
        assert_eq!(
            unknown[0].line(),
            "memory_errors.controllers[0].dimms[1].corrected (mc0 dimm1) was unknown when the baseline was made (its corrected errors judged since boot only)"
        );
        // Readable on both sides: nothing to say.
        let counts = Counts {
            then: Some(&now),
            now: &now,
            same_node: true,
        };
        assert!(unknown_in_baseline(&counts).is_empty());
    }
}
