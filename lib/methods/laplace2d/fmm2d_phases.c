/* fmm2d_phases.c — one execution of the 2D FMM on the device: charges in
 * (permuted into sorted order on the device), upward pass (P2M, M2M), M2L of every level in one launch and its
 * per-cell reduction, downward pass (L2L, L2P), near field (P2P), results
 * out in the caller's order (unsorted on the device). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace2d/fmm2d.h"

/* Launches k over n work-items (rounded up to the group), timed under
 * phase in events (flushed by run_masked): nothing waits between kernels. */
static fmmcl_status launch(fmmcl_plan plan, fmmcl_event_log *events, cl_kernel k, size_t n, size_t local,
                           const char *phase) {
  return fmmcl_launch(plan->ctx, k, fmmcl_round_up(n, local), local, events, phase);
}

#define LOCAL 64 /* the simple operators: any size works; 64 fills a warp pair */

/* Argument shorthands: a REAL in the plan's precision, a size as uint. */
#define MEM FMMCL_ARG_MEM
#define UINT FMMCL_ARG_UINT
#define REAL(v) FMMCL_ARG_REAL((v), s->real_size)

/* The permutations run on the device (as the 3D FMM's): the host only
 * streams the charges up in the caller's order and the results down. */
fmmcl_status fmmcl_fmm2d_upload_charges(fmmcl_plan plan, fmm2d_state *s, const double *charges) {
  double t0 = fmmcl_wall_seconds();
  const fmmcl_permutation put = {
      .k = s->k_charges, .local = LOCAL, .in = s->charges, .perm = s->src_perm, .out = s->src};
  fmmcl_status st =
      fmmcl_upload_permuted(plan, s->real_size, charges, s->tree->n_sources, s->q_pin.ptr, &put);
  if (st) return st;
  FMMCL_CL_TRY(plan->ctx, clFinish(plan->ctx->queue)); /* q_pin is reused by the next execute */
  fmmcl_plan_record(plan, "upload", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}

static fmmcl_status zero(fmmcl_context ctx, cl_mem m, size_t bytes) {
  const cl_uint z = 0;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, m, &z, sizeof z, 0, bytes, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

static fmmcl_status upward(fmmcl_plan plan, fmm2d_state *s, unsigned mask, fmmcl_event_log *events) {
  const fmmcl_quadtree2d *t = s->tree;
  const int L = t->levels;
  fmmcl_status st = FMMCL_SUCCESS;
  if (mask & FMMCL_PHASE_P2M) {
    const size_t nl = (size_t)1 << (2 * L);
    st = FMMCL_KERNEL_ARGS(plan->ctx, s->k_p2m, 0, UINT(nl), UINT(fmmcl_quadtree2d_level_offset(L)),
                           REAL(1.0 / fmmcl_quadtree2d_cell_side(t, L)), MEM(s->src), MEM(s->leaf_src),
                           MEM(s->M));
    if (!st) st = launch(plan, events, s->k_p2m, nl * s->nrow, LOCAL, "p2m");
  }
  for (int l = L - 1; !st && (mask & FMMCL_PHASE_M2M) && l >= 2; l--) {
    const size_t n = (size_t)1 << (2 * l);
    st = FMMCL_KERNEL_ARGS(plan->ctx, s->k_m2m, 0, UINT(n), UINT(fmmcl_quadtree2d_level_offset(l)),
                           UINT(fmmcl_quadtree2d_level_offset(l + 1)),
                           REAL(1.0 / fmmcl_quadtree2d_cell_side(t, l)), MEM(s->centre), MEM(s->binom),
                           MEM(s->M), UINT((size_t)1 << (2 * (L - l))), MEM(s->leaf_src));
    if (!st) st = launch(plan, events, s->k_m2m, n * s->nrow, LOCAL, "m2m");
  }
  return st;
}

/* Every level's translations in one launch (they are independent): the
 * tile kernel, or a row per work-item and then each target cell sums its
 * list's rows into L (fused: in the same kernel). */
static fmmcl_status m2l(fmmcl_plan plan, fmm2d_state *s, fmmcl_event_log *events) {
  fmmcl_context ctx = plan->ctx;
  const size_t group = fmmcl_m2l2d_group(s->m2l_wgs, s->nrow);
  if (s->m2l_tile) {
    /* m2l2d_tile: a group per occupied TB x TB tile, a work-item per cell */
    const size_t tb = s->m2l_tile, tile_group = s->m2l_tile_split * tb * tb;
    fmmcl_status st =
        FMMCL_KERNEL_ARGS(ctx, s->k_m2l, 0, MEM(s->tile_list),
                          REAL(log(fmmcl_quadtree2d_cell_side(s->tree, 0))), MEM(s->M), MEM(s->L));
    return st ? st : launch(plan, events, s->k_m2l, s->n_tiles * tile_group, tile_group, "m2l");
  }
  if (s->m2l_share) {
    /* one slot of NROW work-items per bundle of TPW translations (or cells) */
    /* the fused kernel takes b_aux second; the separate one leaves it to the reduction */
    const cl_uint fused = s->m2l_fused ? 1 : 0;
    fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, s->k_m2l, 0, UINT(s->n_bundles));
    if (!st && fused) st = FMMCL_KERNEL_ARGS(ctx, s->k_m2l, 1, MEM(s->b_aux));
    if (!st)
      st = FMMCL_KERNEL_ARGS(ctx, s->k_m2l, 1 + fused, MEM(s->b_src), MEM(s->b_w), MEM(s->M), MEM(s->coef),
                             MEM(fused ? s->L : s->Lpart));
    if (!st)
      st = launch(plan, events, s->k_m2l, fmmcl_m2l2d_share_global(s->m2l_wgs, s->nrow, s->n_bundles), group,
                  "m2l");
    if (st || fused) return st;
    st = FMMCL_KERNEL_ARGS(ctx, s->k_reduce, 0, UINT(s->n_vrows), MEM(s->v_rows), MEM(s->v_begin),
                           MEM(s->b_aux), MEM(s->Lpart), MEM(s->L));
    return st ? st : launch(plan, events, s->k_reduce, s->n_vrows * s->nrow, LOCAL, "m2l_reduce");
  }
  if (s->m2l_fused) {
    /* one slot of NROW work-items per target row, TPG slots per group */
    const size_t slots = group / s->nrow;
    fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, s->k_m2l, 0, UINT(s->n_vrows), MEM(s->v_rows), MEM(s->v_begin),
                                        UINT(s->v_max_len), MEM(s->trans_src), MEM(s->trans_w), MEM(s->M),
                                        MEM(s->coef), MEM(s->L));
    return st ? st : launch(plan, events, s->k_m2l, (s->n_vrows + slots - 1) / slots * group, group, "m2l");
  }
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, s->k_m2l, 0, UINT(s->n_trans), MEM(s->trans_src), MEM(s->trans_w),
                                      MEM(s->M), MEM(s->coef), MEM(s->Lpart));
  if (!st)
    st = launch(plan, events, s->k_m2l, fmmcl_m2l2d_global(s->m2l_wgs, s->m2l_tpw, s->nrow, s->n_trans),
                fmmcl_m2l2d_group(s->m2l_wgs, s->nrow), "m2l");
  if (st) return st;
  st = FMMCL_KERNEL_ARGS(ctx, s->k_reduce, 0, UINT(s->n_vrows), MEM(s->v_rows), MEM(s->v_begin),
                         MEM(s->Lpart), MEM(s->L));
  return st ? st : launch(plan, events, s->k_reduce, s->n_vrows * s->nrow, LOCAL, "m2l_reduce");
}

