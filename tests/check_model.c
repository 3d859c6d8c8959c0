/* check_model.c — Check suite of the performance model and hybrid
 * scheduling (issue 8): microbenchmarks, the model file, the fit and its
 * predictions, and every schedule against single-device execution. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "test_util.h"

#define FMMCL_MAX_PHASES_TEST 64

static fmmcl_context ctx;

static void setup(void) {
  ctx = fmmcl_test_context();
  ck_assert_ptr_nonnull(ctx);
}
static void teardown(void) { fmmcl_context_destroy(ctx); }

/* ---- microbenchmarks and the model file ---------------------------------- */

START_TEST(test_measure_peaks) {
  double pairs = 0, bytes = 0;
  ck_assert_int_eq(fmmcl_model_measure(ctx, FMMCL_SINGLE, &pairs, &bytes), FMMCL_SUCCESS);
  /* any device of the last twenty years, two CPU cores upwards: 1e6 to 1e14
   * pairs/s and 1e7 to 1e13 bytes/s; outside that the timing is broken */
  ck_assert_msg(pairs > 1e6 && pairs < 1e14, "pairs/s = %g", pairs);
  ck_assert_msg(bytes > 1e7 && bytes < 1e13, "bytes/s = %g", bytes);
  ck_assert_int_eq(fmmcl_model_measure(NULL, FMMCL_SINGLE, &pairs, &bytes), FMMCL_ERROR_NULL_POINTER);
}
END_TEST

static void sample_model(fmmcl_model *m) {
  memset(m, 0, sizeof *m);
  m->prec[0].measured = 1;
  m->prec[0].pairs_per_s = 1.234567890123e9;
  m->prec[0].bytes_per_s = 3.3e10 / 3;
  m->prec[0].fitted = 1;
  m->prec[0].n_samples = 12;
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++)
    for (int r = 0; r < FMMCL_MODEL_NREG; r++) m->prec[0].c[ph][r] = (ph + 1) * 0.1 / (r + 3);
}

static char *write_text(const char *dir, const char *name, const char *text) {
  char *path = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  return path;
}

START_TEST(test_model_file_roundtrip) {
  fmmcl_device_info dev;
  ck_assert_int_eq(fmmcl_context_device(ctx, &dev), FMMCL_SUCCESS);
  char *dir = fmmcl_test_tempdir("model-file");
  char path[4096];
  snprintf(path, sizeof path, "%s/sub/dir/dev.model", dir);
  fmmcl_model m, back;
  sample_model(&m);
  ck_assert_int_eq(fmmcl_model_store(path, &dev, &m), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_model_load(path, &dev, &back), FMMCL_SUCCESS);
  /* %.17g round-trips doubles exactly */
  ck_assert_int_eq(memcmp(&m, &back, sizeof m), 0);
  /* the path beside the tuning cache, or FMMCL_MODEL_FILE */
  char tuning[4096], model[4200];
  ck_assert_int_eq(fmmcl_tuning_file_path(&dev, tuning, sizeof tuning), FMMCL_SUCCESS);
  unsetenv("FMMCL_MODEL_FILE");
  ck_assert_int_eq(fmmcl_model_file_path(&dev, model, sizeof model), FMMCL_SUCCESS);
  ck_assert_int_eq(strncmp(model, tuning, strlen(tuning)), 0);
  ck_assert_str_eq(model + strlen(tuning), ".model");
  setenv("FMMCL_MODEL_FILE", path, 1);
  ck_assert_int_eq(fmmcl_model_file_path(&dev, model, sizeof model), FMMCL_SUCCESS);
  ck_assert_str_eq(model, path);
  unsetenv("FMMCL_MODEL_FILE");
  fmmcl_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_model_file_corrupt) {
  fmmcl_device_info dev, other;
  ck_assert_int_eq(fmmcl_context_device(ctx, &dev), FMMCL_SUCCESS);
  char *dir = fmmcl_test_tempdir("model-corrupt");
  char path[4096];
  snprintf(path, sizeof path, "%s/dev.model", dir);
  fmmcl_model m, back;
  sample_model(&m);
  ck_assert_int_eq(fmmcl_model_load(path, &dev, &back), FMMCL_ERROR_IO); /* absent */
  ck_assert_int_eq(fmmcl_model_store(path, &dev, &m), FMMCL_SUCCESS);
  char *text;
  size_t len;
  ck_assert_int_eq(fmmcl_read_file(NULL, path, &text, &len), FMMCL_SUCCESS);
  /* one digit changed: the checksum catches it */
  char *digit = strstr(text, "peaks single ");
  ck_assert_ptr_nonnull(digit);
  digit += strlen("peaks single ") + 1;
  *digit = *digit == '3' ? '4' : '3';
  free(write_text(dir, "dev.model", text));
  ck_assert_int_eq(fmmcl_model_load(path, &dev, &back), FMMCL_ERROR_CORRUPT_FILE);
  ck_assert_int_eq(back.prec[0].measured, 0);
  /* cut short: the checksum line is gone */
  text[len / 2] = '\0';
  free(write_text(dir, "dev.model", text));
  ck_assert_int_eq(fmmcl_model_load(path, &dev, &back), FMMCL_ERROR_CORRUPT_FILE);
  free(text);
  free(write_text(dir, "dev.model", "not a model\n"));
  ck_assert_int_eq(fmmcl_model_load(path, &dev, &back), FMMCL_ERROR_CORRUPT_FILE);
  /* another device's model is not used */
  other = dev;
  snprintf(other.device_name, sizeof other.device_name, "some other device");
  ck_assert_int_eq(fmmcl_model_store(path, &other, &m), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_model_load(path, &dev, &back), FMMCL_ERROR_UNSUPPORTED);
  ck_assert_int_eq(fmmcl_model_load(path, &other, &back), FMMCL_SUCCESS);
  fmmcl_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_fmmtune_model) {
  fmmcl_device_info dev;
  ck_assert_int_eq(fmmcl_context_device(ctx, &dev), FMMCL_SUCCESS);
  char *dir = fmmcl_test_tempdir("model-tune");
  char path[4096], cmd[8400];
  snprintf(path, sizeof path, "%s/dev.model", dir);
  const char *sel = getenv("FMMCL_TEST_DEVICE");
  snprintf(cmd, sizeof cmd, "FMMCL_MODEL_FILE='%s' '%s' --model --precision single --device '%s' >/dev/null",
           path, FMMCL_TUNER_BIN, sel && *sel ? sel : "cpu");
  ck_assert_int_eq(system(cmd), 0);
  fmmcl_model m;
  ck_assert_int_eq(fmmcl_model_load(path, &dev, &m), FMMCL_SUCCESS);
  ck_assert_int_eq(m.prec[0].measured, 1);
  ck_assert(m.prec[0].pairs_per_s > 0 && m.prec[0].bytes_per_s > 0);
  fmmcl_test_rmtree(dir);
  free(dir);
}
END_TEST

