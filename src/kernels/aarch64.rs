//! Explicit SIMD kernels for aarch64: NEON (`std::arch::aarch64`
//! intrinsics) and SVE (inline assembly), each with ordinary and
//! non-temporal stores.
//!
//! The SVE loops are vector-length agnostic: `whilelo` builds the predicate
//! of the elements left, so one loop runs on 128- to 2048-bit vectors, and
//! the last partial vector needs no scalar tail. Non-temporal stores are
//! `stnp` (NEON, a pair of registers) and `stnt1d` (SVE). They are hints:
//! the architecture lets a core allocate the line anyway, and Neoverse cores
//! also stream ordinary stores that cover whole lines.

use super::{Isa, KernelFns, StoreMode};

pub(super) fn supported(isa: Isa) -> bool {
    match isa {
        Isa::Scalar => true,
        Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
        Isa::Sve => std::arch::is_aarch64_feature_detected!("sve"),
        _ => false,
    }
}

/// The kernels for `isa`, or `None` when this CPU lacks it. This check is what
/// makes the safe wrappers below sound: they are reachable only through it.
pub(super) fn table(isa: Isa, nt: bool) -> Option<KernelFns> {
    if !supported(isa) {
        return None;
    }
    match isa {
        Isa::Neon => Some(neon::table(nt)),
        Isa::Sve => Some(sve::table(nt)),
        _ => None,
    }
}

/// f64 lanes of this CPU's SVE vectors (callers check SVE first).
pub(super) fn sve_lanes() -> usize {
    assert!(supported(Isa::Sve), "SVE checked by the caller");
    // SAFETY: `cntd` only reads the vector length; the CPU has SVE (checked
    // above), and the target feature lets the assembler take it.
    unsafe { sve::cntd() }
}

mod neon {
    use super::{KernelFns, StoreMode};
    use crate::kernels::Isa;
    use std::arch::aarch64::*;

    /// Two f64 per vector, four vectors (one 64-byte line) per step.
    const STEP: usize = 8;

    /// Stores four vectors at `p`: ordinary stores, or two non-temporal
    /// store pairs.
    ///
    /// # Safety
    /// `p` must be valid for 8 f64 writes.
    #[inline(always)]
    unsafe fn store4<const NT: bool>(p: *mut f64, v: [float64x2_t; 4]) {
        // SAFETY: the caller passes p valid for 8 elements.
        unsafe {
            if NT {
                std::arch::asm!(
                    "stnp {a:q}, {b:q}, [{p}]",
                    "stnp {c:q}, {d:q}, [{p}, #32]",
                    p = in(reg) p,
                    a = in(vreg) v[0],
                    b = in(vreg) v[1],
                    c = in(vreg) v[2],
                    d = in(vreg) v[3],
                    options(nostack, preserves_flags),
                );
            } else {
                vst1q_f64(p, v[0]);
                vst1q_f64(p.add(2), v[1]);
                vst1q_f64(p.add(4), v[2]);
                vst1q_f64(p.add(6), v[3]);
            }
        }
    }

    /// Runs `dst[i] = <expr of i>` over `n` elements, a line per step,
    /// then a scalar tail.
    macro_rules! neon_store_loop {
        ($nt:ident, $dst:expr, $n:expr, |$i:ident| vector: $v:expr, scalar: $s:expr) => {{
            let dst: *mut f64 = $dst;
            let n: usize = $n;
            let mut k = 0;
            while k + STEP <= n {
                let v = [0, 2, 4, 6].map(|o| {
                    let $i = k + o;
                    $v
                });
                store4::<$nt>(dst.add(k), v);
                k += STEP;
            }
            while k < n {
                let $i = k;
                *dst.add(k) = $s;
                k += 1;
            }
        }};
    }

    /// Independent accumulators of a reduction: loads of two or three
    /// vectors a cycle against an add latency of three or four cycles.
    const SUM_ACCUMULATORS: usize = 8;

