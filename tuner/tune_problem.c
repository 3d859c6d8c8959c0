/* tune_problem.c — one tuning job's inputs and the measurement of a
 * candidate: correct against the plain-C reference (FMM kernels: the FMM
 * with the library's defaults) on a small problem, then the median kernel
 * time on the representative one. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

/* Relative L2 error allowed. Single: sums of ~1500 terms on grid inputs
 * carry ~sqrt(N) * 6e-8 ~ 3e-6 of rounding (plus native_rsqrt/exp's
 * ~1e-7); double: rounding only. */
#define TOL_SINGLE 1e-5
#define TOL_DOUBLE 1e-12
/* Not a multiple of any WGS * TPW, so padding is exercised; over 1024 so
 * the largest work-group still sees more than one tile. */
#define N_CHECK 1531
/* FMM kernels: enough points, in leaves of CHECK_LEAF, for a tree of
 * several levels, so every list and operator is exercised. The reference is
 * the same FMM built with the library's defaults: a candidate may change
 * the rounding only, by this much. */
#define N_CHECK_FMM 16381
#define CHECK_LEAF_FMM 64
#define TOL_FMM_SINGLE 2e-5
#define TOL_FMM_DOUBLE 1e-10

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* Coordinates k / 2^20 in [0, 1): exact in float even after the shift to
 * the box centre (a multiple of 2^-21), so float and double see the same
 * points and the check measures the kernel's arithmetic alone. */
static void grid_points(uint64_t seed, size_t n, int dim, double *x) {
  for (size_t i = 0; i < n * (size_t)dim; i++) x[i] = (double)(splitmix(&seed) >> 44) / 1048576.0;
}

static void charges(uint64_t seed, size_t n, double *q) {
  for (size_t i = 0; i < n; i++) q[i] = (double)(splitmix(&seed) >> 11) / 9007199254740992.0 - 0.5;
}

void tune_job_label(const tune_job *job, char *buf, size_t len) {
  snprintf(buf, len, "%s %s %s", job->space->kernel, job->precision == FMMCL_DOUBLE ? "double" : "single",
           job->problem_class);
}

void tune_job_free(tune_job *job) {
  free(job->check_x);
  free(job->check_q);
  free(job->ref_pot);
  free(job->ref_grad);
  free(job->time_x);
  free(job->time_q);
  free(job->pot);
  free(job->grad);
  memset(job, 0, sizeof *job);
}

int tune_job_describe(tune_job *job, const fmmcl_tuning_space *space, fmmcl_precision precision,
                      const char *problem_class, size_t n_time, int repeats, char *why, size_t len) {
  memset(job, 0, sizeof *job);
  job->space = space;
  job->precision = precision;
  job->n_time = n_time;
  job->repeats = repeats;
  snprintf(job->problem_class, sizeof job->problem_class, "%s", problem_class);
  if (!fmmcl_tuning_class_parse(space, problem_class, &job->cls)) {
    snprintf(why, len, "%s is not a problem class of %s (%s%d..%s%d)", problem_class, space->kernel,
             space->class_prefix, space->class_min, space->class_prefix, space->class_max);
    return 0;
  }
  return 1;
}

