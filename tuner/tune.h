/* tune.h — what the pieces of fmmtune share: a tuning job (kernel,
 * precision, problem class) with its inputs, the search, the cache writer,
 * the progress bar and the closing report. */
#ifndef FMMCL_TUNE_H
#define FMMCL_TUNE_H

#include <stdio.h>

#include "tuning/tuning.h"

/* ---- a job and its measurements (tune_problem.c) ----------------------- */

typedef struct tune_job {
  const fmmcl_tuning_space *space;
  fmmcl_precision precision;
  char problem_class[32];
  fmmcl_tuning_class cls;
  fmmcl_plan_options opt;
  /* correctness: a small problem of an odd size (padding exercised) and
   * its double-precision reference */
  size_t n_check;
  double *check_x, *check_q, *ref_pot, *ref_grad;
  /* timing: the representative problem */
  size_t n_time;
  double *time_x, *time_q;
  double *pot, *grad; /* outputs, room for max(n_check, n_time) points */
  int repeats;        /* timed runs per measurement; the median is kept */
  double tolerance;   /* relative L2 error allowed against the reference */
  int check_leaf;     /* leaf size of the check problem (FMM kernels; 0: default) */
} tune_job;

/* Sets up a job: inputs on a 2^-20 grid (exact in float after the
 * library's centre shift, so the check measures arithmetic only) and the
 * reference sums. 0 and why on failure. */
int tune_job_init(tune_job *job, const fmmcl_tuning_space *space, fmmcl_precision precision,
                  const char *problem_class, size_t n_time, int repeats, char *why, size_t len);
void tune_job_free(tune_job *job);
/* FMM kernels: the reference results of the check problem, from the same
 * FMM with the library's own parameters on ctx's device; 1 (nothing to do)
 * for the others; 0 and why on failure. */
int tune_job_reference(fmmcl_context ctx, tune_job *job, char *why, size_t len);
/* The job's identity only (no inputs): what the search needs in the
 * parent process while a worker measures. */
int tune_job_describe(tune_job *job, const fmmcl_tuning_space *space, fmmcl_precision precision,
                      const char *problem_class, size_t n_time, int repeats, char *why, size_t len);
/* "p2p_laplace3d single dim3" */
void tune_job_label(const tune_job *job, char *buf, size_t len);

typedef enum tune_verdict {
  TUNE_OK,
  TUNE_BUILD_FAILED, /* the compiler or the plan refused the parameters */
  TUNE_WRONG,        /* results off the reference */
  TUNE_RUN_FAILED    /* the launch or a read failed */
} tune_verdict;

/* Checks defines on the small problem, then times them on the big one:
 * *ms is the median over job->repeats runs of the kernel's phase (OpenCL
 * profiling events), after one untimed warm-up run. */
tune_verdict tune_evaluate(fmmcl_context ctx, tune_job *job, const char *defines, double *ms, char *why,
                           size_t len);
/* Times a and b on the big problem, interleaved over rounds so that drift
 * in the machine's speed hits both alike; medians of all runs. */
tune_verdict tune_compare(fmmcl_context ctx, tune_job *job, const char *a, const char *b, int rounds,
                          double *ms_a, double *ms_b, char *why, size_t len);

/* ---- progress and report (tune_report.c) -------------------------------- */

typedef struct tune_progress {
  int enabled, tty;
  int verbose; /* a line per candidate: parameters, verdict, time */
  char label[96];
  double t0, budget;
  size_t total;
  int last_tenth;
} tune_progress;

void tune_progress_start(tune_progress *pg, const char *label, size_t total, double budget);
void tune_progress_step(tune_progress *pg, size_t done, size_t rejected, double best_ms, const char *best);
void tune_progress_end(tune_progress *pg, const char *summary);
/* With verbose: one candidate's outcome (ms < 0: rejected, why says why). */
void tune_progress_candidate(tune_progress *pg, const char *params, double ms, double seconds,
                             const char *why);

/* ---- the worker process (tune_worker.c) --------------------------------- */

/* A worker measuring one job's candidates; started on first use and again
 * after a candidate kills it. */
