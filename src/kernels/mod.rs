//! The measured kernels: a table that says what each one reads, writes and
//! counts, and their implementations per instruction set and store mode.
//!
//! The runner, the validator and the reports all read [`KERNELS`]; nothing
//! else in the program knows that a Triad counts 24 bytes per element.
//! Implementations are picked once ([`KernelFns::select`]) and called through
//! plain function pointers, one call per thread per repetition.

/// `table(nt)` for an ISA module whose functions are named after the
/// kernels (`copy::<NT>`, ..., `read`, `dot`).
macro_rules! kernel_table {
    ($isa:expr) => {
        pub(super) fn table(nt: bool) -> KernelFns {
            if nt {
                table_for::<true>()
            } else {
                table_for::<false>()
            }
        }

        fn table_for<const NT: bool>() -> KernelFns {
            KernelFns {
                isa: $isa,
                stores: if NT {
                    StoreMode::Nt
                } else {
                    StoreMode::Regular
                },
                copy: copy::<NT>,
                scale: scale::<NT>,
                add: add::<NT>,
                triad: triad::<NT>,
                read,
                write: write::<NT>,
                update: update::<NT>,
                daxpy: daxpy::<NT>,
                striad: striad::<NT>,
                sdaxpy: sdaxpy::<NT>,
                nstream: nstream::<NT>,
                dot,
            }
        }
    };
}

/// The safe kernel functions over an ISA module's `*_impl` functions
/// (raw pointers, the ISA's target feature). They are reachable only
/// through the module's `table`, which its parent builds after checking
/// the CPU has the feature; each checks the slices' lengths are equal.
macro_rules! checked_kernels {
    () => {
        fn copy<const NT: bool>(d: &mut [f64], a: &[f64]) {
            assert_eq!(d.len(), a.len());
            // SAFETY: feature checked before this table was built; lengths equal.
            unsafe { copy_impl::<NT>(d.as_mut_ptr(), a.as_ptr(), d.len()) }
        }

        fn scale<const NT: bool>(d: &mut [f64], c: &[f64], q: f64) {
            assert_eq!(d.len(), c.len());
            // SAFETY: feature checked before this table was built; lengths equal.
            unsafe { scale_impl::<NT>(d.as_mut_ptr(), c.as_ptr(), d.len(), q) }
        }

        fn add<const NT: bool>(d: &mut [f64], x: &[f64], y: &[f64]) {
            assert!(d.len() == x.len() && d.len() == y.len());
            // SAFETY: feature checked before this table was built; lengths equal.
            unsafe { add_impl::<NT>(d.as_mut_ptr(), x.as_ptr(), y.as_ptr(), d.len()) }
        }

        fn triad<const NT: bool>(d: &mut [f64], x: &[f64], y: &[f64], q: f64) {
            assert!(d.len() == x.len() && d.len() == y.len());
            // SAFETY: feature checked before this table was built; lengths equal.
            unsafe { triad_impl::<NT>(d.as_mut_ptr(), x.as_ptr(), y.as_ptr(), d.len(), q) }
        }

        fn read(a: &[f64]) -> f64 {
            // SAFETY: feature checked before this table was built.
            unsafe { read_impl(a.as_ptr(), a.len()) }
        }

        fn write<const NT: bool>(d: &mut [f64], value: f64) {
            // SAFETY: feature checked before this table was built.
            unsafe { write_impl::<NT>(d.as_mut_ptr(), d.len(), value) }
        }

        fn update<const NT: bool>(d: &mut [f64], q: f64) {
            // SAFETY: feature checked before this table was built.
            unsafe { update_impl::<NT>(d.as_mut_ptr(), d.len(), q) }
        }

        fn daxpy<const NT: bool>(d: &mut [f64], x: &[f64], q: f64) {
            assert_eq!(d.len(), x.len());
            // SAFETY: feature checked before this table was built; lengths equal.
            unsafe { daxpy_impl::<NT>(d.as_mut_ptr(), x.as_ptr(), d.len(), q) }
        }

        fn striad<const NT: bool>(d: &mut [f64], x: &[f64], y: &[f64], z: &[f64]) {
            assert!(d.len() == x.len() && d.len() == y.len() && d.len() == z.len());
            // SAFETY: feature checked before this table was built; lengths equal.
            unsafe {
                striad_impl::<NT>(d.as_mut_ptr(), x.as_ptr(), y.as_ptr(), z.as_ptr(), d.len())
            }
        }

        fn sdaxpy<const NT: bool>(d: &mut [f64], x: &[f64], y: &[f64]) {
            assert!(d.len() == x.len() && d.len() == y.len());
            // SAFETY: feature checked before this table was built; lengths equal.
            unsafe { sdaxpy_impl::<NT>(d.as_mut_ptr(), x.as_ptr(), y.as_ptr(), d.len()) }
        }

        fn nstream<const NT: bool>(d: &mut [f64], x: &[f64], y: &[f64], q: f64) {
            assert!(d.len() == x.len() && d.len() == y.len());
            // SAFETY: feature checked before this table was built; lengths equal.
            unsafe { nstream_impl::<NT>(d.as_mut_ptr(), x.as_ptr(), y.as_ptr(), d.len(), q) }
        }

        fn dot(x: &[f64], y: &[f64]) -> f64 {
            assert_eq!(x.len(), y.len());
            // SAFETY: feature checked before this table was built; lengths equal.
            unsafe { dot_impl(x.as_ptr(), y.as_ptr(), x.len()) }
        }
    };
}

