//! A node of simulated devices, for the tests: the proof that a backend
//! which is not the CPU team (a GPU's memory, later) goes through every
//! command with one module and one registration.
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
//! It times its own work, as a GPU's events do: the protocol takes its
//! clock's times and checks them against the host's around them.
//!
//! `MEMBW_SIM_DEVICE` sets it up for validation tests: `wrong-element=N`
//! makes element N of the last array every kernel writes come back wrong
//! (the protocol must name that array), `peak=GBS` and `link=GBS` change
//! its peaks, `lanes=N` trains its PCIe Gen5 x16 link at N lanes (a link
//! below its maximum, for `check`), `clock=F` makes its clock run F times
//! as fast as it should
//! (the protocol must catch one that runs fast).

use super::{ArrayErrors, Backend, Device, Driver, HostArrays, Observed, ReadBack};
use crate::error::{Error, Input, Result};
use crate::kernels::{ARRAYS, ArrayId, KernelId};
use crate::memory::policy::MemPolicy;
use crate::plan::{Plan, Prepared, Settings};
use crate::results::target::{self, DeviceFacts, DeviceId, DevicePeaks};
use crate::topology::Topology;
use crate::topology::pci::{LinkState, PciLink};
use crate::units::{Bytes, ELEMENT_BYTES};

/// The simulated device's memory.
const MEMORY_BYTES: u64 = 1 << 30;
/// Its declared memory peak, GB/s: above what any host here reaches with
/// one thread.
const PEAK_GB_S: f64 = 1000.0;
/// Its host link: PCIe 5.0 x16, 32 GT/s × 16 lanes × 128/130 / 8 = 63
/// GB/s each way.
const GEN5_X16: LinkState = LinkState {
    gt_s: 32.0,
    width: 16,
};
/// Devices on the simulated node.
pub const DEVICES: u32 = 4;
/// Elements per array when no size is given: 16 MiB arrays.
const DEFAULT_ELEMENTS: u64 = 2 << 20;
/// The variable that sets it up for tests.
pub const SETUP_VARIABLE: &str = "MEMBW_SIM_DEVICE";

/// One of the simulated node's devices.
pub struct SimDevice {
    index: u32,
}

impl SimDevice {
    /// Device `index` (the first where none is given), or why not.
    pub fn make(index: Option<u32>) -> std::result::Result<Box<dyn Backend>, String> {
        match index.unwrap_or(0) {
            i if i < DEVICES => Ok(Box::new(SimDevice { index: i })),
            i => Err(format!(
                "there is no device sim:{i}: the simulated node has sim:0 to sim:{}",
                DEVICES - 1
            )),
        }
    }

    /// `sim1`: the device's own name (the backend's is `sim`).
    fn device_name(&self) -> String {
        format!("sim{}", self.index)
    }

    /// The host node it is attached to, and the CPU that drives it: the
    /// first this process may use on that node (any, on a node with none).
    fn attachment(&self, topo: &Topology) -> (Option<usize>, Option<usize>) {
        let nodes: Vec<&crate::topology::Node> =
            (topo.nodes.iter()).filter(|n| !n.memoryless()).collect();
        let node = (!nodes.is_empty()).then(|| nodes[self.index as usize % nodes.len()]);
        let cpu = node
            .and_then(|n| n.cpus.intersection(&topo.allowed_cpus).first())
            .or_else(|| topo.allowed_cpus.first());
        (node.map(|n| n.id), cpu)
    }
}

/// What `MEMBW_SIM_DEVICE` asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Setup {
    wrong_element: Option<usize>,
    peak_gb_s: Option<f64>,
    link_gb_s: Option<f64>,
    lanes: Option<u32>,
    clock: Option<f64>,
}

/// A positive rate in GB/s.
fn rate(gb_s: &str) -> std::result::Result<f64, String> {
    (gb_s.parse().ok())
        .filter(|p: &f64| p.is_finite() && *p > 0.0)
        .ok_or_else(|| format!("'{gb_s}': a positive rate in GB/s"))
}

