/* fgt_method.c — the FGT method on the device: builds cl/fgt.cl for the
 * plan's order, uploads the sorted points, boxes and lists once, and per
 * execution runs moments, Taylor coefficients, H2T, direct, Hermite and
 * Taylor evaluation; and its error bound. The cut-off direct sum is the same
 * plan with direct pairs only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/fgt/fgt.h"
#include "model/model.h"
#include "plan/registry.h"
#include "tuning/tuning.h"

typedef struct tiles {
  cl_mem box, first, count;
  size_t n;
} tiles;

typedef struct fgt_state {
  fmmcl_fgt_setup s;
  cl_program program;
  cl_kernel k_mom, k_heval, k_tcoef, k_h2t, k_teval, k_direct, k_direct_points, k_gather, k_scatter;
  fmmcl_fgt_device_bins bins; /* binned on the device: its sorted points, starts, owners */
  int device_binned;
  cl_mem sperm, tperm, q_in, out_caller; /* permutations; charges and potentials in the caller's order */
  int direct_points; /* 1: the direct tiles would be mostly idle, one target per work-item instead */
  cl_mem tgt_box;    /* box of each sorted target */
  size_t rs, wgs, cpl;
  fmmcl_params params; /* fgt.cl's tuned values, WGS and CPL as fitted */
  int expansions;      /* 0: every pair is direct, the program is built with P = 1 */
  /* sx, tx: points relative to their box's frame; hcentre, tb_centre: box centres relative to theirs */
  cl_mem sx, q, sb_start, hbox, hcentre, alpha, M, tx, tbox, tb_centre, tslot, B, out;
  cl_mem sframe, tframe, hframe; /* frames of the source boxes, target boxes, Hermite slots */
  cl_mem lstart[FMMCL_FGT_KINDS], list[FMMCL_FGT_KINDS];
  tiles t_direct, t_herm, t_tay;
  void *stage; /* host staging of charges and results, max(ns, nt) REALs */
} fgt_state;

/* n doubles as the plan's REAL, transposed to structure of arrays when
 * dim > 0 (v[i * dim + k] -> k * n + i) */
static fmmcl_status upload_real(fmmcl_context ctx, size_t rs, const double *v, size_t n, int dim,
                                cl_mem *buf) {
  const size_t count = n * (size_t)(dim > 0 ? dim : 1);
  void *h = malloc(count * rs + 8);
  if (!h) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < (dim > 0 ? dim : 1); k++) {
      const size_t from = dim > 0 ? i * dim + k : i, to = dim > 0 ? k * n + i : i;
      if (rs == 4) ((float *)h)[to] = (float)v[from];
      else ((double *)h)[to] = v[from];
    }
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, count * rs, h, buf);
  free(h);
  return st;
}

/* A set's sorted points relative to their box's frame, structure of arrays. */
static fmmcl_status upload_local(fmmcl_context ctx, size_t rs, const fmmcl_fgt_boxes *b, const double *origin,
                                 int dim, cl_mem *buf) {
  void *h = malloc(b->n * dim * rs + 8);
  if (!h) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t j = 0; j < b->nbox; j++)
    for (size_t i = b->start[j]; i < b->start[j + 1]; i++)
      for (int k = 0; k < dim; k++)
        fmmcl_put_real(h, rs, k * b->n + i, fmmcl_fgt_local(b, origin, dim, i, j, k));
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, b->n * dim * rs, h, buf);
  free(h);
  return st;
}

/* The centres (local 1: relative to their frames) or the frames of the
 * boxes of b listed in which (all when NULL), n of them, as the plan's REAL. */
static fmmcl_status upload_boxes(fmmcl_context ctx, size_t rs, const fmmcl_fgt_params *par,
                                 const fmmcl_fgt_boxes *b, const uint32_t *which, size_t n, int local,
                                 cl_mem *buf) {
  const int dim = par->dim;
  double *v = malloc(n * dim * sizeof *v + 8);
  if (!v) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t i = 0; i < n; i++) {
    const size_t j = which ? which[i] : i;
    for (int k = 0; k < dim; k++) {
      const double f = b->frame[j * dim + k];
      v[i * dim + k] = local ? ((double)b->cell[j * dim + k] + 0.5) * par->side - f : f;
    }
  }
  fmmcl_status st = upload_real(ctx, rs, v, n, dim, buf);
  free(v);
  return st;
}

