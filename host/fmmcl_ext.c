/* fmmcl_ext.c — the fmmcl command's runs of Laplace dipoles and Hessians,
 * Helmholtz and Stokes: input columns, fmmcl_plan_evaluate, check, output. */
#include "fmmcl_ext.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"

#define ERR_LEN 512
#define N_OUT 7

int fmmcl_ext_wanted(const fmmcl_plan_options *o) {
  return o->kernel == FMMCL_HELMHOLTZ_3D || o->kernel == FMMCL_STOKES_3D || o->dipoles || o->hessian;
}

/* Strength columns after x, y, z: Laplace q (+ d), Helmholtz q re, im
 * (+ d as re x, im x, ...), Stokes f (+ stresslet s, n). */
static int strength_columns(const fmmcl_plan_options *o, int with_dipoles) {
  if (o->kernel == FMMCL_HELMHOLTZ_3D) return 2 + (with_dipoles ? 6 : 0);
  if (o->kernel == FMMCL_STOKES_3D) return 3 + (o->stresslets ? 6 : 0);
  return 1 + (with_dipoles ? 3 : 0);
}

static int dipole_columns(const fmmcl_plan_options *o) { return o->kernel == FMMCL_HELMHOLTZ_3D ? 6 : 3; }

int fmmcl_ext_input_columns(const fmmcl_plan_options *o, int dipoles_in_file) {
  return 3 + strength_columns(o, o->dipoles && !dipoles_in_file);
}

/* The particles and results of one run: sources hold x, y, z; strengths
 * every strength column, dipoles appended from the file when given. */
typedef struct {
  size_t n, m;
  double *sources, *targets; /* targets NULL: the sources */
  double *strengths;         /* n rows of strength_columns(opt, opt.dipoles) */
  int cols;                  /* of strengths */
  double *out[N_OUT];        /* fmmcl_targets_data's arrays, in its order */
} ext_job;

/* Values per target of each output, in fmmcl_targets_data's order. */
static const size_t out_per[N_OUT] = {1, 3, 6, 2, 6, 3, 1};
static const char *const out_names[N_OUT][6] = {{"potential"},
                                                {"gx", "gy", "gz"},
                                                {"hxx", "hyy", "hzz", "hxy", "hxz", "hyz"},
                                                {"potential_re", "potential_im"},
                                                {"gx_re", "gx_im", "gy_re", "gy_im", "gz_re", "gz_im"},
                                                {"ux", "uy", "uz"},
                                                {"pressure"}};

static const char *const out_labels[N_OUT] = {"potential", "gradient", "Hessian", "potential",
                                              "gradient",  "velocity", "pressure"};

/* Which outputs opt computes. */
static void outputs_wanted(const fmmcl_plan_options *o, int want[N_OUT]) {
  const int lap = o->kernel == FMMCL_LAPLACE_3D, helm = o->kernel == FMMCL_HELMHOLTZ_3D;
  const int st = o->kernel == FMMCL_STOKES_3D;
  want[0] = lap, want[1] = lap && o->gradient, want[2] = lap && o->hessian;
  want[3] = helm, want[4] = helm && o->gradient;
  want[5] = st, want[6] = st && o->pressure;
}

static void targets_data(double *const out[N_OUT], fmmcl_targets_data *t) {
  t->potential = out[0], t->gradient = out[1], t->hessian = out[2];
  t->complex_potential = out[3], t->complex_gradient = out[4];
  t->velocity = out[5], t->pressure = out[6];
}

/* Column-major views of the strength rows, as fmmcl_sources_data wants
 * them: each array its own copy. */
