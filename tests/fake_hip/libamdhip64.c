/* A fake HIP runtime (libamdhip64.so.5) for membw's tests: the calls of
 * HIP that the hip backend makes, with "device memory" in host memory and
 * each kernel of kernels.cl run by its name on the calling thread
 * (tests/fake_gpu/kernels.h, shared with the fake CUDA driver). It tests
 * everything of the hip backend but the GPU: loading (it is the oldest
 * name membw tries, so the newer ones are tried first), enumeration, the
 * choice of code object by the GPU's target, the launches' parameters
 * (the grid passed as the last one), the copies, the events, the host
 * buffers' registration, reading back and every error path.
 *
 * Set up by the environment:
 *   FAKE_HIP_DEVICES=N     the GPUs (GCDs) it has (default 1; 0: hipInit
 *                          says hipErrorNoDevice)
 *   FAKE_HIP_NAME=TEXT     what hipDeviceGetName says (default "AMD
 *                          Instinct MI250X")
 *   FAKE_HIP_TARGET=MACH   the code object target it loads: gfx90a
 *                          (default), gfx942, gfx1100, or another it has
 *                          none for (every object is refused)
 *   FAKE_HIP_APU=1         an APU (hipDeviceAttributeIntegrated: MI300A)
 *   FAKE_HIP_FAIL=NAME     the kernel whose launches fail
 *   FAKE_HIP_WRONG=1       every kernel writes its last element wrong
 *                          (=_u8: only that build's kernels)
 *   FAKE_HIP_LOG=FILE      each registered host buffer's size, the code
 *                          object loaded, and each launch's kernel, grid
 *                          and its blocks argument, a line each
 *   FAKE_HIP_NO_PEER=I:J   devices I and J cannot address each other
 *   HSA_XNACK=1            XNACK on, as ROCm reads it: its kernels read
 *                          pageable memory (hipDeviceAttributePageableMemoryAccess)
 *   FAKE_HIP_CRASH=1       hipInit crashes (SIGSEGV), as ROCm 5.4.3's did
 *                          after dlopen (ROCm/hip issue 3180)
 *
 * Built by the tests with: cc -shared -fPIC -O2 -o libamdhip64.so.5 libamdhip64.c
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake_gpu/kernels.h"
#include "../fake_gpu/memory.h"
#include "../fake_gpu/pairs.h"

typedef int hipError_t;
typedef struct { char name[32]; char full[48]; } *hipFunction_t;
typedef struct { double ms; } *hipEvent_t;
typedef void *hipModule_t, *hipStream_t;

/* HIP's own, beside the shared codes of kernels.h. */
enum { NO_BINARY_FOR_GPU = 209 };

static int initialized, current;

static int devices(void) {
  const char *n = getenv("FAKE_HIP_DEVICES");
  return n ? atoi(n) : 1;
}

static void say(const char *fmt, ...) {
  const char *log = getenv("FAKE_HIP_LOG");
  if (!log) return;
  FILE *f = fopen(log, "a");
  if (!f) return;
  va_list args;
  va_start(args, fmt);
  vfprintf(f, fmt, args);
  va_end(args);
  fclose(f);
}

const char *hipGetErrorName(hipError_t e) {
  switch (e) {
  case NO_BINARY_FOR_GPU: return "hipErrorNoBinaryForGpu";
  case LAUNCH_FAILED: return "hipErrorLaunchFailure";
  case INVALID_VALUE: return "hipErrorInvalidValue";
  default: return "hipErrorFake";
  }
}

