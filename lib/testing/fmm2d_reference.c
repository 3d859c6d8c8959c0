/* fmm2d_reference.c — plain-C (OpenMP) reference of the 2D Laplace FMM,
 * phase by phase on the quadtree, which the device phases are tested against. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace2d/expansions2d.h"
#include "methods/laplace2d/fmm2d.h"

/* -sum q log|t - s| and its gradient at one target; a pair at distance 0
 * contributes nothing (a point never sees itself). */
static void laplace2d_at(const double *t, size_t ns, const double *src, const double *q, double *out) {
  double p = 0, gx = 0, gy = 0;
  for (size_t j = 0; j < ns; j++) {
    double dx = t[0] - src[2 * j], dy = t[1] - src[2 * j + 1], r2 = dx * dx + dy * dy;
    if (r2 == 0) continue;
    double qr2 = q[j] / r2;
    p -= 0.5 * q[j] * log(r2);
    gx -= qr2 * dx;
    gy -= qr2 * dy;
  }
  out[0] = p, out[1] = gx, out[2] = gy;
}

static double complex *cell_exp(double complex *E, int p, size_t cell) { return E + cell * (size_t)(p + 1); }

/* The leaves' expansions: P2M of the sorted charges into M when M is
 * given, else L2P of L into out. */
static void leaf_pass(const fmmcl_quadtree2d *t, int p, const double *q_sorted, double complex *M,
                      const double complex *L, double *out) {
  const size_t nl = (size_t)1 << (2 * t->levels), off = fmmcl_quadtree2d_level_offset(t->levels);
  const double r = fmmcl_quadtree2d_cell_side(t, t->levels);
#pragma omp parallel for schedule(dynamic, 64)
  for (size_t m = 0; m < nl; m++) {
    double c[2];
    fmmcl_quadtree2d_cell_centre(t, t->levels, m, c);
    size_t b = t->leaf_src[m];
    if (M)
      fmmcl_exp2d_p2m(p, t->leaf_src[m + 1] - b, t->src + 2 * b, q_sorted + b, c, r, cell_exp(M, p, off + m));
    else
      for (size_t i = t->leaf_tgt[m]; i < t->leaf_tgt[m + 1]; i++)
        fmmcl_exp2d_l2p(p, L + (off + m) * (size_t)(p + 1), c, r, t->tgt + 2 * i, out + 3 * i);
  }
}

void fmmcl_fmm2d_ref_p2m(const fmmcl_quadtree2d *t, int p, const double *q_sorted, double complex *M) {
  leaf_pass(t, p, q_sorted, M, NULL, NULL);
}

/* The translations between level l and its children: child multipoles
 * into their parent's (upward) or the parent's local expansion into its
 * children's (downward). */
static void parent_child(const fmmcl_quadtree2d *t, int p, int l, int upward, double complex *E) {
  const size_t n = (size_t)1 << (2 * l), off = fmmcl_quadtree2d_level_offset(l),
               coff = fmmcl_quadtree2d_level_offset(l + 1);
  const double r = fmmcl_quadtree2d_cell_side(t, l);
#pragma omp parallel for schedule(static)
  for (size_t m = 0; m < n; m++) {
    double cp[2], cc[2];
    fmmcl_quadtree2d_cell_centre(t, l, m, cp);
    for (size_t c = 0; c < 4; c++) {
      fmmcl_quadtree2d_cell_centre(t, l + 1, 4 * m + c, cc);
      double complex *parent = cell_exp(E, p, off + m), *child = cell_exp(E, p, coff + 4 * m + c);
      if (upward) fmmcl_exp2d_m2m(p, child, cc, 0.5 * r, cp, r, parent);
      else fmmcl_exp2d_l2l(p, parent, cp, r, cc, 0.5 * r, child);
    }
  }
}

/* Levels L-1 .. 2: the V lists start at level 2, nothing above is used. */
void fmmcl_fmm2d_ref_m2m(const fmmcl_quadtree2d *t, int p, double complex *M) {
  for (int l = t->levels - 1; l >= 2; l--) parent_child(t, p, l, 1, M);
}

