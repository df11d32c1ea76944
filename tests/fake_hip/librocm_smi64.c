/* A fake ROCm SMI (librocm_smi64.so.5) for membw's tests: the scalar calls
 * the hip backend makes of SMI, over the same GPUs as the fake HIP runtime
 * (libamdhip64.c: FAKE_HIP_DEVICES GPUs, GPU d at PCI 0000:(c1+d):00.0).
 * SMI numbers them in the reverse order of HIP, as a real node may, so
 * that membw must find a GPU by its PCI address.
 *
 * Set up by the environment:
 *   FAKE_HIP_DEVICES=N        the GPUs (default 1), numbered as HIP does
 *   FAKE_RSMI_XGMI=A-B:L,...  HIP's GPUs A and B are joined by L xGMI
 *                             links (any other pair: PCIe only)
 *   FAKE_RSMI_LINK_MB_S=R     one xGMI link's bandwidth, MB/s (50000)
 *   FAKE_RSMI_THROTTLE=HEX    the ASIC-independent throttle status of
 *                             every GPU (default 0: nothing holds it back)
 *   FAKE_RSMI_NO_METRICS=1    the metrics calls say "not supported" (an
 *                             SMI older than ROCm 6.1)
 *   FAKE_RSMI_FAIL=1          rsmi_init fails
 *   FAKE_RSMI_ECC=D:CE:UE     HIP's GPU D counts CE corrected and UE
 *                             uncorrected errors in its HBM (UMC block);
 *                             every other GPU none (ECC on everywhere)
 *   FAKE_RSMI_BAD_PAGES=D:R:P HIP's GPU D has R bad pages retired and P
 *                             waiting for a reset
 *
 * Built by the tests with: cc -shared -fPIC -O2 -o librocm_smi64.so.5 librocm_smi64.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake_gpu/pairs.h"

typedef int rsmi_status_t;
enum { SUCCESS = 0, INVALID_ARGS = 1, NOT_SUPPORTED = 2, INIT_ERROR = 8 };
enum { LINK_PCIE = 1, LINK_XGMI = 2 };

static int initialized;

static int devices(void) {
  const char *n = getenv("FAKE_HIP_DEVICES");
  return n ? atoi(n) : 1;
}

/* HIP's number of SMI's GPU i. */
static int hip_of(uint32_t i) { return devices() - 1 - (int)i; }

/* The xGMI links between HIP's GPUs a and b. */
static int links(int a, int b) {
  return fake_links_between(getenv("FAKE_RSMI_XGMI"), a, b);
}

static uint64_t link_mb_s(void) {
  const char *r = getenv("FAKE_RSMI_LINK_MB_S");
  return r ? strtoull(r, NULL, 10) : 50000;
}

