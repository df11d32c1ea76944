//! HIP's calls for one AMD GPU (its module API): the device made current
//! on the host thread (`hipSetDevice`) and the module of the code object
//! built for its target. What they make is kept by `gpu::vendor`.

use super::api::{self, Api, Handle};
use crate::backend::gpu::runtime::{DevicePtr, DriverMemory};
use crate::backend::gpu::vendor::{KernelValues, Release, VendorCalls, VendorRuntime};
use std::ffi::{CStr, c_int, c_void};

/// Threads per block: `kernels.cl`'s `BLOCK` (its reqd_work_group_size),
/// whatever the build.
pub(super) const BLOCK: u32 = 256;

/// The code objects the binary carries, one per GPU target, built from
/// `kernels.cl` by `tools/hip_code_objects.py`.
pub(super) const CODE_OBJECTS: [(&str, &[u8]); 3] = [
    ("gfx942", include_bytes!("kernels-gfx942.co")),
    ("gfx90a", include_bytes!("kernels-gfx90a.co")),
    ("gfx1100", include_bytes!("kernels-gfx1100.co")),
];

/// One AMD GPU, by its ordinal, and the target of the code object that
/// loaded on it.
pub(super) struct HipCalls {
    api: &'static Api,
    device: c_int,
    /// The target of the code object that loaded (`gfx90a`).
    target: &'static str,
}

/// GPU `index`'s runtime, current on this thread.
pub(super) fn open(index: u32) -> Result<VendorRuntime<HipCalls>, String> {
    let calls = HipCalls {
        api: api::api()?,
        device: index as c_int,
        target: "",
    };
    calls.make_current()?;
    VendorRuntime::open(calls)
}

impl HipCalls {
    fn copy(
        &self,
        to: *mut c_void,
        from: *const c_void,
        bytes: usize,
        kind: c_int,
        stream: Handle,
    ) -> Result<(), String> {
        // SAFETY: the callers' contracts: both ranges are valid for
        // `bytes` until the stream is synchronized.
        let code = unsafe { (self.api.hipMemcpyAsync)(to, from, bytes, kind, stream) };
        self.api.check("hipMemcpyAsync", code)
    }
}

/// The target of the code object that loads on `device` (loaded and
/// unloaded again): what `describe` names before anything is planned.
pub(super) fn target_of(api: &Api, device: c_int) -> Result<&'static str, String> {
    // SAFETY: a device ordinal the runtime counted.
    api.check("hipSetDevice", unsafe { (api.hipSetDevice)(device) })?;
    let (module, target) = load_module(api)?;
    // SAFETY: the module was loaded just above and is not used again.
    let _ = unsafe { (api.hipModuleUnload)(module) };
    Ok(target)
}

/// The first of the carried code objects the current device loads: HIP
/// refuses an object built for another target.
fn load_module(api: &Api) -> Result<(Handle, &'static str), String> {
    let mut last = String::new();
    for (target, object) in CODE_OBJECTS {
        let mut module = std::ptr::null_mut();
        // SAFETY: an ELF code object that outlives the call (HIP copies
        // what it loads); writes one handle, unloaded in drop.
        let code = unsafe { (api.hipModuleLoadData)(&mut module, object.as_ptr().cast()) };
        if code == api::SUCCESS {
            return Ok((module, target));
        }
        last = api.fail(&format!("hipModuleLoadData({target})"), code);
    }
    let targets: Vec<&str> = CODE_OBJECTS.iter().map(|(t, _)| *t).collect();
    Err(format!(
        "no code object membw carries runs on this GPU (it carries {}; the last refused with {last})",
        targets.join(", ")
    ))
}

impl VendorCalls for HipCalls {
    type Module = Handle;
    type Function = Handle;
    type Stream = Handle;
    type Event = Handle;