#[cfg(target_arch = "aarch64")]
mod aarch64;
pub mod chase;
mod stores;
pub use stores::StoresRequest;
mod portable;
#[cfg(target_arch = "x86_64")]
mod x86;

use serde::{Deserialize, Serialize};
use std::fmt;

/// STREAM's scalar q.
pub const SCALAR: f64 = 3.0;
/// The value the `write` kernel stores.
pub const WRITE_VALUE: f64 = SCALAR;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelId {
    Copy,
    Scale,
    Add,
    Triad,
    Read,
    Write,
    Init,
    Update,
    Daxpy,
    Striad,
    Sdaxpy,
    Nstream,
    Dot,
    H2d,
    D2h,
    Bidir,
}

/// STREAM's three arrays, `d` for the kernels that read three, and the two
/// host buffers of a device's transfers: `h`, sent to the device, and `r`,
/// received from it. The CPU team maps only the first four.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ArrayId {
    A,
    B,
    C,
    D,
    H,
    R,
}

/// How many arrays there can be.
pub const ARRAYS: usize = 6;

impl ArrayId {
    pub const ALL: [ArrayId; ARRAYS] = [
        ArrayId::A,
        ArrayId::B,
        ArrayId::C,
        ArrayId::D,
        ArrayId::H,
        ArrayId::R,
    ];
    /// The arrays of host memory's kernels, the CPU team's.
    pub const HOST_KERNELS: [ArrayId; 4] = [ArrayId::A, ArrayId::B, ArrayId::C, ArrayId::D];
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn name(self) -> &'static str {
        ["a", "b", "c", "d", "h", "r"][self.index()]
    }
    /// Whether the array is a host buffer of a device's transfers: in host
    /// memory, placed by the memory policy, whoever holds the others.
    pub fn host_buffer(self) -> bool {
        matches!(self, ArrayId::H | ArrayId::R)
    }
    pub fn parse(name: &str) -> Option<ArrayId> {
        ArrayId::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// What a kernel's bytes cross: memory, or the link between the host and
/// a device (one way, or both at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    Memory,
    HostLink { both_ways: bool },
}

/// One element of every array (by index: a, b, c, d, h, r), as a kernel's
/// recurrence advances it: every element of an array holds the same value.
pub type Element = [f64; ARRAYS];

/// What a kernel does, as data.
#[derive(Debug, Clone, Copy)]
pub struct KernelSpec {
    pub id: KernelId,
    /// Lower-case name used on the command line and in JSON.
    pub name: &'static str,
    /// Row label in the STREAM table (`Copy:`).
    pub label: &'static str,
    /// The loop, as STREAM writes it.
    pub formula: &'static str,
    pub reads: &'static [ArrayId],
    pub writes: &'static [ArrayId],
    pub flops_per_element: u32,
    /// What its bytes cross.
    pub path: Path,
    /// Its recurrence on one element: what it writes from what it reads,
    /// and a reduction's term (read's `a`, dot's `a·b`). Validation, the
    /// portable loops and a device's kernels derive from it.
    pub step: fn(&mut Element) -> Option<f64>,
}

