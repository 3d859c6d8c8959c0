/* tree3d_treecode_lists.c — Barnes-Hut style near (P2P) and far (M2P) lists
 * of each small group of targets under a multipole acceptance criterion
 * that knows where each cell's sources are (their bounding sphere, about
 * which the cell's multipole is expanded) and where the group's targets
 * are (theirs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "tree/tree3d_csr.h"

enum { LIST_FAR, LIST_NEAR, N_LISTS };

typedef struct treecode_context {
  const fmmcl_tree3d *tree;
  const fmmcl_tree3d_treecode_lists *lists;
} treecode_context;

int fmmcl_tree3d_mac_accepts(const double *source_sphere, const double *target_sphere, double theta) {
  double d2 = 0.0;
  for (int k = 0; k < 3; k++) {
    double dk = source_sphere[k] - target_sphere[k];
    d2 += dk * dk;
  }
  return source_sphere[3] + target_sphere[3] < theta * sqrt(d2);
}

/* Sorted source i's coordinate d: the tree's copy, or the caller's through
 * the permutation where the device sort kept the sorted ones. */
static double source_coord(const fmmcl_tree3d *t, const double *caller, size_t i, int d) {
  return t->source_xyz ? t->source_xyz[3 * i + d] : caller[3 * t->source_perm[i] + d];
}

static double target_coord(const fmmcl_tree3d *t, const double *caller, size_t i, int d) {
  return t->target_xyz ? t->target_xyz[3 * i + d] : caller[3 * t->target_perm[i] + d];
}

/* The sphere about the middle of a box (lo[3], hi[3]) that holds it: the
 * larger of the two halves, as the rounded midpoint may sit off centre. */
static void box_sphere(const double *b, double *s) {
  double r2 = 0;
  for (int d = 0; d < 3; d++) {
    s[d] = 0.5 * (b[d] + b[3 + d]);
    const double h = fmax(s[d] - b[d], b[3 + d] - s[d]);
    r2 += h * h;
  }
  s[3] = sqrt(r2);
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
    double *s = sphere + 4 * i;
    if (!fmmcl_tree3d_n_src(&t->cells[i])) { /* never accepted: any centre */
      for (int d = 0; d < 3; d++) s[d] = t->cells[i].center[d];
      s[3] = 0;
      continue;
    }
    box_sphere(box + 6 * i, s);
  }
  free(box);
  return FMMCL_SUCCESS;
}

/* Each target leaf's targets in the fewest runs of at most group_size,
 * their sizes within one of each other (so no group is a sliver), and each
 * run's sphere from its targets' box. */
static fmmcl_status make_groups(const fmmcl_tree3d *t, const double *targets,
                                fmmcl_tree3d_treecode_lists *L) {
  const size_t G = L->group_size;
  size_t n = 0;
  for (size_t k = 0; k < t->n_leaves; k++) n += (fmmcl_tree3d_n_tgt(&t->cells[t->leaves[k]]) + G - 1) / G;
  L->n_groups = n;
  L->group_begin = malloc((n + 1) * sizeof *L->group_begin);
  L->group_leaf = malloc((n ? n : 1) * sizeof *L->group_leaf);
  L->group_sphere = malloc(4 * (n ? n : 1) * sizeof *L->group_sphere);
  if (!L->group_begin || !L->group_leaf || !L->group_sphere)
    return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  size_t g = 0;
  for (size_t k = 0; k < t->n_leaves; k++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[k]];
    const size_t m = fmmcl_tree3d_n_tgt(c), parts = (m + G - 1) / G;
    for (size_t j = 0; j < parts; j++, g++)
      L->group_begin[g] = c->tgt_begin + j * m / parts, L->group_leaf[g] = t->leaves[k];
  }
  L->group_begin[n] = t->n_targets;
