/* tree3d.h — host (plain C, OpenMP) adaptive octree over 3D sources and
 * targets, the adaptive-FMM interaction lists U, V, W, X, the treecode
 * near/far lists, and their statistics. The drivers build on these; the
 * device tree build is tested against them. */
#ifndef FMMCL_TREE3D_H
#define FMMCL_TREE3D_H

#include <stddef.h>
#include <stdint.h>

#include "fmmcl.h"
#include "tree/morton3d.h"

/* One cell of the octree. Cells are stored level by level (root first) and,
 * within a level, in Morton order; the children of a cell are contiguous.
 * A cell's points are the ranges [src_begin, src_end) of the sorted sources
 * and [tgt_begin, tgt_end) of the sorted targets: one tree over the union of
 * both sets, so the same cell index names the same box for either role. */
typedef struct fmmcl_tree3d_cell {
  uint64_t key;        /* Morton key of the cell: the top 3*level bits of its points' keys */
  uint32_t anchor[3];  /* integer coordinates of its lower corner in cells of its level */
  int32_t level;       /* 0 for the root */
  int32_t parent;      /* -1 for the root */
  int32_t child_begin; /* index of the first child; meaningless for a leaf */
  int32_t n_children;  /* 0 for a leaf; only children holding a point exist */
  size_t src_begin, src_end;
  size_t tgt_begin, tgt_end;
  double center[3];
  double half_width; /* half the side of the cube */
} fmmcl_tree3d_cell;

typedef struct fmmcl_tree3d {
  fmmcl_morton3d_cube cube; /* root cube, shared by sources and targets */
  size_t leaf_size;         /* q: a leaf holds at most q sources and at most q targets */
  int max_level;            /* depth limit the tree was built with (<= 21) */
  int n_levels;             /* deepest level present + 1 */
  /* Leaves at max_level that still hold more than q sources or targets
   * (coincident or nearly coincident points); the caller decides whether
   * that is an error. depth_limit_reached = (n_overfull_leaves > 0). */
  int depth_limit_reached;
  size_t n_overfull_leaves;

  size_t n_sources, n_targets;
  int targets_are_sources; /* the target arrays below alias the source arrays */
  /* Sorted by key; *_perm[i] is the caller's index of sorted point i, so a
   * result r_sorted unpermutes as r_caller[perm[i]] = r_sorted[i]. */
  uint64_t *source_keys;
  size_t *source_perm;
  double *source_xyz; /* sorted coordinates, interleaved (NULL: kept on the device) */
  uint64_t *target_keys;
  size_t *target_perm;
  double *target_xyz;

  size_t n_cells;
  fmmcl_tree3d_cell *cells;
  size_t level_begin[FMMCL_MORTON_LEVELS + 2]; /* level l is cells [level_begin[l], level_begin[l+1]) */
  size_t n_leaves;
  int32_t *leaves; /* leaf cell indices in Morton order: their point ranges tile the arrays in order */
} fmmcl_tree3d;

/* Builds the tree. targets == NULL means the targets are the sources
 * (n_targets ignored). leaf_size q >= 1. max_level 0 means the key width
 * limit 21; otherwise 1..21. Errors: NULL pointer, EMPTY_INPUT, NONFINITE_INPUT,
 * INVALID_ARGUMENT, OUT_OF_MEMORY (message in fmmcl_last_error(NULL)).
 * Hitting the depth limit is not an error: see depth_limit_reached. */
fmmcl_status fmmcl_tree3d_build(size_t n_sources, const double *sources, size_t n_targets,
                                const double *targets, size_t leaf_size, int max_level, fmmcl_tree3d **tree);
/* The same in the points' bounding cube grown by grow (>= 1,
 * fmmcl_morton3d_cube_grow): for points spread evenly, where the levels'
 * cells fall and so how many points a leaf holds (the FMM's choice,
 * fmm3d_setup.c). */
