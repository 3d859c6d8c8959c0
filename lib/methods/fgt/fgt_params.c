/* fgt_params.c — the FGT's truncation bounds, the choice of box side, order
 * and cut-off from a tolerance, and the graded lexicographic multi-indices. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/fgt/fgt.h"

/* Cramer's inequality: |h_n(t)| <= K 2^(n/2) sqrt(n!) exp(-t^2/2). */
#define CRAMER_K 1.086435
/* largest Hermite index a bound needs: h_{alpha+beta} of the H2T */
#define HMAX (2 * FMMCL_FGT_MAX_P)

/* c_n = max over t of |h_n(t)| / (2^(n/2) sqrt(n!)), n <= HMAX, from a
 * grid of step s over [0, T] (|h_n| is even in t) of the normalised
 * recurrence phi_{n+1} = sqrt(2/(n+1)) t phi_n - sqrt(n/(n+1)) phi_{n-1},
 * phi_n = h_n / (2^(n/2) sqrt(n!)). Rigorous: between grid points phi_n
 * moves by at most s/2 sup|phi_n'| = s/2 sqrt(2(n+1)) sup|phi_{n+1}| <=
 * s/2 K sqrt(2(n+1)), which is added; past T Cramer's inequality leaves at
 * most K exp(-T^2/2) (1e-22). Where Cramer's constant K ~ 1.09 holds for
 * every n, c_n falls like n^(-1/4) (0.3 at n = 40): the gain over the
 * Cramer bound is that factor per axis. */
static const double *hermite_max(void) {
  static _Thread_local double c[HMAX + 1];
  static _Thread_local int ready;
  if (ready) return c;
  const double T = 10, step = 2e-4;
  double best[HMAX + 1] = {0};
  const int steps = (int)(T / step);
  for (int i = 0; i <= steps; i++) {
    const double t = i * step;
    double prev = exp(-t * t), cur = sqrt(2.0) * t * prev;
    best[0] = fmax(best[0], fabs(prev));
    best[1] = fmax(best[1], fabs(cur));
    for (int n = 1; n < HMAX; n++) {
      double next = sqrt(2.0 / (n + 1)) * t * cur - sqrt((double)n / (n + 1)) * prev;
      prev = cur, cur = next;
      best[n + 1] = fmax(best[n + 1], fabs(cur));
    }
  }
  for (int n = 0; n <= HMAX; n++) {
    double b = best[n] + 0.5 * step * CRAMER_K * sqrt(2.0 * (n + 1));
    b = fmax(b, CRAMER_K * exp(-T * T / 2));
    c[n] = fmin(b, CRAMER_K);
  }
  ready = 1;
  return c;
}

/* Hermite and Taylor: the multivariate Taylor remainder in Lagrange form.
 * exp(-|t - s|^2) expanded in s about 0 to |alpha| < p leaves
 *   sum_{|alpha| = p} s^alpha / alpha! (d/ds)^alpha exp(-|t - xi|^2)
 * (xi on the segment 0..s; p / alpha! times the integral of (1-tau)^(p-1)
 * is 1 / alpha!), and |(d/ds)^alpha exp(-|t-xi|^2)| = prod |h_{a_k}| <=
 * prod c_{a_k} 2^(a_k/2) sqrt(a_k!). With |s_k| <= side/2 (a source about
 * its box centre; for Taylor, a target about its box centre, the same
 * function of y - c_T) the error per unit charge is at most
 *   shell_p = sum_{|alpha| = p} prod_k c_{a_k} rho^{a_k} / sqrt(a_k!),
 *   rho = sqrt(2) side / 2:
 * only the |alpha| = p shell, where the Cramer bound summed every dropped
 * term (|alpha| >= p) with c = K. The shell is the p-th coefficient of
 * (sum_a c_a rho^a / sqrt(a!) z^a)^d. */
static double shell(double rho, int p, int d) {
  const double *c = hermite_max();
  if (p > HMAX) return HUGE_VAL; /* beyond the table: no bound (the plan caps p at FMMCL_FGT_MAX_P) */
  double one[HMAX + 1], cur[HMAX + 1], next[HMAX + 1];
  for (int n = 0; n <= p; n++) {
    one[n] = c[n] * exp(n * log(rho) - 0.5 * lgamma(n + 1.0));
    cur[n] = n == 0;
  }
  for (int k = 0; k < d; k++) {
    for (int n = 0; n <= p; n++) {
      double s = 0;
      for (int a = 0; a <= n; a++) s += one[a] * cur[n - a];
      next[n] = s;
    }
    memcpy(cur, next, (size_t)(p + 1) * sizeof *cur);
  }
  return cur[p];
}

