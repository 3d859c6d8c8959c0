/* bench_bbfmm.c — the black-box FMM: (1) the P2P analysis of Haney, Darve
 * et al. (ARL-TR-7315) redone for our P2P kernel — flops and bytes,
 * arithmetic intensity, estimated PCIe vs compute time — next to measured
 * device and one-CPU-core times; (2) whole bbFMM vs direct over N. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "methods/bbfmm/bbfmm.h"
#include "bench_common.h"

#define FMMCL_MAX_PHASES_BENCH 32

typedef struct config {
  const char *device, *out;
  fmmcl_precision precision;
  size_t nmin, nmax, direct_nmax, direct_sample, check;
  int repeat, leaf_size, analysis, sweep, sphere;
  double tol, pcie_gbs, peak_gflops, bw_gbs;
} config;

/* Flops of one P2P pair of the 1/r potential: 3 differences, r^2 (3 mul +
 * 2 add), sqrt, divide, the r = 0 test, multiply-add of the charge. */
#define P2P_FLOPS_PER_PAIR 13.0

static void usage(void) {
  printf(
      "usage: bench-bbfmm [options]\n"
      "Part 1 (P2P analysis, ARL-TR-7315 sec. 4 redone for cl/bbfmm.cl's P2P): for N on the\n"
      "report's cubic lattices 17^3, 21^3, 24^3, 29^3, 46^3 (4913 .. 97336 points, up to --nmax),\n"
      "1/r potential, targets = sources: P2P pairs, flops (13 per pair), device-memory\n"
      "bytes the kernel moves (targets once, each neighbour leaf once per 64-target chunk,\n"
      "indirection arrays, potentials), arithmetic intensity, PCIe bytes per execution\n"
      "(positions + charges up, potentials down), estimated PCIe, memory and compute times,\n"
      "measured P2P time on the device (profiling event) and on one CPU core (plain C,\n"
      "same lists). Writes p2p_analysis.csv.\n"
      "Device times are medians over --repeat runs after one warm-up run.\n"
      "Part 2: whole bbFMM (order from --tol) vs direct for N = --nmin, 10 --nmin, ... up to\n"
      "--nmax: create (first: M2L SVD or disk cache; second), execute (median), per-phase\n"
      "times, direct time, error on --check sampled targets. Direct runs on all N targets\n"
      "up to --direct-nmax; above, on --direct-sample K evenly spaced targets against all N\n"
      "sources, its time scaled by N / K (CSV column direct_targets says which). Writes\n"
      "bbfmm_vs_direct.csv and bbfmm_phases.csv.\n"
      "\n"
      "  --device SEL          gpu, cpu, P:D or a name substring\n"
      "  --precision single|double   (default double: 1e-6 needs it)\n"
      "  --tol T               requested relative error (default 1e-6)\n"
      "  --leaf-size Q         points per leaf (default: the plan's, n^3/2 and at least 64;\n"
      "                        64 in the P2P analysis, as in the report)\n"
      "  --nmax N              largest N of both parts (default 1e7; keep it small on a CPU)\n"
      "  --nmin N              smallest N of part 2 (default 1e4)\n"
      "  --points uniform|sphere   part 2's points: uniform in the unit cube (default) or\n"
      "                        uniform on the unit sphere's surface (clustered: the plan\n"
      "                        takes the adaptive tree; FMMCL_BBFMM_TREE=uniform forces\n"
      "                        the uniform one for comparison)\n"
      "  --direct-nmax N       largest N timed with direct on all targets (default 1e6)\n"
      "  --direct-sample K     above it: direct on K targets, time x N/K (default 131072:\n"
      "                        enough targets to fill an H100; 0: no direct above)\n"
      "  --repeat R            executions per point, median kept (default 5)\n"
      "  --check K             sampled targets for the error (default 1000)\n"
      "  --pcie-gbs B          PCIe bandwidth for the estimate, GB/s (default 25: gen4 x16)\n"
      "  --bw-gbs B            device memory bandwidth, GB/s (default 3350: H100 SXM HBM3)\n"
      "  --peak-gflops F       device peak in the precision, GFLOP/s (default 67000 float,\n"
      "                        34000 double: H100 SXM non-tensor)\n"
      "  --only-analysis | --only-sweep\n"
      "  --out DIR             output folder (default out-bbfmm)\n");
}

