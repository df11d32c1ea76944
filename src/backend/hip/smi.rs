//! ROCm SMI (`librocm_smi64`), loaded at run time: what HIP does not say
//! of an AMD GPU. Its xGMI links to the other GPUs (for the pair probe and
//! `check`), the amdgpu driver's version, and whether its clocks are held
//! back (power, current, heat) as a window opens and closes: the observer
//! of every window, as NVML's counters are of an NVIDIA GPU's.
//!
//! The crates that bind ROCm SMI (`rocm_smi_lib`) are built against one
//! ROCm's headers and link it, where membw must start with any ROCm or
//! none; so a few calls are bound here by hand, and only calls that take
//! and give plain integers: SMI's structures have changed between
//! releases, its scalar calls have not.
//! SMI numbers GPUs its own way, so a GPU is found by its PCI address.
//! SMI is optional: where it does not load, a GPU has no fabric, no
//! observer watches its windows, and the run says neither is known.

#![allow(non_snake_case)]

use crate::results::targets::Fabric;
use crate::results::targets::{GpuMemoryAt, GpuMemoryHealth, MemoryCounter};
use std::ffi::{CStr, c_char, c_int};
use std::sync::OnceLock;

/// `rsmi_status_t`.
type Status = c_int;
const SUCCESS: Status = 0;
/// `RSMI_IO_LINK_TYPE`'s `RSMI_IOLINK_TYPE_XGMI`.
const XGMI: c_int = 2;
/// `rsmi_sw_component_t`'s `RSMI_SW_COMP_DRIVER`.
const DRIVER: c_int = 0;

/// The library's names, newest ROCm first.
pub(super) const LIBRARIES: [&str; 4] = [
    "librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5", "librocm_smi64.so.1",
];

/// The calls membw makes; the `metrics` ones are newer (ROCm 6.1) and
/// may be absent.
struct Smi {
    _library: libloading::Library,
    num_monitor_devices: unsafe extern "C" fn(*mut u32) -> Status,
    pci_id: unsafe extern "C" fn(u32, *mut u64) -> Status,
    link_type: unsafe extern "C" fn(u32, u32, *mut u64, *mut c_int) -> Status,
    minmax_bandwidth: unsafe extern "C" fn(u32, u32, *mut u64, *mut u64) -> Status,
    version_str: unsafe extern "C" fn(c_int, *mut c_char, u32) -> Status,
    indep_throttle: Option<unsafe extern "C" fn(u32, *mut u64) -> Status>,
    memory_clock: Option<unsafe extern "C" fn(u32, *mut u16) -> Status>,
    ecc_enabled: Option<unsafe extern "C" fn(u32, *mut u64) -> Status>,
    ecc_count: Option<unsafe extern "C" fn(u32, c_int, *mut ErrorCount) -> Status>,
    bad_pages: Option<unsafe extern "C" fn(u32, *mut u32, *mut PageRecord) -> Status>,
}

/// `rsmi_error_count_t`, with the `deferred_err` newer releases add (an
/// older SMI writes the first two).
#[repr(C)]
#[derive(Default)]
struct ErrorCount {
    correctable: u64,
    uncorrectable: u64,
    deferred: u64,
}

/// `rsmi_retired_page_record_t`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct PageRecord {
    address: u64,
    size: u64,
    /// `rsmi_memory_page_status_t`: reserved, pending, unreservable.
    status: c_int,
}

/// `rsmi_gpu_block_t`'s `RSMI_GPU_BLOCK_UMC`: the memory controllers (HBM).
const BLOCK_UMC: c_int = 1;
/// `RSMI_MEM_PAGE_STATUS_PENDING`.
const PAGE_PENDING: c_int = 1;
/// The most bad-page records read (the driver's threshold is far below).
const MAX_PAGES: u32 = 65_536;

