/* model_choose.c — decisions from the performance model: direct sum or FMM
 * and the FMM's leaf size, the smallest predicted time over candidates; and
 * the Gaussian's method from its methods' work models. */
#include <math.h>
#include <string.h>

#include "methods/helmholtz3d/hfmm.h"
#include "methods/fgt/fgt.h"
#include "methods/laplace3d/fmm3d.h"
#include "model/model.h"

const int fmmcl_model_leaf_sizes[FMMCL_MODEL_N_LEAF] = {32, 64, 128, 256, 512, 1024};

fmmcl_status fmmcl_model_choose(fmmcl_context ctx, const fmmcl_model_precision *mp,
                                const fmmcl_plan_options *opt, size_t n_sources, const double *sources,
                                size_t n_targets, const double *targets, fmmcl_model_choice *out) {
  if (!mp || !mp->measured || !mp->fitted)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "the model has no fitted constants");
  memset(out, 0, sizeof *out);
  fmmcl_status st = fmmcl_fmm3d_choose_order(ctx, opt, 0, &out->order);
  if (st) return st;
  const size_t rs = opt->precision == FMMCL_DOUBLE ? 8 : 4;
  const size_t nt = targets ? n_targets : n_sources;
  double work[FMMCL_MODEL_NWORK] = {0};
  work[FMMCL_MODEL_P2P] = (double)n_sources * (double)nt;
  work[FMMCL_MODEL_NPHASES + FMMCL_MODEL_P2P] = 1; /* one "leaf" pair: all points */
  work[FMMCL_MODEL_UPLOAD] = (double)n_sources;
  work[FMMCL_MODEL_DOWNLOAD] = work[FMMCL_MODEL_OVERHEAD] = (double)nt;
  out->direct_seconds = fmmcl_model_predict(mp, rs, out->order, work, n_sources, nt, NULL);
  out->fmm_seconds = -1;
  const size_t n_max = n_sources > nt ? n_sources : nt;
  for (int k = 0; k < FMMCL_MODEL_N_LEAF; k++) {
    const int q = fmmcl_model_leaf_sizes[k];
    if (k > 0 && (size_t)q > n_max) break; /* one leaf already: larger q is the same tree */
    double seconds[FMMCL_MODEL_NPHASES];
    st = fmmcl_model_counts(n_sources, sources, nt, targets, (size_t)q, opt->precision, work);
    if (st) return fmmcl_fail(ctx, st, "model: %s", fmmcl_last_error(NULL));
    const double t = fmmcl_model_predict(mp, rs, out->order, work, n_sources, nt, seconds);
    if (out->fmm_seconds < 0 || t < out->fmm_seconds) {
      out->fmm_seconds = t;
      out->leaf_size = q;
      memcpy(out->phase_seconds, seconds, sizeof seconds);
    }
  }
  out->method = out->direct_seconds <= out->fmm_seconds ? FMMCL_DIRECT : FMMCL_FMM;
  return FMMCL_SUCCESS;
}

/* Below this many pairs the direct sum is taken when no fitted model
 * exists: where the FMM's fixed costs (tree, lists, kernel builds) stop
 * dominating on the devices measured so far (2^26 pairs, ~8k points). */
#define AUTO_FALLBACK_PAIRS 67108864.0

/* The pairs rule for the sums the model does not cover: above it, the
 * kernel's fast method where that computes what was asked (the FMM has
 * no softening, the FGT and the bbFMM no gradient, the bbFMM's Yukawa no
 * softening), else the direct sum. */
static fmmcl_method fallback_method(const fmmcl_plan_options *opt, double pairs) {
  if (pairs < AUTO_FALLBACK_PAIRS) return FMMCL_DIRECT;
  if (opt->bbfmm_kernel != FMMCL_BBFMM_PLAN_KERNEL) return FMMCL_BBFMM; /* the only fast one */
  switch (opt->kernel) {
    case FMMCL_LAPLACE_3D:
      return opt->softening != 0 ? FMMCL_DIRECT : FMMCL_FMM; /* dipoles and Hessians too */
    case FMMCL_LAPLACE_2D: return FMMCL_FMM;
    case FMMCL_GAUSSIAN: return FMMCL_DIRECT; /* gaussian_method decides */
    case FMMCL_YUKAWA_3D: return opt->gradient || opt->softening != 0 ? FMMCL_DIRECT : FMMCL_BBFMM;
    case FMMCL_HELMHOLTZ_3D:
      return FMMCL_DIRECT; /* fmmcl_model_resolve asks hfmm_auto_method */
    /* four Laplace FMMs; in float their rounding at close pairs is
     * magnified by the decomposition's cancellation (benchmarks/README.md) */
    case FMMCL_STOKES_3D: return opt->precision == FMMCL_SINGLE ? FMMCL_DIRECT : FMMCL_FMM;
  }
  return FMMCL_DIRECT;
}

