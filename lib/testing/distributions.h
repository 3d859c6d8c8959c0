/* distributions.h — reproducible point sets of the shapes that stress an
 * N-body code's accuracy (uniform, Plummer, ellipsoid, surface, clusters),
 * shared by the tests and the benchmarks. */
#ifndef FMMCL_TESTING_DISTRIBUTIONS_H
#define FMMCL_TESTING_DISTRIBUTIONS_H
#include <stddef.h>

typedef enum fmmcl_distribution {
  FMMCL_DIST_UNIFORM,   /* unit cube (2D: unit square) */
  FMMCL_DIST_PLUMMER,   /* Plummer sphere, scale 1/16, cut at 8 scale radii (2D: none) */
  FMMCL_DIST_ELLIPSOID, /* solid ellipsoid, semi-axes 0.5 : 0.5 : 2 (2D: none) */
  FMMCL_DIST_SURFACE,   /* unit sphere's surface (2D: unit circle) */
  FMMCL_DIST_CLUSTERS,  /* 8 Gaussian clusters at the cube's corners, widths 1e-3 .. 1e-1
                           (2D: 4 at the square's corners, widths 1e-3 .. 1e-1) */
  FMMCL_DIST_COUNT
} fmmcl_distribution;

/* "uniform", "plummer", "ellipsoid", "surface", "clusters". */
const char *fmmcl_distribution_name(fmmcl_distribution d);
/* The distribution named s, or -1. */
int fmmcl_distribution_parse(const char *s);
/* Whether d has a dim-dimensional form (2D: uniform, surface, clusters). */
int fmmcl_distribution_has_dim(fmmcl_distribution d, int dim);
/* n points of d in dim dimensions from seed, every coordinate plus shift;
 * returns 0, or -1 when d has no dim-dimensional form. */
int fmmcl_distribution_points(fmmcl_distribution d, int dim, unsigned seed, size_t n, double shift,
                              double *out);
#endif
