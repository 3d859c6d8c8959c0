/* tree3d_fmm_lists.c — the adaptive-FMM interaction lists U (P2P), V (M2L),
 * W (M2P) and X (P2L) of every cell holding targets, from the colleague table. */
#include <stdlib.h>

#include "core/internal.h"
#include "tree/tree3d_csr.h"

enum { LIST_U, LIST_V, LIST_W, LIST_X, N_LISTS };

typedef struct fmm_list_context {
  const fmmcl_tree3d *tree;
  const int32_t *colleagues;
  const uint8_t *leaf_colleague; /* per cell: has a colleague that is a leaf holding sources */
} fmm_list_context;

static const int32_t *colleagues_of(const fmm_list_context *ctx, int32_t cell) {
  return ctx->colleagues + FMMCL_TREE3D_COLLEAGUES * (size_t)cell;
}

/* V(B): children of the parent's colleagues that B does not touch. */
static void emit_v(const fmm_list_context *ctx, const fmmcl_tree3d_cell *b, fmmcl_tree3d_row_sink *sink) {
  if (b->parent < 0) return;
  const fmmcl_tree3d_cell *cells = ctx->tree->cells;
  const int32_t *pc = colleagues_of(ctx, b->parent);
  for (int s = 0; s < FMMCL_TREE3D_COLLEAGUES; s++) {
    if (pc[s] < 0) continue;
    const fmmcl_tree3d_cell *q = &cells[pc[s]];
    for (int32_t k = q->child_begin; k < q->child_begin + q->n_children; k++)
      if (fmmcl_tree3d_n_src(&cells[k]) && !fmmcl_tree3d_adjacent_inline(&cells[k], b))
        fmmcl_tree3d_emit(sink, LIST_V, k);
  }
}

/* Below a colleague a of leaf B: leaves touching B go to U; the first cell
 * on a path that no longer touches B goes to W (its parent still did). */
static void descend_colleague(const fmm_list_context *ctx, const fmmcl_tree3d_cell *b,
                              const fmmcl_tree3d_cell *a, fmmcl_tree3d_row_sink *sink) {
  const fmmcl_tree3d_cell *cells = ctx->tree->cells;
  for (int32_t k = a->child_begin; k < a->child_begin + a->n_children; k++) {
    const fmmcl_tree3d_cell *c = &cells[k];
    if (!fmmcl_tree3d_n_src(c)) continue;
    if (!fmmcl_tree3d_adjacent_inline(c, b)) fmmcl_tree3d_emit(sink, LIST_W, k);
    else if (fmmcl_tree3d_is_leaf(c)) fmmcl_tree3d_emit(sink, LIST_U, k);
    else descend_colleague(ctx, b, c, sink);
  }
}

/* U(B) at B's level and finer, and W(B), for a leaf B. */
static void emit_u_w(const fmm_list_context *ctx, int32_t b_index, fmmcl_tree3d_row_sink *sink) {
  const fmmcl_tree3d_cell *cells = ctx->tree->cells, *b = &cells[b_index];
  const int32_t *bc = colleagues_of(ctx, b_index);
  for (int s = 0; s < FMMCL_TREE3D_COLLEAGUES; s++) {
    if (bc[s] < 0 || !fmmcl_tree3d_n_src(&cells[bc[s]])) continue;
    if (fmmcl_tree3d_is_leaf(&cells[bc[s]])) fmmcl_tree3d_emit(sink, LIST_U, bc[s]);
    else descend_colleague(ctx, b, &cells[bc[s]], sink);
  }
}

/* Leaves coarser than B are colleagues of B's ancestor at their own level
 * (they touch that ancestor), so each is met exactly once here: touching B
 * it is in U(B) when B is a leaf (a non-leaf B leaves it to its children);
 * touching only B's parent it is in X(B). */
