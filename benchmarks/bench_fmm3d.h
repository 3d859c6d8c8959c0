/* bench_fmm3d.h — what the pieces of bench-fmm3d share: one measured point
 * of the N sweep, the flop model per operator, and the CSV/summary writers. */
#ifndef FMMCL_BENCH_FMM3D_H
#define FMMCL_BENCH_FMM3D_H
#include <stdio.h>

#include "fmmcl.h"

/* Operator phases a plan may record, in launch order (see lib/fmm3d.h). */
#define BENCH_FMM3D_N_OPS 8
extern const char *const bench_fmm3d_ops[BENCH_FMM3D_N_OPS];

/* Phases of one execution, whatever names the plan records. */
#define BENCH_FMM3D_MAX_PHASES 24

/* One (method, precision, N) point of the sweep. */
typedef struct bench_fmm3d_point {
  const char *method, *precision;
  size_t n;
  int order;                       /* expansion order p (0 for direct) */
  int leaf_size;                   /* the plan's points per leaf (0 for direct) */
  double theta;                    /* the treecode's theta, as the plan chose it (0 otherwise) */
  double create_first_s;           /* the first plan of this N: staging memory not yet pinned */
  double create_s;                 /* plan create, wall clock, binary cache warm, the second plan of this N */
  double tree_s, lists_s;          /* as the plan records them (tree: sort + tree) */
  double tables_s;                 /* packing and uploading the device tables */
  double kernels_s;                /* create - tree - lists: kernels from the cache and table upload */
  double execute_s, execute_min_s; /* wall clock of fmmcl_plan_execute: median and best of R */
  double end_to_end_s;             /* tree + lists + tables + execute (upload, operators, download) */
  double err_pot, err_grad;        /* relative L2 on the sampled targets; NAN when unchecked */
  double update_s, step_s;         /* --step: fmmcl_plan_update_positions, and it + execute (medians) */
  size_t n_phases;
  char phase_name[BENCH_FMM3D_MAX_PHASES][16];
  double phase_s[BENCH_FMM3D_MAX_PHASES]; /* median over the R runs */
  double count[BENCH_FMM3D_N_OPS];        /* fmmcl_plan_counts per operator */
} bench_fmm3d_point;

/* ---- one point (bench_fmm3d_run.c) ---- */

/* The points of one N, the K sampled targets and the reference there. */
typedef struct bench_fmm3d_inputs {
  size_t n, k;
  double *x, *q, *pot, *grad; /* all N points, charges, device results */
  size_t *idx;                /* the K sampled targets */
  double *ref_pot, *ref_grad; /* the host double-precision reference there */
  int resident;               /* execute on device buffers (fmmcl_plan_execute_buffers) */
  int step;                   /* also time time steps: new positions, then execute */
} bench_fmm3d_inputs;

/* Uniform points in the unit cube, charges in [-1, 1) (or, with points
 * not NULL, the points and charges of that .pts file, benchmarks/peers/),
 * and (check > 0) the reference at min(check, n) sampled targets; exits
 * when memory lacks or the file is not n points. */
void bench_fmm3d_inputs_make(bench_fmm3d_inputs *in, size_t n, size_t check, const char *points);
/* The number of points in a .pts file; exits when it cannot be read. */
size_t bench_fmm3d_points_count(const char *path);
/* The device results (rows pot gx gy gz of float64) into path. */
void bench_fmm3d_write_results(const bench_fmm3d_inputs *in, const char *path);
void bench_fmm3d_inputs_free(bench_fmm3d_inputs *in);

/* Creates the plan of opt on in, executes it repeat times and fills pt
 * (method and precision names set by the caller). Returns the failing
 * status (its message printed) so the caller can stop that curve. */
fmmcl_status bench_fmm3d_run_point(fmmcl_context ctx, const fmmcl_plan_options *opt,
                                   const bench_fmm3d_inputs *in, int repeat, bench_fmm3d_point *pt);
/* Plan create of a throwaway plan (n points): seconds, or -1 on failure.
 * Warms the binary cache so the sweep's create times leave compiling out. */
double bench_fmm3d_warm_up(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n);

/* ---- flop model (bench_fmm3d_flops.c) ---- */

/* Flops per unit of fmmcl_plan_counts for operator op at order p. */
double bench_fmm3d_flops_per_unit(const char *op, int p);
/* The model and its conventions, for --help. */
void bench_fmm3d_print_flop_model(FILE *f);

/* ---- output (bench_fmm3d_report.c) ---- */

typedef struct bench_fmm3d_out {
  FILE *times, *phases, *gflops;
  const char *device;
} bench_fmm3d_out;

/* Opens times.csv, phases.csv, gflops.csv in dir (made if absent) with their
 * headers; exits with a message on failure. */
void bench_fmm3d_open(bench_fmm3d_out *o, const char *dir, const char *device);
void bench_fmm3d_write(bench_fmm3d_out *o, const bench_fmm3d_point *pt, double tol, double theta,
                       int leaf_size, double first_build_s, size_t check_k);
void bench_fmm3d_close(bench_fmm3d_out *o);

/* Crossover of every tree method against direct, per precision and measure
 * (execute, end to end), interpolated log-log between the sweep points where
 * the curves cross; printed to stdout and written to dir/crossover.csv. */
void bench_fmm3d_crossover(const bench_fmm3d_point *pts, size_t n_pts, const char *dir, const char *device);
#endif
