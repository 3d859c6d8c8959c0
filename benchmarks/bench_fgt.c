/* bench_fgt.c — reproduces Tables 4 and 5 of Cruz, Layton & Barba (CPC 2011):
 * the FGT's Hermite evaluation in particles per second on the device and on
 * the plain-C reference with 1, 2 and all OpenMP threads, with Gop/s; then
 * the whole FGT against the direct Gaussian sum over N (time, speed-up,
 * error). Writes two CSV tables. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_common.h"
#include "methods/fgt/fgt.h"

typedef struct config {
  const char *device, *hermite_csv, *fgt_csv;
  int dim, fgt_dim, repeat;
  double sigma, fgt_sigma, fgt_tol;
  size_t max_n, cpu_max_n, fgt_min_n, fgt_max_n, direct_max_n, direct_sample;
  fmmcl_precision precision;
  int skip_hermite, skip_fgt;
} config;

static void usage(FILE *to) {
  fprintf(to,
          "usage: bench-fgt [options]\n"
          "  --device SEL        device selector (default: FMMCL_DEVICE, else first GPU)\n"
          "  --precision P       single or double (default double)\n"
          "  --hermite-csv FILE  Hermite-evaluation table (default bench-fgt-hermite.csv)\n"
          "  --fgt-csv FILE      FGT-vs-direct table (default bench-fgt-speedup.csv)\n"
          "  --dim D             dimension of the Hermite table (default 2)\n"
          "  --sigma S           bandwidth of the Hermite table (default 0.0884: boxes of 1/16)\n"
          "  --max-n N           largest N of the Hermite table (default 6553600)\n"
          "  --cpu-max-n N       largest N the CPU reference is timed at (default 102400;\n"
          "                      its time per target does not depend on N at fixed sigma)\n"
          "  --fgt-dim D, --fgt-sigma S, --fgt-tol T   whole FGT (default 3, 0.05, 1e-6)\n"
          "  --fgt-min-n N, --fgt-max-n N   N range of the FGT table (default 1e4 .. 1e7)\n"
          "  --direct-max-n N    largest N the direct sum is run at in full (default 1e6)\n"
          "  --direct-sample K   also time the direct sum over all N sources at K sampled\n"
          "                      targets and scale by N / K (default 0: off); above\n"
          "                      --direct-max-n without it, the time is extrapolated as N^2\n"
          "  --repeat R          executions per measurement, fastest kept (default 3)\n"
          "  --skip-hermite, --skip-fgt\n"
          "  --help              this text\n");
}

static int parse(int argc, char **argv, config *c) {
  *c = (config){NULL,
                "bench-fgt-hermite.csv",
                "bench-fgt-speedup.csv",
                2,
                3,
                3,
                0.0884,
                0.05,
                1e-6,
                6553600,
                102400,
                10000,
                10000000,
                1000000,
                0,
                FMMCL_DOUBLE,
                0,
                0};
  static const struct option opts[] = {{"device", 1, 0, 'd'},
                                       {"precision", 1, 0, 'p'},
                                       {"hermite-csv", 1, 0, 'H'},
                                       {"fgt-csv", 1, 0, 'F'},
                                       {"dim", 1, 0, 'D'},
                                       {"sigma", 1, 0, 's'},
                                       {"max-n", 1, 0, 'n'},
                                       {"cpu-max-n", 1, 0, 'c'},
                                       {"fgt-dim", 1, 0, 'E'},
                                       {"fgt-sigma", 1, 0, 'S'},
                                       {"fgt-tol", 1, 0, 't'},
                                       {"fgt-min-n", 1, 0, 'm'},
                                       {"fgt-max-n", 1, 0, 'M'},
                                       {"direct-max-n", 1, 0, 'x'},
                                       {"direct-sample", 1, 0, 'k'},
                                       {"repeat", 1, 0, 'r'},
                                       {"skip-hermite", 0, 0, 'h' + 256},
                                       {"skip-fgt", 0, 0, 'f' + 256},
                                       {"help", 0, 0, 'h' + 512},
                                       {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) switch (o) {
      case 'd': c->device = optarg; break;
      case 'p': c->precision = strcmp(optarg, "single") == 0 ? FMMCL_SINGLE : FMMCL_DOUBLE; break;
      case 'H': c->hermite_csv = optarg; break;
      case 'F': c->fgt_csv = optarg; break;
      case 'D': c->dim = atoi(optarg); break;
      case 's': c->sigma = atof(optarg); break;
      case 'n': c->max_n = (size_t)atof(optarg); break;
      case 'c': c->cpu_max_n = (size_t)atof(optarg); break;
      case 'E': c->fgt_dim = atoi(optarg); break;
      case 'S': c->fgt_sigma = atof(optarg); break;
      case 't': c->fgt_tol = atof(optarg); break;
      case 'm': c->fgt_min_n = (size_t)atof(optarg); break;
      case 'M': c->fgt_max_n = (size_t)atof(optarg); break;
      case 'x': c->direct_max_n = (size_t)atof(optarg); break;
      case 'k': c->direct_sample = (size_t)atof(optarg); break;
      case 'r': c->repeat = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
      case 'h' + 256: c->skip_hermite = 1; break;
      case 'f' + 256: c->skip_fgt = 1; break;
      case 'h' + 512: usage(stdout); return -1;
      default: usage(stderr); return 1;
    }
  return 0;
}

static double phase_seconds(fmmcl_plan plan, const char *name) {
  fmmcl_phase_time ph[32];
  size_t n = 0;
  fmmcl_plan_timings(plan, ph, 32, &n);
  double s = 0;
  for (size_t i = 0; i < n && i < 32; i++)
    if (strcmp(ph[i].name, name) == 0) s += ph[i].seconds;
  return s;
}

/* Operations of one (target, source cluster) Hermite evaluation, counted
 * as the kernel does them: per axis one subtraction, exp (1), h_1 (2) and
 * 3 per recurrence step; per term DIM multiplications and one addition. */
