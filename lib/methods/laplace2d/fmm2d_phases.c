/* fmm2d_phases.c — one execution of the 2D FMM on the device: charges in
 * (permuted into sorted order on the device), upward pass (P2M, M2M), M2L of every level in one launch and its
 * per-cell reduction, downward pass (L2L, L2P), near field (P2P), results
 * out in the caller's order (unsorted on the device). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace2d/fmm2d.h"

/* Kernel argument setting: i counts up, REAL scalars in the plan's precision. */
typedef struct { fmmcl_context ctx; cl_kernel k; cl_uint i; size_t real_size; cl_int err; } args;

static void arg_mem(args *a, cl_mem m) { if (!a->err) a->err = clSetKernelArg(a->k, a->i++, sizeof m, &m); }
static void arg_uint(args *a, size_t v) {
  cl_uint u = (cl_uint)v;
  if (!a->err) a->err = clSetKernelArg(a->k, a->i++, sizeof u, &u);
}
static void arg_real(args *a, double v) {
  float f = (float)v;
  if (!a->err) a->err = a->real_size == 4 ? clSetKernelArg(a->k, a->i++, sizeof f, &f)
                                          : clSetKernelArg(a->k, a->i++, sizeof v, &v);
}
static args start(fmm2d_state *s, fmmcl_context ctx, cl_kernel k) { return (args){ctx, k, 0, s->real_size, CL_SUCCESS}; }

/* Launches a over n work-items (rounded up to the group) and records its
 * event time under phase. */
static fmmcl_status launch(fmmcl_plan plan, args *a, size_t n, size_t local, const char *phase) {
  fmmcl_context ctx = plan->ctx;
  FMMCL_CL_TRY(ctx, a->err);
  if (n == 0) return FMMCL_SUCCESS;
  size_t global = (n + local - 1) / local * local;
  cl_event ev;
  FMMCL_CL_TRY(ctx, clEnqueueNDRangeKernel(ctx->queue, a->k, 1, NULL, &global, &local, 0, NULL, &ev));
  cl_int err = clWaitForEvents(1, &ev);
  double sec = fmmcl_event_seconds(ev);
  clReleaseEvent(ev);
  FMMCL_CL_TRY(ctx, err);
  fmmcl_plan_record(plan, phase, sec);
  return FMMCL_SUCCESS;
}

#define LOCAL 64 /* the simple operators: any size works; 64 fills a warp pair */

/* The permutations run on the device (as the 3D FMM's): the host only
 * streams the charges up in the caller's order and the results down. */
