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

/// Writes back and drops, from every cache of the machine, the lines that
/// hold `words[i]` for each `i` in `at`: the next load of each comes from
/// memory, or from a core that loaded it since. This is how the shared-read
/// core-to-core test gets a line that is clean in one core and absent from
/// the other. False (nothing done) where membw has no user-mode flush: only
/// x86-64 (`clflush`) and aarch64 (`dc civac`, which Linux allows at EL0).
pub fn flush_lines(words: &[u64], at: &[usize]) -> bool {
    assert!(
        at.iter().all(|&i| i < words.len()),
        "flushed words inside the slice"
    );
    #[cfg(target_arch = "x86_64")]
    {
        for &i in at {
            // SAFETY: the address is inside `words` (asserted above);
            // clflush (SSE2, in every x86-64) only moves the line out of
            // the caches, it changes no value.
            unsafe { std::arch::x86_64::_mm_clflush(words.as_ptr().add(i).cast()) };
        }
        // SAFETY: a fence, no memory operand: the flushes complete before
        // anything after it.
        unsafe { std::arch::x86_64::_mm_mfence() };
        true
    }
    #[cfg(target_arch = "aarch64")]
    {
        for &i in at {
            // SAFETY: the address is inside `words` (asserted above);
            // `dc civac` cleans and invalidates the line to the point of
            // coherency, changing no value.
            unsafe {
                std::arch::asm!("dc civac, {p}", p = in(reg) words.as_ptr().add(i),
                    options(nostack, preserves_flags))
            };
        }
        // SAFETY: a barrier, no operand: the maintenance completes first.
        unsafe { std::arch::asm!("dsb ish", options(nostack, preserves_flags)) };
        true
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (words, at);
        false
    }
}
