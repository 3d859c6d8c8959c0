/* direct.c — the DIRECT method on the device: packs points into the padded
 * layouts p2p.cl reads, launches the tiled P2P kernel, unpacks results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "plan/registry.h"
#include "tuning/tuning.h"

typedef struct {
  cl_program program;
  cl_kernel kernel;
  cl_mem src, tgt, out;
  size_t real_size;            /* 4 or 8 */
  size_t wgs, tpw;             /* from the build's -D values */
  size_t ns_pad, nt_pad;       /* padded counts: whole tiles and whole work-groups */
  size_t stride;               /* REALs per point in src (Laplace: 4; Gaussian: SoA) */
  const fmmcl_kernel_desc *kd; /* the plan's kernel: pair kernel, layout, singularity */
  void *src_host;              /* packed sources, coordinates fixed, charges per execute */
  void *out_host;              /* src_host and out_host live in pinned staging memory */
  fmmcl_pinned src_pin, out_pin;
} direct_state;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* Element index of coordinate c (c = dim: the charge) of point i in a packed
 * array of n_pad points: the REAL4 layouts interleave (x, y, z, q) in 3D,
 * (x, y, q, 0) in 2D; the Gaussian is
 * structure-of-arrays. */
static size_t packed_index(const fmmcl_kernel_desc *kd, size_t n_pad, size_t i, int c) {
  return kd->p2p_layout != FMMCL_P2P_SOA ? 4 * i + (size_t)c : (size_t)c * n_pad + i;
}

/* Centre of the bounding box of both point sets and its largest half-side. */
static double bounding_box(size_t ns, const double *src, size_t nt, const double *tgt, int dim,
                           double *centre) {
  double half = 0;
  for (int c = 0; c < dim; c++) {
    double lo = src[c], hi = src[c];
    for (size_t i = 0; i < ns; i++) {
      double v = src[i * dim + c];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    for (size_t i = 0; i < nt; i++) {
      double v = tgt[i * dim + c];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    centre[c] = 0.5 * (lo + hi);
    half = 0.5 * (hi - lo) > half ? 0.5 * (hi - lo) : half;
  }
  return half;
}

/* Points shifted by centre and rounded to the device precision, as the
 * kernel will see them: singular pairs must be looked for after rounding,
 * since two close points can become one in float. malloc'ed. */
static double *device_points(size_t n, const double *x, int dim, const double *centre, int single) {
  double *out = malloc(n * (size_t)dim * sizeof *out);
  if (!out) return NULL;
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < dim; c++) {
      double v = x[i * dim + c] - centre[c];
      out[i * dim + c] = single ? (double)(float)v : v;
    }
  return out;
}

static fmmcl_status build_kernel(fmmcl_plan plan, direct_state *s, int all_select) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  const fmmcl_tuned_kernel tk = s->kd->p2p_tuned;
  const char *name = s->kd->p2p_kernel;
  char cls[16], defines[512];
  snprintf(cls, sizeof cls, "dim%d", o->dim);
  fmmcl_params par;
  fmmcl_status st = fmmcl_tuned_params(ctx, tk, o->precision, cls, &par);
  if (st) return st;
  fmmcl_params_defines(&par, defines, sizeof defines);
  /* unset (a partial override): p2p.cl's own defaults */
  s->wgs = (size_t)fmmcl_params_get(&par, "WGS", 128);
  s->tpw = (size_t)fmmcl_params_get(&par, "TPW", 1);
  if (s->wgs == 0 || s->tpw == 0 || s->wgs > ctx->dev.info.max_work_group_size)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "kernel parameters \"%s\" do not fit device %s (max work-group %zu)", defines,
                      ctx->dev.info.device_name, ctx->dev.info.max_work_group_size);
  snprintf(plan->build_options, sizeof plan->build_options,
           "%s %s -DDIM=%d -DHAS_SOFTENING=%d -DALL_SELECT=%d",
           o->precision == FMMCL_DOUBLE ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", defines, o->dim,
           s->kd->uses_softening && o->softening > 0, all_select);
  st = fmmcl_program_build(ctx, "direct/p2p.cl", plan->build_options, &s->program, NULL);
  return st ? st : fmmcl_create_kernel(ctx, s->program, "direct/p2p.cl", name, &s->kernel);
}