static fmmcl_status upload_u32(fmmcl_context ctx, const size_t *v, size_t n, cl_mem *buf) {
  uint32_t *h = malloc(n * sizeof *h + 4);
  if (!h) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t i = 0; i < n; i++) h[i] = (uint32_t)v[i];
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * sizeof *h, h, buf);
  free(h);
  return st;
}

/* Tiles of up to wgs targets of each target box with a non-empty list of
 * kind (TAYLOR: each box with a Taylor expansion). */
static fmmcl_status tiles_build(fmmcl_context ctx, const fmmcl_fgt_setup *s, size_t wgs, int kind, tiles *t) {
  const size_t ntb = s->tgt.nbox;
  size_t n = 0;
  for (int pass = 0; pass < 2; pass++) {
    uint32_t *box = NULL, *first = NULL, *count = NULL;
    if (pass) {
      box = malloc(n * 4 + 4), first = malloc(n * 4 + 4), count = malloc(n * 4 + 4);
      if (!box || !first || !count) {
        free(box);
        free(first);
        free(count);
        return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
      }
    }
    size_t m = 0;
    for (size_t b = 0; b < ntb; b++) {
      const int want =
          kind == FMMCL_FGT_TAYLOR ? s->tslot[b] >= 0 : s->list_start[kind][b + 1] > s->list_start[kind][b];
      if (!want) continue;
      for (size_t i = s->tgt.start[b]; i < s->tgt.start[b + 1]; i += wgs, m++)
        if (pass) {
          box[m] = (uint32_t)b;
          first[m] = (uint32_t)i;
          count[m] = (uint32_t)(s->tgt.start[b + 1] - i < wgs ? s->tgt.start[b + 1] - i : wgs);
        }
    }
    n = m;
    if (pass) {
      t->n = n;
      fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * 4, box, &t->box);
      if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * 4, first, &t->first);
      if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * 4, count, &t->count);
      free(box);
      free(first);
      free(count);
      if (st) return st;
    }
  }
  return FMMCL_SUCCESS;
}

/* Local memory of fgt.cl's kernels: cpl clusters of P terms and dim
 * coordinates, the multi-indices, and dim x p powers per work-item. */
static size_t local_need(int dim, size_t p, size_t P, size_t rs, size_t cpl, size_t wgs) {
  return cpl * (P + dim) * rs + P * dim + (size_t)dim * p * wgs * rs + 512;
}

int fmmcl_fgt_expansions_fit(int dim, int p, int nterms, size_t real_size, size_t local_bytes) {
  return local_need(dim, (size_t)p, (size_t)nterms, real_size, 1, 8) <= local_bytes;
}

/* The tuned work-group size and clusters per load, lowered to what fits the
 * device's local memory; FMMCL_ERROR_UNSUPPORTED when even small
 * work-groups do not fit. */
static fmmcl_status choose_sizes(fmmcl_plan plan, fgt_state *st) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_fgt_params *par = &st->s.par;
  const size_t local = (size_t)ctx->dev.info.local_mem_bytes, rs = st->rs;
  const size_t P = st->expansions ? (size_t)par->nterms : 1, p = st->expansions ? (size_t)par->p : 1;
  char cls[32];
  snprintf(cls, sizeof cls, "dim%dp%d", par->dim, par->p);
  fmmcl_status e = fmmcl_tuned_params(ctx, FMMCL_TUNED_FGT, plan->opt.precision, cls, &st->params);
  if (e) return e;
  /* unset (a partial override): fgt.cl's own defaults */
  size_t wgs = (size_t)fmmcl_params_get(&st->params, "WGS", 64);
  const int cap = fmmcl_params_get(&st->params, "CPL", 4);
  while (wgs > ctx->dev.info.max_work_group_size) wgs /= 2;
  if (wgs < 1 || cap < 1)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "fgt.cl: WGS=%zu CPL=%d", wgs, cap);
  st->cpl = (local / 4) / (P * rs);
  st->cpl = st->cpl < 1 ? 1 : st->cpl > (size_t)cap ? (size_t)cap : st->cpl;
  for (;; wgs /= 2) {
    if (local_need(par->dim, p, P, rs, st->cpl, wgs) <= local) break;
    if (wgs <= 8)
      return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                        "FGT order %d in %d dimensions needs more local memory than %s has (%zu bytes)",
                        par->p, par->dim, ctx->dev.info.device_name, local);
  }
  st->wgs = wgs;
  fmmcl_params_set(&st->params, "WGS", (int)st->wgs);
  fmmcl_params_set(&st->params, "CPL", (int)st->cpl);
  return FMMCL_SUCCESS;
}

