/* fmmcl_info.c — the fmmcl-info program: every OpenCL platform and device
 * libfmmcl sees, which one a selector picks, and the binary-cache state. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "fmmcl.h"

static void print_usage(FILE *out) {
  fputs(
      "Usage: fmmcl-info [OPTION]...\n"
      "List the OpenCL platforms and devices libfmmcl can use, mark the one a\n"
      "device selector picks, and show the program-binary cache.\n"
      "\n"
      "  --device SEL    selector to resolve: gpu, cpu, P:D or a name substring\n"
      "                  (default: $FMMCL_DEVICE, else the first GPU, else a CPU)\n"
      "  -h, --help      this text\n"
      "  -V, --version   the version\n"
      "\n"
      "Exit status: 0 success, 1 no device or the selector matches none,\n"
      "2 a bad command line.\n",
      out);
}

static void print_device(const fmmcl_device_info *d, int selected) {
  char global[32], local[32];
  printf("%s %d:%d  %s\n", selected ? "*" : " ", d->platform_index, d->device_index, d->device_name);
  printf("        type %s, vendor class %s, %u compute units\n", fmmcl_cli_device_type(d),
         fmmcl_vendor_name(d->vendor), d->compute_units);
  printf("        global memory %s, local memory %s, max work-group size %zu\n",
         fmmcl_cli_bytes(d->global_mem_bytes, global, sizeof global),
         fmmcl_cli_bytes(d->local_mem_bytes, local, sizeof local), d->max_work_group_size);
  printf("        fp64 %s, driver %s%s%s\n", d->has_fp64 ? "yes" : "no", d->driver_version,
         d->device_version[0] ? ", " : "", d->device_version);
}

/* Tuned parameters of a device (fmmtune's cache) go here once the library
 * exposes them; until then nothing is printed rather than a guess. */
/* The device's fmmtune entries (kernel, precision, class, parameters, gain),
 * and why any of them, or the file, is not used. */
static void print_tuned_parameters(const fmmcl_device_info *d) {
  char path[4096], notes[2048];
  size_t count = 0;
  if (fmmcl_tuning_file_path(d, path, sizeof path) != FMMCL_SUCCESS) {
    printf("    tuning: no cache directory\n");
    return;
  }
  if (fmmcl_tuning_entries(d, NULL, 0, &count) != FMMCL_SUCCESS) {
    printf("    tuning: %s unreadable\n", path);
    return;
  }
  fmmcl_tuning_entry *e = count ? calloc(count, sizeof *e) : NULL;
  if (count && (!e || fmmcl_tuning_entries(d, e, count, &count) != FMMCL_SUCCESS)) count = 0;
  if (count == 0) printf("    tuning: none (built-in defaults); fmmtune writes %s\n", path);
  else printf("    tuning: %zu entr%s in %s\n", count, count == 1 ? "y" : "ies", path);
  for (size_t i = 0; i < count; i++) {
    printf("      %-16s %-6s %-5s %s", e[i].kernel, e[i].precision == FMMCL_DOUBLE ? "double" : "single",
           e[i].problem_class, e[i].defines);
    if (e[i].time_ms > 0 && e[i].default_ms > 0)
      printf("  (%.3g ms, %.2fx over default)", e[i].time_ms, e[i].default_ms / e[i].time_ms);
    if (!e[i].usable) printf("  IGNORED: %s", e[i].note);
    printf("\n");
  }
  free(e);
  if (fmmcl_tuning_notes(d, notes, sizeof notes) == FMMCL_SUCCESS && notes[0])
    printf("      note: %s\n", notes);
}

static void print_devices(const fmmcl_device_info *list, size_t count, size_t selected) {
  int platform = -1;
  for (size_t i = 0; i < count; i++) {
    if (list[i].platform_index != platform) {
      platform = list[i].platform_index;
      printf("platform %d: %s (%s)\n", platform, list[i].platform_name, list[i].platform_vendor);
    }
    print_device(&list[i], i == selected);
    print_tuned_parameters(&list[i]);
  }
}

