/* check_cli.c — tests of the particle file formats (host/particles_io) and of
 * the fmmcl and fmmcl-info programs, run as a user would run them. */
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../host/check_targets.h"
#include "../host/particles_io.h"
#include "fmmcl.h"
#include "tuning/tuning.h" /* the cache line format, to write a tuning file */

#ifndef FMMCL_BIN_DIR
#error "FMMCL_BIN_DIR (the build tree's host/ directory) must be defined"
#endif

/* Single precision sums of a few hundred terms agree with the double
 * reference to ~1e-6 relative; 1e-5 leaves room for cancellation. */
#define SINGLE_TOL 1e-5
/* Double precision against the same sum in double: rounding only. */
#define DOUBLE_TOL 1e-10

static char tmp_dir[PATH_MAX];

/* ---- helpers -------------------------------------------------------------- */

static void make_tmp_dir(void) {
  snprintf(tmp_dir, sizeof tmp_dir, "%s/../tests/tmp-cli-XXXXXX", FMMCL_BIN_DIR);
  if (!mkdtemp(tmp_dir)) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/fmmcl-check-cli-XXXXXX");
    if (!mkdtemp(tmp_dir)) {
      perror("mkdtemp");
      exit(1);
    }
  }
}

static void remove_tmp_dir(void) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
  if (system(cmd) != 0) fprintf(stderr, "check_cli: could not remove %s\n", tmp_dir);
}

static const char *tmp_path(const char *name) {
  static char bufs[4][PATH_MAX + 256];
  static int next;
  char *p = bufs[next++ % 4];
  snprintf(p, sizeof bufs[0], "%s/%s", tmp_dir, name);
  return p;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fputs(text, f) >= 0, 1);
  ck_assert_int_eq(fclose(f), 0);
}

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

/* The whole file, NUL-terminated (malloc'ed). */
static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  size_t cap = 4096, n = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (cap - n - 1 == 0) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static size_t count_lines(const char *text) {
  size_t n = 0;
  for (; *text; text++) n += *text == '\n';
  return n;
}

/* Runs "BIN/program args" in the temporary directory with stdout and stderr
 * together in *output (malloc'ed); returns the exit status, -1 if killed. */
static int run_program(const char *env, const char *program, const char *args, char **output) {
  char cmd[4 * PATH_MAX];
  snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s/%s' %s 2>&1", tmp_dir, env ? env : "", FMMCL_BIN_DIR, program,
           args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t cap = 4096, n = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += got;
    if (cap - n - 1 == 0) buf = realloc(buf, cap *= 2);
  }
  buf[n] = '\0';
  int status = pclose(p);
  *output = buf;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run_fmmcl(const char *args, char **output) { return run_program(NULL, "fmmcl", args, output); }

/* The number after "label" in text, or NAN when the label is missing. */
static double number_after(const char *text, const char *label) {
  const char *p = strstr(text, label);
  return p ? strtod(p + strlen(label), NULL) : NAN;
}

static double rel_l2(const double *a, const double *ref, size_t n, size_t stride_a, size_t stride_ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; i++) {
    double d = a[i * stride_a] - ref[i * stride_ref];
    diff += d * d;
    norm += ref[i * stride_ref] * ref[i * stride_ref];
  }
  return sqrt(diff / norm);
}