impl KernelSpec {
    /// Bytes per element as STREAM counts them: each array read or written once.
    /// A transfer counts each element once per way, as it crosses the link.
    pub fn bytes_counted(&self) -> u64 {
        match self.path {
            Path::Memory => 8 * (self.reads.len() + self.writes.len()) as u64,
            Path::HostLink { both_ways } => 8 * (1 + u64::from(both_ways)),
        }
    }

    /// Bytes per element that really cross the memory bus: with ordinary
    /// stores every written line is first read (write-allocate), unless the
    /// kernel reads that array anyway (update, daxpy: the line is already in).
    pub fn bytes_moved(&self, stores: StoreMode) -> u64 {
        let allocated = (self.writes.iter()).filter(|w| !self.reads.contains(w));
        let allocate = match (stores, self.path) {
            (StoreMode::Regular, Path::Memory) => 8 * allocated.count() as u64,
            _ => 0,
        };
        self.bytes_counted() + allocate
    }

    /// Arrays this kernel touches.
    pub fn arrays(&self) -> impl Iterator<Item = ArrayId> + '_ {
        self.reads.iter().chain(self.writes).copied()
    }

    /// The array it writes last, where validation would find a wrong
    /// element of it.
    pub fn written(&self) -> Option<ArrayId> {
        self.writes.last().copied()
    }
}

