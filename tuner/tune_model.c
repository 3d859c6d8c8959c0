/* tune_model.c — fmmtune --model: runs the performance model's
 * microbenchmarks on one device and stores them in the device's model file. */
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "tune.h"

int tune_model_main(fmmcl_context ctx, const fmmcl_device_info *dev, const char *precision) {
  char path[4200];
  if (fmmcl_model_file_path(dev, path, sizeof path)) {
    fprintf(stderr, "fmmtune: %s\n", fmmcl_last_error(NULL));
    return 3;
  }
  fmmcl_model m;
  fmmcl_status st = fmmcl_model_load(path, dev, &m);
  if (st == FMMCL_ERROR_CORRUPT_FILE || st == FMMCL_ERROR_UNSUPPORTED)
    fprintf(stderr, "fmmtune: %s; starting a new model\n", fmmcl_last_error(NULL));
  int rc = 0;
  for (int p = 0; p < 2; p++) {
    const fmmcl_precision prec = p ? FMMCL_DOUBLE : FMMCL_SINGLE;
    if (strcmp(precision, "both") && strcmp(precision, p ? "double" : "single")) continue;
    if (prec == FMMCL_DOUBLE && !dev->has_fp64) continue;
    fmmcl_model_precision *mp = &m.prec[p];
    if (fmmcl_model_measure(ctx, prec, &mp->pairs_per_s, &mp->bytes_per_s)) {
      fprintf(stderr, "fmmtune: %s\n", fmmcl_last_error(ctx));
      rc = 1;
      continue;
    }
    mp->measured = 1;
    printf("%s %s: U-list mix %.4g pairs/s, streaming %.4g GB/s\n", dev->device_name,
           p ? "double" : "single", mp->pairs_per_s, mp->bytes_per_s * 1e-9);
  }
  if (fmmcl_model_store(path, dev, &m)) {
    fprintf(stderr, "fmmtune: %s\n", fmmcl_last_error(NULL));
    return 1;
  }
  printf("model: %s\n", path);
  return rc;
}