static fmmcl_status launch_elementwise(fmmcl_plan plan, args *a, size_t n) {
  FMMCL_CL_TRY(plan->ctx, a->err);
  if (n == 0) return FMMCL_SUCCESS;
  const size_t local = LOCAL, global = (n + local - 1) / local * local;
  FMMCL_CL_TRY(plan->ctx, clEnqueueNDRangeKernel(plan->ctx->queue, a->k, 1, NULL, &global, &local, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_fmm2d_upload_charges(fmmcl_plan plan, fmm2d_state *s, const double *charges) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_quadtree2d *t = s->tree;
  double t0 = fmmcl_wall_seconds();
  fmmcl_status up = fmmcl_upload_reals(ctx, s->real_size, charges, t->n_sources, s->q_pin.ptr, s->charges);
  if (up) return up;
  args a = start(s, ctx, s->k_charges);
  arg_mem(&a, s->charges), arg_mem(&a, s->src_perm), arg_uint(&a, t->n_sources), arg_mem(&a, s->src);
  fmmcl_status st = launch_elementwise(plan, &a, t->n_sources);
  if (st) return st;
  FMMCL_CL_TRY(ctx, clFinish(ctx->queue)); /* q_pin is reused by the next execute */
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}

static fmmcl_status zero(fmmcl_context ctx, cl_mem m, size_t bytes) {
  const cl_uint z = 0;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, m, &z, sizeof z, 0, bytes, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

static fmmcl_status upward(fmmcl_plan plan, fmm2d_state *s, unsigned mask) {
  const fmmcl_quadtree2d *t = s->tree;
  const int L = t->levels;
  fmmcl_status st = FMMCL_SUCCESS;
  if (mask & FMMCL_FMM2D_P2M) {
    args a = start(s, plan->ctx, s->k_p2m);
    const size_t nl = (size_t)1 << (2 * L);
    arg_uint(&a, nl), arg_uint(&a, fmmcl_quadtree2d_level_offset(L));
    arg_real(&a, 1.0 / fmmcl_quadtree2d_cell_side(t, L));
    arg_mem(&a, s->src), arg_mem(&a, s->leaf_src), arg_mem(&a, s->centre), arg_mem(&a, s->M);
    st = launch(plan, &a, nl * s->nrow, LOCAL, "p2m");
  }
  for (int l = L - 1; !st && (mask & FMMCL_FMM2D_M2M) && l >= 2; l--) {
    args a = start(s, plan->ctx, s->k_m2m);
    const size_t n = (size_t)1 << (2 * l);
    arg_uint(&a, n), arg_uint(&a, fmmcl_quadtree2d_level_offset(l)), arg_uint(&a, fmmcl_quadtree2d_level_offset(l + 1));
    arg_real(&a, 1.0 / fmmcl_quadtree2d_cell_side(t, l));
    arg_mem(&a, s->centre), arg_mem(&a, s->binom), arg_mem(&a, s->M);
    arg_uint(&a, (size_t)1 << (2 * (L - l))), arg_mem(&a, s->leaf_src);
    st = launch(plan, &a, n * s->nrow, LOCAL, "m2m");
  }
  return st;
}

/* Every level's translations in one launch (they are independent): the
 * tile kernel, or a row per work-item and then each target cell sums its
 * list's rows into L (fused: in the same kernel). */
static fmmcl_status m2l(fmmcl_plan plan, fmm2d_state *s) {
  const size_t group = fmmcl_m2l2d_group(s->m2l_wgs, s->nrow);
  if (s->m2l_tile) {
    /* m2l2d_tile: a group per occupied TB x TB tile, a work-item per cell */
    const size_t tb = s->m2l_tile, tile_group = s->m2l_tile_split * tb * tb;
    args a = start(s, plan->ctx, s->k_m2l);
    arg_mem(&a, s->tile_list), arg_real(&a, log(fmmcl_quadtree2d_cell_side(s->tree, 0)));
    arg_mem(&a, s->M), arg_mem(&a, s->L);
    return launch(plan, &a, s->n_tiles * tile_group, tile_group, "m2l");
  }
  if (s->m2l_share) {
    /* one slot of NROW work-items per bundle of TPW translations (or cells) */
    args a = start(s, plan->ctx, s->k_m2l);
    arg_uint(&a, s->n_bundles);
    if (s->m2l_fused) arg_mem(&a, s->b_aux);
    arg_mem(&a, s->b_src), arg_mem(&a, s->b_w), arg_mem(&a, s->M), arg_mem(&a, s->coef);
    arg_mem(&a, s->m2l_fused ? s->L : s->Lpart);
    fmmcl_status st = launch(plan, &a, fmmcl_m2l2d_share_global(s->m2l_wgs, s->nrow, s->n_bundles), group, "m2l");
    if (st || s->m2l_fused) return st;
    args r = start(s, plan->ctx, s->k_reduce);
    arg_uint(&r, s->n_vrows), arg_mem(&r, s->v_rows), arg_mem(&r, s->v_begin), arg_mem(&r, s->b_aux);
    arg_mem(&r, s->Lpart), arg_mem(&r, s->L);
    return launch(plan, &r, s->n_vrows * s->nrow, LOCAL, "m2l_reduce");
  }
  if (s->m2l_fused) {
    /* one slot of NROW work-items per target row, TPG slots per group */
    const size_t slots = group / s->nrow;
    args f = start(s, plan->ctx, s->k_m2l);
    arg_uint(&f, s->n_vrows), arg_mem(&f, s->v_rows), arg_mem(&f, s->v_begin), arg_uint(&f, s->v_max_len);
    arg_mem(&f, s->trans_src), arg_mem(&f, s->trans_w), arg_mem(&f, s->M), arg_mem(&f, s->coef), arg_mem(&f, s->L);
    return launch(plan, &f, (s->n_vrows + slots - 1) / slots * group, group, "m2l");
  }
  args a = start(s, plan->ctx, s->k_m2l);
  arg_uint(&a, s->n_trans), arg_mem(&a, s->trans_src), arg_mem(&a, s->trans_w), arg_mem(&a, s->M);
  arg_mem(&a, s->coef), arg_mem(&a, s->Lpart);
  fmmcl_status st = launch(plan, &a, fmmcl_m2l2d_global(s->m2l_wgs, s->m2l_tpw, s->nrow, s->n_trans),
                           fmmcl_m2l2d_group(s->m2l_wgs, s->nrow), "m2l");
  if (st) return st;
  args r = start(s, plan->ctx, s->k_reduce);
  arg_uint(&r, s->n_vrows), arg_mem(&r, s->v_rows), arg_mem(&r, s->v_begin), arg_mem(&r, s->Lpart), arg_mem(&r, s->L);
  return launch(plan, &r, s->n_vrows * s->nrow, LOCAL, "m2l_reduce");
}

static fmmcl_status downward(fmmcl_plan plan, fmm2d_state *s, unsigned mask) {
  const fmmcl_quadtree2d *t = s->tree;
  const int L = t->levels;
  fmmcl_status st = FMMCL_SUCCESS;
  for (int l = 2; (mask & FMMCL_FMM2D_L2L) && !st && l < L; l++) {
    args a = start(s, plan->ctx, s->k_l2l);
    const size_t n = (size_t)1 << (2 * (l + 1));
    arg_uint(&a, n), arg_uint(&a, fmmcl_quadtree2d_level_offset(l)), arg_uint(&a, fmmcl_quadtree2d_level_offset(l + 1));
    arg_real(&a, 1.0 / fmmcl_quadtree2d_cell_side(t, l));
    arg_mem(&a, s->centre), arg_mem(&a, s->binom), arg_mem(&a, s->L);
    arg_uint(&a, (size_t)1 << (2 * (L - l - 1))), arg_mem(&a, s->leaf_tgt);
    st = launch(plan, &a, n * s->nrow, LOCAL, "l2l");
  }
  if (!st && (mask & FMMCL_FMM2D_L2P)) {
    args a = start(s, plan->ctx, s->k_l2p);
    arg_uint(&a, t->n_targets), arg_uint(&a, fmmcl_quadtree2d_level_offset(L));
    arg_real(&a, 1.0 / fmmcl_quadtree2d_cell_side(t, L));
    arg_mem(&a, s->tgt), arg_mem(&a, s->tgt_leaf), arg_mem(&a, s->centre), arg_mem(&a, s->L), arg_mem(&a, s->out);
    st = launch(plan, &a, t->n_targets, LOCAL, "l2p");
  }
  if (!st && (mask & FMMCL_FMM2D_P2P)) {
    args a = start(s, plan->ctx, s->k_p2p);
    arg_uint(&a, t->n_targets), arg_mem(&a, s->src), arg_mem(&a, s->leaf_src), arg_mem(&a, s->u_begin);
    arg_mem(&a, s->u_leaf), arg_mem(&a, s->tgt), arg_mem(&a, s->tgt_leaf), arg_mem(&a, s->out);
    st = launch(plan, &a, t->n_targets, LOCAL, "p2p");
  }
  return st;
}

/* L only when M2L is in the mask: the test hook loads L itself otherwise. */
static fmmcl_status run_masked(fmmcl_plan plan, fmm2d_state *s, unsigned mask, int zero_l) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_status st = zero(ctx, s->out, 4 * s->tree->n_targets * s->real_size);
  if (!st && zero_l) st = zero(ctx, s->L, 2 * s->tree->n_cells * s->nrow * s->real_size);
  if (!st) st = upward(plan, s, mask);
  if (!st && (mask & FMMCL_FMM2D_M2L)) st = m2l(plan, s);
  if (!st) st = downward(plan, s, mask);
  return st;
}

fmmcl_status fmmcl_fmm2d_run_phases(fmmcl_plan plan, fmm2d_state *s, unsigned mask) {
  return run_masked(plan, s, mask, 1);
}

/* Test hook entry (fmm2d_debug.c): as run_phases, L left as loaded. */
fmmcl_status fmmcl_fmm2d_run_phases_keep_l(fmmcl_plan plan, fmm2d_state *s, unsigned mask) {
  return run_masked(plan, s, mask, 0);
}

fmmcl_status fmmcl_fmm2d_download(fmmcl_plan plan, fmm2d_state *s, double *potential, double *gradient) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_quadtree2d *t = s->tree;
  double t0 = fmmcl_wall_seconds();
  args a = start(s, ctx, s->k_unsort);
  arg_mem(&a, s->out), arg_mem(&a, s->tgt_perm), arg_uint(&a, t->n_targets), arg_mem(&a, s->out_user);
  fmmcl_status st = launch_elementwise(plan, &a, t->n_targets);
  if (st) return st;
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, s->out_user, CL_TRUE, 0, 4 * t->n_targets * s->real_size,
                                        s->out_pin.ptr, 0, NULL, NULL));
  /* out_user[k] = (phi, dphi/dx, dphi/dy, 0) of the caller's target k */
  const void *out = s->out_pin.ptr;
  #pragma omp parallel for schedule(static) if (t->n_targets > 65536)
  for (size_t k = 0; k < t->n_targets; k++) {
    double v[3];
    for (int c = 0; c < 3; c++)
      v[c] = s->real_size == 4 ? ((const float *)out)[4 * k + c] : ((const double *)out)[4 * k + c];
    potential[k] = v[0];
    if (gradient) gradient[2 * k] = v[1], gradient[2 * k + 1] = v[2];
  }
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}
