//! A node of simulated devices, for the tests: a vendor of the GPU-runtime
//! layer (`backend::gpu`) as a CUDA driver is one, whose "device memory" is
//! host memory and whose kernels are the portable loops. Every command
//! drives it through the same GPU backend as a real GPU, so that the
//! backend's tests pass on it and on the fake CUDA driver alike, with
//! nothing of either outside its own module.
//!
//! The node has [`DEVICES`] devices, `sim:0` to `sim:3`; device N is
//! attached to the host's NUMA node N modulo the nodes there are, and is
//! driven by a host thread pinned to the first CPU of that node this
//! process may use (so that the trust counters tell its time from other
//! work). Each owns its arrays (memory that no CPU placement, memory
//! policy or first touch of membw's places), names itself `simN`, declares
//! its memory and two named peaks (its memory and its host link), and
//! refuses what only CPUs have: threads, a placement, an ISA, store
//! instructions, page sizes. Its kernels run on the host thread, so its
//! rates are real ones of this host; only its identity and facts are
//! simulated.
//!
//! Its host link is real host memory: the transfers (h2d, d2h, bidir: a
//! copy engine's memcpy; their -kernel forms: a loop, as the device's threads) copy
//! between its arrays and two host buffers (h, r) that the plan's memory
//! policy places before any page exists, that its host thread locks
//! (`mlock`, as a driver pins them) and first touches, and whose pages it
//! reports, checked page by page. `--mem` is refused where no transfer
//! runs: its own memory takes no policy.
//!
//! It times its own work, as a GPU's events do, with a clock of 1 µs
//! ticks: the protocol takes its clock's times, checks them against the
//! host's around them, and sizes its launches per repetition by it, so
//! that arrays of a few thousand elements (kernels of microseconds) are
//! measured as a GPU's small arrays are. Its work runs on its host
//! thread, so the CPUs' tick counters are its observer.
//!
//! `MEMBW_SIM_DEVICE` sets it up for tests (`setup.rs`): `devices=N`
//! makes a node of N devices; `wrong-element=N` makes element N of the
//! last array every kernel writes come back wrong (the protocol must name
//! that array), `peak=GBS` and `link=GBS` change its peaks, `lanes=N`
//! (or `lanes=I:N`, device I only) trains its PCIe Gen5 x16 link at N
//! lanes (a link below its maximum, for `check`; its copies run at N/16
//! of their speed), `slow=I:F` makes device I's kernels run at F of their
//! speed (a memory that lost bandwidth), `peer-down=I:J` takes the direct
//! path between devices I and J away (their copies staged through host
//! memory at a quarter of the speed, their kernels unable to reach each
//! other), `clock=F` makes its clock run F times as fast as it should
//! (the protocol must catch one that runs fast), `memory=MIB` gives each
//! device that much memory, `pageable=no` takes its reach into pageable
//! host memory away.
//!
//! Where its arrays live (`--gpu-memory`) is modelled on its host link:
//! its kernels over host memory (pinned or pageable) run at the link's
//! share of its memory peak (both ways); managed memory the host wrote
//! first migrates at the link's rate on the first kernel that touches it
//! (or on a prefetch), and where more is managed than its memory holds,
//! the share that does not fit runs at the link's rate every time.

mod runtime;
mod setup;

use setup::Setup;

use super::gpu::runtime::{Described, Platform, PlatformId, Runtime};
use crate::observe::{Observer, OtherWork};
use crate::results::targets::method::CPU_TICKS;
use crate::results::targets::{self, Clock, DeviceFacts, DeviceId, DeviceMethod, DevicePeaks};
use crate::topology::Topology;
use crate::topology::pci::{LinkState, PciLink};

/// The simulated device's memory.
pub(super) const MEMORY_BYTES: u64 = 1 << 30;
/// Its declared memory peak, GB/s: above what any host here reaches with
/// one thread.
pub(super) const PEAK_GB_S: f64 = 1000.0;
/// Its host link: PCIe 5.0 x16, 32 GT/s × 16 lanes × 128/130 / 8 = 63
/// GB/s each way.
const GEN5_X16: LinkState = LinkState {
    gt_s: 32.0,
    width: 16,
};
/// Devices on the simulated node, unless `devices=N` says.
pub const DEVICES: u32 = 4;
/// Its "L2": STREAM's rule on it gives 16 MiB arrays (2^21 elements).
const CACHE_BYTES: u64 = 4 << 20;
/// Its multiprocessors, each holding [`runtime::BLOCKS_PER_MP`] blocks.
const MULTIPROCESSORS: u32 = 8;
/// Its clock's tick, seconds.
const TICK_S: f64 = 1e-6;
/// Device `index`'s PCIe link: Gen5 x16, or as many lanes as asked.
fn link(setup: &Setup, index: u32) -> PciLink {
    PciLink {
        current: LinkState {
            width: (setup.fault(index).lanes)
                .or(setup.lanes)
                .unwrap_or(GEN5_X16.width),
            ..GEN5_X16
        },
        max: GEN5_X16,
    }
}

