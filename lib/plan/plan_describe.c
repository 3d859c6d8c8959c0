/* plan_describe.c — what a plan is (fmmcl_plan_describe) and how well its
 * precision resolves its closest pair (fmmcl_plan_rounding_estimate). */
#include <math.h>
#include <stdlib.h>

#include "plan/registry.h"
#include "tree/closest_pairs.h"

fmmcl_status fmmcl_plan_describe(fmmcl_plan plan, fmmcl_plan_info *info) {
  if (!plan || !info)
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_NULL_POINTER,
                      "fmmcl_plan_describe: NULL argument");
  info->kernel = plan->opt.kernel;
  info->method = plan->opt.method;
  info->precision = plan->opt.precision;
  info->order = plan->ops->order ? plan->ops->order(plan) : 0;
  info->theta = plan->opt.method == FMMCL_TREECODE ? plan->opt.theta : 0;
  const int tree3d = plan->opt.kernel == FMMCL_LAPLACE_3D &&
                     (plan->opt.method == FMMCL_FMM || plan->opt.method == FMMCL_TREECODE);
  info->leaf_size = tree3d ? plan->opt.leaf_size : 0;
  return FMMCL_SUCCESS;
}

/* The bounding box of sources and targets (targets NULL: none apart). */
typedef struct {
  double lo[3], hi[3];
} points_box;

static points_box box_of(int dim, size_t n, const double *src, size_t m, const double *tgt) {
  points_box b;
  for (int d = 0; d < dim; d++) b.lo[d] = INFINITY, b.hi[d] = -INFINITY;
  for (int set = 0; set < 2; set++) {
    const double *p = set ? tgt : src;
    const size_t count = set ? m : n;
    for (size_t i = 0; p && i < count; i++)
      for (int d = 0; d < dim; d++)
        b.lo[d] = fmin(b.lo[d], p[i * dim + d]), b.hi[d] = fmax(b.hi[d], p[i * dim + d]);
  }
  return b;
}

/* The frame of a method that sends every coordinate relative to one centre
 * (near the centre of the points' box): the point's distance from it. */
static double whole_set_frame(int dim, const points_box *b, const double *x) {
  double r2 = 0;
  for (int d = 0; d < dim; d++) {
    const double e = x[d] - 0.5 * (b->lo[d] + b->hi[d]);
    r2 += e * e;
  }
  return sqrt(r2);
}

/* The box's diagonal: no pair is farther apart. */
static double farthest(int dim, const points_box *b) {
  double r2 = 0;
  for (int d = 0; d < dim; d++) r2 += (b->hi[d] - b->lo[d]) * (b->hi[d] - b->lo[d]);
  return sqrt(r2);
}

fmmcl_status fmmcl_plan_rounding_estimate(fmmcl_plan plan, const double *sources, const double *targets,
                                          double *estimate, double *distance) {
  if (!plan || !sources || !estimate || !distance)
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_NULL_POINTER,
                      "fmmcl_plan_rounding_estimate: NULL argument");
  if ((targets == NULL) != plan->targets_are_sources)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "fmmcl_plan_rounding_estimate: the plan's targets %s the sources; pass %s",
                      plan->targets_are_sources ? "are" : "are not",
                      plan->targets_are_sources ? "NULL" : "them");
  const int dim = plan->opt.dim;
  *estimate = 0, *distance = NAN;
  if (dim < 1 || dim > 3) return FMMCL_SUCCESS; /* Gaussians of higher dims: not singular */
  fmmcl_close_pair p;
  if (!fmmcl_close_pairs(dim, plan->n_sources, sources, plan->n_targets, targets, 1, &p))
    return FMMCL_SUCCESS;
  const double *t = (targets ? targets : sources) + p.target * dim, *s = sources + p.source * dim;
  /* one pass over the points, only where the box is read */
  const int helmholtz = plan->opt.kernel == FMMCL_HELMHOLTZ_3D;
  points_box box = {{0}, {0}};
  if (!plan->ops->frame_size || helmholtz)
    box = box_of(dim, plan->n_sources, sources, plan->n_targets, targets);
  double frames;
  if (plan->ops->frame_size)
    frames = plan->ops->frame_size(plan, 1, p.target) + plan->ops->frame_size(plan, 0, p.source);
  else frames = whole_set_frame(dim, &box, t) + whole_set_frame(dim, &box, s);
  /* each coordinate rounds by at most u times its frame's size, so the
   * difference vector by up to u (frames), and the gradient term x / r^3
   * by up to three times that relative to r; rounding errors of random
   * sign make the typical error about a third of that bound, which is
   * what the estimate says (measured at the closest pairs of uniform and
   * clustered sets), plus a few roundings of the pair's own arithmetic */
  const double u = plan->opt.precision == FMMCL_DOUBLE ? 0x1.0p-53 : 0x1.0p-24;
  const double uf = plan->ops->offset_rounding ? plan->ops->offset_rounding(plan) : u;
  *distance = p.distance;
  *estimate = uf * frames / p.distance + 4.0 * u;
  /* Helmholtz: the phase Re k r rounds by u Re k r, largest at the
   * farthest pair (a third of it typical, as above) */
  if (helmholtz) *estimate += u * fabs(plan->opt.wavenumber_re) * farthest(dim, &box) / 3;
  return FMMCL_SUCCESS;
}