/* ---- the Gaussian: direct, cut-off direct, FGT or bbFMM ----------------- */

/* Rates of each Gaussian method on a device class in one precision, fitted
 * to bench-gauss-auto's runs (benchmarks/README.md). Pair rates count
 * direct pair evaluations per second (the work models' unit,
 * fmmcl_fgt_params.work): the direct sum's, reached from `direct_full`
 * targets on; the cut-off sum's (reached from `tiles_full` tiles of
 * targets); the FGT's direct part's, and its expansions'. The FGT's
 * moments and Taylor coefficients loop over a box's sources in one
 * work-item, which the work model does not see: seconds per source of the
 * fullest box and per term of that (it dominates where boxes hold 1e4
 * points and more). The bbFMM's seconds per point; each method's fixed
 * seconds per execution (launches, permutations); the bytes per second of
 * charges in and results out. */
typedef struct gauss_rates {
  double direct, direct_full, cutoff, tiles_full, fgt_direct, fgt_expansion, fgt_box_source, fgt_box_term;
  double bbfmm_point, fixed_direct, fixed_cutoff, fixed_fgt, fixed_bbfmm, io;
  /* pair rates at dim d are the d = 3 rates times (1 + 3 w) / (1 + d w), w
   * for the binned sums and w_direct for the direct sum: a CPU pays for
   * each coordinate, a GPU's exponential hides them in its tuned direct
   * kernel more than in the binned ones */
  double per_dim, per_dim_direct;
  /* pair evaluations a visit of a source box costs beyond the work model's (a CPU's work-items
   * pay more for the box's list entry, frame difference and barriers than a GPU's) */
  double visit_pairs;
  /* the cut-off sum by its tiles (a GPU's, fitted): a work-group of 64 lanes per tile of a target
   * box runs every lane over the sources of the box's neighbours at `cutoff` lane-pairs per
   * second (at d = 3; per_dim_direct's law), plus these seconds per visit of a source box; 0:
   * the pair model above (a CPU's) */
  double cutoff_visit;
  /* targets at which the tiled cut-off sum keeps half the device busy
   * (fitted: a few full boxes at N = 1e4-1e5 run near the full rate, a
   * sparse 1e4 in many boxes well under it) */
  double targets_half;
  /* the FGT's seconds per source of the fullest box of the binning's grid
   * and per dimension (a GPU's, fitted: its work-items build each source's
   * Hermite columns per axis while the terms run across the lanes, so the
   * terms cost nearly nothing; 0.35-0.38 us per source and axis in single,
   * 0.68-0.73 in double, over d = 1-3, sigma 1, N 1e5-1e6); 0: the
   * per-source and per-term seconds above, over per_box's grid */
  double fgt_box_dim;
} gauss_rates;

/* The H100's (NVIDIA OpenCL) rates stand for every GPU, PoCL's (2 shared
 * cores) for every CPU device: the choice depends on their ratios, which
 * move less between devices of a class than the rates do. */
static const gauss_rates gauss_gpu[2] = {
    /* single */ {1.48e12, 131072, 2.0e12, 5000,   3.3e11, 1.2e12, 0.6e-6, 1e-8,    9e-8,  5e-5,
                  1e-4,    1.5e-4, 3e-3,   1.2e10, 1.5,    0.38,   0,      3.3e-10, 30000, 0.36e-6},
    /* double */ {4.75e11, 131072, 3.5e11, 5000,   3.0e11, 4.0e11, 1.0e-6, 2e-8,    1.8e-7, 5e-5,
                  2e-4,    1.5e-4, 3e-3,   1.2e10, 0.5,    0.14,   0,      3.3e-10, 30000,  0.7e-6}};
static const gauss_rates gauss_cpu[2] = {
    /* single */ {5.5e7, 64,   2e8,  1,   3.2e8, 2.5e8, 1e-6, 2e-7, 3e-5, 2e-4,
                  1e-3,  2e-3, 1e-2, 4e9, 1,     0.5,   30,   0,    0,    0},
    /* double */ {3.5e7, 64,   1.2e8, 1,   2e8, 1.5e8, 1e-6, 3e-7, 5e-5, 2e-4,
                  1e-3,  2e-3, 1e-2,  4e9, 1,   0.5,   30,   0,    0,    0}};

