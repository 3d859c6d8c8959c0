/* fmmtune.c — the fmmtune program: per-device autotuning of libfmmcl's
 * kernels; parses the command line, runs one job per (kernel, precision,
 * problem class) and writes each winner to the device's tuning cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../host/cli_common.h"
#include "tune.h"

typedef struct {
  const char *device, *kernel, *precision, *classes, *csv;
  double budget;
  int budget_default; /* --budget not given */
  size_t n;
  int repeats, list, show, reset, dry_run, quiet, verbose, worker, model, fit;
  unsigned seed;
} options;

static void usage(FILE *out) {
  fprintf(out,
          "usage: fmmtune [options]\n"
          "Tunes libfmmcl's kernels for one OpenCL device and stores the fastest correct\n"
          "parameters in the device's tuning cache, which the library reads whenever it\n"
          "builds a kernel (FMMCL_TUNING_FILE points elsewhere, FMMCL_NO_TUNING=1 ignores it).\n"
          "Every candidate is checked (P2P kernels: against the plain-C reference on 1531\n"
          "points; FMM kernels: against the same FMM built with the built-in defaults on\n"
          "16381 points, to rounding) and timed by OpenCL profiling events (median of\n"
          "--repeats runs) on a representative problem: on a GPU 131072 points (P2P) or\n"
          "2^20 (FMM), otherwise 8192 (Laplace), 4096 (Gaussian) or 20000 (FMM).\n"
          "  --device D          gpu, cpu, P:D or a name substring (default: FMMCL_DEVICE,\n"
          "                      else the first GPU, else the first CPU)\n"
          "  --kernel K|all      a kernel of --list, a comma-separated list, or all (default)\n"
          "  --precision P       single, double or both (default both; double needs fp64)\n"
          "  --class C           problem classes, comma-separated (default: each kernel's own)\n"
          "  --budget S          seconds of search for the whole run, shared by the jobs\n"
          "                      (default 60); a job always measures its default and one more\n"
          "  --n N               points of the timing problem instead of the default size\n"
          "  --repeats R         timed runs per measurement (default 5)\n"
          "  --seed S            seed of the random search (default 1)\n"
          "  --list              print the kernels, their spaces and constraints; no tuning\n"
          "  --show              print this device's tuning cache; no tuning\n"
          "  --reset             delete this device's entries from its cache; no tuning\n"
          "  --model             measure the performance model's peaks (U-list instruction\n"
          "                      mix, streaming bandwidth) and store them in the device's\n"
          "                      model file beside the cache (FMMCL_MODEL_FILE: elsewhere)\n"
          "  --fit               --model, then fit the per-phase model's constants over a\n"
          "                      sweep of FMM plans (N, leaf size q, order p, cube and\n"
          "                      ellipsoid) for at most --budget seconds (default 60 on a\n"
          "                      GPU, 180 on a CPU device, whose plans are slower and\n"
          "                      which needs ~40 of them); --report-csv\n"
          "                      FILE then receives the samples (model-refit reads them)\n"
          "  --dry-run           print the candidates each job would try; no timing or writing\n"
          "  --report-csv FILE   also write the closing table as CSV\n"
          "  --quiet             no progress bar\n"
          "  --verbose           a line per candidate: parameters, time or why rejected\n"
          "  --help\n");
}