/* ---- the per-phase model ------------------------------------------------ */

/* Synthetic samples whose times are exactly the model with known constants
 * (every regressor positive, so every constant is identifiable). */
static void synthetic(fmmcl_model_precision *truth, fmmcl_model_sample *smp, size_t n) {
  memset(truth, 0, sizeof *truth);
  truth->measured = 1, truth->pairs_per_s = 1e9, truth->bytes_per_s = 1e10;
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) {
    truth->c[ph][0] = 1e-5 * (ph + 1);
    truth->c[ph][1] = 1.0 + 0.25 * ph;
    /* transfers, overhead and the host sum have no compute or granule term */
    const int host = ph >= FMMCL_MODEL_UPLOAD;
    truth->c[ph][2] = host ? 0 : 3.0 - 0.2 * ph;
    truth->c[ph][3] = host ? 0 : 0.5 + 0.1 * ph;
    truth->c[ph][4] = host ? 0 : 0.2 + 0.05 * ph;
  }
  for (size_t i = 0; i < n; i++) {
    fmmcl_model_sample *s = &smp[i];
    memset(s, 0, sizeof *s);
    s->order = 3 + (int)(i % 3) * 2;
    s->n_sources = s->n_targets = 1000 * (1 + i);
    for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) {
      s->work[ph] = (double)s->n_sources * (1 + (ph * 7 + i * 13) % 5) * (ph == FMMCL_MODEL_P2P ? 50 + i : 1);
      s->work[FMMCL_MODEL_NPHASES + ph] = (double)s->n_sources / (8 + (i * 5 + ph) % 7);
    }
    fmmcl_model_predict(truth, 4, s->order, s->work, s->n_sources, s->n_targets, s->seconds);
  }
}

START_TEST(test_fit_recovers_and_reproduces) {
  enum { N = 12 };
  fmmcl_model_precision truth, a, b;
  fmmcl_model_sample smp[N];
  synthetic(&truth, smp, N);
  a = truth, b = truth;
  memset(a.c, 0, sizeof a.c);
  memset(b.c, 0, sizeof b.c);
  fmmcl_model_fit_samples(smp, N, 4, &a);
  fmmcl_model_fit_samples(smp, N, 4, &b);
  /* the same samples give the same constants, bit for bit */
  ck_assert_int_eq(memcmp(a.c, b.c, sizeof a.c), 0);
  ck_assert_int_eq(a.fitted, 1);
  ck_assert_int_eq((int)a.n_samples, N);
  /* exact data: the constants come back to rounding */
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++)
    for (int r = 0; r < FMMCL_MODEL_NREG; r++)
      ck_assert_msg(fabs(a.c[ph][r] - truth.c[ph][r]) <= 1e-6 * fabs(truth.c[ph][r]) + 1e-12,
                    "phase %s constant %d: %g, want %g", fmmcl_model_phase_names[ph], r, a.c[ph][r],
                    truth.c[ph][r]);
}
END_TEST