/* H2T: the Hermite expansion F (|alpha| < p) translated into a Taylor
 * expansion about the target centre (|beta| < p). The error is the Hermite
 * truncation (shell_p) plus the Taylor remainder of F, which the Lagrange
 * form bounds by sum_{|beta| = p} |w^beta| / beta! sup |d^beta F| with
 * |w_k| <= side/2, and |d^beta F| <= sum_{|alpha| < p} |A_alpha|
 * |h_{alpha+beta}|, |A_alpha| <= sum|q| prod (side/2)^{a_k} / a_k!:
 *   sum_{|beta| = p} sum_{|alpha| < p} prod_k g(a_k, b_k),
 *   g(a, b) = c_{a+b} rho^(a+b) sqrt((a+b)!) / (a! b!).
 * The sum over axes is a d-fold convolution of the (a, b) table, kept per
 * (rho, d) for the many p the choice asks about. */
#define H2T_CACHE 4
static double h2t_remainder(double rho, int p, int d) {
  enum { NA = FMMCL_FGT_MAX_P, NB = FMMCL_FGT_MAX_P + 1 };
  static _Thread_local struct {
    double rho;
    int d;
    double t[NA][NB];
  } cache[H2T_CACHE];
  static _Thread_local int used, next_slot;
  if (p < 1 || p > FMMCL_FGT_MAX_P) return HUGE_VAL; /* outside the table: no bound */
  int slot = -1;
  for (int i = 0; i < used && slot < 0; i++)
    if (cache[i].rho == rho && cache[i].d == d) slot = i;
  if (slot < 0) {
    const double *c = hermite_max();
    static _Thread_local double g[NA][NB], cur[NA][NB], next[NA][NB];
    for (int a = 0; a < NA; a++)
      for (int b = 0; b < NB; b++) {
        const int m = a + b;
        g[a][b] = c[m] * exp(m * log(rho) + 0.5 * lgamma(m + 1.0) - lgamma(a + 1.0) - lgamma(b + 1.0));
        cur[a][b] = a == 0 && b == 0;
      }
    for (int k = 0; k < d; k++) {
      for (int A = 0; A < NA; A++)
        for (int B = 0; B < NB; B++) {
          double s = 0;
          for (int a = 0; a <= A; a++)
            for (int b = 0; b <= B; b++) s += g[a][b] * cur[A - a][B - b];
          next[A][B] = s;
        }
      memcpy(cur, next, sizeof cur);
    }
    slot = used < H2T_CACHE ? used++ : (next_slot++ % H2T_CACHE);
    cache[slot].rho = rho;
    cache[slot].d = d;
    memcpy(cache[slot].t, cur, sizeof cur);
  }
  double s = 0;
  for (int A = 0; A < p; A++) s += cache[slot].t[A][p];
  return s;
}

double fmmcl_fgt_truncation_bound(int kind, int p, double side, int dim) {
  if (kind == FMMCL_FGT_DIRECT) return 0;
  const double rho = side / sqrt(2.0), h = shell(rho, p, dim);
  return kind == FMMCL_FGT_H2T ? h + h2t_remainder(rho, p, dim) : h;
}

static int nterms_of(int p, int d) {
  double c = 1; /* C(p - 1 + d, d) */
  for (int k = 1; k <= d; k++) c = c * (p - 1 + k) / k;
  return c > 1e9 ? 1000000000 : (int)(c + 0.5);
}

/* Cell offsets o (d axes) whose box is within the cut-off of the centre
 * box: sum_k ((|o_k| - 1)+ side)^2 <= cutoff^2, as the lists test it. A
 * count over sums of squares: per axis, j = (|o| - 1)+ is 0 for three
 * offsets and j >= 1 for two each. With extent (not NULL), on average over
 * a grid of A_k = ceil(extent_k / side) + 1 cells per axis: each axis
 * offset o weighted by the share (A - |o|) / A of target cells that have a
 * cell at o (0 past the grid's width). */