static size_t parse_n(const char *s) { return (size_t)llround(atof(s)); }

static void parse(int argc, char **argv, config *c) {
  *c = (config){NULL, "out-bbfmm", FMMCL_DOUBLE, 10000, 10000000, 1000000, 131072, 1000, 5, 0, 1,
                1,    0,           1e-6,         25,    0,        3350};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help")) usage(), exit(0);
    else if (!strcmp(a, "--only-analysis")) c->sweep = 0;
    else if (!strcmp(a, "--only-sweep")) c->analysis = 0;
    else if (!v) fprintf(stderr, "bench-bbfmm: %s needs a value\n", a), exit(2);
    else {
      i++;
      if (!strcmp(a, "--device")) c->device = v;
      else if (!strcmp(a, "--precision")) c->precision = !strcmp(v, "single") ? FMMCL_SINGLE : FMMCL_DOUBLE;
      else if (!strcmp(a, "--tol")) c->tol = atof(v);
      else if (!strcmp(a, "--leaf-size")) c->leaf_size = atoi(v);
      else if (!strcmp(a, "--nmax")) c->nmax = parse_n(v);
      else if (!strcmp(a, "--nmin")) c->nmin = parse_n(v);
      else if (!strcmp(a, "--points")) c->sphere = !strcmp(v, "sphere");
      else if (!strcmp(a, "--direct-sample")) c->direct_sample = parse_n(v);
      else if (!strcmp(a, "--direct-nmax")) c->direct_nmax = parse_n(v);
      else if (!strcmp(a, "--repeat")) c->repeat = atoi(v);
      else if (!strcmp(a, "--check")) c->check = parse_n(v);
      else if (!strcmp(a, "--pcie-gbs")) c->pcie_gbs = atof(v);
      else if (!strcmp(a, "--bw-gbs")) c->bw_gbs = atof(v);
      else if (!strcmp(a, "--peak-gflops")) c->peak_gflops = atof(v);
      else if (!strcmp(a, "--out")) c->out = v;
      else fprintf(stderr, "bench-bbfmm: unknown option %s (see --help)\n", a), exit(2);
    }
  }
  if (c->peak_gflops <= 0) c->peak_gflops = c->precision == FMMCL_SINGLE ? 67000 : 34000;
  if (c->repeat < 1) c->repeat = 1;
}

static double phase_time(fmmcl_plan plan, const char *name) {
  fmmcl_phase_time ph[FMMCL_MAX_PHASES_BENCH];
  size_t n = 0;
  fmmcl_plan_timings(plan, ph, FMMCL_MAX_PHASES_BENCH, &n);
  for (size_t i = 0; i < n && i < FMMCL_MAX_PHASES_BENCH; i++)
    if (!strcmp(ph[i].name, name)) return ph[i].seconds;
  return 0;
}

static fmmcl_plan_options bb_options(const config *c, int direct) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = direct ? FMMCL_DIRECT : FMMCL_BBFMM;
  o.precision = c->precision;
  o.gradient = 0;
  o.tolerance = c->tol;
  o.leaf_size = c->leaf_size;
  return o;
}

/* The report's lattices: m^3 points at cell centres of the unit cube. */
static void lattice(int m, double *x) {
  size_t k = 0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++)
      for (int l = 0; l < m; l++, k++)
        x[3 * k] = (i + 0.5) / m, x[3 * k + 1] = (j + 0.5) / m, x[3 * k + 2] = (l + 0.5) / m;
}

