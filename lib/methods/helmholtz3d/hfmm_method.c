/* hfmm_method.c — the 3D Helmholtz FMM's ops: the order rule, and the
 * evaluation (sources packed in tree order, the phases launched on the
 * device, results unpermuted). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/launch.h"
#include "methods/helmholtz3d/hfmm.h"
#include "plan/registry.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* The error model: the Laplace FMM's rule (fmm3d_order.c: the same cells,
 * the same V-list geometry), which the expansions follow while the cells
 * are small against the wavelength, times a factor measured on uniform,
 * clustered and surface sets of 3000 points at orders 8 to 20: 3 for the potential,
 * 10 for gradients, 100 for gradients of dipoles; and times exp(Im k d / 2),
 * as a damped kernel's field has decayed over a far pair while the
 * expansions' truncation error has not. Large cells then need the
 * bandwidth of a cell d across, the excess-bandwidth rule
 * |Re k| d + 1.8 D^(2/3) (|Re k| d)^(1/3) for D digits. */
static double model_error(int p, const void *arg) {
  return *(const double *)arg * (0.5 * pow(0.35, p + 1) + 2e-4 * pow(0.64, p + 1));
}

/* The order_from_tolerance factor for cells d across (see model_error). */
static double error_factor(const fmmcl_plan_options *opt, double d) {
  return (opt->gradient ? (opt->dipoles ? 100 : 10) : 3) * exp(fmin(opt->wavenumber_im * d / 2, 50));
}

/* The excess-bandwidth order for cells d across (see model_error). */
static int bandwidth_order(const fmmcl_plan_options *opt, double d) {
  const double tol = opt->tolerance > 0 ? opt->tolerance : opt->precision == FMMCL_SINGLE ? 1e-4 : 1e-6;
  const double kd = fabs(opt->wavenumber_re) * d, digits = -log10(tol);
  return (int)ceil(kd + 1.8 * pow(digits, 2.0 / 3) * cbrt(kd));
}

static int max_order(const fmmcl_plan_options *opt) {
  return opt->precision == FMMCL_SINGLE ? HFMM_MAX_ORDER_SINGLE : HFMM_MAX_ORDER_DOUBLE;
}

fmmcl_status hfmm_choose_order(fmmcl_context ctx, const fmmcl_plan_options *opt, double d, int *order) {
  const int single = opt->precision == FMMCL_SINGLE;
  const int max = max_order(opt);
  const char *limit = single ? "single precision" : "double precision";
  if (opt->order > 0) {
    if (opt->order > max)
      return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                        "HELMHOLTZ_3D FMM order %d is above the %s limit %d", opt->order, limit, max);
    *order = opt->order;
    return FMMCL_SUCCESS;
  }
  const double factor = error_factor(opt, d);
  int p0;
  fmmcl_plan_options o = *opt;
  o.order = 0;
  fmmcl_status st = fmmcl_order_from_tolerance(ctx, &o, 200, model_error, &factor, NULL, &p0);
  if (st) return st;
  const double tol = opt->tolerance > 0 ? opt->tolerance : single ? 1e-4 : 1e-6;
  const double kd = fabs(opt->wavenumber_re) * d;
  const int p = p0 > bandwidth_order(opt, d) ? p0 : bandwidth_order(opt, d);
  if (p > max)
    return fmmcl_fail(
        ctx, FMMCL_ERROR_UNSUPPORTED,
        "HELMHOLTZ_3D FMM: its largest expanded cells are %.3g wavelengths and %.3g "
        "decay lengths across (k = %g%+gi, diameter %g) and need order %d for tolerance %g, above the %s "
        "limit %d: the FMM serves low to moderate frequencies (up to about %s "
        "wavelengths across the points' bounding cube, less for damped k: Im k times the cells' "
        "diameter above a few); use method direct",
        kd / (2 * M_PI), opt->wavenumber_im * d, opt->wavenumber_re, opt->wavenumber_im, d, p, tol, limit,
        max, single ? "2.5" : "5.5");
  *order = p < 1 ? 1 : p;
  return FMMCL_SUCCESS;
}

/* Below this many source-target pairs FMMCL_AUTO keeps the direct sum:
 * where the FMM's execution overtook the direct sum's on the GPU measured
 * (benchmarks/README.md, "Helmholtz FMM on the H100"). */
#define HFMM_AUTO_PAIRS 5e8