fmmcl_status fmmcl_tree3d_build_grown(size_t n_sources, const double *sources, size_t n_targets,
                                      const double *targets, size_t leaf_size, int max_level, double grow,
                                      fmmcl_tree3d **tree);
/* The same tree from keys sorted elsewhere (the device sort): cube is what
 * fmmcl_morton3d_bounding_cube (then fmmcl_morton3d_cube_grow) gives for (sources, targets), and keys/perm
 * are what fmmcl_morton3d_keys then fmmcl_morton3d_sort leave, so the tree
 * equals fmmcl_tree3d_build's. Takes ownership of the malloc'ed key and
 * permutation arrays (targets' NULL when targets == NULL) and frees them on
 * failure too. gather 0 leaves source_xyz and target_xyz NULL, for a
 * caller that has the sorted points elsewhere (on the device). */
fmmcl_status fmmcl_tree3d_build_sorted(size_t n_sources, const double *sources, size_t n_targets,
                                       const double *targets, const fmmcl_morton3d_cube *cube,
                                       uint64_t *source_keys, size_t *source_perm, uint64_t *target_keys,
                                       size_t *target_perm, size_t leaf_size, int max_level, int gather,
                                       fmmcl_tree3d **tree);
void fmmcl_tree3d_destroy(fmmcl_tree3d *tree);
/* A cell's anchor, centre and half-width from its key and level in cube. */
void fmmcl_tree3d_cell_geometry(const fmmcl_morton3d_cube *cube, fmmcl_tree3d_cell *c);
/* Whether t's cells are the tree of the same points in a new root cube
 * (tree3d_refit.c): src_ranges / tgt_ranges (2 uint32 a cell: its first
 * sorted point and the end, from the points sorted in cube) make every
 * refinement decision of fmmcl_tree3d_build as t made it and leave the
 * same cells holding sources and targets; then cells (t->n_cells) receive
 * t's cells with those ranges and cube's geometry, *n_overfull the leaves
 * left over q. Returns 1 if so, 0 if the tree would change (cells then
 * undefined). tgt_ranges may equal src_ranges (targets are sources). */
int fmmcl_tree3d_refit(const fmmcl_tree3d *t, const fmmcl_morton3d_cube *cube, const uint32_t *src_ranges,
                       const uint32_t *tgt_ranges, fmmcl_tree3d_cell *cells, size_t *n_overfull);

static inline int fmmcl_tree3d_is_leaf(const fmmcl_tree3d_cell *c) { return c->n_children == 0; }
static inline size_t fmmcl_tree3d_n_src(const fmmcl_tree3d_cell *c) { return c->src_end - c->src_begin; }
static inline size_t fmmcl_tree3d_n_tgt(const fmmcl_tree3d_cell *c) { return c->tgt_end - c->tgt_begin; }

/* Whether two cells (any levels) touch or overlap as closed cubes: exact,
 * on integer coordinates. */
int fmmcl_tree3d_cells_adjacent(const fmmcl_tree3d_cell *a, const fmmcl_tree3d_cell *b);
/* The same, inlined: the list builders call it millions of times, and the
 * exported function goes through the PLT. Compared on the finest grid,
 * where both cubes have integer corners. */
static inline int fmmcl_tree3d_adjacent_inline(const fmmcl_tree3d_cell *a, const fmmcl_tree3d_cell *b) {
  int sa = FMMCL_MORTON_LEVELS - a->level, sb = FMMCL_MORTON_LEVELS - b->level;
  for (int d = 0; d < 3; d++) {
    int64_t alo = (int64_t)a->anchor[d] << sa, ahi = (int64_t)(a->anchor[d] + 1) << sa;
    int64_t blo = (int64_t)b->anchor[d] << sb, bhi = (int64_t)(b->anchor[d] + 1) << sb;
    if (alo > bhi || blo > ahi) return 0;
  }
  return 1;
}

