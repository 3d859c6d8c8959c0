/* tuning_defaults.c — the built-in -D parameters per kernel and vendor
 * class, for devices fmmtune never ran on (or with FMMCL_NO_TUNING=1). */
#include <stdio.h>
#include <string.h>

#include "tuning/tuning.h"

typedef struct {
  const char *kernel;
  fmmcl_vendor vendor;
  int gpu;              /* -1: any device type */
  int precision;        /* -1: either; else an fmmcl_precision */
  const char *defines;
} default_entry;

/* First match wins; the last entry of each kernel is its catch-all. GPU
 * values were measured on an H100 (benchmarks/README.md); CPU values keep
 * the work-group small because PoCL runs a work-group per core. Each must
 * be a point of the kernel's space (tuning_spaces.c; check_tuning tests it)
 * so that fmmtune can time it as the baseline. */
static const default_entry defaults[] = {
    /* H100, NVIDIA OpenCL: the best of the sweep at N = 1,048,576 */
    {"p2p_laplace3d", FMMCL_VENDOR_NVIDIA, 1, FMMCL_SINGLE, "-DWGS=256 -DTPW=4 -DUNROLL=8"},
    {"p2p_laplace3d", FMMCL_VENDOR_NVIDIA, 1, FMMCL_DOUBLE, "-DWGS=512 -DTPW=2 -DUNROLL=16"},
    {"p2p_laplace3d", FMMCL_VENDOR_AMD, 1, -1, "-DWGS=256 -DTPW=2 -DUNROLL=4"},
    {"p2p_laplace3d", FMMCL_VENDOR_OTHER, 1, -1, "-DWGS=128 -DTPW=2 -DUNROLL=4"},
    {"p2p_laplace3d", FMMCL_VENDOR_OTHER, -1, -1, "-DWGS=64 -DTPW=1 -DUNROLL=4"},
    {"p2p_gaussian", FMMCL_VENDOR_OTHER, 1, -1, "-DWGS=128 -DTPW=2 -DUNROLL=4"},
    {"p2p_gaussian", FMMCL_VENDOR_OTHER, -1, -1, "-DWGS=64 -DTPW=1 -DUNROLL=2"},
    {"fmm3d_p2p", FMMCL_VENDOR_OTHER, -1, -1, "-DWGS=64 -DUNROLL=4"},
    /* moved per order (tuning_spaces.c): WGS up to NCOEF rounded to 32,
     * M2L_BATCH down to what fits half the local memory */
    {"fmm3d_expansions", FMMCL_VENDOR_OTHER, -1, -1, "-DWGS=32 -DM2L_BATCH=8"},
};

static int matches(const default_entry *e, fmmcl_precision precision, const fmmcl_device_info *d) {
  if (e->gpu >= 0 && e->gpu != d->is_gpu) return 0;
  if (e->precision >= 0 && e->precision != (int)precision) return 0;
  return e->vendor == FMMCL_VENDOR_OTHER || e->vendor == d->vendor;
}

/* The space's class_default moves the table's point for the class. */
static void for_class(const char *kernel, fmmcl_precision precision, const char *problem_class,
                      const fmmcl_device_info *dev, char *buf, size_t len) {
  const fmmcl_tuning_space *s = fmmcl_tuning_space_find(kernel);
  fmmcl_tuning_class cls;
  fmmcl_tuning_point pt;
  char why[160];
  if (!s || !s->class_default || !fmmcl_tuning_class_parse(s, problem_class, &cls) ||
      !fmmcl_tuning_point_parse(s, buf, &pt, why, sizeof why))
    return;
  s->class_default(s, &pt, &cls, precision, dev);
  fmmcl_tuning_point_format(s, &pt, 1, buf, len);
}

fmmcl_status fmmcl_tuning_default(const char *kernel, fmmcl_precision precision, const char *problem_class,
                                  const fmmcl_device_info *dev, char *buf, size_t len) {
  for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
    if (strcmp(defaults[i].kernel, kernel) == 0 && matches(&defaults[i], precision, dev)) {
      snprintf(buf, len, "%s", defaults[i].defines);
      for_class(kernel, precision, problem_class, dev, buf, len);
      return FMMCL_SUCCESS;
    }
  return FMMCL_ERROR_INTERNAL;
}
