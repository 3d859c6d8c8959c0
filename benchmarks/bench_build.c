/* bench_build.c — cold and warm kernel build times: plan creation with an
 * empty program-binary cache, then again with the cache filled. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

static void usage(void) {
  printf(
      "usage: bench-build [--device SEL] [--csv FILE] [--repeat R]\n"
      "Times fmmcl_plan_create for each kernel and precision, first with an empty\n"
      "binary cache (cold: the OpenCL compiler runs) then with the cache filled\n"
      "(warm: the binary is loaded). A fresh cache directory is made under /tmp;\n"
      "the drivers' own caches are switched off (CUDA_CACHE_DISABLE=1,\n"
      "POCL_KERNEL_CACHE=0) so cold really compiles. CSV: device,kernel,precision,cold_s,warm_s\n");
}

int main(int argc, char **argv) {
  const char *device = NULL, *csv_path = NULL;
  int repeat = 3;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      usage();
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "bench-build: %s needs a value (see --help)\n", argv[i]);
      return 2;
    }
    if (strcmp(argv[i], "--device") == 0) device = argv[++i];
    else if (strcmp(argv[i], "--csv") == 0) csv_path = argv[++i];
    else if (strcmp(argv[i], "--repeat") == 0) repeat = atoi(argv[++i]);
    else {
      fprintf(stderr, "bench-build: unknown option %s (see --help)\n", argv[i]);
      return 2;
    }
  }
  char dir[] = "/tmp/fmmcl-bench-build-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  setenv("XDG_CACHE_HOME", dir, 1);
  setenv("CUDA_CACHE_DISABLE", "1", 1);
  setenv("POCL_KERNEL_CACHE", "0", 1);
  unsetenv("FMMCL_NO_CACHE");
  fmmcl_context ctx;
  bench_check(NULL, fmmcl_context_create(&ctx, device), "fmmcl_context_create");
  bench_print_device(ctx);
  fmmcl_device_info info;
  fmmcl_context_device(ctx, &info);
  FILE *csv = bench_open_csv(csv_path);
  fprintf(csv, "device,kernel,precision,cold_s,warm_s\n");
  double x[6] = {0, 0, 0, 1, 1, 1}, q[2] = {1, 1};
  (void)q;
  for (int k = 0; k < 2; k++)
    for (int pr = 0; pr < 2; pr++) {
      if (pr && !info.has_fp64) continue;
      fmmcl_plan_options o;
      fmmcl_plan_options_init(&o, k ? FMMCL_GAUSSIAN : FMMCL_LAPLACE_3D);
      o.precision = pr ? FMMCL_DOUBLE : FMMCL_SINGLE;
      double cold = 0, warm = 1e30;
      for (int r = 0; r <= repeat; r++) {
        fmmcl_plan plan;
        double t0 = bench_now();
        bench_check(ctx, fmmcl_plan_create(ctx, &o, 2, x, 0, NULL, &plan), "fmmcl_plan_create");
        double t = bench_now() - t0;
        fmmcl_plan_destroy(plan);
        if (r == 0) cold = t;
        else if (t < warm) warm = t;
      }
      const char *kn = fmmcl_kernel_name(o.kernel), *pn = pr ? "double" : "single";
      fprintf(csv, "\"%s\",%s,%s,%.4f,%.4f\n", info.device_name, kn, pn, cold, warm);
      fprintf(stderr, "  %-9s %-6s cold %.3f s  warm %.4f s\n", kn, pn, cold, warm);
    }
  if (csv != stdout) fclose(csv);
  fmmcl_context_destroy(ctx);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return 0;
}
