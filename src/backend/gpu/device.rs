//! One GPU's side of a measurement, over its vendor's [`Runtime`]: its
//! arrays in device memory, the launch shapes of each kernel, the timed
//! windows between two events, the copy engine's transfers, and the host
//! buffers registered for them.
//!
//! Every call of the protocol's returns once the GPU is done. A runtime
//! error is kept (the first one) and ends the measurement: `run` does no
//! more work, `read_back` marks every array bad, and the backend returns
//! the error in one line.

use super::host_buffers::HostBuffers;
use super::launch::{Launchable, shapes};
use crate::kernels::gpu_builds::{
    BLOCKS, BUILDS, Build, DEFAULT_BLOCK, FALLBACK_BUILDS, Grid, ShapeChoice, ShapeId,
};

mod read_back;
mod shape_check;
use super::runtime::{DevicePtr, Event, Function, KernelArgs, LaunchLimits, Runtime, Stream};
use crate::backend::{ArrayErrors, ReadBack, ShapeName, TargetArrays};
use crate::kernels::{ARRAYS, ArrayId, KernelId, Mover, Path, SCALAR};
use crate::memory::gpu_memory::{ArrayFound, FirstTouch, GpuMemory, GpuMemoryUse};
use crate::plan::Plan;

/// The arrays that are the GPU's own memory.
pub(super) const DEVICE_ARRAYS: [ArrayId; 4] = [ArrayId::A, ArrayId::B, ArrayId::C, ArrayId::D];
/// The kernels that first-touch each of them, by `DEVICE_ARRAYS`' order.
const FILLS: [&str; 4] = ["fill_a", "fill_b", "fill_c", "fill_d"];

