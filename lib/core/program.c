/* program.c — building OpenCL programs from the .cl sources with vendor and
 * tuned options, through the binary cache (a bad cached binary is rebuilt,
 * and a binary the driver refuses or builds wrong is deleted). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define COMMON_HEADER "common/fmmcl_common.h"

const char *fmmcl_vendor_build_options(fmmcl_vendor vendor) {
  switch (vendor) {
    case FMMCL_VENDOR_NVIDIA: return "-cl-mad-enable -cl-no-signed-zeros -DFMMCL_VENDOR_NVIDIA=1";
    case FMMCL_VENDOR_AMD: return "-cl-mad-enable -cl-no-signed-zeros -DFMMCL_VENDOR_AMD=1";
    case FMMCL_VENDOR_INTEL: return "-cl-mad-enable -cl-no-signed-zeros -DFMMCL_VENDOR_INTEL=1";
    case FMMCL_VENDOR_POCL: return "-cl-mad-enable -DFMMCL_VENDOR_POCL=1";
    default: return "-DFMMCL_VENDOR_OTHER=1";
  }
}

/* A growing text buffer for the expanded program source. */
typedef struct text_buf {
  char *s;
  size_t len, cap;
} text_buf;

static int text_append(text_buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->s, cap);
    if (!p) return 0;
    b->s = p;
    b->cap = cap;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
  return 1;
}

#define MAX_INCLUDE_DEPTH 8

/* Appends file with each line `#include "name"` replaced by the text of
 * cl/name, once per program (headers need no guards), and #line directives
 * so that build logs still give the line numbers of the files themselves.
 * Expanded here rather than by the compiler so the cache key covers every
 * included text and no -I path (which may hold spaces) reaches it. */
static fmmcl_status append_file(fmmcl_context ctx, const char *file, text_buf *out, char **seen,
                                size_t *n_seen, int depth) {
  if (depth > MAX_INCLUDE_DEPTH)
    return fmmcl_fail(ctx, FMMCL_ERROR_BUILD_FAILED, "kernel includes nest deeper than %d at %s",
                      MAX_INCLUDE_DEPTH, file);
  char *path = NULL, *text = NULL;
  size_t len = 0;
  fmmcl_status st = fmmcl_kernel_find(ctx, file, &path);
  if (!st) st = fmmcl_read_file(ctx, path, &text, &len);
  free(path);
  if (st) return st;
  int line = 1, ok = 1;
  char mark[32];
  for (const char *p = text; *p && ok && !st; line++) {
    const char *end = strchr(p, '\n');
    size_t n = end ? (size_t)(end - p) + 1 : strlen(p);
    const char *q = p + strspn(p, " \t");
    char name[256];
    if (strncmp(q, "#include \"", 10) == 0 && sscanf(q + 10, "%255[^\"]\"", name) == 1) {
      int again = 0;
      for (size_t i = 0; i < *n_seen; i++) again |= strcmp(seen[i], name) == 0;
      if (!again && *n_seen < 64 && (seen[*n_seen] = strdup(name))) {
        (*n_seen)++;
        ok = text_append(out, "#line 1\n", 8);
        if (ok) st = append_file(ctx, name, out, seen, n_seen, depth + 1);
      }
      snprintf(mark, sizeof mark, "\n#line %d\n", line + 1);
      if (ok && !st) ok = text_append(out, mark, strlen(mark));
    } else {
      ok = text_append(out, p, n);
    }
    p += n;
  }
  if (ok && !st && len && text[len - 1] != '\n') ok = text_append(out, "\n", 1);
  free(text);
  if (!ok && !st) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  return st;
}

/* The program text: the shared header, the prelude, then the kernel file,
 * its includes expanded. */