    /// Sums `<term of i>` in [`SUM_ACCUMULATORS`] vector accumulators, then
    /// a scalar tail.
    macro_rules! neon_sum_loop {
        ($n:expr, |$acc:ident, $i:ident| vector: $v:expr, scalar: $s:expr) => {{
            let n: usize = $n;
            let mut accs = [vdupq_n_f64(0.0); SUM_ACCUMULATORS];
            let step = 2 * SUM_ACCUMULATORS;
            let mut k = 0;
            while k + step <= n {
                for (j, a) in accs.iter_mut().enumerate() {
                    let $acc = *a;
                    let $i = k + 2 * j;
                    *a = $v;
                }
                k += step;
            }
            let mut tail = 0.0;
            while k < n {
                let $i = k;
                tail += $s;
                k += 1;
            }
            let mut width = SUM_ACCUMULATORS;
            while width > 1 {
                width /= 2;
                for j in 0..width {
                    accs[j] = vaddq_f64(accs[j], accs[j + width]);
                }
            }
            vaddvq_f64(accs[0]) + tail
        }};
    }

    kernel_table!(Isa::Neon);

    // The wrappers below are reachable only through `table`, built after
    // `supported(Isa::Neon)`; NEON intrinsics then only need valid pointers,
    // which the equal-length checks give.

    fn copy<const NT: bool>(d: &mut [f64], a: &[f64]) {
        assert_eq!(d.len(), a.len());
        let a = a.as_ptr();
        // SAFETY: NEON present; every index is below the common length.
        unsafe {
            neon_store_loop!(NT, d.as_mut_ptr(), d.len(),
                |i| vector: vld1q_f64(a.add(i)), scalar: *a.add(i))
        }
    }

    fn scale<const NT: bool>(d: &mut [f64], c: &[f64], q: f64) {
        assert_eq!(d.len(), c.len());
        let c = c.as_ptr();
        // SAFETY: as in copy.
        unsafe {
            let qv = vdupq_n_f64(q);
            neon_store_loop!(NT, d.as_mut_ptr(), d.len(),
                |i| vector: vmulq_f64(qv, vld1q_f64(c.add(i))), scalar: q * *c.add(i))
        }
    }

    fn add<const NT: bool>(d: &mut [f64], x: &[f64], y: &[f64]) {
        assert!(d.len() == x.len() && d.len() == y.len());
        let (x, y) = (x.as_ptr(), y.as_ptr());
        // SAFETY: as in copy.
        unsafe {
            neon_store_loop!(NT, d.as_mut_ptr(), d.len(),
                |i| vector: vaddq_f64(vld1q_f64(x.add(i)), vld1q_f64(y.add(i))),
                scalar: *x.add(i) + *y.add(i))
        }
    }

    fn triad<const NT: bool>(d: &mut [f64], x: &[f64], y: &[f64], q: f64) {
        assert!(d.len() == x.len() && d.len() == y.len());
        let (x, y) = (x.as_ptr(), y.as_ptr());
        // SAFETY: as in copy.
        unsafe {
            let qv = vdupq_n_f64(q);
            neon_store_loop!(NT, d.as_mut_ptr(), d.len(),
                |i| vector: vfmaq_f64(vld1q_f64(x.add(i)), qv, vld1q_f64(y.add(i))),
                scalar: *x.add(i) + q * *y.add(i))
        }
    }

    fn read(a: &[f64]) -> f64 {
        let p = a.as_ptr();
        // SAFETY: as in copy.
        unsafe {
            neon_sum_loop!(a.len(), |acc, i| vector: vaddq_f64(acc, vld1q_f64(p.add(i))),
                scalar: *p.add(i))
        }
    }

    fn write<const NT: bool>(d: &mut [f64], value: f64) {
        // SAFETY: as in copy.
        unsafe {
            let v = vdupq_n_f64(value);
            neon_store_loop!(NT, d.as_mut_ptr(), d.len(),
                |i| vector: { let _ = i; v }, scalar: { let _ = i; value })
        }
    }

    fn update<const NT: bool>(d: &mut [f64], q: f64) {
        let p = d.as_mut_ptr();
        // SAFETY: as in copy; each element is read before it is written.
        unsafe {
            let qv = vdupq_n_f64(q);
            neon_store_loop!(NT, p, d.len(),
                |i| vector: vmulq_f64(qv, vld1q_f64(p.add(i))), scalar: q * *p.add(i))
        }
    }

