//! The ways a GPU kernel's threads walk the arrays, each compiled as its
//! own function of the vendor's module (`triad_u1_cs`: kernels.cu and
//! kernels.cl build every one), and the launch shapes made of them: a
//! build, a block size and a grid. A shape has a stable id
//! (`w16.u1.cs.b1024.cover`) that `membw tune` prints and `membw run
//! --shape` takes.

use std::fmt;

/// How a build's threads take their accesses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// Each thread's accesses a block's width apart in a tile; tiles
    /// stride over the grid.
    Tiled,
    /// Each thread's 4 accesses a quarter of the array apart, the grid
    /// striding over the first quarter (BabelStream's grid-stride loop,
    /// four streams deep).
    Spread,
}

/// The cache hint of a build's loads and stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheHint {
    None,
    /// Streaming, evict first: NVIDIA's `.cs`, AMD's non-temporal.
    Streaming,
    /// Cached in L2 only: NVIDIA's `.cg` (AMD's GPUs have no such build).
    L2Only,
}

/// One compiled build of every kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Build {
    /// Its functions' names are the kernel's with this appended.
    pub suffix: &'static str,
    /// Bytes one load or store moves: 16 (two doubles) or 8.
    pub access_bytes: u32,
    /// Accesses a thread owns per tile.
    pub accesses: u32,
    pub walk: Walk,
    pub hint: CacheHint,
    /// The most threads a block may have (NVIDIA's `__launch_bounds__`).
    pub bound: u32,
}

const fn build(
    suffix: &'static str,
    access_bytes: u32,
    accesses: u32,
    walk: Walk,
    hint: CacheHint,
    bound: u32,
) -> Build {
    Build {
        suffix,
        access_bytes,
        accesses,
        walk,
        hint,
        bound,
    }
}

/// Every build, in kernels.cu's order; the first is the default (the
/// fills and `update` run it).
pub const BUILDS: [Build; 12] = [
    build("", 16, 4, Walk::Tiled, CacheHint::None, 256),
    build("_spread", 16, 4, Walk::Spread, CacheHint::None, 256),
    build("_u2", 16, 2, Walk::Tiled, CacheHint::None, 256),
    build("_u1", 16, 1, Walk::Tiled, CacheHint::None, 256),
    build("_u8", 16, 8, Walk::Tiled, CacheHint::None, 256),
    build("_w8", 8, 1, Walk::Tiled, CacheHint::None, 1024),
    build("_w8_u4", 8, 4, Walk::Tiled, CacheHint::None, 1024),
    build("_cs", 16, 4, Walk::Tiled, CacheHint::Streaming, 256),
    build("_u1_cs", 16, 1, Walk::Tiled, CacheHint::Streaming, 1024),
    build("_w8_cs", 8, 1, Walk::Tiled, CacheHint::Streaming, 1024),
    build("_cg", 16, 4, Walk::Tiled, CacheHint::L2Only, 256),
    build("_u1_cg", 16, 1, Walk::Tiled, CacheHint::L2Only, 1024),
];

/// The builds a run times where no measured default is known for the GPU
/// (every build is `membw tune`'s): those measured on an H100 and an H200
/// before the others existed, in blocks of 256.
pub const FALLBACK_BUILDS: [&str; 4] = ["", "_spread", "_u2", "_u1"];

/// Threads per block of the default build's launches that are not
/// searched: the helpers (fills, `update`) and the peer copies.
pub const DEFAULT_BLOCK: u32 = 256;

/// The block sizes shapes are made of, each where the build allows it.
pub const BLOCKS: [u32; 2] = [256, 1024];

