/* tuning.h — what the tuned-parameter pieces share (lib/tuning/) and what
 * fmmtune and the drivers use of them: the tuning spaces kernels declare,
 * the vendor defaults, the parameter object, and the tuning cache's format. */
#ifndef FMMCL_TUNING_H
#define FMMCL_TUNING_H

#include "core/internal.h"

#define FMMCL_TUNE_MAX_PARAMS 8
#define FMMCL_TUNE_MAX_VALUES 20
/* Ends a candidate list: 0 is a value of some parameters (off, auto). */
#define FMMCL_TUNE_END (-1)
#define FMMCL_TUNE_VALUES(...) \
  { __VA_ARGS__, FMMCL_TUNE_END }

/* What a parameter is besides a -D value. */
enum {
  FMMCL_TUNE_HOST = 1, /* read by the driver only: never passed to the compiler */
  FMMCL_TUNE_AUTO = 2, /* 0: left unset, the driver sizes it (m2l2d's TPW from the tree) */
  FMMCL_TUNE_RANGE = 4 /* any integer from the first to the last candidate is valid (a
                         * class rule may pick one, e.g. UNROLL = order + 1); the list
                         * is what fmmtune tries */
};

/* One parameter, its candidate values (ascending, FMMCL_TUNE_END after the
 * last) and its FMMCL_TUNE_* flags. */
typedef struct fmmcl_tuning_param {
  const char *name;
  int values[FMMCL_TUNE_MAX_VALUES + 1];
  unsigned flags;
} fmmcl_tuning_param;

/* A problem class decoded: "dim3" -> dim 3, "p8" -> order 8, "dim3p8" ->
 * both, "keys63" -> n 63; n is always the number after the prefix. */
typedef struct fmmcl_tuning_class {
  int dim;
  int order;
  int n;
} fmmcl_tuning_class;

/* A point of a space: one value per parameter, in declaration order. */
typedef struct fmmcl_tuning_point {
  int v[FMMCL_TUNE_MAX_PARAMS];
} fmmcl_tuning_point;

typedef struct fmmcl_tuning_space fmmcl_tuning_space;

/* Moves the vendor table's default to the point this class needs, for a
 * kernel whose natural default depends on it (fmm3d_expansions: WGS from
 * the order, M2L_BATCH from local memory). */
typedef void (*fmmcl_tuning_default_fn)(const fmmcl_tuning_space *space, fmmcl_tuning_point *pt,
                                        const fmmcl_tuning_class *cls, fmmcl_precision precision,
                                        const fmmcl_device_info *dev);

/* 1 when the point runs on the device for this class and precision; else 0
 * and a reason in why (local memory, work-group size, divisibility). */
typedef int (*fmmcl_tuning_fits_fn)(const fmmcl_tuning_space *space, const fmmcl_tuning_point *pt,
                                    const fmmcl_tuning_class *cls, fmmcl_precision precision,
                                    const fmmcl_device_info *dev, char *why, size_t len);

struct fmmcl_tuning_space {
  const char *kernel;                               /* name in the cache and in fmmcl_tuned_defines */
  const char *file;                                 /* the .cl file that holds it */
  fmmcl_tuning_param params[FMMCL_TUNE_MAX_PARAMS]; /* name NULL ends the list */
  fmmcl_tuning_fits_fn fits;
  fmmcl_tuning_default_fn class_default; /* NULL: the table's default fits every class */
  const char *constraints;               /* what fits checks, in words (fmmtune --list) */
  const char *class_prefix;              /* "dim", "p" or "keys": classes are prefix + integer */
  int class_min, class_max;              /* the classes the library may ask for */
  int order_max;                         /* > 0: "dim<d>p<order>", order 0..order_max */
  const char *tune_classes;              /* the ones fmmtune tunes unless told: "dim1 dim2" */
  const char *tune_classes_double;       /* in double, when they differ (NULL: the same) */
  /* how fmmtune exercises it: a plan of this kernel and method, timing
   * the named phase (or the sum of a comma-separated list of phases) on
   * n_gpu (GPU) or n_cpu (other) points; phase NULL: no plan phase times
   * it, fmmtune does not tune it, and timing_note says why; else a note
   * is the timing's limits (fmmtune --list shows both) */
  fmmcl_kernel plan_kernel;
  fmmcl_method plan_method;
  const char *phase;
  size_t n_gpu, n_cpu;
  const char *timing_note;
};

/* ---- spaces (tuning_spaces.c) ----------------------------------------- */