    fn daxpy<const NT: bool>(d: &mut [f64], x: &[f64], q: f64) {
        assert_eq!(d.len(), x.len());
        let (p, x) = (d.as_mut_ptr(), x.as_ptr());
        // SAFETY: as in update.
        unsafe {
            let qv = vdupq_n_f64(q);
            neon_store_loop!(NT, p, d.len(),
                |i| vector: vfmaq_f64(vld1q_f64(p.add(i)), qv, vld1q_f64(x.add(i))),
                scalar: *p.add(i) + q * *x.add(i))
        }
    }

    fn striad<const NT: bool>(d: &mut [f64], x: &[f64], y: &[f64], z: &[f64]) {
        assert!(d.len() == x.len() && d.len() == y.len() && d.len() == z.len());
        let (x, y, z) = (x.as_ptr(), y.as_ptr(), z.as_ptr());
        // SAFETY: as in copy.
        unsafe {
            neon_store_loop!(NT, d.as_mut_ptr(), d.len(),
                |i| vector: vfmaq_f64(vld1q_f64(x.add(i)), vld1q_f64(y.add(i)), vld1q_f64(z.add(i))),
                scalar: *x.add(i) + *y.add(i) * *z.add(i))
        }
    }

    fn sdaxpy<const NT: bool>(d: &mut [f64], x: &[f64], y: &[f64]) {
        assert!(d.len() == x.len() && d.len() == y.len());
        let (p, x, y) = (d.as_mut_ptr(), x.as_ptr(), y.as_ptr());
        // SAFETY: as in update.
        unsafe {
            neon_store_loop!(NT, p, d.len(),
                |i| vector: vfmaq_f64(vld1q_f64(p.add(i)), vld1q_f64(x.add(i)), vld1q_f64(y.add(i))),
                scalar: *p.add(i) + *x.add(i) * *y.add(i))
        }
    }

    fn nstream<const NT: bool>(d: &mut [f64], x: &[f64], y: &[f64], q: f64) {
        assert!(d.len() == x.len() && d.len() == y.len());
        let (p, x, y) = (d.as_mut_ptr(), x.as_ptr(), y.as_ptr());
        // SAFETY: as in update.
        unsafe {
            let qv = vdupq_n_f64(q);
            neon_store_loop!(NT, p, d.len(),
                |i| vector: vaddq_f64(
                    vld1q_f64(p.add(i)),
                    vfmaq_f64(vld1q_f64(x.add(i)), qv, vld1q_f64(y.add(i)))
                ),
                scalar: *p.add(i) + (*x.add(i) + q * *y.add(i)))
        }
    }

    fn dot(x: &[f64], y: &[f64]) -> f64 {
        assert_eq!(x.len(), y.len());
        let n = x.len();
        let (x, y) = (x.as_ptr(), y.as_ptr());
        // SAFETY: as in copy.
        unsafe {
            neon_sum_loop!(n, |acc, i|
                vector: vfmaq_f64(acc, vld1q_f64(x.add(i)), vld1q_f64(y.add(i))),
                scalar: *x.add(i) * *y.add(i))
        }
    }
}

mod sve {
    use super::{KernelFns, StoreMode};
    use crate::kernels::Isa;
    use std::arch::asm;

    /// f64 lanes per vector.
    ///
    /// # Safety
    /// The CPU must have SVE.
    #[target_feature(enable = "sve")]
    pub(super) unsafe fn cntd() -> usize {
        let n: usize;
        // SAFETY: reads the vector length into a general register.
        unsafe { asm!("cntd {n}", n = out(reg) n, options(nomem, nostack, preserves_flags)) };
        n
    }

    /// A predicated loop over `n` elements writing `d`: `$setup` runs once
    /// (broadcasts into z2), `$body` loads and computes z0 for the active
    /// lanes under p0, then z0 is stored with `$store` (`st1d` or
    /// `stnt1d`). Scratch: z0, z1, z3 (v0, v1, v3), z2 for the scalar, p0.
    macro_rules! sve_store_loop {
        ($store:literal, $setup:literal, $body:literal, d = $d:expr, n = $n:expr $(, $name:ident = $val:expr)* $(,)?) => {
            asm!(
                $setup,
                "mov {i}, #0",
                "whilelo p0.d, {i}, {n}",
                "b.none 2f",
                "1:",
                $body,
                concat!($store, " {{z0.d}}, p0, [{d}, {i}, lsl #3]"),
                "incd {i}",
                "whilelo p0.d, {i}, {n}",
                "b.first 1b",
                "2:",
                d = in(reg) $d,
                n = in(reg) $n,
                $($name = in(reg) $val,)*
                i = out(reg) _,
                out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                out("p0") _,
                options(nostack),
            )
        };
    }

