//! The AMD GPU kernels (src/backend/hip/kernels.cl): the committed code
//! objects are what the source compiles to with the pinned clang, each for
//! its target with every kernel, and the source holds the CUDA build's
//! kernels with the same recurrences.

use crate::common;

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// clang-19, lld-19 and llvm-19 (Debian bookworm's) are tools here:
/// missing, this fails in CI and skips locally.
#[test]
fn the_committed_code_objects_are_what_the_source_compiles_to() {
    if !common::slow_tests("the code-object check (clang for three targets, 164 kernels each)") {
        return;
    }
    let probe = std::process::Command::new("clang-19")
        .arg("--version")
        .output();
    if probe.is_err() {
        common::unavailable(
            "clang-19 is not installed (Debian packages clang-19, lld-19, llvm-19)",
            ".ci/run must apt-get install clang-19 lld-19 llvm-19",
        );
        return;
    }
    let said = common::passed_check(
        std::process::Command::new("python3")
            .arg(root().join("tools/hip_code_objects.py"))
            .arg("--check"),
    );
    for target in ["gfx90a", "gfx942", "gfx1100"] {
        crate::common::assert_contains(
            &said,
            &format!("kernels-{target}.co is what kernels.cl compiles to"),
        );
        crate::common::assert_contains(
            &said,
            &format!("kernels-{target}.co is for {target} with all 164 kernels"),
        );
    }
}

/// The kernels of a source: its `STREAM_KERNEL(`, `REDUCE_KERNEL(` and
/// `FILL(` lines, by name.
fn kernels(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    (text.lines())
        .filter(|l| {
            ["STREAM_KERNEL(", "REDUCE_KERNEL(", "FILL("]
                .iter()
                .any(|m| l.starts_with(m))
        })
        .map(|l| l.split([',', ')']).next().unwrap().to_string())
        .collect()
}

#[test]
fn every_vendor_compiles_the_one_kernel_source() {
    // The kernels are written once, and each vendor's source is a
    // prologue that includes them.
    let shared = kernels("src/backend/gpu/kernels.inc");
    assert_eq!(shared.len(), 20, "{shared:?}");
    for source in ["src/backend/cuda/kernels.cu", "src/backend/hip/kernels.cl"] {
        assert_eq!(
            kernels(source),
            Vec::<String>::new(),
            "{source} writes kernels of its own"
        );
        let text = std::fs::read_to_string(root().join(source)).unwrap();
        assert!(text.contains("#include \"kernels.inc\""), "{source}");
    }
    // The same builds, but the L2-only (`.cg`) ones AMD has no hint for.
    let cuda_builds: Vec<String> = builds("src/backend/cuda/kernels.cu")
        .into_iter()
        .filter(|b| !b.ends_with("_cg"))
        .collect();
    assert_eq!(cuda_builds.len(), 10, "{cuda_builds:?}");
    assert_eq!(builds("src/backend/hip/kernels.cl"), cuda_builds);
}

/// The suffixes of a kernel source's builds (`KERNEL(NAME, _u1, ...)`
/// lines of its BUILDS list), in order.
fn builds(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    (text.lines())
        .filter_map(|l| l.trim().strip_prefix("KERNEL(NAME, "))
        .map(|rest| rest.split(',').next().unwrap().trim().to_string())
        .collect()
}

/// AMD's backend is its module (src/backend/hip) and one line of
/// registration (`PLATFORMS`), with the module's declaration and import:
/// no other line of any source file names HIP or its backend.
#[test]
fn nothing_but_its_module_and_its_registration_names_the_hip_backend() {
    fn files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = root().join("src");
    let mut paths = Vec::new();
    files(&src, &mut paths);
    let registration = |rel: &str, line: &str| match rel {
        "backend/mod.rs" => line == "pub mod hip;" || line.starts_with("//!"),
        "backend/registry.rs" => {
            line.starts_with("pub const PLATFORMS") || line.starts_with("use super::")
        }
        _ => false,
    };
    let mut named = Vec::new();
    for path in paths {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.starts_with("backend/hip/") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let names_hip = |line: &str| {
            line.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|word| word.eq_ignore_ascii_case("hip"))
        };
        for line in text.lines().filter(|l| names_hip(l)) {
            if !registration(&rel, line.trim()) {
                named.push(format!("{rel}: {line}"));
            }
        }
    }
    assert!(named.is_empty(), "{named:#?}");
    // The lists do name it: the check above is not vacuous.
    let device_set = std::fs::read_to_string(src.join("backend/registry.rs")).unwrap();
    crate::common::assert_contains(&device_set, "&hip::Hip");
}
