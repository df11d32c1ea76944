//! The decision rules on data: no measurement, no timing.

use super::rules::*;
use super::*;
use crate::kernels::KernelId::{Copy, H2d, Triad};
use std::collections::BTreeMap;
use std::time::Duration;

fn bests(rows: &[(Scope, KernelId, f64)]) -> Bests {
    let mut b = Bests::new();
    for &(s, k, v) in rows {
        keep_best(&mut b, s, k, v);
    }
    b
}

fn identity() -> Identity {
    Identity {
        cpu_model: Some("AMD EPYC 7742 64-Core Processor".into()),
        sockets: 2,
        cores: 128,
        numa_nodes: (0..8)
            .map(|node| NodeMemory {
                node,
                bytes: Some(64 << 30),
            })
            .collect(),
        dimms: Some(Dimms {
            count: 16,
            total_mib: 16 * 32768,
            mts: Some(3200),
            slots: (0..16)
                .map(|i| format!("P{}-DIMM{}1", i / 8, i % 8))
                .collect(),
        }),
        thp_mode: Some("madvise".into()),
        kernel: "6.1.0".into(),
    }
}

fn baseline(scopes: &[(Scope, KernelId, f64)]) -> Baseline {
    let mut out: Vec<ScopeBaseline> = Vec::new();
    for &(scope, kernel, median) in scopes {
        let rates = Rates::of(vec![median * 0.98, median, median * 1.01]).unwrap();
        match out.iter_mut().find(|s| s.scope == scope) {
            Some(s) => {
                s.kernels.insert(kernel, rates);
            }
            None => out.push(ScopeBaseline {
                scope,
                threads: 16,
                elements: 1 << 24,
                stores: StoreMode::Nt,
                device: None,
                band: crate::results::Band::Memory,
                kernels: [(kernel, rates)].into(),
            }),
        }
    }
    Baseline {
        schema_version: BASELINE_SCHEMA,
        kind: BASELINE_KIND.into(),
        created: "2026-11-24T00:00:00Z".into(),
        hosts: vec!["n1".into()],
        identity: identity(),
        protocol: Protocol {
            ntimes: 5,
            kernels: vec![Copy, Triad],
        },
        scopes: out,
        interference: None,
        pairs: Vec::new(),
        memory_errors: None,
    }
}

#[test]
fn rates_summarise_rounds_with_their_median_and_spread() {
    let r = Rates::of(vec![10.0, 9.0, 11.0]).unwrap();
    assert_eq!((r.best_gb_s, r.median_gb_s), (11.0, 10.0));
    assert!((r.spread - 0.2).abs() < 1e-12);
    assert!(Rates::of(vec![]).is_none());
}

#[test]
fn tolerances_are_shares_between_0_and_100_percent() {
    assert_eq!(crate::units::parse_share("10%").unwrap(), 0.1);
    assert_eq!(crate::units::parse_share("0.15").unwrap(), 0.15);
    for bad in ["-5%", "200%", "0", "100%", "x", "", "NaN"] {
        assert!(crate::units::parse_share(bad).is_err(), "{bad}");
    }
}

#[test]
fn within_tolerance_of_the_baseline_passes_and_below_fails() {
    let b = baseline(&[(Scope::Node, Triad, 100.0), (Scope::Numa(0), Triad, 50.0)]);
    let ok = bests(&[(Scope::Node, Triad, 91.0), (Scope::Numa(0), Triad, 46.0)]);
    assert!(against_baseline(&ok, &b, 0.1).iter().all(|f| f.ok));
    let short = bests(&[(Scope::Node, Triad, 89.0), (Scope::Numa(0), Triad, 46.0)]);
    let f = against_baseline(&short, &b, 0.1);
    assert_eq!(f.iter().filter(|f| !f.ok).count(), 1);
    assert_eq!(worst(&f).unwrap().scope, Scope::Node);
    // A scope never measured counts as nothing, not as a pass.
    let missing = bests(&[(Scope::Node, Triad, 100.0)]);
    assert!(!against_baseline(&missing, &b, 0.1).iter().all(|f| f.ok));
}

