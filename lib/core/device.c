/* device.c — enumerating OpenCL platforms and devices, their vendor class,
 * and the FMMCL_DEVICE selector (gpu | cpu | P:D | name substring). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

const char *fmmcl_vendor_name(fmmcl_vendor vendor) {
  switch (vendor) {
    case FMMCL_VENDOR_NVIDIA: return "nvidia";
    case FMMCL_VENDOR_AMD: return "amd";
    case FMMCL_VENDOR_INTEL: return "intel";
    case FMMCL_VENDOR_POCL: return "pocl";
    default: return "other";
  }
}

static int contains_nocase(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  if (n == 0) return 0;
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
    if (i == n) return 1;
  }
  return 0;
}

/* PoCL is told apart from the hardware vendor it runs on (an Intel or AMD
 * CPU) because its compiler and defaults differ. */
static fmmcl_vendor classify(const char *platform_name, const char *platform_vendor) {
  if (contains_nocase(platform_name, "portable computing") || contains_nocase(platform_name, "pocl"))
    return FMMCL_VENDOR_POCL;
  if (contains_nocase(platform_vendor, "nvidia")) return FMMCL_VENDOR_NVIDIA;
  if (contains_nocase(platform_vendor, "advanced micro") || contains_nocase(platform_vendor, "amd"))
    return FMMCL_VENDOR_AMD;
  if (contains_nocase(platform_vendor, "intel")) return FMMCL_VENDOR_INTEL;
  return FMMCL_VENDOR_OTHER;
}

/* clGetPlatformInfo on p, or clGetDeviceInfo on d when p is NULL. */
static cl_int get_info(cl_platform_id p, cl_device_id d, cl_uint what, size_t size, void *value,
                       size_t *ret) {
  return p ? clGetPlatformInfo(p, what, size, value, ret) : clGetDeviceInfo(d, what, size, value, ret);
}

/* A string property of p (or of d when p is NULL), truncated to fit rather
 * than lost when it is long. */
static void info_string(cl_platform_id p, cl_device_id d, cl_uint what, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  if (get_info(p, d, what, 0, NULL, &n) != CL_SUCCESS || n == 0) return;
  char *tmp = malloc(n + 1);
  if (tmp && get_info(p, d, what, n, tmp, NULL) == CL_SUCCESS) {
    tmp[n] = '\0';
    snprintf(buf, len, "%s", tmp);
  }
  free(tmp);
}

/* Whether dir is, or can be made, a writable directory. */
static int cache_dir_usable(const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0) return S_ISDIR(st.st_mode) && access(dir, W_OK | X_OK) == 0;
  return fmmcl_make_dirs(dir, 0) == 0; /* creating it is what the runtime would do */
}

static void fill_info(cl_platform_id p, cl_device_id d, int pi, int di, fmmcl_device_info *info) {
  memset(info, 0, sizeof *info);
  info->platform_index = pi;
  info->device_index = di;
  info_string(p, NULL, CL_PLATFORM_NAME, info->platform_name, sizeof info->platform_name);
  info_string(p, NULL, CL_PLATFORM_VENDOR, info->platform_vendor, sizeof info->platform_vendor);
  info_string(NULL, d, CL_DEVICE_NAME, info->device_name, sizeof info->device_name);
  info_string(NULL, d, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
  info_string(NULL, d, CL_DEVICE_VERSION, info->device_version, sizeof info->device_version);
  cl_device_type type = 0;
  clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  info->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  info->is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
  cl_uint cu = 0;
  clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
  info->compute_units = cu;
  cl_ulong gm = 0, lm = 0;
  clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gm, &gm, NULL);
  clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
  info->global_mem_bytes = gm;
  info->local_mem_bytes = lm;
  size_t wg = 0;
  clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  info->max_work_group_size = wg;
  cl_device_fp_config fp64 = 0;
  clGetDeviceInfo(d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
  info->has_fp64 = fp64 != 0;
  info->vendor = classify(info->platform_name, info->platform_vendor);
}

fmmcl_status fmmcl_devices_enumerate(fmmcl_context ctx, fmmcl_device_handle **list, size_t *count) {
  *list = NULL;
  *count = 0;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  /* the ICD loader answers CL_PLATFORM_NOT_FOUND_KHR (-1001) when no driver is registered */
  if (err != CL_SUCCESS || np == 0)
    return fmmcl_fail(ctx, FMMCL_ERROR_NO_DEVICE,
                      "no OpenCL platform found (clGetPlatformIDs: %d); install a driver, "
                      "e.g. the Debian package pocl-opencl-icd for the CPU, and check "
                      "/etc/OpenCL/vendors/",
                      (int)err);
  cl_platform_id *plats = calloc(np, sizeof *plats);
  if (!plats) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  clGetPlatformIDs(np, plats, NULL);
  size_t cap = 0, n = 0;
  fmmcl_device_handle *out = NULL;
  for (cl_uint p = 0; p < np; p++) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
    cl_device_id *devs = calloc(nd, sizeof *devs);
    if (!devs) break;
    clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
    for (cl_uint d = 0; d < nd; d++) {
      if (n == cap) {
        cap = cap ? 2 * cap : 8;
        fmmcl_device_handle *grown = realloc(out, cap * sizeof *out);
        if (!grown) {
          free(devs);
          free(plats);
          free(out);
          return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
        }
        out = grown;
      }
      out[n].platform = plats[p];
      out[n].device = devs[d];
      fill_info(plats[p], devs[d], (int)p, (int)d, &out[n].info);
      n++;
    }
    free(devs);
  }
  free(plats);
  if (n == 0) {
    free(out);
    /* PoCL (and other CPU runtimes) refuse to start without a writable
     * cache directory, which they take from XDG_CACHE_HOME */
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg && !cache_dir_usable(xdg))
      return fmmcl_fail(ctx, FMMCL_ERROR_NO_DEVICE,
                        "OpenCL platforms exist but expose no device; XDG_CACHE_HOME=%s cannot be used as a "
                        "directory, and CPU runtimes such as PoCL keep their kernel cache there: point it "
                        "at a writable directory",
                        xdg);
    return fmmcl_fail(ctx, FMMCL_ERROR_NO_DEVICE, "OpenCL platforms exist but expose no device");
  }
  *list = out;
  *count = n;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_devices_list(fmmcl_device_info *out, size_t capacity, size_t *count) {
  fmmcl_clear_error(NULL);
  if (!count || (capacity > 0 && !out))
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_devices_list: NULL output pointer");
  fmmcl_device_handle *list;
  size_t n;
  fmmcl_status st = fmmcl_devices_enumerate(NULL, &list, &n);
  if (st) {
    *count = 0;
    return st;
  }
  for (size_t i = 0; i < n && i < capacity; i++) out[i] = list[i].info;
  *count = n;
  free(list);
  return FMMCL_SUCCESS;
}

