/* make_points.c — writes N points for the peer-code drivers (fmm3d_driver).
 *
 *   make_points N OUT.pts [--seed S] [--dist cube|sphere] [--fmmcl OUT.bin]
 *               [--fmmcl-columns LAYOUT] [--positive]
 *
 * OUT.pts: int64 n, then n*3 float64 coordinates (x0 y0 z0 x1 ...), then
 * n float64 charges, all little-endian (benchmarks/peers/README.md).
 * Points are uniform in the unit cube [0,1)^3 (or, with --dist sphere, on the
 * unit sphere's surface, centred at 0.5); charges uniform in [-1,1), or with
 * --positive masses uniform in (0, 1] / N (as Ryoanji's demo draws them:
 * a gravity code expands about centres of mass).
 * --fmmcl also writes the same points as rows "x y z q" of float64 (the
 * raw .bin table that `fmmcl --input` reads), so both codes see identical data.
 * --fmmcl-columns gives those rows the densities fmm3d_driver derives from
 * the charges (q shifted by index, mod n; fmm3d_driver.c): laplace (x y z q,
 * the default), laplace-dipoles (+ q_{j+1..j+3}), helmholtz (x y z q 0),
 * helmholtz-dipoles (+ q_{j+1..j+6}), stokes (x y z q_j q_{j+1} q_{j+2}),
 * stokes-stresslets (+ q_{j+3..j+8}: s, then n).
 * The generator is splitmix64, so a seed gives the same points everywhere. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1.0p-53; }

static void die(const char *msg, const char *arg) {
  fprintf(stderr, "make_points: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: make_points N OUT.pts [--seed S] [--dist cube|sphere] [--fmmcl OUT.bin]\n"
                    "                   [--fmmcl-columns LAYOUT] [--positive]\n");
    return 2;
  }
  char *end;
  double nd = strtod(argv[1], &end); /* accepts 1e6 */
  if (*end || !(nd >= 1) || nd > 4e9) die("bad N", argv[1]);
  int64_t n = (int64_t)nd;
  const char *out = argv[2], *fmmcl_out = NULL, *dist = "cube", *layout = "laplace";
  uint64_t seed = 1;
  int positive = 0;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--dist") && i + 1 < argc) dist = argv[++i];
    else if (!strcmp(argv[i], "--fmmcl") && i + 1 < argc) fmmcl_out = argv[++i];
    else if (!strcmp(argv[i], "--fmmcl-columns") && i + 1 < argc) layout = argv[++i];
    else if (!strcmp(argv[i], "--positive")) positive = 1;
    else die("unknown argument", argv[i]);
  }
  int sphere = !strcmp(dist, "sphere");
  /* per layout: the columns after q are q_{j+1} .. q_{j+shifts} (Helmholtz:
   * after the charge's zero imaginary part) */
  static const struct {
    const char *name;
    int shifts;
  } layouts[] = {{"laplace", 0},           {"laplace-dipoles", 3}, {"helmholtz", 0},
                 {"helmholtz-dipoles", 6}, {"stokes", 2},          {"stokes-stresslets", 8}};
  int lay = -1;
  for (int k = 0; k < 6; k++)
    if (!strcmp(layout, layouts[k].name)) lay = k;
  if (lay < 0) die("unknown --fmmcl-columns", layout);
  const int helmholtz = !strncmp(layout, "helmholtz", 9);
  if (!sphere && strcmp(dist, "cube")) die("unknown --dist", dist);

  double *xyz = malloc(sizeof(double) * 3 * (size_t)n), *q = malloc(sizeof(double) * (size_t)n);
  if (!xyz || !q) die("out of memory", NULL);
  uint64_t s = seed * 0x2545f4914f6cdd1dULL + 12345;
  for (int64_t i = 0; i < n; i++) {
    if (sphere) {
      double z = 2 * uniform01(&s) - 1, phi = 2 * M_PI * uniform01(&s), r = sqrt(1 - z * z);
      xyz[3 * i] = 0.5 + 0.5 * r * cos(phi);
      xyz[3 * i + 1] = 0.5 + 0.5 * r * sin(phi);
      xyz[3 * i + 2] = 0.5 + 0.5 * z;
    } else {
      for (int d = 0; d < 3; d++) xyz[3 * i + d] = uniform01(&s);
    }
    q[i] = positive ? (1 - uniform01(&s)) / (double)n : 2 * uniform01(&s) - 1;
  }
  FILE *f = fopen(out, "wb");
  if (!f) die("cannot write", out);
  if (fwrite(&n, 8, 1, f) != 1 || fwrite(xyz, 8, 3 * (size_t)n, f) != 3 * (size_t)n ||
      fwrite(q, 8, (size_t)n, f) != (size_t)n || fclose(f))
    die("write failed:", out);
  if (fmmcl_out) {
    FILE *g = fopen(fmmcl_out, "wb");
    if (!g) die("cannot write", fmmcl_out);
    for (int64_t i = 0; i < n; i++) {
      double row[16] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], q[i]};
      int c = 4;
      if (helmholtz) row[c++] = 0; /* the charge's imaginary part */
      for (int k = 1; k <= layouts[lay].shifts; k++) row[c++] = q[(i + k) % n];
      if (fwrite(row, 8, (size_t)c, g) != (size_t)c) die("write failed:", fmmcl_out);
    }
    if (fclose(g)) die("write failed:", fmmcl_out);
  }
  free(xyz);
  free(q);
  return 0;
}