START_TEST(test_fit_nonnegative) {
  /* times falling as the work grows cannot be a cost: no negative constant */
  enum { N = 6 };
  fmmcl_model_precision truth, fit;
  fmmcl_model_sample smp[N];
  synthetic(&truth, smp, N);
  for (size_t i = 0; i < N; i++)
    for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) smp[i].seconds[ph] = 1.0 / (1 + (double)i);
  fit = truth;
  fmmcl_model_fit_samples(smp, N, 4, &fit);
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++)
    for (int r = 0; r < FMMCL_MODEL_NREG; r++) ck_assert(fit.c[ph][r] >= 0);
}
END_TEST

/* Samples survive the CSV that model-refit reads, to the digits written,
 * and a refit from them gives the constants of the original fit. */
START_TEST(test_samples_csv_roundtrip) {
  enum { N = 12 };
  fmmcl_model_precision truth, a, b;
  fmmcl_model_sample smp[N];
  synthetic(&truth, smp, N);
  char *dir = fmmcl_test_tempdir("model-csv");
  char path[4096];
  snprintf(path, sizeof path, "%s/samples.csv", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fmmcl_model_samples_write(f, "dev, with comma", FMMCL_SINGLE, &truth, smp, N),
                   FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_model_samples_write(f, "dev, with comma", FMMCL_SINGLE, &truth, smp, 1),
                   FMMCL_SUCCESS);
  fclose(f);
  f = fopen(path, "r");
  fmmcl_model_csv_row *rows;
  size_t n;
  ck_assert_int_eq(fmmcl_model_samples_read(f, &rows, &n), FMMCL_SUCCESS);
  fclose(f);
  ck_assert_int_eq((int)n, N + 1);
  ck_assert_str_eq(rows[0].device, "dev; with comma");
  ck_assert(rows[0].model.pairs_per_s == truth.pairs_per_s && rows[0].model.bytes_per_s == truth.bytes_per_s);
  fmmcl_model_sample back[N];
  for (size_t i = 0; i < N; i++) {
    back[i] = rows[i].sample;
    ck_assert_int_eq(back[i].order, smp[i].order);
    ck_assert_int_eq((int)back[i].n_sources, (int)smp[i].n_sources);
    for (int k = 0; k < FMMCL_MODEL_NWORK; k++) ck_assert(back[i].work[k] == smp[i].work[k]);
    for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++)
      ck_assert(fabs(back[i].seconds[ph] - smp[i].seconds[ph]) <= 1e-9 * smp[i].seconds[ph]);
  }
  free(rows);
  a = truth, b = truth;
  fmmcl_model_fit_samples(smp, N, 4, &a);
  fmmcl_model_fit_samples(back, N, 4, &b);
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++)
    for (int r = 0; r < FMMCL_MODEL_NREG; r++)
      ck_assert(fabs(a.c[ph][r] - b.c[ph][r]) <= 1e-6 * fabs(a.c[ph][r]) + 1e-15);
  /* a cut line is an error, not a sample of zeros */
  f = fopen(path, "w");
  fprintf(f, "dev,single,1e9,1e10,3,1000,1000,1,2\n");
  fclose(f);
  f = fopen(path, "r");
  ck_assert_int_eq(fmmcl_model_samples_read(f, &rows, &n), FMMCL_ERROR_CORRUPT_FILE);
  fclose(f);
  fmmcl_test_rmtree(dir);
  free(dir);
}
END_TEST

/* A sweep stops at its time budget with what it has (at least two per
 * constant of a phase), and says how many it ran. */
START_TEST(test_sweep_budget) {
  fmmcl_model_precision mp;
  memset(&mp, 0, sizeof mp);
  mp.measured = 1, mp.pairs_per_s = 1e9, mp.bytes_per_s = 1e10;
  fmmcl_model_sweep sw = {.n = {600, 1000, 1400},
                          .n_n = 3,
                          .q = {16, 32, 64},
                          .n_q = 3,
                          .p = {3},
                          .n_p = 1,
                          .shapes = 2,
                          .repeats = 1,
                          .budget_s = 1e-9};
  fmmcl_model_sample *smp;
  size_t n;
  ck_assert_int_eq(fmmcl_model_fit_sweep(ctx, FMMCL_SINGLE, &sw, &mp, &smp, &n), FMMCL_SUCCESS);
  ck_assert_int_eq((int)n, 2 * FMMCL_MODEL_NREG);
  ck_assert_int_eq((int)mp.n_samples, 2 * FMMCL_MODEL_NREG);
  /* spread over the grid, not the first ones of one loop: every N */
  int seen_n[3] = {0};
  for (size_t i = 0; i < n; i++)
    for (int j = 0; j < 3; j++) seen_n[j] |= smp[i].n_sources == sw.n[j];
  ck_assert(seen_n[0] && seen_n[1] && seen_n[2]);
  free(smp);
}
END_TEST

/* A real sweep on the test device: small, then the predictions must be
 * positive, grow with N, and reproduce the measured totals to a factor. */