impl Setup {
    fn parse(text: &str) -> std::result::Result<Setup, String> {
        let mut setup = Setup::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.split_once('=') {
                Some(("wrong-element", n)) => {
                    setup.wrong_element = Some(
                        n.parse()
                            .map_err(|_| format!("'{n}': an element index (0, 1, ...)"))?,
                    );
                }
                Some(("peak", gb_s)) => setup.peak_gb_s = Some(rate(gb_s)?),
                Some(("link", gb_s)) => setup.link_gb_s = Some(rate(gb_s)?),
                Some(("lanes", n)) => {
                    setup.lanes = Some(
                        (n.parse().ok())
                            .filter(|n| (1..=16).contains(n))
                            .ok_or_else(|| format!("'{n}': lanes from 1 to 16"))?,
                    );
                }
                Some(("clock", f)) => {
                    setup.clock = Some(
                        (f.parse().ok())
                            .filter(|f: &f64| f.is_finite() && *f > 0.0)
                            .ok_or_else(|| format!("'{f}': a positive factor"))?,
                    );
                }
                _ => {
                    return Err(format!(
                        "'{item}': expected wrong-element=N, peak=GBS, link=GBS, lanes=N or clock=F"
                    ));
                }
            }
        }
        Ok(setup)
    }

    fn from_env() -> Result<Setup> {
        let Ok(text) = std::env::var(SETUP_VARIABLE) else {
            return Ok(Setup::default());
        };
        Setup::parse(&text).map_err(|e| Error::Usage(format!("{SETUP_VARIABLE}={text}: {e}")))
    }
}

impl Backend for SimDevice {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn prepare(&self, topo: &Topology, s: &Settings) -> Result<Prepared> {
        super::offload::refuse_what_cpus_have("a simulated device", s)?;
        let setup = Setup::from_env()?;
        let (numa_node, host_cpu) = self.attachment(topo);
        let (elements, inner_repeats) = s.sizes(1, || DEFAULT_ELEMENTS)?;
        let link = PciLink {
            current: LinkState {
                width: setup.lanes.unwrap_or(GEN5_X16.width),
                ..GEN5_X16
            },
            max: GEN5_X16,
        };
        let mut kernels = s.measure.kernels.clone();
        kernels.sort();
        kernels.dedup();
        let arrays = super::offload::device_arrays(&kernels);
        let needed = (elements as u64).saturating_mul(ELEMENT_BYTES * arrays);
        if needed > MEMORY_BYTES {
            return Err(Error::input(
                Input::Size,
                elements.to_string(),
                format!(
                    "{arrays} arrays of {elements} elements need {}, more than the {} of the simulated device {}",
                    Bytes(needed),
                    Bytes(MEMORY_BYTES),
                    self.device_name()
                ),
            ));
        }
        Ok(super::offload::DevicePlan {
            elements,
            inner_repeats,
            kernels,
            // The host thread that drives the device: no CPU of the
            // host's does the device's work on a real one.
            host_cpu,
            device: target::Device {
                id: DeviceId {
                    backend: self.name().into(),
                    index: self.index,
                    name: self.device_name(),
                },
                facts: DeviceFacts {
                    uuid: Some(format!("SIM-{:08x}", self.index)),
                    bus_id: Some(format!("0000:{:02x}:00.0", 0x18 + self.index)),
                    link: Some(link),
                    model: Some("membw simulated device".into()),
                    memory_bytes: Some(MEMORY_BYTES),
                    driver: Some(format!("membw {}", env!("CARGO_PKG_VERSION"))),
                    numa_node,
                    peaks: DevicePeaks {
                        memory_gb_s: Some(setup.peak_gb_s.unwrap_or(PEAK_GB_S)),
                        host_link_gb_s: Some(
                            (setup.link_gb_s).unwrap_or_else(|| link.current.gb_s()),
                        ),
                    },
                },
            },
        }
        .prepared(topo, s))
    }

