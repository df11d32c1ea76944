//! Explicit SIMD kernels for x86_64: AVX-512F, AVX2+FMA and SSE2, each with
//! ordinary and non-temporal stores.
//!
//! One macro writes every ISA's module from the same loop shapes, so the
//! variants differ only in their intrinsics. Each loop stores a scalar head
//! until the destination is vector-aligned (arrays and chunks are page
//! aligned, so in practice the head is empty), then (streaming stores
//! only) a body that walks four pages side by side, then one unrolled four
//! vectors deep, then a scalar tail. Streaming variants end with an
//! `sfence` so their stores are globally visible before the barrier.

use super::{Isa, KernelFns};

pub(super) fn supported(isa: Isa) -> bool {
    match isa {
        Isa::Scalar | Isa::Sse2 => true,
        Isa::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
        Isa::Avx512 => is_x86_feature_detected!("avx512f"),
        Isa::Neon | Isa::Sve => false,
    }
}

/// The kernels for `isa`, or `None` when this CPU lacks it. This check is what
/// makes the safe wrappers below sound: they are reachable only through it.
pub(super) fn table(isa: Isa, nt: bool) -> Option<KernelFns> {
    if !supported(isa) {
        return None;
    }
    Some(match isa {
        Isa::Avx512 => avx512::table(nt),
        Isa::Avx2 => avx2::table(nt),
        Isa::Sse2 => sse2::table(nt),
        Isa::Scalar | Isa::Neon | Isa::Sve => return None,
    })
}

/// Elements of one 4 KiB page.
const PAGE_ELEMENTS: usize = 4096 / 8;
/// Pages a long store loop walks side by side. One stream per array leaves
/// DRAM bandwidth unused that several streams reach (more open rows, more
/// lines in flight): four pages at a time lifted the AVX-512 NT copy from
/// 37 to 47 GB/s on a 2-core Xeon VM, past glibc's `memcpy` (42), which
/// interleaves pages the same way; triad gained 3 %.
const INTERLEAVED_PAGES: usize = 4;
/// Elements each page gets per step: two cache lines.
const STEP_ELEMENTS: usize = 16;

/// Runs `dst[i] = <expr of i>` over `n` elements: scalar head to alignment,
/// then (streaming stores only) blocks of [`INTERLEAVED_PAGES`] pages walked
/// side by side two lines at a time, then a 4×unrolled vector body for what
/// is left, then single vectors, then a scalar tail; ordinary or streaming
/// stores.
macro_rules! store_loop {
    ($nt:expr, $store:path, $stream:path, $lanes:expr, $dst:expr, $n:expr,
     |$i:ident| vector: $vexpr:expr, scalar: $sexpr:expr) => {{
        let dst: *mut f64 = $dst;
        let n: usize = $n;
        let mut k = 0usize;
        while k < n && (dst.add(k) as usize) % ($lanes * 8) != 0 {
            let $i = k;
            *dst.add(k) = $sexpr;
            k += 1;
        }
        // Streaming stores only: at cache sizes, where regular stores are
        // the mode, walking four pages cost 4 % at L2.
        let block = super::INTERLEAVED_PAGES * super::PAGE_ELEMENTS;
        let blocks_end = if $nt { k + (n - k) / block * block } else { k };
        while k < blocks_end {
            let mut offset = 0;
            while offset < super::PAGE_ELEMENTS {
                // Constant trip counts: unrolled, one step of every page.
                for page in 0..super::INTERLEAVED_PAGES {
                    let at = k + page * super::PAGE_ELEMENTS + offset;
                    for lane_group in 0..super::STEP_ELEMENTS / $lanes {
                        let $i = at + lane_group * $lanes;
                        let v = $vexpr;
                        if $nt {
                            $stream(dst.add($i), v);
                        } else {
                            $store(dst.add($i), v);
                        }
                    }
                }
                offset += super::STEP_ELEMENTS;
            }
            k += block;
        }
        let body_end = k + (n - k) / (4 * $lanes) * (4 * $lanes);
        while k < body_end {
            let $i = k;
            let v0 = $vexpr;
            let $i = k + $lanes;
            let v1 = $vexpr;
            let $i = k + 2 * $lanes;
            let v2 = $vexpr;
            let $i = k + 3 * $lanes;
            let v3 = $vexpr;
            if $nt {
                $stream(dst.add(k), v0);
                $stream(dst.add(k + $lanes), v1);
                $stream(dst.add(k + 2 * $lanes), v2);
                $stream(dst.add(k + 3 * $lanes), v3);
            } else {
                $store(dst.add(k), v0);
                $store(dst.add(k + $lanes), v1);
                $store(dst.add(k + 2 * $lanes), v2);
                $store(dst.add(k + 3 * $lanes), v3);
            }
            k += 4 * $lanes;
        }
        // Whole vectors left over: at L1 sizes a scalar tail of up to
        // 4 × lanes - 1 elements is a tenth of a call.
        let vectors_end = k + (n - k) / $lanes * $lanes;
        while k < vectors_end {
            let $i = k;
            let v = $vexpr;
            if $nt {
                $stream(dst.add(k), v);
            } else {
                $store(dst.add(k), v);
            }
            k += $lanes;
        }
        while k < n {
            let $i = k;
            *dst.add(k) = $sexpr;
            k += 1;
        }
        if $nt {
            std::arch::x86_64::_mm_sfence();
        }
    }};
}

