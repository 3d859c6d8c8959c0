/* fmm2d.h — private to the 2D Laplace FMM (complex expansions on a uniform
 * quadtree): its device state, phases, host reference and test hooks. */
#ifndef FMMCL_FMM2D_H
#define FMMCL_FMM2D_H

#include <complex.h>

#include "core/internal.h"
#include "tree/quadtree2d.h"
#include "tuning/tuning.h"

/* Largest order: float's rounding (about 1e-6 relative) is reached near
 * p = 12, so 24 is ample; double goes to the tables' 40 (order 0.4^41). */
#define FMMCL_FMM2D_MAX_ORDER_SINGLE 24
#define FMMCL_FMM2D_MAX_ORDER_DOUBLE 40

/* The phases of the 2D FMM (FMMCL_PHASE_* bits): all but P2L and M2P. */
#define FMMCL_FMM2D_PHASES \
  (FMMCL_PHASE_P2M | FMMCL_PHASE_M2M | FMMCL_PHASE_M2L | FMMCL_PHASE_L2L | FMMCL_PHASE_L2P | FMMCL_PHASE_P2P)

typedef struct fmm2d_state {
  int order; /* p: NROW = p + 1 coefficients per cell */
  size_t nrow, real_size;
  fmmcl_quadtree2d *tree;
  cl_program exp_program, m2l_program;
  cl_kernel k_p2m, k_m2m, k_l2l, k_l2p, k_m2l, k_reduce, k_p2p;
  cl_kernel k_charges, k_unsort; /* permutations on the device (fmm2d.cl) */
  size_t m2l_wgs, m2l_tpw;       /* -DWGS and -DTPW; the group is fmmcl_m2l2d_group */
  int m2l_fused;                 /* M2L_FUSED=1 (host only): k_m2l is m2l2d_fused, no
                                * k_reduce (=2 with shared w: by the lists' fill) */
  int m2l_share;                 /* -DM2L_SHARE_W=1: k_m2l is m2l2d_share (k_reduce
                                * m2l2d_reduce_idx) or m2l2d_fused_share */
  size_t m2l_tile;               /* -DM2L_TILE=TB where fused: k_m2l is m2l2d_tile (no lists) */
  size_t m2l_tile_split;         /* -DM2L_TILE_SPLIT: work-items per cell (group TILE_SPLIT TB^2) */
  cl_mem tile_list;              /* m2l2d_tile: the occupied tiles (fmmcl_m2l2d_tile_list), one group each */
  size_t n_tiles;
  /* sorted points relative to their leaf's centre (src_lo: the sources' lo
   * parts, float only), results, per-cell tables, expansions */
  cl_mem src, src_lo, tgt, tgt_leaf, out, centre, M, L, binom, coef;
  cl_mem leaf_src, leaf_tgt, u_begin, u_leaf;
  /* M2L: translations sorted by target cell, their rows (cells with a
   * non-empty V list) and per-translation results before the reduction */
  cl_mem trans_src, trans_w, v_rows, v_begin, Lpart;
  size_t n_trans, n_vrows, v_max_len; /* v_max_len: the longest row's translations */
  /* shared w (fmmcl_m2l2d_bundles): sources, offsets, and the reduction's
   * indices (separate) or the bundles' target cells (fused) */
  cl_mem b_src, b_w, b_aux;
  size_t n_bundles;
  /* charges in the caller's order, the sorted -> caller permutations of
   * sources and targets, results in the caller's order */
  cl_mem charges, src_perm, tgt_perm, out_user;
  fmmcl_pinned q_pin, out_pin; /* pinned staging: charges (REAL), results (REAL4) */
} fmm2d_state;

/* ---- host reference (fmm2d_reference.c) --------------------------------- */
/* Phases on sorted data: M, L hold (p+1) complex per cell; out 3 doubles
 * (phi, dphi/dx, dphi/dy) per sorted target; each adds to its output. */
