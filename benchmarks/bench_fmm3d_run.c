/* bench_fmm3d_run.c — one point of bench-fmm3d's sweep: the inputs and their
 * sampled reference, a plan created, executed R times and checked. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_fmm3d.h"
#include "fmmcl_cl.h"
#include "core/internal.h" /* fmmcl_median */

/* K indices spread over [0, n): reproducible and covering the whole cube. */
static void sample(bench_fmm3d_inputs *in) {
  for (size_t i = 0; i < in->k; i++) in->idx[i] = (size_t)(((double)i + 0.5) * (double)in->n / (double)in->k);
}

static FILE *points_open(const char *path, size_t *n) {
  int64_t n64 = 0;
  FILE *f = fopen(path, "rb");
  if (!f || fread(&n64, 8, 1, f) != 1 || n64 < 1) {
    fprintf(stderr, "bench-fmm3d: %s is not a point file (int64 n, then 3n + n float64)\n", path);
    exit(1);
  }
  *n = (size_t)n64;
  return f;
}

size_t bench_fmm3d_points_count(const char *path) {
  size_t n;
  fclose(points_open(path, &n));
  return n;
}

static void points_read(const char *path, size_t n, double *x, double *q) {
  size_t m;
  FILE *f = points_open(path, &m);
  if (m != n || fread(x, 8, 3 * n, f) != 3 * n || fread(q, 8, n, f) != n) {
    fprintf(stderr, "bench-fmm3d: %s: short point file\n", path);
    exit(1);
  }
  fclose(f);
}

void bench_fmm3d_write_results(const bench_fmm3d_inputs *in, const char *path) {
  FILE *f = fopen(path, "wb");
  int ok = f != NULL;
  for (size_t i = 0; ok && i < in->n; i++) {
    const double row[4] = {in->pot[i], in->grad[3 * i], in->grad[3 * i + 1], in->grad[3 * i + 2]};
    ok = fwrite(row, 8, 4, f) == 4;
  }
  if (f && fclose(f)) ok = 0;
  if (!ok) {
    fprintf(stderr, "bench-fmm3d: cannot write %s\n", path);
    exit(1);
  }
}

void bench_fmm3d_inputs_make(bench_fmm3d_inputs *in, size_t n, size_t check, const char *points) {
  in->n = n;
  in->k = check < n ? check : n;
  in->x = malloc(3 * n * sizeof *in->x), in->q = malloc(n * sizeof *in->q);
  in->pot = malloc(n * sizeof *in->pot), in->grad = malloc(3 * n * sizeof *in->grad);
  in->idx = malloc((in->k + 1) * sizeof *in->idx);
  in->ref_pot = malloc((in->k + 1) * sizeof(double)), in->ref_grad = malloc(3 * (in->k + 1) * sizeof(double));
  if (!in->x || !in->q || !in->pot || !in->grad || !in->idx || !in->ref_pot || !in->ref_grad) {
    fprintf(stderr, "bench-fmm3d: out of host memory at N = %zu\n", n);
    exit(1);
  }
  if (points) points_read(points, n, in->x, in->q);
  else bench_random_points(1, n, 3, in->x), bench_random_charges(2, n, in->q);
  if (!in->k) return;
  sample(in);
  double *t = malloc(3 * in->k * sizeof *t);
  if (!t) {
    fprintf(stderr, "bench-fmm3d: out of host memory\n");
    exit(1);
  }
  for (size_t i = 0; i < in->k; i++) memcpy(t + 3 * i, in->x + 3 * in->idx[i], 3 * sizeof *t);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  double t0 = bench_now();
  if (n >= 1000000) fprintf(stderr, "reference: %zu targets x %zu sources on the host...\n", in->k, n);
  bench_check(NULL, fmmcl_reference_direct(&o, n, in->x, in->q, in->k, t, in->ref_pot, in->ref_grad),
              "fmmcl_reference_direct");
  if (n >= 1000000) fprintf(stderr, "reference: %.1f s\n", bench_now() - t0);
  free(t);
}

