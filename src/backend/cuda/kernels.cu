// membw's kernels on an NVIDIA GPU: the same recurrences as the CPU's
// (src/kernels/table.rs), on doubles, one launch per repetition.
//
// The kernels themselves are every vendor's (src/backend/gpu/kernels.inc);
// this file is their CUDA prologue: loads, stores, walks and builds.
// Compiled to PTX by tools/cuda_ptx.py with a pinned NVRTC; the driver
// compiles the PTX for the GPU it finds when the module loads. Edit this
// file or kernels.inc, run the script, and commit both: CI checks that
// they match.
//
// Every kernel has the same parameters, so that the host launches each
// the same way: the six arrays (those it does not use are null), the
// reductions' per-block sums, the scalar and the element count.
//
// Every kernel comes in builds, one per way its threads walk the arrays
// (src/kernels/gpu_builds.rs names them for the host, which launches each
// in its block sizes and grids: the launch shapes):
// - the access: 16 bytes (double2) or 8 (double) a load or store;
// - the accesses a thread owns per tile (1, 2, 4 or 8), a block's width
//   apart, so that a warp's accesses coalesce and every thread has that
//   many loads in flight (restrict lets the compiler issue them all
//   before the first store); tiles repeat over the grid;
// - or, `_spread`, a thread's 4 accesses a quarter of the array apart
//   (BabelStream's grid-stride loop, four streams of each array deep);
// - the cache hint of every load and store: none, `.cs` (streaming,
//   evict first) or `.cg` (cached in L2 only);
// - the most threads a block may have (__launch_bounds__): 256 for the
//   builds measured on an H100 and an H200 before the others existed (their
//   code unchanged since) and where a thread holds 4 or more 16-byte
//   accesses; 1024 for the rest, which run in blocks of 256 or 1024.
// Any array length runs exactly: whole tiles, then the last partial tile
// with a bounds test, then (16-byte builds) an odd last element as a
// plain double, on the first thread.

typedef unsigned long long u64;
typedef double VEC1;
typedef double2 VEC2;

__device__ __forceinline__ double2 operator+(double2 x, double2 y) {
  return make_double2(x.x + y.x, x.y + y.y);
}
__device__ __forceinline__ double2 operator*(double2 x, double2 y) {
  return make_double2(x.x * y.x, x.y * y.y);
}
__device__ __forceinline__ double2 operator*(double s, double2 x) {
  return make_double2(s * x.x, s * x.y);
}
template <class V> __device__ __forceinline__ V splat(double v);
template <> __device__ __forceinline__ double splat<double>(double v) { return v; }
template <> __device__ __forceinline__ double2 splat<double2>(double v) {
  return make_double2(v, v);
}
__device__ __forceinline__ double total(double x) { return x; }
__device__ __forceinline__ double total(double2 x) { return x.x + x.y; }

// Loads and stores with cache hint H: 0 none, 1 `.cs`, 2 `.cg`. The hinted
// ones are written here rather than with CUDA's __ldcs/__stcs, whose stores
// clobber all memory and so hold a thread's next loads behind its store;
// these stores do not, and no kernel loads what it stored.
template <int H> __device__ __forceinline__ double ld(const double *p);
template <int H> __device__ __forceinline__ double2 ld(const double2 *p);
template <int H> __device__ __forceinline__ void st(double *p, double v);
template <int H> __device__ __forceinline__ void st(double2 *p, double2 v);
template <> __device__ __forceinline__ double ld<0>(const double *p) { return *p; }
template <> __device__ __forceinline__ double2 ld<0>(const double2 *p) { return *p; }
template <> __device__ __forceinline__ void st<0>(double *p, double v) { *p = v; }
template <> __device__ __forceinline__ void st<0>(double2 *p, double2 v) { *p = v; }
#define HINTED(H, OP)                                                          \
  template <>                                                                  \
  __device__ __forceinline__ double ld<H>(const double *p) {                   \
    double v;                                                                  \
    asm("ld.global." OP ".f64 %0, [%1];" : "=d"(v) : "l"(p));                 \
    return v;                                                                  \
  }                                                                            \
  template <>                                                                  \
  __device__ __forceinline__ double2 ld<H>(const double2 *p) {                 \
    double2 v;                                                                 \
    asm("ld.global." OP ".v2.f64 {%0, %1}, [%2];"                             \
        : "=d"(v.x), "=d"(v.y)                                                 \
        : "l"(p));                                                             \
    return v;                                                                  \
  }                                                                            \
  template <> __device__ __forceinline__ void st<H>(double *p, double v) {     \
    asm volatile("st.global." OP ".f64 [%0], %1;" ::"l"(p), "d"(v));          \
  }                                                                            \
  template <> __device__ __forceinline__ void st<H>(double2 *p, double2 v) {   \
    asm volatile("st.global." OP ".v2.f64 [%0], {%1, %2};" ::"l"(p),          \
                 "d"(v.x), "d"(v.y));                                          \
  }
