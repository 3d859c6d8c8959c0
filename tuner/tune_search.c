/* tune_search.c — the search over a kernel's tuning space under a time
 * budget: exhaustive when it fits, else random sampling followed by local
 * search; the winner must then beat the default head to head. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

/* Share of the budget spent sampling before the local search starts. */
#define SAMPLE_SHARE 0.4
/* Rounds of the final default-versus-best comparison. */
#define CONFIRM_ROUNDS 3

size_t tune_candidates(const tune_job *job, const fmmcl_device_info *dev, fmmcl_tuning_point **out,
                       size_t *n_space) {
  const fmmcl_tuning_space *s = job->space;
  const size_t np = fmmcl_tuning_space_nparams(s);
  size_t total = 1, idx[FMMCL_TUNE_MAX_PARAMS] = {0}, n = 0;
  for (size_t i = 0; i < np; i++) { total *= fmmcl_tuning_param_count(&s->params[i]); }
  *n_space = total;
  *out = malloc((total ? total : 1) * sizeof **out);
  if (!*out) return 0;
  for (size_t k = 0; k < total; k++) {
    fmmcl_tuning_point pt;
    memset(&pt, 0, sizeof pt);
    for (size_t i = 0; i < np; i++) pt.v[i] = s->params[i].values[idx[i]];
    char why[160];
    if (fmmcl_tuning_point_fits(s, &pt, &job->cls, job->precision, dev, why, sizeof why)) (*out)[n++] = pt;
    for (size_t i = np; i-- > 0;) { /* odometer, last parameter fastest */
      if (++idx[i] < fmmcl_tuning_param_count(&s->params[i])) break;
      idx[i] = 0;
    }
  }
  return n;
}

/* ---- search state ----------------------------------------------------------- */

typedef struct {
  tune_worker *w;
  const tune_job *job;
  fmmcl_tuning_point *cand;
  size_t n;
  double *ms;  /* per candidate: NAN untried, INFINITY rejected */
  size_t best; /* index into cand, n when none */
  double deadline;
  uint64_t rng;
  tune_progress *pg;
  tune_result *res;
} search;

static uint64_t next_random(search *s) {
  s->rng ^= s->rng << 13;
  s->rng ^= s->rng >> 7;
  s->rng ^= s->rng << 17;
  return s->rng;
}

static int out_of_time(const search *s) { return fmmcl_wall_seconds() >= s->deadline; }

static void defines_of(const search *s, size_t i, char *buf, size_t len) {
  fmmcl_tuning_point_format(s->job->space, &s->cand[i], 1, buf, len);
}

static void progress(search *s) {
  char best[256] = "";
  if (s->best < s->n) fmmcl_tuning_point_format(s->job->space, &s->cand[s->best], 0, best, sizeof best);
  tune_progress_step(s->pg, s->res->tried, s->res->rejected, s->best < s->n ? s->ms[s->best] : NAN, best);
}

/* Measures candidate i once; a rejection is remembered as INFINITY. */
static void try_candidate(search *s, size_t i) {
  if (!isnan(s->ms[i])) return;
  char defines[256], why[256];
  defines_of(s, i, defines, sizeof defines);
  double ms;
  const double t = fmmcl_wall_seconds();
  tune_verdict v = tune_worker_eval(s->w, defines, &ms, why, sizeof why);
  tune_progress_candidate(s->pg, defines, v == TUNE_OK ? ms : -1, fmmcl_wall_seconds() - t, why);
  s->res->tried++;
  if (v != TUNE_OK) {
    s->ms[i] = INFINITY;
    s->res->rejected++;
  } else {
    s->ms[i] = ms;
    if (s->best == s->n || ms < s->ms[s->best]) s->best = i;
  }
  progress(s);
}

static size_t untried_count(const search *s) {
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) k += isnan(s->ms[i]) != 0;
  return k;
}

