/* check_runtime.c — tests of the OpenCL runtime layer: status strings, device
 * listing and selection (FMMCL_DEVICE), contexts, kernel search
 * (FMMCL_KERNEL_PATH) and build failures, the program-binary cache (hits,
 * corrupt, stale and unwritable files, FMMCL_NO_CACHE), last-error messages,
 * and the launch helpers (event log, kernel creation, arguments, release). */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fmmcl.h"
#include "core/internal.h" /* kernel search, fmmcl_program_build, cache primitives */
#include "test_util.h"

/* Program options for builds through fmmcl_program_build directly; B differs
 * from A only in a -D value, so the two binaries must never be confused. */
#define OPTS_A "-DFMMCL_SINGLE=1 -DWGS=16 -DTPW=1 -DUNROLL=1 -DDIM=3 -DHAS_SOFTENING=0 -DALL_SELECT=0"
#define OPTS_B "-DFMMCL_SINGLE=1 -DWGS=32 -DTPW=1 -DUNROLL=1 -DDIM=3 -DHAS_SOFTENING=0 -DALL_SELECT=0"

/* ---- environment and temporary directory, per test ------------------------ */

static const char *const env_names[] = {
    "FMMCL_DEVICE", "FMMCL_KERNEL_PATH", "FMMCL_NO_CACHE", "XDG_CACHE_HOME", "HOME", "POCL_CACHE_DIR"};
#define N_ENV (sizeof env_names / sizeof env_names[0])
static char *env_saved[N_ENV];
static char *work;        /* this test's temporary directory */
static fmmcl_context ctx; /* opened by the device fixture */

/* Tests change the environment; saved and restored so that they also stay
 * independent under CK_FORK=no. */
static void env_setup(void) {
  for (size_t i = 0; i < N_ENV; i++) {
    const char *v = getenv(env_names[i]);
    env_saved[i] = v ? strdup(v) : NULL;
  }
  /* PoCL keeps its own compiler cache under XDG_CACHE_HOME, which the cache
   * tests point at fresh directories; pinning it to the suite's cache keeps
   * rebuilds from source fast without touching what is tested (libfmmcl's
   * binary cache). Read once, when PoCL starts, so set before any OpenCL. */
  const char *xdg = getenv("XDG_CACHE_HOME");
  if (!getenv("POCL_CACHE_DIR") && xdg && *xdg) {
    char pocl[4096];
    snprintf(pocl, sizeof pocl, "%s/pocl", xdg);
    setenv("POCL_CACHE_DIR", pocl, 1);
  }
  unsetenv("FMMCL_KERNEL_PATH");
  unsetenv("FMMCL_NO_CACHE");
  work = fmmcl_test_tempdir("runtime");
  ck_assert_ptr_nonnull(work);
}

static void env_teardown(void) {
  fmmcl_test_rmtree(work);
  free(work);
  work = NULL;
  for (size_t i = 0; i < N_ENV; i++) {
    if (env_saved[i]) setenv(env_names[i], env_saved[i], 1);
    else unsetenv(env_names[i]);
    free(env_saved[i]);
    env_saved[i] = NULL;
  }
}

static void device_setup(void) {
  env_setup();
  ctx = fmmcl_test_context();
  ck_assert_msg(ctx != NULL, "no OpenCL context: %s", fmmcl_last_error(NULL));
}

static void device_teardown(void) {
  fmmcl_context_destroy(ctx);
  ctx = NULL;
  env_teardown();
}

/* ---- helpers ------------------------------------------------------------- */

/* work/name, in one of a few rotating buffers */
static const char *in_work(const char *name) {
  static char bufs[4][4096];
  static int next;
  char *p = bufs[next++ % 4];
  snprintf(p, sizeof bufs[0], "%s/%s", work, name);
  return p;
}

static void write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

static char *read_whole(const char *path, size_t *len) {
  char *text = NULL;
  ck_assert_msg(fmmcl_read_file(NULL, path, &text, len) == FMMCL_SUCCESS, "cannot read %s", path);
  return text;
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* A fresh binary cache: XDG_CACHE_HOME = work/xdg (not created yet), so the
 * cache directory is work/xdg/fmmcl. */
static const char *fresh_cache(void) {
  setenv("XDG_CACHE_HOME", in_work("xdg"), 1);
  unsetenv("FMMCL_NO_CACHE");
  static char dir[4096];
  snprintf(dir, sizeof dir, "%s/xdg/fmmcl", work);
  return dir;
}

/* Number of *.bin files in dir (0 when dir is absent); the path of one of
 * them in first (may be NULL); leftovers (any other file) in *others. */
static int count_bins(const char *dir, char *first, size_t len, int *others) {
  int n = 0, other = 0;
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      size_t l = strlen(e->d_name);
      if (l > 4 && strcmp(e->d_name + l - 4, ".bin") == 0) {
        if (n == 0 && first) snprintf(first, len, "%s/%s", dir, e->d_name);
        n++;
      } else {
        other++;
      }
    }
    closedir(d);
  }
  if (others) *others = other;
  return n;
}

static long file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Builds p2p.cl with options through the binary cache; says whether the
 * binary came from the cache. */
static int build(const char *options) {
  cl_program prog = NULL;
  int from_cache = -1;
  fmmcl_status st = fmmcl_program_build(ctx, "direct/p2p.cl", options, &prog, &from_cache);
  ck_assert_msg(st == FMMCL_SUCCESS, "fmmcl_program_build: %s: %s", fmmcl_strerror(st),
                fmmcl_last_error(ctx));
  ck_assert_ptr_nonnull(prog);
  ck_assert(from_cache == 0 || from_cache == 1);
  clReleaseProgram(prog);
  return from_cache;
}

/* A small float Laplace plan evaluated and checked against the reference
 * (grid points, so 1e-5 is the kernel's arithmetic alone, see check_direct);
 * its build options go to options. */
static void plan_is_correct(char *options, size_t len) {
  const size_t n = 200;
  double x[3 * 200], q[200], pot[200], grad[600], rp[200], rg[600];
  fmmcl_test_grid_points(7, n, 3, x);
  fmmcl_test_random_values(8, n, -1, 1, q);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  fmmcl_plan plan = NULL;
  fmmcl_status st = fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan);
  ck_assert_msg(st == FMMCL_SUCCESS, "fmmcl_plan_create: %s", fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, grad), FMMCL_SUCCESS);
  if (options) ck_assert_int_eq(fmmcl_plan_build_options(plan, options, len), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  ck_assert_int_eq(fmmcl_reference_direct(&o, n, x, q, 0, NULL, rp, rg), FMMCL_SUCCESS);
  ck_assert_msg(fmmcl_test_rel_l2(pot, rp, n) <= 1e-5 && fmmcl_test_rel_l2(grad, rg, 3 * n) <= 1e-5,
                "plan result wrong: errors %.3g %.3g", fmmcl_test_rel_l2(pot, rp, n),
                fmmcl_test_rel_l2(grad, rg, 3 * n));
}

/* The cache key a .bin file is named after. */
static uint64_t key_of(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strtoull(base, NULL, 16);
}

/* ---- status strings ------------------------------------------------------- */

