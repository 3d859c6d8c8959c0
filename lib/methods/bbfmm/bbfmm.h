/* bbfmm.h — black-box Chebyshev FMM (Fong & Darve) on a uniform octree or
 * the adaptive one of tree3d.h (U/V/W/X lists): the kernels, Chebyshev
 * interpolation, the tree, the M2L operators (dense and SVD-compressed), the
 * plain-C references and the device driver's state. */
#ifndef FMMCL_BBFMM_H
#define FMMCL_BBFMM_H

#include <stddef.h>
#include <stdint.h>

#include "fmmcl.h"

#define FMMCL_BBFMM_MIN_ORDER 2
#define FMMCL_BBFMM_MAX_ORDER 10
#define FMMCL_BBFMM_N_TRANSFER 316 /* |t|_inf in 2..3: the V list of a uniform tree */

/* The kernel K(d), d = target - source, r = |d|: which function, its
 * parameter and, for user kernels, the OpenCL C expression. */
typedef struct fmmcl_bbfmm_kfun {
  fmmcl_bbfmm_kernel kind; /* never FMMCL_BBFMM_PLAN_KERNEL here */
  double param;            /* c (multiquadrics), k (Yukawa), sigma (Gaussian) */
  const char *expression;  /* USER only */
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
  int depth;              /* >= 2: M2L runs on levels 2..depth */
  double center[3], half; /* root cube */
  size_t ns, nt;
  double *src, *tgt;               /* sorted by leaf, 3 per point */
  size_t *src_perm, *tgt_perm;     /* sorted position -> caller's index */
  uint32_t *src_start, *tgt_start; /* 8^depth + 1 offsets each */
} fmmcl_bbfmm_tree;

/* depth 0: from leaf_size (points per leaf, 0: 64), at least 2. */
/* Points relative to centre c as REAL4 of real size rs, w = 0 (filled by
 * execute with the charges): differences first, so single precision keeps
 * its digits. With frame (3 per leaf) and start (nleaf + 1 offsets into the
 * sorted points), the points of leaf k relative to c + frame[k] instead.
 * NULL when out of memory. */
unsigned char *fmmcl_bbfmm_points_real4(const double *c, const double *x, size_t n, size_t rs,
                                        const double *frame, const uint32_t *start, size_t nleaf);
/* The frame of leaf (lexicographic) of a uniform tree relative to the root
 * centre: its centre, (2 i + 1 - 2^depth) times the leaf half side, exact in
 * single precision (the root half side is a power of two), so that two
 * leaves' frames differ by exactly the float difference of their centres. */
void fmmcl_bbfmm_leaf_frame(const fmmcl_bbfmm_tree *t, size_t leaf, double f[3]);
/* Points per leaf when the options leave it at 0: n^3 / 2, at least 64.
 * The M2L of a leaf costs ~189 rank^2 with rank ~ n^3 / 2, its P2P ~27 q^2,
 * so the balance moves with n^3; the leaf-size sweep behind n^3 / 2 is in
 * benchmarks/README.md (bench-bbfmm). */
static inline int fmmcl_bbfmm_default_leaf(int n3) { return n3 / 2 > 64 ? n3 / 2 : 64; }
fmmcl_status fmmcl_bbfmm_tree_build(size_t ns, const double *src, size_t nt, const double *tgt, int depth,
                                    int leaf_size, fmmcl_bbfmm_tree *t);
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
  double *u, *v; /* n^3 * rank each */
  double *c;     /* 316 * rank * rank */
} fmmcl_bbfmm_m2l;

/* From the 316 dense matrices kt (316 * n^3 * n^3, row-major each): SVD of
 * the fat and the thin stacks (eigenvectors of sum K K^T and sum K^T K),
 * keeping singular values above eps times the largest. symmetric: K(-d) =
 * K(d), so K_-t = K_t^T and V = U (one eigen-decomposition, not two). */
fmmcl_status fmmcl_bbfmm_m2l_compress(int n, double h, const double *kt, double eps, int symmetric,
                                      fmmcl_bbfmm_m2l *m);
/* alpha when K(s d) = s^-alpha K(d) for all s > 0 (1/r: 1, 1/r^2: 2), else 0:
 * then one level's operators give every level's (C scales by 2^alpha per level). */
int fmmcl_bbfmm_kfun_homogeneity(const fmmcl_bbfmm_kfun *k);
void fmmcl_bbfmm_m2l_free(fmmcl_bbfmm_m2l *m);
/* The SVD truncation threshold for order n (relative singular value). */
double fmmcl_bbfmm_svd_eps(int n, fmmcl_precision precision);

/* ---- plain-C reference ---------------------------------------------------- */

/* The whole bbFMM on the host: potential[nt] in the caller's order.
 * m2l == NULL: dense M2L (K_t applied uncompressed); else m2l[l] for
 * levels l = 2..depth (index l). Needs a built-in kernel. */
fmmcl_status fmmcl_bbfmm_reference(const fmmcl_bbfmm_kfun *k, int n, const fmmcl_bbfmm_tree *t,
                                   fmmcl_bbfmm_m2l *const *m2l, const double *charges, double *potential);

