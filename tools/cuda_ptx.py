#!/usr/bin/env python3
"""Compiles membw's GPU kernels (src/backend/cuda/kernels.cu) to the PTX
that the binary carries (kernels.ptx), with a pinned NVRTC.

    pip install -r tools/cuda-ptx-requirements.txt
    python3 tools/cuda_ptx.py          # writes kernels.ptx
    python3 tools/cuda_ptx.py --check  # CI: the committed PTX is what the
                                       # source compiles to, and ptxas
                                       # assembles it for sm_70, sm_80, sm_90

The compiler is CUDA 11.8's NVRTC: its PTX (ISA 7.8) is JIT-compiled by
every driver from R520 (2022) on; a newer NVRTC would write a PTX ISA that
older drivers refuse to load. The PTX targets compute_70 (Volta), the
oldest GPU membw supports; the driver compiles it for the GPU it finds.
"""
import ctypes
import glob
import os
import subprocess
import sys
import tempfile

NVRTC_VERSION = (11, 8)
ARCH = "compute_70"
ASSEMBLE_FOR = ["sm_70", "sm_80", "sm_90"]
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "src", "backend", "cuda", "kernels.cu")
PTX = os.path.join(HERE, "..", "src", "backend", "cuda", "kernels.ptx")
# Where kernels.inc (every vendor's kernels) is found.
SHARED = os.path.join(HERE, "..", "src", "backend", "gpu")


def package_dir(name):
    try:
        module = __import__("nvidia." + name, fromlist=["_"])
    except ImportError:
        sys.exit(f"cuda_ptx: nvidia.{name} is not installed: "
                 "pip install -r tools/cuda-ptx-requirements.txt")
    return os.path.dirname(module.__file__ or module.__path__[0])


def nvrtc():
    libs = glob.glob(os.path.join(package_dir("cuda_nvrtc"), "lib", "libnvrtc.so*"))
    libs = [l for l in libs if "builtins" not in l]
    if not libs:
        sys.exit("cuda_ptx: no libnvrtc.so in the nvidia-cuda-nvrtc package")
    lib = ctypes.CDLL(libs[0])
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    if (major.value, minor.value) != NVRTC_VERSION:
        sys.exit(f"cuda_ptx: NVRTC {major.value}.{minor.value}, "
                 f"not the pinned {NVRTC_VERSION[0]}.{NVRTC_VERSION[1]}")
    return lib


def compile_ptx():
    lib = nvrtc()
    source = open(SOURCE, "rb").read()
    program = ctypes.c_void_p()
    check(lib, lib.nvrtcCreateProgram(ctypes.byref(program), source,
                                      b"kernels.cu", 0, None, None))
    options = [f"--gpu-architecture={ARCH}".encode(), b"--std=c++14",
               f"--include-path={SHARED}".encode()]
    argv = (ctypes.c_char_p * len(options))(*options)
    status = lib.nvrtcCompileProgram(program, len(options), argv)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(program, log)
    if status != 0:
        sys.exit("cuda_ptx: kernels.cu does not compile:\n" + log.value.decode())
    lib.nvrtcGetPTXSize(program, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    check(lib, lib.nvrtcGetPTX(program, ptx))
    lib.nvrtcDestroyProgram(ctypes.byref(program))
    return ptx.value


def check(lib, status):
    if status != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        sys.exit(f"cuda_ptx: NVRTC: {lib.nvrtcGetErrorString(status).decode()}")


def assemble(ptx_path):
    ptxas = os.path.join(package_dir("cuda_nvcc"), "bin", "ptxas")
    for arch in ASSEMBLE_FOR:
        with tempfile.NamedTemporaryFile(suffix=".cubin") as out:
            run = subprocess.run([ptxas, f"-arch={arch}", ptx_path, "-o", out.name],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"cuda_ptx: ptxas -arch={arch} refuses kernels.ptx:\n{run.stderr}")
        print(f"cuda_ptx: ptxas assembles kernels.ptx for {arch}")


def main():
    ptx = compile_ptx()
    if sys.argv[1:] == ["--check"]:
        committed = open(PTX, "rb").read()
        if committed != ptx:
            sys.exit("cuda_ptx: src/backend/cuda/kernels.ptx is not what kernels.cu "
                     "compiles to: run python3 tools/cuda_ptx.py and commit it")
        print("cuda_ptx: kernels.ptx is what kernels.cu compiles to")
        assemble(PTX)
    elif sys.argv[1:] == []:
        open(PTX, "wb").write(ptx)
        print(f"cuda_ptx: wrote {os.path.relpath(PTX)} ({len(ptx)} bytes)")
        assemble(PTX)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
