//! Bands in a study: where each point's arrays stand against its
//! threads' caches, and what its legend says of it.

use super::tests::{cell, run};
use super::*;

/// A triad point of `working_set` bytes per thread, its threads served by
/// 16 MiB of L3 each.
fn triad_over_16_mib_of_l3(working_set: u64) -> Record {
    let mut r = cell(0, 0, 40.0);
    r.point.numa = None;
    r.point.working_set_per_thread = working_set;
    r.point.kernels = vec![KernelId::Triad];
    r.cache_per_thread.insert("L3".into(), 16 << 20);
    r
}

#[test]
fn the_under_rule_mark_is_explained_only_where_a_peak_column_shows_it() {
    // One triad array of 24 MiB against 16 MiB of caches: under the rule.
    let mut r = triad_over_16_mib_of_l3(3 * (24 << 20));
    assert_eq!(r.band(), crate::results::Band::UnderRule);
    r.peak_unknown = Some("no peak known".into());
    let text = legend([&r], KernelId::Triad);
    assert!(text.contains("caches may still help"), "{text}");
    assert!(!text.contains("(u beside"), "no % peak column: {text}");
    r.peak_gb_s = Some(400.0);
    r.peak_unknown = None;
    let text = legend([&r], KernelId::Triad);
    assert!(
        text.contains("caches may still help (u beside a % peak)"),
        "{text}"
    );
}

#[test]
fn a_point_whose_caches_or_sizes_are_unknown_is_neither_memory_nor_caches() {
    use crate::results::Band;
    use crate::topology::{CacheKind, UnknownCaches};
    // Far past 4 × the caches by the sum its record kept, but a run said
    // an L1d had no size: not judged, and the legend says so.
    let mut r = triad_over_16_mib_of_l3(3 << 30);
    assert_eq!(r.band(), Band::Memory);
    let mut unknown = run(40.0, 40.0, (1.0, 1.0), None);
    unknown.caches_unknown = Some(UnknownCaches::SizeUnknown {
        level: 1,
        kind: CacheKind::Data,
    });
    r.runs = vec![unknown];
    assert_eq!(r.band(), Band::Unknown);
    assert!(!r.in_caches());
    r.peak_gb_s = Some(400.0);
    let text = legend([&r], KernelId::Triad);
    assert!(text.contains("not judged: 1 of 1 points"), "{text}");
    assert!(text.contains("(? beside a % peak)"), "{text}");
    // No caches kept at all, or an unknown array size: the same.
    let mut none = triad_over_16_mib_of_l3(3 << 30);
    none.cache_per_thread.clear();
    assert_eq!(none.band(), Band::Unknown);
    let sizeless = triad_over_16_mib_of_l3(0);
    assert_eq!(sizeless.band(), Band::Unknown);
}

#[test]
fn a_devices_arrays_are_in_its_own_memory_whatever_host_caches_its_record_kept() {
    use crate::results::targets::{Device, DeviceId, Target};
    // Earlier records kept the host's caches for a device too.
    let mut r = triad_over_16_mib_of_l3(3 * (1 << 20));
    assert_eq!(r.band(), crate::results::Band::Caches);
    assert!(r.host_caches().is_some());
    let mut big = r.clone();
    big.point.working_set_per_thread = 3 << 30;
    assert!(crate::report::levels::study(&[r.clone(), big.clone()]).is_some());
    let device = Some(Target::Device(Box::new(Device {
        id: DeviceId::of("sim", 1),
        facts: Default::default(),
    })));
    r.point.target = device.clone();
    big.point.target = device;
    assert_eq!(r.host_caches(), None);
    assert_eq!(r.band(), crate::results::Band::Memory);
    // Nor does the cache-level study place it among the host's levels.
    assert!(crate::report::levels::study(&[r, big]).is_none());
}
