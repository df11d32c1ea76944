//! The CUDA driver, loaded at run time (`cudarc`'s dynamic loading of
//! `libcuda.so.1`): a binary built without CUDA runs on every node, and a
//! GPU request on a node without the driver ends in one line. What a GPU
//! is, as the driver reports it.

use cudarc::driver::{result, sys};
use std::ffi::c_int;
use std::sync::OnceLock;

/// A driver call's failure, as one line: the call and the driver's code.
pub(super) fn fail(call: &str, e: result::DriverError) -> String {
    format!("{call}: {:?}", e.0)
}

/// Loads the driver and initializes it, once per process.
pub(super) fn load() -> Result<(), String> {
    static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            crate::sys::may_load_shared_libraries()
                .map_err(|why| format!("the CUDA driver is not loaded: {why}"))?;
            // SAFETY: only asks the dynamic loader whether a library of
            // the driver's names opens; nothing of it is called.
            if !unsafe { sys::is_culib_present() } {
                let why = crate::sys::why_not_loadable("libcuda.so.1")
                    .unwrap_or_else(|| "it does not load".into());
                return Err(format!("no CUDA driver here: libcuda.so.1 does not load ({why}: no NVIDIA driver is installed, or it is outside the library path); membw topo lists the GPUs on the PCI bus"));
            }
            result::init().map_err(|e| match e.0 {
                sys::CUresult::CUDA_ERROR_NO_DEVICE => {
                    "the CUDA driver is installed but sees no GPU (CUDA_VISIBLE_DEVICES, or a GPU the driver has lost: nvidia-smi says which)".to_string()
                }
                _ => fail("cuInit", e),
            })
        })
        .clone()
}

/// How many GPUs the driver sees (after `CUDA_VISIBLE_DEVICES`).
pub(super) fn device_count() -> Result<u32, String> {
    load()?;
    result::device::get_count()
        .map(|n| n.max(0) as u32)
        .map_err(|e| fail("cuDeviceGetCount", e))
}

/// What the driver says of one GPU.
#[derive(Debug, Clone)]
pub(super) struct CudaAttributes {
    pub name: String,
    /// `GPU-8c3d...`, as nvidia-smi prints it.
    pub uuid: String,
    pub memory_bytes: u64,
    /// `0000:18:00.0`.
    pub bus_id: String,
    pub multiprocessors: u32,
    pub l2_bytes: u64,
    /// Compute capability (9.0: Hopper).
    pub capability: (i32, i32),
    /// `12.4`: the CUDA version the driver implements.
    pub cuda_version: String,
    /// What memory beyond its own its kernels reach.
    pub reach: crate::results::targets::MemoryReach,
}

/// The facts of GPU `index`.
pub(super) fn facts(index: u32) -> Result<CudaAttributes, String> {
    load()?;
    let dev = result::device::get(index as i32).map_err(|e| fail("cuDeviceGet", e))?;
    let attribute = |a: sys::CUdevice_attribute| -> Result<i32, String> {
        // SAFETY: `dev` is a device handle the driver gave; the attribute
        // is one of the enum's values.
        unsafe { result::device::get_attribute(dev, a) }
            .map_err(|e| fail("cuDeviceGetAttribute", e))
    };
    use sys::CUdevice_attribute as A;
    let mut bus = [0 as std::ffi::c_char; 32];
    // SAFETY: the driver writes at most `len` bytes, NUL included, into
    // the buffer it is given.
    unsafe { sys::cuDeviceGetPCIBusId(bus.as_mut_ptr(), bus.len() as i32, dev) }
        .result()
        .map_err(|e| fail("cuDeviceGetPCIBusId", e))?;
    // SAFETY: the buffer is NUL-terminated (zeroed, and the driver
    // terminates what it writes).
    let bus_id = crate::topology::pci::normal_address(
        &unsafe { std::ffi::CStr::from_ptr(bus.as_ptr()) }.to_string_lossy(),
    );
    let mut version = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| fail("cuDriverGetVersion", e))?;
    let uuid = result::device::get_uuid(dev).map_err(|e| fail("cuDeviceGetUuid", e))?;
    Ok(CudaAttributes {
        name: result::device::get_name(dev).map_err(|e| fail("cuDeviceGetName", e))?,
        // c_char: i8 on x86-64, u8 on aarch64; the bits are the same.
        uuid: format_uuid(&uuid.bytes.map(|b| b.to_ne_bytes()[0])),
        // SAFETY: `dev` is a device handle the driver gave.
        memory_bytes: unsafe { result::device::total_mem(dev) }
            .map_err(|e| fail("cuDeviceTotalMem", e))? as u64,
        bus_id,
        multiprocessors: attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32,
        l2_bytes: attribute(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as u64,
        capability: capability(dev)?,
        cuda_version: format!("{}.{}", version / 1000, version % 1000 / 10),
        reach: crate::results::targets::MemoryReach {
            memory_node: memory_node(dev),
            ..reach(&|a| attribute(a).ok())
        },
    })
}

