/* bench_precision.c — accuracy over every target, per distribution and
 * method: each plan against an independent double-precision reference
 * (the plain-C direct sum, or a double FMM 1000 times tighter where that
 * is too slow), relative L2 and max-norm errors of potential and gradient,
 * and the plan's execute time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "testing/distributions.h"

static void usage(void) {
  printf(
      "usage: bench-precision [options]\n"
      "For each distribution and method, evaluates a plan and compares every target\n"
      "with a double-precision reference: the plain-C direct sum (OpenMP) when\n"
      "N^2 <= --direct-max, else a double-precision FMM of the same kernel at\n"
      "tolerance --tol / 1000 on the same device. Writes CSV:\n"
      "device,dim,kernel,distribution,n,shift,method,precision,tol,order,pot_l2,grad_l2,pot_max,grad_max,\n"
      "execute_s,reference,theta (the treecode's, as its plan chose it; 0 for other methods)\n"
      "Errors are relative: L2 = |a - ref|_2 / |ref|_2 over all targets (the gradient\n"
      "as one vector per target), max = max_i |a_i - ref_i| / max_i |ref_i|.\n"
      "  --dim 2|3                 2D or 3D (default 3)\n"
      "  --kernel laplace|gaussian Laplace (default) or the Gaussian exp(-r^2 / (2 sigma^2))\n"
      "  --sigma S                 the Gaussian's width (default 0.05)\n"
      "  --dist LIST               comma-separated: uniform,plummer,ellipsoid,surface,clusters\n"
      "                            (default: all of the dimension's)\n"
      "  --methods LIST            comma-separated: fmm,treecode,direct,bbfmm,fgt (default: Laplace\n"
      "                            fmm,treecode,direct, 2D fmm,direct; Gaussian fgt,direct); bbfmm and\n"
      "                            fgt give the potential only (grad columns nan)\n"
      "  --n N                     points (sources = targets; default 20000)\n"
      "  --shift S                 add S to every coordinate (default 0)\n"
      "  --precision single|double (default single)\n"
      "  --tol T                   requested tolerance (default 1e-4)\n"
      "  --order P                 expansion order of the tree methods (default 0: from --tol)\n"
      "  --theta T                 the treecode's acceptance parameter (default 0: from --tol)\n"
      "  --leaf-size L             points per leaf of the tree methods (default: the plan's choice)\n"
      "  --repeat R                executes per plan, best time kept (default 3)\n"
      "  --direct-max P            largest N^2 checked by the host direct sum (default 4e10)\n"
      "  --device SEL              gpu, cpu, P:D or a name substring\n"
      "  --csv FILE                CSV output (default stdout)\n"
      "  --help\n");
}

static double now(void) { return bench_now(); }

typedef struct errors {
  double pot_l2, grad_l2, pot_max, grad_max;
} errors;

/* g NULL: the plan gave no gradient, its errors are NaN. */
static errors compare(size_t n, int dim, const double *p, const double *g, const double *rp,
                      const double *rg) {
  double dp = 0, np = 0, dg = 0, ng = 0, mp = 0, mpr = 0, mg = 0, mgr = 0;
  for (size_t i = 0; i < n; i++) {
    const double e = p[i] - rp[i];
    dp += e * e, np += rp[i] * rp[i];
    mp = fmax(mp, fabs(e)), mpr = fmax(mpr, fabs(rp[i]));
    double e2 = 0, r2 = 0;
    for (int k = 0; g && k < dim; k++) {
      const double d = g[i * dim + k] - rg[i * dim + k];
      e2 += d * d, r2 += rg[i * dim + k] * rg[i * dim + k];
    }
    dg += e2, ng += r2;
    mg = fmax(mg, sqrt(e2)), mgr = fmax(mgr, sqrt(r2));
  }
  if (!g) return (errors){sqrt(dp / np), NAN, mp / mpr, NAN};
  return (errors){sqrt(dp / np), sqrt(dg / ng), mp / mpr, mg / mgr};
}

static int parse_method(const char *s) {
  if (strcmp(s, "fmm") == 0) return FMMCL_FMM;
  if (strcmp(s, "treecode") == 0) return FMMCL_TREECODE;
  if (strcmp(s, "direct") == 0) return FMMCL_DIRECT;
  if (strcmp(s, "bbfmm") == 0) return FMMCL_BBFMM;
  if (strcmp(s, "fgt") == 0) return FMMCL_FGT;
  return -1;
}