START_TEST(test_strerror) {
  for (int a = 0; a < FMMCL_STATUS_COUNT; a++) {
    const char *sa = fmmcl_strerror((fmmcl_status)a);
    ck_assert_ptr_nonnull(sa);
    ck_assert_msg(sa[0] != '\0', "status %d has an empty string", a);
    for (int b = 0; b < a; b++)
      ck_assert_msg(strcmp(sa, fmmcl_strerror((fmmcl_status)b)) != 0, "statuses %d and %d read alike: %s", a,
                    b, sa);
  }
  const int outside[] = {FMMCL_STATUS_COUNT, -1, 1000};
  for (int k = 0; k < 3; k++) {
    const char *s = fmmcl_strerror((fmmcl_status)outside[k]);
    ck_assert_msg(s != NULL && s[0] != '\0', "status %d has no string", outside[k]);
  }
}
END_TEST

START_TEST(test_vendor_names) {
  for (int a = FMMCL_VENDOR_NVIDIA; a <= FMMCL_VENDOR_OTHER; a++) {
    const char *sa = fmmcl_vendor_name((fmmcl_vendor)a);
    ck_assert(sa != NULL && sa[0] != '\0');
    for (int b = FMMCL_VENDOR_NVIDIA; b < a; b++) ck_assert_str_ne(sa, fmmcl_vendor_name((fmmcl_vendor)b));
  }
}
END_TEST

/* ---- devices ------------------------------------------------------------- */

static fmmcl_device_info *list_devices(size_t *count) {
  ck_assert_int_eq(fmmcl_devices_list(NULL, 0, count), FMMCL_SUCCESS);
  ck_assert_uint_ge(*count, 1);
  fmmcl_device_info *info = calloc(*count, sizeof *info);
  ck_assert_ptr_nonnull(info);
  size_t again = 0;
  ck_assert_int_eq(fmmcl_devices_list(info, *count, &again), FMMCL_SUCCESS);
  ck_assert_uint_eq(again, *count);
  return info;
}

/* Index of the first device of a type, or -1. */
static long first_of(const fmmcl_device_info *info, size_t n, int gpu) {
  for (size_t i = 0; i < n; i++)
    if (gpu ? info[i].is_gpu : info[i].is_cpu) return (long)i;
  return -1;
}

START_TEST(test_devices_list) {
  size_t n = 0;
  fmmcl_device_info *info = list_devices(&n);
  for (size_t i = 0; i < n; i++) {
    ck_assert_msg(info[i].device_name[0] != '\0', "device %zu has no name", i);
    ck_assert_msg(info[i].platform_name[0] != '\0', "device %zu has no platform name", i);
    ck_assert_uint_gt(info[i].compute_units, 0);
    ck_assert_uint_gt(info[i].max_work_group_size, 0);
    ck_assert_uint_gt(info[i].global_mem_bytes, 0);
    ck_assert(info[i].platform_index >= 0 && info[i].device_index >= 0);
    ck_assert(info[i].vendor >= FMMCL_VENDOR_NVIDIA && info[i].vendor <= FMMCL_VENDOR_OTHER);
    if (contains(info[i].platform_name, "Portable Computing Language"))
      ck_assert_int_eq(info[i].vendor, FMMCL_VENDOR_POCL);
    for (size_t j = 0; j < i; j++)
      ck_assert_msg(
          info[i].platform_index != info[j].platform_index || info[i].device_index != info[j].device_index,
          "devices %zu and %zu share an index", i, j);
  }
  /* capacity 1: one entry filled, the count still says all */
  fmmcl_device_info two[2];
  memset(two, 0x5a, sizeof two);
  size_t count = 0;
  ck_assert_int_eq(fmmcl_devices_list(two, 1, &count), FMMCL_SUCCESS);
  ck_assert_uint_eq(count, n);
  ck_assert_str_eq(two[0].device_name, info[0].device_name);
  const unsigned char *tail = (const unsigned char *)&two[1];
  for (size_t b = 0; b < sizeof two[1]; b++) ck_assert_msg(tail[b] == 0x5a, "wrote past capacity");
  ck_assert_int_eq(fmmcl_devices_list(NULL, 0, NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_devices_list(NULL, 2, &count), FMMCL_ERROR_NULL_POINTER);
  ck_assert_str_ne(fmmcl_last_error(NULL), "");
  free(info);
}
END_TEST

START_TEST(test_select_type) {
  size_t n = 0, idx = 99;
  fmmcl_device_info *info = list_devices(&n);
  for (int gpu = 0; gpu <= 1; gpu++) {
    const long want = first_of(info, n, gpu);
    const fmmcl_status st = fmmcl_device_select(gpu ? "gpu" : "cpu", &idx);
    if (want < 0) {
      ck_assert_int_eq(st, FMMCL_ERROR_DEVICE_NOT_FOUND);
    } else {
      ck_assert_int_eq(st, FMMCL_SUCCESS);
      ck_assert_uint_eq(idx, (size_t)want);
      ck_assert(gpu ? info[idx].is_gpu : info[idx].is_cpu);
    }
  }
  ck_assert_int_eq(fmmcl_device_select("cpu", NULL), FMMCL_ERROR_NULL_POINTER);
  free(info);
}
END_TEST

START_TEST(test_select_index) {
  size_t n = 0, idx = 99;
  fmmcl_device_info *info = list_devices(&n);
  long want = -1;
  for (size_t i = 0; i < n; i++)
    if (info[i].platform_index == 0 && info[i].device_index == 0) want = (long)i;
  ck_assert_int_eq(fmmcl_device_select("0:0", &idx), want < 0 ? FMMCL_ERROR_DEVICE_NOT_FOUND : FMMCL_SUCCESS);
  if (want >= 0) ck_assert_uint_eq(idx, (size_t)want);
  /* the last device, by its own indices */
  char sel[32];
  snprintf(sel, sizeof sel, "%d:%d", info[n - 1].platform_index, info[n - 1].device_index);
  ck_assert_int_eq(fmmcl_device_select(sel, &idx), FMMCL_SUCCESS);
  ck_assert_uint_eq(idx, n - 1);
  int exists = 0;
  for (size_t i = 0; i < n; i++) exists |= info[i].platform_index == 9 && info[i].device_index == 9;
  if (!exists) {
    ck_assert_int_eq(fmmcl_device_select("9:9", &idx), FMMCL_ERROR_DEVICE_NOT_FOUND);
    ck_assert_str_ne(fmmcl_last_error(NULL), "");
  }
  free(info);
}
END_TEST

/* A case-insensitive piece from the middle of the first device's name. */
START_TEST(test_select_name) {
  size_t n = 0, idx = 99;
  fmmcl_device_info *info = list_devices(&n);
  const char *name = info[0].device_name;
  const size_t len = strlen(name), from = len / 4, take = len / 2 > 3 ? len / 2 : len - from;
  char lower[128], upper[128];
  snprintf(lower, sizeof lower, "%.*s", (int)take, name + from);
  strcpy(upper, lower);
  for (char *p = lower; *p; p++) *p = (char)tolower((unsigned char)*p);
  for (char *p = upper; *p; p++) *p = (char)toupper((unsigned char)*p);
  ck_assert_msg(fmmcl_device_select(lower, &idx) == FMMCL_SUCCESS, "\"%s\" of \"%s\": %s", lower, name,
                fmmcl_last_error(NULL));
  ck_assert_uint_eq(idx, 0);
  ck_assert_int_eq(fmmcl_device_select(upper, &idx), FMMCL_SUCCESS);
  ck_assert_uint_eq(idx, 0);
  free(info);
}
END_TEST

START_TEST(test_select_not_found) {
  size_t n = 0, idx = 99;
  fmmcl_device_info *info = list_devices(&n);
  ck_assert_int_eq(fmmcl_device_select("no-such-device-xyz", &idx), FMMCL_ERROR_DEVICE_NOT_FOUND);
  const char *msg = fmmcl_last_error(NULL);
  ck_assert_msg(contains(msg, "no-such-device-xyz"), "message does not name the selector: %s", msg);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(contains(msg, info[i].device_name), "message does not list %s: %s", info[i].device_name,
                  msg);
  fmmcl_context c = (fmmcl_context)&idx; /* must come back NULL */
  ck_assert_int_eq(fmmcl_context_create(&c, "no-such-device-xyz"), FMMCL_ERROR_DEVICE_NOT_FOUND);
  ck_assert_ptr_null(c);
  ck_assert(contains(fmmcl_last_error(NULL), info[0].device_name));
  free(info);
}
END_TEST

START_TEST(test_select_env) {
  size_t n = 0, idx = 99;
  fmmcl_device_info *info = list_devices(&n);
  setenv("FMMCL_DEVICE", "no-such-device-xyz", 1);
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(fmmcl_device_select(k ? "" : NULL, &idx), FMMCL_ERROR_DEVICE_NOT_FOUND);
    ck_assert_msg(contains(fmmcl_last_error(NULL), "FMMCL_DEVICE"), "message: %s", fmmcl_last_error(NULL));
  }
  fmmcl_context c = NULL;
  ck_assert_int_eq(fmmcl_context_create(&c, NULL), FMMCL_ERROR_DEVICE_NOT_FOUND);
  ck_assert(contains(fmmcl_last_error(NULL), "FMMCL_DEVICE"));
  /* an explicit selector wins over the environment */
  char sel[32];
  snprintf(sel, sizeof sel, "%d:%d", info[n - 1].platform_index, info[n - 1].device_index);
  ck_assert_int_eq(fmmcl_device_select(sel, &idx), FMMCL_SUCCESS);
  ck_assert_uint_eq(idx, n - 1);
  const long cpu = first_of(info, n, 0);
  setenv("FMMCL_DEVICE", "cpu", 1);
  ck_assert_int_eq(fmmcl_device_select(NULL, &idx), cpu < 0 ? FMMCL_ERROR_DEVICE_NOT_FOUND : FMMCL_SUCCESS);
  if (cpu >= 0) ck_assert_uint_eq(idx, (size_t)cpu);
  /* the environment reaches fmmcl_context_create too */
  setenv("FMMCL_DEVICE", sel, 1);
  ck_assert_int_eq(fmmcl_context_create(&c, NULL), FMMCL_SUCCESS);
  fmmcl_device_info got;
  ck_assert_int_eq(fmmcl_context_device(c, &got), FMMCL_SUCCESS);
  ck_assert_str_eq(got.device_name, info[n - 1].device_name);
  ck_assert_int_eq(got.platform_index, info[n - 1].platform_index);
  ck_assert_int_eq(got.device_index, info[n - 1].device_index);
  fmmcl_context_destroy(c);
  free(info);
}
END_TEST

