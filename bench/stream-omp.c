/* STREAM's four loops as users build them: plain C, OpenMP static schedule,
 * compiled by bench/compare.sh with gcc -O3 -march=native -fopenmp. This is
 * the baseline membw must beat: whatever gcc makes of these loops (Copy
 * becomes a memcpy call, the others use ordinary stores).
 *
 *   stream-omp ELEMENTS [NTIMES]   prints "Copy: MB/s" ... "Triad: MB/s", best of NTIMES-1
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s ELEMENTS [NTIMES]\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    int ntimes = argc > 2 ? atoi(argv[2]) : 20;
    size_t bytes = ((size_t)n * sizeof(double) + 4095) / 4096 * 4096;
    double *a = aligned_alloc(4096, bytes), *b = aligned_alloc(4096, bytes), *c = aligned_alloc(4096, bytes);
    const double q = 3.0;
    if (!a || !b || !c) return 1;
#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; j++) { a[j] = 1.0; b[j] = 2.0; c[j] = 0.0; }

    double best[4] = {1e30, 1e30, 1e30, 1e30};
    for (int k = 0; k < ntimes; k++) {
        double t[5];
        t[0] = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) c[j] = a[j];
        t[1] = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) b[j] = q * c[j];
        t[2] = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) c[j] = a[j] + b[j];
        t[3] = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) a[j] = b[j] + q * c[j];
        t[4] = omp_get_wtime();
        for (int i = 0; k > 0 && i < 4; i++)
            if (t[i + 1] - t[i] < best[i]) best[i] = t[i + 1] - t[i];
    }
    const double counted[4] = {16, 16, 24, 24};
    const char *names[4] = {"Copy:", "Scale:", "Add:", "Triad:"};
    for (int i = 0; i < 4; i++) printf("%-8s %12.1f\n", names[i], 1e-6 * counted[i] * n / best[i]);
    /* Keep the arrays observable so no loop can be dropped. */
    fprintf(stderr, "check %g %g %g\n", a[n / 2], b[n / 2], c[n / 2]);
    return 0;
}