static void sources_data(const fmmcl_plan_options *o, const ext_job *j, double **copies,
                         fmmcl_sources_data *in) {
  memset(in, 0, sizeof *in);
  const double **slot[3] = {NULL, NULL, NULL};
  int per[3] = {0, 0, 0};
  if (o->kernel == FMMCL_HELMHOLTZ_3D) {
    slot[0] = &in->complex_charges, per[0] = 2;
    if (o->dipoles) slot[1] = &in->complex_dipoles, per[1] = 6;
  } else if (o->kernel == FMMCL_STOKES_3D) {
    slot[0] = &in->forces, per[0] = 3;
    if (o->stresslets) slot[1] = &in->stresslet_strengths, per[1] = 3;
    if (o->stresslets) slot[2] = &in->stresslet_orientations, per[2] = 3;
  } else {
    slot[0] = &in->charges, per[0] = 1;
    if (o->dipoles) slot[1] = &in->dipoles, per[1] = 3;
  }
  int at = 0;
  for (int k = 0; k < 3; k++) {
    copies[k] = NULL;
    if (!slot[k]) continue;
    copies[k] = malloc(j->n * (size_t)per[k] * sizeof(double) + 1);
    if (copies[k])
      for (size_t i = 0; i < j->n; i++)
        for (int c = 0; c < per[k]; c++)
          copies[k][i * (size_t)per[k] + (size_t)c] = j->strengths[i * (size_t)j->cols + (size_t)(at + c)];
    *slot[k] = copies[k];
    at += per[k];
  }
}

static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* --demo: points uniform in [0,1)^3, every strength uniform in [-1,1). */
static int make_demo(const fmmcl_ext_args *a, ext_job *j) {
  j->n = a->demo;
  j->sources = malloc(3 * j->n * sizeof(double) + 1);
  j->strengths = malloc((size_t)j->cols * j->n * sizeof(double) + 1);
  if (!j->sources || !j->strengths) return fmmcl_cli_error("out of memory for %zu demo points", j->n);
  uint64_t state = a->seed;
  for (size_t i = 0; i < j->n; i++) {
    for (int d = 0; d < 3; d++) j->sources[3 * i + d] = (double)(next_random(&state) >> 11) * 0x1.0p-53;
    for (int c = 0; c < j->cols; c++)
      j->strengths[i * (size_t)j->cols + (size_t)c] = 2 * (double)(next_random(&state) >> 11) * 0x1.0p-53 - 1;
  }
  return FMMCL_CLI_EXIT_OK;
}

static int read_table(const char *path, fmmcl_io_format format, int cols, double **data, size_t *rows) {
  char err[ERR_LEN];
  return fmmcl_io_read(path, format, cols, NULL, NULL, data, rows, err, sizeof err)
             ? fmmcl_cli_error("%s", err)
             : FMMCL_CLI_EXIT_OK;
}

/* Input rows (x, y, z, strengths...) split into coordinates and strength
 * rows; a dipole file's rows appended to the strengths. */
static int load(const fmmcl_ext_args *a, const fmmcl_plan_options *o, ext_job *j) {
  j->cols = strength_columns(o, o->dipoles);
  int rc = FMMCL_CLI_EXIT_OK;
  if (a->has_demo) rc = make_demo(a, j);
  else {
    const int in_cols = fmmcl_ext_input_columns(o, a->dipoles_file != NULL), file_cols = in_cols - 3;
    double *rows = NULL, *dip = NULL;
    size_t nd = 0;
    rc = read_table(a->input, a->input_format, in_cols, &rows, &j->n);
    if (!rc && a->dipoles_file)
      rc = read_table(a->dipoles_file, a->dipoles_format, dipole_columns(o), &dip, &nd);
    if (!rc && a->dipoles_file && nd != j->n)
      rc =
          fmmcl_cli_error("%s has %zu rows, the input %zu: one dipole per source", a->dipoles_file, nd, j->n);
    j->sources = rc ? NULL : malloc(3 * j->n * sizeof(double) + 1);
    j->strengths = rc ? NULL : malloc((size_t)j->cols * j->n * sizeof(double) + 1);
    if (!rc && (!j->sources || !j->strengths)) rc = fmmcl_cli_error("out of memory for %zu sources", j->n);
    for (size_t i = 0; !rc && i < j->n; i++) {
      const double *r = rows + i * (size_t)in_cols;
      memcpy(j->sources + 3 * i, r, 3 * sizeof(double));
      double *s = j->strengths + i * (size_t)j->cols;
      memcpy(s, r + 3, (size_t)file_cols * sizeof(double));
      if (dip)
        memcpy(s + file_cols, dip + i * (size_t)dipole_columns(o),
               (size_t)dipole_columns(o) * sizeof(double));
    }
    free(rows);
    free(dip);
  }
  if (rc) return rc;
  j->m = j->n;
  if (a->targets && (rc = read_table(a->targets, a->targets_format, 3, &j->targets, &j->m))) return rc;
  int want[N_OUT];
  outputs_wanted(o, want);
  for (int k = 0; k < N_OUT; k++)
    if (want[k] && !(j->out[k] = malloc(j->m * out_per[k] * sizeof(double) + 1)))
      return fmmcl_cli_error("out of memory for %zu results", j->m);
  return FMMCL_CLI_EXIT_OK;
}