fmmcl_method hfmm_auto_method(const fmmcl_plan_options *opt, size_t n_sources, const double *sources,
                              size_t n_targets, const double *targets) {
  if ((double)n_sources * (double)n_targets < HFMM_AUTO_PAIRS) return FMMCL_DIRECT;
  if (opt->wavenumber_re == 0 && opt->wavenumber_im == 0) return FMMCL_DIRECT; /* the FMM refuses k = 0 */
  if (opt->order > max_order(opt)) return FMMCL_DIRECT;
  /* the points' bounding cube; an FMM expands cells of level 2 at the
   * coarsest, a quarter of it across */
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int set = 0; set < 2; set++) {
    const double *x = set ? targets : sources;
    const size_t n = set ? n_targets : n_sources;
    for (size_t i = 0; x && i < n; i++)
      for (int d = 0; d < 3; d++) lo[d] = fmin(lo[d], x[3 * i + d]), hi[d] = fmax(hi[d], x[3 * i + d]);
  }
  double side = 0;
  for (int d = 0; d < 3; d++) side = fmax(side, hi[d] - lo[d]);
  const double diameter = sqrt(3.0) * side / 4;
  if (opt->order > 0) return bandwidth_order(opt, diameter) <= opt->order ? FMMCL_FMM : FMMCL_DIRECT;
  const double factor = error_factor(opt, diameter);
  const double tol = opt->tolerance > 0 ? opt->tolerance : opt->precision == FMMCL_SINGLE ? 1e-4 : 1e-6;
  int p0 = max_order(opt) + 1;
  for (int p = 1; p <= max_order(opt); p++)
    if (model_error(p, &factor) <= tol) {
      p0 = p;
      break;
    }
  return p0 <= max_order(opt) && bandwidth_order(opt, diameter) <= max_order(opt) ? FMMCL_FMM : FMMCL_DIRECT;
}

static fmmcl_status hfmm_create(fmmcl_plan plan, const double *sources, const double *targets) {
  if (plan->opt.wavenumber_re == 0 && plan->opt.wavenumber_im == 0)
    return fmmcl_fail(
        plan->ctx, FMMCL_ERROR_UNSUPPORTED,
        "HELMHOLTZ_3D FMM: wavenumber 0 is the Laplace kernel; use LAPLACE_3D (or method direct)");
  hfmm_state *s = calloc(1, sizeof *s);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->impl = s;
  return hfmm_setup(plan, s, sources, targets);
}

/* Sources in tree order as kernels/helmholtz3d.h's records. */
static void pack_sources(fmmcl_plan plan, hfmm_state *s, const fmmcl_sources_data *in) {
  const fmmcl_tree3d *t = s->tree;
  const size_t rs = s->real_size;
  void *buf = s->src_pin.ptr;
#pragma omp parallel for schedule(static) if (plan->n_sources > 65536)
  for (size_t i = 0; i < plan->n_sources; i++) {
    const size_t j = t->source_perm[i];
    for (int d = 0; d < 3; d++) fmmcl_put_real(buf, rs, 12 * i + (size_t)d, s->src_local[3 * i + d]);
    for (int c = 0; c < 2; c++)
      fmmcl_put_real(buf, rs, 12 * i + 3 + (size_t)c,
                     in->complex_charges ? in->complex_charges[2 * j + c] : 0);
    for (int c = 0; c < 6; c++)
      fmmcl_put_real(buf, rs, 12 * i + 5 + (size_t)c,
                     in->complex_dipoles ? in->complex_dipoles[6 * j + c] / s->unit : 0);
    fmmcl_put_real(buf, rs, 12 * i + 11, 0);
  }
}

static fmmcl_status list_args(fmmcl_context ctx, cl_kernel k, const hfmm_list *l) {
  return FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(l->rows), FMMCL_ARG_MEM(l->begin),
                           FMMCL_ARG_MEM(l->entries));
}

static fmmcl_status run_p2e(fmmcl_plan plan, hfmm_state *s, const hfmm_list *l, cl_mem E, int outgoing,
                            fmmcl_event_log *log, const char *phase) {
  if (!l->n_rows) return FMMCL_SUCCESS;
  fmmcl_context ctx = plan->ctx;
  const size_t rs = s->real_size;
  fmmcl_status st = list_args(ctx, s->k_p2e, l);
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, s->k_p2e, 3, FMMCL_ARG_MEM(s->cell_src), FMMCL_ARG_MEM(s->centre),
                           FMMCL_ARG_MEM(s->scale), FMMCL_ARG_MEM(s->src), FMMCL_ARG_MEM(E),
                           FMMCL_ARG_REAL(s->k_re * s->unit, rs), FMMCL_ARG_REAL(s->k_im * s->unit, rs),
                           FMMCL_ARG_INT(outgoing), FMMCL_ARG_INT(s->order),
                           FMMCL_ARG_INT(plan->opt.dipoles != 0));
  return st ? st : fmmcl_launch(ctx, s->k_p2e, l->n_rows * s->wgs, s->wgs, log, phase);
}

