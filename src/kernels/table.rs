//! The kernel table: what each kernel reads, writes, counts and computes
//! (its recurrence), the groups `--kernels` takes, and the arrays a set of
//! kernels maps. Validation, the portable loops, a device's kernels and the
//! reports all follow from a row.

use super::StoreMode;
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
    #[serde(rename = "h2d-kernel")]
    H2dKernel,
    #[serde(rename = "d2h-kernel")]
    D2hKernel,
    #[serde(rename = "bidir-kernel")]
    BidirKernel,
    #[serde(rename = "h2d-pageable")]
    H2dPageable,
    #[serde(rename = "d2h-pageable")]
    D2hPageable,
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
/// a device (one way, or both at once), moved by one of the device's
/// movers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    Memory,
    HostLink { both_ways: bool, by: Mover },
}

/// What moves a transfer's bytes across the host link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mover {
    /// The device's copy engine: DMA of whole buffers, as a driver's
    /// memcpy does (nvbandwidth's "CE" copies).
    CopyEngine,
    /// The device's own threads, loading and storing the pinned host buffer
    /// element by element through the link (a kernel on mapped host
    /// memory: nvbandwidth's "SM" copies).
    Kernel,
    /// The copy engine from and to pageable host memory, never registered
    /// with the driver, which stages it through pinned buffers of its own:
    /// what a program's `cudaMemcpy` of `malloc`ed memory gets.
    Pageable,
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
            Path::HostLink { both_ways, .. } => 8 * (1 + u64::from(both_ways)),
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
pub const KERNELS: [KernelSpec; 21] = [
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
        path: Path::HostLink {
            both_ways: false,
            by: Mover::CopyEngine,
        },
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
        path: Path::HostLink {
            both_ways: false,
            by: Mover::CopyEngine,
        },
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
        path: Path::HostLink {
            both_ways: true,
            by: Mover::CopyEngine,
        },
        step: |e| {
            e[A] = e[H];
            e[R] = e[B];
            None
        },
    },
    KernelSpec {
        id: KernelId::H2dKernel,
        name: "h2d-kernel",
        label: "H2D kern:",
        formula: "a[i] = h[i] (host to device, the device's threads)",
        reads: &[ArrayId::H],
        writes: &[ArrayId::A],
        flops_per_element: 0,
        path: Path::HostLink {
            both_ways: false,
            by: Mover::Kernel,
        },
        step: |e| {
            e[A] = e[H];
            None
        },
    },
    KernelSpec {
        id: KernelId::D2hKernel,
        name: "d2h-kernel",
        label: "D2H kern:",
        formula: "r[i] = b[i] (device to host, the device's threads)",
        reads: &[ArrayId::B],
        writes: &[ArrayId::R],
        flops_per_element: 0,
        path: Path::HostLink {
            both_ways: false,
            by: Mover::Kernel,
        },
        step: |e| {
            e[R] = e[B];
            None
        },
    },
    KernelSpec {
        id: KernelId::BidirKernel,
        name: "bidir-kernel",
        label: "Bidir kern:",
        formula: "a[i] = h[i] and r[i] = b[i] (the device's threads)",
        reads: &[ArrayId::H, ArrayId::B],
        writes: &[ArrayId::A, ArrayId::R],
        flops_per_element: 0,
        path: Path::HostLink {
            both_ways: true,
            by: Mover::Kernel,
        },
        step: |e| {
            e[A] = e[H];
            e[R] = e[B];
            None
        },
    },
    KernelSpec {
        id: KernelId::H2dPageable,
        name: "h2d-pageable",
        label: "H2D page:",
        formula: "a[i] = h[i] (host to device, h pageable)",
        reads: &[ArrayId::H],
        writes: &[ArrayId::A],
        flops_per_element: 0,
        path: Path::HostLink {
            both_ways: false,
            by: Mover::Pageable,
        },
        step: |e| {
            e[A] = e[H];
            None
        },
    },
    KernelSpec {
        id: KernelId::D2hPageable,
        name: "d2h-pageable",
        label: "D2H page:",
        formula: "r[i] = b[i] (device to host, r pageable)",
        reads: &[ArrayId::B],
        writes: &[ArrayId::R],
        flops_per_element: 0,
        path: Path::HostLink {
            both_ways: false,
            by: Mover::Pageable,
        },
        step: |e| {
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
    // A device's host link, each way and both at once, by its copy engine
    // and by its own threads.
    (
        "transfers",
        &[
            KernelId::H2d,
            KernelId::D2h,
            KernelId::Bidir,
            KernelId::H2dKernel,
            KernelId::D2hKernel,
            KernelId::BidirKernel,
        ],
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
            vec![
                16, 16, 24, 24, 8, 8, 8, 16, 24, 32, 32, 32, 16, 8, 8, 16, 8, 8, 16, 8, 8
            ]
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
            if let Path::HostLink { both_ways, .. } = spec.path {
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
        // Each way and both at once, by the copy engine and by the device's
        // threads: the same bytes, the same recurrence, another mover.
        let transfers = parse_selection("transfers").unwrap();
        assert_eq!(transfers.len(), 6);
        for pair in transfers.chunks(3).collect::<Vec<_>>().windows(2) {
            for (ce, kernel) in pair[0].iter().zip(pair[1]) {
                let (ce, kernel) = (ce.spec(), kernel.spec());
                assert_eq!((ce.reads, ce.writes), (kernel.reads, kernel.writes));
                assert_eq!(ce.bytes_counted(), kernel.bytes_counted());
                assert!(matches!(
                    ce.path,
                    Path::HostLink {
                        by: Mover::CopyEngine,
                        ..
                    }
                ));
                assert!(matches!(
                    kernel.path,
                    Path::HostLink {
                        by: Mover::Kernel,
                        ..
                    }
                ));
                assert_eq!(format!("{}-kernel", ce.name), kernel.name);
            }
        }
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
}
