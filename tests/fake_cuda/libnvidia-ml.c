/* A fake NVML (libnvidia-ml.so.1) for membw's tests: the calls the cuda
 * backend makes of NVML, over the same GPUs as the fake CUDA driver
 * (libcuda.c: FAKE_CUDA_DEVICES GPUs, GPU d at PCI 0000:(18+d):00.0), found
 * by PCI address as on a real node. Each GPU is an H100 SXM as NVML
 * describes one: 2619 MHz memory clock, 5120-bit bus (3352 GB/s), ECC on.
 *
 * Set up by the environment:
 *   FAKE_CUDA_DEVICES=N      the GPUs (default 1)
 *   FAKE_NVML_FAIL=1         nvmlInit_v2 says the driver is not loaded
 *   FAKE_NVML_ECC=D:CE:UE    GPU D counts CE corrected and UE uncorrected
 *                            volatile ECC errors (every other GPU none)
 *   FAKE_NVML_ECC_OFF=1      ECC is off on every GPU
 *   FAKE_NVML_RETIRED=D:S:B  GPU D has S pages retired for single-bit and B
 *                            for double-bit errors
 *   FAKE_NVML_RETIRE_PENDING=D  a page of GPU D waits for a reset
 *   FAKE_NVML_REMAP=D:U:P:F  GPU D has U rows remapped for uncorrectable
 *                            errors, P (0/1) a remapping pending, F (0/1)
 *                            a remapping failed
 *   FAKE_NVML_NO_REMAP=1     row remapping is not supported (before Ampere)
 *   FAKE_NVML_RECOVERY=D:A   GPU D's recovery action field is A (nvml.h:
 *                            0 none, 1 GPU reset, 2 node reboot, 3 drain
 *                            P2P, 4 drain and reset); unsupported elsewhere
 *   FAKE_NVML_POWER_CAPPED=D GPU D's clocks are held back by its power cap
 *                            the whole time: its power violation counter
 *                            grows with the wall clock
 *   FAKE_NVML_NVLINK=A-B:L,... GPUs A and B are joined by L NVLink links
 *                            (of 18 a GPU has; the others are down), each
 *                            25781 MB/s each way
 *   FAKE_NVML_C2C=L:MBPS     every GPU has L NVLink-C2C links to its CPU,
 *                            each MBPS MB/s each way when active (a GH200:
 *                            10:45000); none without it
 *   FAKE_NVML_C2C_DOWN=D:K   K of GPU D's C2C links are inactive (the last
 *                            ones): their status 0, their rate unsupported
 *
 * Built by the tests with: cc -shared -fPIC -O2 -o libnvidia-ml.so.1 libnvidia-ml.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../fake_gpu/pairs.h"

typedef int nvmlReturn_t;
typedef struct fake_device *nvmlDevice_t;
enum {
  SUCCESS = 0,
  UNINITIALIZED = 1,
  INVALID_ARGUMENT = 2,
  NOT_SUPPORTED = 3,
  NOT_FOUND = 6,
  INSUFFICIENT_SIZE = 7,
  DRIVER_NOT_LOADED = 9,
};
enum { CLOCK_SM = 1, CLOCK_MEM = 2 };
enum { POLICY_POWER = 0 };
enum { VALUE_UNSIGNED_INT = 1 };
enum { MAX_LINKS = 18 };
/* nvml.h's field ids. */
enum {
  FI_NVLINK_SPEED_MBPS_COMMON = 90,
  FI_NVLINK_LINK_COUNT = 91,
  FI_C2C_LINK_COUNT = 170,
  FI_C2C_LINK_GET_STATUS = 171,
  FI_C2C_LINK_GET_MAX_BW = 172,
  FI_GPU_RECOVERY_ACTION = 230,
};

