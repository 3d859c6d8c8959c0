/* tree3d_build.c — builds the adaptive octree: root cube, Morton sort of
 * sources and targets (here, or on the device: fmmcl_tree3d_build_sorted),
 * then level-by-level refinement until every leaf holds at most q sources
 * and q targets or the depth limit is reached. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "tree/tree3d.h"

/* Sorted coordinates: sorted point i is caller point perm[i]. */
static fmmcl_status gather_points(const double *xyz, const size_t *perm, size_t n, double **sorted) {
  *sorted = malloc(3 * (n ? n : 1) * sizeof(double));
  if (!*sorted) return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "fmmcl_tree3d_build: out of host memory");
  double *out = *sorted;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) memcpy(out + 3 * i, xyz + 3 * perm[i], 3 * sizeof(double));
  return FMMCL_SUCCESS;
}

/* Sorts one point set by key into the tree's arrays. */
static fmmcl_status sort_points(const fmmcl_morton3d_cube *cube, const double *xyz, size_t n, uint64_t **keys,
                                size_t **perm, double **sorted) {
  *keys = malloc(n * sizeof(uint64_t));
  *perm = malloc(n * sizeof(size_t));
  if (!*keys || !*perm)
    return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "fmmcl_tree3d_build: out of host memory");
  fmmcl_morton3d_keys(cube, xyz, n, *keys);
  fmmcl_status st = fmmcl_morton3d_sort(*keys, *perm, n);
  if (st) return st;
  return gather_points(xyz, *perm, n, sorted);
}

/* First index in [lo, hi) whose key is >= bound. */
static size_t lower_bound_key(const uint64_t *keys, size_t lo, size_t hi, uint64_t bound) {
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < bound) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Where the 8 children of a cell (key, level) begin in the sorted range
 * [lo, hi): child o holds [bounds[o], bounds[o+1]). */
static void split_range(const uint64_t *keys, size_t lo, size_t hi, uint64_t key, int level,
                        size_t bounds[9]) {
  int shift = 3 * (FMMCL_MORTON_LEVELS - (level + 1));
  bounds[0] = lo;
  for (int o = 1; o < 8; o++)
    bounds[o] = lower_bound_key(keys, bounds[o - 1], hi, ((key << 3) | (uint64_t)o) << shift);
  bounds[8] = hi;
}

static int needs_split(const fmmcl_tree3d *t, const fmmcl_tree3d_cell *c) {
  return c->level < t->max_level &&
         (fmmcl_tree3d_n_src(c) > t->leaf_size || fmmcl_tree3d_n_tgt(c) > t->leaf_size);
}

static void set_geometry(const fmmcl_morton3d_cube *cube, fmmcl_tree3d_cell *c) {
  double side = ldexp(cube->width, -c->level);
  fmmcl_morton3d_decode(c->key, &c->anchor[0], &c->anchor[1], &c->anchor[2]);
  for (int d = 0; d < 3; d++) c->center[d] = cube->origin[d] + ((double)c->anchor[d] + 0.5) * side;
  c->half_width = 0.5 * side;
}

/* Number of children of c that hold a point (0 when c stays a leaf). */
static int32_t count_children(const fmmcl_tree3d *t, const fmmcl_tree3d_cell *c) {
  if (!needs_split(t, c)) return 0;
  size_t sb[9], tb[9];
  split_range(t->source_keys, c->src_begin, c->src_end, c->key, c->level, sb);
  split_range(t->target_keys, c->tgt_begin, c->tgt_end, c->key, c->level, tb);
  int32_t n = 0;
  for (int o = 0; o < 8; o++) n += (sb[o + 1] > sb[o] || tb[o + 1] > tb[o]);
  return n;
}

static void fill_children(fmmcl_tree3d *t, int32_t parent) {
  fmmcl_tree3d_cell *c = &t->cells[parent];
  size_t sb[9], tb[9];
  split_range(t->source_keys, c->src_begin, c->src_end, c->key, c->level, sb);
  split_range(t->target_keys, c->tgt_begin, c->tgt_end, c->key, c->level, tb);
  int32_t k = c->child_begin;
  for (int o = 0; o < 8; o++) {
    if (sb[o + 1] == sb[o] && tb[o + 1] == tb[o]) continue;
    fmmcl_tree3d_cell *ch = &t->cells[k++];
    memset(ch, 0, sizeof *ch);
    ch->key = (c->key << 3) | (uint64_t)o;
    ch->level = c->level + 1;
    ch->parent = parent;
    ch->src_begin = sb[o], ch->src_end = sb[o + 1];
    ch->tgt_begin = tb[o], ch->tgt_end = tb[o + 1];
    set_geometry(&t->cube, ch);
  }
}

static fmmcl_status reserve_cells(fmmcl_tree3d *t, size_t *capacity, size_t needed) {
  if (needed > (size_t)INT32_MAX)
    return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "fmmcl_tree3d_build: more than 2^31 cells");
  if (needed <= *capacity) return FMMCL_SUCCESS;
  size_t cap = *capacity ? *capacity : 64;
  while (cap < needed) cap *= 2;
  fmmcl_tree3d_cell *cells = realloc(t->cells, cap * sizeof *cells);
  if (!cells) return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "fmmcl_tree3d_build: out of host memory");
  t->cells = cells;
  *capacity = cap;
  return FMMCL_SUCCESS;
}