#[test]
fn a_slow_domain_that_a_missing_dimm_explains_says_so() {
    let b = baseline(&[(Scope::Node, Triad, 100.0), (Scope::Numa(1), Triad, 50.0)]);
    let short = bests(&[(Scope::Node, Triad, 95.0), (Scope::Numa(1), Triad, 41.0)]);
    let f = against_baseline(&short, &b, 0.1);
    let slow = worst_in_host_memory(&f).unwrap();
    assert_eq!(
        explained(slow, "DIMM P1-DIMMC1 missing since the baseline"),
        "NUMA node 1: triad 18 % slow (41.0 GB/s of 50.0 GB/s), explained by DIMM P1-DIMMC1 missing since the baseline"
    );
    assert!(
        worst_in_host_memory(&against_baseline(
            &bests(&[(Scope::Node, Triad, 100.0), (Scope::Numa(1), Triad, 50.0)]),
            &b,
            0.1
        ))
        .is_none()
    );
}

#[test]
fn symmetry_names_exactly_the_slow_domain() {
    let mut rows: Vec<(Scope, KernelId, f64)> =
        (0..8).map(|n| (Scope::Numa(n), Triad, 62.5)).collect();
    rows[3].2 = 38.2;
    rows.push((Scope::Node, Triad, 450.0));
    let f = symmetry(&bests(&rows), 0.1);
    assert_eq!(f.len(), 8, "one finding per domain, the node left out");
    let short: Vec<Scope> = f.iter().filter(|f| !f.ok).map(|f| f.scope).collect();
    assert_eq!(short, [Scope::Numa(3)]);
    let line = diagnosis(worst(&f).unwrap(), 0.1, &f);
    assert_eq!(
        line,
        "NUMA node 3 triad 38.2 GB/s is 61 % of the other domains' 62.5 GB/s (tolerance 10 %): a memory channel on node 3 is missing or slow"
    );
    // Two domains: only the slow one is short, not its healthy partner.
    let two = symmetry(
        &bests(&[(Scope::Numa(0), Copy, 40.0), (Scope::Numa(1), Copy, 60.0)]),
        0.1,
    );
    assert_eq!(
        two.iter()
            .filter(|f| !f.ok)
            .map(|f| f.scope)
            .collect::<Vec<_>>(),
        [Scope::Numa(0)]
    );
    // One domain: nothing to compare.
    assert!(symmetry(&bests(&[(Scope::Numa(0), Copy, 40.0)]), 0.1).is_empty());
}

#[test]
fn siblings_name_the_slow_device_and_the_narrow_link_apart() {
    // Eight devices: device 3's memory 20 % slow, device 5's link from
    // node 0 at half; each class held against its own siblings only.
    let mut rows: Vec<(Scope, KernelId, f64)> = Vec::new();
    for i in 0..8 {
        rows.push((
            Scope::Device(i),
            Triad,
            if i == 3 { 2400.0 } else { 3000.0 },
        ));
        rows.push((Scope::HostLink(i, 0), H2d, if i == 5 { 27.0 } else { 54.0 }));
    }
    rows.push((Scope::Numa(0), Triad, 100.0));
    let f = symmetry(&bests(&rows), 0.1);
    assert_eq!(
        f.len(),
        16,
        "one finding per device and link; one domain alone says nothing"
    );
    let short: Vec<Scope> = f.iter().filter(|f| !f.ok).map(|f| f.scope).collect();
    assert_eq!(short, [Scope::Device(3), Scope::HostLink(5, 0)]);
    assert!(f.iter().all(|f| f.against == Against::OtherDevices));
    let line = diagnosis(worst(&f).unwrap(), 0.1, &f);
    assert!(
        line.starts_with("device 5 link from node 0 h2d 27.0 GB/s is 50 % of its sibling devices' 54.0 GB/s from node 0"),
        "{line}"
    );
}

#[test]
fn scopes_keep_their_device_in_keys_and_read_old_ones() {
    for scope in [
        Scope::Device(7),
        Scope::HostLink(2, 1),
        Scope::Numa(3),
        Scope::Node,
    ] {
        assert_eq!(Scope::parse(&scope.key()), Some(scope), "{}", scope.key());
    }
    assert_eq!(Scope::HostLink(2, 1).key(), "device:2/link:1");
    // Files from before device sets: their one device, index taken later
    // from the device the scope records.
    assert_eq!(Scope::parse("device"), Some(Scope::Device(0)));
    assert_eq!(Scope::parse("link:1"), Some(Scope::HostLink(0, 1)));
    assert_eq!(Scope::HostLink(0, 1).of_device(4), Scope::HostLink(4, 1));
    for bad in ["device:x", "device:1/link:", "device:1/numa:0", "link"] {
        assert_eq!(Scope::parse(bad), None, "{bad}");
    }
}