/// Independent vector accumulators of a reduction: two loads a cycle
/// against an add latency of four cycles needs eight in flight, or `read`
/// and `dot` measure the adder's latency instead of L1's bandwidth.
const ACCUMULATORS: usize = 8;

/// Sums `<term of k>` over `n` elements into [`ACCUMULATORS`] vector
/// accumulators (aligned on `base`), with scalar head and tail, and returns
/// the total.
macro_rules! sum_loop {
    ($lanes:expr, $zero:path, $add:path, $storeu:path, $base:expr, $n:expr,
     |$acc:ident, $k:ident| vector: $vstep:expr, scalar: $sterm:expr) => {{
        let base: *const f64 = $base;
        let n: usize = $n;
        let mut $k = 0usize;
        let mut scalar = 0.0;
        while $k < n && (base.add($k) as usize) % ($lanes * 8) != 0 {
            scalar += $sterm;
            $k += 1;
        }
        let mut sums = [$zero(); super::ACCUMULATORS];
        let block = super::ACCUMULATORS * $lanes;
        let body_end = $k + (n - $k) / block * block;
        while $k < body_end {
            let start = $k;
            // A constant trip count: unrolled, the sums stay in registers.
            for (j, sum) in sums.iter_mut().enumerate() {
                $k = start + j * $lanes;
                let $acc = *sum;
                *sum = $vstep;
            }
            $k = start + block;
        }
        let vectors_end = $k + (n - $k) / $lanes * $lanes;
        while $k < vectors_end {
            let $acc = sums[0];
            sums[0] = $vstep;
            $k += $lanes;
        }
        while $k < n {
            scalar += $sterm;
            $k += 1;
        }
        // Pairwise, as the accumulators were filled.
        let mut width = super::ACCUMULATORS;
        while width > 1 {
            width /= 2;
            for j in 0..width {
                sums[j] = $add(sums[j], sums[j + width]);
            }
        }
        let mut lanes = [0.0f64; $lanes];
        $storeu(lanes.as_mut_ptr(), sums[0]);
        scalar + lanes.iter().sum::<f64>()
    }};
}