static double ops_per_eval(int dim, int p, int nterms) {
  return dim * (1.0 + 1 + 2 + 3.0 * (p > 2 ? p - 2 : 0)) + (double)nterms * (dim + 1);
}

/* CPU reference: targets per second of the Hermite evaluation with threads. */
static double cpu_pps(const config *c, int p, size_t n, int threads) {
  double *x = malloc(n * c->dim * sizeof *x), *q = malloc(n * sizeof *q);
  bench_random_points(11, n, c->dim, x);
  bench_random_charges(12, n, q);
  double extent[FMMCL_MAX_DIM];
  for (int k = 0; k < c->dim; k++) extent[k] = 1 / (sqrt(2.0) * c->sigma);
  fmmcl_fgt_params par;
  fmmcl_fgt_setup s;
  bench_check(NULL, fmmcl_fgt_choose(NULL, c->dim, c->sigma, 0, p, n, extent, 0, &par), "fgt parameters");
  bench_check(NULL, fmmcl_fgt_setup_build(NULL, &par, n, x, n, x, FMMCL_FGT_HERMITE, &s), "fgt setup");
  double *A = malloc(s.nh * (size_t)par.nterms * sizeof *A), *pot = malloc(n * sizeof *pot),
         *qs = malloc(n * sizeof *qs);
  for (size_t i = 0; i < n; i++) qs[i] = q[s.src.perm[i]];
  for (size_t h = 0; h < s.nh; h++) fmmcl_fgt_ref_hermite_coefs(&s, s.hbox[h], qs, A + h * par.nterms);
#ifdef _OPENMP
  omp_set_num_threads(threads);
#else
  (void)threads;
#endif
  double best = INFINITY;
  for (int r = 0; r < c->repeat; r++) {
    double t0 = bench_now();
    fmmcl_fgt_ref_hermite_phase(&s, A, pot);
    double t = bench_now() - t0;
    best = t < best ? t : best;
  }
  fmmcl_fgt_setup_free(&s);
  free(x);
  free(q);
  free(A);
  free(pot);
  free(qs);
  return (double)n / best;
}

static int max_threads(void) {
#ifdef _OPENMP
  return omp_get_num_procs();
#else
  return 1;
#endif
}

