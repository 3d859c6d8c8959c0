/* test_util.h — helpers the Check suites share: error norms, reproducible
 * random point sets, temporary directories. */
#ifndef FMMCL_TEST_UTIL_H
#define FMMCL_TEST_UTIL_H
#include <check.h>
#include <stddef.h>

#include "fmmcl.h"

/* sqrt(sum (a - ref)^2 / sum ref^2); plain abs norm when ref is all zero. */
double fmmcl_test_rel_l2(const double *a, const double *ref, size_t n);
/* n points of dim coordinates uniform in [0, 1), from a fixed seed. */
void fmmcl_test_random_points(unsigned seed, size_t n, int dim, double *out);
/* kind 0: as fmmcl_test_random_points; 1: eight tight clusters (spread
 * 0.02) around the same random centres for every seed, so targets fall
 * among the sources: boxes from crowded to empty. dim <= FMMCL_MAX_DIM. */
void fmmcl_test_cluster_points(int kind, unsigned seed, size_t n, int dim, double *x);
/* n points of dim coordinates in [0, 1) on the grid of spacing 2^-20, from a
 * fixed seed: shifted by their bounding-box centre (a multiple of 2^-21) they
 * are exact in float, so a float device sees exactly the reference's input. */
void fmmcl_test_grid_points(unsigned seed, size_t n, int dim, double *out);
/* n values uniform in [lo, hi), from a fixed seed. */
void fmmcl_test_random_values(unsigned seed, size_t n, double lo, double hi, double *out);
/* Relative L2 errors of a plan's potential and gradient. */
typedef struct fmmcl_test_errors {
  double pot, grad;
} fmmcl_test_errors;
/* Creates a plan of o on ctx, executes it with charges q and returns its
 * errors against fmmcl_reference_direct (gradient: o->dim components;
 * tgt NULL: the targets are the sources). Fails the running test on any
 * error status. */
fmmcl_test_errors fmmcl_test_plan_errors(fmmcl_context ctx, const fmmcl_plan_options *o, size_t ns,
                                         const double *src, const double *q, size_t nt, const double *tgt);
/* A fresh directory under the build tree's tests/ (or /tmp); malloc'ed path. */
char *fmmcl_test_tempdir(const char *tag);
/* The method a plan of o over the n points x (targets the sources)
 * resolves to, as fmmcl_plan_describe says; the test fails when the plan
 * is refused. */
fmmcl_method fmmcl_test_resolved_method(fmmcl_context ctx, const fmmcl_plan_options *o, size_t n,
                                        const double *x);
/* n zeroed doubles (at least one); the test fails when there is no memory. */
double *fmmcl_test_zeros(size_t n);
/* Runs a shell command (its stderr as the command redirects it); its exit
 * code (-1 when it did not exit), and the start of its output in out. */
int fmmcl_test_run_command(const char *cmd, char *out, size_t len);
/* Removes a directory tree made by fmmcl_test_tempdir. */
void fmmcl_test_rmtree(const char *path);
/* Opens a context on the CI device: FMMCL_TEST_DEVICE, else "cpu", else default. */
fmmcl_context fmmcl_test_context(void);
/* The checked fixture of suites whose tests share one context: before each
 * test of tc, *slot = fmmcl_test_context() (the test fails without one);
 * after it, the context is destroyed and *slot NULL. One slot per process. */
void fmmcl_test_context_fixture(TCase *tc, fmmcl_context *slot);
#endif