/* A uniformly random untried candidate; n when none is left. */
static size_t random_untried(search *s) {
  size_t left = untried_count(s);
  if (!left) return s->n;
  size_t pick = (size_t)(next_random(s) % left);
  for (size_t i = 0; i < s->n; i++)
    if (isnan(s->ms[i]) && pick-- == 0) return i;
  return s->n;
}

static size_t find_point(const search *s, const fmmcl_tuning_point *pt) {
  for (size_t i = 0; i < s->n; i++)
    if (memcmp(&s->cand[i], pt, sizeof *pt) == 0) return i;
  return s->n;
}

/* Untried neighbours of candidate c (one parameter one candidate value up
 * or down), shuffled; returns how many were put in out. */
static size_t neighbours(search *s, size_t c, size_t *out) {
  const fmmcl_tuning_space *sp = s->job->space;
  const size_t np = fmmcl_tuning_space_nparams(sp);
  size_t k = 0;
  for (size_t p = 0; p < np; p++) {
    const int *vals = sp->params[p].values;
    size_t at = 0;
    while (vals[at] && vals[at] != s->cand[c].v[p]) at++;
    for (int step = -1; step <= 1; step += 2) {
      if ((step < 0 && at == 0) || !vals[at] || (step > 0 && !vals[at + 1])) continue;
      fmmcl_tuning_point pt = s->cand[c];
      pt.v[p] = vals[(size_t)((long)at + step)];
      size_t i = find_point(s, &pt);
      if (i < s->n && isnan(s->ms[i])) out[k++] = i;
    }
  }
  for (size_t i = k; i > 1; i--) { /* Fisher-Yates */
    size_t j = (size_t)(next_random(s) % i), t = out[i - 1];
    out[i - 1] = out[j];
    out[j] = t;
  }
  return k;
}

static void exhaustive(search *s) {
  size_t i;
  while (!out_of_time(s) && (i = random_untried(s)) < s->n) try_candidate(s, i);
}

/* Random sampling, then first-improvement hill climbing from the best
 * point; a climb that ends on a local optimum restarts at a random point. */
static void sample_then_climb(search *s, double sample_until) {
  size_t i;
  while (fmmcl_wall_seconds() < sample_until && (i = random_untried(s)) < s->n) try_candidate(s, i);
  size_t cur = s->best < s->n ? s->best : random_untried(s);
  size_t nb[2 * FMMCL_TUNE_MAX_PARAMS];
  while (!out_of_time(s) && cur < s->n) {
    const size_t k = neighbours(s, cur, nb);
    size_t moved = s->n;
    for (size_t j = 0; j < k && !out_of_time(s); j++) {
      try_candidate(s, nb[j]);
      if (s->ms[nb[j]] < s->ms[cur]) {
        moved = nb[j];
        break;
      }
    }
    if (moved < s->n) {
      cur = moved;
      continue;
    }
    if ((cur = random_untried(s)) < s->n) try_candidate(s, cur);
  }
}

static void set_defines(const tune_job *job, const fmmcl_tuning_point *pt, char *buf, size_t len) {
  fmmcl_tuning_point_format(job->space, pt, 1, buf, len);
}

/* The default head to head with the best: the best must be faster. */
static void confirm(search *s, const char *def) {
  tune_result *r = s->res;
  char best[256], why[256];
  set_defines(s->job, &s->cand[s->best], best, sizeof best);
  if (strcmp(best, def) == 0 || isinf(r->default_ms)) {
    snprintf(r->best_defines, sizeof r->best_defines, "%s", best);
    r->best_ms = s->ms[s->best];
    return;
  }
  double a, b;
  if (tune_worker_compare(s->w, def, best, CONFIRM_ROUNDS, &a, &b, why, sizeof why) != TUNE_OK) {
    snprintf(r->best_defines, sizeof r->best_defines, "%s", def); /* measured once; keep the safe one */
    r->best_ms = r->default_ms;
    return;
  }
  r->default_ms = a;
  if (b < a) {
    snprintf(r->best_defines, sizeof r->best_defines, "%s", best);
    r->best_ms = b;
  } else {
    snprintf(r->best_defines, sizeof r->best_defines, "%s", def);
    r->best_ms = a;
  }
}

