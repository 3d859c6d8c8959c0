/* bbfmm_plan.c — the black-box FMM plan (FMMCL_BBFMM): order and tree
 * depth, the program with the kernel function compiled in, device buffers,
 * the P2P indirection arrays, and the counts of its work. Two trees: a
 * uniform octree (the V list is the classic 316 transfer vectors, the U list
 * the 27 neighbours, M2L one batched GEMM per class; no W or X lists) for
 * points that fill their box, and the adaptive octree with U/V/W/X lists
 * (bbfmm_adaptive.c) where most of the uniform tree would be empty. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"
#include "plan/registry.h"
#include "tuning/tuning.h"

/* The error of the host reference falls about 6x per order from ~2e-3 at
 * n = 3 (tests/check_bbfmm.c prints it), hence the order for a tolerance. */
static int order_for(const fmmcl_plan_options *o) {
  if (o->order > 0) return o->order;
  if (o->tolerance <= 0) return 5;
  int n = 3 + (int)ceil(log(2e-3 / o->tolerance) / log(6.0));
  return n < 3 ? 3 : n > FMMCL_BBFMM_MAX_ORDER ? FMMCL_BBFMM_MAX_ORDER : n;
}

static fmmcl_status zeroed(fmmcl_context ctx, size_t bytes, cl_mem *out) {
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, bytes, NULL, out);
  if (st) return st;
  unsigned char zero = 0;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, *out, &zero, 1, 0, bytes, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

/* The P2P indirection arrays: non-empty target leaves, and per leaf its
 * non-empty source neighbours (itself included). */
static fmmcl_status p2p_lists(fmmcl_plan plan, fmmcl_bbfmm_state *s) {
  const fmmcl_bbfmm_tree *t = &s->tree;
  int g = 1 << t->depth;
  size_t nleaf = (size_t)g * g * g, nc = 0, nn = 0;
  uint32_t *cl = malloc(nleaf * sizeof *cl), *ns = malloc((nleaf + 1) * sizeof *ns),
           *ni = malloc(27 * nleaf * sizeof *ni);
  if (!cl || !ns || !ni) {
    free(cl), free(ns), free(ni);
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  s->work_p2p = 0;
  for (size_t leaf = 0; leaf < nleaf; leaf++) {
    uint32_t nt = t->tgt_start[leaf + 1] - t->tgt_start[leaf];
    if (!nt) continue;
    int i[3] = {(int)(leaf / ((size_t)g * g)), (int)(leaf / g % g), (int)(leaf % g)};
    cl[nc] = (uint32_t)leaf;
    ns[nc++] = (uint32_t)nn;
    for (int d = 0; d < 27; d++) {
      int x = i[0] + d / 9 - 1, y = i[1] + d / 3 % 3 - 1, z = i[2] + d % 3 - 1;
      if (x < 0 || y < 0 || z < 0 || x >= g || y >= g || z >= g) continue;
      size_t sl = ((size_t)x * g + y) * g + z;
      uint32_t nsrc = t->src_start[sl + 1] - t->src_start[sl];
      if (!nsrc) continue;
      ni[nn++] = (uint32_t)sl;
      s->work_p2p += (double)nt * nsrc;
    }
  }
  ns[nc] = (uint32_t)nn;
  s->n_clusters = nc;
  fmmcl_context ctx = plan->ctx;
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nc * sizeof *cl, cl, &s->cluster);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (nc + 1) * sizeof *ns, ns, &s->nbr_start);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nn * sizeof *ni, ni, &s->nbr_index);
  free(cl), free(ns), free(ni);
  return st;
}

/* M2L translations between cells of level l (all of them, empty or not):
 * the interaction rule factorises over dimensions. */
static double m2l_count(int l) {
  long g = 1L << l;
  double a = 0, b = 0;
  for (long i = 0; i < g; i++)
    for (long t = -3; t <= 3; t++) {
      long j = i + t;
      if (j < 0 || j >= g || labs((j >> 1) - (i >> 1)) > 1) continue;
      a += 1;
      if (labs(t) <= 1) b += 1;
    }
  return a * a * a - b * b * b;
}

