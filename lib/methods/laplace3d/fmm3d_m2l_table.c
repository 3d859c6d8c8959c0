/* fmm3d_m2l_table.c — the M2L shift table: irregular harmonics I_n^m (n <= 2p)
 * of the 7^3 integer shifts between same-level cells, the shift id of
 * every V-list entry (the Stokes FMM's joint M2L), and the V list in
 * batches for m2l_batched, uploaded once per plan. */
#include <stdlib.h>

#include "methods/laplace3d/expansions3d.h"
#include "methods/laplace3d/fmm3d.h"

/* A V-list pair is a child of the target's parent's colleague that does not
 * touch the target: same level, shift (target - source) in -3..3 per axis. */
#define SHIFT_RANGE 3
#define SHIFT_SIDE (2 * SHIFT_RANGE + 1)
#define N_SHIFTS (SHIFT_SIDE * SHIFT_SIDE * SHIFT_SIDE)

/* As fmm3d_m2l_shift_ids in cl/fmm3d_p2p.cl numbers them. */
static int shift_id(int dx, int dy, int dz) {
  return ((dx + SHIFT_RANGE) * SHIFT_SIDE + (dy + SHIFT_RANGE)) * SHIFT_SIDE + (dz + SHIFT_RANGE);
}

/* Shift ids parallel to the V list's entries, computed on the device from
 * the cells' anchors (fmm3d_p2p.cl): on the host the 10^5..10^6 entries
 * were a visible part of plan creation. FMMCL_ERROR_INTERNAL when an
 * entry breaks the assumption above (the table would then be wrong). */
static fmmcl_status v_shift_ids(fmmcl_plan plan, fmm3d_state *s) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_tree3d *t = s->tree;
  const size_t entries = s->fmm.v.offsets[s->fmm.v.n_rows];
  cl_int *anchor = malloc(4 * (t->n_cells ? t->n_cells : 1) * sizeof *anchor);
  if (!anchor) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t c = 0; c < t->n_cells; c++)
    for (int a = 0; a < 4; a++) anchor[4 * c + a] = a < 3 ? (cl_int)t->cells[c].anchor[a] : t->cells[c].level;
  cl_mem anchors = NULL, bad = NULL;
  cl_kernel k = NULL;
  cl_int bad_at = -1;
  fmmcl_status st =
      fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 4 * t->n_cells * sizeof *anchor, anchor, &anchors);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_WRITE, sizeof bad_at, &bad_at, &bad);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_WRITE, entries * sizeof(cl_int), NULL, &s->m2l_shift);
  free(anchor);
  if (!st && s->m2l.n_rows) {
    st = fmmcl_create_kernel(ctx, s->p2p_program, "laplace3d/fmm3d_p2p.cl", "fmm3d_m2l_shift_ids", &k);
    if (!st)
      st = FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(s->m2l.rows), FMMCL_ARG_MEM(s->m2l.begin),
                             FMMCL_ARG_MEM(s->m2l.entries), FMMCL_ARG_MEM(anchors),
                             FMMCL_ARG_MEM(s->m2l_shift), FMMCL_ARG_MEM(bad));
    if (!st) st = fmmcl_launch(ctx, k, s->m2l.n_rows * 64, 64, NULL, NULL);
    cl_int err = st ? CL_SUCCESS
                    : clEnqueueReadBuffer(ctx->queue, bad, CL_TRUE, 0, sizeof bad_at, &bad_at, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "M2L shift ids: %s", fmmcl_cl_error_name(err));
  }
  fmmcl_release(&k);
  fmmcl_release(&anchors);
  fmmcl_release(&bad);
  if (!st && bad_at >= 0)
    st = fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL,
                    "M2L list entry %d (source cell %d) is not a well-separated same-level pair", (int)bad_at,
                    (int)s->fmm.v.indices[bad_at]);
  return st;
}

/* Complex numbers per shift in the table: I_n^m for n <= 2p, all |m| <= n,
 * row n from n^2 (cl/expansions3d.cl NSHIFT). */
static size_t shift_stride(int order) { return (size_t)(2 * order + 1) * (size_t)(2 * order + 1); }

/* I_n^m(d) per shift d in units of the side, both signs of m, in REAL: the
 * M2L of scaled expansions (cl/expansions3d.cl) uses exactly these. The
 * zero shift is never used and stays 0. */