static fmmcl_status load_source(fmmcl_context ctx, const char *file, const char *prelude, char **source) {
  text_buf out = {0};
  char *seen[64];
  size_t n_seen = 0;
  fmmcl_status st = append_file(ctx, COMMON_HEADER, &out, seen, &n_seen, 0);
  if (!st && !(text_append(&out, prelude, strlen(prelude)) && text_append(&out, "#line 1\n", 8)))
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (!st) st = append_file(ctx, file, &out, seen, &n_seen, 0);
  for (size_t i = 0; i < n_seen; i++) free(seen[i]);
  if (st) {
    free(out.s);
    return st;
  }
  *source = out.s;
  return FMMCL_SUCCESS;
}

uint64_t fmmcl_program_cache_key(fmmcl_context ctx, const char *source, const char *options) {
  const fmmcl_device_info *d = &ctx->dev.info;
  uint64_t h = FMMCL_HASH64_INIT;
  const char *parts[] = {source,         options,           d->platform_name,
                         d->device_name, d->driver_version, d->device_version};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    h = fmmcl_hash64(h, parts[i], strlen(parts[i]) + 1); /* the NUL separates the parts */
  return h;
}

static fmmcl_status build_log_failure(fmmcl_context ctx, cl_program prog, const char *file,
                                      const char *options, cl_int err) {
  fmmcl_fail(ctx, FMMCL_ERROR_BUILD_FAILED,
             "building %s for %s failed (%s) with options \"%s\"; build log:\n", file,
             ctx->dev.info.device_name, fmmcl_cl_error_name(err), options);
  size_t n = 0;
  clGetProgramBuildInfo(prog, ctx->dev.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
  char *log = malloc(n + 1);
  if (log) {
    log[0] = '\0';
    clGetProgramBuildInfo(prog, ctx->dev.device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    log[n] = '\0';
    fmmcl_fail_append(ctx, log);
    free(log);
  }
  return FMMCL_ERROR_BUILD_FAILED;
}

uint64_t fmmcl_program_source_tag(const char *source, const char *options) {
  /* another hash than the key's (other seed, no device), so that a file
   * must match both to be used */
  uint64_t h = fmmcl_hash64(FMMCL_HASH64_INIT ^ 0x736f75726365ULL, source, strlen(source) + 1);
  return fmmcl_hash64(h, options, strlen(options) + 1);
}

/* The kernel names of a built program, ';'-separated, malloc'ed; NULL on failure. */
static char *kernel_names(cl_program prog) {
  size_t n = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &n) != CL_SUCCESS || n == 0) return NULL;
  char *names = malloc(n + 1);
  if (names && clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, n, names, NULL) != CL_SUCCESS) {
    free(names);
    return NULL;
  }
  if (names) names[n] = '\0';
  return names;
}

/* Whether two ';'-separated name lists hold the same names, in any order. */
static int same_names(const char *a, const char *b) {
  size_t count_a = 0, count_b = 0;
  for (const char *p = a; *p;) {
    size_t n = strcspn(p, ";");
    int found = 0;
    for (const char *q = b; *q && !found;) {
      size_t m = strcspn(q, ";");
      found = m == n && strncmp(p, q, n) == 0;
      q += m + (q[m] == ';');
    }
    if (!found) return 0;
    count_a++;
    p += n + (p[n] == ';');
  }
  for (const char *q = b; *q; count_b++) {
    size_t m = strcspn(q, ";");
    q += m + (q[m] == ';');
  }
  return count_a == count_b;
}

/* A program from a cached binary, or NULL when absent, corrupt or refused.
 * The payload is the kernel names the source build had, a NUL, then the
 * binary. A file that passed the keyed checksum but that the driver
 * refuses, or whose program lacks those kernels, is deleted: no payload
 * reaches the driver twice (and the try mark covers a driver that crashes). */