static void emit_coarser_u_x(const fmm_list_context *ctx, const fmmcl_tree3d_cell *b,
                             fmmcl_tree3d_row_sink *sink) {
  const fmmcl_tree3d_cell *cells = ctx->tree->cells;
  int b_is_leaf = fmmcl_tree3d_is_leaf(b);
  for (int32_t p = b->parent; p >= 0; p = cells[p].parent) {
    /* most ancestors have no leaf colleague: skip their 27 loads */
    if (!ctx->leaf_colleague[p]) continue;
    const int32_t *pc = colleagues_of(ctx, p);
    for (int s = 0; s < FMMCL_TREE3D_COLLEAGUES; s++) {
      if (pc[s] < 0) continue;
      const fmmcl_tree3d_cell *a = &cells[pc[s]];
      if (!fmmcl_tree3d_is_leaf(a) || !fmmcl_tree3d_n_src(a)) continue;
      if (fmmcl_tree3d_adjacent_inline(a, b)) {
        if (b_is_leaf) fmmcl_tree3d_emit(sink, LIST_U, pc[s]);
      } else if (fmmcl_tree3d_adjacent_inline(a, &cells[b->parent])) {
        fmmcl_tree3d_emit(sink, LIST_X, pc[s]);
      }
    }
  }
}

static void emit_fmm_row(const void *vctx, size_t row, fmmcl_tree3d_row_sink *sink) {
  const fmm_list_context *ctx = vctx;
  const fmmcl_tree3d_cell *b = &ctx->tree->cells[row];
  if (!fmmcl_tree3d_n_tgt(b)) return;
  emit_v(ctx, b, sink);
  if (fmmcl_tree3d_is_leaf(b)) emit_u_w(ctx, (int32_t)row, sink);
  emit_coarser_u_x(ctx, b, sink);
}

static void mark_leaf_colleagues(const fmmcl_tree3d *tree, const int32_t *coll, uint8_t *leafy) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < tree->n_cells; i++) {
    uint8_t any = 0;
    for (int s = 0; s < FMMCL_TREE3D_COLLEAGUES; s++) {
      int32_t q = coll[FMMCL_TREE3D_COLLEAGUES * i + (size_t)s];
      any |= q >= 0 && fmmcl_tree3d_is_leaf(&tree->cells[q]) && fmmcl_tree3d_n_src(&tree->cells[q]);
    }
    leafy[i] = any;
  }
}

fmmcl_status fmmcl_tree3d_fmm_lists_build(const fmmcl_tree3d *tree, fmmcl_tree3d_fmm_lists *lists) {
  if (!tree || !lists)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_fmm_lists_build: NULL argument");
  fmm_list_context ctx = {tree, NULL, NULL};
  int32_t *coll = NULL;
  fmmcl_status st = fmmcl_tree3d_colleagues(tree, &coll);
  if (st) return st;
  ctx.colleagues = coll;
  uint8_t *leafy = malloc(tree->n_cells ? tree->n_cells : 1);
  if (!leafy) {
    free(coll);
    return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "interaction lists: out of host memory");
  }
  mark_leaf_colleagues(tree, coll, leafy);
  ctx.leaf_colleague = leafy;
  fmmcl_tree3d_csr csr[N_LISTS];
  st = fmmcl_tree3d_csr_build(tree->n_cells, N_LISTS, emit_fmm_row, &ctx, csr);
  free(coll);
  free(leafy);
  if (st) return st;
  lists->u = csr[LIST_U];
  lists->v = csr[LIST_V];
  lists->w = csr[LIST_W];
  lists->x = csr[LIST_X];
  return FMMCL_SUCCESS;
}

void fmmcl_tree3d_fmm_lists_free(fmmcl_tree3d_fmm_lists *lists) {
  if (!lists) return;
  fmmcl_tree3d_csr_free(&lists->u);
  fmmcl_tree3d_csr_free(&lists->v);
  fmmcl_tree3d_csr_free(&lists->w);
  fmmcl_tree3d_csr_free(&lists->x);
}