#[test]
fn each_scope_is_held_against_a_share_of_its_own_peak() {
    let node = |p: f64| BTreeMap::from([(Scope::Node, p)]);
    let b = bests(&[(Scope::Node, Triad, 150.0)]);
    assert!(matches!(&against_peak(&b, &node(400.0), 0.5)[..], [f] if !f.ok && f.ratio == 0.75));
    assert!(matches!(&against_peak(&b, &node(250.0), 0.5)[..], [f] if f.ok));
    assert!(against_peak(&bests(&[(Scope::Node, Copy, 150.0)]), &node(400.0), 0.5).is_empty());
    // A node's CPUs and its GPUs: each against its own memory's peak, and
    // a scope without one against none.
    let node_and_gpus = bests(&[
        (Scope::Node, Triad, 150.0),
        (Scope::Device(0), Triad, 3000.0),
        (Scope::Device(1), Triad, 1000.0),
        (Scope::NumaOn(0, 1), Triad, 100.0),
    ]);
    let peaks = BTreeMap::from([
        (Scope::Node, 200.0),
        (Scope::Device(0), 3352.0),
        (Scope::Device(1), 3352.0),
    ]);
    let f = against_peak(&node_and_gpus, &peaks, 0.5);
    let judged: Vec<(Scope, bool)> = f.iter().map(|f| (f.scope, f.ok)).collect();
    assert_eq!(
        judged,
        [
            (Scope::Node, true),
            (Scope::Device(0), true),
            (Scope::Device(1), false)
        ]
    );
    assert_eq!(f[1].reference_gb_s, 1676.0);
}

#[test]
fn a_node_without_cpus_short_of_its_firmware_figure_says_so() {
    // The cores of node 0 over a CXL node 1, held against half of what
    // HMAT states for it.
    let slow = Finding {
        scope: Scope::NumaOn(0, 1),
        measured_gb_s: 10.0,
        reference_gb_s: 30.72,
        ratio: 10.0 / 30.72,
        against: Against::Peak,
        ok: false,
        ..finding_ok(false)
    };
    let why = diagnosis(&slow, 0.1, std::slice::from_ref(&slow));
    assert!(
        why.contains("node 1's bandwidth as its firmware states it, ACPI HMAT"),
        "{why}"
    );
    assert!(
        why.contains("the cores of node 0 reach that memory"),
        "{why}"
    );
}

#[test]
fn only_a_class_of_two_or_more_has_siblings() {
    let scopes = [
        Scope::Node,
        Scope::Numa(0),
        Scope::Numa(1),
        Scope::NumaOn(0, 2),
        Scope::Device(0),
        Scope::HostLink(0, 0),
    ];
    assert_eq!(with_siblings(&scopes), [Scope::Numa(0), Scope::Numa(1)]);
}

#[test]
fn the_check_stops_at_the_first_pass_and_fails_only_when_the_budget_ends() {
    let s = Duration::from_secs;
    let pass = [finding_ok(true)];
    let short = [finding_ok(false)];
    assert_eq!(next(&pass, s(1), s(1), s(20)), Next::Pass);
    // Already past the budget, yet passing: a pass.
    assert_eq!(next(&pass, s(30), s(1), s(20)), Next::Pass);
    assert_eq!(next(&short, s(1), s(1), s(20)), Next::Continue);
    // Another round as long as the last would overrun: fail now.
    assert_eq!(next(&short, s(18), s(3), s(20)), Next::Fail);
    assert_eq!(next(&short, s(17), s(3), s(20)), Next::Continue);
}

fn finding_ok(ok: bool) -> Finding {
    Finding {
        scope: Scope::Node,
        kernel: Triad,
        measured_gb_s: 1.0,
        reference_gb_s: 1.0,
        ratio: 1.0,
        against: Against::Baseline,
        ok,
        cpu: None,
        rounds: None,
    }
}

#[test]
fn the_most_even_round_is_kept_and_a_lagging_thread_is_named() {
    let mut balance = Balance::new();
    let slow = |gb_s| Slowest {
        cpu: 1,
        gb_s,
        others_gb_s: 20.0,
    };
    keep_most_even(&mut balance, Scope::Node, Triad, slow(12.0));
    keep_most_even(&mut balance, Scope::Node, Triad, slow(14.0));
    keep_most_even(&mut balance, Scope::Node, Triad, slow(10.0));
    assert_eq!(balance[&(Scope::Node, Triad)].gb_s, 14.0);
    let f = thread_balance(&balance, 0.1);
    assert!(!f[0].ok && f[0].cpu == Some(1));
    assert_eq!(
        diagnosis(&f[0], 0.1, &f),
        "node triad: the thread on CPU 1 ran at 14.0 GB/s, 70 % of the other threads' 20.0 GB/s (tolerance 10 %): another process on CPU 1, or a throttled core"
    );
    keep_most_even(&mut balance, Scope::Node, Triad, slow(19.0));
    assert!(thread_balance(&balance, 0.1)[0].ok);
}