void tune_search(tune_worker *w, const fmmcl_device_info *dev, const tune_job *job, double budget_s,
                 unsigned seed, tune_progress *pg, tune_result *res) {
  const double t0 = fmmcl_wall_seconds();
  memset(res, 0, sizeof *res);
  tune_job_label(job, res->label, sizeof res->label);
  res->n = job->n_time;
  search s = {.w = w, .job = job, .pg = pg, .res = res, .rng = 0x9E3779B97F4A7C15ULL ^ seed};
  s.n = tune_candidates(job, dev, &s.cand, &res->n_space);
  res->n_valid = s.n;
  s.ms = malloc((s.n ? s.n : 1) * sizeof *s.ms);
  if (!s.cand || !s.ms || !s.n) {
    snprintf(res->why, sizeof res->why, s.n ? "out of host memory" : "no point of the space fits the device");
    free(s.cand);
    free(s.ms);
    return;
  }
  for (size_t i = 0; i < s.n; i++) s.ms[i] = NAN;
  s.best = s.n;
  tune_progress_start(pg, res->label, s.n, budget_s);
  /* the baseline: the default, measured like any candidate */
  char def[256], why[256];
  fmmcl_tuning_default(job->space->kernel, job->precision, job->problem_class, dev, def, sizeof def);
  snprintf(res->default_defines, sizeof res->default_defines, "%s", def);
  if (!tune_worker_ready(w, why, sizeof why)) {
    snprintf(res->why, sizeof res->why, "%s", why);
    tune_progress_end(pg, res->why);
    free(s.cand);
    free(s.ms);
    return;
  }
  fmmcl_tuning_point dp;
  size_t di = fmmcl_tuning_point_parse(job->space, def, &dp, why, sizeof why) ? find_point(&s, &dp) : s.n;
  const double e0 = fmmcl_wall_seconds();
  if (di < s.n) {
    try_candidate(&s, di);
    res->default_ms = s.ms[di];
  } else if (tune_worker_eval(w, def, &res->default_ms, why, sizeof why) != TUNE_OK) {
    res->default_ms = INFINITY;
  }
  /* one candidate's cost decides the mode; the confirmation is reserved;
   * a candidate many times slower than the default (a compiler stuck on
   * a huge unroll) is cut off */
  const double cost = fmmcl_wall_seconds() - e0;
  w->timeout = 10 * cost > 30 ? 10 * cost : 30;
  s.deadline = t0 + budget_s - 2 * cost;
  if (s.deadline < fmmcl_wall_seconds() + cost) s.deadline = fmmcl_wall_seconds() + cost; /* >= 1 more */
  const double left = s.deadline - fmmcl_wall_seconds();
  res->exhaustive = (double)untried_count(&s) * cost <= left;
  if (res->exhaustive) exhaustive(&s);
  else sample_then_climb(&s, fmmcl_wall_seconds() + SAMPLE_SHARE * left);
  res->exhaustive = untried_count(&s) == 0;
  if (s.best == s.n) {
    snprintf(res->why, sizeof res->why, "no candidate passed the check (%zu rejected)", res->rejected);
  } else {
    confirm(&s, def);
    res->ok = 1;
  }
  char summary[512];
  snprintf(summary, sizeof summary, "%s: %zu of %zu tried (%zu rejected)%s, %.0f s", res->label, res->tried,
           s.n, res->rejected, res->exhaustive ? ", exhaustive" : "", fmmcl_wall_seconds() - t0);
  tune_progress_end(pg, summary);
  free(s.cand);
  free(s.ms);
}
