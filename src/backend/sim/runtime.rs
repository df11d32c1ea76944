//! The simulated device's runtime: the GPU-runtime layer's calls over host
//! memory. "Device memory" is mappings of its own, a registered host
//! buffer is locked (as a driver pins it) and addressed where it is, a
//! launch runs the kernel's recurrence (the portable loops) over whole
//! arrays on the calling thread, whatever its grid, and its events read a
//! clock of [`TICK_S`](super::TICK_S) ticks, scaled by `clock=F`.
//!
//! That clock is the calling thread's CPU time, as a GPU's is its own: a
//! device's kernels are not slowed by other work on the host, and a
//! simulated device on a busy machine (the test suite beside QEMU guests)
//! must not look slower than it was made to be.
//!
//! `wrong-element=N` adds one to element N of what every kernel and copy
//! writes (the array a kernel writes last, a copy's destination), as a
//! device with a bad word would: validation must name the array.

use super::{Setup, TICK_S};
use crate::backend::gpu::runtime::{
    DevicePtr, DriverMemory, Event, Function, KernelArgs, Runtime, Stream,
};
use crate::backend::{Sums, run_portable};
use crate::kernels::gpu_builds::{BLOCKS, BUILDS};
use crate::kernels::{ARRAYS, ArrayId, KernelId, Mover, Path};
use crate::memory::Chunk;
use crate::sys::MappedArray;
use crate::sys::thread_cpu_time;
use std::time::Duration;

/// The arrays that are the device's own (a..d), first in a launch's.
const DEVICE_ARRAYS: usize = 4;

/// Blocks of 256 threads each of its multiprocessors holds (as an H100
/// holds six of membw's at 34 registers a thread).
pub(super) const BLOCKS_PER_MP: u32 = 6;

/// What a function of the module does when launched: decided when it is
/// looked up, so that a launch (inside a timed window) only matches.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Body {
    /// `fill_a`..`fill_d`: the array of that index takes the scalar.
    Fill(usize),
    /// `a = scalar * a` (STREAM's timing test, and the update kernel).
    Update,
    /// A kernel's recurrence, by the portable loops.
    Kernel(KernelId),
}

/// The module's kernels: every kernel the GPU's threads run, in every
/// build (kernels.cu's names: `-` spelled `_`, the build's suffix
/// appended), then the helpers; each with what it does.
fn names() -> Vec<(String, Body)> {
    let families: Vec<(String, Body)> = (crate::kernels::KERNELS.iter())
        .filter(|k| {
            !matches!(
                k.path,
                Path::HostLink {
                    by: Mover::CopyEngine | Mover::Pageable,
                    ..
                }
            )
        })
        .map(|k| {
            let body = match k.id {
                KernelId::Update => Body::Update,
                id => Body::Kernel(id),
            };
            (k.name.replace('-', "_"), body)
        })
        .collect();
    let mut names: Vec<(String, Body)> = (families.iter())
        .flat_map(|(f, body)| {
            BUILDS
                .iter()
                .map(move |b| (format!("{f}{}", b.suffix), *body))
        })
        .collect();
    let fills = ["fill_a", "fill_b", "fill_c", "fill_d"]
        .into_iter()
        .enumerate();
    names.extend(fills.map(|(i, f)| (f.to_string(), Body::Fill(i))));
    names
}

/// A range of memory the device addresses: an allocation of its own, or
/// a registered host buffer.
struct Region {
    start: *mut f64,
    len: usize,
    kind: RegionKind,
}

/// What a region is, as a driver's pointer attributes say, and where a
/// managed one's pages are.
#[derive(Debug, Clone, Copy, PartialEq)]
enum RegionKind {
    Device,
    /// Managed memory; `resident`: its pages moved to the device.
    Managed {
        resident: bool,
    },
    /// Host memory registered (pinned, mapped).
    Registered,
    /// Pageable host memory its kernels read.
    Pageable,
}

impl Region {
    fn holds(&self, ptr: DevicePtr) -> bool {
        let start = self.start as u64;
        ptr >= start && ptr < start + (self.len * 8) as u64
    }
}

/// A peer device's memory, as `enable_peer` was told it.
struct PeerRegion {
    region: Region,
    /// Addressed directly (its kernels reach it); false: copies are
    /// staged through host memory, at [`STAGED`] of the speed.
    direct: bool,
    /// The share of its peer links that are up (`nvlink-down=I:K`).
    links: f64,
}