/* Refines one level: the children of cells [begin, end) are appended as the
 * next level, contiguous per parent and in Morton order. */
static fmmcl_status refine_level(fmmcl_tree3d *t, size_t begin, size_t end, size_t *capacity) {
  size_t n = end - begin;
  int32_t *counts = malloc((n ? n : 1) * sizeof(int32_t));
  if (!counts) return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "fmmcl_tree3d_build: out of host memory");
#pragma omp parallel for schedule(dynamic, 64)
  for (size_t i = 0; i < n; i++) counts[i] = count_children(t, &t->cells[begin + i]);
  size_t next = end;
  for (size_t i = 0; i < n; i++) {
    t->cells[begin + i].child_begin = (int32_t)(counts[i] ? next : 0);
    t->cells[begin + i].n_children = counts[i];
    next += (size_t)counts[i];
  }
  free(counts);
  fmmcl_status st = reserve_cells(t, capacity, next);
  if (st) return st;
#pragma omp parallel for schedule(dynamic, 64)
  for (size_t i = 0; i < n; i++)
    if (t->cells[begin + i].n_children) fill_children(t, (int32_t)(begin + i));
  t->n_cells = next;
  return FMMCL_SUCCESS;
}

/* Leaves in Morton (depth-first) order, sorted by the key of their lower
 * corner, which is distinct for disjoint cells; counts those left overfull. */
static fmmcl_status collect_leaves(fmmcl_tree3d *t) {
  size_t n = 0;
  for (size_t i = 0; i < t->n_cells; i++) n += fmmcl_tree3d_is_leaf(&t->cells[i]);
  int32_t *unsorted = malloc(n * sizeof(int32_t));
  uint64_t *corner = malloc(n * sizeof(uint64_t));
  size_t *order = malloc(n * sizeof(size_t));
  t->leaves = malloc(n * sizeof(int32_t));
  fmmcl_status st = FMMCL_SUCCESS;
  if (!unsorted || !corner || !order || !t->leaves) {
    st = fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "fmmcl_tree3d_build: out of host memory");
    goto done;
  }
  size_t k = 0;
  for (size_t i = 0; i < t->n_cells; i++) {
    const fmmcl_tree3d_cell *c = &t->cells[i];
    if (!fmmcl_tree3d_is_leaf(c)) continue;
    corner[k] = c->key << 3 * (FMMCL_MORTON_LEVELS - c->level);
    unsorted[k++] = (int32_t)i;
    if (fmmcl_tree3d_n_src(c) > t->leaf_size || fmmcl_tree3d_n_tgt(c) > t->leaf_size) t->n_overfull_leaves++;
  }
  t->depth_limit_reached = t->n_overfull_leaves > 0;
  if ((st = fmmcl_morton3d_sort(corner, order, n))) goto done;
  for (size_t i = 0; i < n; i++) t->leaves[i] = unsorted[order[i]];
  t->n_leaves = n;
done:
  free(unsorted);
  free(corner);
  free(order);
  return st;
}

static fmmcl_status check_arguments(size_t n_sources, const double *sources, size_t n_targets,
                                    const double *targets, size_t leaf_size, int max_level,
                                    fmmcl_tree3d **tree) {
  if (!tree || !sources)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_build: NULL argument");
  if (n_sources == 0 || (targets && n_targets == 0))
    return fmmcl_fail(NULL, FMMCL_ERROR_EMPTY_INPUT, "fmmcl_tree3d_build: no sources or no targets");
  if (leaf_size < 1)
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT, "fmmcl_tree3d_build: leaf size q must be >= 1");
  if (max_level < 0 || max_level > FMMCL_MORTON_LEVELS)
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT, "fmmcl_tree3d_build: max_level %d outside 0..%d",
                      max_level, FMMCL_MORTON_LEVELS);
  return FMMCL_SUCCESS;
}

/* Refines from the root over the sorted keys, then lists the leaves. */
static fmmcl_status refine_all(fmmcl_tree3d *t) {
  size_t capacity = 0;
  fmmcl_status st = reserve_cells(t, &capacity, 1);
  if (st) return st;
  memset(&t->cells[0], 0, sizeof t->cells[0]);
  t->cells[0].parent = -1;
  t->cells[0].src_end = t->n_sources;
  t->cells[0].tgt_end = t->n_targets;
  set_geometry(&t->cube, &t->cells[0]);
  t->n_cells = 1;
  t->level_begin[0] = 0;
  int level = 0;
  for (;; level++) {
    t->level_begin[level + 1] = t->n_cells;
    if (level == FMMCL_MORTON_LEVELS || t->level_begin[level + 1] == t->level_begin[level]) break;
    if ((st = refine_level(t, t->level_begin[level], t->level_begin[level + 1], &capacity))) return st;
  }
  /* the loop stops on the first empty level (or past the last possible one) */
  t->n_levels = t->level_begin[level + 1] == t->level_begin[level] ? level : level + 1;
  for (int l = t->n_levels + 1; l <= FMMCL_MORTON_LEVELS + 1; l++) t->level_begin[l] = t->n_cells;
  return collect_leaves(t);
}

