/* bench_direct.c — direct all-pairs sum throughput: an N sweep per precision,
 * interactions/s and GFLOP/s (20 flops per Laplace interaction), CSV out. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "core/internal.h"

static void usage(void) {
  printf(
      "usage: bench-direct [options]\n"
      "Times the direct (P2P) kernel over an N sweep (N doubles from --nmin to --nmax)\n"
      "and writes CSV: device,kernel,precision,n,defines,kernel_s,total_s,interactions_per_s,gflops\n"
      "kernel_s is the best of --repeat runs of the kernel alone (OpenCL profiling events);\n"
      "total_s adds the upload and download of that run. GFLOP/s counts 20 flops per\n"
      "Laplace interaction (the convention of GPU Gems 3 ch. 31 and Yokota-Barba).\n"
      "  --kernel laplace3d|gaussian   (default laplace3d)\n"
      "  --dim D                       Gaussian dimension (default 3)\n"
      "  --precision single|double|both (default both)\n"
      "  --nmin N --nmax N             sweep bounds (default 1024 .. 1048576)\n"
      "  --repeat R                    runs per point, best kept (default 3)\n"
      "  --device SEL                  gpu, cpu, P:D or a name substring\n"
      "  --defines 'D1;D2;...'         kernel -D sets to compare instead of the tuned ones,\n"
      "                                e.g. '-DWGS=128 -DTPW=4 -DUNROLL=4;-DWGS=256 -DTPW=2 -DUNROLL=8'\n"
      "  --softening EPS               Laplace softening (default 0: exact 1/r, a\n"
      "                                coincident pair is skipped by a select)\n"
      "  --csv FILE                    CSV output (default stdout)\n"
      "  --help\n");
}

static void run_point(fmmcl_context ctx, FILE *csv, const fmmcl_plan_options *o, size_t n, int repeat,
                      const char *label) {
  double *x = malloc(n * o->dim * sizeof *x), *q = malloc(n * sizeof *q), *p = malloc(n * sizeof *p),
         *g = malloc(n * o->dim * sizeof *g);
  if (!x || !q || !p || !g) {
    fprintf(stderr, "out of memory at N = %zu\n", n);
    exit(1);
  }
  bench_random_points(1, n, o->dim, x);
  bench_random_charges(2, n, q);
  fmmcl_plan plan;
  bench_check(ctx, fmmcl_plan_create(ctx, o, n, x, 0, NULL, &plan), "fmmcl_plan_create");
  char opts[1024];
  fmmcl_plan_build_options(plan, opts, sizeof opts);
  const char *extra = getenv("FMMCL_BUILD_OPTIONS");
  if (extra && *extra) snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " %s", extra);
  if (o->kernel == FMMCL_LAPLACE_3D && o->softening > 0)
    snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " eps=%g", o->softening);
  double best = INFINITY, best_total = INFINITY;
  for (int r = 0; r < repeat; r++) {
    bench_check(ctx, fmmcl_plan_execute(plan, q, p, g), "fmmcl_plan_execute");
    fmmcl_phase_time ph[16];
    size_t c;
    fmmcl_plan_timings(plan, ph, 16, &c);
    double k = 0, total = 0;
    for (size_t i = 0; i < c; i++) {
      if (strcmp(ph[i].name, "build") == 0) continue;
      total += ph[i].seconds;
      if (strcmp(ph[i].name, "p2p") == 0) k = ph[i].seconds;
    }
    if (k < best) {
      best = k;
      best_total = total;
    }
  }
  double inter = (double)n * (double)n / best;
  fprintf(csv, "\"%s\",%s,%s,%zu,\"%s\",%.6e,%.6e,%.4e,%.1f\n", label, fmmcl_kernel_name(o->kernel),
          o->precision == FMMCL_DOUBLE ? "double" : "single", n, opts, best, best_total, inter,
          inter * 20e-9);
  fflush(csv);
  fprintf(stderr, "  N=%-9zu %-6s %.3e interactions/s  %8.1f GFLOP/s  kernel %.3f ms  [%s]\n", n,
          o->precision == FMMCL_DOUBLE ? "double" : "single", inter, inter * 20e-9, best * 1e3, opts);
  fmmcl_plan_destroy(plan);
  free(x);
  free(q);
  free(p);
  free(g);
}

int main(int argc, char **argv) {
  const char *device = NULL, *csv_path = NULL, *defines = NULL, *prec = "both", *kern = "laplace3d";
  size_t nmin = 1024, nmax = 1048576;
  int repeat = 3, dim = 3;
  double softening = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage();
      return 0;
    }
    if (!v) {
      fprintf(stderr, "bench-direct: %s needs a value (see --help)\n", a);
      return 2;
    }
    if (strcmp(a, "--device") == 0) device = v;
    else if (strcmp(a, "--csv") == 0) csv_path = v;
    else if (strcmp(a, "--defines") == 0) defines = v;
    else if (strcmp(a, "--precision") == 0) prec = v;
    else if (strcmp(a, "--kernel") == 0) kern = v;
    else if (strcmp(a, "--nmin") == 0) nmin = strtoull(v, NULL, 10);
    else if (strcmp(a, "--nmax") == 0) nmax = strtoull(v, NULL, 10);
    else if (strcmp(a, "--repeat") == 0) repeat = atoi(v);
    else if (strcmp(a, "--dim") == 0) dim = atoi(v);
    else if (strcmp(a, "--softening") == 0) softening = atof(v);
    else {
      fprintf(stderr, "bench-direct: unknown option %s (see --help)\n", a);
      return 2;
    }
    i++;
  }
  if (nmin == 0 || nmax < nmin || repeat < 1) {
    fprintf(stderr, "bench-direct: bad sweep bounds\n");
    return 2;
  }
  fmmcl_kernel kernel;
  if (fmmcl_kernel_parse(kern, &kernel) || (kernel != FMMCL_LAPLACE_3D && kernel != FMMCL_GAUSSIAN)) {
    fprintf(stderr, "bench-direct: --kernel %s: not laplace3d or gaussian (see --help)\n", kern);
    return 2;
  }
  fmmcl_context ctx;
  bench_check(NULL, fmmcl_context_create(&ctx, device), "fmmcl_context_create");
  bench_print_device(ctx);
  fmmcl_device_info info;
  fmmcl_context_device(ctx, &info);
  FILE *csv = bench_open_csv(csv_path);
  fprintf(csv, "device,kernel,precision,n,options,kernel_s,total_s,interactions_per_s,gflops\n");
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, kernel);
  if (o.kernel == FMMCL_GAUSSIAN) {
    o.dim = dim;
    o.sigma = 0.1;
  } else o.softening = softening;
  char kname[64]; /* the pair kernel (and its tuning name) is p2p_<kernel name> */
  snprintf(kname, sizeof kname, "p2p_%s", fmmcl_kernel_name(o.kernel));
  for (int pr = 0; pr < 2; pr++) {
    o.precision = pr ? FMMCL_DOUBLE : FMMCL_SINGLE;
    if (strcmp(prec, "both") != 0 && strcmp(prec, pr ? "double" : "single") != 0) continue;
    if (pr && !info.has_fp64) {
      fprintf(stderr, "no fp64 on this device: double skipped\n");
      continue;
    }
    char *list = strdup(defines ? defines : "");
    char *save = NULL;
    for (char *d = strtok_r(list, ";", &save);; d = strtok_r(NULL, ";", &save)) {
      if (defines && !d) break;
      bench_check(ctx, fmmcl_context_override_defines(ctx, kname, defines ? d : NULL), "override");
      for (size_t n = nmin; n <= nmax; n *= 2) run_point(ctx, csv, &o, n, repeat, info.device_name);
      if (!defines) break;
    }
    free(list);
  }
  if (csv != stdout) fclose(csv);
  fmmcl_context_destroy(ctx);
  return 0;
}
