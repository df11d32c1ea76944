//! Reading a GPU's arrays back through the protocol's rule, slice by
//! slice, and the reductions' per-block sums: after the timed
//! repetitions, never inside them.

use super::{DEVICE_ARRAYS, Gpu};
use crate::backend::gpu::runtime::DevicePtr;
use crate::backend::{ArrayErrors, ReadBack};
use crate::kernels::{ARRAYS, KernelId};

impl Gpu {
    /// Reads one device array back, slice by slice, through the
    /// protocol's rule: (sum of absolute errors, bad elements).
    fn check_array(
        &mut self,
        ptr: DevicePtr,
        want: f64,
        errors: ArrayErrors,
    ) -> Result<(f64, u64), String> {
        /// Elements copied back per call (64 MiB).
        const SLICE: usize = 8 << 20;
        let mut buffer = vec![0.0f64; SLICE.min(self.elements)];
        let (mut abs, mut bad, mut done) = (0.0, 0, 0);
        while done < self.elements {
            let len = buffer.len().min(self.elements - done);
            let from = ptr + (done * std::mem::size_of::<f64>()) as u64;
            self.runtime.read(from, &mut buffer[..len])?;
            let (e, b) = errors(&buffer[..len], want);
            abs += e;
            bad += b;
            done += len;
        }
        Ok((abs, bad))
    }

    /// The sum of a reduction's per-block sums (its grid's), in block
    /// order.
    fn partial_sum(&mut self, kernel: KernelId, partial: DevicePtr) -> Result<f64, String> {
        let Some(launch) = self.kernels.iter().find(|l| l.kernel == kernel) else {
            return Ok(0.0);
        };
        let mut sums = vec![0.0f64; launch.shapes[launch.chosen].grid as usize];
        self.runtime.read(partial, &mut sums)?;
        Ok(sums.iter().sum())
    }

    pub(super) fn read_device(
        &mut self,
        out: &mut ReadBack,
        want: [f64; ARRAYS],
        errors: ArrayErrors,
    ) -> Result<(), String> {
        for id in DEVICE_ARRAYS {
            let ptr = self.device[id.index()];
            if ptr != 0 {
                let (abs, bad) = self.check_array(ptr, want[id.index()], errors)?;
                out.mapped[id.index()] = true;
                out.abs_error[id.index()] = abs;
                out.bad[id.index()] = bad;
            }
        }
        out.read_sum = self.partial_sum(KernelId::Read, self.partial_read)?;
        out.dot_sum = self.partial_sum(KernelId::Dot, self.partial_dot)?;
        Ok(())
    }
}