/* The bbFMM interpolates the kernel over a leaf: it is offered only where
 * the Gaussian is smooth over the whole set (sigma at least this share of
 * the widest extent), where its error was measured within the tolerance. */
#define GAUSS_BBFMM_MIN_SIGMA 0.25

/* Plan creation on the host, fitted to bench-gauss-auto's create times on
 * the H100's host: seconds per point (sources and targets: the binning,
 * the uploads), plus the cut-off sum's and the FGT's interaction lists
 * (fmmcl_fgt_lists_estimate); the bbFMM's per point (its tree and
 * operators). Kernel builds are not counted: the binary cache keeps them. */
#define GAUSS_CREATE_POINT 6e-8
#define GAUSS_CREATE_BBFMM_POINT 2.5e-6

/* Sources per occupied box of side `side` over extent (scaled), uniform. */
static double per_box(size_t n, int dim, const double *extent, double side) {
  double boxes = 1;
  for (int k = 0; k < dim; k++) boxes *= ceil(extent[k] / side) + 1;
  return (double)n / boxes;
}

/* The same over the grid the cut-off sum bins into (origin at the lowest
 * point: floor(extent / side) + 1 boxes per axis). per_box's extra box per
 * axis, which its fitted FGT terms keep, is 5.6x the boxes in 6 dimensions
 * at three boxes per axis. */
static double per_box_binned(size_t n, int dim, const double *extent, double side) {
  double boxes = 1;
  for (int k = 0; k < dim; k++) boxes *= floor(extent[k] / side) + 1;
  return (double)n / boxes;
}

/* One set of points as the cut-off sum's time model sees it. */
typedef struct gauss_cutoff_case {
  const gauss_rates *r;
  int dim;
  size_t ns, nt;
  const double *extent; /* scaled */
  double io;            /* seconds of charges in and results out */
} gauss_cutoff_case;

/* The cut-off sum's execution seconds in the boxes of par. */
static double cutoff_seconds(const void *arg, const fmmcl_fgt_params *par) {
  const gauss_cutoff_case *c = arg;
  const gauss_rates *r = c->r;
  const int dim = c->dim;
  const size_t n_sources = c->ns, nt = c->nt;
  const double *extent = c->extent;
  double visits;
  const double work = fmmcl_fgt_cutoff_work(dim, par->cutoff, par->side, n_sources, extent, &visits, NULL);
  if (r->cutoff_visit > 0) {
    /* tiles of 64 lanes over the occupied target boxes: a box of few
     * points still runs 64 lanes, a sparse set visits boxes of one */
    const double pt = per_box_binned(nt, dim, extent, par->side), pbo = pt / -expm1(-pt);
    const double tiles = (double)nt / pbo * ceil(pbo / 64);
    /* the work model's neighbour boxes, over its grid of one more box per
     * axis; their sources from the binning's own grid, at most all */
    const double ps0 = per_box(n_sources, dim, extent, par->side);
    const double sources =
        fmin((double)n_sources, visits / -expm1(-ps0) * per_box_binned(n_sources, dim, extent, par->side));
    const double lanes = r->cutoff * (1 + 3 * r->per_dim_direct) / (1 + dim * r->per_dim_direct);
    /* the device saturates with targets, not with tiles: the square-root
     * fill over tiles overpredicted a few full boxes 1.3-1.8x */
    const double busy = (double)nt / ((double)nt + r->targets_half);
    return tiles * (64 * sources / lanes + visits * r->cutoff_visit) / busy + r->fixed_cutoff + c->io;
  }
  /* a work-group per tile of up to 64 targets of a box: below `tiles_full`
   * tiles the device is part idle (the square root: fewer groups each run
   * faster) */
  const double pb = fmax(1.0, per_box(nt, dim, extent, par->side));
  const double fill = fmin(1.0, sqrt((double)nt / pb * ceil(pb / 64) / r->tiles_full));
  const double dims = (1 + 3 * r->per_dim) / (1 + dim * r->per_dim);
  return (double)nt * (work + r->visit_pairs * visits) / (r->cutoff * dims * fill) + r->fixed_cutoff + c->io;
}

/* The cut-off sum's box side: least execution by cutoff_seconds plus its
 * lists' creation spread over the plan's executions. */
