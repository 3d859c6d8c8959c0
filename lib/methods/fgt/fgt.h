/* fgt.h — the fast Gauss transform (Greengard & Strain; Cruz, Layton & Barba
 * 2011 sec. 4.2): parameters from a tolerance, the box grid and the per-pair
 * interaction lists shared by the device plan and the plain-C reference. */
#ifndef FMMCL_FGT_H
#define FMMCL_FGT_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"

/* All FGT arithmetic runs in scaled coordinates u = x / h, h = sqrt(2) sigma,
 * where the kernel is exp(-|u_y - u_x|^2). The four ways a source box S can
 * reach a target box T: */
typedef enum fmmcl_fgt_kind {
  FMMCL_FGT_DIRECT,  /* every pair of points */
  FMMCL_FGT_HERMITE, /* Hermite expansion about S's centre, evaluated at T's targets */
  FMMCL_FGT_TAYLOR,  /* S's sources into a Taylor expansion about T's centre */
  FMMCL_FGT_H2T,     /* S's Hermite expansion translated into T's Taylor expansion */
  FMMCL_FGT_KINDS,
  FMMCL_FGT_AUTO = FMMCL_FGT_KINDS /* choose per pair by work estimate */
} fmmcl_fgt_kind;

/* Largest truncation the plan accepts (the multi-index table stays small). */
#define FMMCL_FGT_MAX_P 40

/* The truncation and grid the tolerance chose, and the bound they give. */
typedef struct fmmcl_fgt_params {
  int dim;
  int p;              /* multi-indices |alpha| < p */
  int nterms;         /* C(p - 1 + dim, dim) */
  double h;           /* sqrt(2) sigma */
  double side;        /* box side in scaled units */
  int h2t;            /* 0: the H2T bound exceeds the tolerance at p, translations unused */
  double cutoff;      /* source boxes farther than this (scaled) from a target box are dropped */
  double bound;       /* |error(y)| <= bound * sum_i |q_i| for every target y:
                     * max(truncation bound of the kinds in use, exp(-cutoff^2)) */
  double work;        /* the choice's work model per target, in direct pair evaluations
                     * (uniform density over the extent; what AUTO compares) */
  double direct_work; /* the part of work in direct pairs and box visits (the rest: expansions) */
} fmmcl_fgt_params;

/* Bound per unit charge of one interaction kind truncated at p, for boxes of
 * side `side` (scaled), dim dimensions. Rigorous: the Lagrange remainder
 * of the truncated expansions with the largest |h_n| computed once on a
 * grid (fgt_params.c says how, and why it is tighter than the Cramer
 * bound this replaced). */
double fmmcl_fgt_truncation_bound(int kind, int p, double side, int dim);

/* Chooses side, p and cutoff for tolerance tol (> 0), or for a given order
 * p > 0 with tol = 0; extent[] is the data's scaled extent per dimension,
 * n the number of sources (the work model's density), max_p the largest p
 * the precision allows (0: FMMCL_FGT_MAX_P). */
fmmcl_status fmmcl_fgt_choose(fmmcl_context ctx, int dim, double sigma, double tol, int order, size_t n,
                              const double *extent, int max_p, fmmcl_fgt_params *out);

/* The cut-off direct sum's geometry for tolerance tol (0: 1e-6): the
 * FGT's cut-off (exp(-cutoff^2) <= tol, the same bound), no expansions
 * (p = 1), and the box side of least predicted time: seconds(arg, par)'s
 * execution (the model's, fmmcl_model_gauss_cutoff_params) plus the lists'
 * creation spread over `executions` (0: execution alone). */
typedef double (*fmmcl_fgt_seconds_fn)(const void *arg, const struct fmmcl_fgt_params *par);
fmmcl_status fmmcl_fgt_choose_cutoff(fmmcl_context ctx, int dim, double sigma, double tol, size_t n,
                                     const double *extent, fmmcl_fgt_seconds_fn seconds, const void *arg,
                                     double executions, fmmcl_fgt_params *out);

/* Executions a Gaussian plan is taken to serve where opt.executions is 0. */
#define FMMCL_GAUSS_DEFAULT_EXECUTIONS 100

/* The list entries (pairs of occupied boxes) and the seconds of building
 * them past which a box side is not worth its savings: about 200 MB of
 * lists, or plan creation beyond what the execution gains. */
#define FMMCL_FGT_MAX_LIST_ENTRIES 5e7
#define FMMCL_FGT_MAX_LIST_SECONDS 10.0

/* The host's interaction lists for one box side (fgt_setup.c builds them):
 * the entries they hold and the seconds they take to build. */
typedef struct fmmcl_fgt_lists {
  double entries;
  double seconds;
} fmmcl_fgt_lists;
fmmcl_fgt_lists fmmcl_fgt_lists_estimate(int dim, double cutoff, double side, size_t n, const double *extent);
/* Whether lists stay within FMMCL_FGT_MAX_LIST_ENTRIES and
 * FMMCL_FGT_MAX_LIST_SECONDS. */
