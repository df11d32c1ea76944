//! One GPU's side of a measurement: its arrays in device memory, the
//! kernels' module, two streams and the events that time them, and the
//! host buffers of the transfers, registered with the driver.
//!
//! Every call of the protocol's returns once the GPU is done. A driver
//! error is kept (the first one) and ends the measurement: `run` does no
//! more work, `read_back` marks every array bad, and the backend returns
//! the error in one line.

use super::driver::{Facts, fail};
use super::{BLOCK, KERNELS_PTX, UNROLL};
use crate::backend::offload::HostBuffers;
use crate::backend::{ArrayErrors, Device, ReadBack};
use crate::kernels::{ARRAYS, ArrayId, KernelId, Mover, Path, SCALAR};
use crate::plan::Plan;
use cudarc::driver::{result, sys};
use std::ffi::{CString, c_void};

mod host_buffers;
mod read_back;

/// Whether a kernel copies from or to pageable host memory.
fn pageable(kernel: KernelId) -> bool {
    matches!(
        kernel.spec().path,
        Path::HostLink {
            by: Mover::Pageable,
            ..
        }
    )
}

/// The arrays that are the GPU's own memory.
const DEVICE_ARRAYS: [ArrayId; 4] = [ArrayId::A, ArrayId::B, ArrayId::C, ArrayId::D];
/// The kernels that first-touch each of them, by `DEVICE_ARRAYS`' order.
const FILLS: [&str; 4] = ["fill_a", "fill_b", "fill_c", "fill_d"];
/// Elements copied back per call when the arrays are read back (64 MiB).
const READ_BACK_ELEMENTS: usize = 8 << 20;

pub(super) struct Gpu {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    module: sys::CUmodule,
    /// Each kernel's function, and the helpers' (fills, update) by name.
    kernels: Vec<(KernelId, sys::CUfunction)>,
    helpers: Vec<(&'static str, sys::CUfunction)>,
    stream: sys::CUstream,
    /// A bidirectional copy's other direction runs here, at once.
    other: sys::CUstream,
    start: sys::CUevent,
    end: sys::CUevent,
    other_done: sys::CUevent,
    /// Each array as the GPU addresses it (0: not mapped): its own memory
    /// for a..d, the registered host buffers for h and r.
    device: [sys::CUdeviceptr; ARRAYS],
    /// The host buffers' own addresses, for the copy engine.
    host_ptr: [*mut c_void; ARRAYS],
    /// Pageable twins of the host buffers (placed by the same policy,
    /// never registered), where the plan has a pageable transfer.
    pageable: Option<HostBuffers>,
    pageable_ptr: [*mut c_void; ARRAYS],
    /// Whether `r` is validated from its pageable twin: a pageable
    /// transfer is the last kernel of a repetition to write it.
    r_from_pageable: bool,
    /// The reductions' per-block sums (0: not allocated).
    partial_read: sys::CUdeviceptr,
    partial_dot: sys::CUdeviceptr,
    /// Device memory this owns.
    allocated: Vec<sys::CUdeviceptr>,
    grid: u32,
    elements: usize,
    host: HostBuffers,
    last_run_s: Option<f64>,
    failed: Option<String>,
}

/// A driver call's result, as one line.
fn cu<T>(call: &str, r: Result<T, result::DriverError>) -> Result<T, String> {
    r.map_err(|e| fail(call, e))
}

impl Gpu {
    /// The GPU's context made current on this thread, the module loaded
    /// (the driver compiles the PTX for this GPU here), the plan's arrays
    /// allocated, and the host buffers first touched here and registered.
    pub(super) fn open(
        index: u32,
        facts: &Facts,
        plan: &Plan,
        host: HostBuffers,
    ) -> Result<Gpu, String> {
        let dev = cu("cuDeviceGet", result::device::get(index as i32))?;
        // SAFETY: `dev` is the driver's handle; the primary context is
        // released in `drop`.
        let ctx = cu("cuDevicePrimaryCtxRetain", unsafe {
            result::primary_ctx::retain(dev)
        })?;
        let pairs = plan.elements as u64 / 2;
        let resident = facts.multiprocessors * (facts.threads_per_multiprocessor / BLOCK).max(1);
        let needed = pairs.div_ceil(u64::from(BLOCK) * UNROLL).max(1);
        let mut gpu = Gpu {
            dev,
            ctx,
            module: std::ptr::null_mut(),
            kernels: Vec::new(),
            helpers: Vec::new(),
            stream: std::ptr::null_mut(),
            other: std::ptr::null_mut(),
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            other_done: std::ptr::null_mut(),
            device: [0; ARRAYS],
            host_ptr: [std::ptr::null_mut(); ARRAYS],
            pageable: None,
            pageable_ptr: [std::ptr::null_mut(); ARRAYS],
            r_from_pageable: (plan.kernels.iter().rev())
                .find(|k| k.spec().writes.contains(&ArrayId::R))
                .is_some_and(|k| pageable(*k)),
            partial_read: 0,
            partial_dot: 0,
            allocated: Vec::new(),
            grid: needed.min(u64::from(resident)) as u32,
            elements: plan.elements,
            host,
            last_run_s: None,
            failed: None,
        };
        // SAFETY: the context was just retained and is live until drop.
        cu("cuCtxSetCurrent", unsafe { result::ctx::set_current(ctx) })?;
        gpu.load_module()?;
        gpu.create_streams()?;
        gpu.allocate(plan)?;
        gpu.register_host_buffers()?;
        if plan.kernels.iter().any(|k| pageable(*k)) {
            gpu.map_pageable_twins(plan)?;
        }
        Ok(gpu)
    }