typedef struct {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef struct {
  unsigned long long referenceTime, violationTime;
} nvmlViolationTime_t;
typedef union {
  double dVal;
  int siVal;
  unsigned uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  unsigned short usVal;
} nvmlValue_t;
typedef struct {
  unsigned fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

struct fake_device {
  int index;
};
static struct fake_device all[64];
static int initialized;

static int devices(void) {
  const char *n = getenv("FAKE_CUDA_DEVICES");
  int d = n ? atoi(n) : 1;
  return d < 0 ? 0 : d > 64 ? 64 : d;
}

/* The numbers after "D:" in variable `name` where D is `d`: how many read. */
static int setting(const char *name, int d, unsigned long long *v, int n) {
  const char *s = getenv(name);
  if (!s) return 0;
  char *end;
  if (strtol(s, &end, 10) != d || *end != ':') return 0;
  int got = 0;
  for (s = end + 1; got < n && *s; got++) {
    v[got] = strtoull(s, &end, 10);
    if (end == s) break;
    s = *end == ':' ? end + 1 : end;
  }
  return got;
}

static int is_device(nvmlDevice_t d) {
  return initialized && d && d >= all && d < all + devices();
}

/* The NVLink links between GPUs a and b (FAKE_NVML_NVLINK). */
static int links_between(int a, int b) {
  return fake_links_between(getenv("FAKE_NVML_NVLINK"), a, b);
}

/* The GPU at the other end of link `link` of GPU d, or -1 (down): the
 * links go to the peers in order, as many to each as it shares. */
static int peer_of_link(int d, unsigned link) {
  unsigned first = 0;
  for (int p = 0; p < devices(); p++) {
    if (p == d) continue;
    unsigned l = (unsigned)links_between(d, p);
    if (link < first + l) return p;
    first += l;
  }
  return -1;
}

nvmlReturn_t nvmlInit_v2(void) {
  if (getenv("FAKE_NVML_FAIL")) return DRIVER_NOT_LOADED;
  for (int i = 0; i < 64; i++) all[i].index = i;
  initialized = 1;
  return SUCCESS;
}
nvmlReturn_t nvmlShutdown(void) {
  initialized = 0;
  return SUCCESS;
}
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned len) {
  if (!initialized) return UNINITIALIZED;
  snprintf(version, len, "570.172.08");
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n) {
  if (!initialized) return UNINITIALIZED;
  *n = (unsigned)devices();
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d) {
  if (!initialized) return UNINITIALIZED;
  if (i >= (unsigned)devices()) return INVALID_ARGUMENT;
  *d = &all[i];
  return SUCCESS;
}
/* "0000:18:00.0" or "00000000:18:00.0": the bus between the last colons. */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *d) {
  if (!initialized) return UNINITIALIZED;
  const char *last = strrchr(id, ':');
  if (!last || last == id) return NOT_FOUND;
  const char *bus = last - 1;
  while (bus > id && bus[-1] != ':') bus--;
  int i = (int)strtol(bus, NULL, 16) - 0x18;
  if (i < 0 || i >= devices()) return NOT_FOUND;
  *d = &all[i];
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  pci->bus = 0x18 + (unsigned)d->index;
  pci->pciDeviceId = 0x233010de;
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
  snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned *mhz) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  *mhz = type == CLOCK_MEM ? 2619 : 1980;
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz) {
  return nvmlDeviceGetMaxClockInfo(d, type, mhz);
}
nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t d, unsigned *bits) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  *bits = 5120;
  return SUCCESS;
}

static int power_capped(nvmlDevice_t d) {
  const char *s = getenv("FAKE_NVML_POWER_CAPPED");
  return s && atoi(s) == d->index;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  *r = power_capped(d) ? 0x4 : 0; /* nvml.h: SW_POWER_CAP */
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t d, int policy, nvmlViolationTime_t *v) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  unsigned long long now = (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
  v->referenceTime = now / 1000;
  v->violationTime = policy == POLICY_POWER && power_capped(d) ? now : 0;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *current, int *pending) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  *current = *pending = getenv("FAKE_NVML_ECC_OFF") ? 0 : 1;
  return SUCCESS;
}
/* kind 0 corrected, 1 uncorrected; counter 0 volatile, 1 aggregate. */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int kind, int counter, unsigned long long *n) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  if (getenv("FAKE_NVML_ECC_OFF")) return NOT_SUPPORTED;
  unsigned long long v[2] = {0, 0};
  setting("FAKE_NVML_ECC", d->index, v, 2);
  (void)counter;
  *n = v[kind == 0 ? 0 : 1];
  return SUCCESS;
}
/* cause 0 multiple single-bit, 1 double-bit. */
static unsigned retired(nvmlDevice_t d, int cause) {
  unsigned long long v[2] = {0, 0};
  setting("FAKE_NVML_RETIRED", d->index, v, 2);
  return (unsigned)v[cause == 0 ? 0 : 1];
}
static nvmlReturn_t pages(unsigned n, unsigned *count, unsigned long long *addresses,
                          unsigned long long *times) {
  if (*count < n) {
    *count = n;
    return INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < n; i++) {
    addresses[i] = 0x100000ull * (i + 1);
    if (times) times[i] = 1700000000ull + i;
  }
  *count = n;
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned *count,
                                       unsigned long long *addresses) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  return pages(retired(d, cause), count, addresses, NULL);
}
nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t d, int cause, unsigned *count,
                                          unsigned long long *addresses, unsigned long long *times) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  return pages(retired(d, cause), count, addresses, times);
}
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *pending) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  const char *s = getenv("FAKE_NVML_RETIRE_PENDING");
  *pending = s && atoi(s) == d->index;
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *corrected, unsigned *uncorrected,
                                       unsigned *pending, unsigned *failed) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  if (getenv("FAKE_NVML_NO_REMAP")) return NOT_SUPPORTED;
  unsigned long long v[3] = {0, 0, 0};
  setting("FAKE_NVML_REMAP", d->index, v, 3);
  *corrected = 0;
  *uncorrected = (unsigned)v[0];
  *pending = (unsigned)v[1];
  *failed = (unsigned)v[2];
  return SUCCESS;
}

