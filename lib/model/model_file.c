/* model_file.c — the performance model's file, one per device beside its
 * tuning cache: plain text, versioned, closed by a checksum so a cut or
 * edited file is detected, written through a temporary file and rename. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model.h"

const char *const fmmcl_model_phase_names[FMMCL_MODEL_NPHASES] = {
    "p2m", "m2m", "m2l", "p2l", "l2l", "l2p", "m2p", "p2p", "upload", "download", "overhead", "combine"};

static const char *const prec_names[2] = {"single", "double"};

fmmcl_status fmmcl_model_file_path(const fmmcl_device_info *dev, char *buf, size_t len) {
  if (!dev || !buf || !len)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_model_file_path: NULL argument");
  const char *env = getenv("FMMCL_MODEL_FILE");
  if (env && *env) {
    if ((size_t)snprintf(buf, len, "%s", env) >= len)
      return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT, "model file path too long");
    return FMMCL_SUCCESS;
  }
  char tuning[4096];
  fmmcl_status st = fmmcl_tuning_file_path(dev, tuning, sizeof tuning);
  if (st) return st;
  if ((size_t)snprintf(buf, len, "%s.model", tuning) >= len)
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT, "model file path too long");
  return FMMCL_SUCCESS;
}

/* The device line: what identifies a device's model across runs. */
static void device_line(const fmmcl_device_info *dev, char *buf, size_t len) {
  snprintf(buf, len, "device %s|%s|%s", dev->platform_vendor, dev->device_name, dev->driver_version);
}

/* The whole file but its checksum line, into a malloc'ed string. */
static char *format_body(const fmmcl_device_info *dev, const fmmcl_model *m) {
  size_t cap = 16384, used = 0;
  char *s = malloc(cap);
  if (!s) return NULL;
  char line[1200];
  device_line(dev, line, sizeof line);
#define PUT(...) used += (size_t)snprintf(s + used, used < cap ? cap - used : 0, __VA_ARGS__)
  PUT("%s\n# written by fmmtune --model; times in seconds, rates per second\n%s\n", FMMCL_MODEL_MAGIC, line);
  for (int p = 0; p < 2; p++) {
    const fmmcl_model_precision *mp = &m->prec[p];
    if (mp->measured) PUT("peaks %s %.17g %.17g\n", prec_names[p], mp->pairs_per_s, mp->bytes_per_s);
    if (!mp->fitted) continue;
    PUT("fit %s %zu\n", prec_names[p], mp->n_samples);
    for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) {
      PUT("phase %s %s", prec_names[p], fmmcl_model_phase_names[ph]);
      for (int r = 0; r < FMMCL_MODEL_NREG; r++) PUT(" %.17g", mp->c[ph][r]);
      PUT("\n");
    }
  }
#undef PUT
  if (used >= cap) {
    free(s);
    return NULL;
  } /* cannot happen at this size */
  return s;
}

static uint64_t checksum(const char *body) { return fmmcl_hash64(FMMCL_HASH64_INIT, body, strlen(body)); }

fmmcl_status fmmcl_model_store(const char *path, const fmmcl_device_info *dev, const fmmcl_model *m) {
  if (!path || !dev || !m)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_model_store: NULL argument");
  char *body = format_body(dev, m);
  if (!body) return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  if (fmmcl_make_dirs(path, 1) != 0) {
    free(body);
    return fmmcl_fail(NULL, FMMCL_ERROR_IO, "cannot create the directory of %s: %s", path, strerror(errno));
  }
  FILE *f = fopen(tmp, "w");
  if (!f) {
    free(body);
    return fmmcl_fail(NULL, FMMCL_ERROR_IO, "cannot write %s: %s", tmp, strerror(errno));
  }
  fprintf(f, "%schecksum %016" PRIx64 "\n", body, checksum(body));
  free(body);
  int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    const int e = errno;
    unlink(tmp);
    return fmmcl_fail(NULL, FMMCL_ERROR_IO, "cannot write %s: %s", path, strerror(e));
  }
  return FMMCL_SUCCESS;
}

