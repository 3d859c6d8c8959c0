/* tree3d_stats.c — counts of cells, leaves, list entries and interactions
 * that the performance model predicts phase times from. */
#include <string.h>

#include "core/internal.h"
#include "tree/tree3d.h"

/* Work of one list entry (row cell b, listed cell a) in the unit of its list. */
typedef double (*entry_work_fn)(const fmmcl_tree3d_cell *b, const fmmcl_tree3d_cell *a);

static double point_pairs(const fmmcl_tree3d_cell *b, const fmmcl_tree3d_cell *a) {
  return (double)fmmcl_tree3d_n_tgt(b) * (double)fmmcl_tree3d_n_src(a);
}
static double cell_pairs(const fmmcl_tree3d_cell *b, const fmmcl_tree3d_cell *a) {
  (void)b, (void)a;
  return 1.0;
}
static double target_evaluations(const fmmcl_tree3d_cell *b, const fmmcl_tree3d_cell *a) {
  (void)a;
  return (double)fmmcl_tree3d_n_tgt(b);
}
static double source_evaluations(const fmmcl_tree3d_cell *b, const fmmcl_tree3d_cell *a) {
  (void)b;
  return (double)fmmcl_tree3d_n_src(a);
}

static void list_stats(const fmmcl_tree3d *t, const fmmcl_tree3d_csr *csr, entry_work_fn work,
                       fmmcl_tree3d_list_stats *out) {
  memset(out, 0, sizeof *out);
  for (size_t r = 0; r < csr->n_rows; r++) {
    size_t len = csr->offsets[r + 1] - csr->offsets[r];
    if (len > out->max_row) out->max_row = len;
    for (size_t e = csr->offsets[r]; e < csr->offsets[r + 1]; e++)
      out->interactions += work(&t->cells[r], &t->cells[csr->indices[e]]);
  }
  out->entries = csr->offsets[csr->n_rows];
}

/* The treecode's rows are its target groups: a group's targets against
 * each listed cell (its sources for near, one evaluation each for far). */
static void treecode_stats(const fmmcl_tree3d *t, const fmmcl_tree3d_treecode_lists *L,
                           const fmmcl_tree3d_csr *csr, int pairs, fmmcl_tree3d_list_stats *out) {
  memset(out, 0, sizeof *out);
  for (size_t r = 0; r < csr->n_rows; r++) {
    const size_t len = csr->offsets[r + 1] - csr->offsets[r];
    const double n = (double)(L->group_begin[r + 1] - L->group_begin[r]);
    if (len > out->max_row) out->max_row = len;
    for (size_t e = csr->offsets[r]; e < csr->offsets[r + 1]; e++)
      out->interactions += pairs ? n * (double)fmmcl_tree3d_n_src(&t->cells[csr->indices[e]]) : n;
  }
  out->entries = csr->offsets[csr->n_rows];
}

static void tree_stats(const fmmcl_tree3d *t, fmmcl_tree3d_stats *s) {
  s->n_cells = t->n_cells;
  s->n_leaves = t->n_leaves;
  s->n_levels = t->n_levels;
  for (size_t i = 0; i < t->n_cells; i++) {
    const fmmcl_tree3d_cell *c = &t->cells[i];
    s->cells_per_level[c->level]++;
    if (!fmmcl_tree3d_is_leaf(c)) continue;
    size_t ns = fmmcl_tree3d_n_src(c), nt = fmmcl_tree3d_n_tgt(c);
    s->leaves_per_level[c->level]++;
    s->n_source_leaves += ns > 0;
    s->n_target_leaves += nt > 0;
    if (ns > s->max_leaf_sources) s->max_leaf_sources = ns;
    if (nt > s->max_leaf_targets) s->max_leaf_targets = nt;
  }
}

fmmcl_status fmmcl_tree3d_stats_compute(const fmmcl_tree3d *tree, const fmmcl_tree3d_fmm_lists *fmm,
                                        const fmmcl_tree3d_treecode_lists *treecode,
                                        fmmcl_tree3d_stats *stats) {
  if (!tree || !stats)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_stats_compute: NULL argument");
  memset(stats, 0, sizeof *stats);
  tree_stats(tree, stats);
  if (fmm) {
    list_stats(tree, &fmm->u, point_pairs, &stats->u);
    list_stats(tree, &fmm->v, cell_pairs, &stats->v);
    list_stats(tree, &fmm->w, target_evaluations, &stats->w);
    list_stats(tree, &fmm->x, source_evaluations, &stats->x);
  }
  if (treecode) {
    treecode_stats(tree, treecode, &treecode->near, 1, &stats->near);
    treecode_stats(tree, treecode, &treecode->far, 0, &stats->far);
  }
  return FMMCL_SUCCESS;
}
