//! How a kernel is launched on a GPU: its builds in the vendor's module
//! (`kernels::gpu_builds`) and, for each, in each block size, the grids
//! worth timing, from the runtime's occupancy.
//! The protocol times every shape while it calibrates and keeps the
//! fastest (issue 52: one wave of the blocks a multiprocessor holds lost
//! to grids that cover the array on an H100 and an H200).

use super::runtime::Function;
use crate::kernels::KernelId;
use crate::kernels::gpu_builds::{Build, Grid, ShapeId};

/// How one kernel is launched: which build of it, in blocks of how
/// many threads, its grid, and what that is, by id and for people.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
    pub function: Function,
    pub grid: u32,
    pub block: u32,
    pub id: ShapeId,
    pub label: String,
}

/// The launch shapes of `build`'s function of a kernel of `elements`
/// elements, in blocks of `block` threads, of which each multiprocessor
/// holds `per_mp` at once: every multiprocessor full, in one whole wave,
/// the blocks striding over the array (a grid the size of what the GPU
/// holds); and a grid that covers the array, one tile per block, as
/// BabelStream's does. The second is left out where it is no larger than
/// the first (one wave covers it).
pub(super) fn shapes(
    function: Function,
    elements: u64,
    per_mp: u32,
    multiprocessors: u32,
    build: &'static Build,
    block: u32,
) -> Vec<Shape> {
    let tiles = elements
        .div_ceil(u64::from(block) * build.elements_per_thread())
        .max(1);
    let per_mp = per_mp.max(1);
    let wave = u64::from(multiprocessors.max(1)) * u64::from(per_mp);
    let resident = wave.min(tiles) as u32;
    let words = build.words();
    let id = |grid| ShapeId { build, block, grid };
    let mut shapes = vec![Shape {
        function,
        grid: resident,
        block,
        id: id(Grid::Wave),
        label: format!(
            "{} of {block}{words} (one wave: {per_mp} per multiprocessor, by occupancy)",
            crate::units::plural(resident as usize, "block")
        ),
    }];
    // A grid past what u32 counts, or past the driver's 2^31 - 1, stays
    // with the whole wave.
    if tiles > wave && tiles < u64::from(i32::MAX as u32) {
        shapes.push(Shape {
            function,
            grid: tiles as u32,
            block,
            id: id(Grid::Cover),
            label: format!(
                "{tiles} blocks of {block}{words} (covering the array: {:.1} waves of {per_mp} per multiprocessor)",
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
    /// Where its one shape is the measured default, the GPU it was
    /// measured on.
    pub measured_on: Option<&'static str>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::gpu_builds::BUILDS;

    /// An H100's triad: 132 SMs, six blocks of 256 each (34 registers a
    /// thread), 2^28 doubles: one wave of 792 blocks, or 131072 blocks
    /// that cover the array; a small array is one partial wave.
    #[test]
    fn shapes_are_one_whole_wave_or_a_grid_that_covers_the_array() {
        let f = Function(0);
        let default = &BUILDS[0];
        let s = shapes(f, 1 << 28, 6, 132, default, 256);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].grid, 792);
        assert_eq!(s[0].id.to_string(), "w16.u4.b256.wave");
        assert!(
            s[0].label.contains("6 per multiprocessor"),
            "{}",
            s[0].label
        );
        assert_eq!(s[1].grid, 131_072);
        assert_eq!(s[1].id.to_string(), "w16.u4.b256.cover");
        assert!(s[1].label.contains("165.5 waves"), "{}", s[1].label);
        let small = shapes(f, 100_000, 6, 132, default, 256);
        assert_eq!(small.len(), 1);
        assert_eq!(small[0].grid, 49);
        // Occupancy that says none still launches one block per SM.
        assert_eq!(shapes(f, 1 << 20, 0, 4, default, 256)[0].grid, 4);
        // Another build's shapes say which build they are; one access a
        // thread makes four times the blocks, and blocks of 1024 a quarter.
        let u1 = Build::by_suffix("_u1").unwrap();
        let other = shapes(Function(1), 1 << 28, 8, 132, u1, 256);
        assert_eq!(other[0].grid, 1056);
        assert_eq!(other[1].grid, 524_288);
        assert!(
            other[0].label.contains("256, 1 access a thread (one wave"),
            "{}",
            other[0].label
        );
        let wide = shapes(Function(1), 1 << 28, 2, 132, u1, 1024);
        assert_eq!(wide[1].grid, 131_072);
        assert_eq!(wide[1].id.to_string(), "w16.u1.b1024.cover");
        // Eight-byte accesses: one element a thread.
        let w8 = Build::by_suffix("_w8").unwrap();
        assert_eq!(shapes(f, 1 << 20, 2, 4, w8, 1024)[1].grid, 1024);
    }
}
