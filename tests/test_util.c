/* test_util.c — helpers the Check suites share (see test_util.h). */
#define _XOPEN_SOURCE 700
#include "test_util.h"

#include <check.h>

#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

double fmmcl_test_rel_l2(const double *a, const double *ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    double d = a[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* splitmix64: tiny, reproducible on every platform */
static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void fmmcl_test_random_values(unsigned seed, size_t n, double lo, double hi, double *out) {
  uint64_t s = seed * 0x2545F4914F6CDD1DULL + 1;
  for (size_t i = 0; i < n; i++) out[i] = lo + (hi - lo) * (double)(next(&s) >> 11) * 0x1.0p-53;
}

void fmmcl_test_random_points(unsigned seed, size_t n, int dim, double *out) {
  fmmcl_test_random_values(seed, n * (size_t)dim, 0.0, 1.0, out);
}

void fmmcl_test_cluster_points(int kind, unsigned seed, size_t n, int dim, double *x) {
  fmmcl_test_random_points(seed, n, dim, x);
  if (kind == 0) return;
  double centres[8 * FMMCL_MAX_DIM];
  fmmcl_test_random_points(101, 8, dim, centres);
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < dim; k++) x[i * dim + k] = centres[(i % 8) * dim + k] + 0.02 * (x[i * dim + k] - 0.5);
}

fmmcl_method fmmcl_test_resolved_method(fmmcl_context ctx, const fmmcl_plan_options *o, size_t n,
                                        const double *x) {
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, o, n, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  fmmcl_plan_info info;
  ck_assert_int_eq(fmmcl_plan_describe(plan, &info), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  return info.method;
}

double *fmmcl_test_zeros(size_t n) {
  double *p = calloc(n ? n : 1, sizeof *p);
  ck_assert_ptr_nonnull(p);
  return p;
}

int fmmcl_test_run_command(const char *cmd, char *out, size_t len) {
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, len - 1, p);
  out[n] = '\0';
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void fmmcl_test_grid_points(unsigned seed, size_t n, int dim, double *out) {
  fmmcl_test_random_points(seed, n, dim, out);
  for (size_t i = 0; i < n * (size_t)dim; i++) out[i] = floor(out[i] * 0x1.0p20) * 0x1.0p-20;
}

char *fmmcl_test_tempdir(const char *tag) {
  char tmpl[4096];
  const char *base = getenv("FMMCL_TEST_TMPDIR");
  snprintf(tmpl, sizeof tmpl, "%s/fmmcl-%s-XXXXXX", base && *base ? base : "/tmp", tag);
  char *dir = mkdtemp(tmpl);
  return dir ? strdup(dir) : NULL;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

void fmmcl_test_rmtree(const char *path) {
  if (path) nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

fmmcl_context fmmcl_test_context(void) {
  fmmcl_context ctx = NULL;
  const char *sel = getenv("FMMCL_TEST_DEVICE");
  if (fmmcl_context_create(&ctx, sel && *sel ? sel : "cpu") != FMMCL_SUCCESS)
    fmmcl_context_create(&ctx, NULL);
  return ctx;
}

static fmmcl_context *fixture_slot;

static void fixture_open(void) {
  *fixture_slot = fmmcl_test_context();
  ck_assert_msg(*fixture_slot != NULL, "no OpenCL context: %s", fmmcl_last_error(NULL));
}

static void fixture_close(void) {
  fmmcl_context_destroy(*fixture_slot);
  *fixture_slot = NULL;
}

void fmmcl_test_context_fixture(TCase *tc, fmmcl_context *slot) {
  fixture_slot = slot;
  tcase_add_checked_fixture(tc, fixture_open, fixture_close);
}

fmmcl_test_errors fmmcl_test_plan_errors(fmmcl_context ctx, const fmmcl_plan_options *o, size_t ns,
                                         const double *src, const double *q, size_t nt, const double *tgt) {
  const size_t m = tgt ? nt : ns, d = (size_t)o->dim;
  double *pot = malloc(m * sizeof *pot), *grad = malloc(d * m * sizeof *grad);
  double *rpot = malloc(m * sizeof *rpot), *rgrad = malloc(d * m * sizeof *rgrad);
  ck_assert(pot && grad && rpot && rgrad);
  fmmcl_plan plan;
  fmmcl_status st = fmmcl_plan_create(ctx, o, ns, src, nt, tgt, &plan);
  ck_assert_msg(st == FMMCL_SUCCESS, "create: %s", fmmcl_last_error(ctx));
  st = fmmcl_plan_execute(plan, q, pot, grad);
  ck_assert_msg(st == FMMCL_SUCCESS, "execute: %s", fmmcl_last_error(ctx));
  fmmcl_plan_destroy(plan);
  ck_assert_int_eq(fmmcl_reference_direct(o, ns, src, q, nt, tgt, rpot, rgrad), FMMCL_SUCCESS);
  fmmcl_test_errors e = {fmmcl_test_rel_l2(pot, rpot, m), fmmcl_test_rel_l2(grad, rgrad, d * m)};
  free(pot), free(grad), free(rpot), free(rgrad);
  return e;
}