/// STREAM's four, read and write, then TheBandwidthBenchmark's and
/// BabelStream's; a repetition runs the selected ones in the order given.
pub const KERNELS: [KernelSpec; 16] = [
    KernelSpec {
        id: KernelId::Copy,
        name: "copy",
        label: "Copy:",
        formula: "c[i] = a[i]",
        reads: &[ArrayId::A],
        writes: &[ArrayId::C],
        flops_per_element: 0,
        path: Path::Memory,
        step: |e| {
            e[C] = e[A];
            None
        },
    },
    KernelSpec {
        id: KernelId::Scale,
        name: "scale",
        label: "Scale:",
        formula: "b[i] = q*c[i]",
        reads: &[ArrayId::C],
        writes: &[ArrayId::B],
        flops_per_element: 1,
        path: Path::Memory,
        step: |e| {
            e[B] = SCALAR * e[C];
            None
        },
    },
    KernelSpec {
        id: KernelId::Add,
        name: "add",
        label: "Add:",
        formula: "c[i] = a[i] + b[i]",
        reads: &[ArrayId::A, ArrayId::B],
        writes: &[ArrayId::C],
        flops_per_element: 1,
        path: Path::Memory,
        step: |e| {
            e[C] = e[A] + e[B];
            None
        },
    },
    KernelSpec {
        id: KernelId::Triad,
        name: "triad",
        label: "Triad:",
        formula: "a[i] = b[i] + q*c[i]",
        reads: &[ArrayId::B, ArrayId::C],
        writes: &[ArrayId::A],
        flops_per_element: 2,
        path: Path::Memory,
        step: |e| {
            e[A] = e[B] + SCALAR * e[C];
            None
        },
    },
    KernelSpec {
        id: KernelId::Read,
        name: "read",
        label: "Read:",
        formula: "sum += a[i]",
        reads: &[ArrayId::A],
        writes: &[],
        flops_per_element: 1,
        path: Path::Memory,
        step: |e| Some(e[A]),
    },
    KernelSpec {
        id: KernelId::Write,
        name: "write",
        label: "Write:",
        formula: "c[i] = q",
        reads: &[],
        writes: &[ArrayId::C],
        flops_per_element: 0,
        path: Path::Memory,
        step: |e| {
            e[C] = WRITE_VALUE;
            None
        },
    },
    KernelSpec {
        id: KernelId::Init,
        name: "init",
        label: "Init:",
        formula: "a[i] = q",
        reads: &[],
        writes: &[ArrayId::A],
        flops_per_element: 0,
        path: Path::Memory,
        step: |e| {
            e[A] = WRITE_VALUE;
            None
        },
    },
    KernelSpec {
        id: KernelId::Update,
        name: "update",
        label: "Update:",
        formula: "a[i] = q*a[i]",
        reads: &[ArrayId::A],
        writes: &[ArrayId::A],
        flops_per_element: 1,
        path: Path::Memory,
        step: |e| {
            e[A] *= SCALAR;
            None
        },
    },
    KernelSpec {
        id: KernelId::Daxpy,
        name: "daxpy",
        label: "Daxpy:",
        formula: "a[i] = a[i] + q*b[i]",
        reads: &[ArrayId::A, ArrayId::B],
        writes: &[ArrayId::A],
        flops_per_element: 2,
        path: Path::Memory,
        step: |e| {
            e[A] += SCALAR * e[B];
            None
        },
    },
    KernelSpec {
        id: KernelId::Striad,
        name: "striad",
        label: "STriad:",
        formula: "a[i] = b[i] + c[i]*d[i]",
        reads: &[ArrayId::B, ArrayId::C, ArrayId::D],
        writes: &[ArrayId::A],
        flops_per_element: 2,
        path: Path::Memory,
        step: |e| {
            e[A] = e[B] + e[C] * e[D];
            None
        },
    },
    KernelSpec {
        id: KernelId::Sdaxpy,
        name: "sdaxpy",
        label: "SDaxpy:",
        formula: "a[i] = a[i] + b[i]*c[i]",
        reads: &[ArrayId::A, ArrayId::B, ArrayId::C],
        writes: &[ArrayId::A],
        flops_per_element: 2,
        path: Path::Memory,
        step: |e| {
            e[A] += e[B] * e[C];
            None
        },
    },
    KernelSpec {
        id: KernelId::Nstream,
        name: "nstream",
        label: "Nstream:",
        formula: "a[i] += b[i] + q*c[i]",
        reads: &[ArrayId::A, ArrayId::B, ArrayId::C],
        writes: &[ArrayId::A],
        flops_per_element: 3,
        path: Path::Memory,
        step: |e| {
            e[A] += e[B] + SCALAR * e[C];
            None
        },
    },
    KernelSpec {
        id: KernelId::Dot,
        name: "dot",
        label: "Dot:",
        formula: "sum += a[i]*b[i]",
        reads: &[ArrayId::A, ArrayId::B],
        writes: &[],
        flops_per_element: 2,
        path: Path::Memory,
        step: |e| Some(e[A] * e[B]),
    },
    KernelSpec {
        id: KernelId::H2d,
        name: "h2d",
        label: "H2D:",
        formula: "a[i] = h[i] (host to device)",
        reads: &[ArrayId::H],
        writes: &[ArrayId::A],
        flops_per_element: 0,
        path: Path::HostLink { both_ways: false },
        step: |e| {
            e[A] = e[H];
            None
        },
    },
    KernelSpec {
        id: KernelId::D2h,
        name: "d2h",
        label: "D2H:",
        formula: "r[i] = b[i] (device to host)",
        reads: &[ArrayId::B],
        writes: &[ArrayId::R],
        flops_per_element: 0,
        path: Path::HostLink { both_ways: false },
        step: |e| {
            e[R] = e[B];
            None
        },
    },
    KernelSpec {
        id: KernelId::Bidir,
        name: "bidir",
        label: "Bidir:",
        formula: "a[i] = h[i] and r[i] = b[i] at once",
        reads: &[ArrayId::H, ArrayId::B],
        writes: &[ArrayId::A, ArrayId::R],
        flops_per_element: 0,
        path: Path::HostLink { both_ways: true },
        step: |e| {
            e[A] = e[H];
            e[R] = e[B];
            None
        },
    },
];

/// Element indices for the recurrences.
const A: usize = ArrayId::A as usize;
const B: usize = ArrayId::B as usize;
const C: usize = ArrayId::C as usize;
const D: usize = ArrayId::D as usize;
const H: usize = ArrayId::H as usize;
const R: usize = ArrayId::R as usize;

/// Named kernel selections for `--kernels`.
pub const KERNEL_GROUPS: [(&str, &[KernelId]); 5] = [
    ("stream", &STREAM_KERNELS),
    // TheBandwidthBenchmark's set, in its order (its `sum` is our `read`).
    (
        "tbb",
        &[
            KernelId::Init,
            KernelId::Read,
            KernelId::Copy,
            KernelId::Update,
            KernelId::Triad,
            KernelId::Daxpy,
            KernelId::Striad,
            KernelId::Sdaxpy,
        ],
    ),
    // BabelStream's five (its `mul` is STREAM's scale).
    (
        "babelstream",
        &[
            KernelId::Copy,
            KernelId::Scale,
            KernelId::Add,
            KernelId::Triad,
            KernelId::Dot,
            KernelId::Nstream,
        ],
    ),
    (
        "all",
        &[
            KernelId::Copy,
            KernelId::Scale,
            KernelId::Add,
            KernelId::Triad,
            KernelId::Read,
            KernelId::Write,
            KernelId::Init,
            KernelId::Update,
            KernelId::Daxpy,
            KernelId::Striad,
            KernelId::Sdaxpy,
            KernelId::Nstream,
            KernelId::Dot,
        ],
    ),
    // A device's host link, each way and both at once.
    (
        "transfers",
        &[KernelId::H2d, KernelId::D2h, KernelId::Bidir],
    ),
];