static fmmcl_status cutoff_params(fmmcl_context ctx, const gauss_cutoff_case *c,
                                  const fmmcl_plan_options *opt, double tol, fmmcl_fgt_params *par) {
  const double runs = opt->executions > 0 ? opt->executions : FMMCL_GAUSS_DEFAULT_EXECUTIONS;
  return fmmcl_fgt_choose_cutoff(ctx, c->dim, opt->sigma, tol, c->ns, c->extent, cutoff_seconds, c, runs,
                                 par);
}

fmmcl_status fmmcl_model_gauss_cutoff_params(fmmcl_context ctx, const fmmcl_plan_options *opt,
                                             size_t n_sources, size_t n_targets, const double *extent,
                                             fmmcl_fgt_params *par) {
  const gauss_rates *r = &(ctx->dev.info.is_gpu ? gauss_gpu : gauss_cpu)[opt->precision == FMMCL_DOUBLE];
  const size_t rs = opt->precision == FMMCL_DOUBLE ? 8 : 4;
  const gauss_cutoff_case c = {r,         opt->dim, n_sources,
                               n_targets, extent,   (double)(n_sources + n_targets) * rs / r->io};
  return cutoff_params(ctx, &c, opt, opt->tolerance, par);
}

fmmcl_status fmmcl_model_gaussian(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n_sources,
                                  const double *sources, size_t n_targets, const double *targets,
                                  double seconds[FMMCL_GAUSS_METHODS], double create[FMMCL_GAUSS_METHODS]) {
  const int dim = opt->dim;
  const size_t nt = targets ? n_targets : n_sources;
  const double *tgt = targets ? targets : sources;
  double lo[FMMCL_MAX_DIM], hi[FMMCL_MAX_DIM], extent[FMMCL_MAX_DIM], widest = 0;
  for (int k = 0; k < dim; k++) lo[k] = INFINITY, hi[k] = -INFINITY;
  for (int set = 0; set < 2; set++) {
    const double *x = set ? tgt : sources;
    const size_t n = set ? nt : n_sources;
    for (size_t i = 0; i < n; i++)
      for (int k = 0; k < dim; k++) lo[k] = fmin(lo[k], x[i * dim + k]), hi[k] = fmax(hi[k], x[i * dim + k]);
  }
  for (int k = 0; k < dim; k++) {
    extent[k] = n_sources && nt ? (hi[k] - lo[k]) / (sqrt(2.0) * opt->sigma) : 0;
    widest = fmax(widest, hi[k] - lo[k]);
  }
  const gauss_rates *r = &(ctx->dev.info.is_gpu ? gauss_gpu : gauss_cpu)[opt->precision == FMMCL_DOUBLE];
  const double tol = opt->tolerance > 0 ? opt->tolerance : 1e-6;
  const size_t rs = opt->precision == FMMCL_DOUBLE ? 8 : 4;
  const double io = (double)(n_sources + nt) * rs / r->io;
  double made[FMMCL_GAUSS_METHODS];
  for (int m = 0; m < FMMCL_GAUSS_METHODS; m++) seconds[m] = made[m] = -1;
  const double points = (double)(n_sources + nt) * GAUSS_CREATE_POINT;
  made[FMMCL_GAUSS_DIRECT] = points;
  const double fill = fmin(1.0, (double)nt / r->direct_full); /* fewer targets leave the device idle */
  const double dims = (1 + 3 * r->per_dim) / (1 + dim * r->per_dim);
  const double direct = r->direct * (1 + 3 * r->per_dim_direct) / (1 + dim * r->per_dim_direct);
  const double cutoff = r->cutoff * dims;
  const double fgt_direct = r->fgt_direct * dims, fgt_expansion = r->fgt_expansion * dims;
  seconds[FMMCL_GAUSS_DIRECT] = (double)n_sources * (double)nt / (direct * fill) + r->fixed_direct + io;
  fmmcl_fgt_params par;
  const gauss_cutoff_case cc = {r, dim, n_sources, nt, extent, io};
  if (cutoff_params(NULL, &cc, opt, tol, &par) == FMMCL_SUCCESS) {
    seconds[FMMCL_GAUSS_CUTOFF] = cutoff_seconds(&cc, &par);
    made[FMMCL_GAUSS_CUTOFF] =
        points + fmmcl_fgt_lists_estimate(dim, par.cutoff, par.side, n_sources, extent).seconds;
  }
  const int max_p = opt->precision == FMMCL_SINGLE ? 20 : FMMCL_FGT_MAX_P; /* as fgt_method.c */
  int fgt = fmmcl_fgt_choose(NULL, dim, opt->sigma, tol, 0, n_sources, extent, max_p, &par) == 0;
  /* past the FGT's own limits on its lists (its side choice keeps the
   * largest side even then) they take minutes or the host's memory: not
   * offered */
  fmmcl_fgt_lists lists = {0, 0};
  if (fgt) lists = fmmcl_fgt_lists_estimate(dim, par.cutoff, par.side, n_sources, extent);
  fgt = fgt && fmmcl_fgt_lists_affordable(lists);
  if (fgt) made[FMMCL_GAUSS_FGT] = points + lists.seconds;
  if (fgt && !fmmcl_fgt_expansions_fit(dim, par.p, par.nterms, rs, (size_t)ctx->dev.info.local_mem_bytes)) {
    /* the plan falls back to every pair within the cut-off, in its boxes */
    double visits;
    seconds[FMMCL_GAUSS_FGT] =
        (double)nt *
            (fmmcl_fgt_cutoff_work(dim, par.cutoff, par.side, n_sources, extent, &visits, NULL) +
             r->visit_pairs * visits) /
            cutoff +
        r->fixed_fgt + io;
  } else if (fgt)
    seconds[FMMCL_GAUSS_FGT] =
        (double)nt * (par.direct_work / fgt_direct + (par.work - par.direct_work) / fgt_expansion) +
        (r->fgt_box_dim > 0 ? per_box_binned(n_sources, dim, extent, par.side) * r->fgt_box_dim * dim
                            : per_box(n_sources, dim, extent, par.side) *
                                  (r->fgt_box_source + r->fgt_box_term * par.nterms)) +
        r->fixed_fgt + io;
  if (dim == 3 && opt->sigma >= GAUSS_BBFMM_MIN_SIGMA * widest) {
    seconds[FMMCL_GAUSS_BBFMM] = (double)(n_sources + nt) * r->bbfmm_point + r->fixed_bbfmm + io;
    made[FMMCL_GAUSS_BBFMM] = (double)(n_sources + nt) * GAUSS_CREATE_BBFMM_POINT;
  }
  if (create)
    for (int m = 0; m < FMMCL_GAUSS_METHODS; m++) create[m] = seconds[m] >= 0 ? made[m] : -1;
  fmmcl_clear_error(NULL);
  return FMMCL_SUCCESS;
}

