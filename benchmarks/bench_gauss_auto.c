/* bench_gauss_auto.c — the Gaussian's methods side by side: execution time
 * of the direct sum, the cut-off direct sum, the FGT and the bbFMM at each
 * (N, dim, sigma) of a grid, their error at sampled targets, the model's
 * predictions, what FMMCL_AUTO chose and its time over the best. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "core/internal.h"
#include "model/model.h"

enum { NM = FMMCL_GAUSS_METHODS };
static const fmmcl_method methods[NM] = {FMMCL_DIRECT, FMMCL_CUTOFF, FMMCL_FGT, FMMCL_BBFMM};

typedef struct config {
  char *ns, *dims, *sigmas;
  fmmcl_precision precision;
  double tol, max_seconds;
  int repeat;
  size_t sample;
} config;

static void usage(void) {
  fprintf(stderr,
          "usage: bench-gauss-auto [options]   (device: FMMCL_DEVICE, else the first GPU)\n"
          "  --n LIST          source (= target) counts, comma-separated (default 10000,100000)\n"
          "  --dim LIST        dimensions (default 1,3,6)\n"
          "  --sigma LIST      bandwidths, points uniform in the unit cube (default 0.01,0.05,0.2,1)\n"
          "  --precision P     single or double (default double)\n"
          "  --tol T           tolerance of every method (default 1e-6)\n"
          "  --repeat R        executions per method, fastest kept (default 2)\n"
          "  --sample K        targets whose error is checked against the plain-C sum (default 64)\n"
          "  --max-seconds S   a method the model predicts slower than S is timed on N/100\n"
          "                    targets and scaled by 100 (marked ~; default 4)\n");
}

static int parse(int argc, char **argv, config *c) {
  *c = (config){"10000,100000", "1,3,6", "0.01,0.05,0.2,1", FMMCL_DOUBLE, 1e-6, 4, 2, 64};
  static const struct option opts[] = {{"n", 1, 0, 'n'},         {"dim", 1, 0, 'd'},    {"sigma", 1, 0, 's'},
                                       {"precision", 1, 0, 'p'}, {"tol", 1, 0, 't'},    {"repeat", 1, 0, 'r'},
                                       {"sample", 1, 0, 'k'},    {"max-seconds", 1, 0, 'm'}, {0, 0, 0, 0}};
  for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) switch (o) {
      case 'n': c->ns = optarg; break;
      case 'd': c->dims = optarg; break;
      case 's': c->sigmas = optarg; break;
      case 'p': c->precision = strcmp(optarg, "single") == 0 ? FMMCL_SINGLE : FMMCL_DOUBLE; break;
      case 't': c->tol = atof(optarg); break;
      case 'r': c->repeat = atoi(optarg); break;
      case 'k': c->sample = (size_t)atof(optarg); break;
      case 'm': c->max_seconds = atof(optarg); break;
      default: usage(); return 1;
    }
  return 0;
}

/* The n-th value of a comma-separated list; 0 past its end. */
static int list_at(const char *list, int n, double *v) {
  const char *p = list;
  for (int i = 0; i < n; i++) {
    p = strchr(p, ',');
    if (!p) return 0;
    p++;
  }
  *v = atof(p);
  return 1;
}

typedef struct result {
  double seconds, create, error; /* seconds < 0: not run */
  int scaled;                    /* timed on a share of the targets */
  fmmcl_status status;
} result;

/* One method: create, execute repeat times (fastest kept), error at the
 * sampled targets (max |error| / sum |q|). nt < n: the targets are the
 * first nt sources, time scaled by n / nt. */
static result run(fmmcl_context ctx, const config *c, fmmcl_plan_options o, size_t n, const double *x,
                  const double *q, size_t nt, const double *ref, double qsum) {
  result r = {-1, 0, NAN, nt < n, FMMCL_SUCCESS};
  fmmcl_plan plan;
  double t0 = bench_now();
  r.status = fmmcl_plan_create(ctx, &o, n, x, nt < n ? nt : 0, nt < n ? x : NULL, &plan);
  if (r.status) return r;
  r.create = bench_now() - t0;
  double *pot = malloc(nt * sizeof *pot);
  for (int k = 0; k < c->repeat && !r.status; k++) {
    t0 = bench_now();
    r.status = fmmcl_plan_execute(plan, q, pot, NULL);
    const double t = bench_now() - t0;
    if (r.seconds < 0 || t < r.seconds) r.seconds = t;
  }
  if (!r.status) {
    r.error = 0;
    for (size_t i = 0; i < c->sample && i < nt; i++) r.error = fmax(r.error, fabs(pot[i] - ref[i]) / qsum);
    r.seconds *= (double)n / (double)nt;
  } else r.seconds = -1;
  free(pot);
  fmmcl_plan_destroy(plan);
  return r;
}

