/* tuning_file.c — where a device's tuning cache lives and reading its
 * section: entries of other devices, garbled lines and a file that is no
 * tuning cache at all are skipped with a note, never trusted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuning/tuning.h"

/* A device string as a file-name part: [A-Za-z0-9._-], runs of anything
 * else one '_', at most 60 characters. */
static void name_part(char *buf, size_t len, const char *s) {
  size_t n = 0;
  for (; *s && n + 1 < len && n < 60; s++) {
    const char c = *s;
    const int ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    if (ok) buf[n++] = c;
    else if (n && buf[n - 1] != '_') buf[n++] = '_';
  }
  while (n && buf[n - 1] == '_') n--;
  buf[n] = '\0';
  if (!n) snprintf(buf, len, "unknown");
}

fmmcl_status fmmcl_tuning_path(const fmmcl_device_info *dev, char *buf, size_t len) {
  const char *env = getenv("FMMCL_TUNING_FILE");
  int n;
  if (env && *env) {
    n = snprintf(buf, len, "%s", env);
  } else {
    char dir[4096], v[64], d[64], r[64];
    if (fmmcl_cache_dir_path(dir, sizeof dir)) return FMMCL_ERROR_IO;
    name_part(v, sizeof v, dev->platform_vendor);
    name_part(d, sizeof d, dev->device_name);
    name_part(r, sizeof r, dev->driver_version);
    n = snprintf(buf, len, "%s/tuning/%s__%s__%s.txt", dir, v, d, r);
  }
  return n > 0 && (size_t)n < len ? FMMCL_SUCCESS : FMMCL_ERROR_INVALID_ARGUMENT;
}

fmmcl_status fmmcl_tuning_file_path(const fmmcl_device_info *dev, char *buf, size_t len) {
  fmmcl_clear_error(NULL);
  if (!dev || !buf || !len)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_tuning_file_path: NULL argument");
  fmmcl_status st = fmmcl_tuning_path(dev, buf, len);
  if (st == FMMCL_ERROR_IO)
    return fmmcl_fail(NULL, st,
                      "no tuning cache directory: neither XDG_CACHE_HOME nor HOME is set "
                      "(set FMMCL_TUNING_FILE)");
  if (st) return fmmcl_fail(NULL, st, "fmmcl_tuning_file_path: buffer of %zu bytes too short", len);
  return FMMCL_SUCCESS;
}

static void note(char *notes, size_t len, const char *fmt, const char *a, long b) {
  size_t used = strlen(notes);
  if (used + 1 >= len) return;
  if (used) notes[used++] = '\n', notes[used] = '\0';
  snprintf(notes + used, len - used, fmt, a, b);
}

/* Adds e to the list, replacing an earlier entry of the same key. */
static int keep_entry(fmmcl_tuning_entry **list, size_t *count, size_t *cap, const fmmcl_tuning_entry *e) {
  for (size_t i = 0; i < *count; i++) {
    fmmcl_tuning_entry *o = &(*list)[i];
    if (strcmp(o->kernel, e->kernel) == 0 && o->precision == e->precision &&
        strcmp(o->problem_class, e->problem_class) == 0) {
      *o = *e;
      return 1;
    }
  }
  if (*count == *cap) {
    size_t ncap = *cap ? 2 * *cap : 16;
    fmmcl_tuning_entry *n = realloc(*list, ncap * sizeof *n);
    if (!n) return 0;
    *list = n;
    *cap = ncap;
  }
  (*list)[(*count)++] = *e;
  return 1;
}

/* A tuning file is a few kilobytes; anything much larger is not one. */
#define MAX_FILE_BYTES (4L << 20)

fmmcl_status fmmcl_tuning_read(const char *path, const fmmcl_device_info *dev, fmmcl_tuning_entry **out,
                               size_t *count, char *notes, size_t notes_len) {
  *out = NULL;
  *count = 0;
  if (notes_len) notes[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) {
    if (errno == ENOENT) return FMMCL_SUCCESS;
    note(notes, notes_len, "tuning file %s cannot be read (%ld): built-in defaults", path, (long)errno);
    return FMMCL_ERROR_IO;
  }
  char *line = NULL;
  size_t line_cap = 0, cap = 0, garbled = 0, sections = 0;
  long total = 0;
  ssize_t n;
  int in_ours = 0, header = 0, ours_seen = 0;
  fmmcl_status st = FMMCL_SUCCESS;
  while ((n = getline(&line, &line_cap, f)) > 0) {
    total += n;
    if (total > MAX_FILE_BYTES) {
      note(notes, notes_len, "tuning file %s is over %ld bytes: read no further", path, MAX_FILE_BYTES);
      break;
    }
    const int complete = line[n - 1] == '\n';
    if (complete) line[--n] = '\0';
    if (!header) {
      if (!complete || !fmmcl_tuning_header_ok(line)) {
        note(notes, notes_len, "%s is not a fmmcl tuning cache v1 (bad first line): ignored", path, 0);
        break;
      }
      header = 1;
      continue;
    }
    if (memchr(line, '\0', (size_t)n) || !complete) { /* binary junk, or a line cut short */
      garbled++;
      continue;
    }
    int same = 0;
    fmmcl_tuning_entry e;
    switch (fmmcl_tuning_parse_line(line, dev, &same, &e)) {
      case FMMCL_TUNING_LINE_BLANK: break;
      case FMMCL_TUNING_LINE_DEVICE:
        sections++;
        in_ours = same;
        ours_seen |= same;
        break;
      case FMMCL_TUNING_LINE_ENTRY:
        if (!sections) {
          garbled++;
          break;
        } /* an entry of no device */
        if (in_ours) {
          fmmcl_tuning_entry_check(&e, dev);
          if (!keep_entry(out, count, &cap, &e)) st = FMMCL_ERROR_OUT_OF_MEMORY;
        }
        break;
      default: garbled++;
    }
  }
  free(line);
  fclose(f);
  if (garbled)
    note(notes, notes_len, "tuning file %s: %ld garbled or truncated lines skipped", path, (long)garbled);
  if (header && !ours_seen && sections)
    note(notes, notes_len, "tuning file %s holds entries of other devices only (%ld sections): ignored", path,
         (long)sections);
  return st;
}
