/* model_fit.c — the per-phase performance model: regressors from each
 * phase's work and granule counts over the device's measured peaks,
 * constants fitted by weighted non-negative least squares, and predictions. */
#include <math.h>
#include <string.h>

#include "model/model.h"

/* Each phase costs a constant (its launch) plus its data movement over the
 * bandwidth plus its arithmetic over the U-list peak plus a cost per
 * granule, so the fitted constants are dimensionless inefficiencies:
 *   p2p               pairs / peak   + points' bytes / bw + leaf pairs * 64 / peak
 *   p2m l2p m2p p2l   count * C / peak + point bytes / bw + work-groups * C / peak
 *   m2l               count * C^2 / peak + 2 expansions' bytes / bw + rows * C / peak
 *   m2m l2l           count * C^2 / peak + 2 expansions' bytes / bw + level launches * 1e-5 s
 *   upload download   the caller's doubles over the bandwidth (PCIe or host
 *   overhead combine  copies in practice: the constant absorbs the ratio).
 * The granule term is what the first fit lacked: with a constant cost per
 * leaf pair, P2P's cost per pair falls as q grows (measured on a CPU
 * device: benchmarks/README.md, bench-model), and a
 * work-group that holds an expansion pays for it however few points it has. */
void fmmcl_model_regressors(const fmmcl_model_precision *mp, size_t real_size, int order,
                            const double work[FMMCL_MODEL_NWORK], size_t n_sources, size_t n_targets,
                            int phase, double x[FMMCL_MODEL_NREG]) {
  const double ncoef = (order + 1.0) * (order + 2.0) / 2.0;
  const double peak = mp->pairs_per_s > 0 ? mp->pairs_per_s : 1;
  const double bw = mp->bytes_per_s > 0 ? mp->bytes_per_s : 1;
  const double rs = (double)real_size, w = work[phase], g = work[FMMCL_MODEL_NPHASES + phase];
  x[0] = w > 0 ? 1 : 0; /* a phase with no work launches nothing */
  x[3] = x[4] = 0;
  /* work-groups of the phase: P2P runs one per target leaf (P2M's granules) */
  const double groups = phase == FMMCL_MODEL_P2P ? work[FMMCL_MODEL_NPHASES + FMMCL_MODEL_P2M] : g;
  const double per_group = groups > 0 ? w / groups : 0;
  switch (phase) {
    case FMMCL_MODEL_P2P:
      x[1] = w > 0 ? (n_sources + n_targets) * 4.0 * rs / bw : 0;
      x[2] = w / peak;
      x[3] = g * 64.0 / peak;
      x[4] = per_group / peak;
      break;
    case FMMCL_MODEL_P2M:
    case FMMCL_MODEL_L2P:
    case FMMCL_MODEL_M2P:
    case FMMCL_MODEL_P2L:
      x[1] = w * 4.0 * rs / bw;
      x[2] = w * ncoef / peak;
      x[3] = g * ncoef / peak;
      x[4] = per_group * ncoef / peak;
      break;
    case FMMCL_MODEL_M2L:
      x[1] = w * 2.0 * ncoef * 2.0 * rs / bw;
      x[2] = w * ncoef * ncoef / peak;
      x[3] = g * ncoef / peak;
      x[4] = per_group * ncoef * ncoef / peak;
      break;
    case FMMCL_MODEL_M2M:
    case FMMCL_MODEL_L2L:
      x[1] = w * 2.0 * ncoef * 2.0 * rs / bw;
      x[2] = w * ncoef * ncoef / peak;
      x[3] = g * 1e-5;
      x[4] = per_group * ncoef * ncoef / peak;
      break;
    default: { /* upload: charges; download: potential and gradient; the rest: both */
      const double bytes = phase == FMMCL_MODEL_UPLOAD ? 8.0 : phase == FMMCL_MODEL_DOWNLOAD ? 32.0 : 40.0;
      x[0] = w > 0 ? 1 : 0;
      x[1] = w * bytes / bw;
      x[2] = 0;
      break;
    }
  }
}

/* Least squares over the columns in use (use[j]): c solves the normal
 * equations restricted to them; 0 when they are singular. */