START_TEST(test_select_default) {
  size_t n = 0, idx = 99;
  fmmcl_device_info *info = list_devices(&n);
  unsetenv("FMMCL_DEVICE");
  long want = first_of(info, n, 1);
  if (want < 0) want = first_of(info, n, 0);
  if (want < 0) want = 0;
  ck_assert_int_eq(fmmcl_device_select(NULL, &idx), FMMCL_SUCCESS);
  ck_assert_uint_eq(idx, (size_t)want);
  ck_assert_int_eq(fmmcl_device_select("", &idx), FMMCL_SUCCESS);
  ck_assert_uint_eq(idx, (size_t)want);
  free(info);
}
END_TEST

/* ---- contexts ------------------------------------------------------------- */

START_TEST(test_context_lifecycle) {
  size_t n = 0, idx = 0;
  fmmcl_device_info *info = list_devices(&n);
  ck_assert_int_eq(fmmcl_context_create(NULL, "cpu"), FMMCL_ERROR_NULL_POINTER);
  for (int round = 0; round < 2; round++) {
    fmmcl_context c = NULL;
    ck_assert_int_eq(fmmcl_context_create(&c, NULL), FMMCL_SUCCESS);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(fmmcl_device_select(NULL, &idx), FMMCL_SUCCESS);
    fmmcl_device_info got;
    memset(&got, 0, sizeof got);
    ck_assert_int_eq(fmmcl_context_device(c, &got), FMMCL_SUCCESS);
    ck_assert_str_eq(got.device_name, info[idx].device_name);
    ck_assert_str_eq(got.platform_name, info[idx].platform_name);
    ck_assert_int_eq(got.platform_index, info[idx].platform_index);
    ck_assert_int_eq(got.device_index, info[idx].device_index);
    ck_assert_uint_eq(got.compute_units, info[idx].compute_units);
    ck_assert_uint_eq(got.max_work_group_size, info[idx].max_work_group_size);
    ck_assert_str_eq(fmmcl_last_error(c), "");
    ck_assert_int_eq(fmmcl_context_device(c, NULL), FMMCL_ERROR_NULL_POINTER);
    ck_assert(contains(fmmcl_last_error(c), "fmmcl_context_device"));
    ck_assert_int_eq(fmmcl_context_destroy(c), FMMCL_SUCCESS);
  }
  fmmcl_device_info got;
  ck_assert_int_eq(fmmcl_context_device(NULL, &got), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_context_destroy(NULL), FMMCL_SUCCESS);
  free(info);
}
END_TEST

/* ---- kernel sources ------------------------------------------------------- */

/* dir/direct/p2p.cl and dir/common/fmmcl_common.h: copies of the build
 * tree's, each with text appended (NULL: no file at all). */
static void kernel_dir(const char *dir, const char *p2p_extra, const char *header_extra) {
  ck_assert(mkdir(dir, 0755) == 0);
  const char *subdirs[] = {"direct", "common"};
  for (int k = 0; k < 2; k++) {
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/%s", dir, subdirs[k]);
    ck_assert(mkdir(sub, 0755) == 0);
  }
  const char *files[] = {"direct/p2p.cl", "common/fmmcl_common.h"}, *extra[] = {p2p_extra, header_extra};
  for (int k = 0; k < 2; k++) {
    if (!extra[k]) continue;
    char *orig = NULL, *text, path[4096];
    size_t len;
    const char *saved = getenv("FMMCL_KERNEL_PATH");
    char *keep = saved ? strdup(saved) : NULL;
    unsetenv("FMMCL_KERNEL_PATH");
    ck_assert_int_eq(fmmcl_kernel_find(NULL, files[k], &orig), FMMCL_SUCCESS);
    if (keep) setenv("FMMCL_KERNEL_PATH", keep, 1);
    free(keep);
    text = read_whole(orig, &len);
    snprintf(path, sizeof path, "%s/%s", dir, files[k]);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fputs(extra[k], f);
    ck_assert_int_eq(fclose(f), 0);
    free(orig);
    free(text);
  }
}