/// One `--kernels` entry: a kernel's name or a group's.
pub fn parse_selection(name: &str) -> Option<Vec<KernelId>> {
    let name = name.trim();
    if let Some((_, group)) = KERNEL_GROUPS
        .iter()
        .find(|(g, _)| g.eq_ignore_ascii_case(name))
    {
        return Some(group.to_vec());
    }
    KernelId::parse(name).map(|k| vec![k])
}

/// The names `--kernels` accepts, for error messages and help.
pub fn selection_names() -> String {
    let kernels = KERNELS.iter().map(|k| k.name);
    let groups = KERNEL_GROUPS.iter().map(|(g, _)| *g);
    kernels.chain(groups).collect::<Vec<_>>().join(", ")
}

/// The arrays a set of kernels touches; `a` always (STREAM's timing test
/// writes it).
pub fn arrays_used(kernels: &[KernelId]) -> Vec<ArrayId> {
    ArrayId::ALL
        .into_iter()
        .filter(|&id| {
            id == ArrayId::A || kernels.iter().any(|k| k.spec().arrays().any(|a| a == id))
        })
        .collect()
}

/// The kernels of memory, the CPU team's: every one but a device's
/// transfers.
pub fn memory_kernels() -> impl Iterator<Item = KernelId> {
    (KERNELS.iter())
        .filter(|k| k.path == Path::Memory)
        .map(|k| k.id)
}

/// STREAM's default selection.
pub const STREAM_KERNELS: [KernelId; 4] = [
    KernelId::Copy,
    KernelId::Scale,
    KernelId::Add,
    KernelId::Triad,
];

impl KernelId {
    pub fn spec(self) -> &'static KernelSpec {
        &KERNELS[self as usize]
    }

    pub fn parse(name: &str) -> Option<KernelId> {
        KERNELS
            .iter()
            .find(|k| k.name.eq_ignore_ascii_case(name.trim()))
            .map(|k| k.id)
    }
}

impl fmt::Display for KernelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec().name)
    }
}

/// Instruction-set level of the kernel implementations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isa {
    Scalar,
    Sse2,
    Avx2,
    Avx512,
    Neon,
    Sve,
}

impl Isa {
    /// Widest first: `best` picks the first one the CPU has.
    pub const ALL: [Isa; 6] = [
        Isa::Avx512,
        Isa::Avx2,
        Isa::Sse2,
        Isa::Sve,
        Isa::Neon,
        Isa::Scalar,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Sse2 => "sse2",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
            Isa::Sve => "sve",
        }
    }

    pub fn parse(text: &str) -> Option<Isa> {
        Isa::ALL.into_iter().find(|i| i.name() == text)
    }

    /// Whether this CPU can run this level (avx2 means AVX2 and FMA).
    pub fn supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            _ => x86::supported(self),
            #[cfg(target_arch = "aarch64")]
            _ => aarch64::supported(self),
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            _ => false,
        }
    }

    /// The widest supported level.
    pub fn best() -> Isa {
        Isa::ALL
            .into_iter()
            .find(|i| i.supported())
            .unwrap_or(Isa::Scalar)
    }

    /// f64 lanes per vector; for SVE, this CPU's vector length (1 where
    /// the CPU has no SVE).
    pub fn lanes(self) -> usize {
        match self {
            Isa::Scalar => 1,
            Isa::Sse2 | Isa::Neon => 2,
            Isa::Avx2 => 4,
            Isa::Avx512 => 8,
            #[cfg(target_arch = "aarch64")]
            Isa::Sve if self.supported() => aarch64::sve_lanes(),
            Isa::Sve => 1,
        }
    }

    /// Non-temporal stores exist in every explicit SIMD variant (x86
    /// `movntpd`, Arm `stnp` and `stnt1d`), not in the portable loops.
    pub fn has_streaming_stores(self) -> bool {
        self != Isa::Scalar
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the kernels store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreMode {
    /// Ordinary stores: each written cache line is read first (write-allocate).
    Regular,
    /// Non-temporal (streaming) stores that bypass the caches.
    Nt,
}

impl StoreMode {
    pub fn name(self) -> &'static str {
        match self {
            StoreMode::Regular => "regular",
            StoreMode::Nt => "nt",
        }
    }
}