/* Reproducible uniform numbers in [0,1) (splitmix64). */
static double uniform01(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/* rows x cols: coordinates in [0,1), the last column (charges) in [-1,1)
 * when charge_col is set. */
static double *random_table(uint64_t seed, size_t rows, int cols, int charge_col) {
  double *t = malloc(rows * (size_t)cols * sizeof(double) + 1);
  for (size_t i = 0; i < rows * (size_t)cols; i++) {
    double u = uniform01(&seed);
    t[i] = charge_col && (int)(i % (size_t)cols) == cols - 1 ? 2 * u - 1 : u;
  }
  return t;
}

/* Splits (coords, q) rows into coordinates and charges. */
static void split_rows(const double *rows, size_t n, int dim, double *coords, double *q) {
  for (size_t i = 0; i < n; i++) {
    memcpy(coords + i * (size_t)dim, rows + i * (size_t)(dim + 1), (size_t)dim * sizeof(double));
    q[i] = rows[i * (size_t)(dim + 1) + (size_t)dim];
  }
}

/* Compares fmmcl's output table (potential, gradient) with the reference. */
static void check_against_reference(const fmmcl_plan_options *opt, const double *src_rows, size_t n,
                                    const double *targets, size_t m, const double *out, double tol) {
  int dim = opt->dim, cols = 1 + (opt->gradient ? dim : 0);
  double *coords = malloc(n * (size_t)dim * sizeof(double)), *q = malloc(n * sizeof(double));
  double *pot = malloc(m * sizeof(double)), *grad = malloc(m * (size_t)dim * sizeof(double));
  split_rows(src_rows, n, dim, coords, q);
  ck_assert_int_eq(fmmcl_reference_direct(opt, n, coords, q, m, targets ? targets : coords, pot,
                                          opt->gradient ? grad : NULL),
                   FMMCL_SUCCESS);
  double e = rel_l2(out, pot, m, (size_t)cols, 1);
  ck_assert_msg(e < tol, "potential: relative L2 error %g >= %g", e, tol);
  if (opt->gradient) {
    /* All gradient components at once: sum over targets and dimensions. */
    double diff = 0, norm = 0;
    for (size_t i = 0; i < m; i++)
      for (int d = 0; d < dim; d++) {
        double r = grad[i * (size_t)dim + (size_t)d];
        double a = out[i * (size_t)cols + 1 + (size_t)d];
        diff += (a - r) * (a - r);
        norm += r * r;
      }
    e = sqrt(diff / norm);
    ck_assert_msg(e < tol, "gradient: relative L2 error %g >= %g", e, tol);
  }
  free(coords);
  free(q);
  free(pot);
  free(grad);
}

/* fmmcl_io_read without progress, err holding ERR_LEN bytes. */
#define ERR_LEN 512
static int io_read(const char *file, fmmcl_io_format format, int cols, double **data, size_t *rows,
                   char *err) {
  return fmmcl_io_read(file, format, cols, NULL, NULL, data, rows, err, ERR_LEN);
}

/* ---- particles_io --------------------------------------------------------------- */

static const fmmcl_io_format round_trip_formats[] = {FMMCL_IO_CSV, FMMCL_IO_BIN, FMMCL_IO_NPY};

/* Values that a careless text format would round: thirds, extremes,
 * subnormals, negative zero. */
START_TEST(test_io_round_trip) {
  fmmcl_io_format format = round_trip_formats[_i];
  enum { ROWS = 41, COLS = 4 };
  double *data = random_table(7, ROWS, COLS, 1);
  const double special[] = {
      1.0 / 3, -0.0, 1e-300, 4.9406564584124654e-324, 1.7976931348623157e308, -2.5e-17, 123456789.123456789,
      0.1};
  memcpy(data, special, sizeof special);
  const char *names[COLS] = {"x", "y", "z", "q"};
  char path[64], err[ERR_LEN];
  snprintf(path, sizeof path, "round_trip.%s", fmmcl_io_format_name(format));
  const char *file = tmp_path(path);
  ck_assert_int_eq(fmmcl_io_write(file, format, data, ROWS, COLS, names, 0, err, sizeof err), 0);
  double *back = NULL;
  size_t rows = 0;
  ck_assert_msg(io_read(file, format, COLS, &back, &rows, err) == 0, "%s", err);
  ck_assert_uint_eq(rows, ROWS);
  ck_assert_msg(memcmp(back, data, sizeof(double) * ROWS * COLS) == 0, "%s round trip changed values", path);
  free(back);
  /* Zero rows round trip too (the library, not the reader, refuses N = 0). */
  snprintf(path, sizeof path, "empty.%s", fmmcl_io_format_name(format));
  file = tmp_path(path);
  ck_assert_int_eq(fmmcl_io_write(file, format, data, 0, COLS, names, 0, err, sizeof err), 0);
  ck_assert_int_eq(io_read(file, format, COLS, &back, &rows, err), 0);
  ck_assert_uint_eq(rows, 0);
  free(back);
  free(data);
}
END_TEST

START_TEST(test_io_format_names) {
  ck_assert_int_eq(fmmcl_io_format_from_path("a/b.csv"), FMMCL_IO_CSV);
  ck_assert_int_eq(fmmcl_io_format_from_path("b.BIN"), FMMCL_IO_BIN);
  ck_assert_int_eq(fmmcl_io_format_from_path("b.raw"), FMMCL_IO_BIN);
  ck_assert_int_eq(fmmcl_io_format_from_path("x.y/b.npy"), FMMCL_IO_NPY);
  ck_assert_int_eq(fmmcl_io_format_from_path("x.csv/b"), FMMCL_IO_UNKNOWN);
  ck_assert_int_eq(fmmcl_io_format_from_path("b.txt"), FMMCL_IO_UNKNOWN);
  ck_assert_int_eq(fmmcl_io_format_parse("npy"), FMMCL_IO_NPY);
  ck_assert_int_eq(fmmcl_io_format_parse("hdf5"), FMMCL_IO_UNKNOWN);
}
END_TEST

/* Reads text as a 4-column CSV and expects failure with all of the given
 * fragments in the message. */
static void expect_csv_error(const char *text, const char *frag1, const char *frag2) {
  const char *file = tmp_path("bad.csv");
  write_text(file, text);
  char err[ERR_LEN] = "";
  double *data = NULL;
  size_t rows = 12345;
  ck_assert_int_eq(io_read(file, FMMCL_IO_CSV, 4, &data, &rows, err), -1);
  ck_assert_ptr_null(data);
  ck_assert_uint_eq(rows, 12345);
  ck_assert_msg(strstr(err, frag1) && (!frag2 || strstr(err, frag2)), "message '%s' lacks '%s' / '%s'", err,
                frag1, frag2 ? frag2 : "");
}

START_TEST(test_io_csv_errors) {
  expect_csv_error("x,y,z,q\n1,2,3,4\n1,2,abc,4\n", "bad.csv:3:", "'abc' is not a number");
  expect_csv_error("x,y,z,q\n1,2,3\n", "bad.csv:2:", "3 columns, expected 4");
  expect_csv_error("x,y,z,q\n1,2,3,4,5\n", "bad.csv:2:", "5 columns, expected 4");
  expect_csv_error("x,y,z,q\n1,2,3,nan\n", "bad.csv:2:", "not a finite number");
  expect_csv_error("x,y,z,q\n1,2,3,-inf\n", "bad.csv:2:", "not a finite number");
  expect_csv_error("x,y,z,q\n1,2,3,1e999\n", "bad.csv:2:", "not a finite number");
  expect_csv_error("x,y,z,q\n1,,3,4\n", "bad.csv:2:", "column 2");
  expect_csv_error("x,y,z,q\n1,2,3,4x\n", "bad.csv:2:", "'4x'");
  expect_csv_error("1,2,3,4\n5,6,7,8\n", "bad.csv:1:", "header");
  expect_csv_error("x,y,z\n1,2,3\n", "bad.csv:1:", "header has 3 columns");
  expect_csv_error("", "bad.csv", "empty");
}
END_TEST

/* Windows line ends, blanks around numbers and blank lines are accepted. */
START_TEST(test_io_csv_lenient) {
  const char *file = tmp_path("ok.csv");
  write_text(file, "\xEF\xBB\xBFx, y, z, q\r\n 1, 2.5 ,-3e-2,4\r\n\r\n0,0,0,1\n\n");
  double *data;
  size_t rows;
  char err[ERR_LEN];
  ck_assert_msg(io_read(file, FMMCL_IO_CSV, 4, &data, &rows, err) == 0, "%s", err);
  ck_assert_uint_eq(rows, 2);
  ck_assert(data[1] == 2.5 && data[2] == -3e-2 && data[7] == 1);
  free(data);
}
END_TEST

START_TEST(test_io_bin_size) {
  double rec[3 * 4] = {0};
  const char *file = tmp_path("bad.bin");
  write_bytes(file, rec, sizeof rec - 8); /* 11 doubles: not whole rows of 4 */
  char err[ERR_LEN] = "";
  double *data = NULL;
  size_t rows;
  ck_assert_int_eq(io_read(file, FMMCL_IO_BIN, 4, &data, &rows, err), -1);
  ck_assert_msg(strstr(err, "not a multiple"), "%s", err);
  rec[5] = NAN;
  write_bytes(file, rec, sizeof rec);
  ck_assert_int_eq(io_read(file, FMMCL_IO_BIN, 4, &data, &rows, err), -1);
  ck_assert_msg(strstr(err, "record 2") && strstr(err, "finite"), "%s", err);
}
END_TEST

/* A .npy file with the given header dict and payload, version 1.0 or 2.0. */
static void write_npy(const char *path, int major, const char *dict, const void *payload, size_t bytes) {
  unsigned char buf[1024];
  size_t pre = major == 1 ? 10 : 12, len = strlen(dict);
  size_t header_len = (pre + len + 1 + 63) / 64 * 64 - pre;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  for (size_t b = 0; b < pre - 8; b++) buf[8 + b] = (unsigned char)(header_len >> (8 * b));
  memset(buf + pre, ' ', header_len);
  memcpy(buf + pre, dict, len);
  buf[pre + header_len - 1] = '\n';
  memcpy(buf + pre + header_len, payload, bytes);
  write_bytes(path, buf, pre + header_len + bytes);
}

START_TEST(test_io_npy_variants) {
  const float f[6] = {0.5f, -1.25f, 3.0f, 1e-3f, 2.0f, -7.0f};
  const double d[6] = {0.5, -1.25, 3.0, 1e-3, 2.0, -7.0};
  const char *file = tmp_path("v.npy");
  char err[ERR_LEN];
  double *data;
  size_t rows;
  write_npy(file, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f, sizeof f);
  ck_assert_msg(io_read(file, FMMCL_IO_NPY, 3, &data, &rows, err) == 0, "%s", err);
  ck_assert_uint_eq(rows, 2);
  for (int i = 0; i < 6; i++) ck_assert(data[i] == (double)f[i]);
  free(data);
  write_npy(file, 2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", d, sizeof d);
  ck_assert_msg(io_read(file, FMMCL_IO_NPY, 3, &data, &rows, err) == 0, "%s", err);
  ck_assert(rows == 2 && memcmp(data, d, sizeof d) == 0);
  free(data);
  /* Each malformed variant fails with a message that says why. */
  static const struct {
    const char *dict;
    size_t bytes;
    const char *why;
  } bad[] = {
      {"{'descr': '>f8', 'fortran_order': False, 'shape': (2, 3), }", 48, "dtype"},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }", 48, "dtype"},
      {"{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", 48, "C order"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }", 48, "expected 3"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", 48, "dimension"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 40, "bytes"},
  };
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
    write_npy(file, 1, bad[b].dict, d, bad[b].bytes);
    ck_assert_int_eq(io_read(file, FMMCL_IO_NPY, 3, &data, &rows, err), -1);
    ck_assert_msg(strstr(err, bad[b].why), "case %zu: '%s' lacks '%s'", b, err, bad[b].why);
  }
  write_text(file, "not numpy at all");
  ck_assert_int_eq(io_read(file, FMMCL_IO_NPY, 3, &data, &rows, err), -1);
  ck_assert_msg(strstr(err, "magic"), "%s", err);
}
END_TEST

