/* check_resident.c — plans executed on the caller's device buffers
 * (fmmcl_cl.h): the same numbers as fmmcl_plan_execute for every method,
 * device-resident or through the host, new charges without a new plan,
 * and the refusals of buffers that are wrong. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmmcl_cl.h"
#include "test_util.h"

static fmmcl_context ctx;
static cl_context clctx;
static cl_command_queue queue;

static void open_device(void) {
  ctx = fmmcl_test_context();
  ck_assert_msg(ctx != NULL, "no OpenCL context: %s", fmmcl_last_error(NULL));
  ck_assert_int_eq(fmmcl_context_cl_handles(ctx, &clctx, &queue, NULL), FMMCL_SUCCESS);
}

static void close_device(void) {
  fmmcl_context_destroy(ctx);
  ctx = NULL;
}

/* A buffer of n REALs (rs bytes each) holding v (or zeros when v is NULL). */
static cl_mem reals_buffer(size_t n, size_t rs, const double *v) {
  void *h = calloc(n ? n : 1, rs);
  for (size_t i = 0; v && i < n; i++)
    if (rs == 4) ((float *)h)[i] = (float)v[i];
    else ((double *)h)[i] = v[i];
  cl_int err;
  cl_mem m = clCreateBuffer(clctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, (n ? n : 1) * rs, h, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  free(h);
  return m;
}

static void read_reals(cl_mem m, size_t n, size_t rs, double *out) {
  void *h = malloc(n * rs);
  ck_assert_int_eq(clEnqueueReadBuffer(queue, m, CL_TRUE, 0, n * rs, h, 0, NULL, NULL), CL_SUCCESS);
  for (size_t i = 0; i < n; i++) out[i] = rs == 4 ? ((float *)h)[i] : ((double *)h)[i];
  free(h);
}

/* The largest |a - b| relative to max |b|. */
static double max_rel_diff(const double *a, const double *b, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i])), m = fmax(m, fabs(b[i]));
  return m > 0 ? d / m : d;
}

typedef struct {
  fmmcl_kernel kernel;
  fmmcl_method method;
  fmmcl_precision precision;
  int dim, separate_targets;
} resident_case;

static const resident_case cases[] = {
    {FMMCL_LAPLACE_3D, FMMCL_FMM, FMMCL_SINGLE, 3, 0},      {FMMCL_LAPLACE_3D, FMMCL_FMM, FMMCL_DOUBLE, 3, 1},
    {FMMCL_LAPLACE_3D, FMMCL_TREECODE, FMMCL_SINGLE, 3, 1}, {FMMCL_LAPLACE_2D, FMMCL_FMM, FMMCL_DOUBLE, 2, 0},
    {FMMCL_LAPLACE_3D, FMMCL_DIRECT, FMMCL_SINGLE, 3, 1},   {FMMCL_GAUSSIAN, FMMCL_FGT, FMMCL_DOUBLE, 3, 0},
};

/* For each case, twice with new charges: the device buffers receive what
 * fmmcl_plan_execute returns (the same kernels run, so the same numbers to
 * rounding of the final conversion), and both agree with the direct sum. */
START_TEST(test_same_as_host) {
  const resident_case *c = &cases[_i];
  enum { NS = 3000, NT = 1700 };
  const size_t nt = c->separate_targets ? NT : NS, dim = (size_t)c->dim;
  const size_t rs = c->precision == FMMCL_DOUBLE ? 8 : 4;
  double *src = malloc(NS * dim * sizeof *src), *tgt = malloc(NT * dim * sizeof *tgt);
  double *q = malloc(NS * sizeof *q), *pot = malloc(nt * sizeof *pot),
         *grad = malloc(nt * dim * sizeof *grad);
  double *dpot = malloc(nt * sizeof *dpot), *dgrad = malloc(nt * dim * sizeof *dgrad);
  fmmcl_test_random_points(11, NS, c->dim, src);
  fmmcl_test_random_points(12, NT, c->dim, tgt);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, c->kernel);
  o.method = c->method, o.precision = c->precision, o.dim = c->dim;
  o.tolerance = c->precision == FMMCL_DOUBLE ? 1e-6 : 1e-4;
  if (c->kernel == FMMCL_GAUSSIAN) o.sigma = 0.2, o.gradient = 0;
  fmmcl_plan plan = NULL;
  ck_assert_msg(
      fmmcl_plan_create(ctx, &o, NS, src, nt, c->separate_targets ? tgt : NULL, &plan) == FMMCL_SUCCESS, "%s",
      fmmcl_last_error(ctx));
  const int with_grad = o.gradient;
  cl_mem bpot = reals_buffer(nt, rs, NULL), bgrad = with_grad ? reals_buffer(nt * dim, rs, NULL) : NULL;
  for (int round = 0; round < 2; round++) {
    fmmcl_test_random_values(20 + round, NS, -1, 1, q);
    cl_mem bq = reals_buffer(NS, rs, q);
    /* the host path sees exactly the charges the buffer holds */
    read_reals(bq, NS, rs, q);
    ck_assert_msg(fmmcl_plan_execute(plan, q, pot, with_grad ? grad : NULL) == FMMCL_SUCCESS, "%s",
                  fmmcl_last_error(ctx));
    ck_assert_msg(fmmcl_plan_execute_buffers(plan, bq, bpot, bgrad) == FMMCL_SUCCESS, "%s",
                  fmmcl_last_error(ctx));
    read_reals(bpot, nt, rs, dpot);
    const double agree = rs == 4 ? 1e-6 : 1e-13;
    ck_assert_msg(max_rel_diff(dpot, pot, nt) <= agree, "case %d: potential differs by %g", _i,
                  max_rel_diff(dpot, pot, nt));
    if (with_grad) {
      read_reals(bgrad, nt * dim, rs, dgrad);
      ck_assert_msg(max_rel_diff(dgrad, grad, nt * dim) <= agree, "case %d: gradient differs by %g", _i,
                    max_rel_diff(dgrad, grad, nt * dim));
    }
    /* and the answer is the sum asked for */
    double *rpot = malloc(nt * sizeof *rpot), *rgrad = malloc(nt * dim * sizeof *rgrad);
    ck_assert_int_eq(fmmcl_reference_direct(&o, NS, src, q, nt, c->separate_targets ? tgt : src, rpot,
                                            with_grad ? rgrad : NULL),
                     FMMCL_SUCCESS);
    const double tol = c->method == FMMCL_DIRECT ? (rs == 4 ? 1e-5 : 1e-12) : 10 * o.tolerance;
    ck_assert_msg(fmmcl_test_rel_l2(dpot, rpot, nt) <= tol, "case %d: potential error %g", _i,
                  fmmcl_test_rel_l2(dpot, rpot, nt));
    free(rpot), free(rgrad);
    clReleaseMemObject(bq);
  }
  size_t count = 0;
  fmmcl_phase_time ph[64];
  ck_assert_int_eq(fmmcl_plan_timings(plan, ph, 64, &count), FMMCL_SUCCESS);
  ck_assert_uint_gt(count, 0);
  clReleaseMemObject(bpot);
  if (bgrad) clReleaseMemObject(bgrad);
  fmmcl_plan_destroy(plan);
  free(src), free(tgt), free(q), free(pot), free(grad), free(dpot), free(dgrad);
}
END_TEST

