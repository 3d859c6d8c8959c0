/* particles_io.c — reads and writes float64 tables as CSV, raw little-endian
 * binary and NumPy .npy, with messages that name the file, line or record. */
#include "particles_io.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Reads and progress reports go in chunks this big. */
#define IO_CHUNK_BYTES (8u << 20)
#define CSV_PROGRESS_LINES 65536

static int io_fail(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int io_fail(char *err, size_t err_len, const char *fmt, ...) {
  if (err && err_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* ---- formats ------------------------------------------------------------ */

fmmcl_io_format fmmcl_io_format_parse(const char *name) {
  if (!name) return FMMCL_IO_UNKNOWN;
  if (!strcasecmp(name, "csv")) return FMMCL_IO_CSV;
  if (!strcasecmp(name, "bin") || !strcasecmp(name, "raw")) return FMMCL_IO_BIN;
  if (!strcasecmp(name, "npy")) return FMMCL_IO_NPY;
  return FMMCL_IO_UNKNOWN;
}

fmmcl_io_format fmmcl_io_format_from_path(const char *path) {
  const char *slash = path ? strrchr(path, '/') : NULL;
  const char *dot = path ? strrchr(slash ? slash : path, '.') : NULL;
  return dot ? fmmcl_io_format_parse(dot + 1) : FMMCL_IO_UNKNOWN;
}

const char *fmmcl_io_format_name(fmmcl_io_format format) {
  switch (format) {
    case FMMCL_IO_CSV: return "csv";
    case FMMCL_IO_BIN: return "bin";
    case FMMCL_IO_NPY: return "npy";
    default: return "unknown";
  }
}

/* ---- byte order ----------------------------------------------------------- */

static int host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 1;
}

/* Files are little-endian; a big-endian host swaps each item in place. */
static void to_from_little_endian(void *buf, size_t items, size_t item_size) {
  if (host_is_little_endian()) return;
  unsigned char *p = buf;
  for (size_t i = 0; i < items; i++, p += item_size)
    for (size_t a = 0, b = item_size - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

/* ---- reading helpers ------------------------------------------------------- */

static int file_size(FILE *f, unsigned long long *size) {
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  *size = (unsigned long long)st.st_size;
  return 0;
}

/* rows*cols doubles, or NULL when that overflows or memory runs out. */
static double *alloc_table(size_t rows, int cols) {
  if (rows > SIZE_MAX / sizeof(double) / (size_t)cols) return NULL;
  return malloc(rows * (size_t)cols * sizeof(double) + 1); /* +1: never malloc(0) */
}

/* Reads n bytes in chunks, reporting progress from offset base of total. */
static int read_chunked(FILE *f, void *buf, size_t n, unsigned long long base, unsigned long long total,
                        fmmcl_io_progress_fn progress, void *user) {
  unsigned char *p = buf;
  size_t done = 0;
  while (done < n) {
    size_t want = n - done < IO_CHUNK_BYTES ? n - done : IO_CHUNK_BYTES;
    if (fread(p + done, 1, want, f) != want) return -1;
    done += want;
    if (progress) progress(user, base + done, total);
  }
  return 0;
}

static int check_finite(const char *path, const double *v, size_t rows, int cols, char *err, size_t err_len) {
  for (size_t i = 0; i < rows * (size_t)cols; i++)
    if (!isfinite(v[i]))
      return io_fail(err, err_len, "%s: record %zu, column %d: value is not a finite number", path,
                     i / (size_t)cols + 1, (int)(i % (size_t)cols) + 1);
  return 0;
}

/* ---- CSV ------------------------------------------------------------------ */

/* Trims blanks and the line end in place; returns the first non-blank. */
static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = '\0';
  return s;
}

static int count_fields(const char *line) {
  int n = 1;
  for (; *line; line++) n += *line == ',';
  return n;
}

/* A whole field as a finite number: 0, or 1 when it is not a number at all,
 * or 2 when it is NaN or infinite. */
static int parse_field(char *field, double *value) {
  char *s = trim(field), *end;
  if (!*s) return 1;
  errno = 0;
  *value = strtod(s, &end);
  if (end == s || *end) return 1;
  return isfinite(*value) ? 0 : 2;
}

/* Splits a data line into cols values, or reports what is wrong with it. */
static int parse_csv_row(char *line, int cols, double *row, const char *path, size_t line_no, char *err,
                         size_t err_len) {
  int found = count_fields(line);
  if (found != cols)
    return io_fail(err, err_len, "%s:%zu: %d column%s, expected %d", path, line_no, found,
                   found == 1 ? "" : "s", cols);
  char *field = line;
  for (int c = 0; c < cols; c++) {
    char *comma = strchr(field, ',');
    if (comma) *comma = '\0';
    int bad = parse_field(field, &row[c]);
    if (bad)
      return io_fail(err, err_len, "%s:%zu: column %d: '%s' is %s", path, line_no, c + 1, trim(field),
                     bad == 2 ? "not a finite number" : "not a number");
    field = comma + 1;
  }
  return 0;
}

/* The header names the columns: only its count is checked, and a line of
 * numbers is refused so that a file without header does not lose a row. */
static int check_csv_header(char *line, int cols, const char *path, size_t line_no, char *err,
                            size_t err_len) {
  if (!strncmp(line, "\xEF\xBB\xBF", 3)) /* a UTF-8 byte-order mark */
    line += 3;
  int found = count_fields(line);
  if (found != cols)
    return io_fail(err, err_len, "%s:%zu: header has %d column%s, expected %d", path, line_no, found,
                   found == 1 ? "" : "s", cols);
  double first;
  char *copy = strdup(line);
  if (!copy) return io_fail(err, err_len, "%s: out of memory", path);
  char *comma = strchr(copy, ',');
  if (comma) *comma = '\0';
  int numeric = parse_field(copy, &first) != 1;
  free(copy);
  if (numeric)
    return io_fail(err, err_len,
                   "%s:%zu: expected a header line of column names, found numbers "
                   "(CSV files start with a header such as x,y,z,q)",
                   path, line_no);
  return 0;
}

static int grow_table(double **data, size_t *cap_rows, int cols) {
  size_t want = *cap_rows ? 2 * *cap_rows : 1024;
  if (want > SIZE_MAX / sizeof(double) / (size_t)cols) return -1;
  double *p = realloc(*data, want * (size_t)cols * sizeof(double));
  if (!p) return -1;
  *data = p;
  *cap_rows = want;
  return 0;
}

static int read_csv(FILE *f, const char *path, int cols, fmmcl_io_progress_fn progress, void *user,
                    double **data, size_t *rows, char *err, size_t err_len) {
  unsigned long long total = 0, done = 0;
  if (file_size(f, &total) != 0) total = 0;
  char *line = NULL;
  size_t line_cap = 0, line_no = 0, n = 0, cap = 0;
  double *table = NULL;
  int have_header = 0, rc = 0;
  ssize_t len;
  while ((len = getline(&line, &line_cap, f)) > 0) {
    line_no++;
    done += (unsigned long long)len;
    if (progress && line_no % CSV_PROGRESS_LINES == 0) progress(user, done, total);
    if ((size_t)len != strlen(line)) {
      rc = io_fail(err, err_len, "%s:%zu: a NUL byte: not a text file", path, line_no);
      break;
    }
    char *text = trim(line);
    if (!*text) continue; /* blank lines, a trailing one included, carry no data */
    if (!have_header) {
      rc = check_csv_header(text, cols, path, line_no, err, err_len);
      if (rc) break;
      have_header = 1;
      continue;
    }
    if (n == cap && grow_table(&table, &cap, cols) != 0) {
      rc = io_fail(err, err_len, "%s: out of memory after %zu rows", path, n);
      break;
    }
    rc = parse_csv_row(text, cols, table + n * (size_t)cols, path, line_no, err, err_len);
    if (rc) break;
    n++;
  }
  if (!rc && ferror(f)) rc = io_fail(err, err_len, "%s: read error: %s", path, strerror(errno));
  if (!rc && !have_header)
    rc = io_fail(err, err_len, "%s: empty file: expected a header line and rows", path);
  if (!rc && !table && !(table = alloc_table(0, cols))) rc = io_fail(err, err_len, "%s: out of memory", path);
  free(line);
  if (rc) {
    free(table);
    return rc;
  }
  if (progress) progress(user, total, total);
  *data = table;
  *rows = n;
  return 0;
}

/* ---- raw binary -------------------------------------------------------------- */

static int read_bin(FILE *f, const char *path, int cols, fmmcl_io_progress_fn progress, void *user,
                    double **data, size_t *rows, char *err, size_t err_len) {
  unsigned long long size;
  if (file_size(f, &size) != 0) return io_fail(err, err_len, "%s: not a regular file", path);
  unsigned long long record = (unsigned long long)cols * sizeof(double);
  if (size % record != 0)
    return io_fail(err, err_len,
                   "%s: size %llu bytes is not a multiple of the record size %llu "
                   "(%d float64 values per row)",
                   path, size, record, cols);
  size_t n = (size_t)(size / record);
  double *table = alloc_table(n, cols);
  if (!table) return io_fail(err, err_len, "%s: out of memory for %zu rows", path, n);
  if (read_chunked(f, table, n * (size_t)record, 0, size, progress, user) != 0) {
    free(table);
    return io_fail(err, err_len, "%s: read error: %s", path,
                   ferror(f) ? strerror(errno) : "file shrank while being read");
  }
  to_from_little_endian(table, n * (size_t)cols, sizeof(double));
  if (check_finite(path, table, n, cols, err, err_len) != 0) {
    free(table);
    return -1;
  }
  *data = table;
  *rows = n;
  return 0;
}

/* ---- NumPy .npy ------------------------------------------------------------------ */

static const char NPY_MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

typedef struct npy_header {
  int item_size; /* 8: '<f8', 4: '<f4' */
  unsigned long long shape[2];
  int ndim;
  unsigned long long data_offset;
} npy_header;

/* The value after a key of the header dict ('descr': ...), or NULL. */
static const char *npy_value(const char *dict, const char *key) {
  char quoted[32];
  for (int q = 0; q < 2; q++) {
    snprintf(quoted, sizeof quoted, q ? "\"%s\"" : "'%s'", key);
    const char *p = strstr(dict, quoted);
    if (p) {
      p += strlen(quoted);
      while (isspace((unsigned char)*p)) p++;
      if (*p != ':') return NULL;
      p++;
      while (isspace((unsigned char)*p)) p++;
      return p;
    }
  }
  return NULL;
}

static int npy_parse_descr(const char *v, npy_header *h, const char *path, char *err, size_t err_len) {
  if (!v || (*v != '\'' && *v != '"')) return io_fail(err, err_len, "%s: .npy header has no 'descr'", path);
  char descr[16] = {0};
  size_t n = strcspn(v + 1, "'\"");
  memcpy(descr, v + 1, n < sizeof descr - 1 ? n : sizeof descr - 1);
  if (!strcmp(descr, "<f8")) h->item_size = 8;
  else if (!strcmp(descr, "<f4")) h->item_size = 4;
  else
    return io_fail(err, err_len,
                   "%s: .npy dtype '%s' is not supported (little-endian float64 '<f8' "
                   "or float32 '<f4' only)",
                   path, descr);
  return 0;
}

static int npy_parse_shape(const char *v, npy_header *h, const char *path, char *err, size_t err_len) {
  if (!v || *v != '(') return io_fail(err, err_len, "%s: .npy header has no 'shape'", path);
  v++;
  h->ndim = 0;
  for (;;) {
    while (isspace((unsigned char)*v)) v++;
    if (*v == ')') return 0;
    char *end;
    errno = 0;
    unsigned long long d = strtoull(v, &end, 10);
    if (end == v || errno || h->ndim == 2)
      return io_fail(err, err_len, "%s: .npy shape is not (rows, columns)", path);
    h->shape[h->ndim++] = d;
    v = end;
    while (isspace((unsigned char)*v)) v++;
    if (*v == ',') v++;
  }
}

/* Reads magic, version and the header dict; leaves f at the data. */
static int npy_read_header(FILE *f, const char *path, npy_header *h, char *err, size_t err_len) {
  unsigned char pre[12];
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, NPY_MAGIC, 6) != 0)
    return io_fail(err, err_len, "%s: not a .npy file (bad magic)", path);
  int major = pre[6];
  unsigned long long header_len;
  if (major == 1) {
    if (fread(pre + 8, 1, 2, f) != 2) return io_fail(err, err_len, "%s: truncated .npy header", path);
    header_len = pre[8] | (unsigned)pre[9] << 8;
    h->data_offset = 10 + header_len;
  } else if (major == 2 || major == 3) {
    if (fread(pre + 8, 1, 4, f) != 4) return io_fail(err, err_len, "%s: truncated .npy header", path);
    header_len = pre[8] | (unsigned long long)pre[9] << 8 | (unsigned long long)pre[10] << 16 |
                 (unsigned long long)pre[11] << 24;
    h->data_offset = 12 + header_len;
  } else {
    return io_fail(err, err_len, "%s: .npy version %d.%d is not supported", path, major, pre[7]);
  }
  if (header_len > (1u << 20)) return io_fail(err, err_len, "%s: .npy header too long", path);
  char *dict = malloc(header_len + 1);
  if (!dict) return io_fail(err, err_len, "%s: out of memory", path);
  int rc = 0;
  if (fread(dict, 1, header_len, f) != header_len)
    rc = io_fail(err, err_len, "%s: truncated .npy header", path);
  dict[header_len] = '\0';
  const char *fortran = rc ? NULL : npy_value(dict, "fortran_order");
  if (!rc) rc = npy_parse_descr(npy_value(dict, "descr"), h, path, err, err_len);
  if (!rc && (!fortran || strncmp(fortran, "False", 5) != 0))
    rc = io_fail(err, err_len, "%s: .npy array is not in C order (fortran_order must be False)", path);
  if (!rc) rc = npy_parse_shape(npy_value(dict, "shape"), h, path, err, err_len);
  free(dict);
  return rc;
}

/* Shape (rows, cols), or (rows,) when one column is wanted. */
static int npy_rows(const npy_header *h, int cols, const char *path, size_t *rows, char *err,
                    size_t err_len) {
  int ok = (h->ndim == 2 && h->shape[1] == (unsigned long long)cols) || (h->ndim == 1 && cols == 1);
  if (!ok) {
    if (h->ndim == 2)
      return io_fail(err, err_len, "%s: .npy shape (%llu, %llu) has %llu columns, expected %d", path,
                     h->shape[0], h->shape[1], h->shape[1], cols);
    return io_fail(err, err_len, "%s: .npy array has %d dimension%s, expected shape (N, %d)", path, h->ndim,
                   h->ndim == 1 ? "" : "s", cols);
  }
  if (h->shape[0] > SIZE_MAX / sizeof(double) / (size_t)cols)
    return io_fail(err, err_len, "%s: .npy array too large", path);
  *rows = (size_t)h->shape[0];
  return 0;
}

/* float32 values widened to double, a chunk at a time. */
static int read_floats(FILE *f, double *out, size_t count, unsigned long long base, unsigned long long total,
                       fmmcl_io_progress_fn progress, void *user) {
  enum { CHUNK = 1 << 16 };
  float *buf = malloc(CHUNK * sizeof(float));
  if (!buf) return -1;
  int rc = 0;
  for (size_t i = 0; i < count && rc == 0; i += CHUNK) {
    size_t m = count - i < CHUNK ? count - i : CHUNK;
    if (fread(buf, sizeof(float), m, f) != m) {
      rc = -1;
      break;
    }
    to_from_little_endian(buf, m, sizeof(float));
    for (size_t k = 0; k < m; k++) out[i + k] = buf[k];
    if (progress) progress(user, base + (i + m) * sizeof(float), total);
  }
  free(buf);
  return rc;
}

static int read_npy(FILE *f, const char *path, int cols, fmmcl_io_progress_fn progress, void *user,
                    double **data, size_t *rows, char *err, size_t err_len) {
  npy_header h = {0};
  unsigned long long size;
  size_t n = 0;
  if (file_size(f, &size) != 0) return io_fail(err, err_len, "%s: not a regular file", path);
  if (npy_read_header(f, path, &h, err, err_len) || npy_rows(&h, cols, path, &n, err, err_len)) return -1;
  unsigned long long bytes = (unsigned long long)n * (unsigned long long)cols * h.item_size;
  if (size != h.data_offset + bytes)
    return io_fail(err, err_len, "%s: .npy data is %llu bytes, shape and dtype say %llu", path,
                   size - (size < h.data_offset ? size : h.data_offset), bytes);
  double *table = alloc_table(n, cols);
  if (!table) return io_fail(err, err_len, "%s: out of memory for %zu rows", path, n);
  size_t count = n * (size_t)cols;
  int rc = h.item_size == 8
               ? read_chunked(f, table, count * sizeof(double), h.data_offset, size, progress, user)
               : read_floats(f, table, count, h.data_offset, size, progress, user);
  if (rc != 0) {
    free(table);
    return io_fail(err, err_len, "%s: read error", path);
  }
  if (h.item_size == 8) to_from_little_endian(table, count, sizeof(double));
  if (check_finite(path, table, n, cols, err, err_len) != 0) {
    free(table);
    return -1;
  }
  *data = table;
  *rows = n;
  return 0;
}

int fmmcl_io_read(const char *path, fmmcl_io_format format, int cols, fmmcl_io_progress_fn progress,
                  void *user, double **data, size_t *rows, char *err, size_t err_len) {
  if (cols < 1) return io_fail(err, err_len, "%s: %d columns asked for", path, cols);
  if (format == FMMCL_IO_UNKNOWN)
    return io_fail(err, err_len, "%s: unknown file format (extension not .csv, .bin, .raw or .npy)", path);
  FILE *f = fopen(path, format == FMMCL_IO_CSV ? "r" : "rb");
  if (!f) return io_fail(err, err_len, "%s: %s", path, strerror(errno));
  int rc;
  if (format == FMMCL_IO_CSV) rc = read_csv(f, path, cols, progress, user, data, rows, err, err_len);
  else if (format == FMMCL_IO_BIN) rc = read_bin(f, path, cols, progress, user, data, rows, err, err_len);
  else rc = read_npy(f, path, cols, progress, user, data, rows, err, err_len);
  fclose(f);
  return rc;
}

/* ---- writing -------------------------------------------------------------------- */

static int write_csv(FILE *f, const double *data, size_t rows, int cols, const char *const *names) {
  for (int c = 0; c < cols; c++) {
    if (names) fprintf(f, "%s%s", c ? "," : "", names[c]);
    else fprintf(f, "%sc%d", c ? "," : "", c + 1);
  }
  fputc('\n', f);
  for (size_t i = 0; i < rows; i++) {
    for (int c = 0; c < cols; c++) fprintf(f, c ? ",%.17g" : "%.17g", data[i * (size_t)cols + c]);
    fputc('\n', f);
  }
  return ferror(f) ? -1 : 0;
}

/* Little-endian copies go out a chunk at a time so the caller's data stays
 * untouched on a big-endian host. */
static int write_doubles_le(FILE *f, const double *data, size_t count) {
  if (host_is_little_endian()) return fwrite(data, sizeof(double), count, f) == count ? 0 : -1;
  enum { CHUNK = 8192 };
  double buf[CHUNK];
  for (size_t i = 0; i < count; i += CHUNK) {
    size_t m = count - i < CHUNK ? count - i : CHUNK;
    memcpy(buf, data + i, m * sizeof(double));
    to_from_little_endian(buf, m, sizeof(double));
    if (fwrite(buf, sizeof(double), m, f) != m) return -1;
  }
  return 0;
}

/* Version 1.0 header, padded with spaces so the data starts at a multiple of
 * 64 bytes, as NumPy itself writes it. */
static int write_npy(FILE *f, const double *data, size_t rows, int cols) {
  char dict[128];
  int len = snprintf(dict, sizeof dict, "{'descr': '<f8', 'fortran_order': False, 'shape': (%zu, %d), }",
                     rows, cols);
  size_t total = 10 + (size_t)len + 1;
  size_t padded = (total + 63) / 64 * 64;
  size_t header_len = padded - 10;
  unsigned char pre[10];
  memcpy(pre, NPY_MAGIC, 6);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)(header_len & 0xff);
  pre[9] = (unsigned char)(header_len >> 8);
  if (fwrite(pre, 1, 10, f) != 10 || fwrite(dict, 1, (size_t)len, f) != (size_t)len) return -1;
  for (size_t i = 10 + (size_t)len; i < padded - 1; i++) fputc(' ', f);
  fputc('\n', f);
  return write_doubles_le(f, data, rows * (size_t)cols);
}

