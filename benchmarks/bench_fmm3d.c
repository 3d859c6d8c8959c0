/* bench_fmm3d.c — direct vs treecode vs FMM for 3D Laplace over an N sweep
 * (Yokota & Barba): times, measured error, crossover, phases, GFLOP/s. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_fmm3d.h"

typedef struct config {
  const char *device, *out, *methods, *precision;
  const char *override; /* --override KERNEL:PARAMETERS, or NULL */
  const char *points;   /* --points FILE.pts, or NULL */
  const char *results;  /* --results PREFIX, or NULL */
  size_t nmin, nmax, direct_nmax, check;
  int repeat, leaf_size, resident, step;
  double tol, theta;
} config;

static void usage(void) {
  printf(
      "usage: bench-fmm3d [options]\n"
      "Times the 3D Laplace direct sum, treecode and FMM (potential and gradient of\n"
      "uniform random points in the unit cube, charges in [-1,1)) over N = 1, 2, 5 x 10^k\n"
      "from --nmin to --nmax, measures their error against the double-precision host\n"
      "reference, and writes into --out:\n"
      "  times.csv      device,method,precision,n,order,tol,theta,leaf_size,first_build_s,\n"
      "                 create_first_s,create_s,tree_s,lists_s,tables_s,kernels_s,execute_s,execute_min_s,\n"
      "                 end_to_end_s,err_potential,err_gradient,check_k\n"
      "  phases.csv     device,method,precision,n,order,phase,seconds  (Figure 6)\n"
      "  gflops.csv     device,method,precision,n,order,phase,count,flops_per_unit,gflop,\n"
      "                 seconds,gflops  (Figure 7)\n"
      "  crossover.csv  device,precision,method,measure,crossover_n,note\n"
      "and prints the crossover N of treecode and FMM against direct. Plot with\n"
      "  python3 benchmarks/plot_fmm3d.py DIR\n"
      "\n"
      "Times: first_build_s is plan create of a throwaway plan made first (kernels\n"
      "compiled or loaded from the binary cache); create_first_s is the first plan of\n"
      "each N (it pins the host staging memory the context keeps), create_s the\n"
      "second, measured one, as a simulation that re-plans every step sees it;\n"
      "binary cache warm in both. tree_s (device sort + host refinement), lists_s and tables_s\n"
      "(packing and uploading the device tables) as the plan records them;\n"
      "kernels_s = create - tree - lists - tables (kernels from the cache).\n"
      "execute_s is the median over --repeat runs of fmmcl_plan_execute (charges\n"
      "upload, operators, download); end_to_end_s = tree + lists + tables +\n"
      "execute: everything but the kernel build. Phase times are medians too.\n"
      "With --resident, execute_s times fmmcl_plan_execute_buffers on device buffers\n"
      "made once (charges stay on the device; no host transfer in the timing).\n"
      "Errors: relative L2 of potential and gradient on --check sampled targets.\n"
      "\n"
      "  --device SEL             gpu, cpu, P:D or a name substring (default: FMMCL_DEVICE,\n"
      "                           else the first GPU, else the first CPU)\n"
      "  --methods LIST           comma-separated of direct,treecode,fmm (default all)\n"
      "  --precision single|double|both   (default both; double needs fp64)\n"
      "  --tol T                  requested relative error (default 1e-4 single, 1e-7 double)\n"
      "  --theta T                treecode acceptance parameter (default 0: the plan chooses it\n"
      "                           from the tolerance; the one chosen is printed and written)\n"
      "  --leaf-size Q            points per leaf (default 0: the library's choice; times.csv\n"
      "                           and the progress line (q=) give the leaf size the plan took)\n"
      "  --override K:PARAMS      build kernel family K (fmmtune --list) with PARAMS, e.g.\n"
      "                           'fmm3d_p2p:WGS=64 UNROLL=4 TPW=2' (fmmcl_tuning_override)\n"
      "  --nmin N --nmax N        sweep bounds (default 1000 .. 1e7 on a GPU, 1e5 on a CPU)\n"
      "  --direct-nmax N          largest N timed with direct (default 1e6 GPU, 2e4 CPU)\n"
      "  --repeat R               executions per point, median kept (default 5)\n"
      "  --check K                sampled targets for the error (default 1000; 0: none)\n"
      "  --resident               time execution on device buffers (see above)\n"
      "  --step                   also time --repeat time steps: fmmcl_plan_update_positions to\n"
      "                           positions moved by up to 1e-3, then execute (update_s, step_s);\n"
      "                           with --resident, fmmcl_plan_update_positions_buffers from\n"
      "                           positions kept on the device (uploaded outside the timing)\n"
      "  --points FILE.pts        the points and charges of FILE (benchmarks/peers/make_points;\n"
      "                           its N replaces --nmin and --nmax) instead of random ones\n"
      "  --results PREFIX         write each run's results to PREFIX-METHOD-PRECISION.bin\n"
      "                           (float64 rows pot gx gy gz, the points' order)\n"
      "  --out DIR                output folder, made if absent (default out-fmm3d)\n"
      "  --help\n"
      "N may be written 1e6. Progress goes to stderr, the crossover summary to stdout.\n"
      "\n");
  bench_fmm3d_print_flop_model(stdout);
}