hipError_t hipInit(unsigned flags) {
  if (flags != 0) return INVALID_VALUE;
  if (getenv("FAKE_HIP_CRASH")) *(volatile int *)0 = 0; /* a real fault, not raise(): a handler may return from that */
  if (devices() == 0) return NO_DEVICE;
  initialized = 1;
  return SUCCESS;
}
hipError_t hipGetDeviceCount(int *n) {
  if (!initialized) return NOT_INITIALIZED;
  *n = devices();
  return SUCCESS;
}
hipError_t hipDriverGetVersion(int *v) { *v = 60241134; return SUCCESS; }
hipError_t hipDeviceGetName(char *name, int len, int d) {
  const char *n = getenv("FAKE_HIP_NAME");
  if (d < 0 || d >= devices()) return INVALID_DEVICE;
  snprintf(name, len, "%s", n ? n : "AMD Instinct MI250X");
  return SUCCESS;
}
hipError_t hipDeviceTotalMem(size_t *bytes, int d) {
  if (d < 0 || d >= devices()) return INVALID_DEVICE;
  *bytes = (size_t)64 << 30;
  return SUCCESS;
}
hipError_t hipDeviceGetPCIBusId(char *id, int len, int d) {
  if (d < 0 || d >= devices()) return INVALID_DEVICE;
  snprintf(id, len, "0000:%02x:00.0", 0xc1 + d);
  return SUCCESS;
}
hipError_t hipDeviceGetAttribute(int *v, int attribute, int d) {
  if (d < 0 || d >= devices()) return INVALID_DEVICE;
  switch (attribute) {
  case 16: *v = getenv("FAKE_HIP_APU") != NULL; break; /* integrated */
  case 19: *v = 8 << 20; break;                        /* L2 bytes */
  case 59: *v = 4096; break;                           /* memory bus width, bits */
  case 60: *v = 1600000; break;                        /* memory clock, kHz */
  case 63: *v = getenv("FAKE_HIP_CUS") ? atoi(getenv("FAKE_HIP_CUS")) : 110; break; /* compute units */
  case 9: *v = 1; break;                               /* concurrent managed access */
  case 24: *v = 1; break;                              /* managed memory */
  case 65: *v = getenv("HSA_XNACK") && strcmp(getenv("HSA_XNACK"), "1") == 0; break; /* pageable */
  case 66: *v = getenv("FAKE_HIP_APU") != NULL; break; /* host page tables */
  case 92: *v = 0; break;                              /* host NUMA node */
  default: return INVALID_VALUE;
  }
  return SUCCESS;
}
hipError_t hipSetDevice(int d) {
  if (d < 0 || d >= devices()) return INVALID_DEVICE;
  current = d;
  return SUCCESS;
}
hipError_t hipDeviceSynchronize(void) { return SUCCESS; }

/* Loads a code object only for its target, as HIP does: the ELF header's
 * e_flags hold EF_AMDGPU_MACH (gfx90a 0x3f, gfx942 0x4c, gfx1100 0x41). */
static int module;
hipError_t hipModuleLoadData(hipModule_t *m, const void *image) {
  const unsigned char *elf = image;
  const char *want = getenv("FAKE_HIP_TARGET");
  unsigned mach = 0x3f;
  if (want && !strcmp(want, "gfx942")) mach = 0x4c;
  else if (want && !strcmp(want, "gfx1100")) mach = 0x41;
  else if (want && strcmp(want, "gfx90a")) mach = 0xfff;
  if (memcmp(elf, "\177ELF", 4) != 0) return INVALID_VALUE;
  uint32_t flags;
  memcpy(&flags, elf + 48, 4);
  if ((flags & 0xff) != mach) return NO_BINARY_FOR_GPU;
  say("loaded the %s code object\n", want ? want : "gfx90a");
  *m = &module;
  return SUCCESS;
}
hipError_t hipModuleUnload(hipModule_t m) { return m == &module ? SUCCESS : INVALID_VALUE; }
hipError_t hipModuleGetFunction(hipFunction_t *f, hipModule_t m, const char *name) {
  if (m != &module) return INVALID_VALUE;
  /* kernels.cl has no L2-only (`.cg`) builds: AMD's GPUs have no such hint. */
  size_t n = strlen(name);
  if (n > 3 && !strcmp(name + n - 3, "_cg")) return NOT_FOUND;
  *f = calloc(1, sizeof **f);
  fake_kernel_family((*f)->name, sizeof (*f)->name, name);
  snprintf((*f)->full, sizeof (*f)->full, "%s", name);
  return SUCCESS;
}
hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, hipFunction_t f,
                                                              int block, size_t shared) {
  (void)f; (void)shared;
  if (block != 256) return INVALID_VALUE;
  *blocks = 8;
  return SUCCESS;
}

static int streams;
hipError_t hipStreamCreateWithFlags(hipStream_t *s, unsigned flags) {
  if (flags != 1) return INVALID_VALUE; /* non-blocking */
  *s = &streams;
  return SUCCESS;
}
hipError_t hipStreamDestroy(hipStream_t s) { (void)s; return SUCCESS; }
hipError_t hipStreamSynchronize(hipStream_t s) { (void)s; return SUCCESS; }
hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned f) { (void)s; (void)e; return f ? INVALID_VALUE : SUCCESS; }

hipError_t hipEventCreate(hipEvent_t *e) { *e = calloc(1, sizeof **e); return SUCCESS; }
hipError_t hipEventDestroy(hipEvent_t e) { free(e); return SUCCESS; }
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) { (void)s; e->ms = fake_event_ms(); return SUCCESS; }
hipError_t hipEventSynchronize(hipEvent_t e) { (void)e; return SUCCESS; }
hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t end) {
  *ms = (float)(end->ms - start->ms);
  return SUCCESS;
}