impl Build {
    /// The build named by `suffix`.
    pub fn by_suffix(suffix: &str) -> Option<&'static Build> {
        BUILDS.iter().find(|b| b.suffix == suffix)
    }

    /// Elements one thread moves per tile.
    pub fn elements_per_thread(&self) -> u64 {
        u64::from(self.accesses * self.access_bytes / 8)
    }

    /// `w16.u4`, `w16.spread`, `w8.u1.cs`: the build's part of a shape id.
    pub fn id(&self) -> String {
        let walk = match self.walk {
            Walk::Tiled => format!("u{}", self.accesses),
            Walk::Spread => "spread".into(),
        };
        let hint = match self.hint {
            CacheHint::None => "",
            CacheHint::Streaming => ".cs",
            CacheHint::L2Only => ".cg",
        };
        format!("w{}.{walk}{hint}", self.access_bytes)
    }

    /// What a shape's label says of the build: nothing for the default
    /// (4 accesses of 16 bytes a thread), else how it differs.
    pub fn words(&self) -> String {
        let mut words = String::new();
        match (self.walk, self.access_bytes, self.accesses) {
            (Walk::Spread, ..) => words.push_str(", accesses a quarter apart"),
            (Walk::Tiled, 16, 4) => {}
            (Walk::Tiled, 16, n) => words.push_str(&format!(", {} a thread", accesses(n))),
            (Walk::Tiled, bytes, n) => {
                words.push_str(&format!(", {} of {bytes} B a thread", accesses(n)));
            }
        }
        match self.hint {
            CacheHint::None => {}
            CacheHint::Streaming => words.push_str(", streaming cache hint"),
            CacheHint::L2Only => words.push_str(", L2-only cache hint"),
        }
        words
    }
}

fn accesses(n: u32) -> String {
    if n == 1 {
        "1 access".into()
    } else {
        format!("{n} accesses")
    }
}

/// How a shape's grid is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// Every multiprocessor full, in one whole wave, the blocks striding
    /// over the array.
    Wave,
    /// One tile per block, covering the array (BabelStream's).
    Cover,
}

/// A launch shape by what it is, without a device: its id's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeId {
    pub build: &'static Build,
    pub block: u32,
    pub grid: Grid,
}

impl fmt::Display for ShapeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grid = match self.grid {
            Grid::Wave => "wave",
            Grid::Cover => "cover",
        };
        write!(f, "{}.b{}.{grid}", self.build.id(), self.block)
    }
}

/// Why a shape id does not name a shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadShape(pub String);

impl fmt::Display for BadShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for ShapeId {
    type Err = BadShape;

    /// `w16.u1.cs.b1024.cover`: a build's id, `b` and a block size of
    /// [`BLOCKS`] it allows, and `wave` or `cover`.
    fn from_str(s: &str) -> Result<ShapeId, BadShape> {
        let bad = |why: &str| {
            BadShape(format!(
                "{s:?} {why}; `membw tune --backend DEVICE` lists every shape id, such as w16.u1.b1024.cover"
            ))
        };
        let (rest, grid) = s.rsplit_once('.').ok_or_else(|| bad("is no shape id"))?;
        let grid = match grid {
            "wave" => Grid::Wave,
            "cover" => Grid::Cover,
            _ => return Err(bad("does not end in .wave or .cover")),
        };
        let (build_id, block) = rest.rsplit_once('.').ok_or_else(|| bad("is no shape id"))?;
        let block: u32 = (block.strip_prefix('b'))
            .and_then(|b| b.parse().ok())
            .filter(|b| BLOCKS.contains(b))
            .ok_or_else(|| bad("has no block size of b256 or b1024 before its grid"))?;
        let build = (BUILDS.iter().find(|b| b.id() == build_id))
            .ok_or_else(|| bad(&format!("names no build ({build_id})")))?;
        if block > build.bound {
            return Err(bad(&format!(
                "asks blocks of {block} of a build that allows {} at most",
                build.bound
            )));
        }
        Ok(ShapeId { build, block, grid })
    }
}

