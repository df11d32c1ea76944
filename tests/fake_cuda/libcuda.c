/* A fake CUDA driver (libcuda.so.1) for membw's tests: the calls of the
 * driver API that the cuda backend makes, with "device memory" in host
 * memory and each kernel of kernels.cu run by its name on the calling
 * thread. It tests everything of the cuda backend but the GPU: loading,
 * enumeration, the launches' parameters, the copies, the events, the
 * host buffers' registration, reading back and every error path.
 *
 * Set up by the environment:
 *   FAKE_CUDA_DEVICES=N  the GPUs it has (default 1; 0: cuInit says
 *                        CUDA_ERROR_NO_DEVICE)
 *   FAKE_CUDA_FAIL=NAME  the kernel whose launches fail
 *   FAKE_CUDA_WRONG=1    every kernel writes its last element wrong
 *                        (=_u8: only that build's kernels)
 *   FAKE_CUDA_CC=8.0     the compute capability it reports (default 9.0)
 *   FAKE_CUDA_LOG=FILE   each registered host buffer's size, a line each,
 *                        and each launch's kernel and grid
 *   FAKE_CUDA_NO_PEER=I:J devices I and J cannot address each other (no
 *                        P2P: cuDeviceCanAccessPeer says 0 both ways)
 *   FAKE_CUDA_MANAGED=0  no managed memory (the MANAGED_MEMORY attribute)
 *   FAKE_CUDA_PAGEABLE=0 its kernels do not read pageable memory
 *                        (PAGEABLE_MEMORY_ACCESS: no HMM, no ATS)
 *   FAKE_CUDA_ATS=1      pageable memory through the host's page tables
 *                        (a GH200's Grace over NVLink-C2C)
 *   FAKE_CUDA_NUMA_ID=N  its memory is host NUMA node N (NUMA_CONFIG 1,
 *                        NUMA_ID N: a GH200's HBM node)
 *   FAKE_CUDA_BLOCKS=N   blocks of 256 one multiprocessor holds (default 6,
 *                        an H100's at 34 registers a thread); a kernel's
 *                        other builds (NAME_spread, NAME_u2, NAME_u1) run
 *                        as NAME
 *
 * Built by the tests with: cc -shared -fPIC -O2 -o libcuda.so.1 libcuda.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake_gpu/kernels.h"
#include "../fake_gpu/memory.h"
#include "../fake_gpu/pairs.h"

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUstream;
typedef struct { char name[32]; char full[48]; } *CUfunction;
typedef struct { double ms; } *CUevent;

static int initialized;

static int devices(void) {
  const char *n = getenv("FAKE_CUDA_DEVICES");
  return n ? atoi(n) : 1;
}

CUresult cuInit(unsigned flags) {
  (void)flags;
  if (devices() == 0) return NO_DEVICE;
  initialized = 1;
  return SUCCESS;
}
CUresult cuDriverGetVersion(int *v) { *v = 12040; return SUCCESS; }
CUresult cuDeviceGetCount(int *n) {
  if (!initialized) return NOT_INITIALIZED;
  *n = devices();
  const char *log = getenv("FAKE_CUDA_LOG");
  if (log) {
    FILE *out = fopen(log, "a");
    if (out) { fputs("count\n", out); fclose(out); }
  }
  return SUCCESS;
}
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal < 0 || ordinal >= devices()) return INVALID_DEVICE;
  *d = ordinal;
  return SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  snprintf(name, len, "Fake GPU %d", d);
  return SUCCESS;
}
CUresult cuDeviceGetUuid(unsigned char *uuid, CUdevice d) {
  for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)(d * 16 + i);
  return SUCCESS;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
  (void)d;
  *bytes = (size_t)4 << 30;
  return SUCCESS;
}
CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d) {
  snprintf(id, len, "00000000:%02X:00.0", 0x18 + d);
  return SUCCESS;
}
/* Whether variable `name` is set to `value`. */
static int fake_flag(const char *name, const char *value) {
  const char *v = getenv(name);
  return v && strcmp(v, value) == 0;
}
/* FAKE_CUDA_CC=MAJOR.MINOR (default 9.0): part `minor` of it. */
static int cc(int minor) {
  const char *v = getenv("FAKE_CUDA_CC");
  int major = 9, min = 0;
  if (v) sscanf(v, "%d.%d", &major, &min);
  return minor ? min : major;
}
CUresult cuDeviceGetAttribute(int *v, int attribute, CUdevice d) {
  (void)d;
  switch (attribute) {
  case 16: *v = 4; break;          /* multiprocessors */
  case 39: *v = 2048; break;       /* threads per multiprocessor */
  case 38: *v = 1 << 20; break;    /* L2 bytes */
  case 75: *v = cc(0); break;      /* compute capability */
  case 76: *v = cc(1); break;
  case 83: *v = !fake_flag("FAKE_CUDA_MANAGED", "0"); break; /* managed memory */
  case 88: *v = !fake_flag("FAKE_CUDA_PAGEABLE", "0"); break; /* pageable access */
  case 89: *v = 1; break;                                   /* concurrent managed */
  case 100: *v = fake_flag("FAKE_CUDA_ATS", "1"); break;    /* host page tables */
  case 145: *v = getenv("FAKE_CUDA_NUMA_ID") != NULL; break; /* NUMA config: a node */
  case 146: *v = getenv("FAKE_CUDA_NUMA_ID") ? atoi(getenv("FAKE_CUDA_NUMA_ID")) : -1; break;
  default: *v = 0;
  }
  return SUCCESS;
}
CUresult cuGetErrorName(CUresult e, const char **s) {
  *s = e == LAUNCH_FAILED ? "CUDA_ERROR_LAUNCH_FAILED" : "CUDA_ERROR_FAKE";
  return SUCCESS;
}
CUresult cuGetErrorString(CUresult e, const char **s) { return cuGetErrorName(e, s); }