/* One core, same tree and lists as the device, same precision's arithmetic
 * in double (the CPU's scalar rate is the same for both). */
static double cpu_p2p(const fmmcl_bbfmm_tree *t, const double *q_sorted, double *pot) {
  int g = 1 << t->depth;
  double t0 = bench_now();
  for (size_t leaf = 0; leaf < (size_t)g * g * g; leaf++) {
    int i[3] = {(int)(leaf / ((size_t)g * g)), (int)(leaf / g % g), (int)(leaf % g)};
    for (uint32_t a = t->tgt_start[leaf]; a < t->tgt_start[leaf + 1]; a++) {
      const double *x = t->tgt + 3 * (size_t)a;
      double f = 0;
      for (int d = 0; d < 27; d++) {
        int sx = i[0] + d / 9 - 1, sy = i[1] + d / 3 % 3 - 1, sz = i[2] + d % 3 - 1;
        if (sx < 0 || sy < 0 || sz < 0 || sx >= g || sy >= g || sz >= g) continue;
        size_t sl = ((size_t)sx * g + sy) * g + sz;
        for (uint32_t b = t->src_start[sl]; b < t->src_start[sl + 1]; b++) {
          const double *y = t->src + 3 * (size_t)b;
          double dx = x[0] - y[0], dy = x[1] - y[1], dz = x[2] - y[2], r2 = dx * dx + dy * dy + dz * dz;
          if (r2 > 0) f += q_sorted[b] / sqrt(r2);
        }
      }
      pot[a] = f;
    }
  }
  return bench_now() - t0;
}

