use super::policy::SplitPart;
use super::split::split_range;
use super::*;
use crate::topology::cpulist::IdSet;

#[test]
fn page_samples_do_not_alias_with_round_robin() {
    assert_eq!(sample_pages(10, 4096), (0..10).collect::<Vec<_>>());
    // 64 MiB of 4 KiB pages: every residue of a small period is seen evenly,
    // as are 2 MiB hugepage units over 2 or 3 nodes.
    let picks = sample_pages(16384, 4096);
    assert!(picks.len() > 4000);
    for (unit, period) in [(1, 2), (1, 3), (1, 4), (1, 8), (512, 2), (512, 3)] {
        for r in 0..period {
            let share = picks.iter().filter(|&&p| (p / unit) % period == r).count() as f64
                / picks.len() as f64;
            assert!(
                (share - 1.0 / period as f64).abs() < 0.03,
                "unit {unit} period {period}: {share}"
            );
        }
    }
}

#[test]
fn partition_covers_everything_on_page_boundaries() {
    for (n, t) in [(1, 1), (10_000, 3), (1 << 20, 7), (512, 4), (100, 2)] {
        let parts = partition(n, t);
        assert_eq!(parts.len(), t);
        assert_eq!(parts[0].start, 0);
        assert_eq!(parts.last().unwrap().end, n);
        for w in parts.windows(2) {
            assert_eq!(w[0].end, w[1].start);
            assert!(w[1].start % PAGE_ELEMENTS == 0 || w[1].start == n);
        }
        let lens: Vec<usize> = parts.iter().map(|r| r.len()).collect();
        let (lo, hi) = (lens.iter().min().unwrap(), lens.iter().max().unwrap());
        assert!(hi - lo <= PAGE_ELEMENTS || *lo == 0);
    }
}

#[test]
fn small_arrays_split_by_cache_line_and_evenly() {
    // 16 KiB per thread of triad's three arrays over two threads: by pages
    // the split was 512 and 853 elements.
    let parts = partition_for(1365, 2, Hugepages::Thp);
    let lens: Vec<usize> = parts.iter().map(|r| r.len()).collect();
    assert_eq!(lens, [680, 685]);
    assert_eq!(parts[1].start % LINE_ELEMENTS, 0);
    // Large arrays keep page boundaries: no page touched by two threads.
    let big = partition_for(1 << 22, 3, Hugepages::Never);
    assert!(big.iter().all(|r| r.start % PAGE_ELEMENTS == 0));
    // Explicit huge pages still come whole where every thread gets one.
    let huge = partition_for(1 << 22, 2, Hugepages::Explicit2M);
    assert_eq!(huge[1].start % (2 << 20 >> 3), 0);
}

#[test]
fn chunks_split_only_mapped_arrays() {
    let mut arrays = Arrays::map(
        &[ArrayId::A, ArrayId::C],
        3000,
        0,
        Hugepages::Never,
        &MemPolicy::default(),
        &partition(3000, 2),
    )
    .unwrap();
    let ranges = partition(3000, 2);
    let mut chunks = arrays.chunks(&ranges);
    assert_eq!(chunks.len(), 2);
    assert!(chunks[1].arrays[ArrayId::B.index()].is_none());
    assert_eq!(
        chunks[0].get(ArrayId::A).len() + chunks[1].get(ArrayId::C).len(),
        3000
    );
    assert_eq!(chunks[1].offset, ranges[1].start);
}

/// STREAM's OFFSET: a on a 2 MiB boundary, b `offset` elements past one,
/// c twice that, as STREAM's static arrays sit one after the other.
#[test]
fn an_offset_moves_b_once_and_c_twice() {
    let arrays = Arrays::map(
        &[ArrayId::A, ArrayId::B, ArrayId::C],
        5000,
        1840,
        Hugepages::Never,
        &MemPolicy::default(),
        &partition(5000, 2),
    )
    .unwrap();
    let past_boundary = |id: ArrayId| {
        let address = arrays.array(id).unwrap().as_slice().as_ptr() as usize;
        address % crate::sys::HUGEPAGE_BYTES
    };
    assert_eq!(past_boundary(ArrayId::A), 0);
    assert_eq!(past_boundary(ArrayId::B), 1840 * 8);
    assert_eq!(past_boundary(ArrayId::C), 2 * 1840 * 8);
}

#[test]
fn splits_cut_each_range_by_share_on_unit_boundaries() {
    let parts = [
        SplitPart {
            node: 0,
            basis_points: 7500,
        },
        SplitPart {
            node: 2,
            basis_points: 2500,
        },
    ];
    assert_eq!(
        split_range(&(0..1000), &parts, 10),
        vec![(0, 0..750), (2, 750..1000)]
    );
    // Rounded to the unit; a share too small for a unit gets nothing.
    assert_eq!(
        split_range(&(100..200), &parts, 40),
        vec![(0, 100..180), (2, 180..200)]
    );
    let tiny = [
        SplitPart {
            node: 0,
            basis_points: 9900,
        },
        SplitPart {
            node: 1,
            basis_points: 100,
        },
    ];
    assert_eq!(split_range(&(0..100), &tiny, 100), vec![(0, 0..100)]);
}

#[test]
fn too_large_arrays_are_refused_before_mapping() {
    let (_dir, topo) = crate::topology::fixture::machine("xeon-e5-2680v3-2s");
    let err = check_fits(&topo, 3, 1 << 50).unwrap_err();
    assert!(err.to_string().contains("available"), "{err}");
    assert!(check_fits(&topo, 3, 1000).is_ok());
    // Bound arrays must fit the nodes they are bound to, whatever the
    // machine has in all.
    let node0 = topo.nodes[0].mem_total.unwrap().0;
    let bound = MemPolicy::uniform(Policy::Bind(IdSet::new(vec![0])));
    let abc = [ArrayId::A, ArrayId::B, ArrayId::C];
    let just_over = node0 / ELEMENT_BYTES / 3 + 1;
    let err = check_fits_bound(&topo, &bound, &abc, just_over).unwrap_err();
    assert!(err.to_string().contains("bound to node 0 need"), "{err}");
    assert!(check_fits_bound(&topo, &bound, &abc, just_over - 2).is_ok());
    // Over both nodes it fits; unbound, nothing is judged here.
    let both = MemPolicy::uniform(Policy::Bind(IdSet::new(vec![0, 1])));
    assert!(check_fits_bound(&topo, &both, &abc, just_over).is_ok());
    assert!(check_fits_bound(&topo, &MemPolicy::default(), &abc, just_over).is_ok());
}
