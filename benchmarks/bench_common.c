/* bench_common.c — helpers shared by the benchmark programs (see bench_common.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench_common.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void bench_check(fmmcl_context ctx, fmmcl_status st, const char *what) {
  if (st == FMMCL_SUCCESS) return;
  fprintf(stderr, "%s: %s\n%s\n", what, fmmcl_strerror(st), fmmcl_last_error(ctx));
  exit(1);
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void bench_random_points(unsigned seed, size_t n, int dim, double *x) {
  uint64_t s = seed;
  for (size_t i = 0; i < n * (size_t)dim; i++) x[i] = (double)(splitmix(&s) >> 11) * 0x1.0p-53;
}

void bench_random_charges(unsigned seed, size_t n, double *q) {
  uint64_t s = seed + 7919;
  for (size_t i = 0; i < n; i++) q[i] = 2.0 * (double)(splitmix(&s) >> 11) * 0x1.0p-53 - 1.0;
}

FILE *bench_open_csv(const char *path) {
  if (!path || strcmp(path, "-") == 0) return stdout;
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  return f;
}

void bench_print_device(fmmcl_context ctx) {
  fmmcl_device_info d;
  bench_check(ctx, fmmcl_context_device(ctx, &d), "fmmcl_context_device");
  fprintf(stderr, "device %d:%d %s (%s, driver %s, %u compute units)\n", d.platform_index, d.device_index,
          d.device_name, d.platform_name, d.driver_version, d.compute_units);
}

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void bench_model_points(int ellipsoid, size_t n, double *x) {
  bench_random_points(17, n, 3, x);
  if (!ellipsoid) return;
  double *u = malloc(3 * n * sizeof *u);
  bench_random_points(18, n, 3, u);
  for (size_t i = 0; i < n; i++) {
    const double r = cbrt(u[3 * i]), z = 2 * u[3 * i + 1] - 1, phi = 6.283185307179586 * u[3 * i + 2];
    const double s = sqrt(1 - z * z);
    x[3 * i] = r * s * cos(phi), x[3 * i + 1] = r * s * sin(phi), x[3 * i + 2] = 4 * r * z;
  }
  free(u);
}
