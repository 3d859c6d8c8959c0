/* bench_fmm3d_report.c — bench-fmm3d's output: times and errors, phases and
 * GFLOP/s as CSV, and the crossover N of each tree method against direct. */
#include "bench_fmm3d.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* mkdir -p: the default output folder may be several levels deep. */
static void make_dirs(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s", dir);
  for (char *p = path + 1;; p++) {
    char c = *p;
    if (c != '/' && c != '\0') continue;
    *p = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "bench-fmm3d: cannot create %s: %s\n", path, strerror(errno));
      exit(1);
    }
    *p = c;
    if (!c) break;
  }
}

static FILE *open_in(const char *dir, const char *name, const char *header) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "bench-fmm3d: cannot write %s: %s\n", path, strerror(errno));
    exit(1);
  }
  fprintf(f, "%s\n", header);
  return f;
}

void bench_fmm3d_open(bench_fmm3d_out *o, const char *dir, const char *device) {
  make_dirs(dir);
  o->device = device;
  o->times =
      open_in(dir, "times.csv",
              "device,method,precision,n,order,tol,theta,leaf_size,first_build_s,create_first_s,create_s,"
              "tree_s,lists_s,tables_s,kernels_s,execute_s,execute_min_s,end_to_end_s,"
              "err_potential,err_gradient,check_k,update_s,step_s");
  o->phases = open_in(dir, "phases.csv", "device,method,precision,n,order,phase,seconds");
  o->gflops = open_in(dir, "gflops.csv",
                      "device,method,precision,n,order,phase,count,flops_per_unit,gflop,seconds,gflops");
}

void bench_fmm3d_write(bench_fmm3d_out *o, const bench_fmm3d_point *pt, double tol, double theta,
                       int leaf_size, double first_build_s, size_t check_k) {
  fprintf(
      o->times,
      "\"%s\",%s,%s,%zu,%d,%.3g,%.3g,%d,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.4e,%.4e,%zu,%.6e,%.6e\n",
      o->device, pt->method, pt->precision, pt->n, pt->order, tol, theta, leaf_size, first_build_s,
      pt->create_first_s, pt->create_s, pt->tree_s, pt->lists_s, pt->tables_s, pt->kernels_s, pt->execute_s,
      pt->execute_min_s, pt->end_to_end_s, pt->err_pot, pt->err_grad, check_k, pt->update_s, pt->step_s);
  for (size_t i = 0; i < pt->n_phases; i++)
    fprintf(o->phases, "\"%s\",%s,%s,%zu,%d,%s,%.6e\n", o->device, pt->method, pt->precision, pt->n,
            pt->order, pt->phase_name[i], pt->phase_s[i]);
  for (int k = 0; k < BENCH_FMM3D_N_OPS; k++) {
    const char *op = bench_fmm3d_ops[k];
    double secs = 0;
    for (size_t i = 0; i < pt->n_phases; i++)
      if (strcmp(pt->phase_name[i], op) == 0) secs = pt->phase_s[i];
    if (pt->count[k] <= 0) continue; /* a phase this method does not run */
    const double fpu = bench_fmm3d_flops_per_unit(op, pt->order), gflop = 1e-9 * fpu * pt->count[k];
    fprintf(o->gflops, "\"%s\",%s,%s,%zu,%d,%s,%.6e,%.6g,%.6e,%.6e,%.4g\n", o->device, pt->method,
            pt->precision, pt->n, pt->order, op, pt->count[k], fpu, gflop, secs,
            secs > 0 ? gflop / secs : NAN);
  }
  fflush(o->times), fflush(o->phases), fflush(o->gflops);
}

void bench_fmm3d_close(bench_fmm3d_out *o) { fclose(o->times), fclose(o->phases), fclose(o->gflops); }

/* ---- crossover ---------------------------------------------------------- */

static double measure(const bench_fmm3d_point *p, int e2e) { return e2e ? p->end_to_end_s : p->execute_s; }

/* Time of (method, precision) at N, or -1 when not measured. */
static double time_at(const bench_fmm3d_point *pts, size_t n_pts, const char *method, const char *prec,
                      size_t n, int e2e) {
  for (size_t i = 0; i < n_pts; i++)
    if (pts[i].n == n && strcmp(pts[i].method, method) == 0 && strcmp(pts[i].precision, prec) == 0)
      return measure(&pts[i], e2e);
  return -1;
}

/* First N where the method becomes faster than direct, interpolated in
 * log N on log(t_method / t_direct); *note says why when there is none. */
static double crossover(const bench_fmm3d_point *pts, size_t n_pts, const char *method, const char *prec,
                        int e2e, const char **note) {
  double prev_n = 0, prev_r = 0;
  int have_prev = 0, any = 0;
  for (size_t i = 0; i < n_pts; i++) {
    const bench_fmm3d_point *d = &pts[i];
    if (strcmp(d->method, "direct") != 0 || strcmp(d->precision, prec) != 0) continue;
    double tm = time_at(pts, n_pts, method, prec, d->n, e2e), td = measure(d, e2e);
    if (tm <= 0 || td <= 0) continue;
    double r = log(tm / td), ln = log((double)d->n);
    if (!any && r < 0) {
      *note = "faster than direct at every N measured (crossover below range)";
      return NAN;
    }
    any = 1;
    if (have_prev && prev_r >= 0 && r < 0) {
      *note = "interpolated";
      return exp(prev_n + (ln - prev_n) * prev_r / (prev_r - r));
    }
    prev_n = ln, prev_r = r, have_prev = 1;
  }
  *note = any ? "none in range" : "none in range (no N measured by both)";
  return NAN;
}

void bench_fmm3d_crossover(const bench_fmm3d_point *pts, size_t n_pts, const char *dir, const char *device) {
  FILE *f = open_in(dir, "crossover.csv", "device,precision,method,measure,crossover_n,note");
  static const char *precs[] = {"single", "double"}, *methods[] = {"treecode", "fmm"};
  printf("crossover N against direct (log-log interpolation between sweep points):\n");
  for (int pr = 0; pr < 2; pr++)
    for (int m = 0; m < 2; m++)
      for (int e2e = 0; e2e < 2; e2e++) {
        int seen = 0;
        for (size_t i = 0; i < n_pts; i++)
          seen |= strcmp(pts[i].method, methods[m]) == 0 && strcmp(pts[i].precision, precs[pr]) == 0;
        if (!seen) continue;
        const char *note = "";
        double x = crossover(pts, n_pts, methods[m], precs[pr], e2e, &note);
        const char *what = e2e ? "end_to_end" : "execute";
        char num[32] = "";
        if (!isnan(x)) snprintf(num, sizeof num, "%.0f", x);
        fprintf(f, "\"%s\",%s,%s,%s,%s,%s\n", device, precs[pr], methods[m], what, num, note);
        if (isnan(x)) printf("  %-6s %-8s %-10s %s\n", precs[pr], methods[m], what, note);
        else printf("  %-6s %-8s %-10s N = %.3g\n", precs[pr], methods[m], what, x);
      }
  fclose(f);
}
