/* direct_ext.c — the DIRECT method of fmmcl_plan_evaluate's richer sums
 * (Laplace dipoles and Hessians, Helmholtz, Stokes) on the device: packs
 * source records, launches cl/direct/p2p_ext.cl, unpacks the results. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "plan/registry.h"
#include "tree/closest_pairs.h"
#include "tuning/tuning.h"

/* The layouts of cl/kernels/{laplace3d_ext,helmholtz3d,stokes3d}.h; where
 * the plan compensates, each source record is followed by the low parts of
 * its offsets (x, y, z, 0; cl/direct/p2p_ext.cl), the stride then the
 * record plus LOW (the tuning class's, either way). */
enum {
  LAPLACE_REC = 8,
  LAPLACE_OUT = 10,
  HELMHOLTZ_REC = 12,
  HELMHOLTZ_OUT = 8,
  STOKES_REC = 12,
  STOKES_OUT = 4,
  LOW = 4
};

typedef struct {
  cl_program program;
  cl_kernel kernel;
  cl_mem src, tgt, out;
  size_t real_size;      /* 4 or 8 */
  size_t wgs;            /* from the build's -D values */
  size_t ns_pad, nt_pad; /* whole work-groups */
  size_t rec, nout;      /* REALs per source (record and low parts) and per target result */
  double scale;          /* the power of two the device's coordinates are divided by */
  double *dist;          /* each source's, then each target's distance from the frame's centre */
  int compensate;        /* offsets as hi + lo (records LOW REALs longer) */
  fmmcl_pinned src_pin, out_pin;
} ext_state;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* The frame the device's coordinates are relative to: the coordinate-wise
 * median of sources and targets together (a few far points, which would
 * move the box's centre, leave it among the bulk, whose offsets then keep
 * their digits; the far points' own pairs are all long), and the largest
 * |x - centre| per coordinate. Offsets are taken in double before rounding.
 * dist (n + m) gets each point's distance from the centre (frame_size). */
static fmmcl_status frame(fmmcl_context ctx, size_t ns, const double *src, size_t nt, const double *tgt,
                          double *centre, double *half, double *dist) {
  double *v = malloc((ns + nt) * sizeof *v);
  if (!v) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  *half = 0;
  for (int c = 0; c < 3; c++) {
    for (size_t i = 0; i < ns + nt; i++) v[i] = i < ns ? src[3 * i + c] : tgt[3 * (i - ns) + c];
    centre[c] = fmmcl_median(v, ns + nt);
  }
  for (size_t i = 0; i < ns + nt; i++) {
    const double *x = i < ns ? src + 3 * i : tgt + 3 * (i - ns);
    double r2 = 0;
    for (int c = 0; c < 3; c++) {
      const double d = x[c] - centre[c];
      *half = fmax(*half, fabs(d));
      r2 += d * d;
    }
    dist[i] = sqrt(r2);
  }
  free(v);
  return FMMCL_SUCCESS;
}

/* (x - centre) / scale as hi + lo, both exact in REAL (rs bytes) and
 * together within REAL's unit roundoff squared of the exact offset: the
 * kernels difference a pair's high parts (exact where the pair is close)
 * and add their low parts' difference, so two points much closer than
 * their offsets from the centre keep their distance's digits (two tight
 * groups on either side of the centre, whose median falls between). */
static void offset(double x, double centre, double scale, size_t rs, double *hi, double *lo) {
  const double d = x - centre, b = d - x; /* TwoSum: d + e = x - centre exactly */
  const double e = (x - (d - b)) + (-centre - b);
  if (rs == 8) {
    *hi = d / scale, *lo = e / scale;
  } else {
    const double h = (float)d;
    *hi = h / scale, *lo = (float)((d - h) + e) / scale;
  }
}

/* Whether offsets rounded once would cost the closest pair more than a
 * tenth of the default tolerance (1e-5 in float, 1e-13 in double: their
 * rounding, u (|t| + |s|) / r, against the pair's distance r), so that the
 * kernels must add the low parts: two tight groups far from the centre,
 * or a pair much closer than the set is wide. Uniform sets of some
 * thousand points in double keep the plain loop. */
static int needs_low_parts(fmmcl_plan plan, const double *sources, const double *targets,
                           const double *dist) {
  fmmcl_close_pair p;
  if (!fmmcl_close_pairs(3, plan->n_sources, sources, plan->n_targets,
                         plan->targets_are_sources ? NULL : targets, 1, &p))
    return 0;
  const int dbl = plan->opt.precision == FMMCL_DOUBLE;
  const double u = dbl ? 0x1.0p-53 : 0x1.0p-24, frames = dist[plan->n_sources + p.target] + dist[p.source];
  return u * frames / p.distance > (dbl ? 1e-13 : 1e-5);
}

static fmmcl_status build_kernel(fmmcl_plan plan, ext_state *s) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  const fmmcl_kernel_desc *kd = fmmcl_kernel_describe(o->kernel);
  const fmmcl_tuned_kernel tk = o->kernel == FMMCL_LAPLACE_3D ? FMMCL_TUNED_P2P_LAPLACE3D_EXT : kd->p2p_tuned;
  const char *name = o->kernel == FMMCL_LAPLACE_3D ? "p2p_laplace3d_ext" : kd->p2p_kernel;
  char cls[16], defines[512];
  snprintf(cls, sizeof cls, "rec%zu", s->rec + (s->compensate ? 0 : LOW));
  fmmcl_params par;
  fmmcl_status st = fmmcl_tuned_params(ctx, tk, o->precision, cls, &par);
  if (st) return st;
  fmmcl_params_defines(&par, defines, sizeof defines);
  s->wgs = (size_t)fmmcl_params_get(&par, "WGS", 64);
  if (s->wgs == 0 || s->wgs > ctx->dev.info.max_work_group_size)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "kernel parameters \"%s\" do not fit device %s (max work-group %zu)", defines,
                      ctx->dev.info.device_name, ctx->dev.info.max_work_group_size);
  snprintf(plan->build_options, sizeof plan->build_options,
           "%s %s -DGRADIENT=%d -DHESSIAN=%d -DDIPOLES=%d -DSTRESSLETS=%d -DPRESSURE=%d -DCOMPENSATE=%d",
           o->precision == FMMCL_DOUBLE ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", defines, o->gradient != 0,
           o->hessian != 0, o->dipoles != 0, o->stresslets != 0, o->pressure != 0, s->compensate);
  st = fmmcl_program_build(ctx, "direct/p2p_ext.cl", plan->build_options, &s->program, NULL);
  return st ? st : fmmcl_create_kernel(ctx, s->program, "direct/p2p_ext.cl", name, &s->kernel);
}