/// SMI, loaded and initialized once; why not, where it does not load.
fn smi() -> Result<&'static Smi, String> {
    static SMI: OnceLock<Result<Smi, String>> = OnceLock::new();
    SMI.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Smi, String> {
    crate::sys::may_load_shared_libraries()
        .map_err(|why| format!("ROCm SMI is not loaded: {why}"))?;
    // SAFETY: a ROCm library; its initializers are its own.
    let Some((library, name)) = LIBRARIES.iter().find_map(|n| {
        unsafe { libloading::Library::new(*n) }
            .ok()
            .map(|l| (l, *n))
    }) else {
        return Err(format!(
            "ROCm SMI does not load (none of {})",
            LIBRARIES.join(", ")
        ));
    };
    // SAFETY: the symbols are ROCm SMI's, of these signatures
    // (rocm_smi.h); the pointers are copied out and the library kept with
    // them, so they stay valid.
    unsafe {
        macro_rules! get {
            ($sym:literal) => {
                *library
                    .get($sym)
                    .map_err(|_| format!("{name} has no {}", String::from_utf8_lossy($sym)))?
            };
        }
        let init: unsafe extern "C" fn(u64) -> Status = get!(b"rsmi_init\0");
        let smi = Smi {
            num_monitor_devices: get!(b"rsmi_num_monitor_devices\0"),
            pci_id: get!(b"rsmi_dev_pci_id_get\0"),
            link_type: get!(b"rsmi_topo_get_link_type\0"),
            minmax_bandwidth: get!(b"rsmi_minmax_bandwidth_get\0"),
            version_str: get!(b"rsmi_version_str_get\0"),
            indep_throttle: (library.get(b"rsmi_dev_metrics_indep_throttle_status_get\0"))
                .ok()
                .map(|f| *f),
            memory_clock: (library.get(b"rsmi_dev_metrics_curr_uclk_get\0"))
                .ok()
                .map(|f| *f),
            ecc_enabled: (library.get(b"rsmi_dev_ecc_enabled_get\0"))
                .ok()
                .map(|f| *f),
            ecc_count: (library.get(b"rsmi_dev_ecc_count_get\0")).ok().map(|f| *f),
            bad_pages: (library.get(b"rsmi_dev_memory_reserved_pages_get\0"))
                .ok()
                .map(|f| *f),
            _library: library,
        };
        match init(0) {
            SUCCESS => Ok(smi),
            code => Err(format!(
                "ROCm SMI ({name}) does not start: rsmi_init says {code}"
            )),
        }
    }
}

/// ROCm SMI's PCI id as an address: domain in the high half, then bus,
/// device and function (bits 28-31 of the low half name an MI300's
/// partition, which is not part of the address).
fn address(bdfid: u64) -> String {
    format!(
        "{:04x}:{:02x}:{:02x}.{:x}",
        bdfid >> 32,
        (bdfid >> 8) & 0xff,
        (bdfid >> 3) & 0x1f,
        bdfid & 0x7
    )
}

/// Every GPU SMI sees, by its index there and its PCI address.
fn devices(smi: &Smi) -> Vec<(u32, String)> {
    let mut n = 0;
    // SAFETY: writes one u32.
    if unsafe { (smi.num_monitor_devices)(&mut n) } != SUCCESS {
        return Vec::new();
    }
    (0..n)
        .filter_map(|i| {
            let mut id = 0;
            // SAFETY: writes one u64.
            (unsafe { (smi.pci_id)(i, &mut id) } == SUCCESS).then(|| (i, address(id)))
        })
        .collect()
}

/// Every GPU's memory counters SMI reads, by PCI address; why not,
/// where SMI does not load.
pub(super) fn memory_counters() -> Result<Vec<GpuMemoryAt>, String> {
    let smi = smi()?;
    Ok((devices(smi).into_iter())
        .filter_map(|(_, bus_id)| {
            let health = memory_health(&bus_id)?;
            Some(GpuMemoryAt { bus_id, health })
        })
        .collect())
}