void fmmcl_fmm2d_ref_m2l(const fmmcl_quadtree2d *t, int p, const double complex *M, double complex *L) {
  for (int l = 2; l <= t->levels; l++) {
    const size_t n = (size_t)1 << (2 * l), off = fmmcl_quadtree2d_level_offset(l);
    const double r = fmmcl_quadtree2d_cell_side(t, l);
#pragma omp parallel for schedule(dynamic, 16)
    for (size_t m = 0; m < n; m++) {
      double ct[2], cs[2];
      fmmcl_quadtree2d_cell_centre(t, l, m, ct);
      for (size_t e = t->v_begin[off + m]; e < t->v_begin[off + m + 1]; e++) {
        size_t s = t->v_src[e];
        fmmcl_quadtree2d_cell_centre(t, l, s - off, cs);
        fmmcl_exp2d_m2l(p, M + s * (size_t)(p + 1), cs, ct, r, cell_exp(L, p, off + m));
      }
    }
  }
}

void fmmcl_fmm2d_ref_l2l(const fmmcl_quadtree2d *t, int p, double complex *L) {
  for (int l = 2; l < t->levels; l++) parent_child(t, p, l, 0, L);
}

void fmmcl_fmm2d_ref_l2p(const fmmcl_quadtree2d *t, int p, const double complex *L, double *out) {
  leaf_pass(t, p, NULL, NULL, L, out);
}

void fmmcl_fmm2d_ref_p2p(const fmmcl_quadtree2d *t, const double *q_sorted, double *out) {
  const size_t nl = (size_t)1 << (2 * t->levels);
#pragma omp parallel for schedule(dynamic, 16)
  for (size_t m = 0; m < nl; m++)
    for (size_t i = t->leaf_tgt[m]; i < t->leaf_tgt[m + 1]; i++)
      for (size_t u = t->u_begin[m]; u < t->u_begin[m + 1]; u++) {
        size_t b = t->leaf_src[t->u_leaf[u]], e = t->leaf_src[t->u_leaf[u] + 1];
        double o[3];
        laplace2d_at(t->tgt + 2 * i, e - b, t->src + 2 * b, q_sorted + b, o);
        for (int c = 0; c < 3; c++) out[3 * i + c] += o[c];
      }
}

fmmcl_status fmmcl_fmm2d_reference(size_t ns, const double *src, const double *q, size_t nt,
                                   const double *tgt, int p, size_t leaf_size, double *pot, double *grad) {
  if (p < 1 || p > FMMCL_EXP2D_MAX_ORDER)
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT, "order %d outside 1..%d", p, FMMCL_EXP2D_MAX_ORDER);
  if (!tgt) tgt = src, nt = ns;
  fmmcl_quadtree2d *t;
  fmmcl_status st =
      fmmcl_quadtree2d_build(ns, src, nt, tgt, fmmcl_quadtree2d_levels_for(ns > nt ? ns : nt, leaf_size), &t);
  if (st) return st;
  const size_t ne = t->n_cells * (size_t)(p + 1);
  double complex *M = calloc(ne, sizeof *M), *L = calloc(ne, sizeof *L);
  double *qs = malloc(ns * sizeof *qs), *out = calloc(3 * nt, sizeof *out);
  if (!M || !L || !qs || !out) {
    free(M), free(L), free(qs), free(out), fmmcl_quadtree2d_free(t);
    return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  for (size_t i = 0; i < ns; i++) qs[i] = q[t->source_perm[i]];
  fmmcl_fmm2d_ref_p2m(t, p, qs, M);
  fmmcl_fmm2d_ref_m2m(t, p, M);
  fmmcl_fmm2d_ref_m2l(t, p, M, L);
  fmmcl_fmm2d_ref_l2l(t, p, L);
  fmmcl_fmm2d_ref_l2p(t, p, L, out);
  fmmcl_fmm2d_ref_p2p(t, qs, out);
  for (size_t i = 0; i < nt; i++) {
    size_t k = t->target_perm[i];
    pot[k] = out[3 * i];
    if (grad) grad[2 * k] = out[3 * i + 1], grad[2 * k + 1] = out[3 * i + 2];
  }
  free(M), free(L), free(qs), free(out), fmmcl_quadtree2d_free(t);
  return FMMCL_SUCCESS;
}
