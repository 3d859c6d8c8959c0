/* fgt_reference.c — the plain-C (OpenMP) FGT: each operator (Hermite
 * coefficients, Hermite evaluation, Taylor coefficients, Hermite-to-Taylor
 * translation, Taylor evaluation) and the whole sum, in double precision,
 * on the same boxes and lists as the device plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/fgt/fgt.h"

/* h_n(t) = (-1)^n d^n/dt^n exp(-t^2), n < count, by the recurrence
 * h_{n+1} = 2t h_n - 2n h_{n-1}. */
static void hermite_functions(double t, int count, double *h) {
  h[0] = exp(-t * t);
  if (count > 1) h[1] = 2 * t * h[0];
  for (int n = 1; n + 1 < count; n++) h[n + 1] = 2 * t * h[n] - 2 * n * h[n - 1];
}

/* prod_k tab[k][alpha_k + off_k] with rows of length stride */
static double product(const double *tab, int stride, const unsigned char *a, const unsigned char *off,
                      int dim) {
  double r = 1;
  for (int k = 0; k < dim; k++) r *= tab[k * stride + a[k] + (off ? off[k] : 0)];
  return r;
}

void fmmcl_fgt_ref_hermite_coefs(const fmmcl_fgt_setup *s, size_t b, const double *q, double *A) {
  const int dim = s->par.dim, p = s->par.p, P = s->par.nterms;
  double pw[FMMCL_MAX_DIM * FMMCL_FGT_MAX_P];
  memset(A, 0, P * sizeof *A);
  for (size_t i = s->src.start[b]; i < s->src.start[b + 1]; i++) {
    for (int k = 0; k < dim; k++) { /* v^n / n! */
      double v = s->src.x[i * dim + k] - s->src.centre[b * dim + k];
      pw[k * p] = 1;
      for (int n = 1; n < p; n++) pw[k * p + n] = pw[k * p + n - 1] * v / n;
    }
    for (int t = 0; t < P; t++) A[t] += q[i] * product(pw, p, s->alpha + t * dim, NULL, dim);
  }
}

double fmmcl_fgt_ref_hermite_eval(const fmmcl_fgt_params *par, const unsigned char *alpha, const double *A,
                                  const double *c, const double *y) {
  const int dim = par->dim, p = par->p;
  double h[FMMCL_MAX_DIM * FMMCL_FGT_MAX_P], sum = 0;
  for (int k = 0; k < dim; k++) hermite_functions(y[k] - c[k], p, h + k * p);
  for (int t = 0; t < par->nterms; t++) sum += A[t] * product(h, p, alpha + t * dim, NULL, dim);
  return sum;
}

void fmmcl_fgt_ref_taylor_add(const fmmcl_fgt_setup *s, size_t b, const double *q, const double *cT,
                              double *B) {
  const int dim = s->par.dim, p = s->par.p;
  double h[FMMCL_MAX_DIM * FMMCL_FGT_MAX_P];
  for (size_t i = s->src.start[b]; i < s->src.start[b + 1]; i++) {
    for (int k = 0; k < dim; k++) { /* h_n(v) / n! */
      hermite_functions(s->src.x[i * dim + k] - cT[k], p, h + k * p);
      double f = 1;
      for (int n = 1; n < p; n++) {
        f /= n;
        h[k * p + n] *= f;
      }
    }
    for (int t = 0; t < s->par.nterms; t++) B[t] += q[i] * product(h, p, s->alpha + t * dim, NULL, dim);
  }
}

void fmmcl_fgt_ref_h2t_add(const fmmcl_fgt_params *par, const unsigned char *alpha, const double *A,
                           const double *cS, const double *cT, double *B) {
  const int dim = par->dim, p = par->p, P = par->nterms, w = 2 * p - 1;
  double h[FMMCL_MAX_DIM * (2 * FMMCL_FGT_MAX_P)];
  for (int k = 0; k < dim; k++) hermite_functions(cT[k] - cS[k], w, h + k * w);
  for (int b = 0; b < P; b++) {
    const unsigned char *beta = alpha + b * dim;
    double sum = 0, f = 1;
    int order = 0;
    for (int a = 0; a < P; a++) sum += A[a] * product(h, w, alpha + a * dim, beta, dim);
    for (int k = 0; k < dim; k++) {
      order += beta[k];
      for (int n = 2; n <= beta[k]; n++) f *= n;
    }
    B[b] += (order & 1 ? -sum : sum) / f;
  }
}

