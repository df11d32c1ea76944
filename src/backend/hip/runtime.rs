//! The GPU-runtime layer on HIP's module API: the device made current on
//! the host thread (`hipSetDevice`), the module of the code object built
//! for its target, two non-blocking streams and three events.

use super::api::{self, Api, Handle};
use crate::backend::gpu::runtime::{DevicePtr, Event, Function, KernelArgs, Runtime, Stream};
use std::ffi::{CString, c_int, c_void};

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

pub(super) struct HipRuntime {
    api: &'static Api,
    device: c_int,
    module: Handle,
    /// The target of the code object that loaded (`gfx90a`).
    pub target: &'static str,
    functions: Vec<(String, Handle)>,
    streams: [Handle; 2],
    events: [Handle; 3],
    allocated: Vec<*mut c_void>,
    registered: Vec<*mut c_void>,
}

impl HipRuntime {
    /// GPU `index`, current on this thread, with the module of its
    /// target loaded and its streams and events made.
    pub(super) fn open(index: u32) -> Result<HipRuntime, String> {
        let api = api::api()?;
        let device = index as c_int;
        // SAFETY: a device ordinal the runtime counted.
        api.check("hipSetDevice", unsafe { (api.hipSetDevice)(device) })?;
        let mut rt = HipRuntime {
            api,
            device,
            module: std::ptr::null_mut(),
            target: "",
            functions: Vec::new(),
            streams: [std::ptr::null_mut(); 2],
            events: [std::ptr::null_mut(); 3],
            allocated: Vec::new(),
            registered: Vec::new(),
        };
        (rt.module, rt.target) = load_module(api)?;
        for stream in &mut rt.streams {
            // SAFETY: writes one handle, destroyed in drop.
            let code = unsafe { (api.hipStreamCreateWithFlags)(stream, api::STREAM_NON_BLOCKING) };
            api.check("hipStreamCreateWithFlags", code)?;
        }
        for event in &mut rt.events {
            // SAFETY: writes one handle, destroyed in drop.
            api.check("hipEventCreate", unsafe { (api.hipEventCreate)(event) })?;
        }
        Ok(rt)
    }

    fn stream(&self, stream: Stream) -> Handle {
        self.streams[stream.index()]
    }

    fn event(&self, event: Event) -> Handle {
        self.events[event.index()]
    }

