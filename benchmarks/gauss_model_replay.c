/* gauss_model_replay.c — the Gaussian's model replayed off the device on
 * measured times: for each point of a table from bench-gauss-auto (N, d,
 * sigma, precision, ms of the direct sum, cut-off sum, FGT and bbFMM), the
 * GPU class's predictions on the same points and AUTO's execution over the
 * fastest method's, so a refit of lib/model/model_choose.c is checked
 * without a GPU; where the table has four more columns (each method's
 * creation in s, as bench-gauss-auto prints it), also AUTO's creation plus
 * EXECUTIONS executions over the least such total. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "core/internal.h"
#include "model/model.h"

enum { NM = FMMCL_GAUSS_METHODS };
static const char *names[NM] = {"direct", "cutoff", "fgt", "bbfmm"};

/* A measured time in ms; -1 where none: '-' or 'refused' (not offered),
 * '>' (the model's time then, not a measurement). '~' (the direct sum timed
 * on N/100 sources and scaled, an overstatement) is kept: never the best. */
static double measured(const char *s) {
  if (s[0] == '-' || s[0] == 'r' || s[0] == '>') return -1;
  return atof(s[0] == '~' ? s + 1 : s);
}

int main(int argc, char **argv) {
  const int help = argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
  if (argc < 2 || help) {
    fprintf(help ? stdout : stderr,
            "usage: gauss-model-replay TABLE [EXECUTIONS]\n"
            "  TABLE: lines 'N d sigma single|double direct cutoff fgt bbfmm' (ms; - refused ~ > as\n"
            "  bench-gauss-auto prints them), optionally followed by each method's creation (s; -: none);\n"
            "  the GPU class's model on bench-gauss-auto's points;\n"
            "  EXECUTIONS: AUTO's opt.executions (default 1e6: execution against execution)\n");
    return help ? 0 : 2;
  }
  FILE *f = fopen(argv[1], "r");
  if (!f) return perror(argv[1]), 1;
  const int executions = argc > 2 ? atoi(argv[2]) : 1000000;
  fmmcl_context ctx;
  bench_check(NULL, fmmcl_context_create(&ctx, getenv("FMMCL_DEVICE")), "fmmcl_context_create");
  ctx->dev.info.is_gpu = 1;              /* the model's device class only: nothing runs */
  ctx->dev.info.local_mem_bytes = 49152; /* the H100's under NVIDIA OpenCL */
  char sn[32], sp[16], ms[NM][32], cs[NM][32], line[512];
  int dim;
  double sigma, worst = 0, sum = 0, worst_total = 0;
  int points = 0, over = 0, totals = 0, over_total = 0;
  printf("# N d sigma prec | method:measured/model ms ... | best auto ratio [total ratio] (executions %d)\n",
         executions);
  while (fgets(line, sizeof line, f)) {
    const int fields = sscanf(line, "%31s %d %lf %15s %31s %31s %31s %31s %31s %31s %31s %31s", sn, &dim,
                              &sigma, sp, ms[0], ms[1], ms[2], ms[3], cs[0], cs[1], cs[2], cs[3]);
    if (fields < 8) continue;
    const int with_create = fields == 12;
    const size_t n = (size_t)atof(sn);
    double t[NM], pred[NM];
    int best = -1;
    for (int m = 0; m < NM; m++) {
      t[m] = measured(ms[m]);
      if (t[m] > 0 && ms[m][0] != '~' && (best < 0 || t[m] < t[best])) best = m;
    }
    double *x = malloc(n * dim * sizeof *x);
    bench_random_points(1, n, dim, x); /* bench-gauss-auto's points */
    fmmcl_plan_options o;
    fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
    o.dim = dim, o.sigma = sigma, o.gradient = 0, o.method = FMMCL_AUTO, o.executions = executions;
    o.precision = strcmp(sp, "single") == 0 ? FMMCL_SINGLE : FMMCL_DOUBLE;
    o.tolerance = o.precision == FMMCL_SINGLE ? 1e-4 : 1e-6;
    fmmcl_model_gaussian(ctx, &o, n, x, 0, NULL, pred, NULL);
    fmmcl_plan_options r;
    bench_check(ctx, fmmcl_model_resolve(ctx, &o, n, x, 0, NULL, &r), "AUTO");
    free(x);
    int chose = -1;
    for (int m = 0; m < NM; m++)
      if ((fmmcl_method[]){FMMCL_DIRECT, FMMCL_CUTOFF, FMMCL_FGT, FMMCL_BBFMM}[m] == r.method) chose = m;
    const double ratio = chose >= 0 && best >= 0 && t[chose] > 0 ? t[chose] / t[best] : NAN;
    /* measured creation plus the executions, for the methods measured in full */
    double total[NM], least = HUGE_VAL;
    for (int m = 0; m < NM; m++) {
      total[m] = with_create && t[m] > 0 && ms[m][0] != '~' && cs[m][0] != '-'
                     ? atof(cs[m]) + executions * 1e-3 * t[m]
                     : NAN;
      if (total[m] < least) least = total[m];
    }
    const double total_ratio = chose >= 0 ? total[chose] / least : NAN;
    printf("%s %d %g %s |", sn, dim, sigma, sp);
    for (int m = 0; m < NM; m++) printf(" %s:%s/%.2f", names[m], ms[m], pred[m] >= 0 ? 1e3 * pred[m] : NAN);
    printf(" | %s %s %.2f%s", best >= 0 ? names[best] : "?", chose >= 0 ? names[chose] : "?", ratio,
           ratio > 1.2 ? "  over 1.2" : "");
    if (with_create) printf(" | total %.2f%s", total_ratio, total_ratio > 1.2 ? "  over 1.2" : "");
    printf("\n");
    if (total_ratio == total_ratio) {
      totals++, over_total += total_ratio > 1.2;
      worst_total = fmax(worst_total, total_ratio);
    }
    if (ratio == ratio) {
      points++, sum += ratio, over += ratio > 1.2;
      worst = fmax(worst, ratio);
    }
  }
  printf("# %d points: AUTO / best worst %.2f, mean %.3f, %d over 1.2\n", points, worst,
         points ? sum / points : NAN, over);
  if (totals)
    printf(
        "# %d points with creation: AUTO's creation + %d executions over the least, worst %.2f, %d over 1.2\n",
        totals, executions, worst_total, over_total);
  fclose(f);
  fmmcl_context_destroy(ctx);
  return 0;
}
