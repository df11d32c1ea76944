/* The kernels of membw's GPU builds (src/backend/cuda/kernels.cu and
 * src/backend/hip/kernels.cl), element by element on the calling thread:
 * what the fake drivers (tests/fake_cuda, tests/fake_hip) run for a
 * launch. Both builds take the same first nine parameters: the six arrays,
 * the per-block sums, the scalar and the element count.
 *
 * A kernel's other builds (src/kernels/gpu_builds.rs: NAME_spread,
 * NAME_u1_cs, ...) run as NAME. A fake driver's WRONG variable set to 1
 * makes every build write one element wrong; set to a build's suffix
 * (`_u8`), that build only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* An event's time, ms: the calling thread's CPU time, which a launch's
 * kernel (run on that thread) adds to and other programs on the host do
 * not, as a GPU's own clock is not slowed by the host's load. */
static double fake_event_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The result codes both vendors' APIs share, by the same numbers (CUDA's
 * CUDA_ERROR_*, HIP's hipError*); a vendor adds its own beside them. */
enum { SUCCESS = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3 };
enum { NO_DEVICE = 100, INVALID_DEVICE = 101, NOT_FOUND = 500, LAUNCH_FAILED = 719 };

static const char *fake_builds[] = {"_w8_u4", "_u1_cs", "_u1_cg", "_w8_cs", "_spread",
                                    "_u2", "_u1", "_u8", "_w8", "_cs", "_cg"};

/* NAME of a build's name, into `out` (at least 32 bytes). */
static void fake_kernel_family(char *out, size_t len, const char *name) {
  size_t n = strlen(name);
  snprintf(out, len, "%s", name);
  for (size_t b = 0; b < sizeof fake_builds / sizeof *fake_builds; b++) {
    size_t k = strlen(fake_builds[b]);
    if (n > k && n < len && strcmp(name + n - k, fake_builds[b]) == 0) {
      out[n - k] = 0;
      return;
    }
  }
}

/* Whether the WRONG variable's value `wrong` asks build `name` to be wrong. */
static int fake_wrong(const char *wrong, const char *name) {
  if (!wrong) return 0;
  if (!strcmp(wrong, "1")) return 1;
  size_t n = strlen(name), k = strlen(wrong);
  return n > k && strcmp(name + n - k, wrong) == 0;
}

/* Runs kernel family `k` over `params` (pointers to the values, as a
 * launch takes them) with `grid` blocks. 0 when it ran; -1 for a name
 * that is no kernel. `wrong`: the last element written is off by one. */
static int fake_run_kernel(const char *k, void **params, unsigned grid, int wrong) {
  double *x[7];
  for (int i = 0; i < 7; i++) x[i] = (double *)(uintptr_t) * (uint64_t *)params[i];
  double *a = x[0], *b = x[1], *c = x[2], *d = x[3], *h = x[4], *r = x[5], *partial = x[6];
  double q = *(double *)params[7];
  uint64_t n = *(uint64_t *)params[8];
  double sum = 0;
  double *last = 0;
#define EACH(body) for (uint64_t i = 0; i < n; i++) { body; }
  if (!strcmp(k, "copy")) { EACH(c[i] = a[i]); last = c; }
  else if (!strcmp(k, "scale")) { EACH(b[i] = q * c[i]); last = b; }
  else if (!strcmp(k, "add")) { EACH(c[i] = a[i] + b[i]); last = c; }
  else if (!strcmp(k, "triad")) { EACH(a[i] = b[i] + q * c[i]); last = a; }
  else if (!strcmp(k, "write")) { EACH(c[i] = q); last = c; }
  else if (!strcmp(k, "init") || !strcmp(k, "fill_a")) { EACH(a[i] = q); last = a; }
  else if (!strcmp(k, "fill_b")) { EACH(b[i] = q); }
  else if (!strcmp(k, "fill_c")) { EACH(c[i] = q); }
  else if (!strcmp(k, "fill_d")) { EACH(d[i] = q); }
  else if (!strcmp(k, "update")) { EACH(a[i] = q * a[i]); last = a; }
  else if (!strcmp(k, "daxpy")) { EACH(a[i] = a[i] + q * b[i]); last = a; }
  else if (!strcmp(k, "striad")) { EACH(a[i] = b[i] + c[i] * d[i]); last = a; }
  else if (!strcmp(k, "sdaxpy")) { EACH(a[i] = a[i] + b[i] * c[i]); last = a; }
  else if (!strcmp(k, "nstream")) { EACH(a[i] = a[i] + (b[i] + q * c[i])); last = a; }
  else if (!strcmp(k, "h2d_kernel")) { EACH(a[i] = h[i]); last = a; }
  else if (!strcmp(k, "d2h_kernel")) { EACH(r[i] = b[i]); last = r; }
  else if (!strcmp(k, "bidir_kernel")) { EACH(a[i] = h[i]; r[i] = b[i]); last = r; }
  else if (!strcmp(k, "read")) { EACH(sum += a[i]); }
  else if (!strcmp(k, "dot")) { EACH(sum += a[i] * b[i]); }
  else return -1;
  int reduces = !strcmp(k, "read") || !strcmp(k, "dot");
  if (reduces && partial) {
    /* Each block's sum: the first holds the whole, the rest nothing. */
    partial[0] = sum;
    for (unsigned i = 1; i < grid; i++) partial[i] = 0;
  }
  if (last && n && wrong) last[n - 1] += 1.0;
  return 0;
}
