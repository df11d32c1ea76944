//! The GPU-runtime layer on NVIDIA's driver API (cudarc's thin `result`
//! layer, so that what is timed is exactly the launches and copies between
//! two events): the primary context made current on the host thread, the
//! module of `kernels.ptx` (which the driver compiles for the GPU it finds
//! when it loads), two non-blocking streams and three events.

use super::KERNELS_PTX;
use super::driver::fail;
use crate::backend::gpu::runtime::{DevicePtr, Event, Function, KernelArgs, Runtime, Stream};
use cudarc::driver::{result, sys};
use std::ffi::{CString, c_void};

/// A driver call's result, as one line.
fn cu<T>(call: &str, r: Result<T, result::DriverError>) -> Result<T, String> {
    r.map_err(|e| fail(call, e))
}

pub(super) struct CudaRuntime {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    module: sys::CUmodule,
    /// The kernels looked up so far, by name.
    functions: Vec<(String, sys::CUfunction)>,
    streams: [sys::CUstream; 2],
    events: [sys::CUevent; 3],
    /// Device memory it owns, and host memory it registered.
    allocated: Vec<sys::CUdeviceptr>,
    registered: Vec<*mut c_void>,
}

impl CudaRuntime {
    /// GPU `index`'s primary context, current on this thread, with the
    /// module loaded and its streams and events made.
    pub(super) fn open(index: u32) -> Result<CudaRuntime, String> {
        super::driver::load()?;
        let dev = cu("cuDeviceGet", result::device::get(index as i32))?;
        // SAFETY: `dev` is the driver's handle; the primary context is
        // released in `drop`.
        let ctx = cu("cuDevicePrimaryCtxRetain", unsafe {
            result::primary_ctx::retain(dev)
        })?;
        let mut rt = CudaRuntime {
            dev,
            ctx,
            module: std::ptr::null_mut(),
            functions: Vec::new(),
            streams: [std::ptr::null_mut(); 2],
            events: [std::ptr::null_mut(); 3],
            allocated: Vec::new(),
            registered: Vec::new(),
        };
        // SAFETY: the context was just retained and is live until drop.
        cu("cuCtxSetCurrent", unsafe { result::ctx::set_current(ctx) })?;
        let ptx = CString::new(KERNELS_PTX).map_err(|_| "the kernels' PTX holds a NUL")?;
        // SAFETY: the image is a NUL-terminated PTX text that outlives the
        // call (the driver copies what it compiles).
        rt.module = cu("cuModuleLoadData", unsafe {
            result::module::load_data(ptx.as_ptr().cast())
        })?;
        use result::stream::StreamKind::NonBlocking;
        for stream in &mut rt.streams {
            *stream = cu("cuStreamCreate", result::stream::create(NonBlocking))?;
        }
        for event in &mut rt.events {
            *event = cu(
                "cuEventCreate",
                result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT),
            )?;
        }
        Ok(rt)
    }

    fn stream(&self, stream: Stream) -> sys::CUstream {
        self.streams[stream.index()]
    }

    fn event(&self, event: Event) -> sys::CUevent {
        self.events[event.index()]
    }
}

impl Runtime for CudaRuntime {
    fn architecture(&mut self) -> Option<String> {
        let (major, minor) = super::driver::capability(self.dev).ok()?;
        Some(format!("sm_{major}{minor}"))
    }

    fn function(&mut self, name: &str) -> Result<Function, String> {
        if let Some(i) = self.functions.iter().position(|(n, _)| n == name) {
            return Ok(Function(i));
        }
        let cname = CString::new(name).map_err(|_| format!("kernel name {name:?} holds a NUL"))?;
        // SAFETY: the module was loaded in `open` and is unloaded in drop.
        let f = cu(&format!("cuModuleGetFunction({name})"), unsafe {
            result::module::get_function(self.module, cname)
        })?;
        self.functions.push((name.to_string(), f));
        Ok(Function(self.functions.len() - 1))
    }

    fn blocks_per_multiprocessor(&mut self, function: Function, block: u32) -> Result<u32, String> {
        let f = self.functions[function.0].1;
        // SAFETY: `f` is a function of the loaded module; no dynamic
        // shared memory is asked for.
        let blocks = cu("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            result::occupancy::max_active_block_per_multiprocessor(f, block as i32, 0)
        })?;
        Ok(blocks.max(1) as u32)
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevicePtr, String> {
        // SAFETY: a plain allocation, freed in drop.
        let ptr = cu("cuMemAlloc", unsafe { result::malloc_sync(bytes.max(8)) })?;
        self.allocated.push(ptr);
        Ok(ptr)
    }