int tune_job_init(tune_job *job, const fmmcl_tuning_space *space, fmmcl_precision precision,
                  const char *problem_class, size_t n_time, int repeats, char *why, size_t len) {
  if (!tune_job_describe(job, space, precision, problem_class, n_time, repeats, why, len)) return 0;
  fmmcl_plan_options_init(&job->opt, space->plan_kernel);
  job->opt.method = space->plan_method;
  job->opt.precision = precision;
  if (job->cls.dim) job->opt.dim = job->cls.dim;
  if (job->cls.order) job->opt.order = job->cls.order;
  /* exp(-r^2 / 2 sigma^2) spans e^0 .. e^-8 over the unit cube */
  if (space->plan_kernel == FMMCL_GAUSSIAN) job->opt.sigma = sqrt((double)job->opt.dim) / 4.0;
  const int fmm = space->plan_method != FMMCL_DIRECT;
  job->n_check = fmm ? N_CHECK_FMM : N_CHECK;
  job->check_leaf = fmm ? CHECK_LEAF_FMM : 0;
  job->tolerance =
      precision == FMMCL_DOUBLE ? (fmm ? TOL_FMM_DOUBLE : TOL_DOUBLE) : (fmm ? TOL_FMM_SINGLE : TOL_SINGLE);
  const size_t dim = (size_t)job->opt.dim, nc = job->n_check, big = n_time > nc ? n_time : nc;
  job->check_x = malloc(nc * dim * sizeof(double));
  job->check_q = malloc(nc * sizeof(double));
  job->ref_pot = malloc(nc * sizeof(double));
  job->ref_grad = malloc(nc * dim * sizeof(double));
  job->time_x = malloc(n_time * dim * sizeof(double));
  job->time_q = malloc(n_time * sizeof(double));
  job->pot = malloc(big * sizeof(double));
  job->grad = malloc(big * dim * sizeof(double));
  if (!job->check_x || !job->check_q || !job->ref_pot || !job->ref_grad || !job->time_x || !job->time_q ||
      !job->pot || !job->grad) {
    snprintf(why, len, "out of host memory for %zu points", big);
    tune_job_free(job);
    return 0;
  }
  grid_points(1, nc, (int)dim, job->check_x);
  charges(2, nc, job->check_q);
  grid_points(3, n_time, (int)dim, job->time_x);
  charges(4, n_time, job->time_q);
  if (fmm) return 1; /* the reference needs the device: tune_job_reference */
  /* targets are the sources: Laplace then takes its guarded (self) path */
  if (fmmcl_reference_direct(&job->opt, nc, job->check_x, job->check_q, 0, NULL, job->ref_pot,
                             job->ref_grad) != FMMCL_SUCCESS) {
    snprintf(why, len, "reference sum failed: %s", fmmcl_last_error(NULL));
    tune_job_free(job);
    return 0;
  }
  return 1;
}

static double rel_l2(const double *a, const double *ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* A plan of the job's problem built with defines (NULL: the library's
 * own); the check problem of an FMM kernel in its small leaves. */
static tune_verdict make_plan(fmmcl_context ctx, tune_job *job, const char *defines, size_t n,
                              const double *x, fmmcl_plan *plan, char *why, size_t len) {
  fmmcl_plan_options o = job->opt;
  if (x == job->check_x) o.leaf_size = job->check_leaf;
  if (defines) fmmcl_context_override_defines(ctx, job->space->kernel, defines);
  fmmcl_status st = fmmcl_plan_create(ctx, &o, n, x, 0, NULL, plan);
  if (defines) fmmcl_context_override_defines(ctx, job->space->kernel, NULL);
  if (st == FMMCL_SUCCESS) return TUNE_OK;
  /* first line of the message: the build log follows it */
  const char *msg = fmmcl_last_error(ctx), *nl = strchr(msg, '\n');
  snprintf(why, len, "%s: %.*s", fmmcl_strerror(st), nl ? (int)(nl - msg) : (int)strlen(msg), msg);
  return TUNE_BUILD_FAILED;
}

/* Seconds of a phase, or the sum of a comma-separated list of them; -1
 * when the plan recorded none of them. */
static double phase_seconds(fmmcl_plan plan, const char *phases) {
  fmmcl_phase_time t[32];
  size_t n = 0;
  double sum = 0;
  int found = 0;
  fmmcl_plan_timings(plan, t, 32, &n);
  for (const char *p = phases; *p;) {
    const size_t w = strcspn(p, ",");
    for (size_t i = 0; i < n && i < 32; i++)
      if (strlen(t[i].name) == w && strncmp(t[i].name, p, w) == 0) sum += t[i].seconds, found = 1;
    p += w + (p[w] == ',');
  }
  return found ? sum : -1;
}

/* One timed run of plan; *s = the kernel phase's seconds. */
static tune_verdict run_once(fmmcl_context ctx, tune_job *job, fmmcl_plan plan, double *s, char *why,
                             size_t len) {
  fmmcl_status st = fmmcl_plan_execute(plan, job->time_q, job->pot, job->grad);
  if (st == FMMCL_SUCCESS && (*s = phase_seconds(plan, job->space->phase)) >= 0) return TUNE_OK;
  snprintf(why, len, "run failed: %s", st ? fmmcl_last_error(ctx) : "no timing of the kernel phase");
  return TUNE_RUN_FAILED;
}

