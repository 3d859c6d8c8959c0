/* morton3d_sort.c — stable LSD radix sort of 64-bit Morton keys on the host
 * (OpenMP), returning the permutation that unsorts results. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/internal.h"
#include "tree/morton3d.h"

#define RADIX_BITS 8
#define RADIX_BUCKETS (1 << RADIX_BITS)
/* Below this many keys threads cost more than they save. */
#define PARALLEL_MIN_KEYS 65536

typedef struct radix_buffers {
  uint64_t *keys[2];
  size_t *perm[2];
  size_t *counts; /* [threads][RADIX_BUCKETS] */
  int threads;
} radix_buffers;

static int thread_count(size_t n) {
#ifdef _OPENMP
  if (n >= PARALLEL_MIN_KEYS) return omp_get_max_threads();
#endif
  (void)n;
  return 1;
}

/* Bits above the highest one set in any key never need a pass. */
static int significant_bits(const uint64_t *keys, size_t n) {
  uint64_t all = 0;
  for (size_t i = 0; i < n; i++) all |= keys[i];
  int bits = 0;
  while (bits < 64 && (all >> bits)) bits++;
  return bits;
}

/* One stable counting pass on digit (key >> shift) & 0xff from buffer src to
 * 1 - src; each thread owns a contiguous chunk so stability is kept. */
static void radix_pass(radix_buffers *b, size_t n, int shift, int src) {
  const int T = b->threads;
  const uint64_t *ki = b->keys[src];
  const size_t *pi = b->perm[src];
  uint64_t *ko = b->keys[1 - src];
  size_t *po = b->perm[1 - src];
  memset(b->counts, 0, sizeof(size_t) * (size_t)T * RADIX_BUCKETS);
#pragma omp parallel num_threads(T) if (T > 1)
  {
    int t = 0;
#ifdef _OPENMP
    t = omp_get_thread_num();
#endif
    size_t lo = n * (size_t)t / (size_t)T, hi = n * (size_t)(t + 1) / (size_t)T;
    size_t *c = b->counts + (size_t)t * RADIX_BUCKETS;
    for (size_t i = lo; i < hi; i++) c[(ki[i] >> shift) & (RADIX_BUCKETS - 1)]++;
#pragma omp barrier
#pragma omp single
    {
      /* exclusive scan in (digit, thread) order: digit-major keeps stability */
      size_t sum = 0;
      for (int d = 0; d < RADIX_BUCKETS; d++)
        for (int s = 0; s < T; s++) {
          size_t v = b->counts[(size_t)s * RADIX_BUCKETS + d];
          b->counts[(size_t)s * RADIX_BUCKETS + d] = sum;
          sum += v;
        }
    }
    for (size_t i = lo; i < hi; i++) {
      size_t dst = c[(ki[i] >> shift) & (RADIX_BUCKETS - 1)]++;
      ko[dst] = ki[i];
      po[dst] = pi[i];
    }
  }
}

fmmcl_status fmmcl_morton3d_sort(uint64_t *keys, size_t *perm, size_t n) {
  if (n && (!keys || !perm))
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_morton3d_sort: NULL argument");
  for (size_t i = 0; i < n; i++) perm[i] = i;
  if (n < 2) return FMMCL_SUCCESS;
  radix_buffers b = {
      {keys, malloc(n * sizeof(uint64_t))}, {perm, malloc(n * sizeof(size_t))}, NULL, thread_count(n)};
  b.counts = malloc(sizeof(size_t) * (size_t)b.threads * RADIX_BUCKETS);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!b.keys[1] || !b.perm[1] || !b.counts) {
    st = fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "fmmcl_morton3d_sort: out of host memory");
  } else {
    int bits = significant_bits(keys, n), src = 0;
    for (int shift = 0; shift < bits; shift += RADIX_BITS) {
      radix_pass(&b, n, shift, src);
      src = 1 - src;
    }
    if (src == 1) {
      memcpy(keys, b.keys[1], n * sizeof(uint64_t));
      memcpy(perm, b.perm[1], n * sizeof(size_t));
    }
  }
  free(b.keys[1]);
  free(b.perm[1]);
  free(b.counts);
  return st;
}
