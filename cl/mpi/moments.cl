/* moments.cl — the multipole moments of the far cells a rank sends as
 * equivalent charges (libfmmcl_mpi, lib/mpi/mpi_device.c), in double, with
 * the normalisation of lib/mpi/mpi_equivalent.c: M_n^m / a^n = sum_j q_j
 * (r_j / a)^n P_n^m(cos theta_j) e^{-i m phi_j}, P orthonormal.
 *
 * A far cell's points are cut into pieces of at most a few hundred; one
 * work-item per (piece, m) runs the Legendre recurrence in n for its m over
 * the piece's points (O(p) a point, the host code's O(p^2) over all m),
 * and writes that piece's partial moments; a second kernel adds the pieces
 * of each cell, one work-item per moment. Cells are nested and sent at
 * different orders to different ranks, so one cell's moments are computed
 * once, at the highest order any rank asked. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#ifndef MAX_ORDER
#define MAX_ORDER 40
#endif

static inline int lm(int n, int m) { return n * (n + 1) / 2 + m; }

/* coef: A[lm(n, m)] and B[lm(n, m)] of the three-term recurrence in n (each
 * of lm(MAX_ORDER, MAX_ORDER) + 1 entries), then C[m] (P_m^m from
 * P_{m-1}^{m-1}) and D[m] (P_{m+1}^m from P_m^m), MAX_ORDER + 1 each.
 * partial: piece k's moments at piece_out[k], (re, im) per lm(n, m). */
__kernel void mpi_moments_partial(__global const double *x, __global const double *q,
                                  __global const int *piece_far, __global const long *piece_begin,
                                  __global const long *piece_end, __global const long *piece_out,
                                  __global const double4 *far_geom, __global const int *far_order,
                                  __global const double *coef, int n_pieces, __global double *partial) {
  int k = get_global_id(0), m = get_global_id(1);
  if (k >= n_pieces) return;
  int f = piece_far[k], p = far_order[f];
  if (m > p) return;
  const int nt = lm(MAX_ORDER, MAX_ORDER) + 1;
  __global const double *A = coef, *B = coef + nt, *C = coef + 2 * nt, *D = C + MAX_ORDER + 1;
  double4 g = far_geom[f];
  double inv = g.w > 0 ? 1 / g.w : 0;
  double re[MAX_ORDER + 1], im[MAX_ORDER + 1];
  for (int n = m; n <= p; n++) re[n - m] = im[n - m] = 0;
  for (long j = piece_begin[k]; j < piece_end[k]; j++) {
    /* With (u, v, w) the offset over a: q t^m P_m^m e^{-i m phi} is q P_0^0
     * prod(-C[i]) (u - i v)^m, and t^n P_n^m follows in n by a real
     * recurrence in w = t cos(theta) and t^2: no square root, no angle. */
    double u = (x[3 * j] - g.x) * inv, v = (x[3 * j + 1] - g.y) * inv, w = (x[3 * j + 2] - g.z) * inv;
    double t2 = u * u + v * v + w * w;
    double ar = q[j] * 0.28209479177387814, ai = 0; /* sqrt(1 / (4 pi)) */
    for (int i = 1; i <= m; i++) {
      double c = -C[i], r = c * (ar * u + ai * v);
      ai = c * (ai * u - ar * v), ar = r;
    }
    re[0] += ar, im[0] += ai;
    if (m == p) continue;
    double br = D[m] * w * ar, bi = D[m] * w * ai;
    re[1] += br, im[1] += bi;
    for (int n = m + 2; n <= p; n++) {
      double a = A[lm(n, m)], b = B[lm(n, m)] * t2;
      double cr = a * (w * br - b * ar), ci = a * (w * bi - b * ai);
      re[n - m] += cr, im[n - m] += ci;
      ar = br, ai = bi, br = cr, bi = ci;
    }
  }
  __global double *out = partial + piece_out[k];
  for (int n = m; n <= p; n++) out[2 * lm(n, m)] = re[n - m], out[2 * lm(n, m) + 1] = im[n - m];
}

/* One work-item per moment i of all far cells: term_far[i] its cell, whose
 * moments start at far_offset[f] and pieces are far_piece[f] .. far_piece[f + 1]. */
__kernel void mpi_moments_sum(__global const double *partial, __global const int *term_far,
                              __global const long *far_offset, __global const int *far_piece,
                              __global const long *piece_out, long n_terms, __global double *out) {
  long i = get_global_id(0);
  if (i >= n_terms) return;
  int f = term_far[i];
  long t = i - far_offset[f];
  double sr = 0, si = 0;
  for (int k = far_piece[f]; k < far_piece[f + 1]; k++) {
    sr += partial[piece_out[k] + 2 * t];
    si += partial[piece_out[k] + 2 * t + 1];
  }
  out[i] = sr, out[n_terms + i] = si; /* re, then im */
}
