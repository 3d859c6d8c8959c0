/* tune_write.c — writing the tuning cache: read-modify-write of one
 * device's section under an advisory lock (flock on <path>.lock), through
 * a temporary file renamed over the old one, so concurrent fmmtune runs
 * keep each other's entries and a reader never sees half a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"

typedef struct {
  char **lines;
  size_t n, cap;
} line_list;

static int push(line_list *l, const char *text) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 32;
    char **n = realloc(l->lines, cap * sizeof *n);
    if (!n) return 0;
    l->lines = n;
    l->cap = cap;
  }
  return (l->lines[l->n] = strdup(text)) ? (l->n++, 1) : 0;
}

static void clear(line_list *l) {
  for (size_t i = 0; i < l->n; i++) free(l->lines[i]);
  free(l->lines);
  memset(l, 0, sizeof *l);
}

/* The file without dev's section (other devices' lines kept as they are,
 * garbled ones dropped) into others, and dev's entry lines into ours. A
 * file that is not a cache is renamed to <path>.corrupt first. */
static int load(const char *path, const fmmcl_device_info *dev, line_list *others, line_list *ours, char *why,
                size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) return errno == ENOENT ? 1 : (snprintf(why, len, "cannot read %s: %s", path, strerror(errno)), 0);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int first = 1, in_ours = 0, in_section = 0, ok = 1, foreign = 0;
  while (ok && (n = getline(&line, &cap, f)) > 0) {
    const int whole = line[n - 1] == '\n' && !memchr(line, '\0', (size_t)n);
    if (whole) line[n - 1] = '\0';
    if (first) {
      first = 0;
      if (!whole || !fmmcl_tuning_header_ok(line)) {
        foreign = 1;
        break;
      }
      continue;
    }
    if (!whole) continue; /* cut short or binary */
    int same = 0;
    switch (fmmcl_tuning_parse_line(line, dev, &same, NULL)) {
      case FMMCL_TUNING_LINE_DEVICE:
        in_section = 1;
        in_ours = same;
        if (!same) ok = push(others, line);
        break;
      case FMMCL_TUNING_LINE_ENTRY:
        if (in_section) ok = push(in_ours ? ours : others, line);
        break;
      default: break; /* comments are rewritten, garbled lines dropped */
    }
  }
  free(line);
  fclose(f);
  if (!first && foreign) {
    char aside[4300];
    snprintf(aside, sizeof aside, "%s.corrupt", path);
    if (rename(path, aside) != 0) {
      snprintf(why, len, "%s is not a tuning cache and cannot be moved aside: %s", path, strerror(errno));
      return 0;
    }
    clear(others);
    clear(ours);
  }
  if (!ok) snprintf(why, len, "out of host memory reading %s", path);
  return ok;
}

/* Writes header, others, then dev's section (when ours has lines) to a
 * temporary file and renames it over path; no section at all removes it. */
static int store(const char *path, const fmmcl_device_info *dev, const line_list *others,
                 const line_list *ours, char *why, size_t len) {
  if (!others->n && !ours->n) {
    if (unlink(path) != 0 && errno != ENOENT) {
      snprintf(why, len, "cannot remove %s: %s", path, strerror(errno));
      return 0;
    }
    return 1;
  }
  char tmp[4300], device[1024];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) {
    snprintf(why, len, "cannot write %s: %s", tmp, strerror(errno));
    return 0;
  }
  fprintf(f, "%s\n", FMMCL_TUNING_MAGIC);
  fprintf(f,
          "# written by fmmtune; per device section, one entry a line:\n"
          "# kernel precision class : parameters ; time_ms ; default_ms ; n (points) ; date\n");
  for (size_t i = 0; i < others->n; i++) fprintf(f, "%s\n", others->lines[i]);
  if (ours->n) {
    fmmcl_tuning_format_device(dev, device, sizeof device);
    fprintf(f, "%s\n", device);
    for (size_t i = 0; i < ours->n; i++) fprintf(f, "%s\n", ours->lines[i]);
  }
  int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    snprintf(why, len, "cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    return 0;
  }
  return 1;
}

/* Runs edit on dev's lines with the file locked. */
typedef int (*edit_fn)(line_list *ours, const void *arg, size_t *count);

static int rewrite(const char *path, const fmmcl_device_info *dev, edit_fn edit, const void *arg,
                   size_t *count, char *why, size_t len) {
  if (fmmcl_make_dirs(path, 1) != 0) {
    snprintf(why, len, "cannot create the directory of %s: %s", path, strerror(errno));
    return 0;
  }
  char lock_path[4300];
  snprintf(lock_path, sizeof lock_path, "%s.lock", path);
  /* the lock file stays: removing it would race with a waiting writer */
  int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || flock(fd, LOCK_EX) != 0) {
    snprintf(why, len, "cannot lock %s: %s", lock_path, strerror(errno));
    if (fd >= 0) close(fd);
    return 0;
  }
  line_list others = {0}, ours = {0};
  int ok = load(path, dev, &others, &ours, why, len);
  if (ok && !(ok = edit(&ours, arg, count))) snprintf(why, len, "out of host memory");
  if (ok) ok = store(path, dev, &others, &ours, why, len);
  clear(&others);
  clear(&ours);
  flock(fd, LOCK_UN);
  close(fd);
  return ok;
}

/* Replaces the entry of e's key (if any) by e. */
static int put_entry(line_list *ours, const void *arg, size_t *count) {
  const fmmcl_tuning_entry *e = arg;
  char text[1024];
  fmmcl_tuning_format_entry(e, text, sizeof text);
  static const fmmcl_device_info no_device;
  size_t keep = 0;
  for (size_t i = 0; i < ours->n; i++) {
    fmmcl_tuning_entry o;
    fmmcl_tuning_parse_line(ours->lines[i], &no_device, NULL, &o);
    if (strcmp(o.kernel, e->kernel) == 0 && o.precision == e->precision &&
        strcmp(o.problem_class, e->problem_class) == 0) {
      free(ours->lines[i]);
      continue;
    }
    ours->lines[keep++] = ours->lines[i];
  }
  ours->n = keep;
  if (count) *count = keep + 1;
  return push(ours, text);
}

static int drop_all(line_list *ours, const void *arg, size_t *count) {
  (void)arg;
  if (count) *count = ours->n;
  clear(ours);
  return 1;
}

int tune_cache_store(const char *path, const fmmcl_device_info *dev, const fmmcl_tuning_entry *e, char *why,
                     size_t len) {
  return rewrite(path, dev, put_entry, e, NULL, why, len);
}

int tune_cache_reset(const char *path, const fmmcl_device_info *dev, size_t *removed, char *why, size_t len) {
  return rewrite(path, dev, drop_all, NULL, removed, why, len);
}