/// The amdgpu driver's version, where SMI loads.
pub(super) fn driver_version() -> Option<String> {
    let smi = smi().ok()?;
    let mut buf = [0 as c_char; 128];
    // SAFETY: SMI writes at most `len` bytes, NUL included.
    let code = unsafe { (smi.version_str)(DRIVER, buf.as_mut_ptr(), buf.len() as u32 - 1) };
    // SAFETY: zeroed and one byte longer than SMI may write.
    let text = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .trim()
        .to_string();
    (code == SUCCESS && !text.is_empty()).then_some(text)
}

/// The GPU at `bus_id`'s xGMI links to the other GPUs SMI sees: one entry
/// of `up_to` per link, and one link's rate. `None` without SMI, or
/// without a direct xGMI link (a PCIe card alone).
pub(super) fn fabric(bus_id: &str) -> Option<Fabric> {
    let smi = smi().ok()?;
    let all = devices(smi);
    let &(me, _) = all.iter().find(|(_, b)| b == bus_id)?;
    let mut links = Vec::new();
    for (peer, peer_bus) in all.iter().filter(|(i, _)| *i != me) {
        let (mut hops, mut kind, mut min, mut max) = (0, 0, 0, 0);
        // SAFETY: each writes the integers it is given.
        let direct = unsafe { (smi.link_type)(me, *peer, &mut hops, &mut kind) } == SUCCESS
            && kind == XGMI
            && hops == 1
            && unsafe { (smi.minmax_bandwidth)(me, *peer, &mut min, &mut max) } == SUCCESS;
        if direct {
            links.push((peer_bus.clone(), min, max));
        }
    }
    xgmi_fabric(&links)
}

/// The HBM's ECC counts (the UMC block) and bad pages of the GPU at
/// `bus_id`, as ROCm SMI gives them; `None` without SMI or the GPU.
pub(super) fn memory_health(bus_id: &str) -> Option<GpuMemoryHealth> {
    let smi = smi().ok()?;
    let index = index_of(bus_id)?;
    let mut blocks = 0u64;
    // SAFETY: each call writes the integers or the struct it is given.
    let ecc_on = (smi.ecc_enabled)
        .filter(|f| unsafe { f(index, &mut blocks) } == SUCCESS)
        .map(|_| blocks & BLOCK_UMC as u64 != 0);
    let mut count = ErrorCount::default();
    let counted = (smi.ecc_count)
        .filter(|_| ecc_on == Some(true))
        .is_some_and(|f| unsafe { f(index, BLOCK_UMC, &mut count) } == SUCCESS);
    let pages = smi.bad_pages.and_then(|f| {
        let mut n = 0u32;
        // SAFETY: a null record array asks for the count alone.
        if unsafe { f(index, &mut n, std::ptr::null_mut()) } != SUCCESS || n > MAX_PAGES {
            return None;
        }
        let mut records = vec![PageRecord::default(); n as usize];
        // SAFETY: room for the `n` records the count said, and `n` says so.
        (unsafe { f(index, &mut n, records.as_mut_ptr()) } == SUCCESS).then(|| {
            let seen = &records[..(n as usize).min(records.len())];
            let pending = seen.iter().filter(|r| r.status == PAGE_PENDING).count();
            ((seen.len() - pending) as u64, pending > 0)
        })
    });
    Some(GpuMemoryHealth {
        ecc_enabled: ecc_on,
        corrected_volatile: counted.then_some(count.correctable),
        uncorrected_volatile: counted.then_some(count.uncorrectable),
        counters: pages.map_or_else(Vec::new, |(retired, pending)| {
            page_counters(retired, pending)
        }),
    })
}