/* Colleagues: for each cell, the 27 same-level cells at offsets
 * (dx,dy,dz) in {-1,0,1}^3, slot (dx+1)*9 + (dy+1)*3 + (dz+1) (slot 13 is
 * the cell itself); -1 where no such cell exists. *colleagues is malloc'ed,
 * 27 * n_cells entries. */
#define FMMCL_TREE3D_COLLEAGUES 27
fmmcl_status fmmcl_tree3d_colleagues(const fmmcl_tree3d *tree, int32_t **colleagues);

/* ---- lists in compressed-row form -------------------------------------- */

/* Row r is indices[offsets[r] .. offsets[r+1]); n_rows + 1 offsets. */
typedef struct fmmcl_tree3d_csr {
  size_t n_rows;
  size_t *offsets;
  int32_t *indices;
} fmmcl_tree3d_csr;

void fmmcl_tree3d_csr_free(fmmcl_tree3d_csr *csr);

/* Adaptive FMM lists (Carrier-Greengard-Rokhlin; Choi et al. 2014). One row
 * per cell (n_cells rows); rows are filled only for cells holding targets and
 * list only cells holding sources. Adjacent = closed cubes touch.
 *  u: for a leaf B, every leaf adjacent to B, B itself included (P2P).
 *  v: for any cell B, the children of the colleagues of B's parent that are
 *     not adjacent to B (M2L; same level as B).
 *  w: for a leaf B, the cells A below a colleague of B, A not adjacent to B
 *     but A's parent adjacent to B (M2P: A's multipole at B's targets).
 *  x: for any cell B, the leaves A with B in w(A), i.e. A coarser than B,
 *     adjacent to B's parent but not to B (P2L: A's sources into B's local).
 * For a target leaf B and a source leaf A exactly one holds: A in u(B); an
 * ancestor-or-self of A in v of an ancestor-or-self of B; an ancestor-or-self
 * of A in w(B); A in x of an ancestor-or-self of B. */
typedef struct fmmcl_tree3d_fmm_lists {
  fmmcl_tree3d_csr u, v, w, x;
} fmmcl_tree3d_fmm_lists;

fmmcl_status fmmcl_tree3d_fmm_lists_build(const fmmcl_tree3d *tree, fmmcl_tree3d_fmm_lists *lists);
void fmmcl_tree3d_fmm_lists_free(fmmcl_tree3d_fmm_lists *lists);

/* The V list in batches for a batched M2L (tree3d_v_batches.c): target
 * cells of one level and one position in their parents share most of
 * their V list's directions, so a work-group takes up to b of them and
 * reads each direction's operator once for all. Group g's target cells are
 * targets[g * b ..] (-1: none), its entries begin[g] .. begin[g+1], one per
 * direction: its key dir[e] ((dx + 3) 49 + (dy + 3) 7 + dz + 3 of the
 * target's anchor less the source's), one (source, target) pair pair[2e],
 * pair[2e+1] of it, and each target's source sources[e * b ..] (-1: none). */
typedef struct fmmcl_tree3d_v_batches {
  size_t n_groups, n_entries;
  int b;
  int *targets, *begin, *sources, *dir, *pair;
} fmmcl_tree3d_v_batches;
/* 0, or -1 out of memory, -2 a V pair across levels. */
int fmmcl_tree3d_v_batches_build(const fmmcl_tree3d *t, const fmmcl_tree3d_csr *v, int b,
                                 fmmcl_tree3d_v_batches *h);
void fmmcl_tree3d_v_batches_free(fmmcl_tree3d_v_batches *h);