/* The directory part of path ("." when it has none), malloc'ed. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  char *dir = malloc((size_t)(slash - path) + 1);
  if (dir) {
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
  }
  return dir;
}

int fmmcl_io_check_output(const char *path, int overwrite, char *err, size_t err_len) {
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return io_fail(err, err_len, "%s: is a directory", path);
    if (!overwrite)
      return io_fail(err, err_len, "%s: exists; not overwriting it (use --force to replace it)", path);
  }
  char *dir = dir_of(path);
  if (!dir) return io_fail(err, err_len, "%s: out of memory", path);
  int rc = 0;
  if (access(dir, W_OK | X_OK) != 0)
    rc = io_fail(err, err_len, "%s: cannot write in directory %s: %s", path, dir, strerror(errno));
  free(dir);
  return rc;
}

/* A temporary file in path's directory, with the permissions a new file
 * would get (mkstemp makes it 0600). */
static FILE *open_temp_beside(const char *path, char **tmp_path) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t dir_len = (size_t)(base - path);
  size_t len = dir_len + strlen(base) + 16;
  char *tmp = malloc(len);
  if (!tmp) return NULL;
  snprintf(tmp, len, "%.*s.%s.tmp-XXXXXX", (int)dir_len, path, base);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    free(tmp);
    return NULL;
  }
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    close(fd);
    unlink(tmp);
    free(tmp);
    return NULL;
  }
  *tmp_path = tmp;
  return f;
}

