//! `--stores auto`'s decision on captured and generated hosts' caches.

use super::*;
use crate::topology::Topology;

/// The caches serving every online CPU of a captured or generated host.
fn caches_of(topo: &Topology) -> ThreadCaches {
    ThreadCaches::serving(topo, topo.online_cpus().ids())
}

fn decide(kernel: KernelId, elements: u64, caches: ThreadCaches) -> KernelStores {
    KernelStores::decide(StoresRequest::Auto, Isa::Avx2, kernel, elements, caches)
}

/// Unknown caches never decide: every storing kernel is timed.
#[test]
fn unknown_caches_are_timed_not_assumed() {
    let none = ThreadCaches::default();
    for elements in [1_000, 10_000_000, 1_000_000_000] {
        let s = decide(KernelId::Triad, elements, none);
        assert!(s.to_measure(), "{elements}: {s:?}");
        assert!(
            s.why().contains("near caches of unknown size"),
            "{}",
            s.why()
        );
    }
}

#[test]
fn requests_and_isas_without_streaming_stores_are_not_timed() {
    let caches = ThreadCaches {
        below_last: 4 << 20,
        all: 100 << 20,
    };
    let s = KernelStores::decide(StoresRequest::Nt, Isa::Avx2, KernelId::Copy, 1_000, caches);
    assert_eq!((s.mode, s.basis), (StoreMode::Nt, StoresBasis::Requested));
    let s = KernelStores::decide(
        StoresRequest::Auto,
        Isa::Scalar,
        KernelId::Triad,
        10_000_000,
        caches,
    );
    assert_eq!(
        (s.mode, s.basis),
        (StoreMode::Regular, StoresBasis::NoStreamingStores)
    );
}

/// The measured record: each mode's rate by name whichever was first,
/// the ratio of the kept one, and the cache evidence only beyond the
/// noise.
#[test]
fn a_measured_choice_keeps_both_rates_and_says_what_it_shows() {
    let caches = ThreadCaches {
        below_last: 4 << 20,
        all: 484 << 20,
    };
    let edge = decide(KernelId::Copy, 10_000_000, caches);
    assert_eq!(edge.candidates(), [StoreMode::Regular, StoreMode::Nt]);
    let won = edge.measured(StoreMode::Nt, [39.2, 48.6], None, false);
    assert_eq!(
        won.nt_over_regular().map(|r| (r * 100.0).round()),
        Some(124.0)
    );
    assert!(won.shows_arrays_past_caches());
    let why = won.why();
    assert!(
        why.starts_with(
            "measured: nt 48.6 GB/s, regular 39.2 GB/s, nt/regular 1.24× (the faster, kept)"
        ),
        "{why}"
    );
    let tie = edge.measured(StoreMode::Regular, [40.0, 40.4], Some(0.02), false);
    assert!(!tie.shows_arrays_past_caches());
    assert!(
        tie.why().contains("inside the rounds' 2 % noise"),
        "{}",
        tie.why()
    );
    let json = serde_json::to_string(&won).unwrap();
    assert!(
        json.starts_with(r#"{"mode":"nt","basis":"measured","#),
        "{json}"
    );
}

/// The issue's VM class (../shared/fixtures: a 300 MiB L3 behind two
/// cores): STREAM's four kernels at sizes from inside the L2s to far
/// past the L3, each side of each edge.
#[test]
fn a_300_mib_l3_vm_fits_measures_and_exceeds() {
    let tree = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/xeon-avx512-300mib-l3-vm");
    let topo = Topology::read(&tree).expect("the captured fixture");
    let caches = caches_of(&topo);
    assert!(caches.all > 300 << 20, "{caches:?}");
    assert!(
        caches.below_last > 0 && caches.below_last < 16 << 20,
        "{caches:?}"
    );
    // Copy's two arrays within the L1s and L2s: regular, no timing.
    let small = caches.below_last / 16 / 2;
    let s = decide(KernelId::Copy, small, caches);
    assert_eq!(s.mode, StoreMode::Regular);
    assert!(matches!(s.basis, StoresBasis::Fits { .. }), "{s:?}");
    assert!(!s.to_measure());
    // Triad's three arrays of the same size do not fit: one more
    // array is what tips it (decided per kernel).
    let edge = caches.below_last / 8 / 2;
    assert!(matches!(
        decide(KernelId::Copy, edge, caches).basis,
        StoresBasis::Fits { .. }
    ));
    let t = decide(KernelId::Triad, edge, caches);
    assert!(t.to_measure(), "{t:?}");
    assert_eq!(t.mode, StoreMode::Regular, "leans to regular inside the L3");
    // The issue's 100,000,000 elements: 2.2 GiB for triad, 7.6 × a
    // 300 MiB L3 but under 4 × for copy's 1.5 GiB? Past 4 × for both here.
    let big = 100_000_000;
    let t = decide(KernelId::Triad, big, caches);
    assert_eq!(t.mode, StoreMode::Nt);
    assert!(matches!(t.basis, StoresBasis::Exceeds { .. }), "{t:?}");
    // Between the L3 and 4 × it: timed, leaning to streaming stores.
    let between = 2 * caches.all / ELEMENT_BYTES / 3;
    let t = decide(KernelId::Triad, between, caches);
    assert!(t.to_measure());
    assert_eq!(t.mode, StoreMode::Nt);
    // One element short of 4 × all caches for triad: still timed;
    // at it: decided by size.
    let four = EXCEED_MULTIPLE * caches.all;
    let at = four.div_ceil(3 * ELEMENT_BYTES);
    assert!(!decide(KernelId::Triad, at, caches).to_measure());
    assert!(decide(KernelId::Triad, at - 1, caches).to_measure());
    // Read writes nothing: no choice to make.
    assert_eq!(
        decide(KernelId::Read, between, caches).basis,
        StoresBasis::NoWrites
    );
}

/// A generated two-socket EPYC 7742 (NPS4; 256 MiB of L3 in 16 MiB
/// slices, 32 MiB of L2 per socket): STREAM's default size is decided
/// by size alone.
#[test]
fn an_epyc_7742_at_streams_size_needs_no_timing() {
    let (_tree, topo) = crate::topology::fixture::machine("epyc-7742-2s-nps4");
    let caches = caches_of(&topo);
    assert!(caches.all >= 512 << 20, "two sockets' L3: {caches:?}");
    // STREAM's rule (each array 4 × all the caches), as its default sizes.
    let stream = (4 * caches.all).div_ceil(ELEMENT_BYTES).max(10_000_000);
    for kernel in crate::kernels::STREAM_KERNELS {
        let s = decide(kernel, stream, caches);
        assert_eq!(s.mode, StoreMode::Nt, "{kernel}");
        assert!(
            matches!(s.basis, StoresBasis::Exceeds { .. }),
            "{kernel} {s:?}"
        );
    }
    // 10,000,000 elements (STREAM's old default, 229 MiB for triad):
    // near the 544 MiB of caches, timed.
    assert!(decide(KernelId::Triad, 10_000_000, caches).to_measure());
}
