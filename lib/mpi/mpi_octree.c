/* mpi_octree.c — the host octree over a rank's key-sorted points: cells are
 * key prefixes, each a contiguous range, with the points' radius about the
 * cell centre and their bounding box. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

static int new_cell(mpi_tree *t) {
  if (t->n_cells == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    mpi_cell *c = realloc(t->cells, cap * sizeof *c);
    if (!c) return -1;
    t->cells = c, t->cap = cap;
  }
  return (int)t->n_cells++;
}

static void measure(mpi_cell *c, const double *coords) {
  double r2 = 0;
  for (int d = 0; d < 3; d++) c->lo[d] = INFINITY, c->hi[d] = -INFINITY;
  for (size_t i = c->begin; i < c->end; i++) {
    const double *x = coords + 3 * i;
    double s = 0;
    for (int d = 0; d < 3; d++) {
      double dx = x[d] - c->center[d];
      s += dx * dx;
      if (x[d] < c->lo[d]) c->lo[d] = x[d];
      if (x[d] > c->hi[d]) c->hi[d] = x[d];
    }
    if (s > r2) r2 = s;
  }
  c->radius = sqrt(r2);
}

static int split(mpi_tree *t, int ci, const uint64_t *keys, const double *coords, size_t leaf) {
  mpi_cell c = t->cells[ci];
  if (c.end - c.begin <= leaf || c.level >= FMMCL_MPI_KEY_BITS) return 0;
  int shift = 3 * (FMMCL_MPI_KEY_BITS - c.level - 1);
  size_t i = c.begin;
  while (i < c.end) {
    unsigned digit = (unsigned)(keys[i] >> shift) & 7u;
    size_t j = i;
    while (j < c.end && ((unsigned)(keys[j] >> shift) & 7u) == digit) j++;
    int k = new_cell(t);
    if (k < 0) return -1;
    mpi_cell *ch = &t->cells[k];
    memset(ch, 0, sizeof *ch);
    for (int q = 0; q < 8; q++) ch->child[q] = -1;
    ch->begin = i, ch->end = j, ch->level = c.level + 1, ch->half = c.half / 2;
    for (int d = 0; d < 3; d++) ch->center[d] = c.center[d] + ((digit >> d & 1u) ? ch->half : -ch->half);
    measure(ch, coords);
    t->cells[ci].child[digit] = k;
    if (split(t, k, keys, coords, leaf)) return -1;
    i = j;
  }
  return 0;
}

int mpi_tree_build(const mpi_frame *f, size_t n, const uint64_t *keys, const double *coords, size_t leaf,
                   mpi_tree *t) {
  memset(t, 0, sizeof *t);
  if (n == 0) return 0;
  int root = new_cell(t);
  if (root < 0) return -1;
  mpi_cell *c = &t->cells[root];
  memset(c, 0, sizeof *c);
  for (int q = 0; q < 8; q++) c->child[q] = -1;
  c->begin = 0, c->end = n, c->half = f->side / 2;
  for (int d = 0; d < 3; d++) c->center[d] = f->lo[d] + f->side / 2;
  measure(c, coords);
  return split(t, root, keys, coords, leaf < 1 ? 1 : leaf);
}

void mpi_tree_free(mpi_tree *t) {
  free(t->cells);
  memset(t, 0, sizeof *t);
}