static fmmcl_status build_program(fmmcl_plan plan, fgt_state *st) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_fgt_params *par = &st->s.par;
  /* without expansions only fgt_direct runs: a short P keeps the other
   * kernels' local arrays within every device's limit, and its term loops
   * have one term */
  if (!st->expansions) fmmcl_params_set(&st->params, "UNROLL", 1);
  char defines[256];
  fmmcl_params_defines(&st->params, defines, sizeof defines);
  snprintf(plan->build_options, sizeof plan->build_options, "%s -DDIM=%d -DP=%d -DNTERMS=%d %s",
           plan->opt.precision == FMMCL_DOUBLE ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", par->dim,
           st->expansions ? par->p : 1, st->expansions ? par->nterms : 1, defines);
  fmmcl_status s = fmmcl_program_build(ctx, "fgt/fgt.cl", plan->build_options, &st->program, NULL);
  if (s) return s;
  const char *names[] = {"fgt_hermite_moments", "fgt_hermite_eval", "fgt_taylor_coefs",  "fgt_h2t",
                         "fgt_taylor_eval",     "fgt_direct",       "fgt_direct_points", "fgt_gather",
                         "fgt_scatter"};
  cl_kernel *ks[] = {&st->k_mom,    &st->k_heval,         &st->k_tcoef,  &st->k_h2t,    &st->k_teval,
                     &st->k_direct, &st->k_direct_points, &st->k_gather, &st->k_scatter};
  return fmmcl_create_kernels(ctx, st->program, "fgt/fgt.cl", 9, names, ks);
}