/* The Chebyshev tables both trees use: nodes, T_k(x_m), child-parent S. */
static fmmcl_status tables(fmmcl_plan plan, fmmcl_bbfmm_state *s) {
  fmmcl_context ctx = plan->ctx;
  size_t rs = s->real_size, n = s->n;
  double x[FMMCL_BBFMM_MAX_ORDER], tk[FMMCL_BBFMM_MAX_ORDER * FMMCL_BBFMM_MAX_ORDER],
      sc[2 * FMMCL_BBFMM_MAX_ORDER * FMMCL_BBFMM_MAX_ORDER];
  fmmcl_bbfmm_nodes(s->n, x);
  for (size_t m = 0; m < n; m++)
    for (size_t k = 0; k < n; k++)
      tk[m * n + k] = cos(k * (2.0 * m + 1) * 3.14159265358979323846 / (2.0 * n));
  fmmcl_bbfmm_child_table(s->n, sc);
  unsigned char tables[3][2 * FMMCL_BBFMM_MAX_ORDER * FMMCL_BBFMM_MAX_ORDER * sizeof(double)];
  const double *src_tables[3] = {x, tk, sc};
  size_t counts[3] = {n, n * n, 2 * n * n};
  for (int k = 0; k < 3; k++)
    for (size_t i = 0; i < counts[k]; i++)
      if (rs == sizeof(float)) ((float *)tables[k])[i] = (float)src_tables[k][i];
      else ((double *)tables[k])[i] = src_tables[k][i];
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, counts[0] * rs, tables[0], &s->nodes);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, counts[1] * rs, tables[1], &s->tk);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, counts[2] * rs, tables[2], &s->schild);
  return st;
}

static fmmcl_status device_data(fmmcl_plan plan, fmmcl_bbfmm_state *s) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_bbfmm_tree *t = &s->tree;
  size_t rs = s->real_size, nleaf = (size_t)1 << (3 * t->depth);
  /* every leaf its own frame, its centre */
  double *frame = malloc(3 * nleaf * sizeof *frame);
  if (!frame) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t l = 0; l < nleaf; l++) fmmcl_bbfmm_leaf_frame(t, l, frame + 3 * l);
  s->frame_size = sqrt(3.0) * t->half / (double)((size_t)1 << t->depth);
  fmmcl_status st = fmmcl_bbfmm_point_buffers(ctx, s, t->center, nleaf, frame, t->src_start, t->tgt_start,
                                              t->src, t->ns, t->tgt, t->nt);
  free(frame);
  if (!st)
    st =
        fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (nleaf + 1) * sizeof(uint32_t), t->src_start, &s->src_start);
  if (!st)
    st =
        fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (nleaf + 1) * sizeof(uint32_t), t->tgt_start, &s->tgt_start);
  if (!st) st = p2p_lists(plan, s);
  s->work_m2l = s->work_m2m = 0;
  for (int l = 2; l <= t->depth && !st; l++) {
    fmmcl_bbfmm_level *lv = &s->lv[l];
    size_t gp = ((size_t)1 << (l - 1)) + 2;
    lv->pp = gp * gp * gp;
    lv->slots = 8 * lv->pp;
    lv->guard = gp * gp + gp + 1;
    s->work_m2l += m2l_count(l);
    if (l < t->depth) s->work_m2m += 8.0 * (double)((size_t)1 << (3 * l));
    st = zeroed(ctx, lv->slots * s->n3 * rs, &lv->w); /* padding columns stay zero */
    if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, lv->slots * s->n3 * rs, NULL, &lv->l);
  }
  return st;
}

fmmcl_status fmmcl_bbfmm_params(fmmcl_context ctx, fmmcl_precision precision, int nord, size_t *p2p_wgs,
                                char *defines, size_t len) {
  char cls[16];
  snprintf(cls, sizeof cls, "p%d", nord);
  fmmcl_params par;
  fmmcl_status st = fmmcl_tuned_params(ctx, FMMCL_TUNED_BBFMM, precision, cls, &par);
  if (st) return st;
  *p2p_wgs = (size_t)fmmcl_params_get(&par, "WGS", 64); /* unset (a partial override): bbfmm.cl's own */
  if (*p2p_wgs < 1 || *p2p_wgs > ctx->dev.info.max_work_group_size)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "bbfmm.cl: WGS=%zu outside 1..%zu on %s", *p2p_wgs,
                      ctx->dev.info.max_work_group_size, ctx->dev.info.device_name);
  fmmcl_params_defines(&par, defines, len);
  return FMMCL_SUCCESS;
}

