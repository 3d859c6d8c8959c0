/* tuning_cache.c — the lines of a tuning cache file: the device line that
 * opens a section, the entry lines in it; parsing, formatting and checking
 * an entry against its kernel's space. Lines that fail to parse are
 * reported as garbled, never trusted.
 *
 *   # fmmcl tuning cache v1
 *   device: vendor=NVIDIA Corporation ; name=NVIDIA H100 80GB HBM3 ; driver=580.159.04
 *   p2p_laplace3d single dim3 : WGS=128 TPW=4 UNROLL=4 ; time_ms=12.3 ; default_ms=20.1 ; n=131072 ; date=2026-11-22T18:00:00Z
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuning/tuning.h"

/* Copies s[0..n) into buf without surrounding blanks. */
static void copy_trimmed(char *buf, size_t len, const char *s, size_t n) {
  while (n && isspace((unsigned char)*s)) {
    s++;
    n--;
  }
  while (n && isspace((unsigned char)s[n - 1])) n--;
  snprintf(buf, len, "%.*s", (int)n, s);
}

/* A device string as the file stores it: ';' and line breaks would end
 * the field or the line, so they become ',' and ' '; blanks trimmed. */
static void device_field(char *buf, size_t len, const char *s) {
  char tmp[256];
  copy_trimmed(tmp, sizeof tmp, s, strlen(s));
  for (char *p = tmp; *p; p++) {
    if (*p == ';') *p = ',';
    else if (*p == '\n' || *p == '\r') *p = ' ';
  }
  snprintf(buf, len, "%s", tmp);
}

void fmmcl_tuning_format_device(const fmmcl_device_info *dev, char *buf, size_t len) {
  char v[256], n[256], d[256];
  device_field(v, sizeof v, dev->platform_vendor);
  device_field(n, sizeof n, dev->device_name);
  device_field(d, sizeof d, dev->driver_version);
  snprintf(buf, len, "device: vendor=%s ; name=%s ; driver=%s", v, n, d);
}

int fmmcl_tuning_header_ok(const char *line) {
  const size_t n = strlen(FMMCL_TUNING_MAGIC);
  if (strncmp(line, FMMCL_TUNING_MAGIC, n) != 0) return 0;
  for (const char *p = line + n; *p; p++)
    if (!isspace((unsigned char)*p)) return 0;
  return 1;
}

/* Splits "k=v ; k=v ; ..." and calls back on each pair; 0 on a malformed one. */
typedef int (*pair_fn)(void *arg, const char *key, const char *value);
static int for_each_pair(const char *s, pair_fn fn, void *arg) {
  while (*s) {
    const char *end = strchr(s, ';');
    if (!end) end = s + strlen(s);
    char field[512];
    copy_trimmed(field, sizeof field, s, (size_t)(end - s));
    if (field[0]) {
      char *eq = strchr(field, '=');
      if (!eq) return 0;
      *eq = '\0';
      char key[64], value[448];
      copy_trimmed(key, sizeof key, field, strlen(field));
      copy_trimmed(value, sizeof value, eq + 1, strlen(eq + 1));
      if (!fn(arg, key, value)) return 0;
    }
    s = *end ? end + 1 : end;
  }
  return 1;
}

typedef struct {
  char vendor[256], name[256], driver[256];
  int got;
} device_fields;

static int device_pair(void *arg, const char *key, const char *value) {
  device_fields *f = arg;
  if (strcmp(key, "vendor") == 0) {
    snprintf(f->vendor, sizeof f->vendor, "%s", value);
    f->got |= 1;
  } else if (strcmp(key, "name") == 0) {
    snprintf(f->name, sizeof f->name, "%s", value);
    f->got |= 2;
  } else if (strcmp(key, "driver") == 0) {
    snprintf(f->driver, sizeof f->driver, "%s", value);
    f->got |= 4;
  }
  return 1; /* unknown keys: a later version may add some */
}

static int parse_number(const char *s, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || !isfinite(v) || v < 0) return 0;
  *out = v;
  return 1;
}

static int entry_pair(void *arg, const char *key, const char *value) {
  fmmcl_tuning_entry *e = arg;
  double v;
  if (strcmp(key, "time_ms") == 0) return parse_number(value, &e->time_ms);
  if (strcmp(key, "default_ms") == 0) return parse_number(value, &e->default_ms);
  if (strcmp(key, "n") == 0) {
    if (!parse_number(value, &v)) return 0;
    e->n = (unsigned long long)v;
    return 1;
  }
  if (strcmp(key, "date") == 0) {
    snprintf(e->date, sizeof e->date, "%s", value);
    return 1;
  }
  return 1;
}

/* "WGS=128 TPW=4" -> "-DWGS=128 -DTPW=4"; 0 when empty or too long. */
static int params_to_defines(const char *params, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (const char *s = params; *s;) {
    while (*s && isspace((unsigned char)*s)) s++;
    if (!*s) break;
    const char *e = s;
    while (*e && !isspace((unsigned char)*e)) e++;
    const int has_d = e - s > 2 && s[0] == '-' && s[1] == 'D';
    int n = snprintf(buf + used, len - used, "%s%s%.*s", used ? " " : "", has_d ? "" : "-D", (int)(e - s), s);
    if (n < 0 || (size_t)n >= len - used) return 0;
    used += (size_t)n;
    s = e;
  }
  return used > 0;
}