static void *shift_table(const fmm3d_state *s) {
  const int p2 = 2 * s->order;
  const size_t stride = shift_stride(s->order);
  void *table = calloc(N_SHIFTS * stride * 2, s->real_size);
  double *S = malloc(fmmcl_exp3d_ncoef(p2) * 2 * sizeof *S);
  if (!table || !S) {
    free(table), free(S);
    return NULL;
  }
  for (int dx = -SHIFT_RANGE; dx <= SHIFT_RANGE; dx++)
    for (int dy = -SHIFT_RANGE; dy <= SHIFT_RANGE; dy++)
      for (int dz = -SHIFT_RANGE; dz <= SHIFT_RANGE; dz++) {
        if (!dx && !dy && !dz) continue;
        const double d[3] = {dx, dy, dz};
        fmmcl_exp3d_irregular(p2, d, S);
        const size_t at = (size_t)shift_id(dx, dy, dz) * stride;
        for (int n = 0; n <= p2; n++)
          for (int m = -n; m <= n; m++) {
            /* I_n^-m = (-1)^m conj(I_n^m) */
            const size_t k = fmmcl_exp3d_index(n, abs(m));
            const double sign = (m < 0 && (m & 1)) ? -1 : 1;
            const double re = sign * S[2 * k], im = (m < 0 ? -sign : 1) * S[2 * k + 1];
            const size_t i = 2 * (at + (size_t)(n * n + n + m));
            if (s->real_size == 4) ((float *)table)[i] = (float)re, ((float *)table)[i + 1] = (float)im;
            else ((double *)table)[i] = re, ((double *)table)[i + 1] = im;
          }
      }
  free(S);
  return table;
}

size_t fmmcl_fmm3d_m2l_table_bytes(const fmm3d_state *s) {
  return N_SHIFTS * shift_stride(s->order) * 2 * s->real_size;
}

/* The table of s's order and precision: the context's when it has that one
 * (computing and uploading it is milliseconds at high orders),
 * else built here and left in the context for the next plan. */
static fmmcl_status shift_table_buffer(fmmcl_plan plan, fmm3d_state *s) {
  fmmcl_context ctx = plan->ctx;
  if (ctx->m2l_table && ctx->m2l_table_order == s->order && ctx->m2l_table_real_size == s->real_size) {
    s->m2l_table = ctx->m2l_table;
    clRetainMemObject(s->m2l_table);
    return FMMCL_SUCCESS;
  }
  void *table = shift_table(s);
  if (!table) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  fmmcl_status st =
      fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, fmmcl_fmm3d_m2l_table_bytes(s), table, &s->m2l_table);
  free(table);
  if (st) return st;
  fmmcl_release(&ctx->m2l_table);
  ctx->m2l_table = s->m2l_table;
  ctx->m2l_table_order = s->order, ctx->m2l_table_real_size = s->real_size;
  clRetainMemObject(ctx->m2l_table);
  return FMMCL_SUCCESS;
}

/* The V list in batches of m2l_b target cells of one level and octant
 * (lib/tree/tree3d_v_batches.c); a direction's key is its shift id. */
static fmmcl_status v_batches(fmmcl_plan plan, fmm3d_state *s) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_tree3d_v_batches h;
  const int rc = fmmcl_tree3d_v_batches_build(s->tree, &s->fmm.v, s->m2l_b, &h);
  if (rc)
    return rc == -1 ? fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for the M2L batches")
                    : fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "a V-list pair across levels");
  const size_t b = (size_t)h.b, ne = h.n_entries ? h.n_entries : 1, ng = h.n_groups ? h.n_groups : 1;
  s->m2l_groups = h.n_groups;
  fmmcl_status st =
      fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, ng * b * sizeof(int), h.targets, &s->m2l_targets);
  if (!st)
    st =
        fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, (h.n_groups + 1) * sizeof(int), h.begin, &s->m2l_begin);
  if (!st)
    st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, ne * b * sizeof(int), h.sources, &s->m2l_sources);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, ne * sizeof(int), h.dir, &s->m2l_dir);
  fmmcl_tree3d_v_batches_free(&h);
  return st;
}

fmmcl_status fmmcl_fmm3d_upload_m2l_table(fmmcl_plan plan, fmm3d_state *s) {
  if (s->treecode) return FMMCL_SUCCESS;
  fmmcl_status st = v_shift_ids(plan, s);
  if (!st) st = shift_table_buffer(plan, s);
  if (!st && s->m2l_batched) st = v_batches(plan, s);
  return st;
}

void fmmcl_fmm3d_release_m2l_table(fmm3d_state *s) {
  cl_mem *m[] = {&s->m2l_table, &s->m2l_shift, &s->m2l_targets, &s->m2l_begin, &s->m2l_sources, &s->m2l_dir};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) fmmcl_release(m[i]);
}