void fmmcl_fmm2d_ref_p2m(const fmmcl_quadtree2d *t, int p, const double *q_sorted, double complex *M);
void fmmcl_fmm2d_ref_m2m(const fmmcl_quadtree2d *t, int p, double complex *M);
void fmmcl_fmm2d_ref_m2l(const fmmcl_quadtree2d *t, int p, const double complex *M, double complex *L);
void fmmcl_fmm2d_ref_l2l(const fmmcl_quadtree2d *t, int p, double complex *L);
void fmmcl_fmm2d_ref_l2p(const fmmcl_quadtree2d *t, int p, const double complex *L, double *out);
void fmmcl_fmm2d_ref_p2p(const fmmcl_quadtree2d *t, const double *q_sorted, double *out);
/* The whole FMM on the host in the caller's order (tgt NULL: the sources). */
fmmcl_status fmmcl_fmm2d_reference(size_t ns, const double *src, const double *q, size_t nt,
                                   const double *tgt, int p, size_t leaf_size, double *pot, double *grad);

/* ---- device (fmm2d_setup.c, fmm2d_kernels.c, fmm2d_phases.c) -------------- */
/* The order a plan uses: opt->order, else the smallest p whose bound
 * meets opt->tolerance (see fmm2d_setup.c). */
double fmmcl_fmm2d_predicted_error(int p);
fmmcl_status fmmcl_fmm2d_choose_order(fmmcl_context ctx, const fmmcl_plan_options *opt, int *order);
fmmcl_status fmmcl_fmm2d_setup(fmmcl_plan plan, fmm2d_state *s, const double *sources, const double *targets);
fmmcl_status fmmcl_fmm2d_build_kernels(fmmcl_plan plan, fmm2d_state *s);
/* m2l2d.cl's work-group: WGS / NROW whole translations (at least one) of
 * NROW work-items each, TPW rounds of them; its local memory holds one
 * round's shared factors, rows padded to even length. */
static inline size_t fmmcl_m2l2d_group(size_t wgs, size_t nrow) {
  return (wgs / nrow > 0 ? wgs / nrow : 1) * nrow;
}
static inline size_t fmmcl_m2l2d_local_bytes(size_t wgs, size_t nrow, size_t real_size) {
  return fmmcl_m2l2d_group(wgs, nrow) / nrow * (nrow + (nrow & 1)) * 2 * real_size;
}
/* Global size of a launch over n_trans translations. */
static inline size_t fmmcl_m2l2d_global(size_t wgs, size_t tpw, size_t nrow, size_t n_trans) {
  const size_t group = fmmcl_m2l2d_group(wgs, nrow), per_group = group / nrow * tpw;
  return (n_trans + per_group - 1) / per_group * group;
}
/* Global size of a shared-w launch: one slot of NROW work-items per bundle. */
static inline size_t fmmcl_m2l2d_share_global(size_t wgs, size_t nrow, size_t n_bundles) {
  const size_t group = fmmcl_m2l2d_group(wgs, nrow), slots = group / nrow;
  return (n_bundles + slots - 1) / slots * group;
}
/* The parameters of m2l2d.cl at order p on ctx's device: the tuning
 * cache's entry "m2l2d" class "p<order>", an override, or the default. */
fmmcl_status fmmcl_fmm2d_m2l_params(fmmcl_context ctx, fmmcl_precision precision, int order,
                                    fmmcl_params *out);
void fmmcl_fmm2d_release(fmm2d_state *s);
/* Charges (caller's order) into the sorted sources on the device. */
fmmcl_status fmmcl_fmm2d_upload_charges(fmmcl_plan plan, fmm2d_state *s, const double *charges);
/* Zeroes L and the results, then runs the phases in mask in launch order. */
fmmcl_status fmmcl_fmm2d_run_phases(fmmcl_plan plan, fmm2d_state *s, unsigned mask);
/* The same with L left as it is (the test hook loads it). */
fmmcl_status fmmcl_fmm2d_run_phases_keep_l(fmmcl_plan plan, fmm2d_state *s, unsigned mask);
fmmcl_status fmmcl_fmm2d_counts(fmmcl_plan plan, const char *phase, double *work);
fmmcl_status fmmcl_fmm2d_download(fmmcl_plan plan, fmm2d_state *s, double *potential, double *gradient);

/* ---- test hooks (fmm2d_debug.c) ----------------------------------------------- */
fmmcl_status fmmcl_fmm2d_debug_tree(fmmcl_plan plan, const fmmcl_quadtree2d **tree, int *order);
/* Runs only the phases in mask. charges: caller's order (NULL: keep the
 * last). M_in / L_in (NULL: M kept, L zero) are loaded after the charges;
 * M_out / L_out: (p+1) complex per cell; out: 3 doubles per sorted target.
 * Outputs may be NULL. */