START_TEST(test_fit_on_device) {
  fmmcl_model_precision mp;
  memset(&mp, 0, sizeof mp);
  ck_assert_int_eq(fmmcl_model_measure(ctx, FMMCL_SINGLE, &mp.pairs_per_s, &mp.bytes_per_s), FMMCL_SUCCESS);
  mp.measured = 1;
  fmmcl_model_sweep sw = {
      .n = {2000, 6000}, .n_n = 2, .q = {32, 64}, .n_q = 2, .p = {3}, .n_p = 1, .repeats = 3};
  fmmcl_model_sample *smp;
  size_t n;
  ck_assert_int_eq(fmmcl_model_fit_sweep(ctx, FMMCL_SINGLE, &sw, &mp, &smp, &n), FMMCL_SUCCESS);
  ck_assert_int_eq((int)n, 4);
  /* refitting the same samples reproduces the constants exactly */
  fmmcl_model_precision again = mp;
  memset(again.c, 0, sizeof again.c);
  fmmcl_model_fit_samples(smp, n, 4, &again);
  ck_assert_int_eq(memcmp(again.c, mp.c, sizeof mp.c), 0);
  for (size_t i = 0; i < n; i++) {
    double meas = 0;
    for (int ph = 0; ph < FMMCL_MODEL_COMBINE; ph++) meas += smp[i].seconds[ph]; /* wall */
    const double pred =
        fmmcl_model_predict(&mp, 4, smp[i].order, smp[i].work, smp[i].n_sources, smp[i].n_targets, NULL);
    /* a loose bound: PoCL on shared cores is noisy; the H100 benchmark
     * measures the real error */
    ck_assert_msg(pred > meas / 3 && pred < meas * 3, "sample %zu: predicted %g, measured %g", i, pred, meas);
  }
  free(smp);
  /* predictions of uniform problems: positive, and growing with N over the
   * range. Not step by step: where doubling N makes the tree a level
   * deeper, each target's near pairs fall by up to 8, so a fit that gives
   * the near field most of the time may predict less (by at most that
   * factor over the doubling), as the device may take less. */
  double prev = 0, first = 0;
  for (size_t N = 1000; N <= 16000; N *= 2) {
    double *x = malloc(3 * N * sizeof *x), work[FMMCL_MODEL_NWORK];
    fmmcl_test_random_points(7, N, 3, x);
    ck_assert_int_eq(fmmcl_model_counts(N, x, 0, NULL, 64, FMMCL_SINGLE, work), FMMCL_SUCCESS);
    const double t = fmmcl_model_predict(&mp, 4, 3, work, N, N, NULL);
    ck_assert_msg(t > 0 && t >= prev / 4, "N = %zu: predicted %g after %g", N, t, prev);
    if (N == 1000) first = t;
    if (N == 16000) ck_assert_msg(t > first, "N = 16000: predicted %g, no more than at 1000 (%g)", t, first);
    prev = t;
    free(x);
  }
}
END_TEST

/* The fitted model predicts plans it was not fitted on: a sweep over the
 * cube and the ellipsoid at N = 1500..6000, q = 16 and 64, p = 3, then
 * N = 4000 at q = 32 (held out: neither its N nor its q was fitted) on both
 * shapes. PoCL on two shared cores varies up to 2x between runs, so the
 * stated bound is loose: each held-out total within 50 % (the H100 target
 * is 10 %; bench-model measures that); runs here were within 1-36 %. */
START_TEST(test_fit_predicts_held_out) {
  fmmcl_model_precision mp;
  memset(&mp, 0, sizeof mp);
  ck_assert_int_eq(fmmcl_model_measure(ctx, FMMCL_SINGLE, &mp.pairs_per_s, &mp.bytes_per_s), FMMCL_SUCCESS);
  mp.measured = 1;
  fmmcl_model_sweep sw = {.n = {1500, 3000, 6000},
                          .n_n = 3,
                          .q = {16, 64},
                          .n_q = 2,
                          .p = {3},
                          .n_p = 1,
                          .shapes = 2,
                          .repeats = 5};
  fmmcl_model_sample *smp;
  size_t n;
  ck_assert_int_eq(fmmcl_model_fit_sweep(ctx, FMMCL_SINGLE, &sw, &mp, &smp, &n), FMMCL_SUCCESS);
  ck_assert_int_eq((int)n, 12);
  free(smp);
  const size_t N = 4000;
  double *x = malloc(3 * N * sizeof *x), *q = malloc(N * sizeof *q);
  for (int shape = 0; shape < 2; shape++) {
    fmmcl_model_sweep_inputs(shape, N, x, q);
    fmmcl_plan_options o;
    fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
    o.method = FMMCL_FMM, o.leaf_size = 32, o.order = 3;
    fmmcl_plan plan;
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan), FMMCL_SUCCESS);
    /* other builds on the shared cores only ever add time: a run that
     * misses the bound is measured again, and the fastest counts */
    double meas = -1, pred = 0;
    for (int attempt = 0; attempt < 3 && !(meas > 0 && fabs(pred - meas) <= 0.5 * meas); attempt++) {
      fmmcl_model_sample s;
      ck_assert_int_eq(fmmcl_model_plan_sample(plan, q, 5, &s), FMMCL_SUCCESS);
      double wall = 0;
      for (int ph = 0; ph < FMMCL_MODEL_COMBINE; ph++) wall += s.seconds[ph]; /* the wall time */
      if (meas < 0 || wall < meas) meas = wall;
      pred = fmmcl_model_predict(&mp, 4, 3, s.work, N, N, NULL);
    }
    fmmcl_plan_destroy(plan);
    ck_assert_msg(fabs(pred - meas) <= 0.5 * meas, "shape %d: predicted %g s, measured %g s (%.0f%%)", shape,
                  pred, meas, 100 * fabs(pred - meas) / meas);
  }
  free(x);
  free(q);
}
END_TEST

