/* frame_rounding.c — how many points of a set, grouped in local frames,
 * have a neighbour closer than rounding their offsets would resolve: what
 * decides whether a near field must add the offsets' low parts. */
#include <math.h>

#include "core/internal.h"

/* Dropping the low parts changes a near pair's difference, per coordinate,
 * by at most |lo_s| + |lo_t| + |tau|: tau is what moving the source into the
 * target's frame rounds, <= u (r + |off_t|), r the pair's distance. With
 * e_i = |lo_i| + u |off_i| (or its bound 2 u |off_i| where the low parts are
 * not at hand), the change relative to r is at most
 *   sqrt3 (e_s + e_t) / r + sqrt3 u,
 * so a point is close when E / r > ratio, E the largest e_i of its group and
 * r its distance to the point before it in the group's order (the cheap
 * stand-in for the closest distance it meets: not a bound, a closer pair may
 * straddle the order). Coincident points (r = 0) are the guards' concern,
 * not this count's. O(n). */
static size_t count_close(const fmmcl_frame_groups *fg, double u, double ratio, size_t *total) {
  size_t close = 0, all = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : close, all) if (fg->n_groups > 64)
  for (size_t g = 0; g < fg->n_groups; g++) {
    size_t a, b;
    double centre[FMMCL_FRAME_MAX_DIM];
    fg->group(fg->arg, g, &a, &b, centre);
    const double *prev = NULL;
    double e = 0;
    for (size_t i = a; i < b; i++) {
      const double *p = fg->xyz ? fg->xyz + (size_t)fg->dim * i : fg->caller + (size_t)fg->dim * fg->perm[i];
      double off2 = 0, l = 0;
      for (int c = 0; c < fg->dim; c++) {
        off2 += (p[c] - centre[c]) * (p[c] - centre[c]);
        if (fg->lo) l = fmax(l, fabs(fg->lo[4 * i + (size_t)c]));
      }
      e = fmax(e, fg->lo ? l + u * sqrt(off2) : 2 * u * sqrt(off2));
    }
    for (size_t i = a; i < b; i++) {
      const double *p = fg->xyz ? fg->xyz + (size_t)fg->dim * i : fg->caller + (size_t)fg->dim * fg->perm[i];
      if (prev) {
        double r2 = 0;
        for (int c = 0; c < fg->dim; c++) r2 += (p[c] - prev[c]) * (p[c] - prev[c]);
        if (r2 > 0 && !(e <= ratio * sqrt(r2))) close++;
      }
      prev = p;
    }
    all += b - a;
  }
  if (total) *total = all;
  return close;
}

int fmmcl_frame_rounding_needs_low_parts(const fmmcl_frame_groups *fg, double u, double ratio, double share) {
  size_t total = 0;
  const size_t close = count_close(fg, u, ratio, &total);
  return close > 0 && (double)close > share * (double)total;
}