#pragma omp parallel for schedule(dynamic, 256)
  for (size_t i = 0; i < n; i++) {
    double b[6];
    for (int d = 0; d < 3; d++) b[d] = INFINITY, b[3 + d] = -INFINITY;
    for (size_t j = L->group_begin[i]; j < L->group_begin[i + 1]; j++)
      for (int d = 0; d < 3; d++) {
        const double v = target_coord(t, targets, j, d);
        b[d] = fmin(b[d], v), b[3 + d] = fmax(b[3 + d], v);
      }
    box_sphere(b, L->group_sphere + 4 * i);
  }
  return FMMCL_SUCCESS;
}

/* Depth-first from the root: the first accepted cell on each path is far,
 * a leaf never accepted is near. A stack of 7 * levels + 1 cells suffices. */
static void emit_treecode_row(const void *vctx, size_t row, fmmcl_tree3d_row_sink *sink) {
  const treecode_context *ctx = vctx;
  const fmmcl_tree3d_cell *cells = ctx->tree->cells;
  const double *sphere = ctx->lists->sphere, *target = ctx->lists->group_sphere + 4 * row;
  const double theta = ctx->lists->theta;
  int32_t stack[7 * (FMMCL_MORTON_LEVELS + 1) + 1];
  int top = 0;
  stack[top++] = 0;
  while (top) {
    int32_t a = stack[--top];
    const fmmcl_tree3d_cell *c = &cells[a];
    if (!fmmcl_tree3d_n_src(c)) continue;
    if (fmmcl_tree3d_mac_accepts(sphere + 4 * a, target, theta)) fmmcl_tree3d_emit(sink, LIST_FAR, a);
    else if (fmmcl_tree3d_is_leaf(c)) fmmcl_tree3d_emit(sink, LIST_NEAR, a);
    else /* pushed in reverse so lists come out in Morton order */
      for (int32_t k = c->child_begin + c->n_children - 1; k >= c->child_begin; k--) stack[top++] = k;
  }
}

fmmcl_status fmmcl_tree3d_treecode_lists_build(const fmmcl_tree3d *tree, const double *sources,
                                               const double *targets, double theta, size_t group_size,
                                               fmmcl_tree3d_treecode_lists *lists) {
  if (!tree || !lists)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_treecode_lists_build: NULL argument");
  memset(lists, 0, sizeof *lists);
  if (!(theta > 0.0) || !isfinite(theta))
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT,
                      "fmmcl_tree3d_treecode_lists_build: theta = %g must be positive and finite", theta);
  if (group_size < 1)
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT, "fmmcl_tree3d_treecode_lists_build: group size 0");
  if (!tree->target_xyz && !targets) targets = sources;
  if (!tree->target_xyz && (!targets || !tree->target_perm))
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER,
                      "fmmcl_tree3d_treecode_lists_build: no target coordinates");
  lists->theta = theta, lists->group_size = group_size;
  lists->sphere = malloc(4 * (tree->n_cells ? tree->n_cells : 1) * sizeof *lists->sphere);
  fmmcl_status st =
      lists->sphere ? FMMCL_SUCCESS : fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (!st) st = fmmcl_tree3d_source_spheres(tree, sources, lists->sphere);
  if (!st) st = make_groups(tree, targets, lists);
  treecode_context ctx = {tree, lists};
  fmmcl_tree3d_csr csr[N_LISTS];
  if (!st) st = fmmcl_tree3d_csr_build(lists->n_groups, N_LISTS, emit_treecode_row, &ctx, csr);
  if (st) {
    fmmcl_tree3d_treecode_lists_free(lists);
    return st;
  }
  lists->far = csr[LIST_FAR];
  lists->near = csr[LIST_NEAR];
  return FMMCL_SUCCESS;
}

void fmmcl_tree3d_treecode_lists_free(fmmcl_tree3d_treecode_lists *lists) {
  if (!lists) return;
  free(lists->sphere), free(lists->group_begin), free(lists->group_leaf), free(lists->group_sphere);
  lists->sphere = lists->group_sphere = NULL, lists->group_begin = NULL, lists->group_leaf = NULL;
  lists->n_groups = 0;
  fmmcl_tree3d_csr_free(&lists->far);
  fmmcl_tree3d_csr_free(&lists->near);
}
