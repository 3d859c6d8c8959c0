/* fmm3d_order.c — the expansion order of a 3D FMM or treecode plan: the
 * caller's p, or the smallest p whose predicted error meets the tolerance. */
#include <math.h>

#include "methods/laplace3d/fmm3d.h"

/* Error model: the relative L2 error of the potential, fitted to what was
 * measured in double (N = 2000-8000, q = 64, charges of both signs in
 * [-1, 1]; uniform cube, Plummer sphere, ellipsoid 1:1:4, sphere surface)
 * and kept above the worst of the four with a margin of about 2:
 *
 *   FMM       err(p) = 0.5 * 0.35^(p+1) + 2e-4 * 0.64^(p+1)
 *   treecode  err(p) = 0.02 * theta^(p+1)   (float: 1.5 times that)
 *
 * The FMM's bound tail, (r/R)^(p+1), has r/R up to 0.87 for V-list pairs
 * (cells 2 sides apart), but few pairs are that bad: the typical pair gives
 * the fast term, the worst ones the slow term that takes over past p ~ 12
 * (worst measured: 1.2e-2 at p = 2, 1.5e-4 at 6, 1.8e-7 at 14, 4.4e-9 at
 * 20, 1.0e-10 at 28, 4.1e-11 at 30; so 1e-10 takes p = 32). The
 * treecode's MAC bounds every pair's ratio |y - s_A| / |x - s_A| by
 * theta, and each far entry is evaluated to the degree q that brings its
 * ratio^(q+1) under theta^(p+1) (fmmcl_fmm3d_m2p_degree; no entry needs
 * more than p), so every entry's truncation is bounded alike and the
 * rule is theta^(p+1) times a constant: fitted at N = 1e6 on the H100
 * (Plummer, the most entries a target: 0.0065-0.0075 in double at
 * theta = 0.5 and 0.6, p = 14 and 18; N = 2e4 on PoCL, five
 * distributions, 0.013 at most at p = 4, falling with p; N = 4000 Plummer
 * at theta = 0.7, p = 4: 0.017) and kept above them; the error grows
 * slowly with N (more levels, more entries a target). Float
 * rounds besides, in the M2P's recurrences at high degrees and in the
 * near field (measured 0.014-0.022 at theta = 0.5-0.7, p = 8-14, N = 1e6):
 * its rule takes 1.5 times the constant (TREECODE_SINGLE; benchmarks/README.md). */
#define TREECODE_SINGLE 1.5
double fmmcl_fmm3d_predicted_error(int treecode, double theta, int p) {
  if (treecode) return 0.02 * pow(theta, p + 1);
  return 0.5 * pow(0.35, p + 1) + 2e-4 * pow(0.64, p + 1);
}

double fmmcl_fmm3d_m2p_term_bound(double theta, int p) { return pow(theta, p + 1); }

int fmmcl_fmm3d_m2p_degree(double ratio, double bound, int p) {
  int q = 0;
  for (double t = ratio; q < p && t > bound; t *= ratio) q++;
  return q;
}

typedef struct {
  int treecode, single;
  double theta;
} method_of;

static double method_error(int p, const void *arg) {
  const method_of *m = arg;
  const double e = fmmcl_fmm3d_predicted_error(m->treecode, m->theta, p);
  return m->treecode && m->single ? TREECODE_SINGLE * e : e;
}

/* theta 0: the largest theta of these whose order meets the tolerance.
 * With every far entry's degree bounded alike, accepting a cell at a
 * larger ratio and a higher degree costs less than opening it (measured
 * on the H100 at 1e6, float and double: benchmarks/README.md), so the
 * largest theta that fits the maximum order is taken; tight double
 * tolerances need a smaller one (1e-10: 0.5). The plan keeps the theta
 * chosen, in its options. */
fmmcl_status fmmcl_fmm3d_choose_theta(fmmcl_plan plan, int *order) {
  static const double thetas[] = {0.6, 0.5, 0.4, 0.3};
  const size_t n = sizeof thetas / sizeof thetas[0];
  fmmcl_plan_options o = plan->opt;
  const int max = o.precision == FMMCL_SINGLE ? FMMCL_FMM3D_MAX_ORDER_SINGLE : FMMCL_FMM3D_MAX_ORDER_DOUBLE;
  size_t i = 0;
  /* a given order, or a tolerance the largest theta meets, keeps it */
  while (o.order == 0 && o.tolerance > 0 && i + 1 < n) {
    const method_of m = {1, o.precision == FMMCL_SINGLE, thetas[i]};
    if (method_error(max, &m) <= o.tolerance) break;
    i++;
  }
  o.theta = thetas[i];
  fmmcl_status st = fmmcl_fmm3d_choose_order(plan->ctx, &o, 1, order);
  if (!st) plan->opt.theta = o.theta;
  return st;
}

fmmcl_status fmmcl_fmm3d_choose_order(fmmcl_context ctx, const fmmcl_plan_options *opt, int treecode,
                                      int *order) {
  const int max =
      opt->precision == FMMCL_SINGLE ? FMMCL_FMM3D_MAX_ORDER_SINGLE : FMMCL_FMM3D_MAX_ORDER_DOUBLE;
  const method_of m = {treecode, opt->precision == FMMCL_SINGLE, opt->theta};
  return fmmcl_order_from_tolerance(ctx, opt, max, method_error, &m, treecode ? "; lower theta" : NULL,
                                    order);
}
