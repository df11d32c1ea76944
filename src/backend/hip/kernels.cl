// membw's kernels on an AMD GPU: the same recurrences, access patterns and
// launch shapes as the CUDA build (src/backend/cuda/kernels.cu), written
// in OpenCL C so that a stock clang compiles them without ROCm.
//
// The kernels themselves are every vendor's (src/backend/gpu/kernels.inc);
// this file is their OpenCL prologue. Compiled to one code object per GPU
// target by tools/hip_code_objects.py with a pinned clang (Debian
// bookworm's clang-19 and lld-19); HIP loads the one for the GPU it finds
// (hipModuleLoadData). Edit this file or kernels.inc, run the script, and
// commit the objects with it: CI checks that they match.
//
// Without ROCm's device libraries nothing of OpenCL's work-item functions
// links, so a kernel reads its thread and block from the hardware's
// registers (__builtin_amdgcn_workitem_id_x, _workgroup_id_x) and takes
// its grid's size in blocks as its last argument. Blocks are always BLOCK
// threads (reqd_work_group_size).
//
// Every kernel has the same parameters, the CUDA build's and then the
// grid: the six arrays (those it does not use are null), the reductions'
// per-block sums, the scalar, the element count and the blocks.

#pragma OPENCL EXTENSION cl_khr_fp64 : enable

typedef unsigned long u64;
typedef unsigned int u32;

#define UNROLL 4
#define BLOCK 256

#define THREAD ((u64)__builtin_amdgcn_workitem_id_x())
#define GROUP ((u64)__builtin_amdgcn_workgroup_id_x())

#define PARAMS                                                                 \
  __global double *restrict a, __global double *restrict b,                    \
      __global double *restrict c, __global double *restrict d,                \
      __global double *restrict h, __global double *restrict r,                \
      __global double *restrict partial, const double s, const u64 n,          \
      const u32 blocks

typedef double VEC1;
typedef double2 VEC2;

// Element i of array p, as V (double2: elements 2i and 2i+1); with HINT,
// non-temporal (streaming: the CUDA build's `.cs`).
#define LD(p, i)                                                               \
  (HINT ? __builtin_nontemporal_load((__global const V *)(p) + (i))            \
        : ((__global const V *)(p))[i])
#define ST(p, i, value)                                                        \
  do {                                                                         \
    if (HINT)                                                                  \
      __builtin_nontemporal_store((value), (__global V *)(p) + (i));           \
    else                                                                       \
      ((__global V *)(p))[i] = (value);                                        \
  } while (0)

// Runs BODY over every element, UN accesses of W doubles a thread a tile,
// non-temporal where H: whole tiles first, then the last partial tile,
// then an odd last element.
#define TILED(BODY, UN, W, H)                                                  \
  enum { HINT = H };                                                           \
  const u64 count = n / W;                                                     \
  const u64 stride = (u64)blocks * BLOCK * UN;                                 \
  const u64 last = (u64)(UN - 1) * BLOCK;                                      \
  u64 base = GROUP * BLOCK * UN + THREAD;                                      \
  for (; base + last < count; base += stride) {                                \
    _Pragma("unroll") for (int u = 0; u < UN; u++) {                           \
      const u64 i = base + (u64)u * BLOCK;                                     \
      typedef VEC##W V;                                                        \
      BODY;                                                                    \
    }                                                                          \
  }                                                                            \
  _Pragma("unroll") for (int u = 0; u < UN; u++) {                             \
    const u64 i = base + (u64)u * BLOCK;                                       \
    if (i < count) {                                                           \
      typedef VEC##W V;                                                        \
      BODY;                                                                    \
    }                                                                          \
  }                                                                            \
  if (W == 2 && (n & 1) && GROUP == 0 && THREAD == 0) {                        \
    typedef double V;                                                          \
    const u64 i = n - 1;                                                       \
    BODY;                                                                      \
  }