/* Where the selection came from, in words. */
static void print_selection(const char *selector, const fmmcl_device_info *d) {
  const char *env = getenv("FMMCL_DEVICE");
  printf("\nselected: %d:%d %s", d->platform_index, d->device_index, d->device_name);
  if (selector && *selector) printf(" (--device %s)\n", selector);
  else if (env && *env) printf(" (FMMCL_DEVICE=%s)\n", env);
  else printf(" (default: the first GPU, else the first CPU)\n");
}

static int print_cache(void) {
  char dir[4096], size[32];
  int enabled = 0;
  unsigned long long bytes = 0;
  fmmcl_status st = fmmcl_cache_info(dir, sizeof dir, &enabled, &bytes);
  if (st != FMMCL_SUCCESS) return fmmcl_cli_status_error(NULL, st, "fmmcl_cache_info");
  printf("binary cache: %s (%s, %s)\n", dir, enabled ? "enabled" : "disabled by FMMCL_NO_CACHE",
         fmmcl_cli_bytes(bytes, size, sizeof size));
  return FMMCL_CLI_EXIT_OK;
}

/* Returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, const char **selector) {
  static const struct option options[] = {{"device", required_argument, NULL, 'd'},
                                          {"help", no_argument, NULL, 'h'},
                                          {"version", no_argument, NULL, 'V'},
                                          {NULL, 0, NULL, 0}};
  int id;
  opterr = 0;
  while ((id = getopt_long(argc, argv, ":hV", options, NULL)) != -1) {
    if (id == 'd') {
      *selector = optarg;
    } else if (id == 'h') {
      print_usage(stdout);
      return FMMCL_CLI_EXIT_OK;
    } else if (id == 'V') {
      printf("fmmcl-info (libfmmcl) %d.%d.%d\n", FMMCL_VERSION_MAJOR, FMMCL_VERSION_MINOR,
             FMMCL_VERSION_PATCH);
      return FMMCL_CLI_EXIT_OK;
    } else {
      return fmmcl_cli_bad_option(id, argv[optind - 1]);
    }
  }
  if (optind < argc) return fmmcl_cli_usage_error("unexpected argument '%s'", argv[optind]);
  return -1;
}

int main(int argc, char **argv) {
  fmmcl_cli_set_program("fmmcl-info");
  const char *selector = NULL;
  int rc = parse_args(argc, argv, &selector);
  if (rc >= 0) return rc;
  size_t count = 0;
  fmmcl_status st = fmmcl_devices_list(NULL, 0, &count);
  if (st != FMMCL_SUCCESS) return fmmcl_cli_status_error(NULL, st, "listing OpenCL devices");
  fmmcl_device_info *list = calloc(count + 1, sizeof *list);
  if (!list) return fmmcl_cli_error("out of memory");
  st = fmmcl_devices_list(list, count, &count);
  if (st != FMMCL_SUCCESS) {
    free(list);
    return fmmcl_cli_status_error(NULL, st, "listing OpenCL devices");
  }
  /* The list is printed even when the selector fails, so the choices show;
   * the message is kept now, as the next library call clears it. */
  size_t selected = (size_t)-1;
  char select_error[4096] = "";
  fmmcl_status select_st = count ? fmmcl_device_select(selector, &selected) : FMMCL_SUCCESS;
  if (select_st != FMMCL_SUCCESS) {
    selected = (size_t)-1;
    snprintf(select_error, sizeof select_error, "%s", fmmcl_last_error(NULL));
  }
  print_devices(list, count, selected);
  if (count == 0) printf("no OpenCL devices\n");
  else if (selected < count) print_selection(selector, &list[selected]);
  fflush(stdout);
  rc = print_cache();
  if (!rc && count == 0) rc = fmmcl_cli_error("no OpenCL device found");
  if (!rc && select_st != FMMCL_SUCCESS)
    rc = fmmcl_cli_error("selecting a device: %s: %s", fmmcl_strerror(select_st), select_error);
  free(list);
  return rc;
}
