//! Whether this binary may load a shared library at run time (the NVIDIA
//! driver, NVML).
//!
//! A dynamically linked membw always may. The static build (`crt-static`,
//! the release's binary for nodes) loads through glibc's static `dlopen`,
//! which brings the node's own `libc.so.6` in beside the glibc linked into
//! membw. Where the two versions differ, that second libc starts half
//! initialized and the process dies: SIGFPE in `membw run` on an Ubuntu
//! 24.04 GPU node (glibc 2.39) with a binary built on Debian 12 (glibc
//! 2.36). So a static membw loads nothing unless the versions match, and
//! says why.

use std::sync::OnceLock;

/// Where distributions keep the C library's shared object: Debian's
/// multiarch directory for this CPU, then the others'.
fn libc_paths() -> [String; 4] {
    [
        format!("/lib/{}-linux-gnu/libc.so.6", std::env::consts::ARCH),
        "/lib64/libc.so.6".into(),
        "/usr/lib64/libc.so.6".into(),
        "/lib/libc.so.6".into(),
    ]
}

/// `Ok` where `dlopen` of a system library is safe; why not otherwise.
pub fn may_load_shared_libraries() -> Result<(), String> {
    if !cfg!(target_feature = "crt-static") {
        return Ok(());
    }
    static VERDICT: OnceLock<Result<(), String>> = OnceLock::new();
    VERDICT
        .get_or_init(|| {
            let built = linked_glibc();
            let here = libc_paths()
                .iter()
                .find_map(|p| std::fs::read(p).ok())
                .and_then(|bytes| glibc_release(&bytes));
            match here {
                Some(here) if here == built => Ok(()),
                Some(here) => Err(format!(
                    "this static membw has glibc {built} built in and this node has glibc {here}, \
                     and static dlopen cannot cross glibc versions: on GPU nodes use the portable \
                     release binary (membw-VERSION-ARCH-linux-portable) or a build from source \
                     (cargo install, EasyBuild, Spack)"
                )),
                None => Err(format!(
                    "this static membw (glibc {built}) finds no libc.so.6 to compare with, so it \
                     loads no shared library: on GPU nodes use the portable release binary \
                     (membw-VERSION-ARCH-linux-portable)"
                )),
            }
        })
        .clone()
}

/// Why the shared library `name` does not load here, in the dynamic
/// loader's words (`libcuda.so.1: cannot open shared object file: No
/// such file or directory`, `version GLIBC_2.34 not found`); `None` where
/// it loads. Only asked after `may_load_shared_libraries`: it opens the
/// library (and closes it again), running its initializers.
pub fn why_not_loadable(name: &str) -> Option<String> {
    let cname = std::ffi::CString::new(name).ok()?;
    // SAFETY: a NUL-terminated name; RTLD_LAZY binds nothing yet. A
    // handle that opened is closed at once; dlerror's string is copied
    // before any other dl* call.
    unsafe {
        let handle = libc::dlopen(cname.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if !handle.is_null() {
            libc::dlclose(handle);
            return None;
        }
        let why = libc::dlerror();
        Some(if why.is_null() {
            format!("{name} does not load")
        } else {
            std::ffi::CStr::from_ptr(why).to_string_lossy().into_owned()
        })
    }
}

/// The glibc version linked into this binary ("2.36").
fn linked_glibc() -> String {
    // SAFETY: gnu_get_libc_version takes no arguments and returns a pointer
    // to a static, NUL-terminated string that lives as long as the process.
    let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    version.to_string_lossy().into_owned()
}

/// The version in a `libc.so.6`'s banner: "GNU C Library (Ubuntu GLIBC
/// 2.39-0ubuntu8.9) stable release version 2.39." gives "2.39".
fn glibc_release(bytes: &[u8]) -> Option<String> {
    const MARK: &[u8] = b"release version ";
    let at = bytes.windows(MARK.len()).position(|w| w == MARK)? + MARK.len();
    let version: String = bytes[at..]
        .iter()
        .take(16)
        .map(|&b| b as char)
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let version = version.trim_end_matches('.');
    version.contains('.').then(|| version.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_is_read_from_each_distributions_banner() {
        let ubuntu =
            b"\0GNU C Library (Ubuntu GLIBC 2.39-0ubuntu8.9) stable release version 2.39.\n";
        assert_eq!(glibc_release(ubuntu).as_deref(), Some("2.39"));
        let rhel = b"xx GNU C Library (GNU libc) stable release version 2.34.\nCopyright";
        assert_eq!(glibc_release(rhel).as_deref(), Some("2.34"));
        assert_eq!(glibc_release(b"no banner at all"), None);
        assert_eq!(glibc_release(b"release version x"), None);
    }

    #[test]
    fn this_hosts_glibc_banner_matches_the_linked_version_when_dynamic() {
        // A dynamic test binary uses the host's libc: its banner and
        // gnu_get_libc_version agree, or the banner was not found.
        if cfg!(target_feature = "crt-static") {
            return;
        }
        let bytes = libc_paths().iter().find_map(|p| std::fs::read(p).ok());
        if let Some(release) = bytes.and_then(|b| glibc_release(&b)) {
            assert_eq!(release, linked_glibc());
        }
        assert_eq!(may_load_shared_libraries(), Ok(()));
    }
}
