//! One device's runtime, written once for every vendor. A vendor supplies
//! its calls ([`VendorCalls`]: one driver call each, and no state beyond
//! the device it opened); [`VendorRuntime`] keeps what they make (the
//! module, the functions looked up, two streams, three events, the
//! allocations and the registered host memory), lays out the kernels'
//! parameters, launches them through the driver's own entry, and releases
//! everything in the order the drivers need.

use super::runtime::{DevicePtr, Event, Function, KernelArgs, Runtime, Stream};
use std::ffi::{CStr, CString, c_uint, c_void};

/// The drivers' module launch, shaped alike in every vendor's API
/// (`cuLaunchKernel` and its AMD twin): the function, the grid and the block
/// in three dimensions each, the dynamic shared memory in bytes, the
/// stream, the parameters, the "extra" list; the vendor's code back.
pub type LaunchEntry<V> = unsafe extern "C" fn(
    <V as VendorCalls>::Function,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    <V as VendorCalls>::Stream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> <V as VendorCalls>::Code;

/// A vendor's driver calls for one device, each one call of its API and
/// an `Err` of one line naming it. The handles are the vendor's own.
pub trait VendorCalls {
    type Module: Copy;
    type Function: Copy;
    type Stream: Copy;
    type Event: Copy;
    /// What the driver's calls return (0 is success in both vendors').
    type Code: Copy;

    /// The GPU's architecture as the vendor names it (`sm_90`, `gfx942`).
    fn architecture(&self) -> Option<String>;
    /// Makes the device current on the calling thread.
    fn make_current(&self) -> Result<(), String>;
    /// Loads the kernels' module for this device.
    fn load_module(&mut self) -> Result<Self::Module, String>;
    fn function(&self, module: Self::Module, name: &CStr) -> Result<Self::Function, String>;
    fn blocks_per_multiprocessor(&self, f: Self::Function, block: u32) -> Result<u32, String>;
    /// A stream that does not wait for the legacy default stream.
    fn create_stream(&self) -> Result<Self::Stream, String>;
    fn create_event(&self) -> Result<Self::Event, String>;
    fn alloc(&self, bytes: usize) -> Result<DevicePtr, String>;
    /// Pins and maps `bytes` of host memory at `host` for every device.
    ///
    /// # Safety
    /// The memory stays mapped until it is unregistered.
    unsafe fn register(&self, host: *mut c_void, bytes: usize) -> Result<(), String>;
    /// The device's address of registered host memory.
    fn mapped(&self, host: *mut c_void) -> Result<DevicePtr, String>;
    /// # Safety
    /// `from..from+bytes` stays valid until the stream is synchronized.
    unsafe fn copy_to_device(
        &self,
        to: DevicePtr,
        from: *const c_void,
        bytes: usize,
        stream: Self::Stream,
    ) -> Result<(), String>;
    /// # Safety
    /// `to..to+bytes` stays valid and untouched until the stream is
    /// synchronized.
    unsafe fn copy_to_host(
        &self,
        to: *mut c_void,
        from: DevicePtr,
        bytes: usize,
        stream: Self::Stream,
    ) -> Result<(), String>;
    /// # Safety
    /// Both ranges are device memory (this device's or an enabled peer's)
    /// alive until the stream is synchronized.
    unsafe fn copy_device(
        &self,
        to: DevicePtr,
        from: DevicePtr,
        bytes: usize,
        stream: Self::Stream,
    ) -> Result<(), String>;
    /// Copies `from` into `into` and returns once it is there.
    fn read(&self, from: DevicePtr, into: &mut [f64]) -> Result<(), String>;
    /// The driver's launch entry and its name, looked up once: the timed
    /// loop calls the driver straight from [`Runtime::launch`].
    fn launch_entry(&self) -> Result<(&'static str, LaunchEntry<Self>), String>
    where
        Self: Sized;
    /// `code`, a driver call's result, as `Ok` or one line naming `call`.
    fn check(&self, call: &str, code: Self::Code) -> Result<(), String>;
    fn record(&self, event: Self::Event, stream: Self::Stream) -> Result<(), String>;
    fn wait(&self, stream: Self::Stream, event: Self::Event) -> Result<(), String>;
    /// Milliseconds between two recorded events, once `to` has happened.
    fn elapsed_ms(&self, from: Self::Event, to: Self::Event) -> Result<f32, String>;
    fn synchronize(&self, stream: Self::Stream) -> Result<(), String>;
    /// Lets the current device address device `peer`'s memory, where the
    /// driver allows it.
    fn enable_peer(&self, peer: u32) -> Result<bool, String>;

    /// What the runtime's drop releases, with the device current and its
    /// work done first; errors are ignored there.
    ///
    /// # Safety
    /// Each handle was made by these calls and is released once.
    unsafe fn release(&self, handle: Release<Self>);
}

/// One handle being released, in the order [`VendorRuntime`] drops them.
pub enum Release<V: VendorCalls + ?Sized> {
    /// Waits for everything queued on the device.
    Work,
    Registered(*mut c_void),
    Allocation(DevicePtr),
    Event(V::Event),
    Stream(V::Stream),
    Module(V::Module),
}

/// A device's runtime on a vendor's calls: the bookkeeping every vendor
/// shares. The vendor's own state (a retained context) drops after it.
pub struct VendorRuntime<V: VendorCalls> {
    module: Option<V::Module>,
    /// The kernels looked up so far, by name.
    functions: Vec<(String, V::Function)>,
    /// [`Stream`]'s two and [`Event`]'s three, by their index.
    streams: Vec<V::Stream>,
    events: Vec<V::Event>,
    allocated: Vec<DevicePtr>,
    registered: Vec<*mut c_void>,
    /// The driver's launch entry, by name.
    launch: (&'static str, LaunchEntry<V>),
    calls: V,
}

impl<V: VendorCalls> VendorRuntime<V> {
    /// The runtime of the device `calls` opened (current on this thread):
    /// its module loaded, its streams and events made.
    pub fn open(calls: V) -> Result<VendorRuntime<V>, String> {
        let launch = calls.launch_entry()?;
        let mut rt = VendorRuntime {
            module: None,
            functions: Vec::new(),
            streams: Vec::new(),
            events: Vec::new(),
            allocated: Vec::new(),
            registered: Vec::new(),
            launch,
            calls,
        };
        rt.module = Some(rt.calls.load_module()?);
        for _ in [Stream::Main, Stream::Other] {
            rt.streams.push(rt.calls.create_stream()?);
        }
        for _ in [Event::Start, Event::End, Event::OtherDone] {
            rt.events.push(rt.calls.create_event()?);
        }
        Ok(rt)
    }

    /// The vendor's calls, for what only it knows (the code object that
    /// loaded).
    pub fn calls(&self) -> &V {
        &self.calls
    }

    fn stream(&self, stream: Stream) -> V::Stream {
        self.streams[stream.index()]
    }

    fn event(&self, event: Event) -> V::Event {
        self.events[event.index()]
    }
}

/// The values every launch passes, in the kernels' order: `KernelArgs`,
/// then the grid in blocks (which only `kernels.cl`'s kernels take: a
/// driver reads as many as the kernel it launches has parameters).
struct LaunchValues {
    arrays: [DevicePtr; crate::kernels::ARRAYS],
    partial: DevicePtr,
    scalar: f64,
    elements: u64,
    blocks: u32,
}

impl LaunchValues {
    /// Pointers to each value, in order, as the drivers' launch calls take
    /// them (they copy the values at the launch).
    fn pointers(&mut self) -> [*mut c_void; 10] {
        let [a, b, c, d, h, r] = &mut self.arrays;
        [
            (a as *mut DevicePtr).cast(),
            (b as *mut DevicePtr).cast(),
            (c as *mut DevicePtr).cast(),
            (d as *mut DevicePtr).cast(),
            (h as *mut DevicePtr).cast(),
            (r as *mut DevicePtr).cast(),
            (&raw mut self.partial).cast(),
            (&raw mut self.scalar).cast(),
            (&raw mut self.elements).cast(),
            (&raw mut self.blocks).cast(),
        ]
    }
}

impl<V: VendorCalls> Runtime for VendorRuntime<V> {
    fn architecture(&mut self) -> Option<String> {
        self.calls.architecture()
    }

    fn function(&mut self, name: &str) -> Result<Function, String> {
        if let Some(i) = self.functions.iter().position(|(n, _)| n == name) {
            return Ok(Function(i));
        }
        let cname = CString::new(name).map_err(|_| format!("kernel name {name:?} holds a NUL"))?;
        let module = self.module.ok_or("the kernels' module is not loaded")?;
        let f = self.calls.function(module, &cname)?;
        self.functions.push((name.to_string(), f));
        Ok(Function(self.functions.len() - 1))
    }

    fn blocks_per_multiprocessor(&mut self, function: Function, block: u32) -> Result<u32, String> {
        let blocks = (self.calls).blocks_per_multiprocessor(self.functions[function.0].1, block)?;
        Ok(blocks.max(1))
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevicePtr, String> {
        let ptr = self.calls.alloc(bytes.max(8))?;
        self.allocated.push(ptr);
        Ok(ptr)
    }

    unsafe fn register(&mut self, host: *mut f64, len: usize) -> Result<DevicePtr, String> {
        let ptr = host.cast::<c_void>();
        // SAFETY: the caller keeps `host..host+len` mapped until this
        // runtime drops, which unregisters it first.
        unsafe { self.calls.register(ptr, len * 8)? };
        self.registered.push(ptr);
        self.calls.mapped(ptr)
    }

    unsafe fn copy_to_device(
        &mut self,
        to: DevicePtr,
        from: *const f64,
        len: usize,
        stream: Stream,
    ) -> Result<(), String> {
        // SAFETY: the caller's contract, passed on.
        unsafe { (self.calls).copy_to_device(to, from.cast(), len * 8, self.stream(stream)) }
    }

    unsafe fn copy_to_host(
        &mut self,
        to: *mut f64,
        from: DevicePtr,
        len: usize,
        stream: Stream,
    ) -> Result<(), String> {
        // SAFETY: the caller's contract, passed on.
        unsafe { (self.calls).copy_to_host(to.cast(), from, len * 8, self.stream(stream)) }
    }

    fn read(&mut self, from: DevicePtr, into: &mut [f64]) -> Result<(), String> {
        self.calls.read(from, into)
    }

    fn launch(
        &mut self,
        function: Function,
        grid: u32,
        block: u32,
        args: &KernelArgs,
        stream: Stream,
    ) -> Result<(), String> {
        let mut values = LaunchValues {
            arrays: args.arrays,
            partial: args.partial,
            scalar: args.scalar,
            elements: args.elements,
            blocks: grid,
        };
        let mut params = values.pointers();
        let f = self.functions[function.0].1;
        let (name, entry) = self.launch;
        // SAFETY: `params` points to each value the kernels take, in their
        // order, alive for the call (the drivers copy them at the launch);
        // the function and the stream are live until the runtime drops.
        let code = unsafe {
            entry(
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
        self.calls.check(name, code)
    }

    fn record(&mut self, event: Event, stream: Stream) -> Result<(), String> {
        self.calls.record(self.event(event), self.stream(stream))
    }

    fn wait(&mut self, stream: Stream, event: Event) -> Result<(), String> {
        self.calls.wait(self.stream(stream), self.event(event))
    }

    fn elapsed_s(&mut self, from: Event, to: Event) -> Result<f64, String> {
        let ms = self.calls.elapsed_ms(self.event(from), self.event(to))?;
        Ok(f64::from(ms) / 1e3)
    }

    fn synchronize(&mut self, stream: Stream) -> Result<(), String> {
        self.calls.synchronize(self.stream(stream))
    }

    fn make_current(&mut self) -> Result<(), String> {
        self.calls.make_current()
    }

    fn enable_peer(&mut self, peer: u32, _memory: &[(DevicePtr, usize)]) -> Result<bool, String> {
        // Unified addressing names the peer's memory: only access is asked.
        self.calls.make_current()?;
        self.calls.enable_peer(peer)
    }

    unsafe fn copy_device(
        &mut self,
        to: DevicePtr,
        from: DevicePtr,
        len: usize,
        stream: Stream,
    ) -> Result<(), String> {
        // SAFETY: the caller's contract, passed on.
        unsafe { (self.calls).copy_device(to, from, len * 8, self.stream(stream)) }
    }
}

impl<V: VendorCalls> Drop for VendorRuntime<V> {
    fn drop(&mut self) {
        let _ = self.calls.make_current();
        let releases = std::iter::once(Release::Work)
            .chain(self.registered.iter().map(|&p| Release::Registered(p)))
            .chain(self.allocated.iter().map(|&p| Release::Allocation(p)))
            .chain(self.events.iter().map(|&e| Release::Event(e)))
            .chain(self.streams.iter().map(|&s| Release::Stream(s)))
            .chain(self.module.map(Release::Module));
        for handle in releases {
            // SAFETY: each handle was made by these calls, is in one list
            // once, and the lists are not used after the drop.
            unsafe { self.calls.release(handle) };
        }
    }
}
