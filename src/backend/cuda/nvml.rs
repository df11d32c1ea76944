//! NVML (`libnvidia-ml.so.1`, loaded at run time by `nvml-wrapper`): what
//! the CUDA driver API does not say. A GPU's memory peak (its maximum
//! memory clock × bus width × 2, HBM and GDDR moving data on both edges),
//! the driver's version, and whether the GPU's clocks were held back
//! (thermal, power brake, hardware slowdown) around a measurement.
//!
//! NVML is optional: where it does not load, the peak is unknown and the
//! run says so; nothing is estimated.

use crate::results::targets::{CoherentLink, GpuMemoryAt, GpuMemoryHealth};
use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, PerformancePolicy};
use std::sync::OnceLock;

/// NVML, loaded once; why not, where it does not load.
fn nvml() -> Result<&'static Nvml, String> {
    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
    NVML.get_or_init(|| {
        crate::sys::may_load_shared_libraries()
            .map_err(|why| format!("NVML is not loaded: {why}"))?;
        Nvml::builder()
            .lib_path(std::ffi::OsStr::new("libnvidia-ml.so.1"))
            .init()
            .map_err(|e| format!("NVML does not load ({e})"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// What NVML says of the GPU at `bus_id`.
#[derive(Debug, Clone)]
pub(super) struct NvmlReadings {
    /// Memory peak, GB/s; why it is unknown otherwise.
    pub memory_peak: Result<f64, String>,
    /// The clock and bus width it was computed from, in words.
    pub memory_peak_from: Option<String>,
    pub driver_version: Option<String>,
    /// The NVLink-C2C link to the host (a Grace Hopper superchip's), where
    /// NVML reports C2C links: the host link the transfers cross there,
    /// not the PCIe function sysfs shows.
    pub host_fabric: Option<CoherentLink>,
    /// Its NVLink links, where it has some and any is up.
    pub fabric: Option<crate::results::targets::Fabric>,
    /// Its memory's ECC errors, retired pages and remapped rows.
    pub memory_health: Option<GpuMemoryHealth>,
}

/// What NVML says of the GPU at `bus_id`, as far as it loads.
pub(super) fn facts(bus_id: &str) -> NvmlReadings {
    let nvml = match nvml() {
        Ok(n) => n,
        Err(why) => {
            return NvmlReadings {
                memory_peak: Err(why),
                memory_peak_from: None,
                driver_version: None,
                host_fabric: None,
                fabric: None,
                memory_health: None,
            };
        }
    };
    let clock_and_bus = (nvml.device_by_pci_bus_id(bus_id))
        .and_then(|d| Ok((d.max_clock_info(Clock::Memory)?, d.memory_bus_width()?)))
        .map_err(|e| format!("NVML gives no memory clock and bus width ({e})"));
    NvmlReadings {
        memory_peak: (clock_and_bus.clone()).map(|(mhz, bits)| memory_peak_gb_s(mhz, bits)),
        memory_peak_from: (clock_and_bus.ok()).map(|(mhz, bits)| {
            format!("NVML's {mhz} MHz memory clock × {bits}-bit bus, 2 transfers a clock")
        }),
        driver_version: nvml.sys_driver_version().ok(),
        host_fabric: c2c(nvml, bus_id),
        fabric: fabric(nvml, bus_id),
        memory_health: memory_health(nvml, bus_id),
    }
}

/// Every GPU's memory counters NVML reads, by PCI address; why not,
/// where NVML does not load.
pub(super) fn memory_counters() -> Result<Vec<GpuMemoryAt>, String> {
    let nvml = nvml()?;
    let count = nvml
        .device_count()
        .map_err(|e| format!("NVML counts no GPU ({e})"))?;
    Ok((0..count)
        .filter_map(|i| {
            let pci = nvml.device_by_index(i).ok()?.pci_info().ok()?;
            let bus_id = crate::topology::pci::normal_address(&pci.bus_id);
            let health = memory_health(nvml, &bus_id)?;
            Some(GpuMemoryAt { bus_id, health })
        })
        .collect())
}

/// DCGM's memory counters, each where NVML gives it (ECC on; pages
/// retired before Ampere, rows remapped since): read, never a GPU launch.
fn memory_health(nvml: &Nvml, bus_id: &str) -> Option<GpuMemoryHealth> {
    use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError, RetirementCause};
    let d = nvml.device_by_pci_bus_id(bus_id).ok()?;
    let ecc = d.is_ecc_enabled().ok().map(|e| e.currently_enabled);
    let volatile = |kind| {
        (ecc == Some(true))
            .then(|| d.total_ecc_errors(kind, EccCounter::Volatile).ok())
            .flatten()
    };
    let retired = [
        RetirementCause::MultipleSingleBitEccErrors,
        RetirementCause::DoubleBitEccError,
    ]
    .into_iter()
    .map(|cause| d.retired_pages(cause).ok().map(|p| p.len() as u64))
    .sum::<Option<u64>>();
    let counts = super::dcgm::NvidiaMemoryCounts {
        retired_pages: retired,
        retirement_pending: d.are_pages_pending_retired().ok(),
        remapped_rows: remapped_rows(nvml, &d),
        recovery_action: recovery_action(&d),
    };
    Some(GpuMemoryHealth {
        ecc_enabled: ecc,
        corrected_volatile: volatile(MemoryError::Corrected),
        uncorrected_volatile: volatile(MemoryError::Uncorrected),
        counters: super::dcgm::counters(&counts),
    })
}

/// NVML's GPU recovery action field (drivers r570 and later; "not
/// supported" before): what the driver says the GPU needs.
fn recovery_action(d: &nvml_wrapper::Device) -> Option<u32> {
    use nvml_wrapper::structs::device::FieldId;
    use nvml_wrapper::sys_exports::field_id::NVML_FI_DEV_GET_GPU_RECOVERY_ACTION as ACTION;
    let values = d.field_values_for(&[FieldId(ACTION)]).ok()?;
    field_number(&values, 0).map(|v| v as u32)
}

/// `nvmlDeviceGetRemappedRows` (Ampere and later; the wrapper has no safe
/// call for it): rows remapped for uncorrectable errors, whether one is
/// pending, whether one failed.
fn remapped_rows(nvml: &Nvml, d: &nvml_wrapper::Device) -> Option<(u64, bool, bool)> {
    let call = nvml.lib().nvmlDeviceGetRemappedRows.as_ref().ok()?;
    let (mut corrected, mut uncorrected, mut pending, mut failed) = (0u32, 0u32, 0u32, 0u32);
    // SAFETY: the handle is the live device `d` of this NVML; the four
    // out-parameters are valid, writable u32s for the call's duration.
    let status = unsafe {
        call(
            d.handle(),
            &mut corrected,
            &mut uncorrected,
            &mut pending,
            &mut failed,
        )
    };
    // nvml.h: NVML_SUCCESS.
    (status == 0).then_some((u64::from(uncorrected), pending != 0, failed != 0))
}

/// A number of NVML's field values, whatever its type.
fn field_number(
    values: &[Result<
        nvml_wrapper::struct_wrappers::device::FieldValueSample,
        nvml_wrapper::error::NvmlError,
    >],
    i: usize,
) -> Option<f64> {
    use nvml_wrapper::enums::device::SampleValue;
    match values.get(i)?.as_ref().ok()?.value.as_ref().ok()? {
        SampleValue::U32(v) => Some(f64::from(*v)),
        SampleValue::U64(v) => Some(*v as f64),
        SampleValue::I64(v) => Some(*v as f64),
        SampleValue::F64(v) => Some(*v),
    }
}

/// The GPU's NVLink links: how many it has (NVML's link count), where
/// each one up goes (a GPU NVML knows, else an NVSwitch), and what one
/// carries each way. `None` where NVML reports no links. A PCIe card
/// without bridges may report links on the die and none up: whether that
/// is a fault only its siblings can tell (`health::pairs::links_down`).
fn fabric(nvml: &Nvml, bus_id: &str) -> Option<crate::results::targets::Fabric> {
    use nvml_wrapper::structs::device::FieldId;
    use nvml_wrapper::sys_exports::field_id::{
        NVML_FI_DEV_NVLINK_LINK_COUNT as LINK_COUNT,
        NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON as SPEED_MB_S,
    };
    /// nvml.h: NVML_NVLINK_MAX_LINKS.
    const MAX_LINKS: u32 = 18;
    let device = nvml.device_by_pci_bus_id(bus_id).ok()?;
    let values = (device.field_values_for(&[FieldId(SPEED_MB_S), FieldId(LINK_COUNT)])).ok()?;
    let links = field_number(&values, 1)? as u32;
    let mut up_to = Vec::new();
    let mut version = None;
    for l in 0..links.min(MAX_LINKS) {
        let link = device.link_wrapper_for(l);
        if !link.is_active().unwrap_or(false) {
            continue;
        }
        version = version.or(link.version().ok());
        let remote =
            (link.remote_pci_info().ok()).map(|p| crate::topology::pci::normal_address(&p.bus_id));
        up_to.push(match remote {
            Some(id) if nvml.device_by_pci_bus_id(id.as_str()).is_ok() => id,
            _ => crate::results::targets::fabric::SWITCH.to_string(),
        });
    }
    (links > 0).then(|| crate::results::targets::Fabric {
        name: super::NVLINK.name.into(),
        version,
        links,
        up_to,
        link_gb_s: field_number(&values, 0)
            .filter(|&mb| mb > 0.0)
            .map(|mb| mb / 1e3),
    })
}

/// The GPU's NVLink-C2C links, where NVML reports some (a Grace Hopper's
/// ten; none on a PCIe GPU or a driver before r525): how many, which are
/// active, what one active link carries each way (10 links of about
/// 45 GB/s make a GH200's 450 GB/s each way).
pub(super) fn c2c_link(bus_id: &str) -> Option<CoherentLink> {
    c2c(nvml().ok()?, bus_id)
}

fn c2c(nvml: &Nvml, bus_id: &str) -> Option<CoherentLink> {
    /// nvml.h: NVML_FI_DEV_C2C_LINK_COUNT, _GET_STATUS (1: active) and
    /// _GET_MAX_BW (MB/s), the last two per link (the field's scope).
    const LINK_COUNT: u32 = 170;
    const LINK_STATUS: u32 = 171;
    const LINK_MAX_MB_S: u32 = 172;
    /// Past any C2C link count a device has (a GH200 has 10).
    const MAX_LINKS: u32 = 64;
    let device = nvml.device_by_pci_bus_id(bus_id).ok()?;
    let links = scoped_fields(nvml, &device, &[(LINK_COUNT, 0)])?[0]?;
    if links == 0 {
        return None;
    }
    let (mut active, mut mb_s) = (0, None::<u64>);
    for link in 0..links.min(u64::from(MAX_LINKS)) as u32 {
        let read = scoped_fields(nvml, &device, &[(LINK_STATUS, link), (LINK_MAX_MB_S, link)]);
        if let Some([Some(1), rate]) = read.as_deref() {
            active += 1;
            mb_s = (*rate).filter(|&r| r > 0).or(mb_s);
        }
    }
    Some(CoherentLink {
        name: "NVLink-C2C".into(),
        links: links as u32,
        active,
        link_gb_s: mb_s.map(|mb| mb as f64 / 1e3),
    })
}

/// NVML's field values with their scopes (a link's index), which the
/// wrapper's call leaves at 0: each one's unsigned value where NVML
/// read it; `None` where the call itself failed.
fn scoped_fields(
    nvml: &Nvml,
    device: &nvml_wrapper::Device,
    fields: &[(u32, u32)],
) -> Option<Vec<Option<u64>>> {
    use nvml_wrapper_sys::bindings::nvmlFieldValue_t;
    /// nvml.h: NVML_VALUE_TYPE_UNSIGNED_INT, _UNSIGNED_LONG, _UNSIGNED_LONG_LONG.
    const U32: u32 = 1;
    const U64: [u32; 2] = [2, 3];
    let call = nvml.lib().nvmlDeviceGetFieldValues.as_ref().ok()?;
    let mut values: Vec<nvmlFieldValue_t> = (fields.iter())
        .map(|&(field, scope)| {
            // SAFETY: nvmlFieldValue_t is plain C data (integers and a
            // union of numbers), for which all-zero bytes are a value.
            let mut v: nvmlFieldValue_t = unsafe { std::mem::zeroed() };
            v.fieldId = field;
            v.scopeId = scope;
            v
        })
        .collect();
    // SAFETY: the handle is the live `device` of this NVML; `values`
    // holds `fields.len()` initialised entries NVML fills in place.
    let status = unsafe { call(device.handle(), values.len() as i32, values.as_mut_ptr()) };
    // nvml.h: NVML_SUCCESS.
    (status == 0).then(|| {
        (values.iter())
            .map(|v| {
                let written = (v.nvmlReturn == 0).then_some(v.valueType)?;
                // SAFETY: the union is read as the unsigned type NVML says
                // it wrote; every member is a plain number.
                unsafe {
                    match written {
                        U32 => Some(u64::from(v.value.uiVal)),
                        t if U64.contains(&t) => Some(v.value.ullVal),
                        _ => None,
                    }
                }
            })
            .collect()
    })
}

/// A memory's peak from its clock (MHz) and bus width (bits): two
/// transfers per clock. An H100 SXM: 2619 MHz × 5120 bits → 3352 GB/s.
pub(super) fn memory_peak_gb_s(clock_mhz: u32, bus_bits: u32) -> f64 {
    2.0 * f64::from(clock_mhz) * 1e6 * f64::from(bus_bits) / 8.0 / 1e9
}

/// Why the GPU's clocks are held back now (thermal, power, hardware
/// slowdown), in words; `None` when nothing holds them back or NVML does
/// not say. Idle and application-clock settings are not throttling.
pub(super) fn throttled(bus_id: &str) -> Option<String> {
    let device = nvml().ok()?.device_by_pci_bus_id(bus_id).ok()?;
    let reasons = device.current_throttle_reasons().ok()?;
    describe(reasons)
}

/// How long each GPU's clocks have been held back by power and by heat,
/// nanoseconds since the driver started counting (NVML's violation
/// counters, read as the CPUs' tick counters are, at both ends of a
/// window), and its clocks now. Empty where NVML does not load.
pub fn held_back_ns() -> Vec<ViolationCounters> {
    let Ok(nvml) = nvml() else {
        return Vec::new();
    };
    let count = nvml.device_count().unwrap_or(0);
    (0..count)
        .filter_map(|i| {
            let d = nvml.device_by_index(i).ok()?;
            let ns = |p| d.violation_status(p).map(|v| v.violation_time).unwrap_or(0);
            Some(ViolationCounters {
                bus_id: crate::topology::pci::normal_address(&d.pci_info().ok()?.bus_id),
                power_ns: ns(PerformancePolicy::Power),
                thermal_ns: ns(PerformancePolicy::Thermal),
                sm_mhz: d.clock_info(Clock::SM).ok(),
                memory_mhz: d.clock_info(Clock::Memory).ok(),
            })
        })
        .collect()
}

/// How [`GpuClocks`] is named in a target's method.
pub const OBSERVER: &str =
    "NVML's violation counters (the GPU's clocks held back by power or heat)";

/// One GPU's violation counters (NVML), read as its window opens and
/// closes: a GPU target's observer (through `observe::AtEnds`), made by
/// the CUDA backend alone, so that no other run loads NVML. Nothing where
/// NVML does not load. NVML keeps the counters in nanoseconds and states
/// no sampling period: any window is judged.
pub struct GpuClocks {
    bus_id: String,
}

impl GpuClocks {
    pub(super) fn new(bus_id: String) -> crate::observe::AtEnds<GpuClocks> {
        crate::observe::AtEnds::new(GpuClocks { bus_id })
    }
}

impl crate::observe::ReadAtEnds for GpuClocks {
    type Reading = ViolationCounters;

    fn read(&self) -> Option<ViolationCounters> {
        (held_back_ns().into_iter()).find(|g| g.bus_id == self.bus_id)
    }

    fn seen(
        &self,
        window_s: f64,
        before: &ViolationCounters,
        after: &ViolationCounters,
    ) -> crate::observe::Observation {
        let s = |a: u64, b: u64| a.saturating_sub(b) as f64 / 1e9;
        crate::observe::Observation::HeldBack(crate::trust::HeldBack {
            bus_id: self.bus_id.clone(),
            window_s,
            power_s: Some(s(after.power_ns, before.power_ns)),
            thermal_s: Some(s(after.thermal_ns, before.thermal_ns)),
            at_ends: Vec::new(),
            sm_mhz: after.sm_mhz,
            memory_mhz: after.memory_mhz,
        })
    }
}

/// One GPU's violation counters.
#[derive(Debug, Clone, PartialEq)]
pub struct ViolationCounters {
    /// `0000:18:00.0`.
    pub bus_id: String,
    pub power_ns: u64,
    pub thermal_ns: u64,
    /// Its clocks now, MHz.
    pub sm_mhz: Option<u32>,
    pub memory_mhz: Option<u32>,
}

fn describe(reasons: ThrottleReasons) -> Option<String> {
    let named = [
        (ThrottleReasons::SW_POWER_CAP, "power cap"),
        (ThrottleReasons::HW_SLOWDOWN, "hardware slowdown"),
        (
            ThrottleReasons::SW_THERMAL_SLOWDOWN,
            "software thermal slowdown",
        ),
        (
            ThrottleReasons::HW_THERMAL_SLOWDOWN,
            "hardware thermal slowdown",
        ),
        (ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN, "power brake"),
    ];
    let found: Vec<&str> = (named.iter())
        .filter(|(bit, _)| reasons.contains(*bit))
        .map(|(_, name)| *name)
        .collect();
    (!found.is_empty()).then(|| found.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_peak_is_two_transfers_per_clock_over_the_bus() {
        // H100 SXM5 80GB, as NVML reports it.
        let h100 = memory_peak_gb_s(2619, 5120);
        assert!((h100 - 3352.3).abs() < 0.1, "{h100}");
    }

    #[test]
    fn only_what_holds_clocks_back_is_throttling() {
        assert_eq!(describe(ThrottleReasons::GPU_IDLE), None);
        let why = describe(ThrottleReasons::HW_THERMAL_SLOWDOWN | ThrottleReasons::SW_POWER_CAP);
        assert_eq!(why.as_deref(), Some("power cap, hardware thermal slowdown"));
    }
}