static fmmcl_status direct_create(fmmcl_plan plan, const double *sources, const double *targets) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  direct_state *s = calloc(1, sizeof *s);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->impl = s;
  s->kd = fmmcl_kernel_describe(o->kernel);
  s->real_size = o->precision == FMMCL_DOUBLE ? 8 : 4;
  const int dim = o->dim;
  /* The sums depend only on differences, so shift every point by the centre
   * of the bounding box: in float this halves the rounding of coordinates
   * in [0, 1) and saves all digits of data far from the origin. */
  double centre[FMMCL_MAX_DIM];
  const double half = bounding_box(plan->n_sources, sources, plan->n_targets, targets, dim, centre);
  double *sx = device_points(plan->n_sources, sources, dim, centre, s->real_size == 4);
  double *tx = plan->targets_are_sources
                   ? sx
                   : device_points(plan->n_targets, targets, dim, centre, s->real_size == 4);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!sx || !tx) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  else if (!fmmcl_all_finite(sx, plan->n_sources * dim) || !fmmcl_all_finite(tx, plan->n_targets * dim))
    st = fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                    "coordinate differences exceed the range of single precision; use FMMCL_DOUBLE");
  /* Laplace without softening: is a singular pair possible off the diagonal? */
  int all_select =
      !st && s->kd->singular_at_zero && o->softening == 0 &&
      fmmcl_has_coincident(plan->n_sources, sx, plan->n_targets, tx, dim, plan->targets_are_sources);
  if (!st) st = build_kernel(plan, s, all_select);
  if (st) { /* wgs is unset when the build failed: stop before sizing with it */
    if (tx != sx) free(tx);
    free(sx);
    return st;
  }
  const size_t rows = s->kd->p2p_layout != FMMCL_P2P_SOA ? 4 : (size_t)dim + 1; /* REALs per point */
  s->ns_pad = round_up(plan->n_sources, s->wgs);
  s->nt_pad = round_up(plan->n_targets, s->wgs * s->tpw);
  const size_t src_bytes = rows * s->ns_pad * s->real_size, tgt_bytes = rows * s->nt_pad * s->real_size;
  void *tgt_host = NULL;
  if (!st) {
    st = fmmcl_pinned_alloc(ctx, src_bytes, 1, &s->src_pin);
    if (!st) st = fmmcl_pinned_alloc(ctx, tgt_bytes, 0, &s->out_pin);
    s->src_host = s->src_pin.ptr;
    s->out_host = s->out_pin.ptr;
    tgt_host = st ? NULL : calloc(1, tgt_bytes);
    if (!st && !tgt_host)
      st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu points",
                      plan->n_sources + plan->n_targets);
  }
  if (!st) {
    for (size_t i = 0; i < plan->n_sources; i++)
      for (int c = 0; c < dim; c++)
        fmmcl_put_real(s->src_host, s->real_size, packed_index(s->kd, s->ns_pad, i, c), sx[i * dim + c]);
    /* padding sources carry no charge and sit outside the box, so no target
     * ever meets one at distance 0 (the unguarded 1/r would give 0 * inf) */
    for (size_t i = plan->n_sources; i < s->ns_pad; i++)
      for (int c = 0; c < dim; c++)
        fmmcl_put_real(s->src_host, s->real_size, packed_index(s->kd, s->ns_pad, i, c), 2 * half + 1);
    for (size_t i = 0; i < plan->n_targets; i++)
      for (int c = 0; c < dim; c++)
        fmmcl_put_real(tgt_host, s->real_size, packed_index(s->kd, s->nt_pad, i, c), tx[i * dim + c]);
  }
  if (tx != sx) free(tx);
  free(sx);
  if (st) {
    free(tgt_host);
    return st;
  }
  st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, src_bytes, NULL, &s->src);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, tgt_bytes, NULL, &s->tgt);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_WRITE_ONLY, tgt_bytes, NULL, &s->out);
  if (!st) {
    cl_int err = clEnqueueWriteBuffer(ctx->queue, s->tgt, CL_TRUE, 0, tgt_bytes, tgt_host, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "uploading targets: %s", fmmcl_cl_error_name(err));
  }
  free(tgt_host);
  return st;
}

