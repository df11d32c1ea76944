//! How a kernel is launched on a GPU: its builds in the vendor's module
//! and, for each, the grids worth timing, from the runtime's occupancy.
//! The protocol times every shape while it calibrates and keeps the
//! fastest (issue 52: one wave of the blocks a multiprocessor holds lost
//! to grids that cover the array on an H100 and an H200).

use super::runtime::Function;
use crate::kernels::KernelId;

/// How one kernel is launched: which build of it, its grid, and what
/// that is, for people.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
    pub function: Function,
    pub grid: u32,
    pub label: String,
}

/// The builds of a kernel a vendor's module may have besides its own
/// (`triad_spread`: kernels.cu), each with what its shapes' labels say of
/// it: its threads' accesses a quarter of the array apart, as
/// BabelStream's grid-stride loop makes them.
pub(super) const OTHER_BUILDS: [(&str, &str, u64); 3] = [
    ("_spread", ", accesses a quarter apart", 1),
    ("_u2", ", 2 accesses a thread", 2),
    ("_u1", ", 1 access a thread", 4),
];

/// The launch shapes worth timing for a kernel of `elements` elements
/// whose multiprocessors each hold `per_mp` of its blocks at once: every
/// multiprocessor full, in one whole wave, the blocks striding over the
/// array (a grid the size of what the GPU holds); and a grid that covers
/// the array, one tile per block, as BabelStream's does. The second is
/// left out where it is no larger than the first (one wave covers it).
pub(super) fn shapes(
    function: Function,
    elements: u64,
    per_mp: u32,
    multiprocessors: u32,
    (block, per_thread): (u32, u64),
    build: &str,
) -> Vec<Shape> {
    let tiles = elements.div_ceil(u64::from(block) * per_thread).max(1);
    let per_mp = per_mp.max(1);
    let wave = u64::from(multiprocessors.max(1)) * u64::from(per_mp);
    let resident = wave.min(tiles) as u32;
    let mut shapes = vec![Shape {
        function,
        grid: resident,
        label: format!(
            "{} of {block}{build} (one wave: {per_mp} per multiprocessor, by occupancy)",
            crate::units::plural(resident as usize, "block")
        ),
    }];
    // A grid past what u32 counts, or past the driver's 2^31 - 1, stays
    // with the whole wave.
    if tiles > wave && tiles < u64::from(i32::MAX as u32) {
        shapes.push(Shape {
            function,
            grid: tiles as u32,
            label: format!(
                "{tiles} blocks of {block}{build} (covering the array: {:.1} waves of {per_mp} per multiprocessor)",
                tiles as f64 / wave as f64
            ),
        });
    }
    shapes
}

/// A kernel of the module, its launch shapes (over each of its builds)
/// and the one in use.
pub(super) struct Launchable {
    pub kernel: KernelId,
    pub shapes: Vec<Shape>,
    pub chosen: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An H100's triad: 132 SMs, six blocks of 256 each (34 registers a
    /// thread), 2^28 doubles: one wave of 792 blocks, or 131072 blocks
    /// that cover the array; a small array is one partial wave.
    #[test]
    fn shapes_are_one_whole_wave_or_a_grid_that_covers_the_array() {
        let f = Function(0);
        let s = shapes(f, 1 << 28, 6, 132, (256, 8), "");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].grid, 792);
        assert!(
            s[0].label.contains("6 per multiprocessor"),
            "{}",
            s[0].label
        );
        assert_eq!(s[1].grid, 131_072);
        assert!(s[1].label.contains("165.5 waves"), "{}", s[1].label);
        let small = shapes(f, 100_000, 6, 132, (256, 8), "");
        assert_eq!(small.len(), 1);
        assert_eq!(small[0].grid, 49);
        // Occupancy that says none still launches one block per SM.
        assert_eq!(shapes(f, 1 << 20, 0, 4, (256, 8), "")[0].grid, 4);
        // Another build's shapes say which build they are; one access a
        // thread makes four times the blocks.
        let other = shapes(
            Function(1),
            1 << 28,
            8,
            132,
            (256, 2),
            ", 1 access a thread",
        );
        assert_eq!(other[0].grid, 1056);
        assert_eq!(other[1].grid, 524_288);
        assert!(
            other[0].label.contains("256, 1 access a thread (one wave"),
            "{}",
            other[0].label
        );
    }
}
