/* The copy as code that calls glibc's memcpy() does it: each OpenMP thread
 * copies its static share of the array (as `schedule(static)` would split
 * it) with one memcpy() call. Built by bench/stream-and-memcpy.sh with gcc
 * -O3 -march=native -fopenmp; counted as STREAM counts Copy (16 bytes per
 * element: one read, one write).
 *
 *   memcpy-omp ELEMENTS [NTIMES]   prints "Memcpy: MB/s", best of NTIMES-1
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s ELEMENTS [NTIMES]\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    int ntimes = argc > 2 ? atoi(argv[2]) : 20;
    size_t bytes = ((size_t)n * sizeof(double) + 4095) / 4096 * 4096;
    double *a = aligned_alloc(4096, bytes), *c = aligned_alloc(4096, bytes);
    if (!a || !c) return 1;
#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; j++) { a[j] = 1.0; c[j] = 0.0; }

    double best = 1e30;
    for (int k = 0; k < ntimes; k++) {
        double t = omp_get_wtime();
#pragma omp parallel
        {
            long nt = omp_get_num_threads(), id = omp_get_thread_num();
            long lo = n * id / nt, hi = n * (id + 1) / nt;
            memcpy(c + lo, a + lo, (size_t)(hi - lo) * sizeof(double));
        }
        t = omp_get_wtime() - t;
        if (k > 0 && t < best) best = t;
    }
    printf("Memcpy: %12.1f\n", 1e-6 * 16.0 * n / best);
    /* Keep the copy observable. */
    fprintf(stderr, "check %g\n", c[n / 2]);
    return 0;
}
