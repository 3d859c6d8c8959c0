/* tree3d_csr.c — two-pass construction of compressed-row lists, shared by
 * the FMM and treecode lists. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tree3d_csr.h"

void fmmcl_tree3d_csr_free(fmmcl_tree3d_csr *csr) {
  if (!csr) return;
  free(csr->offsets);
  free(csr->indices);
  memset(csr, 0, sizeof *csr);
}

static void count_rows(size_t n_rows, int n_lists, fmmcl_tree3d_row_fn row, const void *ctx,
                       fmmcl_tree3d_csr *csr) {
  #pragma omp parallel for schedule(dynamic, 32)
  for (size_t r = 0; r < n_rows; r++) {
    fmmcl_tree3d_row_sink sink = {{NULL}, {0}};
    row(ctx, r, &sink);
    for (int k = 0; k < n_lists; k++) csr[k].offsets[r + 1] = sink.count[k];
  }
  for (int k = 0; k < n_lists; k++) {
    csr[k].offsets[0] = 0;
    for (size_t r = 0; r < n_rows; r++) csr[k].offsets[r + 1] += csr[k].offsets[r];
  }
}

static void fill_rows(size_t n_rows, int n_lists, fmmcl_tree3d_row_fn row, const void *ctx,
                      fmmcl_tree3d_csr *csr) {
  #pragma omp parallel for schedule(dynamic, 32)
  for (size_t r = 0; r < n_rows; r++) {
    fmmcl_tree3d_row_sink sink = {{NULL}, {0}};
    for (int k = 0; k < n_lists; k++) sink.out[k] = csr[k].indices + csr[k].offsets[r];
    row(ctx, r, &sink);
  }
}

fmmcl_status fmmcl_tree3d_csr_build(size_t n_rows, int n_lists, fmmcl_tree3d_row_fn row,
                                    const void *ctx, fmmcl_tree3d_csr *csr) {
  if (n_lists < 1 || n_lists > FMMCL_TREE3D_CSR_MAX_LISTS)
    return fmmcl_fail(NULL, FMMCL_ERROR_INTERNAL, "fmmcl_tree3d_csr_build: %d lists", n_lists);
  memset(csr, 0, (size_t)n_lists * sizeof *csr);
  int ok = 1;
  for (int k = 0; k < n_lists; k++) {
    csr[k].n_rows = n_rows;
    csr[k].offsets = malloc((n_rows + 1) * sizeof(size_t));
    ok = ok && csr[k].offsets;
  }
  if (ok) {
    count_rows(n_rows, n_lists, row, ctx, csr);
    for (int k = 0; k < n_lists; k++) {
      /* one spare entry so an empty list still gets a non-NULL array */
      csr[k].indices = malloc((csr[k].offsets[n_rows] + 1) * sizeof(int32_t));
      ok = ok && csr[k].indices;
    }
  }
  if (!ok) {
    for (int k = 0; k < n_lists; k++) fmmcl_tree3d_csr_free(&csr[k]);
    return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "interaction lists: out of host memory");
  }
  fill_rows(n_rows, n_lists, row, ctx, csr);
  return FMMCL_SUCCESS;
}