/* The counts the model predicts from equal the plan's own. */
START_TEST(test_counts_match_plan) {
  const size_t N = 3000;
  double *x = malloc(3 * N * sizeof *x), work[FMMCL_MODEL_NWORK];
  fmmcl_test_random_points(3, N, 3, x);
  ck_assert_int_eq(fmmcl_model_counts(N, x, 0, NULL, 40, FMMCL_SINGLE, work), FMMCL_SUCCESS);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM, o.leaf_size = 40, o.order = 3;
  fmmcl_plan plan;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan), FMMCL_SUCCESS);
  for (int ph = 0; ph < FMMCL_MODEL_UPLOAD; ph++) {
    double w;
    ck_assert_int_eq(fmmcl_plan_counts(plan, fmmcl_model_phase_names[ph], &w), FMMCL_SUCCESS);
    ck_assert_msg(w == work[ph], "%s: plan %g, model %g", fmmcl_model_phase_names[ph], w, work[ph]);
  }
  fmmcl_plan_destroy(plan);
  free(x);
}
END_TEST

/* A model where the FMM costs a millisecond a phase and P2P a pair at the
 * peak: direct for 100 points, FMM for 50000, and FMMCL_AUTO follows it. */
START_TEST(test_choose_method) {
  fmmcl_device_info dev;
  ck_assert_int_eq(fmmcl_context_device(ctx, &dev), FMMCL_SUCCESS);
  fmmcl_model m;
  memset(&m, 0, sizeof m);
  fmmcl_model_precision *mp = &m.prec[FMMCL_SINGLE];
  mp->measured = 1, mp->pairs_per_s = 1e9, mp->bytes_per_s = 1e10, mp->fitted = 1, mp->n_samples = 1;
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) mp->c[ph][0] = 1e-3, mp->c[ph][2] = 1;
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_AUTO;
  o.order = 3;
  const size_t big = 50000;
  double *x = malloc(3 * big * sizeof *x);
  fmmcl_test_random_points(5, big, 3, x);
  fmmcl_model_choice c;
  ck_assert_int_eq(fmmcl_model_choose(ctx, mp, &o, 100, x, 0, NULL, &c), FMMCL_SUCCESS);
  ck_assert_int_eq(c.method, FMMCL_DIRECT);
  ck_assert(c.direct_seconds < c.fmm_seconds);
  ck_assert_int_eq(fmmcl_model_choose(ctx, mp, &o, big, x, 0, NULL, &c), FMMCL_SUCCESS);
  ck_assert_int_eq(c.method, FMMCL_FMM);
  /* P2P dominates at this size, so the smallest leaf wins */
  ck_assert_int_eq(c.leaf_size, fmmcl_model_leaf_sizes[0]);
  /* through the model file and plan creation: AUTO at 100 points is direct */
  char *dir = fmmcl_test_tempdir("model-auto");
  char path[4096];
  snprintf(path, sizeof path, "%s/dev.model", dir);
  ck_assert_int_eq(fmmcl_model_store(path, &dev, &m), FMMCL_SUCCESS);
  setenv("FMMCL_MODEL_FILE", path, 1);
  fmmcl_plan plan;
  double work;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 100, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_counts(plan, "m2l", &work), FMMCL_SUCCESS);
  ck_assert(work == 0); /* no far field: the direct sum */
  ck_assert_int_eq(fmmcl_plan_counts(plan, "p2p", &work), FMMCL_SUCCESS);
  ck_assert(work == 100.0 * 100.0);
  fmmcl_plan_destroy(plan);
  unsetenv("FMMCL_MODEL_FILE");
  /* AUTO for a kernel the model does not time: the pairs rule, direct here;
   * an out-of-range method still invalid */
  fmmcl_plan_options g;
  fmmcl_plan_options_init(&g, FMMCL_GAUSSIAN);
  g.method = FMMCL_AUTO;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &g, 100, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_counts(plan, "p2p", &work), FMMCL_SUCCESS);
  ck_assert(work == 100.0 * 100.0);
  fmmcl_plan_destroy(plan);
  g.method = (fmmcl_method)(FMMCL_CUTOFF + 1);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &g, 100, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_test_rmtree(dir);
  free(dir);
  free(x);
}
END_TEST

/* ---- hybrid schedules ----------------------------------------------------- */

/* Two contexts on the test device stand in for the GPU and the CPU. Every
 * schedule sums the same operators over the same tree, so it equals the
 * single-device plan to rounding (float: a few 1e-7; bound 1e-5), and the
 * FMM's own error against the direct sum (p = 5: well under 1e-3). */
