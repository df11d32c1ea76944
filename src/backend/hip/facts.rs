//! What an AMD GPU is, as HIP reports it: its name, memory, PCI address,
//! compute units, L2, the target of the code object that loads on it, and
//! its memory peak from its memory clock and bus width.

use super::api::{self, Attribute};
use std::ffi::{CStr, c_char, c_int};

/// How many GPUs (GCDs) HIP sees, after `HIP_VISIBLE_DEVICES`.
pub(super) fn device_count() -> Result<u32, String> {
    let api = api::api()?;
    let mut n = 0;
    // SAFETY: writes one int.
    api.check("hipGetDeviceCount", unsafe {
        (api.hipGetDeviceCount)(&mut n)
    })?;
    Ok(n.max(0) as u32)
}

/// What HIP says of one GPU.
#[derive(Debug, Clone)]
pub(super) struct HipAttributes {
    /// `AMD Instinct MI250X`.
    pub name: String,
    /// The target of the code object that loads on it (`gfx90a`).
    pub target: &'static str,
    pub memory_bytes: u64,
    /// `0000:c1:00.0`.
    pub bus_id: String,
    /// Compute units, as HIP's occupancy counts them.
    pub multiprocessors: u32,
    pub l2_bytes: u64,
    /// An APU's GPU (MI300A): it shares the node's memory.
    pub integrated: bool,
    /// `HIP 6.2.41134 (libamdhip64.so.6)`.
    pub runtime_version: String,
    /// GB/s, or why it is unknown.
    pub memory_peak: Result<f64, String>,
    /// The clock and bus width it was computed from, in words.
    pub memory_peak_from: Option<String>,
    /// What memory beyond its own its kernels reach.
    pub reach: crate::results::targets::MemoryReach,
}

/// The facts of GPU `index`.
pub(super) fn facts(index: u32) -> Result<HipAttributes, String> {
    let api = api::api()?;
    let device = index as c_int;
    let attribute = |a: Attribute| attribute(api, device, a);
    // SAFETY: HIP writes at most `len` bytes into the buffer.
    let name = text(api, "hipDeviceGetName", &|p, len| unsafe {
        (api.hipDeviceGetName)(p, len, device)
    })?;
    let bus = bus_id(api, device)?;
    let mut memory = 0usize;
    // SAFETY: writes one size_t.
    api.check("hipDeviceTotalMem", unsafe {
        (api.hipDeviceTotalMem)(&mut memory, device)
    })?;
    let mut version = 0;
    // SAFETY: writes one int.
    api.check("hipDriverGetVersion", unsafe {
        (api.hipDriverGetVersion)(&mut version)
    })?;
    let clock_khz = attribute(Attribute::MemoryClockRate)?;
    let width_bits = attribute(Attribute::MemoryBusWidth)?;
    let peak = memory_peak(&name, clock_khz, width_bits);
    Ok(HipAttributes {
        target: super::runtime::target_of(api, device)?,
        memory_bytes: memory as u64,
        bus_id: bus,
        multiprocessors: attribute(Attribute::MultiprocessorCount)?.max(1) as u32,
        l2_bytes: attribute(Attribute::L2CacheSize)?.max(0) as u64,
        integrated: attribute(Attribute::Integrated)? != 0,
        runtime_version: format!("{} ({})", version_text(version), api.name),
        memory_peak_from: peak.is_ok().then(|| {
            format!(
                "HIP's {} MHz memory clock × {width_bits}-bit bus and the HBM's transfers a clock",
                clock_khz / 1000
            )
        }),
        memory_peak: peak,
        reach: reach(&|a| attribute(a).ok()),
        name: if name.is_empty() {
            format!("AMD GPU {index}")
        } else {
            name
        },
    })
}

/// One of HIP's attributes of `device`.
fn attribute(api: &api::Api, device: c_int, a: Attribute) -> Result<i32, String> {
    let mut v = 0;
    // SAFETY: writes one int; the attribute is one of HIP's values.
    let code = unsafe { (api.hipDeviceGetAttribute)(&mut v, a as c_int, device) };
    api.check(&format!("hipDeviceGetAttribute({a:?})"), code)?;
    Ok(v)
}

/// A text HIP writes into a buffer (`f`: the call, given the buffer and
/// the most it may write).
fn text(
    api: &api::Api,
    call: &str,
    f: &dyn Fn(*mut c_char, c_int) -> api::HipError,
) -> Result<String, String> {
    let mut buf = [0 as c_char; 256];
    api.check(call, f(buf.as_mut_ptr(), buf.len() as c_int - 1))?;
    // SAFETY: zeroed and one byte longer than HIP may write.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .trim()
        .to_string())
}

