//! A GPU's host buffers: the transfers' `h` and `r`, first touched by the
//! pinned host thread under the plan's policy, then registered with the
//! driver and mapped for the GPU; and their pageable twins, never
//! registered, for the pageable transfers.

use super::{Gpu, cu};
use crate::backend::offload::HostBuffers;
use crate::kernels::ArrayId;
use crate::plan::Plan;
use cudarc::driver::sys;
use std::ffi::c_void;

impl Gpu {
    /// Touches the host buffers from this (pinned) thread under their
    /// policy, then pins them with the driver and maps them for the GPU.
    pub(super) fn register_host_buffers(&mut self) -> Result<(), String> {
        for id in [ArrayId::H, ArrayId::R] {
            let Some(array) = self.host.arrays.arrays.array_mut(id) else {
                continue;
            };
            let slice = array.as_mut_slice();
            slice.fill(0.0);
            let (ptr, bytes) = (
                slice.as_mut_ptr().cast::<c_void>(),
                std::mem::size_of_val(slice),
            );
            let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
            // SAFETY: `ptr..ptr+bytes` is a live mapping owned by `host`,
            // unregistered in drop before `host` unmaps it.
            cu("cuMemHostRegister", unsafe {
                sys::cuMemHostRegister_v2(ptr, bytes, flags).result()
            })?;
            self.host_ptr[id.index()] = ptr;
            let mut mapped: sys::CUdeviceptr = 0;
            // SAFETY: `ptr` was registered with DEVICEMAP just above.
            cu("cuMemHostGetDevicePointer", unsafe {
                sys::cuMemHostGetDevicePointer_v2(&mut mapped, ptr, 0).result()
            })?;
            self.device[id.index()] = mapped;
        }
        Ok(())
    }

    /// Maps the pageable twins of the host buffers under the same policy
    /// and first touches them from this thread; nothing registers them.
    pub(super) fn map_pageable_twins(&mut self, plan: &Plan) -> Result<(), String> {
        let mut twins = HostBuffers::map(plan).map_err(|e| e.to_string())?;
        for id in [ArrayId::H, ArrayId::R] {
            if let Some(array) = twins.arrays.arrays.array_mut(id) {
                // First touch, from this thread, under the policy.
                let slice = array.as_mut_slice();
                slice.fill(0.0);
                self.pageable_ptr[id.index()] = slice.as_mut_ptr().cast();
            }
        }
        self.pageable = Some(twins);
        Ok(())
    }
}
