//! One device's runtime, written once for every vendor. A vendor supplies
//! its calls ([`VendorCalls`]: one driver call each, and no state beyond
//! the device it opened); [`VendorRuntime`] keeps what they make (the
//! module, the functions looked up, two streams, three events, the
//! allocations and the registered host memory), gathers the kernels'
//! parameters ([`KernelValues`]) for the vendor's own launch, and releases
//! everything in the order the drivers need.

use super::runtime::{DevicePtr, DriverMemory, Event, Function, KernelArgs, Runtime, Stream};
use std::ffi::{CStr, CString, c_void};

/// A vendor's driver calls for one device, each one call of its API and
/// an `Err` of one line naming it. The handles are the vendor's own.
pub trait VendorCalls {
    type Module: Copy;
    type Function: Copy;
    type Stream: Copy;
    type Event: Copy;

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
    /// Managed memory, attached to every stream.
    fn alloc_managed(&self, bytes: usize) -> Result<DevicePtr, String>;
    /// Queues a move of managed memory to this device.
    fn prefetch(&self, ptr: DevicePtr, bytes: usize, stream: Self::Stream) -> Result<(), String>;
    /// What the driver's pointer attributes say `ptr` is: memory it has
    /// no record of is pageable.
    fn memory_at(&self, ptr: DevicePtr) -> Result<DriverMemory, String>;
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
    /// Queues `f` on `stream` over `grid` blocks of `block` threads, its
    /// parameters `values`, in the vendor's own way: a launch that takes a
    /// pointer to each parameter (as NVIDIA's does) passes
    /// [`KernelValues::pointers`]; an API that sets a kernel's arguments
    /// one by one and appends it to a command list (its `Stream` an
    /// immediate command list) walks [`KernelValues::sized`]. Inside the
    /// timed window: no allocation, no lookup (the entry is found when the
    /// device opens), a formatted error only on failure.
    ///
    /// # Safety
    /// `f` and `stream` are this runtime's, alive; the arrays in `values`
    /// are device memory (or mapped host memory) of at least `elements`
    /// doubles, alive until the stream is synchronized.
    unsafe fn launch(
        &self,
        f: Self::Function,
        grid: u32,
        block: u32,
        values: &mut KernelValues,
        stream: Self::Stream,
    ) -> Result<(), String>;
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
    calls: V,
}