/* Geometry on the device: HERMITE and H2T lists hold Hermite slots. */
static fmmcl_status upload_geometry(fmmcl_plan plan, fgt_state *st) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_fgt_setup *s = &st->s;
  const int dim = s->par.dim;
  const size_t rs = st->rs;
  fmmcl_status e = FMMCL_SUCCESS;
  if (st->device_binned) { /* the points, starts, owners and permutations are on the device already */
    st->sx = st->bins.src.x, st->tx = st->bins.tgt.x, st->sb_start = st->bins.src.start;
    st->tgt_box = st->bins.tgt.owner, st->sperm = st->bins.src.perm, st->tperm = st->bins.tgt.perm;
    st->bins.src.x = st->bins.tgt.x = st->bins.src.start = st->bins.tgt.owner = NULL;
    st->bins.src.perm = st->bins.tgt.perm = NULL;
    fmmcl_fgt_device_set_release(&st->bins.src);
    fmmcl_fgt_device_set_release(&st->bins.tgt);
  } else {
    e = upload_local(ctx, rs, &s->src, s->origin, dim, &st->sx);
    if (!e) e = upload_local(ctx, rs, &s->tgt, s->origin, dim, &st->tx);
    if (!e) e = upload_u32(ctx, s->src.start, s->src.nbox + 1, &st->sb_start);
    if (!e) e = upload_u32(ctx, s->src.perm, s->src.n, &st->sperm);
    if (!e) e = upload_u32(ctx, s->tgt.perm, s->tgt.n, &st->tperm);
  }
  if (!e) e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, s->src.n * rs, NULL, &st->q_in);
  if (!e) e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, s->tgt.n * rs, NULL, &st->out_caller);
  if (!e) e = upload_boxes(ctx, rs, &s->par, &s->tgt, NULL, s->tgt.nbox, 1, &st->tb_centre);
  if (!e) e = upload_boxes(ctx, rs, &s->par, &s->tgt, NULL, s->tgt.nbox, 0, &st->tframe);
  if (!e) e = upload_boxes(ctx, rs, &s->par, &s->src, NULL, s->src.nbox, 0, &st->sframe);
  if (!e) e = upload_boxes(ctx, rs, &s->par, &s->src, s->hbox, s->nh, 1, &st->hcentre);
  if (!e) e = upload_boxes(ctx, rs, &s->par, &s->src, s->hbox, s->nh, 0, &st->hframe);
  if (!e) e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (size_t)s->par.nterms * dim, s->alpha, &st->alpha);
  if (!e) e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, s->nh * 4, s->hbox, &st->hbox);
  if (!e) e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, s->ntay * 4, s->tbox, &st->tbox);
  if (!e) e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, s->tgt.nbox * 4, s->tslot, &st->tslot);
  if (!e) e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, s->nh * s->par.nterms * rs, NULL, &st->M);
  if (!e) e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, s->ntay * s->par.nterms * rs, NULL, &st->B);
  if (!e) e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, s->tgt.n * rs, NULL, &st->out);
  if (!e) e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, s->src.n * rs, NULL, &st->q);
  for (int k = 0; k < FMMCL_FGT_KINDS && !e; k++) {
    const size_t n = s->list_start[k][s->tgt.nbox];
    e = upload_u32(ctx, s->list_start[k], s->tgt.nbox + 1, &st->lstart[k]);
    if (e) break;
    uint32_t *l = malloc(n * 4 + 4);
    if (!l) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < n; i++)
      l[i] = k == FMMCL_FGT_HERMITE || k == FMMCL_FGT_H2T ? (uint32_t)s->hslot[s->list[k][i]] : s->list[k][i];
    e = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * 4, l, &st->list[k]);
    free(l);
  }
  if (!e) e = tiles_build(ctx, s, st->wgs, FMMCL_FGT_DIRECT, &st->t_direct);
  if (!e) { /* targets in direct tiles over the tiles' capacity */
    size_t busy = 0;
    for (size_t b = 0; b < s->tgt.nbox; b++)
      if (s->list_start[FMMCL_FGT_DIRECT][b + 1] > s->list_start[FMMCL_FGT_DIRECT][b])
        busy += s->tgt.start[b + 1] - s->tgt.start[b];
    st->direct_points = st->t_direct.n && busy < st->t_direct.n * st->wgs / 2;
  }
  if (!e && !st->tgt_box) {
    size_t *owner = malloc(s->tgt.n * sizeof *owner + 8);
    if (!owner) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (size_t b = 0; b < s->tgt.nbox; b++)
      for (size_t i = s->tgt.start[b]; i < s->tgt.start[b + 1]; i++) owner[i] = b;
    e = upload_u32(ctx, owner, s->tgt.n, &st->tgt_box);
    free(owner);
  }
  if (!e) e = tiles_build(ctx, s, st->wgs, FMMCL_FGT_HERMITE, &st->t_herm);
  if (!e) e = tiles_build(ctx, s, st->wgs, FMMCL_FGT_TAYLOR, &st->t_tay);
  return e;
}

/* The FGT's plan, or (cutoff) the cut-off direct sum's: the same binning,
 * lists and direct kernels, with boxes sized for direct pairs alone. */
