/* model.h — private to the performance model (issue 8, after Choi et al.,
 * GPGPU-7 2014): per-device peaks from microbenchmarks, per-phase time
 * constants fitted by least squares, the model file that stores both, and
 * the predictions that pick method, leaf size and schedule. */
#ifndef FMMCL_MODEL_H
#define FMMCL_MODEL_H

#include "internal.h"

#define FMMCL_MODEL_MAGIC "fmmcl-model 1"

/* The phases the model predicts, in fmmcl_plan_timings' names; the paper's
 * Up = p2m+m2m, U = p2p, V = m2l, W = m2p, X = p2l, Down = l2l+l2p. */
enum {
  FMMCL_MODEL_P2M, FMMCL_MODEL_M2M, FMMCL_MODEL_M2L, FMMCL_MODEL_P2L, FMMCL_MODEL_L2L,
  FMMCL_MODEL_L2P, FMMCL_MODEL_M2P, FMMCL_MODEL_P2P, FMMCL_MODEL_UPLOAD, FMMCL_MODEL_DOWNLOAD,
  FMMCL_MODEL_NPHASES
};
/* Regressors per phase: a constant (launch overhead), a data-movement term
 * (bytes / bandwidth) and a compute term (operations / peak); see model_fit.c. */
#define FMMCL_MODEL_NREG 3

extern const char *const fmmcl_model_phase_names[FMMCL_MODEL_NPHASES];

typedef struct fmmcl_model_precision {
  int measured;                 /* peaks below are valid */
  double pairs_per_s;           /* U-list instruction mix: Laplace pairs per second */
  double bytes_per_s;           /* streaming copy: bytes read + written per second */
  int fitted;                   /* constants below are valid */
  size_t n_samples;             /* plans the fit ran */
  double c[FMMCL_MODEL_NPHASES][FMMCL_MODEL_NREG];
} fmmcl_model_precision;

typedef struct fmmcl_model {
  fmmcl_model_precision prec[2]; /* indexed by fmmcl_precision */
} fmmcl_model;

/* ---- microbenchmarks (model_bench.c) ---------------------------------- */

/* Measures ctx's device in one precision: the best of a few runs of each
 * kernel of cl/model.cl, the streaming one over a few work-group sizes. */
fmmcl_status fmmcl_model_measure(fmmcl_context ctx, fmmcl_precision prec, double *pairs_per_s,
                                 double *bytes_per_s);

/* ---- the model file (model_file.c) ------------------------------------ */

/* FMMCL_MODEL_FILE when set, else the device's tuning file path (see
 * fmmcl_tuning_file_path) with ".model" appended: the model lives beside
 * the tuning cache. */
fmmcl_status fmmcl_model_file_path(const fmmcl_device_info *dev, char *buf, size_t len);
/* Reads path for dev. No file: FMMCL_ERROR_IO; a file that is not a model,
 * fails its checksum, or has a malformed line: FMMCL_ERROR_CORRUPT_FILE; a
 * model of another device: FMMCL_ERROR_UNSUPPORTED (message in
 * fmmcl_last_error(NULL)). *model is zeroed first. */
fmmcl_status fmmcl_model_load(const char *path, const fmmcl_device_info *dev, fmmcl_model *model);
/* Writes model for dev to path through a temporary file renamed over it
 * (creating the directory), so that a reader never sees half a file. */
fmmcl_status fmmcl_model_store(const char *path, const fmmcl_device_info *dev,
                               const fmmcl_model *model);

#endif /* FMMCL_MODEL_H */