impl<V: VendorCalls> VendorRuntime<V> {
    /// The runtime of the device `calls` opened (current on this thread):
    /// its module loaded, its streams and events made.
    pub fn open(calls: V) -> Result<VendorRuntime<V>, String> {
        let mut rt = VendorRuntime {
            module: None,
            functions: Vec::new(),
            streams: Vec::new(),
            events: Vec::new(),
            allocated: Vec::new(),
            registered: Vec::new(),
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

/// The parameters of every kernel in the module, in the kernels' order:
/// `KernelArgs`, then the grid in blocks (which only `kernels.cl`'s
/// kernels take: a driver reads as many as the kernel it launches has
/// parameters).
pub struct KernelValues {
    arrays: [DevicePtr; crate::kernels::ARRAYS],
    partial: DevicePtr,
    scalar: f64,
    elements: u64,
    blocks: u32,
}

/// How many parameters [`KernelValues`] holds.
pub const KERNEL_PARAMETERS: usize = crate::kernels::ARRAYS + 4;

impl KernelValues {
    fn new(args: &KernelArgs, grid: u32) -> KernelValues {
        KernelValues {
            arrays: args.arrays,
            partial: args.partial,
            scalar: args.scalar,
            elements: args.elements,
            blocks: grid,
        }
    }

    /// Each parameter's address and size in bytes, in order, for an API
    /// that sets a kernel's arguments one at a time.
    pub fn sized(&mut self) -> [(*mut c_void, usize); KERNEL_PARAMETERS] {
        let [a, b, c, d, h, r] = &mut self.arrays;
        let pointer = size_of::<DevicePtr>();
        [
            ((a as *mut DevicePtr).cast(), pointer),
            ((b as *mut DevicePtr).cast(), pointer),
            ((c as *mut DevicePtr).cast(), pointer),
            ((d as *mut DevicePtr).cast(), pointer),
            ((h as *mut DevicePtr).cast(), pointer),
            ((r as *mut DevicePtr).cast(), pointer),
            ((&raw mut self.partial).cast(), pointer),
            ((&raw mut self.scalar).cast(), size_of::<f64>()),
            ((&raw mut self.elements).cast(), size_of::<u64>()),
            ((&raw mut self.blocks).cast(), size_of::<u32>()),
        ]
    }

    /// A pointer to each parameter, in order, as a module launch such as
    /// `cuLaunchKernel` takes them (it copies the values at the launch).
    pub fn pointers(&mut self) -> [*mut c_void; KERNEL_PARAMETERS] {
        self.sized().map(|(pointer, _)| pointer)
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

    fn alloc_managed(&mut self, bytes: usize) -> Result<DevicePtr, String> {
        let ptr = self.calls.alloc_managed(bytes.max(8))?;
        // Freed as device memory is (cuMemFree, hipFree).
        self.allocated.push(ptr);
        Ok(ptr)
    }

    fn prefetch(&mut self, ptr: DevicePtr, bytes: usize, stream: Stream) -> Result<(), String> {
        self.calls.prefetch(ptr, bytes, self.stream(stream))
    }

    fn memory_at(&mut self, ptr: DevicePtr) -> Result<DriverMemory, String> {
        self.calls.memory_at(ptr)
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
        let mut values = KernelValues::new(args, grid);
        let f = self.functions[function.0].1;
        // SAFETY: the function and the stream are live until the runtime
        // drops; the caller's arrays are its allocations (`KernelArgs`).
        unsafe { (self.calls).launch(f, grid, block, &mut values, self.stream(stream)) }
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

/// Asserts that the parameter list `PARAMS` of a vendor's kernels'
/// source is [`KernelValues`]' parameters in their order and sizes, or
/// the first of them (a kernel reads as many as it declares).
#[cfg(test)]
pub fn assert_kernels_take_the_values(source: &str) {
    let start = source.find("#define PARAMS").expect("PARAMS");
    let body: String = source[start + "#define PARAMS".len()..]
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(|line| line.trim_end_matches('\\'))
        .collect();
    let declared: Vec<usize> = body
        .split(',')
        .map(|param| match param {
            p if p.contains('*') => size_of::<DevicePtr>(),
            p if p.contains("double") || p.contains("u64") => 8,
            p if p.contains("u32") => 4,
            p => panic!("a parameter of no known size: {p}"),
        })
        .collect();
    let args = KernelArgs {
        arrays: [0; crate::kernels::ARRAYS],
        partial: 0,
        scalar: 0.0,
        elements: 0,
    };
    let sizes = KernelValues::new(&args, 0).sized().map(|(_, size)| size);
    assert!(declared.len() >= 9, "{declared:?}");
    assert_eq!(declared, sizes[..declared.len()]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each address holds its value, in the kernels' order.
    #[test]
    fn each_value_is_at_its_address_in_order() {
        let args = KernelArgs {
            arrays: [1, 2, 3, 4, 5, 6],
            partial: 7,
            scalar: 3.0,
            elements: 1 << 20,
        };
        let mut values = KernelValues::new(&args, 99);
        let sized = values.sized();
        // SAFETY: each address is a field of `values`, alive here, of the
        // size it is paired with.
        unsafe {
            assert_eq!(*sized[5].0.cast::<DevicePtr>(), 6);
            assert_eq!(*sized[6].0.cast::<DevicePtr>(), 7);
            assert_eq!(*sized[7].0.cast::<f64>(), 3.0);
            assert_eq!(*sized[8].0.cast::<u64>(), 1 << 20);
            assert_eq!(*sized[9].0.cast::<u32>(), 99);
        }
        assert_eq!(values.pointers()[9], sized[9].0);
    }
}