static fmmcl_status create_as(fmmcl_plan plan, const double *sources, const double *targets, int cutoff) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  const char *what = cutoff ? "the cut-off direct sum" : "FGT";
  if (o->kernel != FMMCL_GAUSSIAN)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "%s needs the GAUSSIAN kernel", what);
  if (o->gradient)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "%s computes the potential only: create the plan with gradient = 0", what);
  fgt_state *st = calloc(1, sizeof *st);
  if (!st) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->impl = st;
  st->rs = o->precision == FMMCL_DOUBLE ? 8 : 4;
  const int dim = o->dim;
  double extent[FMMCL_MAX_DIM];
  for (int k = 0; k < dim; k++) {
    double lo = sources[k], hi = sources[k];
    for (size_t i = 0; i < plan->n_sources; i++) {
      double v = sources[i * dim + k];
      lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
    for (size_t i = 0; i < plan->n_targets; i++) {
      double v = targets[i * dim + k];
      lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
    extent[k] = (hi - lo) / (1.4142135623730951 * o->sigma);
  }
  /* neither tolerance nor order: 1e-6, the benchmark's default */
  const double tol = o->tolerance > 0 || o->order > 0 ? o->tolerance : 1e-6;
  fmmcl_fgt_params par;
  /* h_n grows like 2^(n/2) sqrt(n!): the H2T's h_{2p-2} leaves float's
   * range past p = 20 (and float cannot use the accuracy that needs it) */
  const int max_p = o->precision == FMMCL_SINGLE ? 20 : FMMCL_FGT_MAX_P;
  fmmcl_status e =
      cutoff ? fmmcl_model_gauss_cutoff_params(ctx, o, plan->n_sources, plan->n_targets, extent, &par)
             : fmmcl_fgt_choose(ctx, dim, o->sigma, tol, o->order, plan->n_sources, extent, max_p, &par);
  const int force = cutoff ? FMMCL_FGT_DIRECT : fmmcl_fgt_forced_kind();
  /* binning on the device where it gives the host's boxes bit for bit
   * (fp64); FMMCL_FGT_HOST_BINNING=1 keeps it on the host (comparisons) */
  const char *hb = getenv("FMMCL_FGT_HOST_BINNING");
  st->device_binned = !(hb && *hb && strcmp(hb, "0") != 0) &&
                      fmmcl_fgt_bin_device_available(ctx, plan->n_sources) &&
                      fmmcl_fgt_bin_device_available(ctx, plan->n_targets);
  st->bins.real_size = st->rs;
  fmmcl_fgt_device_bins *bins = st->device_binned ? &st->bins : NULL;
  if (!e)
    e = fmmcl_fgt_setup_build_device(ctx, &par, plan->n_sources, sources, plan->n_targets, targets, force,
                                     bins, &st->s);
  st->expansions = !e && (st->s.nh || st->s.ntay);
  int sized = 0;
  if (!e) e = choose_sizes(plan, st), sized = 1;
  if (sized && e == FMMCL_ERROR_UNSUPPORTED && force == FMMCL_FGT_AUTO) {
    /* expansions this long do not fit the device's local memory: the work
     * estimate's only other choice is the direct sum of every near pair */
    fmmcl_clear_error(ctx);
    fmmcl_fgt_setup_free(&st->s);
    fmmcl_fgt_device_set_release(&st->bins.src);
    fmmcl_fgt_device_set_release(&st->bins.tgt);
    e = fmmcl_fgt_setup_build_device(ctx, &par, plan->n_sources, sources, plan->n_targets, targets,
                                     FMMCL_FGT_DIRECT, bins, &st->s);
    st->expansions = 0;
    if (!e) e = choose_sizes(plan, st);
  }
  if (!e) e = build_program(plan, st);
  if (!e) e = upload_geometry(plan, st);
  if (!e) {
    size_t n = plan->n_sources > plan->n_targets ? plan->n_sources : plan->n_targets;
    st->stage = malloc(n * st->rs);
    if (!st->stage) e = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  return e;
}

static fmmcl_status fgt_create(fmmcl_plan plan, const double *sources, const double *targets) {
  return create_as(plan, sources, targets, 0);
}

static fmmcl_status cutoff_create(fmmcl_plan plan, const double *sources, const double *targets) {
  return create_as(plan, sources, targets, 1);
}

#define M_ FMMCL_ARG_MEM
#define U_ FMMCL_ARG_UINT

/* Launches k on groups work-groups of wgs (or over n items when groups is
 * 0), timed under name in log (flushed at the end of fgt_execute). */
static fmmcl_status launch(fmmcl_plan plan, fmmcl_event_log *log, cl_kernel k, size_t groups, size_t items,
                           size_t wgs, const char *name) {
  return fmmcl_launch(plan->ctx, k, groups ? groups * wgs : fmmcl_round_up(items, wgs), wgs, log, name);
}

static fmmcl_status fgt_execute(fmmcl_plan plan, const double *charges, double *potential, double *gradient) {
  fmmcl_context ctx = plan->ctx;
  fgt_state *st = plan->impl;
  const fmmcl_fgt_setup *s = &st->s;
  const size_t rs = st->rs, wgs = st->wgs;
  double t0 = fmmcl_wall_seconds();
  if (rs == 4)
    for (size_t i = 0; i < s->src.n; i++) ((float *)st->stage)[i] = (float)charges[i];
  const void *qh = rs == 4 ? st->stage : (const void *)charges;
  FMMCL_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, st->q_in, CL_TRUE, 0, s->src.n * rs, qh, 0, NULL, NULL));
  const double zero = 0;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, st->out, &zero, rs, 0, s->tgt.n * rs, 0, NULL, NULL));
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  cl_uint ns = (cl_uint)s->src.n, nt = (cl_uint)s->tgt.n, nh = (cl_uint)s->nh, ntb = (cl_uint)s->tgt.nbox;
  cl_uint nsb = (cl_uint)s->src.nbox;
  fmmcl_event_log log = {0};
  /* charges into the sorted order on the device */
  fmmcl_status e = FMMCL_KERNEL_ARGS(ctx, st->k_gather, 0, U_(ns), M_(st->sperm), M_(st->q_in), M_(st->q));
  if (!e) e = launch(plan, &log, st->k_gather, 0, s->src.n, wgs, "permute");
  if (!e && s->nh) {
    e = FMMCL_KERNEL_ARGS(ctx, st->k_mom, 0, M_(st->sx), U_(ns), M_(st->q), M_(st->sb_start), M_(st->hbox),
                          M_(st->hcentre), U_(nh), M_(st->alpha), M_(st->M));
    if (!e) e = launch(plan, &log, st->k_mom, 0, s->nh * (size_t)s->par.nterms, wgs, "hermite_moments");
  }
  if (!e && s->ntay) {
    e = FMMCL_KERNEL_ARGS(ctx, st->k_tcoef, 0, M_(st->sx), U_(ns), M_(st->q), M_(st->sb_start),
                          M_(st->lstart[FMMCL_FGT_TAYLOR]), M_(st->list[FMMCL_FGT_TAYLOR]), M_(st->tbox),
                          M_(st->tb_centre), U_(ntb), M_(st->alpha), M_(st->B), M_(st->sframe), U_(nsb),
                          M_(st->tframe));
    if (!e) e = launch(plan, &log, st->k_tcoef, s->ntay, 0, wgs, "taylor_coefs");
  }
  if (!e && s->ntay && s->pairs[FMMCL_FGT_H2T] > 0) {
    e = FMMCL_KERNEL_ARGS(ctx, st->k_h2t, 0, M_(st->lstart[FMMCL_FGT_H2T]), M_(st->list[FMMCL_FGT_H2T]),
                          M_(st->hcentre), U_(nh), M_(st->M), M_(st->tbox), M_(st->tb_centre), U_(ntb),
                          M_(st->alpha), M_(st->B), M_(st->hframe), M_(st->tframe));
    if (!e) e = launch(plan, &log, st->k_h2t, s->ntay, 0, wgs, "h2t");
  }
  if (!e && st->t_direct.n && st->direct_points) {
    e = FMMCL_KERNEL_ARGS(ctx, st->k_direct_points, 0, M_(st->sx), U_(ns), M_(st->q), M_(st->sb_start),
                          M_(st->lstart[FMMCL_FGT_DIRECT]), M_(st->list[FMMCL_FGT_DIRECT]), M_(st->tx),
                          U_(nt), M_(st->tgt_box), M_(st->out), M_(st->sframe), U_(nsb), M_(st->tframe),
                          U_(ntb));
    if (!e) e = launch(plan, &log, st->k_direct_points, 0, s->tgt.n, wgs, "direct");
  } else if (!e && st->t_direct.n) {
    e = FMMCL_KERNEL_ARGS(ctx, st->k_direct, 0, M_(st->sx), U_(ns), M_(st->q), M_(st->sb_start),
                          M_(st->lstart[FMMCL_FGT_DIRECT]), M_(st->list[FMMCL_FGT_DIRECT]), M_(st->tx),
                          U_(nt), M_(st->t_direct.box), M_(st->t_direct.first), M_(st->t_direct.count),
                          M_(st->out), M_(st->sframe), U_(nsb), M_(st->tframe), U_(ntb));
    if (!e) e = launch(plan, &log, st->k_direct, st->t_direct.n, 0, wgs, "direct");
  }
  if (!e && st->t_herm.n) {
    e = FMMCL_KERNEL_ARGS(ctx, st->k_heval, 0, M_(st->tx), U_(nt), M_(st->t_herm.box), M_(st->t_herm.first),
                          M_(st->t_herm.count), M_(st->lstart[FMMCL_FGT_HERMITE]),
                          M_(st->list[FMMCL_FGT_HERMITE]), M_(st->hcentre), U_(nh), M_(st->M), M_(st->alpha),
                          M_(st->out), M_(st->hframe), M_(st->tframe), U_(ntb));
    if (!e) e = launch(plan, &log, st->k_heval, st->t_herm.n, 0, wgs, "hermite_eval");
  }
  if (!e && st->t_tay.n) {
    e = FMMCL_KERNEL_ARGS(ctx, st->k_teval, 0, M_(st->tx), U_(nt), M_(st->t_tay.box), M_(st->t_tay.first),
                          M_(st->t_tay.count), M_(st->tslot), M_(st->tb_centre), U_(ntb), M_(st->B),
                          M_(st->alpha), M_(st->out));
    if (!e) e = launch(plan, &log, st->k_teval, st->t_tay.n, 0, wgs, "taylor_eval");
  }
  if (!e) { /* potentials back into the caller's order on the device */
    e = FMMCL_KERNEL_ARGS(ctx, st->k_scatter, 0, U_(nt), M_(st->tperm), M_(st->out), M_(st->out_caller));
    if (!e) e = launch(plan, &log, st->k_scatter, 0, s->tgt.n, wgs, "permute");
  }
  /* flushed on failure too: the events must not leak */
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  if (e || fl) return e ? e : fl;
  double t1 = fmmcl_wall_seconds();
  void *ph = rs == 4 ? st->stage : (void *)potential;
  FMMCL_CL_TRY(ctx,
               clEnqueueReadBuffer(ctx->queue, st->out_caller, CL_TRUE, 0, s->tgt.n * rs, ph, 0, NULL, NULL));
  if (rs == 4)
    for (size_t i = 0; i < s->tgt.n; i++) potential[i] = (double)((float *)st->stage)[i];
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t1);
  (void)gradient;
  return FMMCL_SUCCESS;
}

