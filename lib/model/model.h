/* model.h — private to the performance model (after Choi et al.,
 * GPGPU-7 2014): per-device peaks from microbenchmarks, per-phase time
 * constants fitted by least squares, the model file that stores both, and
 * the predictions that pick method, leaf size and schedule. */
#ifndef FMMCL_MODEL_H
#define FMMCL_MODEL_H

#include <stdio.h>

#include "core/internal.h"
#include "tree/tree3d.h"

#define FMMCL_MODEL_MAGIC "fmmcl-model 2"

/* The phases the model predicts, in fmmcl_plan_timings' names; the paper's
 * Up = p2m+m2m, U = p2p, V = m2l, W = m2p, X = p2l, Down = l2l+l2p.
 * "overhead" is what one execution's wall time holds beyond its recorded
 * phases (launch gaps, the final synchronisation); "combine" is the host sum
 * of a hybrid plan's two shares: it is part of hybrid schedules only. */
enum {
  FMMCL_MODEL_P2M,
  FMMCL_MODEL_M2M,
  FMMCL_MODEL_M2L,
  FMMCL_MODEL_P2L,
  FMMCL_MODEL_L2L,
  FMMCL_MODEL_L2P,
  FMMCL_MODEL_M2P,
  FMMCL_MODEL_P2P,
  FMMCL_MODEL_UPLOAD,
  FMMCL_MODEL_DOWNLOAD,
  FMMCL_MODEL_OVERHEAD,
  FMMCL_MODEL_COMBINE,
  FMMCL_MODEL_NPHASES
};
/* Regressors per phase: a constant (one launch), a data-movement term
 * (bytes / bandwidth), a compute term (operations / peak) and a per-granule
 * term (work-groups, leaf pairs or level launches); see model_fit.c. */
#define FMMCL_MODEL_NREG 5
/* A work vector: work[ph] in fmmcl_plan_counts' units (upload, download,
 * overhead and combine: the points they move), work[FMMCL_MODEL_NPHASES + ph]
 * the granules of phase ph (see fmmcl_model_tree_work). */
#define FMMCL_MODEL_NWORK (2 * FMMCL_MODEL_NPHASES)

extern const char *const fmmcl_model_phase_names[FMMCL_MODEL_NPHASES];

typedef struct fmmcl_model_precision {
  int measured;       /* peaks below are valid */
  double pairs_per_s; /* U-list instruction mix: Laplace pairs per second */
  double bytes_per_s; /* streaming copy: bytes read + written per second */
  int fitted;         /* constants below are valid */
  size_t n_samples;   /* plans the fit ran */
  double c[FMMCL_MODEL_NPHASES][FMMCL_MODEL_NREG];
} fmmcl_model_precision;

typedef struct fmmcl_model {
  fmmcl_model_precision prec[2]; /* indexed by fmmcl_precision */
} fmmcl_model;

/* ---- microbenchmarks (model_bench.c) ---------------------------------- */

/* Measures ctx's device in one precision: the best of a few runs of each
 * kernel of cl/model.cl, the streaming one over a few work-group sizes. */
fmmcl_status fmmcl_model_measure(fmmcl_context ctx, fmmcl_precision prec, double *pairs_per_s,
                                 double *bytes_per_s);

/* ---- the model file (model_file.c) ------------------------------------ */

/* FMMCL_MODEL_FILE when set, else the device's tuning file path (see
 * fmmcl_tuning_file_path) with ".model" appended: the model lives beside
 * the tuning cache. */
fmmcl_status fmmcl_model_file_path(const fmmcl_device_info *dev, char *buf, size_t len);
/* Reads path for dev. No file: FMMCL_ERROR_IO; a file that is not a model,
 * fails its checksum, or has a malformed line: FMMCL_ERROR_CORRUPT_FILE; a
 * model of another device: FMMCL_ERROR_UNSUPPORTED (message in
 * fmmcl_last_error(NULL)). *model is zeroed first. */
fmmcl_status fmmcl_model_load(const char *path, const fmmcl_device_info *dev, fmmcl_model *model);
/* Writes model for dev to path through a temporary file renamed over it
 * (creating the directory), so that a reader never sees half a file. */
fmmcl_status fmmcl_model_store(const char *path, const fmmcl_device_info *dev, const fmmcl_model *model);

/* ---- the per-phase model (model_fit.c, model_sample.c) ------------------ */

/* One timed plan: work per phase (fmmcl_plan_counts' units; upload and
 * download: the caller's sources and targets) and the median seconds. */
typedef struct fmmcl_model_sample {
  int order;
  size_t n_sources, n_targets;
  double work[FMMCL_MODEL_NWORK];
  double seconds[FMMCL_MODEL_NPHASES];
} fmmcl_model_sample;

/* The regressors of phase (see model_fit.c), from mp's peaks. */
void fmmcl_model_regressors(const fmmcl_model_precision *mp, size_t real_size, int order,
                            const double work[FMMCL_MODEL_NWORK], size_t n_sources, size_t n_targets,
                            int phase, double x[FMMCL_MODEL_NREG]);
