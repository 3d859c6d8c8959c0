/* tree3d_csr.c — one-pass construction of compressed-row lists, shared by
 * the FMM and treecode lists: rows are emitted once, chunk by chunk, into
 * each thread's growable buffers, then copied into the final arrays. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/internal.h"
#include "tree/tree3d_csr.h"

/* Rows per chunk: a unit of dynamic scheduling, small enough to balance
 * rows of very different lengths. */
#define CHUNK_ROWS 32

/* One thread's output: its chunks' entries, back to back. */
typedef struct chunk_buffers {
  int32_t *buf[FMMCL_TREE3D_CSR_MAX_LISTS];
  size_t len[FMMCL_TREE3D_CSR_MAX_LISTS], cap[FMMCL_TREE3D_CSR_MAX_LISTS];
} chunk_buffers;

/* Where a chunk's entries landed: thread and start in its buffers. */
typedef struct chunk_place {
  int thread;
  size_t start[FMMCL_TREE3D_CSR_MAX_LISTS];
} chunk_place;

static int thread_id(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

static int max_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void fmmcl_tree3d_csr_free(fmmcl_tree3d_csr *csr) {
  if (!csr) return;
  free(csr->offsets);
  free(csr->indices);
  memset(csr, 0, sizeof *csr);
}

/* Grows list k of a thread's buffers to hold at least need entries; 0 when out of memory. */
static int grow(chunk_buffers *c, int k, size_t need) {
  if (need <= c->cap[k]) return 1;
  size_t cap = c->cap[k] ? 2 * c->cap[k] : 4096;
  while (cap < need) cap *= 2;
  int32_t *b = realloc(c->buf[k], cap * sizeof *b);
  if (!b) return 0;
  c->buf[k] = b, c->cap[k] = cap;
  return 1;
}

/* Emits rows [r0, r1) into a thread's buffers, storing row lengths in offsets[r+1];
 * 0 when out of memory. */
static int emit_chunk(size_t r0, size_t r1, int n_lists, fmmcl_tree3d_row_fn row, const void *ctx,
                      chunk_buffers *c, fmmcl_tree3d_csr *csr) {
  for (size_t r = r0; r < r1; r++) {
    fmmcl_tree3d_row_sink sink;
    for (int again = 0; again < 2; again++) {
      memset(&sink, 0, sizeof sink);
      for (int k = 0; k < n_lists; k++)
        sink.out[k] = c->buf[k] + c->len[k], sink.cap[k] = c->cap[k] - c->len[k];
      row(ctx, r, &sink);
      int fits = 1;
      for (int k = 0; k < n_lists; k++)
        if (sink.count[k] > sink.cap[k]) {
          fits = 0;
          if (!grow(c, k, c->len[k] + sink.count[k])) return 0;
        }
      if (fits) break;
    }
    for (int k = 0; k < n_lists; k++) csr[k].offsets[r + 1] = sink.count[k], c->len[k] += sink.count[k];
  }
  return 1;
}

static fmmcl_status fail_oom(int n_lists, fmmcl_tree3d_csr *csr) {
  for (int k = 0; k < n_lists; k++) fmmcl_tree3d_csr_free(&csr[k]);
  return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "interaction lists: out of host memory");
}

fmmcl_status fmmcl_tree3d_csr_build(size_t n_rows, int n_lists, fmmcl_tree3d_row_fn row, const void *ctx,
                                    fmmcl_tree3d_csr *csr) {
  if (n_lists < 1 || n_lists > FMMCL_TREE3D_CSR_MAX_LISTS)
    return fmmcl_fail(NULL, FMMCL_ERROR_INTERNAL, "fmmcl_tree3d_csr_build: %d lists", n_lists);
  memset(csr, 0, (size_t)n_lists * sizeof *csr);
  const size_t n_chunks = (n_rows + CHUNK_ROWS - 1) / CHUNK_ROWS;
  const int n_threads = max_threads();
  chunk_buffers *threads = calloc((size_t)n_threads, sizeof *threads);
  chunk_place *place = malloc((n_chunks ? n_chunks : 1) * sizeof *place);
  int ok = threads && place;
  for (int k = 0; k < n_lists; k++) {
    csr[k].n_rows = n_rows;
    csr[k].offsets = malloc((n_rows + 1) * sizeof(size_t));
    ok = ok && csr[k].offsets;
  }
  if (ok) {
#pragma omp parallel for schedule(dynamic, 1) reduction(&& : ok)
    for (size_t c = 0; c < n_chunks; c++) {
      chunk_buffers *b = &threads[thread_id()];
      size_t r1 = (c + 1) * CHUNK_ROWS < n_rows ? (c + 1) * CHUNK_ROWS : n_rows;
      place[c].thread = thread_id();
      for (int k = 0; k < n_lists; k++) place[c].start[k] = b->len[k];
      ok = emit_chunk(c * CHUNK_ROWS, r1, n_lists, row, ctx, b, csr) && ok;
    }
  }
  for (int k = 0; ok && k < n_lists; k++) {
    csr[k].offsets[0] = 0;
    for (size_t r = 0; r < n_rows; r++) csr[k].offsets[r + 1] += csr[k].offsets[r];
    /* one spare entry so an empty list still gets a non-NULL array */
    csr[k].indices = malloc((csr[k].offsets[n_rows] + 1) * sizeof(int32_t));
    ok = csr[k].indices != NULL;
  }
  if (ok) {
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < n_chunks; c++) {
      size_t r0 = c * CHUNK_ROWS, r1 = r0 + CHUNK_ROWS < n_rows ? r0 + CHUNK_ROWS : n_rows;
      const chunk_buffers *b = &threads[place[c].thread];
      for (int k = 0; k < n_lists; k++) {
        size_t len = csr[k].offsets[r1] - csr[k].offsets[r0];
        if (len)
          memcpy(csr[k].indices + csr[k].offsets[r0], b->buf[k] + place[c].start[k], len * sizeof(int32_t));
      }
    }
  }
  for (int t = 0; threads && t < n_threads; t++)
    for (int k = 0; k < n_lists; k++) free(threads[t].buf[k]);
  free(threads);
  free(place);
  return ok ? FMMCL_SUCCESS : fail_oom(n_lists, csr);
}