int fmmcl_fgt_lists_affordable(fmmcl_fgt_lists l);

/* The cut-off sum's work model per target (direct pair evaluations, visits
 * included) in boxes of side `side` (scaled), n sources uniform over
 * extent; *visits: the occupied source boxes a target visits, *lists: the
 * lists it needs (either may be NULL). */
double fmmcl_fgt_cutoff_work(int dim, double cutoff, double side, size_t n, const double *extent,
                             double *visits, fmmcl_fgt_lists *lists);

/* Whether an FGT of order p in dim dimensions keeps its expansions within
 * local_bytes of local memory in REALs of real_size bytes (else the plan
 * sums every pair within the cut-off directly). */
int fmmcl_fgt_expansions_fit(int dim, int p, int nterms, size_t real_size, size_t local_bytes);

/* The graded lexicographic multi-indices |alpha| < p in dim dimensions:
 * alpha[t * dim + k] for term t; malloc'ed, nterms entries. */
unsigned char *fmmcl_fgt_multi_indices(int p, int dim, int *nterms);

/* Terms of order p in dim dimensions, C(p - 1 + dim, dim): shared with the
 * FGT's tuning space, whose class rules depend on it. */
int fmmcl_fgt_nterms(int p, int dim);

/* Points sorted by box, boxes sorted lexicographically by grid position. */
typedef struct fmmcl_fgt_boxes {
  size_t n; /* points */
  size_t nbox;
  double *x;      /* sorted scaled coordinates, x[i * dim + k] */
  size_t *perm;   /* perm[i]: caller's index of sorted point i */
  size_t *start;  /* nbox + 1: points of box b are start[b] .. start[b+1]-1 */
  int64_t *cell;  /* nbox * dim grid positions */
  double *centre; /* nbox * dim scaled centres */
  double *frame;  /* nbox * dim: what the device's coordinates of the box are relative to (scaled, from
                   * the setup's origin): the centre rounded to a multiple of the setup's unit */
} fmmcl_fgt_boxes;

/* The frames of b's boxes: ((cell + 1/2) side) rounded to a multiple of
 * unit, a power of two. Frames are then exact in float, and so are their
 * differences, which the kernels add to offsets within a box: a pair of
 * boxes meets as (offset of one) - (offset of the other + frame difference)
 * with every digit of the offsets kept, wherever the data lies. */
fmmcl_status fmmcl_fgt_box_frames(fmmcl_context ctx, const fmmcl_fgt_params *par, double unit,
                                  fmmcl_fgt_boxes *b);
/* The unit of the frames for data spanning extent (scaled) in boxes of
 * side: a power of two near side / 8, larger when the frames would
 * otherwise need more than float's digits. */
double fmmcl_fgt_frame_unit(double side, double extent);
/* Point i of b (sorted, in box box) relative to its box's frame:
 * (x - origin) - frame, in double (rounded to the plan's REAL once). */
static inline double fmmcl_fgt_local(const fmmcl_fgt_boxes *b, const double *origin, int dim, size_t i,
                                     size_t box, int k) {
  return (b->x[i * dim + k] - origin[k]) - b->frame[box * dim + k];
}

/* The whole geometry of one plan. */
typedef struct fmmcl_fgt_setup {
  fmmcl_fgt_params par;
  double origin[FMMCL_MAX_DIM]; /* the grid's corner (scaled) */
  double unit;                  /* the frames' unit (fmmcl_fgt_box_frames) */
  unsigned char *alpha;         /* multi-indices */
  fmmcl_fgt_boxes src, tgt;
  /* per target box, the source boxes of each kind: CSR, list[k][start[k][t] ..] */
  size_t *list_start[FMMCL_FGT_KINDS];
  uint32_t *list[FMMCL_FGT_KINDS];
  /* source boxes that need a Hermite expansion (HERMITE or H2T): hslot[b] or -1 */
  int32_t *hslot;
  uint32_t *hbox;
  size_t nh;
  /* target boxes that need a Taylor expansion (TAYLOR or H2T): tslot[t] or -1 */
  int32_t *tslot;
  uint32_t *tbox;
  size_t ntay;
  double pairs[FMMCL_FGT_KINDS]; /* work: point pairs, (target, box), (source, box), translations */
} fmmcl_fgt_setup;

/* Builds the grid and the lists. force: FMMCL_FGT_AUTO, or one kind for
 * every pair within the cut-off (tests of one operator chain). */
fmmcl_status fmmcl_fgt_setup_build(fmmcl_context ctx, const fmmcl_fgt_params *par, size_t ns,
                                   const double *src, size_t nt, const double *tgt, int force,
                                   fmmcl_fgt_setup *s);
void fmmcl_fgt_setup_free(fmmcl_fgt_setup *s);