size_t fmmcl_tuning_space_count(void);
const fmmcl_tuning_space *fmmcl_tuning_space_at(size_t i);
/* NULL when the kernel declares no space. */
const fmmcl_tuning_space *fmmcl_tuning_space_find(const char *kernel);
size_t fmmcl_tuning_space_nparams(const fmmcl_tuning_space *space);
/* Candidates of a parameter before its FMMCL_TUNE_END. */
size_t fmmcl_tuning_param_count(const fmmcl_tuning_param *param);
/* Decodes a class name; 0 when it is not one of the space's classes. */
int fmmcl_tuning_class_parse(const fmmcl_tuning_space *space, const char *name, fmmcl_tuning_class *cls);
/* Reads "WGS=128 TPW=4 UNROLL=4" (a leading -D on each is allowed): every
 * parameter exactly once, each value one of its candidates (or in their
 * range: FMMCL_TUNE_RANGE); else 0 and why. */
int fmmcl_tuning_point_parse(const fmmcl_tuning_space *space, const char *text, fmmcl_tuning_point *pt,
                             char *why, size_t len);
/* "WGS=128 TPW=4 UNROLL=4", or with dash_d "-DWGS=128 -DTPW=4 -DUNROLL=4". */
void fmmcl_tuning_point_format(const fmmcl_tuning_space *space, const fmmcl_tuning_point *pt, int dash_d,
                               char *buf, size_t len);
/* The space's own constraints plus fp64 for double; 1 when it fits. */
int fmmcl_tuning_point_fits(const fmmcl_tuning_space *space, const fmmcl_tuning_point *pt,
                            const fmmcl_tuning_class *cls, fmmcl_precision precision,
                            const fmmcl_device_info *dev, char *why, size_t len);

/* ---- built-in defaults (tuning_defaults.c) ------------------------------ */

/* The vendor-class (and precision) default "-DWGS=.. ..." of a kernel for
 * a problem class (moved by the space's class_default; NULL or a class
 * the space lacks: the table's value), from the table in defaults.def.
 * Returns 1 when found, 0 (buf "") when the kernel has no default. */
int fmmcl_tuning_default(const char *kernel, fmmcl_precision precision, const char *problem_class,
                         const fmmcl_device_info *dev, char *buf, size_t len);

/* ---- the parameter object (params.c) ------------------------------------ */

/* Tuned parameters parsed once: the -D string the compiler gets and the
 * values the driver sizes launches with come from the same list. */
#define FMMCL_PARAMS_MAX 16

typedef struct fmmcl_param {
  char name[32];
  int value;
  int host; /* FMMCL_TUNE_HOST: the driver's, not the compiler's */
} fmmcl_param;

typedef struct fmmcl_params {
  fmmcl_param p[FMMCL_PARAMS_MAX];
  size_t n;
} fmmcl_params;

/* Reads "WGS=128 -DTPW=4 ..." in its order; space (may be NULL) marks
 * host-only parameters and leaves out FMMCL_TUNE_AUTO ones at 0. Values
 * are not checked against the space (fmmcl_tuning_point_parse does that).
 * 0 and why when a token is not NAME=integer or the list is full. */
int fmmcl_params_parse(const fmmcl_tuning_space *space, const char *text, fmmcl_params *out, char *why,
                       size_t len);
int fmmcl_params_has(const fmmcl_params *p, const char *name);
/* The value of name; fallback (the kernel's own #ifndef value) when unset. */
int fmmcl_params_get(const fmmcl_params *p, const char *name, int fallback);
/* Sets name in place, or appends it (to the compiler's values) when unset. */
void fmmcl_params_set(fmmcl_params *p, const char *name, int value);
/* "-DWGS=128 -DTPW=4 ...": every value but the host-only ones, in order. */
void fmmcl_params_defines(const fmmcl_params *p, char *buf, size_t len);
/* "WGS=128 TPW=4 M2L_FUSED=1 ...": every value, for messages. */
void fmmcl_params_format(const fmmcl_params *p, char *buf, size_t len);

/* ---- the lookup every driver makes (tuning.c) --------------------------- */

/* The kernel families with tuned parameters, as drivers name them. */
typedef enum fmmcl_tuned_kernel {
  FMMCL_TUNED_P2P_LAPLACE3D,
  FMMCL_TUNED_P2P_LAPLACE2D,
  FMMCL_TUNED_P2P_YUKAWA3D,
  FMMCL_TUNED_P2P_GAUSSIAN,
  FMMCL_TUNED_FMM3D_P2P,
  FMMCL_TUNED_FMM3D_EXPANSIONS,
  FMMCL_TUNED_M2L2D,
  FMMCL_TUNED_TREE_SORT,
  FMMCL_TUNED_FGT,
  FMMCL_TUNED_BBFMM,
  FMMCL_TUNED_P2P_LAPLACE3D_EXT,
  FMMCL_TUNED_P2P_HELMHOLTZ3D,
  FMMCL_TUNED_P2P_STOKES3D,
  FMMCL_TUNED_COUNT
} fmmcl_tuned_kernel;

