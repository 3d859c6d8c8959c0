/* model_bench.c — the performance model's microbenchmarks: the device's
 * effective peak for the U-list instruction mix and its achievable memory
 * bandwidth (cl/model.cl), each the best of a few timed runs. */
#include <stdio.h>
#include <stdlib.h>

#include "model/model.h"

#define MODEL_WGS 128    /* compute kernel's work-group (and source tile) size */
#define MIN_SECONDS 0.01 /* a run shorter than this is repeated with more work */
#define RUNS 3

/* Runs k once over global items of local size wgs and returns its time. */
static fmmcl_status timed(fmmcl_context ctx, cl_kernel k, size_t global, size_t wgs, double *sec) {
  fmmcl_event_log log = {0};
  fmmcl_status st = fmmcl_launch(ctx, k, global, wgs, &log, "run");
  fmmcl_status fl = fmmcl_event_log_total(ctx, &log, sec);
  return st ? st : fl;
}

/* Fills a REAL4 buffer of n points with values in [0, 1) (the charge too). */
static fmmcl_status random_points(fmmcl_context ctx, size_t n, size_t real_size, cl_mem *buf) {
  void *h = malloc(n * 4 * real_size);
  if (!h) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  unsigned x = 12345;
  for (size_t i = 0; i < 4 * n; i++) {
    x = x * 1103515245u + 12345u;
    const double v = (double)(x >> 8) / 16777216.0;
    if (real_size == 4) ((float *)h)[i] = (float)v;
    else ((double *)h)[i] = v;
  }
  cl_int err;
  *buf = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * 4 * real_size, h, &err);
  free(h);
  FMMCL_CL_TRY(ctx, err);
  return FMMCL_SUCCESS;
}

/* A benchmark's kernel (name in cl/model.cl), n random points as its input
 * and room for n REAL4 results; the caller releases all three. */
static fmmcl_status bench_setup(fmmcl_context ctx, cl_program prog, const char *name, size_t n,
                                size_t real_size, cl_kernel *k, cl_mem *in, cl_mem *out) {
  fmmcl_status st = fmmcl_create_kernel(ctx, prog, "model/model.cl", name, k);
  if (!st) st = random_points(ctx, n, real_size, in);
  if (!st) {
    cl_int err;
    *out = clCreateBuffer(ctx->cl, CL_MEM_WRITE_ONLY, n * 4 * real_size, NULL, &err);
    if (err) st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "clCreateBuffer: %s", fmmcl_cl_error_name(err));
  }
  return st;
}

static fmmcl_status measure_ulist(fmmcl_context ctx, cl_program prog, size_t real_size, double *rate) {
  const fmmcl_device_info *d = &ctx->dev.info;
  /* enough work-groups to fill every compute unit several times over */
  const size_t global = (size_t)(d->compute_units ? d->compute_units : 1) * (d->is_gpu ? 64 : 4) * MODEL_WGS;
  cl_kernel k = NULL;
  cl_mem pts = NULL, out = NULL;
  fmmcl_status st = bench_setup(ctx, prog, "model_ulist", global, real_size, &k, &pts, &out);
  cl_int reps = 1;
  *rate = 0;
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(pts), FMMCL_ARG_MEM(out));
  for (int run = 0; !st && run < RUNS + 12; run++) {
    double sec = 0;
    st = FMMCL_KERNEL_ARGS(ctx, k, 2, FMMCL_ARG_INT(reps));
    if (!st) st = timed(ctx, k, global, MODEL_WGS, &sec);
    if (st) break;
    if (sec < MIN_SECONDS && reps < (1 << 20)) {
      reps *= 2;
      run = -1;
      continue;
    } /* grow, then time */
    const double r = (double)global * MODEL_WGS * reps / sec;
    if (r > *rate) *rate = r;
    if (run + 1 >= RUNS) break;
  }
  fmmcl_release(&pts);
  fmmcl_release(&out);
  fmmcl_release(&k);
  return st;
}

/* The streaming copy over a buffer several times any last-level cache,
 * at the work-group size that does best. */
static fmmcl_status measure_stream(fmmcl_context ctx, cl_program prog, size_t real_size, double *rate) {
  const fmmcl_device_info *d = &ctx->dev.info;
  size_t n = (size_t)1 << (d->is_gpu ? 24 : 21); /* REAL4s per array */
  while (n > 4096 && 2 * n * 4 * real_size > d->global_mem_bytes / 4) n /= 2;
  cl_kernel k = NULL;
  cl_mem a = NULL, b = NULL;
  fmmcl_status st = bench_setup(ctx, prog, "model_stream", n, real_size, &k, &a, &b);
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(a), FMMCL_ARG_MEM(b), FMMCL_ARG_REAL(1.0001, real_size));
  static const size_t wgs[] = {64, 128, 256, 512};
  *rate = 0;
  for (size_t w = 0; !st && w < sizeof wgs / sizeof *wgs; w++) {
    if (wgs[w] > d->max_work_group_size) break;
    for (int run = 0; !st && run <= RUNS; run++) {
      double sec = 0;
      st = timed(ctx, k, n, wgs[w], &sec);
      if (!st && run > 0 && sec > 0) { /* run 0 warms the caches and pages up */
        const double r = 2.0 * n * 4 * real_size / sec;
        if (r > *rate) *rate = r;
      }
    }
  }
  fmmcl_release(&a);
  fmmcl_release(&b);
  fmmcl_release(&k);
  return st;
}

fmmcl_status fmmcl_model_measure(fmmcl_context ctx, fmmcl_precision prec, double *pairs_per_s,
                                 double *bytes_per_s) {
  if (!ctx || !pairs_per_s || !bytes_per_s)
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_model_measure: NULL argument");
  if (prec == FMMCL_DOUBLE && !ctx->dev.info.has_fp64)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "device %s has no double precision",
                      ctx->dev.info.device_name);
  if (ctx->dev.info.max_work_group_size < MODEL_WGS)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "work-groups of %d items not supported", MODEL_WGS);
  char options[128];
  snprintf(options, sizeof options, "%s -DWGS=%d",
           prec == FMMCL_DOUBLE ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", MODEL_WGS);
  cl_program prog;
  fmmcl_status st = fmmcl_program_build(ctx, "model/model.cl", options, &prog, NULL);
  if (st) return st;
  const size_t rs = prec == FMMCL_DOUBLE ? 8 : 4;
  st = measure_ulist(ctx, prog, rs, pairs_per_s);
  if (!st) st = measure_stream(ctx, prog, rs, bytes_per_s);
  fmmcl_release(&prog);
  if (!st && !(*pairs_per_s > 0 && *bytes_per_s > 0))
    st = fmmcl_fail(ctx, FMMCL_ERROR_OPENCL, "microbenchmarks measured no time (profiling broken?)");
  return st;
}