/* ---- arguments ---------------------------------------------------------- */

static int parse_size(const char *opt, const char *v, size_t min, size_t *out) {
  char *end;
  double x = strtod(v, &end);
  if (end == v || *end || !(x >= (double)min) || x > 4e9 || x != floor(x)) {
    fprintf(stderr, "bench-fmm3d: %s wants a whole number >= %zu, got '%s'\n", opt, min, v);
    return 0;
  }
  *out = (size_t)x;
  return 1;
}

static int parse_real(const char *opt, const char *v, double *out) {
  char *end;
  *out = strtod(v, &end);
  if (end == v || *end || !(*out > 0) || !isfinite(*out)) {
    fprintf(stderr, "bench-fmm3d: %s wants a positive number, got '%s'\n", opt, v);
    return 0;
  }
  return 1;
}

/* theta in (0, 1], or 0: the plan chooses it from the tolerance */
static int parse_theta(const char *opt, const char *v, double *out) {
  char *end;
  *out = strtod(v, &end);
  if (end == v || *end || !(*out >= 0 && *out <= 1)) {
    fprintf(stderr, "bench-fmm3d: %s wants 0 (chosen) or a number in (0, 1], got '%s'\n", opt, v);
    return 0;
  }
  return 1;
}

static int method_listed(const char *list, const char *m) {
  size_t len = strlen(m);
  for (const char *p = list; *p;) {
    const char *comma = strchr(p, ',');
    size_t l = comma ? (size_t)(comma - p) : strlen(p);
    if (l == len && strncmp(p, m, len) == 0) return 1;
    p += l + (comma != NULL);
  }
  return 0;
}

/* The methods the sweep runs (LAPLACE_3D), by their library names. */
static const fmmcl_method method_ids[] = {FMMCL_DIRECT, FMMCL_TREECODE, FMMCL_FMM};

static int sweep_method(const char *name) {
  fmmcl_method m;
  if (fmmcl_method_parse(name, &m)) return 0;
  for (size_t i = 0; i < sizeof method_ids / sizeof method_ids[0]; i++)
    if (method_ids[i] == m) return 1;
  return 0;
}

static int check_methods(const char *list) {
  char *copy = strdup(list), *save = NULL;
  int ok = *list != '\0';
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
    if (!sweep_method(t)) {
      fprintf(stderr, "bench-fmm3d: unknown method '%s' (direct, treecode, fmm)\n", t);
      ok = 0;
    }
  free(copy);
  return ok;
}

/* 0: run; 1: --help shown; 2: bad arguments. */
static int parse_args(int argc, char **argv, config *c) {
  *c = (config){.out = "out-fmm3d",
                .methods = "direct,treecode,fmm",
                .precision = "both",
                .nmin = 1000,
                .check = 1000,
                .repeat = 5,
                .theta = 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    size_t r;
    if (strcmp(a, "--resident") == 0 || strcmp(a, "--step") == 0) {
      *(a[2] == 'r' ? &c->resident : &c->step) = 1;
      continue;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage();
      return 1;
    }
    if (strncmp(a, "--", 2) != 0) {
      fprintf(stderr, "bench-fmm3d: unexpected '%s' (see --help)\n", a);
      return 2;
    }
    if (!v) {
      fprintf(stderr, "bench-fmm3d: %s needs a value (see --help)\n", a);
      return 2;
    }
    int ok = 1;
    if (strcmp(a, "--device") == 0) c->device = v;
    else if (strcmp(a, "--points") == 0) c->points = v;
    else if (strcmp(a, "--results") == 0) c->results = v;
    else if (strcmp(a, "--out") == 0) c->out = v;
    else if (strcmp(a, "--methods") == 0) ok = check_methods(c->methods = v);
    else if (strcmp(a, "--precision") == 0) {
      c->precision = v;
      ok = !strcmp(v, "single") || !strcmp(v, "double") || !strcmp(v, "both");
      if (!ok) fprintf(stderr, "bench-fmm3d: --precision is single, double or both, not '%s'\n", v);
    } else if (strcmp(a, "--tol") == 0) ok = parse_real(a, v, &c->tol);
    else if (strcmp(a, "--theta") == 0) ok = parse_theta(a, v, &c->theta);
    else if (strcmp(a, "--nmin") == 0) ok = parse_size(a, v, 1, &c->nmin);
    else if (strcmp(a, "--nmax") == 0) ok = parse_size(a, v, 1, &c->nmax);
    else if (strcmp(a, "--direct-nmax") == 0) ok = parse_size(a, v, 0, &c->direct_nmax);
    else if (strcmp(a, "--check") == 0) ok = parse_size(a, v, 0, &c->check);
    else if (strcmp(a, "--repeat") == 0) ok = parse_size(a, v, 1, &r), c->repeat = (int)r;
    else if (strcmp(a, "--leaf-size") == 0) ok = parse_size(a, v, 0, &r), c->leaf_size = (int)r;
    else if (strcmp(a, "--override") == 0) {
      c->override = v;
      ok = strchr(v, ':') != NULL;
      if (!ok) fprintf(stderr, "bench-fmm3d: --override wants KERNEL:PARAMETERS, got '%s'\n", v);
    } else {
      fprintf(stderr, "bench-fmm3d: unknown option %s (see --help)\n", a);
      return 2;
    }
    if (!ok) return 2;
    i++;
  }
  if (c->nmax && c->nmax < c->nmin) {
    fprintf(stderr, "bench-fmm3d: --nmax %zu is below --nmin %zu\n", c->nmax, c->nmin);
    return 2;
  }
  return 0;
}

