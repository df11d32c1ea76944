//! NVIDIA's driver calls for one GPU (cudarc's thin `result` layer, so
//! that what is timed is exactly the launches and copies between two
//! events): its primary context, current on the host thread, and the
//! module of `kernels.ptx` (which the driver compiles for the GPU it
//! finds when it loads). What they make is kept by `gpu::vendor`.

use super::KERNELS_PTX;
use super::driver::fail;
use crate::backend::gpu::runtime::{DevicePtr, DriverMemory};
use crate::backend::gpu::vendor::{KernelValues, Release, VendorCalls, VendorRuntime};
use cudarc::driver::{result, sys};
use std::ffi::{CStr, CString, c_uint, c_void};

/// A driver call's result, as one line.
fn cu<T>(call: &str, r: Result<T, result::DriverError>) -> Result<T, String> {
    r.map_err(|e| fail(call, e))
}

/// `cuLaunchKernel`, as every CUDA since 4.0 declares it: the function,
/// the grid and the block in three dimensions each, the dynamic shared
/// memory, the stream, a pointer to each parameter, the "extra" list.
type LaunchKernel = unsafe extern "C" fn(
    sys::CUfunction,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    sys::CUstream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> sys::CUresult;

/// One GPU's primary context, retained until it drops, and the driver's
/// launch entry, looked up once so that a timed launch is one call.
pub(super) struct CudaCalls {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    launch_kernel: LaunchKernel,
}

/// GPU `index`'s runtime, its primary context current on this thread.
pub(super) fn open(index: u32) -> Result<VendorRuntime<CudaCalls>, String> {
    super::driver::load()?;
    let dev = cu("cuDeviceGet", result::device::get(index as i32))?;
    // SAFETY: `dev` is the driver's handle; the primary context is
    // released when the calls drop.
    let ctx = cu("cuDevicePrimaryCtxRetain", unsafe {
        result::primary_ctx::retain(dev)
    })?;
    // SAFETY: the driver library is loaded (above) and stays loaded for
    // the process; the symbol has `LaunchKernel`'s signature.
    let entry = unsafe { sys::culib().get::<LaunchKernel>(b"cuLaunchKernel") };
    let launch_kernel = *entry.map_err(|e| format!("cuLaunchKernel: {e}"))?;
    let calls = CudaCalls {
        dev,
        ctx,
        launch_kernel,
    };
    calls.make_current()?;
    VendorRuntime::open(calls)
}

impl Drop for CudaCalls {
    fn drop(&mut self) {
        // SAFETY: retained in `open`, released once; the runtime released
        // what it made in the context before.
        let _ = unsafe { result::primary_ctx::release(self.dev) };
    }
}

impl VendorCalls for CudaCalls {
    type Module = sys::CUmodule;
    type Function = sys::CUfunction;
    type Stream = sys::CUstream;
    type Event = sys::CUevent;

    unsafe fn launch(
        &self,
        f: sys::CUfunction,
        grid: u32,
        block: u32,
        values: &mut KernelValues,
        stream: sys::CUstream,
    ) -> Result<(), String> {
        let mut params = values.pointers();
        // SAFETY: the caller's contract (live function, stream and
        // arrays); `params` points to each value the kernels take, alive
        // for the call, which copies them.
        let code = unsafe {
            (self.launch_kernel)(
                f,
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        cu("cuLaunchKernel", code.result())
    }

    fn architecture(&self) -> Option<String> {
        let (major, minor) = super::driver::capability(self.dev).ok()?;
        Some(format!("sm_{major}{minor}"))
    }

    fn make_current(&self) -> Result<(), String> {
        // SAFETY: the context is retained until the calls drop.
        cu("cuCtxSetCurrent", unsafe {
            result::ctx::set_current(self.ctx)
        })
    }

    fn load_module(&mut self) -> Result<sys::CUmodule, String> {
        let ptx = CString::new(KERNELS_PTX).map_err(|_| "the kernels' PTX holds a NUL")?;
        // SAFETY: the image is a NUL-terminated PTX text that outlives the
        // call (the driver copies what it compiles).
        cu("cuModuleLoadData", unsafe {
            result::module::load_data(ptx.as_ptr().cast())
        })
    }

    fn function(&self, module: sys::CUmodule, name: &CStr) -> Result<sys::CUfunction, String> {
        let call = format!("cuModuleGetFunction({})", name.to_string_lossy());
        // SAFETY: the module is loaded until the runtime drops.
        cu(&call, unsafe {
            result::module::get_function(module, name.to_owned())
        })
    }

    fn blocks_per_multiprocessor(&self, f: sys::CUfunction, block: u32) -> Result<u32, String> {
        // SAFETY: `f` is a function of the loaded module; no dynamic
        // shared memory is asked for.
        let blocks = cu("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            result::occupancy::max_active_block_per_multiprocessor(f, block as i32, 0)
        })?;
        Ok(blocks.max(0) as u32)
    }

    fn create_stream(&self) -> Result<sys::CUstream, String> {
        use result::stream::StreamKind::NonBlocking;
        cu("cuStreamCreate", result::stream::create(NonBlocking))
    }

    fn create_event(&self) -> Result<sys::CUevent, String> {
        let flags = sys::CUevent_flags::CU_EVENT_DEFAULT;
        cu("cuEventCreate", result::event::create(flags))
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr, String> {
        // SAFETY: a plain allocation, freed by the runtime's drop.
        cu("cuMemAlloc", unsafe { result::malloc_sync(bytes) })
    }

    fn alloc_managed(&self, bytes: usize) -> Result<DevicePtr, String> {
        let mut ptr: sys::CUdeviceptr = 0;
        let global = sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as c_uint;
        // SAFETY: a live out-pointer; freed by the runtime's drop.
        cu("cuMemAllocManaged", unsafe {
            sys::cuMemAllocManaged(&mut ptr, bytes, global).result()
        })?;
        Ok(ptr)
    }

    fn prefetch(&self, ptr: DevicePtr, bytes: usize, stream: sys::CUstream) -> Result<(), String> {
        // CUDA 11's signature (a destination device), which every later
        // driver keeps beside `_v2`'s location.
        // SAFETY: `ptr..ptr+bytes` is a managed allocation of the
        // runtime's; the stream is live.
        cu("cuMemPrefetchAsync", unsafe {
            sys::cuMemPrefetchAsync(ptr, bytes, self.dev, stream).result()
        })
    }

    fn memory_at(&self, ptr: DevicePtr) -> Result<DriverMemory, String> {
        use sys::CUpointer_attribute as P;
        let attribute = |what: P| -> Result<Option<u32>, String> {
            let mut value: u32 = 0;
            // SAFETY: both attributes write one 32-bit value.
            match unsafe { sys::cuPointerGetAttribute((&raw mut value).cast(), what, ptr) } {
                sys::CUresult::CUDA_SUCCESS => Ok(Some(value)),
                // Memory the driver has no record of: pageable.
                sys::CUresult::CUDA_ERROR_INVALID_VALUE => Ok(None),
                e => cu("cuPointerGetAttribute", e.result()).map(|_| None),
            }
        };
        if attribute(P::CU_POINTER_ATTRIBUTE_IS_MANAGED)? == Some(1) {
            return Ok(DriverMemory::Managed);
        }
        Ok(match attribute(P::CU_POINTER_ATTRIBUTE_MEMORY_TYPE)? {
            Some(t) if t == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 => DriverMemory::Host,
            Some(_) => DriverMemory::Device,
            None => DriverMemory::Pageable,
        })
    }

    unsafe fn register(&self, host: *mut c_void, bytes: usize) -> Result<(), String> {
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
        // SAFETY: the caller keeps the memory mapped until it is
        // unregistered.
        cu("cuMemHostRegister", unsafe {
            sys::cuMemHostRegister_v2(host, bytes, flags).result()
        })
    }

    fn mapped(&self, host: *mut c_void) -> Result<DevicePtr, String> {
        let mut mapped: sys::CUdeviceptr = 0;
        // SAFETY: `host` was registered with DEVICEMAP; a live out-pointer.
        cu("cuMemHostGetDevicePointer", unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut mapped, host, 0).result()
        })?;
        Ok(mapped)
    }

    unsafe fn copy_to_device(
        &self,
        to: DevicePtr,
        from: *const c_void,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<(), String> {
        // SAFETY: the caller's contract; `to` is an allocation as long.
        cu("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(to, from, bytes, stream).result()
        })
    }

    unsafe fn copy_to_host(
        &self,
        to: *mut c_void,
        from: DevicePtr,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<(), String> {
        // SAFETY: the caller's contract; `from` is an allocation as long.
        cu("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(to, from, bytes, stream).result()
        })
    }

    unsafe fn copy_device(
        &self,
        to: DevicePtr,
        from: DevicePtr,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<(), String> {
        // SAFETY: the caller's contract; unified addressing tells the
        // driver which devices the ranges are on.
        cu("cuMemcpyAsync", unsafe {
            sys::cuMemcpyAsync(to, from, bytes, stream).result()
        })
    }

    fn read(&self, from: DevicePtr, into: &mut [f64]) -> Result<(), String> {
        // SAFETY: `from..from+len` lies inside one of the runtime's
        // allocations (it reads what it allocated); `into` holds `len`.
        cu("cuMemcpyDtoH", unsafe {
            result::memcpy_dtoh_sync(into, from)
        })
    }

    fn record(&self, event: sys::CUevent, stream: sys::CUstream) -> Result<(), String> {
        // SAFETY: the event and the stream are live until the runtime drops.
        cu("cuEventRecord", unsafe {
            result::event::record(event, stream)
        })
    }

    fn wait(&self, stream: sys::CUstream, event: sys::CUevent) -> Result<(), String> {
        let flags = sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT;
        // SAFETY: the event and the stream are live until the runtime drops.
        cu("cuStreamWaitEvent", unsafe {
            result::stream::wait_event(stream, event, flags)
        })
    }

    fn elapsed_ms(&self, from: sys::CUevent, to: sys::CUevent) -> Result<f32, String> {
        // SAFETY: both events are live until the runtime drops and were
        // recorded.
        unsafe {
            cu("cuEventSynchronize", result::event::synchronize(to))?;
            cu("cuEventElapsedTime", result::event::elapsed(from, to))
        }
    }

    fn synchronize(&self, stream: sys::CUstream) -> Result<(), String> {
        // SAFETY: the stream is live until the runtime drops.
        cu("cuStreamSynchronize", unsafe {
            result::stream::synchronize(stream)
        })
    }

    fn enable_peer(&self, peer: u32) -> Result<bool, String> {
        let peer_dev = cu("cuDeviceGet", result::device::get(peer as i32))?;
        let mut can = 0;
        // SAFETY: two device handles of the driver's and a live out-pointer.
        cu("cuDeviceCanAccessPeer", unsafe {
            sys::cuDeviceCanAccessPeer(&mut can, self.dev, peer_dev).result()
        })?;
        if can == 0 {
            return Ok(false);
        }
        // SAFETY: the peer's primary context is retained for the call and
        // released after: the peer's own runtime keeps it alive.
        unsafe {
            let peer_ctx = cu(
                "cuDevicePrimaryCtxRetain",
                result::primary_ctx::retain(peer_dev),
            )?;
            let enabled = sys::cuCtxEnablePeerAccess(peer_ctx, 0);
            let _ = result::primary_ctx::release(peer_dev);
            match enabled {
                sys::CUresult::CUDA_SUCCESS
                | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(true),
                e => cu("cuCtxEnablePeerAccess", e.result()).map(|_| false),
            }
        }
    }

    unsafe fn release(&self, handle: Release<Self>) {
        // SAFETY: the caller's contract: each handle once, the context
        // current.
        let _ = unsafe {
            match handle {
                Release::Work => result::ctx::synchronize(),
                Release::Registered(p) => sys::cuMemHostUnregister(p).result(),
                Release::Allocation(p) => result::free_sync(p),
                Release::Event(e) => result::event::destroy(e),
                Release::Stream(s) => result::stream::destroy(s),
                Release::Module(m) => result::module::unload(m),
            }
        };
    }
}

#[cfg(test)]
mod tests {
    /// What a launch hands the driver is what the kernels declare.
    #[test]
    fn the_ptx_kernels_take_the_launch_values() {
        crate::backend::gpu::vendor::assert_kernels_take_the_values(include_str!("kernels.cu"));
    }
}
