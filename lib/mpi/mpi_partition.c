/* mpi_partition.c — Morton keys in the global frame, splitters of equal work
 * found by bisection on the key range, and the routes that move points to
 * the ranks owning their keys and results back. */
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

static uint64_t spread3(uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

uint64_t mpi_morton_key(const mpi_frame *f, const double *x) {
  const double cells = (double)(1u << FMMCL_MPI_KEY_BITS);
  uint64_t key = 0;
  for (int d = 0; d < 3; d++) {
    double t = (x[d] - f->lo[d]) / f->side * cells;
    uint64_t i = t <= 0 ? 0 : t >= cells - 1 ? (uint64_t)cells - 1 : (uint64_t)t;
    key |= spread3(i) << d;
  }
  return key;
}

typedef struct weighted_key {
  uint64_t key;
  double w;
} weighted_key;

static int cmp_weighted(const void *a, const void *b) {
  uint64_t x = ((const weighted_key *)a)->key, y = ((const weighted_key *)b)->key;
  return x < y ? -1 : x > y;
}

/* Sorted keys and the prefix sums of their weights: prefix[i] = weight of keys[0..i-1]. */
static int sorted_prefix(size_t ns, const uint64_t *sk, const double *sw, size_t nt, const uint64_t *tk,
                         const double *tw, uint64_t **keys, double **prefix) {
  size_t n = ns + nt;
  weighted_key *wk = malloc((n ? n : 1) * sizeof *wk);
  *keys = malloc((n ? n : 1) * sizeof **keys);
  *prefix = malloc((n + 1) * sizeof **prefix);
  if (!wk || !*keys || !*prefix) {
    free(wk);
    return -1;
  }
  for (size_t i = 0; i < ns; i++) wk[i] = (weighted_key){sk[i], sw ? sw[i] : 1.0};
  for (size_t i = 0; i < nt; i++) wk[ns + i] = (weighted_key){tk[i], tw ? tw[i] : 1.0};
  qsort(wk, n, sizeof *wk, cmp_weighted);
  (*prefix)[0] = 0;
  for (size_t i = 0; i < n; i++) {
    (*keys)[i] = wk[i].key;
    (*prefix)[i + 1] = (*prefix)[i] + wk[i].w;
  }
  free(wk);
  return 0;
}

/* Weight of the keys below s. */
static double weight_below(size_t n, const uint64_t *keys, const double *prefix, uint64_t s) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < s) lo = mid + 1;
    else hi = mid;
  }
  return prefix[lo];
}

int mpi_partition_splitters(MPI_Comm comm, size_t ns, const uint64_t *skeys, const double *sweights,
                            size_t nt, const uint64_t *tkeys, const double *tweights, uint64_t *split) {
  int ranks;
  MPI_Comm_size(comm, &ranks);
  uint64_t *keys;
  double *prefix;
  if (sorted_prefix(ns, skeys, sweights, nt, tkeys, tweights, &keys, &prefix)) return -1;
  size_t n = ns + nt;
  double total = prefix[n];
  MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
  int m = ranks - 1;
  uint64_t *lo = calloc(m ? m : 1, sizeof *lo), *hi = malloc((m ? m : 1) * sizeof *hi);
  double *below = malloc((m ? m : 1) * sizeof *below);
  if (!lo || !hi || !below) {
    free(keys), free(prefix), free(lo), free(hi), free(below);
    return -1;
  }
  /* Splitter j is the smallest key s with weight(< s) >= (j + 1) total / ranks:
   * every rank bisects the same ranges with the same global sums. */
  const uint64_t end = (uint64_t)1 << (3 * FMMCL_MPI_KEY_BITS);
  for (int j = 0; j < m; j++) hi[j] = end;
  for (int it = 0; it < 3 * FMMCL_MPI_KEY_BITS + 1; it++) {
    for (int j = 0; j < m; j++) below[j] = weight_below(n, keys, prefix, lo[j] + (hi[j] - lo[j]) / 2);
    if (m) MPI_Allreduce(MPI_IN_PLACE, below, m, MPI_DOUBLE, MPI_SUM, comm);
    for (int j = 0; j < m; j++) {
      uint64_t mid = lo[j] + (hi[j] - lo[j]) / 2;
      if (below[j] >= total * (j + 1) / ranks) hi[j] = mid;
      else lo[j] = mid + 1;
    }
  }
  split[0] = 0;
  for (int j = 0; j < m; j++) split[j + 1] = hi[j];
  split[ranks] = end;
  free(keys), free(prefix), free(lo), free(hi), free(below);
  return 0;
}