/// The bad pages the driver retired, recorded, not judged (its own
/// threshold, `amdgpu.bad_page_threshold`, decides when the card is done),
/// and one waiting for a reset, which fails the GPU.
fn page_counters(retired: u64, pending: bool) -> Vec<MemoryCounter> {
    vec![
        MemoryCounter::count(
            "bad_pages",
            retired,
            "bad pages retired",
            "Bad pages an AMD GPU's driver retired (ROCm SMI), recorded, not judged.",
        ),
        MemoryCounter::state(
            "retirement_pending",
            pending,
            "a page retirement waits for a reset: drain the node and reset the GPU",
            "1 when a page waits for a GPU reset to be retired.",
        ),
    ]
}

/// A fabric from each direct peer's bandwidth as the kernel's KFD
/// reports it through SMI (MB/s): the least is one link's, the most is
/// every link's to that peer together, so their ratio is the links.
fn xgmi_fabric(peers: &[(String, u64, u64)]) -> Option<Fabric> {
    let mut up_to = Vec::new();
    let mut link_mb_s: Option<u64> = None;
    for (bus, min, max) in peers {
        let links = match (*min, *max) {
            (0, _) | (_, 0) => 1,
            (min, max) => (max as f64 / min as f64).round().max(1.0) as usize,
        };
        up_to.extend(std::iter::repeat_n(bus.clone(), links));
        link_mb_s = link_mb_s.or((*min > 0).then_some(*min));
    }
    (!up_to.is_empty()).then(|| Fabric {
        name: super::XGMI.name.into(),
        version: None,
        // SMI does not say how many links a GPU has, only those that
        // reach a peer: a link down shows against identical siblings.
        links: up_to.len() as u32,
        up_to,
        link_gb_s: link_mb_s.map(|mb| mb as f64 / 1e3),
    })
}

/// What SMI says of a GPU's clocks now.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Clocks {
    /// What holds them back, in words (empty: nothing).
    pub held_by: Vec<String>,
    /// The memory's clock, MHz.
    pub memory_mhz: Option<u32>,
}

/// SMI's index of the GPU at `bus_id`, where SMI loads and sees it.
fn index_of(bus_id: &str) -> Option<u32> {
    Some(
        devices(smi().ok()?)
            .into_iter()
            .find(|(_, b)| b == bus_id)?
            .0,
    )
}

/// The clocks of SMI's GPU `index` now; `None` without SMI or its metrics
/// calls (older than ROCm 6.1), or where it does not say.
fn clocks_at(index: u32) -> Option<Clocks> {
    let smi = smi().ok()?;
    let mut status = 0u64;
    // SAFETY: writes one u64.
    if unsafe { (smi.indep_throttle?)(index, &mut status) } != SUCCESS {
        return None;
    }
    let mut mhz = 0u16;
    // SAFETY: writes one u16.
    let read = smi
        .memory_clock
        .is_some_and(|f| unsafe { f(index, &mut mhz) } == SUCCESS);
    Some(Clocks {
        held_by: held_by(status),
        // 0xffff: the metrics table has no such field on this GPU.
        memory_mhz: (read && mhz > 0 && mhz != u16::MAX).then_some(u32::from(mhz)),
    })
}

/// The GPU at `bus_id`'s clocks now, where SMI says.
pub(super) fn clocks(bus_id: &str) -> Option<Clocks> {
    clocks_at(index_of(bus_id)?)
}

/// The amdgpu driver's ASIC-independent throttle bits (`SMU_THROTTLER_*`
/// in amdgpu_smu.h) in words, by cause: power limits (bits 0-7), current
/// limits (16-23), temperatures and hot signals (32-47), others (56-57).
fn held_by(status: u64) -> Vec<String> {
    const NAMES: [(u32, &str, &str); 20] = [
        (0, "power", "PPT0"),
        (1, "power", "PPT1"),
        (2, "power", "PPT2"),
        (3, "power", "PPT3"),
        (4, "power", "SPL"),
        (5, "power", "FPPT"),
        (6, "power", "SPPT"),
        (7, "power", "SPPT_APU"),
        (16, "current", "TDC_GFX"),
        (17, "current", "TDC_SOC"),
        (18, "current", "TDC_MEM"),
        (32, "heat", "GPU"),
        (33, "heat", "core"),
        (34, "heat", "HBM"),
        (35, "heat", "edge"),
        (36, "heat", "hotspot"),
        (37, "heat", "SOC"),
        (40, "heat", "memory VR"),
        (46, "heat", "PROCHOT CPU"),
        (47, "heat", "PROCHOT GFX"),
    ];
    let mut words: Vec<String> = NAMES
        .iter()
        .filter(|(bit, _, _)| status & (1 << bit) != 0)
        .map(|(_, cause, what)| format!("{cause} ({what})"))
        .collect();
    let named = NAMES.iter().fold(0u64, |m, (bit, _, _)| m | 1 << bit);
    if status & !named != 0 {
        words.push(format!("other throttle bits {:#x}", status & !named));
    }
    words
}

