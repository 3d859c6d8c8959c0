/* bench_common.h — what the benchmark programs share: option parsing of the
 * common flags, random inputs, CSV output, and status reporting. */
#ifndef FMMCL_BENCH_COMMON_H
#define FMMCL_BENCH_COMMON_H
#include <stdio.h>

#include "fmmcl.h"

/* Exits the program with the library's message when st is an error. */
void bench_check(fmmcl_context ctx, fmmcl_status st, const char *what);
/* n points in [0,1)^dim and charges in [-1,1), reproducible. */
void bench_random_points(unsigned seed, size_t n, int dim, double *x);
void bench_random_charges(unsigned seed, size_t n, double *q);
/* Opens path for writing ("-" or NULL: stdout). */
FILE *bench_open_csv(const char *path);
/* Prints the device line every benchmark starts with (to stderr). */
void bench_print_device(fmmcl_context ctx);
double bench_now(void);
/* bench-model's inputs: uniform in the unit cube, or (ellipsoid != 0) a
 * solid ellipsoid of axes 1:1:4; reproducible (seeds 17 and 18). */
void bench_model_points(int ellipsoid, size_t n, double *x);

#endif