rsmi_status_t rsmi_init(uint64_t flags) {
  (void)flags;
  if (getenv("FAKE_RSMI_FAIL")) return INIT_ERROR;
  initialized = 1;
  return SUCCESS;
}
rsmi_status_t rsmi_num_monitor_devices(uint32_t *n) {
  if (!initialized) return INIT_ERROR;
  *n = (uint32_t)devices();
  return SUCCESS;
}
rsmi_status_t rsmi_dev_pci_id_get(uint32_t i, uint64_t *bdfid) {
  if (!initialized || i >= (uint32_t)devices()) return INVALID_ARGS;
  *bdfid = (uint64_t)(0xc1 + hip_of(i)) << 8;
  return SUCCESS;
}
rsmi_status_t rsmi_topo_get_link_type(uint32_t a, uint32_t b, uint64_t *hops, int *type) {
  if (!initialized || a >= (uint32_t)devices() || b >= (uint32_t)devices()) return INVALID_ARGS;
  int l = links(hip_of(a), hip_of(b));
  *type = l ? LINK_XGMI : LINK_PCIE;
  *hops = l ? 1 : 2;
  return SUCCESS;
}
rsmi_status_t rsmi_minmax_bandwidth_get(uint32_t a, uint32_t b, uint64_t *min, uint64_t *max) {
  if (!initialized || a >= (uint32_t)devices() || b >= (uint32_t)devices()) return INVALID_ARGS;
  int l = links(hip_of(a), hip_of(b));
  if (!l) return NOT_SUPPORTED;
  *min = link_mb_s();
  *max = link_mb_s() * (uint64_t)l;
  return SUCCESS;
}
rsmi_status_t rsmi_version_str_get(int component, char *text, uint32_t len) {
  if (component != 0) return INVALID_ARGS;
  snprintf(text, len, "6.8.5");
  return SUCCESS;
}
rsmi_status_t rsmi_dev_metrics_indep_throttle_status_get(uint32_t i, uint64_t *status) {
  if (!initialized || i >= (uint32_t)devices()) return INVALID_ARGS;
  if (getenv("FAKE_RSMI_NO_METRICS")) return NOT_SUPPORTED;
  const char *t = getenv("FAKE_RSMI_THROTTLE");
  *status = t ? strtoull(t, NULL, 16) : 0;
  return SUCCESS;
}
rsmi_status_t rsmi_dev_metrics_curr_uclk_get(uint32_t i, uint16_t *mhz) {
  if (!initialized || i >= (uint32_t)devices()) return INVALID_ARGS;
  if (getenv("FAKE_RSMI_NO_METRICS")) return NOT_SUPPORTED;
  *mhz = 1600;
  return SUCCESS;
}

/* `D:A:B` for HIP's GPU d from variable `name`: 1 and a, b where it names d. */
static int of_gpu(const char *name, int d, uint64_t *a, uint64_t *b) {
  const char *v = getenv(name);
  int gpu;
  unsigned long long x, y;
  if (!v || sscanf(v, "%d:%llu:%llu", &gpu, &x, &y) != 3 || gpu != d) return 0;
  *a = x;
  *b = y;
  return 1;
}

typedef struct { uint64_t correctable_err, uncorrectable_err, deferred_err; } rsmi_error_count_t;
enum { BLOCK_UMC = 1 };

rsmi_status_t rsmi_dev_ecc_enabled_get(uint32_t i, uint64_t *blocks) {
  if (!initialized || i >= (uint32_t)devices()) return INVALID_ARGS;
  *blocks = BLOCK_UMC;
  return SUCCESS;
}
rsmi_status_t rsmi_dev_ecc_count_get(uint32_t i, int block, rsmi_error_count_t *ec) {
  if (!initialized || i >= (uint32_t)devices()) return INVALID_ARGS;
  if (block != BLOCK_UMC) return NOT_SUPPORTED;
  uint64_t ce = 0, ue = 0;
  of_gpu("FAKE_RSMI_ECC", hip_of(i), &ce, &ue);
  ec->correctable_err = ce;
  ec->uncorrectable_err = ue;
  ec->deferred_err = 0;
  return SUCCESS;
}

typedef struct { uint64_t page_address, page_size; int status; } rsmi_retired_page_record_t;
enum { PAGE_RESERVED = 0, PAGE_PENDING = 1 };

rsmi_status_t rsmi_dev_memory_reserved_pages_get(uint32_t i, uint32_t *n,
                                                 rsmi_retired_page_record_t *records) {
  if (!initialized || i >= (uint32_t)devices()) return INVALID_ARGS;
  uint64_t reserved = 0, pending = 0;
  of_gpu("FAKE_RSMI_BAD_PAGES", hip_of(i), &reserved, &pending);
  uint32_t total = (uint32_t)(reserved + pending);
  if (!records) {
    *n = total;
    return SUCCESS;
  }
  uint32_t k;
  for (k = 0; k < *n && k < total; k++) {
    records[k].page_address = 0x100000ull * k;
    records[k].page_size = 4096;
    records[k].status = k < reserved ? PAGE_RESERVED : PAGE_PENDING;
  }
  *n = k;
  return SUCCESS;
}
