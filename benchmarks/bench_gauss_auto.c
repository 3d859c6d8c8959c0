/* bench_gauss_auto.c — the Gaussian's methods side by side: execution time
 * of the direct sum, the cut-off direct sum, the FGT and the bbFMM at each
 * (N, dim, sigma) of a grid, their error at sampled targets, the model's
 * predictions (execution; creation apart), what FMMCL_AUTO chose (creation
 * counted over --executions) and its execution time over the best, and its
 * creation plus --executions executions over the least such total. */
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
  int all_bbfmm, executions;
} config;

static void usage(FILE *to) {
  fprintf(to,
          "usage: bench-gauss-auto [options]   (device: FMMCL_DEVICE, else the first GPU)\n"
          "  --n LIST          source (= target) counts, comma-separated (default 10000,100000)\n"
          "  --dim LIST        dimensions (default 1,3,6)\n"
          "  --sigma LIST      bandwidths, points uniform in the unit cube (default 0.01,0.05,0.2,1)\n"
          "  --precision P     single or double (default double)\n"
          "  --tol T           tolerance of every method (default 1e-6)\n"
          "  --repeat R        executions per method, fastest kept (default 2)\n"
          "  --sample K        targets whose error is checked against the plain-C sum (default 64)\n"
          "  --max-seconds S   a method the model predicts slower than S and than 10x the\n"
          "                    least prediction is not run (its predicted time, marked >),\n"
          "                    the direct sum then timed with N/100 sources (marked ~; default 4)\n"
          "  --all-bbfmm       also run the bbFMM (dim 3) where AUTO does not offer it (sigma\n"
          "                    under a quarter of the data's width: '-' otherwise)\n"
          "  --executions E    AUTO's opt.executions: creation counted over E executions\n"
          "                    (default 0: the library's 100)\n"
          "  --help            this text\n");
}