static void fgt_destroy(fmmcl_plan plan) {
  fgt_state *st = plan->impl;
  if (!st) return;
  cl_kernel *ks[] = {&st->k_mom,    &st->k_heval,         &st->k_tcoef,  &st->k_h2t,    &st->k_teval,
                     &st->k_direct, &st->k_direct_points, &st->k_gather, &st->k_scatter};
  for (int i = 0; i < 9; i++) fmmcl_release(ks[i]);
  fmmcl_release(&st->program);
  cl_mem *ms[] = {&st->sx,     &st->q,       &st->sb_start, &st->hbox,      &st->hcentre, &st->alpha,
                  &st->M,      &st->tx,      &st->tbox,     &st->tb_centre, &st->tslot,   &st->B,
                  &st->out,    &st->tgt_box, &st->sperm,    &st->tperm,     &st->q_in,    &st->out_caller,
                  &st->sframe, &st->tframe,  &st->hframe};
  fmmcl_fgt_device_set_release(&st->bins.src);
  fmmcl_fgt_device_set_release(&st->bins.tgt);
  for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) fmmcl_release(ms[i]);
  for (int k = 0; k < FMMCL_FGT_KINDS; k++) {
    fmmcl_release(&st->lstart[k]);
    fmmcl_release(&st->list[k]);
  }
  tiles *ts[] = {&st->t_direct, &st->t_herm, &st->t_tay};
  for (int i = 0; i < 3; i++) {
    fmmcl_release(&ts[i]->box);
    fmmcl_release(&ts[i]->first);
    fmmcl_release(&ts[i]->count);
  }
  fmmcl_fgt_setup_free(&st->s);
  free(st->stage);
  free(st);
  plan->impl = NULL;
}

