/* compare_rows.c — relative L2 differences between two tables of float64
 * rows (libfmmcl's output and fmm3d_driver's), per group of columns.
 *
 *   compare_rows A.bin B.bin COLS FIRST,FIRST,...
 *
 * Both files hold rows of COLS float64, no header. Groups start at the
 * given column indices (e.g. 0,1,4 for pot | grad | Hessian in 10 columns);
 * for each, prints ||A - B|| / ||B|| over all rows, the largest error at
 * one row over B's rms per row, and the median and 99th percentile over the
 * rows of each row's own relative error |A_i - B_i| / |B_i| (the measure
 * treecodes such as Ryoanji report for accelerations). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static double *load(const char *path, int cols, long *rows) {
  FILE *f = fopen(path, "rb");
  if (!f || fseek(f, 0, SEEK_END)) return NULL;
  long bytes = ftell(f);
  rewind(f);
  *rows = bytes / (8L * cols);
  double *d = malloc((size_t)bytes + 8);
  if (!d || bytes % (8L * cols) || fread(d, 8, (size_t)(*rows * cols), f) != (size_t)(*rows * cols)) {
    free(d);
    d = NULL;
  }
  fclose(f);
  return d;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: compare_rows A.bin B.bin COLS FIRST,FIRST,...\n");
    return 2;
  }
  const int cols = atoi(argv[3]);
  int first[17], ng = 0;
  for (char *s = argv[4]; *s && ng < 16;) {
    first[ng++] = (int)strtol(s, &s, 10);
    if (*s == ',') s++;
  }
  first[ng] = cols;
  long na = 0, nb = 0;
  double *a = cols > 0 ? load(argv[1], cols, &na) : NULL, *b = cols > 0 ? load(argv[2], cols, &nb) : NULL;
  if (!a || !b || na != nb || na == 0) {
    fprintf(stderr, "compare_rows: %s and %s are not tables of the same rows of %d float64\n", argv[1], argv[2],
            cols);
    return 1;
  }
  double *rel = malloc((size_t)na * sizeof *rel);
  if (!rel) {
    fprintf(stderr, "compare_rows: out of memory\n");
    return 1;
  }
  for (int g = 0; g < ng; g++) {
    double num = 0, den = 0, worst = 0;
    for (long i = 0; i < na; i++) {
      double e2 = 0, b2 = 0;
      for (int c = first[g]; c < first[g + 1]; c++) {
        const double d = a[i * cols + c] - b[i * cols + c];
        e2 += d * d, b2 += b[i * cols + c] * b[i * cols + c];
      }
      num += e2, den += b2;
      worst = fmax(worst, sqrt(e2));
      rel[i] = b2 > 0 ? sqrt(e2 / b2) : e2 > 0 ? INFINITY : 0;
    }
    qsort(rel, (size_t)na, sizeof *rel, by_value);
    printf("%scols %d-%d rel_l2=%.3e max=%.3e median_rel=%.3e p99_rel=%.3e", g ? " " : "", first[g],
           first[g + 1] - 1, sqrt(num / den), worst / sqrt(den / (double)na), rel[na / 2],
           rel[(long)(0.99 * (double)(na - 1))]);
  }
  printf(" rows=%ld\n", na);
  free(a), free(b), free(rel);
  return 0;
}