/* Fits mp->c by non-negative least squares over the samples (mp's peaks
 * must be set), each phase separately, weighted by 1 / max(t, 10 us)^2 so
 * that the relative error is what is minimised; exact over the 2^NREG
 * active sets, so deterministic: the same samples give the same constants. */
void fmmcl_model_fit_samples(const fmmcl_model_sample *samples, size_t n, size_t real_size,
                             fmmcl_model_precision *mp);
/* Predicted seconds of each phase (seconds may be NULL) and in total of a
 * single-device execution (every phase but combine). */
double fmmcl_model_predict(const fmmcl_model_precision *mp, size_t real_size, int order,
                           const double work[FMMCL_MODEL_NWORK], size_t n_sources, size_t n_targets,
                           double seconds[FMMCL_MODEL_NPHASES]);
/* The work vector of a 3D FMM over tree t with lists l (both as a plan
 * builds them), for n_sources caller's sources and n_targets targets. */
void fmmcl_model_tree_work(const fmmcl_tree3d *t, const fmmcl_tree3d_fmm_lists *l,
                           double work[FMMCL_MODEL_NWORK]);
/* The work of a 3D FMM of these points with leaf size q, counted on a host
 * tree exactly as the plan would count it (targets NULL: the sources);
 * errors as fmmcl_tree3d_build's, message in fmmcl_last_error(NULL). */
fmmcl_status fmmcl_model_counts(size_t n_sources, const double *sources, size_t n_targets,
                                const double *targets, size_t leaf_size, fmmcl_precision prec,
                                double work[FMMCL_MODEL_NWORK]);
/* Executes a 3D FMM plan once untimed, then repeats times, and fills out
 * with its counts and the median time of each phase, overhead included;
 * combine is timed on the host over arrays of the plan's targets. */
fmmcl_status fmmcl_model_plan_sample(fmmcl_plan plan, const double *charges, int repeats,
                                     fmmcl_model_sample *out);

/* Samples as CSV (model_csv.c): a header when f is empty, then a row per
 * sample with the device's name and peaks, every phase's work, granules and
 * seconds. The reader takes concatenated files (headers skipped). */
typedef struct fmmcl_model_csv_row {
  char device[256];
  fmmcl_precision precision;
  fmmcl_model_precision model; /* the peaks (measured = 1), no constants */
  fmmcl_model_sample sample;
} fmmcl_model_csv_row;
fmmcl_status fmmcl_model_samples_write(FILE *f, const char *device, fmmcl_precision prec,
                                       const fmmcl_model_precision *mp, const fmmcl_model_sample *s,
                                       size_t n);
fmmcl_status fmmcl_model_samples_read(FILE *f, fmmcl_model_csv_row **rows, size_t *count);

/* The fitting sweep (model_sweep.c): every (n, q, p, shape) as an FMM plan,
 * timed as a sample (repeats runs, median). Shapes: 1 = the uniform cube
 * only, 2 = also a 1:1:4 ellipsoid (deep adaptive trees with W and X lists).
 * budget_s > 0 stops the sweep after that many seconds (kernel builds not
 * counted) with the samples it has, at least 2 * FMMCL_MODEL_NREG; the
 * sweep's order spreads every prefix over the whole grid. */
#define FMMCL_MODEL_SWEEP_MAX 16
typedef struct fmmcl_model_sweep {
  size_t n[FMMCL_MODEL_SWEEP_MAX], n_n;
  int q[FMMCL_MODEL_SWEEP_MAX];
  size_t n_q;
  int p[FMMCL_MODEL_SWEEP_MAX];
  size_t n_p;
  int shapes;
  int repeats;
  double budget_s;
} fmmcl_model_sweep;
/* Points of a sweep shape (0 uniform cube, 1 ellipsoid 1:1:4) and charges
 * in [-1, 1), from a fixed seed. */
void fmmcl_model_sweep_inputs(int shape, size_t n, double *x, double *q);
void fmmcl_model_default_sweep(const fmmcl_device_info *dev, fmmcl_model_sweep *sw);
/* Runs the sweep on ctx's device and fits mp (peaks measured already);
 * *samples (malloc'ed, *count of them) are what the fit used. */
fmmcl_status fmmcl_model_fit_sweep(fmmcl_context ctx, fmmcl_precision prec, const fmmcl_model_sweep *sw,
                                   fmmcl_model_precision *mp, fmmcl_model_sample **samples, size_t *count);

/* ---- choices (model_choose.c) -------------------------------------------- */

typedef struct fmmcl_model_choice {
  fmmcl_method method;                       /* FMMCL_DIRECT or FMMCL_FMM */
  int leaf_size;                             /* the FMM's best q */
  int order;                                 /* the FMM's order p */
  double fmm_seconds;                        /* predicted FMM time at that q */
  double direct_seconds;                     /* predicted direct time */
  double phase_seconds[FMMCL_MODEL_NPHASES]; /* the FMM's phases at that q */
} fmmcl_model_choice;

/* Leaf sizes the model considers. */
#define FMMCL_MODEL_N_LEAF 6
extern const int fmmcl_model_leaf_sizes[FMMCL_MODEL_N_LEAF];

