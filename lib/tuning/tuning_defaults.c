/* tuning_defaults.c — the built-in parameters per kernel and vendor class
 * (the rows of defaults.def) and their lookup, moved per problem class by
 * the kernel space's class rule. */
#include <stdio.h>
#include <string.h>

#include "tuning/tuning.h"

enum { ANY = -1, GPU = 1, CPU = 0 };
enum {
  NVIDIA = FMMCL_VENDOR_NVIDIA,
  AMD = FMMCL_VENDOR_AMD,
  INTEL = FMMCL_VENDOR_INTEL,
  POCL = FMMCL_VENDOR_POCL
};
enum { SINGLE = FMMCL_SINGLE, DOUBLE = FMMCL_DOUBLE };

typedef struct {
  const char *kernel;
  int vendor;             /* ANY or an fmmcl_vendor */
  int gpu;                /* ANY, GPU or CPU (any non-GPU device) */
  int precision;          /* ANY or an fmmcl_precision */
  int class_lo, class_hi; /* 0 0: every class */
  const char *params;
} default_row;

static const default_row rows[] = {
#define FMMCL_DEFAULT(kernel, vendor, device, precision, lo, hi, params) \
  {#kernel, vendor, device, precision, lo, hi, params},
#include "tuning/defaults.def"
#undef FMMCL_DEFAULT
};

static int matches(const default_row *r, fmmcl_precision precision, const fmmcl_device_info *d,
                   const fmmcl_tuning_class *cls) {
  if (r->gpu != ANY && r->gpu != d->is_gpu) return 0;
  if (r->precision != ANY && r->precision != (int)precision) return 0;
  if ((r->class_lo || r->class_hi) && (!cls || cls->n < r->class_lo || cls->n > r->class_hi)) return 0;
  return r->vendor == ANY || r->vendor == (int)d->vendor;
}

int fmmcl_tuning_default(const char *kernel, fmmcl_precision precision, const char *problem_class,
                         const fmmcl_device_info *dev, char *buf, size_t len) {
  const fmmcl_tuning_space *s = fmmcl_tuning_space_find(kernel);
  fmmcl_tuning_class cls;
  const int has_class = s && fmmcl_tuning_class_parse(s, problem_class, &cls);
  if (len) buf[0] = '\0';
  for (size_t i = 0; s && i < sizeof rows / sizeof rows[0]; i++) {
    if (strcmp(rows[i].kernel, kernel) != 0 || !matches(&rows[i], precision, dev, has_class ? &cls : NULL))
      continue;
    fmmcl_tuning_point pt;
    char why[160];
    /* a row off its space is a bug check_tuning catches; give it as written */
    if (!fmmcl_tuning_point_parse(s, rows[i].params, &pt, why, sizeof why)) {
      snprintf(buf, len, "%s", rows[i].params);
      return 1;
    }
    if (has_class && s->class_default) s->class_default(s, &pt, &cls, precision, dev);
    fmmcl_tuning_point_format(s, &pt, 1, buf, len);
    return 1;
  }
  return 0;
}