    /// Both store modes of one kernel: `stnt1d` when NT, else `st1d`.
    macro_rules! sve_kernel {
        ($nt:ident, $setup:literal, $body:literal, $($args:tt)*) => {
            if $nt {
                sve_store_loop!("stnt1d", $setup, $body, $($args)*)
            } else {
                sve_store_loop!("st1d", $setup, $body, $($args)*)
            }
        };
    }

    /// A reduction over `n` elements in eight vector accumulators
    /// (z24-z31), as the x86 and NEON sums keep: one accumulator would
    /// leave the loop waiting on the add's latency, not on the loads, and
    /// under-report L1 bandwidth. `$main` loads eight whole vectors from
    /// `{p}` (the current element's address; `[{p}, #k, mul vl]`) and adds
    /// each into its own accumulator under the all-true p1; `$tail` adds the
    /// last partial vectors into z24 under p0. The accumulators are summed
    /// pairwise, then across lanes. Scratch: z0-z7 and z16-z23 for loads.
    macro_rules! sve_sum_loop {
        ($main:expr, $tail:literal, n = $n:expr $(, $name:ident = $val:expr)*
         $(; scratch $scratch:ident)? $(,)?) => {{
            let bits: u64;
            asm!(
                "ptrue p1.d",
                "mov z24.d, #0", "mov z25.d, #0", "mov z26.d, #0", "mov z27.d, #0",
                "mov z28.d, #0", "mov z29.d, #0", "mov z30.d, #0", "mov z31.d, #0",
                "mov {i}, #0",
                // Eight vectors per pass while they fit: i + 8·VL <= n.
                "cntd {step}",
                "lsl {step}, {step}, #3",
                "subs {last}, {n}, {step}",
                "b.lo 3f",
                "1:",
                $main,
                "add {i}, {i}, {step}",
                "cmp {i}, {last}",
                "b.ls 1b",
                "3:",
                "whilelo p0.d, {i}, {n}",
                "b.none 5f",
                "4:",
                $tail,
                "incd {i}",
                "whilelo p0.d, {i}, {n}",
                "b.first 4b",
                "5:",
                "fadd z24.d, z24.d, z25.d", "fadd z26.d, z26.d, z27.d",
                "fadd z28.d, z28.d, z29.d", "fadd z30.d, z30.d, z31.d",
                "fadd z24.d, z24.d, z26.d", "fadd z28.d, z28.d, z30.d",
                "fadd z24.d, z24.d, z28.d",
                "faddv d24, p1, z24.d",
                "fmov {sum}, d24",
                n = in(reg) $n,
                $($name = in(reg) $val,)*
                $($scratch = out(reg) _,)?
                i = out(reg) _,
                p = out(reg) _,
                step = out(reg) _,
                last = out(reg) _,
                sum = lateout(reg) bits,
                out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                out("v4") _, out("v5") _, out("v6") _, out("v7") _,
                out("v16") _, out("v17") _, out("v18") _, out("v19") _,
                out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                out("v24") _, out("v25") _, out("v26") _, out("v27") _,
                out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                out("p0") _, out("p1") _,
                options(nostack),
            );
            f64::from_bits(bits)
        }};
    }

    /// Eight whole-vector loads under the all-true p1, from the address in
    /// `{$base}` and the seven vectors after it, into z$z0..z$z7: the body
    /// of the unrolled sums.
    macro_rules! sve_load8 {
        ($base:literal, $z0:literal, $z1:literal, $z2:literal, $z3:literal,
         $z4:literal, $z5:literal, $z6:literal, $z7:literal) => {
            concat!(
                "ld1d {{z", $z0, ".d}}, p1/z, [{", $base, "}]\n", "ld1d {{z", $z1,
                ".d}}, p1/z, [{", $base, "}, #1, mul vl]\n", "ld1d {{z", $z2, ".d}}, p1/z, [{",
                $base, "}, #2, mul vl]\n", "ld1d {{z", $z3, ".d}}, p1/z, [{", $base,
                "}, #3, mul vl]\n", "ld1d {{z", $z4, ".d}}, p1/z, [{", $base, "}, #4, mul vl]\n",
                "ld1d {{z", $z5, ".d}}, p1/z, [{", $base, "}, #5, mul vl]\n", "ld1d {{z", $z6,
                ".d}}, p1/z, [{", $base, "}, #6, mul vl]\n", "ld1d {{z", $z7, ".d}}, p1/z, [{",
                $base, "}, #7, mul vl]\n",
            )
        };
    }