    fn copy(
        &self,
        to: *mut c_void,
        from: *const c_void,
        len: usize,
        kind: c_int,
        stream: Stream,
    ) -> Result<(), String> {
        // SAFETY: the callers' contracts: both ranges are valid for `len`
        // doubles until the stream is synchronized.
        let code =
            unsafe { (self.api.hipMemcpyAsync)(to, from, len * 8, kind, self.stream(stream)) };
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

impl Runtime for HipRuntime {
    fn architecture(&mut self) -> Option<String> {
        Some(self.target.to_string())
    }

    fn function(&mut self, name: &str) -> Result<Function, String> {
        if let Some(i) = self.functions.iter().position(|(n, _)| n == name) {
            return Ok(Function(i));
        }
        let cname = CString::new(name).map_err(|_| format!("kernel name {name:?} holds a NUL"))?;
        let mut f = std::ptr::null_mut();
        // SAFETY: the module is loaded until drop; the name is
        // NUL-terminated; writes one handle.
        let code = unsafe { (self.api.hipModuleGetFunction)(&mut f, self.module, cname.as_ptr()) };
        self.api
            .check(&format!("hipModuleGetFunction({name})"), code)?;
        self.functions.push((name.to_string(), f));
        Ok(Function(self.functions.len() - 1))
    }

    fn blocks_per_multiprocessor(&mut self, function: Function, block: u32) -> Result<u32, String> {
        let f = self.functions[function.0].1;
        let mut blocks = 0;
        // SAFETY: `f` is a function of the loaded module; no dynamic
        // shared memory is asked for.
        let code = unsafe {
            (self.api.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor)(
                &mut blocks,
                f,
                block as c_int,
                0,
            )
        };
        self.api
            .check("hipModuleOccupancyMaxActiveBlocksPerMultiprocessor", code)?;
        Ok(blocks.max(1) as u32)
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevicePtr, String> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: a plain allocation, freed in drop.
        self.api.check("hipMalloc", unsafe {
            (self.api.hipMalloc)(&mut ptr, bytes.max(8))
        })?;
        self.allocated.push(ptr);
        Ok(ptr as DevicePtr)
    }

    unsafe fn register(&mut self, host: *mut f64, len: usize) -> Result<DevicePtr, String> {
        let ptr = host.cast::<c_void>();
        // SAFETY: the caller keeps `host..host+len` mapped until this
        // runtime drops, which unregisters it first.
        let code =
            unsafe { (self.api.hipHostRegister)(ptr, len * 8, api::REGISTER_PORTABLE_MAPPED) };
        self.api.check("hipHostRegister", code)?;
        self.registered.push(ptr);
        let mut mapped = std::ptr::null_mut();
        // SAFETY: `ptr` was registered as mapped just above.
        let code = unsafe { (self.api.hipHostGetDevicePointer)(&mut mapped, ptr, 0) };
        self.api.check("hipHostGetDevicePointer", code)?;
        Ok(mapped as DevicePtr)
    }

    unsafe fn copy_to_device(
        &mut self,
        to: DevicePtr,
        from: *const f64,
        len: usize,
        stream: Stream,
    ) -> Result<(), String> {
        self.copy(
            to as *mut c_void,
            from.cast(),
            len,
            api::HOST_TO_DEVICE,
            stream,
        )
    }

    unsafe fn copy_to_host(
        &mut self,
        to: *mut f64,
        from: DevicePtr,
        len: usize,
        stream: Stream,
    ) -> Result<(), String> {
        self.copy(
            to.cast(),
            from as *const c_void,
            len,
            api::DEVICE_TO_HOST,
            stream,
        )
    }

    fn read(&mut self, from: DevicePtr, into: &mut [f64]) -> Result<(), String> {
        // SAFETY: `from..from+len` lies inside one of its allocations (the
        // caller reads what it allocated); `into` holds `len`.
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
        let (mut partial, mut s, mut n, mut blocks) =
            (args.partial, args.scalar, args.elements, grid);
        // kernels.cl's PARAMS: CUDA's, then the grid in blocks.
        let mut params: [*mut c_void; 10] = [
            (&raw mut a).cast(),
            (&raw mut b).cast(),
            (&raw mut c).cast(),
            (&raw mut d).cast(),
            (&raw mut h).cast(),
            (&raw mut r).cast(),
            (&raw mut partial).cast(),
            (&raw mut s).cast(),
            (&raw mut n).cast(),
            (&raw mut blocks).cast(),
        ];
        // SAFETY: `f` comes from the loaded module and takes kernels.cl's
        // PARAMS, which `params` points to in order; HIP copies the values
        // at the launch.
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
                self.stream(stream),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        self.api.check("hipModuleLaunchKernel", code)
    }

    fn record(&mut self, event: Event, stream: Stream) -> Result<(), String> {
        // SAFETY: the event and the stream are live until drop.
        let code = unsafe { (self.api.hipEventRecord)(self.event(event), self.stream(stream)) };
        self.api.check("hipEventRecord", code)
    }

    fn wait(&mut self, stream: Stream, event: Event) -> Result<(), String> {
        // SAFETY: the event and the stream are live until drop.
        let code =
            unsafe { (self.api.hipStreamWaitEvent)(self.stream(stream), self.event(event), 0) };
        self.api.check("hipStreamWaitEvent", code)
    }

    fn elapsed_s(&mut self, from: Event, to: Event) -> Result<f64, String> {
        let mut ms = 0f32;
        // SAFETY: both events are live until drop and were recorded.
        unsafe {
            self.api.check(
                "hipEventSynchronize",
                (self.api.hipEventSynchronize)(self.event(to)),
            )?;
            let code = (self.api.hipEventElapsedTime)(&mut ms, self.event(from), self.event(to));
            self.api.check("hipEventElapsedTime", code)?;
        }
        Ok(f64::from(ms) / 1e3)
    }

    fn synchronize(&mut self, stream: Stream) -> Result<(), String> {
        // SAFETY: the stream is live until drop.
        let code = unsafe { (self.api.hipStreamSynchronize)(self.stream(stream)) };
        self.api.check("hipStreamSynchronize", code)
    }

    fn make_current(&mut self) -> Result<(), String> {
        // SAFETY: a device ordinal the runtime counted.
        let code = unsafe { (self.api.hipSetDevice)(self.device) };
        self.api.check("hipSetDevice", code)
    }

    fn enable_peer(&mut self, peer: u32, _memory: &[(DevicePtr, usize)]) -> Result<bool, String> {
        let mut can = 0;
        // SAFETY: two device ordinals and a live out-pointer.
        let code =
            unsafe { (self.api.hipDeviceCanAccessPeer)(&mut can, self.device, peer as c_int) };
        self.api.check("hipDeviceCanAccessPeer", code)?;
        if can == 0 {
            return Ok(false);
        }
        self.make_current()?;
        // SAFETY: enables access from the current device to the peer's
        // memory; flags must be 0.
        match unsafe { (self.api.hipDeviceEnablePeerAccess)(peer as c_int, 0) } {
            api::SUCCESS | api::PEER_ACCESS_ALREADY_ENABLED => Ok(true),
            code => Err(self.api.fail("hipDeviceEnablePeerAccess", code)),
        }
    }

    unsafe fn copy_device(
        &mut self,
        to: DevicePtr,
        from: DevicePtr,
        len: usize,
        stream: Stream,
    ) -> Result<(), String> {
        // Unified addressing tells HIP which devices the two ranges are on.
        self.copy(
            to as *mut c_void,
            from as *const c_void,
            len,
            api::DEVICE_TO_DEVICE,
            stream,
        )
    }
}

impl Drop for HipRuntime {
    fn drop(&mut self) {
        let api = self.api;
        // SAFETY: each handle was made by this runtime and is released
        // once, with its device current. Errors are ignored: nothing more
        // can be done with them here.
        unsafe {
            let _ = (api.hipSetDevice)(self.device);
            let _ = (api.hipDeviceSynchronize)();
            for &ptr in &self.registered {
                let _ = (api.hipHostUnregister)(ptr);
            }
            for &ptr in &self.allocated {
                let _ = (api.hipFree)(ptr);
            }
            for event in self.events.into_iter().filter(|e| !e.is_null()) {
                let _ = (api.hipEventDestroy)(event);
            }
            for stream in self.streams.into_iter().filter(|s| !s.is_null()) {
                let _ = (api.hipStreamDestroy)(stream);
            }
            if !self.module.is_null() {
                let _ = (api.hipModuleUnload)(self.module);
            }
        }
    }
}