static fmmcl_status build_into(fmmcl_tree3d *t, const double *sources, const double *targets, double grow) {
  fmmcl_status st =
      fmmcl_morton3d_bounding_cube(sources, t->n_sources, targets, targets ? t->n_targets : 0, &t->cube);
  if (st) return st;
  fmmcl_morton3d_cube_grow(&t->cube, grow);
  st = sort_points(&t->cube, sources, t->n_sources, &t->source_keys, &t->source_perm, &t->source_xyz);
  if (st) return st;
  if (targets) {
    st = sort_points(&t->cube, targets, t->n_targets, &t->target_keys, &t->target_perm, &t->target_xyz);
    if (st) return st;
  } else {
    t->target_keys = t->source_keys, t->target_perm = t->source_perm, t->target_xyz = t->source_xyz;
  }
  return refine_all(t);
}

/* An empty tree with the parameters both entry points share. */
static fmmcl_tree3d *tree_new(size_t n_sources, size_t n_targets, const double *targets, size_t leaf_size,
                              int max_level) {
  fmmcl_tree3d *t = calloc(1, sizeof *t);
  if (!t) {
    fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "fmmcl_tree3d_build: out of host memory");
    return NULL;
  }
  t->leaf_size = leaf_size;
  t->max_level = max_level ? max_level : FMMCL_MORTON_LEVELS;
  t->n_sources = n_sources;
  t->targets_are_sources = targets == NULL;
  t->n_targets = targets ? n_targets : n_sources;
  return t;
}

fmmcl_status fmmcl_tree3d_build(size_t n_sources, const double *sources, size_t n_targets,
                                const double *targets, size_t leaf_size, int max_level, fmmcl_tree3d **tree) {
  return fmmcl_tree3d_build_grown(n_sources, sources, n_targets, targets, leaf_size, max_level, 1.0, tree);
}

fmmcl_status fmmcl_tree3d_build_grown(size_t n_sources, const double *sources, size_t n_targets,
                                      const double *targets, size_t leaf_size, int max_level, double grow,
                                      fmmcl_tree3d **tree) {
  fmmcl_status st = check_arguments(n_sources, sources, n_targets, targets, leaf_size, max_level, tree);
  if (st) return st;
  *tree = NULL;
  fmmcl_tree3d *t = tree_new(n_sources, n_targets, targets, leaf_size, max_level);
  if (!t) return FMMCL_ERROR_OUT_OF_MEMORY;
  st = build_into(t, sources, targets, grow);
  if (st) {
    fmmcl_tree3d_destroy(t);
    return st;
  }
  *tree = t;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_tree3d_build_sorted(size_t n_sources, const double *sources, size_t n_targets,
                                       const double *targets, const fmmcl_morton3d_cube *cube,
                                       uint64_t *source_keys, size_t *source_perm, uint64_t *target_keys,
                                       size_t *target_perm, size_t leaf_size, int max_level, int gather,
                                       fmmcl_tree3d **tree) {
  fmmcl_status st = check_arguments(n_sources, sources, n_targets, targets, leaf_size, max_level, tree);
  if (!st && (!cube || !source_keys || !source_perm || (targets && (!target_keys || !target_perm))))
    st = fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_build_sorted: NULL argument");
  fmmcl_tree3d *t = st ? NULL : tree_new(n_sources, n_targets, targets, leaf_size, max_level);
  if (!t) {
    /* ownership was passed in: nothing may leak on failure */
    free(source_keys), free(source_perm);
    if (targets) free(target_keys), free(target_perm);
    if (tree) *tree = NULL;
    return st ? st : FMMCL_ERROR_OUT_OF_MEMORY;
  }
  *tree = NULL;
  t->cube = *cube;
  t->source_keys = source_keys, t->source_perm = source_perm;
  if (targets) t->target_keys = target_keys, t->target_perm = target_perm;
  if (gather) st = gather_points(sources, source_perm, n_sources, &t->source_xyz);
  if (!st && gather && targets) st = gather_points(targets, target_perm, t->n_targets, &t->target_xyz);
  if (!st && !targets)
    t->target_keys = t->source_keys, t->target_perm = t->source_perm, t->target_xyz = t->source_xyz;
  if (!st) st = refine_all(t);
  if (st) {
    fmmcl_tree3d_destroy(t);
    return st;
  }
  *tree = t;
  return FMMCL_SUCCESS;
}

void fmmcl_tree3d_cell_geometry(const fmmcl_morton3d_cube *cube, fmmcl_tree3d_cell *c) { set_geometry(cube, c); }

void fmmcl_tree3d_destroy(fmmcl_tree3d *t) {
  if (!t) return;
  if (!t->targets_are_sources) {
    free(t->target_keys);
    free(t->target_perm);
    free(t->target_xyz);
  }
  free(t->source_keys);
  free(t->source_perm);
  free(t->source_xyz);
  free(t->cells);
  free(t->leaves);
  free(t);
}
