/* check_tuning.c — tests of the tuning cache and fmmtune: the spaces and
 * defaults, the file format, a tiny tuning run whose entry a plan then
 * builds with, corrupt/truncated/foreign files, and concurrent writers. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tuner/tune.h"
#include "test_util.h"
#include "tuning/tuning.h"

#ifndef FMMCL_TUNER_BIN
#error "FMMCL_TUNER_BIN (the built fmmtune) must be defined"
#endif

static fmmcl_context ctx;
static fmmcl_device_info dev;
static char *tmp;
static char cache_path[4096];

static void setup(void) {
  ctx = fmmcl_test_context();
  ck_assert_msg(ctx != NULL, "no OpenCL device: %s", fmmcl_last_error(NULL));
  fmmcl_context_device(ctx, &dev);
  tmp = fmmcl_test_tempdir("tuning");
  ck_assert_ptr_nonnull(tmp);
  snprintf(cache_path, sizeof cache_path, "%s/tuning.txt", tmp);
  setenv("FMMCL_TUNING_FILE", cache_path, 1);
  unsetenv("FMMCL_NO_TUNING");
  /* binaries of odd parameter sets are not worth caching, and on PoCL
   * producing one compiles every kernel of the file */
  setenv("FMMCL_NO_CACHE", "1", 1);
}

static void teardown(void) {
  fmmcl_context_destroy(ctx);
  fmmcl_test_rmtree(tmp);
  free(tmp);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

/* A tuning file holding this device's section with the given entry lines. */
static void write_cache(const char *entries) {
  char device[1024], text[8192];
  fmmcl_tuning_format_device(&dev, device, sizeof device);
  snprintf(text, sizeof text, "%s\n%s\n%s", FMMCL_TUNING_MAGIC, device, entries);
  write_text(cache_path, text);
}

/* The build options of a small DIRECT plan of kernel in dim dimensions. */
static void plan_options(fmmcl_kernel kernel, int dim, char *buf, size_t len) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, kernel);
  o.dim = dim;
  double x[100 * FMMCL_MAX_DIM];
  fmmcl_test_random_points(7, 100, dim, x);
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, 100, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  fmmcl_plan_build_options(plan, buf, len);
  fmmcl_plan_destroy(plan);
}

/* The build options of a small FMM plan (float, order p, leaf 64). */
static void fmm_plan_options(int order, char *buf, size_t len) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM, o.order = order, o.leaf_size = 64;
  double x[3 * 1000];
  fmmcl_test_random_points(8, 1000, 3, x);
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, 1000, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  fmmcl_plan_build_options(plan, buf, len);
  fmmcl_plan_destroy(plan);
}

/* Every "-DNAME=value" token of defines appears in options. */
static int has_all(const char *options, const char *defines) {
  char copy[256];
  snprintf(copy, sizeof copy, "%s", defines);
  for (char *save = NULL, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    char padded[80];
    snprintf(padded, sizeof padded, " %s ", t);
    char opts[1200];
    snprintf(opts, sizeof opts, " %s ", options);
    if (!strstr(opts, padded)) return 0;
  }
  return 1;
}

static void notes(char *buf, size_t len) { fmmcl_tuning_notes(&dev, buf, len); }

/* Runs fmmtune with args on the test device; returns its exit status. */
static pid_t spawn_tuner(const char *const *args) {
  char device[32];
  snprintf(device, sizeof device, "%d:%d", dev.platform_index, dev.device_index);
  const char *argv[32] = {FMMCL_TUNER_BIN, "--device", device, "--quiet"};
  int n = 4;
  for (int i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout)) _exit(126);
    execv(FMMCL_TUNER_BIN, (char *const *)argv);
    _exit(127);
  }
  return pid;
}

static int wait_status(pid_t pid) {
  int status;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run_tuner(const char *const *args) { return wait_status(spawn_tuner(args)); }

/* A tiny budget still measures the default and one candidate. */
static const char *const laplace_job[] = {"--kernel", "p2p_laplace3d", "--precision", "single",    "--budget",
                                          "1",        "--n",           "2048",        "--repeats", "3",
                                          NULL};
static const char *const gaussian_job[] = {
    "--kernel", "p2p_gaussian", "--precision", "single",    "--class", "dim2", "--budget",
    "1",        "--n",          "1024",        "--repeats", "3",       NULL};

static size_t entries(fmmcl_tuning_entry *out, size_t cap) {
  size_t n = 0;
  ck_assert_int_eq(fmmcl_tuning_entries(&dev, out, cap, &n), FMMCL_SUCCESS);
  return n;
}

static const fmmcl_tuning_entry *find(const fmmcl_tuning_entry *e, size_t n, const char *kernel,
                                      const char *cls) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(e[i].kernel, kernel) && !strcmp(e[i].problem_class, cls)) return &e[i];
  return NULL;
}

/* ---- spaces, defaults, format ----------------------------------------------- */

/* Each class a space's fmmtune tunes in precision prec, or NULL when none. */
static const char *tuned_classes(const fmmcl_tuning_space *s, fmmcl_precision prec) {
  return prec == FMMCL_DOUBLE && s->tune_classes_double ? s->tune_classes_double : s->tune_classes;
}

