//! The pointer chase: dependent loads through a chain of cache lines, each
//! load's address the value of the one before. Nothing else is in the loop,
//! so its time per load is the memory system's latency plus the loop's
//! own few instructions (visible in the L1 figure).

/// Follows `loads` links from word `start` of `chain` (whose entries are
/// word indices into `chain`), returning where it stopped. Unrolled by 8
/// so the loop's branch costs one cycle per eight loads.
///
/// Every entry of `chain` must be a valid index into it: [`crate::latency`]
/// builds chains that way and checks it before chasing.
pub fn chase(chain: &[u64], start: usize, loads: usize) -> usize {
    assert!(start < chain.len(), "start inside the chain");
    let mut p = start;
    let base = chain.as_ptr();
    for _ in 0..loads / 8 {
        // SAFETY: every entry of `chain` is an index below chain.len()
        // (checked by the caller, see above) and `p` starts inside, so
        // every read stays in the slice.
        unsafe {
            p = *base.add(p) as usize;
            p = *base.add(p) as usize;
            p = *base.add(p) as usize;
            p = *base.add(p) as usize;
            p = *base.add(p) as usize;
            p = *base.add(p) as usize;
            p = *base.add(p) as usize;
            p = *base.add(p) as usize;
        }
    }
    for _ in 0..loads % 8 {
        // SAFETY: as above.
        p = unsafe { *base.add(p) } as usize;
    }
    std::hint::black_box(p)
}
