/* morton3d.c — Morton keys of 3D points: bit interleaving, the root cube and
 * the key of each point in it. */
#include <float.h>
#include <math.h>

#include "core/internal.h"
#include "tree/morton3d.h"

/* Spreads the low 21 bits of v so that bit b lands on bit 3b. */
static uint64_t spread_by_3(uint32_t v) {
  uint64_t x = v & 0x1fffffu;
  x = (x | x << 32) & UINT64_C(0x1f00000000ffff);
  x = (x | x << 16) & UINT64_C(0x1f0000ff0000ff);
  x = (x | x << 8) & UINT64_C(0x100f00f00f00f00f);
  x = (x | x << 4) & UINT64_C(0x10c30c30c30c30c3);
  x = (x | x << 2) & UINT64_C(0x1249249249249249);
  return x;
}

/* Inverse of spread_by_3: gathers bits 0, 3, 6, ... into the low 21 bits. */
static uint32_t compact_by_3(uint64_t x) {
  x &= UINT64_C(0x1249249249249249);
  x = (x | x >> 2) & UINT64_C(0x10c30c30c30c30c3);
  x = (x | x >> 4) & UINT64_C(0x100f00f00f00f00f);
  x = (x | x >> 8) & UINT64_C(0x1f0000ff0000ff);
  x = (x | x >> 16) & UINT64_C(0x1f00000000ffff);
  x = (x | x >> 32) & UINT64_C(0x1fffff);
  return (uint32_t)x;
}

uint64_t fmmcl_morton3d_encode(uint32_t ix, uint32_t iy, uint32_t iz) {
  return spread_by_3(ix) << 2 | spread_by_3(iy) << 1 | spread_by_3(iz);
}

void fmmcl_morton3d_decode(uint64_t key, uint32_t *ix, uint32_t *iy, uint32_t *iz) {
  *ix = compact_by_3(key >> 2);
  *iy = compact_by_3(key >> 1);
  *iz = compact_by_3(key);
}

static void extend_box(const double *p, size_t n, double lo[3], double hi[3]) {
  double x0 = lo[0], y0 = lo[1], z0 = lo[2], x1 = hi[0], y1 = hi[1], z1 = hi[2];
/* min and max are exact, so the threads' order cannot change the cube */
#pragma omp parallel for schedule(static) if (n >= 65536) reduction(min                         \
                                                                    : x0, y0, z0) reduction(max \
                                                                                            : x1, y1, z1)
  for (size_t i = 0; i < n; i++) {
    const double *q = p + 3 * i;
    x0 = q[0] < x0 ? q[0] : x0, y0 = q[1] < y0 ? q[1] : y0, z0 = q[2] < z0 ? q[2] : z0;
    x1 = q[0] > x1 ? q[0] : x1, y1 = q[1] > y1 ? q[1] : y1, z1 = q[2] > z1 ? q[2] : z1;
  }
  lo[0] = x0, lo[1] = y0, lo[2] = z0, hi[0] = x1, hi[1] = y1, hi[2] = z1;
}

fmmcl_status fmmcl_morton3d_bounding_cube(const double *a, size_t na, const double *b, size_t nb,
                                          fmmcl_morton3d_cube *cube) {
  if ((na && !a) || (nb && !b) || !cube)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_morton3d_bounding_cube: NULL argument");
  if (na + nb == 0)
    return fmmcl_fail(NULL, FMMCL_ERROR_EMPTY_INPUT, "fmmcl_morton3d_bounding_cube: no points");
  if (!fmmcl_all_finite(a, 3 * na) || (nb && !fmmcl_all_finite(b, 3 * nb)))
    return fmmcl_fail(NULL, FMMCL_ERROR_NONFINITE_INPUT,
                      "fmmcl_morton3d_bounding_cube: a point has a NaN or infinite coordinate");
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  extend_box(a, na, lo, hi);
  extend_box(b, nb, lo, hi);
  return fmmcl_morton3d_cube_of_box(lo, hi, cube);
}

fmmcl_status fmmcl_morton3d_cube_of_box(const double lo[3], const double hi[3], fmmcl_morton3d_cube *cube) {
  double width = 0.0;
  for (int d = 0; d < 3; d++) width = fmax(width, hi[d] - lo[d]);
  /* Zero extent (one point, or all coincide): any cube holds them. */
  if (!(width > 0.0)) width = 1.0;
  /* The enlargement keeps the largest coordinate strictly below the upper
   * face, so its integer coordinate is < 2^21 without relying on the clamp.
   * The origin and x - origin are rounded to ulps of the coordinates, not of
   * the width: for a small set far from 0 (extent 1e-12 at 0.5) those ulps
   * exceed any relative enlargement of the width, so a few of them are added
   * too, lest the extreme points round outside the cube and be clamped into
   * cells that do not hold them. */
  double mag = 0.0;
  for (int d = 0; d < 3; d++) mag = fmax(mag, fmax(fabs(lo[d]), fabs(hi[d])));
  width = width * (1.0 + ldexp(1.0, -20)) + 8.0 * mag * DBL_EPSILON;
  if (!isfinite(width))
    return fmmcl_fail(NULL, FMMCL_ERROR_NONFINITE_INPUT,
                      "fmmcl_morton3d_bounding_cube: the points span more than the double range");
  for (int d = 0; d < 3; d++) cube->origin[d] = 0.5 * (lo[d] + hi[d]) - 0.5 * width;
  cube->width = width;
  return FMMCL_SUCCESS;
}

void fmmcl_morton3d_cube_grow(fmmcl_morton3d_cube *cube, double factor) {
  if (factor > 1.0) cube->width *= factor;
}

/* Integer cell coordinate along one axis at the finest level. */
static uint32_t finest_coordinate(double x, double origin, double scale) {
  double t = floor((x - origin) * scale);
  if (!(t >= 0.0)) return 0;
  if (t >= (double)(FMMCL_MORTON_CELLS_PER_AXIS - 1)) return FMMCL_MORTON_CELLS_PER_AXIS - 1;
  return (uint32_t)t;
}

uint64_t fmmcl_morton3d_point_key(const fmmcl_morton3d_cube *cube, const double *xyz) {
  double scale = (double)FMMCL_MORTON_CELLS_PER_AXIS / cube->width;
  return fmmcl_morton3d_encode(finest_coordinate(xyz[0], cube->origin[0], scale),
                               finest_coordinate(xyz[1], cube->origin[1], scale),
                               finest_coordinate(xyz[2], cube->origin[2], scale));
}

void fmmcl_morton3d_keys(const fmmcl_morton3d_cube *cube, const double *xyz, size_t n, uint64_t *keys) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) keys[i] = fmmcl_morton3d_point_key(cube, xyz + 3 * i);
}
