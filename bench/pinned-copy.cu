// The reference that membw's h2d and d2h are held against in
// bench/gpu-check.sh: cudaMemcpyAsync between a pinned host buffer
// (cudaMallocHost, first touched by this thread, so on the node that
// numactl or the caller's binding puts it) and device memory, REPS copies
// between two CUDA events, best of ROUNDS, one direction at a time.
//
//   nvcc -O2 -o pinned-copy bench/pinned-copy.cu
//   numactl --cpunodebind 0 --membind 0 ./pinned-copy BYTES [REPS ROUNDS]
//
// Prints "h2d GB/s" and "d2h GB/s" (10^9 B/s), one line each.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e = (call);                                                    \
    if (e != cudaSuccess) {                                                    \
      fprintf(stderr, "pinned-copy: %s: %s\n", #call, cudaGetErrorString(e));  \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static double best_gb_s(bool up, void *host, void *dev, size_t bytes, int reps,
                        int rounds, cudaStream_t s) {
  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  double best = 0;
  for (int r = 0; r < rounds + 1; r++) {
    CHECK(cudaEventRecord(start, s));
    for (int i = 0; i < reps; i++) {
      if (up)
        CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
      else
        CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));
    }
    CHECK(cudaEventRecord(end, s));
    CHECK(cudaEventSynchronize(end));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    double gb_s = (double)bytes * reps / (ms / 1e3) / 1e9;
    if (r > 0 && gb_s > best) best = gb_s; // the first round warms up
  }
  return best;
}

int main(int argc, char **argv) {
  size_t bytes = argc > 1 ? strtoull(argv[1], 0, 10) : (size_t)256 << 20;
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  int rounds = argc > 3 ? atoi(argv[3]) : 5;
  void *host, *dev;
  cudaStream_t s;
  CHECK(cudaSetDevice(0));
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMallocHost(&host, bytes));
  memset(host, 1, bytes);
  CHECK(cudaMalloc(&dev, bytes));
  printf("h2d %.2f\n", best_gb_s(true, host, dev, bytes, reps, rounds, s));
  printf("d2h %.2f\n", best_gb_s(false, host, dev, bytes, reps, rounds, s));
  return 0;
}