macro_rules! isa_module {
    ($name:ident, $feature:literal, $isa:ident, lanes: $lanes:literal,
     load: $load:path, store: $store:path, storeu: $storeu:path, stream: $stream:path,
     splat: $splat:path, zero: $zero:path, add: $add:path, mul: $mul:path,
     madd: |$q:ident, $c:ident, $b:ident| $madd:expr) => {
        mod $name {
            use super::super::{Isa, KernelFns, StoreMode};
            #[allow(unused_imports)]
            use std::arch::x86_64::*;

            const LANES: usize = $lanes;

            kernel_table!(Isa::$isa);

            #[target_feature(enable = $feature)]
            unsafe fn copy_impl<const NT: bool>(d: *mut f64, a: *const f64, n: usize) {
                // SAFETY: the caller passes pointers valid for n elements.
                unsafe {
                    store_loop!(NT, $store, $stream, LANES, d, n,
                        |i| vector: $load(a.add(i)), scalar: *a.add(i))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn scale_impl<const NT: bool>(d: *mut f64, c: *const f64, n: usize, q: f64) {
                // SAFETY: the caller passes pointers valid for n elements.
                unsafe {
                    let qv = $splat(q);
                    store_loop!(NT, $store, $stream, LANES, d, n,
                        |i| vector: $mul(qv, $load(c.add(i))), scalar: q * *c.add(i))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn add_impl<const NT: bool>(d: *mut f64, x: *const f64, y: *const f64, n: usize) {
                // SAFETY: the caller passes pointers valid for n elements.
                unsafe {
                    store_loop!(NT, $store, $stream, LANES, d, n,
                        |i| vector: $add($load(x.add(i)), $load(y.add(i))),
                        scalar: *x.add(i) + *y.add(i))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn triad_impl<const NT: bool>(
                d: *mut f64, x: *const f64, y: *const f64, n: usize, q: f64,
            ) {
                // SAFETY: the caller passes pointers valid for n elements.
                unsafe {
                    let qv = $splat(q);
                    store_loop!(NT, $store, $stream, LANES, d, n,
                        |i| vector: {
                            let $q = qv;
                            let $c = $load(y.add(i));
                            let $b = $load(x.add(i));
                            $madd
                        },
                        scalar: *x.add(i) + q * *y.add(i))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn write_impl<const NT: bool>(d: *mut f64, n: usize, value: f64) {
                // SAFETY: the caller passes a pointer valid for n elements.
                unsafe {
                    let v = $splat(value);
                    store_loop!(NT, $store, $stream, LANES, d, n,
                        |i| vector: { let _ = i; v }, scalar: { let _ = i; value })
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn update_impl<const NT: bool>(d: *mut f64, n: usize, q: f64) {
                // SAFETY: the caller passes a pointer valid for n elements.
                unsafe {
                    let qv = $splat(q);
                    store_loop!(NT, $store, $stream, LANES, d, n,
                        |i| vector: $mul(qv, $load(d.add(i))), scalar: q * *d.add(i))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn daxpy_impl<const NT: bool>(d: *mut f64, x: *const f64, n: usize, q: f64) {
                // SAFETY: the caller passes pointers valid for n elements.
                unsafe {
                    let qv = $splat(q);
                    store_loop!(NT, $store, $stream, LANES, d, n,
                        |i| vector: {
                            let $q = qv;
                            let $c = $load(x.add(i));
                            let $b = $load(d.add(i));
                            $madd
                        },
                        scalar: *d.add(i) + q * *x.add(i))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn striad_impl<const NT: bool>(
                d: *mut f64, x: *const f64, y: *const f64, z: *const f64, n: usize,
            ) {
                // SAFETY: the caller passes pointers valid for n elements.
                unsafe {
                    store_loop!(NT, $store, $stream, LANES, d, n,
                        |i| vector: {
                            let $q = $load(y.add(i));
                            let $c = $load(z.add(i));
                            let $b = $load(x.add(i));
                            $madd
                        },
                        scalar: *x.add(i) + *y.add(i) * *z.add(i))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn sdaxpy_impl<const NT: bool>(
                d: *mut f64, x: *const f64, y: *const f64, n: usize,
            ) {
                // SAFETY: the caller passes pointers valid for n elements.
                unsafe {
                    store_loop!(NT, $store, $stream, LANES, d, n,
                        |i| vector: {
                            let $q = $load(x.add(i));
                            let $c = $load(y.add(i));
                            let $b = $load(d.add(i));
                            $madd
                        },
                        scalar: *d.add(i) + *x.add(i) * *y.add(i))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn nstream_impl<const NT: bool>(
                d: *mut f64, x: *const f64, y: *const f64, n: usize, q: f64,
            ) {
                // SAFETY: the caller passes pointers valid for n elements.
                unsafe {
                    let qv = $splat(q);
                    store_loop!(NT, $store, $stream, LANES, d, n,
                        |i| vector: {
                            let $q = qv;
                            let $c = $load(y.add(i));
                            let $b = $load(x.add(i));
                            $add($load(d.add(i)), $madd)
                        },
                        scalar: *d.add(i) + (*x.add(i) + q * *y.add(i)))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn read_impl(a: *const f64, n: usize) -> f64 {
                // SAFETY: the caller passes a pointer valid for n elements.
                unsafe {
                    sum_loop!(LANES, $zero, $add, $storeu, a, n,
                        |acc, k| vector: $add(acc, $load(a.add(k))), scalar: *a.add(k))
                }
            }

            #[target_feature(enable = $feature)]
            unsafe fn dot_impl(x: *const f64, y: *const f64, n: usize) -> f64 {
                // SAFETY: the caller passes pointers valid for n elements.
                unsafe {
                    sum_loop!(LANES, $zero, $add, $storeu, x, n,
                        |acc, k| vector: {
                            let $q = $load(x.add(k));
                            let $c = $load(y.add(k));
                            let $b = acc;
                            $madd
                        },
                        scalar: *x.add(k) * *y.add(k))
                }
            }

            checked_kernels!();
        }
    };
}

isa_module!(avx512, "avx512f", Avx512, lanes: 8,
    load: _mm512_loadu_pd, store: _mm512_store_pd, storeu: _mm512_storeu_pd,
    stream: _mm512_stream_pd, splat: _mm512_set1_pd, zero: _mm512_setzero_pd,
    add: _mm512_add_pd, mul: _mm512_mul_pd,
    madd: |q, c, b| _mm512_fmadd_pd(q, c, b));

isa_module!(avx2, "avx2,fma", Avx2, lanes: 4,
    load: _mm256_loadu_pd, store: _mm256_store_pd, storeu: _mm256_storeu_pd,
    stream: _mm256_stream_pd, splat: _mm256_set1_pd, zero: _mm256_setzero_pd,
    add: _mm256_add_pd, mul: _mm256_mul_pd,
    madd: |q, c, b| _mm256_fmadd_pd(q, c, b));

isa_module!(sse2, "sse2", Sse2, lanes: 2,
    load: _mm_loadu_pd, store: _mm_store_pd, storeu: _mm_storeu_pd,
    stream: _mm_stream_pd, splat: _mm_set1_pd, zero: _mm_setzero_pd,
    add: _mm_add_pd, mul: _mm_mul_pd,
    madd: |q, c, b| _mm_add_pd(b, _mm_mul_pd(q, c)));