START_TEST(test_kernel_find_order) {
  char *path = NULL;
  ck_assert_int_eq(fmmcl_kernel_find(NULL, "direct/p2p.cl", &path), FMMCL_SUCCESS);
  ck_assert_msg(strncmp(path, FMMCL_BUILD_KERNEL_DIR "/", strlen(FMMCL_BUILD_KERNEL_DIR) + 1) == 0,
                "without FMMCL_KERNEL_PATH: %s, not in the build tree", path);
  free(path);
  const char *mine = in_work("kernels"), *empty = in_work("empty");
  kernel_dir(mine, "\n/* a copy */\n", "\n/* a copy */\n");
  kernel_dir(empty, NULL, NULL);
  char env[8192], want[4096];
  /* absent and empty entries are skipped; the first directory holding the file wins */
  snprintf(env, sizeof env, "%s/absent::%s:%s:", work, empty, mine);
  setenv("FMMCL_KERNEL_PATH", env, 1);
  const char *files[] = {"direct/p2p.cl", "common/fmmcl_common.h"};
  for (int k = 0; k < 2; k++) {
    snprintf(want, sizeof want, "%s/%s", mine, files[k]);
    ck_assert_int_eq(fmmcl_kernel_find(NULL, files[k], &path), FMMCL_SUCCESS);
    ck_assert_str_eq(path, want);
    free(path);
  }
  /* a file the path lacks comes from the build tree */
  setenv("FMMCL_KERNEL_PATH", empty, 1);
  ck_assert_int_eq(fmmcl_kernel_find(NULL, "direct/p2p.cl", &path), FMMCL_SUCCESS);
  ck_assert_str_eq(path, FMMCL_BUILD_KERNEL_DIR "/direct/p2p.cl");
  free(path);
}
END_TEST

START_TEST(test_kernel_not_found) {
  char env[8192], *path = NULL;
  snprintf(env, sizeof env, "%s/first-absent:%s/second-absent", work, work);
  setenv("FMMCL_KERNEL_PATH", env, 1);
  ck_assert_int_eq(fmmcl_kernel_find(ctx, "fmmcl_no_such_kernel.cl", &path), FMMCL_ERROR_KERNEL_NOT_FOUND);
  const char *msg = fmmcl_last_error(ctx);
  const char *want[] = {"fmmcl_no_such_kernel.cl", in_work("first-absent"), in_work("second-absent"),
                        FMMCL_BUILD_KERNEL_DIR, FMMCL_INSTALL_KERNEL_DIR};
  for (int k = 0; k < 5; k++) ck_assert_msg(contains(msg, want[k]), "message lacks %s: %s", want[k], msg);
  /* and through a build */
  cl_program prog = NULL;
  ck_assert_int_eq(fmmcl_program_build(ctx, "fmmcl_no_such_kernel.cl", OPTS_A, &prog, NULL),
                   FMMCL_ERROR_KERNEL_NOT_FOUND);
  ck_assert(contains(fmmcl_last_error(ctx), "fmmcl_no_such_kernel.cl"));
}
END_TEST

/* The copy in FMMCL_KERNEL_PATH is what gets compiled: a #error in its
 * header fails the plan, and the compiler's log carries the marker. */
START_TEST(test_kernel_path_header_error) {
  const char *cache = fresh_cache(), *dir = in_work("kernels");
  kernel_dir(dir, "", "\n#error \"fmmcl-test-marker-7421\"\n");
  setenv("FMMCL_KERNEL_PATH", dir, 1);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  double x[6] = {0, 0, 0, 1, 1, 1};
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 2, x, 0, NULL, &plan), FMMCL_ERROR_BUILD_FAILED);
  ck_assert_ptr_null(plan);
  const char *msg = fmmcl_last_error(ctx);
  ck_assert_msg(contains(msg, "direct/p2p.cl") && contains(msg, "fmmcl-test-marker-7421"), "message: %s",
                msg);
  ck_assert_int_eq(count_bins(cache, NULL, 0, NULL), 0); /* a failed build is not cached */
}
END_TEST

START_TEST(test_kernel_path_syntax_error) {
  const char *cache = fresh_cache(), *dir = in_work("kernels");
  kernel_dir(dir, "\nfmmcl_test_syntax_error here is not OpenCL C;\n", "");
  setenv("FMMCL_KERNEL_PATH", dir, 1);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
  double x[6] = {0, 0, 0, 1, 1, 1};
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 2, x, 0, NULL, &plan), FMMCL_ERROR_BUILD_FAILED);
  ck_assert_ptr_null(plan);
  const char *msg = fmmcl_last_error(ctx), *log = strstr(msg, "build log:");
  ck_assert_msg(log != NULL, "no build log in: %s", msg);
  ck_assert_msg(contains(log, "error"), "the log does not say error: %s", msg);
  cl_program prog = NULL;
  ck_assert_int_eq(fmmcl_program_build(ctx, "direct/p2p.cl", OPTS_A, &prog, NULL), FMMCL_ERROR_BUILD_FAILED);
  ck_assert(contains(fmmcl_last_error(ctx), "error"));
  ck_assert_int_eq(count_bins(cache, NULL, 0, NULL), 0);
}
END_TEST

/* The cache key covers the program text: an edited kernel or header is a
 * new binary, never the old one served from the cache. */
START_TEST(test_cache_key_covers_source) {
  fresh_cache();
  ck_assert_int_eq(build(OPTS_A), 0);
  ck_assert_int_eq(build(OPTS_A), 1);
  const char *edited = in_work("edited"), *header = in_work("header");
  kernel_dir(edited, "\n/* edited */\n", "");
  kernel_dir(header, "", "\n/* edited */\n");
  setenv("FMMCL_KERNEL_PATH", edited, 1);
  ck_assert_msg(build(OPTS_A) == 0, "an edited p2p.cl came from the cache");
  ck_assert_int_eq(build(OPTS_A), 1);
  setenv("FMMCL_KERNEL_PATH", header, 1);
  ck_assert_msg(build(OPTS_A) == 0, "an edited fmmcl_common.h came from the cache");
  unsetenv("FMMCL_KERNEL_PATH");
  ck_assert_int_eq(build(OPTS_A), 1);
}
END_TEST

/* Writes text to dir/name (dir must exist). */
static void write_text(const char *dir, const char *name, const char *text) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

/* Builds dir's put.cl and returns what its kernel stores; *cached says
 * whether the binary came from the cache. */
static int run_put(int *cached) {
  cl_program prog = NULL;
  ck_assert_int_eq(fmmcl_program_build(ctx, "put.cl", "", &prog, cached), FMMCL_SUCCESS);
  cl_int err;
  cl_kernel k = clCreateKernel(prog, "put", &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  cl_mem buf = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, sizeof(cl_int), NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  ck_assert_int_eq(clSetKernelArg(k, 0, sizeof buf, &buf), CL_SUCCESS);
  size_t one = 1;
  ck_assert_int_eq(clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &one, &one, 0, NULL, NULL), CL_SUCCESS);
  cl_int v = -1;
  ck_assert_int_eq(clEnqueueReadBuffer(ctx->queue, buf, CL_TRUE, 0, sizeof v, &v, 0, NULL, NULL), CL_SUCCESS);
  clReleaseMemObject(buf);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  return v;
}

/* A kernel file includes headers by their name under cl/: each header's
 * text enters the program once however often it is named (a function
 * defined twice would not compile), an edited header is a new binary,
 * and an absent one is an error naming it. */