static int parse_args(int argc, char **argv, options *o) {
  *o = (options){.kernel = "all", .precision = "both", .budget = -1, .repeats = 5, .seed = 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define VALUE() (v ? (i++, v) : (fprintf(stderr, "fmmtune: %s needs a value\n", a), (const char *)NULL))
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "--list")) o->list = 1;
    else if (!strcmp(a, "--show")) o->show = 1;
    else if (!strcmp(a, "--reset")) o->reset = 1;
    else if (!strcmp(a, "--dry-run")) o->dry_run = 1;
    else if (!strcmp(a, "--quiet")) o->quiet = 1;
    else if (!strcmp(a, "--verbose")) o->verbose = 1;
    else if (!strcmp(a, "--worker")) o->worker = 1;
    else if (!strcmp(a, "--model")) o->model = 1;
    else if (!strcmp(a, "--fit")) o->model = o->fit = 1;
    else if (!strcmp(a, "--device")) {
      if (!(o->device = VALUE())) return 0;
    } else if (!strcmp(a, "--kernel")) {
      if (!(o->kernel = VALUE())) return 0;
    } else if (!strcmp(a, "--precision")) {
      if (!(o->precision = VALUE())) return 0;
    } else if (!strcmp(a, "--class")) {
      if (!(o->classes = VALUE())) return 0;
    } else if (!strcmp(a, "--report-csv")) {
      if (!(o->csv = VALUE())) return 0;
    } else if (!strcmp(a, "--budget")) {
      const char *x = VALUE();
      if (!x) return 0;
      if (fmmcl_cli_parse_double("--budget", x, &o->budget)) return 0;
      if (!(o->budget >= 0 && o->budget <= 1e6)) {
        fmmcl_cli_usage_error("--budget: %s is not between 0 and 1e6 seconds", x);
        return 0;
      }
    } else if (!strcmp(a, "--n")) {
      const char *x = VALUE();
      if (!x) return 0;
      if (fmmcl_cli_parse_count("--n", x, &o->n)) return 0;
      if (o->n < 2 || o->n > (size_t)1 << 31) {
        fmmcl_cli_usage_error("--n: %s is not between 2 and 2^31 points", x);
        return 0;
      }
    } else if (!strcmp(a, "--repeats")) {
      const char *x = VALUE();
      if (!x) return 0;
      if (fmmcl_cli_parse_int("--repeats", x, 1, 64, &o->repeats)) return 0;
    } else if (!strcmp(a, "--seed")) {
      const char *x = VALUE();
      if (!x) return 0;
      size_t seed;
      if (fmmcl_cli_parse_count("--seed", x, &seed)) return 0;
      o->seed = (unsigned)seed;
    } else {
      fprintf(stderr, "fmmtune: unknown option %s (see --help)\n", a);
      return 0;
    }
#undef VALUE
  }
  if (strcmp(o->precision, "single") && strcmp(o->precision, "double") && strcmp(o->precision, "both")) {
    fprintf(stderr, "fmmtune: --precision must be single, double or both\n");
    return 0;
  }
  if (o->budget == -1) o->budget_default = 1, o->budget = 60; /* the fit's own default differs by device */
  if (!(o->budget >= 0) || o->repeats < 1 || o->repeats > 64) {
    fprintf(stderr, "fmmtune: --budget must be >= 0 and --repeats 1..64\n");
    return 0;
  }
  return 1;
}

/* Whether word is in a comma-separated list ("all" matches everything). */
static int in_list(const char *list, const char *word) {
  if (!strcmp(list, "all")) return 1;
  const size_t n = strlen(word);
  for (const char *s = list; *s;) {
    const char *e = strchr(s, ',');
    if (!e) e = s + strlen(s);
    if ((size_t)(e - s) == n && !strncmp(s, word, n)) return 1;
    s = *e ? e + 1 : e;
  }
  return 0;
}

typedef struct {
  const fmmcl_tuning_space *space;
  fmmcl_precision precision;
  char cls[32];
} job_key;