static void analysis(fmmcl_context ctx, const config *c) {
  char path[4096];
  snprintf(path, sizeof path, "%s/p2p_analysis.csv", c->out);
  FILE *f = bench_open_csv(path);
  fprintf(
      f,
      "n,precision,leaf_size,depth,clusters,pairs,gflop,dram_bytes,intensity_flop_per_byte,pcie_bytes,"
      "est_pcie_ms,est_dram_ms,est_compute_ms,device_p2p_ms,device_gflops,cpu1_p2p_ms,cpu1_gflops,speedup\n");
  const int sides[] = {17, 21, 24, 29, 46};
  size_t rs = c->precision == FMMCL_SINGLE ? 4 : 8;
  for (int k = 0; k < 5; k++) {
    int m = sides[k];
    size_t n = (size_t)m * m * m;
    if (n > c->nmax) break;
    double *x = malloc(3 * n * sizeof *x), *q = malloc(n * sizeof *q), *pot = malloc(n * sizeof *pot);
    lattice(m, x);
    bench_random_charges(2, n, q);
    fmmcl_plan_options o = bb_options(c, 0);
    o.order = 3; /* the P2P does not depend on the order */
    fmmcl_plan plan;
    bench_check(ctx, fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), "fmmcl_plan_create");
    double *ts = malloc(c->repeat * sizeof *ts), pairs = 0;
    bench_check(ctx, fmmcl_plan_execute(plan, q, pot, NULL),
                "fmmcl_plan_execute"); /* warm-up: first launches */
    for (int r = 0; r < c->repeat; r++) {
      bench_check(ctx, fmmcl_plan_execute(plan, q, pot, NULL), "fmmcl_plan_execute");
      ts[r] = phase_time(plan, "p2p");
    }
    double dev = fmmcl_median(ts, c->repeat);
    fmmcl_plan_counts(plan, "p2p", &pairs);
    fmmcl_plan_destroy(plan);
    /* the same tree on the host: bytes the kernel moves, and one core */
    fmmcl_bbfmm_tree t;
    fmmcl_bbfmm_tree_build(n, x, n, x, 0, c->leaf_size > 0 ? c->leaf_size : 64, &t);
    int g = 1 << t.depth;
    double dram = 0, clusters = 0;
    for (size_t leaf = 0; leaf < (size_t)g * g * g; leaf++) {
      uint32_t nt = t.tgt_start[leaf + 1] - t.tgt_start[leaf];
      if (!nt) continue;
      clusters += 1;
      double chunks = ceil(nt / 64.0), nbr_pts = 0, nbrs = 0;
      int i[3] = {(int)(leaf / ((size_t)g * g)), (int)(leaf / g % g), (int)(leaf % g)};
      for (int d = 0; d < 27; d++) {
        int sx = i[0] + d / 9 - 1, sy = i[1] + d / 3 % 3 - 1, sz = i[2] + d % 3 - 1;
        if (sx < 0 || sy < 0 || sz < 0 || sx >= g || sy >= g || sz >= g) continue;
        size_t sl = ((size_t)sx * g + sy) * g + sz;
        nbr_pts += t.src_start[sl + 1] - t.src_start[sl];
        nbrs += 1;
      }
      /* targets once (REAL4) and potentials once (REAL); per chunk each
       * neighbour's points (REAL4) and its index + two starts (12 B) */
      dram += nt * (4.0 * rs + rs) + 12 + chunks * (nbr_pts * 4 * rs + nbrs * 12);
    }
    double *qs = malloc(n * sizeof *qs);
    for (size_t j = 0; j < n; j++) qs[j] = q[t.src_perm[j]];
    double cpu = cpu_p2p(&t, qs, pot);
    double gflop = pairs * P2P_FLOPS_PER_PAIR * 1e-9, pcie = n * (4.0 * rs + rs);
    fprintf(f, "%zu,%s,%d,%d,%.0f,%.0f,%.6f,%.0f,%.3f,%.0f,%.6f,%.6f,%.6f,%.6f,%.1f,%.3f,%.2f,%.1f\n", n,
            rs == 4 ? "single" : "double", c->leaf_size > 0 ? c->leaf_size : 64, t.depth, clusters, pairs,
            gflop, dram, gflop * 1e9 / dram, pcie, pcie / (c->pcie_gbs * 1e9) * 1e3,
            dram / (c->bw_gbs * 1e9) * 1e3, gflop / c->peak_gflops * 1e3, dev * 1e3,
            dev > 0 ? gflop / dev : 0, cpu * 1e3, gflop / cpu, dev > 0 ? cpu / dev : 0);
    fflush(f);
    fprintf(stderr, "analysis N = %zu: %.0f pairs, device %.3f ms, one core %.1f ms\n", n, pairs, dev * 1e3,
            cpu * 1e3);
    fmmcl_bbfmm_tree_free(&t);
    free(x), free(q), free(pot), free(qs), free(ts);
  }
  if (f != stdout) fclose(f);
}

/* Relative L2 error at targets idx[0..k) (values val[s] at idx[s]) against
 * the double host sum. */
static double error_at(size_t n, const double *x, const double *q, size_t k, const size_t *idx,
                       const double *val) {
  if (!k) return NAN;
  fmmcl_bbfmm_kfun lap = {FMMCL_BBFMM_LAPLACE, 0, NULL};
  double num = 0, den = 0;
#pragma omp parallel for reduction(+ : num, den) schedule(static)
  for (size_t s = 0; s < k; s++) {
    size_t i = idx[s];
    double ref = 0;
    for (size_t j = 0; j < n; j++)
      ref += q[j] * fmmcl_bbfmm_kfun_eval(&lap, x[3 * i] - x[3 * j], x[3 * i + 1] - x[3 * j + 1],
                                          x[3 * i + 2] - x[3 * j + 2]);
    num += (val[s] - ref) * (val[s] - ref), den += ref * ref;
  }
  return sqrt(num / den);
}

/* k evenly spaced indices of 0..n-1 (k <= n). */
static size_t *spaced(size_t n, size_t k) {
  size_t *idx = malloc((k ? k : 1) * sizeof *idx);
  for (size_t s = 0; s < k; s++) idx[s] = s * (n / k);
  return idx;
}

