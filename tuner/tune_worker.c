/* tune_worker.c — candidates are measured in a worker process (fmmtune
 * --worker), so that a candidate that crashes the OpenCL runtime (PoCL
 * overflows a thread stack on the largest work-groups; a GPU kernel fault
 * poisons its context) or hangs in the compiler costs that candidate only:
 * the worker is killed, the candidate rejected, a new worker started.
 * Protocol, one line each way on fds 3 (requests) and 4 (replies):
 *   eval DEFINES          -> ok MS            | reject WHY
 *   compare A|B ROUNDS    -> ok MS_A MS_B     | reject WHY
 * and "ready" (or "reject WHY") once the worker has its job set up. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune.h"

#define REQ_FD 3
#define REP_FD 4
/* A worker gets this long to set up (context, reference sums). */
#define START_TIMEOUT_S 120.0

/* ---- the worker side ---------------------------------------------------------- */

static void reply(FILE *out, tune_verdict v, const char *why, const char *fmt, double a, double b) {
  if (v == TUNE_OK) fprintf(out, fmt, a, b);
  else fprintf(out, "reject %s\n", why);
  fflush(out);
}

int tune_worker_main(const char *device, const fmmcl_tuning_space *space, fmmcl_precision precision,
                     const char *cls, size_t n_time, int repeats) {
  FILE *in = fdopen(REQ_FD, "r"), *out = fdopen(REP_FD, "w");
  if (!in || !out) return 1;
  fmmcl_context ctx;
  tune_job job;
  char why[512];
  if (fmmcl_context_create(&ctx, device)) {
    fprintf(out, "reject %s\n", fmmcl_last_error(NULL));
    return 1;
  }
  if (!tune_job_init(&job, space, precision, cls, n_time, repeats, why, sizeof why) ||
      !tune_job_reference(ctx, &job, why, sizeof why)) {
    fprintf(out, "reject %s\n", why);
    return 1;
  }
  fprintf(out, "ready\n");
  fflush(out);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, in)) > 0) {
    if (line[n - 1] == '\n') line[n - 1] = '\0';
    double a = 0, b = 0;
    if (!strncmp(line, "eval ", 5)) {
      tune_verdict v = tune_evaluate(ctx, &job, line + 5, &a, why, sizeof why);
      reply(out, v, why, "ok %.9g\n", a, 0);
    } else if (!strncmp(line, "compare ", 8)) {
      char *bar = strchr(line + 8, '|'), *sp = strrchr(line, ' ');
      if (!bar || !sp || sp < bar) {
        reply(out, TUNE_RUN_FAILED, "bad request", "", 0, 0);
        continue;
      }
      *bar = '\0';
      *sp = '\0';
      tune_verdict v = tune_compare(ctx, &job, line + 8, bar + 1, atoi(sp + 1), &a, &b, why, sizeof why);
      reply(out, v, why, "ok %.9g %.9g\n", a, b);
    } else {
      reply(out, TUNE_RUN_FAILED, "bad request", "", 0, 0);
    }
  }
  free(line);
  tune_job_free(&job);
  fmmcl_context_destroy(ctx);
  return 0;
}

/* ---- the parent side ---------------------------------------------------------- */

static void stop(tune_worker *w) {
  if (w->pid > 0) {
    kill(w->pid, SIGKILL);
    waitpid(w->pid, NULL, 0);
  }
  if (w->req >= 0) close(w->req);
  if (w->rep >= 0) close(w->rep);
  w->pid = -1;
  w->req = w->rep = -1;
  w->used = 0;
}

/* Reads one reply line within timeout seconds; 0 on EOF or timeout. */
static int read_reply(tune_worker *w, double timeout, char *buf, size_t len, char *why, size_t why_len) {
  size_t used = 0;
  const double end = fmmcl_wall_seconds() + timeout;
  for (;;) {
    double left = end - fmmcl_wall_seconds();
    struct pollfd p = {.fd = w->rep, .events = POLLIN};
    int r = left > 0 ? poll(&p, 1, (int)(left * 1000) + 1) : 0;
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      snprintf(why, why_len, "no answer within %.0f s: worker killed", timeout);
      return 0;
    }
    char c;
    ssize_t k = read(w->rep, &c, 1);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      int status = 0;
      waitpid(w->pid, &status, 0);
      w->pid = -1;
      if (WIFSIGNALED(status))
        snprintf(why, why_len, "crashed the OpenCL runtime (signal %d)", WTERMSIG(status));
      else
        snprintf(why, why_len, "the worker exited (status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      return 0;
    }
    if (c == '\n') {
      buf[used] = '\0';
      return 1;
    }
    if (used + 1 < len) buf[used++] = c;
  }
}

