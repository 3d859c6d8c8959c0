/* fgt_params.c — the FGT's truncation bounds, the choice of box side, order
 * and cut-off from a tolerance, and the graded lexicographic multi-indices. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fgt.h"

/* Cramer's inequality: |h_n(t)| <= K 2^(n/2) sqrt(n!) exp(-t^2/2). */
#define CRAMER_K 1.086435

/* sum_{|alpha| >= p} prod_k rho^alpha_k / sqrt(alpha_k!), exactly: the
 * sum over |alpha| = n is the n-th coefficient of (sum_a rho^a/sqrt(a!) z^a)^d,
 * built axis by axis, then summed from p until the terms are negligible
 * (they fall like 1/sqrt(n!)). */
#define TAIL_TERMS 512
#define TAIL_CACHE 8
static double tail(double rho, int p, int d) {
  /* the choice of parameters asks for the same (rho, d) at many p: keep
   * the suffix sums of the last few */
  static _Thread_local struct { double rho; int d; double suffix[TAIL_TERMS + 1]; } cache[TAIL_CACHE];
  static _Thread_local int used, next_slot;
  if (p >= TAIL_TERMS) return 0;
  for (int i = 0; i < used; i++)
    if (cache[i].rho == rho && cache[i].d == d) return cache[i].suffix[p < 0 ? 0 : p];
  double one[TAIL_TERMS], c[TAIL_TERMS], next[TAIL_TERMS];
  for (int n = 0; n < TAIL_TERMS; n++) {
    one[n] = exp(n * log(rho) - 0.5 * lgamma(n + 1.0));
    c[n] = n == 0; /* the empty product */
  }
  for (int k = 0; k < d; k++) {
    for (int n = 0; n < TAIL_TERMS; n++) {
      double s = 0;
      for (int a = 0; a <= n; a++) s += one[a] * c[n - a];
      next[n] = s;
    }
    memcpy(c, next, sizeof c);
  }
  const int slot = used < TAIL_CACHE ? used++ : (next_slot++ % TAIL_CACHE);
  cache[slot].rho = rho;
  cache[slot].d = d;
  cache[slot].suffix[TAIL_TERMS] = 0;
  for (int n = TAIL_TERMS - 1; n >= 0; n--) cache[slot].suffix[n] = cache[slot].suffix[n + 1] + c[n];
  return cache[slot].suffix[p < 0 ? 0 : p];
}

/* sum over every alpha of rho^|alpha| / sqrt(alpha!) = (sum_n rho^n / sqrt(n!))^d */
static double full(double rho, int d) {
  double s = 0;
  for (int n = 0; n < 400; n++) s += exp(n * log(rho) - 0.5 * lgamma(n + 1.0));
  return pow(s, d);
}

/* Per source, |v_k| <= side/2 about the source centre (Hermite) and
 * |u_k| <= side/2 about the target centre (Taylor):
 *   Hermite, Taylor: each dropped term is at most K^d prod (sqrt2 side/2)^a_k / sqrt(a_k!);
 *   H2T: a term (alpha, beta) is dropped when |alpha| >= p or |beta| >= p,
 *   so only where |alpha + beta| >= p; per axis the terms with a + b = m sum
 *   to at most rho^m sqrt(m!) sum_{a+b=m} 1/(a! b!) = (2 rho)^m / sqrt(m!)
 *   with rho = sqrt2 side/2: the Hermite tail at twice the radius. Also,
 *   with (a+b)! <= 2^(a+b) a! b!, a term is at most K^d side^|alpha+beta| /
 *   sqrt(alpha! beta!), so the dropped sum is at most 2 K^d full * tail.
 *   Both hold; the smaller is used. */