START_TEST(test_kernel_include) {
  fresh_cache();
  const char *dir = in_work("inc");
  char sub[4096];
  snprintf(sub, sizeof sub, "%s/kernels", dir);
  ck_assert(mkdir(dir, 0755) == 0 && mkdir(sub, 0755) == 0);
  write_text(dir, "kernels/value.h", "int fmmcl_test_value(void) { return 3; }\n");
  write_text(dir, "put.cl",
             "#include \"kernels/value.h\"\n  #include \"kernels/value.h\"\n"
             "__kernel void put(__global int *o) { o[0] = fmmcl_test_value(); }\n");
  setenv("FMMCL_KERNEL_PATH", dir, 1);
  int cached = -1;
  ck_assert_int_eq(run_put(&cached), 3);
  ck_assert_int_eq(cached, 0);
  ck_assert_int_eq(run_put(&cached), 3);
  ck_assert_int_eq(cached, 1);
  write_text(dir, "kernels/value.h", "int fmmcl_test_value(void) { return 5; }\n");
  ck_assert_int_eq(run_put(&cached), 5);
  ck_assert_msg(cached == 0, "an edited included header came from the cache");
  write_text(dir, "put.cl",
             "#include \"kernels/absent.h\"\n__kernel void put(__global int *o) { o[0] = 1; }\n");
  cl_program prog = NULL;
  ck_assert_int_eq(fmmcl_program_build(ctx, "put.cl", "", &prog, NULL), FMMCL_ERROR_KERNEL_NOT_FOUND);
  ck_assert_msg(contains(fmmcl_last_error(ctx), "kernels/absent.h"), "message: %s", fmmcl_last_error(ctx));
}
END_TEST

/* ---- binary cache ---------------------------------------------------------- */

START_TEST(test_cache_first_build) {
  const char *cache = fresh_cache();
  char dir[4096], bin[4096];
  int enabled = -1, others = 0;
  unsigned long long bytes = 99;
  ck_assert_int_eq(fmmcl_cache_info(dir, sizeof dir, &enabled, &bytes), FMMCL_SUCCESS);
  ck_assert_str_eq(dir, cache);
  ck_assert_int_eq(enabled, 1);
  ck_assert_uint_eq(bytes, 0);
  ck_assert_int_eq(count_bins(cache, NULL, 0, NULL), 0);
  plan_is_correct(NULL, 0);
  ck_assert_int_eq(count_bins(cache, bin, sizeof bin, &others), 1);
  ck_assert_int_eq(others, 0); /* no temporary file left behind */
  ck_assert_int_eq(fmmcl_cache_info(NULL, 0, NULL, &bytes), FMMCL_SUCCESS);
  ck_assert_uint_gt(bytes, 0);
  ck_assert_uint_eq(bytes, (unsigned long long)file_size(bin));
  /* the same plan again is served from the cache: nothing new written */
  plan_is_correct(NULL, 0);
  ck_assert_int_eq(count_bins(cache, NULL, 0, NULL), 1);
}
END_TEST

START_TEST(test_cache_from_cache_flag) {
  const char *cache = fresh_cache();
  ck_assert_int_eq(build(OPTS_A), 0);
  ck_assert_int_eq(count_bins(cache, NULL, 0, NULL), 1);
  ck_assert_int_eq(build(OPTS_A), 1);
  ck_assert_int_eq(build(OPTS_B), 0); /* other options, other binary */
  ck_assert_int_eq(count_bins(cache, NULL, 0, NULL), 2);
  ck_assert_int_eq(build(OPTS_B), 1);
  ck_assert_int_eq(build(OPTS_A), 1);
}
END_TEST

/* Ways a cached file goes bad. Each must be rebuilt from source (success,
 * from_cache = 0), leave a valid file (the next build is a hit), and the
 * rebuilt binary must compute the right sums. */
enum { FLIP_PAYLOAD, FLIP_HEADER, TRUNCATE, GARBAGE, EMPTY, NOT_A_BINARY, N_DAMAGE };
static const char *const damage_names[] = {"a payload byte flipped",
                                           "a header byte flipped",
                                           "truncated",
                                           "garbage",
                                           "empty",
                                           "a well-formed file of a non-binary"};

START_TEST(test_cache_damaged) {
  const char *cache = fresh_cache();
  char options[1024], bin[4096];
  plan_is_correct(options, sizeof options);
  ck_assert_int_eq(count_bins(cache, bin, sizeof bin, NULL), 1);
  const uint64_t key = key_of(bin);
  char expect[4096];
  ck_assert_int_eq(fmmcl_cache_file_path(key, expect, sizeof expect), FMMCL_SUCCESS);
  ck_assert_str_eq(expect, bin);
  ck_assert_int_eq(build(options), 1); /* the plan's binary, found by the plan's options */

  size_t len = 0;
  char *data = read_whole(bin, &len);
  ck_assert_uint_gt(len, 64);
  switch (_i) {
    case FLIP_PAYLOAD:
      data[len / 2] ^= 0x10;
      write_file(bin, data, len);
      break;
    case FLIP_HEADER:
      data[2] ^= 0x01;
      write_file(bin, data, len);
      break;
    case TRUNCATE: write_file(bin, data, len / 2); break;
    case GARBAGE:
      for (size_t i = 0; i < len; i++) data[i] = (char)('a' + i % 26);
      write_file(bin, data, len);
      break;
    case EMPTY: write_file(bin, "", 0); break;
    case NOT_A_BINARY: {
      /* right magic, key, length and checksum around bytes no OpenCL
       * runtime can load: only the runtime can refuse it */
      unsigned char junk[4096];
      for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 131 + 7);
      ck_assert_int_eq(fmmcl_cache_store(key, junk, sizeof junk), FMMCL_SUCCESS);
      break;
    }
  }
  free(data);
  unsigned char *loaded = (unsigned char *)&len; /* must stay as it is on a refusal */
  size_t loaded_len = 12345;
  const fmmcl_status load = fmmcl_cache_load(key, &loaded, &loaded_len);
  if (_i == NOT_A_BINARY) {
    ck_assert_int_eq(load, FMMCL_SUCCESS);
    free(loaded);
  } else {
    ck_assert_msg(load == FMMCL_ERROR_CORRUPT_FILE, "%s: load gave \"%s\"", damage_names[_i],
                  fmmcl_strerror(load));
    ck_assert(loaded == (unsigned char *)&len && loaded_len == 12345);
  }
  ck_assert_msg(build(options) == 0, "%s: served from the cache", damage_names[_i]);
  ck_assert_msg(build(options) == 1, "%s: the rebuilt binary was not stored", damage_names[_i]);
  int others = 0;
  ck_assert_int_eq(count_bins(cache, NULL, 0, &others), 1);
  ck_assert_int_eq(others, 0);
  plan_is_correct(NULL, 0);
}
END_TEST

/* A well-formed file stored under another key's name (a stale or misplaced
 * binary) is refused: its header names its own key. */