static int start(tune_worker *w, char *why, size_t len) {
  int req[2], rep[2];
  if (pipe(req) != 0) {
    snprintf(why, len, "pipe: %s", strerror(errno));
    return 0;
  }
  if (pipe(rep) != 0) {
    close(req[0]);
    close(req[1]);
    snprintf(why, len, "pipe: %s", strerror(errno));
    return 0;
  }
  char n[32], reps[32];
  snprintf(n, sizeof n, "%zu", w->n_time);
  snprintf(reps, sizeof reps, "%d", w->repeats);
  const char *argv[] = {
      w->exe,      "--worker", "--device",    w->device,
      "--kernel",  w->kernel,  "--precision", w->precision == FMMCL_DOUBLE ? "double" : "single",
      "--class",   w->cls,     "--n",         n,
      "--repeats", reps,       NULL};
  pid_t pid = fork();
  if (pid == 0) {
    /* the parent's ends must go, or the worker never sees end of file */
    close(req[1]);
    close(rep[0]);
    /* move ours to 3 and 4 (out of the way of each other first) */
    int in = fcntl(req[0], F_DUPFD, 10), out = fcntl(rep[1], F_DUPFD, 10);
    if (in < 0 || out < 0 || dup2(in, REQ_FD) < 0 || dup2(out, REP_FD) < 0) _exit(127);
    close(in);
    close(out);
    if (req[0] != REQ_FD && req[0] != REP_FD) close(req[0]);
    if (rep[1] != REQ_FD && rep[1] != REP_FD) close(rep[1]);
    /* stdout stays the user's: the worker never writes to it */
    execv(w->exe, (char *const *)argv);
    _exit(127);
  }
  close(req[0]);
  close(rep[1]);
  if (pid < 0) {
    close(req[1]);
    close(rep[0]);
    snprintf(why, len, "fork: %s", strerror(errno));
    return 0;
  }
  fcntl(req[1], F_SETFD, FD_CLOEXEC);
  fcntl(rep[0], F_SETFD, FD_CLOEXEC);
  w->pid = pid;
  w->req = req[1];
  w->rep = rep[0];
  char line[600];
  if (!read_reply(w, START_TIMEOUT_S, line, sizeof line, why, len)) {
    stop(w);
    return 0;
  }
  if (strcmp(line, "ready") != 0) {
    snprintf(why, len, "%.200s", strncmp(line, "reject ", 7) ? line : line + 7);
    stop(w);
    return 0;
  }
  return 1;
}

void tune_worker_init(tune_worker *w, const char *exe, const char *device, const tune_job *job) {
  memset(w, 0, sizeof *w);
  w->pid = -1;
  w->req = w->rep = -1;
  snprintf(w->exe, sizeof w->exe, "%s", exe);
  snprintf(w->device, sizeof w->device, "%s", device);
  snprintf(w->kernel, sizeof w->kernel, "%s", job->space->kernel);
  snprintf(w->cls, sizeof w->cls, "%s", job->problem_class);
  w->precision = job->precision;
  w->n_time = job->n_time;
  w->repeats = job->repeats;
  w->timeout = 60;
}

void tune_worker_close(tune_worker *w) {
  if (w->req >= 0) close(w->req); /* EOF: the worker ends by itself */
  w->req = -1;
  if (w->pid > 0) waitpid(w->pid, NULL, 0);
  w->pid = -1;
  if (w->rep >= 0) close(w->rep);
  w->rep = -1;
}

int tune_worker_ready(tune_worker *w, char *why, size_t len) {
  if (w->pid > 0) return 1;
  /* a worker that fails to start twice running will not start */
  if (w->failed_starts < 2 && start(w, w->start_error, sizeof w->start_error)) {
    w->failed_starts = 0;
    return 1;
  }
  w->failed_starts++;
  snprintf(why, len, "the worker cannot start: %s", w->start_error);
  return 0;
}

/* Sends a request and reads its reply; ok lines are parsed into a, b. */
static tune_verdict ask(tune_worker *w, const char *request, int values, double *a, double *b, double timeout,
                        char *why, size_t len) {
  if (!tune_worker_ready(w, why, len)) return TUNE_RUN_FAILED;
  size_t rl = strlen(request);
  if (write(w->req, request, rl) != (ssize_t)rl) {
    snprintf(why, len, "the worker is gone");
    stop(w);
    return TUNE_RUN_FAILED;
  }
  char line[600];
  if (!read_reply(w, timeout, line, sizeof line, why, len)) {
    stop(w);
    return TUNE_RUN_FAILED;
  }
  if (!strncmp(line, "ok ", 3) && sscanf(line + 3, "%lf %lf", a, b) >= values) return TUNE_OK;
  snprintf(why, len, "%s", strncmp(line, "reject ", 7) ? line : line + 7);
  return TUNE_WRONG;
}

tune_verdict tune_worker_eval(tune_worker *w, const char *defines, double *ms, char *why, size_t len) {
  char req[400];
  double unused = 0;
  snprintf(req, sizeof req, "eval %s\n", defines);
  return ask(w, req, 1, ms, &unused, w->timeout, why, len);
}

tune_verdict tune_worker_compare(tune_worker *w, const char *a, const char *b, int rounds, double *ms_a,
                                 double *ms_b, char *why, size_t len) {
  char req[700];
  snprintf(req, sizeof req, "compare %s|%s %d\n", a, b, rounds);
  return ask(w, req, 2, ms_a, ms_b, 4 * w->timeout, why, len);
}
