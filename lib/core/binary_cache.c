/* binary_cache.c — the on-disk cache of built program binaries: one file per
 * key, validated on load (magic, key, tag, length, keyed checksum), written
 * atomically; the per-cache secret that keys the checksum. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

#define MAGIC "FMMCLBIN"
#define FORMAT_VERSION 2u
#define SECRET_NAME ".secret"
#define SECRET_LEN 16

typedef struct {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t key;
  uint64_t tag; /* hash of what the payload was made from (source + options); 0: none */
  uint64_t length;
  uint64_t checksum; /* SipHash-2-4 under the cache's secret of key, tag, length and payload */
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

/* ---- the keyed checksum ----------------------------------------------------
 * A plain checksum only catches accidents: anyone can recompute it over a
 * changed payload, and a forged binary then reaches the OpenCL driver, which
 * may crash on it. So the checksum is SipHash-2-4 (a keyed hash made for
 * this: without the key, a valid checksum cannot be computed even from many
 * valid files) under a random 128-bit secret kept in the cache directory,
 * readable by its owner only. It keeps out files written by anything but
 * libfmmcl (other tools, copies from other machines, hand edits, disk
 * damage); a process of the same user can read the secret, but such a
 * process can already change what the library runs in easier ways. */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                              \
  do {                                                        \
    v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32); \
    v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                    \
    v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                    \
    v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32); \
  } while (0)

static uint64_t load_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* SipHash-2-4 state over several pieces, as if concatenated. */
typedef struct {
  uint64_t v0, v1, v2, v3;
  unsigned char buf[8];
  size_t nbuf, total;
} siphash;

static void siphash_init(siphash *h, const unsigned char k[SECRET_LEN]) {
  uint64_t k0 = load_le64(k), k1 = load_le64(k + 8);
  h->v0 = k0 ^ 0x736f6d6570736575ULL, h->v1 = k1 ^ 0x646f72616e646f6dULL;
  h->v2 = k0 ^ 0x6c7967656e657261ULL, h->v3 = k1 ^ 0x7465646279746573ULL;
  h->nbuf = h->total = 0;
}

static void siphash_block(siphash *h, uint64_t m) {
  uint64_t v0 = h->v0, v1 = h->v1, v2 = h->v2, v3 = h->v3;
  v3 ^= m;
  SIPROUND;
  SIPROUND;
  v0 ^= m;
  h->v0 = v0, h->v1 = v1, h->v2 = v2, h->v3 = v3;
}

static void siphash_update(siphash *h, const void *data, size_t len) {
  const unsigned char *p = data;
  h->total += len;
  while (len--) {
    h->buf[h->nbuf++] = *p++;
    if (h->nbuf == 8) siphash_block(h, load_le64(h->buf)), h->nbuf = 0;
  }
}

static uint64_t siphash_final(siphash *h) {
  uint64_t b = (uint64_t)(h->total & 0xff) << 56;
  for (size_t i = 0; i < h->nbuf; i++) b |= (uint64_t)h->buf[i] << (8 * i);
  siphash_block(h, b);
  uint64_t v0 = h->v0, v1 = h->v1, v2 = h->v2 ^ 0xff, v3 = h->v3;
  for (int i = 0; i < 4; i++) SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t header_checksum(const unsigned char secret[SECRET_LEN], const cache_header *h,
                                const unsigned char *data) {
  siphash s;
  siphash_init(&s, secret);
  siphash_update(&s, &h->key, sizeof h->key);
  siphash_update(&s, &h->tag, sizeof h->tag);
  siphash_update(&s, &h->length, sizeof h->length);
  siphash_update(&s, data, (size_t)h->length);
  return siphash_final(&s);
}

static int read_exact(int fd, unsigned char *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t r = read(fd, buf + got, len - got);
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return 1;
}

/* The cache's secret, created on first use (create = 1) with mode 0600. A
 * new secret goes to a temporary file first and is linked into place, so
 * concurrent processes agree on one (the loser reads the winner's). */
static int cache_secret(const char *dir, int create, unsigned char secret[SECRET_LEN]) {
  char path[4200], tmp[4300];
  snprintf(path, sizeof path, "%s/" SECRET_NAME, dir);
  for (int attempt = 0; attempt < 2; attempt++) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      int ok = read_exact(fd, secret, SECRET_LEN);
      close(fd);
      return ok;
    }
    if (!create || attempt) return 0;
    unsigned char fresh[SECRET_LEN];
    int rnd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    int ok = rnd >= 0 && read_exact(rnd, fresh, SECRET_LEN);
    if (rnd >= 0) close(rnd);
    if (!ok) return 0;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return 0;
    ok = write(fd, fresh, SECRET_LEN) == SECRET_LEN;
    ok = close(fd) == 0 && ok;
    if (ok && link(tmp, path) != 0 && errno != EEXIST) ok = 0;
    unlink(tmp);
    if (!ok) return 0;
  }
  return 0;
}