/* The jobs the options ask for; unknown names are an error. */
static size_t plan_jobs(const options *o, const fmmcl_device_info *dev, job_key *jobs, size_t cap) {
  size_t n = 0;
  int kernels = 0;
  for (size_t k = 0; k < fmmcl_tuning_space_count(); k++) {
    const fmmcl_tuning_space *s = fmmcl_tuning_space_at(k);
    if (!in_list(o->kernel, s->kernel)) continue;
    kernels++;
    if (!s->phase) { /* no plan phase times it */
      if (strcmp(o->kernel, "all")) fprintf(stderr, "fmmtune: %s: %s\n", s->kernel, s->timing_note);
      continue;
    }
    for (int p = 0; p < 2; p++) {
      if (strcmp(o->precision, "both") && strcmp(o->precision, p ? "double" : "single")) continue;
      if (!p && !s->tune_classes[0]) continue; /* built in double only (tree_sort) */
      if (p && !dev->has_fp64) {
        fprintf(stderr, "fmmtune: %s has no double precision; skipping %s double\n", dev->device_name,
                s->kernel);
        continue;
      }
      char classes[256];
      const char *own = p && s->tune_classes_double ? s->tune_classes_double : s->tune_classes;
      snprintf(classes, sizeof classes, "%s", o->classes ? o->classes : own);
      for (char *save = NULL, *c = strtok_r(classes, ", ", &save); c; c = strtok_r(NULL, ", ", &save)) {
        if (!fmmcl_tuning_class_parse(s, c, NULL)) {
          if (o->classes) fprintf(stderr, "fmmtune: %s has no class %s; skipped\n", s->kernel, c);
          continue;
        }
        if (n < cap) jobs[n++] = (job_key){s, p ? FMMCL_DOUBLE : FMMCL_SINGLE, ""};
        snprintf(jobs[n - 1].cls, sizeof jobs[0].cls, "%s", c);
      }
    }
  }
  if (!kernels) fprintf(stderr, "fmmtune: no kernel matches --kernel %s (see --list)\n", o->kernel);
  return n;
}

static size_t timing_n(const options *o, const fmmcl_tuning_space *s, const fmmcl_device_info *dev) {
  return o->n ? o->n : dev->is_gpu ? s->n_gpu : s->n_cpu;
}

static void list_spaces(const options *o, const fmmcl_device_info *dev) {
  printf("kernels and their tuning spaces on %s:\n", dev->device_name);
  for (size_t k = 0; k < fmmcl_tuning_space_count(); k++) {
    const fmmcl_tuning_space *s = fmmcl_tuning_space_at(k);
    printf("\n%s  (cl/%s)\n", s->kernel, s->file);
    for (size_t i = 0; i < fmmcl_tuning_space_nparams(s); i++) {
      printf("  %-8s", s->params[i].name);
      const fmmcl_tuning_param *p = &s->params[i];
      for (size_t j = 0; j < fmmcl_tuning_param_count(p); j++) printf(" %d", p->values[j]);
      printf("%s%s%s\n", p->flags & FMMCL_TUNE_RANGE ? "  (any value in that range)" : "",
             p->flags & FMMCL_TUNE_AUTO ? "  (0: sized by the driver)" : "",
             p->flags & FMMCL_TUNE_HOST ? "  (host only: not passed to the compiler)" : "");
    }
    printf("  constraints: %s\n", s->constraints ? s->constraints : "none");
    char orders[32] = "";
    if (s->order_max) snprintf(orders, sizeof orders, "p0..p%d", s->order_max);
    printf("  classes: %s%d..%s%d%s (tuned by default: %s%s%s)\n", s->class_prefix, s->class_min,
           s->class_prefix, s->class_max, orders, s->tune_classes[0] ? s->tune_classes : "none in single",
           s->tune_classes_double ? "; in double: " : "",
           s->tune_classes_double ? s->tune_classes_double : "");
    /* the default of each class tuned in single (they differ only where
     * the space moves it per class) */
    char classes[256], def[256];
    const int dbl = !s->tune_classes[0] && s->tune_classes_double;
    snprintf(classes, sizeof classes, "%s", dbl ? s->tune_classes_double : s->tune_classes);
    for (char *save = NULL, *c = strtok_r(classes, " ", &save); c; c = strtok_r(NULL, " ", &save)) {
      if (!fmmcl_tuning_default(s->kernel, dbl ? FMMCL_DOUBLE : FMMCL_SINGLE, c, dev, def, sizeof def))
        snprintf(def, sizeof def, "(none)");
      printf("  default here, %s%s: %s\n", c, dbl ? " double" : "", def);
    }
    if (s->phase)
      printf("  timing problem: %zu points, phase%s \"%s\"%s%s\n", timing_n(o, s, dev),
             strchr(s->phase, ',') ? "s" : "", s->phase, s->timing_note ? "; " : "",
             s->timing_note ? s->timing_note : "");
    else printf("  timing problem: none; %s\n", s->timing_note ? s->timing_note : "not tuned");
  }
}