static fmmcl_status set_args(fmmcl_plan plan, direct_state *s) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  cl_uint ns = (cl_uint)s->ns_pad, nt = (cl_uint)s->nt_pad;
  const int soa = s->kd->p2p_layout == FMMCL_P2P_SOA; /* the argument lists of fmmcl_p2p_layout */
  double a = o->softening * o->softening, b = 0;
  if (soa) {
    a = 1.0 / (2.0 * o->sigma * o->sigma);
    b = 1.0 / (o->sigma * o->sigma);
  }
  const size_t rs = s->real_size;
  /* the structure-of-arrays layout also takes the target count and a second
   * constant; the REAL4 one whether targets are sources */
  if (soa)
    return FMMCL_KERNEL_ARGS(ctx, s->kernel, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_UINT(ns),
                             FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_UINT(nt), FMMCL_ARG_MEM(s->out),
                             FMMCL_ARG_REAL(a, rs), FMMCL_ARG_REAL(b, rs));
  if (s->kd->p2p_layout == FMMCL_P2P_REAL4_PARAM)
    return FMMCL_KERNEL_ARGS(ctx, s->kernel, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_UINT(ns),
                             FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(s->out), FMMCL_ARG_REAL(a, rs),
                             FMMCL_ARG_UINT(plan->targets_are_sources), FMMCL_ARG_REAL(o->kernel_param, rs));
  return FMMCL_KERNEL_ARGS(ctx, s->kernel, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_UINT(ns),
                           FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(s->out), FMMCL_ARG_REAL(a, rs),
                           FMMCL_ARG_UINT(plan->targets_are_sources));
}

static fmmcl_status direct_execute(fmmcl_plan plan, const double *charges, double *potential,
                                   double *gradient) {
  fmmcl_context ctx = plan->ctx;
  direct_state *s = plan->impl;
  const fmmcl_plan_options *o = &plan->opt;
  const int dim = o->dim;
  const size_t rows = s->kd->p2p_layout != FMMCL_P2P_SOA ? 4 : (size_t)dim + 1;
  double t0 = fmmcl_wall_seconds();
#pragma omp parallel for schedule(static) if (plan->n_sources > 65536)
  for (size_t i = 0; i < plan->n_sources; i++)
    fmmcl_put_real(s->src_host, s->real_size, packed_index(s->kd, s->ns_pad, i, dim), charges[i]);
  FMMCL_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, s->src, CL_TRUE, 0, rows * s->ns_pad * s->real_size,
                                         s->src_host, 0, NULL, NULL));
  double t1 = fmmcl_wall_seconds();
  fmmcl_plan_record(plan, "upload", t1 - t0);
  fmmcl_event_log log = {0};
  fmmcl_status st = set_args(plan, s);
  if (!st) st = fmmcl_launch(ctx, s->kernel, s->nt_pad / s->tpw, s->wgs, &log, "p2p");
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  if (st || fl) return st ? st : fl;
  double t2 = fmmcl_wall_seconds();
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, s->out, CL_TRUE, 0, rows * s->nt_pad * s->real_size,
                                        s->out_host, 0, NULL, NULL));
  /* Laplace out[i] = (gx, gy, gz, pot) ((gx, gy, 0, pot) in 2D); Gaussian
   * SoA rows (pot, g_1..g_dim) */
  const int lap = s->kd->p2p_layout != FMMCL_P2P_SOA;
#pragma omp parallel for schedule(static) if (plan->n_targets > 65536)
  for (size_t i = 0; i < plan->n_targets; i++) {
    potential[i] = fmmcl_get_real(s->out_host, s->real_size, lap ? 4 * i + 3 : i);
    if (gradient)
      for (int c = 0; c < dim; c++)
        gradient[i * dim + c] =
            fmmcl_get_real(s->out_host, s->real_size, lap ? 4 * i + c : (size_t)(1 + c) * s->nt_pad + i);
  }
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t2);
  return FMMCL_SUCCESS;
}

static void direct_destroy(fmmcl_plan plan) {
  direct_state *s = plan->impl;
  if (!s) return;
  fmmcl_release(&s->kernel);
  fmmcl_release(&s->program);
  fmmcl_release(&s->src);
  fmmcl_release(&s->tgt);
  fmmcl_release(&s->out);
  fmmcl_pinned_free(&s->src_pin);
  fmmcl_pinned_free(&s->out_pin);
  free(s);
  plan->impl = NULL;
}

const fmmcl_method_ops fmmcl_direct_ops = {.name = "direct",
                                           .create = direct_create,
                                           .execute = direct_execute,
                                           .destroy = direct_destroy,
                                           .counts = fmmcl_direct_counts,
                                           .error_bound = fmmcl_direct_error_bound};