/* ---- the sweep ---------------------------------------------------------- */

/* N = 1, 2, 5 x 10^k in [nmin, nmax], nmax itself last if off that grid. */
static size_t sweep_sizes(size_t nmin, size_t nmax, size_t *out, size_t cap) {
  size_t k = 0;
  for (double dec = 1; dec <= 1e10 && k < cap; dec *= 10)
    for (int m = 0; m < 3 && k < cap; m++) {
      double n = dec * (m == 0 ? 1 : m == 1 ? 2 : 5);
      if (n >= (double)nmin && n <= (double)nmax) out[k++] = (size_t)n;
    }
  if (k < cap && (k == 0 || out[k - 1] != nmax)) out[k++] = nmax;
  return k;
}

/* One curve of the sweep: (method, precision), its options, and whether it
 * has stopped (a failure, or past direct's cap). */
typedef struct curve {
  int method, double_prec;
  fmmcl_plan_options opt;
  double tol, first_build_s;
  int stopped;
} curve;

static size_t make_curves(const config *c, const fmmcl_device_info *info, curve *cv) {
  size_t n = 0;
  for (int pr = 0; pr < 2; pr++) {
    if (strcmp(c->precision, "both") != 0 && strcmp(c->precision, pr ? "double" : "single") != 0) continue;
    if (pr && !info->has_fp64) {
      fprintf(stderr, "%s has no fp64: double precision skipped\n", info->device_name);
      continue;
    }
    for (int m = 0; m < 3; m++) {
      if (!method_listed(c->methods, fmmcl_method_name(method_ids[m]))) continue;
      curve *k = &cv[n++];
      memset(k, 0, sizeof *k);
      k->method = m, k->double_prec = pr;
      fmmcl_plan_options_init(&k->opt, FMMCL_LAPLACE_3D);
      k->opt.method = method_ids[m];
      k->opt.precision = pr ? FMMCL_DOUBLE : FMMCL_SINGLE;
      k->opt.theta = c->theta;
      k->opt.leaf_size = c->leaf_size;
      k->tol = c->tol > 0 ? c->tol : pr ? 1e-7 : 1e-4;
      if (m != 0) k->opt.tolerance = k->tol;
    }
  }
  return n;
}

/* A throwaway plan per curve so that kernels compile (or load) before the
 * sweep's create times are taken. */
static void warm_up(fmmcl_context ctx, curve *cv, size_t n_curves) {
  for (size_t i = 0; i < n_curves; i++) {
    curve *k = &cv[i];
    fprintf(stderr, "warm-up: %s %s plan (kernel build or binary cache)...",
            fmmcl_method_name(method_ids[k->method]), k->double_prec ? "double" : "single");
    k->first_build_s = bench_fmm3d_warm_up(ctx, &k->opt, 2000);
    if (k->first_build_s < 0) k->stopped = 1, fprintf(stderr, "curve dropped\n");
    else fprintf(stderr, " %.3f s\n", k->first_build_s);
  }
}

static void progress(size_t done, size_t total, const curve *k, size_t n) {
  fprintf(stderr, "[%zu/%zu] %-8s %-6s N=%-9zu", done, total, fmmcl_method_name(method_ids[k->method]),
          k->double_prec ? "double" : "single", n);
  fflush(stderr);
}

