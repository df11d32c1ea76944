//! Each launch shape checked on its own, as `membw tune` asks: one call
//! over a length of its own (odd, prime, short of the arrays) from values
//! every kernel changes, then every element it should have written, the
//! one past them (which it must not have), and a reduction's sum. The
//! timed run validates only the shape it ran, over the whole arrays.

use super::{DEVICE_ARRAYS, FILLS, Gpu};
use crate::backend::gpu::runtime::{KernelArgs, Stream};
use crate::kernels::{ARRAYS, KernelId, SCALAR};

/// First values of a, b, c, d, h and r, which one call of any kernel
/// changes in every array it writes (STREAM's leave `c` at 0 for one).
const KNOWN: [f64; ARRAYS] = [1.0, 2.0, 5.0, 7.0, 11.0, 13.0];

/// The length a shape is checked over: a prime (no block, tile or access
/// width divides it), else the largest odd length short of the arrays.
pub(super) fn check_length(elements: usize) -> usize {
    const PRIME: usize = 1_000_003;
    let cap = elements.saturating_sub(1).min(PRIME);
    if cap.is_multiple_of(2) {
        cap.saturating_sub(1)
    } else {
        cap
    }
}

impl Gpu {
    /// Runs `kernel` once in its `shape`-th shape over [`check_length`]
    /// elements from [`KNOWN`] values and checks what it wrote: why not
    /// right, where it is not.
    pub(super) fn check_shape_once(
        &mut self,
        kernel: KernelId,
        shape: usize,
    ) -> Result<(), String> {
        let length = check_length(self.elements);
        if length == 0 {
            return Ok(());
        }
        for (id, fill) in DEVICE_ARRAYS.into_iter().zip(FILLS) {
            if self.device[id.index()] != 0 {
                self.helper(fill, KNOWN[id.index()])?;
            }
        }
        self.host.init(KNOWN);
        let launch = (self.kernels.iter().find(|l| l.kernel == kernel))
            .ok_or_else(|| format!("no device kernel for {kernel}"))?;
        let shape = &launch.shapes[shape.min(launch.shapes.len() - 1)];
        let (function, grid, block) = (shape.function, shape.grid, shape.block);
        let partial = match kernel {
            KernelId::Dot => self.partial_dot,
            _ => self.partial_read,
        };
        let args = KernelArgs {
            elements: length as u64,
            ..self.args(SCALAR, partial)
        };
        (self.runtime).launch(function, grid, block, &args, Stream::Main)?;
        self.runtime.synchronize(Stream::Main)?;
        let mut after = KNOWN;
        let term = (kernel.spec().step)(&mut after);
        for &id in kernel.spec().writes {
            let mut got = vec![0.0f64; length + 1];
            if DEVICE_ARRAYS.contains(&id) {
                self.runtime.read(self.device[id.index()], &mut got)?;
            } else if let Some(host) = self.host.slice_mut(id) {
                got.copy_from_slice(&host[..length + 1]);
            }
            if let Some(i) = got[..length].iter().position(|x| *x != after[id.index()]) {
                return Err(format!(
                    "{}[{i}] is {}, not {}, after one call over {length} elements",
                    id.name(),
                    got[i],
                    after[id.index()]
                ));
            }
            if got[length] != KNOWN[id.index()] {
                return Err(format!(
                    "{}[{length}], past the {length} elements of the call, was written",
                    id.name()
                ));
            }
        }
        if let Some(term) = term {
            let mut sums = vec![0.0f64; grid as usize];
            self.runtime.read(partial, &mut sums)?;
            let sum: f64 = sums.iter().sum();
            // Small integers: the sum is exact in any order.
            if sum != term * length as f64 {
                return Err(format!(
                    "the sum over {length} elements is {sum}, not {}",
                    term * length as f64
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shape_is_checked_over_an_odd_length_short_of_the_arrays() {
        assert_eq!(super::check_length(1 << 25), 1_000_003);
        assert_eq!(super::check_length(1000), 999);
        assert_eq!(super::check_length(1001), 999);
        assert_eq!(super::check_length(2), 1);
        assert_eq!(super::check_length(1), 0);
    }
}
