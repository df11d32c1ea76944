//! HIP, loaded at run time: `libamdhip64.so.7` (ROCm 7), `.6` or `.5`, the
//! first that opens, bound to the calls membw makes and nothing more. A
//! binary built without ROCm runs on every node, and a request for an AMD
//! GPU on a node without ROCm ends in one line.
//!
//! No crate binds HIP by loading it at run time (the bindings on crates.io
//! link `libamdhip64` when they are built), so this is the one table of
//! function pointers membw keeps by hand. Every call returns a
//! `hipError_t`; the enums' values are those of ROCm 5 to 7's
//! `hip_runtime_api.h`, which have not changed since ROCm 5.0.

// The table's fields and the locals that bind them are HIP's own names.
#![allow(non_snake_case)]

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

/// `hipError_t`.
pub(super) type HipError = c_int;
/// A module, function, stream or event: an opaque handle of the runtime's.
pub(super) type Handle = *mut c_void;

pub(super) const SUCCESS: HipError = 0;
pub(super) const INVALID_VALUE: HipError = 1;
const NO_DEVICE: HipError = 100;
pub(super) const PEER_ACCESS_ALREADY_ENABLED: HipError = 704;

/// `hipMemcpyKind`.
pub(super) const HOST_TO_DEVICE: c_int = 1;
pub(super) const DEVICE_TO_HOST: c_int = 2;
pub(super) const DEVICE_TO_DEVICE: c_int = 3;
/// `hipHostRegisterPortable | hipHostRegisterMapped`.
pub(super) const REGISTER_PORTABLE_MAPPED: c_uint = 1 | 2;
/// `hipMemAttachGlobal`.
pub(super) const ATTACH_GLOBAL: c_uint = 1;
/// `hipPointer_attribute` values membw asks for (CUDA's numbers).
pub(super) const POINTER_MEMORY_TYPE: c_int = 2;
pub(super) const POINTER_IS_MANAGED: c_int = 8;
/// `hipMemoryTypeHost`: 0 in ROCm 5's `hipMemoryType`, 1 since ROCm 6
/// put `hipMemoryTypeUnregistered` first.
pub(super) fn memory_type_host(api: &Api) -> u32 {
    match api.name {
        "libamdhip64.so.5" => 0,
        _ => 1,
    }
}

/// `hipStreamNonBlocking`.
pub(super) const STREAM_NON_BLOCKING: c_uint = 1;

/// `hipDeviceAttribute_t` values membw asks for.
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub(super) enum Attribute {
    ConcurrentManagedAccess = 9,
    Integrated = 16,
    L2CacheSize = 19,
    ManagedMemory = 24,
    /// Bits.
    MemoryBusWidth = 59,
    /// kHz.
    MemoryClockRate = 60,
    MultiprocessorCount = 63,
    PageableMemoryAccess = 65,
    PageableMemoryAccessUsesHostPageTables = 66,
    /// ROCm 6.1 and newer.
    HostNumaId = 92,
}

/// The library's names, newest ROCm first.
pub(super) const LIBRARIES: [&str; 3] =
    ["libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"];

macro_rules! hip_api {
    ($($name:ident($($arg:ty),*);)*) => {
        /// The loaded library and its calls.
        pub(super) struct Api {
            _library: libloading::Library,
            /// Which of [`LIBRARIES`] it is.
            pub name: &'static str,
            error_name: Option<unsafe extern "C" fn(HipError) -> *const c_char>,
            $(pub $name: unsafe extern "C" fn($($arg),*) -> HipError,)*
        }

        impl Api {
            /// Every call of the table, from `library`.
            ///
            /// # Safety
            /// `library` is a HIP runtime: its symbols of these names have
            /// these signatures.
            unsafe fn bind(library: libloading::Library, name: &'static str) -> Result<Api, String> {
                // SAFETY: the caller's contract: the symbols are HIP's, of
                // these signatures; the pointers are copied out and the
                // library kept in the table, so they stay valid.
                unsafe {
                    $(let $name = *library
                        .get::<unsafe extern "C" fn($($arg),*) -> HipError>(
                            concat!(stringify!($name), "\0").as_bytes(),
                        )
                        .map_err(|_| format!("{name} has no {}: too old a ROCm (membw needs 5.0 or newer)", stringify!($name)))?;)*
                    let error_name = library
                        .get::<unsafe extern "C" fn(HipError) -> *const c_char>(b"hipGetErrorName\0")
                        .ok()
                        .map(|f| *f);
                    Ok(Api { _library: library, name, error_name, $($name,)* })
                }
            }
        }
    };
}