/* ---- binning on the device (fgt_bin_device.c, cl/fgt_bin.cl) ---------- */

/* What the device keeps of one binned point set (uint indices). */
typedef struct fmmcl_fgt_device_set {
  cl_mem x;     /* sorted scaled coordinates relative to their box's frame as the plan's REAL, x[k * n + i] */
  cl_mem perm;  /* caller's index of sorted point i */
  cl_mem start; /* nbox + 1 box starts */
  cl_mem owner; /* box of sorted point i */
} fmmcl_fgt_device_set;
typedef struct fmmcl_fgt_device_bins {
  size_t real_size;              /* in: 4 or 8, the REAL of x */
  fmmcl_fgt_device_set src, tgt; /* out */
} fmmcl_fgt_device_bins;

/* Whether ctx's device can bin n points exactly as the host does (fp64). */
int fmmcl_fgt_bin_device_available(fmmcl_context ctx, size_t n);
/* Bins n points (caller's coordinates) on the grid of the given origin
 * (scaled); hi[] is the largest scaled coordinate per axis. Fills b exactly
 * as the host binning would (same boxes, starts, cells, permutation) and
 * leaves *dev on the device (released with fmmcl_fgt_device_set_release). */
fmmcl_status fmmcl_fgt_bin_device(fmmcl_context ctx, const fmmcl_fgt_params *par, const double *origin,
                                  const double *hi, double unit, size_t n, const double *x, size_t real_size,
                                  fmmcl_fgt_boxes *b, fmmcl_fgt_device_set *dev);
void fmmcl_fgt_device_set_release(fmmcl_fgt_device_set *d);
/* fmmcl_fgt_setup_build with the binning on ctx's device when dev is not
 * NULL (FMMCL_ERROR_UNSUPPORTED where fmmcl_fgt_bin_device_available says
 * no); the interaction lists are built on the host from the boxes. */
fmmcl_status fmmcl_fgt_setup_build_device(fmmcl_context ctx, const fmmcl_fgt_params *par, size_t ns,
                                          const double *src, size_t nt, const double *tgt, int force,
                                          fmmcl_fgt_device_bins *dev, fmmcl_fgt_setup *s);

/* Kind forced by FMMCL_FGT_FORCE=direct|hermite|taylor|h2t (tests,
 * benchmarks of one operator); FMMCL_FGT_AUTO when unset. */
int fmmcl_fgt_forced_kind(void);

/* ---- plain-C reference (OpenMP), scaled coordinates ------------------- */

/* Hermite coefficients A[alpha] = sum q (x - c)^alpha / alpha! of source box b;
 * q in sorted order. */
void fmmcl_fgt_ref_hermite_coefs(const fmmcl_fgt_setup *s, size_t b, const double *q, double *A);
/* sum_alpha A[alpha] h_alpha(y - c) */
double fmmcl_fgt_ref_hermite_eval(const fmmcl_fgt_params *par, const unsigned char *alpha, const double *A,
                                  const double *c, const double *y);
/* B[beta] += sum over source box b of q h_beta(x - c_T) / beta! */
void fmmcl_fgt_ref_taylor_add(const fmmcl_fgt_setup *s, size_t b, const double *q, const double *cT,
                              double *B);
/* B[beta] += (-1)^|beta| / beta! sum_alpha A[alpha] h_{alpha+beta}(cT - cS) */
void fmmcl_fgt_ref_h2t_add(const fmmcl_fgt_params *par, const unsigned char *alpha, const double *A,
                           const double *cS, const double *cT, double *B);
/* sum_beta B[beta] (y - c)^beta */
double fmmcl_fgt_ref_taylor_eval(const fmmcl_fgt_params *par, const unsigned char *alpha, const double *B,
                                 const double *c, const double *y);
/* The whole FGT on the host: charges and potential in the caller's order. */
fmmcl_status fmmcl_fgt_ref_execute(const fmmcl_fgt_setup *s, const double *charges, double *potential);
/* The Hermite evaluation alone: every target of every target box against
 * the Hermite list of its box, from coefficients A[hslot * nterms]; pot in
 * sorted target order. OpenMP over targets (the benchmark's CPU reference). */
void fmmcl_fgt_ref_hermite_phase(const fmmcl_fgt_setup *s, const double *A, double *pot);

/* An FGT plan's geometry (NULL for another method): tests run the plain-C
 * reference on exactly the device's boxes and lists. */
const fmmcl_fgt_setup *fmmcl_fgt_plan_setup(fmmcl_plan plan);
/* The device's coefficients after an execution, as doubles: the Hermite
 * moments M[hslot * nterms + t] = sum q (x - c)^alpha_t (no 1/alpha!) and
 * the Taylor coefficients B[tslot * nterms + t]; either may be NULL. */
fmmcl_status fmmcl_fgt_plan_coefficients(fmmcl_plan plan, double *moments, double *taylor);

#endif /* FMMCL_FGT_H */