static int dir_has_temp_files(void) {
  DIR *dir = opendir(tmp_dir);
  struct dirent *e;
  int found = 0;
  while (dir && (e = readdir(dir))) found |= strstr(e->d_name, ".tmp-") != NULL;
  if (dir) closedir(dir);
  return found;
}

START_TEST(test_io_no_overwrite) {
  const char *file = tmp_path("keep.csv");
  write_text(file, "precious\n");
  double v[2] = {1, 2};
  char err[ERR_LEN] = "";
  ck_assert_int_eq(fmmcl_io_write(file, FMMCL_IO_CSV, v, 1, 2, NULL, 0, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "exists"), "%s", err);
  char *text = read_text(file);
  ck_assert_str_eq(text, "precious\n");
  free(text);
  ck_assert_int_eq(fmmcl_io_write(file, FMMCL_IO_CSV, v, 1, 2, NULL, 1, err, sizeof err), 0);
  text = read_text(file);
  ck_assert_str_eq(text, "c1,c2\n1,2\n");
  free(text);
  ck_assert_int_eq(dir_has_temp_files(), 0);
  ck_assert_int_eq(
      fmmcl_io_write(tmp_path("no-such-dir/x.csv"), FMMCL_IO_CSV, v, 1, 2, NULL, 0, err, sizeof err), -1);
}
END_TEST

/* ---- the programs -------------------------------------------------------------------- */

START_TEST(test_cli_help) {
  char *out;
  ck_assert_int_eq(run_fmmcl("--help", &out), 0);
  ck_assert_msg(strstr(out, "--demo") && strstr(out, "--check"), "%s", out);
  free(out);
  ck_assert_int_eq(run_fmmcl("--version", &out), 0);
  ck_assert_msg(strstr(out, "libfmmcl"), "%s", out);
  free(out);
  ck_assert_int_eq(run_program(NULL, "fmmcl-info", "--help", &out), 0);
  ck_assert_msg(strstr(out, "--device"), "%s", out);
  free(out);
}
END_TEST

/* Bad command lines exit 2 and point at --help. */
START_TEST(test_cli_usage_errors) {
  static const char *const bad[] = {
      "--no-such-option --demo 10",
      "--demo 10 --sigma abc",
      "--demo ten",
      "--demo -5",
      "--demo 10 --kernel bessel",
      "--demo 10 --kernel yukawa --method fmm",
      "--demo 10 --expr 'exp(-r)' --kernel yukawa",
      "--demo 10 --expr 'exp(-r)' --method treecode",
      "--demo 10 --method magic",
      "--demo 10 --repeat 0",
      "--demo 10 --dim 9",
      "",
      "--demo 10 --input x.csv",
      "x.txt",
      "--demo 10 --output out.txt",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *out;
    ck_assert_msg(run_fmmcl(bad[i], &out) == 2, "'fmmcl %s' did not exit 2: %s", bad[i], out);
    ck_assert_msg(strstr(out, "--help"), "'fmmcl %s': no hint: %s", bad[i], out);
    free(out);
  }
  char *out;
  /* the choices come from the library's names, in the order they always had */
  ck_assert_int_eq(run_fmmcl("--demo 10 --kernel bessel", &out), 2);
  ck_assert_msg(
      strstr(out,
             "laplace3d, gaussian, laplace2d, yukawa3d, helmholtz3d, stokes3d, inv_r2, multiquadric, "
             "inverse_multiquadric, yukawa"),
      "%s", out);
  free(out);
  ck_assert_int_eq(run_fmmcl("--demo 10 --method magic", &out), 2);
  ck_assert_msg(strstr(out, "direct, treecode, fmm, fgt, bbfmm, auto, cutoff"), "%s", out);
  free(out);
  ck_assert_int_eq(run_program(NULL, "fmmcl-info", "--bogus", &out), 2);
  free(out);
}
END_TEST

