/* tuning.c — the -D parameters a kernel is built with: an override set on
 * the context (by fmmtune and the benchmarks' sweeps), else the built-in
 * default for the device's vendor class. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  const char *kernel;
  fmmcl_vendor vendor;
  int gpu;              /* -1: any device type */
  const char *defines;
} default_entry;

/* First match wins; the last entry of each kernel is its catch-all. GPU
 * values were measured on an H100 (benchmarks/README.md); CPU values keep
 * the work-group small because PoCL runs a work-group per core. */
static const default_entry defaults[] = {
    {"p2p_laplace3d", FMMCL_VENDOR_NVIDIA, 1, "-DWGS=128 -DTPW=4 -DUNROLL=4"},
    {"p2p_laplace3d", FMMCL_VENDOR_AMD, 1, "-DWGS=256 -DTPW=2 -DUNROLL=4"},
    {"p2p_laplace3d", FMMCL_VENDOR_OTHER, 1, "-DWGS=128 -DTPW=2 -DUNROLL=4"},
    {"p2p_laplace3d", FMMCL_VENDOR_OTHER, -1, "-DWGS=64 -DTPW=1 -DUNROLL=4"},
    {"p2p_gaussian", FMMCL_VENDOR_OTHER, 1, "-DWGS=128 -DTPW=2 -DUNROLL=4"},
    {"p2p_gaussian", FMMCL_VENDOR_OTHER, -1, "-DWGS=64 -DTPW=1 -DUNROLL=2"},
};

static int matches(const default_entry *e, const fmmcl_device_info *d) {
  if (e->gpu >= 0 && e->gpu != d->is_gpu) return 0;
  return e->vendor == FMMCL_VENDOR_OTHER || e->vendor == d->vendor;
}

fmmcl_status fmmcl_tuned_defines(fmmcl_context ctx, const char *kernel, fmmcl_precision precision,
                                 const char *problem_class, char *buf, size_t len) {
  (void)precision;
  (void)problem_class;
  for (size_t i = 0; i < ctx->n_overrides; i++)
    if (strcmp(ctx->overrides[i].kernel, kernel) == 0) {
      snprintf(buf, len, "%s", ctx->overrides[i].defines);
      return FMMCL_SUCCESS;
    }
  for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
    if (strcmp(defaults[i].kernel, kernel) == 0 && matches(&defaults[i], &ctx->dev.info)) {
      snprintf(buf, len, "%s", defaults[i].defines);
      return FMMCL_SUCCESS;
    }
  return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "no default parameters for kernel %s", kernel);
}

fmmcl_status fmmcl_context_override_defines(fmmcl_context ctx, const char *kernel, const char *defines) {
  for (size_t i = 0; i < ctx->n_overrides; i++)
    if (strcmp(ctx->overrides[i].kernel, kernel) == 0) {
      if (!defines) { /* remove */
        ctx->overrides[i] = ctx->overrides[--ctx->n_overrides];
        return FMMCL_SUCCESS;
      }
      snprintf(ctx->overrides[i].defines, sizeof ctx->overrides[i].defines, "%s", defines);
      return FMMCL_SUCCESS;
    }
  if (!defines) return FMMCL_SUCCESS;
  if (ctx->n_overrides == FMMCL_MAX_OVERRIDES)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "too many kernel overrides");
  snprintf(ctx->overrides[ctx->n_overrides].kernel, sizeof ctx->overrides[0].kernel, "%s", kernel);
  snprintf(ctx->overrides[ctx->n_overrides].defines, sizeof ctx->overrides[0].defines, "%s", defines);
  ctx->n_overrides++;
  return FMMCL_SUCCESS;
}
