/* util.c — small shared helpers: clocks, event timing, finiteness checks,
 * phase-time bookkeeping on plans. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/internal.h"

double fmmcl_wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double fmmcl_event_seconds(cl_event ev) {
  cl_ulong t0 = 0, t1 = 0;
  if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) != CL_SUCCESS ||
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
    return 0.0;
  return 1e-9 * (double)(t1 - t0);
}

int fmmcl_all_finite(const double *v, size_t n) {
  int ok = 1;
  /* no early exit: a reduction vectorises and the array is read anyway */
#pragma omp parallel for reduction(&& : ok) if (n > 100000)
  for (size_t i = 0; i < n; i++) ok = ok && isfinite(v[i]);
  return ok;
}

void fmmcl_plan_record(fmmcl_plan plan, const char *name, double seconds) {
  for (size_t i = 0; i < plan->n_phases; i++)
    if (strcmp(plan->phases[i].name, name) == 0) {
      plan->phases[i].seconds += seconds;
      return;
    }
  if (plan->n_phases < FMMCL_MAX_PHASES) plan->phases[plan->n_phases++] = (fmmcl_phase_time){name, seconds};
}

fmmcl_status fmmcl_order_from_tolerance(fmmcl_context ctx, const fmmcl_plan_options *opt, int max,
                                        double (*predicted_error)(int p, const void *arg), const void *arg,
                                        const char *hint, int *order) {
  const int single = opt->precision == FMMCL_SINGLE;
  if (opt->order != 0) {
    if (opt->order < 1 || opt->order > max)
      return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "expansion order %d outside 1..%d (%s)",
                        opt->order, max, single ? "single precision" : "double precision");
    *order = opt->order;
    return FMMCL_SUCCESS;
  }
  double tol = opt->tolerance;
  if (tol == 0) tol = single ? 1e-4 : 1e-6;
  if (!(tol > 0) || !isfinite(tol))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "tolerance must be > 0, got %g", opt->tolerance);
  /* float sums of 1e4 terms carry ~1e-7 relative rounding; below 1e-6 the
   * request cannot be promised whatever p is */
  if (single && tol < 1e-6)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "tolerance %g is below what single precision can deliver (1e-6); use FMMCL_DOUBLE",
                      tol);
  for (int p = 1; p <= max; p++)
    if (predicted_error(p, arg) <= tol) {
      *order = p;
      return FMMCL_SUCCESS;
    }
  return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "tolerance %g needs an order above %d%s", tol, max,
                    hint ? hint : "");
}

fmmcl_status fmmcl_buffer_fits(fmmcl_context ctx, size_t bytes, const char *what, const char *hint) {
  cl_ulong max = 0;
  if (clGetDeviceInfo(ctx->dev.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max, &max, NULL) != CL_SUCCESS ||
      max == 0 || bytes <= max)
    return FMMCL_SUCCESS;
  return fmmcl_fail(
      ctx, FMMCL_ERROR_OUT_OF_MEMORY,
      "%s need %.3g GB in one buffer, more than the %.3g GB that %s allows in one allocation%s%s", what,
      (double)bytes / 1e9, (double)max / 1e9, ctx->dev.info.device_name, hint ? "; " : "", hint ? hint : "");
}

fmmcl_status fmmcl_buffer_new(fmmcl_context ctx, cl_mem_flags flags, size_t bytes, const void *host,
                              cl_mem *buf) {
  cl_int err;
  if (bytes == 0) bytes = 16, host = NULL;
  fmmcl_status st = fmmcl_buffer_fits(ctx, bytes, "the plan's tables", NULL);
  if (st) {
    *buf = NULL;
    return st;
  }
  *buf = clCreateBuffer(ctx->cl, flags | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes, (void *)host, &err);
  if (err != CL_SUCCESS) {
    *buf = NULL;
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "cannot allocate %zu bytes on %s: %s", bytes,
                      ctx->dev.info.device_name, fmmcl_cl_error_name(err));
  }
  return FMMCL_SUCCESS;
}

int fmmcl_make_dirs(const char *path, int parent_only) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
      *p = '/';
    }
  if (parent_only) return 0;
  return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double fmmcl_median(double *v, size_t n) {
  if (!n) return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

fmmcl_status fmmcl_upload_reals(fmmcl_context ctx, size_t real_size, const double *v, size_t n, void *stage,
                                cl_mem buf) {
  if (real_size == 4) {
    float *f = stage;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) f[i] = (float)v[i];
  } else {
    memcpy(stage, v, n * sizeof(double));
  }
  FMMCL_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, buf, CL_FALSE, 0, n * real_size, stage, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_permute(fmmcl_context ctx, const fmmcl_permutation *p, size_t n) {
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, p->k, 0, FMMCL_ARG_MEM(p->in), FMMCL_ARG_MEM(p->perm),
                                      FMMCL_ARG_UINT(n), FMMCL_ARG_MEM(p->out));
  return st ? st : fmmcl_launch(ctx, p->k, fmmcl_round_up(n, p->local), p->local, NULL, NULL);
}

fmmcl_status fmmcl_upload_permuted(fmmcl_plan plan, size_t real_size, const double *v, size_t n, void *stage,
                                   const fmmcl_permutation *p) {
  if (plan->io) {
    fmmcl_permutation from_caller = *p;
    from_caller.in = plan->io->charges;
    return fmmcl_permute(plan->ctx, &from_caller, n);
  }
  fmmcl_status st = fmmcl_upload_reals(plan->ctx, real_size, v, n, stage, p->in);
  return st ? st : fmmcl_permute(plan->ctx, p, n);
}

fmmcl_status fmmcl_download_real4(fmmcl_plan plan, const fmmcl_real4_results *r, size_t n, size_t real_size,
                                  double *potential, double *gradient) {
  fmmcl_context ctx = plan->ctx;
  double t0 = fmmcl_wall_seconds();
  fmmcl_status st = fmmcl_permute(ctx, &r->unsort, n);
  if (st) return st;
  if (plan->io) {
    st = fmmcl_resident_split(plan, r->unsort.out, n, r->pot, r->grad, r->dim, plan->io->potential,
                              plan->io->gradient);
    if (!st) FMMCL_CL_TRY(ctx, clFinish(ctx->queue));
    if (!st) fmmcl_plan_record(plan, "results", fmmcl_wall_seconds() - t0);
    return st;
  }
  const void *stage = r->stage;
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, r->unsort.out, CL_TRUE, 0, 4 * n * real_size, r->stage, 0,
                                        NULL, NULL));
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++) {
    potential[i] = fmmcl_get_real(stage, real_size, 4 * i + r->pot);
    if (gradient)
      for (int c = 0; c < r->dim; c++)
        gradient[r->dim * i + c] = fmmcl_get_real(stage, real_size, 4 * i + r->grad + c);
  }
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}