static double ball_count_in(double cutoff, double side, int d, const double *extent, double *levels) {
  const int R = (int)floor(cutoff * cutoff / (side * side) + 1e-9), m = (int)floor(sqrt((double)R));
  double *cur = calloc((size_t)R + 1, sizeof *cur), *next = calloc((size_t)R + 1, sizeof *next);
  if (!cur || !next) {
    free(cur);
    free(next);
    for (int k = 0; k < d && levels; k++) levels[k] = pow(2 * m + 3, k + 1);
    return pow(2 * m + 3, d); /* the unclipped cube around the ball */
  }
  cur[0] = 1;
  for (int k = 0; k < d; k++) {
    const double A = extent ? ceil(extent[k] / side) + 1 : INFINITY;
    /* |o| = j + 1 for j >= 1 (gap j), |o| <= 1 for gap 0 */
    const double w0 = extent ? 1 + (A > 1 ? 2 * (A - 1) / A : 0) : 3;
    for (int r = 0; r <= R; r++) {
      double v = w0 * cur[r];
      for (int j = 1; j * j <= r && j + 1 < A; j++) v += (extent ? 2 * (A - j - 1) / A : 2) * cur[r - j * j];
      next[r] = v;
    }
    double *t = cur;
    cur = next;
    next = t;
    if (levels) {
      levels[k] = 0;
      for (int r = 0; r <= R; r++) levels[k] += cur[r];
    }
  }
  double total = 0;
  for (int r = 0; r <= R; r++) total += cur[r];
  free(cur);
  free(next);
  return total;
}

static double ball_count(double cutoff, double side, int d) {
  return ball_count_in(cutoff, side, d, NULL, NULL);
}

/* The host's lists (fgt_setup.c) in boxes of side `side`, n points uniform
 * over extent: the entries they store (pairs of occupied boxes within the
 * cut-off) and the seconds to build them. The walk over the sorted cells
 * visits, per occupied target box, the occupied prefixes (first k+1
 * coordinates) within the cut-off's reach: the ball's count in k+1
 * dimensions times the chance that such a prefix holds a box. Seconds
 * fitted on the H100 machine's host (16 threads; benchmarks/README.md): per
 * occupied target box, per stored entry, per prefix visited. */
#define LISTS_SECONDS_BOX 4e-7
#define LISTS_SECONDS_ENTRY 1.7e-8
#define LISTS_SECONDS_PREFIX 4.5e-9

static fmmcl_fgt_lists lists_of(const double *levels, double nb, int dim, double side, size_t n,
                                const double *extent) {
  double boxes = 1, prefixes = 0;
  for (int k = 0; k < dim; k++) {
    boxes *= floor(extent[k] / side) + 1; /* the grid the points are binned into */
    prefixes += levels[k] * -expm1(-(double)n / boxes);
  }
  const double share = -expm1(-(double)n / boxes), occupied = boxes * share;
  fmmcl_fgt_lists l;
  l.entries = occupied * (1 + (nb - 1) * share); /* a box always meets itself */
  l.seconds =
      occupied * (LISTS_SECONDS_BOX + prefixes * LISTS_SECONDS_PREFIX) + l.entries * LISTS_SECONDS_ENTRY;
  return l;
}

fmmcl_fgt_lists fmmcl_fgt_lists_estimate(int dim, double cutoff, double side, size_t n,
                                         const double *extent) {
  double levels[FMMCL_MAX_DIM];
  const double nb = ball_count_in(cutoff, side, dim, extent, levels);
  return lists_of(levels, nb, dim, side, n, extent);
}

static double worst_bound(int p, double side, int dim, int with_h2t) {
  double b = 0;
  for (int k = FMMCL_FGT_HERMITE; k <= (with_h2t ? FMMCL_FGT_H2T : FMMCL_FGT_TAYLOR); k++) {
    double t = fmmcl_fgt_truncation_bound(k, p, side, dim);
    b = t > b ? t : b;
  }
  return b;
}

int fmmcl_fgt_lists_affordable(fmmcl_fgt_lists l) {
  return l.entries <= FMMCL_FGT_MAX_LIST_ENTRIES && l.seconds <= FMMCL_FGT_MAX_LIST_SECONDS;
}