static fmmcl_status build_program(fmmcl_plan plan, fmmcl_bbfmm_state *s) {
  fmmcl_context ctx = plan->ctx;
  char *pre = fmmcl_bbfmm_prelude(&s->k, s->real_size == sizeof(float));
  if (!pre) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  snprintf(plan->build_options, sizeof plan->build_options, "%s -DNORD=%d %s",
           plan->opt.precision == FMMCL_DOUBLE ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", s->n, s->defines);
  fmmcl_status st =
      fmmcl_program_build_prelude(ctx, "bbfmm/bbfmm.cl", pre, plan->build_options, &s->program, NULL);
  free(pre);
  if (st) return st;
  const char *names[6] = {"bbfmm_m2l_matrix", "bbfmm_p2m", "bbfmm_m2m",
                          "bbfmm_l2l",        "bbfmm_l2p", "bbfmm_p2p"};
  cl_kernel *dst[6] = {&s->k_matrix, &s->k_p2m, &s->k_m2m, &s->k_l2l, &s->k_l2p, &s->k_p2p};
  return fmmcl_create_kernels(ctx, s->program, "bbfmm/bbfmm.cl", 6, names, dst);
}

fmmcl_status fmmcl_bbfmm_state_new(fmmcl_plan plan, const char *no_gradient, fmmcl_bbfmm_state **out) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_bbfmm_state *s = *out = calloc(1, sizeof *s);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->impl = s;
  fmmcl_status st = fmmcl_bbfmm_kfun_from_options(ctx, &plan->opt, &s->k);
  if (st) return st;
  if (plan->opt.gradient) return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "%s", no_gradient);
  if (s->k.expression) {
    s->expression = strdup(s->k.expression);
    if (!s->expression) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    s->k.expression = s->expression;
  }
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_bbfmm_point_buffers(fmmcl_context ctx, fmmcl_bbfmm_state *s, const double center[3],
                                       size_t nleaf, const double *frame, const uint32_t *src_start,
                                       const uint32_t *tgt_start, const double *sources, size_t ns,
                                       const double *targets, size_t nt) {
  const size_t rs = s->real_size;
  s->src_host = fmmcl_bbfmm_points_real4(center, sources, ns, rs, frame, src_start, nleaf);
  unsigned char *tgt = fmmcl_bbfmm_points_real4(center, targets, nt, rs, frame, tgt_start, nleaf);
  unsigned char *f4 = calloc(nleaf ? nleaf : 1, 4 * rs);
  s->pot_host = malloc(nt * rs);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!s->src_host || !tgt || !f4 || !s->pot_host)
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t k = 0; k < nleaf && frame && !st; k++)
    for (int d = 0; d < 3; d++) fmmcl_put_real(f4, rs, 4 * k + d, frame[3 * k + d]); /* exact in float */
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (nleaf ? nleaf : 1) * 4 * rs, f4, &s->frame);
  free(f4);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, ns * 4 * rs, NULL, &s->src);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nt * 4 * rs, tgt, &s->tgt);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nt * rs, NULL, &s->pot);
  free(tgt);
  return st;
}

static fmmcl_status bbfmm_create(fmmcl_plan plan, const double *sources, const double *targets) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  fmmcl_bbfmm_state *s;
  fmmcl_status st = fmmcl_bbfmm_state_new(plan, "BBFMM computes the potential only: set gradient = 0", &s);
  if (st) return st;
  s->n = order_for(o);
  if (s->n < FMMCL_BBFMM_MIN_ORDER || s->n > FMMCL_BBFMM_MAX_ORDER)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "BBFMM order must be in %d..%d, got %d",
                      FMMCL_BBFMM_MIN_ORDER, FMMCL_BBFMM_MAX_ORDER, s->n);
  s->n3 = s->n * s->n * s->n;
  if ((size_t)s->n3 > ctx->dev.info.max_work_group_size)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "BBFMM order %d needs work-groups of %d items; %s allows %zu", s->n, s->n3,
                      ctx->dev.info.device_name, ctx->dev.info.max_work_group_size);
  if (o->leaf_size < 0) return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "leaf_size must be >= 0");
  s->real_size = o->precision == FMMCL_DOUBLE ? sizeof(double) : sizeof(float);
  if ((st = fmmcl_bbfmm_params(ctx, o->precision, s->n, &s->p2p_wgs, s->defines, sizeof s->defines)))
    return st;
  const int q = o->leaf_size > 0 ? o->leaf_size : fmmcl_bbfmm_default_leaf(s->n3);
  if (fmmcl_bbfmm_tree_build(plan->n_sources, sources, plan->n_targets, targets, 0, q, &s->tree))
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for the tree");
  if (s->real_size == sizeof(float) && s->tree.half > 1e30)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "coordinates span %g: beyond single precision; use FMMCL_DOUBLE", 2 * s->tree.half);
  st = build_program(plan, s);
  if (!st) st = tables(plan, s);
  if (!st && fmmcl_bbfmm_want_adaptive(&s->tree)) {
    st = fmmcl_bbfmm_adaptive_create(plan, s, sources, targets);
    if (!st) st = fmmcl_bbfmm_operators(plan, s);
    if (!st) st = fmmcl_bbfmm_adaptive_finish(plan, s);
    if (!st) FMMCL_CL_TRY(ctx, clFinish(ctx->queue));
    return st;
  }
  if (!st) st = device_data(plan, s);
  if (!st) st = fmmcl_bbfmm_operators(plan, s);
  for (int l = 2; l <= s->tree.depth && !st; l++) {
    fmmcl_bbfmm_level *lv = &s->lv[l];
    st = zeroed(ctx, (lv->slots + 2 * lv->guard) * lv->rank * s->real_size, &lv->wc); /* guards stay zero */
    if (!st)
      st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, lv->slots * lv->rank * s->real_size, NULL, &lv->lc);
  }
  if (!st) FMMCL_CL_TRY(ctx, clFinish(ctx->queue));
  return st;
}