/* NVLink: 18 links where FAKE_NVML_NVLINK is set, none otherwise. */
/* A C2C field of GPU d (FAKE_NVML_C2C, FAKE_NVML_C2C_DOWN), per link
 * (the scope) where it is a link's: unsupported without C2C links. */
static void c2c_field(int d, nvmlFieldValue_t *f) {
  const char *c2c = getenv("FAKE_NVML_C2C");
  unsigned links = 0, mb_s = 0;
  if (!c2c || sscanf(c2c, "%u:%u", &links, &mb_s) != 2 || links == 0) {
    f->nvmlReturn = NOT_SUPPORTED;
    return;
  }
  unsigned long long down[1] = {0};
  setting("FAKE_NVML_C2C_DOWN", d, down, 1);
  int active = f->scopeId < links - (down[0] < links ? down[0] : links);
  if (f->fieldId == FI_C2C_LINK_COUNT)
    f->value.uiVal = links;
  else if (f->scopeId >= links)
    f->nvmlReturn = INVALID_ARGUMENT;
  else if (f->fieldId == FI_C2C_LINK_GET_STATUS)
    f->value.uiVal = active;
  else if (active)
    f->value.uiVal = mb_s;
  else
    f->nvmlReturn = NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t *values) {
  if (!is_device(d)) return INVALID_ARGUMENT;
  for (int i = 0; i < count; i++) {
    nvmlFieldValue_t *f = &values[i];
    f->valueType = VALUE_UNSIGNED_INT;
    f->nvmlReturn = SUCCESS;
    unsigned long long action[1];
    switch (f->fieldId) {
    case FI_NVLINK_LINK_COUNT:
      f->value.uiVal = getenv("FAKE_NVML_NVLINK") ? MAX_LINKS : 0;
      break;
    case FI_NVLINK_SPEED_MBPS_COMMON:
      f->value.uiVal = getenv("FAKE_NVML_NVLINK") ? 25781 : 0;
      break;
    case FI_C2C_LINK_COUNT:
    case FI_C2C_LINK_GET_STATUS:
    case FI_C2C_LINK_GET_MAX_BW:
      c2c_field(d->index, f);
      break;
    case FI_GPU_RECOVERY_ACTION:
      if (setting("FAKE_NVML_RECOVERY", d->index, action, 1) == 1)
        f->value.uiVal = (unsigned)action[0];
      else
        f->nvmlReturn = NOT_SUPPORTED;
      break;
    default:
      f->nvmlReturn = NOT_SUPPORTED;
    }
  }
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int *active) {
  if (!is_device(d) || link >= MAX_LINKS) return INVALID_ARGUMENT;
  if (!getenv("FAKE_NVML_NVLINK")) return NOT_SUPPORTED;
  *active = peer_of_link(d->index, link) >= 0;
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t d, unsigned link, unsigned *version) {
  if (!is_device(d) || link >= MAX_LINKS) return INVALID_ARGUMENT;
  *version = 4;
  return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_t *pci) {
  if (!is_device(d) || link >= MAX_LINKS) return INVALID_ARGUMENT;
  int peer = peer_of_link(d->index, link);
  if (peer < 0) return NOT_FOUND;
  return nvmlDeviceGetPciInfo_v3(&all[peer], pci);
}