START_TEST(test_cache_stale_key) {
  const char *cache = fresh_cache();
  char bin_a[4096], bin_b[4096], any[4096];
  ck_assert_int_eq(build(OPTS_A), 0);
  ck_assert_int_eq(count_bins(cache, bin_a, sizeof bin_a, NULL), 1);
  ck_assert_int_eq(build(OPTS_B), 0);
  ck_assert_int_eq(count_bins(cache, any, sizeof any, NULL), 2);
  /* B's file is the one that is not A's */
  DIR *d = opendir(cache);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  bin_b[0] = '\0';
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      snprintf(any, sizeof any, "%s/%s", cache, e->d_name);
      if (strcmp(any, bin_a) != 0) strcpy(bin_b, any);
    }
  closedir(d);
  ck_assert(bin_b[0] != '\0');
  size_t len = 0;
  char *a = read_whole(bin_a, &len);
  write_file(bin_b, a, len);
  free(a);
  unsigned char *loaded = NULL;
  size_t loaded_len = 0;
  ck_assert_int_eq(fmmcl_cache_load(key_of(bin_b), &loaded, &loaded_len), FMMCL_ERROR_CORRUPT_FILE);
  ck_assert_ptr_null(loaded);
  ck_assert_msg(build(OPTS_B) == 0, "A's binary was served for B");
  ck_assert_int_eq(build(OPTS_B), 1);
  ck_assert_int_eq(build(OPTS_A), 1);
}
END_TEST

START_TEST(test_cache_disabled) {
  const char *cache = fresh_cache();
  setenv("FMMCL_NO_CACHE", "1", 1);
  int enabled = -1;
  ck_assert_int_eq(fmmcl_cache_info(NULL, 0, &enabled, NULL), FMMCL_SUCCESS);
  ck_assert_int_eq(enabled, 0);
  ck_assert_int_eq(build(OPTS_A), 0);
  ck_assert_int_eq(build(OPTS_A), 0);
  plan_is_correct(NULL, 0);
  ck_assert_int_eq(count_bins(cache, NULL, 0, NULL), 0);
  /* an existing binary is not read either */
  unsetenv("FMMCL_NO_CACHE");
  ck_assert_int_eq(build(OPTS_A), 0);
  setenv("FMMCL_NO_CACHE", "1", 1);
  ck_assert_int_eq(build(OPTS_A), 0);
  /* "0" and "" leave the cache on */
  const char *on[] = {"0", ""};
  for (int k = 0; k < 2; k++) {
    setenv("FMMCL_NO_CACHE", on[k], 1);
    ck_assert_int_eq(fmmcl_cache_info(NULL, 0, &enabled, NULL), FMMCL_SUCCESS);
    ck_assert_int_eq(enabled, 1);
    ck_assert_int_eq(build(OPTS_A), 1);
  }
}
END_TEST

/* A cache that cannot be written only costs time: the build succeeds. */
START_TEST(test_cache_unwritable) {
  char where[4096];
  switch (_i) {
    case 0: /* XDG_CACHE_HOME is a regular file */
      write_file(in_work("file"), "x", 1);
      snprintf(where, sizeof where, "%s", in_work("file"));
      break;
    case 1: /* the fmmcl directory inside it is a regular file */
      ck_assert(mkdir(in_work("xdg"), 0755) == 0);
      write_file(in_work("xdg/fmmcl"), "x", 1);
      snprintf(where, sizeof where, "%s", in_work("xdg"));
      break;
    default: /* a place no one may create directories, root included */
      snprintf(where, sizeof where, "/proc/fmmcl-no-such-dir");
      break;
  }
  setenv("XDG_CACHE_HOME", where, 1);
  ck_assert_int_eq(build(OPTS_A), 0);
  ck_assert_int_eq(build(OPTS_A), 0);
  plan_is_correct(NULL, 0);
  unsigned long long bytes = 99;
  ck_assert_int_eq(fmmcl_cache_info(NULL, 0, NULL, &bytes), FMMCL_SUCCESS);
  ck_assert_uint_eq(bytes, 0);
}
END_TEST

/* The primitives alone: the hash streams (keys are hashed part by part),
 * store/load round trip, absent and damaged files. */
START_TEST(test_cache_primitives) {
  fresh_cache();
  ck_assert_uint_eq(fmmcl_hash64(FMMCL_HASH64_INIT, "", 0), FMMCL_HASH64_INIT);
  ck_assert_uint_eq(fmmcl_hash64(fmmcl_hash64(FMMCL_HASH64_INIT, "foo", 3), "bar", 3),
                    fmmcl_hash64(FMMCL_HASH64_INIT, "foobar", 6));
  ck_assert_uint_ne(fmmcl_hash64(FMMCL_HASH64_INIT, "foobar", 6),
                    fmmcl_hash64(FMMCL_HASH64_INIT, "foobaz", 6));
  const uint64_t key = 0x0123456789abcdefULL;
  unsigned char payload[1000], *data = NULL;
  size_t len = 0;
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (unsigned char)(i * 7);
  ck_assert_int_eq(fmmcl_cache_load(key, &data, &len), FMMCL_ERROR_IO);
  ck_assert_ptr_null(data);
  ck_assert_int_eq(fmmcl_cache_store(key, payload, sizeof payload), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_cache_load(key, &data, &len), FMMCL_SUCCESS);
  ck_assert_uint_eq(len, sizeof payload);
  ck_assert(memcmp(data, payload, len) == 0);
  free(data);
  data = NULL;
  ck_assert_int_eq(fmmcl_cache_load(key + 1, &data, &len), FMMCL_ERROR_IO);
  char path[4096];
  ck_assert_int_eq(fmmcl_cache_file_path(key, path, sizeof path), FMMCL_SUCCESS);
  ck_assert(contains(path, "0123456789abcdef"));
  /* one byte appended is damage too */
  FILE *f = fopen(path, "ab");
  ck_assert_ptr_nonnull(f);
  fputc(0, f);
  fclose(f);
  ck_assert_int_eq(fmmcl_cache_load(key, &data, &len), FMMCL_ERROR_CORRUPT_FILE);
  ck_assert_ptr_null(data);
}
END_TEST

START_TEST(test_cache_dir_from_home) {
  char dir[4096], want[4096];
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", work, 1);
  ck_assert_int_eq(fmmcl_cache_info(dir, sizeof dir, NULL, NULL), FMMCL_SUCCESS);
  snprintf(want, sizeof want, "%s/.cache/fmmcl", work);
  ck_assert_str_eq(dir, want);
  setenv("XDG_CACHE_HOME", "", 1); /* empty is unset */
  ck_assert_int_eq(fmmcl_cache_info(dir, sizeof dir, NULL, NULL), FMMCL_SUCCESS);
  ck_assert_str_eq(dir, want);
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  ck_assert_int_eq(fmmcl_cache_info(dir, sizeof dir, NULL, NULL), FMMCL_ERROR_IO);
  ck_assert_str_ne(fmmcl_last_error(NULL), "");
}
END_TEST

/* ---- last error -------------------------------------------------------------- */

START_TEST(test_last_error_no_context) {
  size_t idx, n;
  ck_assert_int_eq(fmmcl_device_select("no-such-device-xyz", &idx), FMMCL_ERROR_DEVICE_NOT_FOUND);
  ck_assert_str_ne(fmmcl_last_error(NULL), "");
  ck_assert_int_eq(fmmcl_devices_list(NULL, 0, &n), FMMCL_SUCCESS);
  ck_assert_str_eq(fmmcl_last_error(NULL), "");
  ck_assert_int_eq(fmmcl_device_select("no-such-device-xyz", &idx), FMMCL_ERROR_DEVICE_NOT_FOUND);
  ck_assert_int_eq(fmmcl_cache_info(NULL, 0, NULL, NULL), FMMCL_SUCCESS);
  ck_assert_str_eq(fmmcl_last_error(NULL), "");
  ck_assert_int_eq(fmmcl_device_select("no-such-device-xyz", &idx), FMMCL_ERROR_DEVICE_NOT_FOUND);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  double x[3] = {0, 0, 0}, q = 1, pot;
  ck_assert_int_eq(fmmcl_reference_direct(&o, 1, x, &q, 0, NULL, &pot, NULL), FMMCL_SUCCESS);
  ck_assert_str_eq(fmmcl_last_error(NULL), "");
}
END_TEST