/// Device `index`'s host link peak, each way, GB/s: its C2C links'
/// active share where it has some (one stays active).
fn host_link_gb_s(setup: &Setup, index: u32) -> f64 {
    let whole = (setup.link_gb_s).unwrap_or_else(|| link(setup, index).current.gb_s());
    (setup.host_fabric(index, whole))
        .and_then(|c2c| c2c.gb_s())
        .unwrap_or(whole)
}

/// The variable that sets it up for tests.
pub const SETUP_VARIABLE: &str = "MEMBW_SIM_DEVICE";

/// The simulated node's devices, as one platform of the GPU backend.
pub struct SimPlatform;

/// The one instance `backend::PLATFORMS` registers.
pub static SIM: SimPlatform = SimPlatform;

impl SimPlatform {
    /// The host node device `index` is attached to: the `index`-th of the
    /// nodes with memory, round robin.
    fn node(index: u32, topo: &Topology) -> Option<usize> {
        let nodes: Vec<usize> = (topo.nodes.iter())
            .filter(|n| !n.memoryless())
            .map(|n| n.id)
            .collect();
        (!nodes.is_empty()).then(|| nodes[index as usize % nodes.len()])
    }
}

impl Platform for SimPlatform {
    fn id(&self) -> &'static PlatformId {
        &PlatformId {
            name: "sim",
            kind: "a simulated device",
            fabric: None,
            vendor: None,
            counter: "the simulated node",
            count_note: None,
            libraries: &[],
        }
    }

    fn count(&self) -> Result<u32, String> {
        Ok(Setup::from_env()?.count())
    }

    fn missing(&self, index: u32, count: u32) -> String {
        format!(
            "there is no device sim:{index}: the simulated node has sim:0 to sim:{}",
            count - 1
        )
    }

    /// Only STREAM's rule: the simulated device's arrays are the host's.
    fn min_elements(&self) -> u64 {
        0
    }

    fn check_setup(&self) -> Result<(), String> {
        Setup::from_env().map(|_| ())
    }

    fn describe(&self, index: u32, topo: &Topology) -> Result<Described, String> {
        let setup = Setup::from_env()?;
        let link = link(&setup, index);
        let whole_link = (setup.link_gb_s).unwrap_or_else(|| link.current.gb_s());
        let host_fabric = setup.host_fabric(index, whole_link);
        let device = targets::Device {
            id: DeviceId::of(self.name(), index),
            facts: DeviceFacts {
                uuid: Some(format!("SIM-{index:08x}")),
                bus_id: Some(format!("0000:{:02x}:00.0", 0x18 + index)),
                // Over NVLink-C2C the host link is not a PCIe function's.
                link: host_fabric.is_none().then_some(link),
                host_fabric: host_fabric.clone(),
                model: Some("membw simulated device".into()),
                memory_bytes: Some(setup.memory_bytes.unwrap_or(MEMORY_BYTES)),
                driver: Some(format!("membw {}", env!("CARGO_PKG_VERSION"))),
                numa_node: SimPlatform::node(index, topo),
                multiprocessors: Some(MULTIPROCESSORS),
                cache_bytes: Some(CACHE_BYTES),
                fabric: setup.fabric(index),
                memory_health: Some(setup.memory_health(index)),
                reach: Some(targets::MemoryReach {
                    managed: Some(true),
                    concurrent_managed: Some(true),
                    pageable: Some(!setup.no_pageable),
                    host_page_tables: Some(false),
                    xnack: None,
                    pageable_missing: (setup.no_pageable)
                        .then(|| "the simulated device was set up without it (pageable=no)".into()),
                    memory_node: setup.memory_nodes.get(&index).copied(),
                }),
                peaks: DevicePeaks {
                    memory_gb_s: Some(setup.peak_gb_s.unwrap_or(PEAK_GB_S)),
                    host_link_gb_s: Some(host_link_gb_s(&setup, index)),
                    memory_from: None,
                },
                method: DeviceMethod {
                    clock: Clock {
                        name: "the simulated device's clock".into(),
                        own: true,
                        resolution_s: Some(TICK_S),
                    },
                    setup: "allocations and fill kernels, host buffers locked".into(),
                    observers: vec![format!(
                        "{CPU_TICKS}, of the host thread that runs its kernels"
                    )],
                },
            },
        };
        Ok(Described { device })
    }

    fn open(&self, index: u32) -> Result<Box<dyn Runtime>, String> {
        Ok(Box::new(runtime::SimRuntime::new(
            Setup::from_env()?,
            index,
        )))
    }

    /// Its kernels run on its host thread: the CPUs' tick counters see
    /// what else ran beside them.
    fn observers(&self, _device: &targets::Device) -> Vec<Box<dyn Observer>> {
        vec![Box::new(OtherWork::default())]
    }

    fn after_run(&self, _device: &targets::Device) -> Vec<String> {
        Vec::new()
    }

    fn memory_share(&self) -> f64 {
        1.0
    }
}