static int show_cache(const fmmcl_device_info *dev, const char *path) {
  size_t n = 0;
  if (fmmcl_tuning_entries(dev, NULL, 0, &n)) {
    fprintf(stderr, "fmmtune: %s\n", fmmcl_last_error(NULL));
    return 1;
  }
  fmmcl_tuning_entry *e = calloc(n ? n : 1, sizeof *e);
  if (!e || fmmcl_tuning_entries(dev, e, n, &n)) {
    free(e);
    return 1;
  }
  char line[1024], notes[2048];
  fmmcl_tuning_format_device(dev, line, sizeof line);
  printf("tuning cache %s\n%s\n%s\n", path, line, n ? "" : "(no entries for this device)");
  for (size_t i = 0; i < n; i++) {
    fmmcl_tuning_format_entry(&e[i], line, sizeof line);
    printf("%s%s%s\n", line, e[i].usable ? "" : "   <- ignored: ", e[i].note);
  }
  fmmcl_tuning_notes(dev, notes, sizeof notes);
  if (notes[0]) printf("notes:\n%s\n", notes);
  free(e);
  return 0;
}

static void dry_run(const options *o, const fmmcl_device_info *dev, const job_key *jobs, size_t n) {
  for (size_t j = 0; j < n; j++) {
    tune_job job = {.space = jobs[j].space, .precision = jobs[j].precision};
    snprintf(job.problem_class, sizeof job.problem_class, "%s", jobs[j].cls);
    fmmcl_tuning_class_parse(job.space, job.problem_class, &job.cls);
    fmmcl_tuning_point *c;
    size_t space_n, valid = tune_candidates(&job, dev, &c, &space_n);
    char label[96], d[256];
    tune_job_label(&job, label, sizeof label);
    printf("%s: %zu of %zu points fit, timing on %zu points, budget %.0f s%s\n", label, valid, space_n,
           timing_n(o, job.space, dev), o->budget / (double)n,
           o->budget / (double)n > 0 ? "" : " (default and one more)");
    for (size_t i = 0; i < valid; i++) {
      fmmcl_tuning_point_format(job.space, &c[i], 0, d, sizeof d);
      printf("  %s\n", d);
    }
    free(c);
  }
}

static void utc_now(char *buf, size_t len) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Runs one job and stores its winner; 1 on success. */
static int run_job(const char *exe, const options *o, const fmmcl_device_info *dev, const char *path,
                   const job_key *k, double budget, tune_result *res) {
  tune_job job;
  char why[256];
  memset(res, 0, sizeof *res);
  if (!tune_job_describe(&job, k->space, k->precision, k->cls, timing_n(o, k->space, dev), o->repeats, why,
                         sizeof why)) {
    snprintf(res->label, sizeof res->label, "%s", k->space->kernel);
    snprintf(res->why, sizeof res->why, "%s", why);
    return 0;
  }
  /* the worker opens exactly this device, whatever selected it here */
  char device[64];
  snprintf(device, sizeof device, "%d:%d", dev->platform_index, dev->device_index);
  tune_worker w;
  tune_worker_init(&w, exe, device, &job);
  tune_progress pg = {.enabled = !o->quiet, .verbose = o->verbose && !o->quiet};
  tune_search(&w, dev, &job, budget, o->seed, &pg, res);
  tune_worker_close(&w);
  if (!res->ok) return 0;
  fmmcl_tuning_entry e = {.precision = k->precision,
                          .time_ms = res->best_ms,
                          .default_ms = isfinite(res->default_ms) ? res->default_ms : 0,
                          .n = res->n};
  snprintf(e.kernel, sizeof e.kernel, "%s", k->space->kernel);
  snprintf(e.problem_class, sizeof e.problem_class, "%s", k->cls);
  snprintf(e.defines, sizeof e.defines, "%s", res->best_defines);
  utc_now(e.date, sizeof e.date);
  if (!tune_cache_store(path, dev, &e, why, sizeof why)) {
    fprintf(stderr, "fmmtune: %s\n", why);
    return 0;
  }
  return 1;
}