impl fmt::Display for StoreMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel writing one array from three others.
pub type ThreeInputs = fn(&mut [f64], &[f64], &[f64], &[f64]);

/// One implementation of every kernel for one ISA and store mode.
///
/// Slices passed to one call have equal lengths (checked once per call).
#[derive(Clone, Copy, Debug)]
pub struct KernelFns {
    pub isa: Isa,
    pub stores: StoreMode,
    pub copy: fn(&mut [f64], &[f64]),
    pub scale: fn(&mut [f64], &[f64], f64),
    pub add: fn(&mut [f64], &[f64], &[f64]),
    pub triad: fn(&mut [f64], &[f64], &[f64], f64),
    pub read: fn(&[f64]) -> f64,
    pub write: fn(&mut [f64], f64),
    /// `a = q·a`, in place.
    pub update: fn(&mut [f64], f64),
    /// `a = a + q·x`.
    pub daxpy: fn(&mut [f64], &[f64], f64),
    /// `a = x + y·z`.
    pub striad: ThreeInputs,
    /// `a = a + x·y`.
    pub sdaxpy: fn(&mut [f64], &[f64], &[f64]),
    /// `a = a + (x + q·y)`.
    pub nstream: fn(&mut [f64], &[f64], &[f64], f64),
    /// `sum of x·y`.
    pub dot: fn(&[f64], &[f64]) -> f64,
}