static fmmcl_status downward(fmmcl_plan plan, fmm2d_state *s, unsigned mask, fmmcl_event_log *events) {
  const fmmcl_quadtree2d *t = s->tree;
  const int L = t->levels;
  fmmcl_status st = FMMCL_SUCCESS;
  for (int l = 2; (mask & FMMCL_PHASE_L2L) && !st && l < L; l++) {
    const size_t n = (size_t)1 << (2 * (l + 1));
    st = FMMCL_KERNEL_ARGS(plan->ctx, s->k_l2l, 0, UINT(n), UINT(fmmcl_quadtree2d_level_offset(l)),
                           UINT(fmmcl_quadtree2d_level_offset(l + 1)),
                           REAL(1.0 / fmmcl_quadtree2d_cell_side(t, l)), MEM(s->centre), MEM(s->binom),
                           MEM(s->L), UINT((size_t)1 << (2 * (L - l - 1))), MEM(s->leaf_tgt));
    if (!st) st = launch(plan, events, s->k_l2l, n * s->nrow, LOCAL, "l2l");
  }
  if (!st && (mask & FMMCL_PHASE_L2P)) {
    st = FMMCL_KERNEL_ARGS(plan->ctx, s->k_l2p, 0, UINT(t->n_targets), UINT(fmmcl_quadtree2d_level_offset(L)),
                           REAL(1.0 / fmmcl_quadtree2d_cell_side(t, L)), MEM(s->tgt), MEM(s->tgt_leaf),
                           MEM(s->L), MEM(s->out));
    if (!st) st = launch(plan, events, s->k_l2p, t->n_targets, LOCAL, "l2p");
  }
  if (!st && (mask & FMMCL_PHASE_P2P)) {
    /* double has no lo parts: any buffer fills the argument it never reads */
    st = FMMCL_KERNEL_ARGS(plan->ctx, s->k_p2p, 0, UINT(t->n_targets), MEM(s->src),
                           MEM(s->src_lo ? s->src_lo : s->src), MEM(s->leaf_src), MEM(s->u_begin),
                           MEM(s->u_leaf), MEM(s->tgt), MEM(s->tgt_leaf),
                           UINT(fmmcl_quadtree2d_level_offset(L)), MEM(s->centre), MEM(s->out));
    if (!st) st = launch(plan, events, s->k_p2p, t->n_targets, LOCAL, "p2p");
  }
  return st;
}