hip_api! {
    hipInit(c_uint);
    hipGetDeviceCount(*mut c_int);
    hipDriverGetVersion(*mut c_int);
    hipDeviceGetName(*mut c_char, c_int, c_int);
    hipDeviceTotalMem(*mut usize, c_int);
    hipDeviceGetPCIBusId(*mut c_char, c_int, c_int);
    hipDeviceGetAttribute(*mut c_int, c_int, c_int);
    hipSetDevice(c_int);
    hipDeviceSynchronize();
    hipModuleLoadData(*mut Handle, *const c_void);
    hipModuleUnload(Handle);
    hipModuleGetFunction(*mut Handle, Handle, *const c_char);
    hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(*mut c_int, Handle, c_int, usize);
    hipModuleLaunchKernel(Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle, *mut *mut c_void, *mut *mut c_void);
    hipStreamCreateWithFlags(*mut Handle, c_uint);
    hipStreamDestroy(Handle);
    hipStreamSynchronize(Handle);
    hipStreamWaitEvent(Handle, Handle, c_uint);
    hipEventCreate(*mut Handle);
    hipEventDestroy(Handle);
    hipEventRecord(Handle, Handle);
    hipEventSynchronize(Handle);
    hipEventElapsedTime(*mut f32, Handle, Handle);
    hipMalloc(*mut *mut c_void, usize);
    hipMallocManaged(*mut *mut c_void, usize, c_uint);
    hipMemPrefetchAsync(*const c_void, usize, c_int, Handle);
    hipPointerGetAttribute(*mut c_void, c_int, *mut c_void);
    hipFree(*mut c_void);
    hipHostRegister(*mut c_void, usize, c_uint);
    hipHostUnregister(*mut c_void);
    hipHostGetDevicePointer(*mut *mut c_void, *mut c_void, c_uint);
    hipMemcpyAsync(*mut c_void, *const c_void, usize, c_int, Handle);
    hipMemcpy(*mut c_void, *const c_void, usize, c_int);
    hipDeviceCanAccessPeer(*mut c_int, c_int, c_int);
    hipDeviceEnablePeerAccess(c_int, c_uint);
}

impl Api {
    /// A call's code as one line: `hipMalloc: hipErrorOutOfMemory (2)`.
    pub(super) fn fail(&self, call: &str, code: HipError) -> String {
        // SAFETY: hipGetErrorName returns a static NUL-terminated string
        // for any code, or null.
        let name = self
            .error_name
            .map(|f| unsafe { f(code) })
            .filter(|p| !p.is_null())
            .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
        match name {
            Some(name) => format!("{call}: {name} ({code})"),
            None => format!("{call}: hipError_t {code}"),
        }
    }

    /// `Ok` for hipSuccess, else the call and the code in one line.
    pub(super) fn check(&self, call: &str, code: HipError) -> Result<(), String> {
        if code == SUCCESS {
            Ok(())
        } else {
            Err(self.fail(call, code))
        }
    }
}