/// How [`SmiClocks`] is named in a target's method.
pub(super) const OBSERVER: &str = "ROCm SMI's throttle status as the window opens and closes (the GPU's clocks held back by power, current or heat)";

/// One GPU's throttle status (SMI), read as its window opens and closes
/// (through `observe::AtEnds`): a status, not a time, so a window held
/// back only between its ends goes unseen, and the method says so by its
/// name.
pub(super) struct SmiClocks {
    bus_id: String,
    index: u32,
}

impl SmiClocks {
    /// An observer where SMI reads this GPU's status; none otherwise.
    pub(super) fn new(bus_id: &str) -> Option<crate::observe::AtEnds<SmiClocks>> {
        let index = index_of(bus_id)?;
        clocks_at(index)?;
        Some(crate::observe::AtEnds::new(SmiClocks {
            bus_id: bus_id.to_string(),
            index,
        }))
    }
}

impl crate::observe::ReadAtEnds for SmiClocks {
    type Reading = Clocks;

    fn read(&self) -> Option<Clocks> {
        clocks_at(self.index)
    }

    fn seen(&self, window_s: f64, before: &Clocks, after: &Clocks) -> crate::observe::Observation {
        let mut at_ends = before.held_by.clone();
        at_ends.extend(
            (after.held_by.iter())
                .filter(|w| !before.held_by.contains(w))
                .cloned(),
        );
        crate::observe::Observation::HeldBack(crate::trust::HeldBack {
            bus_id: self.bus_id.clone(),
            window_s,
            power_s: None,
            thermal_s: None,
            at_ends,
            sm_mhz: None,
            memory_mhz: after.memory_mhz,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_smi_pci_id_is_the_gpus_address_without_its_partition() {
        assert_eq!(address(0xc100), "0000:c1:00.0");
        assert_eq!(
            address((1 << 32) | (3 << 28) | (0x29 << 8) | (1 << 3) | 2),
            "0001:29:01.2"
        );
    }

    #[test]
    fn a_peers_links_are_its_most_bandwidth_over_its_least() {
        // An MI250X GCD: its sibling on the card by four links, two other
        // GCDs by one, 50 GB/s each way a link.
        let peers = [
            ("0000:c9:00.0".to_string(), 50_000, 200_000),
            ("0000:d1:00.0".to_string(), 50_000, 50_000),
            ("0000:d9:00.0".to_string(), 50_000, 0),
        ];
        let f = xgmi_fabric(&peers).unwrap();
        assert_eq!(f.name, "xGMI");
        assert_eq!(f.up(), 6);
        assert_eq!(f.up_to.iter().filter(|b| *b == "0000:c9:00.0").count(), 4);
        assert_eq!(f.link_gb_s, Some(50.0));
        assert_eq!(xgmi_fabric(&[]), None);
    }

    #[test]
    fn throttle_bits_are_named_by_cause() {
        assert!(held_by(0).is_empty());
        assert_eq!(held_by(1 | 1 << 34), ["power (PPT0)", "heat (HBM)"]);
        assert_eq!(held_by(1 << 56), ["other throttle bits 0x100000000000000"]);
    }
}
