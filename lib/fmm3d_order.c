/* fmm3d_order.c — the expansion order of a 3D FMM or treecode plan: the
 * caller's p, or the smallest p whose predicted error meets the tolerance. */
#include <math.h>

#include "fmm3d.h"

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

fmmcl_status fmmcl_fmm3d_choose_order(fmmcl_context ctx, const fmmcl_plan_options *opt,
                                      int treecode, int *order) {
  const int single = opt->precision == FMMCL_SINGLE;
  const int max = single ? FMMCL_FMM3D_MAX_ORDER_SINGLE : FMMCL_FMM3D_MAX_ORDER_DOUBLE;
  if (opt->order != 0) {
    if (opt->order < 1 || opt->order > max)
      return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "expansion order %d outside 1..%d (%s)",
                        opt->order, max, single ? "single precision" : "double precision");
    *order = opt->order;
    return FMMCL_SUCCESS;
  }
  double tol = opt->tolerance;
  if (tol == 0) tol = single ? 1e-4 : 1e-6;
  if (!(tol > 0) || !isfinite(tol))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "tolerance must be > 0, got %g", opt->tolerance);
  /* float sums of 1e4 terms carry ~1e-7 relative rounding; below 1e-6 the
   * request cannot be promised whatever p is */
  if (single && tol < 1e-6)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "tolerance %g is below what single precision can deliver (1e-6); use FMMCL_DOUBLE", tol);
  for (int p = 1; p <= max; p++)
    if (fmmcl_fmm3d_predicted_error(treecode, opt->theta, p) <= tol) {
      *order = p;
      return FMMCL_SUCCESS;
    }
  return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                    "tolerance %g needs an order above %d%s", tol, max,
                    treecode ? "; lower theta" : "");
}
