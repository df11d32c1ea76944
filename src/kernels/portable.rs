//! Plain loops for every target; the compiler vectorizes them for the
//! baseline ISA. No non-temporal stores: those need explicit instructions.

use super::{Isa, KernelFns, StoreMode};

pub(super) fn table() -> KernelFns {
    KernelFns {
        isa: Isa::Scalar,
        stores: StoreMode::Regular,
        copy,
        scale,
        add,
        triad,
        read,
        write,
        update,
        daxpy,
        striad,
        sdaxpy,
        nstream,
        dot,
    }
}

fn copy(dst: &mut [f64], src: &[f64]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
}

fn scale(dst: &mut [f64], src: &[f64], q: f64) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = q * s;
    }
}

fn add(dst: &mut [f64], x: &[f64], y: &[f64]) {
    for (d, (x, y)) in dst.iter_mut().zip(x.iter().zip(y)) {
        *d = x + y;
    }
}

fn triad(dst: &mut [f64], x: &[f64], y: &[f64], q: f64) {
    for (d, (x, y)) in dst.iter_mut().zip(x.iter().zip(y)) {
        *d = x + q * y;
    }
}

fn read(src: &[f64]) -> f64 {
    sum_of(src.len(), |i| src[i])
}

fn dot(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len());
    sum_of(x.len(), |i| x[i] * y[i])
}

/// Four partial sums so the adds do not form one dependency chain.
#[inline(always)]
fn sum_of(n: usize, term: impl Fn(usize) -> f64) -> f64 {
    let mut acc = [0.0; 4];
    let body = n / 4 * 4;
    for i in (0..body).step_by(4) {
        for (k, a) in acc.iter_mut().enumerate() {
            *a += term(i + k);
        }
    }
    let tail: f64 = (body..n).map(term).sum();
    acc.iter().sum::<f64>() + tail
}

fn update(dst: &mut [f64], q: f64) {
    for d in dst.iter_mut() {
        *d *= q;
    }
}

fn daxpy(dst: &mut [f64], x: &[f64], q: f64) {
    for (d, x) in dst.iter_mut().zip(x) {
        *d += q * x;
    }
}

fn striad(dst: &mut [f64], x: &[f64], y: &[f64], z: &[f64]) {
    for (d, (x, (y, z))) in dst.iter_mut().zip(x.iter().zip(y.iter().zip(z))) {
        *d = x + y * z;
    }
}

fn sdaxpy(dst: &mut [f64], x: &[f64], y: &[f64]) {
    for (d, (x, y)) in dst.iter_mut().zip(x.iter().zip(y)) {
        *d += x * y;
    }
}

fn nstream(dst: &mut [f64], x: &[f64], y: &[f64], q: f64) {
    for (d, (x, y)) in dst.iter_mut().zip(x.iter().zip(y)) {
        *d += x + q * y;
    }
}

fn write(dst: &mut [f64], value: f64) {
    dst.fill(value);
}