static fmmcl_tuning_line parse_entry(const char *line, fmmcl_tuning_entry *out) {
  fmmcl_tuning_entry e;
  memset(&e, 0, sizeof e);
  const char *colon = strchr(line, ':');
  if (!colon) return FMMCL_TUNING_LINE_GARBLED;
  char key[256], prec[32], extra[8];
  copy_trimmed(key, sizeof key, line, (size_t)(colon - line));
  if (sscanf(key, "%63s %31s %31s %7s", e.kernel, prec, e.problem_class, extra) != 3)
    return FMMCL_TUNING_LINE_GARBLED;
  if (strcmp(prec, "single") == 0) e.precision = FMMCL_SINGLE;
  else if (strcmp(prec, "double") == 0) e.precision = FMMCL_DOUBLE;
  else return FMMCL_TUNING_LINE_GARBLED;
  const char *rest = colon + 1, *semi = strchr(rest, ';');
  char params[256];
  copy_trimmed(params, sizeof params, rest, semi ? (size_t)(semi - rest) : strlen(rest));
  if (!params_to_defines(params, e.defines, sizeof e.defines)) return FMMCL_TUNING_LINE_GARBLED;
  if (semi && !for_each_pair(semi + 1, entry_pair, &e)) return FMMCL_TUNING_LINE_GARBLED;
  if (out) *out = e;
  return FMMCL_TUNING_LINE_ENTRY;
}

fmmcl_tuning_line fmmcl_tuning_parse_line(const char *line, const fmmcl_device_info *dev, int *same_device,
                                          fmmcl_tuning_entry *entry) {
  while (isspace((unsigned char)*line)) line++;
  if (!*line || *line == '#') return FMMCL_TUNING_LINE_BLANK;
  if (strncmp(line, "device:", 7) == 0) {
    device_fields f = {.got = 0};
    if (!for_each_pair(line + 7, device_pair, &f) || f.got != 7) return FMMCL_TUNING_LINE_GARBLED;
    if (same_device) {
      char v[256], n[256], d[256];
      device_field(v, sizeof v, dev->platform_vendor);
      device_field(n, sizeof n, dev->device_name);
      device_field(d, sizeof d, dev->driver_version);
      *same_device = strcmp(v, f.vendor) == 0 && strcmp(n, f.name) == 0 && strcmp(d, f.driver) == 0;
    }
    return FMMCL_TUNING_LINE_DEVICE;
  }
  return parse_entry(line, entry);
}

void fmmcl_tuning_format_entry(const fmmcl_tuning_entry *e, char *buf, size_t len) {
  char params[256];
  size_t used = 0;
  params[0] = '\0';
  for (const char *s = e->defines; *s && used < sizeof params;) { /* drop each -D */
    while (*s == ' ') s++;
    if (s[0] == '-' && s[1] == 'D') s += 2;
    const char *t = s;
    while (*t && *t != ' ') t++;
    int n = snprintf(params + used, sizeof params - used, "%s%.*s", used ? " " : "", (int)(t - s), s);
    if (n < 0) break;
    used += (size_t)n;
    s = t;
  }
  snprintf(buf, len, "%s %s %s : %s ; time_ms=%.6g ; default_ms=%.6g ; n=%llu ; date=%s", e->kernel,
           e->precision == FMMCL_DOUBLE ? "double" : "single", e->problem_class, params, e->time_ms,
           e->default_ms, e->n, e->date[0] ? e->date : "unknown");
}

int fmmcl_tuning_entry_check(fmmcl_tuning_entry *e, const fmmcl_device_info *dev) {
  e->usable = 0;
  const fmmcl_tuning_space *space = fmmcl_tuning_space_find(e->kernel);
  fmmcl_tuning_class cls;
  fmmcl_tuning_point pt;
  char why[160];
  if (!space) {
    snprintf(e->note, sizeof e->note, "%s declares no tuning space", e->kernel);
  } else if (!fmmcl_tuning_class_parse(space, e->problem_class, &cls)) {
    snprintf(e->note, sizeof e->note, "%s is not a problem class of %s", e->problem_class, e->kernel);
  } else if (!fmmcl_tuning_point_parse(space, e->defines, &pt, why, sizeof why)) {
    snprintf(e->note, sizeof e->note, "%s", why);
  } else if (!fmmcl_tuning_point_fits(space, &pt, &cls, e->precision, dev, why, sizeof why)) {
    snprintf(e->note, sizeof e->note, "does not fit %.40s: %.100s", dev->device_name, why);
  } else {
    fmmcl_tuning_point_format(space, &pt, 1, e->defines, sizeof e->defines);
    e->note[0] = '\0';
    e->usable = 1;
  }
  return e->usable;
}