/* Index of the device the selector picks in list, or -1. */
static long pick(const fmmcl_device_handle *list, size_t n, const char *sel) {
  if (strcmp(sel, "gpu") == 0 || strcmp(sel, "cpu") == 0) {
    int want_gpu = sel[0] == 'g';
    for (size_t i = 0; i < n; i++)
      if (want_gpu ? list[i].info.is_gpu : list[i].info.is_cpu) return (long)i;
    return -1;
  }
  int p, d, used = 0;
  if (sscanf(sel, "%d:%d%n", &p, &d, &used) == 2 && sel[used] == '\0') {
    for (size_t i = 0; i < n; i++)
      if (list[i].info.platform_index == p && list[i].info.device_index == d) return (long)i;
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (contains_nocase(list[i].info.device_name, sel) || contains_nocase(list[i].info.platform_name, sel))
      return (long)i;
  return -1;
}

static void append_device_list(fmmcl_context ctx, const fmmcl_device_handle *list, size_t n) {
  char line[512];
  for (size_t i = 0; i < n; i++) {
    snprintf(line, sizeof line, "\n  %d:%d  %s  [%s, %s]", list[i].info.platform_index,
             list[i].info.device_index, list[i].info.device_name, list[i].info.platform_name,
             list[i].info.is_gpu   ? "GPU"
             : list[i].info.is_cpu ? "CPU"
                                   : "other");
    fmmcl_fail_append(ctx, line);
  }
}

fmmcl_status fmmcl_device_choose(fmmcl_context ctx, const char *selector, fmmcl_device_handle *chosen,
                                 size_t *index) {
  fmmcl_device_handle *list;
  size_t n;
  fmmcl_status st = fmmcl_devices_enumerate(ctx, &list, &n);
  if (st) return st;
  const char *sel = selector && *selector ? selector : getenv("FMMCL_DEVICE");
  long i;
  if (sel && *sel) {
    i = pick(list, n, sel);
    if (i < 0) {
      fmmcl_fail(ctx, FMMCL_ERROR_DEVICE_NOT_FOUND,
                 "device selector \"%s\"%s matches no device; use gpu, cpu, P:D or a "
                 "name substring. Devices:",
                 sel, selector && *selector ? "" : " (from FMMCL_DEVICE)");
      append_device_list(ctx, list, n);
      free(list);
      return FMMCL_ERROR_DEVICE_NOT_FOUND;
    }
  } else {
    i = pick(list, n, "gpu");
    if (i < 0) i = pick(list, n, "cpu");
    if (i < 0) i = 0;
  }
  if (chosen) *chosen = list[i];
  if (index) *index = (size_t)i;
  free(list);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_device_select(const char *selector, size_t *index) {
  fmmcl_clear_error(NULL);
  if (!index) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_device_select: index is NULL");
  return fmmcl_device_choose(NULL, selector, NULL, index);
}