/* Work counts (see fmmcl_plan_counts): p2p direct point pairs, p2m sources
 * expanded into Hermite moments, m2p (target, source box) Hermite
 * evaluations, p2l (source, target box) Taylor contributions, m2l H2T
 * translations, l2p targets evaluated from Taylor expansions. */
static fmmcl_status fgt_counts(fmmcl_plan plan, const char *phase, double *work) {
  const fmmcl_fgt_setup *s = &((fgt_state *)plan->impl)->s;
  *work = 0;
  if (strcmp(phase, "p2p") == 0) *work = s->pairs[FMMCL_FGT_DIRECT];
  else if (strcmp(phase, "m2p") == 0) *work = s->pairs[FMMCL_FGT_HERMITE];
  else if (strcmp(phase, "p2l") == 0) *work = s->pairs[FMMCL_FGT_TAYLOR];
  else if (strcmp(phase, "m2l") == 0) *work = s->pairs[FMMCL_FGT_H2T];
  else if (strcmp(phase, "p2m") == 0)
    for (size_t h = 0; h < s->nh; h++)
      *work += (double)(s->src.start[s->hbox[h] + 1] - s->src.start[s->hbox[h]]);
  else if (strcmp(phase, "l2p") == 0)
    for (size_t m = 0; m < s->ntay; m++)
      *work += (double)(s->tgt.start[s->tbox[m] + 1] - s->tgt.start[s->tbox[m]]);
  return FMMCL_SUCCESS;
}