#[test]
fn a_baseline_of_another_node_kind_is_named_and_lost_hardware_is_unhealthy() {
    let base = identity();
    assert!(compare_identity(&base, &base).is_empty());
    let mut other = identity();
    other.cpu_model = Some("Intel Xeon".into());
    other.cores = 64;
    let d = compare_identity(&base, &other);
    assert!(
        matches!(&d[0], IdentityDifference::OtherNode(m) if m.contains("CPU model 'Intel Xeon' here"))
    );
    assert!(
        matches!(&d[1], IdentityDifference::OtherNode(m) if m.contains("64 usable cores here, 128"))
    );
    let mut degraded = identity();
    degraded.numa_nodes[5].bytes = Some(48 << 30);
    degraded.dimms.as_mut().unwrap().mts = Some(2933);
    let d = compare_identity(&base, &degraded);
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(
        matches!(&d[0], IdentityDifference::Degraded(m) if m.starts_with("NUMA node 5 has 48"))
    );
    assert!(matches!(&d[1], IdentityDifference::Degraded(m) if m.contains("2933 MT/s here, 3200")));
    // A slot gone since the baseline is named; with no slots recorded
    // (an older baseline), the count is.
    let mut missing = identity();
    let dimms = missing.dimms.as_mut().unwrap();
    dimms.slots.remove(2);
    dimms.count = 15;
    let d = compare_identity(&base, &missing);
    assert_eq!(
        d,
        vec![IdentityDifference::Degraded(
            "DIMM P0-DIMM21 missing since the baseline (15 DIMMs here, 16 in it): reseat or replace it"
                .into()
        )]
    );
    let mut old = identity();
    old.dimms.as_mut().unwrap().slots.clear();
    let d = compare_identity(&old, &missing);
    assert!(
        matches!(&d[..], [IdentityDifference::Degraded(m)] if m.starts_with("15 DIMMs here, 16 in the baseline")),
        "{d:?}"
    );
    let mut nps = identity();
    nps.numa_nodes.truncate(2);
    nps.kernel = "6.12.0".into();
    let d = compare_identity(&base, &nps);
    assert!(matches!(&d[0], IdentityDifference::Degraded(m) if m.contains("NPS")));
    assert!(matches!(&d[1], IdentityDifference::Note(m) if m.contains("kernel 6.12.0")));
}

#[test]
fn baseline_files_are_checked_before_use() {
    let good = serde_json::to_string(&baseline(&[(Scope::Node, Triad, 100.0)])).unwrap();
    let b = Baseline::parse(&good).unwrap();
    assert_eq!(
        b.scope(Scope::Node).unwrap().kernels[&Triad].median_gb_s,
        100.0
    );
    let err = |text: &str| Baseline::parse(text).unwrap_err().to_string();
    assert!(err("").contains("not JSON"));
    assert!(err("{\"schema_version\": 1}").contains("not a membw baseline"));
    assert!(
        err(&good.replace("\"schema_version\":1", "\"schema_version\":2")).contains("version 2")
    );
    let e = err(&good.replace("\"scope\":\"node\"", "\"scope\":\"numa:x\""));
    assert!(e.contains("scope"), "{e}");
    assert!(err(&good.replace("\"ntimes\":5", "\"ntimes\":0")).contains("ntimes"));
    assert!(
        err(&good.replace("\"median_gb_s\":100.0", "\"median_gb_s\":-1.0")).contains("positive")
    );
}

#[test]
fn a_fleet_baseline_is_the_median_node_with_the_spread_across_nodes() {
    let node = |name: &str, triad: f64| {
        let mut b = baseline(&[(Scope::Node, Triad, triad)]);
        b.hosts = vec![name.into()];
        (format!("{name}.json"), b)
    };
    let nodes = [node("n1", 100.0), node("n2", 90.0), node("n3", 110.0)];
    let fleet = Baseline::fleet(&nodes, "now".into()).unwrap();
    assert_eq!(fleet.hosts, ["n1", "n2", "n3"]);
    let triad = &fleet.scope(Scope::Node).unwrap().kernels[&Triad];
    assert_eq!((triad.median_gb_s, triad.rounds.len()), (100.0, 3));
    assert!((triad.spread - 0.2).abs() < 1e-12);
    // Another kind of node, or another protocol, cannot join.
    let mut other = node("x", 100.0);
    other.1.identity.cores = 64;
    let e = Baseline::fleet(&[nodes[0].clone(), other], "now".into()).unwrap_err();
    assert!(
        e.starts_with("x.json is not the kind of node n1.json is: 64 usable cores"),
        "{e}"
    );
    let mut slower = node("y", 100.0);
    slower.1.protocol.ntimes = 20;
    assert!(Baseline::fleet(&[nodes[0].clone(), slower], "now".into()).is_err());
    assert!(Baseline::fleet(&[], "now".into()).is_err());
}