static fmmcl_status ext_create(fmmcl_plan plan, const double *sources, const double *targets) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  ext_state *s = calloc(1, sizeof *s);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->impl = s;
  s->real_size = o->precision == FMMCL_DOUBLE ? 8 : 4;
  s->rec = o->kernel == FMMCL_LAPLACE_3D     ? LAPLACE_REC
           : o->kernel == FMMCL_HELMHOLTZ_3D ? HELMHOLTZ_REC
                                             : STOKES_REC;
  s->nout = o->kernel == FMMCL_LAPLACE_3D     ? LAPLACE_OUT
            : o->kernel == FMMCL_HELMHOLTZ_3D ? HELMHOLTZ_OUT
                                              : STOKES_OUT;
  double centre[3], half = 0;
  s->dist = malloc((plan->n_sources + plan->n_targets) * sizeof *s->dist);
  fmmcl_status st =
      s->dist ? frame(ctx, plan->n_sources, sources, plan->n_targets, targets, centre, &half, s->dist)
              : fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (st) return st;
  s->compensate = needs_low_parts(plan, sources, targets, s->dist);
  if (s->compensate) s->rec += LOW;
  st = build_kernel(plan, s);
  if (st) return st;
  /* and in units of a power of two near the largest offset (exact both ways):
   * the pair bodies take up to r^-5, which in float overflows below
   * r = 2e-8 and underflows above 5e7 in world units, though every result
   * is representable; scaled, the box is about 1 wide and only the ratio
   * of the closest pair to the box matters. The strengths and results are
   * rescaled to match (ext_evaluate). */
  int e = 0;
  if (half > 0) frexp(half, &e);
  s->scale = ldexp(1.0, e);
  s->ns_pad = round_up(plan->n_sources, s->wgs);
  s->nt_pad = round_up(plan->n_targets, s->wgs);
  const size_t rs = s->real_size, src_bytes = s->rec * s->ns_pad * rs, tgt_bytes = 8 * s->nt_pad * rs,
               out_bytes = s->nout * s->nt_pad * rs;
  st = fmmcl_pinned_alloc(ctx, src_bytes, 1, &s->src_pin);
  if (!st) st = fmmcl_pinned_alloc(ctx, out_bytes, 0, &s->out_pin);
  void *tgt_host = st ? NULL : calloc(1, tgt_bytes);
  if (!st && !tgt_host) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (st) return st;
  /* padding sources carry no strength and sit outside the box: never at r = 0 */
  const size_t low = s->rec - LOW;
  for (size_t i = 0; i < s->ns_pad; i++)
    for (size_t c = 0; c < 3; c++) {
      double hi = 3.0, lo = 0.0;
      if (i < plan->n_sources) offset(sources[3 * i + c], centre[c], s->scale, rs, &hi, &lo);
      fmmcl_put_real(s->src_pin.ptr, rs, i * s->rec + c, hi);
      if (s->compensate) fmmcl_put_real(s->src_pin.ptr, rs, i * s->rec + low + c, lo);
    }
  for (size_t i = 0; i < plan->n_targets; i++)
    for (size_t c = 0; c < 3; c++) {
      double hi, lo;
      offset(targets[3 * i + c], centre[c], s->scale, rs, &hi, &lo);
      fmmcl_put_real(tgt_host, rs, 8 * i + c, hi);
      fmmcl_put_real(tgt_host, rs, 8 * i + 4 + c, lo);
    }
  st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, src_bytes, NULL, &s->src);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, tgt_bytes, NULL, &s->tgt);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_WRITE_ONLY, out_bytes, NULL, &s->out);
  if (!st) {
    cl_int err = clEnqueueWriteBuffer(ctx->queue, s->tgt, CL_TRUE, 0, tgt_bytes, tgt_host, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "uploading targets: %s", fmmcl_cl_error_name(err));
  }
  free(tgt_host);
  return st;
}