impl KernelFns {
    /// The implementation for `isa` and `stores`, or why there is none.
    pub fn select(isa: Isa, stores: StoreMode) -> crate::error::Result<KernelFns> {
        use crate::error::{Error, Input};
        let unavailable = |why: String| Error::input(Input::Isa, isa.name(), why);
        if !isa.supported() {
            return Err(unavailable(format!(
                "this CPU does not support it (best available: {})",
                Isa::best()
            )));
        }
        if stores == StoreMode::Nt && !isa.has_streaming_stores() {
            return Err(Error::input(
                Input::Stores,
                "nt",
                format!(
                    "needs a SIMD ISA (avx512, avx2, sse2; sve, neon); the {isa} kernels have no streaming stores"
                ),
            ));
        }
        let nt = stores == StoreMode::Nt;
        match isa {
            Isa::Scalar => Ok(portable::table()),
            #[cfg(target_arch = "x86_64")]
            _ => x86::table(isa, nt).ok_or_else(|| unavailable("not available".into())),
            #[cfg(target_arch = "aarch64")]
            _ => aarch64::table(isa, nt).ok_or_else(|| unavailable("not available".into())),
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            _ => {
                let _ = nt;
                Err(unavailable("not available on this architecture".into()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_follow_stream() {
        let counted: Vec<u64> = KERNELS.iter().map(|k| k.bytes_counted()).collect();
        // STREAM's four, read, write; then TheBandwidthBenchmark's and
        // BabelStream's counts (init 1 word, update 2, daxpy 3, striad,
        // sdaxpy and nstream 4, dot 2).
        assert_eq!(
            counted,
            vec![16, 16, 24, 24, 8, 8, 8, 16, 24, 32, 32, 32, 16, 8, 8, 16]
        );
        // A transfer moves no cache line it allocates: what crosses the link.
        assert_eq!(KernelId::H2d.spec().bytes_moved(StoreMode::Regular), 8);
        assert_eq!(KernelId::Copy.spec().bytes_moved(StoreMode::Regular), 24);
        assert_eq!(KernelId::Triad.spec().bytes_moved(StoreMode::Regular), 32);
        assert_eq!(KernelId::Triad.spec().bytes_moved(StoreMode::Nt), 24);
        assert_eq!(KernelId::Read.spec().bytes_moved(StoreMode::Regular), 8);
        assert_eq!(KernelId::Striad.spec().bytes_moved(StoreMode::Regular), 40);
        // In-place kernels read the line they write: no allocate.
        for k in [KernelId::Update, KernelId::Daxpy, KernelId::Nstream] {
            assert_eq!(
                k.spec().bytes_moved(StoreMode::Regular),
                k.spec().bytes_counted()
            );
        }
    }

    /// A kernel's recurrence reads only what its spec says it reads and
    /// writes only what it says it writes: the arrays a plan maps, the
    /// bytes it counts and what validation expects all follow from one
    /// table. A transfer's is the copy engine's: each array it reads into
    /// the one it writes, and it crosses the host link.
    #[test]
    fn each_recurrence_touches_what_its_spec_names() {
        let start: Element = [1.5, 2.5, 3.5, 4.5, 5.5, 6.5];
        for spec in &KERNELS {
            let mut e = start;
            let term = (spec.step)(&mut e);
            for id in ArrayId::ALL {
                let i = id.index();
                if !spec.writes.contains(&id) {
                    assert_eq!(e[i], start[i], "{} wrote {}", spec.name, id.name());
                }
                // Another value in an array it does not read changes nothing.
                let mut other = start;
                other[i] = -100.0;
                let mut changed = other;
                let other_term = (spec.step)(&mut changed);
                if !spec.reads.contains(&id) {
                    let written =
                        |v: &Element| spec.writes.iter().map(|w| v[w.index()]).collect::<Vec<_>>();
                    assert_eq!(
                        written(&changed),
                        written(&e),
                        "{} read {}",
                        spec.name,
                        id.name()
                    );
                    assert_eq!(other_term, term, "{} summed {}", spec.name, id.name());
                }
            }
            assert_eq!(term.is_some(), spec.writes.is_empty(), "{}", spec.name);
            if let Path::HostLink { both_ways } = spec.path {
                assert_eq!(spec.reads.len(), 1 + usize::from(both_ways));
                for (from, to) in spec.reads.iter().zip(spec.writes) {
                    assert_eq!(e[to.index()], start[from.index()], "{}", spec.name);
                    assert!(
                        from.host_buffer() != to.host_buffer(),
                        "{} crosses",
                        spec.name
                    );
                }
                assert_eq!(spec.bytes_counted(), 8 * spec.reads.len() as u64);
            }
        }
    }

    #[test]
    fn table_order_matches_ids() {
        for (i, k) in KERNELS.iter().enumerate() {
            assert_eq!(k.id as usize, i);
            assert_eq!(KernelId::parse(k.name), Some(k.id));
        }
        assert_eq!(KernelId::parse("TRIAD"), Some(KernelId::Triad));
        assert_eq!(KernelId::parse("saxpy"), None);
    }

    #[test]
    fn groups_name_their_kernels() {
        assert_eq!(parse_selection("stream"), Some(STREAM_KERNELS.to_vec()));
        assert_eq!(parse_selection(" Dot "), Some(vec![KernelId::Dot]));
        let all = parse_selection("all").unwrap();
        assert_eq!(all, memory_kernels().collect::<Vec<_>>());
        assert_eq!(
            parse_selection("transfers").unwrap(),
            [KernelId::H2d, KernelId::D2h, KernelId::Bidir]
        );
        let tbb = parse_selection("tbb").unwrap();
        assert_eq!(tbb.len(), 8);
        assert!(tbb.contains(&KernelId::Striad) && !tbb.contains(&KernelId::Dot));
        assert_eq!(parse_selection("nope"), None);
        assert!(selection_names().ends_with("babelstream, all, transfers"));
        assert_eq!(
            arrays_used(&[KernelId::Striad]),
            ArrayId::ALL[..4].to_vec(),
            "striad needs a 4th array"
        );
        assert_eq!(
            arrays_used(&[KernelId::H2d]),
            [ArrayId::A, ArrayId::H],
            "h2d sends h into a"
        );
    }

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= 1e-12 * want.abs().max(1.0)
    }

    /// Lengths and offsets that exercise the unaligned head, the unrolled
    /// body, one element short of it (63: SVE's eight-vector pass at 512
    /// bits) and the tail.
    const LENGTHS_AND_OFFSETS: [(usize, usize); 7] = [
        (0, 0),
        (1, 0),
        (7, 1),
        (63, 2),
        (64, 0),
        (1000, 3),
        (4099, 5),
    ];

    /// Every supported variant computes what the formulas say.
    #[test]
    fn every_variant_computes_the_formulas() {
        for isa in Isa::ALL.into_iter().filter(|i| i.supported()) {
            for stores in [StoreMode::Regular, StoreMode::Nt] {
                let Ok(f) = KernelFns::select(isa, stores) else {
                    assert_eq!(isa, Isa::Scalar);
                    continue;
                };
                for (len, off) in LENGTHS_AND_OFFSETS {
                    let x: Vec<f64> = (0..len + off).map(|i| i as f64 + 0.5).collect();
                    let y: Vec<f64> = (0..len + off).map(|i| 2.0 * i as f64).collect();
                    let z: Vec<f64> = (0..len + off).map(|i| 1.0 - i as f64).collect();
                    let (x, y, z) = (&x[off..], &y[off..], &z[off..]);
                    let mut d = vec![-1.0; len + off];
                    let d = &mut d[off..];
                    let all = |d: &[f64], want: &dyn Fn(usize) -> f64| {
                        (0..len).all(|i| close(d[i], want(i)))
                    };
                    let at = format!("{isa} {stores} len {len}");
                    (f.copy)(d, x);
                    assert_eq!(d, x, "copy {at}");
                    (f.scale)(d, x, SCALAR);
                    assert!(d.iter().zip(x).all(|(d, x)| *d == SCALAR * x), "scale {at}");
                    (f.add)(d, x, y);
                    assert!(d.iter().zip(x.iter().zip(y)).all(|(d, (x, y))| *d == x + y));
                    (f.triad)(d, x, y, SCALAR);
                    assert!(all(d, &|i| x[i] + SCALAR * y[i]), "triad {at}");
                    (f.write)(d, 7.0);
                    assert!(d.iter().all(|&v| v == 7.0));
                    let expect: f64 = x.iter().sum();
                    assert!(close((f.read)(x), expect), "read {at}");
                    let expect: f64 = x.iter().zip(y).map(|(x, y)| x * y).sum();
                    assert!(close((f.dot)(x, y), expect), "dot {at}");

                    // The in-place kernels, each from a known `d`.
                    d.copy_from_slice(z);
                    (f.update)(d, SCALAR);
                    assert!(
                        d.iter().zip(z).all(|(d, z)| *d == SCALAR * z),
                        "update {at}"
                    );
                    d.copy_from_slice(z);
                    (f.daxpy)(d, x, SCALAR);
                    assert!(all(d, &|i| z[i] + SCALAR * x[i]), "daxpy {at}");
                    (f.striad)(d, x, y, z);
                    assert!(all(d, &|i| x[i] + y[i] * z[i]), "striad {at}");
                    d.copy_from_slice(z);
                    (f.sdaxpy)(d, x, y);
                    assert!(all(d, &|i| z[i] + x[i] * y[i]), "sdaxpy {at}");
                    d.copy_from_slice(z);
                    (f.nstream)(d, x, y, SCALAR);
                    assert!(all(d, &|i| z[i] + x[i] + SCALAR * y[i]), "nstream {at}");
                }
            }
        }
    }

    /// CI runs the kernel tests under qemu-user at several CPUs and says
    /// what dispatch must find: MEMBW_EXPECT_ISA (what `auto` picks) and
    /// MEMBW_EXPECT_SVE_BYTES (the vector length qemu was given).
    #[test]
    fn dispatch_follows_the_cpu() {
        let best = Isa::best();
        assert!(best.supported());
        assert!(KernelFns::select(best, StoreMode::Regular).is_ok());
        if let Ok(want) = std::env::var("MEMBW_EXPECT_ISA") {
            assert_eq!(best.name(), want);
        }
        if let Ok(bytes) = std::env::var("MEMBW_EXPECT_SVE_BYTES") {
            assert!(Isa::Sve.supported(), "SVE expected");
            assert_eq!(Isa::Sve.lanes() * 8, bytes.parse::<usize>().unwrap());
        }
        for isa in Isa::ALL.into_iter().filter(|i| !i.supported()) {
            let e = KernelFns::select(isa, StoreMode::Regular).unwrap_err();
            assert!(e.to_string().contains("does not support"), "{e}");
        }
    }

    #[test]
    fn unsupported_requests_are_refused() {
        let e = KernelFns::select(Isa::Scalar, StoreMode::Nt).unwrap_err();
        assert!(
            matches!(
                &e,
                crate::error::Error::Input {
                    input: crate::error::Input::Stores,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("no streaming stores"), "{e}");
    }
}