static hipError_t allocate(void **p, size_t bytes, enum fake_kind kind) {
  *p = malloc(bytes);
  if (!*p) return OUT_OF_MEMORY;
  if (!fake_memory_add(*p, bytes, kind)) { free(*p); return OUT_OF_MEMORY; }
  return SUCCESS;
}
hipError_t hipMalloc(void **p, size_t bytes) { return allocate(p, bytes, FAKE_DEVICE); }
hipError_t hipMallocManaged(void **p, size_t bytes, unsigned flags) {
  if (flags != 1) return INVALID_VALUE; /* hipMemAttachGlobal */
  return allocate(p, bytes, FAKE_MANAGED);
}
hipError_t hipFree(void *p) { fake_memory_forget(p); free(p); return SUCCESS; }
hipError_t hipMemPrefetchAsync(const void *p, size_t bytes, int d, hipStream_t s) {
  (void)s;
  size_t room = 0;
  if (fake_memory_kind(p, &room) != FAKE_MANAGED || bytes > room) return INVALID_VALUE;
  if (d < 0 || d >= devices()) return INVALID_DEVICE;
  say("prefetched %zu bytes to %d\n", bytes, d);
  return SUCCESS;
}
/* HIP_POINTER_ATTRIBUTE_IS_MANAGED (8) and _MEMORY_TYPE (2), in ROCm 5's
 * hipMemoryType (host 0, device 1), as this library is .so.5; memory it
 * was never told of is hipErrorInvalidValue. */
hipError_t hipPointerGetAttribute(void *data, int attribute, void *p) {
  enum fake_kind kind = fake_memory_kind(p, NULL);
  if (!kind) return INVALID_VALUE;
  switch (attribute) {
  case 8: *(unsigned *)data = kind == FAKE_MANAGED; return SUCCESS;
  case 2: *(unsigned *)data = kind == FAKE_HOST ? 0 : 1; return SUCCESS;
  default: return INVALID_VALUE;
  }
}
hipError_t hipHostRegister(void *p, size_t bytes, unsigned flags) {
  if (!p || !bytes || !(flags & 2)) return INVALID_VALUE; /* mapped */
  if (!fake_memory_add(p, bytes, FAKE_HOST)) return OUT_OF_MEMORY;
  say("registered %zu bytes\n", bytes);
  return SUCCESS;
}
hipError_t hipHostGetDevicePointer(void **d, void *p, unsigned flags) {
  if (flags != 0) return INVALID_VALUE;
  *d = p;
  return SUCCESS;
}
hipError_t hipHostUnregister(void *p) { fake_memory_forget(p); return SUCCESS; }
/* Every "device" is this process's memory: a copy is a memcpy, of any
 * kind (1 host to device, 2 device to host, 3 device to device). */
hipError_t hipMemcpyAsync(void *to, const void *from, size_t bytes, int kind, hipStream_t s) {
  (void)s;
  if (!to || !from || kind < 1 || kind > 3) return INVALID_VALUE;
  memcpy(to, from, bytes);
  return SUCCESS;
}
hipError_t hipMemcpy(void *to, const void *from, size_t bytes, int kind) {
  return hipMemcpyAsync(to, from, bytes, kind, 0);
}
hipError_t hipDeviceCanAccessPeer(int *can, int d, int peer) {
  if (d < 0 || d >= devices() || peer < 0 || peer >= devices()) return INVALID_DEVICE;
  *can = fake_peer_reachable(getenv("FAKE_HIP_NO_PEER"), d, peer);
  return SUCCESS;
}
hipError_t hipDeviceEnablePeerAccess(int peer, unsigned flags) {
  if (flags != 0 || peer == current || peer < 0 || peer >= devices()) return INVALID_VALUE;
  say("peer access enabled\n");
  return SUCCESS;
}

/* kernels.cl's kernels: CUDA's nine parameters, then the grid in blocks,
 * which must be the launch's. */
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                 hipStream_t s, void **params, void **extra) {
  (void)s;
  const char *fail = getenv("FAKE_HIP_FAIL");
  if (fail && strcmp(fail, f->name) == 0) return LAUNCH_FAILED;
  if (gx == 0 || gy != 1 || gz != 1 || bx != 256 || by != 1 || bz != 1 || shared || extra)
    return INVALID_VALUE;
  unsigned blocks = *(unsigned *)params[9];
  say("launch %s %u blocks=%u\n", f->name, gx, blocks);
  if (blocks != gx) return INVALID_VALUE;
  if (fake_run_kernel(f->name, params, gx, fake_wrong(getenv("FAKE_HIP_WRONG"), f->full)) != 0) return NOT_FOUND;
  return SUCCESS;
}
