/* tree3d_treecode_lists.c — Barnes-Hut style near (P2P) and far (M2P) lists
 * of each target leaf under a cell-cell multipole acceptance criterion. */
#include <math.h>

#include "core/internal.h"
#include "tree/tree3d_csr.h"

enum { LIST_FAR, LIST_NEAR, N_LISTS };

typedef struct treecode_context {
  const fmmcl_tree3d *tree;
  double theta;
} treecode_context;

int fmmcl_tree3d_mac_accepts(const fmmcl_tree3d_cell *source, const fmmcl_tree3d_cell *target, double theta) {
  double d2 = 0.0;
  for (int k = 0; k < 3; k++) {
    double dk = source->center[k] - target->center[k];
    d2 += dk * dk;
  }
  /* r = half-diagonal of the cube = sqrt(3) * half_width */
  double radii = sqrt(3.0) * (source->half_width + target->half_width);
  return radii < theta * sqrt(d2);
}

/* Depth-first from the root: the first accepted cell on each path is far,
 * a leaf never accepted is near. A stack of 7 * levels + 1 cells suffices. */
static void emit_treecode_row(const void *vctx, size_t row, fmmcl_tree3d_row_sink *sink) {
  const treecode_context *ctx = vctx;
  const fmmcl_tree3d_cell *cells = ctx->tree->cells, *b = &cells[row];
  if (!fmmcl_tree3d_is_leaf(b) || !fmmcl_tree3d_n_tgt(b)) return;
  int32_t stack[7 * (FMMCL_MORTON_LEVELS + 1) + 1];
  int top = 0;
  stack[top++] = 0;
  while (top) {
    int32_t a = stack[--top];
    const fmmcl_tree3d_cell *c = &cells[a];
    if (!fmmcl_tree3d_n_src(c)) continue;
    if (fmmcl_tree3d_mac_accepts(c, b, ctx->theta)) fmmcl_tree3d_emit(sink, LIST_FAR, a);
    else if (fmmcl_tree3d_is_leaf(c)) fmmcl_tree3d_emit(sink, LIST_NEAR, a);
    else /* pushed in reverse so lists come out in Morton order */
      for (int32_t k = c->child_begin + c->n_children - 1; k >= c->child_begin; k--) stack[top++] = k;
  }
}

fmmcl_status fmmcl_tree3d_treecode_lists_build(const fmmcl_tree3d *tree, double theta,
                                               fmmcl_tree3d_treecode_lists *lists) {
  if (!tree || !lists)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_treecode_lists_build: NULL argument");
  if (!(theta > 0.0) || !isfinite(theta))
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT,
                      "fmmcl_tree3d_treecode_lists_build: theta = %g must be positive and finite", theta);
  treecode_context ctx = {tree, theta};
  fmmcl_tree3d_csr csr[N_LISTS];
  fmmcl_status st = fmmcl_tree3d_csr_build(tree->n_cells, N_LISTS, emit_treecode_row, &ctx, csr);
  if (st) return st;
  lists->theta = theta;
  lists->far = csr[LIST_FAR];
  lists->near = csr[LIST_NEAR];
  return FMMCL_SUCCESS;
}

void fmmcl_tree3d_treecode_lists_free(fmmcl_tree3d_treecode_lists *lists) {
  if (!lists) return;
  fmmcl_tree3d_csr_free(&lists->far);
  fmmcl_tree3d_csr_free(&lists->near);
}