/* The name of a family in the cache, the spaces and overrides. */
const char *fmmcl_tuned_kernel_name(fmmcl_tuned_kernel kernel);

/* The parameters of a kernel family on ctx's device: an override set on
 * ctx, else the tuning cache's entry when valid there, else the built-in
 * default for the vendor class. FMMCL_ERROR_INTERNAL (a bug) when the
 * family has no default. */
fmmcl_status fmmcl_tuned_params(fmmcl_context ctx, fmmcl_tuned_kernel kernel, fmmcl_precision precision,
                                const char *problem_class, fmmcl_params *out);

/* ---- what the 3D FMM's build shares with its space (fmm3d_kernels.c) ---- */

/* Local memory one M2L batch entry stages at order p: shift harmonics and
 * an expansion, the harmonics with both signs of m (*m2l_signed) when that
 * takes at most half the device's local memory. */
size_t fmmcl_fmm3d_m2l_entry_bytes(int order, size_t real_size, unsigned long long local_mem_bytes,
                                   int *m2l_signed);
/* The Stokes FMM's joint M2L's entries a round: what fits half the local
 * memory, 1..8. */
size_t fmmcl_fmm3d_m2l_default_batch(unsigned long long local_mem_bytes, size_t entry_bytes);
/* Local memory of the batched M2L (m2l_batched) with b targets a group;
 * the b the driver picks when not told (8, 4, 2 or 1: what fits). */
size_t fmmcl_fmm3d_m2l_batched_bytes(int order, size_t real_size, int m2l_signed, int b);
int fmmcl_fmm3d_m2l_default_targets(int order, size_t real_size, unsigned long long local_mem_bytes);

/* ---- the cache file (tuning_cache.c) ----------------------------------- */

#define FMMCL_TUNING_MAGIC "# fmmcl tuning cache v1"

/* What one line of a tuning file is. */
typedef enum fmmcl_tuning_line {
  FMMCL_TUNING_LINE_BLANK,  /* empty or a # comment */
  FMMCL_TUNING_LINE_DEVICE, /* "device: vendor=.. ; name=.. ; driver=.." */
  FMMCL_TUNING_LINE_ENTRY,  /* "kernel precision class : params ; key=value ..." */
  FMMCL_TUNING_LINE_GARBLED
} fmmcl_tuning_line;

/* Classifies a line (without its newline). A DEVICE line sets *same_device
 * (whether it names dev); an ENTRY line fills *entry (usable and note not
 * set). Either output may be NULL. */
fmmcl_tuning_line fmmcl_tuning_parse_line(const char *line, const fmmcl_device_info *dev, int *same_device,
                                          fmmcl_tuning_entry *entry);
/* The device line that names dev, without newline. */
void fmmcl_tuning_format_device(const fmmcl_device_info *dev, char *buf, size_t len);
/* An entry line, without newline. */
void fmmcl_tuning_format_entry(const fmmcl_tuning_entry *e, char *buf, size_t len);
/* Sets e->usable and e->note: is the entry in its kernel's space and does
 * it fit dev? Returns e->usable. */
int fmmcl_tuning_entry_check(fmmcl_tuning_entry *e, const fmmcl_device_info *dev);
/* Nonzero when text (the file's first line) is the header of a cache this
 * library reads. */
int fmmcl_tuning_header_ok(const char *line);

/* fmmcl_tuning_file_path without recording an error: FMMCL_ERROR_IO when
 * there is no cache directory, INVALID_ARGUMENT when buf is too short. */
fmmcl_status fmmcl_tuning_path(const fmmcl_device_info *dev, char *buf, size_t len);

/* The entries of dev's section of the file at path (malloc'ed *out, each
 * checked by fmmcl_tuning_entry_check), with what was wrong with the file
 * in notes (file-level: not a cache, garbled lines, no section for dev).
 * An absent file is success with no entries and no note. */
fmmcl_status fmmcl_tuning_read(const char *path, const fmmcl_device_info *dev, fmmcl_tuning_entry **out,
                               size_t *count, char *notes, size_t notes_len);

/* ---- notes of lookups (tuning.c) ---------------------------------------- */

/* Nonzero when FMMCL_NO_TUNING asks to ignore the cache. */
int fmmcl_tuning_disabled(void);

#endif /* FMMCL_TUNING_H */