int tune_job_reference(fmmcl_context ctx, tune_job *job, char *why, size_t len) {
  if (job->space->plan_method == FMMCL_DIRECT) return 1;
  fmmcl_plan plan;
  if (make_plan(ctx, job, NULL, job->n_check, job->check_x, &plan, why, len)) return 0;
  fmmcl_status st = fmmcl_plan_execute(plan, job->check_q, job->ref_pot, job->ref_grad);
  fmmcl_plan_destroy(plan);
  if (st) snprintf(why, len, "the reference FMM failed: %s", fmmcl_last_error(ctx));
  return st == FMMCL_SUCCESS;
}

static tune_verdict check(fmmcl_context ctx, tune_job *job, const char *defines, char *why, size_t len) {
  fmmcl_plan plan;
  tune_verdict v = make_plan(ctx, job, defines, job->n_check, job->check_x, &plan, why, len);
  if (v) return v;
  fmmcl_status st = fmmcl_plan_execute(plan, job->check_q, job->pot, job->grad);
  fmmcl_plan_destroy(plan);
  if (st) {
    snprintf(why, len, "run failed: %s", fmmcl_last_error(ctx));
    return TUNE_RUN_FAILED;
  }
  const size_t dim = (size_t)job->opt.dim;
  const double ep = rel_l2(job->pot, job->ref_pot, job->n_check);
  const double eg = rel_l2(job->grad, job->ref_grad, job->n_check * dim);
  if (!(ep <= job->tolerance && eg <= job->tolerance)) { /* NaN fails too */
    snprintf(why, len, "wrong result: relative L2 error %.2e (potential), %.2e (gradient) > %.0e", ep, eg,
             job->tolerance);
    return TUNE_WRONG;
  }
  return TUNE_OK;
}

tune_verdict tune_evaluate(fmmcl_context ctx, tune_job *job, const char *defines, double *ms, char *why,
                           size_t len) {
  tune_verdict v = check(ctx, job, defines, why, len);
  if (v) return v;
  fmmcl_plan plan;
  if ((v = make_plan(ctx, job, defines, job->n_time, job->time_x, &plan, why, len))) return v;
  double s[64], dummy;
  const int reps = job->repeats < 1 ? 1 : job->repeats > 64 ? 64 : job->repeats;
  v = run_once(ctx, job, plan, &dummy, why, len); /* warm-up: lazy compilation, caches, clocks */
  for (int r = 0; !v && r < reps; r++) v = run_once(ctx, job, plan, &s[r], why, len);
  fmmcl_plan_destroy(plan);
  if (!v) *ms = 1e3 * fmmcl_median(s, (size_t)reps);
  return v;
}

tune_verdict tune_compare(fmmcl_context ctx, tune_job *job, const char *a, const char *b, int rounds,
                          double *ms_a, double *ms_b, char *why, size_t len) {
  fmmcl_plan pa = NULL, pb = NULL;
  tune_verdict v = make_plan(ctx, job, a, job->n_time, job->time_x, &pa, why, len);
  if (!v) v = make_plan(ctx, job, b, job->n_time, job->time_x, &pb, why, len);
  const int reps = job->repeats < 1 ? 1 : job->repeats > 16 ? 16 : job->repeats;
  if (rounds > 8) rounds = 8;
  double sa[128], sb[128], dummy;
  size_t n = 0;
  if (!v) v = run_once(ctx, job, pa, &dummy, why, len);
  if (!v) v = run_once(ctx, job, pb, &dummy, why, len);
  for (int r = 0; !v && r < rounds; r++)
    for (int k = 0; !v && k < reps; k++, n++) {
      v = run_once(ctx, job, pa, &sa[n], why, len);
      if (!v) v = run_once(ctx, job, pb, &sb[n], why, len);
    }
  if (pa) fmmcl_plan_destroy(pa);
  if (pb) fmmcl_plan_destroy(pb);
  if (!v) {
    *ms_a = 1e3 * fmmcl_median(sa, n);
    *ms_b = 1e3 * fmmcl_median(sb, n);
  }
  return v;
}