    fn load_module(&mut self) -> Result<(), String> {
        let ptx = CString::new(KERNELS_PTX).map_err(|_| "the kernels' PTX holds a NUL")?;
        // SAFETY: the image is a NUL-terminated PTX text that outlives the
        // call (the driver copies what it compiles).
        self.module = cu("cuModuleLoadData", unsafe {
            result::module::load_data(ptx.as_ptr().cast())
        })?;
        let function = |module, name: &str| {
            let cname = CString::new(name).expect("kernel names hold no NUL");
            // SAFETY: `module` was loaded above and is unloaded in drop.
            cu(&format!("cuModuleGetFunction({name})"), unsafe {
                result::module::get_function(module, cname)
            })
        };
        for spec in crate::kernels::KERNELS {
            if !matches!(
                spec.path,
                Path::HostLink {
                    by: Mover::CopyEngine | Mover::Pageable,
                    ..
                }
            ) {
                let name = spec.name.replace('-', "_");
                self.kernels.push((spec.id, function(self.module, &name)?));
            }
        }
        for name in FILLS.into_iter().chain(["update"]) {
            self.helpers.push((name, function(self.module, name)?));
        }
        Ok(())
    }

    fn create_streams(&mut self) -> Result<(), String> {
        use result::stream::StreamKind::NonBlocking;
        self.stream = cu("cuStreamCreate", result::stream::create(NonBlocking))?;
        self.other = cu("cuStreamCreate", result::stream::create(NonBlocking))?;
        let event = || {
            cu(
                "cuEventCreate",
                result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT),
            )
        };
        self.start = event()?;
        self.end = event()?;
        self.other_done = event()?;
        Ok(())
    }

    fn allocate(&mut self, plan: &Plan) -> Result<(), String> {
        let needed = plan.arrays_needed();
        let mut malloc = |bytes: usize| -> Result<sys::CUdeviceptr, String> {
            // SAFETY: a plain allocation, freed in drop.
            let ptr = cu("cuMemAlloc", unsafe { result::malloc_sync(bytes) })?;
            self.allocated.push(ptr);
            Ok(ptr)
        };
        for id in DEVICE_ARRAYS.into_iter().filter(|id| needed.contains(id)) {
            self.device[id.index()] = malloc(plan.elements * std::mem::size_of::<f64>())?;
        }
        let partials = self.grid as usize * std::mem::size_of::<f64>();
        if plan.kernels.contains(&KernelId::Read) {
            self.partial_read = malloc(partials)?;
        }
        if plan.kernels.contains(&KernelId::Dot) {
            self.partial_dot = malloc(partials)?;
        }
        Ok(())
    }

