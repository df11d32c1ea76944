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
    // Four partial sums so the adds do not form one dependency chain.
    let mut acc = [0.0; 4];
    let chunks = src.chunks_exact(4);
    let tail: f64 = chunks.remainder().iter().sum();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().sum::<f64>() + tail
}

fn write(dst: &mut [f64], value: f64) {
    dst.fill(value);
}
