/* bench_fmm3d_flops.c — flops per unit of work of each 3D Laplace operator,
 * the model behind bench-fmm3d's GFLOP/s (Yokota & Barba, Figure 7). */
#include "bench_fmm3d.h"

#include <string.h>

const char *const bench_fmm3d_ops[BENCH_FMM3D_N_OPS] = {"p2m", "m2m", "m2l", "p2l",
                                                        "l2l", "l2p", "m2p", "p2p"};

/* Coefficients (n, m >= 0) of an expansion of order p. */
static double ncoef(int p) { return (p + 1.0) * (p + 2.0) / 2.0; }

/* Complex multiply-adds of one M2M shift: the kernel's (n, m; k, u) loop. */
static double m2m_terms(int p) {
  double t = 0;
  for (int n = 0; n <= p; n++)
    for (int m = 0; m <= n; m++)
      for (int k = 0; k <= n; k++) {
        int lo = -k > m - (n - k) ? -k : m - (n - k), hi = k < m + (n - k) ? k : m + (n - k);
        if (hi >= lo) t += hi - lo + 1;
      }
  return t;
}

/* Complex multiply-adds of one L2L shift: the kernel's (k, u; j, v) loop. */
static double l2l_terms(int p) {
  double t = 0;
  for (int k = 0; k <= p; k++)
    for (int u = 0; u <= k; u++)
      for (int j = 0; j <= p - k; j++) {
        int lo = -j > -(k + j) - u ? -j : -(k + j) - u, hi = j < (k + j) - u ? j : (k + j) - u;
        if (hi >= lo) t += hi - lo + 1;
      }
  return t;
}

/* Useful work, each solid harmonic generated once by its recurrence (10
 * flops a coefficient), a complex multiply-add 8, a field evaluation 34 a
 * coefficient (recurrence, potential, d/dz, the complex x-y gradient). */
double bench_fmm3d_flops_per_unit(const char *op, int p) {
  const double c = ncoef(p);
  if (strcmp(op, "p2p") == 0) return 20;
  if (strcmp(op, "p2m") == 0) return 14 * c + 6;
  if (strcmp(op, "p2l") == 0) return 14 * c + 12;
  if (strcmp(op, "m2m") == 0) return 8 * m2m_terms(p) + 10 * c;
  /* the shift harmonics come from a table built once per plan */
  if (strcmp(op, "m2l") == 0) return 8 * c * (p + 1.0) * (p + 1.0);
  if (strcmp(op, "l2l") == 0) return 8 * l2l_terms(p) + 10 * c;
  if (strcmp(op, "l2p") == 0) return 34 * c + 9;
  if (strcmp(op, "m2p") == 0) return 34 * ncoef(p + 1) + 12;
  return 0;
}

void bench_fmm3d_print_flop_model(FILE *f) {
  fprintf(f,
          "Flop model (per unit of fmmcl_plan_counts; C = (p+1)(p+2)/2 coefficients,\n"
          "C1 = (p+2)(p+3)/2; a harmonic by recurrence = 10 flops,\n"
          "a complex multiply-add = 8, a field evaluation = 34 per coefficient):\n"
          "  p2p  per source-target pair          20 (GPU Gems 3 ch. 31, Yokota-Barba)\n"
          "  p2m  per source                      14 C + 6\n"
          "  m2m  per child-to-parent shift       8 T_m2m(p) + 10 C   (T: the kernel's terms)\n"
          "  m2l  per cell-pair translation       8 C (p+1)^2   (shift harmonics tabulated)\n"
          "  p2l  per (source, cell)              14 C + 12\n"
          "  l2l  per parent-to-child shift       8 T_l2l(p) + 10 C\n"
          "  l2p  per target                      34 C + 9\n"
          "  m2p  per (target, cell)              34 C1 + 12\n"
          "It counts useful work, each harmonic once: the kernels recompute harmonics\n"
          "per work-item, so they issue more instructions than this credits them with.\n"
          "At p = 4, for instance: m2l %.0f, m2m %.0f, l2l %.0f, l2p %.0f flops.\n",
          bench_fmm3d_flops_per_unit("m2l", 4), bench_fmm3d_flops_per_unit("m2m", 4),
          bench_fmm3d_flops_per_unit("l2l", 4), bench_fmm3d_flops_per_unit("l2p", 4));
}