HINTED(1, "cs")
HINTED(2, "cg")

#define PARAMS                                                                 \
  double *__restrict__ a, double *__restrict__ b, double *__restrict__ c,      \
      double *__restrict__ d, double *__restrict__ h, double *__restrict__ r,  \
      double *__restrict__ partial, const double s, const u64 n

// Element i of array p, as V (double2: elements 2i and 2i+1), with the
// build's cache hint. A store is made at once (STAGE NOW), or, in the
// hinted builds' whole tiles, its value kept (KEEP) and stored after the
// tile's last load (PUT): the hinted stores are ordered (asm volatile), and
// a load the compiler may not move above them would wait for each.
enum { NOW, KEEP, PUT };
#define LD(p, i) ld<HINT>((const V *)(p) + (i))
#define ST(p, i, value)                                                        \
  do {                                                                         \
    if (STAGE == KEEP)                                                         \
      kept[slot] = (value);                                                    \
    else if (STAGE == PUT)                                                     \
      st<HINT>((V *)(p) + (i), kept[slot]);                                    \
    else                                                                       \
      st<HINT>((V *)(p) + (i), (value));                                       \
    slot++;                                                                    \
  } while (0)

// BODY for each of a thread's UN accesses of a tile at `base`, in STAGE_.
#define EACH_ACCESS(BODY, UN, STAGE_)                                          \
  _Pragma("unroll") for (int u = 0; u < UN; u++) {                             \
    enum { STAGE = STAGE_ };                                                   \
    const u64 i = base + (u64)u * blockDim.x;                                  \
    BODY;                                                                      \
  }

// Runs BODY over every element, UN accesses of W doubles a thread a tile,
// with cache hint H (and, D, its stores kept to the tile's end): whole
// tiles first (no bounds test between a thread's UN accesses, so that all
// its loads issue before its first store), then the last partial tile,
// then an odd last element.
#define TILED(BODY, UN, W, H, D)                                               \
  enum { HINT = H };                                                           \
  typedef VEC##W V;                                                            \
  const u64 count = n / W;                                                     \
  const u64 stride = (u64)gridDim.x * blockDim.x * UN;                         \
  const u64 last = (u64)(UN - 1) * blockDim.x;                                 \
  u64 base = (u64)blockIdx.x * blockDim.x * UN + threadIdx.x;                  \
  for (; base + last < count; base += stride) {                                \
    V kept[2 * UN];                                                            \
    int slot = 0;                                                              \
    if (D) {                                                                   \
      EACH_ACCESS(BODY, UN, KEEP)                                              \
      slot = 0;                                                                \
      EACH_ACCESS(BODY, UN, PUT)                                               \
    } else {                                                                   \
      EACH_ACCESS(BODY, UN, NOW)                                               \
    }                                                                          \
  }                                                                            \
  _Pragma("unroll") for (int u = 0; u < UN; u++) {                             \
    enum { STAGE = NOW };                                                      \
    V kept[1];                                                                 \
    int slot = 0;                                                              \
    const u64 i = base + (u64)u * blockDim.x;                                  \
    if (i < count) {                                                           \
      BODY;                                                                    \
    }                                                                          \
  }                                                                            \
  if (W == 2 && (n & 1) && blockIdx.x == 0 && threadIdx.x == 0) {              \
    enum { STAGE = NOW };                                                      \
    typedef double V;                                                          \
    V kept[1];                                                                 \
    int slot = 0;                                                              \
    const u64 i = n - 1;                                                       \
    BODY;                                                                      \
  }

