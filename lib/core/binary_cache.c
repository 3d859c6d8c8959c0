/* binary_cache.c — the on-disk cache of built program binaries: one file per
 * key, validated on load (magic, key, length, checksum), written atomically. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

#define MAGIC "FMMCLBIN"
#define FORMAT_VERSION 1u

typedef struct {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t key;
  uint64_t length;
  uint64_t checksum;
} cache_header;

uint64_t fmmcl_hash64(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

int fmmcl_cache_enabled(void) {
  const char *off = getenv("FMMCL_NO_CACHE");
  return !(off && *off && strcmp(off, "0") != 0);
}

fmmcl_status fmmcl_cache_dir_path(char *buf, size_t len) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && *xdg) n = snprintf(buf, len, "%s/fmmcl", xdg);
  else if (home && *home) n = snprintf(buf, len, "%s/.cache/fmmcl", home);
  else return FMMCL_ERROR_IO;
  return n > 0 && (size_t)n < len ? FMMCL_SUCCESS : FMMCL_ERROR_INVALID_ARGUMENT;
}

fmmcl_status fmmcl_cache_file_path(uint64_t key, char *buf, size_t len) {
  char dir[4096];
  if (fmmcl_cache_dir_path(dir, sizeof dir)) return FMMCL_ERROR_IO;
  int n = snprintf(buf, len, "%s/%016llx.bin", dir, (unsigned long long)key);
  return n > 0 && (size_t)n < len ? FMMCL_SUCCESS : FMMCL_ERROR_INVALID_ARGUMENT;
}

fmmcl_status fmmcl_cache_load(uint64_t key, unsigned char **data, size_t *len) {
  char path[4200];
  if (fmmcl_cache_file_path(key, path, sizeof path)) return FMMCL_ERROR_IO;
  FILE *f = fopen(path, "rb");
  if (!f) return FMMCL_ERROR_IO;
  cache_header h;
  fmmcl_status st = FMMCL_ERROR_CORRUPT_FILE;
  unsigned char *buf = NULL;
  if (fread(&h, sizeof h, 1, f) == 1 && memcmp(h.magic, MAGIC, 8) == 0 &&
      h.version == FORMAT_VERSION && h.key == key && h.length > 0 && h.length < (1ULL << 31)) {
    buf = malloc(h.length);
    if (buf && fread(buf, 1, h.length, f) == h.length && fgetc(f) == EOF &&
        fmmcl_hash64(FMMCL_HASH64_INIT, buf, h.length) == h.checksum) {
      *data = buf;
      *len = h.length;
      buf = NULL;
      st = FMMCL_SUCCESS;
    }
  }
  free(buf);
  fclose(f);
  return st;
}

fmmcl_status fmmcl_cache_store(uint64_t key, const unsigned char *data, size_t len) {
  char dir[4096], path[4200], tmp[4300];
  if (fmmcl_cache_dir_path(dir, sizeof dir) || fmmcl_make_dirs(dir, 0) != 0) return FMMCL_ERROR_IO;
  fmmcl_cache_file_path(key, path, sizeof path);
  /* a unique temporary name, then rename: readers never see half a file */
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%p", path, (long)getpid(), (const void *)data);
  FILE *f = fopen(tmp, "wb");
  if (!f) return FMMCL_ERROR_IO;
  cache_header h;
  memcpy(h.magic, MAGIC, 8);
  h.version = FORMAT_VERSION;
  h.reserved = 0;
  h.key = key;
  h.length = len;
  h.checksum = fmmcl_hash64(FMMCL_HASH64_INIT, data, len);
  int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(data, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return FMMCL_ERROR_IO;
  }
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_cache_info(char *dir_out, size_t dir_len, int *enabled, unsigned long long *bytes) {
  fmmcl_clear_error(NULL);
  char dir[4096];
  if (fmmcl_cache_dir_path(dir, sizeof dir))
    return fmmcl_fail(NULL, FMMCL_ERROR_IO, "no cache directory: neither XDG_CACHE_HOME nor HOME is set");
  if (dir_out && dir_len) snprintf(dir_out, dir_len, "%s", dir);
  if (enabled) *enabled = fmmcl_cache_enabled();
  if (bytes) {
    *bytes = 0;
    DIR *d = opendir(dir);
    if (d) {
      struct dirent *e;
      char path[4400];
      struct stat sb;
      while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
          snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
          if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) *bytes += (unsigned long long)sb.st_size;
        }
      closedir(d);
    }
  }
  return FMMCL_SUCCESS;
}
