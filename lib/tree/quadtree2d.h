/* quadtree2d.h — the uniform quadtree of the 2D Laplace FMM: points sorted by
 * leaf, cells numbered level by level in Morton order, U and V lists. */
#ifndef FMMCL_QUADTREE2D_H
#define FMMCL_QUADTREE2D_H

#include <stddef.h>

#include "fmmcl.h"

/* Deepest leaf level: 4^12 leaves already outnumber any sensible point set,
 * and float centres stay exact there. */
#define FMMCL_QUADTREE2D_MAX_LEVELS 12

/* Significant bits of the root's side: a cell centre relative to the
 * root's centre is side (2i + 1 - 2^l) / 2^(l+1), an odd number of at most
 * 12 bits times the side, so with 11 bits every centre, every cell side and
 * every difference of neighbouring centres is exact in float, and the
 * device can shift between cells' local frames without rounding. */
#define FMMCL_QUADTREE2D_SIDE_BITS 11

/* Cell (level l, Morton index m) is global cell level_offset(l) + m; its
 * children are level_offset(l+1) + 4m .. 4m+3. */
typedef struct fmmcl_quadtree2d {
  int levels;       /* leaf level L >= 2: 4^L leaves */
  double centre[2]; /* centre of the root square */
  double side;      /* side of the root square (FMMCL_QUADTREE2D_SIDE_BITS significant bits) */
  size_t n_sources, n_targets;
  size_t *source_perm, *target_perm; /* sorted position -> caller's index */
  double *src, *tgt;                 /* sorted points relative to centre, (x, y) each */
  size_t *leaf_src, *leaf_tgt;       /* 4^L + 1 begin offsets of each leaf's points */
  size_t n_cells;                    /* cells of all levels 0..L */
  /* V list (levels 2..L): cell c takes M2L from v_src[v_begin[c] .. v_begin[c+1]);
   * only cells with targets have lists, only cells with sources are in them */
  size_t *v_begin, *v_src, n_v;
  /* U list: leaf i takes P2P from leaves u_leaf[u_begin[i] .. u_begin[i+1]), itself
   * included; only leaves with targets have lists, only leaves with sources are in them */
  size_t *u_begin, *u_leaf;
} fmmcl_quadtree2d;

size_t fmmcl_quadtree2d_level_offset(int level);
/* Sources (or targets) in cell m of level l: the leaves under it are
 * consecutive in Morton order. */
size_t fmmcl_quadtree2d_cell_sources(const fmmcl_quadtree2d *t, int level, size_t m);
size_t fmmcl_quadtree2d_cell_targets(const fmmcl_quadtree2d *t, int level, size_t m);
/* Column x and row y of cell m of its level (Morton index m). */
void fmmcl_quadtree2d_cell_xy(size_t m, size_t *x, size_t *y);
/* Side of a cell of level l. */
double fmmcl_quadtree2d_cell_side(const fmmcl_quadtree2d *t, int level);
/* Centre of cell m of level l, relative to t->centre. */
void fmmcl_quadtree2d_cell_centre(const fmmcl_quadtree2d *t, int level, size_t m, double *c);
/* Leaf level for n points and about q per leaf: the smallest L >= 2 with
 * n <= q 4^L, at most FMMCL_QUADTREE2D_MAX_LEVELS. */
int fmmcl_quadtree2d_levels_for(size_t n, size_t q);
/* The leaf level in lmin..lmax (at most FMMCL_QUADTREE2D_MAX_LEVELS) that
 * minimises pair_cost * (near-field point pairs) + translation_cost *
 * (M2L translations between occupied cells): deeper than lmin only where
 * points crowd a few leaves (clustered sets). Ties go to the shallower level. */
int fmmcl_quadtree2d_levels_by_cost(size_t ns, const double *src, size_t nt, const double *tgt, int lmin,
                                    int lmax, double pair_cost, double translation_cost);
/* Builds the tree of L levels over sources and targets (tgt NULL: the
 * sources); sets the thread's last error on failure. */
fmmcl_status fmmcl_quadtree2d_build(size_t ns, const double *src, size_t nt, const double *tgt, int levels,
                                    fmmcl_quadtree2d **out);
void fmmcl_quadtree2d_free(fmmcl_quadtree2d *t);

#endif /* FMMCL_QUADTREE2D_H */
