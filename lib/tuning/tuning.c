/* tuning.c — the -D parameters a kernel is built with: an override set on
 * the context (by fmmtune and the benchmarks' sweeps), else the tuning
 * cache's entry for the device when it is valid there, else the built-in
 * default for the device's vendor class; and the notes saying why a cache
 * entry was passed over. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuning/tuning.h"

/* ---- notes: per thread, device and kernel, so no lock is needed and
 * one kernel's lookup does not wipe what another's found ---------------- */

#define NOTE_SLOTS 16
#define NOTE_LEN 1024

static _Thread_local struct {
  uint64_t device;
  char kernel[64];
  char text[NOTE_LEN];
} notes[NOTE_SLOTS];
static _Thread_local unsigned next_slot;

static uint64_t device_key(const fmmcl_device_info *d) {
  uint64_t h = FMMCL_HASH64_INIT;
  h = fmmcl_hash64(h, d->platform_vendor, strlen(d->platform_vendor) + 1);
  h = fmmcl_hash64(h, d->device_name, strlen(d->device_name) + 1);
  return fmmcl_hash64(h, d->driver_version, strlen(d->driver_version) + 1) | 1; /* 0: empty slot */
}

/* kernel "" holds what fmmcl_tuning_entries found in the file */
static void set_notes(const fmmcl_device_info *d, const char *kernel, const char *text) {
  const uint64_t key = device_key(d);
  int slot = -1;
  for (int i = 0; i < NOTE_SLOTS && slot < 0; i++)
    if (notes[i].device == key && strcmp(notes[i].kernel, kernel) == 0) slot = i;
  if (slot < 0) {
    if (!text[0]) return;
    slot = (int)(next_slot++ % NOTE_SLOTS);
    notes[slot].device = key;
    snprintf(notes[slot].kernel, sizeof notes[slot].kernel, "%s", kernel);
  }
  snprintf(notes[slot].text, NOTE_LEN, "%s", text);
}

/* Appends each line of text to buf unless buf has it already. */
static void merge_lines(char *buf, size_t len, const char *text) {
  for (const char *s = text; *s;) {
    const char *e = strchr(s, '\n');
    const size_t n = e ? (size_t)(e - s) : strlen(s);
    int seen = 0;
    for (const char *b = buf; *b && !seen;) {
      const char *be = strchr(b, '\n');
      const size_t bn = be ? (size_t)(be - b) : strlen(b);
      seen = bn == n && strncmp(b, s, n) == 0;
      b = be ? be + 1 : b + bn;
    }
    size_t used = strlen(buf);
    if (!seen && n && used + n + 2 < len)
      snprintf(buf + used, len - used, "%s%.*s", used ? "\n" : "", (int)n, s);
    s = e ? e + 1 : s + n;
  }
}

static void add_note(char *buf, size_t len, const char *fmt, const char *a, const char *b) {
  size_t used = strlen(buf);
  if (used + 2 >= len) return;
  if (used) buf[used++] = '\n', buf[used] = '\0';
  snprintf(buf + used, len - used, fmt, a, b);
}

int fmmcl_tuning_disabled(void) {
  const char *off = getenv("FMMCL_NO_TUNING");
  return off && *off && strcmp(off, "0") != 0;
}