static int solve(const double A[FMMCL_MODEL_NREG][FMMCL_MODEL_NREG], const double b[FMMCL_MODEL_NREG],
                 const int use[FMMCL_MODEL_NREG], double c[FMMCL_MODEL_NREG]) {
  enum { K = FMMCL_MODEL_NREG };
  double M[K][K + 1];
  int idx[K], k = 0;
  for (int j = 0; j < K; j++) {
    c[j] = 0;
    if (use[j]) idx[k++] = j;
  }
  for (int r = 0; r < k; r++) {
    for (int s = 0; s < k; s++) M[r][s] = A[idx[r]][idx[s]];
    M[r][k] = b[idx[r]];
  }
  for (int col = 0; col < k; col++) { /* Gauss-Jordan, partial pivoting */
    int piv = col;
    for (int r = col + 1; r < k; r++)
      if (fabs(M[r][col]) > fabs(M[piv][col])) piv = r;
    if (!(fabs(M[piv][col]) > 1e-10)) return 0; /* columns are scaled to unit diagonal */
    for (int s = 0; s <= k; s++) {
      double t = M[col][s];
      M[col][s] = M[piv][s];
      M[piv][s] = t;
    }
    for (int r = 0; r < k; r++) {
      if (r == col) continue;
      const double f = M[r][col] / M[col][col];
      for (int s = col; s <= k; s++) M[r][s] -= f * M[col][s];
    }
  }
  for (int r = 0; r < k; r++) c[idx[r]] = M[r][k] / M[r][r];
  return 1;
}

/* Non-negative least squares by trying every active set (2^NREG of them):
 * the feasible solution of least residual. Exact, and with ties broken by
 * the set's index, deterministic. yy is the weighted sum of squares of t. */
static void nnls(const double A[FMMCL_MODEL_NREG][FMMCL_MODEL_NREG], const double b[FMMCL_MODEL_NREG],
                 double yy, const int avail[FMMCL_MODEL_NREG], double best[FMMCL_MODEL_NREG]) {
  enum { K = FMMCL_MODEL_NREG };
  double best_r = yy; /* all constants zero */
  for (int j = 0; j < K; j++) best[j] = 0;
  for (unsigned set = 1; set < 1u << K; set++) {
    int use[K], ok = 1;
    for (int j = 0; j < K; j++) {
      use[j] = (set >> j) & 1;
      if (use[j] && !avail[j]) ok = 0;
    }
    double c[K];
    if (!ok || !solve(A, b, use, c)) continue;
    for (int j = 0; j < K; j++)
      if (c[j] < 0) ok = 0;
    if (!ok) continue;
    double r = yy; /* |y - Xc|^2 = y'y - 2 c'b + c'Ac */
    for (int i = 0; i < K; i++) {
      r -= 2 * c[i] * b[i];
      for (int j = 0; j < K; j++) r += c[i] * A[i][j] * c[j];
    }
    if (r < best_r * (1 - 1e-12)) {
      best_r = r;
      memcpy(best, c, sizeof c);
    }
  }
}

void fmmcl_model_fit_samples(const fmmcl_model_sample *samples, size_t n, size_t real_size,
                             fmmcl_model_precision *mp) {
  enum { K = FMMCL_MODEL_NREG };
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) {
    double A[K][K] = {{0}}, b[K] = {0}, yy = 0;
    for (size_t i = 0; i < n; i++) {
      const fmmcl_model_sample *s = &samples[i];
      double x[K];
      fmmcl_model_regressors(mp, real_size, s->order, s->work, s->n_sources, s->n_targets, ph, x);
      const double y = s->seconds[ph], f = y > 1e-5 ? y : 1e-5, wt = 1 / (f * f);
      yy += wt * y * y;
      for (int r = 0; r < K; r++) {
        b[r] += wt * x[r] * y;
        for (int q = 0; q < K; q++) A[r][q] += wt * x[r] * x[q];
      }
    }
    /* unit diagonal, so the singularity test is scale-free */
    double scale[K], c[K];
    int avail[K];
    for (int r = 0; r < K; r++) {
      avail[r] = A[r][r] > 0;
      scale[r] = avail[r] ? 1 / sqrt(A[r][r]) : 0;
    }
    for (int r = 0; r < K; r++) {
      b[r] *= scale[r];
      for (int q = 0; q < K; q++) A[r][q] *= scale[r] * scale[q];
    }
    nnls((const double(*)[K])A, b, yy, avail, c);
    for (int r = 0; r < K; r++) mp->c[ph][r] = c[r] * scale[r];
  }
  mp->fitted = 1;
  mp->n_samples = n;
}

double fmmcl_model_predict(const fmmcl_model_precision *mp, size_t real_size, int order,
                           const double work[FMMCL_MODEL_NWORK], size_t n_sources, size_t n_targets,
                           double seconds[FMMCL_MODEL_NPHASES]) {
  double total = 0;
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) {
    double x[FMMCL_MODEL_NREG], t = 0;
    fmmcl_model_regressors(mp, real_size, order, work, n_sources, n_targets, ph, x);
    for (int r = 0; r < FMMCL_MODEL_NREG; r++) t += mp->c[ph][r] * x[r];
    if (seconds) seconds[ph] = t;
    if (ph != FMMCL_MODEL_COMBINE) total += t;
  }
  return total;
}