static int owner_of(const uint64_t *split, int ranks, uint64_t key) {
  int lo = 0, hi = ranks - 1; /* largest r with split[r] <= key */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (split[mid] <= key) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

static const uint64_t *sort_keys_ctx;
static int cmp_by_key(const void *a, const void *b) {
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  uint64_t x = sort_keys_ctx[i], y = sort_keys_ctx[j];
  return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}

static void displs_of(int ranks, const int *counts, int *displs) {
  displs[0] = 0;
  for (int r = 1; r < ranks; r++) displs[r] = displs[r - 1] + counts[r - 1];
}

static unsigned long long sent_elsewhere(MPI_Comm comm, const int *counts, int width, size_t unit) {
  int rank, ranks;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  unsigned long long b = 0;
  for (int r = 0; r < ranks; r++)
    if (r != rank) b += (unsigned long long)counts[r] * (unsigned long long)width * unit;
  return b;
}

int mpi_route_build(MPI_Comm comm, const mpi_frame *f, const uint64_t *split, size_t n, const double *coords,
                    mpi_route *rt, unsigned long long *bytes) {
  int ranks;
  MPI_Comm_size(comm, &ranks);
  memset(rt, 0, sizeof *rt);
  rt->ranks = ranks;
  rt->n_in = n;
  rt->send_counts = calloc(ranks, sizeof(int));
  rt->send_displs = calloc(ranks, sizeof(int));
  rt->recv_counts = calloc(ranks, sizeof(int));
  rt->recv_displs = calloc(ranks, sizeof(int));
  rt->send_perm = malloc((n ? n : 1) * sizeof(size_t));
  int *owner = malloc((n ? n : 1) * sizeof(int));
  double *out = malloc((n ? 3 * n : 1) * sizeof(double));
  if (!rt->send_counts || !rt->send_displs || !rt->recv_counts || !rt->recv_displs || !rt->send_perm ||
      !owner || !out) {
    free(owner), free(out);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    owner[i] = owner_of(split, ranks, mpi_morton_key(f, coords + 3 * i));
    rt->send_counts[owner[i]]++;
  }
  displs_of(ranks, rt->send_counts, rt->send_displs);
  int *fill = calloc(ranks, sizeof(int));
  if (!fill) {
    free(owner), free(out);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    size_t slot = (size_t)rt->send_displs[owner[i]] + (size_t)fill[owner[i]]++;
    rt->send_perm[slot] = i;
    memcpy(out + 3 * slot, coords + 3 * i, 3 * sizeof(double));
  }
  free(fill), free(owner);
  MPI_Alltoall(rt->send_counts, 1, MPI_INT, rt->recv_counts, 1, MPI_INT, comm);
  displs_of(ranks, rt->recv_counts, rt->recv_displs);
  size_t m = (size_t)rt->recv_displs[ranks - 1] + (size_t)rt->recv_counts[ranks - 1];
  rt->n_owned = m;
  double *in = malloc((m ? 3 * m : 1) * sizeof(double));
  int *sc = malloc(ranks * sizeof(int)), *sd = malloc(ranks * sizeof(int));
  int *rc = malloc(ranks * sizeof(int)), *rd = malloc(ranks * sizeof(int));
  rt->sort_perm = malloc((m ? m : 1) * sizeof(size_t));
  rt->coords = malloc((m ? 3 * m : 1) * sizeof(double));
  rt->keys = malloc((m ? m : 1) * sizeof(uint64_t));
  uint64_t *rkeys = malloc((m ? m : 1) * sizeof(uint64_t));
  if (!in || !sc || !sd || !rc || !rd || !rt->sort_perm || !rt->coords || !rt->keys || !rkeys) {
    free(out), free(in), free(sc), free(sd), free(rc), free(rd), free(rkeys);
    return -1;
  }
  for (int r = 0; r < ranks; r++) {
    sc[r] = 3 * rt->send_counts[r], sd[r] = 3 * rt->send_displs[r];
    rc[r] = 3 * rt->recv_counts[r], rd[r] = 3 * rt->recv_displs[r];
  }
  int err = MPI_Alltoallv(out, sc, sd, MPI_DOUBLE, in, rc, rd, MPI_DOUBLE, comm);
  *bytes += sent_elsewhere(comm, rt->send_counts, 3, sizeof(double));
  free(out), free(sc), free(sd), free(rc), free(rd);
  for (size_t k = 0; k < m; k++) {
    rkeys[k] = mpi_morton_key(f, in + 3 * k);
    rt->sort_perm[k] = k;
  }
  sort_keys_ctx = rkeys;
  qsort(rt->sort_perm, m, sizeof(size_t), cmp_by_key);
  for (size_t k = 0; k < m; k++) {
    size_t s = rt->sort_perm[k];
    rt->keys[k] = rkeys[s];
    memcpy(rt->coords + 3 * k, in + 3 * s, 3 * sizeof(double));
  }
  free(rkeys), free(in);
  return err;
}

static int exchange(MPI_Comm comm, int ranks, int width, const int *sc0, const int *sd0, const double *out,
                    const int *rc0, const int *rd0, double *in) {
  int *sc = malloc(4 * ranks * sizeof(int));
  if (!sc) return -1;
  int *sd = sc + ranks, *rc = sc + 2 * ranks, *rd = sc + 3 * ranks;
  for (int r = 0; r < ranks; r++) {
    sc[r] = width * sc0[r], sd[r] = width * sd0[r];
    rc[r] = width * rc0[r], rd[r] = width * rd0[r];
  }
  int err = MPI_Alltoallv(out, sc, sd, MPI_DOUBLE, in, rc, rd, MPI_DOUBLE, comm);
  free(sc);
  return err;
}

/* dst[di(k)] = src[si(k)] for k < n, width doubles each: the points'
 * order is far from their keys', so nearly every access misses the cache;
 * threads keep many misses in flight. */
static void permute(size_t n, int width, const size_t *dperm, const size_t *sperm, double *dst,
                    const double *src) {
  long nn = (long)n;
  if (width == 1) {
#pragma omp parallel for schedule(static)
    for (long k = 0; k < nn; k++) dst[dperm ? dperm[k] : (size_t)k] = src[sperm ? sperm[k] : (size_t)k];
    return;
  }
#pragma omp parallel for schedule(static)
  for (long k = 0; k < nn; k++) {
    double *d = dst + (dperm ? dperm[k] : (size_t)k) * width;
    const double *s = src + (sperm ? sperm[k] : (size_t)k) * width;
    for (int i = 0; i < width; i++) d[i] = s[i];
  }
}

int mpi_route_forward(MPI_Comm comm, const mpi_route *rt, int width, const double *in, double *out,
                      unsigned long long *bytes) {
  size_t n = rt->n_in, m = rt->n_owned;
  double *send = malloc((n ? n * width : 1) * sizeof(double));
  double *recv = malloc((m ? m * width : 1) * sizeof(double));
  if (!send || !recv) {
    free(send), free(recv);
    return -1;
  }
  permute(n, width, NULL, rt->send_perm, send, in);
  int err = exchange(comm, rt->ranks, width, rt->send_counts, rt->send_displs, send, rt->recv_counts,
                     rt->recv_displs, recv);
  *bytes += sent_elsewhere(comm, rt->send_counts, width, sizeof(double));
  permute(m, width, NULL, rt->sort_perm, out, recv);
  free(send), free(recv);
  return err;
}

int mpi_route_backward(MPI_Comm comm, const mpi_route *rt, int width, const double *in, double *out,
                       unsigned long long *bytes) {
  size_t n = rt->n_in, m = rt->n_owned;
  double *send = malloc((m ? m * width : 1) * sizeof(double));
  double *recv = malloc((n ? n * width : 1) * sizeof(double));
  if (!send || !recv) {
    free(send), free(recv);
    return -1;
  }
  permute(m, width, rt->sort_perm, NULL, send, in);
  int err = exchange(comm, rt->ranks, width, rt->recv_counts, rt->recv_displs, send, rt->send_counts,
                     rt->send_displs, recv);
  *bytes += sent_elsewhere(comm, rt->recv_counts, width, sizeof(double));
  permute(n, width, rt->send_perm, NULL, out, recv);
  free(send), free(recv);
  return err;
}

void mpi_route_free(mpi_route *rt) {
  free(rt->send_perm), free(rt->send_counts), free(rt->send_displs), free(rt->recv_counts);
  free(rt->recv_displs), free(rt->sort_perm), free(rt->coords), free(rt->keys);
  memset(rt, 0, sizeof *rt);
}