/// A build to look up, in which block sizes and grids.
type BuildIn = (&'static Build, Vec<u32>, Vec<Grid>);

/// The builds of `kernel` to look up, each in which block sizes and grids:
/// the plan's one shape; every build in every block and grid; or, by
/// default, the shape measured fastest on this architecture, else the
/// fallback builds in blocks of 256 in both grids. The first is the
/// default the others must beat beyond the noise. With them, the GPU the
/// measured default was measured on.
fn wanted_shapes(
    choice: ShapeChoice,
    architecture: Option<&str>,
    kernel: KernelId,
) -> (Vec<BuildIn>, Option<&'static str>) {
    let both = vec![Grid::Wave, Grid::Cover];
    let one = |id: ShapeId| vec![(id.build, vec![id.block], vec![id.grid])];
    match choice {
        ShapeChoice::One(id) => (one(id), None),
        ShapeChoice::Every => {
            let every = BUILDS.iter().map(|b| (b, BLOCKS.to_vec(), both.clone()));
            (every.collect(), None)
        }
        ShapeChoice::Default => {
            match architecture.and_then(|a| super::tuned::measured_default(a, kernel)) {
                Some((id, gpu)) => (one(id), Some(gpu)),
                None => {
                    let fallback = (FALLBACK_BUILDS.iter())
                        .filter_map(|suffix| Build::by_suffix(suffix))
                        .map(|b| (b, vec![DEFAULT_BLOCK], both.clone()));
                    (fallback.collect(), None)
                }
            }
        }
    }
}

/// Whether a kernel is the copy engine's (no function of the module runs
/// it), and from pageable host memory.
fn copy_engine(kernel: KernelId) -> Option<bool> {
    match kernel.spec().path {
        Path::HostLink {
            by: Mover::CopyEngine,
            ..
        } => Some(false),
        Path::HostLink {
            by: Mover::Pageable,
            ..
        } => Some(true),
        _ => None,
    }
}

pub(super) struct Gpu {
    /// Declared first, so dropped first: it releases what it registered
    /// and queued before the host buffers below are unmapped.
    runtime: Box<dyn Runtime>,
    kernels: Vec<Launchable>,
    /// The fills' and `update`'s functions, with their whole-wave grids.
    helpers: Vec<(&'static str, Function, u32)>,
    /// Each array as the GPU addresses it (0: not mapped): its own memory
    /// for a..d, the registered host buffers for h and r.
    device: [DevicePtr; ARRAYS],
    /// The reductions' per-block sums (0: not allocated), as long as
    /// their largest grid.
    partial_read: DevicePtr,
    partial_dot: DevicePtr,
    elements: usize,
    host: HostBuffers,
    /// Pageable twins of the host buffers (placed by the same policy,
    /// never registered), where the plan has a pageable transfer.
    pageable: Option<HostBuffers>,
    /// Whether `r` is validated from its pageable twin: a pageable
    /// transfer is the last kernel of a repetition to write it.
    r_from_pageable: bool,
    last_run_s: Option<f64>,
    failed: Option<String>,
    /// Where its arrays live (`asked`), and what was found there (the
    /// first touch filled in by the first `init`).
    used: GpuMemoryUse,
}

impl Gpu {
    /// The plan's arrays allocated on the device the runtime drives, its
    /// kernels looked up with their launch shapes, and the host buffers
    /// first touched on this thread and registered.
    pub(super) fn open(
        runtime: Box<dyn Runtime>,
        (multiprocessors, device_memory): (u32, Option<u64>),
        limits: LaunchLimits,
        plan: &Plan,
        host: HostBuffers,
    ) -> Result<Gpu, String> {
        let mut gpu = Gpu {
            runtime,
            kernels: Vec::new(),
            helpers: Vec::new(),
            device: [0; ARRAYS],
            partial_read: 0,
            partial_dot: 0,
            elements: plan.elements,
            host,
            pageable: None,
            r_from_pageable: (plan.kernels.iter().rev())
                .find(|k| k.spec().writes.contains(&ArrayId::R))
                .is_some_and(|k| copy_engine(*k) == Some(true)),
            last_run_s: None,
            failed: None,
            used: GpuMemoryUse {
                asked: plan.gpu_memory,
                found: Vec::new(),
                first_touch: None,
                device_share: None,
            },
        };
        gpu.load(plan, multiprocessors, limits)?;
        gpu.allocate(plan)?;
        gpu.register_host_buffers()?;
        gpu.find_arrays(plan, device_memory)?;
        if plan.kernels.iter().any(|k| copy_engine(*k) == Some(true)) {
            gpu.pageable = Some(HostBuffers::pageable_twins(plan)?);
        }
        Ok(gpu)
    }

    /// Looks up every kernel the plan runs on the GPU's threads, each with
    /// the shapes the plan's choice asks for, and the helpers (the
    /// default build, in one whole wave of blocks of 256).
    fn load(
        &mut self,
        plan: &Plan,
        multiprocessors: u32,
        limits: LaunchLimits,
    ) -> Result<(), String> {
        let elements = plan.elements as u64;
        let architecture = self.runtime.architecture();
        for &kernel in plan.kernels.iter().filter(|k| copy_engine(**k).is_none()) {
            let (wanted, measured_on) = wanted_shapes(plan.shapes, architecture.as_deref(), kernel);
            let name = kernel.spec().name.replace('-', "_");
            let mut all = Vec::new();
            for (build, blocks, grids) in wanted {
                if !limits.hints.contains(&build.hint) {
                    continue;
                }
                let Ok(function) = self.runtime.function(&format!("{name}{}", build.suffix)) else {
                    // A build this vendor's module lacks (AMD has no `.cg`).
                    if let ShapeChoice::One(id) = plan.shapes {
                        return Err(format!(
                            "the module has no build {} for shape {id}",
                            build.id()
                        ));
                    }
                    continue;
                };
                let largest = limits.largest_block.min(build.bound);
                for &block in blocks.iter().filter(|b| **b <= largest) {
                    let per_mp = self.runtime.blocks_per_multiprocessor(function, block)?;
                    let made = shapes(function, elements, per_mp, multiprocessors, build, block);
                    all.extend(made.into_iter().filter(|s| grids.contains(&s.id.grid)));
                }
            }
            if all.is_empty() {
                return Err(format!("no launch shape of {kernel} runs on this GPU"));
            }
            self.kernels.push(Launchable {
                kernel,
                shapes: all,
                chosen: 0,
                measured_on,
            });
        }
        for name in FILLS.into_iter().chain(["update"]) {
            let function = self.runtime.function(name)?;
            let per_mp = self
                .runtime
                .blocks_per_multiprocessor(function, DEFAULT_BLOCK)?;
            let grid = shapes(
                function, elements, per_mp, multiprocessors, &BUILDS[0], DEFAULT_BLOCK,
            )[0]
            .grid;
            self.helpers.push((name, function, grid));
        }
        Ok(())
    }

    /// The largest grid a reduction may launch: its partial sums' length.
    fn largest_grid(&self, kernel: KernelId) -> usize {
        (self.kernels.iter().filter(|l| l.kernel == kernel))
            .flat_map(|l| l.shapes.iter().map(|s| s.grid as usize))
            .max()
            .unwrap_or(0)
    }

    fn allocate(&mut self, plan: &Plan) -> Result<(), String> {
        let needed = plan.arrays_needed();
        let bytes = plan.elements * std::mem::size_of::<f64>();
        for id in DEVICE_ARRAYS.into_iter().filter(|id| needed.contains(id)) {
            self.device[id.index()] = match plan.gpu_memory {
                GpuMemory::Device => self.runtime.alloc(bytes)?,
                GpuMemory::Managed { .. } => self.runtime.alloc_managed(bytes)?,
                // Mapped with the host buffers, and given to the device there.
                GpuMemory::Host { .. } | GpuMemory::System { .. } => continue,
            };
        }
        let doubles = std::mem::size_of::<f64>();
        if plan.kernels.contains(&KernelId::Read) {
            self.partial_read = self
                .runtime
                .alloc(self.largest_grid(KernelId::Read) * doubles)?;
        }
        if plan.kernels.contains(&KernelId::Dot) {
            self.partial_dot = self
                .runtime
                .alloc(self.largest_grid(KernelId::Dot) * doubles)?;
        }
        Ok(())
    }

    /// Touches the host buffers (and the device's arrays, where they are
    /// host memory) from this (pinned) thread under their policy, then
    /// gives them to the GPU: pinned and mapped by the runtime, or, where
    /// they are pageable system memory, as they are.
    fn register_host_buffers(&mut self) -> Result<(), String> {
        let pageable = matches!(self.used.asked, GpuMemory::System { .. });
        for id in ArrayId::ALL {
            let Some(slice) = self.host.slice_mut(id) else {
                continue;
            };
            // First touch, from this thread, under the policy.
            slice.fill(0.0);
            let (ptr, len) = (slice.as_mut_ptr(), slice.len());
            // SAFETY: the buffer is a mapping `host` owns; `runtime` is
            // declared before `host`, so it drops (and unregisters)
            // first, and nothing here touches the buffer while queued
            // work uses it (every call returns once the GPU is done).
            self.device[id.index()] = match pageable && !id.host_buffer() {
                true => unsafe { self.runtime.pageable(ptr, len) }?,
                false => unsafe { self.runtime.register(ptr, len) }?,
            };
        }
        Ok(())
    }

    /// What the driver says each of the device's arrays is, and how much
    /// of them its memory (`device_memory` bytes) holds where they may
    /// outgrow it.
    fn find_arrays(&mut self, plan: &Plan, device_memory: Option<u64>) -> Result<(), String> {
        let mut bytes = 0u64;
        for id in DEVICE_ARRAYS {
            let ptr = self.device[id.index()];
            if ptr == 0 {
                continue;
            }
            bytes += (plan.elements * std::mem::size_of::<f64>()) as u64;
            let driver = self.runtime.memory_at(ptr)?;
            self.used.found.push(ArrayFound {
                array: id.name().to_string(),
                driver: Some(driver),
            });
        }
        if plan.gpu_memory.may_oversubscribe()
            && let Some(memory) = device_memory.filter(|m| *m < bytes)
        {
            self.used.device_share = Some(memory as f64 / bytes as f64);
        }
        Ok(())
    }

    /// Where its arrays lived, as the driver said.
    pub(super) fn memory_use(&self) -> GpuMemoryUse {
        self.used.clone()
    }

    /// The host writes STREAM's values into managed arrays, as a ported
    /// code initializes them, so that their pages start on the host.
    fn host_writes_managed(&mut self, values: [f64; ARRAYS]) {
        for id in DEVICE_ARRAYS {
            let ptr = self.device[id.index()];
            if ptr != 0 {
                // SAFETY: a managed allocation of the runtime's, of
                // `elements` doubles, which the host addresses at the
                // device's address; no work is queued on it now.
                let array =
                    unsafe { std::slice::from_raw_parts_mut(ptr as *mut f64, self.elements) };
                array.fill(values[id.index()]);
            }
        }
    }

    /// The first pass over arrays not in the device's own memory, timed
    /// by its clock: after the host's writes of managed arrays (untimed),
    /// the prefetch where asked, then the fills (where pages migrate).
    fn first_touch(&mut self, values: [f64; ARRAYS]) -> Result<(), String> {
        if let GpuMemory::Managed { .. } = self.used.asked {
            self.host_writes_managed(values);
        }
        self.runtime.record(Event::Start, Stream::Main)?;
        if let GpuMemory::Managed { prefetch: true } = self.used.asked {
            let bytes = self.elements * std::mem::size_of::<f64>();
            for id in DEVICE_ARRAYS {
                let ptr = self.device[id.index()];
                if ptr != 0 {
                    self.runtime.prefetch(ptr, bytes, Stream::Main)?;
                }
            }
        }
        self.fill(values)?;
        self.runtime.record(Event::End, Stream::Main)?;
        let seconds = self.runtime.elapsed_s(Event::Start, Event::End)?;
        let arrays = DEVICE_ARRAYS
            .iter()
            .filter(|id| self.device[id.index()] != 0);
        self.used.first_touch = Some(FirstTouch {
            seconds,
            bytes: (arrays.count() * self.elements * std::mem::size_of::<f64>()) as u64,
        });
        Ok(())
    }

    /// Each of the device's arrays set to its value by its fill kernel.
    fn fill(&mut self, values: [f64; ARRAYS]) -> Result<(), String> {
        for (id, fill) in DEVICE_ARRAYS.into_iter().zip(FILLS) {
            if self.device[id.index()] != 0 {
                self.helper(fill, values[id.index()])?;
            }
        }
        Ok(())
    }

    pub(super) fn host(&self) -> &HostBuffers {
        &self.host
    }

    /// What the runtime noticed, to be said after the run.
    pub(super) fn runtime_warnings(&mut self) -> Vec<String> {
        self.runtime.warnings()
    }

    /// The first runtime error of the measurement, if any.
    pub(super) fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    fn keep(&mut self, r: Result<(), String>) {
        if let Err(e) = r {
            self.failed.get_or_insert(e);
        }
    }

    fn args(&self, scalar: f64, partial: DevicePtr) -> KernelArgs {
        KernelArgs {
            arrays: self.device,
            partial,
            scalar,
            elements: self.elements as u64,
        }
    }

    fn helper(&mut self, name: &str, scalar: f64) -> Result<(), String> {
        let (_, function, grid) = *(self.helpers.iter())
            .find(|(n, ..)| *n == name)
            .ok_or_else(|| format!("the module has no kernel {name}"))?;
        let args = self.args(scalar, 0);
        (self.runtime).launch(function, grid, DEFAULT_BLOCK, &args, Stream::Main)
    }

    /// The copy engine's transfers between the device and the host
    /// buffers (registered, or their pageable twins): host to device on
    /// the main stream, device to host on the other where both run at
    /// once.
    fn copy_engine(
        &mut self,
        kernel: KernelId,
        pageable: bool,
        repeats: usize,
    ) -> Result<(), String> {
        let spec = kernel.spec();
        let up = spec.reads.contains(&ArrayId::H) && spec.writes.contains(&ArrayId::A);
        let down = spec.reads.contains(&ArrayId::B) && spec.writes.contains(&ArrayId::R);
        let both_ways = matches!(
            spec.path,
            Path::HostLink {
                both_ways: true,
                ..
            }
        );
        let down_stream = if both_ways {
            Stream::Other
        } else {
            Stream::Main
        };
        let buffers = match (pageable, &mut self.pageable) {
            (true, Some(twins)) => twins,
            _ => &mut self.host,
        };
        let (h, r) = buffers.pointers();
        let (a, b) = (
            self.device[ArrayId::A.index()],
            self.device[ArrayId::B.index()],
        );
        let len = self.elements;
        if both_ways {
            self.runtime.wait(Stream::Other, Event::Start)?;
        }
        for _ in 0..repeats {
            // SAFETY (both copies): `h` and `r` point to host buffers of
            // `elements` doubles that this Gpu owns and does not touch
            // until `run` has waited for the end event, after which
            // every queued copy has finished; `a` and `b` are device
            // allocations as long.
            if up && let Some(h) = h {
                unsafe { self.runtime.copy_to_device(a, h, len, Stream::Main) }?;
            }
            if down && let Some(r) = r {
                unsafe { self.runtime.copy_to_host(r, b, len, down_stream) }?;
            }
        }
        if both_ways {
            self.runtime.record(Event::OtherDone, Stream::Other)?;
            self.runtime.wait(Stream::Main, Event::OtherDone)?;
        }
        Ok(())
    }
}

impl TargetArrays for Gpu {
    fn init(&mut self, values: [f64; ARRAYS]) {
        // The first time, where the arrays are not the device's own
        // memory, timed apart; afterwards (the calibration's kernels ran)
        // the device fills them where they now are.
        let r = match self.used.asked != GpuMemory::Device && self.used.first_touch.is_none() {
            true => self.first_touch(values),
            false => self.fill(values),
        };
        let r = r.and_then(|()| self.runtime.synchronize(Stream::Main));
        self.keep(r);
        self.host.init(values);
        if let Some(twins) = &mut self.pageable {
            twins.init(values);
        }
    }

    fn double_a(&mut self) {
        let r = (self.helper("update", 2.0)).and_then(|()| self.runtime.synchronize(Stream::Main));
        self.keep(r);
    }

    fn sync(&mut self) {
        let r = self.runtime.synchronize(Stream::Main);
        self.keep(r);
    }

    /// `repeats` of `kernel` between two events, the GPU's time of them
    /// kept for [`device_seconds`](TargetArrays::device_seconds): the
    /// protocol's timed call, which launches the kernel itself.
    fn run(&mut self, kernel: KernelId, repeats: usize) {
        self.last_run_s = None;
        if self.failed.is_some() {
            return;
        }
        let queued = 'queued: {
            if let Err(e) = self.runtime.record(Event::Start, Stream::Main) {
                break 'queued Err(e);
            }
            if let Some(pageable) = copy_engine(kernel) {
                break 'queued self.copy_engine(kernel, pageable, repeats);
            }
            let Some(launch) = self.kernels.iter().find(|l| l.kernel == kernel) else {
                break 'queued Err(format!("no device kernel for {kernel}"));
            };
            let shape = &launch.shapes[launch.chosen];
            let (function, grid, block) = (shape.function, shape.grid, shape.block);
            let partial = match kernel {
                KernelId::Dot => self.partial_dot,
                _ => self.partial_read,
            };
            let args = self.args(SCALAR, partial);
            for _ in 0..repeats {
                let launched = (self.runtime).launch(function, grid, block, &args, Stream::Main);
                if launched.is_err() {
                    break 'queued launched;
                }
            }
            Ok(())
        };
        let seconds = (queued.and_then(|()| self.runtime.record(Event::End, Stream::Main)))
            .and_then(|()| self.runtime.elapsed_s(Event::Start, Event::End));
        match seconds {
            Ok(seconds) => self.last_run_s = Some(seconds),
            Err(e) => self.keep(Err(e)),
        }
    }

    fn device_seconds(&self) -> Option<f64> {
        self.last_run_s
    }

    fn shapes(&self, kernel: KernelId) -> Vec<ShapeName> {
        (self.kernels.iter().find(|l| l.kernel == kernel)).map_or_else(Vec::new, |l| {
            (l.shapes.iter())
                .map(|s| ShapeName {
                    id: s.id.to_string(),
                    label: s.label.clone(),
                    measured_on: l.measured_on,
                })
                .collect()
        })
    }

    fn check_shape(&mut self, kernel: KernelId, shape: usize) -> std::result::Result<(), String> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.check_shape_once(kernel, shape)
    }

    fn choose_shape(&mut self, kernel: KernelId, shape: usize) {
        if let Some(l) = self.kernels.iter_mut().find(|l| l.kernel == kernel) {
            l.chosen = shape.min(l.shapes.len().saturating_sub(1));
        }
    }

    fn read_back(&mut self, want: [f64; ARRAYS], errors: ArrayErrors) -> ReadBack {
        let mut out = self.host.read_back(want, errors);
        if let Some(twins) = self.pageable.as_mut().filter(|_| self.r_from_pageable) {
            let r = ArrayId::R.index();
            let twin = twins.read_back(want, errors);
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