/* ---- for tests (bbfmm_debug.c) ---------------------------------------------- */

/* The reference, also copying each level's node multipoles and locals
 * (8^l cells lexicographic x n^3) into w_out[l], l_out[l] where non-NULL. */
fmmcl_status fmmcl_bbfmm_reference_levels(const fmmcl_bbfmm_kfun *k, int n, const fmmcl_bbfmm_tree *t,
                                          fmmcl_bbfmm_m2l *const *m2l, const double *charges,
                                          double *potential, double **w_out, double **l_out);
/* A plan's tree, and after an execution a level's multipoles (which 0) or
 * locals (which 1) in the reference's layout; its M2L operators as doubles. */
const fmmcl_bbfmm_tree *fmmcl_bbfmm_plan_tree(fmmcl_plan plan);
fmmcl_status fmmcl_bbfmm_debug_cells(fmmcl_plan plan, int level, int which, double *out);
fmmcl_status fmmcl_bbfmm_debug_m2l(fmmcl_plan plan, int level, fmmcl_bbfmm_m2l *m);

/* bbfmm.cl's tuned parameters at nord Chebyshev nodes (kernel "bbfmm",
 * class "p<nord>"): the -D string and the P2P work-group size. */
fmmcl_status fmmcl_bbfmm_params(fmmcl_context ctx, fmmcl_precision precision, int nord, size_t *p2p_wgs,
                                char *defines, size_t len);

#endif /* FMMCL_BBFMM_H */

/* ---- the device plan (bbfmm_plan.c, bbfmm_operators.c, bbfmm_execute.c) ---- */
#include "core/internal.h"
#include "linalg/linalg.h"

#define FMMCL_BBFMM_MAX_DEPTH 12 /* the adaptive tree; the uniform one stops at 8 */

/* One level's device data. Cells live in the padded parity layout (see
 * slot_of in cl/bbfmm.cl): slots = 8 (2^(l-1) + 2)^3 columns. */
typedef struct fmmcl_bbfmm_level {
  size_t pp;    /* padded parent cells per class: (2^(l-1) + 2)^3 */
  size_t slots; /* 8 pp */
  size_t guard; /* zero columns before and after the compressed multipoles */
  int rank;
  cl_mem w, l;    /* n^3 x slots: node multipoles, node locals */
  cl_mem wc, lc;  /* rank x (slots + 2 guard), rank x slots: compressed */
  cl_mem u, v, c; /* the level's M2L operators (fmmcl_bbfmm_m2l) */
  /* the batched M2L: 216 groups (source class, parent shift) of <= 8 GEMMs */
  int n_groups;
  int group_size[216];
  size_t *a_off, *b_off, *c_off; /* 216 * 8 each */
} fmmcl_bbfmm_level;

/* The adaptive path (bbfmm_adaptive.c): tree3d.h's octree and U/V/W/X lists;
 * multipoles and locals as n^3 x n_cells columns. */
#include "tree/tree3d.h"
typedef struct fmmcl_bbfmm_adaptive {
  fmmcl_tree3d *tree;
  fmmcl_tree3d_fmm_lists lists;
  double center[3];    /* root centre: every frame is relative to it */
  double unit;         /* frames are multiples of it: exact in float, and so are their differences */
  double *frame;       /* per cell: its frame (3 per cell), the cell's centre rounded to a multiple of unit */
  size_t entries[4];   /* U, V, W, X list entries */
  size_t n_p2m, n_l2p; /* leaves with sources, with targets */
  size_t parent_begin[FMMCL_BBFMM_MAX_DEPTH + 2]; /* non-leaf cells of level l: parents[b[l] .. b[l+1]) */
  cl_kernel k_p2m, k_m2m, k_l2l, k_m2l, k_p2l, k_m2p, k_l2p;
  /* geo: per cell its centre relative to its frame and its half side; cframe: the frames */
  cl_mem src_range, tgt_range, geo, cframe, child, oct, p2m_cells, l2p_cells, parents;
  cl_mem eb, ea, wstart, wsrc, xstart, xsrc; /* V list pairs (target, source) by level, then t */
  size_t *t_first; /* pairs of level l, vector t: [t_first[l*317 + t], t_first[l*317 + t + 1]) */
  cl_mem w, l, wc, lc;
} fmmcl_bbfmm_adaptive;