    unsafe fn register(&mut self, host: *mut f64, len: usize) -> Result<DevicePtr, String> {
        let ptr = host.cast::<c_void>();
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
        // SAFETY: the caller keeps `host..host+len` mapped until this
        // runtime drops, which unregisters it first.
        cu("cuMemHostRegister", unsafe {
            sys::cuMemHostRegister_v2(ptr, len * 8, flags).result()
        })?;
        self.registered.push(ptr);
        let mut mapped: sys::CUdeviceptr = 0;
        // SAFETY: `ptr` was registered with DEVICEMAP just above.
        cu("cuMemHostGetDevicePointer", unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut mapped, ptr, 0).result()
        })?;
        Ok(mapped)
    }

    unsafe fn copy_to_device(
        &mut self,
        to: DevicePtr,
        from: *const f64,
        len: usize,
        stream: Stream,
    ) -> Result<(), String> {
        // SAFETY: the caller keeps `from..from+len` valid until the stream
        // is synchronized; `to` is an allocation at least as long.
        cu("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(to, from.cast(), len * 8, self.stream(stream)).result()
        })
    }

    unsafe fn copy_to_host(
        &mut self,
        to: *mut f64,
        from: DevicePtr,
        len: usize,
        stream: Stream,
    ) -> Result<(), String> {
        // SAFETY: the caller keeps `to..to+len` valid and untouched until
        // the stream is synchronized; `from` is an allocation as long.
        cu("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(to.cast(), from, len * 8, self.stream(stream)).result()
        })
    }

    fn read(&mut self, from: DevicePtr, into: &mut [f64]) -> Result<(), String> {
        // SAFETY: `from..from+len` lies inside one of its allocations (the
        // caller reads what it allocated); `into` holds `len`.
        cu("cuMemcpyDtoH", unsafe {
            result::memcpy_dtoh_sync(into, from)
        })
    }

    fn launch(
        &mut self,
        function: Function,
        grid: u32,
        block: u32,
        args: &KernelArgs,
        stream: Stream,
    ) -> Result<(), String> {
        let f = self.functions[function.0].1;
        let [mut a, mut b, mut c, mut d, mut h, mut r] = args.arrays;
        let (mut partial, mut s, mut n) = (args.partial, args.scalar, args.elements);
        let mut params: [*mut c_void; 9] = [
            (&raw mut a).cast(),
            (&raw mut b).cast(),
            (&raw mut c).cast(),
            (&raw mut d).cast(),
            (&raw mut h).cast(),
            (&raw mut r).cast(),
            (&raw mut partial).cast(),
            (&raw mut s).cast(),
            (&raw mut n).cast(),
        ];
        // SAFETY: `f` comes from the loaded module and takes kernels.cu's
        // PARAMS, which `params` points to in order; the driver copies
        // the values at the launch.
        cu("cuLaunchKernel", unsafe {
            result::launch_kernel(
                f,
                (grid, 1, 1),
                (block, 1, 1),
                0,
                self.stream(stream),
                &mut params,
            )
        })
    }

    fn record(&mut self, event: Event, stream: Stream) -> Result<(), String> {
        // SAFETY: the event and the stream are live until drop.
        cu("cuEventRecord", unsafe {
            result::event::record(self.event(event), self.stream(stream))
        })
    }

    fn wait(&mut self, stream: Stream, event: Event) -> Result<(), String> {
        // SAFETY: the event and the stream are live until drop.
        cu("cuStreamWaitEvent", unsafe {
            result::stream::wait_event(
                self.stream(stream),
                self.event(event),
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        })
    }

    fn elapsed_s(&mut self, from: Event, to: Event) -> Result<f64, String> {
        // SAFETY: both events are live until drop and were recorded.
        unsafe {
            cu(
                "cuEventSynchronize",
                result::event::synchronize(self.event(to)),
            )?;
            let ms = cu(
                "cuEventElapsedTime",
                result::event::elapsed(self.event(from), self.event(to)),
            )?;
            Ok(f64::from(ms) / 1e3)
        }
    }

    fn synchronize(&mut self, stream: Stream) -> Result<(), String> {
        // SAFETY: the stream is live until drop.
        cu("cuStreamSynchronize", unsafe {
            result::stream::synchronize(self.stream(stream))
        })
    }

    fn make_current(&mut self) -> Result<(), String> {
        // SAFETY: the context is retained by this runtime until it drops.
        cu("cuCtxSetCurrent", unsafe {
            result::ctx::set_current(self.ctx)
        })
    }

    fn enable_peer(&mut self, peer: u32, _memory: &[(DevicePtr, usize)]) -> Result<bool, String> {
        // Unified addressing names the peer's memory: only access is asked.
        let peer_dev = cu("cuDeviceGet", result::device::get(peer as i32))?;
        let mut can = 0;
        // SAFETY: two device handles of the driver's and a live out-pointer.
        cu("cuDeviceCanAccessPeer", unsafe {
            sys::cuDeviceCanAccessPeer(&mut can, self.dev, peer_dev).result()
        })?;
        if can == 0 {
            return Ok(false);
        }
        self.make_current()?;
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

    unsafe fn copy_device(
        &mut self,
        to: DevicePtr,
        from: DevicePtr,
        len: usize,
        stream: Stream,
    ) -> Result<(), String> {
        // SAFETY: the caller's contract: both ranges are device memory
        // alive until the stream is synchronized; unified addressing tells
        // the driver which devices they are on.
        cu("cuMemcpyAsync", unsafe {
            sys::cuMemcpyAsync(to, from, len * 8, self.stream(stream)).result()
        })
    }
}

impl Drop for CudaRuntime {
    fn drop(&mut self) {
        // SAFETY: each handle was made by this runtime and is released
        // once; the context is made current first, as the calls need it.
        // Errors are ignored: nothing more can be done with them here.
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::ctx::synchronize();
            for &ptr in &self.registered {
                let _ = sys::cuMemHostUnregister(ptr);
            }
            for &ptr in &self.allocated {
                let _ = result::free_sync(ptr);
            }
            for event in self.events.into_iter().filter(|e| !e.is_null()) {
                let _ = result::event::destroy(event);
            }
            for stream in self.streams.into_iter().filter(|s| !s.is_null()) {
                let _ = result::stream::destroy(stream);
            }
            if !self.module.is_null() {
                let _ = result::module::unload(self.module);
            }
            let _ = result::primary_ctx::release(self.dev);
        }
    }
}
