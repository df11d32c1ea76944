//! Reading a GPU's arrays back through the protocol's rule, slice by
//! slice, and the reductions' per-block sums: after the timed
//! repetitions, never inside them.

use super::{DEVICE_ARRAYS, Gpu, READ_BACK_ELEMENTS, cu};
use crate::backend::{ArrayErrors, ReadBack};
use crate::kernels::ARRAYS;
use cudarc::driver::{result, sys};

impl Gpu {
    /// Reads one device array back, slice by slice, through the protocol's
    /// rule: (sum of absolute errors, bad elements).
    fn check_array(
        &self,
        ptr: sys::CUdeviceptr,
        want: f64,
        errors: ArrayErrors,
    ) -> Result<(f64, u64), String> {
        let mut buffer = vec![0.0f64; READ_BACK_ELEMENTS.min(self.elements)];
        let (mut abs, mut bad) = (0.0, 0);
        let mut done = 0;
        while done < self.elements {
            let len = buffer.len().min(self.elements - done);
            let from = ptr + (done * std::mem::size_of::<f64>()) as u64;
            // SAFETY: `from..from+len` lies inside an allocation of
            // `elements` doubles; the buffer holds `len`.
            cu("cuMemcpyDtoH", unsafe {
                result::memcpy_dtoh_sync(&mut buffer[..len], from)
            })?;
            let (e, b) = errors(&buffer[..len], want);
            abs += e;
            bad += b;
            done += len;
        }
        Ok((abs, bad))
    }

    /// The sum of a reduction's per-block sums, in block order.
    fn partial_sum(&self, partial: sys::CUdeviceptr) -> Result<f64, String> {
        if partial == 0 {
            return Ok(0.0);
        }
        let mut sums = vec![0.0f64; self.grid as usize];
        // SAFETY: the allocation holds `grid` doubles.
        cu("cuMemcpyDtoH", unsafe {
            result::memcpy_dtoh_sync(&mut sums, partial)
        })?;
        Ok(sums.iter().sum())
    }

    pub(super) fn read_device(
        &self,
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
        out.read_sum = self.partial_sum(self.partial_read)?;
        out.dot_sum = self.partial_sum(self.partial_dot)?;
        Ok(())
    }
}
