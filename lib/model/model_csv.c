/* model_csv.c — model samples as CSV, one sample a row with the device's
 * peaks: what fmmtune --fit and bench-model measured, for refitting and
 * validating the model offline (benchmarks/model-refit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

fmmcl_status fmmcl_model_samples_write(FILE *f, const char *device, fmmcl_precision prec,
                                       const fmmcl_model_precision *mp, const fmmcl_model_sample *s,
                                       size_t n) {
  if (!f || !device || !mp || (n && !s))
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_model_samples_write: NULL argument");
  if (ftell(f) == 0) { /* a new file: the header */
    fprintf(f, "device,precision,pairs_per_s,bytes_per_s,order,n_sources,n_targets");
    for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) {
      const char *nm = fmmcl_model_phase_names[ph];
      fprintf(f, ",w_%s,g_%s,t_%s", nm, nm, nm);
    }
    fputc('\n', f);
  }
  char dev[256];
  snprintf(dev, sizeof dev, "%s", device);
  for (char *c = dev; *c; c++)
    if (*c == ',' || *c == '\n') *c = ';';
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "%s,%s,%.9g,%.9g,%d,%zu,%zu", dev, prec == FMMCL_DOUBLE ? "double" : "single", mp->pairs_per_s,
            mp->bytes_per_s, s[i].order, s[i].n_sources, s[i].n_targets);
    for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++)
      fprintf(f, ",%.17g,%.17g,%.9e", s[i].work[ph], s[i].work[FMMCL_MODEL_NPHASES + ph], s[i].seconds[ph]);
    fputc('\n', f);
  }
  return ferror(f) ? fmmcl_fail(NULL, FMMCL_ERROR_IO, "writing model samples failed") : FMMCL_SUCCESS;
}

fmmcl_status fmmcl_model_samples_read(FILE *f, fmmcl_model_csv_row **rows, size_t *count) {
  if (!f || !rows || !count)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_model_samples_read: NULL argument");
  *rows = NULL;
  *count = 0;
  size_t cap = 0, n = 0;
  fmmcl_model_csv_row *out = NULL;
  char *line = NULL;
  size_t len = 0;
  size_t line_no = 0;
  fmmcl_status st = FMMCL_SUCCESS;
  while (!st && getline(&line, &len, f) > 0) {
    line_no++;
    if (!strncmp(line, "device,", 7)) continue; /* a header (files may be concatenated) */
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      fmmcl_model_csv_row *grown = realloc(out, cap * sizeof *out);
      if (!grown) {
        st = fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
        break;
      }
      out = grown;
    }
    fmmcl_model_csv_row *r = &out[n];
    memset(r, 0, sizeof *r);
    char *save = NULL, *tok = strtok_r(line, ",\n", &save);
    int field = 0;
    for (; tok; tok = strtok_r(NULL, ",\n", &save), field++) {
      if (field == 0) snprintf(r->device, sizeof r->device, "%s", tok);
      else if (field == 1) r->precision = strcmp(tok, "double") ? FMMCL_SINGLE : FMMCL_DOUBLE;
      else if (field == 2) r->model.pairs_per_s = strtod(tok, NULL);
      else if (field == 3) r->model.bytes_per_s = strtod(tok, NULL);
      else if (field == 4) r->sample.order = atoi(tok);
      else if (field == 5) r->sample.n_sources = strtoull(tok, NULL, 10);
      else if (field == 6) r->sample.n_targets = strtoull(tok, NULL, 10);
      else if (field < 7 + 3 * FMMCL_MODEL_NPHASES) {
        const int ph = (field - 7) / 3, k = (field - 7) % 3;
        const double v = strtod(tok, NULL);
        if (k == 0) r->sample.work[ph] = v;
        else if (k == 1) r->sample.work[FMMCL_MODEL_NPHASES + ph] = v;
        else r->sample.seconds[ph] = v;
      }
    }
    if (field != 7 + 3 * FMMCL_MODEL_NPHASES)
      st = fmmcl_fail(NULL, FMMCL_ERROR_CORRUPT_FILE, "model samples line %zu: %d fields, want %d", line_no,
                      field, 7 + 3 * FMMCL_MODEL_NPHASES);
    r->model.measured = 1;
    n++;
  }
  free(line);
  if (st) {
    free(out);
    return st;
  }
  *rows = out;
  *count = n;
  return FMMCL_SUCCESS;
}
