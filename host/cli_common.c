/* cli_common.c — exit codes, option-value parsing, error reports, sizes,
 * timing and progress shared by the command-line programs. */
#include "cli_common.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Progress appears only for work longer than this, then at most this often. */
#define PROGRESS_DELAY_S 2.0
#define PROGRESS_EVERY_TTY_S 0.5
#define PROGRESS_EVERY_LOG_S 5.0

static const char *program = "fmmcl";

void fmmcl_cli_set_program(const char *name) {
  const char *slash = name ? strrchr(name, '/') : NULL;
  if (name && *name) program = slash ? slash + 1 : name;
}

const char *fmmcl_cli_program(void) { return program; }

/* ---- messages ------------------------------------------------------------ */

static void vreport(const char *fmt, va_list ap) {
  fprintf(stderr, "%s: ", program);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

int fmmcl_cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(fmt, ap);
  va_end(ap);
  return FMMCL_CLI_EXIT_FAILURE;
}

int fmmcl_cli_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(fmt, ap);
  va_end(ap);
  fprintf(stderr, "Try '%s --help' for more information.\n", program);
  return FMMCL_CLI_EXIT_USAGE;
}

int fmmcl_cli_bad_option(int code, const char *arg) {
  /* Short options are known by optopt; long ones only by their argv word. */
  char name[8];
  if ((!arg || strncmp(arg, "--", 2) != 0) && optopt > 0 && optopt < 128) {
    snprintf(name, sizeof name, "-%c", optopt);
    arg = name;
  } else if (!arg) {
    arg = "?";
  }
  if (code == ':') return fmmcl_cli_usage_error("option '%s' needs a value", arg);
  return fmmcl_cli_usage_error("unknown option '%s'", arg);
}

int fmmcl_cli_status_error(fmmcl_context ctx, fmmcl_status status, const char *what) {
  const char *detail = fmmcl_last_error(ctx);
  if (detail && *detail) return fmmcl_cli_error("%s: %s: %s", what, fmmcl_strerror(status), detail);
  return fmmcl_cli_error("%s: %s", what, fmmcl_strerror(status));
}

/* ---- option values ---------------------------------------------------------- */

int fmmcl_cli_parse_double(const char *opt, const char *arg, double *out) {
  char *end;
  errno = 0;
  double v = strtod(arg, &end);
  if (end == arg || *end || !isfinite(v)) {
    fmmcl_cli_usage_error("%s: '%s' is not a finite number", opt, arg);
    return -1;
  }
  *out = v;
  return 0;
}

int fmmcl_cli_parse_int(const char *opt, const char *arg, long min, long max, int *out) {
  char *end;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (end == arg || *end) {
    fmmcl_cli_usage_error("%s: '%s' is not an integer", opt, arg);
    return -1;
  }
  if (min < INT_MIN) min = INT_MIN;
  if (max > INT_MAX) max = INT_MAX;
  if (errno == ERANGE || v < min || v > max) {
    fmmcl_cli_usage_error("%s: %s is out of range (%ld to %ld)", opt, arg, min, max);
    return -1;
  }
  *out = (int)v;
  return 0;
}

int fmmcl_cli_parse_count(const char *opt, const char *arg, size_t *out) {
  char *end;
  errno = 0;
  if (*arg >= '0' && *arg <= '9') {
    unsigned long long v = strtoull(arg, &end, 10);
    if (!*end && errno != ERANGE && v <= SIZE_MAX) {
      *out = (size_t)v;
      return 0;
    }
    /* 1e6: exact integers below 2^53 only, so nothing is rounded silently. */
    double d = strtod(arg, &end);
    if (!*end && d >= 0 && d < 9007199254740992.0 && d == floor(d) && d <= (double)SIZE_MAX) {
      *out = (size_t)d;
      return 0;
    }
  }
  fmmcl_cli_usage_error("%s: '%s' is not a non-negative integer", opt, arg);
  return -1;
}

int fmmcl_cli_parse_choice(const char *opt, const char *arg, const char *const *names, int n, int *index) {
  char list[256] = "";
  for (int i = 0; i < n; i++) {
    if (!strcmp(arg, names[i])) {
      *index = i;
      return 0;
    }
    size_t used = strlen(list);
    snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
  }
  fmmcl_cli_usage_error("%s: '%s' is not one of %s", opt, arg, list);
  return -1;
}

/* ---- sizes and devices --------------------------------------------------------- */

const char *fmmcl_cli_bytes(unsigned long long bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) {
    snprintf(buf, len, "%llu B", bytes);
    return buf;
  }
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  snprintf(buf, len, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

const char *fmmcl_cli_device_type(const fmmcl_device_info *info) {
  return info->is_gpu ? "GPU" : info->is_cpu ? "CPU" : "other";
}

/* ---- time and progress --------------------------------------------------------- */

double fmmcl_cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void fmmcl_cli_progress_begin(fmmcl_cli_progress *p, const char *label, int enabled) {
  p->label = label;
  p->start = fmmcl_cli_now();
  p->last_shown = 0;
  p->shown = 0;
  p->enabled = enabled;
}

void fmmcl_cli_progress_update(fmmcl_cli_progress *p, double done, double total) {
  if (!p || !p->enabled) return;
  double now = fmmcl_cli_now();
  /* A terminal redraws one line; a log file gets a line now and then. */
  int tty = isatty(STDERR_FILENO);
  double every = tty ? PROGRESS_EVERY_TTY_S : PROGRESS_EVERY_LOG_S;
  if (now - p->start < PROGRESS_DELAY_S || (p->shown && now - p->last_shown < every)) return;
  double percent = total > 0 ? 100.0 * done / total : 0;
  fprintf(stderr, "%s%s: %s: %3.0f%% (%.0f s)%s", tty ? "\r" : "", program, p->label, percent, now - p->start,
          tty ? "" : "\n");
  fflush(stderr);
  p->shown = 1;
  p->last_shown = now;
}

void fmmcl_cli_progress_end(fmmcl_cli_progress *p) {
  if (p && p->shown && isatty(STDERR_FILENO)) fputc('\n', stderr);
  if (p) p->shown = 0;
}

void fmmcl_cli_progress_bytes(void *user, unsigned long long done, unsigned long long total) {
  fmmcl_cli_progress_update(user, (double)done, (double)total);
}

const char *fmmcl_cli_option_name(const struct option *options, int id) {
  static char buf[40];
  for (const struct option *o = options; o->name; o++)
    if (o->val == id) {
      snprintf(buf, sizeof buf, "--%s", o->name);
      return buf;
    }
  return "option";
}