/* L only when M2L is in the mask: the test hook loads L itself otherwise. */
static fmmcl_status run_masked(fmmcl_plan plan, fmm2d_state *s, unsigned mask, int zero_l) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_status st = zero(ctx, s->out, 4 * s->tree->n_targets * s->real_size);
  if (!st && zero_l) st = zero(ctx, s->L, 2 * s->tree->n_cells * s->nrow * s->real_size);
  fmmcl_event_log events = {0};
  if (!st) st = upward(plan, s, mask, &events);
  if (!st && (mask & FMMCL_PHASE_M2L)) st = m2l(plan, s, &events);
  if (!st) st = downward(plan, s, mask, &events);
  /* flushed on failure too: the events must not leak */
  fmmcl_status fl = fmmcl_event_log_flush(plan, &events);
  return st ? st : fl;
}

fmmcl_status fmmcl_fmm2d_run_phases(fmmcl_plan plan, fmm2d_state *s, unsigned mask) {
  return run_masked(plan, s, mask, 1);
}

/* Test hook entry (fmm2d_debug.c): as run_phases, L left as loaded. */
fmmcl_status fmmcl_fmm2d_run_phases_keep_l(fmmcl_plan plan, fmm2d_state *s, unsigned mask) {
  return run_masked(plan, s, mask, 0);
}

fmmcl_status fmmcl_fmm2d_download(fmmcl_plan plan, fmm2d_state *s, double *potential, double *gradient) {
  /* out_user[k] = (phi, dphi/dx, dphi/dy, 0) of the caller's target k */
  const fmmcl_real4_results r = {
      .unsort = {.k = s->k_unsort, .local = LOCAL, .in = s->out, .perm = s->tgt_perm, .out = s->out_user},
      .stage = s->out_pin.ptr,
      .pot = 0,
      .grad = 1,
      .dim = 2};
  return fmmcl_download_real4(plan, &r, s->tree->n_targets, s->real_size, potential, gradient);
}