static fmmcl_status run_e2p(fmmcl_plan plan, hfmm_state *s, const hfmm_list *l, cl_mem E, int outgoing,
                            fmmcl_event_log *log, const char *phase) {
  if (!l->n_rows) return FMMCL_SUCCESS;
  fmmcl_context ctx = plan->ctx;
  const size_t rs = s->real_size;
  fmmcl_status st = list_args(ctx, s->k_e2p, l);
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, s->k_e2p, 3, FMMCL_ARG_MEM(s->cell_tgt), FMMCL_ARG_MEM(s->centre),
                           FMMCL_ARG_MEM(s->scale), FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(E),
                           FMMCL_ARG_MEM(s->out), FMMCL_ARG_REAL(s->k_re * s->unit, rs),
                           FMMCL_ARG_REAL(s->k_im * s->unit, rs), FMMCL_ARG_INT(outgoing),
                           FMMCL_ARG_INT(s->order), FMMCL_ARG_INT(plan->opt.gradient != 0));
  return st ? st : fmmcl_launch(ctx, s->k_e2p, l->n_rows * s->wgs, s->wgs, log, phase);
}

static fmmcl_status run_translate(fmmcl_plan plan, hfmm_state *s, const hfmm_list *l, cl_mem in, cl_mem out,
                                  fmmcl_event_log *log, const char *phase) {
  if (!l->n_rows) return FMMCL_SUCCESS;
  fmmcl_context ctx = plan->ctx;
  fmmcl_status st = list_args(ctx, s->k_translate, l);
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, s->k_translate, 3, FMMCL_ARG_MEM(l->geo), FMMCL_ARG_MEM(l->phi),
                           FMMCL_ARG_MEM(s->dmat), FMMCL_ARG_MEM(s->coax), FMMCL_ARG_MEM(in),
                           FMMCL_ARG_MEM(out), FMMCL_ARG_INT(s->order));
  return st ? st : fmmcl_launch(ctx, s->k_translate, l->n_rows * s->wgs, s->wgs, log, phase);
}

fmmcl_status hfmm_run_m2l(fmmcl_plan plan, hfmm_state *s, fmmcl_event_log *log) {
  const hfmm_m2l_device *m = &s->m2l;
  if (!m->n_groups) return FMMCL_SUCCESS;
  fmmcl_context ctx = plan->ctx;
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, s->k_m2l, 0, FMMCL_ARG_MEM(m->targets), FMMCL_ARG_MEM(m->begin),
                                      FMMCL_ARG_MEM(m->sources), FMMCL_ARG_MEM(m->geo), FMMCL_ARG_MEM(m->eim),
                                      FMMCL_ARG_MEM(s->dmat), FMMCL_ARG_MEM(s->coax), FMMCL_ARG_MEM(s->M),
                                      FMMCL_ARG_MEM(s->L));
  return st ? st : fmmcl_launch(ctx, s->k_m2l, m->n_groups * (size_t)m->wgs, (size_t)m->wgs, log, "m2l");
}

static fmmcl_status run_p2p(fmmcl_plan plan, hfmm_state *s, fmmcl_event_log *log) {
  const hfmm_list *l = &s->p2p;
  if (!l->n_rows) return FMMCL_SUCCESS;
  fmmcl_context ctx = plan->ctx;
  const size_t rs = s->real_size;
  fmmcl_status st = list_args(ctx, s->k_p2p, l);
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, s->k_p2p, 3, FMMCL_ARG_MEM(s->cell_src), FMMCL_ARG_MEM(s->cell_tgt),
                           FMMCL_ARG_MEM(s->centre), FMMCL_ARG_MEM(s->src), FMMCL_ARG_MEM(s->tgt),
                           FMMCL_ARG_MEM(s->out), FMMCL_ARG_REAL(s->k_re * s->unit, rs),
                           FMMCL_ARG_REAL(s->k_im * s->unit, rs));
  return st ? st : fmmcl_launch(ctx, s->k_p2p, l->n_rows * s->p2p_wgs, s->p2p_wgs, log, "p2p");
}