/* The device fmmcl picks by default, as fmmcl_device_select sees it. */
static fmmcl_device_info default_device(void) {
  size_t index = 0, count = 0;
  ck_assert_int_eq(fmmcl_device_select(NULL, &index), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_devices_list(NULL, 0, &count), FMMCL_SUCCESS);
  fmmcl_device_info *list = calloc(count, sizeof *list), dev;
  ck_assert_int_eq(fmmcl_devices_list(list, count, &count), FMMCL_SUCCESS);
  ck_assert_uint_lt(index, count);
  dev = list[index];
  free(list);
  return dev;
}

START_TEST(test_cli_demo_check_double) {
  char *out;
  int status = run_fmmcl("--demo 300 --check 20 --precision double", &out);
  if (!default_device().has_fp64) {
    /* No fp64: the library refuses, and fmmcl says so. */
    ck_assert_msg(status == 1 && strstr(out, fmmcl_strerror(FMMCL_ERROR_UNSUPPORTED)), "%s", out);
    free(out);
    return;
  }
  ck_assert_msg(status == 0, "%s", out);
  double ep = number_after(out, "relative L2 error (potential):");
  double eg = number_after(out, "relative L2 error (gradient):");
  ck_assert_msg(ep < DOUBLE_TOL && eg < DOUBLE_TOL, "errors %g %g: %s", ep, eg, out);
  /* the default method is auto, which takes the direct sum at this size */
  ck_assert_msg(strstr(out, "device:") && strstr(out, "method: auto"), "%s", out);
  free(out);
  ck_assert_msg(run_fmmcl("--demo 300 --method direct", &out) == 0, "%s", out);
  ck_assert_msg(strstr(out, "method: direct") && strstr(out, "interactions/s"), "%s", out);
  free(out);
}
END_TEST

/* N = 0 and a negative bandwidth are the library's to refuse: exit 1. */
START_TEST(test_cli_library_errors) {
  char *out;
  ck_assert_int_eq(run_fmmcl("--demo 0", &out), 1);
  ck_assert_msg(strstr(out, fmmcl_strerror(FMMCL_ERROR_EMPTY_INPUT)), "%s", out);
  free(out);
  ck_assert_int_eq(run_fmmcl("--demo 10 --kernel gaussian --sigma -1", &out), 1);
  ck_assert_msg(strstr(out, fmmcl_strerror(FMMCL_ERROR_INVALID_ARGUMENT)), "%s", out);
  free(out);
  ck_assert_int_eq(run_fmmcl("--input no-such-file.csv", &out), 1);
  ck_assert_msg(strstr(out, "no-such-file.csv"), "%s", out);
  free(out);
}
END_TEST

/* --kernel yukawa3d --kernel-param 2 with --method direct, auto (the direct
 * sum at 5000 points: 2.5e7 pairs) and bbfmm, checked against the double
 * host reference: direct and auto to single precision's SINGLE_TOL,
 * potential and gradient; bbfmm the potential to 1e-4, its default order
 * 5's interpolation error (~5e-5, check_bbfmm) with float on top. */
START_TEST(test_cli_yukawa3d) {
  static const char *const methods[] = {"direct", "auto", "bbfmm"};
  const int bbfmm = _i == 2;
  char cmd[256], *out;
  snprintf(cmd, sizeof cmd, "--kernel yukawa3d --kernel-param 2 --demo 5000 --check 100 --method %s",
           methods[_i]);
  int status = run_fmmcl(cmd, &out);
  ck_assert_msg(status == 0, "fmmcl %s: exit %d: %s", cmd, status, out);
  char shown[64];
  snprintf(shown, sizeof shown, "kernel: yukawa3d, method: %s", methods[_i]);
  ck_assert_msg(strstr(out, shown) && strstr(out, "double-precision host reference"), "%s", out);
  const double ep = number_after(out, "relative L2 error (potential):");
  const double eg = number_after(out, "relative L2 error (gradient):");
  const double bound = bbfmm ? 1e-4 : SINGLE_TOL;
  ck_assert_msg(ep < bound, "fmmcl %s: potential error %g above %g: %s", cmd, ep, bound, out);
  if (bbfmm) ck_assert_msg(isnan(eg) && strstr(out, "m2l"), "%s", out);
  else /* auto: the direct sum's phases, and its gradient */
    ck_assert_msg(eg < SINGLE_TOL && strstr(out, "p2p") && !strstr(out, "m2l"), "gradient error %g: %s", eg,
                  out);
  free(out);
}
END_TEST

/* Dipoles and Hessians by --method fmm and treecode (double, tol 1e-7):
 * --check all's largest errors, relative to the largest reference value,
 * within 1e-6 (the potential) and 1e-5 (the Hessian). */
START_TEST(test_cli_dipoles_fast) {
  char cmd[256], *out;
  snprintf(cmd, sizeof cmd,
           "--dipoles --hessian --method %s --precision double --tol 1e-7 --leaf 64 --demo 2000 --check all",
           _i ? "treecode" : "fmm");
  int status = run_fmmcl(cmd, &out);
  ck_assert_msg(status == 0, "fmmcl %s: exit %d: %s", cmd, status, out);
  const double ep = number_after(out, "potential max error"), eh = number_after(out, "Hessian max error");
  ck_assert_msg(ep < 1e-6 && eh < 1e-5, "fmmcl %s: errors %g %g: %s", cmd, ep, eh, out);
  free(out);
}
END_TEST

/* The fast Gauss transform from the command line: --check's largest error
 * per unit charge stays below --tol and below the bound the plan reports;
 * the FGT refuses another kernel with a clear message and exit status 1. */
START_TEST(test_cli_fgt) {
  char *out;
  if (default_device().has_fp64) {
    ck_assert_msg(run_fmmcl("--demo 2000 --kernel gaussian --method fgt --sigma 0.1 --tol 1e-6 "
                            "--precision double --check 200",
                            &out) == 0,
                  "%s", out);
    double e = number_after(out, "max error / sum |q| (potential):");
    double bound = number_after(out, "error bound: |error| <=");
    ck_assert_msg(e >= 0 && e <= bound && bound <= 1e-6, "error %g bound %g: %s", e, bound, out);
    free(out);
  }
  ck_assert_int_eq(run_fmmcl("--demo 100 --method fgt --kernel laplace3d", &out), 1);
  ck_assert_msg(strstr(out, fmmcl_strerror(FMMCL_ERROR_UNSUPPORTED)) && strstr(out, "GAUSSIAN"), "%s", out);
  free(out);
}
END_TEST

