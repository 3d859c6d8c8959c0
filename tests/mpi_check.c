/* mpi_check.c — run under mpirun by tests/mpi.sh: the distributed plan on
 * this many ranks against the plain-C direct sum over every target and
 * against the single-device plan, for uniform, clustered and surface
 * points, targets the sources or separate, input on rank 0, scattered at
 * random, or with a rank holding nothing. Exit 0 when every case passes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmmcl_mpi.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

enum { UNIFORM, CLUSTERS, SURFACE, N_DIST };
static const char *dist_name[] = {"uniform", "8 clusters", "surface"};
enum { ON_RANK0, SCATTERED, ONE_EMPTY, N_PLACE };
static const char *place_name[] = {"all on rank 0", "scattered", "last rank empty"};

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static double u01(uint64_t *s) { return (double)(next(s) >> 11) * 0x1.0p-53; }
static double gauss(uint64_t *s) { return sqrt(-2 * log(1 - u01(s))) * cos(2 * M_PI * u01(s)); }

static void points(int dist, uint64_t seed, size_t n, double *x) {
  uint64_t s = seed;
  double centres[24];
  for (int i = 0; i < 24; i++) centres[i] = 0.1 + 0.8 * u01(&s);
  for (size_t i = 0; i < n; i++) {
    double *p = x + 3 * i;
    if (dist == UNIFORM)
      for (int d = 0; d < 3; d++) p[d] = u01(&s);
    else if (dist == CLUSTERS) {
      int c = (int)(next(&s) % 8);
      for (int d = 0; d < 3; d++) p[d] = centres[3 * c + d] + 0.01 * gauss(&s);
    } else {
      double g[3] = {gauss(&s), gauss(&s), gauss(&s)}, r = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
      for (int d = 0; d < 3; d++) p[d] = 0.5 + 0.5 * g[d] / r;
    }
  }
}

/* The rank each global point lives on. */
static int home(int place, int ranks, size_t i, size_t n, uint64_t *s) {
  if (place == ON_RANK0 || ranks == 1) return 0;
  if (place == SCATTERED) return (int)(next(s) % (uint64_t)ranks);
  return (int)(i * (size_t)(ranks - 1) / n);
}

static void errors(const double *a, const double *b, size_t n, int w, double *e) {
  double d = 0, r = 0;
  for (size_t i = 0; i < n * w; i++) d += (a[i] - b[i]) * (a[i] - b[i]), r += b[i] * b[i];
  *e = sqrt(d / r);
}

typedef struct test_case {
  int dist, place, separate;
  fmmcl_method method;
  fmmcl_precision precision;
  double tol;
  size_t n; /* sources and targets; 0: the default */
} test_case;

/* The function when it is not 1/r with its gradient: kernel, BBFMM
 * function, their parameters, potential only. */
typedef struct test_fn {
  fmmcl_kernel kernel;
  fmmcl_bbfmm_kernel bbfmm;
  double param, sigma;
  int no_gradient;
} test_fn;