static void progress_result(const bench_fmm3d_point *pt) {
  if (pt->theta > 0) fprintf(stderr, " theta=%.2f", pt->theta);
  fprintf(stderr, " p=%-2d q=%-4d create %9.3f ms  execute %9.3f ms  end-to-end %9.3f ms  err %.1e / %.1e\n",
          pt->order, pt->leaf_size, 1e3 * pt->create_s, 1e3 * pt->execute_s, 1e3 * pt->end_to_end_s,
          pt->err_pot, pt->err_grad);
}

int main(int argc, char **argv) {
  config c;
  int rc = parse_args(argc, argv, &c);
  if (rc) return rc == 1 ? 0 : 2;
  fmmcl_context ctx;
  bench_check(NULL, fmmcl_context_create(&ctx, c.device), "fmmcl_context_create");
  bench_print_device(ctx);
  if (c.override) {
    char kernel[64];
    const size_t len = (size_t)(strchr(c.override, ':') - c.override);
    snprintf(kernel, sizeof kernel, "%.*s", (int)(len < sizeof kernel ? len : sizeof kernel - 1), c.override);
    bench_check(ctx, fmmcl_tuning_override(ctx, kernel, c.override + len + 1), "fmmcl_tuning_override");
  }
  fmmcl_device_info info;
  fmmcl_context_device(ctx, &info);
  if (c.points) c.nmin = c.nmax = bench_fmm3d_points_count(c.points);
  /* a CPU device would take hours at the GPU's sizes */
  if (!c.nmax) c.nmax = info.is_gpu ? 10000000 : 100000;
  if (!c.direct_nmax) c.direct_nmax = info.is_gpu ? 1000000 : 20000;
  if (c.nmax < c.nmin) {
    fprintf(stderr, "bench-fmm3d: --nmin %zu is above the default --nmax %zu\n", c.nmin, c.nmax);
    return 2;
  }
  size_t sizes[64], n_sizes = sweep_sizes(c.nmin, c.nmax, sizes, 64);
  curve cv[6];
  size_t n_curves = make_curves(&c, &info, cv);
  if (!n_curves) {
    fprintf(stderr, "bench-fmm3d: nothing to run\n");
    return 2;
  }
  bench_fmm3d_out out;
  bench_fmm3d_open(&out, c.out, info.device_name);
  warm_up(ctx, cv, n_curves);

  bench_fmm3d_point *pts = calloc(n_sizes * n_curves, sizeof *pts);
  size_t n_pts = 0, total = 0, done = 0;
  for (size_t s = 0; s < n_sizes; s++)
    for (size_t i = 0; i < n_curves; i++) total += cv[i].method != 0 || sizes[s] <= c.direct_nmax;
  for (size_t s = 0; s < n_sizes; s++) {
    bench_fmm3d_inputs in;
    bench_fmm3d_inputs_make(&in, sizes[s], c.check, c.points);
    in.resident = c.resident;
    in.step = c.step;
    for (size_t i = 0; i < n_curves; i++) {
      curve *k = &cv[i];
      if (k->method == 0 && sizes[s] > c.direct_nmax) continue;
      progress(++done, total, k, sizes[s]);
      if (k->stopped) {
        fprintf(stderr, " skipped (failed earlier)\n");
        continue;
      }
      bench_fmm3d_point *pt = &pts[n_pts];
      pt->method = fmmcl_method_name(method_ids[k->method]),
      pt->precision = k->double_prec ? "double" : "single";
      pt->n = sizes[s];
      if (bench_fmm3d_run_point(ctx, &k->opt, &in, c.repeat, pt)) {
        k->stopped = 1; /* larger N would fail the same way (memory) */
        continue;
      }
      progress_result(pt);
      if (c.results) {
        char path[4096];
        snprintf(path, sizeof path, "%s-%s-%s.bin", c.results, pt->method, pt->precision);
        bench_fmm3d_write_results(&in, path);
      }
      bench_fmm3d_write(&out, pt, k->method ? k->tol : 0, pt->theta, pt->leaf_size, k->first_build_s, in.k);
      n_pts++;
    }
    bench_fmm3d_inputs_free(&in);
  }
  bench_fmm3d_close(&out);
  if (n_pts) bench_fmm3d_crossover(pts, n_pts, c.out, info.device_name);
  fprintf(stderr, "wrote %s/{times,phases,gflops,crossover}.csv; plot: python3 benchmarks/plot_fmm3d.py %s\n",
          c.out, c.out);
  free(pts);
  fmmcl_context_destroy(ctx);
  return 0;
}