START_TEST(test_cli_no_overwrite) {
  char *out, *text;
  write_text(tmp_path("out.csv"), "keep me\n");
  ck_assert_int_eq(run_fmmcl("--demo 50 --output out.csv", &out), 1);
  ck_assert_msg(strstr(out, "--force"), "%s", out);
  free(out);
  text = read_text(tmp_path("out.csv"));
  ck_assert_str_eq(text, "keep me\n");
  free(text);
  ck_assert_int_eq(run_fmmcl("--demo 50 --output out.csv --force --quiet", &out), 0);
  free(out);
  text = read_text(tmp_path("out.csv"));
  ck_assert_uint_eq(count_lines(text), 51);
  free(text);
}
END_TEST

/* The main job: a CSV file of particles in, potentials and gradients out. */
START_TEST(test_cli_csv_file) {
  enum { N = 500 };
  double *rows = random_table(11, N, 4, 1);
  const char *names[] = {"x", "y", "z", "q"};
  char err[ERR_LEN], *out;
  ck_assert_int_eq(fmmcl_io_write(tmp_path("in.csv"), FMMCL_IO_CSV, rows, N, 4, names, 0, err, sizeof err),
                   0);
  ck_assert_msg(run_fmmcl("--input in.csv --output res.csv", &out) == 0, "%s", out);
  free(out);
  char *text = read_text(tmp_path("res.csv"));
  ck_assert_uint_eq(count_lines(text), N + 1);
  ck_assert_msg(!strncmp(text, "potential,gx,gy,gz\n", 19), "header: %.40s", text);
  free(text);
  double *res;
  size_t m;
  ck_assert_int_eq(io_read(tmp_path("res.csv"), FMMCL_IO_CSV, 4, &res, &m, err), 0);
  ck_assert_uint_eq(m, N);
  fmmcl_plan_options opt;
  ck_assert_int_eq(fmmcl_plan_options_init(&opt, FMMCL_LAPLACE_3D), FMMCL_SUCCESS);
  check_against_reference(&opt, rows, N, NULL, N, res, SINGLE_TOL);
  free(res);
  free(rows);
}
END_TEST

/* max over rows of |a - ref| over max |ref|, cols values a row. */
static double max_rel_rows(const double *a, const double *ref, size_t n) {
  double e = 0, r = 0;
  for (size_t i = 0; i < n; i++) e = fmax(e, fabs(a[i] - ref[i])), r = fmax(r, fabs(ref[i]));
  return e / r;
}

/* Helmholtz with dipoles from their own file, and Stokes with stresslets
 * and pressure: the output's columns are the reference's values (double:
 * the device's rounding alone, ~1e-13 of the largest value here). */
START_TEST(test_cli_helmholtz_stokes) {
  enum { N = 300 };
  char err[ERR_LEN], *out;
  double *rows = random_table(21, N, 5, 0), *dip = random_table(22, N, 6, 0), *x = malloc(3 * N * sizeof *x);
  double *cq = malloc(2 * N * sizeof *cq), *res, *ref = malloc(8 * N * sizeof *ref);
  for (size_t i = 0; i < N; i++) {
    memcpy(x + 3 * i, rows + 5 * i, 3 * sizeof(double));
    cq[2 * i] = rows[5 * i + 3], cq[2 * i + 1] = rows[5 * i + 4];
  }
  ck_assert_int_eq(fmmcl_io_write(tmp_path("h.csv"), FMMCL_IO_CSV, rows, N, 5, NULL, 0, err, sizeof err), 0);
  ck_assert_int_eq(fmmcl_io_write(tmp_path("d.csv"), FMMCL_IO_CSV, dip, N, 6, NULL, 0, err, sizeof err), 0);
  ck_assert_msg(run_fmmcl("--kernel helmholtz3d --wavenumber 3,0.5 --dipoles=d.csv --precision double "
                          "--input h.csv --output hres.csv --check 20",
                          &out) == 0,
                "%s", out);
  ck_assert_msg(strstr(out, "check 20 targets: potential max error"), "%s", out);
  free(out);
  size_t m;
  ck_assert_int_eq(io_read(tmp_path("hres.csv"), FMMCL_IO_CSV, 8, &res, &m, err), 0);
  ck_assert_uint_eq(m, N);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.dipoles = 1, o.wavenumber_re = 3, o.wavenumber_im = 0.5;
  fmmcl_sources_data in = {.complex_charges = cq, .complex_dipoles = dip};
  fmmcl_targets_data to = {.complex_potential = ref, .complex_gradient = ref + 2 * N};
  ck_assert_int_eq(fmmcl_reference_evaluate(&o, N, x, &in, 0, NULL, &to), FMMCL_SUCCESS);
  double got_p[2 * N], got_g[6 * N];
  for (size_t i = 0; i < N; i++) {
    memcpy(got_p + 2 * i, res + 8 * i, 2 * sizeof(double));
    memcpy(got_g + 6 * i, res + 8 * i + 2, 6 * sizeof(double));
  }
  ck_assert_double_le(max_rel_rows(got_p, ref, 2 * N), 1e-11);
  ck_assert_double_le(max_rel_rows(got_g, ref + 2 * N, 6 * N), 1e-11);
  free(res);
  /* the same through the FMM: within its tolerance over all targets */
  ck_assert_msg(run_fmmcl("--kernel helmholtz3d --wavenumber 3,0.5 --dipoles=d.csv --precision double "
                          "--method fmm --tol 1e-6 --input h.csv --output hfmm.csv",
                          &out) == 0,
                "%s", out);
  free(out);
  ck_assert_int_eq(io_read(tmp_path("hfmm.csv"), FMMCL_IO_CSV, 8, &res, &m, err), 0);
  ck_assert_uint_eq(m, N);
  double e2 = 0, r2 = 0;
  for (size_t i = 0; i < N; i++)
    for (int c = 0; c < 2; c++) {
      e2 += (res[8 * i + c] - ref[2 * i + c]) * (res[8 * i + c] - ref[2 * i + c]);
      r2 += ref[2 * i + c] * ref[2 * i + c];
    }
  ck_assert_msg(sqrt(e2 / r2) <= 1e-6, "helmholtz fmm through the CLI: %g", sqrt(e2 / r2));
  free(res);
  /* Stokes: x y z f s n in, ux uy uz p out */
  double *st = random_table(23, N, 12, 0), *f = malloc(9 * N * sizeof *f);
  for (size_t i = 0; i < N; i++) {
    memcpy(x + 3 * i, st + 12 * i, 3 * sizeof(double));
    memcpy(f + 9 * i, st + 12 * i + 3, 9 * sizeof(double));
  }
  double *fs = malloc(3 * N * sizeof *fs), *ss = malloc(3 * N * sizeof *ss), *sn = malloc(3 * N * sizeof *sn);
  for (size_t i = 0; i < N; i++)
    for (int c = 0; c < 3; c++)
      fs[3 * i + c] = f[9 * i + c], ss[3 * i + c] = f[9 * i + 3 + c], sn[3 * i + c] = f[9 * i + 6 + c];
  ck_assert_int_eq(fmmcl_io_write(tmp_path("s.csv"), FMMCL_IO_CSV, st, N, 12, NULL, 0, err, sizeof err), 0);
  ck_assert_msg(run_fmmcl("--kernel stokes3d --stresslets --pressure --precision double --input s.csv "
                          "--output sres.csv",
                          &out) == 0,
                "%s", out);
  free(out);
  char *text = read_text(tmp_path("sres.csv"));
  ck_assert_msg(!strncmp(text, "ux,uy,uz,pressure\n", 18), "header: %.40s", text);
  free(text);
  ck_assert_int_eq(io_read(tmp_path("sres.csv"), FMMCL_IO_CSV, 4, &res, &m, err), 0);
  fmmcl_plan_options_init(&o, FMMCL_STOKES_3D);
  o.stresslets = o.pressure = 1;
  fmmcl_sources_data sin = {.forces = fs, .stresslet_strengths = ss, .stresslet_orientations = sn};
  fmmcl_targets_data sto = {.velocity = ref, .pressure = ref + 3 * N};
  ck_assert_int_eq(fmmcl_reference_evaluate(&o, N, x, &sin, 0, NULL, &sto), FMMCL_SUCCESS);
  double got_u[3 * N], got_pr[N];
  for (size_t i = 0; i < N; i++)
    memcpy(got_u + 3 * i, res + 4 * i, 3 * sizeof(double)), got_pr[i] = res[4 * i + 3];
  ck_assert_double_le(max_rel_rows(got_u, ref, 3 * N), 1e-11);
  ck_assert_double_le(max_rel_rows(got_pr, ref + 3 * N, N), 1e-11);
  /* a dipole file of the wrong length, and --hessian where there is none */
  ck_assert_int_eq(run_fmmcl("--kernel laplace3d --dipoles=d.csv --input h.csv", &out), 1);
  free(out);
  ck_assert_int_eq(run_fmmcl("--kernel stokes3d --hessian --demo 10", &out), 1);
  ck_assert_msg(strstr(out, "Hessian"), "%s", out);
  free(out);
  free(res), free(rows), free(dip), free(x), free(cq), free(ref), free(st), free(f), free(fs), free(ss),
      free(sn);
}
END_TEST