static void hermite_table(const config *c, fmmcl_context ctx, FILE *out) {
  static const size_t ns[] = {25600, 102400, 409600, 1638400, 6553600};
  static const int ps[] = {5, 9, 12};
  const int all = max_threads();
  fprintf(
      out,
      "dim,sigma,N,p,nterms,clusters_per_target,device_s,pps_device,gops_device,cpu_n,pps_cpu_1,pps_cpu_2,pps_cpu_%d,ops_per_eval\n",
      all);
  for (int pi = 0; pi < 3; pi++) {
    const int p = ps[pi];
    /* the CPU's rate per target does not depend on N at fixed sigma: time it once */
    const size_t cn = c->cpu_max_n;
    const double c1 = cpu_pps(c, p, cn, 1), c2 = cpu_pps(c, p, cn, 2), ca = cpu_pps(c, p, cn, all);
    for (size_t ni = 0; ni < 5 && ns[ni] <= c->max_n; ni++) {
      const size_t n = ns[ni];
      double *x = malloc(n * c->dim * sizeof *x), *q = malloc(n * sizeof *q), *pot = malloc(n * sizeof *pot);
      bench_random_points(11, n, c->dim, x);
      bench_random_charges(12, n, q);
      fmmcl_plan_options o;
      fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
      o.method = FMMCL_FGT;
      o.precision = c->precision;
      o.dim = c->dim;
      o.sigma = c->sigma;
      o.gradient = 0;
      o.order = p;
      setenv("FMMCL_FGT_FORCE", "hermite", 1); /* every near pair by Hermite evaluation */
      fmmcl_plan plan;
      bench_check(ctx, fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), "FGT plan");
      unsetenv("FMMCL_FGT_FORCE");
      double best = INFINITY;
      for (int r = 0; r < c->repeat; r++) {
        bench_check(ctx, fmmcl_plan_execute(plan, q, pot, NULL), "FGT execute");
        double t = phase_seconds(plan, "hermite_eval");
        best = t < best ? t : best;
      }
      double evals = 0;
      fmmcl_plan_counts(plan, "m2p", &evals);
      const fmmcl_fgt_setup *s = fmmcl_fgt_plan_setup(plan);
      const double ops = ops_per_eval(c->dim, p, s->par.nterms);
      fprintf(out, "%d,%g,%zu,%d,%d,%.1f,%.6e,%.4e,%.2f,%zu,%.4e,%.4e,%.4e,%.0f\n", c->dim, c->sigma, n, p,
              s->par.nterms, evals / n, best, n / best, evals * ops / best * 1e-9, cn, c1, c2, ca, ops);
      fflush(out);
      fprintf(stderr, "hermite N=%zu p=%d: %.3f ms, %.3e PPS device, %.3e PPS CPU(%d)\n", n, p, best * 1e3,
              n / best, ca, all);
      fmmcl_plan_destroy(plan);
      free(x);
      free(q);
      free(pot);
    }
  }
}

/* max |pot[idx[i]] - ref[i]| / sum |q| over m targets */
static double max_error(const double *pot, const size_t *idx, const double *ref, size_t m, const double *q,
                        size_t n) {
  double e = 0, Q = 0;
  for (size_t i = 0; i < m; i++) e = fmax(e, fabs(pot[idx ? idx[i] : i] - ref[i]));
  for (size_t i = 0; i < n; i++) Q += fabs(q[i]);
  return e / Q;
}

/* Best wall time of a DIRECT plan over all n sources at m targets: the
 * points idx[0..m-1] (idx NULL: every point, targets = sources); ref gets
 * the potentials (the FGT's reference). */
static double direct_time(const config *c, fmmcl_context ctx, size_t n, const double *x, const double *q,
                          size_t m, const size_t *idx, double *ref) {
  const int dim = c->fgt_dim;
  double *t = NULL;
  if (idx) {
    t = malloc(m * dim * sizeof *t);
    for (size_t i = 0; i < m; i++) memcpy(t + i * dim, x + idx[i] * dim, dim * sizeof *t);
  }
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
  o.precision = c->precision;
  o.dim = dim;
  o.sigma = c->fgt_sigma;
  o.gradient = 0;
  fmmcl_plan plan;
  bench_check(ctx, fmmcl_plan_create(ctx, &o, n, x, idx ? m : 0, t, &plan), "direct plan");
  double best = INFINITY;
  for (int r = 0; r < c->repeat; r++) {
    double t0 = bench_now();
    bench_check(ctx, fmmcl_plan_execute(plan, q, ref, NULL), "direct execute");
    double s = bench_now() - t0;
    best = s < best ? s : best;
  }
  fmmcl_plan_destroy(plan);
  free(t);
  return best;
}

/* The whole FGT against the direct sum. The direct time is measured in
 * full up to --direct-max-n, and with --direct-sample K estimated from K
 * evenly spaced targets against all N sources, times N / K (both where
 * both apply: the overlap checks the estimate); without either, N^2 from
 * the largest measured N. The error is against the device's double direct
 * sum at the sampled (or all) targets, else the host reference at 1000. */