void bench_fmm3d_inputs_free(bench_fmm3d_inputs *in) {
  free(in->x), free(in->q), free(in->pot), free(in->grad), free(in->idx), free(in->ref_pot),
      free(in->ref_grad);
}

/* Relative L2 error of the device results on the sampled targets. */
static void measure_error(const bench_fmm3d_inputs *in, bench_fmm3d_point *pt) {
  double dp = 0, np = 0, dg = 0, ng = 0;
  for (size_t i = 0; i < in->k; i++) {
    const size_t j = in->idx[i];
    dp += (in->pot[j] - in->ref_pot[i]) * (in->pot[j] - in->ref_pot[i]);
    np += in->ref_pot[i] * in->ref_pot[i];
    for (int c = 0; c < 3; c++) {
      double d = in->grad[3 * j + c] - in->ref_grad[3 * i + c];
      dg += d * d, ng += in->ref_grad[3 * i + c] * in->ref_grad[3 * i + c];
    }
  }
  pt->err_pot = in->k ? sqrt(dp / np) : NAN;
  pt->err_grad = in->k ? sqrt(dg / ng) : NAN;
}

static double phase_time(const fmmcl_phase_time *ph, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(ph[i].name, name) == 0) return ph[i].seconds;
  return 0;
}

static fmmcl_status failed(fmmcl_context ctx, fmmcl_status st, const char *what) {
  fprintf(stderr, "\n  %s: %s\n  %s\n", what, fmmcl_strerror(st), fmmcl_last_error(ctx));
  return st;
}

/* Device buffers of --resident: the charges uploaded once, the results
 * read back once after the timed runs (for the error). */
typedef struct resident_buffers {
  cl_mem q, pot, grad;
  size_t real_size;
} resident_buffers;

static void resident_release(resident_buffers *d) {
  cl_mem *all[] = {&d->q, &d->pot, &d->grad};
  for (int i = 0; i < 3; i++)
    if (*all[i]) clReleaseMemObject(*all[i]), *all[i] = NULL;
}

static fmmcl_status resident_open(fmmcl_context ctx, fmmcl_plan plan, const bench_fmm3d_inputs *in,
                                  resident_buffers *d) {
  fmmcl_plan_info info;
  cl_context cl;
  fmmcl_status st = fmmcl_plan_describe(plan, &info);
  if (!st) st = fmmcl_context_cl_handles(ctx, &cl, NULL, NULL);
  if (st) return st;
  d->real_size = info.precision == FMMCL_DOUBLE ? 8 : 4;
  void *h = malloc(3 * in->n * d->real_size);
  if (!h) return FMMCL_ERROR_OUT_OF_MEMORY;
  for (size_t i = 0; i < in->n; i++)
    if (d->real_size == 4) ((float *)h)[i] = (float)in->q[i];
    else ((double *)h)[i] = in->q[i];
  cl_int e1, e2, e3 = CL_SUCCESS;
  d->q = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, in->n * d->real_size, h, &e1);
  d->pot = clCreateBuffer(cl, CL_MEM_READ_WRITE, in->n * d->real_size, NULL, &e2);
  if (in->grad) d->grad = clCreateBuffer(cl, CL_MEM_READ_WRITE, 3 * in->n * d->real_size, NULL, &e3);
  free(h);
  return e1 || e2 || e3 ? FMMCL_ERROR_OUT_OF_MEMORY : FMMCL_SUCCESS;
}