/* Buffers that cannot be the plan's: each refused with one status and a
 * message naming the buffer, and the result buffers left untouched. */
START_TEST(test_refusals) {
  enum { N = 500 };
  double x[3 * N], q[N];
  fmmcl_test_random_points(5, N, 3, x);
  fmmcl_test_random_values(6, N, -1, 1, q);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM, o.precision = FMMCL_SINGLE, o.gradient = 0;
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan), FMMCL_SUCCESS);
  cl_mem bq = reals_buffer(N, 4, q), bpot = reals_buffer(N, 4, NULL), small = reals_buffer(N - 1, 4, NULL);
  cl_mem bgrad = reals_buffer(3 * N, 4, NULL);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(NULL, bq, bpot, NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, NULL, bpot, NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, bq, NULL, NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, small, bpot, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(fmmcl_last_error(ctx), "charges buffer"));
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, bq, small, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(fmmcl_last_error(ctx), "potential buffer"));
  /* a gradient the plan does not compute */
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, bq, bpot, bgrad), FMMCL_ERROR_INVALID_ARGUMENT);
  /* a buffer of another context */
  cl_device_id dev;
  ck_assert_int_eq(fmmcl_context_cl_handles(ctx, NULL, NULL, &dev), FMMCL_SUCCESS);
  cl_int err;
  cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  cl_mem foreign = clCreateBuffer(other, CL_MEM_READ_WRITE, N * 4, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, foreign, bpot, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(fmmcl_last_error(ctx), "another OpenCL context"));
  /* a NaN charge, found on the device */
  double bad[N];
  memcpy(bad, q, sizeof bad);
  bad[N / 2] = NAN;
  cl_mem bnan = reals_buffer(N, 4, bad);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, bnan, bpot, NULL), FMMCL_ERROR_NONFINITE_INPUT);
  /* charges whose sum overflows single precision's range */
  for (int i = 0; i < N; i++) bad[i] = 1e37;
  cl_mem bbig = reals_buffer(N, 4, bad);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, bbig, bpot, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(fmmcl_last_error(ctx), "rescale the charges"));
  /* and nothing was written: the potential buffer still holds zeros */
  double pot[N];
  read_reals(bpot, N, 4, pot);
  for (int i = 0; i < N; i++) ck_assert(pot[i] == 0);
  ck_assert_int_eq(fmmcl_context_cl_handles(NULL, NULL, NULL, NULL), FMMCL_ERROR_NULL_POINTER);
  cl_mem all[] = {bq, bpot, small, bgrad, foreign, bnan, bbig};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) clReleaseMemObject(all[i]);
  clReleaseContext(other);
  fmmcl_plan_destroy(plan);
}
END_TEST

/* A result that overflows is reported from the device check, not
 * returned as success: float charges of 1e33 (their sum well inside the
 * range) with a pair 1e-6 apart overflow q / r and q / r^2. */
START_TEST(test_nonfinite_output) {
  enum { N = 400 };
  double x[3 * N], q[N];
  fmmcl_test_random_points(7, N, 3, x);
  x[3] = x[0] + 1e-6, x[4] = x[1], x[5] = x[2];
  for (int i = 0; i < N; i++) q[i] = 1e33;
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM, o.precision = FMMCL_SINGLE;
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan), FMMCL_SUCCESS);
  cl_mem bq = reals_buffer(N, 4, q), bpot = reals_buffer(N, 4, NULL), bgrad = reals_buffer(3 * N, 4, NULL);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, bq, bpot, bgrad), FMMCL_ERROR_NONFINITE_OUTPUT);
  ck_assert_ptr_nonnull(strstr(fmmcl_last_error(ctx), "overflowed single precision"));
  clReleaseMemObject(bq), clReleaseMemObject(bpot), clReleaseMemObject(bgrad);
  fmmcl_plan_destroy(plan);
}
END_TEST

int main(void) {
  Suite *s = suite_create("resident");
  TCase *tc = tcase_create("buffers");
  tcase_add_checked_fixture(tc, open_device, close_device);
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_same_as_host, 0, (int)(sizeof cases / sizeof *cases));
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_nonfinite_output);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