/* Binary sources, .npy targets, .npy results, potential only. */
START_TEST(test_cli_bin_npy_targets) {
  enum { N = 400, M = 150 };
  double *rows = random_table(21, N, 4, 1), *targets = random_table(22, M, 3, 0);
  char err[ERR_LEN], *out;
  ck_assert_int_eq(fmmcl_io_write(tmp_path("src.bin"), FMMCL_IO_BIN, rows, N, 4, NULL, 0, err, sizeof err),
                   0);
  ck_assert_int_eq(fmmcl_io_write(tmp_path("tgt.npy"), FMMCL_IO_NPY, targets, M, 3, NULL, 0, err, sizeof err),
                   0);
  ck_assert_msg(run_fmmcl("src.bin --targets tgt.npy --output res.npy --no-gradient "
                          "--softening 0.01 --repeat 2",
                          &out) == 0,
                "%s", out);
  ck_assert_msg(strstr(out, "best of 2"), "%s", out);
  free(out);
  double *res;
  size_t m;
  ck_assert_msg(io_read(tmp_path("res.npy"), FMMCL_IO_NPY, 1, &res, &m, err) == 0, "%s", err);
  ck_assert_uint_eq(m, M);
  fmmcl_plan_options opt;
  fmmcl_plan_options_init(&opt, FMMCL_LAPLACE_3D);
  opt.gradient = 0;
  opt.softening = 0.01;
  check_against_reference(&opt, rows, N, targets, M, res, SINGLE_TOL);
  free(res);
  free(rows);
  free(targets);
}
END_TEST

/* The Gaussian in two dimensions, written as raw binary. */
START_TEST(test_cli_gaussian_2d) {
  enum { N = 300 };
  double *rows = random_table(31, N, 3, 0);
  const char *names[] = {"x", "y", "q"};
  char err[ERR_LEN], *out;
  ck_assert_int_eq(fmmcl_io_write(tmp_path("g.csv"), FMMCL_IO_CSV, rows, N, 3, names, 0, err, sizeof err), 0);
  ck_assert_msg(run_fmmcl("--input g.csv --kernel gaussian --dim 2 --sigma 0.3 --output g.out "
                          "--output-format bin --check 30",
                          &out) == 0,
                "%s", out);
  ck_assert_msg(number_after(out, "relative L2 error (potential):") < SINGLE_TOL, "%s", out);
  free(out);
  double *res;
  size_t m;
  ck_assert_msg(io_read(tmp_path("g.out"), FMMCL_IO_BIN, 3, &res, &m, err) == 0, "%s", err);
  ck_assert_uint_eq(m, N);
  fmmcl_plan_options opt;
  fmmcl_plan_options_init(&opt, FMMCL_GAUSSIAN);
  opt.dim = 2;
  opt.sigma = 0.3;
  check_against_reference(&opt, rows, N, NULL, N, res, SINGLE_TOL);
  free(res);
  free(rows);
}
END_TEST

START_TEST(test_cli_malformed_input) {
  char *out;
  write_text(tmp_path("bad.csv"), "x,y,z,q\n0,0,0,1\n1,1,oops,1\n");
  ck_assert_int_eq(run_fmmcl("--input bad.csv", &out), 1);
  ck_assert_msg(strstr(out, "bad.csv:3:") && strstr(out, "oops"), "%s", out);
  free(out);
  write_text(tmp_path("bad.bin"), "0123456789");
  ck_assert_int_eq(run_fmmcl("--input bad.bin", &out), 1);
  ck_assert_msg(strstr(out, "not a multiple"), "%s", out);
  free(out);
}
END_TEST