fmmcl_status fmmcl_fgt_choose(fmmcl_context ctx, int dim, double sigma, double tol, int order, size_t n,
                              const double *extent, int max_p, fmmcl_fgt_params *out) {
  if (max_p <= 0 || max_p > FMMCL_FGT_MAX_P) max_p = FMMCL_FGT_MAX_P;
  memset(out, 0, sizeof *out);
  out->dim = dim;
  out->h = sqrt(2.0) * sigma;
  if (order > 0 && tol <= 0) {
    if (order > max_p)
      return fmmcl_fail(ctx, order > FMMCL_FGT_MAX_P ? FMMCL_ERROR_INVALID_ARGUMENT : FMMCL_ERROR_UNSUPPORTED,
                        "FGT order %d exceeds %d%s", order, max_p,
                        max_p < FMMCL_FGT_MAX_P ? " (h_{2p-2} leaves single precision's range beyond)" : "");
    out->side = 0.5;
    out->p = order;
    out->h2t = 1;
    double b = worst_bound(order, out->side, dim, 1);
    double e = b > 1e-300 ? b : 1e-300;
    out->cutoff = sqrt(-log(e < 0.5 ? e : 0.5));
    out->nterms = nterms_of(order, dim);
    out->bound = fmax(b, exp(-out->cutoff * out->cutoff));
    return FMMCL_SUCCESS;
  }
  if (!(tol > 0) || !(tol < 1))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "FGT needs a tolerance in (0, 1) or an order > 0 (tolerance %g, order %d)", tol, order);
  /* Each source reaches a target through exactly one box pair, so its
   * error is either its truncation error or its dropped term (at most
   * exp(-cutoff^2) |q|), never both: the bound is the larger of the two,
   * and each may take the whole tolerance (1% kept for rounding). */
  const double goal = 0.99 * tol;
  const double cutoff = sqrt(log(1.0 / goal));
  /* box side (scaled) and p chosen jointly by the work model below, as
   * figtree does: small boxes need short expansions but more boxes */
  static const double sides[] = {0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0, 1.2, 1.4};
  double best = HUGE_VAL;
  int best_h2t = 0;
  for (size_t c = 0; c < sizeof sides / sizeof *sides; c++)
    for (int with_h2t = 0; with_h2t < 2; with_h2t++) {
      /* without translations the Hermite and Taylor bounds set p; with
       * them the (weaker) H2T bound must hold too, which costs a longer p */
      const double side = sides[c];
      int p = 1;
      while (p <= max_p && worst_bound(p, side, dim, with_h2t) > goal) p++;
      if (p > max_p) continue;
      /* work model per target: each box within the cut-off is met either
       * directly (its points) or through an expansion (its terms), or with
       * translations a share of an nterms^2 H2T (one per box pair, spread
       * over the box's targets), whichever is cheaper; the density is taken
       * as uniform over the extent */
      const int m = (int)ceil(cutoff / side) + 1;
      double nb = ball_count(cutoff, side, dim), boxes = 1;
      for (int k = 0; k < dim; k++) {
        /* the ball as the lists see it, clipped where the data is narrower */
        double across = ceil(extent[k] / side) + 1;
        if (across < 2 * m + 1) nb *= across / (2 * m + 1);
        boxes *= across;
      }
      const double P = (double)nterms_of(p, dim), per_box = (double)n / boxes;
      /* the host builds and uploads one list entry per pair of occupied
       * boxes within the cut-off: past 5e7 (~200 MB) or seconds of plan
       * creation a side is not worth its small saving in direct pairs;
       * the largest side stays as the fallback */
      if (c + 1 < sizeof sides / sizeof *sides &&
          !fmmcl_fgt_lists_affordable(fmmcl_fgt_lists_estimate(dim, cutoff, side, n, extent)))
        continue;
      /* fgt_method.c unrolls the term loops fully only up to 512 terms and
       * nests the Hermite sum (DIM <= 3) only up to 1024: longer
       * expansions run slower per term */
      const double slow = P > 1024 ? 2 : P > 512 ? 1.5 : 1;
      double work = per_box * (2 * dim + 12);                       /* direct */
      if (slow * P * (dim + 2) < work) work = slow * P * (dim + 2); /* an expansion */
      if (with_h2t && per_box >= 1 && P * P * (dim + 1) / per_box < work) work = P * P * (dim + 1) / per_box;
      /* visiting a box costs about as much as 4 direct pairs (list entry,
       * staging, barriers), which keeps boxes from going nearly empty */
      const double cost = nb * (4 * (2 * dim + 12) + work);
      const int direct = work == per_box * (2 * dim + 12);
      /* the model is crude: within 10% the shorter expansion wins (less
       * local memory, shorter builds, smaller h_n) */
      if (cost < best * (p < out->p ? 1.1 : 1 / 1.1) || best == HUGE_VAL) {
        out->work = cost / (2 * dim + 12);
        out->direct_work = direct ? out->work : nb * 4;
        best = cost;
        out->side = side;
        out->p = p;
        best_h2t = with_h2t;
      }
    }
  if (best == HUGE_VAL)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "FGT tolerance %g needs an order above %d in %d dimensions (with boxes whose lists "
                      "fit the host's limits; the cut-off sum, method CUTOFF, has no order)",
                      tol, max_p, dim);
  out->cutoff = cutoff;
  out->nterms = nterms_of(out->p, dim);
  /* translations where the choice above planned them, or where their own
   * (weaker) bound happens to hold at this p anyway */
  out->h2t = best_h2t || fmmcl_fgt_truncation_bound(FMMCL_FGT_H2T, out->p, out->side, dim) <= goal;
  out->bound = fmax(worst_bound(out->p, out->side, dim, out->h2t), exp(-cutoff * cutoff));
  return FMMCL_SUCCESS;
}