/* The Gaussian method of least predicted time, its creation spread over
 * opt.executions (DIRECT with a gradient: the only one that computes it). */
static fmmcl_method gaussian_method(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n_sources,
                                    const double *sources, size_t n_targets, const double *targets) {
  if (opt->gradient) return FMMCL_DIRECT;
  static const fmmcl_method methods[FMMCL_GAUSS_METHODS] = {FMMCL_DIRECT, FMMCL_CUTOFF, FMMCL_FGT,
                                                            FMMCL_BBFMM};
  double t[FMMCL_GAUSS_METHODS], c[FMMCL_GAUSS_METHODS];
  fmmcl_model_gaussian(ctx, opt, n_sources, sources, n_targets, targets, t, c);
  const double runs = opt->executions > 0 ? opt->executions : FMMCL_GAUSS_DEFAULT_EXECUTIONS;
  for (int m = 0; m < FMMCL_GAUSS_METHODS; m++)
    if (t[m] >= 0) t[m] += c[m] / runs;
  int best = FMMCL_GAUSS_DIRECT;
  for (int m = 1; m < FMMCL_GAUSS_METHODS; m++)
    if (t[m] >= 0 && t[m] < t[best]) best = m;
  return methods[best];
}

fmmcl_status fmmcl_model_resolve(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n_sources,
                                 const double *sources, size_t n_targets, const double *targets,
                                 fmmcl_plan_options *resolved) {
  *resolved = *opt;
  const size_t nt = targets ? n_targets : n_sources;
  if (opt->kernel == FMMCL_GAUSSIAN && opt->bbfmm_kernel == FMMCL_BBFMM_PLAN_KERNEL) {
    resolved->method = gaussian_method(ctx, opt, n_sources, sources, n_targets, targets);
    return FMMCL_SUCCESS;
  }
  /* the model times the 3D Laplace FMM only */
  const int modelled = opt->kernel == FMMCL_LAPLACE_3D && opt->bbfmm_kernel == FMMCL_BBFMM_PLAN_KERNEL &&
                       opt->softening == 0 && !opt->dipoles && !opt->hessian;
  char path[4200];
  fmmcl_model m;
  const int have = modelled && fmmcl_model_file_path(&ctx->dev.info, path, sizeof path) == FMMCL_SUCCESS &&
                   fmmcl_model_load(path, &ctx->dev.info, &m) == FMMCL_SUCCESS &&
                   m.prec[opt->precision].measured && m.prec[opt->precision].fitted;
  if (!have) {
    /* the Helmholtz FMM's reach depends on the points' extent in wavelengths */
    resolved->method = opt->kernel == FMMCL_HELMHOLTZ_3D && opt->bbfmm_kernel == FMMCL_BBFMM_PLAN_KERNEL
                           ? hfmm_auto_method(opt, n_sources, sources, nt, targets)
                           : fallback_method(opt, (double)n_sources * (double)nt);
    return FMMCL_SUCCESS;
  }
  fmmcl_model_choice c;
  fmmcl_status st =
      fmmcl_model_choose(ctx, &m.prec[opt->precision], opt, n_sources, sources, n_targets, targets, &c);
  if (st) return st;
  resolved->method = c.method;
  if (c.method == FMMCL_FMM && opt->leaf_size == 0) resolved->leaf_size = c.leaf_size;
  return FMMCL_SUCCESS;
}