/// Which shapes a device's kernels are timed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShapeChoice {
    /// The GPU's measured default where its architecture has one, else
    /// the fallback builds, each in each grid (the faster kept).
    #[default]
    Default,
    /// Every build in every block size and grid, each validated (`membw
    /// tune`).
    Every,
    /// This one, for every kernel.
    One(ShapeId),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_build_has_a_distinct_id_that_parses_back_in_each_block_it_allows() {
        let mut ids = std::collections::HashSet::new();
        for build in &BUILDS {
            assert!(ids.insert(build.id()), "{} twice", build.id());
            for block in BLOCKS.into_iter().filter(|b| *b <= build.bound) {
                for grid in [Grid::Wave, Grid::Cover] {
                    let shape = ShapeId { build, block, grid };
                    assert_eq!(shape.to_string().parse::<ShapeId>(), Ok(shape));
                }
            }
        }
        assert_eq!(BUILDS[0].id(), "w16.u4");
        assert_eq!(Build::by_suffix("_w8_cs").unwrap().id(), "w8.u1.cs");
        assert_eq!(Build::by_suffix("_spread").unwrap().id(), "w16.spread");
        for suffix in FALLBACK_BUILDS {
            assert!(Build::by_suffix(suffix).is_some());
        }
    }

    #[test]
    fn a_bad_shape_id_says_which_part_is_wrong() {
        let why = |s: &str| s.parse::<ShapeId>().unwrap_err().0;
        assert!(why("w16.u1.b256").contains("does not end in .wave or .cover"));
        assert!(why("w16.u1.b300.wave").contains("block size"));
        assert!(why("w16.u3.b256.wave").contains("names no build (w16.u3)"));
        assert!(why("w16.u4.b1024.cover").contains("allows 256 at most"));
        assert!(why("cover").contains("is no shape id"));
    }

    #[test]
    fn a_build_says_how_it_differs_from_the_default() {
        assert_eq!(BUILDS[0].words(), "");
        assert_eq!(
            Build::by_suffix("_u1").unwrap().words(),
            ", 1 access a thread"
        );
        assert_eq!(
            Build::by_suffix("_w8_u4").unwrap().words(),
            ", 4 accesses of 8 B a thread"
        );
        assert_eq!(
            Build::by_suffix("_u1_cs").unwrap().words(),
            ", 1 access a thread, streaming cache hint"
        );
        assert_eq!(Build::by_suffix("_w8").unwrap().elements_per_thread(), 1);
        assert_eq!(Build::by_suffix("_u8").unwrap().elements_per_thread(), 16);
    }

    /// How many times each element is written by `build` in blocks of
    /// `block` over `grid` blocks: kernels.cu's and kernels.cl's loops,
    /// written again here (TILED, SPREAD), so that every build's walk is
    /// checked at lengths no block, tile or access width divides, where no
    /// GPU runs them.
    fn writes(build: &Build, block: u64, grid: u64, n: u64) -> Vec<u8> {
        let mut hits = vec![0u8; n as usize];
        let w = u64::from(build.access_bytes / 8);
        let mut mark = |v: u64, width: u64| {
            for e in v * width..(v + 1) * width {
                hits[e as usize] += 1;
            }
        };
        for b in 0..grid {
            for t in 0..block {
                match build.walk {
                    Walk::Tiled => {
                        let un = u64::from(build.accesses);
                        let count = n / w;
                        let (stride, last) = (grid * block * un, (un - 1) * block);
                        let mut base = b * block * un + t;
                        while base + last < count {
                            (0..un).for_each(|u| mark(base + u * block, w));
                            base += stride;
                        }
                        (0..un)
                            .map(|u| base + u * block)
                            .filter(|i| *i < count)
                            .for_each(|i| mark(i, w));
                        if w == 2 && n % 2 == 1 && b == 0 && t == 0 {
                            mark(n - 1, 1);
                        }
                    }
                    Walk::Spread => {
                        let (pairs, stride, first) = (n / 2, grid * block, b * block + t);
                        let part = pairs / 4;
                        for t2 in (first..part).step_by(stride as usize) {
                            (0..4).for_each(|u| mark(t2 + u * part, 2));
                        }
                        for i in (4 * part + first..pairs).step_by(stride as usize) {
                            mark(i, 2);
                        }
                        if n % 2 == 1 && first == 0 {
                            mark(n - 1, 1);
                        }
                    }
                }
            }
        }
        hits
    }

    #[test]
    fn every_build_writes_every_element_once_at_lengths_nothing_divides() {
        for build in &BUILDS {
            for block in BLOCKS.into_iter().filter(|b| *b <= build.bound) {
                let block = u64::from(block);
                for n in [1u64, 2, 3, 7, 255, 1021, 4099, 65_537, 100_003] {
                    let tiles = n.div_ceil(block * build.elements_per_thread()).max(1);
                    // A wave of 3 blocks (a small GPU), and the grid that
                    // covers the array.
                    for grid in [3.min(tiles), tiles] {
                        let hits = writes(build, block, grid, n);
                        let wrong = hits.iter().position(|h| *h != 1);
                        assert!(
                            wrong.is_none(),
                            "{} in blocks of {block} over {grid}, n = {n}: element {} written {} times",
                            build.id(),
                            wrong.unwrap(),
                            hits[wrong.unwrap()]
                        );
                    }
                }
            }
        }
    }
}
