use super::*;
use crate::topology::edac::{ControllerErrors, DimmErrors, MemoryErrors};
use crate::untrusted::Unknown;

const DAY: u64 = 86_400;

/// One DIMM's counts, `None` where unreadable.
fn dimm(i: usize, ce: Option<u64>, ue: Option<u64>) -> DimmErrors {
    let unknown = [("ce", ce), ("ue", ue)]
        .iter()
        .filter(|(_, n)| n.is_none())
        .map(|(what, _)| {
            Unknown::new(
                format!("/mc0/dimm{i}/dimm_{what}_count"),
                "holds 'garbage', not a count",
            )
        })
        .collect();
    DimmErrors {
        entry: format!("dimm{i}"),
        label: Some(format!("P0-DIMMA{}", i + 1)),
        size_mib: None,
        corrected: ce,
        uncorrected: ue,
        unknown,
    }
}

/// Controller mc0 with its totals and DIMMs, counted `since` seconds after
/// the counters' reset.
fn node(totals: (Option<u64>, Option<u64>), dimms: Vec<DimmErrors>, since: u64) -> MemoryErrors {
    let unknown = [("ce", totals.0), ("ue", totals.1)]
        .iter()
        .filter(|(_, n)| n.is_none())
        .map(|(what, _)| Unknown::new(format!("/mc0/{what}_count"), "is missing"))
        .collect();
    MemoryErrors::Counted {
        controllers: vec![ControllerErrors {
            controller: 0,
            name: None,
            corrected: totals.0,
            uncorrected: totals.1,
            seconds_since_reset: Some(since),
            dimms,
            unknown,
            period_unknown: None,
            odd_entries: Vec::new(),
        }],
        boot_id: None,
        unknown: Vec::new(),
    }
}

/// Two readable DIMMs of (corrected, uncorrected) and their controller.
fn two(a: (u64, u64), b: (u64, u64), since: u64) -> MemoryErrors {
    let dimms = vec![dimm(0, Some(a.0), Some(a.1)), dimm(1, Some(b.0), Some(b.1))];
    node(
        (Some(a.0.saturating_add(b.0)), Some(a.1.saturating_add(b.1))),
        dimms,
        since,
    )
}

#[test]
fn an_uncorrected_error_fails_and_names_the_dimm_and_the_action() {
    assert_eq!(judge(&two((0, 0), (0, 0), 600)), Judged::default());
    let found = findings(&two((0, 0), (0, 1), 600));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("mc0 P0-DIMMA2: 1 uncorrected memory errors since boot"));
    assert!(found[0].ends_with("drain the node and replace the DIMM"));
}

#[test]
fn corrected_errors_fail_past_nine_a_day_from_ten_on() {
    // Nine in an hour: under the count that makes a rate.
    assert!(findings(&two((9, 0), (0, 0), 3600)).is_empty());
    // Ten in ten days: one a day.
    assert!(findings(&two((10, 0), (0, 0), 10 * DAY)).is_empty());
    // Ten in one day, and 100 in ten days: past nine a day.
    for (ce, since) in [(10, DAY), (100, 10 * DAY)] {
        let found = findings(&two((ce, 0), (0, 0), since));
        assert_eq!(found.len(), 1, "{ce} in {since} s: {found:?}");
        assert!(
            found[0].contains("replace the DIMM at the next drain"),
            "{}",
            found[0]
        );
    }
}

#[test]
fn a_controller_that_counts_no_dimm_is_named_itself() {
    let mut errors = two((0, 0), (0, 0), 600);
    if let MemoryErrors::Counted { controllers, .. } = &mut errors {
        controllers[0].uncorrected = Some(4);
    }
    let found = findings(&errors);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("memory controller mc0: 4 uncorrected"),
        "{}",
        found[0]
    );
}

#[test]
fn an_unreadable_dimm_is_judged_by_its_controllers_count_and_said() {
    // The case: mc0 counts 50 a day; DIMM 1's counter holds garbage.
    let dimms = vec![dimm(0, Some(0), Some(0)), dimm(1, None, Some(0))];
    let judged = judge(&node((Some(50), Some(0)), dimms, DAY));
    assert_eq!(
        judged.findings,
        [
            "memory controller mc0: 50 corrected memory errors since boot not on a DIMM whose counter could be read (mc0 P0-DIMMA2), 50 a day (EDAC, the controller's count; more than 9 a day fails): replace the DIMM at the next drain"
        ]
    );
    assert_eq!(judged.unknown.len(), 1);
    assert_eq!(
        judged.unknown[0].source,
        super::super::verdict::InputSource::Edac
    );
    assert_eq!(
        judged.unknown[0].line(),
        "/mc0/dimm1/dimm_ce_count holds 'garbage', not a count (judged by mc0's own count (ce_count, ue_count))"
    );
    // Errors a readable DIMM holds are its own, not the unreadable one's.
    let dimms = vec![dimm(0, Some(5), Some(0)), dimm(1, None, Some(0))];
    assert!(
        judge(&node((Some(5), Some(0)), dimms, DAY))
            .findings
            .is_empty()
    );
    // An uncorrected error no readable DIMM holds.
    let dimms = vec![dimm(0, Some(0), Some(0)), dimm(1, Some(0), None)];
    let found = findings(&node((Some(0), Some(2)), dimms, DAY));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("memory controller mc0: 2 uncorrected memory errors since boot not on a DIMM whose counter could be read (mc0 P0-DIMMA2)"), "{}", found[0]);
}

#[test]
fn with_neither_count_readable_the_rule_is_not_judged_and_says_so() {
    let dimms = vec![dimm(0, Some(0), Some(0)), dimm(1, None, None)];
    let judged = judge(&node((None, None), dimms, DAY));
    assert!(judged.findings.is_empty());
    let lines: Vec<String> = judged.unknown.iter().map(|u| u.line()).collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(
        lines.iter().all(|l| l.ends_with("(its rule not judged)")),
        "{lines:?}"
    );
}

#[test]
fn two_dimms_of_one_label_are_told_apart() {
    let mut a = dimm(0, Some(0), Some(1));
    let mut b = dimm(1, Some(0), Some(1));
    a.label = Some("P0-DIMMA1".into());
    b.label = Some("P0-DIMMA1".into());
    let found = findings(&node((Some(0), Some(2)), vec![a, b], DAY));
    assert_eq!(found.len(), 2);
    assert!(
        found[0].starts_with("mc0 P0-DIMMA1 (dimm0): 1 uncorrected"),
        "{}",
        found[0]
    );
    assert!(
        found[1].starts_with("mc0 P0-DIMMA1 (dimm1): 1 uncorrected"),
        "{}",
        found[1]
    );
}

#[test]
fn counts_at_the_top_of_their_range_saturate_instead_of_wrapping() {
    // 2^64 - 1 uncorrected on one DIMM and one on the other: the
    // controller's sum would wrap to 0 if added plainly.
    let dimms = vec![dimm(0, Some(0), Some(u64::MAX)), dimm(1, Some(0), None)];
    let found = findings(&node((Some(0), Some(u64::MAX)), dimms, DAY));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("18446744073709551615 uncorrected"),
        "{}",
        found[0]
    );
    let line = two((u64::MAX, 0), (u64::MAX, 0), DAY).summary();
    assert!(
        line.starts_with("EDAC: 18446744073709551615 corrected"),
        "{line}"
    );
}
