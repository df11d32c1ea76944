use super::*;
use crate::memory::written::{named_arrays, parse};
use crate::topology::Topology;

/// Two NUMA nodes (0 and 1); the directory goes when the test ends.
fn topo() -> (tempfile::TempDir, Topology) {
    crate::topology::fixture::machine("xeon-e5-2680v3-2s")
}

#[test]
fn policies_parse_on_a_two_node_machine() {
    let (_dir, t) = topo();
    let n0 = t.allowed_mems.first().unwrap();
    assert_eq!(parse("local", &t).unwrap(), MemPolicy::default());
    let bind = parse(&format!("bind:{n0}"), &t).unwrap();
    assert_eq!(bind.arrays[0], Policy::Bind(IdSet::new(vec![n0])));
    assert!(bind.is_uniform());
    assert_eq!(bind.numactl(), Some(format!("--membind={n0}")));
    let all = parse("interleave:all", &t).unwrap();
    assert_eq!(all.arrays[2], Policy::Interleave(t.allowed_mems.clone()));
    let per = parse(&format!("a=bind:{n0},c=preferred:{n0}"), &t).unwrap();
    assert_eq!(per.arrays[1], Policy::Local);
    assert_eq!(per.arrays[2], Policy::Preferred(n0));
    assert_eq!(per.numactl(), None);
    assert_eq!(
        per.to_string(),
        format!("a=bind:{n0},b=local,c=preferred:{n0}")
    );
    let d = parse(&format!("d=bind:{n0}"), &t).unwrap();
    assert_eq!(d.arrays[3], Policy::Bind(IdSet::new(vec![n0])));
    assert_eq!(
        d.to_string(),
        format!("a=local,b=local,c=local,d=bind:{n0}")
    );
}

#[test]
fn bad_policies_name_the_bad_part() {
    let (_dir, t) = topo();
    let e = |s: &str| parse(s, &t).unwrap_err().to_string();
    assert!(e("bind:99").contains("node 99 does not exist"));
    assert!(e("bind:").contains("needs nodes"));
    assert!(e("scatter").contains("unknown policy"));
    assert!(e("preferred:0,0-1").contains("one node"));
    assert!(e("a=bind:0,a=local").contains("twice"));
    assert!(e("bind:0,b=local").contains("per array"));
    assert!(e("a=bind:x").contains("column 3"));
    assert!(e("").contains("empty"));
}

#[test]
fn splits_and_weights_parse_and_refuse_what_cannot_be() {
    let (_dir, cxl) = crate::topology::fixture::machine("xeon-6-cxl-1s");
    let split = parse("split:0=75%,1=25%", &cxl).unwrap();
    assert_eq!(split.to_string(), "split:0=75%,1=25%");
    assert_eq!(split.numactl(), None);
    let weighted = parse("weighted-interleave:0,1", &cxl).unwrap();
    assert_eq!(
        weighted.arrays[0],
        Policy::WeightedInterleave([0, 1].into_iter().collect(), [(0, 5), (1, 1)].into())
    );
    assert_eq!(weighted.numactl().unwrap(), "--weighted-interleave=0-1");
    let e = |s: &str, t: &Topology| parse(s, t).unwrap_err().to_string();
    assert!(e("split:0=60%,1=30%", &cxl).contains("add up to 90 %"));
    assert!(e("split:0=60%,0=40%", &cxl).contains("twice"));
    assert!(e("split:5=100%", &cxl).contains("node 5 does not exist"));
    assert!(e("split:0=x", &cxl).contains("not 0-100 %"));
    assert!(e("split:", &cxl).contains("needs shares"));
    // The two-socket fixture has no weighted_interleave directory: a
    // kernel before 6.9.
    let (_dir2, old) = topo();
    assert!(e("weighted-interleave:0,1", &old).contains("Linux 6.9"));
}

#[test]
fn weighted_and_split_shares_are_held_within_two_points() {
    let parts = vec![
        SplitPart {
            node: 0,
            basis_points: 7500,
        },
        SplitPart {
            node: 2,
            basis_points: 2500,
        },
    ];
    let split = Policy::Split(parts);
    let good: BTreeMap<usize, f64> = [(0, 0.76), (2, 0.24)].into();
    let bad: BTreeMap<usize, f64> = [(0, 0.70), (2, 0.30)].into();
    assert!(judge(&split, &good, None).0);
    let (held, why) = judge(&split, &bad, None);
    assert!(!held);
    assert!(why.unwrap().contains("not 75.0 %"));
}

#[test]
fn distributions_are_judged() {
    let two: IdSet = [0, 1].into_iter().collect();
    let half: BTreeMap<usize, f64> = [(0, 0.5), (1, 0.5)].into();
    let all_on_1: BTreeMap<usize, f64> = [(1, 1.0)].into();
    assert!(judge(&Policy::Interleave(two.clone()), &half, None).0);
    assert!(!judge(&Policy::Interleave(two), &all_on_1, None).0);
    assert!(judge(&Policy::Bind([1].into_iter().collect()), &all_on_1, None).0);
    assert!(!judge(&Policy::Bind([0].into_iter().collect()), &half, None).0);
    assert!(!judge(&Policy::Preferred(0), &all_on_1, None).0);
    assert!(!judge(&Policy::Local, &half, Some(0.5)).0);
}

#[test]
fn named_arrays_and_multibyte_input_share_one_entry_rule() {
    assert_eq!(
        named_arrays("a=bind:0,d=bind:1"),
        vec![ArrayId::A, ArrayId::D]
    );
    assert!(named_arrays("bind:0,1").is_empty());
    // A multi-byte character after a comma is an error, not a cut string.
    let (_dir, t) = topo();
    for text in [",€", "a=€", "a=local,€"] {
        assert!(parse(text, &t).is_err(), "{text}");
    }
}