void fmmcl_bbfmm_destroy(fmmcl_plan plan) {
  fmmcl_bbfmm_state *s = plan->impl;
  if (!s) return;
  cl_kernel *ks[6] = {&s->k_matrix, &s->k_p2m, &s->k_m2m, &s->k_l2l, &s->k_l2p, &s->k_p2p};
  for (int i = 0; i < 6; i++) fmmcl_release(ks[i]);
  fmmcl_release(&s->program);
  cl_mem *ms[] = {&s->src,       &s->tgt, &s->src_start, &s->tgt_start, &s->cluster, &s->nbr_start,
                  &s->nbr_index, &s->tk,  &s->schild,    &s->nodes,     &s->pot,     &s->frame};
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) fmmcl_release(ms[i]);
  for (int l = 0; l <= FMMCL_BBFMM_MAX_DEPTH; l++) {
    fmmcl_bbfmm_level *lv = &s->lv[l];
    fmmcl_release(&lv->w), fmmcl_release(&lv->l), fmmcl_release(&lv->wc), fmmcl_release(&lv->lc);
    fmmcl_release(&lv->u), fmmcl_release(&lv->v), fmmcl_release(&lv->c);
    free(lv->a_off), free(lv->b_off), free(lv->c_off);
  }
  fmmcl_bbfmm_tree_free(&s->tree);
  fmmcl_bbfmm_adaptive_destroy(s->ad);
  free(s->src_host), free(s->pot_host), free(s->expression);
  free(s);
  plan->impl = NULL;
}

static fmmcl_status bbfmm_counts(fmmcl_plan plan, const char *phase, double *work) {
  fmmcl_bbfmm_state *s = plan->impl;
  *work = 0;
  if (!strcmp(phase, "p2p")) *work = s->work_p2p;
  else if (!strcmp(phase, "p2m")) *work = (double)plan->n_sources;
  else if (!strcmp(phase, "l2p")) *work = (double)plan->n_targets;
  else if (!strcmp(phase, "m2m") || !strcmp(phase, "l2l")) *work = s->work_m2m;
  else if (!strcmp(phase, "m2l")) *work = s->work_m2l;
  else if (s->ad && !strcmp(phase, "m2p")) *work = (double)s->ad->entries[2]; /* (target leaf, cell) pairs */
  else if (s->ad && !strcmp(phase, "p2l")) *work = (double)s->ad->entries[3]; /* (cell, source leaf) pairs */
  return FMMCL_SUCCESS;
}

int fmmcl_bbfmm_want_adaptive(const fmmcl_bbfmm_tree *t) {
  const char *env = getenv("FMMCL_BBFMM_TREE");
  if (env && !strcmp(env, "uniform")) return 0;
  if (env && !strcmp(env, "adaptive")) return 1;
  size_t nleaf = (size_t)1 << (3 * t->depth), empty = 0;
  for (size_t l = 0; l < nleaf; l++)
    empty += t->src_start[l + 1] == t->src_start[l] && t->tgt_start[l + 1] == t->tgt_start[l];
  return 2 * empty > nleaf;
}

int fmmcl_bbfmm_plan_lists(fmmcl_plan plan, size_t entries[4]) {
  fmmcl_bbfmm_state *s = plan->impl;
  for (int i = 0; i < 4; i++) entries[i] = s->ad ? s->ad->entries[i] : 0;
  return s->ad != NULL;
}

static int bbfmm_order(fmmcl_plan plan) { return ((const fmmcl_bbfmm_state *)plan->impl)->n; }

/* Device coordinates are relative to the point's leaf (uniform tree: every
 * leaf's half diagonal; adaptive: its own leaf's). */
static double bbfmm_frame_size(fmmcl_plan plan, int target, size_t index) {
  const fmmcl_bbfmm_state *s = plan->impl;
  if (s->ad) return fmmcl_bbfmm_adaptive_frame_size(s->ad, target, index);
  return s->frame_size;
}

const fmmcl_method_ops fmmcl_bbfmm_ops = {.name = "bbfmm",
                                          .create = bbfmm_create,
                                          .execute = fmmcl_bbfmm_execute,
                                          .destroy = fmmcl_bbfmm_destroy,
                                          .counts = bbfmm_counts,
                                          .order = bbfmm_order,
                                          .frame_size = bbfmm_frame_size};