fmmcl_status fmmcl_cache_load(uint64_t key, unsigned char **data, size_t *len) {
  return fmmcl_cache_load_tagged(key, 0, data, len);
}

fmmcl_status fmmcl_cache_store(uint64_t key, const unsigned char *data, size_t len) {
  return fmmcl_cache_store_tagged(key, 0, data, len);
}

fmmcl_status fmmcl_cache_load_tagged(uint64_t key, uint64_t tag, unsigned char **data, size_t *len) {
  char dir[4096], path[4200];
  unsigned char secret[SECRET_LEN];
  if (fmmcl_cache_dir_path(dir, sizeof dir) || fmmcl_cache_file_path(key, path, sizeof path))
    return FMMCL_ERROR_IO;
  FILE *f = fopen(path, "rb");
  if (!f) return FMMCL_ERROR_IO;
  cache_header h;
  fmmcl_status st = FMMCL_ERROR_CORRUPT_FILE;
  unsigned char *buf = NULL;
  if (fread(&h, sizeof h, 1, f) == 1 && memcmp(h.magic, MAGIC, 8) == 0 && h.version == FORMAT_VERSION &&
      h.key == key && h.tag == tag && h.length > 0 && h.length < (1ULL << 31) &&
      cache_secret(dir, 0, secret)) {
    buf = malloc(h.length);
    if (buf && fread(buf, 1, h.length, f) == h.length && fgetc(f) == EOF &&
        header_checksum(secret, &h, buf) == h.checksum) {
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

fmmcl_status fmmcl_cache_store_tagged(uint64_t key, uint64_t tag, const unsigned char *data, size_t len) {
  char dir[4096], path[4200], tmp[4300];
  unsigned char secret[SECRET_LEN];
  if (fmmcl_cache_dir_path(dir, sizeof dir) || fmmcl_make_dirs(dir, 0) != 0 || !cache_secret(dir, 1, secret))
    return FMMCL_ERROR_IO;
  fmmcl_cache_file_path(key, path, sizeof path);
  /* a unique temporary name, then rename: readers never see half a file */
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%p", path, (long)getpid(), (const void *)data);
  FILE *f = fopen(tmp, "wb");
  if (!f) return FMMCL_ERROR_IO;
  cache_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, MAGIC, 8);
  h.version = FORMAT_VERSION;
  h.key = key;
  h.tag = tag;
  h.length = len;
  h.checksum = header_checksum(secret, &h, data);
  int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(data, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return FMMCL_ERROR_IO;
  }
  return FMMCL_SUCCESS;
}

void fmmcl_cache_discard(uint64_t key) {
  char path[4200];
  if (!fmmcl_cache_file_path(key, path, sizeof path)) unlink(path);
}

/* The mark of a binary being handed to the driver: a hidden file next to
 * it, so that a binary on which the driver crashed is never handed over
 * again. */
static int mark_path(uint64_t key, char *buf, size_t len) {
  char dir[4096];
  if (fmmcl_cache_dir_path(dir, sizeof dir)) return 0;
  int n = snprintf(buf, len, "%s/.%016llx.trying", dir, (unsigned long long)key);
  return n > 0 && (size_t)n < len;
}

int fmmcl_cache_try_begin(uint64_t key) {
  char path[4200];
  if (!mark_path(key, path, sizeof path)) return 0;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    close(fd);
    return 1;
  }
  /* A mark left by a process that died in the driver (or, rarely, one
   * loading the same binary right now: then this costs one rebuild). */
  if (errno == EEXIST) fmmcl_cache_discard(key);
  return 0;
}

void fmmcl_cache_try_end(uint64_t key) {
  char path[4200];
  if (mark_path(key, path, sizeof path)) unlink(path);
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
