/* model_fit.c — the per-phase performance model: regressors from each
 * phase's work count (fmmcl_plan_counts' units) over the device's measured
 * peaks, constants fitted by non-negative least squares, and predictions. */
#include <math.h>
#include <string.h>

#include "model.h"

/* In the paper's form, each phase costs a constant (launches) plus its
 * data movement over the bandwidth plus its arithmetic over the U-list
 * peak, so the fitted constants are dimensionless inefficiencies:
 *   p2p               pairs / peak          + points' bytes / bandwidth
 *   p2m l2p m2p p2l   count * ncoef / peak  + count's point bytes / bandwidth
 *   m2m l2l m2l       count * ncoef^2 / peak + two expansions' bytes / bandwidth
 *   upload download   the caller's doubles over the bandwidth (PCIe or host
 *                     copies in practice: the constant absorbs the ratio). */
void fmmcl_model_regressors(const fmmcl_model_precision *mp, size_t real_size, int order,
                            const double work[FMMCL_MODEL_NPHASES], size_t n_sources,
                            size_t n_targets, int phase, double x[FMMCL_MODEL_NREG]) {
  const double ncoef = (order + 1.0) * (order + 2.0) / 2.0;
  const double peak = mp->pairs_per_s > 0 ? mp->pairs_per_s : 1;
  const double bw = mp->bytes_per_s > 0 ? mp->bytes_per_s : 1;
  const double rs = (double)real_size, w = work[phase];
  x[0] = w > 0 ? 1 : 0; /* a phase with no work launches nothing */
  switch (phase) {
    case FMMCL_MODEL_P2P:
      x[1] = (n_sources + n_targets) * 4.0 * rs / bw;
      x[2] = w / peak;
      break;
    case FMMCL_MODEL_P2M: case FMMCL_MODEL_L2P: case FMMCL_MODEL_M2P: case FMMCL_MODEL_P2L:
      x[1] = w * 4.0 * rs / bw;
      x[2] = w * ncoef / peak;
      break;
    case FMMCL_MODEL_M2M: case FMMCL_MODEL_L2L: case FMMCL_MODEL_M2L:
      x[1] = w * 2.0 * ncoef * 2.0 * rs / bw;
      x[2] = w * ncoef * ncoef / peak;
      break;
    default: /* upload: charges; download: potential and gradient */
      x[0] = 1;
      x[1] = w * (phase == FMMCL_MODEL_UPLOAD ? 8.0 : 32.0) / bw;
      x[2] = 0;
      break;
  }
}

/* Least squares over the columns in use (use[j]); 0 when singular. */
static int solve(double A[FMMCL_MODEL_NREG][FMMCL_MODEL_NREG], const double b[FMMCL_MODEL_NREG],
                 const int use[FMMCL_MODEL_NREG], double c[FMMCL_MODEL_NREG]) {
  enum { K = FMMCL_MODEL_NREG };
  double M[K][K + 1];
  int idx[K], k = 0;
  for (int j = 0; j < K; j++)
    if (use[j]) idx[k++] = j;
  for (int r = 0; r < k; r++) {
    for (int s = 0; s < k; s++) M[r][s] = A[idx[r]][idx[s]];
    M[r][k] = b[idx[r]];
  }
  for (int col = 0; col < k; col++) { /* Gauss-Jordan, partial pivoting */
    int piv = col;
    for (int r = col + 1; r < k; r++)
      if (fabs(M[r][col]) > fabs(M[piv][col])) piv = r;
    if (!(fabs(M[piv][col]) > 1e-12)) return 0; /* columns are scaled to unit diagonal */
    for (int s = 0; s <= k; s++) { double t = M[col][s]; M[col][s] = M[piv][s]; M[piv][s] = t; }
    for (int r = 0; r < k; r++) {
      if (r == col) continue;
      const double f = M[r][col] / M[col][col];
      for (int s = col; s <= k; s++) M[r][s] -= f * M[col][s];
    }
  }
  for (int j = 0; j < K; j++) c[j] = 0;
  for (int r = 0; r < k; r++) c[idx[r]] = M[r][k] / M[r][r];
  return 1;
}

void fmmcl_model_fit_samples(const fmmcl_model_sample *samples, size_t n, size_t real_size,
                             fmmcl_model_precision *mp) {
  enum { K = FMMCL_MODEL_NREG };
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) {
    double A[K][K] = {{0}}, b[K] = {0};
    for (size_t i = 0; i < n; i++) {
      const fmmcl_model_sample *s = &samples[i];
      double x[K];
      fmmcl_model_regressors(mp, real_size, s->order, s->work, s->n_sources, s->n_targets, ph, x);
      for (int r = 0; r < K; r++) {
        b[r] += x[r] * s->seconds[ph];
        for (int q = 0; q < K; q++) A[r][q] += x[r] * x[q];
      }
    }
    /* unit diagonal, so the singularity test is scale-free */
    double scale[K];
    int use[K];
    for (int r = 0; r < K; r++) {
      scale[r] = A[r][r] > 0 ? 1 / sqrt(A[r][r]) : 0;
      use[r] = A[r][r] > 0;
    }
    for (int r = 0; r < K; r++) {
      b[r] *= scale[r];
      for (int q = 0; q < K; q++) A[r][q] *= scale[r] * scale[q];
    }
    /* non-negative: a negative cost has no meaning and would let a
     * prediction fall as the work grows; drop such columns and refit.
     * Columns that are (nearly) dependent are dropped from the last. */
    double c[K] = {0};
    for (int iter = 0; iter < K + 1; iter++) {
      int ok = solve(A, b, use, c), neg = -1;
      if (!ok) {
        for (int r = K - 1; r >= 0; r--)
          if (use[r]) { use[r] = 0; break; }
        continue;
      }
      for (int r = 0; r < K; r++)
        if (use[r] && c[r] < 0 && (neg < 0 || c[r] < c[neg])) neg = r;
      if (neg < 0) break;
      use[neg] = 0;
      c[neg] = 0;
    }
    for (int r = 0; r < K; r++) mp->c[ph][r] = use[r] ? c[r] * scale[r] : 0;
  }
  mp->fitted = 1;
  mp->n_samples = n;
}

double fmmcl_model_predict(const fmmcl_model_precision *mp, size_t real_size, int order,
                           const double work[FMMCL_MODEL_NPHASES], size_t n_sources, size_t n_targets,
                           double seconds[FMMCL_MODEL_NPHASES]) {
  double total = 0;
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) {
    double x[FMMCL_MODEL_NREG], t = 0;
    fmmcl_model_regressors(mp, real_size, order, work, n_sources, n_targets, ph, x);
    for (int r = 0; r < FMMCL_MODEL_NREG; r++) t += mp->c[ph][r] * x[r];
    if (seconds) seconds[ph] = t;
    total += t;
  }
  return total;
}