fmmcl_status fmmcl_fmm2d_debug_run(fmmcl_plan plan, const double *charges, unsigned mask,
                                   const double complex *M_in, const double complex *L_in,
                                   double complex *M_out, double complex *L_out, double *out);

/* ---- shared-w M2L lists (m2l2d_share.c) -------------------------------------- */
/* The M2L translations in target-row order, as the bundler reads them. */
typedef struct fmmcl_m2l2d_list {
  size_t n_rows;
  const cl_uint *rows, *begin; /* target cell of row r; its translations begin[r] .. begin[r+1] */
  const int *level, *position; /* per row: level, position in the parent (bit 0 x odd, bit 1 y odd) */
  const cl_uint *src;          /* per translation: source cell */
  const int *dxy;              /* per translation: offset (source - target) in cell sides */
  const double *log_side;      /* per level: log of the cell side */
} fmmcl_m2l2d_list;
/* What m2l2d.cl's -DM2L_SHARE_W=1 kernels take (NO_CELL = 0xffffffff pads):
 * separate (m2l2d_share): src[n_bundles * tpw] translations of one offset
 * per bundle, w one REAL4 (Re 1/w, Im 1/w, log(|w| side), 0) per bundle,
 * idx[t] the padded position of translation t (the reduction's index);
 * fused (m2l2d_fused_share): rows[n_bundles * tpw] target cells of one
 * level and position, src[(b * 27 + j) * tpw + c] the source of cell c at
 * offset j, w one REAL4 per (bundle, offset). */
typedef struct fmmcl_m2l2d_bundles {
  size_t n_bundles, tpw;
  cl_uint *src, *rows, *idx;
  void *w; /* REAL4 in the plan's precision */
} fmmcl_m2l2d_bundles;
/* FMMCL_ERROR_INTERNAL if an offset is not a quadtree interaction offset
 * (or, fused, not in the 27 of the row's position, or there twice). */
fmmcl_status fmmcl_m2l2d_bundle(const fmmcl_m2l2d_list *in, int fused, size_t tpw, size_t real_size,
                                fmmcl_m2l2d_bundles *out);
void fmmcl_m2l2d_bundles_free(fmmcl_m2l2d_bundles *b);
/* TPW of m2l2d_fused_share when the defines leave it out: the largest of
 * 4, 2 that still gives every compute unit 4 work-groups over n_rows
 * target cells (a bundle of TPW cells is one slot's work: larger bundles
 * amortise the power better but leave compute units idle on small
 * trees), else 1. */
static inline size_t fmmcl_m2l2d_fused_share_tpw(size_t n_rows, size_t group, size_t nrow,
                                                 unsigned compute_units) {
  const size_t slots = group / nrow, want = 4 * (size_t)(compute_units ? compute_units : 1);
  /* 4 at most: more targets per work-item cost more registers than they
   * save (the TPW sweep in benchmarks/README.md, bench-m2l2d) */
  for (size_t tpw = 4; tpw > 1; tpw /= 2)
    if (n_rows / (tpw * slots) >= want) return tpw;
  return 1;
}
/* Offset j (0..26) of the interaction list of a cell at position cp. */
void fmmcl_m2l2d_offset(int cp, int j, int *dx, int *dy);
/* Local memory of the shared-w kernels: TPW translations' factors per slot,
 * two sets of them fused (one barrier per offset). */
static inline size_t fmmcl_m2l2d_share_local_bytes(size_t wgs, size_t tpw, size_t nrow, size_t real_size,
                                                   int fused) {
  return (fused ? 2 : 1) * tpw * fmmcl_m2l2d_local_bytes(wgs, nrow, real_size);
}

/* m2l2d_tile (-DM2L_TILE=TB, a power of two): a group of TB^2 work-items
 * per TB x TB tile of a level (a level narrower than TB: one partial tile),
 * the (TB+4)^2 cells its lists reach staged in local memory, rows at an odd
 * stride. A work-item holds its cell's NROW factors and sums (and in float
 * the P powers): in double at p = 16 that fills a GPU thread's registers,
 * so above p = 16 double takes the fused shared-w kernel instead. */
static inline size_t fmmcl_m2l2d_tile_local_bytes(size_t tb, size_t nrow, size_t real_size) {
  return (tb + 4) * (tb + 4) * (nrow | 1) * 2 * real_size;
}
/* With -DM2L_TILE_SPLIT=S (S work-items per cell, 1..27) the window must
 * also hold the S - 1 other parts' sums at the end. */
