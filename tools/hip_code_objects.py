#!/usr/bin/env python3
"""Compiles membw's AMD GPU kernels (src/backend/hip/kernels.cl) to the
code objects the binary carries, one per GPU target, with a pinned clang.

    apt-get install clang-19 lld-19 llvm-19   # Debian bookworm's, no ROCm
    python3 tools/hip_code_objects.py          # writes kernels-TARGET.co
    python3 tools/hip_code_objects.py --check  # CI: the committed objects are
                                               # what the source compiles to,
                                               # each for its target, with
                                               # every kernel the host names

The compiler is bookworm's clang 19.1.7 (gfx942 needs clang 19): OpenCL C
for amdgcn-amd-amdhsa, without ROCm's device libraries (-nogpulib), code
object v5 (clang's default, which ROCm 5.3 and later load). A different
clang may write different bytes: the version is checked first.
"""
import os
import re
import subprocess
import sys
import tempfile

CLANG = "clang-19"
READOBJ = "llvm-readobj-19"
CLANG_VERSION = "19.1.7"
# MI250X and MI210 (CDNA2), MI300A and MI300X (CDNA3), Radeon RX 7900 (RDNA3).
TARGETS = {
    "gfx90a": "EF_AMDGPU_MACH_AMDGCN_GFX90A",
    "gfx942": "EF_AMDGPU_MACH_AMDGCN_GFX942",
    "gfx1100": "EF_AMDGPU_MACH_AMDGCN_GFX1100",
}
HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "..", "src", "backend", "hip")
SOURCE = os.path.join(DIR, "kernels.cl")
# Where kernels.inc (every vendor's kernels) is found.
SHARED = os.path.join(HERE, "..", "src", "backend", "gpu")
# The kernels the host launches by name (src/kernels/table.rs's and the
# transfers'), each in every build of src/kernels/gpu_builds.rs that AMD's
# GPUs have, and the fills, in one build.
FAMILIES = ["copy", "scale", "add", "triad", "write", "init", "update", "daxpy",
            "striad", "sdaxpy", "nstream", "h2d_kernel", "d2h_kernel", "bidir_kernel",
            "read", "dot"]
BUILDS = ["", "_spread", "_u2", "_u1", "_u8", "_w8", "_w8_u4", "_cs", "_u1_cs", "_w8_cs"]
KERNELS = [f + b for f in FAMILIES for b in BUILDS] + ["fill_a", "fill_b", "fill_c", "fill_d"]


def object_path(target):
    return os.path.join(DIR, f"kernels-{target}.co")


def tool(name):
    try:
        return subprocess.run([name, "--version"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit(f"hip_code_objects: {name} is not installed: "
                 "apt-get install clang-19 lld-19 llvm-19")


def compile_object(target, out):
    run = subprocess.run(
        [CLANG, "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa",
         f"-mcpu={target}", "-nogpulib", "-O3", "-Wall", "-Werror", "-I", SHARED,
         "-ffile-prefix-map=" + os.path.dirname(SOURCE) + "=.", "-o", out, SOURCE],
        capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"hip_code_objects: kernels.cl does not compile for {target}:\n{run.stderr}")


def confirm(target, path):
    """The object is an AMDGPU code object for `target` holding every kernel."""
    headers = subprocess.run([READOBJ, "--file-headers", path],
                             capture_output=True, text=True).stdout
    if TARGETS[target] not in headers:
        sys.exit(f"hip_code_objects: {os.path.basename(path)} is not for {target}:\n{headers}")
    symbols = subprocess.run([READOBJ, "--symbols", path], capture_output=True, text=True).stdout
    have = set(re.findall(r"Name: (\S+)\.kd", symbols))
    missing = [k for k in KERNELS if k not in have]
    if missing:
        sys.exit(f"hip_code_objects: {os.path.basename(path)} lacks {', '.join(missing)}")
    print(f"hip_code_objects: {os.path.basename(path)} is for {target} "
          f"with all {len(KERNELS)} kernels")


def main():
    version = tool(CLANG)
    if CLANG_VERSION not in version:
        sys.exit(f"hip_code_objects: {CLANG} is not the pinned {CLANG_VERSION}:\n{version}")
    tool(READOBJ)
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] not in ([], ["--check"]):
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        for target in TARGETS:
            fresh = os.path.join(tmp, f"kernels-{target}.co")
            compile_object(target, fresh)
            confirm(target, fresh)
            built = open(fresh, "rb").read()
            if check:
                if not os.path.exists(object_path(target)) or \
                        open(object_path(target), "rb").read() != built:
                    sys.exit(f"hip_code_objects: src/backend/hip/kernels-{target}.co is not "
                             "what kernels.cl compiles to: run python3 "
                             "tools/hip_code_objects.py and commit it")
                print(f"hip_code_objects: kernels-{target}.co is what kernels.cl compiles to")
            else:
                open(object_path(target), "wb").write(built)
                print(f"hip_code_objects: wrote {os.path.relpath(object_path(target))} "
                      f"({len(built)} bytes)")


if __name__ == "__main__":
    main()