/// The runtime, loaded and initialized once per process; or why not, in
/// one line.
pub(super) fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Api, String> {
    crate::sys::may_load_shared_libraries()
        .map_err(|why| format!("the HIP runtime is not loaded: {why}"))?;
    let mut first_reason = None;
    for name in LIBRARIES {
        // SAFETY: a ROCm library; its initializers are the runtime's own.
        match unsafe { libloading::Library::new(name) } {
            Ok(library) => {
                // SAFETY: the library of this name is HIP's runtime.
                let api = unsafe { Api::bind(library, name) }?;
                probe_init(name)?;
                // SAFETY: hipInit takes flags that must be 0.
                return match unsafe { (api.hipInit)(0) } {
                    SUCCESS => Ok(api),
                    NO_DEVICE => Err(format!(
                        "the HIP runtime ({name}) is installed but sees no GPU (HIP_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES, /dev/kfd permissions: the user must be in the render group, or a GPU the driver has lost: amd-smi says which)"
                    )),
                    code => Err(api.fail(&format!("hipInit ({name})"), code)),
                };
            }
            Err(e) => {
                first_reason.get_or_insert_with(|| {
                    crate::sys::why_not_loadable(name).unwrap_or_else(|| e.to_string())
                });
            }
        }
    }
    Err(format!(
        "no HIP runtime here: none of {} loads ({}: ROCm is not installed, or outside the library path); membw topo lists the GPUs on the PCI bus",
        LIBRARIES.join(", "),
        first_reason.unwrap_or_default()
    ))
}

/// What a probe process is asked, in `MEMBW_PROBE`: `hip:LIBRARY`.
const PROBE_PREFIX: &str = "hip:";
/// How long `hipInit` may take in the probe: a node's GPUs start in
/// seconds; a runtime that hangs there must not hang membw.
const PROBE_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Calls `hipInit` of library `name` in a child membw first, so that a
/// runtime that crashes there (ROCm/hip issue 3180: ROCm 5.4.3 after
/// `dlopen`) or never returns ends in one line, not in membw's own crash.
/// Where no child can be started (the binary gone from disk), membw goes
/// on without the probe, as it did before it had one.
fn probe_init(name: &str) -> Result<(), String> {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let Ok(exe) = std::env::current_exe() else {
        return Ok(());
    };
    let spawned = Command::new(exe)
        .env(
            crate::backend::gpu::runtime::PROBE_VARIABLE,
            format!("{PROBE_PREFIX}{name}"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = spawned else {
        return Ok(());
    };
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return match status.signal() {
                    None => Ok(()),
                    Some(signal) => Err(format!(
                        "the HIP runtime ({name}) crashed in hipInit (signal {signal}) in a probe process, so membw does not start it: a known fault of some ROCm releases when HIP is loaded at run time (ROCm/hip issue 3180); try another ROCm (module load rocm/VERSION)"
                    )),
                };
            }
            Ok(None) if started.elapsed() < PROBE_LIMIT => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the HIP runtime ({name}) did not return from hipInit within {} s in a probe process, so membw does not start it (a GPU the driver has lost: amd-smi says which)",
                    PROBE_LIMIT.as_secs()
                ));
            }
            Err(_) => return Ok(()),
        }
    }
}

/// In a probe process (`MEMBW_PROBE=hip:LIBRARY`): loads the library and
/// calls `hipInit`; its exit says it returned (0), or that the library
/// did not load (3). `None`: not asked of HIP.
pub(super) fn probe_child(asked: &str) -> Option<i32> {
    let name = asked.strip_prefix(PROBE_PREFIX)?;
    let name = LIBRARIES.iter().find(|n| **n == name)?;
    // SAFETY: a ROCm library; its initializers are the runtime's own.
    let Ok(library) = (unsafe { libloading::Library::new(*name) }) else {
        return Some(3);
    };
    // SAFETY: HIP's hipInit, of this signature; called while the library
    // is loaded, with the flags it requires (0).
    unsafe {
        match library.get::<unsafe extern "C" fn(c_uint) -> HipError>(b"hipInit\0") {
            Ok(init) => {
                init(0);
                Some(0)
            }
            Err(_) => Some(3),
        }
    }
}
