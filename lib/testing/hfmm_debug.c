/* hfmm_debug.c — test hook of the 3D Helmholtz FMM: its batched M2L on the
 * device against a plain-C sum of every V pair's translation (rotation,
 * coaxial shift, rotation back), made afresh per pair in double by
 * hfmm_math.c, with none of the device's batching, mirroring or tables. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/helmholtz3d/hfmm.h"
#include "methods/helmholtz3d/hfmm_math.h"
#include "plan/registry.h"

/* L[c] += the translation of M[a] (the shift centre(c) - centre(a)). */
static void m2l_pair(const hfmm_state *s, const hfmm_gaunt *gaunt, int a, int c, const double complex *M,
                     double complex *L, double *d, double complex *coax, double complex *w) {
  const fmmcl_tree3d_cell *ca = &s->tree->cells[a], *cc = &s->tree->cells[c];
  const int p = s->order, nc = (p + 1) * (p + 1);
  double v[3];
  for (int i = 0; i < 3; i++) v[i] = hfmm_cell_centre(cc, i) - hfmm_cell_centre(ca, i);
  const double dist = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  const double theta = acos(v[2] / dist), phi = atan2(v[1], v[0]);
  hfmm_wigner_d(theta, p, d);
  const double sc = hfmm_level_scale(s, ca->level);
  hfmm_coaxial(HFMM_M2L, (s->k_re + I * s->k_im) * s->unit, dist, sc, sc, gaunt, coax);
  double complex *b = w, *r = w + nc, *t = w + 2 * nc;
  for (int n = 0; n <= p; n++)
    for (int m = -n; m <= n; m++) b[hfmm_idx(n, m)] = M[(size_t)a * nc + hfmm_idx(n, m)] * cexp(I * m * phi);
  for (int n = 0; n <= p; n++)
    for (int mp = -n; mp <= n; mp++) {
      double complex sum = 0;
      for (int m = -n; m <= n; m++)
        sum += d[hfmm_dofs(n) + (m + n) * (2 * n + 1) + mp + n] * b[hfmm_idx(n, m)];
      r[hfmm_idx(n, mp)] = sum;
    }
  for (int n = 0; n <= p; n++)
    for (int m = -n; m <= n; m++) {
      const int am = abs(m);
      double complex sum = 0;
      for (int n2 = am; n2 <= p; n2++)
        sum += coax[hfmm_cofs(p, am) + (n - am) * (p + 1 - am) + (n2 - am)] * r[hfmm_idx(n2, m)];
      t[hfmm_idx(n, m)] = sum;
    }
  for (int n = 0; n <= p; n++)
    for (int mp = -n; mp <= n; mp++) {
      double complex sum = 0;
      for (int m = -n; m <= n; m++)
        sum += d[hfmm_dofs(n) + (mp + n) * (2 * n + 1) + m + n] * t[hfmm_idx(n, m)];
      L[(size_t)c * nc + hfmm_idx(n, mp)] += sum * cexp(-I * mp * phi);
    }
}

fmmcl_status fmmcl_hfmm_debug_m2l(fmmcl_plan plan, unsigned seed, double *err) {
  if (!plan || !err || !fmmcl_plan_runs(plan, "helmholtz3d_fmm"))
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_INVALID_ARGUMENT, "not a Helmholtz FMM plan");
  fmmcl_context ctx = plan->ctx;
  hfmm_state *s = plan->impl;
  const fmmcl_tree3d *t = s->tree;
  const size_t nc = (size_t)(s->order + 1) * (size_t)(s->order + 1), n = t->n_cells * nc, rs = s->real_size;
  double complex *M = malloc(n * sizeof *M), *L = calloc(n, sizeof *L), *coax = NULL, *w = NULL;
  double *d = malloc((size_t)hfmm_dsize(s->order) * sizeof *d);
  void *buf = malloc(2 * n * rs);
  hfmm_gaunt gaunt = {0};
  coax = malloc((size_t)hfmm_csize(s->order) * sizeof *coax);
  w = malloc(3 * nc * sizeof *w);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!M || !L || !d || !buf || !coax || !w || hfmm_gaunt_init(&gaunt, s->order))
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  /* seeded values in [-1, 1], rounded to the plan's precision so that the
   * device and the reference translate the same numbers */
  unsigned long long x = seed * 2654435761ull + 1;
  for (size_t i = 0; !st && i < 2 * n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    fmmcl_put_real(buf, rs, i, 2 * (double)(x >> 11) / 9007199254740992.0 - 1);
  }
  for (size_t i = 0; !st && i < n; i++)
    M[i] = fmmcl_get_real(buf, rs, 2 * i) + I * fmmcl_get_real(buf, rs, 2 * i + 1);
  const cl_uchar z = 0;
  cl_int err_cl = CL_SUCCESS;
  if (!st) err_cl = clEnqueueWriteBuffer(ctx->queue, s->M, CL_TRUE, 0, 2 * n * rs, buf, 0, NULL, NULL);
  if (!st && err_cl == CL_SUCCESS)
    err_cl = clEnqueueFillBuffer(ctx->queue, s->L, &z, 1, 0, 2 * n * rs, 0, NULL, NULL);
  if (!st && err_cl == CL_SUCCESS) st = hfmm_run_m2l(plan, s, NULL);
  if (!st && err_cl == CL_SUCCESS)
    err_cl = clEnqueueReadBuffer(ctx->queue, s->L, CL_TRUE, 0, 2 * n * rs, buf, 0, NULL, NULL);
  if (!st && err_cl != CL_SUCCESS)
    st = fmmcl_fail(ctx, fmmcl_status_from_cl(err_cl), "the M2L check's transfers: %s",
                    fmmcl_cl_error_name(err_cl));
  const fmmcl_tree3d_csr *v = &s->lists.v;
  for (size_t c = 0; !st && c < t->n_cells; c++)
    for (size_t i = v->offsets[c]; i < v->offsets[c + 1]; i++)
      m2l_pair(s, &gaunt, v->indices[i], (int)c, M, L, d, coax, w);
  double diff = 0, big = 0;
  for (size_t i = 0; !st && i < n; i++) {
    const double complex dev = fmmcl_get_real(buf, rs, 2 * i) + I * fmmcl_get_real(buf, rs, 2 * i + 1);
    diff = fmax(diff, cabs(dev - L[i]));
    big = fmax(big, cabs(L[i]));
  }
  *err = big > 0 ? diff / big : INFINITY; /* no V pair: nothing was checked */
  hfmm_gaunt_free(&gaunt);
  free(M), free(L), free(d), free(buf), free(coax), free(w);
  return st;
}