double fmmcl_fgt_truncation_bound(int kind, int p, double side, int dim) {
  const double kd = pow(CRAMER_K, dim);
  if (kind == FMMCL_FGT_DIRECT) return 0;
  if (kind == FMMCL_FGT_H2T) {
    double a = tail(sqrt(2.0) * side, p, dim), b = 2 * full(side, dim) * tail(side, p, dim);
    return kd * (a < b ? a : b);
  }
  return kd * tail(side / sqrt(2.0), p, dim);
}

static int nterms_of(int p, int d) {
  double c = 1; /* C(p - 1 + d, d) */
  for (int k = 1; k <= d; k++) c = c * (p - 1 + k) / k;
  return c > 1e9 ? 1000000000 : (int)(c + 0.5);
}

static double worst_bound(int p, double side, int dim, int with_h2t) {
  double b = 0;
  for (int k = FMMCL_FGT_HERMITE; k <= (with_h2t ? FMMCL_FGT_H2T : FMMCL_FGT_TAYLOR); k++) {
    double t = fmmcl_fgt_truncation_bound(k, p, side, dim);
    b = t > b ? t : b;
  }
  return b;
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
    out->bound = b + exp(-out->cutoff * out->cutoff);
    return FMMCL_SUCCESS;
  }
  if (!(tol > 0) || !(tol < 1))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "FGT needs a tolerance in (0, 1) or an order > 0 (tolerance %g, order %d)", tol, order);
  /* half the tolerance to the truncation, half to the cut-off */
  const double cutoff = sqrt(log(2.0 / tol));
  static const double sides[] = {0.25, 0.35, 0.5, 0.7, 1.0};
  double best = HUGE_VAL;
  int best_h2t = 0;
  for (size_t c = 0; c < sizeof sides / sizeof *sides; c++)
    for (int with_h2t = 0; with_h2t < 2; with_h2t++) {
      /* without translations the Hermite and Taylor bounds set p; with
       * them the (weaker) H2T bound must hold too, which costs a longer p */
      const double side = sides[c];
      int p = 1;
      while (p <= max_p && worst_bound(p, side, dim, with_h2t) > 0.5 * tol) p++;
      if (p > max_p) continue;
      /* work model per target: each box within the cut-off is met either
       * directly (its points) or through an expansion (its terms), or with
       * translations a share of an nterms^2 H2T (one per box pair, spread
       * over the box's targets), whichever is cheaper; the density is taken
       * as uniform over the extent */
      const int m = (int)ceil(cutoff / side);
      double nb = 1, boxes = 1;
      for (int k = 0; k < dim; k++) {
        double across = ceil(extent[k] / side) + 1;
        nb *= (2 * m + 1) < across ? (2 * m + 1) : across;
        boxes *= across;
      }
      const double P = (double)nterms_of(p, dim), per_box = (double)n / boxes;
      double work = per_box * (2 * dim + 12);                /* direct */
      if (P * (dim + 2) < work) work = P * (dim + 2);         /* an expansion */
      if (with_h2t && per_box >= 1 && P * P * (dim + 1) / per_box < work) work = P * P * (dim + 1) / per_box;
      /* visiting a box costs about as much as 4 direct pairs (list entry,
       * staging, barriers), which keeps boxes from going nearly empty */
      const double cost = nb * (4 * (2 * dim + 12) + work);
      if (cost < best) {
        best = cost;
        out->side = side;
        out->p = p;
        best_h2t = with_h2t;
      }
    }
  if (best == HUGE_VAL)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "FGT tolerance %g needs an order above %d in %d dimensions", tol, max_p, dim);
  out->cutoff = cutoff;
  out->nterms = nterms_of(out->p, dim);
  /* translations where the choice above planned them, or where their own
   * (weaker) bound happens to hold at this p anyway */
  out->h2t = best_h2t || fmmcl_fgt_truncation_bound(FMMCL_FGT_H2T, out->p, out->side, dim) <= 0.5 * tol;
  out->bound = worst_bound(out->p, out->side, dim, out->h2t) + exp(-cutoff * cutoff);
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