START_TEST(test_defaults_are_points_of_their_space) {
  /* each vendor class's default must be a candidate, or fmmtune could not
   * time its baseline and a cached default would be refused */
  const fmmcl_vendor vendors[] = {FMMCL_VENDOR_NVIDIA, FMMCL_VENDOR_AMD, FMMCL_VENDOR_INTEL,
                                  FMMCL_VENDOR_POCL, FMMCL_VENDOR_OTHER};
  for (size_t k = 0; k < fmmcl_tuning_space_count(); k++) {
    const fmmcl_tuning_space *s = fmmcl_tuning_space_at(k);
    ck_assert_ptr_eq(fmmcl_tuning_space_find(s->kernel), s);
    /* every candidate list ends, and ascends */
    for (size_t i = 0; i < fmmcl_tuning_space_nparams(s); i++) {
      const fmmcl_tuning_param *p = &s->params[i];
      const size_t n = fmmcl_tuning_param_count(p);
      ck_assert_msg(n > 0 && n <= FMMCL_TUNE_MAX_VALUES && p->values[n] == FMMCL_TUNE_END, "%s %s", s->kernel,
                    p->name);
      for (size_t j = 1; j < n; j++)
        ck_assert_msg(p->values[j - 1] < p->values[j], "%s %s", s->kernel, p->name);
    }
    for (size_t v = 0; v < 5; v++)
      for (int gpu = 0; gpu < 4; gpu++) {
        fmmcl_device_info d = dev;
        d.vendor = vendors[v];
        d.is_gpu = gpu & 1;
        const fmmcl_precision prec = gpu & 2 ? FMMCL_DOUBLE : FMMCL_SINGLE;
        char def[256], why[160], classes[256];
        fmmcl_tuning_point pt;
        ck_assert_msg(fmmcl_tuning_default(s->kernel, prec, NULL, &d, def, sizeof def), "%s", s->kernel);
        ck_assert_msg(fmmcl_tuning_point_parse(s, def, &pt, why, sizeof why), "%s: %s", def, why);
        /* and moved to each class fmmtune tunes, still a point */
        snprintf(classes, sizeof classes, "%s", tuned_classes(s, prec));
        for (char *save = NULL, *c = strtok_r(classes, " ", &save); c; c = strtok_r(NULL, " ", &save)) {
          ck_assert_msg(fmmcl_tuning_default(s->kernel, prec, c, &d, def, sizeof def), "%s %s", s->kernel, c);
          ck_assert_msg(fmmcl_tuning_point_parse(s, def, &pt, why, sizeof why), "%s %s %s: %s", s->kernel, c,
                        def, why);
        }
      }
    /* and each class's default (a space may move it per class) fits the
     * test device for every class fmmtune tunes */
    for (int dbl = 0; dbl < 1 + dev.has_fp64; dbl++) {
      const fmmcl_precision prec = dbl ? FMMCL_DOUBLE : FMMCL_SINGLE;
      char def[256], why[160], classes[256];
      fmmcl_tuning_point pt;
      snprintf(classes, sizeof classes, "%s", tuned_classes(s, prec));
      for (char *save = NULL, *c = strtok_r(classes, " ", &save); c; c = strtok_r(NULL, " ", &save)) {
        fmmcl_tuning_class cls;
        ck_assert_msg(fmmcl_tuning_class_parse(s, c, &cls), "%s %s", s->kernel, c);
        ck_assert(fmmcl_tuning_default(s->kernel, prec, c, &dev, def, sizeof def));
        ck_assert_msg(fmmcl_tuning_point_parse(s, def, &pt, why, sizeof why), "%s %s: %s", s->kernel, c, why);
        ck_assert_msg(fmmcl_tuning_point_fits(s, &pt, &cls, prec, &dev, why, sizeof why), "%s %s: %s",
                      s->kernel, c, why);
      }
    }
    /* fmmtune either times it through a plan phase or says why not */
    ck_assert_msg(s->phase || s->timing_note, "%s", s->kernel);
  }
}
END_TEST