/* Seconds of a share on one device, transfers and overhead included: the
 * near field (P2P), plus Up and W when W goes with it, plus X and Down
 * when X goes with it; or the far field, less W and X then. */
static double share(const double s[FMMCL_MODEL_NPHASES], int near, int w_near, int x_near) {
  double t = s[FMMCL_MODEL_UPLOAD] + s[FMMCL_MODEL_DOWNLOAD] + s[FMMCL_MODEL_OVERHEAD];
  for (int ph = 0; ph < FMMCL_MODEL_UPLOAD; ph++) {
    const int up = ph == FMMCL_MODEL_P2M || ph == FMMCL_MODEL_M2M;
    const int down = ph == FMMCL_MODEL_L2L || ph == FMMCL_MODEL_L2P;
    const int on_near = ph == FMMCL_MODEL_P2P || (w_near && (up || ph == FMMCL_MODEL_M2P)) ||
                        (x_near && (down || ph == FMMCL_MODEL_P2L));
    const int on_far =
        ph != FMMCL_MODEL_P2P && !(w_near && ph == FMMCL_MODEL_M2P) && !(x_near && ph == FMMCL_MODEL_P2L);
    if (near ? on_near : on_far) t += s[ph];
  }
  return t;
}

static double max2(double a, double b) { return a > b ? a : b; }

void fmmcl_model_schedule_times(const fmmcl_model_precision *a, const fmmcl_model_precision *b,
                                size_t real_size, int order, const double work[FMMCL_MODEL_NWORK],
                                size_t n_sources, size_t n_targets, double t[5], int w_near[5],
                                int x_near[5]) {
  double sa[FMMCL_MODEL_NPHASES], sb[FMMCL_MODEL_NPHASES];
  int wn[5] = {0}, xn[5] = {0};
  t[0] = 0;
  t[FMMCL_SCHEDULE_GPU] = fmmcl_model_predict(a, real_size, order, work, n_sources, n_targets, sa);
  t[FMMCL_SCHEDULE_CPU] = fmmcl_model_predict(b, real_size, order, work, n_sources, n_targets, sb);
  /* hybrid1: near on a, far on b; hybrid2 the reverse; W and X each where
   * that is faster (a list with no work stays with the far field) */
  for (int h = 0; h < 2; h++) {
    const double *near = h ? sb : sa, *far = h ? sa : sb;
    const int k = h ? FMMCL_SCHEDULE_HYBRID2 : FMMCL_SCHEDULE_HYBRID1;
    t[k] = -1;
    for (int w = 0; w < 2; w++)
      for (int x = 0; x < 2; x++) {
        if ((w && !(work[FMMCL_MODEL_M2P] > 0)) || (x && !(work[FMMCL_MODEL_P2L] > 0))) continue;
        const double tk = max2(share(near, 1, w, x), share(far, 0, w, x));
        if (t[k] < 0 || tk < t[k]) t[k] = tk, wn[k] = w, xn[k] = x;
      }
    t[k] += sa[FMMCL_MODEL_COMBINE];
  }
  if (w_near) memcpy(w_near, wn, sizeof wn);
  if (x_near) memcpy(x_near, xn, sizeof xn);
}