static int parse(int argc, char **argv, config *c) {
  *c = (config){"10000,100000", "1,3,6", "0.01,0.05,0.2,1", FMMCL_DOUBLE, 1e-6, 4, 2, 64, 0, 0};
  static const struct option opts[] = {
      {"n", 1, 0, 'n'},          {"dim", 1, 0, 'd'},         {"sigma", 1, 0, 's'},
      {"precision", 1, 0, 'p'},  {"tol", 1, 0, 't'},         {"repeat", 1, 0, 'r'},
      {"sample", 1, 0, 'k'},     {"max-seconds", 1, 0, 'm'}, {"all-bbfmm", 0, 0, 'b'},
      {"executions", 1, 0, 'e'}, {"help", 0, 0, 'h' + 512},  {0, 0, 0, 0}};
  for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) switch (o) {
      case 'n': c->ns = optarg; break;
      case 'd': c->dims = optarg; break;
      case 's': c->sigmas = optarg; break;
      case 'p': c->precision = strcmp(optarg, "single") == 0 ? FMMCL_SINGLE : FMMCL_DOUBLE; break;
      case 't': c->tol = atof(optarg); break;
      case 'r': c->repeat = atoi(optarg); break;
      case 'k': c->sample = (size_t)atof(optarg); break;
      case 'm': c->max_seconds = atof(optarg); break;
      case 'b': c->all_bbfmm = 1; break;
      case 'e': c->executions = atoi(optarg); break;
      case 'h' + 512: usage(stdout); return -1;
      default: usage(stderr); return 1;
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

/* A plan created in less than this is created a second time and timed then. */
#define CREATE_AGAIN_SECONDS 5.0

typedef struct result {
  double seconds, create, error; /* seconds < 0: not run */
  char mark; /* ' ' measured; '~' direct timed with N/100 sources, scaled; '>' not run, the model's time */
  fmmcl_status status;
} result;

/* One method: create, execute repeat times (fastest kept), error at the
 * sampled targets (max |error| / sum |q|). ns < n: the direct sum of the
 * first ns sources at every target, its time scaled by n / ns (the pair
 * rate of a full device; no error figure). */
static result run(fmmcl_context ctx, const config *c, fmmcl_plan_options o, size_t n, const double *x,
                  const double *q, size_t ns, const double *ref, double qsum) {
  result r = {-1, 0, NAN, ns < n ? '~' : ' ', FMMCL_SUCCESS};
  fmmcl_plan plan;
  double t0 = bench_now();
  r.status = fmmcl_plan_create(ctx, &o, ns, x, ns < n ? n : 0, ns < n ? x : NULL, &plan);
  if (r.status) return r;
  r.create = bench_now() - t0;
  /* created again where that is quick: the kernels are built by then (the
   * binary cache keeps them for a user), so this is the binning and lists */
  fmmcl_plan again;
  if (r.create < CREATE_AGAIN_SECONDS) {
    t0 = bench_now();
    if (fmmcl_plan_create(ctx, &o, ns, x, ns < n ? n : 0, ns < n ? x : NULL, &again) == FMMCL_SUCCESS) {
      r.create = bench_now() - t0;
      fmmcl_plan_destroy(again);
    }
  }
  double *pot = malloc(n * sizeof *pot);
  for (int k = 0; k < c->repeat && !r.status; k++) {
    t0 = bench_now();
    r.status = fmmcl_plan_execute(plan, q, pot, NULL);
    const double t = bench_now() - t0;
    if (r.seconds < 0 || t < r.seconds) r.seconds = t;
  }
  if (!r.status) {
    r.error = 0;
    for (size_t i = 0; i < c->sample && i < n && ns == n; i++)
      r.error = fmax(r.error, fabs(pot[i] - ref[i]) / qsum);
    if (ns < n) r.error = NAN;
    r.seconds *= (double)n / (double)ns;
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
  double pred[NM], least = HUGE_VAL;
  fmmcl_model_gaussian(ctx, &o, n, x, 0, NULL, pred, NULL);
  for (int m = 0; m < NM; m++)
    if (pred[m] >= 0) least = fmin(least, pred[m]);
  result r[NM];
  int best = -1, met[NM] = {0};
  for (int m = 0; m < NM; m++) {
    o.method = methods[m];
    if (m == FMMCL_GAUSS_BBFMM && (dim != 3 || (pred[m] < 0 && !c->all_bbfmm))) {
      r[m] = (result){-1, 0, NAN, ' ', FMMCL_ERROR_UNSUPPORTED};
      continue;
    }
    /* the bbFMM has no prediction where sigma is narrow: it runs with --all-bbfmm */
    const int slow = pred[m] > c->max_seconds && pred[m] > 10 * least;
    if (slow && m != FMMCL_GAUSS_DIRECT) {
      r[m] = (result){pred[m], 0, NAN, '>', FMMCL_SUCCESS};
      continue;
    }
    r[m] = run(ctx, c, o, n, x, q, slow && n >= 1000 ? n / 100 : n, ref, qsum);
    /* the best among the methods run that met the tolerance (rounding
     * aside; the direct sum is exact) */
    met[m] = r[m].error <= 2 * c->tol || (m == FMMCL_GAUSS_DIRECT && r[m].mark == '~');
    if (r[m].seconds >= 0 && met[m] && (best < 0 || r[m].seconds < r[best].seconds)) best = m;
  }
  /* what FMMCL_AUTO becomes (fmmcl_plan_describe of an AUTO plan says the
   * same; tests/check_cutoff.c checks that), without building it again */
  o.method = FMMCL_AUTO;
  o.executions = c->executions;
  fmmcl_plan_options resolved;
  bench_check(ctx, fmmcl_model_resolve(ctx, &o, n, x, 0, NULL, &resolved), "AUTO");
  fmmcl_plan_info info = {.method = resolved.method};
  int chose = -1;
  for (int m = 0; m < NM; m++)
    if (methods[m] == info.method) chose = m;
  printf("%9zu %d %5.3g %-6s", n, dim, sigma, c->precision == FMMCL_DOUBLE ? "double" : "single");
  for (int m = 0; m < NM; m++) {
    if (r[m].seconds < 0) printf(" %10s", r[m].status == FMMCL_ERROR_UNSUPPORTED ? "-" : "fail");
    else printf(" %c%9.2f", r[m].mark, 1e3 * r[m].seconds);
  }
  const double ratio =
      chose >= 0 && best >= 0 && r[chose].mark != '>' ? r[chose].seconds / r[best].seconds : NAN;
  /* what AUTO weighs: creation and the executions a plan serves, over the
   * least such total of the methods that ran and met the tolerance */
  const double runs = c->executions > 0 ? c->executions : 100;
  double least_total = HUGE_VAL, total[NM];
  for (int m = 0; m < NM; m++) {
    total[m] = r[m].seconds >= 0 && r[m].mark != '>' ? r[m].create + runs * r[m].seconds : NAN;
    if (met[m] && total[m] < least_total) least_total = total[m];
  }
  const double total_ratio = chose >= 0 ? total[chose] / least_total : NAN;
  printf("  %-7s %-7s %5.2f %5.2f |", fmmcl_method_name(info.method),
         best >= 0 ? fmmcl_method_name(methods[best]) : "?", ratio, total_ratio);
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
  const int parsed = parse(argc, argv, &c);
  if (parsed) return parsed < 0 ? 0 : 2; /* --help: 0 */
  fmmcl_context ctx;
  bench_check(NULL, fmmcl_context_create(&ctx, getenv("FMMCL_DEVICE")), "fmmcl_context_create");
  bench_print_device(ctx);
  printf(
      "# tol %g; execution ms (~: direct sum of N/100 sources at every target, scaled; >: not run, the\n"
      "# model's time, over 10x the least and --max-seconds); auto: AUTO's choice; best: the fastest run\n"
      "# within 2 tol; ratio: AUTO / best; total: AUTO's create + E executions over the least such\n"
      "# (E = --executions, 0: 100) | max error / sum|q| at %zu targets | model ms | create s (a second\n"
      "# creation where the first took under %g s: kernels built)\n",
      c.tol, c.sample, CREATE_AGAIN_SECONDS);
  printf(
      "%9s %s %5s %-6s %10s %10s %10s %10s  %-7s %-7s %5s %5s | errors of direct cutoff fgt bbfmm | model | "
      "create\n",
      "N", "d", "sigma", "prec", "direct", "cutoff", "fgt", "bbfmm", "auto", "best", "ratio", "total");
  double nv, dv, sv;
  for (int i = 0; list_at(c.ns, i, &nv); i++)
    for (int j = 0; list_at(c.dims, j, &dv); j++)
      for (int k = 0; list_at(c.sigmas, k, &sv); k++) one_case(ctx, &c, (size_t)nv, (int)dv, sv);
  fmmcl_context_destroy(ctx);
  return 0;
}