/// The speed of a copy staged through host memory against a direct one
/// (a peer pair without P2P: `peer-down=I:J`).
const STAGED: f64 = 0.25;

pub(super) struct SimRuntime {
    setup: Setup,
    /// Each function's name and what it does.
    names: Vec<(String, Body)>,
    /// Its "device memory".
    allocations: Vec<MappedArray>,
    /// Everything it addresses: its allocations and the registered host
    /// buffers.
    regions: Vec<Region>,
    events: [Option<Duration>; 3],
    warnings: Vec<String>,
    /// The share of their speed its kernels run at (`slow=I:F`).
    speed: f64,
    /// Peers' memory it was told of, and whether it reaches it directly.
    peers: Vec<PeerRegion>,
    /// Its index on the simulated node.
    index: u32,
    /// The share of its link's x16 its copies run at (`lanes=I:N`: a link
    /// trained narrow is that much slower).
    link_speed: f64,
    /// The share of its memory's speed its kernels reach over its host
    /// link, both ways (at most 1): over host memory, and where managed
    /// pages migrate.
    over_link: f64,
    /// Bytes of its memory: what managed memory oversubscribes.
    memory_bytes: u64,
}

impl SimRuntime {
    pub(super) fn new(setup: Setup, index: u32) -> SimRuntime {
        SimRuntime {
            speed: setup.fault(index).speed.unwrap_or(1.0),
            link_speed: f64::from((setup.fault(index).lanes.or(setup.lanes)).unwrap_or(16)) / 16.0,
            over_link: (2.0 * super::host_link_gb_s(&setup, index)
                / setup.peak_gb_s.unwrap_or(super::PEAK_GB_S))
            .min(1.0),
            memory_bytes: setup.memory_bytes.unwrap_or(super::MEMORY_BYTES),
            peers: Vec::new(),
            index,
            setup,
            names: names(),
            allocations: Vec::new(),
            regions: Vec::new(),
            events: [None; 3],
            warnings: Vec::new(),
        }
    }

    /// New memory of `bytes` of its own, of `kind`.
    fn allocate(&mut self, bytes: usize, kind: RegionKind) -> Result<DevicePtr, String> {
        let mut array = MappedArray::new(bytes.div_ceil(8).max(1), 0)
            .map_err(|e| format!("allocating {bytes} bytes: {e}"))?;
        let region = Region {
            start: array.as_mut_slice().as_mut_ptr(),
            len: array.len(),
            kind,
        };
        let ptr = region.start as DevicePtr;
        self.regions.push(region);
        self.allocations.push(array);
        Ok(ptr)
    }

    /// The share of its memory's speed a kernel over `arrays` (the
    /// device's four) runs at where they live: over its host link for
    /// host memory and for managed pages that migrate now (which are the
    /// device's after), and, where more is managed than its memory holds,
    /// over its link for the share that does not fit.
    fn where_they_live(&mut self, arrays: &[DevicePtr]) -> f64 {
        let mut speed: f64 = 1.0;
        let mut managed_bytes = 0u64;
        for region in
            (self.regions.iter_mut()).filter(|r| arrays.iter().any(|&p| p != 0 && r.holds(p)))
        {
            match region.kind {
                RegionKind::Registered | RegionKind::Pageable => speed = speed.min(self.over_link),
                RegionKind::Managed { resident } => {
                    if !resident {
                        speed = speed.min(self.over_link);
                        region.kind = RegionKind::Managed { resident: true };
                    }
                    managed_bytes += region.len as u64 * 8;
                }
                RegionKind::Device => {}
            }
        }
        if managed_bytes > self.memory_bytes {
            let fit = self.memory_bytes as f64 / managed_bytes as f64;
            speed = speed.min(1.0 / (fit + (1.0 - fit) / self.over_link));
        }
        speed
    }

    /// The region `ptr` points into, from `ptr` to its end: its own, or a
    /// peer's it reaches directly (as a kernel may).
    fn from(&self, ptr: DevicePtr) -> Result<(*mut f64, usize), String> {
        let direct = (self.peers.iter()).filter(|p| p.direct).map(|p| &p.region);
        let r = (self.regions.iter())
            .chain(direct)
            .find(|r| r.holds(ptr))
            .ok_or_else(|| format!("address {ptr:#x} is not the device's"))?;
        Ok(Self::inside(r, ptr))
    }

