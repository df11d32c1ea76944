// membw's kernels on an NVIDIA GPU: the same recurrences as the CPU's
// (src/kernels/table.rs), on doubles, one launch per repetition.
//
// Compiled to PTX by tools/cuda_ptx.py with a pinned NVRTC; the driver
// compiles the PTX for the GPU it finds when the module loads. Edit this
// file, run the script, and commit both: CI checks that they match.
//
// Every kernel has the same parameters, so that the host launches each
// the same way: the six arrays (those it does not use are null), the
// reductions' per-block sums, the scalar and the element count.
//
// Access pattern: 16-byte accesses (double2); each thread owns UNROLL of
// them per tile, a block's width apart, so that a warp's accesses
// coalesce and every thread has UNROLL loads in flight (restrict lets the
// compiler issue them all before the first store); tiles repeat over the
// grid, which the host sizes from the GPU's multiprocessors. An odd last
// element is the first thread's, as a plain double.
//
// Every kernel comes in two builds: NAME, as above, and NAME_spread, whose
// threads' UNROLL accesses are a quarter of the array apart (the blocks
// striding over the first quarter, as BabelStream's grid-stride loop
// does): UNROLL streams of each array in flight rather than one. The host
// times both, in each launch shape, and keeps the fastest.

typedef unsigned long long u64;

#define UNROLL 4
#define BLOCK 256

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

#define PARAMS                                                                 \
  double *__restrict__ a, double *__restrict__ b, double *__restrict__ c,      \
      double *__restrict__ d, double *__restrict__ h, double *__restrict__ r,  \
      double *__restrict__ partial, const double s, const u64 n

// Element i of array p, as V (double2: elements 2i and 2i+1).
#define LD(p, i) (((const V *)(p))[i])
#define ST(p, i, value) (((V *)(p))[i] = (value))

// Runs BODY over every element, UN accesses a thread a tile: on pairs,
// whole tiles first (no bounds test between a thread's UN accesses, so
// that all its loads issue before its first store), then the last partial
// tile, then the odd last element.
#define EACH_ELEMENT_N(BODY, UN)                                               \
  const u64 pairs = n / 2;                                                     \
  const u64 stride = (u64)gridDim.x * blockDim.x * UN;                         \
  const u64 last = (u64)(UN - 1) * blockDim.x;                                 \
  u64 base = (u64)blockIdx.x * blockDim.x * UN + threadIdx.x;                  \
  for (; base + last < pairs; base += stride) {                                \
    _Pragma("unroll") for (int u = 0; u < UN; u++) {                           \
      const u64 i = base + (u64)u * blockDim.x;                                \
      typedef double2 V;                                                       \
      BODY;                                                                    \
    }                                                                          \
  }                                                                            \
  _Pragma("unroll") for (int u = 0; u < UN; u++) {                             \
    const u64 i = base + (u64)u * blockDim.x;                                  \
    if (i < pairs) {                                                           \
      typedef double2 V;                                                       \
      BODY;                                                                    \
    }                                                                          \
  }                                                                            \
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) {                        \
    typedef double V;                                                          \
    const u64 i = n - 1;                                                       \
    BODY;                                                                      \
  }
#define EACH_ELEMENT(BODY) EACH_ELEMENT_N(BODY, UNROLL)

// Runs BODY over every element, a thread's UNROLL accesses a quarter of
// the pairs apart: the grid strides over the first quarter; the pairs past
// UNROLL quarters, then the odd last element, go to the first threads.
#define EACH_ELEMENT_SPREAD(BODY)                                              \
  const u64 pairs = n / 2;                                                     \
  const u64 part = pairs / UNROLL;                                             \
  const u64 stride = (u64)gridDim.x * blockDim.x;                              \
  const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;                \
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

#define STREAM_KERNEL(NAME, BODY)                                              \
  extern "C" __global__ void __launch_bounds__(BLOCK) NAME(PARAMS) {           \
    EACH_ELEMENT(BODY)                                                         \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(BLOCK) NAME##_spread(PARAMS) {  \
    EACH_ELEMENT_SPREAD(BODY)                                                  \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(BLOCK) NAME##_u2(PARAMS) {      \
    EACH_ELEMENT_N(BODY, 2)                                                    \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(BLOCK) NAME##_u1(PARAMS) {      \
    EACH_ELEMENT_N(BODY, 1)                                                    \
  }