#[test]
fn a_baselines_fields_are_checked_and_named() {
    let good = baseline(&[(Scope::Node, Copy, 100.0), (Scope::Numa(0), Copy, 50.0)]);
    let text = serde_json::to_string(&good).unwrap();
    assert_eq!(Baseline::parse(&text), Ok(good.clone()));
    let edited = |edit: fn(&mut Baseline)| {
        let mut b = good.clone();
        edit(&mut b);
        Baseline::parse(&serde_json::to_string(&b).unwrap())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        edited(|b| b.scopes[1].elements = 0),
        "scopes[1].elements is 0"
    );
    assert_eq!(
        edited(|b| b.scopes[0].kernels.get_mut(&Copy).unwrap().best_gb_s = 1.0),
        "scopes[0].kernels.copy.median_gb_s is 100 GB/s, above the best round's 1"
    );
    assert_eq!(
        edited(|b| b.protocol.kernels.clear()),
        "protocol.kernels is empty"
    );
    // Files from before the interference was recorded (none here) read.
    assert!(!text.contains("interference"));
}

#[test]
fn a_short_finding_is_decided_by_its_rounds_interval() {
    let short = |rounds: &[f64]| Finding {
        reference_gb_s: 80.0,
        measured_gb_s: 49.0,
        ratio: 49.0 / 80.0,
        ok: false,
        rounds: crate::results::Stats::of(rounds),
        ..finding_ok(false)
    };
    // The line is 72 GB/s (80 less 10 %): three steady rounds near 49.
    let steady = short(&[48.5, 49.0, 48.8]);
    assert_eq!(steady.line(0.1), 72.0);
    assert_eq!(steady.short_resolved(0.1), Some(true));
    // Rounds from 30 to 79: the mean's interval reaches the line.
    assert_eq!(short(&[30.0, 79.0]).short_resolved(0.1), Some(false));
    // One round: no interval, nothing decided.
    assert_eq!(short(&[49.0]).short_resolved(0.1), None);
    // Against the peak, the line is the least share itself.
    let peak = Finding {
        against: Against::Peak,
        ..short(&[10.0, 10.5])
    };
    assert_eq!(peak.line(0.1), 80.0);
}

proptest::proptest! {
    /// A baseline file with any one byte changed, cut short or grown by
    /// garbage: a baseline or a one-line refusal, never a panic; its names
    /// on one line.
    #[test]
    fn any_corruption_of_a_baseline_is_read_or_refused_in_one_line(
        at in 0usize..4096,
        byte in proptest::prelude::any::<u8>(),
        cut in proptest::prelude::any::<bool>(),
    ) {
        let mut b = baseline(&[(Scope::Node, Triad, 100.0)]);
        b.hosts = vec!["node01\nmembw: healthy".into()];
        let mut text = serde_json::to_string(&b).unwrap().into_bytes();
        let at = at % text.len();
        if cut {
            text.truncate(at);
        } else {
            text[at] = byte;
        }
        let text = String::from_utf8_lossy(&text);
        match Baseline::parse(&text) {
            Ok(b) => {
                for name in &b.hosts {
                    proptest::prop_assert!(!name.contains('\n'), "{name:?}");
                }
            }
            Err(e) => proptest::prop_assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }
}

#[test]
fn a_baselines_names_are_read_escaped_to_one_line() {
    let text = include_str!("../../tests/fixtures/documents/baseline.json")
        .replacen("\"vm\"", r#""vm\nmembw: node healthy""#, 1)
        .replacen("\"AMD EPYC\"", r#""EPYC\u001b[2K""#, 1)
        .replacen("\"6.18.44-fc-v782\"", r#""6.18\r""#, 1);
    let b = Baseline::parse(&text).unwrap();
    assert_eq!(b.hosts, ["vm\\nmembw: node healthy"]);
    assert_eq!(b.identity.cpu_model.as_deref(), Some("EPYC\\u{1b}[2K"));
    assert_eq!(b.identity.kernel, "6.18\\r");
}