    /// `ptr` in region `r`, and the doubles from it to the region's end.
    fn inside(r: &Region, ptr: DevicePtr) -> (*mut f64, usize) {
        let skip = (ptr - r.start as u64) as usize / 8;
        // SAFETY: `skip` < r.len, so the pointer stays inside the region.
        (unsafe { r.start.add(skip) }, r.len - skip)
    }

    /// `ptr` for a copy engine: its own memory or any peer's it was told
    /// of, and the share of the speed the copy runs at there (staged
    /// through host memory, or over peer links some of which are down).
    fn for_copy(&self, ptr: DevicePtr) -> Result<(*mut f64, usize, f64), String> {
        if let Ok((p, len)) = self.from(ptr) {
            return Ok((p, len, 1.0));
        }
        let peer = (self.peers.iter())
            .find(|p| p.region.holds(ptr))
            .ok_or_else(|| format!("address {ptr:#x} is neither the device's nor a peer's"))?;
        let (p, len) = Self::inside(&peer.region, ptr);
        let own = self.setup.links_up(self.index);
        let speed = if peer.direct {
            peer.links.min(own)
        } else {
            STAGED
        };
        Ok((p, len, speed))
    }

    /// The arrays of a launch as one chunk of `elements` elements each.
    ///
    /// # Safety
    /// The arrays are distinct regions the runtime addresses (checked),
    /// and nothing else touches them while the chunk lives: every call of
    /// the runtime's is done before it returns.
    unsafe fn chunk(
        &self,
        arrays: &[DevicePtr; ARRAYS],
        elements: usize,
    ) -> Result<Chunk<'_>, String> {
        // Sorted in place (no allocation: a launch is timed).
        let mut used = *arrays;
        used.sort_unstable();
        if used.windows(2).any(|w| w[0] != 0 && w[0] == w[1]) {
            return Err("one array passed twice".into());
        }
        let mut slices: [Option<&mut [f64]>; ARRAYS] = Default::default();
        for (slot, &ptr) in slices.iter_mut().zip(arrays) {
            if ptr != 0 {
                let (start, len) = self.from(ptr)?;
                if len < elements {
                    return Err(format!("the array at {ptr:#x} is shorter than {elements}"));
                }
                // SAFETY: `start..start+elements` lies in one region (its
                // length checked), and the regions are distinct (checked
                // above), so no two slices overlap.
                *slot = Some(unsafe { std::slice::from_raw_parts_mut(start, elements) });
            }
        }
        Ok(Chunk {
            arrays: slices,
            offset: 0,
        })
    }

    /// `wrong-element=N`: element N of what was just written, off by one.
    fn spoil(slice: Option<&mut [f64]>, setup: &Setup) {
        if let (Some(n), Some(slice)) = (setup.wrong_element, slice)
            && let Some(x) = slice.get_mut(n)
        {
            *x += 1.0;
        }
    }

    fn slot(event: Event) -> usize {
        match event {
            Event::Start => 0,
            Event::End => 1,
            Event::OtherDone => 2,
        }
    }

    /// A copy of `len` doubles, `wrong-element` applied to what it wrote.
    fn copy(&self, to: *mut f64, from: *const f64, len: usize) {
        let began = thread_cpu_time();
        // SAFETY: the callers' contracts: both ranges valid for `len`
        // doubles; they are different buffers (host and device memory).
        let (to, from) = unsafe {
            (
                std::slice::from_raw_parts_mut(to, len),
                std::slice::from_raw_parts(from, len),
            )
        };
        to.copy_from_slice(from);
        slow_down(began, self.link_speed);
        Self::spoil(Some(to), &self.setup);
    }
}

/// A memory that runs at `speed` of its own: the work begun at `began`
/// (the thread's CPU time) lasts 1/`speed` as long, busy (as a kernel
/// is), so that the host's clock around it sees it last at least as long.
fn slow_down(began: Duration, speed: f64) {
    if speed < 1.0 {
        let until = began + thread_cpu_time().saturating_sub(began).div_f64(speed);
        while thread_cpu_time() < until {
            std::hint::spin_loop();
        }
    }
}

impl Runtime for SimRuntime {
    fn architecture(&mut self) -> Option<String> {
        Some("sim".into())
    }

    fn function(&mut self, name: &str) -> Result<Function, String> {
        (self.names.iter().position(|(n, _)| n == name))
            .map(Function)
            .ok_or_else(|| format!("the simulated module has no kernel {name}"))
    }