/* The results into in->pot and in->grad, as the host path leaves them. */
static fmmcl_status resident_close(fmmcl_context ctx, fmmcl_plan plan, const bench_fmm3d_inputs *in,
                                   resident_buffers *d) {
  (void)plan;
  cl_command_queue queue;
  fmmcl_context_cl_handles(ctx, NULL, &queue, NULL);
  const size_t rs = d->real_size;
  void *h = malloc(3 * in->n * rs);
  if (!h) return FMMCL_ERROR_OUT_OF_MEMORY;
  cl_int err = clEnqueueReadBuffer(queue, d->pot, CL_TRUE, 0, in->n * rs, h, 0, NULL, NULL);
  for (size_t i = 0; !err && i < in->n; i++) in->pot[i] = rs == 4 ? ((float *)h)[i] : ((double *)h)[i];
  if (!err && in->grad)
    err = clEnqueueReadBuffer(queue, d->grad, CL_TRUE, 0, 3 * in->n * rs, h, 0, NULL, NULL);
  for (size_t i = 0; !err && in->grad && i < 3 * in->n; i++)
    in->grad[i] = rs == 4 ? ((float *)h)[i] : ((double *)h)[i];
  free(h);
  return err ? FMMCL_ERROR_OPENCL : FMMCL_SUCCESS;
}

/* Executes R times: wall times in wall[], phase times per name (in the
 * order the first run recorded them) in per_phase[name][run]. */
static fmmcl_status execute_runs(fmmcl_context ctx, fmmcl_plan plan, const bench_fmm3d_inputs *in, int repeat,
                                 double *wall, double (*per_phase)[BENCH_FMM3D_MAX_PHASES],
                                 bench_fmm3d_point *pt) {
  resident_buffers dev = {0};
  fmmcl_status st = in->resident ? resident_open(ctx, plan, in, &dev) : FMMCL_SUCCESS;
  for (int r = 0; !st && r < repeat; r++) {
    double t0 = bench_now();
    st = in->resident ? fmmcl_plan_execute_buffers(plan, dev.q, dev.pot, dev.grad)
                      : fmmcl_plan_execute(plan, in->q, in->pot, in->grad);
    wall[r] = bench_now() - t0;
    if (st) break;
    fmmcl_phase_time ph[BENCH_FMM3D_MAX_PHASES];
    size_t c;
    fmmcl_plan_timings(plan, ph, BENCH_FMM3D_MAX_PHASES, &c);
    if (c > BENCH_FMM3D_MAX_PHASES) c = BENCH_FMM3D_MAX_PHASES;
    for (size_t i = 0; i < c; i++) {
      if (strcmp(ph[i].name, "build") == 0) continue;
      size_t k = 0;
      while (k < pt->n_phases && strcmp(pt->phase_name[k], ph[i].name) != 0) k++;
      if (k == pt->n_phases) {
        if (r > 0) continue; /* a phase only some runs record: ignored */
        snprintf(pt->phase_name[k], sizeof pt->phase_name[k], "%s", ph[i].name);
        pt->n_phases++;
      }
      per_phase[r][k] = ph[i].seconds;
    }
  }
  if (!st && in->resident) st = resident_close(ctx, plan, in, &dev);
  resident_release(&dev);
  return st ? failed(ctx, st, in->resident ? "fmmcl_plan_execute_buffers" : "fmmcl_plan_execute") : st;
}

/* Where the last update's time went, as the plan recorded it before the
 * next execute (stderr): the profile of fmmcl_plan_update_positions. */
static void report_update_phases(fmmcl_plan plan, size_t n, int first) {
  fmmcl_phase_time ph[BENCH_FMM3D_MAX_PHASES];
  size_t c;
  if (fmmcl_plan_timings(plan, ph, BENCH_FMM3D_MAX_PHASES, &c)) return;
  if (c > BENCH_FMM3D_MAX_PHASES) c = BENCH_FMM3D_MAX_PHASES;
  fprintf(stderr, "  %s update's phases at N = %zu (ms):", first ? "first" : "last", n);
  for (size_t k = 0; k < c; k++)
    if (strcmp(ph[k].name, "build") != 0) fprintf(stderr, " %s %.2f", ph[k].name, 1e3 * ph[k].seconds);
  fprintf(stderr, "\n");
}

/* 2R time steps alternating between the points moved by up to 1e-3 and
 * the points themselves (so the last, whose results stay for the error,
 * is on the points): update and execute timed apart, medians kept; with
 * --resident the positions, charges and results stay on the device. */
