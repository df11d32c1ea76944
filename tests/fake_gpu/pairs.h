/* What the fake drivers and management libraries (tests/fake_cuda,
 * tests/fake_hip) say of pairs of GPUs, read from their variables the same
 * way for every vendor. */
#include <stdio.h>
#include <string.h>

/* Whether `d` reaches `peer` directly: never itself, nor the pair named
 * by `no_peer` (`I:J`, either way round). */
static inline int fake_peer_reachable(const char *no_peer, int d, int peer) {
  int i = -1, j = -1;
  if (no_peer) sscanf(no_peer, "%d:%d", &i, &j);
  return d != peer && !((d == i && peer == j) || (d == j && peer == i));
}

/* The links between GPUs a and b that `spec` lists (`A-B:LINKS,...`,
 * either way round); 0 where it lists none. */
static inline int fake_links_between(const char *spec, int a, int b) {
  if (!spec) return 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *pair = strtok(buf, ","); pair; pair = strtok(NULL, ",")) {
    int x, y, l;
    if (sscanf(pair, "%d-%d:%d", &x, &y, &l) == 3 && ((x == a && y == b) || (x == b && y == a)))
      return l;
  }
  return 0;
}