/* fmmtune --worker: measures one job's candidates for its parent (tune_worker.c). */
static int run_worker(const options *o) {
  const fmmcl_tuning_space *s = fmmcl_tuning_space_find(o->kernel);
  if (!s || !o->classes || !o->n || !o->device) return 2;
  return tune_worker_main(o->device, s, strcmp(o->precision, "double") ? FMMCL_SINGLE : FMMCL_DOUBLE,
                          o->classes, o->n, o->repeats);
}

int main(int argc, char **argv) {
  options o;
  fmmcl_cli_set_program("fmmtune");
  if (!parse_args(argc, argv, &o)) return 2;
  if (o.worker) return run_worker(&o);
  /* workers are this same program */
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len > 0) exe[len] = '\0';
  else snprintf(exe, sizeof exe, "%s", argv[0]);
  fmmcl_context ctx;
  if (fmmcl_context_create(&ctx, o.device)) {
    fprintf(stderr, "fmmtune: %s\n", fmmcl_last_error(NULL));
    return 3;
  }
  fmmcl_device_info dev;
  fmmcl_context_device(ctx, &dev);
  char path[4200], why[256];
  if (fmmcl_tuning_file_path(&dev, path, sizeof path)) {
    fprintf(stderr, "fmmtune: %s\n", fmmcl_last_error(NULL));
    fmmcl_context_destroy(ctx);
    return 3;
  }
  int rc = 0;
  job_key jobs[64];
  size_t n_jobs = 0;
  if (o.model) {
    rc = tune_model_main(ctx, &dev, o.precision, o.fit, o.budget_default ? 0 : o.budget, o.csv);
  } else if (o.list) {
    list_spaces(&o, &dev);
  } else if (o.show) {
    rc = show_cache(&dev, path);
  } else if (o.reset) {
    size_t removed = 0;
    if (tune_cache_reset(path, &dev, &removed, why, sizeof why))
      printf("removed %zu entries of %s from %s\n", removed, dev.device_name, path);
    else {
      fprintf(stderr, "fmmtune: %s\n", why);
      rc = 1;
    }
  } else if (!(n_jobs = plan_jobs(&o, &dev, jobs, 64))) {
    rc = 2;
  } else if (o.dry_run) {
    dry_run(&o, &dev, jobs, n_jobs);
  } else {
    if (!o.quiet)
      fprintf(stderr, "fmmtune: %zu jobs on %s, %.0f s budget, cache %s\n", n_jobs, dev.device_name, o.budget,
              path);
    tune_result res[64];
    char scratch[4096];
    if (!tune_scratch_begin(&dev, scratch, sizeof scratch)) setenv("FMMCL_NO_CACHE", "1", 1);
    const double t0 = fmmcl_wall_seconds();
    for (size_t j = 0; j < n_jobs; j++) {
      /* time a job leaves unused goes to the ones after it */
      double left = o.budget - (fmmcl_wall_seconds() - t0);
      double share = left > 0 ? left / (double)(n_jobs - j) : 0;
      if (!run_job(exe, &o, &dev, path, &jobs[j], share, &res[j])) rc = 1;
    }
    tune_scratch_end(scratch);
    printf("device: %s (%s, driver %s)\n", dev.device_name, dev.platform_vendor, dev.driver_version);
    tune_report_table(stdout, res, n_jobs);
    printf("cache: %s\n", path);
    if (o.csv) {
      FILE *f = fopen(o.csv, "w");
      if (f) {
        tune_report_csv(f, &dev, res, n_jobs, o.budget);
        fclose(f);
      } else {
        fprintf(stderr, "fmmtune: cannot write %s\n", o.csv);
        rc = 1;
      }
    }
  }
  fmmcl_context_destroy(ctx);
  return rc;
}
