/* fmm3d_m2l_table.c — the M2L shift table: irregular harmonics I_n^m (n <= 2p)
 * of the 7^3 integer shifts between same-level cells, and the shift id of
 * every V-list entry, uploaded once per plan for the m2l kernel. */
#include <stdlib.h>

#include "expansions3d.h"
#include "fmm3d.h"

/* A V-list pair is a child of the target's parent's colleague that does not
 * touch the target: same level, shift (target - source) in -3..3 per axis. */
#define SHIFT_RANGE 3
#define SHIFT_SIDE (2 * SHIFT_RANGE + 1)
#define N_SHIFTS (SHIFT_SIDE * SHIFT_SIDE * SHIFT_SIDE)

static int shift_id(int dx, int dy, int dz) {
  return ((dx + SHIFT_RANGE) * SHIFT_SIDE + (dy + SHIFT_RANGE)) * SHIFT_SIDE + (dz + SHIFT_RANGE);
}

/* Shift ids parallel to the V list's indices; FMMCL_ERROR_INTERNAL when an
 * entry breaks the assumption above (the table would then be wrong). */
static fmmcl_status v_shift_ids(fmmcl_plan plan, const fmm3d_state *s, cl_int *ids) {
  const fmmcl_tree3d_csr *v = &s->fmm.v;
  const fmmcl_tree3d_cell *cells = s->tree->cells;
  long long bad = -1; /* an offending entry, reported after the loop */
  /* rows are cells, a few thousand with ~100-200 entries each: small chunks
   * keep every thread busy */
  #pragma omp parallel for schedule(dynamic, 8)
  for (size_t r = 0; r < v->n_rows; r++)
    for (size_t e = v->offsets[r]; e < v->offsets[r + 1]; e++) {
      const fmmcl_tree3d_cell *t = &cells[r], *c = &cells[v->indices[e]];
      int d[3], near = 1, ok = t->level == c->level;
      for (int a = 0; a < 3; a++) {
        d[a] = (int)((int64_t)t->anchor[a] - (int64_t)c->anchor[a]);
        ok = ok && d[a] >= -SHIFT_RANGE && d[a] <= SHIFT_RANGE;
        near = near && d[a] >= -1 && d[a] <= 1;
      }
      if (!ok || near) {
        #pragma omp atomic write
        bad = (long long)e;
        ids[e] = 0;
      } else {
        ids[e] = shift_id(d[0], d[1], d[2]);
      }
    }
  if (bad >= 0)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL,
                      "M2L list entry %lld (source cell %d) is not a well-separated same-level pair", bad,
                      (int)v->indices[bad]);
  return FMMCL_SUCCESS;
}

/* Complex numbers per shift in the table: I_n^m for n <= 2p, all |m| <= n,
 * row n from n^2 (cl/expansions3d.cl NSHIFT). */
static size_t shift_stride(int order) {
  return (size_t)(2 * order + 1) * (size_t)(2 * order + 1);
}

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

fmmcl_status fmmcl_fmm3d_upload_m2l_table(fmmcl_plan plan, fmm3d_state *s) {
  if (s->treecode) return FMMCL_SUCCESS;
  const size_t entries = s->fmm.v.offsets[s->fmm.v.n_rows], ids_bytes = entries * sizeof(cl_int);
  /* the ids are written straight into the upload stage when it holds them */
  const int in_stage = s->stage.ptr && ids_bytes <= s->stage.bytes;
  cl_int *ids = in_stage ? s->stage.ptr : malloc(ids_bytes ? ids_bytes : 1);
  void *table = shift_table(s);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!ids || !table) st = fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (!st) st = v_shift_ids(plan, s, ids);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, ids_bytes, ids, &s->m2l_shift);
  if (!st)
    st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, N_SHIFTS * shift_stride(s->order) * 2 * s->real_size,
                            table, &s->m2l_table);
  if (!in_stage) free(ids);
  free(table);
  return st;
}

void fmmcl_fmm3d_release_m2l_table(fmm3d_state *s) {
  if (s->m2l_table) clReleaseMemObject(s->m2l_table);
  if (s->m2l_shift) clReleaseMemObject(s->m2l_shift);
  s->m2l_table = s->m2l_shift = NULL;
}