START_TEST(test_last_error_context) {
  size_t n;
  ck_assert_int_eq(fmmcl_devices_list(NULL, 0, &n), FMMCL_SUCCESS); /* thread message now "" */
  fmmcl_context other = fmmcl_test_context();
  ck_assert_ptr_nonnull(other);
  ck_assert_str_eq(fmmcl_last_error(ctx), "");
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  double x[6] = {0, 0, 0, 1, 1, 1}, q[2] = {1, 1}, pot[2];
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, NULL, 2, x, 0, NULL, &plan), FMMCL_ERROR_NULL_POINTER);
  ck_assert_msg(contains(fmmcl_last_error(ctx), "fmmcl_plan_create"), "message: %s", fmmcl_last_error(ctx));
  ck_assert_str_eq(fmmcl_last_error(other), ""); /* contexts keep their own */
  ck_assert_str_eq(fmmcl_last_error(NULL), "");  /* and the thread's is apart */
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 2, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_str_eq(fmmcl_last_error(ctx), ""); /* a successful call clears it */
  ck_assert_int_eq(fmmcl_plan_execute(plan, NULL, pot, NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_msg(contains(fmmcl_last_error(ctx), "fmmcl_plan_execute"), "message: %s", fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
  ck_assert_str_eq(fmmcl_last_error(ctx), "");
  fmmcl_plan_destroy(plan);
  o.sigma = -1;
  o.kernel = FMMCL_GAUSSIAN;
  ck_assert_int_eq(fmmcl_plan_create(other, &o, 2, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert(contains(fmmcl_last_error(other), "sigma"));
  ck_assert_str_eq(fmmcl_last_error(ctx), "");
  fmmcl_context_destroy(other);
}
END_TEST

static void *fail_in_thread(void *arg) {
  size_t idx;
  int *ok = arg;
  *ok = fmmcl_device_select("no-such-device-xyz", &idx) == FMMCL_ERROR_DEVICE_NOT_FOUND &&
        fmmcl_last_error(NULL)[0] != '\0';
  return NULL;
}

/* Context-less messages belong to the calling thread. */
START_TEST(test_last_error_per_thread) {
  size_t n;
  ck_assert_int_eq(fmmcl_devices_list(NULL, 0, &n), FMMCL_SUCCESS);
  pthread_t t;
  int ok = 0;
  ck_assert_int_eq(pthread_create(&t, NULL, fail_in_thread, &ok), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ck_assert(ok);
  ck_assert_str_eq(fmmcl_last_error(NULL), "");
}
END_TEST

/* ---- launch helpers (core/launch.h) ----------------------------------------- */

static const char launch_test_cl[] =
    "__kernel void launch_test_add(__global uint *a, uint v) { a[get_global_id(0)] += v; }\n";

/* work/kernels/test/launch_test.cl built through FMMCL_KERNEL_PATH: one
 * kernel adding v to every element. */
static cl_program launch_test_program(void) {
  fresh_cache();
  char dir[4096], sub[4104], file[4128];
  snprintf(dir, sizeof dir, "%s", in_work("kernels"));
  snprintf(sub, sizeof sub, "%s/test", dir);
  snprintf(file, sizeof file, "%s/launch_test.cl", sub);
  ck_assert(mkdir(dir, 0755) == 0 && mkdir(sub, 0755) == 0);
  write_file(file, launch_test_cl, strlen(launch_test_cl));
  setenv("FMMCL_KERNEL_PATH", dir, 1);
  cl_program prog = NULL;
  fmmcl_status st = fmmcl_program_build(ctx, "test/launch_test.cl", "-DFMMCL_SINGLE=1", &prog, NULL);
  ck_assert_msg(st == FMMCL_SUCCESS, "building launch_test.cl: %s", fmmcl_last_error(ctx));
  return prog;
}

static cl_kernel launch_test_kernel(cl_program prog) {
  cl_kernel k = NULL;
  fmmcl_status st = fmmcl_create_kernel(ctx, prog, "test/launch_test.cl", "launch_test_add", &k);
  ck_assert_msg(st == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
  return k;
}

/* Launches logged under phases, flushed once: each phase's time is the
 * sum of its launches' event times, phases keep the order of their first
 * entry, an empty launch logs nothing, a slot left NULL records its phase
 * with no time, and the log grows past any fixed size. */
START_TEST(test_event_log_sums_phases) {
  cl_program prog = launch_test_program();
  cl_kernel k = launch_test_kernel(prog);
  enum { N = 256, MANY = 300 };
  cl_uint host[N] = {0};
  cl_mem buf = NULL;
  ck_assert_int_eq(fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, sizeof host, host, &buf), FMMCL_SUCCESS);
  double x[6] = {0, 0, 0, 1, 1, 1};
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 2, x, 0, NULL, &plan), FMMCL_SUCCESS);
  plan->n_phases = 0; /* only what the log records */

  fmmcl_event_log log = {0};
  const char *phase[3] = {"alpha", "beta", "alpha"};
  cl_event kept[3];
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(buf), FMMCL_ARG_UINT(i + 1)), FMMCL_SUCCESS);
    ck_assert_int_eq(fmmcl_launch(ctx, k, N, 64, &log, phase[i]), FMMCL_SUCCESS);
    kept[i] = log.ev[log.n - 1];
    ck_assert_ptr_nonnull(kept[i]);
    ck_assert_int_eq(clRetainEvent(kept[i]), CL_SUCCESS);
  }
  ck_assert_int_eq(fmmcl_launch(ctx, k, 0, 64, &log, "gamma"), FMMCL_SUCCESS);
  ck_assert_uint_eq(log.n, 3);
  ck_assert_ptr_nonnull(fmmcl_event_log_slot(&log, "delta"));
  ck_assert_int_eq(FMMCL_KERNEL_ARGS(ctx, k, 1, FMMCL_ARG_UINT(1)), FMMCL_SUCCESS);
  for (int i = 0; i < MANY; i++) ck_assert_int_eq(fmmcl_launch(ctx, k, N, 64, &log, "beta"), FMMCL_SUCCESS);
  ck_assert_uint_eq(log.n, 4 + MANY);
  ck_assert_int_eq(fmmcl_event_log_flush(plan, &log), FMMCL_SUCCESS);
  ck_assert_uint_eq(log.n, 0);
  ck_assert_ptr_null(log.ev);

  fmmcl_phase_time t[8];
  size_t count = 0;
  ck_assert_int_eq(fmmcl_plan_timings(plan, t, 8, &count), FMMCL_SUCCESS);
  ck_assert_uint_eq(count, 3);
  ck_assert_str_eq(t[0].name, "alpha");
  ck_assert_str_eq(t[1].name, "beta");
  ck_assert_str_eq(t[2].name, "delta");
  const double s0 = fmmcl_event_seconds(kept[0]), s1 = fmmcl_event_seconds(kept[1]),
               s2 = fmmcl_event_seconds(kept[2]);
  ck_assert_double_eq_tol(t[0].seconds, s0 + s2, 1e-12);
  ck_assert(t[1].seconds >= s1);
  ck_assert_double_eq(t[2].seconds, 0.0);
  /* nothing waited between the launches, yet the in-order queue ran them all */
  ck_assert_int_eq(clEnqueueReadBuffer(ctx->queue, buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL),
                   CL_SUCCESS);
  for (int i = 0; i < N; i++) ck_assert_uint_eq(host[i], 1 + 2 + 3 + MANY);

  /* without a plan: the sum of every entry */
  double total = -1;
  ck_assert_int_eq(fmmcl_launch(ctx, k, N, 64, &log, "one"), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_event_log_total(ctx, &log, &total), FMMCL_SUCCESS);
  ck_assert(total >= 0);
  for (int i = 0; i < 3; i++) fmmcl_release(&kept[i]);
  fmmcl_plan_destroy(plan);
  fmmcl_release(&buf);
  fmmcl_release(&k);
  fmmcl_release(&prog);
}
END_TEST