    fn blocks_per_multiprocessor(
        &mut self,
        _function: Function,
        block: u32,
    ) -> Result<u32, String> {
        // Its multiprocessors hold BLOCKS_PER_MP blocks of 256 threads.
        Ok((BLOCKS_PER_MP * 256 / block.max(1)).max(1))
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevicePtr, String> {
        self.allocate(bytes, RegionKind::Device)
    }

    fn alloc_managed(&mut self, bytes: usize) -> Result<DevicePtr, String> {
        self.allocate(bytes, RegionKind::Managed { resident: false })
    }

    fn prefetch(&mut self, ptr: DevicePtr, _bytes: usize, _stream: Stream) -> Result<(), String> {
        let over_link = self.over_link;
        let region = (self.regions.iter_mut())
            .find(|r| r.holds(ptr))
            .ok_or_else(|| format!("address {ptr:#x} is not the device's"))?;
        if region.kind == (RegionKind::Managed { resident: false }) {
            // Its pages cross the link once.
            let began = thread_cpu_time();
            // SAFETY: the region is one of the runtime's allocations.
            let pages = unsafe { std::slice::from_raw_parts(region.start, region.len) };
            std::hint::black_box(pages.iter().step_by(512).sum::<f64>());
            slow_down(began, over_link);
            region.kind = RegionKind::Managed { resident: true };
        }
        Ok(())
    }

    fn memory_at(&mut self, ptr: DevicePtr) -> Result<DriverMemory, String> {
        let kind = (self.regions.iter()).find(|r| r.holds(ptr)).map(|r| r.kind);
        Ok(match kind {
            Some(RegionKind::Device) => DriverMemory::Device,
            Some(RegionKind::Managed { .. }) => DriverMemory::Managed,
            Some(RegionKind::Registered) => DriverMemory::Host,
            Some(RegionKind::Pageable) | None => DriverMemory::Pageable,
        })
    }

    unsafe fn pageable(&mut self, host: *mut f64, len: usize) -> Result<DevicePtr, String> {
        if self.setup.no_pageable {
            return Err("the simulated device does not read pageable memory (pageable=no)".into());
        }
        (self.regions).push(Region {
            start: host,
            len,
            kind: RegionKind::Pageable,
        });
        Ok(host as DevicePtr)
    }

    unsafe fn register(&mut self, host: *mut f64, len: usize) -> Result<DevicePtr, String> {
        // Locked as a driver pins it; where `ulimit -l` says no, it is
        // still addressed, and the run says its pages could move.
        if let Err(e) = crate::sys::lock_range(host, len) {
            self.warnings.push(format!(
                "a host buffer of {} is not pinned (mlock: {e}; raise ulimit -l): its pages could move",
                crate::units::Bytes(len as u64 * 8)
            ));
        }
        (self.regions).push(Region {
            start: host,
            len,
            kind: RegionKind::Registered,
        });
        Ok(host as DevicePtr)
    }

    unsafe fn copy_to_device(
        &mut self,
        to: DevicePtr,
        from: *const f64,
        len: usize,
        _stream: Stream,
    ) -> Result<(), String> {
        let (to, room) = self.from(to)?;
        self.copy(to, from, len.min(room));
        Ok(())
    }

    unsafe fn copy_to_host(
        &mut self,
        to: *mut f64,
        from: DevicePtr,
        len: usize,
        _stream: Stream,
    ) -> Result<(), String> {
        let (from, room) = self.from(from)?;
        self.copy(to, from, len.min(room));
        Ok(())
    }

    fn read(&mut self, from: DevicePtr, into: &mut [f64]) -> Result<(), String> {
        let (from, room) = self.from(from)?;
        let len = into.len().min(room);
        // SAFETY: `from..from+len` lies in one of its regions.
        into[..len].copy_from_slice(unsafe { std::slice::from_raw_parts(from, len) });
        Ok(())
    }

    fn launch(
        &mut self,
        function: Function,
        grid: u32,
        block: u32,
        args: &KernelArgs,
        _stream: Stream,
    ) -> Result<(), String> {
        if grid == 0 {
            return Err("a launch of no blocks".into());
        }
        if !BLOCKS.contains(&block) {
            return Err(format!("a launch of blocks of {block} threads"));
        }
        let body = self.names[function.0].1;
        let elements = args.elements as usize;
        let began = thread_cpu_time();
        let placed = self.where_they_live(&args.arrays[..DEVICE_ARRAYS]);
        // SAFETY: the arrays are the runtime's regions, and the launch
        // is done before this call returns.
        let mut chunk = unsafe { self.chunk(&args.arrays, elements) }?;
        let kernel = match body {
            Body::Fill(i) => {
                if let Some(array) = chunk.arrays[i].as_deref_mut() {
                    array.fill(args.scalar);
                }
                slow_down(began, placed);
                return Ok(());
            }
            Body::Update => {
                if let Some(a) = chunk.arrays[ArrayId::A.index()].as_deref_mut() {
                    a.iter_mut().for_each(|x| *x *= args.scalar);
                }
                slow_down(began, placed);
                return Ok(());
            }
            Body::Kernel(kernel) => kernel,
        };
        let mut sums = Sums::default();
        run_portable(kernel, &mut chunk, &mut sums);
        slow_down(began, self.speed * placed);
        let written = kernel.spec().written();
        Self::spoil(
            written.and_then(|w| chunk.arrays[w.index()].as_deref_mut()),
            &self.setup,
        );
        let sum = match kernel {
            KernelId::Read => Some(sums.read),
            KernelId::Dot => Some(sums.dot),
            _ => None,
        };
        if let Some(sum) = sum.filter(|_| args.partial != 0) {
            // Each block's sum: the first holds the whole, the rest none.
            let (partial, room) = self.from(args.partial)?;
            let blocks = (grid as usize).min(room);
            // SAFETY: `partial..partial+blocks` lies in one region.
            let partial = unsafe { std::slice::from_raw_parts_mut(partial, blocks) };
            partial.fill(0.0);
            partial[0] = sum;
        }
        Ok(())
    }

    fn record(&mut self, event: Event, _stream: Stream) -> Result<(), String> {
        self.events[Self::slot(event)] = Some(thread_cpu_time());
        Ok(())
    }

    fn wait(&mut self, _stream: Stream, _event: Event) -> Result<(), String> {
        Ok(())
    }

    fn elapsed_s(&mut self, from: Event, to: Event) -> Result<f64, String> {
        let (Some(t0), Some(t1)) = (self.events[Self::slot(from)], self.events[Self::slot(to)])
        else {
            return Err("an event that was never recorded".into());
        };
        let seconds = t1.saturating_sub(t0).as_secs_f64() * self.setup.clock.unwrap_or(1.0);
        // Whole ticks, as a device's clock counts.
        Ok((seconds / TICK_S).floor() * TICK_S)
    }

    fn synchronize(&mut self, _stream: Stream) -> Result<(), String> {
        Ok(())
    }

    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn make_current(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn enable_peer(&mut self, peer: u32, memory: &[(DevicePtr, usize)]) -> Result<bool, String> {
        let direct = !self.setup.peer_down(self.index, peer);
        self.peers
            .extend(memory.iter().map(|&(start, len)| PeerRegion {
                region: Region {
                    start: start as *mut f64,
                    len,
                    kind: RegionKind::Device,
                },
                direct,
                links: self.setup.links_up(peer),
            }));
        Ok(direct)
    }

    unsafe fn copy_device(
        &mut self,
        to: DevicePtr,
        from: DevicePtr,
        len: usize,
        _stream: Stream,
    ) -> Result<(), String> {
        let (to, room_to, speed_to) = self.for_copy(to)?;
        let (from, room_from, speed_from) = self.for_copy(from)?;
        let began = thread_cpu_time();
        self.copy(to, from, len.min(room_to).min(room_from));
        let speed = speed_to.min(speed_from);
        if speed < 1.0 {
            slow_down(began, speed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a launch does is decided by the lookup: every build of a
    /// kernel runs its recurrence, the helpers fill and update.
    #[test]
    fn each_function_is_resolved_once_to_what_it_does() {
        let names = names();
        let body = |name: &str| (names.iter()).find(|(n, _)| n == name).map(|(_, b)| *b);
        assert_eq!(body("fill_c"), Some(Body::Fill(ArrayId::C.index())));
        assert_eq!(body("update"), Some(Body::Update));
        for build in BUILDS {
            let triad = format!("triad{}", build.suffix);
            assert_eq!(body(&triad), Some(Body::Kernel(KernelId::Triad)), "{triad}");
        }
        assert_eq!(body("h2d"), None, "a copy engine's transfer is no kernel");
    }
}
