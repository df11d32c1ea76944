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
pub mod gpu_builds;
pub mod stores;
pub use stores::{KernelStores, StoresBasis, StoresRequest, ThreadCaches};
mod portable;
mod table;
pub use table::*;
#[cfg(target_arch = "x86_64")]
mod x86;

use serde::{Deserialize, Serialize};
use std::fmt;

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

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= 1e-12 * want.abs().max(1.0)
    }

    /// Lengths and offsets that exercise the unaligned head, the unrolled
    /// body, one element short of it (63: SVE's eight-vector pass at 512
    /// bits), the tail, and x86's streaming blocks of four pages (2048
    /// elements) followed by an unrolled remainder and a tail (6445).
    const LENGTHS_AND_OFFSETS: [(usize, usize); 8] = [
        (0, 0),
        (1, 0),
        (7, 1),
        (63, 2),
        (64, 0),
        (1000, 3),
        (4099, 5),
        (6445, 1),
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
