/* tune_scratch.c — a private, temporary binary cache for one fmmtune run:
 * a candidate is built twice (check, then timing), and the second build
 * should come from the cache, but hundreds of throwaway binaries do not
 * belong in the user's cache. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include "tune.h"

int tune_scratch_begin(const fmmcl_device_info *dev, char *dir, size_t len) {
  const char *base = getenv("TMPDIR");
  snprintf(dir, len, "%s/fmmtune-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) {
    dir[0] = '\0';
    return 0;
  }
  /* The tuning file's path was fixed before this (it may derive from
   * XDG_CACHE_HOME); from here on only binaries go to the scratch place. */
  setenv("XDG_CACHE_HOME", dir, 1);
  /* PoCL compiles every kernel of the file to hand out a binary (half a
   * minute for the largest unrolls) but keeps its own cache of compiled
   * kernels, so on PoCL and other CPU runtimes the binary cache stays off. */
  if (dev->is_gpu) unsetenv("FMMCL_NO_CACHE");
  else setenv("FMMCL_NO_CACHE", "1", 1);
  return 1;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

void tune_scratch_end(const char *dir) {
  if (dir[0]) nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