typedef struct fmmcl_bbfmm_state {
  fmmcl_bbfmm_kfun k;
  char *expression; /* owned copy of a user expression */
  int n, n3;
  size_t real_size;
  fmmcl_bbfmm_tree tree;
  cl_program program;
  cl_kernel k_matrix, k_p2m, k_m2m, k_l2l, k_l2p, k_p2p;
  /* src, tgt: points relative to their leaf's frame; frame: per leaf (P2P's numbering) as REAL4 */
  cl_mem src, tgt, src_start, tgt_start, cluster, nbr_start, nbr_index, tk, schild, nodes, pot, frame;
  double frame_size; /* the uniform tree's: the leaves' half diagonal (world units) */
  size_t n_clusters, p2p_wgs;
  char defines[96]; /* bbfmm.cl's tuned -D values: WGS (= p2p_wgs), TILE */
  fmmcl_bbfmm_level lv[FMMCL_BBFMM_MAX_DEPTH + 1];
  unsigned char *src_host; /* sorted sources as REAL4 (charge filled per execute) */
  unsigned char *pot_host; /* sorted potentials as REAL */
  double work_p2p, work_m2l, work_m2m;
  int m2l_from_cache[FMMCL_BBFMM_MAX_DEPTH + 1];
  fmmcl_bbfmm_adaptive *ad; /* non-NULL: the adaptive path (tree: depth, half, center only) */
} fmmcl_bbfmm_state;

/* The state of a plan with a bbFMM kernel (the bbFMM's, and the direct
 * sum's of bbfmm_direct.c): zeroed, as plan->impl, with the options'
 * kernel function, its user expression copied into s->expression; refused
 * with the message no_gradient when the options ask for the gradient. */
fmmcl_status fmmcl_bbfmm_state_new(fmmcl_plan plan, const char *no_gradient, fmmcl_bbfmm_state **out);
/* The sorted points as REAL4 relative to center (plus frame[k] for the
 * points of leaf k, start offsets src_start and tgt_start, when frame is
 * not NULL): sources on the host (src_host, charges filled per execute) and
 * the device (src), targets on the device (tgt); the nleaf frames as REAL4
 * (zeros when frame is NULL) for the P2P kernel (frame); and room for the
 * potentials (pot_host, pot). */
fmmcl_status fmmcl_bbfmm_point_buffers(fmmcl_context ctx, fmmcl_bbfmm_state *s, const double center[3],
                                       size_t nleaf, const double *frame, const uint32_t *src_start,
                                       const uint32_t *tgt_start, const double *sources, size_t ns,
                                       const double *targets, size_t nt);
/* The adaptive tree's frame size of a point (see fmmcl_method_ops.frame_size). */
double fmmcl_bbfmm_adaptive_frame_size(const fmmcl_bbfmm_adaptive *a, int target, size_t index);
/* A plan's destroy: releases all the state holds and the state. */
void fmmcl_bbfmm_destroy(fmmcl_plan plan);

/* The adaptive path: tree, lists and device data (after the program is
 * built), the M2L work space (after fmmcl_bbfmm_operators), the phases
 * after P2P, and freeing. */
fmmcl_status fmmcl_bbfmm_adaptive_create(fmmcl_plan plan, fmmcl_bbfmm_state *s, const double *sources,
                                         const double *targets);
fmmcl_status fmmcl_bbfmm_adaptive_finish(fmmcl_plan plan, fmmcl_bbfmm_state *s);
fmmcl_status fmmcl_bbfmm_adaptive_phases(fmmcl_plan plan, fmmcl_bbfmm_state *s, fmmcl_event_log *log);
void fmmcl_bbfmm_adaptive_destroy(fmmcl_bbfmm_adaptive *a);
/* Whether points this uniform tree holds call for the adaptive tree: more
 * than half of its leaves empty. FMMCL_BBFMM_TREE=uniform|adaptive overrides. */
int fmmcl_bbfmm_want_adaptive(const fmmcl_bbfmm_tree *t);
/* The plan's tree kind (1 adaptive, 0 uniform) and, adaptive, its U, V, W,
 * X list entries (else zeros). */
int fmmcl_bbfmm_plan_lists(fmmcl_plan plan, size_t entries[4]);
/* The adaptive bbFMM on the host (dense M2L, double) for a built-in kernel,
 * on the tree fmmcl_tree3d_build(leaf_size, FMMCL_BBFMM_MAX_DEPTH) gives:
 * potential[nt] in the caller's order (tgt NULL: the sources); its lists'
 * entries (U, V, W, X) in list_entries when non-NULL. */
fmmcl_status fmmcl_bbfmm_adaptive_reference(const fmmcl_bbfmm_kfun *k, int n, size_t ns, const double *src,
                                            size_t nt, const double *tgt, size_t leaf_size,
                                            const double *charges, double *potential, size_t list_entries[4]);

/* The code the plan's program gets before cl/bbfmm.cl: bbfmm_kernel() and
 * the r = 0 rule; malloc'ed. */
char *fmmcl_bbfmm_prelude(const fmmcl_bbfmm_kfun *k, int single);
/* Builds (or loads from the disk cache) the M2L operators of every level and
 * uploads them; *from_cache per level when non-NULL. */
fmmcl_status fmmcl_bbfmm_operators(fmmcl_plan plan, fmmcl_bbfmm_state *s);
/* The disk cache key of one level's operators. */
uint64_t fmmcl_bbfmm_m2l_cache_key(const fmmcl_bbfmm_state *s, double h, double eps);
fmmcl_status fmmcl_bbfmm_execute(fmmcl_plan plan, const double *charges, double *potential, double *gradient);