START_TEST(test_info_lists_devices) {
  size_t count = 0;
  ck_assert_int_eq(fmmcl_devices_list(NULL, 0, &count), FMMCL_SUCCESS);
  ck_assert_uint_gt(count, 0);
  fmmcl_device_info first;
  ck_assert_int_eq(fmmcl_devices_list(&first, 1, &count), FMMCL_SUCCESS);
  char *out;
  ck_assert_msg(run_program(NULL, "fmmcl-info", "", &out) == 0, "%s", out);
  ck_assert_msg(strstr(out, first.device_name) && strstr(out, "0:0") && strstr(out, "selected:") &&
                    strstr(out, "binary cache:"),
                "%s", out);
  free(out);
}
END_TEST

/* fmmcl-info shows the default device's tuned entries, and flags a bad one. */
START_TEST(test_info_shows_tuning) {
  fmmcl_device_info d;
  size_t count = 0;
  ck_assert_int_eq(fmmcl_devices_list(&d, 1, &count), FMMCL_SUCCESS);
  char path[PATH_MAX + 16], line[1024], env[PATH_MAX + 96];
  snprintf(path, sizeof path, "%s/tuning.txt", tmp_dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fmmcl_tuning_format_device(&d, line, sizeof line);
  fprintf(f, "%s\n%s\n", FMMCL_TUNING_MAGIC, line);
  fmmcl_tuning_entry e = {.precision = FMMCL_SINGLE, .time_ms = 1.0, .default_ms = 2.0, .n = 4096};
  snprintf(e.kernel, sizeof e.kernel, "p2p_laplace3d");
  snprintf(e.problem_class, sizeof e.problem_class, "dim3");
  snprintf(e.defines, sizeof e.defines, "-DWGS=64 -DTPW=1 -DUNROLL=4");
  fmmcl_tuning_format_entry(&e, line, sizeof line);
  fprintf(f, "%s\n", line);
  snprintf(e.defines, sizeof e.defines, "-DWGS=48 -DTPW=1 -DUNROLL=4"); /* not a candidate */
  snprintf(e.kernel, sizeof e.kernel, "p2p_gaussian");
  fmmcl_tuning_format_entry(&e, line, sizeof line);
  fprintf(f, "%s\n", line);
  fclose(f);
  snprintf(env, sizeof env, "FMMCL_DEVICE=0:0 FMMCL_TUNING_FILE='%s'", path);
  char *out;
  ck_assert_msg(run_program(env, "fmmcl-info", "", &out) == 0, "%s", out);
  ck_assert_msg(strstr(out, "2 entries") && strstr(out, "-DWGS=64 -DTPW=1 -DUNROLL=4") &&
                    strstr(out, "2.00x") && strstr(out, "IGNORED"),
                "%s", out);
  free(out);
}
END_TEST

/* A selector matching nothing: exit 1, and the message lists the devices. */
START_TEST(test_no_such_device) {
  fmmcl_device_info first;
  size_t count = 0;
  ck_assert_int_eq(fmmcl_devices_list(&first, 1, &count), FMMCL_SUCCESS);
  ck_assert_uint_gt(count, 0);
  const char *not_found = fmmcl_strerror(FMMCL_ERROR_DEVICE_NOT_FOUND);
  char *out;
  ck_assert_int_eq(run_program("FMMCL_DEVICE=no-such-device", "fmmcl-info", "", &out), 1);
  ck_assert_msg(strstr(out, not_found) && strstr(out, first.device_name), "%s", out);
  free(out);
  ck_assert_int_eq(run_program("FMMCL_DEVICE=no-such-device", "fmmcl", "--demo 10", &out), 1);
  ck_assert_msg(strstr(out, not_found) && strstr(out, first.device_name), "%s", out);
  free(out);
  ck_assert_int_eq(run_fmmcl("--demo 10 --device no-such-device", &out), 1);
  ck_assert_msg(strstr(out, not_found), "%s", out);
  free(out);
}
END_TEST

/* ---- the black-box FMM's kernels ----------------------------------------- */

/* fmmcl --method bbfmm ARGS --check: exit 0 and the potential's error below
 * tol against the direct sum of the same kernel; skipped without fp64. */
static void check_bbfmm_cli(const char *args, double tol, const char *kernel_shown) {
  if (!default_device().has_fp64) return; /* 1e-3 from --tol is easy, but the test's sums are in double */
  char cmd[512], *out;
  snprintf(cmd, sizeof cmd, "--demo 1500 --precision double --tol %g --check 40 %s", tol, args);
  int status = run_fmmcl(cmd, &out);
  ck_assert_msg(status == 0, "fmmcl %s: exit %d: %s", cmd, status, out);
  double ep = number_after(out, "relative L2 error (potential):");
  ck_assert_msg(ep < tol, "fmmcl %s: error %g above %g: %s", cmd, ep, tol, out);
  ck_assert_msg(ep > 0, "fmmcl %s: error exactly 0: not an approximation? %s", cmd, out);
  ck_assert_msg(strstr(out, "direct sum on the device") && strstr(out, kernel_shown) &&
                    strstr(out, "method: bbfmm") && strstr(out, "m2l"),
                "%s", out);
  free(out);
}

START_TEST(test_cli_bbfmm_builtin_kernel) {
  check_bbfmm_cli("--kernel yukawa --kernel-param 2", 1e-3, "kernel: yukawa");
}
END_TEST

START_TEST(test_cli_bbfmm_user_expression) {
  check_bbfmm_cli("--method bbfmm --expr 'exp(-2*r) / r'", 1e-3, "kernel: exp(-2*r) / r");
}
END_TEST

/* An expression that does not compile: exit 1 and the build log, naming the
 * expression, on stderr. */
START_TEST(test_cli_bbfmm_bad_expression) {
  char *out;
  int status = run_fmmcl("--demo 50 --expr 'exp(-r) /' -q", &out);
  ck_assert_msg(status == 1, "exit %d: %s", status, out);
  ck_assert_msg(strstr(out, fmmcl_strerror(FMMCL_ERROR_BUILD_FAILED)) && strstr(out, "build log") &&
                    strstr(out, "kernel_expression"),
                "%s", out);
  free(out);
}
END_TEST

/* ---- --check's choice of targets -------------------------------------------- */

/* Squared distance from target i to its nearest distinct source, brute force. */
static double nearest_brute(const double *src, size_t n, const double *tgt, size_t i, int dim, int same) {
  double best = INFINITY;
  for (size_t j = 0; j < n; j++) {
    if (same && j == i) continue;
    double r2 = 0;
    for (int d = 0; d < dim; d++)
      r2 += (tgt[i * dim + d] - src[j * dim + d]) * (tgt[i * dim + d] - src[j * dim + d]);
    if (r2 > 0 && r2 < best) best = r2;
  }
  return sqrt(best);
}

static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The closest targets are found as a brute-force search ranks them, in
 * 1, 2 and 3 dimensions, with targets apart from the sources and not; a
 * planted pair 1e-7 apart near (1000, 1000, 1000) comes first, and the
 * --check choice holds it besides the random half. */
START_TEST(test_check_targets_closest) {
  enum { N = 1500, M = 700, K = 20 };
  int dim = 1 + _i % 3, same = _i >= 3;
  double *src = malloc(N * 3 * sizeof *src), *tgt = same ? src : malloc(M * 3 * sizeof *tgt);
  size_t m = same ? N : M, idx[K], chosen[K];
  double dist[K], brute[N];
  uint64_t state = 12345 + (uint64_t)_i;
  for (size_t i = 0; i < N * 3; i++) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    src[i] = 1000 + (double)(state >> 11) / 9007199254740992.0;
  }
  if (!same)
    for (size_t i = 0; i < M * 3; i++) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      tgt[i] = 1000 + (double)(state >> 11) / 9007199254740992.0;
    }
  /* the planted pair: target 7 (or point 7) 1e-7 from source 11 */
  for (int d = 0; d < dim; d++) tgt[7 * dim + d] = src[11 * dim + d] + (d == 0 ? 1e-7 : 0);
  size_t found = 0;
  ck_assert_int_eq(fmmcl_closest_targets(dim, N, src, m, same ? NULL : tgt, K, idx, dist, &found),
                   FMMCL_SUCCESS);
  ck_assert_uint_eq(found, K);
  ck_assert_msg(idx[0] == 7 || (same && idx[0] == 11), "closest target %zu", idx[0]);
  ck_assert_msg(fabs(dist[0] - 1e-7) < 1e-9, "closest distance %g", dist[0]);
  for (size_t i = 0; i < m; i++) brute[i] = nearest_brute(src, N, tgt, i, dim, same);
  for (size_t i = 0; i < K; i++)
    ck_assert_msg(fabs(dist[i] - brute[idx[i]]) <= 1e-12 * (1 + brute[idx[i]]), "distance %zu", i);
  qsort(brute, m, sizeof brute[0], by_double);
  for (size_t i = 0; i < K; i++)
    ck_assert_msg(fabs(dist[i] - brute[i]) <= 1e-12 * (1 + brute[i]), "rank %zu: %g vs %g", i, dist[i],
                  brute[i]);
  size_t random[K], n_close = 0;
  double closest = 0;
  for (size_t i = 0; i < K; i++) random[i] = 3 * i + 100; /* ascending, none of the planted ones */
  size_t k = fmmcl_cli_check_targets(src, N, tgt, m, dim, same, K, random, K, chosen, &n_close, &closest);
  ck_assert_uint_eq(k, K);
  ck_assert_uint_eq(n_close, K / 2);
  ck_assert_msg(chosen[0] == idx[0] && fabs(closest - 1e-7) < 1e-9, "first %zu at %g", chosen[0], closest);
  for (size_t a = 0; a < K; a++)
    for (size_t b = a + 1; b < K; b++) ck_assert_msg(chosen[a] != chosen[b], "target %zu twice", chosen[a]);
  if (!same) free(tgt);
  free(src);
}
END_TEST

