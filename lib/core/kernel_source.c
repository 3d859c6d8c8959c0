/* kernel_source.c — locating .cl files (FMMCL_KERNEL_PATH, build tree,
 * installed directory) and reading whole files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"

fmmcl_status fmmcl_read_file(fmmcl_context ctx, const char *path, char **text, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return fmmcl_fail(ctx, FMMCL_ERROR_IO, "cannot open %s: %s", path, strerror(errno));
  char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (cap - n < 4096) {
      cap = cap ? 2 * cap : 65536;
      char *grown = realloc(buf, cap + 1);
      if (!grown) {
        free(buf);
        fclose(f);
        return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of memory reading %s", path);
      }
      buf = grown;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return fmmcl_fail(ctx, FMMCL_ERROR_IO, "error reading %s", path);
  }
  buf[n] = '\0';
  *text = buf;
  if (len) *len = n;
  return FMMCL_SUCCESS;
}

/* Tries dir/file; on success sets *path. Records the place in tried. */
static int try_dir(const char *dir, size_t dir_len, const char *file, char **path, char *tried,
                   size_t tried_len) {
  if (dir_len == 0) return 0;
  size_t need = dir_len + strlen(file) + 2;
  char *p = malloc(need);
  if (!p) return 0;
  snprintf(p, need, "%.*s/%s", (int)dir_len, dir, file);
  if (access(p, R_OK) == 0) {
    *path = p;
    return 1;
  }
  size_t used = strlen(tried);
  snprintf(tried + used, tried_len - used, "\n  %s", p);
  free(p);
  return 0;
}

fmmcl_status fmmcl_kernel_find(fmmcl_context ctx, const char *file, char **path) {
  char tried[4096] = "";
  const char *env = getenv("FMMCL_KERNEL_PATH");
  if (env) {
    for (const char *s = env; *s;) {
      const char *colon = strchr(s, ':');
      size_t n = colon ? (size_t)(colon - s) : strlen(s);
      if (try_dir(s, n, file, path, tried, sizeof tried)) return FMMCL_SUCCESS;
      s += n + (colon ? 1 : 0);
    }
  }
  static const char *const fixed[] = {FMMCL_BUILD_KERNEL_DIR, FMMCL_INSTALL_KERNEL_DIR};
  for (size_t i = 0; i < 2; i++)
    if (try_dir(fixed[i], strlen(fixed[i]), file, path, tried, sizeof tried)) return FMMCL_SUCCESS;
  return fmmcl_fail(ctx, FMMCL_ERROR_KERNEL_NOT_FOUND,
                    "kernel source %s not found; looked in FMMCL_KERNEL_PATH (%s), the build "
                    "tree and the installed directory:%s",
                    file, env && *env ? env : "unset", tried);
}