START_TEST(test_schedules_match_single_device) {
  fmmcl_context b = fmmcl_test_context();
  ck_assert_ptr_nonnull(b);
  const size_t N = 3000;
  double *x = malloc(3 * N * sizeof *x), *q = malloc(N * sizeof *q);
  double *ref = malloc(N * sizeof *ref), *ref_g = malloc(3 * N * sizeof *ref_g);
  double *pot = malloc(N * sizeof *pot), *grad = malloc(3 * N * sizeof *grad);
  double *direct = malloc(N * sizeof *direct);
  /* half the points in a small corner cube: an adaptive tree with W and X
   * lists, so that every list is split between the devices */
  fmmcl_test_random_points(11, N, 3, x);
  for (size_t i = 0; i < 3 * N / 2; i++) x[i] *= 0.05;
  fmmcl_test_random_values(12, N, -1, 1, q);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM, o.order = 5, o.leaf_size = 48;
  fmmcl_plan single;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &single), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(single, q, ref, ref_g), FMMCL_SUCCESS);
  double w_work, x_work;
  ck_assert_int_eq(fmmcl_plan_counts(single, "m2p", &w_work), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_counts(single, "p2l", &x_work), FMMCL_SUCCESS);
  ck_assert_msg(w_work > 0 && x_work > 0, "W %g, X %g: the input is not adaptive enough", w_work, x_work);
  fmmcl_plan_destroy(single);
  ck_assert_int_eq(fmmcl_reference_direct(&o, N, x, q, 0, NULL, direct, NULL), FMMCL_SUCCESS);
  const double fmm_err = fmmcl_test_rel_l2(ref, direct, N);
  ck_assert_msg(fmm_err < 1e-3, "single-device FMM error %g", fmm_err);
  setenv("FMMCL_MODEL_FILE", "/nonexistent/fmmcl.model", 1); /* no model: W stays far */
  /* gpu, cpu, then each hybrid with W and X in all four placements */
  for (int variant = 0; variant < 2 + 2 * 4; variant++) {
    const int sch = variant < 2         ? FMMCL_SCHEDULE_GPU + variant
                    : (variant - 2) / 4 ? FMMCL_SCHEDULE_HYBRID2
                                        : FMMCL_SCHEDULE_HYBRID1;
    const int w_near = variant >= 2 && ((variant - 2) & 1), x_near = variant >= 2 && ((variant - 2) & 2);
    fmmcl_plan plan;
    ck_assert_int_eq(fmmcl_plan_create_hybrid(ctx, b, &o, N, x, 0, NULL, (fmmcl_schedule)sch, &plan),
                     FMMCL_SUCCESS);
    /* two devices share one tree: the second sub-plan borrows the first's */
    int shared = -1;
    ck_assert_int_eq(fmmcl_hybrid_tree_shared(plan, &shared), FMMCL_SUCCESS);
    ck_assert_int_eq(shared, sch >= FMMCL_SCHEDULE_HYBRID1);
    int wn = -1, xn = -1;
    ck_assert_int_eq(fmmcl_hybrid_w_near(plan, &wn), FMMCL_SUCCESS);
    ck_assert_int_eq(fmmcl_hybrid_x_near(plan, &xn), FMMCL_SUCCESS);
    ck_assert_int_eq(wn, 0);
    ck_assert_int_eq(xn, 0);
    ck_assert_int_eq(fmmcl_hybrid_place_w(plan, w_near), FMMCL_SUCCESS);
    ck_assert_int_eq(fmmcl_hybrid_place_x(plan, x_near), FMMCL_SUCCESS);
    fmmcl_schedule got;
    ck_assert_int_eq(fmmcl_plan_schedule(plan, &got), FMMCL_SUCCESS);
    ck_assert_int_eq(got, sch);
    for (int rep = 0; rep < 2; rep++) { /* executes again with the same plan */
      memset(pot, 0, N * sizeof *pot);
      ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, grad), FMMCL_SUCCESS);
      const double e = fmmcl_test_rel_l2(pot, ref, N), eg = fmmcl_test_rel_l2(grad, ref_g, 3 * N);
      ck_assert_msg(e < 1e-5 && eg < 1e-5, "schedule %s%s%s: potential %g, gradient %g from single device",
                    fmmcl_schedule_name((fmmcl_schedule)sch), w_near ? " (W near)" : "",
                    x_near ? " (X near)" : "", e, eg);
    }
    /* each device's phases are reported, and the work adds up */
    fmmcl_phase_time t[FMMCL_MAX_PHASES_TEST];
    size_t n_t;
    ck_assert_int_eq(fmmcl_plan_timings(plan, t, FMMCL_MAX_PHASES_TEST, &n_t), FMMCL_SUCCESS);
    int near = 0, far = 0, w_dev = 0, x_dev = 0;
    for (size_t i = 0; i < n_t; i++) {
      near |= strcmp(t[i].name + 1, ":p2p") == 0 ? 1 << (t[i].name[0] - 'a') : 0;
      far |= strcmp(t[i].name + 1, ":m2l") == 0 ? 1 << (t[i].name[0] - 'a') : 0;
      w_dev |= strcmp(t[i].name + 1, ":m2p") == 0 ? 1 << (t[i].name[0] - 'a') : 0;
      x_dev |= strcmp(t[i].name + 1, ":p2l") == 0 ? 1 << (t[i].name[0] - 'a') : 0;
    }
    const int want_near = sch == FMMCL_SCHEDULE_GPU || sch == FMMCL_SCHEDULE_HYBRID1 ? 1 : 2;
    const int want_far = sch == FMMCL_SCHEDULE_GPU || sch == FMMCL_SCHEDULE_HYBRID2 ? 1 : 2;
    ck_assert_int_eq(near, want_near);
    ck_assert_int_eq(far, want_far);
    ck_assert_int_eq(w_dev, w_near ? want_near : want_far);
    ck_assert_int_eq(x_dev, x_near ? want_near : want_far);
    double w;
    ck_assert_int_eq(fmmcl_plan_counts(plan, "p2p", &w), FMMCL_SUCCESS);
    ck_assert(w > 0);
    ck_assert_int_eq(fmmcl_plan_counts(plan, "m2l", &w), FMMCL_SUCCESS);
    ck_assert(w > 0);
    ck_assert_int_eq(fmmcl_plan_counts(plan, "m2p", &w), FMMCL_SUCCESS);
    ck_assert(w == w_work);
    fmmcl_plan_destroy(plan);
  }
  unsetenv("FMMCL_MODEL_FILE");
  free(x), free(q), free(ref), free(ref_g), free(pot), free(grad), free(direct);
  fmmcl_context_destroy(b);
}
END_TEST