/// The host NUMA node that is GPU `dev`'s own memory, where the driver
/// says it is one (`CU_DEVICE_ATTRIBUTE_NUMA_CONFIG` 1, a GH200's HBM):
/// `CU_DEVICE_ATTRIBUTE_NUMA_ID`. Both came with CUDA 12.2, after the
/// bindings' enum: they are asked by number, and a driver that does not
/// know them says none.
fn memory_node(dev: sys::CUdevice) -> Option<usize> {
    const NUMA_CONFIG: c_int = 145;
    const NUMA_ID: c_int = 146;
    type GetAttribute = unsafe extern "C" fn(*mut c_int, c_int, sys::CUdevice) -> sys::CUresult;
    // SAFETY: the driver is loaded (the caller's facts came from it) and
    // stays loaded; the symbol has this signature in every CUDA.
    let get = *unsafe { sys::culib().get::<GetAttribute>(b"cuDeviceGetAttribute") }.ok()?;
    let ask = |attribute: c_int| {
        let mut value: c_int = -1;
        // SAFETY: writes one int; an attribute the driver does not know
        // is an error it returns.
        let code = unsafe { get(&mut value, attribute, dev) };
        (code == sys::CUresult::CUDA_SUCCESS).then_some(value)
    };
    (ask(NUMA_CONFIG)? == 1)
        .then(|| ask(NUMA_ID))
        .flatten()
        .and_then(|n| usize::try_from(n).ok())
}

/// What the driver's attributes say a GPU's kernels reach (`attribute`:
/// one attribute's value, `None` where the driver did not answer).
fn reach(
    attribute: &dyn Fn(sys::CUdevice_attribute) -> Option<i32>,
) -> crate::results::targets::MemoryReach {
    use sys::CUdevice_attribute as A;
    let yes = |a| attribute(a).map(|v| v != 0);
    let pageable = yes(A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
    crate::results::targets::MemoryReach {
        managed: yes(A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY),
        concurrent_managed: yes(A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS),
        pageable,
        host_page_tables: yes(A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES),
        xnack: None,
        pageable_missing: (pageable == Some(false)).then(|| {
            "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0 (it needs HMM: an open NVIDIA kernel module and Linux 6.1.24 or newer, or ATS: Grace's NVLink-C2C)".to_string()
        }),
        memory_node: None,
    }
}

/// The compute capability of `dev` (9.0: Hopper): its facts', and the
/// architecture a runtime looks its measured launch shapes up by.
pub(super) fn capability(dev: sys::CUdevice) -> Result<(i32, i32), String> {
    use sys::CUdevice_attribute as A;
    let attribute = |a: sys::CUdevice_attribute| -> Result<i32, String> {
        // SAFETY: `dev` is a device handle the driver gave; the attribute
        // is one of the enum's values.
        unsafe { result::device::get_attribute(dev, a) }
            .map_err(|e| fail("cuDeviceGetAttribute", e))
    };
    Ok((
        attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    ))
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, nvidia-smi's spelling.
pub(super) fn format_uuid(bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// What memory each GPU the driver sees reaches, by PCI address.
pub(super) fn reach_by_bus() -> Result<Vec<crate::results::targets::GpuReachAt>, String> {
    (0..device_count()?)
        .map(|i| {
            let f = facts(i)?;
            Ok(crate::results::targets::GpuReachAt {
                host_fabric: super::nvml::c2c_link(&f.bus_id),
                bus_id: f.bus_id,
                reach: f.reach,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_is_spelled_as_nvidia_smi_does() {
        let bytes: [u8; 16] = std::array::from_fn(|i| (i * 17) as u8);
        assert_eq!(
            format_uuid(&bytes),
            "GPU-00112233-4455-6677-8899-aabbccddeeff"
        );
    }
}
