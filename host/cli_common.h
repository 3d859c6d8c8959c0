/* cli_common.h — what fmmcl and fmmcl-info share: exit codes, option-value
 * parsing, error reports with the library's last error, sizes, timing, progress. */
#ifndef FMMCL_CLI_COMMON_H
#define FMMCL_CLI_COMMON_H

#include <getopt.h>
#include <stddef.h>

#include "fmmcl.h"

/* Exit codes of every program. */
enum {
  FMMCL_CLI_EXIT_OK = 0,
  FMMCL_CLI_EXIT_FAILURE = 1, /* a runtime, file or library error */
  FMMCL_CLI_EXIT_USAGE = 2    /* a bad command line */
};

/* The name messages start with ("fmmcl: ..."); set once by main. */
void fmmcl_cli_set_program(const char *name);
const char *fmmcl_cli_program(void);

/* "prog: message" on stderr; returns FMMCL_CLI_EXIT_FAILURE. */
int fmmcl_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "prog: message" and a hint to --help on stderr; returns FMMCL_CLI_EXIT_USAGE. */
int fmmcl_cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* For getopt_long's '?' (unknown option) or ':' (missing value, with a
 * leading ':' in the option string and opterr = 0): a usage error naming
 * the option, from optopt or arg (argv[optind - 1]). */
int fmmcl_cli_bad_option(int code, const char *arg);
/* "prog: what: <fmmcl_strerror>: <fmmcl_last_error(ctx)>" on stderr; returns
 * FMMCL_CLI_EXIT_FAILURE. ctx NULL means the calls that have no context. */
int fmmcl_cli_status_error(fmmcl_context ctx, fmmcl_status status, const char *what);

/* Option values. Each returns 0, or prints a usage error naming opt and
 * returns -1; ranges are the command line's, the library checks the rest. */
int fmmcl_cli_parse_double(const char *opt, const char *arg, double *out);
/* The long option whose val is id, as typed ("--tol"), for messages: the
 * argument before optarg is the value itself when it was given apart. */
const char *fmmcl_cli_option_name(const struct option *options, int id);
int fmmcl_cli_parse_int(const char *opt, const char *arg, long min, long max, int *out);
/* A count: digits, or an exact integer in exponent form such as 1e6. */
int fmmcl_cli_parse_count(const char *opt, const char *arg, size_t *out);
/* One of names[0..n-1] (exact); *index receives its position. */
int fmmcl_cli_parse_choice(const char *opt, const char *arg, const char *const *names, int n, int *index);

/* "512 B", "3.5 KiB", "15.6 GiB" into buf; returns buf. */
const char *fmmcl_cli_bytes(unsigned long long bytes, char *buf, size_t len);
/* "GPU", "CPU" or "other". */
const char *fmmcl_cli_device_type(const fmmcl_device_info *info);

/* Seconds on a monotonic clock. */
double fmmcl_cli_now(void);

/* Progress on stderr for work that has run longer than ~2 s, so short runs
 * stay quiet and long ones show they are alive. */
typedef struct fmmcl_cli_progress {
  const char *label;
  double start, last_shown;
  int shown, enabled;
} fmmcl_cli_progress;

void fmmcl_cli_progress_begin(fmmcl_cli_progress *p, const char *label, int enabled);
void fmmcl_cli_progress_update(fmmcl_cli_progress *p, double done, double total);
/* Ends the progress line, if one was shown. */
void fmmcl_cli_progress_end(fmmcl_cli_progress *p);
/* An fmmcl_io_progress_fn-shaped callback: user is a fmmcl_cli_progress. */
void fmmcl_cli_progress_bytes(void *user, unsigned long long done, unsigned long long total);

#endif /* FMMCL_CLI_COMMON_H */
