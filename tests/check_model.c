/* check_model.c — Check suite of the performance model and hybrid
 * scheduling (issue 8): microbenchmarks, the model file, the fit and its
 * predictions, and every schedule against single-device execution. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "test_util.h"

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

static Suite *model_suite(void) {
  Suite *s = suite_create("model");
  TCase *bench = tcase_create("peaks and file");
  tcase_add_checked_fixture(bench, setup, teardown);
  tcase_add_test(bench, test_measure_peaks);
  tcase_add_test(bench, test_model_file_roundtrip);
  tcase_add_test(bench, test_model_file_corrupt);
  tcase_add_test(bench, test_fmmtune_model);
  suite_add_tcase(s, bench);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(model_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
