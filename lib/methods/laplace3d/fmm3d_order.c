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
 *   treecode  err(p) = 0.15 * (0.7 theta)^(p+1)
 *
 * The FMM's bound tail, (r/R)^(p+1), has r/R up to 0.87 for V-list pairs
 * (cells 2 sides apart), but few pairs are that bad: the typical pair gives
 * the fast term, the worst ones the slow term that takes over past p ~ 12
 * (worst measured: 1.2e-2 at p = 2, 1.5e-4 at 6, 1.8e-7 at 14, 4.4e-9 at
 * 20, 1.0e-10 at 28, 4.1e-11 at 30; so 1e-10 takes p = 32). The
 * treecode's cell-cell MAC bounds the pointwise ratio by theta, and the
 * measured rate is about 0.7 theta (theta = 0.3, 0.5, 0.7; p = 1..13).
 * tests/check_fmm3d.c checks the rule on all four distributions. */
double fmmcl_fmm3d_predicted_error(int treecode, double theta, int p) {
  if (treecode) return 0.15 * pow(0.7 * theta, p + 1);
  return 0.5 * pow(0.35, p + 1) + 2e-4 * pow(0.64, p + 1);
}

double fmmcl_fmm3d_m2p_term_bound(double theta, int p) { return pow(0.7 * theta, p + 1); }

int fmmcl_fmm3d_m2p_degree(double ratio, double bound, int p) {
  int q = 0;
  for (double t = ratio; q < p && t > bound; t *= ratio) q++;
  return q;
}

typedef struct {
  int treecode;
  double theta;
} method_of;

static double method_error(int p, const void *arg) {
  const method_of *m = arg;
  return fmmcl_fmm3d_predicted_error(m->treecode, m->theta, p);
}

fmmcl_status fmmcl_fmm3d_choose_order(fmmcl_context ctx, const fmmcl_plan_options *opt, int treecode,
                                      int *order) {
  const int max =
      opt->precision == FMMCL_SINGLE ? FMMCL_FMM3D_MAX_ORDER_SINGLE : FMMCL_FMM3D_MAX_ORDER_DOUBLE;
  const method_of m = {treecode, opt->theta};
  return fmmcl_order_from_tolerance(ctx, opt, max, method_error, &m, treecode ? "; lower theta" : NULL,
                                    order);
}
