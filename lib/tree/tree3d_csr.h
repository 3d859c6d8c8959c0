/* tree3d_csr.h — builds several compressed-row lists at once from a function
 * that emits each row: one pass into per-chunk buffers, a prefix sum, then
 * the chunks copied into place. */
#ifndef FMMCL_TREE3D_CSR_H
#define FMMCL_TREE3D_CSR_H

#include "tree/tree3d.h"

#define FMMCL_TREE3D_CSR_MAX_LISTS 4

/* Where a row function writes: entry j of list k goes to out[k][j] while
 * j < cap[k]; count[k] counts them all, so a row that overflows is run
 * again once its buffer has grown. */
typedef struct fmmcl_tree3d_row_sink {
  int32_t *out[FMMCL_TREE3D_CSR_MAX_LISTS];
  size_t cap[FMMCL_TREE3D_CSR_MAX_LISTS];
  size_t count[FMMCL_TREE3D_CSR_MAX_LISTS];
} fmmcl_tree3d_row_sink;

static inline void fmmcl_tree3d_emit(fmmcl_tree3d_row_sink *sink, int list, int32_t cell) {
  if (sink->count[list] < sink->cap[list]) sink->out[list][sink->count[list]] = cell;
  sink->count[list]++;
}

/* Emits the entries of row `row` of every list into sink. It may be called
 * more than once for a row and must emit the same entries each time; rows
 * are processed in parallel. */
typedef void (*fmmcl_tree3d_row_fn)(const void *ctx, size_t row, fmmcl_tree3d_row_sink *sink);

/* Builds n_lists (<= 4) lists of n_rows rows each into csr[0..n_lists). On
 * failure every csr is left empty. */
fmmcl_status fmmcl_tree3d_csr_build(size_t n_rows, int n_lists, fmmcl_tree3d_row_fn row, const void *ctx,
                                    fmmcl_tree3d_csr *csr);

#endif /* FMMCL_TREE3D_CSR_H */