static double timed_execute(fmmcl_context ctx, fmmcl_plan plan, const config *c, const double *q,
                            double *pot) {
  double *ts = malloc(c->repeat * sizeof *ts);
  bench_check(ctx, fmmcl_plan_execute(plan, q, pot, NULL),
              "fmmcl_plan_execute"); /* warm-up: first launches */
  for (int r = 0; r < c->repeat; r++) {
    double t0 = bench_now();
    bench_check(ctx, fmmcl_plan_execute(plan, q, pot, NULL), "fmmcl_plan_execute");
    ts[r] = bench_now() - t0;
  }
  double m = fmmcl_median(ts, c->repeat);
  free(ts);
  return m;
}

/* Relative L2 error on --check evenly spaced targets. */
static double sampled_error(const config *c, size_t n, const double *x, const double *q, const double *pot) {
  size_t k = c->check < n ? c->check : n;
  size_t *idx = spaced(n, k);
  double *val = malloc((k ? k : 1) * sizeof *val);
  for (size_t s = 0; s < k; s++) val[s] = pot[idx[s]];
  double e = error_at(n, x, q, k, idx, val);
  free(idx), free(val);
  return e;
}

/* Direct on k evenly spaced targets against all n sources: the median time
 * scaled by n / k; *err on the first --check of them. */
static double sampled_direct(fmmcl_context ctx, const config *c, size_t n, const double *x, const double *q,
                             size_t k, double *err) {
  size_t *idx = spaced(n, k);
  double *xt = malloc(3 * k * sizeof *xt), *pot = malloc(k * sizeof *pot);
  for (size_t s = 0; s < k; s++) memcpy(xt + 3 * s, x + 3 * idx[s], 3 * sizeof *xt);
  fmmcl_plan_options od = bb_options(c, 1);
  fmmcl_plan plan;
  bench_check(ctx, fmmcl_plan_create(ctx, &od, n, x, k, xt, &plan),
              "fmmcl_plan_create (direct, sampled targets)");
  double t = timed_execute(ctx, plan, c, q, pot);
  fmmcl_plan_destroy(plan);
  size_t ke = c->check < k ? c->check : k; /* a spread-out subset of the sample */
  size_t *ie = malloc((ke ? ke : 1) * sizeof *ie);
  double *ve = malloc((ke ? ke : 1) * sizeof *ve);
  for (size_t s = 0; s < ke; s++) ie[s] = idx[s * (k / ke)], ve[s] = pot[s * (k / ke)];
  *err = error_at(n, x, q, ke, ie, ve);
  free(idx), free(xt), free(pot), free(ie), free(ve);
  return t * (double)n / (double)k;
}