static fmmcl_status step_runs(fmmcl_context ctx, fmmcl_plan plan, const bench_fmm3d_inputs *in, int repeat,
                              bench_fmm3d_point *pt) {
  const size_t n3 = 3 * in->n;
  double *moved = malloc(n3 * sizeof *moved), *upd = malloc(2 * repeat * sizeof *upd);
  double *step = malloc(2 * repeat * sizeof *step);
  if (!moved || !upd || !step) {
    fprintf(stderr, "bench-fmm3d: out of host memory\n");
    exit(1);
  }
  bench_random_points(7, in->n, 3, moved);
  for (size_t i = 0; i < n3; i++) moved[i] = fmin(fmax(in->x[i] + 2e-3 * (moved[i] - 0.5), 0), 1);
  resident_buffers dev = {0};
  fmmcl_status st = in->resident ? resident_open(ctx, plan, in, &dev) : FMMCL_SUCCESS;
  /* --resident: both position sets kept on the device, uploaded here,
   * outside the timed updates, by a blocking write on the queue: a buffer
   * made with CL_MEM_COPY_HOST_PTR may reach the device only when first
   * used (NVIDIA), which timed that copy as part of the first updates */
  cl_mem at[2] = {NULL, NULL};
  for (int k = 0; !st && in->resident && k < 2; k++) {
    cl_context cl;
    cl_command_queue q;
    cl_int err = CL_SUCCESS;
    st = fmmcl_context_cl_handles(ctx, &cl, &q, NULL);
    if (!st) at[k] = clCreateBuffer(cl, CL_MEM_READ_ONLY, n3 * sizeof *moved, NULL, &err);
    if (!st && !err)
      err = clEnqueueWriteBuffer(q, at[k], CL_TRUE, 0, n3 * sizeof *moved, k ? in->x : moved, 0, NULL, NULL);
    if (!st && !err) err = clFinish(q);
    if (!st && err) st = FMMCL_ERROR_OUT_OF_MEMORY;
  }
  for (int r = 0; !st && r < 2 * repeat; r++) {
    double t0 = bench_now();
    st = in->resident ? fmmcl_plan_update_positions_buffers(plan, at[r % 2], NULL)
                      : fmmcl_plan_update_positions(plan, r % 2 ? in->x : moved, NULL);
    const double t1 = bench_now();
    if (!st && (r == 0 || r == 2 * repeat - 1)) report_update_phases(plan, in->n, r == 0);
    if (!st)
      st = in->resident ? fmmcl_plan_execute_buffers(plan, dev.q, dev.pot, dev.grad)
                        : fmmcl_plan_execute(plan, in->q, in->pot, in->grad);
    upd[r] = t1 - t0, step[r] = bench_now() - t0;
  }
  if (!st && in->resident) st = resident_close(ctx, plan, in, &dev);
  resident_release(&dev);
  for (int k = 0; k < 2; k++)
    if (at[k]) clReleaseMemObject(at[k]);
  if (!st) {
    /* the spread too: a steady update is part of the aim */
    double lo = upd[0], hi = upd[0], best = step[0];
    for (int r = 1; r < 2 * repeat; r++)
      lo = fmin(lo, upd[r]), hi = fmax(hi, upd[r]), best = fmin(best, step[r]);
    fprintf(stderr, "  updates at N = %zu (ms): min %.2f max %.2f first %.2f; update + execute: best %.2f\n",
            in->n, 1e3 * lo, 1e3 * hi, 1e3 * upd[0], 1e3 * best);
  }
  if (!st) pt->update_s = fmmcl_median(upd, 2 * repeat), pt->step_s = fmmcl_median(step, 2 * repeat);
  free(moved), free(upd), free(step);
  return st ? failed(ctx, st,
                     in->resident ? "a time step (fmmcl_plan_update_positions_buffers + execute_buffers)"
                                  : "a time step (fmmcl_plan_update_positions + execute)")
            : st;
}