    fn open(&mut self, plan: &Plan, driver: &mut Driver<'_>) -> Result<Observed> {
        let setup = Setup::from_env()?;
        let written = plan.kernels.iter().rev().find_map(|k| k.spec().written());
        // Its own arrays are its memory; the host buffers are host memory
        // under the plan's policy, placed before any page exists.
        let mut placed = MemPolicy::default();
        for id in ArrayId::ALL.into_iter().filter(|a| a.host_buffer()) {
            placed.arrays[id.index()] = plan.mem.get(id).clone();
        }
        let host_cpu = plan.cpus.first().copied();
        let host_node = plan.cpu_nodes.first().copied().flatten();
        // Driven from a thread of its own, pinned, as a GPU's host thread:
        // it maps, pins and first touches the host buffers.
        super::offload::on_host_thread(&self.device_name(), host_cpu, || {
            let mut memory = Memory {
                arrays: HostArrays::new(plan, &placed, &plan.arrays_needed())?,
                wrong: setup.wrong_element.zip(written),
                clock: setup.clock.unwrap_or(1.0),
                last_run_s: None,
            };
            let mut warnings = memory.pin_host_buffers();
            driver(&mut memory)?;
            let (pages, more) =
                super::offload::host_buffer_pages(&memory.arrays.arrays, &placed, host_node);
            warnings.extend(more);
            Ok(Observed {
                threads: Vec::new(),
                pages,
                warnings,
            })
        })
    }
}

/// The device's arrays, as the protocol drives them.
struct Memory {
    arrays: HostArrays,
    /// The element, and the array, that read back wrong.
    wrong: Option<(usize, ArrayId)>,
    /// How fast its clock runs (1: true).
    clock: f64,
    /// Its own time of the last `run`.
    last_run_s: Option<f64>,
}

impl Memory {
    /// Locks the host buffers in memory, as a GPU driver pins them for its
    /// copy engines; says so where it cannot (`ulimit -l`).
    fn pin_host_buffers(&self) -> Vec<String> {
        (ArrayId::ALL.into_iter().filter(|a| a.host_buffer()))
            .filter_map(|id| Some((id, self.arrays.arrays.array(id)?.lock().err()?)))
            .map(|(id, e)| {
                format!(
                    "host buffer {} is not pinned (mlock: {e}; raise ulimit -l): its pages could move",
                    id.name()
                )
            })
            .collect()
    }
}

impl Device for Memory {
    fn init(&mut self, values: [f64; ARRAYS]) {
        self.arrays.init(values);
    }
    fn double_a(&mut self) {
        self.arrays.double_a();
    }
    fn sync(&mut self) {}
    fn run(&mut self, kernel: KernelId, repeats: usize) {
        // Its own clock around its own work, as a GPU's events.
        let start = std::time::Instant::now();
        self.arrays.run(kernel, repeats);
        self.last_run_s = Some(start.elapsed().as_secs_f64() * self.clock);
    }
    fn device_seconds(&self) -> Option<f64> {
        self.last_run_s
    }
    fn read_back(&mut self, want: [f64; ARRAYS], errors: ArrayErrors) -> ReadBack {
        if let Some((element, array)) = self.wrong
            && let Some(x) = (self.arrays.arrays.array_mut(array))
                .and_then(|v| v.as_mut_slice().get_mut(element))
        {
            *x += 1.0;
        }
        self.arrays.read_back(want, errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_setup_is_read_or_refused_in_one_line() {
        assert_eq!(
            Setup::parse("wrong-element=3, peak=250").unwrap(),
            Setup {
                wrong_element: Some(3),
                peak_gb_s: Some(250.0),
                link_gb_s: None,
                lanes: None,
                clock: None,
            }
        );
        assert_eq!(Setup::parse("").unwrap(), Setup::default());
        assert!(
            Setup::parse("wrong-element=-1")
                .unwrap_err()
                .contains("'-1'")
        );
        assert!(Setup::parse("peak=0").unwrap_err().contains("'0'"));
        assert_eq!(Setup::parse("link=25").unwrap().link_gb_s, Some(25.0));
        assert!(Setup::parse("speed=2").unwrap_err().contains("'speed=2'"));
    }
}