/* --check K: K targets (all with SIZE_MAX; else evenly spaced) against
 * fmmcl_reference_evaluate: max-norm error over the largest reference value
 * of each output. */
static int check(const fmmcl_ext_args *a, const fmmcl_plan_options *o, const ext_job *j,
                 const fmmcl_sources_data *in) {
  const size_t k = a->check >= j->m ? j->m : a->check;
  const double *all = j->targets ? j->targets : j->sources;
  double *tx = malloc(3 * k * sizeof(double) + 1), *ref[N_OUT] = {NULL};
  size_t *idx = malloc(k * sizeof *idx + 1);
  int rc = tx && idx ? FMMCL_CLI_EXIT_OK : fmmcl_cli_error("out of memory for --check");
  for (size_t i = 0; !rc && i < k; i++) {
    idx[i] = (size_t)((double)i * (double)j->m / (double)k);
    memcpy(tx + 3 * i, all + 3 * idx[i], 3 * sizeof(double));
  }
  for (int c = 0; !rc && c < N_OUT; c++)
    if (j->out[c] && !(ref[c] = malloc(k * out_per[c] * sizeof(double) + 1)))
      rc = fmmcl_cli_error("out of memory for --check");
  fmmcl_targets_data rt;
  targets_data(ref, &rt);
  if (!rc) {
    fmmcl_status st = fmmcl_reference_evaluate(o, j->n, j->sources, in, k, tx, &rt);
    if (st != FMMCL_SUCCESS) rc = fmmcl_cli_status_error(NULL, st, "the reference sum");
  }
  for (int c = 0; !rc && c < N_OUT; c++) {
    if (!ref[c]) continue;
    double err = 0, scale = 0;
    for (size_t i = 0; i < k; i++)
      for (size_t v = 0; v < out_per[c]; v++) {
        err = fmax(err, fabs(j->out[c][idx[i] * out_per[c] + v] - ref[c][i * out_per[c] + v]));
        scale = fmax(scale, fabs(ref[c][i * out_per[c] + v]));
      }
    printf("check %zu targets: %s max error %.3e (relative to max |reference| %.3e)\n", k, out_labels[c],
           scale > 0 ? err / scale : err, scale);
  }
  for (int c = 0; c < N_OUT; c++) free(ref[c]);
  free(tx);
  free(idx);
  return rc;
}

static int write_results(const fmmcl_ext_args *a, const ext_job *j) {
  const char *names[32];
  int cols = 0;
  for (int c = 0; c < N_OUT; c++)
    if (j->out[c])
      for (size_t v = 0; v < out_per[c]; v++) names[cols++] = out_names[c][v];
  double *table = malloc(j->m * (size_t)cols * sizeof(double) + 1);
  if (!table) return fmmcl_cli_error("out of memory for the output table");
  for (size_t i = 0; i < j->m; i++) {
    int at = 0;
    for (int c = 0; c < N_OUT; c++)
      if (j->out[c])
        for (size_t v = 0; v < out_per[c]; v++)
          table[i * (size_t)cols + (size_t)at++] = j->out[c][i * out_per[c] + v];
  }
  char err[ERR_LEN];
  int rc = fmmcl_io_write(a->output, a->output_format, table, j->m, cols, names, a->force, err, sizeof err);
  free(table);
  if (rc) return fmmcl_cli_error("%s", err);
  if (!a->quiet) printf("wrote %zu rows to %s\n", j->m, a->output);
  return FMMCL_CLI_EXIT_OK;
}

/* A warning, whatever --quiet says, when the plan's precision cannot
 * resolve the set (its closest pair against its frame, an outlier that
 * widens the frame, a Helmholtz phase k r) to the tolerance, or to 1e-4
 * (single) and 1e-6 (double) without one: a silent miss is worse than noise. */