typedef struct tune_worker {
  char exe[4096], device[64], kernel[64], cls[32];
  fmmcl_precision precision;
  size_t n_time;
  int repeats;
  double timeout; /* seconds one candidate may take before the worker is killed */
  int pid, req, rep, used, failed_starts;
  char start_error[256];
} tune_worker;

/* exe: the fmmtune binary; device: a selector naming one device ("P:D"). */
void tune_worker_init(tune_worker *w, const char *exe, const char *device, const tune_job *job);
void tune_worker_close(tune_worker *w);
/* Starts the worker unless it runs; 0 and why when it cannot. */
int tune_worker_ready(tune_worker *w, char *why, size_t len);
/* tune_evaluate and tune_compare, run in the worker. */
tune_verdict tune_worker_eval(tune_worker *w, const char *defines, double *ms, char *why, size_t len);
tune_verdict tune_worker_compare(tune_worker *w, const char *a, const char *b, int rounds, double *ms_a,
                                 double *ms_b, char *why, size_t len);
/* The worker's own loop (fmmtune --worker): 0 at end of input. */
int tune_worker_main(const char *device, const fmmcl_tuning_space *space, fmmcl_precision precision,
                     const char *cls, size_t n_time, int repeats);

/* ---- the search (tune_search.c) ----------------------------------------- */

typedef struct tune_result {
  char label[96];
  size_t n; /* timing problem size */
  char default_defines[256], best_defines[256];
  double default_ms, best_ms; /* from the final interleaved comparison */
  size_t n_space, n_valid;    /* points in the space; those that fit the device */
  size_t tried, rejected;
  int exhaustive; /* every valid point was tried */
  int ok;         /* a usable result (else why says what failed) */
  char why[256];
} tune_result;

/* The points of the job's space that fit the device, in a malloc'ed array;
 * *n_space is the size of the whole space. */
size_t tune_candidates(const tune_job *job, const fmmcl_device_info *dev, fmmcl_tuning_point **out,
                       size_t *n_space);

/* Searches for the fastest correct point within budget_s seconds of wall
 * clock: exhaustive when the measured cost of one candidate says the space
 * fits the budget, else random sampling then local search (one parameter a
 * step). The default is always measured first and wins unless beaten in the
 * final interleaved comparison. */
void tune_search(tune_worker *w, const fmmcl_device_info *dev, const tune_job *job, double budget_s,
                 unsigned seed, tune_progress *pg, tune_result *res);

/* ---- the cache writer (tune_write.c) ------------------------------------ */

/* Puts e into dev's section of the file (replacing its key's old entry),
 * under an advisory lock, by writing a temporary file and renaming it over.
 * A file that is not a tuning cache is kept aside as <path>.corrupt. */
int tune_cache_store(const char *path, const fmmcl_device_info *dev, const fmmcl_tuning_entry *e, char *why,
                     size_t len);
/* Removes dev's section; *removed = the entries it held. */
int tune_cache_reset(const char *path, const fmmcl_device_info *dev, size_t *removed, char *why, size_t len);

/* ---- scratch binary cache (tune_scratch.c) ------------------------------ */

/* Points XDG_CACHE_HOME at a fresh temporary directory for this run's
 * program binaries (cache on for GPUs, off for CPU runtimes); 0 when no
 * directory could be made (the run goes on without the cache). */
int tune_scratch_begin(const fmmcl_device_info *dev, char *dir, size_t len);
/* Removes the directory again. */
void tune_scratch_end(const char *dir);

/* ---- report (tune_report.c) --------------------------------------------- */

void tune_report_table(FILE *out, const tune_result *res, size_t n);
void tune_report_csv(FILE *out, const fmmcl_device_info *dev, const tune_result *res, size_t n,
                     double budget);

/* fmmtune --model (tune_model.c): measures the model's peaks on ctx's
 * device in the given precisions and stores them in its model file,
 * keeping what else the file holds; fit: also runs the fitting sweep and
 * stores the per-phase constants. Returns the exit status. */
int tune_model_main(fmmcl_context ctx, const fmmcl_device_info *dev, const char *precision, int fit,
                    double budget, const char *samples_csv);

#endif /* FMMCL_TUNE_H */
