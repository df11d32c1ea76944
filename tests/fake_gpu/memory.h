/* What a fake driver allocated and registered, by address, so that it
 * answers pointer attributes as a driver does: its device memory, managed
 * memory and registered host memory, and nothing for pageable memory it
 * was never told of. Both fakes keep "device memory" in host memory, so
 * a kernel reads any of these where it is.
 */
#include <pthread.h>
#include <stddef.h>

enum fake_kind { FAKE_DEVICE = 1, FAKE_MANAGED = 2, FAKE_HOST = 3 };

struct fake_region {
  const char *start;
  size_t bytes;
  enum fake_kind kind;
};

#define FAKE_REGIONS 256
static struct fake_region fake_regions[FAKE_REGIONS];
static pthread_mutex_t fake_regions_lock = PTHREAD_MUTEX_INITIALIZER;

/* Keeps a region; 0 where the table is full. */
static int fake_memory_add(const void *start, size_t bytes, enum fake_kind kind) {
  int kept = 0;
  pthread_mutex_lock(&fake_regions_lock);
  for (int i = 0; i < FAKE_REGIONS && !kept; i++) {
    if (!fake_regions[i].start) {
      fake_regions[i] = (struct fake_region){start, bytes, kind};
      kept = 1;
    }
  }
  pthread_mutex_unlock(&fake_regions_lock);
  return kept;
}

/* Forgets the region that starts at `start`. */
static void fake_memory_forget(const void *start) {
  pthread_mutex_lock(&fake_regions_lock);
  for (int i = 0; i < FAKE_REGIONS; i++) {
    if (fake_regions[i].start == start) fake_regions[i].start = NULL;
  }
  pthread_mutex_unlock(&fake_regions_lock);
}

/* The kind of the region `at` points into, and its bytes from `at` to its
 * end; 0 where the driver was never told of it (pageable memory). */
static enum fake_kind fake_memory_kind(const void *at, size_t *room) {
  enum fake_kind kind = 0;
  const char *p = at;
  pthread_mutex_lock(&fake_regions_lock);
  for (int i = 0; i < FAKE_REGIONS; i++) {
    const struct fake_region *r = &fake_regions[i];
    if (r->start && p >= r->start && p < r->start + r->bytes) {
      kind = r->kind;
      if (room) *room = (size_t)(r->start + r->bytes - p);
    }
  }
  pthread_mutex_unlock(&fake_regions_lock);
  return kind;
}
