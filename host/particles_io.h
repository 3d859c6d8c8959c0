/* particles_io.h — tables of float64 (particles, targets, results) read from and
 * written to CSV, raw little-endian binary and NumPy .npy; needs no libfmmcl. */
#ifndef FMMCL_PARTICLES_IO_H
#define FMMCL_PARTICLES_IO_H

#include <stddef.h>

typedef enum fmmcl_io_format {
  FMMCL_IO_UNKNOWN = 0,
  FMMCL_IO_CSV, /* a header line, then one row per line, comma separated */
  FMMCL_IO_BIN, /* rows of little-endian float64, no header */
  FMMCL_IO_NPY  /* NumPy .npy 1.0/2.0/3.0, '<f8' or '<f4', C order, shape (rows, cols) */
} fmmcl_io_format;

/* "csv", "bin" or "raw", "npy" (any case); FMMCL_IO_UNKNOWN otherwise. */
fmmcl_io_format fmmcl_io_format_parse(const char *name);
/* From the extension: .csv, .bin/.raw, .npy; FMMCL_IO_UNKNOWN otherwise. */
fmmcl_io_format fmmcl_io_format_from_path(const char *path);
const char *fmmcl_io_format_name(fmmcl_io_format format);

/* Called now and then while reading, with the bytes read so far and in all. */
typedef void (*fmmcl_io_progress_fn)(void *user, unsigned long long done, unsigned long long total);

/* Every function returns 0 on success; on failure -1 with a message naming the
 * file (and the line or record) in err[err_len]. */

/* Reads a table of exactly cols columns. *data (malloc'ed, rows*cols values,
 * row-major; free it) and *rows are set only on success. Every value must be
 * finite. progress may be NULL. */
int fmmcl_io_read(const char *path, fmmcl_io_format format, int cols, fmmcl_io_progress_fn progress,
                  void *user, double **data, size_t *rows, char *err, size_t err_len);

/* Fails when path exists and overwrite is 0, or when its directory is not
 * writable: lets a program refuse before a long computation, not after. */
int fmmcl_io_check_output(const char *path, int overwrite, char *err, size_t err_len);

/* Writes rows x cols values into a temporary file next to path and moves it
 * into place, so a reader never sees half a file. names (cols entries) head
 * the CSV columns and may be NULL ("c1", "c2", ...). An existing path is
 * replaced only when overwrite is nonzero. CSV uses %.17g so values survive
 * a round trip exactly. */
int fmmcl_io_write(const char *path, fmmcl_io_format format, const double *data, size_t rows, int cols,
                   const char *const *names, int overwrite, char *err, size_t err_len);

#endif /* FMMCL_PARTICLES_IO_H */