START_TEST(test_schedule_auto_and_errors) {
  const size_t N = 500;
  double *x = malloc(3 * N * sizeof *x);
  fmmcl_test_random_points(13, N, 3, x);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM, o.order = 3;
  fmmcl_plan plan;
  fmmcl_schedule got;
  /* no model of the devices: auto runs everything on the first */
  setenv("FMMCL_MODEL_FILE", "/nonexistent/fmmcl.model", 1);
  ck_assert_int_eq(fmmcl_plan_create_hybrid(ctx, NULL, &o, N, x, 0, NULL, FMMCL_SCHEDULE_AUTO, &plan),
                   FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_schedule(plan, &got), FMMCL_SUCCESS);
  ck_assert_int_eq(got, FMMCL_SCHEDULE_GPU);
  fmmcl_plan_destroy(plan);
  unsetenv("FMMCL_MODEL_FILE");
  ck_assert_int_eq(fmmcl_plan_create_hybrid(ctx, NULL, &o, N, x, 0, NULL, FMMCL_SCHEDULE_HYBRID1, &plan),
                   FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_create_hybrid(ctx, ctx, &o, N, x, 0, NULL, (fmmcl_schedule)9, &plan),
                   FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_create_hybrid(ctx, ctx, &o, N, x, 0, NULL, FMMCL_SCHEDULE_HYBRID2, &plan),
                   FMMCL_ERROR_INVALID_ARGUMENT);
  o.method = FMMCL_DIRECT;
  ck_assert_int_eq(fmmcl_plan_create_hybrid(ctx, ctx, &o, N, x, 0, NULL, FMMCL_SCHEDULE_HYBRID1, &plan),
                   FMMCL_ERROR_UNSUPPORTED);
  o.method = FMMCL_FMM;
  x[7] = NAN;
  ck_assert_int_eq(fmmcl_plan_create_hybrid(ctx, ctx, &o, N, x, 0, NULL, FMMCL_SCHEDULE_HYBRID1, &plan),
                   FMMCL_ERROR_NONFINITE_INPUT);
  ck_assert_int_eq(fmmcl_plan_schedule(NULL, &got), FMMCL_ERROR_NULL_POINTER);
  ck_assert_str_eq(fmmcl_schedule_name(FMMCL_SCHEDULE_HYBRID2), "hybrid2");
  free(x);
}
END_TEST

/* The model's schedule times: two equal devices make a hybrid no slower
 * than one device only if the shares overlap; check the arithmetic. */