/* The method and leaf size mp predicts fastest for a LAPLACE_3D problem
 * (order from opt as a plan would choose it). The direct sum is predicted
 * with the P2P constants over all pairs. */
fmmcl_status fmmcl_model_choose(fmmcl_context ctx, const fmmcl_model_precision *mp,
                                const fmmcl_plan_options *opt, size_t n_sources, const double *sources,
                                size_t n_targets, const double *targets, fmmcl_model_choice *out);

/* Predicted seconds of each schedule (t indexed by fmmcl_schedule; t[0]
 * unused) for one FMM's work, from device a's and device b's models:
 * single-device sums, and for the hybrids the slower of the two shares,
 * each with its own upload, download and overhead, plus the host sum
 * (combine, from device a's model).
 * W (M2P) reads multipoles, so it may go with the near field only if the
 * near device also runs Up (P2M, M2M) itself; X (P2L) feeds local
 * expansions, so it may go with the near field only if the near device
 * also runs Down (L2L, L2P) on its own locals (the far device still runs
 * Down for V's). w_near[k] and x_near[k] (may be NULL) are 1 where hybrid
 * k is fastest that way. */
void fmmcl_model_schedule_times(const fmmcl_model_precision *a, const fmmcl_model_precision *b,
                                size_t real_size, int order, const double work[FMMCL_MODEL_NWORK],
                                size_t n_sources, size_t n_targets, double t[5], int w_near[5],
                                int x_near[5]);

/* Test and benchmark hooks of hybrid plans (hybrid.c): where W runs (1:
 * with the near field, its device then also running Up; 0: with the far
 * field), and likewise X (1: with the near field, its device then also
 * running Down), as the model placed them or as set here. */
fmmcl_status fmmcl_hybrid_w_near(fmmcl_plan plan, int *near);
fmmcl_status fmmcl_hybrid_place_w(fmmcl_plan plan, int near);
fmmcl_status fmmcl_hybrid_x_near(fmmcl_plan plan, int *near);
fmmcl_status fmmcl_hybrid_place_x(fmmcl_plan plan, int near);
/* 1 where the hybrid plan built one tree and its lists for both devices
 * (the second sub-plan borrowed the first's host tree). */
fmmcl_status fmmcl_hybrid_tree_shared(fmmcl_plan plan, int *shared);
/* pot[i] += add_pot[i] (n), and grad likewise (n * dim; grad may be NULL):
 * the host sum of a hybrid plan's shares, parallel for large n. */
void fmmcl_hybrid_accumulate(size_t n, size_t dim, double *pot, double *grad, const double *add_pot,
                             const double *add_grad);

/* The cut-off direct sum's parameters for n_sources and n_targets points
 * of scaled extent: fmmcl_fgt_choose_cutoff's side of least predicted
 * execution (this model's) plus list creation over opt.executions. */
struct fmmcl_fgt_params;
fmmcl_status fmmcl_model_gauss_cutoff_params(fmmcl_context ctx, const fmmcl_plan_options *opt,
                                             size_t n_sources, size_t n_targets, const double *extent,
                                             struct fmmcl_fgt_params *par);

/* The Gaussian's methods as fmmcl_model_gaussian indexes them. */
enum { FMMCL_GAUSS_DIRECT, FMMCL_GAUSS_CUTOFF, FMMCL_GAUSS_FGT, FMMCL_GAUSS_BBFMM, FMMCL_GAUSS_METHODS };
/* Predicted execution seconds of each Gaussian method for a plan of opt
 * (potential only) on ctx's device, from the FGT's and the cut-off sum's
 * work models over the points' bounding box and the device class's fitted
 * rates; -1 where a method is not offered (bbFMM: dim 3 and a sigma wide
 * against the data); create (may be NULL): each method's predicted plan
 * creation on the host, -1 where not offered. FMMCL_AUTO for GAUSSIAN
 * compares seconds + create / opt.executions (0: 100). */
fmmcl_status fmmcl_model_gaussian(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n_sources,
                                  const double *sources, size_t n_targets, const double *targets,
                                  double seconds[FMMCL_GAUSS_METHODS], double create[FMMCL_GAUSS_METHODS]);

/* What FMMCL_AUTO becomes for a plan (plan.c): with a fitted model of
 * ctx's device in opt's precision, fmmcl_model_choose's method and (when
 * opt leaves it 0) leaf size; without one, DIRECT below 2^26 pairs and FMM
 * with the default leaf size above. YUKAWA_3D: DIRECT below 2^26 pairs,
 * BBFMM above where it can answer (no gradient, no softening). GAUSSIAN:
 * the least of fmmcl_model_gaussian's times (DIRECT with a gradient).
 * HELMHOLTZ_3D: hfmm_auto_method. Other kernels: UNSUPPORTED. */
fmmcl_status fmmcl_model_resolve(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n_sources,
                                 const double *sources, size_t n_targets, const double *targets,
                                 fmmcl_plan_options *resolved);

#endif /* FMMCL_MODEL_H */
