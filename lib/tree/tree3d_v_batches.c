/* tree3d_v_batches.c — the V list in the batched M2L's order: target cells
 * of one level and one position in their parents (so their V lists share
 * most directions), b at a time, each group with the union of its cells'
 * directions and, per direction, each cell's source cell. */
#include <stdlib.h>
#include <string.h>

#include "tree/tree3d.h"

void fmmcl_tree3d_v_batches_free(fmmcl_tree3d_v_batches *h) {
  free(h->targets), free(h->begin), free(h->sources), free(h->dir), free(h->pair);
  memset(h, 0, sizeof *h);
}

/* Direction keys: same-level anchor differences, each in -3..3. */
#define N_DIRECTIONS 343

/* The direction key of source cell a seen from target cell t (one level):
 * the anchors' difference, each in -3..3. */
static int direction_key(const fmmcl_tree3d_cell *t, const fmmcl_tree3d_cell *a) {
  int key = 0;
  for (int d = 0; d < 3; d++) key = 7 * key + ((int)t->anchor[d] - (int)a->anchor[d] + 3);
  return key;
}

static int octant(const fmmcl_tree3d_cell *c) {
  return (int)(c->anchor[0] & 1) | (int)(c->anchor[1] & 1) << 1 | (int)(c->anchor[2] & 1) << 2;
}

/* The end of the group that starts at order[i]: up to b cells of one
 * level and octant. */
static size_t group_end(const fmmcl_tree3d *t, const int *order, size_t n, size_t i, int b) {
  const fmmcl_tree3d_cell *ci = &t->cells[order[i]];
  size_t j = i + 1;
  while (j < n && j - i < (size_t)b && t->cells[order[j]].level == ci->level &&
         octant(&t->cells[order[j]]) == octant(ci))
    j++;
  return j;
}

int fmmcl_tree3d_v_batches_build(const fmmcl_tree3d *t, const fmmcl_tree3d_csr *v, int b,
                                 fmmcl_tree3d_v_batches *h) {
  memset(h, 0, sizeof *h);
  /* the cells with V entries, ordered by (level, octant), stably */
  size_t n = 0, count[(FMMCL_MORTON_LEVELS + 1) * 8 + 1] = {0};
  for (size_t c = 0; c < t->n_cells; c++)
    if (v->offsets[c] < v->offsets[c + 1]) {
      const fmmcl_tree3d_cell *cell = &t->cells[c];
      for (size_t i = v->offsets[c]; i < v->offsets[c + 1]; i++)
        if (t->cells[v->indices[i]].level != cell->level) return -2; /* V pairs share a level */
      count[cell->level * 8 + octant(cell) + 1]++;
      n++;
    }
  for (size_t k = 1; k < sizeof count / sizeof count[0]; k++) count[k] += count[k - 1];
  int *order = malloc((n ? n : 1) * sizeof(int));
  if (!order) return -1;
  for (size_t c = 0; c < t->n_cells; c++)
    if (v->offsets[c] < v->offsets[c + 1]) {
      const fmmcl_tree3d_cell *cell = &t->cells[c];
      order[count[cell->level * 8 + octant(cell)]++] = (int)c;
    }
  /* groups of b cells of one (level, octant) */
  size_t n_groups = 0, cap_entries = 0;
  for (size_t i = 0; i < n; i = group_end(t, order, n, i, b)) n_groups++;
  for (size_t i = 0; i < n; i++) cap_entries += v->offsets[order[i] + 1] - v->offsets[order[i]];
  /* a group has at most one entry per direction: without this bound the
   * sources table would hold b slots for every V entry */
  if (cap_entries > n_groups * N_DIRECTIONS) cap_entries = n_groups * N_DIRECTIONS;
  h->targets = malloc((n_groups ? n_groups : 1) * (size_t)b * sizeof(int));
  h->begin = malloc((n_groups + 1) * sizeof(int));
  h->sources = malloc((cap_entries ? cap_entries : 1) * (size_t)b * sizeof(int));
  h->dir = malloc((cap_entries ? cap_entries : 1) * sizeof(int));
  h->pair = malloc(2 * (cap_entries ? cap_entries : 1) * sizeof(int));
  if (!h->targets || !h->begin || !h->sources || !h->dir || !h->pair) {
    free(order);
    fmmcl_tree3d_v_batches_free(h);
    return -1;
  }
  int slot[N_DIRECTIONS];
  size_t g = 0, e = 0;
  for (size_t i = 0; i < n; g++) {
    const size_t j = group_end(t, order, n, i, b);
    h->begin[g] = (int)e;
    for (int k = 0; k < N_DIRECTIONS; k++) slot[k] = -1;
    for (int m = 0; m < b; m++)
      h->targets[g * (size_t)b + (size_t)m] = i + (size_t)m < j ? order[i + (size_t)m] : -1;
    for (size_t m = 0; m < j - i; m++) {
      const int c = order[i + m];
      for (size_t k = v->offsets[c]; k < v->offsets[c + 1]; k++) {
        const int a = v->indices[k], key = direction_key(&t->cells[c], &t->cells[a]);
        if (slot[key] < 0) {
          slot[key] = (int)e;
          h->dir[e] = key;
          h->pair[2 * e] = a, h->pair[2 * e + 1] = c;
          for (int q = 0; q < b; q++) h->sources[e * (size_t)b + (size_t)q] = -1;
          e++;
        }
        h->sources[(size_t)slot[key] * (size_t)b + m] = a;
      }
    }
    i = j;
  }
  h->begin[g] = (int)e;
  h->n_groups = n_groups;
  h->n_entries = e;
  h->b = b;
  free(order);
  return 0;
}