static int run_case(MPI_Comm comm, fmmcl_context ctx, const test_case *tc, const test_fn *fn, size_t ns,
                    size_t nt) {
  int rank, ranks;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  if (tc->n) ns = nt = tc->n;
  if (!tc->separate) nt = ns;
  double *src = malloc(3 * ns * sizeof *src), *q = malloc(ns * sizeof *q);
  double *tgt = tc->separate ? malloc(3 * nt * sizeof *tgt) : src;
  points(tc->dist, 11 + tc->dist, ns, src);
  if (tc->separate) points(tc->dist, 97 + tc->dist, nt, tgt);
  uint64_t s = 5;
  for (size_t i = 0; i < ns; i++) q[i] = u01(&s) - 0.3;
  /* This rank's slice and where each of its points sits globally. */
  size_t *smine = malloc(ns * sizeof *smine), *tmine = malloc(nt * sizeof *tmine), nsm = 0, ntm = 0;
  uint64_t hs = 7, ht = 8;
  for (size_t i = 0; i < ns; i++)
    if (home(tc->place, ranks, i, ns, &hs) == rank) smine[nsm++] = i;
  if (tc->separate) {
    for (size_t i = 0; i < nt; i++)
      if (home(tc->place, ranks, i, nt, &ht) == rank) tmine[ntm++] = i;
  } else memcpy(tmine, smine, nsm * sizeof *smine), ntm = nsm;
  double *ms = malloc((3 * nsm + 1) * sizeof *ms), *mq = malloc((nsm + 1) * sizeof *mq);
  double *mt = malloc((3 * ntm + 1) * sizeof *mt);
  for (size_t i = 0; i < nsm; i++)
    memcpy(ms + 3 * i, src + 3 * smine[i], 3 * sizeof *ms), mq[i] = q[smine[i]];
  for (size_t i = 0; i < ntm; i++) memcpy(mt + 3 * i, tgt + 3 * tmine[i], 3 * sizeof *mt);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, fn->kernel);
  o.method = tc->method, o.precision = tc->precision, o.tolerance = tc->tol, o.gradient = !fn->no_gradient;
  o.bbfmm_kernel = fn->bbfmm, o.kernel_param = fn->param;
  if (fn->sigma > 0) o.sigma = fn->sigma;
  fmmcl_mpi_plan plan;
  fmmcl_status st =
      fmmcl_mpi_plan_create(comm, ctx, &o, nsm, ms, tc->separate ? ntm : 0, tc->separate ? mt : NULL, &plan);
  double *res = malloc((4 * ntm + 1) * sizeof *res), *grad = malloc((3 * ntm + 1) * sizeof *grad);
  memset(grad, 0, (3 * ntm + 1) * sizeof *grad);
  if (!st) st = fmmcl_mpi_plan_execute(plan, mq, res, o.gradient ? grad : NULL);
  fmmcl_mpi_stats stats;
  if (!st) fmmcl_mpi_plan_stats(plan, &stats), fmmcl_mpi_plan_destroy(plan);
  /* Far cells received as equivalent charges, over all ranks. */
  unsigned long long cells = st ? 0 : stats.let_cells, got = st ? 0 : stats.let_particles;
  MPI_Allreduce(MPI_IN_PLACE, &cells, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, &got, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
  /* Rank 0 gathers (index, potential, gradient) in the global order. */
  for (size_t i = ntm; i-- > 0;) {
    double p = res[i];
    res[4 * i] = p;
    memcpy(res + 4 * i + 1, grad + 3 * i, 3 * sizeof *res);
  }
  int cnt = (int)(4 * ntm), *counts = malloc(ranks * sizeof(int)), *displs = malloc(ranks * sizeof(int));
  MPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
  int tot = 0;
  for (int r = 0; r < ranks; r++) displs[r] = tot, tot += rank == 0 ? counts[r] : 0;
  double *all = rank == 0 ? malloc((4 * nt + 1) * sizeof *all) : NULL;
  MPI_Gatherv(res, cnt, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, comm);
  unsigned long long *idx = malloc((ntm + 1) * sizeof *idx),
                     *alli = rank == 0 ? malloc((nt + 1) * sizeof *alli) : NULL;
  for (size_t i = 0; i < ntm; i++) idx[i] = tmine[i];
  for (int r = 0; r < ranks; r++) counts[r] /= 4, displs[r] /= 4;
  MPI_Gatherv(idx, (int)ntm, MPI_UNSIGNED_LONG_LONG, alli, counts, displs, MPI_UNSIGNED_LONG_LONG, 0, comm);
  int fail = st != FMMCL_SUCCESS;
  if (rank == 0 && st)
    printf("FAIL %s, %s: status %s\n", dist_name[tc->dist], place_name[tc->place], fmmcl_strerror(st));
  if (rank == 0 && !st) {
    double *mpi = malloc(4 * nt * sizeof *mpi), *ref = malloc(4 * nt * sizeof *ref),
           *one = malloc(4 * nt * sizeof *one);
    double *rp = malloc(nt * sizeof *rp), *rg = malloc(3 * nt * sizeof *rg);
    for (size_t k = 0; k < nt; k++) memcpy(mpi + 4 * alli[k], all + 4 * k, 4 * sizeof *mpi);
    memset(rg, 0, 3 * nt * sizeof *rg), memset(one, 0, 4 * nt * sizeof *one);
    fmmcl_status s0 = FMMCL_SUCCESS;
    if (fn->bbfmm) { /* a BBFMM function: the host reference sums the kernel's own; a DIRECT plan sums it */
      fmmcl_plan_options d = o;
      fmmcl_plan direct;
      d.method = FMMCL_DIRECT, d.precision = FMMCL_DOUBLE;
      s0 = fmmcl_plan_create(ctx, &d, ns, src, nt, tc->separate ? tgt : NULL, &direct);
      if (!s0) s0 = fmmcl_plan_execute(direct, q, rp, NULL), fmmcl_plan_destroy(direct);
    } else fmmcl_reference_direct(&o, ns, src, q, nt, tc->separate ? tgt : NULL, rp, o.gradient ? rg : NULL);
    fmmcl_plan single;
    fmmcl_status s1 = fmmcl_plan_create(ctx, &o, ns, src, nt, tc->separate ? tgt : NULL, &single);
    if (!s1) s1 = fmmcl_plan_execute(single, q, one, o.gradient ? one + nt : NULL), fmmcl_plan_destroy(single);
    double e[6] = {0}, *pm = malloc(nt * sizeof *pm), *gm = malloc(3 * nt * sizeof *gm);
    for (size_t i = 0; i < nt; i++) pm[i] = mpi[4 * i], memcpy(gm + 3 * i, mpi + 4 * i + 1, 3 * sizeof *gm);
    errors(pm, rp, nt, 1, e), errors(pm, one, nt, 1, e + 2), errors(one, rp, nt, 1, e + 4);
    if (o.gradient) errors(gm, rg, nt, 3, e + 1), errors(gm, one + nt, nt, 3, e + 3), errors(one + nt, rg, nt, 3, e + 5);
    /* The tolerance is the potential's; the gradient's is ten times that. */
    fail = s0 || s1 || !(e[0] <= tc->tol && e[1] <= 10 * tc->tol && e[2] <= 2 * tc->tol && e[3] <= 20 * tc->tol);
    /* The large cases are there to send far cells as equivalent charges. */
    int laplace = fn->kernel == FMMCL_LAPLACE_3D && (fn->bbfmm == 0 || fn->bbfmm == FMMCL_BBFMM_LAPLACE);
    if (tc->n && ranks > 1 && laplace && cells == 0) fail = 1;
    /* Other functions send no charges; the Gaussian's cut-off leaves out
     * some of the sources a rank would otherwise receive from the rest. */
    if (!laplace && cells) fail = 1;
    int gaussian = fn->kernel == FMMCL_GAUSSIAN || fn->bbfmm == FMMCL_BBFMM_GAUSSIAN;
    if (tc->n && ranks > 1 && gaussian && got >= (unsigned long long)(ranks - 1) * ns) fail = 1;
    printf(
        "%s %d ranks, %-10s %-15s %s %s %s tol %.0e: vs direct pot %.2e grad %.2e; vs one device pot %.2e "
        "grad %.2e (one device vs direct %.2e %.2e); rank 0 received %zu particles, %zu charges in %zu cells; all ranks %llu cells, %llu particles\n",
        fail ? "FAIL" : "ok  ", ranks, dist_name[tc->dist], place_name[tc->place],
        tc->separate ? "targets apart" : "targets=sources", fmmcl_method_name(tc->method),
        tc->precision == FMMCL_DOUBLE ? "double" : "single", tc->tol, e[0], e[1], e[2], e[3], e[4], e[5],
        stats.let_particles, stats.let_equivalent, stats.let_cells, cells, got);
    free(mpi), free(ref), free(one), free(rp), free(rg), free(pm), free(gm);
  }
  MPI_Bcast(&fail, 1, MPI_INT, 0, comm);
  free(src), free(q);
  if (tc->separate) free(tgt);
  free(smine), free(tmine), free(ms), free(mq), free(mt), free(res), free(grad), free(counts), free(displs);
  free(all), free(idx), free(alli);
  return fail;
}