/* Copies per values of source i from v (0 where v is NULL), times f, to
 * its record at offset at. */
static void put_strengths(ext_state *s, size_t i, size_t at, const double *v, size_t per, double f) {
  for (size_t c = 0; c < per; c++)
    fmmcl_put_real(s->src_pin.ptr, s->real_size, i * s->rec + at + c, v ? v[i * per + c] * f : 0.0);
}

/* In the device's units (lengths over h = scale) each sum is its world
 * value times a power of h; dipoles and stresslet strengths, which carry
 * one more power of 1/r than charges and forces, are divided by h so that
 * every term of an output shares that power: potentials and velocities
 * come out h times the world value, gradients and pressures h^2, Hessians
 * h^3 (unpack_targets divides). Helmholtz's k r is kept by k h. */
static void pack_sources(fmmcl_plan plan, ext_state *s, const fmmcl_sources_data *in) {
  const fmmcl_kernel k = plan->opt.kernel;
  const double d = 1 / s->scale;
#pragma omp parallel for schedule(static) if (plan->n_sources > 65536)
  for (size_t i = 0; i < plan->n_sources; i++) {
    if (k == FMMCL_LAPLACE_3D) {
      put_strengths(s, i, 3, in->charges, 1, 1);
      put_strengths(s, i, 4, in->dipoles, 3, d);
    } else if (k == FMMCL_HELMHOLTZ_3D) {
      put_strengths(s, i, 3, in->complex_charges, 2, 1);
      put_strengths(s, i, 5, in->complex_dipoles, 6, d);
    } else {
      put_strengths(s, i, 3, in->forces, 3, 1);
      put_strengths(s, i, 6, in->stresslet_strengths, 3, d);
      put_strengths(s, i, 9, in->stresslet_orientations, 3, 1);
    }
  }
}

/* Copies per results of target i from offset at of its result to v,
 * divided by h^power (pack_sources says which). */
static void get_results(const ext_state *s, size_t i, size_t at, double *v, size_t per, int power) {
  if (!v) return;
  const int e = -power * ilogb(s->scale);
  for (size_t c = 0; c < per; c++)
    v[i * per + c] = ldexp(fmmcl_get_real(s->out_pin.ptr, s->real_size, i * s->nout + at + c), e);
}

static void unpack_targets(fmmcl_plan plan, const ext_state *s, fmmcl_targets_data *out) {
  const fmmcl_kernel k = plan->opt.kernel;
#pragma omp parallel for schedule(static) if (plan->n_targets > 65536)
  for (size_t i = 0; i < plan->n_targets; i++) {
    if (k == FMMCL_LAPLACE_3D) {
      get_results(s, i, 0, out->potential, 1, 1);
      get_results(s, i, 1, out->gradient, 3, 2);
      get_results(s, i, 4, out->hessian, 6, 3);
    } else if (k == FMMCL_HELMHOLTZ_3D) {
      get_results(s, i, 0, out->complex_potential, 2, 1);
      get_results(s, i, 2, out->complex_gradient, 6, 2);
    } else {
      get_results(s, i, 0, out->velocity, 3, 1);
      get_results(s, i, 3, out->pressure, 1, 2);
    }
  }
}