static int context;
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  (void)d;
  *c = &context;
  return SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return SUCCESS; }
CUresult cuCtxSynchronize(void) { return SUCCESS; }

static int module;
CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  /* The PTX membw carries names its kernels as ".entry NAME(". */
  if (!strstr((const char *)image, ".visible .entry")) return INVALID_VALUE;
  *m = &module;
  return SUCCESS;
}
/* A kernel's other builds run as its family does. */
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  (void)m;
  *f = calloc(1, sizeof **f);
  fake_kernel_family((*f)->name, sizeof (*f)->name, name);
  snprintf((*f)->full, sizeof (*f)->full, "%s", name);
  return SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) { (void)m; return SUCCESS; }

static int streams;
CUresult cuStreamCreate(CUstream *s, unsigned flags) { (void)flags; *s = &streams; return SUCCESS; }
CUresult cuStreamDestroy_v2(CUstream s) { (void)s; return SUCCESS; }
CUresult cuStreamSynchronize(CUstream s) { (void)s; return SUCCESS; }
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) { (void)s; (void)e; (void)f; return SUCCESS; }

CUresult cuEventCreate(CUevent *e, unsigned flags) { (void)flags; *e = calloc(1, sizeof **e); return SUCCESS; }
CUresult cuEventDestroy_v2(CUevent e) { free(e); return SUCCESS; }
CUresult cuEventRecord(CUevent e, CUstream s) { (void)s; e->ms = fake_event_ms(); return SUCCESS; }
CUresult cuEventSynchronize(CUevent e) { (void)e; return SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  *ms = (float)(end->ms - start->ms);
  return SUCCESS;
}

static CUresult allocate(CUdeviceptr *p, size_t bytes, enum fake_kind kind) {
  void *m = malloc(bytes);
  if (!m) return OUT_OF_MEMORY;
  if (!fake_memory_add(m, bytes, kind)) { free(m); return OUT_OF_MEMORY; }
  *p = (CUdeviceptr)(uintptr_t)m;
  return SUCCESS;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) { return allocate(p, bytes, FAKE_DEVICE); }
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t bytes, unsigned flags) {
  if (flags != 1) return INVALID_VALUE; /* CU_MEM_ATTACH_GLOBAL */
  return allocate(p, bytes, FAKE_MANAGED);
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  fake_memory_forget((void *)(uintptr_t)p);
  free((void *)(uintptr_t)p);
  return SUCCESS;
}
/* CUDA 11's signature, which every driver keeps. */
CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t bytes, CUdevice d, CUstream s) {
  (void)s;
  size_t room = 0;
  if (fake_memory_kind((void *)(uintptr_t)p, &room) != FAKE_MANAGED || bytes > room) return INVALID_VALUE;
  if (d < 0 || d >= devices()) return INVALID_DEVICE;
  const char *log = getenv("FAKE_CUDA_LOG");
  if (log) {
    FILE *f = fopen(log, "a");
    if (f) { fprintf(f, "prefetched %zu bytes to %d\n", bytes, d); fclose(f); }
  }
  return SUCCESS;
}
/* CU_POINTER_ATTRIBUTE_IS_MANAGED (8) and _MEMORY_TYPE (2: HOST 1,
 * DEVICE 2); memory the driver was never told of is CUDA_ERROR_INVALID_VALUE. */
CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr p) {
  enum fake_kind kind = fake_memory_kind((void *)(uintptr_t)p, NULL);
  if (!kind) return INVALID_VALUE;
  switch (attribute) {
  case 8: *(unsigned *)data = kind == FAKE_MANAGED; return SUCCESS;
  case 2: *(unsigned *)data = kind == FAKE_HOST ? 1 : 2; return SUCCESS;
  default: return INVALID_VALUE;
  }
}
CUresult cuMemcpyDtoH_v2(void *to, CUdeviceptr from, size_t bytes) {
  memcpy(to, (void *)(uintptr_t)from, bytes);
  return SUCCESS;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr to, const void *from, size_t bytes, CUstream s) {
  (void)s;
  memcpy((void *)(uintptr_t)to, from, bytes);
  return SUCCESS;
}
CUresult cuMemcpyDtoHAsync_v2(void *to, CUdeviceptr from, size_t bytes, CUstream s) {
  (void)s;
  memcpy(to, (void *)(uintptr_t)from, bytes);
  return SUCCESS;
}
/* Peer copies: every "device" is this process's memory, so a copy is a
 * memcpy; what is checked is that the peer was asked and enabled. */
CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) {
  if (d < 0 || d >= devices() || peer < 0 || peer >= devices()) return INVALID_DEVICE;
  *can = fake_peer_reachable(getenv("FAKE_CUDA_NO_PEER"), d, peer);
  return SUCCESS;
}
CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  const char *log = getenv("FAKE_CUDA_LOG");
  if (flags != 0 || !peer) return INVALID_VALUE;
  if (log) {
    FILE *f = fopen(log, "a");
    if (f) { fprintf(f, "peer access enabled\n"); fclose(f); }
  }
  return SUCCESS;
}
CUresult cuMemcpyAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream s) {
  (void)s;
  if (!to || !from) return INVALID_VALUE;
  memcpy((void *)(uintptr_t)to, (void *)(uintptr_t)from, bytes);
  return SUCCESS;
}
CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags) {
  const char *log = getenv("FAKE_CUDA_LOG");
  if (!p || !bytes || !(flags & 2)) return INVALID_VALUE;
  if (!fake_memory_add(p, bytes, FAKE_HOST)) return OUT_OF_MEMORY;
  if (log) {
    FILE *f = fopen(log, "a");
    if (f) {
      fprintf(f, "registered %zu bytes\n", bytes);
      fclose(f);
    }
  }
  return SUCCESS;
}
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags) {
  (void)flags;
  *d = (CUdeviceptr)(uintptr_t)p;
  return SUCCESS;
}
CUresult cuMemHostUnregister(void *p) { fake_memory_forget(p); return SUCCESS; }

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction f, int block,
                                                     size_t shared) {
  (void)f; (void)shared;
  if (block != 256 && block != 1024) return INVALID_VALUE;
  const char *n = getenv("FAKE_CUDA_BLOCKS");
  *blocks = (n ? atoi(n) : 6) * 256 / block;
  return SUCCESS;
}

/* kernels.cu's kernels, element by element on this thread (fake_gpu). */
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        CUstream s, void **params, void **extra) {
  (void)gy; (void)gz; (void)by; (void)bz; (void)shared; (void)s; (void)extra;
  const char *fail = getenv("FAKE_CUDA_FAIL");
  if (fail && strcmp(fail, f->name) == 0) return LAUNCH_FAILED;
  if (gx == 0 || (bx != 256 && bx != 1024)) return INVALID_VALUE;
  const char *log = getenv("FAKE_CUDA_LOG");
  if (log) {
    FILE *out = fopen(log, "a");
    if (out) { fprintf(out, "launch %s %u %u %s\n", f->name, gx, bx, f->full); fclose(out); }
  }
  if (fake_run_kernel(f->name, params, gx, fake_wrong(getenv("FAKE_CUDA_WRONG"), f->full)) != 0) return NOT_FOUND;
  return SUCCESS;
}