static void fgt_table(const config *c, fmmcl_context ctx, FILE *out) {
  fprintf(out,
          "dim,sigma,tol,N,p,side,bound,fgt_create_s,fgt_execute_s,direct_measured_s,direct_sampled_s,"
          "direct_targets,direct_s,direct_mode,speedup,max_error,error_targets\n");
  double direct_ref_n = 0, direct_ref_t = 0;
  for (double nd = (double)c->fgt_min_n; nd <= (double)c->fgt_max_n * 1.0001; nd *= sqrt(10.0)) {
    const size_t n = (size_t)(nd + 0.5);
    double *x = malloc(n * c->fgt_dim * sizeof *x), *q = malloc(n * sizeof *q),
           *pot = malloc(n * sizeof *pot);
    bench_random_points(21, n, c->fgt_dim, x);
    bench_random_charges(22, n, q);
    fmmcl_plan_options o;
    fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
    o.method = FMMCL_FGT;
    o.precision = c->precision;
    o.dim = c->fgt_dim;
    o.sigma = c->fgt_sigma;
    o.gradient = 0;
    o.tolerance = c->fgt_tol;
    fmmcl_plan plan;
    double t0 = bench_now();
    bench_check(ctx, fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), "FGT plan");
    const double create_s = bench_now() - t0;
    double best = INFINITY;
    for (int r = 0; r < c->repeat; r++) {
      t0 = bench_now();
      bench_check(ctx, fmmcl_plan_execute(plan, q, pot, NULL), "FGT execute");
      double t = bench_now() - t0;
      best = t < best ? t : best;
    }
    double bound = 0;
    fmmcl_plan_error_bound(plan, &bound);
    const fmmcl_fgt_setup *s = fmmcl_fgt_plan_setup(plan);
    const int p = s->par.p;
    const double side = s->par.side;
    fmmcl_plan_destroy(plan);
    double measured = -1, sampled = -1, err = -1;
    size_t err_m = 0, k = 0;
    const char *mode = "measured";
    if (n <= c->direct_max_n) {
      double *ref = malloc(n * sizeof *ref);
      measured = direct_time(c, ctx, n, x, q, n, NULL, ref);
      err = max_error(pot, NULL, ref, n, q, n), err_m = n;
      direct_ref_n = (double)n, direct_ref_t = measured;
      free(ref);
    }
    if (c->direct_sample > 0 && c->direct_sample < n) {
      k = c->direct_sample;
      size_t *idx = malloc(k * sizeof *idx);
      double *ref = malloc(k * sizeof *ref);
      for (size_t i = 0; i < k; i++) idx[i] = (size_t)((double)i * n / k);
      sampled = direct_time(c, ctx, n, x, q, k, idx, ref) * ((double)n / k);
      if (err < 0) err = max_error(pot, idx, ref, k, q, n), err_m = k;
      free(idx);
      free(ref);
    }
    double direct_s = measured >= 0 ? measured : sampled;
    if (measured < 0 && sampled >= 0) mode = "sampled";
    if (direct_s < 0) {
      if (direct_ref_n == 0) { /* this run starts above --direct-max-n */
        const size_t m = c->direct_max_n;
        double *ref = malloc(m * sizeof *ref);
        direct_ref_n = (double)m;
        direct_ref_t = direct_time(c, ctx, m, x, q, m, NULL, ref); /* the first m of these points */
        free(ref);
      }
      direct_s = direct_ref_t * ((double)n / direct_ref_n) * ((double)n / direct_ref_n);
      mode = "extrapolated";
    }
    if (err < 0) { /* no device reference at this N: the host's at 1000 targets */
      err_m = n < 1000 ? n : 1000;
      double *ref = malloc(err_m * sizeof *ref);
      fmmcl_plan_options r = o;
      bench_check(NULL, fmmcl_reference_direct(&r, n, x, q, err_m, x, ref, NULL), "reference");
      err = max_error(pot, NULL, ref, err_m, q, n);
      free(ref);
    }
    fprintf(out, "%d,%g,%g,%zu,%d,%g,%.3e,%.6e,%.6e,%.6e,%.6e,%zu,%.6e,%s,%.2f,%.3e,%zu\n", c->fgt_dim,
            c->fgt_sigma, c->fgt_tol, n, p, side, bound, create_s, best, measured, sampled, k ? k : n,
            direct_s, mode, direct_s / best, err, err_m);
    fflush(out);
    fprintf(stderr,
            "fgt N=%zu p=%d side %g: FGT %.3f ms (create %.3f s), direct %.3f ms (%s%s), speed-up %.2f, "
            "error %.2e (bound %.2e)\n",
            n, p, side, best * 1e3, create_s, direct_s * 1e3, mode,
            sampled >= 0 && measured >= 0 ? ", sampled estimate too" : "", direct_s / best, err, bound);
    free(x);
    free(q);
    free(pot);
  }
}

int main(int argc, char **argv) {
  config c;
  const int parsed = parse(argc, argv, &c);
  if (parsed) return parsed < 0 ? 0 : 2; /* --help: 0 */
  fmmcl_context ctx;
  bench_check(NULL, fmmcl_context_create(&ctx, c.device), "opening the device");
  bench_print_device(ctx);
  if (!c.skip_hermite) {
    FILE *f = bench_open_csv(c.hermite_csv);
    hermite_table(&c, ctx, f);
    if (f != stdout) fclose(f);
  }
  if (!c.skip_fgt) {
    FILE *f = bench_open_csv(c.fgt_csv);
    fgt_table(&c, ctx, f);
    if (f != stdout) fclose(f);
  }
  fmmcl_context_destroy(ctx);
  return 0;
}