/* Found and not found are answers, not statuses. */
START_TEST(test_default_lookup_found_or_not) {
  char buf[256] = "x";
  ck_assert_int_eq(fmmcl_tuning_default("no_such_kernel", FMMCL_SINGLE, NULL, &dev, buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "");
  ck_assert_int_eq(fmmcl_tuning_default("p2p_laplace3d", FMMCL_SINGLE, "dim3", &dev, buf, sizeof buf), 1);
  ck_assert_ptr_nonnull(strstr(buf, "-DWGS="));
  /* the class rules: m2l2d unrolls the whole row, P + 1 */
  ck_assert_int_eq(fmmcl_tuning_default("m2l2d", FMMCL_SINGLE, "p12", &dev, buf, sizeof buf), 1);
  ck_assert_msg(strstr(buf, "-DUNROLL=13"), "%s", buf);
  /* a class the space lacks: the table's row as it stands */
  ck_assert_int_eq(fmmcl_tuning_default("m2l2d", FMMCL_SINGLE, "dim3", &dev, buf, sizeof buf), 1);
}
END_TEST

/* Every family a driver looks up (they all go through fmmcl_tuned_params)
 * has a space and a default on this device, for a class it tunes. */
START_TEST(test_every_driver_kernel_has_a_space) {
  for (int k = 0; k < FMMCL_TUNED_COUNT; k++) {
    const char *name = fmmcl_tuned_kernel_name((fmmcl_tuned_kernel)k);
    ck_assert_ptr_nonnull(name);
    const fmmcl_tuning_space *s = fmmcl_tuning_space_find(name);
    ck_assert_msg(s != NULL, "%s has no tuning space", name);
    const fmmcl_precision prec = s->tune_classes[0] ? FMMCL_SINGLE : FMMCL_DOUBLE;
    char cls[64], def[256], got[256];
    snprintf(cls, sizeof cls, "%s", tuned_classes(s, prec));
    cls[strcspn(cls, " ")] = '\0';
    fmmcl_params par;
    ck_assert_msg(fmmcl_tuned_params(ctx, (fmmcl_tuned_kernel)k, prec, cls, &par) == FMMCL_SUCCESS, "%s: %s",
                  name, fmmcl_last_error(ctx));
    ck_assert_msg(par.n > 0, "%s", name);
    /* no cache entry here: the default, less what the compiler never sees */
    ck_assert(fmmcl_tuning_default(name, prec, cls, &dev, def, sizeof def));
    fmmcl_params_defines(&par, got, sizeof got);
    ck_assert_msg(has_all(def, got), "%s: %s vs %s", name, got, def);
  }
  ck_assert_ptr_null(fmmcl_tuned_kernel_name(FMMCL_TUNED_COUNT));
}
END_TEST

/* One parse gives both the compiler's string and the host's values. */
START_TEST(test_params_object) {
  const fmmcl_tuning_space *m2l = fmmcl_tuning_space_find("m2l2d");
  ck_assert_ptr_nonnull(m2l);
  fmmcl_params p;
  char why[160], buf[256];
  ck_assert(fmmcl_params_parse(m2l,
                               "-DWGS=128 -DTPW=0 -DUNROLL=9 -DM2L_COEF=1 -DM2L_FUSED=2 M2L_SHARE_W=1 "
                               "-DM2L_TILE=8",
                               &p, why, sizeof why));
  /* TPW 0: the driver's to size; M2L_FUSED: the host's alone */
  ck_assert(!fmmcl_params_has(&p, "TPW"));
  ck_assert_int_eq(fmmcl_params_get(&p, "TPW", -1), -1);
  ck_assert_int_eq(fmmcl_params_get(&p, "M2L_FUSED", 0), 2);
  fmmcl_params_defines(&p, buf, sizeof buf);
  ck_assert_str_eq(buf, "-DWGS=128 -DUNROLL=9 -DM2L_COEF=1 -DM2L_SHARE_W=1 -DM2L_TILE=8");
  /* set: in place where set, appended where not */
  fmmcl_params_set(&p, "M2L_TILE", 0);
  fmmcl_params_set(&p, "TPW", 6);
  fmmcl_params_set(&p, "M2L_FUSED", 1);
  fmmcl_params_defines(&p, buf, sizeof buf);
  ck_assert_str_eq(buf, "-DWGS=128 -DUNROLL=9 -DM2L_COEF=1 -DM2L_SHARE_W=1 -DM2L_TILE=0 -DTPW=6");
  fmmcl_params_format(&p, buf, sizeof buf);
  ck_assert_str_eq(buf, "WGS=128 UNROLL=9 M2L_COEF=1 M2L_FUSED=1 M2L_SHARE_W=1 M2L_TILE=0 TPW=6");
  /* no space: every value is the compiler's */
  ck_assert(fmmcl_params_parse(NULL, "-DA=1 B=-2", &p, why, sizeof why));
  fmmcl_params_defines(&p, buf, sizeof buf);
  ck_assert_str_eq(buf, "-DA=1 -DB=-2");
  const char *bad[] = {"WGS", "-DWGS=", "WGS=abc", "=4", "WGS=1.5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_msg(!fmmcl_params_parse(m2l, bad[i], &p, why, sizeof why) && why[0], "%s", bad[i]);
  /* no kernel reads M2L_FUSED, so no kernel build sees it */
  char opts[1024];
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_2D);
  o.method = FMMCL_FMM;
  double x[2 * 2000];
  fmmcl_test_random_points(9, 2000, 2, x);
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, 2000, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  fmmcl_plan_build_options(plan, opts, sizeof opts);
  fmmcl_plan_destroy(plan);
  ck_assert_msg(!strstr(opts, "M2L_FUSED") && strstr(opts, "-DUNROLL="), "%s", opts);
}
END_TEST

/* The public override: a point of the kernel's space, used by every later
 * plan on the context; anything else refused, naming what is wrong. */
START_TEST(test_override_accepted_and_refused) {
  char opts[1024], def[256];
  ck_assert_int_eq(fmmcl_tuning_override(ctx, "p2p_laplace3d", "WGS=32 TPW=2 UNROLL=8"), FMMCL_SUCCESS);
  plan_options(FMMCL_LAPLACE_3D, 3, opts, sizeof opts);
  ck_assert_msg(has_all(opts, "-DWGS=32 -DTPW=2 -DUNROLL=8"), "%s", opts);
  /* any order, -D allowed */
  ck_assert_int_eq(fmmcl_tuning_override(ctx, "p2p_laplace3d", "-DUNROLL=2 TPW=1 WGS=64"), FMMCL_SUCCESS);
  plan_options(FMMCL_LAPLACE_3D, 3, opts, sizeof opts);
  ck_assert_msg(has_all(opts, "-DWGS=64 -DTPW=1 -DUNROLL=2"), "%s", opts);
  struct {
    const char *kernel, *params, *named;
  } bad[] = {
      {"p2p_laplace3d", "WGS=48 TPW=2 UNROLL=8", "WGS=48"},
      {"p2p_laplace3d", "WGS=64 TPW=2", "UNROLL"},
      {"p2p_laplace3d", "WGS=64 TPW=2 UNROLL=4 VEC=4", "VEC"},
      {"p2p_laplace3d", "WGS=64 TPW=2 UNROLL=4 WGS=64", "WGS"},
      {"p2p_laplace3d", "WGS=64 TPW=2 UNROLL=x", "UNROLL=x"},
      {"m2l2d", "WGS=128 TPW=0 UNROLL=99 M2L_COEF=1 M2L_FUSED=2 M2L_SHARE_W=1 M2L_TILE=8", "UNROLL=99"},
      {"no_such_kernel", "WGS=64", "no_such_kernel"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(fmmcl_tuning_override(ctx, bad[i].kernel, bad[i].params), FMMCL_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(fmmcl_last_error(ctx), bad[i].named), "%s -> %s", bad[i].params,
                  fmmcl_last_error(ctx));
  }
  ck_assert_int_eq(fmmcl_tuning_override(NULL, "p2p_laplace3d", NULL), FMMCL_ERROR_NULL_POINTER);
  /* a refused override leaves the last good one */
  plan_options(FMMCL_LAPLACE_3D, 3, opts, sizeof opts);
  ck_assert_msg(has_all(opts, "-DWGS=64 -DTPW=1 -DUNROLL=2"), "%s", opts);
  /* NULL removes it: the default again */
  ck_assert_int_eq(fmmcl_tuning_override(ctx, "p2p_laplace3d", NULL), FMMCL_SUCCESS);
  fmmcl_tuning_default("p2p_laplace3d", FMMCL_SINGLE, "dim3", &dev, def, sizeof def);
  plan_options(FMMCL_LAPLACE_3D, 3, opts, sizeof opts);
  ck_assert_msg(has_all(opts, def), "%s vs %s", opts, def);
  /* a host-only value is accepted, and still never reaches the compiler */
  ck_assert_int_eq(fmmcl_tuning_override(ctx, "m2l2d",
                                         "WGS=64 TPW=4 UNROLL=9 M2L_COEF=0 M2L_FUSED=0 "
                                         "M2L_SHARE_W=0 M2L_TILE=0 M2L_SEPARATE_TPW=8"),
                   FMMCL_SUCCESS);
  fmmcl_params par;
  ck_assert_int_eq(fmmcl_tuned_params(ctx, FMMCL_TUNED_M2L2D, FMMCL_SINGLE, "p8", &par), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_params_get(&par, "M2L_FUSED", -1), 0);
  ck_assert_int_eq(fmmcl_params_get(&par, "M2L_SEPARATE_TPW", -1), 8);
  fmmcl_params_defines(&par, def, sizeof def);
  ck_assert_str_eq(def, "-DWGS=64 -DTPW=4 -DUNROLL=9 -DM2L_COEF=0 -DM2L_SHARE_W=0 -DM2L_TILE=0");
}
END_TEST

START_TEST(test_entry_line_round_trip) {
  fmmcl_tuning_entry e = {.precision = FMMCL_DOUBLE, .time_ms = 1.25, .default_ms = 2.5, .n = 131072};
  snprintf(e.kernel, sizeof e.kernel, "p2p_gaussian");
  snprintf(e.problem_class, sizeof e.problem_class, "dim4");
  snprintf(e.defines, sizeof e.defines, "-DWGS=256 -DTPW=2 -DUNROLL=8");
  snprintf(e.date, sizeof e.date, "2026-11-22T18:00:00Z");
  char line[1024];
  fmmcl_tuning_format_entry(&e, line, sizeof line);
  ck_assert_ptr_null(strstr(line, "-D")); /* the file shows plain NAME=value */
  fmmcl_tuning_entry r;
  ck_assert_int_eq(fmmcl_tuning_parse_line(line, &dev, NULL, &r), FMMCL_TUNING_LINE_ENTRY);
  ck_assert_str_eq(r.kernel, e.kernel);
  ck_assert_int_eq(r.precision, e.precision);
  ck_assert_str_eq(r.problem_class, e.problem_class);
  ck_assert_str_eq(r.defines, e.defines);
  ck_assert(r.time_ms == 1.25 && r.default_ms == 2.5 && r.n == 131072);
  ck_assert_str_eq(r.date, e.date);
  /* a device line names this device; another's does not */
  char dl[1024];
  int same = 0;
  fmmcl_tuning_format_device(&dev, dl, sizeof dl);
  ck_assert_int_eq(fmmcl_tuning_parse_line(dl, &dev, &same, NULL), FMMCL_TUNING_LINE_DEVICE);
  ck_assert(same);
  ck_assert_int_eq(fmmcl_tuning_parse_line("device: vendor=X ; name=Y ; driver=Z", &dev, &same, NULL),
                   FMMCL_TUNING_LINE_DEVICE);
  ck_assert(!same);
  const char *garbled[] = {
      "p2p_laplace3d single : WGS=64", "p2p_laplace3d half dim3 : WGS=64",
      "p2p_laplace3d single dim3 :",   "p2p_laplace3d single dim3 : WGS=64 ; time_ms=abc",
      "device: vendor=X ; name=Y",     "\x01\x02\xff garbage"};
  for (size_t i = 0; i < sizeof garbled / sizeof garbled[0]; i++)
    ck_assert_msg(fmmcl_tuning_parse_line(garbled[i], &dev, &same, &r) == FMMCL_TUNING_LINE_GARBLED, "%s",
                  garbled[i]);
  ck_assert_int_eq(fmmcl_tuning_parse_line("  # a comment", &dev, NULL, NULL), FMMCL_TUNING_LINE_BLANK);
}
END_TEST

START_TEST(test_default_path_per_device) {
  unsetenv("FMMCL_TUNING_FILE");
  setenv("XDG_CACHE_HOME", tmp, 1);
  char path[4096], prefix[4200];
  ck_assert_int_eq(fmmcl_tuning_file_path(&dev, path, sizeof path), FMMCL_SUCCESS);
  snprintf(prefix, sizeof prefix, "%s/fmmcl/tuning/", tmp);
  ck_assert_msg(strncmp(path, prefix, strlen(prefix)) == 0, "%s", path);
  for (const char *p = path + strlen(prefix); *p; p++)
    ck_assert_msg(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *p), "%s",
                  path);
  ck_assert(strstr(path, "__") && strstr(path, ".txt"));
  setenv("FMMCL_TUNING_FILE", "/elsewhere/t.txt", 1);
  ck_assert_int_eq(fmmcl_tuning_file_path(&dev, path, sizeof path), FMMCL_SUCCESS);
  ck_assert_str_eq(path, "/elsewhere/t.txt");
}
END_TEST

/* ---- the library reads the cache -------------------------------------------- */

START_TEST(test_plan_builds_with_cached_values) {
  write_cache(
      "p2p_laplace3d single dim3 : WGS=32 TPW=2 UNROLL=8 ; time_ms=1 ; default_ms=2 ; n=8192 ; date=x\n"
      "p2p_gaussian single dim2 : UNROLL=1 TPW=8 WGS=32\n");
  char opts[1024], n[1024];
  plan_options(FMMCL_LAPLACE_3D, 3, opts, sizeof opts);
  ck_assert_msg(has_all(opts, "-DWGS=32 -DTPW=2 -DUNROLL=8"), "%s", opts);
  plan_options(FMMCL_GAUSSIAN, 2, opts, sizeof opts);
  ck_assert_msg(has_all(opts, "-DWGS=32 -DTPW=8 -DUNROLL=1"), "%s", opts);
  notes(n, sizeof n);
  ck_assert_str_eq(n, "");
  /* no entry for dim3: the default */
  char def[256];
  fmmcl_tuning_default("p2p_gaussian", FMMCL_SINGLE, "dim3", &dev, def, sizeof def);
  plan_options(FMMCL_GAUSSIAN, 3, opts, sizeof opts);
  ck_assert_msg(has_all(opts, def), "%s", opts);
  /* FMMCL_NO_TUNING=1 ignores the cache, and says so */
  setenv("FMMCL_NO_TUNING", "1", 1);
  fmmcl_tuning_default("p2p_laplace3d", FMMCL_SINGLE, "dim3", &dev, def, sizeof def);
  plan_options(FMMCL_LAPLACE_3D, 3, opts, sizeof opts);
  ck_assert_msg(has_all(opts, def), "%s", opts);
  notes(n, sizeof n);
  ck_assert_ptr_nonnull(strstr(n, "FMMCL_NO_TUNING"));
}
END_TEST

/* The default Laplace options, and the notes after building a plan. */
static void expect_default(char *n, size_t len) {
  char opts[1024], def[256];
  fmmcl_tuning_default("p2p_laplace3d", FMMCL_SINGLE, "dim3", &dev, def, sizeof def);
  plan_options(FMMCL_LAPLACE_3D, 3, opts, sizeof opts);
  ck_assert_msg(has_all(opts, def), "%s", opts);
  notes(n, len);
}

START_TEST(test_invalid_entries_are_ignored_with_a_note) {
  const char *bad[] = {
      "p2p_laplace3d single dim3 : WGS=48 TPW=2 UNROLL=8\n",        /* not a candidate */
      "p2p_laplace3d single dim3 : WGS=64 TPW=2\n",                 /* a parameter missing */
      "p2p_laplace3d single dim3 : WGS=64 TPW=2 UNROLL=4 VEC=4\n",  /* not a parameter */
      "p2p_laplace3d single dim3 : WGS=64 WGS=64 TPW=2 UNROLL=4\n", /* twice */
      "p2p_laplace3d single dim3 : WGS=64 TPW=2 UNROLL=4 -O3\n",    /* not NAME=value */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_cache(bad[i]);
    char n[1024];
    expect_default(n, sizeof n);
    ck_assert_msg(strstr(n, "entry p2p_laplace3d single dim3 ignored"), "%s -> %s", bad[i], n);
    fmmcl_tuning_entry e[4];
    ck_assert_uint_eq(entries(e, 4), 1);
    ck_assert(!e[0].usable && e[0].note[0]);
  }
  /* a point that does not fit the device: more local memory than it has */
  fmmcl_device_info small = dev;
  small.local_mem_bytes = 1024;
  fmmcl_tuning_entry e = {.precision = FMMCL_SINGLE};
  snprintf(e.kernel, sizeof e.kernel, "p2p_laplace3d");
  snprintf(e.problem_class, sizeof e.problem_class, "dim3");
  snprintf(e.defines, sizeof e.defines, "-DWGS=256 -DTPW=1 -DUNROLL=4");
  ck_assert(!fmmcl_tuning_entry_check(&e, &small));
  ck_assert_ptr_nonnull(strstr(e.note, "local memory"));
  /* a class the kernel does not have, and a kernel with no space */
  write_cache(
      "p2p_gaussian single dim9 : WGS=64 TPW=1 UNROLL=2\n"
      "fmm3d_p2p single dim3 : WGS=64\n");
  fmmcl_tuning_entry list[4];
  ck_assert_uint_eq(entries(list, 4), 2);
  ck_assert(!list[0].usable && !list[1].usable);
}
END_TEST

START_TEST(test_corrupt_and_truncated_files) {
  char n[1024];
  /* binary junk */
  FILE *f = fopen(cache_path, "wb");
  for (int i = 0; i < 4096; i++) fputc((i * 7919) & 0xff, f);
  fclose(f);
  expect_default(n, sizeof n);
  ck_assert_msg(strstr(n, "not a fmmcl tuning cache"), "%s", n);
  /* empty, and header only */
  write_text(cache_path, "");
  expect_default(n, sizeof n);
  write_text(cache_path, FMMCL_TUNING_MAGIC "\n");
  expect_default(n, sizeof n);
  /* cut inside the last entry: the whole lines before still count, the
   * partial one (which could read UNROLL=1 for UNROLL=16) never does */
  write_cache(
      "p2p_gaussian single dim2 : WGS=32 TPW=8 UNROLL=1\np2p_laplace3d single dim3 : WGS=32 TPW=2 UNROLL=1");
  expect_default(n, sizeof n);
  ck_assert_msg(strstr(n, "truncated"), "%s", n);
  char opts[1024];
  plan_options(FMMCL_GAUSSIAN, 2, opts, sizeof opts);
  ck_assert_msg(has_all(opts, "-DWGS=32 -DTPW=8 -DUNROLL=1"), "%s", opts);
  /* a garbled line among good ones is skipped */
  write_cache("\x01\xfe\xff junk ; ; :\np2p_laplace3d single dim3 : WGS=32 TPW=2 UNROLL=2\n");
  plan_options(FMMCL_LAPLACE_3D, 3, opts, sizeof opts);
  ck_assert_msg(has_all(opts, "-DWGS=32 -DTPW=2 -DUNROLL=2"), "%s", opts);
  notes(n, sizeof n);
  ck_assert_msg(strstr(n, "garbled"), "%s", n);
  /* a directory where the file should be: not readable as a file */
  unlink(cache_path);
  mkdir(cache_path, 0755);
  expect_default(n, sizeof n);
  rmdir(cache_path);
}
END_TEST

START_TEST(test_foreign_device_file_is_ignored) {
  char text[1024], n[1024];
  snprintf(text, sizeof text,
           "%s\ndevice: vendor=Other Corp ; name=Other GPU ; driver=1.0\n"
           "p2p_laplace3d single dim3 : WGS=32 TPW=2 UNROLL=8\n",
           FMMCL_TUNING_MAGIC);
  write_text(cache_path, text);
  expect_default(n, sizeof n);
  ck_assert_msg(strstr(n, "other devices only"), "%s", n);
  ck_assert_uint_eq(entries(NULL, 0), 0);
  /* same name, another driver: foreign too */
  snprintf(text, sizeof text,
           "%s\ndevice: vendor=%s ; name=%s ; driver=not-%s\n"
           "p2p_laplace3d single dim3 : WGS=32 TPW=2 UNROLL=8\n",
           FMMCL_TUNING_MAGIC, dev.platform_vendor, dev.device_name, dev.driver_version);
  write_text(cache_path, text);
  expect_default(n, sizeof n);
}
END_TEST

/* ---- fmmtune ------------------------------------------------------------------- */

START_TEST(test_tiny_tuning_run_writes_a_cache_plans_use) {
  ck_assert_int_eq(run_tuner(laplace_job), 0);
  FILE *f = fopen(cache_path, "r");
  ck_assert_ptr_nonnull(f);
  char line[256];
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  fclose(f);
  ck_assert(strncmp(line, FMMCL_TUNING_MAGIC, strlen(FMMCL_TUNING_MAGIC)) == 0);
  fmmcl_tuning_entry e[4];
  ck_assert_uint_eq(entries(e, 4), 1);
  ck_assert_msg(e[0].usable, "%s", e[0].note);
  ck_assert_str_eq(e[0].kernel, "p2p_laplace3d");
  ck_assert_str_eq(e[0].problem_class, "dim3");
  ck_assert_int_eq(e[0].precision, FMMCL_SINGLE);
  ck_assert(e[0].time_ms > 0 && e[0].default_ms > 0 && e[0].n == 2048 && e[0].date[0]);
  /* tuned never slower than the default it was compared with */
  ck_assert(e[0].time_ms <= e[0].default_ms);
  char opts[1024];
  plan_options(FMMCL_LAPLACE_3D, 3, opts, sizeof opts);
  ck_assert_msg(has_all(opts, e[0].defines), "%s vs %s", opts, e[0].defines);
}
END_TEST

/* The FMM's kernels tune inside a whole FMM plan, checked against the same
 * FMM with the defaults; the plans of that order then build with the entry. */
START_TEST(test_fmm_kernels_tune_and_plans_use_them) {
  const char *const job[] = {"--kernel",    "fmm3d_p2p,fmm3d_expansions",
                             "--precision", "single",
                             "--class",     "dim3,p4",
                             "--budget",    "1",
                             "--n",         "3000",
                             "--repeats",   "1",
                             NULL};
  ck_assert_int_eq(run_tuner(job), 0);
  fmmcl_tuning_entry e[4];
  const size_t n = entries(e, 4);
  ck_assert_uint_eq(n, 2);
  const fmmcl_tuning_entry *p2p = find(e, n, "fmm3d_p2p", "dim3"),
                           *exp = find(e, n, "fmm3d_expansions", "p4");
  ck_assert(p2p && exp && p2p->usable && exp->usable);
  ck_assert(p2p->time_ms <= p2p->default_ms && exp->time_ms <= exp->default_ms);
  char opts[1024];
  fmm_plan_options(4, opts, sizeof opts);
  ck_assert_msg(has_all(opts, p2p->defines) && has_all(opts, exp->defines), "%s vs %s / %s", opts,
                p2p->defines, exp->defines);
  /* an entry that cannot run (WGS below the order's coefficients) is refused */
  write_cache("fmm3d_expansions single p8 : WGS=32 M2L_BATCH=1 M2P_UNROLL_MAX=12\n");
  fmm_plan_options(8, opts, sizeof opts);
  ck_assert_msg(!has_all(opts, "-DWGS=32"), "%s", opts);
}
END_TEST

START_TEST(test_concurrent_tuners_keep_both_entries) {
  pid_t a = spawn_tuner(laplace_job), b = spawn_tuner(gaussian_job);
  ck_assert_int_eq(wait_status(a), 0);
  ck_assert_int_eq(wait_status(b), 0);
  fmmcl_tuning_entry e[4];
  size_t n = entries(e, 4);
  char notes_text[1024];
  notes(notes_text, sizeof notes_text);
  ck_assert_msg(n == 2, "%zu entries; %s", n, notes_text);
  ck_assert_str_eq(notes_text, "");
  ck_assert(find(e, n, "p2p_laplace3d", "dim3") && find(e, n, "p2p_gaussian", "dim2"));
  ck_assert(e[0].usable && e[1].usable);
  /* the same key from two writers at once: one entry, no temporary left */
  a = spawn_tuner(gaussian_job);
  b = spawn_tuner(gaussian_job);
  ck_assert_int_eq(wait_status(a), 0);
  ck_assert_int_eq(wait_status(b), 0);
  ck_assert_uint_eq(entries(e, 4), 2);
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep -q '\\.tmp\\.'", tmp);
  ck_assert_int_ne(system(cmd), 0);
}
END_TEST

/* Many writers hammering one file through the cache writer itself: with
 * the lock every read-modify-write sees the one before it, so no entry is
 * lost; without it most runs lose some. */
START_TEST(test_concurrent_writers_lose_nothing) {
  enum { WRITERS = 4, ROUNDS = 25 };
  pid_t pid[WRITERS];
  for (int w = 0; w < WRITERS; w++) {
    if ((pid[w] = fork()) == 0) {
      for (int r = 0; r < ROUNDS; r++) {
        fmmcl_tuning_entry e = {.precision = r % 2 ? FMMCL_DOUBLE : FMMCL_SINGLE, .time_ms = r + 1, .n = 1};
        snprintf(e.kernel, sizeof e.kernel, "p2p_gaussian");
        snprintf(e.problem_class, sizeof e.problem_class, "dim%d", 2 * w + 1 + (r / 2) % 2);
        snprintf(e.defines, sizeof e.defines, "-DWGS=64 -DTPW=1 -DUNROLL=2");
        char why[256];
        if (!tune_cache_store(cache_path, &dev, &e, why, sizeof why)) _exit(1);
      }
      _exit(0);
    }
  }
  for (int w = 0; w < WRITERS; w++) ck_assert_int_eq(wait_status(pid[w]), 0);
  fmmcl_tuning_entry e[64];
  /* each writer wrote 2 classes x 2 precisions */
  ck_assert_uint_eq(entries(e, 64), 4 * WRITERS);
  for (size_t i = 0; i < 4 * WRITERS; i++) ck_assert_msg(e[i].usable, "%s", e[i].note);
}
END_TEST

START_TEST(test_reset_dry_run_and_other_devices) {
  /* another device's section survives this device's writes and reset */
  char text[1024];
  snprintf(text, sizeof text,
           "%s\ndevice: vendor=Other Corp ; name=Other GPU ; driver=1.0\n"
           "p2p_laplace3d single dim3 : WGS=32 TPW=2 UNROLL=8 ; time_ms=1\n",
           FMMCL_TUNING_MAGIC);
  write_text(cache_path, text);
  const char *const dry[] = {"--dry-run", NULL};
  ck_assert_int_eq(run_tuner(dry), 0);
  ck_assert_uint_eq(entries(NULL, 0), 0); /* wrote nothing */
  ck_assert_int_eq(run_tuner(laplace_job), 0);
  ck_assert_uint_eq(entries(NULL, 0), 1);
  const char *const reset[] = {"--reset", NULL};
  ck_assert_int_eq(run_tuner(reset), 0);
  ck_assert_uint_eq(entries(NULL, 0), 0);
  char *kept = NULL;
  size_t len = 0;
  FILE *f = fopen(cache_path, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert(getdelim(&kept, &len, '\0', f) > 0);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(kept, "name=Other GPU"));
  ck_assert_ptr_nonnull(strstr(kept, "WGS=32 TPW=2 UNROLL=8"));
  free(kept);
  /* a file that is no cache is moved aside, not overwritten */
  write_text(cache_path, "my precious notes\n");
  ck_assert_int_eq(run_tuner(laplace_job), 0);
  ck_assert_uint_eq(entries(NULL, 0), 1);
  char aside[4200];
  snprintf(aside, sizeof aside, "%s.corrupt", cache_path);
  ck_assert_int_eq(access(aside, R_OK), 0);
  /* bad arguments are refused */
  const char *const bad[] = {"--kernel", "no_such_kernel", NULL};
  ck_assert_int_ne(run_tuner(bad), 0);
  const char *const bad2[] = {"--precision", "half", NULL};
  ck_assert_int_eq(run_tuner(bad2), 2);
}
END_TEST

static Suite *tuning_suite(void) {
  Suite *s = suite_create("tuning");
  TCase *format = tcase_create("format");
  tcase_add_checked_fixture(format, setup, teardown);
  tcase_add_test(format, test_defaults_are_points_of_their_space);
  tcase_add_test(format, test_default_lookup_found_or_not);
  tcase_add_test(format, test_every_driver_kernel_has_a_space);
  tcase_add_test(format, test_entry_line_round_trip);
  tcase_add_test(format, test_default_path_per_device);
  suite_add_tcase(s, format);
  TCase *lib = tcase_create("library");
  tcase_add_checked_fixture(lib, setup, teardown);
  tcase_set_timeout(lib, 120);
  tcase_add_test(lib, test_plan_builds_with_cached_values);
  tcase_add_test(lib, test_params_object);
  tcase_add_test(lib, test_override_accepted_and_refused);
  tcase_add_test(lib, test_invalid_entries_are_ignored_with_a_note);
  tcase_add_test(lib, test_corrupt_and_truncated_files);
  tcase_add_test(lib, test_foreign_device_file_is_ignored);
  suite_add_tcase(s, lib);
  TCase *tuner = tcase_create("fmmtune");
  tcase_add_checked_fixture(tuner, setup, teardown);
  tcase_set_timeout(tuner, 300);
  tcase_add_test(tuner, test_tiny_tuning_run_writes_a_cache_plans_use);
  tcase_add_test(tuner, test_fmm_kernels_tune_and_plans_use_them);
  tcase_add_test(tuner, test_concurrent_tuners_keep_both_entries);
  tcase_add_test(tuner, test_concurrent_writers_lose_nothing);
  tcase_add_test(tuner, test_reset_dry_run_and_other_devices);
  suite_add_tcase(s, tuner);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(tuning_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