/// `device`'s PCI address, as sysfs spells it.
fn bus_id(api: &api::Api, device: c_int) -> Result<String, String> {
    // SAFETY: HIP writes at most `len` bytes into the buffer.
    let bus = text(api, "hipDeviceGetPCIBusId", &|p, len| unsafe {
        (api.hipDeviceGetPCIBusId)(p, len, device)
    })?;
    Ok(crate::topology::pci::normal_address(&bus))
}

/// What memory each GPU HIP sees reaches, by PCI address, without
/// loading a module on it.
pub(super) fn reach_by_bus() -> Result<Vec<crate::results::targets::GpuReachAt>, String> {
    let api = api::api()?;
    (0..device_count()? as c_int)
        .map(|device| {
            Ok(crate::results::targets::GpuReachAt {
                host_fabric: None,
                bus_id: bus_id(api, device)?,
                reach: reach(&|a| attribute(api, device, a).ok()),
            })
        })
        .collect()
}

/// What HIP's attributes say a GPU's kernels reach (`attribute`: one
/// attribute's value, `None` where HIP did not answer). HIP reports
/// pageable access exactly where XNACK is on: the fact stands for both.
/// An APU's memory is its host node's (`hipDeviceAttributeHostNumaId`).
fn reach(attribute: &dyn Fn(Attribute) -> Option<i32>) -> crate::results::targets::MemoryReach {
    let yes = |a| attribute(a).map(|v| v != 0);
    let pageable = yes(Attribute::PageableMemoryAccess);
    let memory_node = (yes(Attribute::Integrated) == Some(true))
        .then(|| attribute(Attribute::HostNumaId))
        .flatten()
        .and_then(|n| usize::try_from(n).ok());
    crate::results::targets::MemoryReach {
        managed: yes(Attribute::ManagedMemory),
        concurrent_managed: yes(Attribute::ConcurrentManagedAccess),
        pageable,
        host_page_tables: yes(Attribute::PageableMemoryAccessUsesHostPageTables),
        xnack: pageable,
        pageable_missing: (pageable == Some(false)).then(|| {
            "hipDeviceAttributePageableMemoryAccess is 0: XNACK is off (run with HSA_XNACK=1, on a GPU that retries page faults: MI200, MI300)".to_string()
        }),
        memory_node,
    }
}

/// HIP's version number (`HIP_VERSION`: major × 10^7 + minor × 10^5 +
/// patch) as `HIP 6.2.41134`.
fn version_text(v: i32) -> String {
    format!(
        "HIP {}.{}.{}",
        v / 10_000_000,
        v / 100_000 % 100,
        v % 100_000
    )
}

/// The memory's peak, GB/s: the bus width times the memory clock times
/// the transfers each pin makes per clock, which HIP does not report and
/// which depend on the memory's kind. membw knows it for the Instinct
/// GPUs' HBM from their public specifications (MI100, MI210 and MI250X:
/// HBM2 and HBM2e, 2 per clock, so an MI250X GCD's 1600 MHz × 4096 bits
/// is 1638 GB/s; MI300A and MI300X: HBM3, 4 per clock, so 1300 MHz ×
/// 8192 bits is 5325 GB/s), and for no other.
pub(super) fn memory_peak(name: &str, clock_khz: i32, width_bits: i32) -> Result<f64, String> {
    if clock_khz <= 0 || width_bits <= 0 {
        return Err("HIP reports no memory clock or bus width".into());
    }
    let per_clock = if name.contains("MI300") {
        4.0
    } else if ["MI100", "MI210", "MI250"].iter().any(|m| name.contains(m)) {
        2.0
    } else {
        return Err(format!(
            "membw knows the transfers per memory clock of the Instinct MI100, MI200 and MI300 GPUs' HBM only, not of {}",
            if name.is_empty() { "this GPU" } else { name }
        ));
    };
    Ok(f64::from(clock_khz) * 1e3 * per_clock * f64::from(width_bits) / 8.0 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instinct_gcds_peak_comes_from_its_clock_width_and_hbm_kind() {
        // MI250X: 1638.4 GB/s per GCD; MI300X: 5324.8 GB/s.
        let mi250x = memory_peak("AMD Instinct MI250X", 1_600_000, 4096).unwrap();
        assert!((mi250x - 1638.4).abs() < 1e-9, "{mi250x}");
        let mi300x = memory_peak("AMD Instinct MI300X", 1_300_000, 8192).unwrap();
        assert!((mi300x - 5324.8).abs() < 1e-9, "{mi300x}");
        let why = memory_peak("AMD Radeon RX 7900 XTX", 1_250_000, 384).unwrap_err();
        assert!(why.contains("not of AMD Radeon RX 7900 XTX"), "{why}");
        assert!(memory_peak("AMD Instinct MI250X", 0, 4096).is_err());
    }

    #[test]
    fn hip_versions_read_as_rocm_prints_them() {
        assert_eq!(version_text(60241134), "HIP 6.2.41134");
        assert_eq!(version_text(50422804), "HIP 5.4.22804");
    }
}