fmmcl_status bench_fmm3d_run_point(fmmcl_context ctx, const fmmcl_plan_options *opt,
                                   const bench_fmm3d_inputs *in, int repeat, bench_fmm3d_point *pt) {
  fmmcl_plan plan;
  /* A first plan of this size, timed and dropped: it pins the staging
   * memory the context then keeps. The measured plan is the next one, as
   * in a simulation that rebuilds its tree every step. */
  double t0 = bench_now();
  fmmcl_status st = fmmcl_plan_create(ctx, opt, in->n, in->x, 0, NULL, &plan);
  if (st) return failed(ctx, st, "fmmcl_plan_create");
  pt->create_first_s = bench_now() - t0;
  fmmcl_plan_destroy(plan);
  st = fmmcl_plan_create(ctx, opt, in->n, in->x, 0, NULL, &plan);
  if (st) return failed(ctx, st, "fmmcl_plan_create");
  fmmcl_phase_time ph[BENCH_FMM3D_MAX_PHASES];
  size_t c;
  fmmcl_plan_timings(plan, ph, BENCH_FMM3D_MAX_PHASES, &c);
  if (c > BENCH_FMM3D_MAX_PHASES) c = BENCH_FMM3D_MAX_PHASES;
  pt->create_s = phase_time(ph, c, "build");
  /* the tree build is the device keys and sort plus the host refinement */
  pt->tree_s = phase_time(ph, c, "sort") + phase_time(ph, c, "tree");
  pt->lists_s = phase_time(ph, c, "lists");
  pt->tables_s = phase_time(ph, c, "tables");
  pt->kernels_s = pt->create_s - pt->tree_s - pt->lists_s - pt->tables_s;
  /* the order, the treecode's theta and the leaf size the plan chose */
  fmmcl_plan_info info;
  if ((st = fmmcl_plan_describe(plan, &info))) {
    fmmcl_plan_destroy(plan);
    return failed(ctx, st, "fmmcl_plan_describe");
  }
  pt->order = info.order, pt->theta = info.theta, pt->leaf_size = info.leaf_size;
  for (int k = 0; k < BENCH_FMM3D_N_OPS; k++)
    if ((st = fmmcl_plan_counts(plan, bench_fmm3d_ops[k], &pt->count[k]))) {
      fmmcl_plan_destroy(plan);
      return failed(ctx, st, "fmmcl_plan_counts");
    }
  double *wall = malloc(repeat * sizeof *wall), *v = malloc(repeat * sizeof *v);
  double(*per_phase)[BENCH_FMM3D_MAX_PHASES] = calloc(repeat, sizeof *per_phase);
  if (!wall || !v || !per_phase) {
    fprintf(stderr, "bench-fmm3d: out of host memory\n");
    exit(1);
  }
  pt->n_phases = 0;
  st = execute_runs(ctx, plan, in, repeat, wall, per_phase, pt);
  pt->update_s = pt->step_s = NAN;
  if (!st && in->step) st = step_runs(ctx, plan, in, repeat, pt);
  fmmcl_plan_destroy(plan);
  if (!st) {
    for (size_t k = 0; k < pt->n_phases; k++) {
      for (int r = 0; r < repeat; r++) v[r] = per_phase[r][k];
      pt->phase_s[k] = fmmcl_median(v, repeat);
    }
    pt->execute_s = fmmcl_median(wall, repeat);
    pt->execute_min_s = wall[0]; /* sorted by fmmcl_median() */
    pt->end_to_end_s = pt->tree_s + pt->lists_s + pt->tables_s + pt->execute_s;
    measure_error(in, pt);
  }
  free(wall), free(v), free(per_phase);
  return st;
}

double bench_fmm3d_warm_up(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n) {
  double *x = malloc(3 * n * sizeof *x);
  if (!x) return -1;
  bench_random_points(3, n, 3, x);
  fmmcl_plan plan;
  double t0 = bench_now();
  fmmcl_status st = fmmcl_plan_create(ctx, opt, n, x, 0, NULL, &plan);
  double t = bench_now() - t0;
  free(x);
  if (st) {
    failed(ctx, st, "fmmcl_plan_create (warm-up)");
    return -1;
  }
  fmmcl_plan_destroy(plan);
  return t;
}