    kernel_table!(Isa::Sve);

    // The safe wrappers are reachable only through `table`, built after
    // `supported(Isa::Sve)`. Each checks the lengths, so that the
    // predicated loops, which touch exactly the elements below `n`, stay
    // inside every slice.

    #[target_feature(enable = "sve")]
    unsafe fn copy_impl<const NT: bool>(d: *mut f64, a: *const f64, n: usize) {
        // SAFETY: pointers valid for n elements (the caller checks).
        unsafe {
            sve_kernel!(
                NT,
                "",
                "ld1d {{z0.d}}, p0/z, [{a}, {i}, lsl #3]",
                d = d,
                n = n,
                a = a
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn scale_impl<const NT: bool>(d: *mut f64, c: *const f64, n: usize, q: f64) {
        // SAFETY: as in copy_impl.
        unsafe {
            sve_kernel!(
                NT,
                "dup z2.d, {q}",
                "ld1d {{z0.d}}, p0/z, [{c}, {i}, lsl #3]\nfmul z0.d, z0.d, z2.d",
                d = d,
                n = n,
                c = c,
                q = q.to_bits()
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn add_impl<const NT: bool>(d: *mut f64, x: *const f64, y: *const f64, n: usize) {
        // SAFETY: as in copy_impl.
        unsafe {
            sve_kernel!(
                NT,
                "",
                "ld1d {{z0.d}}, p0/z, [{x}, {i}, lsl #3]\nld1d {{z1.d}}, p0/z, [{y}, {i}, lsl #3]\nfadd z0.d, z0.d, z1.d",
                d = d,
                n = n,
                x = x,
                y = y
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn triad_impl<const NT: bool>(
        d: *mut f64,
        x: *const f64,
        y: *const f64,
        n: usize,
        q: f64,
    ) {
        // SAFETY: as in copy_impl.
        unsafe {
            sve_kernel!(
                NT,
                "dup z2.d, {q}",
                "ld1d {{z0.d}}, p0/z, [{x}, {i}, lsl #3]\nld1d {{z1.d}}, p0/z, [{y}, {i}, lsl #3]\nfmla z0.d, p0/m, z1.d, z2.d",
                d = d,
                n = n,
                x = x,
                y = y,
                q = q.to_bits()
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn write_impl<const NT: bool>(d: *mut f64, n: usize, value: f64) {
        // SAFETY: as in copy_impl.
        unsafe {
            sve_kernel!(
                NT,
                "dup z2.d, {v}",
                "mov z0.d, z2.d",
                d = d,
                n = n,
                v = value.to_bits()
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn update_impl<const NT: bool>(d: *mut f64, n: usize, q: f64) {
        // SAFETY: as in copy_impl; each element is read before it is written.
        unsafe {
            sve_kernel!(
                NT,
                "dup z2.d, {q}",
                "ld1d {{z0.d}}, p0/z, [{d}, {i}, lsl #3]\nfmul z0.d, z0.d, z2.d",
                d = d,
                n = n,
                q = q.to_bits()
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn daxpy_impl<const NT: bool>(d: *mut f64, x: *const f64, n: usize, q: f64) {
        // SAFETY: as in update_impl.
        unsafe {
            sve_kernel!(
                NT,
                "dup z2.d, {q}",
                "ld1d {{z0.d}}, p0/z, [{d}, {i}, lsl #3]\nld1d {{z1.d}}, p0/z, [{x}, {i}, lsl #3]\nfmla z0.d, p0/m, z1.d, z2.d",
                d = d,
                n = n,
                x = x,
                q = q.to_bits()
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn striad_impl<const NT: bool>(
        d: *mut f64,
        x: *const f64,
        y: *const f64,
        z: *const f64,
        n: usize,
    ) {
        // SAFETY: as in copy_impl.
        unsafe {
            sve_kernel!(
                NT,
                "",
                "ld1d {{z0.d}}, p0/z, [{x}, {i}, lsl #3]\nld1d {{z1.d}}, p0/z, [{y}, {i}, lsl #3]\nld1d {{z3.d}}, p0/z, [{z}, {i}, lsl #3]\nfmla z0.d, p0/m, z1.d, z3.d",
                d = d,
                n = n,
                x = x,
                y = y,
                z = z
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn sdaxpy_impl<const NT: bool>(d: *mut f64, x: *const f64, y: *const f64, n: usize) {
        // SAFETY: as in update_impl.
        unsafe {
            sve_kernel!(
                NT,
                "",
                "ld1d {{z0.d}}, p0/z, [{d}, {i}, lsl #3]\nld1d {{z1.d}}, p0/z, [{x}, {i}, lsl #3]\nld1d {{z3.d}}, p0/z, [{y}, {i}, lsl #3]\nfmla z0.d, p0/m, z1.d, z3.d",
                d = d,
                n = n,
                x = x,
                y = y
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn nstream_impl<const NT: bool>(
        d: *mut f64,
        x: *const f64,
        y: *const f64,
        n: usize,
        q: f64,
    ) {
        // SAFETY: as in update_impl.
        unsafe {
            sve_kernel!(
                NT,
                "dup z2.d, {q}",
                "ld1d {{z0.d}}, p0/z, [{x}, {i}, lsl #3]\nld1d {{z1.d}}, p0/z, [{y}, {i}, lsl #3]\nfmla z0.d, p0/m, z1.d, z2.d\nld1d {{z3.d}}, p0/z, [{d}, {i}, lsl #3]\nfadd z0.d, z3.d, z0.d",
                d = d,
                n = n,
                x = x,
                y = y,
                q = q.to_bits()
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn read_impl(a: *const f64, n: usize) -> f64 {
        // SAFETY: as in copy_impl; the eight-vector pass runs only while
        // i + 8·VL <= n, so its unpredicated loads stay inside the slice.
        unsafe {
            sve_sum_loop!(
                concat!(
                    "add {p}, {a}, {i}, lsl #3\n",
                    sve_load8!("p", 0, 1, 2, 3, 4, 5, 6, 7),
                    "fadd z24.d, z24.d, z0.d\nfadd z25.d, z25.d, z1.d\n",
                    "fadd z26.d, z26.d, z2.d\nfadd z27.d, z27.d, z3.d\n",
                    "fadd z28.d, z28.d, z4.d\nfadd z29.d, z29.d, z5.d\n",
                    "fadd z30.d, z30.d, z6.d\nfadd z31.d, z31.d, z7.d",
                ),
                "ld1d {{z0.d}}, p0/z, [{a}, {i}, lsl #3]\nfadd z24.d, p0/m, z24.d, z0.d",
                n = n,
                a = a
            )
        }
    }

    #[target_feature(enable = "sve")]
    unsafe fn dot_impl(x: *const f64, y: *const f64, n: usize) -> f64 {
        // SAFETY: as in read_impl; {q} is the same element's address in y.
        unsafe {
            sve_sum_loop!(
                concat!(
                    "add {p}, {x}, {i}, lsl #3\n",
                    "add {q}, {y}, {i}, lsl #3\n",
                    sve_load8!("p", 0, 1, 2, 3, 4, 5, 6, 7),
                    sve_load8!("q", 16, 17, 18, 19, 20, 21, 22, 23),
                    "fmla z24.d, p1/m, z0.d, z16.d\nfmla z25.d, p1/m, z1.d, z17.d\n",
                    "fmla z26.d, p1/m, z2.d, z18.d\nfmla z27.d, p1/m, z3.d, z19.d\n",
                    "fmla z28.d, p1/m, z4.d, z20.d\nfmla z29.d, p1/m, z5.d, z21.d\n",
                    "fmla z30.d, p1/m, z6.d, z22.d\nfmla z31.d, p1/m, z7.d, z23.d",
                ),
                "ld1d {{z0.d}}, p0/z, [{x}, {i}, lsl #3]\nld1d {{z1.d}}, p0/z, [{y}, {i}, lsl #3]\nfmla z24.d, p0/m, z0.d, z1.d",
                n = n,
                x = x,
                y = y;
                scratch q
            )
        }
    }

    checked_kernels!();
}