START_TEST(test_schedule_times) {
  fmmcl_model_precision a;
  memset(&a, 0, sizeof a);
  a.measured = 1, a.pairs_per_s = 1, a.bytes_per_s = 1, a.fitted = 1;
  double work[FMMCL_MODEL_NWORK] = {0};
  /* constant costs only: P2P 3 s, each far phase 1 s, transfers 0, each
   * share's overhead 0.25 s, the host sum 0.5 s */
  for (int ph = 0; ph < FMMCL_MODEL_UPLOAD; ph++) {
    work[ph] = 1;
    a.c[ph][0] = ph == FMMCL_MODEL_P2P ? 3 : 1;
  }
  work[FMMCL_MODEL_OVERHEAD] = work[FMMCL_MODEL_COMBINE] = 1;
  a.c[FMMCL_MODEL_OVERHEAD][0] = 0.25, a.c[FMMCL_MODEL_COMBINE][0] = 0.5;
  fmmcl_model_precision b = a; /* b twice as slow */
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) b.c[ph][0] *= 2;
  double t[5];
  int wn[5], xn[5];
  fmmcl_model_schedule_times(&a, &b, 4, 3, work, 10, 10, t, wn, xn);
  /* single devices: no host sum */
  ck_assert(fabs(t[FMMCL_SCHEDULE_GPU] - 10.25) < 1e-12);
  ck_assert(fabs(t[FMMCL_SCHEDULE_CPU] - 20.5) < 1e-12);
  /* hybrid1 (near on a): W and X far max(3.25, 2 * 7.25) = 14.5; W near
   * (Up there too) or X near (Down there too) max(6.25, 2 * 6.25) = 12.5;
   * both near max(9.25, 2 * 5.25) = 10.5: both move; then the host sum */
  ck_assert(fabs(t[FMMCL_SCHEDULE_HYBRID1] - 11) < 1e-12);
  ck_assert_int_eq(wn[FMMCL_SCHEDULE_HYBRID1], 1);
  ck_assert_int_eq(xn[FMMCL_SCHEDULE_HYBRID1], 1);
  /* hybrid2 (near on b): max(7.25, 2 * 3.25) = 7.25 against at least
   * 2 * 6.25 with anything moved: W and X stay */
  ck_assert(fabs(t[FMMCL_SCHEDULE_HYBRID2] - 7.75) < 1e-12);
  ck_assert_int_eq(wn[FMMCL_SCHEDULE_HYBRID2], 0);
  ck_assert_int_eq(xn[FMMCL_SCHEDULE_HYBRID2], 0);
  /* no W work: W is not moved; X alone near: max(6.25, 2 * 5.25) = 10.5 */
  work[FMMCL_MODEL_M2P] = 0;
  fmmcl_model_schedule_times(&a, &b, 4, 3, work, 10, 10, t, wn, xn);
  ck_assert_int_eq(wn[FMMCL_SCHEDULE_HYBRID1], 0);
  ck_assert_int_eq(xn[FMMCL_SCHEDULE_HYBRID1], 1);
  ck_assert(fabs(t[FMMCL_SCHEDULE_HYBRID1] - 11) < 1e-12);
}
END_TEST

/* fmmcl --schedule: a hybrid run from the command line, checked there
 * against the double-precision host reference. */
START_TEST(test_cli_schedule) {
  const char *sel = getenv("FMMCL_TEST_DEVICE");
  if (!sel || !*sel) sel = "cpu";
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "FMMCL_MODEL_FILE=/nonexistent/fmmcl.model '%s/fmmcl' --demo 2000 --device '%s' --device2 '%s' "
           "--schedule hybrid2 --order 4 --leaf 32 --check 100 2>&1",
           FMMCL_BIN_DIR, sel, sel);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char line[512];
  double err = -1;
  int saw_far_on_a = 0;
  while (fgets(line, sizeof line, p)) {
    sscanf(line, " relative L2 error (potential): %lf", &err);
    saw_far_on_a |= strstr(line, "a:m2l") != NULL;
  }
  ck_assert_int_eq(pclose(p), 0);
  ck_assert_msg(err >= 0 && err < 1e-3, "relative error %g", err);
  ck_assert(saw_far_on_a); /* hybrid2: the far field on the first device */
  snprintf(cmd, sizeof cmd, "'%s/fmmcl' --demo 100 --schedule sometimes >/dev/null 2>&1", FMMCL_BIN_DIR);
  ck_assert_int_ne(system(cmd), 0);
}
END_TEST

static Suite *model_suite(void) {
  Suite *s = suite_create("model");
  TCase *bench = tcase_create("peaks and file");
  tcase_add_checked_fixture(bench, setup, teardown);
  tcase_add_test(bench, test_measure_peaks);
  tcase_add_test(bench, test_model_file_roundtrip);
  tcase_add_test(bench, test_model_file_corrupt);
  tcase_add_test(bench, test_fmmtune_model);
  suite_add_tcase(s, bench);
  TCase *fit = tcase_create("fit and predictions");
  tcase_add_checked_fixture(fit, setup, teardown);
  tcase_add_test(fit, test_fit_recovers_and_reproduces);
  tcase_add_test(fit, test_fit_nonnegative);
  tcase_add_test(fit, test_samples_csv_roundtrip);
  tcase_add_test(fit, test_sweep_budget);
  tcase_add_test(fit, test_fit_on_device);
  tcase_add_test(fit, test_fit_predicts_held_out);
  tcase_add_test(fit, test_counts_match_plan);
  tcase_add_test(fit, test_choose_method);
  suite_add_tcase(s, fit);
  TCase *hyb = tcase_create("hybrid schedules");
  tcase_add_checked_fixture(hyb, setup, teardown);
  tcase_add_test(hyb, test_schedules_match_single_device);
  tcase_add_test(hyb, test_schedule_auto_and_errors);
  tcase_add_test(hyb, test_schedule_times);
  tcase_add_test(hyb, test_cli_schedule);
  suite_add_tcase(s, hyb);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(model_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
