/* program.c — building OpenCL programs from the .cl sources with vendor and
 * tuned options, through the binary cache (a bad cached binary is rebuilt). */
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

/* The program text: the shared header, then the kernel file. Concatenated
 * here rather than #include'd so the cache key covers both and no -I path
 * (which may hold spaces) reaches the compiler. */
static fmmcl_status load_source(fmmcl_context ctx, const char *file, const char *prelude, char **source) {
  char *hpath = NULL, *kpath = NULL, *htext = NULL, *ktext = NULL;
  size_t hlen = 0, klen = 0;
  fmmcl_status st = fmmcl_kernel_find(ctx, COMMON_HEADER, &hpath);
  if (!st) st = fmmcl_kernel_find(ctx, file, &kpath);
  if (!st) st = fmmcl_read_file(ctx, hpath, &htext, &hlen);
  if (!st) st = fmmcl_read_file(ctx, kpath, &ktext, &klen);
  if (!st) {
    size_t need = hlen + klen + strlen(prelude) + 64;
    *source = malloc(need);
    if (!*source) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    else snprintf(*source, need, "%s\n%s#line 1\n%s", htext, prelude, ktext); /* prelude ends in a newline */
  }
  free(hpath); free(kpath); free(htext); free(ktext);
  return st;
}

uint64_t fmmcl_program_cache_key(fmmcl_context ctx, const char *source, const char *options) {
  const fmmcl_device_info *d = &ctx->dev.info;
  uint64_t h = FMMCL_HASH64_INIT;
  const char *parts[] = {source, options, d->platform_name, d->device_name, d->driver_version,
                         d->device_version};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    h = fmmcl_hash64(h, parts[i], strlen(parts[i]) + 1); /* the NUL separates the parts */
  return h;
}

static fmmcl_status build_log_failure(fmmcl_context ctx, cl_program prog, const char *file,
                                      const char *options, cl_int err) {
  fmmcl_fail(ctx, FMMCL_ERROR_BUILD_FAILED, "building %s for %s failed (%s) with options \"%s\"; build log:\n",
             file, ctx->dev.info.device_name, fmmcl_cl_error_name(err), options);
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

/* A program from a cached binary, or NULL when absent, corrupt or refused. */
static cl_program from_cache(fmmcl_context ctx, uint64_t key, const char *options) {
  unsigned char *bin = NULL;
  size_t len = 0;
  if (fmmcl_cache_load(key, &bin, &len) != FMMCL_SUCCESS) return NULL;
  cl_int err, bin_status;
  const unsigned char *bins[1] = {bin};
  cl_program prog = clCreateProgramWithBinary(ctx->cl, 1, &ctx->dev.device, &len, bins, &bin_status, &err);
  free(bin);
  if (err != CL_SUCCESS || bin_status != CL_SUCCESS) {
    if (prog) clReleaseProgram(prog);
    return NULL;
  }
  if (clBuildProgram(prog, 1, &ctx->dev.device, options, NULL, NULL) != CL_SUCCESS) {
    clReleaseProgram(prog);
    return NULL;
  }
  return prog;
}

static void to_cache(fmmcl_context ctx, cl_program prog, uint64_t key) {
  size_t len = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS || len == 0)
    return;
  unsigned char *bin = malloc(len);
  if (!bin) return;
  unsigned char *bins[1] = {bin};
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
    fmmcl_cache_store(key, bin, len); /* a cache that cannot be written only costs time */
  free(bin);
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
  if (!full) { free(source); return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory"); }
  snprintf(full, olen, "%s %s %s", fmmcl_vendor_build_options(ctx->dev.info.vendor), options, extra);
  uint64_t key = fmmcl_program_cache_key(ctx, source, full);
  int use_cache = fmmcl_cache_enabled();
  cl_program prog = use_cache ? from_cache(ctx, key, full) : NULL;
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
        to_cache(ctx, prog, key);
      }
    }
  }
  free(source);
  free(full);
  if (st) return st;
  *program = prog;
  return FMMCL_SUCCESS;
}