double fmmcl_fgt_ref_taylor_eval(const fmmcl_fgt_params *par, const unsigned char *alpha, const double *B,
                                 const double *c, const double *y) {
  const int dim = par->dim, p = par->p;
  double pw[FMMCL_MAX_DIM * FMMCL_FGT_MAX_P], sum = 0;
  for (int k = 0; k < dim; k++) {
    pw[k * p] = 1;
    for (int n = 1; n < p; n++) pw[k * p + n] = pw[k * p + n - 1] * (y[k] - c[k]);
  }
  for (int t = 0; t < par->nterms; t++) sum += B[t] * product(pw, p, alpha + t * dim, NULL, dim);
  return sum;
}

void fmmcl_fgt_ref_hermite_phase(const fmmcl_fgt_setup *s, const double *A, double *pot) {
  const int dim = s->par.dim;
  const size_t P = (size_t)s->par.nterms;
  const size_t *ls = s->list_start[FMMCL_FGT_HERMITE];
#pragma omp parallel for schedule(dynamic, 4)
  for (size_t t = 0; t < s->tgt.nbox; t++)
    for (size_t i = s->tgt.start[t]; i < s->tgt.start[t + 1]; i++) {
      double sum = 0;
      for (size_t j = ls[t]; j < ls[t + 1]; j++) {
        const uint32_t b = s->list[FMMCL_FGT_HERMITE][j];
        sum += fmmcl_fgt_ref_hermite_eval(&s->par, s->alpha, A + s->hslot[b] * P, s->src.centre + b * dim,
                                          s->tgt.x + i * dim);
      }
      pot[i] = sum;
    }
}

/* Direct sum of source box b at scaled point y. */
static double direct_box(const fmmcl_fgt_setup *s, size_t b, const double *q, const double *y) {
  const int dim = s->par.dim;
  double sum = 0;
  for (size_t j = s->src.start[b]; j < s->src.start[b + 1]; j++) {
    double r2 = 0;
    for (int k = 0; k < dim; k++) {
      double d = s->src.x[j * dim + k] - y[k];
      r2 += d * d;
    }
    sum += q[j] * exp(-r2);
  }
  return sum;
}

fmmcl_status fmmcl_fgt_ref_execute(const fmmcl_fgt_setup *s, const double *charges, double *potential) {
  const int dim = s->par.dim;
  const size_t P = (size_t)s->par.nterms, ns = s->src.n, nt = s->tgt.n;
  double *q = malloc(ns * sizeof *q), *pot = malloc(nt * sizeof *pot);
  double *A = calloc(s->nh * P + 1, sizeof *A), *B = calloc(s->ntay * P + 1, sizeof *B);
  if (!q || !pot || !A || !B) {
    free(q);
    free(pot);
    free(A);
    free(B);
    return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for the FGT reference");
  }
  for (size_t i = 0; i < ns; i++) q[i] = charges[s->src.perm[i]];
#pragma omp parallel for schedule(dynamic, 4)
  for (size_t h = 0; h < s->nh; h++) fmmcl_fgt_ref_hermite_coefs(s, s->hbox[h], q, A + h * P);
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t m = 0; m < s->ntay; m++) {
    const size_t t = s->tbox[m];
    const double *cT = s->tgt.centre + t * dim;
    for (size_t j = s->list_start[FMMCL_FGT_TAYLOR][t]; j < s->list_start[FMMCL_FGT_TAYLOR][t + 1]; j++)
      fmmcl_fgt_ref_taylor_add(s, s->list[FMMCL_FGT_TAYLOR][j], q, cT, B + m * P);
    for (size_t j = s->list_start[FMMCL_FGT_H2T][t]; j < s->list_start[FMMCL_FGT_H2T][t + 1]; j++) {
      const uint32_t b = s->list[FMMCL_FGT_H2T][j];
      fmmcl_fgt_ref_h2t_add(&s->par, s->alpha, A + s->hslot[b] * P, s->src.centre + b * dim, cT, B + m * P);
    }
  }
  fmmcl_fgt_ref_hermite_phase(s, A, pot);
#pragma omp parallel for schedule(dynamic, 4)
  for (size_t t = 0; t < s->tgt.nbox; t++)
    for (size_t i = s->tgt.start[t]; i < s->tgt.start[t + 1]; i++) {
      const double *y = s->tgt.x + i * dim;
      double sum = 0;
      for (size_t j = s->list_start[FMMCL_FGT_DIRECT][t]; j < s->list_start[FMMCL_FGT_DIRECT][t + 1]; j++)
        sum += direct_box(s, s->list[FMMCL_FGT_DIRECT][j], q, y);
      if (s->tslot[t] >= 0)
        sum += fmmcl_fgt_ref_taylor_eval(&s->par, s->alpha, B + s->tslot[t] * P, s->tgt.centre + t * dim, y);
      pot[i] += sum;
    }
  for (size_t i = 0; i < nt; i++) potential[s->tgt.perm[i]] = pot[i];
  free(q);
  free(pot);
  free(A);
  free(B);
  return FMMCL_SUCCESS;
}