static void warn_rounding(const fmmcl_plan_options *o, fmmcl_plan plan, const ext_job *j) {
  double estimate, distance;
  if (fmmcl_plan_rounding_estimate(plan, j->sources, j->targets, &estimate, &distance) != FMMCL_SUCCESS)
    return;
  const double tol = o->tolerance > 0 ? o->tolerance : o->precision == FMMCL_DOUBLE ? 1e-6 : 1e-4;
  if (estimate > tol)
    fprintf(stderr,
            "fmmcl: warning: %s precision resolves this set only to about %.1e relative error (closest pair "
            "%.3g apart), above %.0e; results may miss it by that much: %s\n",
            o->precision == FMMCL_DOUBLE ? "double" : "single", estimate, distance, tol,
            o->precision == FMMCL_DOUBLE ? "rescale or split the set" : "use --precision double");
}

static int evaluate(const fmmcl_ext_args *a, fmmcl_context ctx, const fmmcl_plan_options *o, ext_job *j,
                    const fmmcl_sources_data *in) {
  fmmcl_plan plan;
  fmmcl_status st = fmmcl_plan_create(ctx, o, j->n, j->sources, j->m, j->targets, &plan);
  if (st != FMMCL_SUCCESS) return fmmcl_cli_status_error(ctx, st, "creating the plan");
  warn_rounding(o, plan, j);
  fmmcl_targets_data out;
  targets_data(j->out, &out);
  double best = INFINITY;
  /* the fastest run's phases, printed as the plain runs print theirs */
  fmmcl_phase_time phases[64];
  size_t n_phases = 0;
  for (size_t r = 0; r < a->repeat && st == FMMCL_SUCCESS; r++) {
    double t0 = fmmcl_cli_now();
    st = fmmcl_plan_evaluate(plan, in, &out);
    const double t = fmmcl_cli_now() - t0;
    if (st == FMMCL_SUCCESS && t < best && fmmcl_plan_timings(plan, phases, 64, &n_phases) != FMMCL_SUCCESS)
      n_phases = 0;
    best = fmin(best, t);
  }
  if (n_phases > 64) n_phases = 64;
  fmmcl_plan_info info = {0};
  if (st == FMMCL_SUCCESS) st = fmmcl_plan_describe(plan, &info);
  fmmcl_plan_destroy(plan);
  if (st != FMMCL_SUCCESS) return fmmcl_cli_status_error(ctx, st, "evaluating");
  if (!a->quiet) {
    printf("%s: %zu sources, %zu targets, %s precision, %s", fmmcl_kernel_name(o->kernel), j->n, j->m,
           o->precision == FMMCL_DOUBLE ? "double" : "single", fmmcl_method_name(info.method));
    if (info.order > 0) printf(" (order %d)", info.order);
    printf(": %.4f s (best of %zu; %.3g pairs/s)\n", best, a->repeat, (double)j->n * (double)j->m / best);
    if (n_phases) printf("phases (ms%s):\n", a->repeat > 1 ? ", fastest run" : "");
    for (size_t i = 0; i < n_phases; i++)
      printf("  %-20s %12.3f\n", phases[i].name ? phases[i].name : "?", 1e3 * phases[i].seconds);
  }
  return FMMCL_CLI_EXIT_OK;
}

int fmmcl_ext_run(const fmmcl_ext_args *a, fmmcl_context ctx, const fmmcl_plan_options *opt) {
  ext_job j;
  memset(&j, 0, sizeof j);
  int rc = load(a, opt, &j);
  double *copies[3] = {NULL, NULL, NULL};
  fmmcl_sources_data in;
  if (!rc) {
    sources_data(opt, &j, copies, &in);
    for (int k = 0; k < 3; k++)
      if (!copies[k] &&
          (k == 0 || (k == 1 && (opt->dipoles || opt->stresslets)) || (k == 2 && opt->stresslets)))
        rc = fmmcl_cli_error("out of memory for the strengths");
  }
  if (!rc) rc = evaluate(a, ctx, opt, &j, &in);
  if (!rc && a->check > 0) rc = check(a, opt, &j, &in);
  if (!rc && a->output) rc = write_results(a, &j);
  for (int k = 0; k < 3; k++) free(copies[k]);
  for (int k = 0; k < N_OUT; k++) free(j.out[k]);
  free(j.sources);
  free(j.targets);
  free(j.strengths);
  return rc;
}
