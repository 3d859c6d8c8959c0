/* bbfmm.h — black-box Chebyshev FMM (Fong & Darve) on a uniform octree: the
 * kernels, Chebyshev interpolation, the tree, the M2L operators (dense and
 * SVD-compressed), the plain-C reference and the device driver's state. */
#ifndef FMMCL_BBFMM_H
#define FMMCL_BBFMM_H

#include <stddef.h>
#include <stdint.h>

#include "fmmcl.h"

#define FMMCL_BBFMM_MIN_ORDER 2
#define FMMCL_BBFMM_MAX_ORDER 10
#define FMMCL_BBFMM_N_TRANSFER 316  /* |t|_inf in 2..3: the V list of a uniform tree */

/* The kernel K(d), d = target - source, r = |d|: which function, its
 * parameter and, for user kernels, the OpenCL C expression. */
typedef struct fmmcl_bbfmm_kfun {
  fmmcl_bbfmm_kernel kind;     /* never FMMCL_BBFMM_PLAN_KERNEL here */
  double param;                /* c (multiquadrics), k (Yukawa), sigma (Gaussian) */
  const char *expression;      /* USER only */
} fmmcl_bbfmm_kfun;

/* The kernel a plan's options ask for (resolving FMMCL_BBFMM_PLAN_KERNEL). */
fmmcl_status fmmcl_bbfmm_kfun_from_options(fmmcl_context ctx, const fmmcl_plan_options *o,
                                           fmmcl_bbfmm_kfun *k);
/* K(dx, dy, dz) on the host; NAN for USER (the host cannot run OpenCL C).
 * Zero where the pair is skipped (r = 0 for singular kernels). */
double fmmcl_bbfmm_kfun_eval(const fmmcl_bbfmm_kfun *k, double dx, double dy, double dz);
/* Nonzero when a pair at r = 0 is skipped (1/r, 1/r^2, Yukawa; a user
 * kernel's r = 0 pair counts only when its value is finite). */
int fmmcl_bbfmm_kfun_singular(const fmmcl_bbfmm_kfun *k);

/* ---- Chebyshev interpolation ------------------------------------------ */

/* The n Chebyshev nodes cos((2m+1) pi / 2n), m = 0..n-1, of [-1, 1]. */
void fmmcl_bbfmm_nodes(int n, double *x);
/* w[m] = S_n(x_m, x) = 1/n + 2/n sum_{k=1}^{n-1} T_k(x_m) T_k(x). */
void fmmcl_bbfmm_weights(int n, double x, double *w);
/* The child-parent interpolation table: s[(a*n + m)*n + mc] = S_n(x_m,
 * (a ? 0.5 : -0.5) + 0.5 x_mc) for the lower (a = 0) and upper (a = 1) child. */
void fmmcl_bbfmm_child_table(int n, double *s);

/* ---- the uniform tree ---------------------------------------------------- */

/* Leaves are the 8^depth cells of level depth, in lexicographic order
 * (ix * G + iy) * G + iz, G = 2^depth. The root cube's half width is a power
 * of two, so that trees of similar extent share M2L operators (and their
 * disk cache). */
typedef struct fmmcl_bbfmm_tree {
  int depth;                    /* >= 2: M2L runs on levels 2..depth */
  double center[3], half;       /* root cube */
  size_t ns, nt;
  double *src, *tgt;            /* sorted by leaf, 3 per point */
  size_t *src_perm, *tgt_perm;  /* sorted position -> caller's index */
  uint32_t *src_start, *tgt_start; /* 8^depth + 1 offsets each */
} fmmcl_bbfmm_tree;

/* depth 0: from leaf_size (points per leaf, 0: 64), at least 2. */
fmmcl_status fmmcl_bbfmm_tree_build(size_t ns, const double *src, size_t nt, const double *tgt,
                                    int depth, int leaf_size, fmmcl_bbfmm_tree *t);
void fmmcl_bbfmm_tree_free(fmmcl_bbfmm_tree *t);

/* ---- M2L operators --------------------------------------------------------- */

/* Transfer vector t in [-3, 3]^3 with |t|_inf >= 2 <-> 0..315. */
int fmmcl_bbfmm_transfer_index(int tx, int ty, int tz);
void fmmcl_bbfmm_transfer_vector(int i, int *t);

/* Fills k_t (n^3 x n^3, row = target node) for transfer vector index i at
 * cell half width h: K(h (x_m - x_m') - 2 h t). */
void fmmcl_bbfmm_m2l_dense(const fmmcl_bbfmm_kfun *k, int n, double h, int i, double *k_t);

/* One level's compressed M2L: K_t ~= U C_t V^T with U, V n^3 x rank
 * (column-major: column j at [j * n^3]), C_t rank x rank column-major. */
typedef struct fmmcl_bbfmm_m2l {
  int n, rank;
  double h;
  double *u, *v;                /* n^3 * rank each */
  double *c;                    /* 316 * rank * rank */
} fmmcl_bbfmm_m2l;

/* From the 316 dense matrices kt (316 * n^3 * n^3, row-major each): SVD of
 * the fat and the thin stacks (eigenvectors of sum K K^T and sum K^T K),
 * keeping singular values above eps times the largest. */
fmmcl_status fmmcl_bbfmm_m2l_compress(int n, double h, const double *kt, double eps,
                                      fmmcl_bbfmm_m2l *m);
void fmmcl_bbfmm_m2l_free(fmmcl_bbfmm_m2l *m);
/* Eigen-decomposition of a symmetric d x d matrix a (row-major, destroyed):
 * eigenvalues in w descending, eigenvectors as columns of v (row-major d x d). */
void fmmcl_bbfmm_symmetric_eigen(int d, double *a, double *w, double *v);
/* The SVD truncation threshold for order n (relative singular value). */
double fmmcl_bbfmm_svd_eps(int n, fmmcl_precision precision);

/* ---- plain-C reference ---------------------------------------------------- */

/* The whole bbFMM on the host: potential[nt] in the caller's order.
 * m2l == NULL: dense M2L (K_t applied uncompressed); else m2l[l] for
 * levels l = 2..depth (index l). Needs a built-in kernel. */
fmmcl_status fmmcl_bbfmm_reference(const fmmcl_bbfmm_kfun *k, int n, const fmmcl_bbfmm_tree *t,
                                   fmmcl_bbfmm_m2l *const *m2l, const double *charges,
                                   double *potential);

#endif /* FMMCL_BBFMM_H */