/* A kernel the program lacks: the message names it and the program's file. */
START_TEST(test_create_kernel_bad_name) {
  cl_program prog = launch_test_program();
  cl_kernel k = launch_test_kernel(prog);
  ck_assert_ptr_nonnull(k);
  cl_kernel bad = k;
  ck_assert_int_ne(fmmcl_create_kernel(ctx, prog, "test/launch_test.cl", "launch_test_no_such", &bad),
                   FMMCL_SUCCESS);
  ck_assert_ptr_null(bad);
  const char *msg = fmmcl_last_error(ctx);
  ck_assert_msg(contains(msg, "launch_test_no_such") && contains(msg, "test/launch_test.cl"), "message: %s",
                msg);
  /* a list stops at its first bad name, and names that one */
  const char *names[] = {"launch_test_add", "launch_test_missing", "launch_test_add"};
  cl_kernel a = NULL, b = NULL, c = NULL;
  cl_kernel *out[] = {&a, &b, &c};
  ck_assert_int_ne(fmmcl_create_kernels(ctx, prog, "test/launch_test.cl", 3, names, out), FMMCL_SUCCESS);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_null(b);
  ck_assert_ptr_null(c);
  ck_assert_msg(contains(fmmcl_last_error(ctx), "launch_test_missing"), "message: %s", fmmcl_last_error(ctx));
  fmmcl_release(&a);
  fmmcl_release(&k);
  fmmcl_release(&prog);
}
END_TEST

/* An argument that cannot be set: the message names the kernel and the
 * index of the failing argument (past the last one; the wrong size). */
START_TEST(test_kernel_args_failure_index) {
  cl_program prog = launch_test_program();
  cl_kernel k = launch_test_kernel(prog);
  cl_mem buf = NULL;
  ck_assert_int_eq(fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 64, NULL, &buf), FMMCL_SUCCESS);
  ck_assert_int_ne(FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(buf), FMMCL_ARG_UINT(1), FMMCL_ARG_UINT(2)),
                   FMMCL_SUCCESS);
  const char *msg = fmmcl_last_error(ctx);
  ck_assert_msg(contains(msg, "launch_test_add") && contains(msg, "argument 2"), "message: %s", msg);
  ck_assert_int_ne(FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(buf), FMMCL_ARG_DOUBLE(1.0)), FMMCL_SUCCESS);
  msg = fmmcl_last_error(ctx);
  ck_assert_msg(contains(msg, "launch_test_add") && contains(msg, "argument 1"), "message: %s", msg);
  ck_assert_int_eq(FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(buf), FMMCL_ARG_UINT(1)), FMMCL_SUCCESS);
  fmmcl_release(&buf);
  fmmcl_release(&k);
  fmmcl_release(&prog);
}
END_TEST

/* The release helpers take NULL and leave NULL behind, so twice is safe. */
START_TEST(test_release_sets_null) {
  cl_program prog = launch_test_program();
  cl_kernel k = launch_test_kernel(prog);
  cl_mem buf = NULL;
  ck_assert_int_eq(fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 64, NULL, &buf), FMMCL_SUCCESS);
  cl_int err;
  cl_event ev = clCreateUserEvent(ctx->cl, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  ck_assert_int_eq(clSetUserEventStatus(ev, CL_COMPLETE), CL_SUCCESS);
  for (int twice = 0; twice < 2; twice++) {
    fmmcl_release(&buf);
    fmmcl_release(&k);
    fmmcl_release(&prog);
    fmmcl_release(&ev);
    ck_assert_ptr_null(buf);
    ck_assert_ptr_null(k);
    ck_assert_ptr_null(prog);
    ck_assert_ptr_null(ev);
  }
}
END_TEST

/* ---- the suite ------------------------------------------------------------- */

static Suite *runtime_suite(void) {
  Suite *s = suite_create("runtime");
  TCase *status = tcase_create("status");
  tcase_add_test(status, test_strerror);
  tcase_add_test(status, test_vendor_names);
  suite_add_tcase(s, status);

  TCase *devices = tcase_create("devices");
  tcase_add_checked_fixture(devices, env_setup, env_teardown);
  tcase_add_test(devices, test_devices_list);
  tcase_add_test(devices, test_select_type);
  tcase_add_test(devices, test_select_index);
  tcase_add_test(devices, test_select_name);
  tcase_add_test(devices, test_select_not_found);
  tcase_add_test(devices, test_select_env);
  tcase_add_test(devices, test_select_default);
  tcase_add_test(devices, test_context_lifecycle);
  tcase_add_test(devices, test_cache_dir_from_home);
  tcase_add_test(devices, test_last_error_no_context);
  tcase_add_test(devices, test_last_error_per_thread);
  suite_add_tcase(s, devices);

  TCase *kernels = tcase_create("kernels");
  tcase_add_checked_fixture(kernels, device_setup, device_teardown);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(kernels, 300); /* cold kernel builds */
  tcase_add_test(kernels, test_kernel_find_order);
  tcase_add_test(kernels, test_kernel_not_found);
  tcase_add_test(kernels, test_kernel_path_header_error);
  tcase_add_test(kernels, test_kernel_path_syntax_error);
  tcase_add_test(kernels, test_cache_key_covers_source);
  tcase_add_test(kernels, test_kernel_include);
  tcase_add_test(kernels, test_last_error_context);
  tcase_add_test(kernels, test_event_log_sums_phases);
  tcase_add_test(kernels, test_create_kernel_bad_name);
  tcase_add_test(kernels, test_kernel_args_failure_index);
  tcase_add_test(kernels, test_release_sets_null);
  suite_add_tcase(s, kernels);

  TCase *cache = tcase_create("binary_cache");
  tcase_add_checked_fixture(cache, device_setup, device_teardown);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(cache, 300);
  tcase_add_test(cache, test_cache_primitives);
  tcase_add_test(cache, test_cache_first_build);
  tcase_add_test(cache, test_cache_from_cache_flag);
  tcase_add_loop_test(cache, test_cache_damaged, 0, N_DAMAGE);
  tcase_add_test(cache, test_cache_stale_key);
  tcase_add_test(cache, test_cache_disabled);
  tcase_add_loop_test(cache, test_cache_unwritable, 0, 3);
  suite_add_tcase(s, cache);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(runtime_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