STREAM_KERNEL(copy, ST(c, i, LD(a, i)))
STREAM_KERNEL(scale, ST(b, i, s * LD(c, i)))
STREAM_KERNEL(add, ST(c, i, LD(a, i) + LD(b, i)))
STREAM_KERNEL(triad, ST(a, i, LD(b, i) + s * LD(c, i)))
STREAM_KERNEL(write, ST(c, i, splat<V>(s)))
STREAM_KERNEL(init, ST(a, i, splat<V>(s)))
STREAM_KERNEL(update, ST(a, i, s * LD(a, i)))
STREAM_KERNEL(daxpy, ST(a, i, LD(a, i) + s * LD(b, i)))
STREAM_KERNEL(striad, ST(a, i, LD(b, i) + LD(c, i) * LD(d, i)))
STREAM_KERNEL(sdaxpy, ST(a, i, LD(a, i) + LD(b, i) * LD(c, i)))
STREAM_KERNEL(nstream, ST(a, i, LD(a, i) + (LD(b, i) + s * LD(c, i))))
// The host link moved by the GPU's own threads: h and r are host memory
// registered with the driver and mapped into the GPU's address space.
STREAM_KERNEL(h2d_kernel, ST(a, i, LD(h, i)))
STREAM_KERNEL(d2h_kernel, ST(r, i, LD(b, i)))
STREAM_KERNEL(bidir_kernel, ST(a, i, LD(h, i)); ST(r, i, LD(b, i)))
// Every element of one array set to s: first touch and the timing test's
// a = 2a start from here (`update` with s = 2 is the rest).
STREAM_KERNEL(fill_a, ST(a, i, splat<V>(s)))
STREAM_KERNEL(fill_b, ST(b, i, splat<V>(s)))
STREAM_KERNEL(fill_c, ST(c, i, splat<V>(s)))
STREAM_KERNEL(fill_d, ST(d, i, splat<V>(s)))

// Each block's sum into partial[blockIdx.x]; the host adds the blocks'
// sums, in order, when it reads the result back.
// The block's threads' sums into partial[blockIdx.x].
#define BLOCK_SUM                                                              \
  sums[threadIdx.x] = sum;                                                     \
  for (unsigned half = BLOCK / 2; half > 0; half /= 2) {                       \
    __syncthreads();                                                           \
    if (threadIdx.x < half)                                                    \
      sums[threadIdx.x] += sums[threadIdx.x + half];                           \
  }                                                                            \
  if (threadIdx.x == 0)                                                        \
    partial[blockIdx.x] = sums[0];

#define REDUCE_KERNEL(NAME, TERM)                                              \
  extern "C" __global__ void __launch_bounds__(BLOCK) NAME(PARAMS) {           \
    __shared__ double sums[BLOCK];                                             \
    double sum = 0.0;                                                          \
    EACH_ELEMENT(sum += total(TERM))                                           \
    BLOCK_SUM                                                                  \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(BLOCK) NAME##_spread(PARAMS) {  \
    __shared__ double sums[BLOCK];                                             \
    double sum = 0.0;                                                          \
    EACH_ELEMENT_SPREAD(sum += total(TERM))                                    \
    BLOCK_SUM                                                                  \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(BLOCK) NAME##_u2(PARAMS) {      \
    __shared__ double sums[BLOCK];                                             \
    double sum = 0.0;                                                          \
    EACH_ELEMENT_N(sum += total(TERM), 2)                                      \
    BLOCK_SUM                                                                  \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(BLOCK) NAME##_u1(PARAMS) {      \
    __shared__ double sums[BLOCK];                                             \
    double sum = 0.0;                                                          \
    EACH_ELEMENT_N(sum += total(TERM), 1)                                      \
    BLOCK_SUM                                                                  \
  }

REDUCE_KERNEL(read, LD(a, i))
REDUCE_KERNEL(dot, LD(a, i) * LD(b, i))