    pub(super) fn host(&self) -> &HostBuffers {
        &self.host
    }

    /// The first driver error of the measurement, if any.
    pub(super) fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    fn keep(&mut self, r: Result<(), String>) {
        if let Err(e) = r {
            self.failed.get_or_insert(e);
        }
    }

    /// Launches `f` over the arrays with scalar `s` (asynchronous).
    fn launch(&self, f: sys::CUfunction, s: f64, partial: sys::CUdeviceptr) -> Result<(), String> {
        let [mut a, mut b, mut c, mut d, mut h, mut r] = self.device;
        let (mut partial, mut s, mut n) = (partial, s, self.elements as u64);
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
                (self.grid, 1, 1),
                (BLOCK, 1, 1),
                0,
                self.stream,
                &mut params,
            )
        })
    }

    fn helper(&self, name: &str) -> sys::CUfunction {
        (self.helpers.iter().find(|(n, _)| *n == name)).map_or(std::ptr::null_mut(), |(_, f)| *f)
    }

    fn synchronize(&self) -> Result<(), String> {
        // SAFETY: the stream is live until drop.
        cu("cuStreamSynchronize", unsafe {
            result::stream::synchronize(self.stream)
        })
    }

    /// `repeats` of `kernel` between two events; the GPU's time of them.
    fn timed(&self, kernel: KernelId, repeats: usize) -> Result<f64, String> {
        let spec = kernel.spec();
        let function = self
            .kernels
            .iter()
            .find(|(k, _)| *k == kernel)
            .map(|(_, f)| *f);
        let partial = match kernel {
            KernelId::Dot => self.partial_dot,
            _ => self.partial_read,
        };
        // SAFETY (every call below): the streams, events and pointers are
        // live until drop; the copies' host ranges are buffers of
        // `elements` doubles (registered, or their pageable twins), their
        // device ranges allocations as long.
        unsafe {
            cu(
                "cuEventRecord",
                result::event::record(self.start, self.stream),
            )?;
            match (spec.path, function) {
                (
                    Path::HostLink {
                        by: Mover::CopyEngine,
                        both_ways,
                    },
                    _,
                ) => self.copy_engine(spec, both_ways, repeats, &self.host_ptr)?,
                (
                    Path::HostLink {
                        by: Mover::Pageable,
                        both_ways,
                    },
                    _,
                ) => self.copy_engine(spec, both_ways, repeats, &self.pageable_ptr)?,
                (_, Some(f)) => {
                    for _ in 0..repeats {
                        self.launch(f, SCALAR, partial)?;
                    }
                }
                (_, None) => return Err(format!("no device kernel for {kernel}")),
            }
            cu(
                "cuEventRecord",
                result::event::record(self.end, self.stream),
            )?;
            cu("cuEventSynchronize", result::event::synchronize(self.end))?;
            let ms = cu(
                "cuEventElapsedTime",
                result::event::elapsed(self.start, self.end),
            )?;
            Ok(f64::from(ms) / 1e3)
        }
    }

    /// The copy engine's transfers between the device and `host_ptr`'s
    /// buffers (the registered ones, or their pageable twins): host to
    /// device on the main stream, device to host on the other where both
    /// run at once.
    ///
    /// # Safety
    /// Called between the events of `timed`, with its guarantees.
    unsafe fn copy_engine(
        &self,
        spec: &crate::kernels::KernelSpec,
        both_ways: bool,
        repeats: usize,
        host_ptr: &[*mut c_void; ARRAYS],
    ) -> Result<(), String> {
        let (reads, writes) = (spec.reads, spec.writes);
        let bytes = self.elements * std::mem::size_of::<f64>();
        let (h, a) = (ArrayId::H.index(), ArrayId::A.index());
        let (b, r) = (ArrayId::B.index(), ArrayId::R.index());
        let up = reads.contains(&ArrayId::H) && writes.contains(&ArrayId::A);
        let down = reads.contains(&ArrayId::B) && writes.contains(&ArrayId::R);
        let down_stream = if both_ways { self.other } else { self.stream };
        // SAFETY: see `timed`.
        unsafe {
            if both_ways {
                cu(
                    "cuStreamWaitEvent",
                    result::stream::wait_event(
                        self.other,
                        self.start,
                        sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                    ),
                )?;
            }
            for _ in 0..repeats {
                if up {
                    cu(
                        "cuMemcpyHtoDAsync",
                        sys::cuMemcpyHtoDAsync_v2(self.device[a], host_ptr[h], bytes, self.stream)
                            .result(),
                    )?;
                }
                if down {
                    cu(
                        "cuMemcpyDtoHAsync",
                        sys::cuMemcpyDtoHAsync_v2(host_ptr[r], self.device[b], bytes, down_stream)
                            .result(),
                    )?;
                }
            }
            if both_ways {
                cu(
                    "cuEventRecord",
                    result::event::record(self.other_done, self.other),
                )?;
                cu(
                    "cuStreamWaitEvent",
                    result::stream::wait_event(
                        self.stream,
                        self.other_done,
                        sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                    ),
                )?;
            }
        }
        Ok(())
    }
}