static void sweep(fmmcl_context ctx, const config *c) {
  char path[4096];
  snprintf(path, sizeof path, "%s/bbfmm_vs_direct.csv", c->out);
  FILE *f = bench_open_csv(path);
  snprintf(path, sizeof path, "%s/bbfmm_phases.csv", c->out);
  FILE *fp = bench_open_csv(path);
  fprintf(
      f,
      "points,tree,n,precision,tol,order,leaf_size,create_first_s,create_s,execute_s,direct_execute_s,direct_targets,"
      "err_bbfmm,err_direct\n");
  fprintf(fp, "n,precision,order,phase,seconds\n");
  for (size_t n = c->nmin; n <= c->nmax; n *= 10) {
    double *x = malloc(3 * n * sizeof *x), *q = malloc(n * sizeof *q), *pot = malloc(n * sizeof *pot);
    bench_random_points(1, n, 3, x);
    if (c->sphere)
      for (size_t i = 0; i < n; i++) { /* area-uniform on the sphere from two uniforms */
        double z = 2 * x[3 * i] - 1, phi = 6.283185307179586 * x[3 * i + 1], r = sqrt(1 - z * z);
        x[3 * i] = r * cos(phi), x[3 * i + 1] = r * sin(phi), x[3 * i + 2] = z;
      }
    bench_random_charges(2, n, q);
    fmmcl_plan_options o = bb_options(c, 0);
    fmmcl_plan plan;
    double t0 = bench_now();
    bench_check(ctx, fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), "fmmcl_plan_create (bbfmm)");
    double create_first = bench_now() - t0;
    fmmcl_plan_destroy(plan);
    t0 = bench_now();
    bench_check(ctx, fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), "fmmcl_plan_create (bbfmm)");
    double create = bench_now() - t0;
    double exec = timed_execute(ctx, plan, c, q, pot);
    double err = sampled_error(c, n, x, q, pot), order = 0;
    char opts[1024];
    fmmcl_plan_build_options(plan, opts, sizeof opts);
    const char *nord = strstr(opts, "-DNORD=");
    size_t lists[4];
    int adaptive = fmmcl_bbfmm_plan_lists(plan, lists);
    if (nord) order = atof(nord + 7);
    fmmcl_phase_time ph[FMMCL_MAX_PHASES_BENCH];
    size_t np = 0;
    fmmcl_plan_timings(plan, ph, FMMCL_MAX_PHASES_BENCH, &np);
    for (size_t i = 0; i < np && i < FMMCL_MAX_PHASES_BENCH; i++)
      fprintf(fp, "%zu,%s,%.0f,%s,%.6f\n", n, c->precision == FMMCL_SINGLE ? "single" : "double", order,
              ph[i].name, ph[i].seconds);
    fmmcl_plan_destroy(plan);
    double dexec = NAN, derr = NAN;
    size_t dtargets = 0;
    if (n > c->direct_nmax && c->direct_sample > 0 && c->direct_sample < n) {
      dtargets = c->direct_sample;
      dexec = sampled_direct(ctx, c, n, x, q, dtargets, &derr);
    } else if (n <= c->direct_nmax) {
      dtargets = n;
      fmmcl_plan_options od = bb_options(c, 1);
      bench_check(ctx, fmmcl_plan_create(ctx, &od, n, x, 0, NULL, &plan), "fmmcl_plan_create (direct)");
      dexec = timed_execute(ctx, plan, c, q, pot);
      derr = sampled_error(c, n, x, q, pot);
      fmmcl_plan_destroy(plan);
    }
    fprintf(f, "%s,%s,%zu,%s,%g,%.0f,%d,%.4f,%.4f,%.6f,%.6f,%zu,%.3e,%.3e\n",
            c->sphere ? "sphere" : "uniform", adaptive ? "adaptive" : "uniform", n,
            c->precision == FMMCL_SINGLE ? "single" : "double", c->tol, order,
            c->leaf_size > 0 ? c->leaf_size : fmmcl_bbfmm_default_leaf((int)(order * order * order)),
            create_first, create, exec, dexec, dtargets, err, derr);
    fflush(f), fflush(fp);
    fprintf(
        stderr,
        "sweep N = %zu: order %.0f, create %.3f s (first %.3f), execute %.4f s, direct %.4f s%s, error %.2e\n",
        n, order, create, create_first, exec, dexec,
        dtargets && dtargets < n ? " (from a target sample)" : "", err);
    free(x), free(q), free(pot);
  }
  if (f != stdout) fclose(f);
  if (fp != stdout) fclose(fp);
}

int main(int argc, char **argv) {
  config c;
  parse(argc, argv, &c);
  mkdir(c.out, 0755);
  fmmcl_context ctx;
  bench_check(NULL, fmmcl_context_create(&ctx, c.device), "fmmcl_context_create");
  bench_print_device(ctx);
  if (c.analysis) analysis(ctx, &c);
  if (c.sweep) sweep(ctx, &c);
  fmmcl_context_destroy(ctx);
  return 0;
}