    unsafe fn launch(
        &self,
        f: Handle,
        grid: u32,
        block: u32,
        values: &mut KernelValues,
        stream: Handle,
    ) -> Result<(), String> {
        let mut params = values.pointers();
        // SAFETY: the caller's contract (live function, stream and
        // arrays); `params` points to each value the kernels take, alive
        // for the call, which copies them.
        let code = unsafe {
            (self.api.hipModuleLaunchKernel)(
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
        self.api.check("hipModuleLaunchKernel", code)
    }

    fn architecture(&self) -> Option<String> {
        Some(self.target.to_string())
    }

    fn make_current(&self) -> Result<(), String> {
        // SAFETY: a device ordinal the runtime counted.
        let code = unsafe { (self.api.hipSetDevice)(self.device) };
        self.api.check("hipSetDevice", code)
    }

    fn load_module(&mut self) -> Result<Handle, String> {
        let (module, target) = load_module(self.api)?;
        self.target = target;
        Ok(module)
    }

    fn function(&self, module: Handle, name: &CStr) -> Result<Handle, String> {
        let mut f = std::ptr::null_mut();
        // SAFETY: the module is loaded until the runtime drops; the name
        // is NUL-terminated; writes one handle.
        let code = unsafe { (self.api.hipModuleGetFunction)(&mut f, module, name.as_ptr()) };
        let call = format!("hipModuleGetFunction({})", name.to_string_lossy());
        self.api.check(&call, code)?;
        Ok(f)
    }

    fn blocks_per_multiprocessor(&self, f: Handle, block: u32) -> Result<u32, String> {
        let mut blocks = 0;
        // SAFETY: `f` is a function of the loaded module; no dynamic
        // shared memory is asked for.
        let code = unsafe {
            (self.api.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor)(
                &mut blocks, f, block as c_int, 0,
            )
        };
        self.api
            .check("hipModuleOccupancyMaxActiveBlocksPerMultiprocessor", code)?;
        Ok(blocks.max(0) as u32)
    }

    fn create_stream(&self) -> Result<Handle, String> {
        let mut stream = std::ptr::null_mut();
        // SAFETY: writes one handle, destroyed by the runtime's drop.
        let code =
            unsafe { (self.api.hipStreamCreateWithFlags)(&mut stream, api::STREAM_NON_BLOCKING) };
        self.api.check("hipStreamCreateWithFlags", code)?;
        Ok(stream)
    }

    fn create_event(&self) -> Result<Handle, String> {
        let mut event = std::ptr::null_mut();
        // SAFETY: writes one handle, destroyed by the runtime's drop.
        let code = unsafe { (self.api.hipEventCreate)(&mut event) };
        self.api.check("hipEventCreate", code)?;
        Ok(event)
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr, String> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: a plain allocation, freed by the runtime's drop.
        let code = unsafe { (self.api.hipMalloc)(&mut ptr, bytes) };
        self.api.check("hipMalloc", code)?;
        Ok(ptr as DevicePtr)
    }

    fn alloc_managed(&self, bytes: usize) -> Result<DevicePtr, String> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: writes one pointer; freed by the runtime's drop.
        let code = unsafe { (self.api.hipMallocManaged)(&mut ptr, bytes, api::ATTACH_GLOBAL) };
        self.api.check("hipMallocManaged", code)?;
        Ok(ptr as DevicePtr)
    }

    fn prefetch(&self, ptr: DevicePtr, bytes: usize, stream: Handle) -> Result<(), String> {
        // SAFETY: `ptr..ptr+bytes` is a managed allocation of the
        // runtime's; the stream is live.
        let code = unsafe {
            (self.api.hipMemPrefetchAsync)(ptr as *const c_void, bytes, self.device, stream)
        };
        self.api.check("hipMemPrefetchAsync", code)
    }

    fn memory_at(&self, ptr: DevicePtr) -> Result<DriverMemory, String> {
        let attribute = |what: c_int| -> Result<Option<u32>, String> {
            let mut value: u32 = 0;
            // SAFETY: both attributes write one 32-bit value.
            let code = unsafe {
                (self.api.hipPointerGetAttribute)((&raw mut value).cast(), what, ptr as *mut c_void)
            };
            match code {
                api::SUCCESS => Ok(Some(value)),
                // Memory the runtime has no record of: pageable.
                api::INVALID_VALUE => Ok(None),
                code => Err(self.api.fail("hipPointerGetAttribute", code)),
            }
        };
        if attribute(api::POINTER_IS_MANAGED)? == Some(1) {
            return Ok(DriverMemory::Managed);
        }
        Ok(match attribute(api::POINTER_MEMORY_TYPE)? {
            Some(t) if t == api::memory_type_host(self.api) => DriverMemory::Host,
            Some(_) => DriverMemory::Device,
            None => DriverMemory::Pageable,
        })
    }

    unsafe fn register(&self, host: *mut c_void, bytes: usize) -> Result<(), String> {
        // SAFETY: the caller keeps the memory mapped until it is
        // unregistered.
        let code =
            unsafe { (self.api.hipHostRegister)(host, bytes, api::REGISTER_PORTABLE_MAPPED) };
        self.api.check("hipHostRegister", code)
    }

    fn mapped(&self, host: *mut c_void) -> Result<DevicePtr, String> {
        let mut mapped = std::ptr::null_mut();
        // SAFETY: `host` was registered as mapped; a live out-pointer.
        let code = unsafe { (self.api.hipHostGetDevicePointer)(&mut mapped, host, 0) };
        self.api.check("hipHostGetDevicePointer", code)?;
        Ok(mapped as DevicePtr)
    }

    unsafe fn copy_to_device(
        &self,
        to: DevicePtr,
        from: *const c_void,
        bytes: usize,
        stream: Handle,
    ) -> Result<(), String> {
        self.copy(to as *mut c_void, from, bytes, api::HOST_TO_DEVICE, stream)
    }

    unsafe fn copy_to_host(
        &self,
        to: *mut c_void,
        from: DevicePtr,
        bytes: usize,
        stream: Handle,
    ) -> Result<(), String> {
        let from = from as *const c_void;
        self.copy(to, from, bytes, api::DEVICE_TO_HOST, stream)
    }

    unsafe fn copy_device(
        &self,
        to: DevicePtr,
        from: DevicePtr,
        bytes: usize,
        stream: Handle,
    ) -> Result<(), String> {
        // Unified addressing tells HIP which devices the two ranges are on.
        let (to, from) = (to as *mut c_void, from as *const c_void);
        self.copy(to, from, bytes, api::DEVICE_TO_DEVICE, stream)
    }

    fn read(&self, from: DevicePtr, into: &mut [f64]) -> Result<(), String> {
        // SAFETY: `from..from+len` lies inside one of the runtime's
        // allocations (it reads what it allocated); `into` holds `len`.
        let code = unsafe {
            (self.api.hipMemcpy)(
                into.as_mut_ptr().cast(),
                from as *const c_void,
                into.len() * 8,
                api::DEVICE_TO_HOST,
            )
        };
        self.api.check("hipMemcpy", code)
    }

    fn record(&self, event: Handle, stream: Handle) -> Result<(), String> {
        // SAFETY: the event and the stream are live until the runtime drops.
        let code = unsafe { (self.api.hipEventRecord)(event, stream) };
        self.api.check("hipEventRecord", code)
    }

    fn wait(&self, stream: Handle, event: Handle) -> Result<(), String> {
        // SAFETY: the event and the stream are live until the runtime drops.
        let code = unsafe { (self.api.hipStreamWaitEvent)(stream, event, 0) };
        self.api.check("hipStreamWaitEvent", code)
    }

    fn elapsed_ms(&self, from: Handle, to: Handle) -> Result<f32, String> {
        let mut ms = 0f32;
        // SAFETY: both events are live until the runtime drops and were
        // recorded.
        unsafe {
            let code = (self.api.hipEventSynchronize)(to);
            self.api.check("hipEventSynchronize", code)?;
            let code = (self.api.hipEventElapsedTime)(&mut ms, from, to);
            self.api.check("hipEventElapsedTime", code)?;
        }
        Ok(ms)
    }

    fn synchronize(&self, stream: Handle) -> Result<(), String> {
        // SAFETY: the stream is live until the runtime drops.
        let code = unsafe { (self.api.hipStreamSynchronize)(stream) };
        self.api.check("hipStreamSynchronize", code)
    }

    fn enable_peer(&self, peer: u32) -> Result<bool, String> {
        let mut can = 0;
        // SAFETY: two device ordinals and a live out-pointer.
        let code =
            unsafe { (self.api.hipDeviceCanAccessPeer)(&mut can, self.device, peer as c_int) };
        self.api.check("hipDeviceCanAccessPeer", code)?;
        if can == 0 {
            return Ok(false);
        }
        // SAFETY: enables access from the current device to the peer's
        // memory; flags must be 0.
        match unsafe { (self.api.hipDeviceEnablePeerAccess)(peer as c_int, 0) } {
            api::SUCCESS | api::PEER_ACCESS_ALREADY_ENABLED => Ok(true),
            code => Err(self.api.fail("hipDeviceEnablePeerAccess", code)),
        }
    }

    unsafe fn release(&self, handle: Release<Self>) {
        let api = self.api;
        // SAFETY: the caller's contract: each handle once, the device
        // current.
        let _ = unsafe {
            match handle {
                Release::Work => (api.hipDeviceSynchronize)(),
                Release::Registered(p) => (api.hipHostUnregister)(p),
                Release::Allocation(p) => (api.hipFree)(p as *mut c_void),
                Release::Event(e) => (api.hipEventDestroy)(e),
                Release::Stream(s) => (api.hipStreamDestroy)(s),
                Release::Module(m) => (api.hipModuleUnload)(m),
            }
        };
    }
}

#[cfg(test)]
mod tests {
    /// What a launch hands the driver is what the kernels declare.
    #[test]
    fn the_code_objects_kernels_take_the_launch_values() {
        crate::backend::gpu::vendor::assert_kernels_take_the_values(include_str!("kernels.cl"));
    }
}