impl Device for Gpu {
    fn init(&mut self, values: [f64; ARRAYS]) {
        let mut r = Ok(());
        for (id, fill) in DEVICE_ARRAYS.into_iter().zip(FILLS) {
            if r.is_ok() && self.device[id.index()] != 0 {
                r = self.launch(self.helper(fill), values[id.index()], 0);
            }
        }
        let r = r.and_then(|()| self.synchronize());
        self.keep(r);
        self.host.arrays.init(values);
        if let Some(twins) = &mut self.pageable {
            twins.arrays.init(values);
        }
    }

    fn double_a(&mut self) {
        let r = (self.launch(self.helper("update"), 2.0, 0)).and_then(|()| self.synchronize());
        self.keep(r);
    }

    fn sync(&mut self) {
        let r = self.synchronize();
        self.keep(r);
    }

    fn run(&mut self, kernel: KernelId, repeats: usize) {
        self.last_run_s = None;
        if self.failed.is_some() {
            return;
        }
        match self.timed(kernel, repeats) {
            Ok(seconds) => self.last_run_s = Some(seconds),
            Err(e) => self.keep(Err(e)),
        }
    }

    fn device_seconds(&self) -> Option<f64> {
        self.last_run_s
    }

    fn read_back(&mut self, want: [f64; ARRAYS], errors: ArrayErrors) -> ReadBack {
        let mut out = self.host.arrays.read_back(want, errors);
        if let Some(twins) = self.pageable.as_mut().filter(|_| self.r_from_pageable) {
            let r = ArrayId::R.index();
            let twin = twins.arrays.read_back(want, errors);
            (out.abs_error[r], out.bad[r]) = (twin.abs_error[r], twin.bad[r]);
        }
        out.elements = self.elements;
        let r = self.read_device(&mut out, want, errors);
        self.keep(r);
        if self.failed.is_some() {
            // Nothing a failed GPU returned is trusted.
            for id in DEVICE_ARRAYS.into_iter().chain([ArrayId::H, ArrayId::R]) {
                out.bad[id.index()] = self.elements as u64;
            }
        }
        out
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: each handle was made by this Gpu and is released once;
        // the context is made current first, as the calls need it. Errors
        // are ignored: nothing more can be done with them here.
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::ctx::synchronize();
            for ptr in self.host_ptr.into_iter().filter(|p| !p.is_null()) {
                let _ = sys::cuMemHostUnregister(ptr);
            }
            for &ptr in &self.allocated {
                let _ = result::free_sync(ptr);
            }
            for event in [self.start, self.end, self.other_done] {
                if !event.is_null() {
                    let _ = result::event::destroy(event);
                }
            }
            for stream in [self.stream, self.other] {
                if !stream.is_null() {
                    let _ = result::stream::destroy(stream);
                }
            }
            if !self.module.is_null() {
                let _ = result::module::unload(self.module);
            }
            let _ = result::primary_ctx::release(self.dev);
        }
    }
}