/* fmmcl_mpi_plan_rounding_estimate, on every rank alike: a pair 1e-9 apart
 * (below a float's plain resolution in any frame wider than about 0.1) is
 * found whichever rank holds each point, and resolved in single precision
 * by the offsets' low parts (the plan adds them for one such pair), to
 * within the tolerance but not exactly; the same set without it is
 * resolved too, and a double plan gives 0. Returns failures. */
static int check_rounding(MPI_Comm comm, fmmcl_context ctx) {
  int rank, ranks, failed = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  enum { N = 2000 };
  double *all = malloc(3 * (N + 2) * sizeof *all), *mine = malloc(3 * (N + 2) * sizeof *mine);
  if (!all || !mine) MPI_Abort(comm, 1);
  points(UNIFORM, 77, N, all);
  const double pair[6] = {0.2, 0.2, 0.2, 0.200000001, 0.2, 0.2};
  memcpy(all + 3 * N, pair, sizeof pair);
  for (int c = 0; c < 3; c++) {
    const int with_pair = c != 1;
    const fmmcl_precision prec = c == 2 ? FMMCL_DOUBLE : FMMCL_SINGLE;
    size_t n = 0;
    /* the pair's two points on different ranks (the last and the first) */
    for (size_t i = 0; i < N + 2 * (size_t)with_pair; i++)
      if ((int)(i % (size_t)ranks) == rank) memcpy(mine + 3 * n++, all + 3 * i, 3 * sizeof *all);
    fmmcl_plan_options o;
    fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
    o.method = FMMCL_FMM, o.precision = prec, o.tolerance = prec == FMMCL_DOUBLE ? 1e-6 : 1e-4;
    fmmcl_mpi_plan p;
    fmmcl_status st = fmmcl_mpi_plan_create(comm, ctx, &o, n, mine, 0, NULL, &p);
    double estimate = -1, distance = -1;
    if (!st) st = fmmcl_mpi_plan_rounding_estimate(p, &estimate, &distance);
    int bad = st != FMMCL_SUCCESS;
    if (!bad && c == 0) bad = !(estimate > 0 && estimate < 1e-4) || !(fabs(distance - 1e-9) < 1e-15);
    if (!bad && c == 1) bad = !(estimate < 1e-4) || !(distance > 1e-4);
    if (!bad && c == 2) bad = estimate != 0;
    /* every rank must see the same figures */
    double mm[2] = {estimate, -estimate};
    MPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_DOUBLE, MPI_MAX, comm);
    bad |= mm[0] != -mm[1];
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm);
    if (bad && rank == 0)
      printf("FAIL rounding estimate (%s, %s): %s, estimate %.3g, distance %.3g\n",
             with_pair ? "with a pair 1e-9 apart" : "uniform", prec == FMMCL_DOUBLE ? "double" : "single",
             fmmcl_strerror(st), estimate, distance);
    failed += bad;
    if (!st) fmmcl_mpi_plan_destroy(p);
  }
  free(all), free(mine);
  return failed;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fmmcl_context ctx;
  fmmcl_status st = fmmcl_mpi_context_create(MPI_COMM_WORLD, NULL, &ctx);
  if (st) {
    fprintf(stderr, "mpi-check: no device: %s\n", fmmcl_strerror(st));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  size_t ns = 2500, nt = 1500;
  const test_fn laplace = {0};
  int failed = 0, cases = 0;
  for (int dist = 0; dist < N_DIST; dist++)
    for (int separate = 0; separate < 2; separate++) {
      test_case tc = {dist, (2 * dist + separate) % N_PLACE, separate, FMMCL_FMM, FMMCL_DOUBLE, 1e-6, 0};
      failed += run_case(MPI_COMM_WORLD, ctx, &tc, &laplace, ns, nt), cases++;
    }
  test_case extra[] = {{CLUSTERS, ONE_EMPTY, 1, FMMCL_FMM, FMMCL_DOUBLE, 1e-9, 0},
                       {UNIFORM, SCATTERED, 0, FMMCL_FMM, FMMCL_SINGLE, 1e-4, 0},
                       {SURFACE, ON_RANK0, 1, FMMCL_TREECODE, FMMCL_DOUBLE, 1e-6, 0},
                       {UNIFORM, SCATTERED, 0, FMMCL_FMM, FMMCL_DOUBLE, 1e-4, 10000},
                       {CLUSTERS, ON_RANK0, 1, FMMCL_FMM, FMMCL_DOUBLE, 1e-6, 10000},
                       {SURFACE, SCATTERED, 0, FMMCL_FMM, FMMCL_DOUBLE, 1e-6, 10000}};
  /* The other methods and functions through the same LET (the BBFMM at
   * 1e-4: its operators at 1e-6 take seconds a plan on PoCL; the large
   * cases at 1e-4, where uniform points have far cells at this size). */
  struct {
    test_case c;
    test_fn f;
  } other[] = {
      {{UNIFORM, SCATTERED, 1, FMMCL_BBFMM, FMMCL_DOUBLE, 1e-4, 0}, {.no_gradient = 1}},
      {{SURFACE, ONE_EMPTY, 0, FMMCL_BBFMM, FMMCL_DOUBLE, 1e-4, 0},
       {.bbfmm = FMMCL_BBFMM_INV_MULTIQUADRIC, .param = 0.1, .no_gradient = 1}},
      {{UNIFORM, SCATTERED, 0, FMMCL_FGT, FMMCL_DOUBLE, 1e-6, 0}, {.kernel = FMMCL_GAUSSIAN, .sigma = 0.1, .no_gradient = 1}},
      {{UNIFORM, SCATTERED, 1, FMMCL_TREECODE, FMMCL_DOUBLE, 1e-4, 10000}, {0}},
      {{UNIFORM, ON_RANK0, 1, FMMCL_BBFMM, FMMCL_DOUBLE, 1e-4, 10000}, {.no_gradient = 1}},
      {{UNIFORM, SCATTERED, 1, FMMCL_DIRECT, FMMCL_DOUBLE, 1e-6, 10000},
       {.kernel = FMMCL_GAUSSIAN, .sigma = 0.03, .no_gradient = 1}}};
  /* The large cases (far cells as equivalent charges) on 4 ranks only: on
   * fewer, every rank is near all the others' targets at this size, and
   * the suite stays within a minute on two cores. */
  int ranks;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
    if (!extra[i].n || ranks == 4) failed += run_case(MPI_COMM_WORLD, ctx, extra + i, &laplace, ns, nt), cases++;
  for (size_t i = 0; i < sizeof other / sizeof *other; i++)
    if (!other[i].c.n || ranks == 4) failed += run_case(MPI_COMM_WORLD, ctx, &other[i].c, &other[i].f, ns, nt), cases++;
  failed += check_rounding(MPI_COMM_WORLD, ctx), cases += 3;
  /* An empty input is refused on every rank alike. */
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM;
  fmmcl_mpi_plan p;
  st = fmmcl_mpi_plan_create(MPI_COMM_WORLD, ctx, &o, 0, NULL, 0, NULL, &p);
  cases++;
  if (st != FMMCL_ERROR_EMPTY_INPUT) {
    failed++;
    if (rank == 0) printf("FAIL empty input: %s\n", fmmcl_strerror(st));
  }
  if (rank == 0) printf("%d of %d cases passed\n", cases - failed, cases);
  fmmcl_context_destroy(ctx);
  MPI_Finalize();
  return failed ? 1 : 0;
}