static fmmcl_status ext_evaluate(fmmcl_plan plan, const fmmcl_sources_data *in, fmmcl_targets_data *out) {
  fmmcl_context ctx = plan->ctx;
  ext_state *s = plan->impl;
  const size_t rs = s->real_size;
  double t0 = fmmcl_wall_seconds();
  pack_sources(plan, s, in);
  FMMCL_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, s->src, CL_TRUE, 0, s->rec * s->ns_pad * rs,
                                         s->src_pin.ptr, 0, NULL, NULL));
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  const cl_uint ns = (cl_uint)s->ns_pad;
  fmmcl_status st = plan->opt.kernel == FMMCL_HELMHOLTZ_3D
                        ? FMMCL_KERNEL_ARGS(ctx, s->kernel, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_UINT(ns),
                                            FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(s->out),
                                            FMMCL_ARG_REAL(plan->opt.wavenumber_re * s->scale, rs),
                                            FMMCL_ARG_REAL(plan->opt.wavenumber_im * s->scale, rs))
                        : FMMCL_KERNEL_ARGS(ctx, s->kernel, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_UINT(ns),
                                            FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(s->out));
  fmmcl_event_log log = {0};
  if (!st) st = fmmcl_launch(ctx, s->kernel, s->nt_pad, s->wgs, &log, "p2p");
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  if (st || fl) return st ? st : fl;
  double t1 = fmmcl_wall_seconds();
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, s->out, CL_TRUE, 0, s->nout * s->nt_pad * rs,
                                        s->out_pin.ptr, 0, NULL, NULL));
  unpack_targets(plan, s, out);
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t1);
  return FMMCL_SUCCESS;
}

/* fmmcl_plan_execute: charges, potential and gradient, for a LAPLACE_3D
 * plan; the other kernels' values are not real scalars. */
static fmmcl_status ext_execute(fmmcl_plan plan, const double *charges, double *potential, double *gradient) {
  if (plan->opt.kernel != FMMCL_LAPLACE_3D)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "fmmcl_plan_execute: the %s kernel takes no real charges: use fmmcl_plan_evaluate",
                      fmmcl_kernel_describe(plan->opt.kernel)->title);
  const fmmcl_sources_data in = {.charges = charges};
  fmmcl_targets_data out = {.potential = potential, .gradient = gradient};
  return ext_evaluate(plan, &in, &out);
}

static void ext_destroy(fmmcl_plan plan) {
  ext_state *s = plan->impl;
  if (!s) return;
  fmmcl_release(&s->kernel);
  fmmcl_release(&s->program);
  fmmcl_release(&s->src);
  fmmcl_release(&s->tgt);
  fmmcl_release(&s->out);
  fmmcl_pinned_free(&s->src_pin);
  fmmcl_pinned_free(&s->out_pin);
  free(s->dist);
  free(s);
  plan->impl = NULL;
}

/* One frame for every point: its distance from the centre. */
static double ext_frame_size(fmmcl_plan plan, int target, size_t index) {
  const ext_state *s = plan->impl;
  return s->dist[(target ? plan->n_sources : 0) + index];
}

/* Offsets as hi + lo pairs resolve their frames to about u^2 (float:
 * the pair's own float arithmetic still rounds at u, which the estimate's
 * 4u term covers). */
static double ext_offset_rounding(fmmcl_plan plan) {
  const ext_state *s = plan->impl;
  const int dbl = plan->opt.precision == FMMCL_DOUBLE;
  if (!s->compensate) return dbl ? 0x1.0p-53 : 0x1.0p-24;
  return dbl ? 0x1.0p-104 : 0x1.0p-46;
}

const fmmcl_method_ops fmmcl_direct_ext_ops = {.name = "direct_ext",
                                               .create = ext_create,
                                               .execute = ext_execute,
                                               .destroy = ext_destroy,
                                               .counts = fmmcl_direct_counts,
                                               .error_bound = fmmcl_direct_error_bound,
                                               .evaluate = ext_evaluate,
                                               .frame_size = ext_frame_size,
                                               .offset_rounding = ext_offset_rounding};
