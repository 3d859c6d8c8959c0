/* tree3d_treecode_lists.c — Barnes-Hut style near (P2P) and far (M2P) lists
 * of each target leaf under a multipole acceptance criterion that knows
 * where each cell's sources are (their bounding sphere, about which the
 * cell's multipole is expanded). */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"
#include "tree/tree3d_csr.h"

enum { LIST_FAR, LIST_NEAR, N_LISTS };

typedef struct treecode_context {
  const fmmcl_tree3d *tree;
  const double *sphere;
  double theta;
} treecode_context;

int fmmcl_tree3d_mac_accepts(const double *source_sphere, const fmmcl_tree3d_cell *target, double theta) {
  double d2 = 0.0;
  for (int k = 0; k < 3; k++) {
    double dk = source_sphere[k] - target->center[k];
    d2 += dk * dk;
  }
  /* the target leaf's half-diagonal: its targets may be anywhere in it */
  return source_sphere[3] + sqrt(3.0) * target->half_width < theta * sqrt(d2);
}

/* Sorted source i's coordinate d: the tree's copy, or the caller's through
 * the permutation where the device sort kept the sorted ones. */
static double source_coord(const fmmcl_tree3d *t, const double *caller, size_t i, int d) {
  return t->source_xyz ? t->source_xyz[3 * i + d] : caller[3 * t->source_perm[i] + d];
}

/* Bounding boxes (lo[3], hi[3] per cell) of each cell's sources: leaves
 * from their points, then each level's parents from their children,
 * deepest first (children follow their parents in the cell array). */
static void source_boxes(const fmmcl_tree3d *t, const double *caller, double *box) {
#pragma omp parallel for schedule(dynamic, 64)
  for (size_t g = 0; g < t->n_leaves; g++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[g]];
    double *b = box + 6 * t->leaves[g];
    for (int d = 0; d < 3; d++) b[d] = INFINITY, b[3 + d] = -INFINITY;
    for (size_t i = c->src_begin; i < c->src_end; i++)
      for (int d = 0; d < 3; d++) {
        const double v = source_coord(t, caller, i, d);
        b[d] = fmin(b[d], v), b[3 + d] = fmax(b[3 + d], v);
      }
  }
  for (int l = t->n_levels - 2; l >= 0; l--) {
#pragma omp parallel for schedule(static)
    for (size_t i = t->level_begin[l]; i < t->level_begin[l + 1]; i++) {
      const fmmcl_tree3d_cell *c = &t->cells[i];
      if (fmmcl_tree3d_is_leaf(c)) continue;
      double *b = box + 6 * i;
      for (int d = 0; d < 3; d++) b[d] = INFINITY, b[3 + d] = -INFINITY;
      for (int32_t k = c->child_begin; k < c->child_begin + c->n_children; k++)
        for (int d = 0; d < 3; d++)
          b[d] = fmin(b[d], box[6 * k + d]), b[3 + d] = fmax(b[3 + d], box[6 * k + 3 + d]);
    }
  }
}

fmmcl_status fmmcl_tree3d_source_spheres(const fmmcl_tree3d *t, const double *sources, double *sphere) {
  if (!t->source_xyz && (!sources || !t->source_perm))
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_source_spheres: no source coordinates");
  double *box = malloc(6 * (t->n_cells ? t->n_cells : 1) * sizeof *box);
  if (!box) return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  source_boxes(t, sources, box);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < t->n_cells; i++) {
    const double *b = box + 6 * i;
    double *s = sphere + 4 * i, r2 = 0;
    if (!fmmcl_tree3d_n_src(&t->cells[i])) { /* never accepted: any centre */
      for (int d = 0; d < 3; d++) s[d] = t->cells[i].center[d];
      s[3] = 0;
      continue;
    }
    for (int d = 0; d < 3; d++) {
      s[d] = 0.5 * (b[d] + b[3 + d]);
      /* the larger of the two halves: the rounded midpoint may sit off centre */
      const double h = fmax(s[d] - b[d], b[3 + d] - s[d]);
      r2 += h * h;
    }
    s[3] = sqrt(r2);
  }
  free(box);
  return FMMCL_SUCCESS;
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
    if (fmmcl_tree3d_mac_accepts(ctx->sphere + 4 * a, b, ctx->theta)) fmmcl_tree3d_emit(sink, LIST_FAR, a);
    else if (fmmcl_tree3d_is_leaf(c)) fmmcl_tree3d_emit(sink, LIST_NEAR, a);
    else /* pushed in reverse so lists come out in Morton order */
      for (int32_t k = c->child_begin + c->n_children - 1; k >= c->child_begin; k--) stack[top++] = k;
  }
}

fmmcl_status fmmcl_tree3d_treecode_lists_build(const fmmcl_tree3d *tree, const double *sources, double theta,
                                               fmmcl_tree3d_treecode_lists *lists) {
  if (!tree || !lists)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_treecode_lists_build: NULL argument");
  if (!(theta > 0.0) || !isfinite(theta))
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT,
                      "fmmcl_tree3d_treecode_lists_build: theta = %g must be positive and finite", theta);
  double *sphere = malloc(4 * (tree->n_cells ? tree->n_cells : 1) * sizeof *sphere);
  if (!sphere) return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  fmmcl_status st = fmmcl_tree3d_source_spheres(tree, sources, sphere);
  treecode_context ctx = {tree, sphere, theta};
  fmmcl_tree3d_csr csr[N_LISTS];
  if (!st) st = fmmcl_tree3d_csr_build(tree->n_cells, N_LISTS, emit_treecode_row, &ctx, csr);
  if (st) {
    free(sphere);
    return st;
  }
  lists->theta = theta;
  lists->sphere = sphere;
  lists->far = csr[LIST_FAR];
  lists->near = csr[LIST_NEAR];
  return FMMCL_SUCCESS;
}

void fmmcl_tree3d_treecode_lists_free(fmmcl_tree3d_treecode_lists *lists) {
  if (!lists) return;
  free(lists->sphere);
  lists->sphere = NULL;
  fmmcl_tree3d_csr_free(&lists->far);
  fmmcl_tree3d_csr_free(&lists->near);
}