// Runs BODY over every element, a thread's UNROLL accesses a quarter of
// the pairs apart (BabelStream's grid-stride loop, UNROLL streams deep).
#define SPREAD(BODY)                                                           \
  enum { HINT = 0 };                                                           \
  const u64 pairs = n / 2;                                                     \
  const u64 part = pairs / UNROLL;                                             \
  const u64 stride = (u64)blocks * BLOCK;                                      \
  const u64 first = GROUP * BLOCK + THREAD;                                    \
  for (u64 t = first; t < part; t += stride) {                                 \
    _Pragma("unroll") for (int u = 0; u < UNROLL; u++) {                       \
      const u64 i = t + (u64)u * part;                                         \
      typedef double2 V;                                                       \
      BODY;                                                                    \
    }                                                                          \
  }                                                                            \
  for (u64 i = UNROLL * part + first; i < pairs; i += stride) {                \
    typedef double2 V;                                                         \
    BODY;                                                                      \
  }                                                                            \
  if ((n & 1) && first == 0) {                                                 \
    typedef double V;                                                          \
    const u64 i = n - 1;                                                       \
    BODY;                                                                      \
  }

#define KERNEL __kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void

// Every build of a kernel: its suffix and its walk over the arrays with
// ARG as the body (the CUDA build's, less the `.cg` ones, which AMD's
// GPUs have no hint for). src/kernels/gpu_builds.rs lists them.
#define BUILDS(KERNEL, NAME, ARG)                                              \
  KERNEL(NAME, , TILED(ARG, UNROLL, 2, 0))                                     \
  KERNEL(NAME, _spread, SPREAD(ARG))                                           \
  KERNEL(NAME, _u2, TILED(ARG, 2, 2, 0))                                       \
  KERNEL(NAME, _u1, TILED(ARG, 1, 2, 0))                                       \
  KERNEL(NAME, _u8, TILED(ARG, 8, 2, 0))                                       \
  KERNEL(NAME, _w8, TILED(ARG, 1, 1, 0))                                       \
  KERNEL(NAME, _w8_u4, TILED(ARG, 4, 1, 0))                                    \
  KERNEL(NAME, _cs, TILED(ARG, UNROLL, 2, 1))                                  \
  KERNEL(NAME, _u1_cs, TILED(ARG, 1, 2, 1))                                    \
  KERNEL(NAME, _w8_cs, TILED(ARG, 1, 1, 1))

#define STREAM_BUILD(NAME, SUFFIX, WALK)                                       \
  KERNEL NAME##SUFFIX(PARAMS) { WALK }
#define STREAM_KERNEL(NAME, BODY) BUILDS(STREAM_BUILD, NAME, BODY)

// OpenCL's vectors add and multiply element by element, and a scalar
// times a vector is every element's product: the CUDA build's operators.
#define SPLAT(v) ((V)(v))

#define FILL(NAME, P) STREAM_BUILD(NAME, , TILED(ST(P, i, SPLAT(s)), UNROLL, 2, 0))

// A double or a pair's sum.
inline double __attribute__((overloadable)) total(double x) { return x; }
inline double __attribute__((overloadable)) total(double2 x) {
  return x.x + x.y;
}

// The block's threads' sums into partial[block]: a tree in local memory,
// the work-group barrier between its steps (fenced, as OpenCL's barrier
// with CLK_LOCAL_MEM_FENCE is).
#define SYNC_BLOCK                                                             \
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");                       \
  __builtin_amdgcn_s_barrier();                                                \
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
#define BLOCK_SUM                                                              \
  sums[THREAD] = sum;                                                          \
  for (u32 step = BLOCK / 2; step > 0; step /= 2) {                            \
    SYNC_BLOCK                                                                 \
    if (THREAD < step)                                                         \
      sums[THREAD] += sums[THREAD + step];                                     \
  }                                                                            \
  if (THREAD == 0)                                                             \
    partial[GROUP] = sums[0];

#define REDUCE_BODY(EACH)                                                      \
  __local double sums[BLOCK];                                                  \
  double sum = 0.0;                                                            \
  EACH                                                                         \
  BLOCK_SUM

#define REDUCE_BUILD(NAME, SUFFIX, WALK)                                       \
  KERNEL NAME##SUFFIX(PARAMS) { REDUCE_BODY(WALK) }
#define REDUCE_KERNEL(NAME, TERM) BUILDS(REDUCE_BUILD, NAME, sum += total(TERM))

// The kernels themselves, every vendor's (src/backend/gpu/kernels.inc).
#include "kernels.inc"