/* Treecode lists, one row per target GROUP: each leaf's targets cut, in
 * Morton order, into the fewest runs of at most group_size (sizes within
 * one of each other), independent of the leaf size. Each cell's multipole
 * is expanded about the centre s_A of its sources' bounding box, and
 * b_A = |box| / 2 bounds |y - s_A| over its sources y (the sphere,
 * fmmcl_tree3d_source_spheres); a group's targets likewise lie within r_G
 * of the centre c_G of their own bounding box. Acceptance of source cell A
 * for target group G:
 *     b_A + r_G < theta * |s_A - c_G|.
 * For theta <= 1 this bounds, for every target x in G and source y in A,
 * |y - s_A| / |x - s_A| < theta: the pointwise Barnes-Hut ratio about the
 * expansion centre, wherever in the cells the points sit. A group's r_G is
 * far smaller than its leaf's half-diagonal, so cells are accepted much
 * nearer (fewer far cells a target, fewer near leaves). The traversal
 * from the root takes the first accepted cell on each path (far: M2P) and
 * the leaves never accepted (near: P2P), so every source is counted once
 * per target group. */
typedef struct fmmcl_tree3d_treecode_lists {
  double theta;
  size_t group_size; /* the most targets a group holds */
  double *sphere;    /* 4 per cell: s_A (x, y, z) and b_A, world units */
  size_t n_groups;
  /* group g: the sorted targets [group_begin[g], group_begin[g + 1]) of
   * leaf group_leaf[g], within group_sphere[4g + 3] of (x, y, z) =
   * group_sphere[4g ..] (world units); groups tile the sorted targets */
  size_t *group_begin;
  int32_t *group_leaf;
  double *group_sphere;
  fmmcl_tree3d_csr far, near; /* n_groups rows */
} fmmcl_tree3d_treecode_lists;

/* theta > 0 and finite, group_size >= 1, else FMMCL_ERROR_INVALID_ARGUMENT.
 * sources, targets: the caller's coordinates, read through the tree's
 * permutations where the tree keeps no sorted copy (device sort; targets
 * NULL: the sources); may be NULL otherwise. */
fmmcl_status fmmcl_tree3d_treecode_lists_build(const fmmcl_tree3d *tree, const double *sources,
                                               const double *targets, double theta, size_t group_size,
                                               fmmcl_tree3d_treecode_lists *lists);
void fmmcl_tree3d_treecode_lists_free(fmmcl_tree3d_treecode_lists *lists);
/* Each cell's source sphere (4 doubles per cell, as in the lists above;
 * cells without sources: their centre and 0). */
fmmcl_status fmmcl_tree3d_source_spheres(const fmmcl_tree3d *tree, const double *sources, double *sphere);
/* The acceptance test above (source_sphere: s_A and b_A; target_sphere:
 * c_G and r_G), for reuse by checks. */
int fmmcl_tree3d_mac_accepts(const double *source_sphere, const double *target_sphere, double theta);

/* ---- statistics for the performance model ------------------------------- */

typedef struct fmmcl_tree3d_list_stats {
  size_t entries;      /* total list entries */
  size_t max_row;      /* longest row */
  double interactions; /* work units: see fmmcl_tree3d_stats */
} fmmcl_tree3d_list_stats;

typedef struct fmmcl_tree3d_stats {
  size_t n_cells, n_leaves;
  size_t n_source_leaves, n_target_leaves; /* leaves holding sources / targets */
  int n_levels;
  size_t cells_per_level[FMMCL_MORTON_LEVELS + 1];
  size_t leaves_per_level[FMMCL_MORTON_LEVELS + 1];
  size_t max_leaf_sources, max_leaf_targets;
  /* interactions: u, near = source-target point pairs (P2P); v = cell pairs
   * (M2L); w, far = (target point, cell) evaluations (M2P); x = (source
   * point, cell) evaluations (P2L). Zero when the lists were not given.
   * The treecode's rows are its target groups. */
  fmmcl_tree3d_list_stats u, v, w, x, near, far;
} fmmcl_tree3d_stats;

/* fmm and treecode may be NULL. */
fmmcl_status fmmcl_tree3d_stats_compute(const fmmcl_tree3d *tree, const fmmcl_tree3d_fmm_lists *fmm,
                                        const fmmcl_tree3d_treecode_lists *treecode,
                                        fmmcl_tree3d_stats *stats);

#endif /* FMMCL_TREE3D_H */