// Runs BODY over every element, a thread's 4 accesses a quarter of the
// pairs apart: the grid strides over the first quarter; the pairs past
// four quarters, then the odd last element, go to the first threads.
#define SPREAD(BODY)                                                           \
  enum { HINT = 0, STAGE = NOW };                                              \
  const u64 pairs = n / 2;                                                     \
  const u64 part = pairs / 4;                                                  \
  const u64 stride = (u64)gridDim.x * blockDim.x;                              \
  const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;                \
  for (u64 t = first; t < part; t += stride) {                                 \
    _Pragma("unroll") for (int u = 0; u < 4; u++) {                            \
      const u64 i = t + (u64)u * part;                                         \
      typedef double2 V;                                                       \
      V kept[1];                                                               \
      int slot = 0;                                                            \
      BODY;                                                                    \
    }                                                                          \
  }                                                                            \
  for (u64 i = 4 * part + first; i < pairs; i += stride) {                     \
    typedef double2 V;                                                         \
    V kept[1];                                                                 \
    int slot = 0;                                                              \
    BODY;                                                                      \
  }                                                                            \
  if ((n & 1) && first == 0) {                                                 \
    typedef double V;                                                          \
    V kept[1];                                                                 \
    int slot = 0;                                                              \
    const u64 i = n - 1;                                                       \
    BODY;                                                                      \
  }

// Every build of a kernel: its suffix, its launch bound and its walk over
// the arrays with ARG as the body; D: its hinted stores kept to the end of
// each tile (the reductions store nothing). src/kernels/gpu_builds.rs
// lists the same builds, in this order.
#define BUILDS(KERNEL, NAME, ARG, D)                                           \
  KERNEL(NAME, , 256, TILED(ARG, 4, 2, 0, 0))                                  \
  KERNEL(NAME, _spread, 256, SPREAD(ARG))                                      \
  KERNEL(NAME, _u2, 256, TILED(ARG, 2, 2, 0, 0))                               \
  KERNEL(NAME, _u1, 256, TILED(ARG, 1, 2, 0, 0))                               \
  KERNEL(NAME, _u8, 256, TILED(ARG, 8, 2, 0, 0))                               \
  KERNEL(NAME, _w8, 1024, TILED(ARG, 1, 1, 0, 0))                              \
  KERNEL(NAME, _w8_u4, 1024, TILED(ARG, 4, 1, 0, 0))                           \
  KERNEL(NAME, _cs, 256, TILED(ARG, 4, 2, 1, D))                               \
  KERNEL(NAME, _u1_cs, 1024, TILED(ARG, 1, 2, 1, 0))                           \
  KERNEL(NAME, _w8_cs, 1024, TILED(ARG, 1, 1, 1, 0))                           \
  KERNEL(NAME, _cg, 256, TILED(ARG, 4, 2, 2, D))                               \
  KERNEL(NAME, _u1_cg, 1024, TILED(ARG, 1, 2, 2, 0))

#define STREAM_BUILD(NAME, SUFFIX, BOUND, WALK)                                \
  extern "C" __global__ void __launch_bounds__(BOUND) NAME##SUFFIX(PARAMS) {   \
    WALK                                                                       \
  }
#define STREAM_KERNEL(NAME, BODY) BUILDS(STREAM_BUILD, NAME, BODY, 1)

#define SPLAT(v) splat<V>(v)
#define FILL(NAME, P) STREAM_BUILD(NAME, , 256, TILED(ST(P, i, SPLAT(s)), 4, 2, 0, 0))

// The block's threads' sums into partial[blockIdx.x] (blocks of a power
// of two threads, at most BOUND; a build bound to 256 runs in blocks of
// 256, and its loop is unrolled as before); the host adds the blocks'
// sums, in order, when it reads the result back.
#define REDUCE_BUILD(NAME, SUFFIX, BOUND, WALK)                                \
  extern "C" __global__ void __launch_bounds__(BOUND) NAME##SUFFIX(PARAMS) {   \
    __shared__ double sums[BOUND];                                             \
    double sum = 0.0;                                                          \
    WALK                                                                       \
    sums[threadIdx.x] = sum;                                                   \
    for (unsigned half = (BOUND == 256 ? 256 : blockDim.x) / 2; half > 0;      \
         half /= 2) {                                                          \
      __syncthreads();                                                         \
      if (threadIdx.x < half)                                                  \
        sums[threadIdx.x] += sums[threadIdx.x + half];                         \
    }                                                                          \
    if (threadIdx.x == 0)                                                      \
      partial[blockIdx.x] = sums[0];                                           \
  }
#define REDUCE_KERNEL(NAME, TERM) BUILDS(REDUCE_BUILD, NAME, sum += total(TERM), 0)

// The kernels themselves, every vendor's (src/backend/gpu/kernels.inc).
#include "kernels.inc"