/* Moves tmp to path. Without overwrite, link() refuses atomically when path
 * appeared meanwhile; file systems without hard links fall back to a check
 * then rename. */
static int move_into_place(const char *tmp, const char *path, int overwrite, char *err, size_t err_len) {
  if (!overwrite) {
    if (link(tmp, path) == 0) {
      unlink(tmp);
      return 0;
    }
    if (errno == EEXIST)
      return io_fail(err, err_len, "%s: exists; not overwriting it (use --force to replace it)", path);
    if (access(path, F_OK) == 0)
      return io_fail(err, err_len, "%s: exists; not overwriting it (use --force to replace it)", path);
  }
  if (rename(tmp, path) != 0)
    return io_fail(err, err_len, "%s: cannot move %s into place: %s", path, tmp, strerror(errno));
  return 0;
}

int fmmcl_io_write(const char *path, fmmcl_io_format format, const double *data, size_t rows, int cols,
                   const char *const *names, int overwrite, char *err, size_t err_len) {
  if (format == FMMCL_IO_UNKNOWN)
    return io_fail(err, err_len, "%s: unknown file format (extension not .csv, .bin, .raw or .npy)", path);
  if (fmmcl_io_check_output(path, overwrite, err, err_len) != 0) return -1;
  char *tmp = NULL;
  FILE *f = open_temp_beside(path, &tmp);
  if (!f)
    return io_fail(err, err_len, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
  int rc;
  if (format == FMMCL_IO_CSV) rc = write_csv(f, data, rows, cols, names);
  else if (format == FMMCL_IO_BIN) rc = write_doubles_le(f, data, rows * (size_t)cols);
  else rc = write_npy(f, data, rows, cols);
  /* Data must reach the disk before the rename makes it visible. */
  if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0)) rc = -1;
  int saved = errno;
  if (fclose(f) != 0 && rc == 0) {
    rc = -1;
    saved = errno;
  }
  if (rc != 0) {
    unlink(tmp);
    free(tmp);
    return io_fail(err, err_len, "%s: write error: %s", path, strerror(saved));
  }
  rc = move_into_place(tmp, path, overwrite, err, err_len);
  if (rc != 0) unlink(tmp);
  free(tmp);
  return rc;
}