/* The bound the parameters were chosen for (see fmmcl_plan_error_bound). */
static fmmcl_status fgt_error_bound(fmmcl_plan plan, double *bound) {
  *bound = ((fgt_state *)plan->impl)->s.par.bound;
  return FMMCL_SUCCESS;
}

static int fgt_order(fmmcl_plan plan) { return ((const fgt_state *)plan->impl)->s.par.p; }

/* Device coordinates are relative to the point's box's frame, within half
 * a unit of its centre (world units). */
static double fgt_frame_size(fmmcl_plan plan, int target, size_t index) {
  (void)target, (void)index;
  const fmmcl_fgt_setup *s = &((const fgt_state *)plan->impl)->s;
  return sqrt((double)s->par.dim) * 0.5 * (s->par.side + s->unit) * s->par.h;
}

const fmmcl_method_ops fmmcl_fgt_ops = {.name = "fgt",
                                        .create = fgt_create,
                                        .execute = fgt_execute,
                                        .destroy = fgt_destroy,
                                        .counts = fgt_counts,
                                        .error_bound = fgt_error_bound,
                                        .order = fgt_order,
                                        .frame_size = fgt_frame_size};

/* The cut-off direct sum: the FGT's plan without expansions (order 0). */
const fmmcl_method_ops fmmcl_cutoff_ops = {.name = "cutoff",
                                           .create = cutoff_create,
                                           .execute = fgt_execute,
                                           .destroy = fgt_destroy,
                                           .counts = fgt_counts,
                                           .error_bound = fgt_error_bound,
                                           .frame_size = fgt_frame_size};

/* The plan's geometry, for tests comparing the device with the reference. */
const fmmcl_fgt_setup *fmmcl_fgt_plan_setup(fmmcl_plan plan) {
  return fmmcl_plan_runs(plan, fmmcl_fgt_ops.name) || fmmcl_plan_runs(plan, fmmcl_cutoff_ops.name)
             ? &((fgt_state *)plan->impl)->s
             : NULL;
}

fmmcl_status fmmcl_fgt_plan_coefficients(fmmcl_plan plan, double *moments, double *taylor) {
  if (!fmmcl_fgt_plan_setup(plan)) return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT, "not an FGT plan");
  fmmcl_context ctx = plan->ctx;
  fgt_state *st = plan->impl;
  const size_t P = st->expansions ? (size_t)st->s.par.nterms : 0;
  const size_t counts[2] = {st->s.nh * P, st->s.ntay * P};
  cl_mem bufs[2] = {st->M, st->B};
  double *outs[2] = {moments, taylor};
  for (int k = 0; k < 2; k++) {
    if (!outs[k] || !counts[k]) continue;
    void *h = malloc(counts[k] * st->rs);
    if (!h) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    cl_int err = clEnqueueReadBuffer(ctx->queue, bufs[k], CL_TRUE, 0, counts[k] * st->rs, h, 0, NULL, NULL);
    for (size_t i = 0; i < counts[k] && err == CL_SUCCESS; i++)
      outs[k][i] = st->rs == 4 ? (double)((float *)h)[i] : ((double *)h)[i];
    free(h);
    FMMCL_CL_TRY(ctx, err);
  }
  return FMMCL_SUCCESS;
}
