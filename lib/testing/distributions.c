/* distributions.c — the point sets of distributions.h, from a splitmix64
 * stream so that every platform draws the same points. */
#include "testing/distributions.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const char *const names[FMMCL_DIST_COUNT] = {"uniform", "plummer", "ellipsoid", "surface", "clusters"};

const char *fmmcl_distribution_name(fmmcl_distribution d) {
  return (unsigned)d < FMMCL_DIST_COUNT ? names[d] : "unknown";
}

int fmmcl_distribution_parse(const char *s) {
  for (int d = 0; d < FMMCL_DIST_COUNT; d++)
    if (s && strcmp(s, names[d]) == 0) return d;
  return -1;
}

int fmmcl_distribution_has_dim(fmmcl_distribution d, int dim) {
  if (dim == 3) return (unsigned)d < FMMCL_DIST_COUNT;
  return dim == 2 && (d == FMMCL_DIST_UNIFORM || d == FMMCL_DIST_SURFACE || d == FMMCL_DIST_CLUSTERS);
}

typedef struct rng {
  uint64_t s;
} rng;

static double uniform01(rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/* a standard normal deviate (Box-Muller; u1 kept away from 0) */
static double normal(rng *r) {
  const double u1 = 1.0 - uniform01(r), u2 = uniform01(r);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* a direction uniform on the unit sphere (dim 3) or circle (dim 2) */
static void direction(rng *r, int dim, double *v) {
  const double phi = 6.283185307179586 * uniform01(r);
  if (dim == 2) {
    v[0] = cos(phi), v[1] = sin(phi);
    return;
  }
  const double z = 2.0 * uniform01(r) - 1.0, s = sqrt(fmax(0.0, 1.0 - z * z));
  v[0] = s * cos(phi), v[1] = s * sin(phi), v[2] = z;
}

static void point(fmmcl_distribution d, int dim, size_t i, rng *r, double *p) {
  double v[3];
  switch (d) {
    case FMMCL_DIST_UNIFORM:
      for (int k = 0; k < dim; k++) p[k] = uniform01(r);
      break;
    case FMMCL_DIST_PLUMMER: {
      /* inverse of the cumulative mass m(r) = r^3 / (1 + r^2)^(3/2), cut at
     * r = 8 (m = 0.985) so that a few far outliers do not set the box */
      const double a = 1.0 / 16.0, m = 0.985 * uniform01(r) + 1e-12;
      const double rad = a / sqrt(pow(m, -2.0 / 3.0) - 1.0);
      direction(r, 3, v);
      for (int k = 0; k < 3; k++) p[k] = 0.5 + rad * v[k];
      break;
    }
    case FMMCL_DIST_ELLIPSOID: {
      const double rad = cbrt(uniform01(r));
      direction(r, 3, v);
      p[0] = 0.5 + 0.5 * rad * v[0], p[1] = 0.5 + 0.5 * rad * v[1], p[2] = 0.5 + 2.0 * rad * v[2];
      break;
    }
    case FMMCL_DIST_SURFACE:
      direction(r, dim, v);
      for (int k = 0; k < dim; k++) p[k] = v[k];
      break;
    case FMMCL_DIST_CLUSTERS: {
      /* cluster c sits at corner c (bits of c pick 0 or 1 per axis); widths
     * grow geometrically from 1e-3 to 1e-1 over the corners */
      const int corners = 1 << dim, c = (int)(i % (size_t)corners);
      const double width = 1e-3 * pow(100.0, (double)c / (corners - 1));
      for (int k = 0; k < dim; k++) p[k] = (double)((c >> k) & 1) + width * normal(r);
      break;
    }
    default: break;
  }
}

int fmmcl_distribution_points(fmmcl_distribution d, int dim, unsigned seed, size_t n, double shift,
                              double *out) {
  if (!fmmcl_distribution_has_dim(d, dim)) return -1;
  rng r = {seed * 0x2545F4914F6CDD1DULL + 0x51ED2701ULL * (unsigned)(d + 1)};
  for (size_t i = 0; i < n; i++) {
    double *p = out + i * (size_t)dim;
    point(d, dim, i, &r, p);
    for (int k = 0; k < dim; k++) p[k] += shift;
  }
  return 0;
}