/* Visiting a source box from a tile of targets (list entry, frame
 * difference, staging, barriers) costs about this many pair evaluations;
 * boxes of fewer targets than half a tile run one target per work-item
 * (fgt_direct_points), at about half the pair rate (fitted on the H100,
 * benchmarks/README.md). */
#define CUTOFF_VISIT_PAIRS 4.0
#define CUTOFF_SPARSE_TARGETS 32.0
#define CUTOFF_SPARSE_FACTOR 2.0

double fmmcl_fgt_cutoff_work(int dim, double cutoff, double side, size_t n, const double *extent,
                             double *visits, fmmcl_fgt_lists *lists) {
  double levels[FMMCL_MAX_DIM];
  const double nb = ball_count_in(cutoff, side, dim, extent, levels);
  double boxes = 1;
  for (int k = 0; k < dim; k++) boxes *= ceil(extent[k] / side) + 1;
  const double per_box = (double)n / boxes, occupied = -expm1(-per_box); /* lists hold occupied boxes */
  if (lists) *lists = lists_of(levels, nb, dim, side, n, extent);
  if (visits) *visits = nb * occupied;
  return nb * (CUTOFF_VISIT_PAIRS * occupied + per_box) *
         (per_box < CUTOFF_SPARSE_TARGETS ? CUTOFF_SPARSE_FACTOR : 1);
}

fmmcl_status fmmcl_fgt_choose_cutoff(fmmcl_context ctx, int dim, double sigma, double tol, size_t n,
                                     const double *extent, fmmcl_fgt_seconds_fn seconds, const void *arg,
                                     double executions, fmmcl_fgt_params *out) {
  if (tol == 0) tol = 1e-6;
  if (!(tol > 0) || !(tol < 1))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "the cut-off direct sum needs a tolerance in (0, 1), not %g", tol);
  memset(out, 0, sizeof *out);
  out->dim = dim;
  out->h = sqrt(2.0) * sigma;
  out->p = out->nterms = 1;
  /* 1% of the tolerance kept for rounding, as the FGT does */
  out->cutoff = sqrt(log(1.0 / (0.99 * tol)));
  out->bound = exp(-out->cutoff * out->cutoff);
  /* smaller boxes fit the ball tighter (fewer pairs beyond the cut-off) but
   * cost more visits and longer lists to build; sides in units of the
   * cut-off, each weighed as its executions plus its lists' creation spread
   * over them */
  static const double per_cutoff[] = {2.0, 1.0, 0.75, 0.5, 0.375, 0.25, 0.1875, 0.125};
  const double runs = executions > 0 ? executions : 1e300;
  double best = HUGE_VAL;
  fmmcl_fgt_params chosen = *out;
  for (size_t c = 0; c < sizeof per_cutoff / sizeof *per_cutoff; c++) {
    const double side = per_cutoff[c] * out->cutoff;
    fmmcl_fgt_lists l;
    out->side = side;
    out->work = out->direct_work = fmmcl_fgt_cutoff_work(dim, out->cutoff, side, n, extent, NULL, &l);
    if (!fmmcl_fgt_lists_affordable(l) && best < HUGE_VAL) continue;
    const double cost = seconds(arg, out) + l.seconds / runs;
    if (cost < best) best = cost, chosen = *out;
  }
  *out = chosen;
  return FMMCL_SUCCESS;
}

/* Appends every alpha with |alpha| = n, first components largest first. */
static void compositions(int n, int k, int dim, unsigned char *cur, unsigned char *out, int *count) {
  if (k == dim - 1) {
    cur[k] = (unsigned char)n;
    memcpy(out + (size_t)(*count) * dim, cur, dim);
    (*count)++;
    return;
  }
  for (int a = n; a >= 0; a--) {
    cur[k] = (unsigned char)a;
    compositions(n - a, k + 1, dim, cur, out, count);
  }
}

unsigned char *fmmcl_fgt_multi_indices(int p, int dim, int *nterms) {
  const int total = nterms_of(p, dim);
  unsigned char *out = malloc((size_t)total * dim), cur[FMMCL_MAX_DIM];
  if (!out) return NULL;
  int count = 0;
  for (int n = 0; n < p; n++) compositions(n, 0, dim, cur, out, &count);
  *nterms = count;
  return out;
}

int fmmcl_fgt_nterms(int p, int dim) { return nterms_of(p, dim); }