/* --check all compares every target and prints the max-norm error too;
 * --check K says how its targets were chosen. */
START_TEST(test_cli_check_all) {
  char *out;
  ck_assert_int_eq(run_fmmcl("--demo 2000 --method fmm --check all", &out), 0);
  ck_assert_msg(strstr(out, "check: every target"), "%s", out);
  double ep = number_after(out, "relative max-norm error (potential):");
  double eg = number_after(out, "relative max-norm error (gradient):");
  ck_assert_msg(ep < 1e-3 && eg < 1e-3, "errors %g %g: %s", ep, eg, out);
  free(out);
  ck_assert_int_eq(run_fmmcl("--demo 2000 --method fmm --check 40", &out), 0);
  ck_assert_msg(strstr(out, "check: 40 targets: 20 whose nearest source is closest"), "%s", out);
  free(out);
}
END_TEST

static Suite *cli_suite(void) {
  Suite *s = suite_create("cli");
  TCase *io = tcase_create("particles_io");
  tcase_add_unchecked_fixture(io, make_tmp_dir, remove_tmp_dir);
  tcase_add_loop_test(io, test_io_round_trip, 0, 3);
  tcase_add_test(io, test_io_format_names);
  tcase_add_test(io, test_io_csv_errors);
  tcase_add_test(io, test_io_csv_lenient);
  tcase_add_test(io, test_io_bin_size);
  tcase_add_test(io, test_io_npy_variants);
  tcase_add_test(io, test_io_no_overwrite);
  tcase_add_loop_test(io, test_check_targets_closest, 0, 6);
  suite_add_tcase(s, io);

  TCase *cli = tcase_create("programs");
  tcase_add_unchecked_fixture(cli, make_tmp_dir, remove_tmp_dir);
  /* Kernel builds on a cold cache take seconds; make check sets its own limit. */
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(cli, 300);
  tcase_add_test(cli, test_cli_help);
  tcase_add_test(cli, test_cli_usage_errors);
  tcase_add_test(cli, test_cli_demo_check_double);
  tcase_add_test(cli, test_cli_check_all);
  tcase_add_test(cli, test_cli_library_errors);
  tcase_add_test(cli, test_cli_no_overwrite);
  tcase_add_test(cli, test_cli_csv_file);
  tcase_add_test(cli, test_cli_helmholtz_stokes);
  tcase_add_test(cli, test_cli_bin_npy_targets);
  tcase_add_test(cli, test_cli_gaussian_2d);
  tcase_add_test(cli, test_cli_fgt);
  tcase_add_loop_test(cli, test_cli_yukawa3d, 0, 3);
  tcase_add_loop_test(cli, test_cli_dipoles_fast, 0, 2);
  tcase_add_test(cli, test_cli_malformed_input);
  tcase_add_test(cli, test_info_lists_devices);
  tcase_add_test(cli, test_info_shows_tuning);
  tcase_add_test(cli, test_no_such_device);
  tcase_add_test(cli, test_cli_bbfmm_builtin_kernel);
  tcase_add_test(cli, test_cli_bbfmm_user_expression);
  tcase_add_test(cli, test_cli_bbfmm_bad_expression);
  suite_add_tcase(s, cli);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(cli_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