static fmmcl_status zero(fmmcl_context ctx, cl_mem buf, size_t bytes) {
  const cl_uchar z = 0;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, buf, &z, 1, 0, bytes, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

static fmmcl_status hfmm_evaluate(fmmcl_plan plan, const fmmcl_sources_data *in, fmmcl_targets_data *out) {
  fmmcl_context ctx = plan->ctx;
  hfmm_state *s = plan->impl;
  const size_t rs = s->real_size, nt = plan->n_targets, nc = s->tree->n_cells;
  const size_t ncoef = (size_t)(s->order + 1) * (size_t)(s->order + 1);
  double t0 = fmmcl_wall_seconds();
  pack_sources(plan, s, in);
  FMMCL_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, s->src, CL_TRUE, 0, 12 * plan->n_sources * rs,
                                         s->src_pin.ptr, 0, NULL, NULL));
  fmmcl_status st = zero(ctx, s->M, 2 * nc * ncoef * rs);
  if (!st) st = zero(ctx, s->L, 2 * nc * ncoef * rs);
  if (!st) st = zero(ctx, s->out, 8 * nt * rs);
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  fmmcl_event_log log = {0};
  if (!st) st = run_p2e(plan, s, &s->p2m, s->M, 0, &log, "p2m");
  for (int l = s->n_levels - 1; !st && l >= 0; l--)
    st = run_translate(plan, s, &s->m2m[l], s->M, s->M, &log, "m2m");
  if (!st) st = hfmm_run_m2l(plan, s, &log);
  if (!st) st = run_p2e(plan, s, &s->p2l, s->L, 1, &log, "p2l");
  for (int l = 0; !st && l < s->n_levels; l++)
    st = run_translate(plan, s, &s->l2l[l], s->L, s->L, &log, "l2l");
  if (!st) st = run_e2p(plan, s, &s->l2p, s->L, 0, &log, "l2p");
  if (!st) st = run_e2p(plan, s, &s->m2p, s->M, 1, &log, "m2p");
  if (!st) st = run_p2p(plan, s, &log);
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  if (st || fl) return st ? st : fl;
  double t1 = fmmcl_wall_seconds();
  FMMCL_CL_TRY(
      ctx, clEnqueueReadBuffer(ctx->queue, s->out, CL_TRUE, 0, 8 * nt * rs, s->out_pin.ptr, 0, NULL, NULL));
  const size_t *perm = s->tree->target_perm;
  const double up = 1 / s->unit, ug = up * up;
#pragma omp parallel for schedule(static) if (nt > 65536)
  for (size_t i = 0; i < nt; i++) {
    const size_t j = perm[i];
    for (int c = 0; c < 2; c++)
      if (out->complex_potential)
        out->complex_potential[2 * j + c] = up * fmmcl_get_real(s->out_pin.ptr, rs, 8 * i + (size_t)c);
    for (int c = 0; c < 6; c++)
      if (out->complex_gradient)
        out->complex_gradient[6 * j + c] = ug * fmmcl_get_real(s->out_pin.ptr, rs, 8 * i + 2 + (size_t)c);
  }
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t1);
  return FMMCL_SUCCESS;
}

/* fmmcl_plan_execute carries real charges only: this kernel's are complex. */
static fmmcl_status hfmm_execute(fmmcl_plan plan, const double *charges, double *potential,
                                 double *gradient) {
  (void)charges, (void)potential, (void)gradient;
  return fmmcl_fail(
      plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
      "fmmcl_plan_execute: the HELMHOLTZ_3D kernel takes no real charges: use fmmcl_plan_evaluate");
}

static void hfmm_destroy(fmmcl_plan plan) {
  hfmm_state *s = plan->impl;
  if (!s) return;
  hfmm_release(s);
  free(s);
  plan->impl = NULL;
}

static int hfmm_order(fmmcl_plan plan) {
  const hfmm_state *s = plan->impl;
  return s ? s->order : 0;
}

const fmmcl_method_ops fmmcl_helmholtz3d_fmm_ops = {.name = "helmholtz3d_fmm",
                                                    .create = hfmm_create,
                                                    .execute = hfmm_execute,
                                                    .destroy = hfmm_destroy,
                                                    .order = hfmm_order,
                                                    .evaluate = hfmm_evaluate};