int main(int argc, char **argv) {
  int dim = 3, repeat = 3, order = 0;
  int leaf_size = 0;
  double theta = 0;
  size_t n = 20000;
  double shift = 0, tol = 1e-4, direct_max = 4e10, sigma = 0.05;
  int gaussian = 0;
  const char *dists = NULL, *methods = NULL, *device = NULL, *csv_path = NULL;
  fmmcl_precision prec = FMMCL_SINGLE;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0) {
      usage();
      return 0;
    }
    if (!v) {
      fprintf(stderr, "bench-precision: %s needs a value (see --help)\n", a);
      return 2;
    }
    i++;
    if (strcmp(a, "--dim") == 0) dim = atoi(v);
    else if (strcmp(a, "--dist") == 0) dists = v;
    else if (strcmp(a, "--methods") == 0) methods = v;
    else if (strcmp(a, "--n") == 0) n = (size_t)strtod(v, NULL);
    else if (strcmp(a, "--kernel") == 0 && (!strcmp(v, "gaussian") || !strcmp(v, "laplace")))
      gaussian = strcmp(v, "gaussian") == 0;
    else if (strcmp(a, "--sigma") == 0) sigma = strtod(v, NULL);
    else if (strcmp(a, "--shift") == 0) shift = strtod(v, NULL);
    else if (strcmp(a, "--tol") == 0) tol = strtod(v, NULL);
    else if (strcmp(a, "--repeat") == 0) repeat = atoi(v);
    else if (strcmp(a, "--order") == 0) order = atoi(v);
    else if (strcmp(a, "--leaf-size") == 0) leaf_size = atoi(v);
    else if (strcmp(a, "--theta") == 0) theta = strtod(v, NULL);
    else if (strcmp(a, "--direct-max") == 0) direct_max = strtod(v, NULL);
    else if (strcmp(a, "--device") == 0) device = v;
    else if (strcmp(a, "--csv") == 0) csv_path = v;
    else if (strcmp(a, "--precision") == 0) prec = strcmp(v, "double") == 0 ? FMMCL_DOUBLE : FMMCL_SINGLE;
    else {
      fprintf(stderr, "bench-precision: unknown option %s (see --help)\n", a);
      return 2;
    }
  }
  if ((dim != 2 && dim != 3) || n < 2 || repeat < 1 || !(tol > 0)) {
    fprintf(stderr, "bench-precision: need --dim 2 or 3, --n >= 2, --repeat >= 1, --tol > 0\n");
    return 2;
  }
  if (!methods) methods = gaussian ? "fgt,direct" : dim == 3 ? "fmm,treecode,direct" : "fmm,direct";
  fmmcl_context ctx;
  bench_check(NULL, fmmcl_context_create(&ctx, device), "fmmcl_context_create");
  bench_print_device(ctx);
  fmmcl_device_info info;
  fmmcl_context_device(ctx, &info);
  FILE *csv = bench_open_csv(csv_path);
  fprintf(csv,
          "device,dim,kernel,distribution,n,shift,method,precision,tol,order,pot_l2,grad_l2,pot_max,grad_max,"
          "execute_s,reference,theta\n");
  double *x = malloc(n * dim * sizeof *x), *q = malloc(n * sizeof *q);
  double *rp = malloc(n * sizeof *rp), *rg = malloc(n * dim * sizeof *rg);
  double *p = malloc(n * sizeof *p), *g = malloc(n * dim * sizeof *g);
  if (!x || !q || !rp || !rg || !p || !g) {
    fprintf(stderr, "bench-precision: out of memory at N = %zu\n", n);
    return 1;
  }
  bench_random_charges(2, n, q);
  const fmmcl_kernel kernel = gaussian ? FMMCL_GAUSSIAN : dim == 3 ? FMMCL_LAPLACE_3D : FMMCL_LAPLACE_2D;
  for (int d = 0; d < FMMCL_DIST_COUNT; d++) {
    if (!fmmcl_distribution_has_dim(d, dim)) continue;
    const char *name = fmmcl_distribution_name(d);
    if (dists) {
      const char *hit = strstr(dists, name);
      if (!hit || (hit != dists && hit[-1] != ',')) continue;
    }
    fmmcl_distribution_points(d, dim, 1, n, shift, x);
    /* the reference: independent of the plans under test */
    fmmcl_plan_options o;
    fmmcl_plan_options_init(&o, kernel);
    o.dim = dim, o.gradient = 1, o.precision = FMMCL_DOUBLE, o.sigma = sigma;
    const char *ref;
    double t0 = now();
    if ((double)n * (double)n <= direct_max) {
      ref = "host-direct";
      bench_check(NULL, fmmcl_reference_direct(&o, n, x, q, 0, NULL, rp, rg), "fmmcl_reference_direct");
    } else {
      ref = gaussian ? "device-fgt-double" : "device-fmm-double";
      o.method = gaussian ? FMMCL_FGT : FMMCL_FMM, o.tolerance = tol / 1000;
      o.gradient = !gaussian; /* the FGT gives the potential only */
      if (gaussian) memset(rg, 0, n * dim * sizeof *rg);
      fmmcl_plan plan;
      bench_check(ctx, fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), "reference plan");
      bench_check(ctx, fmmcl_plan_execute(plan, q, rp, rg), "reference execute");
      fmmcl_plan_destroy(plan);
    }
    fprintf(stderr, "%s: reference (%s) in %.1f s\n", name, ref, now() - t0);
    char list[256];
    snprintf(list, sizeof list, "%s", methods);
    for (char *save = NULL, *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
      const int method = parse_method(m);
      if (method < 0) {
        fprintf(stderr, "bench-precision: unknown method %s\n", m);
        return 2;
      }
      fmmcl_plan_options_init(&o, kernel);
      const int potential_only = method == FMMCL_BBFMM || method == FMMCL_FGT || gaussian;
      o.dim = dim, o.gradient = !potential_only, o.precision = prec, o.method = method, o.sigma = sigma;
      o.tolerance = method == FMMCL_DIRECT || order > 0 ? 0 : tol;
      if (method != FMMCL_DIRECT) o.order = order;
      if (theta > 0) o.theta = theta;
      if (method != FMMCL_DIRECT) o.leaf_size = leaf_size;
      fmmcl_plan plan;
      bench_check(ctx, fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), "fmmcl_plan_create");
      double best = INFINITY;
      for (int r = 0; r < repeat; r++) {
        const double t = now();
        bench_check(ctx, fmmcl_plan_execute(plan, q, p, potential_only ? NULL : g), "fmmcl_plan_execute");
        best = fmin(best, now() - t);
      }
      /* the last execute's phases, for where the time goes */
      fmmcl_phase_time ph[64];
      size_t n_ph = 0;
      if (fmmcl_plan_timings(plan, ph, 64, &n_ph) == FMMCL_SUCCESS) {
        fprintf(stderr, "%s %s phases (ms):", name, m);
        for (size_t k = 0; k < n_ph && k < 64; k++)
          fprintf(stderr, " %s %.2f", ph[k].name, 1e3 * ph[k].seconds);
        double w_m2p = 0, w_p2p = 0;
        fmmcl_plan_counts(plan, "m2p", &w_m2p), fmmcl_plan_counts(plan, "p2p", &w_p2p);
        fprintf(stderr, "; m2p %.3g p2p %.3g\n", w_m2p, w_p2p);
      }
      fmmcl_plan_info pi;
      bench_check(ctx, fmmcl_plan_describe(plan, &pi), "fmmcl_plan_describe");
      fmmcl_plan_destroy(plan);
      const errors e = compare(n, dim, p, potential_only ? NULL : g, rp, rg);
      fprintf(csv, "\"%s\",%d,%s,%s,%zu,%g,%s,%s,%g,%d,%.3e,%.3e,%.3e,%.3e,%.6f,%s,%g\n", info.device_name,
              dim, gaussian ? "gaussian" : "laplace", name, n, shift, m,
              prec == FMMCL_DOUBLE ? "double" : "single", tol, pi.order, e.pot_l2, e.grad_l2, e.pot_max,
              e.grad_max, best, ref, pi.theta);
      fflush(csv);
    }
  }
  if (csv != stdout) fclose(csv);
  free(x), free(q), free(rp), free(rg), free(p), free(g);
  fmmcl_context_destroy(ctx);
  return 0;
}