fmmcl_status fmmcl_tuning_notes(const fmmcl_device_info *device, char *buf, size_t len) {
  fmmcl_clear_error(NULL);
  if (!device || !buf || !len)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tuning_notes: NULL argument");
  const uint64_t key = device_key(device);
  buf[0] = '\0';
  for (int i = 0; i < NOTE_SLOTS; i++)
    if (notes[i].device == key) merge_lines(buf, len, notes[i].text);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_tuning_entries(const fmmcl_device_info *device, fmmcl_tuning_entry *out, size_t capacity,
                                  size_t *count) {
  fmmcl_clear_error(NULL);
  if (!device || !count || (!out && capacity))
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tuning_entries: NULL argument");
  char path[4200], text[NOTE_LEN];
  fmmcl_status st = fmmcl_tuning_file_path(device, path, sizeof path);
  if (st) return st;
  fmmcl_tuning_entry *list;
  size_t n;
  st = fmmcl_tuning_read(path, device, &list, &n, text, sizeof text);
  set_notes(device, "", text);
  if (st) {
    free(list);
    return fmmcl_fail(NULL, st, "%s", text[0] ? text : "reading the tuning cache failed");
  }
  for (size_t i = 0; i < n && i < capacity; i++) out[i] = list[i];
  *count = n;
  free(list);
  return FMMCL_SUCCESS;
}

/* The cache's entry for the key when it is usable; notes say otherwise. */
static int cached_defines(const fmmcl_device_info *dev, const char *kernel, fmmcl_precision precision,
                          const char *problem_class, char *buf, size_t len, char *text, size_t text_len) {
  char path[4200];
  fmmcl_tuning_entry *list = NULL;
  size_t n = 0;
  int found = 0;
  text[0] = '\0';
  if (fmmcl_tuning_disabled()) {
    add_note(text, text_len, "FMMCL_NO_TUNING is set: built-in defaults%s%s", "", "");
    return 0;
  }
  if (fmmcl_tuning_path(dev, path, sizeof path)) {
    add_note(text, text_len, "no tuning file: neither FMMCL_TUNING_FILE, XDG_CACHE_HOME nor HOME is set%s%s",
             "", "");
    return 0;
  }
  fmmcl_tuning_read(path, dev, &list, &n, text, text_len); /* a bad file only costs speed */
  for (size_t i = 0; i < n; i++) {
    const fmmcl_tuning_entry *e = &list[i];
    if (strcmp(e->kernel, kernel) || e->precision != precision || strcmp(e->problem_class, problem_class))
      continue;
    if (e->usable) {
      snprintf(buf, len, "%s", e->defines);
      found = 1;
    } else {
      char key[160];
      snprintf(key, sizeof key, "%s %s %s", kernel, precision == FMMCL_DOUBLE ? "double" : "single",
               problem_class);
      add_note(text, text_len, "entry %s ignored: %s", key, e->note);
    }
  }
  free(list);
  return found;
}

static const char *const kernel_names[FMMCL_TUNED_COUNT] = {
    [FMMCL_TUNED_P2P_LAPLACE3D] = "p2p_laplace3d",
    [FMMCL_TUNED_P2P_LAPLACE2D] = "p2p_laplace2d",
    [FMMCL_TUNED_P2P_YUKAWA3D] = "p2p_yukawa3d",
    [FMMCL_TUNED_P2P_GAUSSIAN] = "p2p_gaussian",
    [FMMCL_TUNED_FMM3D_P2P] = "fmm3d_p2p",
    [FMMCL_TUNED_FMM3D_EXPANSIONS] = "fmm3d_expansions",
    [FMMCL_TUNED_M2L2D] = "m2l2d",
    [FMMCL_TUNED_TREE_SORT] = "tree_sort",
    [FMMCL_TUNED_FGT] = "fgt",
    [FMMCL_TUNED_BBFMM] = "bbfmm",
    [FMMCL_TUNED_P2P_LAPLACE3D_EXT] = "p2p_laplace3d_ext",
    [FMMCL_TUNED_P2P_HELMHOLTZ3D] = "p2p_helmholtz3d",
    [FMMCL_TUNED_P2P_STOKES3D] = "p2p_stokes3d",
};

const char *fmmcl_tuned_kernel_name(fmmcl_tuned_kernel kernel) {
  return (unsigned)kernel < FMMCL_TUNED_COUNT ? kernel_names[kernel] : NULL;
}

/* The text of the parameters: override, cache entry, else default. */
static int lookup_text(fmmcl_context ctx, const char *kernel, fmmcl_precision precision,
                       const char *problem_class, char *buf, size_t len) {
  for (size_t i = 0; i < ctx->n_overrides; i++)
    if (strcmp(ctx->overrides[i].kernel, kernel) == 0) {
      snprintf(buf, len, "%s", ctx->overrides[i].defines);
      return 1;
    }
  const fmmcl_device_info *dev = &ctx->dev.info;
  char text[NOTE_LEN];
  const int found = cached_defines(dev, kernel, precision, problem_class, buf, len, text, sizeof text);
  set_notes(dev, kernel, text);
  return found || fmmcl_tuning_default(kernel, precision, problem_class, dev, buf, len);
}

fmmcl_status fmmcl_tuned_params(fmmcl_context ctx, fmmcl_tuned_kernel kernel, fmmcl_precision precision,
                                const char *problem_class, fmmcl_params *out) {
  const char *name = fmmcl_tuned_kernel_name(kernel);
  char text[512], why[160];
  memset(out, 0, sizeof *out);
  if (!name || !lookup_text(ctx, name, precision, problem_class ? problem_class : "", text, sizeof text))
    return fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "no default parameters for kernel %s",
                      name ? name : "(unknown)");
  if (!fmmcl_params_parse(fmmcl_tuning_space_find(name), text, out, why, sizeof why))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s: parameters \"%s\": %s", name, text, why);
  return FMMCL_SUCCESS;
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

fmmcl_status fmmcl_tuning_override(fmmcl_context ctx, const char *kernel, const char *parameters) {
  fmmcl_clear_error(ctx);
  if (!ctx || !kernel)
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_tuning_override: NULL argument");
  const fmmcl_tuning_space *s = fmmcl_tuning_space_find(kernel);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "fmmcl_tuning_override: no kernel %s", kernel);
  if (!parameters) return fmmcl_context_override_defines(ctx, kernel, NULL);
  /* a point of the space; whether it fits the device and a problem is
   * checked when a plan builds with it */
  fmmcl_tuning_point pt;
  char why[160], defines[256];
  if (!fmmcl_tuning_point_parse(s, parameters, &pt, why, sizeof why))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "fmmcl_tuning_override(%s, \"%s\"): %s", kernel,
                      parameters, why);
  fmmcl_tuning_point_format(s, &pt, 1, defines, sizeof defines);
  return fmmcl_context_override_defines(ctx, kernel, defines);
}