static cl_program from_cache(fmmcl_context ctx, uint64_t key, uint64_t tag, const char *options) {
  unsigned char *payload = NULL;
  size_t len = 0;
  if (fmmcl_cache_load_tagged(key, tag, &payload, &len) != FMMCL_SUCCESS) return NULL;
  const unsigned char *nul = memchr(payload, '\0', len);
  if (!nul || (size_t)(nul - payload) + 1 >= len) { /* not a payload of this format */
    free(payload);
    fmmcl_cache_discard(key);
    return NULL;
  }
  if (!fmmcl_cache_try_begin(key)) { /* marked: the driver died on it once */
    free(payload);
    return NULL;
  }
  const char *expected = (const char *)payload;
  const unsigned char *bins[1] = {nul + 1};
  size_t bin_len = len - (size_t)(nul + 1 - payload);
  cl_int err, bin_status;
  cl_program prog =
      clCreateProgramWithBinary(ctx->cl, 1, &ctx->dev.device, &bin_len, bins, &bin_status, &err);
  int ok = err == CL_SUCCESS && bin_status == CL_SUCCESS &&
           clBuildProgram(prog, 1, &ctx->dev.device, options, NULL, NULL) == CL_SUCCESS;
  char *names = ok ? kernel_names(prog) : NULL;
  ok = ok && names && same_names(names, expected);
  free(names);
  free(payload);
  if (!ok) {
    if (prog) clReleaseProgram(prog);
    prog = NULL;
    fmmcl_cache_discard(key);
  }
  fmmcl_cache_try_end(key);
  return prog;
}

static void to_cache(fmmcl_context ctx, cl_program prog, uint64_t key, uint64_t tag) {
  size_t len = 0;
  char *names = kernel_names(prog);
  if (!names || clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS ||
      len == 0) {
    free(names);
    return;
  }
  size_t nlen = strlen(names) + 1;
  unsigned char *payload = malloc(nlen + len);
  if (!payload) {
    free(names);
    return;
  }
  memcpy(payload, names, nlen);
  unsigned char *bins[1] = {payload + nlen};
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS &&
      fmmcl_cache_store_tagged(key, tag, payload, nlen + len) == FMMCL_SUCCESS)
    fmmcl_cache_try_end(key); /* a fresh binary replaces one a crashed process left marked */
  /* a cache that cannot be written only costs time */
  free(payload);
  free(names);
}

fmmcl_status fmmcl_program_build(fmmcl_context ctx, const char *file, const char *options,
                                 cl_program *program, int *cached) {
  return fmmcl_program_build_prelude(ctx, file, "", options, program, cached);
}

fmmcl_status fmmcl_program_build_prelude(fmmcl_context ctx, const char *file, const char *prelude,
                                         const char *options, cl_program *program, int *cached) {
  char *source = NULL;
  fmmcl_status st = load_source(ctx, file, prelude, &source);
  if (st) return st;
  /* FMMCL_BUILD_OPTIONS: extra compiler flags for every kernel, for
   * experiments with a vendor's compiler (they enter the cache key too). */
  const char *extra = getenv("FMMCL_BUILD_OPTIONS");
  if (!extra) extra = "";
  size_t olen = strlen(options) + strlen(extra) + 256;
  char *full = malloc(olen);
  if (!full) {
    free(source);
    return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  snprintf(full, olen, "%s %s %s", fmmcl_vendor_build_options(ctx->dev.info.vendor), options, extra);
  uint64_t key = fmmcl_program_cache_key(ctx, source, full), tag = fmmcl_program_source_tag(source, full);
  int use_cache = fmmcl_cache_enabled();
  cl_program prog = use_cache ? from_cache(ctx, key, tag, full) : NULL;
  if (cached) *cached = prog != NULL;
  if (!prog) {
    cl_int err;
    const char *src = source;
    prog = clCreateProgramWithSource(ctx->cl, 1, &src, NULL, &err);
    if (err != CL_SUCCESS) {
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "clCreateProgramWithSource(%s): %s", file,
                      fmmcl_cl_error_name(err));
    } else {
      err = clBuildProgram(prog, 1, &ctx->dev.device, full, NULL, NULL);
      if (err != CL_SUCCESS) {
        st = build_log_failure(ctx, prog, file, full, err);
        clReleaseProgram(prog);
        prog = NULL;
      } else if (use_cache) {
        to_cache(ctx, prog, key, tag);
      }
    }
  }
  free(source);
  free(full);
  if (st) return st;
  *program = prog;
  return FMMCL_SUCCESS;
}