static inline int fmmcl_m2l2d_tile_fits(size_t tb, size_t split, size_t nrow, size_t real_size,
                                        unsigned long long local_mem) {
  return tb > 0 && (tb & (tb - 1)) == 0 && (real_size == 4 || nrow <= 17) && split >= 1 && split <= 27 &&
         (split - 1) * tb * tb <= (tb + 4) * (tb + 4) &&
         fmmcl_m2l2d_tile_local_bytes(tb, nrow, real_size) <= local_mem;
}
/* Tiles of levels 2..levels that m2l2d_tile computes (m2l2d_tiles.c), one
 * group each: level << FMMCL_M2L2D_TILE_LEVEL_SHIFT | the tile's index in
 * its level (row-major); v_begin NULL: all of them, else only tiles with a
 * cell whose V list is not empty. *list is malloc'ed. */
#define FMMCL_M2L2D_TILE_LEVEL_SHIFT 27
fmmcl_status fmmcl_m2l2d_tile_list(int levels, size_t tb, const size_t *v_begin, cl_uint **list, size_t *n);
/* Where the lists are short (clustered points) the tile kernel computes
 * the 27 offsets of every cell of an occupied tile, most of them zeros;
 * it stays the choice while that is at most this many times the lists'
 * translations, about its speed-up per translation over the separate
 * shared-w kernel (benchmarks/README.md, the tile list). */
#define FMMCL_M2L2D_TILE_WASTE 3
/* Groups of a launch over all tiles of levels 2..levels. */
static inline size_t fmmcl_m2l2d_tile_groups(int levels, size_t tb) {
  size_t n = 0;
  for (int l = 2; l <= levels; l++) {
    const size_t d = (size_t)1 << l, side = d > tb ? d / tb : 1;
    n += side * side;
  }
  return n;
}

/* ---- standalone M2L (m2l2d_bench.c): the paper's Tables 2 and 3 ------------ */
typedef struct fmmcl_m2l2d_times {
  size_t n_trans, n_rows;  /* translations, target cells (27 translations each) */
  size_t wgs, tpw, unroll; /* the kernel's -D values */
  int coef;                /* M2L_COEF: 0 table in local memory, 1 recurrence */
  int fused;               /* 1: m2l2d_fused, the reduction inside (reduce_s 0) */
  int share;               /* 1: the shared-w kernels (-DM2L_SHARE_W=1) */
  size_t tile;             /* TB: m2l2d_tile (-DM2L_TILE=TB, fused, no lists), 0 not */
  size_t tile_split;       /* its -DM2L_TILE_SPLIT (work-items per cell) */
  size_t n_bundles;        /* shared w: bundles of TPW translations (fused: cells) */
  double h2d_s, d2h_s;     /* transfers (events): multipoles + lists in, locals out */
  double h2d_bytes, d2h_bytes;
  double m2l_s, reduce_s; /* kernels (events), best of the repeats */
  double max_rel_err;     /* device vs plain-C M2L, worst of sampled target cells */
} fmmcl_m2l2d_times;
/* The M2L of the paper's benchmark: every cell of levels 2..levels of a
 * quadtree with a full interaction list of 27 cells (the interior list,
 * periodic at the edges, so n_trans = 27 * sum 4^l), random multipoles of
 * order p. Uploads multipoles and lists, runs the row-traversal kernel and
 * the reduction `repeats` times (best kept), downloads L, checks a sample
 * of cells against fmmcl_exp2d_m2l. wgs / tpw / unroll 0, coef -1: the plan's values;
 * fused 1 runs m2l2d_fused (the reduction inside the translation kernel) instead;
 * share 1 the shared-w kernels (m2l2d_share + m2l2d_reduce_idx, or with fused
 * m2l2d_fused_share), TPW translations (cells) per bundle; tile TB > 0
 * m2l2d_tile over the levels densely, periodic as the lists, tile_split
 * work-items per cell (0: 1). */
fmmcl_status fmmcl_m2l2d_bench(fmmcl_context ctx, fmmcl_precision precision, int p, int levels, size_t wgs,
                               size_t tpw, size_t unroll, int coef, int fused, int share, size_t tile,
                               size_t tile_split, int repeats, fmmcl_m2l2d_times *out);

#endif /* FMMCL_FMM2D_H */