static void one_case(fmmcl_context ctx, const config *c, size_t n, int dim, double sigma) {
  double *x = malloc(n * dim * sizeof *x), *q = malloc(n * sizeof *q), *ref = malloc(c->sample * sizeof *ref);
  bench_random_points(1, n, dim, x);
  bench_random_charges(2, n, q);
  double qsum = 0;
  for (size_t i = 0; i < n; i++) qsum += fabs(q[i]);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
  o.dim = dim, o.sigma = sigma, o.gradient = 0, o.precision = c->precision, o.tolerance = c->tol;
  /* the reference at the first sample targets (they are the first sources) */
  const size_t k = c->sample < n ? c->sample : n;
  bench_check(NULL, fmmcl_reference_direct(&o, n, x, q, k, x, ref, NULL), "reference");
  double pred[NM];
  fmmcl_model_gaussian(ctx, &o, n, x, 0, NULL, pred);
  result r[NM];
  int best = -1;
  for (int m = 0; m < NM; m++) {
    o.method = methods[m];
    if (m == FMMCL_GAUSS_BBFMM && dim != 3) {
      r[m] = (result){-1, 0, NAN, 0, FMMCL_ERROR_UNSUPPORTED};
      continue;
    }
    /* the bbFMM is not modelled where sigma is narrow: timed on a share */
    const double p = pred[m] >= 0 ? pred[m] : pred[FMMCL_GAUSS_DIRECT];
    const size_t nt = p > c->max_seconds && n >= 100 * c->sample ? n / 100 : n;
    r[m] = run(ctx, c, o, n, x, q, nt, ref, qsum);
    /* the best among the methods that met the tolerance (rounding aside) */
    if (r[m].seconds >= 0 && r[m].error <= 2 * c->tol && (best < 0 || r[m].seconds < r[best].seconds)) best = m;
  }
  /* what FMMCL_AUTO becomes (fmmcl_plan_describe of an AUTO plan says the
   * same; tests/check_cutoff.c checks that), without building it again */
  o.method = FMMCL_AUTO;
  fmmcl_plan_options resolved;
  bench_check(ctx, fmmcl_model_resolve(ctx, &o, n, x, 0, NULL, &resolved), "AUTO");
  fmmcl_plan_info info = {.method = resolved.method};
  int chose = -1;
  for (int m = 0; m < NM; m++)
    if (methods[m] == info.method) chose = m;
  printf("%9zu %d %5.3g %-6s", n, dim, sigma, c->precision == FMMCL_DOUBLE ? "double" : "single");
  for (int m = 0; m < NM; m++) {
    if (r[m].seconds < 0) printf(" %10s", r[m].status == FMMCL_ERROR_UNSUPPORTED ? "-" : "fail");
    else printf(" %s%9.2f", r[m].scaled ? "~" : " ", 1e3 * r[m].seconds);
  }
  const double ratio = chose >= 0 && best >= 0 && r[chose].seconds > 0 ? r[chose].seconds / r[best].seconds : NAN;
  printf("  %-7s %-7s %5.2f |", fmmcl_method_name(info.method), best >= 0 ? fmmcl_method_name(methods[best]) : "?",
         ratio);
  for (int m = 0; m < NM; m++) printf(" %8.1e", r[m].error);
  printf(" |");
  for (int m = 0; m < NM; m++) printf(" %9.2f", pred[m] >= 0 ? 1e3 * pred[m] : NAN);
  printf(" |");
  for (int m = 0; m < NM; m++) printf(" %7.2f", r[m].seconds >= 0 ? r[m].create : NAN);
  printf("\n");
  fflush(stdout);
  free(x);
  free(q);
  free(ref);
}

int main(int argc, char **argv) {
  config c;
  if (parse(argc, argv, &c)) return 2;
  fmmcl_context ctx;
  bench_check(NULL, fmmcl_context_create(&ctx, getenv("FMMCL_DEVICE")), "fmmcl_context_create");
  bench_print_device(ctx);
  printf("# tol %g; execution ms (~: timed on N/100 targets, scaled); auto: AUTO's choice; best: the fastest\n"
         "# within 2 tol; ratio: AUTO / best | max error / sum|q| at %zu targets | model ms | create s\n",
         c.tol, c.sample);
  printf("%9s %s %5s %-6s %10s %10s %10s %10s  %-7s %-7s %5s | errors of direct cutoff fgt bbfmm | model | create\n",
         "N", "d", "sigma", "prec", "direct", "cutoff", "fgt", "bbfmm", "auto", "best", "ratio");
  double nv, dv, sv;
  for (int i = 0; list_at(c.ns, i, &nv); i++)
    for (int j = 0; list_at(c.dims, j, &dv); j++)
      for (int k = 0; list_at(c.sigmas, k, &sv); k++) one_case(ctx, &c, (size_t)nv, (int)dv, sv);
  fmmcl_context_destroy(ctx);
  return 0;
}