static int prec_index(const char *name) {
  return strcmp(name, "single") == 0 ? 0 : strcmp(name, "double") == 0 ? 1 : -1;
}

static int phase_index(const char *name) {
  for (int i = 0; i < FMMCL_MODEL_NPHASES; i++)
    if (strcmp(name, fmmcl_model_phase_names[i]) == 0) return i;
  return -1;
}

/* One line after the device line; 0 when it is malformed. */
static int parse_line(const char *line, fmmcl_model *m) {
  char a[32], b[32];
  double v[FMMCL_MODEL_NREG];
  size_t n;
  int k;
  if (line[0] == '#') return 1;
  if (sscanf(line, "peaks %31s %lf %lf", a, &v[0], &v[1]) == 3) {
    if ((k = prec_index(a)) < 0 || !(v[0] > 0) || !(v[1] > 0)) return 0;
    m->prec[k].measured = 1, m->prec[k].pairs_per_s = v[0], m->prec[k].bytes_per_s = v[1];
    return 1;
  }
  if (sscanf(line, "fit %31s %zu", a, &n) == 2) {
    if ((k = prec_index(a)) < 0) return 0;
    m->prec[k].fitted = 1, m->prec[k].n_samples = n;
    return 1;
  }
  if (sscanf(line, "phase %31s %31s %lf %lf %lf %lf %lf", a, b, &v[0], &v[1], &v[2], &v[3], &v[4]) ==
      2 + FMMCL_MODEL_NREG) {
    int ph = phase_index(b);
    if ((k = prec_index(a)) < 0 || ph < 0 || !m->prec[k].fitted) return 0;
    for (int r = 0; r < FMMCL_MODEL_NREG; r++) m->prec[k].c[ph][r] = v[r];
    return 1;
  }
  return 0;
}

fmmcl_status fmmcl_model_load(const char *path, const fmmcl_device_info *dev, fmmcl_model *m) {
  if (!path || !dev || !m)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_model_load: NULL argument");
  memset(m, 0, sizeof *m);
  char *text;
  size_t len;
  FILE *f = fopen(path, "rb");
  if (!f) return fmmcl_fail(NULL, FMMCL_ERROR_IO, "no model file %s: %s", path, strerror(errno));
  fclose(f);
  fmmcl_status st = fmmcl_read_file(NULL, path, &text, &len);
  if (st) return st;
  /* the checksum line is the last; it covers every byte before it */
  char *last = len > 1 ? text + len - 2 : text;
  while (last > text && *last != '\n') last--;
  uint64_t want = 0;
  int ok = last > text && strlen(text) == len && text[len - 1] == '\n' &&
           sscanf(last + 1, "checksum %" SCNx64, &want) == 1;
  if (ok) {
    last[1] = '\0';
    ok = checksum(text) == want;
  }
  if (!ok) {
    free(text);
    return fmmcl_fail(NULL, FMMCL_ERROR_CORRUPT_FILE, "model file %s is corrupt (checksum)", path);
  }
  char expect[1200];
  device_line(dev, expect, sizeof expect);
  int line_no = 0;
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    line_no++;
    if (line_no == 1) ok = strcmp(line, FMMCL_MODEL_MAGIC) == 0;
    else if (line_no == 2 && line[0] != '#') ok = -1; /* device line must follow the comment */
    else if (line_no == 3) {
      if (strncmp(line, "device ", 7) != 0) ok = 0;
      else if (strcmp(line, expect) != 0) {
        free(text);
        memset(m, 0, sizeof *m);
        return fmmcl_fail(NULL, FMMCL_ERROR_UNSUPPORTED, "model file %s is of another device", path);
      }
    } else if (line_no > 3) ok = parse_line(line, m);
    if (ok != 1) break;
  }
  free(text);
  if (ok != 1 || line_no < 3) {
    memset(m, 0, sizeof *m);
    return fmmcl_fail(NULL, FMMCL_ERROR_CORRUPT_FILE, "model file %s is corrupt (line %d)", path, line_no);
  }
  return FMMCL_SUCCESS;
}
