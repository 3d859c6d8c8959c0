/* tuning_spaces.c — the tuning space each kernel declares: its -D
 * parameters, their candidate values and the constraints of a device.
 * A new kernel's space is one table entry (and, if its limits differ, one
 * fits function); fmmtune and the library's cache check both read it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"
#include "methods/fgt/fgt.h"
#include "methods/laplace2d/fmm2d.h"
#include "methods/laplace3d/fmm3d.h"
#include "tree/morton3d.h"
#include "tuning/tuning.h"

/* ---- constraints shared by tiled kernels ------------------------------- */

static int param_value(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt, const char *name,
                       int fallback) {
  for (size_t i = 0; i < FMMCL_TUNE_MAX_PARAMS && s->params[i].name; i++)
    if (strcmp(s->params[i].name, name) == 0) return pt->v[i];
  return fallback;
}

/* A work-group of WGS items staging WGS * reals_per_item REALs in local
 * memory, unrolling its tile loop by UNROLL. */
static int tile_fits(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt, size_t reals_per_item,
                     fmmcl_precision precision, const fmmcl_device_info *dev, char *why, size_t len) {
  const size_t wgs = (size_t)param_value(s, pt, "WGS", 1);
  const size_t unroll = (size_t)param_value(s, pt, "UNROLL", 1);
  const size_t bytes = wgs * reals_per_item * (precision == FMMCL_DOUBLE ? 8 : 4);
  if (wgs > dev->max_work_group_size) {
    snprintf(why, len, "WGS=%zu exceeds the device's max work-group size %zu", wgs, dev->max_work_group_size);
    return 0;
  }
  if (bytes > dev->local_mem_bytes) {
    snprintf(why, len, "WGS=%zu needs %zu bytes of local memory, the device has %llu", wgs, bytes,
             dev->local_mem_bytes);
    return 0;
  }
  /* the tile loop runs WGS times; a remainder would need a second loop */
  if (wgs % unroll != 0) {
    snprintf(why, len, "UNROLL=%zu does not divide WGS=%zu", unroll, wgs);
    return 0;
  }
  return 1;
}

/* fmm3d_p2p reads its sources from global memory, or with TILE=1 stages
 * WGS of them and their low parts (two REAL4s) in local memory */
static int fmm3d_p2p_fits(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt,
                          const fmmcl_tuning_class *cls, fmmcl_precision precision,
                          const fmmcl_device_info *dev, char *why, size_t len) {
  (void)cls;
  const size_t wgs = (size_t)param_value(s, pt, "WGS", 1);
  const size_t bytes = param_value(s, pt, "TILE", 0) ? wgs * 8 * (precision == FMMCL_DOUBLE ? 8 : 4) : 0;
  if (wgs > dev->max_work_group_size) {
    snprintf(why, len, "WGS=%zu exceeds the device's max work-group size %zu", wgs, dev->max_work_group_size);
    return 0;
  }
  if (bytes > dev->local_mem_bytes) {
    snprintf(why, len, "TILE=1 with WGS=%zu needs %zu bytes of local memory, the device has %llu", wgs, bytes,
             dev->local_mem_bytes);
    return 0;
  }
  return 1;
}

/* cl/direct/p2p.cl's REAL4 kernels: a near tile also stages the low parts
 * of its offsets (float-float, double-double), a second REAL4 */
static int direct_tile_fits(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt,
                            const fmmcl_tuning_class *cls, fmmcl_precision precision,
                            const fmmcl_device_info *dev, char *why, size_t len) {
  (void)cls;
  return tile_fits(s, pt, 8, precision, dev, why, len);
}

/* p2p_gaussian stages DIM coordinates and a charge per source */
static int p2p_gaussian_fits(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt,
                             const fmmcl_tuning_class *cls, fmmcl_precision precision,
                             const fmmcl_device_info *dev, char *why, size_t len) {
  return tile_fits(s, pt, (size_t)cls->dim + 1, precision, dev, why, len);
}

/* cl/direct/p2p_ext.cl stages one record of P2P_EXT_STRIDE REALs per
 * source, its offsets' low parts included: 12 for Laplace with dipoles, 16
 * for Helmholtz and Stokes (direct_ext.c, the class's number being the
 * stride) */
static int p2p_ext_fits(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt,
                        const fmmcl_tuning_class *cls, fmmcl_precision precision,
                        const fmmcl_device_info *dev, char *why, size_t len) {
  return tile_fits(s, pt, (size_t)cls->n, precision, dev, why, len);
}

/* ---- the 3D FMM's expansion kernels --------------------------------------- */

static int *param_slot(const fmmcl_tuning_space *s, fmmcl_tuning_point *pt, const char *name) {
  for (size_t i = 0; i < FMMCL_TUNE_MAX_PARAMS && s->params[i].name; i++)
    if (strcmp(s->params[i].name, name) == 0) return &pt->v[i];
  return NULL;
}

static size_t ncoef_of(int order) { return (size_t)(order + 1) * (size_t)(order + 2) / 2; }

/* expansions3d.cl at order p: one coefficient per work-item in M2M and
 * L2L (WGS >= NCOEF, as its #error says), P2M and P2L stage WGS sources as
 * REAL4; the batched M2L stages a shift and M2L_B multipoles, a work-item
 * per coefficient and M2L_TPI targets (M2L_B a multiple of M2L_TPI). */
static int fmm3d_expansions_fits(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt,
                                 const fmmcl_tuning_class *cls, fmmcl_precision precision,
                                 const fmmcl_device_info *dev, char *why, size_t len) {
  const int max = precision == FMMCL_DOUBLE ? FMMCL_FMM3D_MAX_ORDER_DOUBLE : FMMCL_FMM3D_MAX_ORDER_SINGLE;
  const size_t wgs = (size_t)param_value(s, pt, "WGS", 1);
  const int b = param_value(s, pt, "M2L_B", 1), tpi = param_value(s, pt, "M2L_TPI", 1);
  const size_t real = precision == FMMCL_DOUBLE ? 8 : 4, ncoef = ncoef_of(cls->order);
  if (cls->order > max) {
    snprintf(why, len, "order %d is above the FMM's %d in this precision", cls->order, max);
    return 0;
  }
  if (wgs < ncoef) {
    snprintf(why, len, "WGS=%zu is below NCOEF=%zu of order %d", wgs, ncoef, cls->order);
    return 0;
  }
  if (!tile_fits(s, pt, 4, precision, dev, why, len)) return 0;
  if (tpi > b || b % tpi) {
    snprintf(why, len, "M2L_B=%d is not a multiple of M2L_TPI=%d", b, tpi);
    return 0;
  }
  const size_t m2l_wgs = (ncoef * (size_t)(b / tpi) + 31) / 32 * 32;
  if (m2l_wgs > dev->max_work_group_size) {
    snprintf(why, len, "the M2L's %zu work-items (NCOEF x M2L_B / M2L_TPI) exceed the device's %zu", m2l_wgs,
             dev->max_work_group_size);
    return 0;
  }
  int is_signed;
  fmmcl_fmm3d_m2l_entry_bytes(cls->order, real, dev->local_mem_bytes, &is_signed);
  const size_t bytes = fmmcl_fmm3d_m2l_batched_bytes(cls->order, real, is_signed, b);
  if (bytes > dev->local_mem_bytes) {
    snprintf(why, len, "M2L_B=%d needs %zu bytes of local memory at order %d, the device has %llu", b, bytes,
             cls->order, dev->local_mem_bytes);
    return 0;
  }
  return 1;
}

/* What the driver builds when not told: WGS raised to NCOEF rounded up to
 * 32, M2L_B lowered to what fits the local memory and M2L_TPI with it. */
static void fmm3d_expansions_default(const fmmcl_tuning_space *s, fmmcl_tuning_point *pt,
                                     const fmmcl_tuning_class *cls, fmmcl_precision precision,
                                     const fmmcl_device_info *dev) {
  int *wgs = param_slot(s, pt, "WGS"), *b = param_slot(s, pt, "M2L_B"), *tpi = param_slot(s, pt, "M2L_TPI");
  const int least = (int)(ncoef_of(cls->order) + 31) / 32 * 32;
  const int most =
      fmmcl_fmm3d_m2l_default_targets(cls->order, precision == FMMCL_DOUBLE ? 8 : 4, dev->local_mem_bytes);
  if (*wgs < least) *wgs = least;
  if (*b > most) *b = most;
  if (*tpi > *b) *tpi = *b;
}

/* ---- the 2D FMM's M2L ------------------------------------------------------ */

/* m2l2d.cl at order p (NROW = p + 1 rows): the group the driver launches
 * and the local memory of the row kernels it may pick; the tile kernel
 * (M2L_TILE) keeps its rows in registers and the driver falls back to the
 * row kernels where it does not fit. TPW 0: sized by the driver (1 here). */
static int m2l2d_fits(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt,
                      const fmmcl_tuning_class *cls, fmmcl_precision precision, const fmmcl_device_info *dev,
                      char *why, size_t len) {
  const int max = precision == FMMCL_DOUBLE ? FMMCL_FMM2D_MAX_ORDER_DOUBLE : FMMCL_FMM2D_MAX_ORDER_SINGLE;
  const size_t nrow = (size_t)cls->order + 1, real = precision == FMMCL_DOUBLE ? 8 : 4;
  const size_t wgs = (size_t)param_value(s, pt, "WGS", 128), tpw = (size_t)param_value(s, pt, "TPW", 1);
  const int share = param_value(s, pt, "M2L_SHARE_W", 0), fused = param_value(s, pt, "M2L_FUSED", 0);
  if (cls->order > max) {
    snprintf(why, len, "order %d is above the 2D FMM's %d in this precision", cls->order, max);
    return 0;
  }
  const size_t group = fmmcl_m2l2d_group(wgs, nrow);
  if (group > dev->max_work_group_size) {
    snprintf(why, len, "WGS=%zu makes groups of %zu at order %d, above the device's %zu", wgs, group,
             cls->order, dev->max_work_group_size);
    return 0;
  }
  const size_t bytes = share ? fmmcl_m2l2d_share_local_bytes(wgs, tpw ? tpw : 1, nrow, real, fused != 0)
                             : fmmcl_m2l2d_local_bytes(wgs, nrow, real);
  if (bytes > dev->local_mem_bytes) {
    snprintf(why, len, "WGS=%zu TPW=%zu needs %zu bytes of local memory at order %d, the device has %llu",
             wgs, tpw, bytes, cls->order, dev->local_mem_bytes);
    return 0;
  }
  return 1;
}

/* The row loop unrolled fully, as the kernel's own default (P + 1). */
static void m2l2d_default(const fmmcl_tuning_space *s, fmmcl_tuning_point *pt, const fmmcl_tuning_class *cls,
                          fmmcl_precision precision, const fmmcl_device_info *dev) {
  (void)precision, (void)dev;
  *param_slot(s, pt, "UNROLL") = cls->order + 1;
}

/* ---- the tree's radix sort ---------------------------------------------------- */

/* tree.cl: a power-of-two group of at least one item per digit value,
 * staging a key, an index, a digit and a scan slot per item. */
static int tree_sort_fits(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt,
                          const fmmcl_tuning_class *cls, fmmcl_precision precision,
                          const fmmcl_device_info *dev, char *why, size_t len) {
  (void)cls, (void)precision;
  const size_t wgs = (size_t)param_value(s, pt, "WGS", 256),
               radix = (size_t)1 << param_value(s, pt, "RADIX_BITS", 4);
  const size_t bytes = wgs * (8 + 3 * 4) + 3 * radix * 4;
  if (wgs > dev->max_work_group_size) {
    snprintf(why, len, "WGS=%zu exceeds the device's max work-group size %zu", wgs, dev->max_work_group_size);
    return 0;
  }
  if (wgs < radix) {
    snprintf(why, len, "WGS=%zu is below the %zu digit values", wgs, radix);
    return 0;
  }
  if (bytes > dev->local_mem_bytes) {
    snprintf(why, len, "WGS=%zu needs %zu bytes of local memory, the device has %llu", wgs, bytes,
             dev->local_mem_bytes);
    return 0;
  }
  return 1;
}

/* ---- the FGT ------------------------------------------------------------------- */

/* fgt.cl in class dim<d>p<p>: the local memory the driver sizes WGS and
 * CPL to (a plan without expansions builds with P = 1 and needs less). */
static size_t fgt_local_bytes(size_t wgs, size_t cpl, const fmmcl_tuning_class *cls, size_t real) {
  const size_t p = cls->order ? (size_t)cls->order : 1, dim = (size_t)cls->dim;
  const size_t P = cls->order ? (size_t)fmmcl_fgt_nterms(cls->order, cls->dim) : 1;
  return cpl * (P + dim) * real + P * dim + dim * p * wgs * real + 512;
}

static int fgt_fits(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt, const fmmcl_tuning_class *cls,
                    fmmcl_precision precision, const fmmcl_device_info *dev, char *why, size_t len) {
  const size_t wgs = (size_t)param_value(s, pt, "WGS", 64), cpl = (size_t)param_value(s, pt, "CPL", 4);
  const size_t bytes = fgt_local_bytes(wgs, cpl, cls, precision == FMMCL_DOUBLE ? 8 : 4);
  if (wgs > dev->max_work_group_size) {
    snprintf(why, len, "WGS=%zu exceeds the device's max work-group size %zu", wgs, dev->max_work_group_size);
    return 0;
  }
  if (bytes > dev->local_mem_bytes) {
    snprintf(why, len, "WGS=%zu CPL=%zu needs %zu bytes of local memory, the device has %llu", wgs, cpl,
             bytes, dev->local_mem_bytes);
    return 0;
  }
  return 1;
}

/* The term loops unrolled fully on a GPU up to 512 terms (past that, and
 * on a CPU compiler, 4); the nested Hermite sum up to 1024 terms in at
 * most 3 dimensions, past that the unrolled code outgrows the
 * instruction cache. */
static void fgt_default(const fmmcl_tuning_space *s, fmmcl_tuning_point *pt, const fmmcl_tuning_class *cls,
                        fmmcl_precision precision, const fmmcl_device_info *dev) {
  (void)precision;
  const int nterms = fmmcl_fgt_nterms(cls->order ? cls->order : 1, cls->dim);
  if (dev->is_gpu && nterms <= 512) *param_slot(s, pt, "UNROLL") = nterms;
  *param_slot(s, pt, "HORNER") = cls->dim <= 3 && nterms <= 1024;
}

/* ---- the black-box FMM --------------------------------------------------------- */

/* bbfmm.cl at NORD nodes: P2P stages WGS REAL4 sources, P2M and L2P TILE
 * points' weights (3 * NORD each) and charges. */
static int bbfmm_fits(const fmmcl_tuning_space *s, const fmmcl_tuning_point *pt,
                      const fmmcl_tuning_class *cls, fmmcl_precision precision, const fmmcl_device_info *dev,
                      char *why, size_t len) {
  const size_t tile = (size_t)param_value(s, pt, "TILE", 32), real = precision == FMMCL_DOUBLE ? 8 : 4;
  const size_t bytes = tile * (3 * (size_t)cls->order + 1) * real;
  if (!tile_fits(s, pt, 4, precision, dev, why, len)) return 0;
  if (bytes > dev->local_mem_bytes) {
    snprintf(why, len, "TILE=%zu needs %zu bytes of local memory at %d nodes, the device has %llu", tile,
             bytes, cls->order, dev->local_mem_bytes);
    return 0;
  }
  return 1;
}

/* ---- the spaces ----------------------------------------------------------- */

/* cl/p2p.cl: WGS = work-group size = sources per tile, TPW = targets per
 * work-item, UNROLL = unroll of the loop over a tile. Sizes: 2^17 points
 * give a large GPU a thousand work-groups at TPW=1, long enough to time;
 * 8192 on a CPU device is long enough to time and short to search. */
#define P2P_PARAMS                                                                                   \
  {                                                                                                  \
    {"WGS", FMMCL_TUNE_VALUES(32, 64, 128, 256, 512, 1024)}, {"TPW", FMMCL_TUNE_VALUES(1, 2, 4, 8)}, \
        {"UNROLL", FMMCL_TUNE_VALUES(1, 2, 4, 8, 16)},                                               \
  }

/* The Laplace kernels of cl/p2p.cl, one class each (its dimension): the 2D
 * one stages sources as (x, y, q, 0) REAL4 like the 3D one's (x, y, z, q),
 * so the same limits. */
#define LAPLACE_P2P_SPACE(name, dim, plan_kernel_)                                                           \
  {                                                                                                          \
    .kernel = name, .file = "direct/p2p.cl", .params = P2P_PARAMS, .fits = direct_tile_fits,                 \
    .constraints =                                                                                           \
        "WGS <= max work-group size; 4*WGS REALs (8 in single) of local memory; UNROLL divides WGS",         \
    .class_prefix = "dim", .class_min = dim, .class_max = dim, .tune_classes = "dim" #dim,                   \
    .plan_kernel = plan_kernel_, .plan_method = FMMCL_DIRECT, .phase = "p2p", .n_gpu = 131072, .n_cpu = 8192 \
  }

/* cl/direct/p2p_ext.cl: WGS = work-group size = sources per tile, UNROLL
 * of the loop over a tile; one target per work-item. Class "rec<n>": the
 * REALs staged per source. fmmtune times plans through fmmcl_plan_execute,
 * which sums charges only, so these are not tuned yet. */
#define P2P_EXT_SPACE(name, stride, plan_kernel_)                                                           \
  {                                                                                                         \
    .kernel = name, .file = "direct/p2p_ext.cl",                                                            \
    .params = {{"WGS", FMMCL_TUNE_VALUES(32, 64, 128, 256, 512, 1024)},                                     \
               {"UNROLL", FMMCL_TUNE_VALUES(1, 2, 4, 8)}},                                                  \
    .fits = p2p_ext_fits,                                                                                   \
    .constraints = "WGS <= max work-group size; " #stride "*WGS REALs of local memory; UNROLL divides WGS", \
    .class_prefix = "rec", .class_min = stride, .class_max = stride, .tune_classes = "rec" #stride,         \
    .plan_kernel = plan_kernel_, .plan_method = FMMCL_DIRECT,                                               \
    .timing_note = "not tuned: fmmtune times plans through fmmcl_plan_execute, which sums charges only"     \
  }

static const fmmcl_tuning_space spaces[] = {
    LAPLACE_P2P_SPACE("p2p_laplace3d", 3, FMMCL_LAPLACE_3D),
    {.kernel = "p2p_gaussian",
     .file = "direct/p2p.cl",
     .params = P2P_PARAMS,
     .fits = p2p_gaussian_fits,
     .constraints = "WGS <= max work-group size; (DIM+1)*WGS REALs of local memory; UNROLL divides WGS",
     .class_prefix = "dim",
     .class_min = 1,
     .class_max = FMMCL_MAX_DIM,
     .tune_classes = "dim1 dim2 dim3 dim4 dim8",
     .plan_kernel = FMMCL_GAUSSIAN,
     .plan_method = FMMCL_DIRECT,
     .phase = "p2p",
     .n_gpu = 131072,
     .n_cpu = 4096},
    /* cl/direct/p2p.cl's 2D Laplace and 3D Yukawa kernels tile (x, y, q, 0) and
     * (x, y, z, q) REAL4s like p2p_laplace3d, so the same space and limits */
    LAPLACE_P2P_SPACE("p2p_laplace2d", 2, FMMCL_LAPLACE_2D),
    LAPLACE_P2P_SPACE("p2p_yukawa3d", 3, FMMCL_YUKAWA_3D),
    /* cl/fmm3d_p2p.cl, the FMM's U list: a chunk of WGS x TPW targets of
     * one leaf per work-group, TPW per work-item, sources read from global
     * memory (TILE=0) or staged WGS at a time in local memory (TILE=1), the
     * loop over a source leaf or tile unrolled UNROLL times. Timed in a whole FMM (order
     * from the default tolerance) of 2^20 points on a GPU, 20000 on a CPU
     * device (~0.1 s of kernels on 2 PoCL cores). */
    {.kernel = "fmm3d_p2p",
     .file = "laplace3d/fmm3d_p2p.cl",
     .params = {{"WGS", FMMCL_TUNE_VALUES(32, 64, 128, 256, 512, 1024)},
                {"UNROLL", FMMCL_TUNE_VALUES(1, 2, 4, 8, 16)},
                {"TPW", FMMCL_TUNE_VALUES(1, 2, 4, 8)},
                {"TILE", FMMCL_TUNE_VALUES(0, 1)}},
     .fits = fmm3d_p2p_fits,
     .constraints = "WGS <= max work-group size; TILE=1: 8*WGS REALs of local memory",
     .class_prefix = "dim",
     .class_min = 3,
     .class_max = 3,
     .tune_classes = "dim3",
     .plan_kernel = FMMCL_LAPLACE_3D,
     .plan_method = FMMCL_FMM,
     .phase = "p2p",
     .n_gpu = 1048576,
     .n_cpu = 20000},
    /* cl/expansions3d.cl: WGS of every expansion kernel but the M2L's, the
     * batched M2L's targets a group (M2L_B) and a work-item (M2L_TPI; its
     * group is NCOEF x M2L_B / M2L_TPI rounded up to 32). Classes: the orders the library picks for tolerances
     * 1e-3, 1e-4 (its default), 1e-5 in float; 1e-5, 1e-6 (default), 1e-7
     * in double. Timed: all expansion phases of the FMM above. */
    {.kernel = "fmm3d_expansions",
     .file = "laplace3d/expansions3d.cl",
     .params = {{"WGS", FMMCL_TUNE_VALUES(32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448,
                                          480, 512, 544, 576, 768, 1024)},
                {"M2L_B", FMMCL_TUNE_VALUES(1, 2, 4, 8, 16)},
                {"M2L_TPI", FMMCL_TUNE_VALUES(1, 2, 4, 8, 16)}},
     .fits = fmm3d_expansions_fits,
     .class_default = fmm3d_expansions_default,
     .constraints =
         "NCOEF <= WGS <= max work-group size; 4*WGS REALs of local memory; M2L_B a multiple "
         "of M2L_TPI, NCOEF*M2L_B/M2L_TPI work-items, a shift and M2L_B multipoles of local memory "
         "(fmmcl_fmm3d_m2l_batched_bytes); order <= 16 in single",
     .class_prefix = "p",
     .class_min = 1,
     .class_max = FMMCL_FMM3D_MAX_ORDER_DOUBLE,
     .tune_classes = "p5 p8 p10",
     .tune_classes_double = "p10 p13 p17",
     .plan_kernel = FMMCL_LAPLACE_3D,
     .plan_method = FMMCL_FMM,
     .phase = "p2m,m2m,m2l,p2l,l2l,l2p,m2p",
     .n_gpu = 1048576,
     .n_cpu = 20000},
    /* cl/m2l2d.cl, the 2D FMM's M2L: WGS (rows of translations per group),
     * TPW (translations per work-item; 0: sized by the driver to the
     * tree), UNROLL of the k loop (the class rule: P + 1, the full row),
     * M2L_COEF (1: the rows' T by recurrence, 0: from a table),
     * M2L_SHARE_W (translations of one offset share w^-l), M2L_TILE (the
     * dense TBxTB tile kernel where it fits, 0: never) and M2L_FUSED, the
     * driver's choice of kernel (0 separate + reduce, 1 fused, 2 by how
     * full the lists are), which no kernel reads, and M2L_SEPARATE_TPW,
     * the TPW the driver gives the separate shared-w kernel when TPW is 0.
     * Classes: the orders. */
    {.kernel = "m2l2d",
     .file = "laplace2d/m2l2d.cl",
     .params = {{"WGS", FMMCL_TUNE_VALUES(32, 64, 128, 256, 512)},
                {"TPW", FMMCL_TUNE_VALUES(0, 1, 2, 4, 8), FMMCL_TUNE_AUTO},
                {"UNROLL", FMMCL_TUNE_VALUES(1, 2, 4, 8, 16, FMMCL_FMM2D_MAX_ORDER_DOUBLE + 1),
                 FMMCL_TUNE_RANGE},
                {"M2L_COEF", FMMCL_TUNE_VALUES(0, 1)},
                {"M2L_FUSED", FMMCL_TUNE_VALUES(0, 1, 2), FMMCL_TUNE_HOST},
                {"M2L_SHARE_W", FMMCL_TUNE_VALUES(0, 1)},
                {"M2L_TILE", FMMCL_TUNE_VALUES(0, 4, 8, 16)},
                {"M2L_SEPARATE_TPW", FMMCL_TUNE_VALUES(1, 2, 4, 8, 16), FMMCL_TUNE_HOST}},
     .fits = m2l2d_fits,
     .class_default = m2l2d_default,
     .constraints = "group (WGS rounded to whole rows of P+1) <= max work-group size; the row kernels' "
                    "local memory (fmmcl_m2l2d_local_bytes, fmmcl_m2l2d_share_local_bytes); order <= 24 in "
                    "single; M2L_TILE falls back to the row kernels where it does not fit",
     .class_prefix = "p",
     .class_min = 1,
     .class_max = FMMCL_FMM2D_MAX_ORDER_DOUBLE,
     .tune_classes = "p8 p12 p16",
     .plan_kernel = FMMCL_LAPLACE_2D,
     .plan_method = FMMCL_FMM,
     .phase = "m2l",
     .n_gpu = 1048576,
     .n_cpu = 20000},
    /* cl/tree.cl, the octree's Morton keys and radix sort (in double, so
     * keys round as the host's): WGS, TILES of WGS keys per group,
     * RADIX_BITS per pass. Class: the key bits. */
    {.kernel = "tree_sort",
     .file = "tree/tree.cl",
     .params = {{"WGS", FMMCL_TUNE_VALUES(32, 64, 128, 256, 512, 1024)},
                {"TILES", FMMCL_TUNE_VALUES(1, 2, 3, 4, 6, 8, 12, 16)},
                {"RADIX_BITS", FMMCL_TUNE_VALUES(1, 2, 3, 4, 5, 6, 7, 8)}},
     .fits = tree_sort_fits,
     .constraints = "WGS a power of two, 2^RADIX_BITS <= WGS <= max work-group size (the driver halves a "
                    "larger one); 20*WGS bytes of local memory; double only",
     .class_prefix = "keys",
     .class_min = 3 * FMMCL_MORTON_LEVELS,
     .class_max = 3 * FMMCL_MORTON_LEVELS,
     .tune_classes = "",
     .tune_classes_double = "keys63",
     .plan_kernel = FMMCL_LAPLACE_3D,
     .plan_method = FMMCL_FMM,
     .phase = "sort",
     .n_gpu = 1048576,
     .n_cpu = 1048576,
     .timing_note = "the FMM sorts on the device only on a GPU and from 2^18 points (FMMCL_TREE_SORT=device "
                    "forces it); elsewhere the plan records no sort phase"},
    /* cl/fgt.cl: WGS, CPL source clusters staged per load (the driver
     * lowers both to what fits the local memory), UNROLL of the term
     * loops, HORNER (the nested Hermite sum). Class dim<d>p<p>: the
     * dimension and the order the plan chose. */
    {.kernel = "fgt",
     .file = "fgt/fgt.cl",
     .params = {{"WGS", FMMCL_TUNE_VALUES(8, 16, 32, 64, 128, 256, 512)},
                {"CPL", FMMCL_TUNE_VALUES(1, 2, 4, 8)},
                {"UNROLL", FMMCL_TUNE_VALUES(1, 2, 4, 8, 16, 32, 512), FMMCL_TUNE_RANGE},
                {"HORNER", FMMCL_TUNE_VALUES(0, 1)}},
     .fits = fgt_fits,
     .class_default = fgt_default,
     .constraints = "WGS <= max work-group size; CPL*(NTERMS+DIM) + DIM*p*WGS REALs of local memory",
     .class_prefix = "dim",
     .class_min = 1,
     .class_max = FMMCL_MAX_DIM,
     .order_max = FMMCL_FGT_MAX_P,
     .tune_classes = "dim1p8 dim2p8 dim3p8",
     .plan_kernel = FMMCL_GAUSSIAN,
     .plan_method = FMMCL_FGT,
     .timing_note = "not tuned: an FGT plan picks its order from the tolerance and the data, so no plan "
                    "can be asked for a class dim<d>p<p>"},
    /* cl/bbfmm.cl: WGS of the P2P (and adaptive M2P) groups, TILE points
     * staged by P2M and L2P. Class: the Chebyshev nodes per dimension. */
    {.kernel = "bbfmm",
     .file = "bbfmm/bbfmm.cl",
     .params = {{"WGS", FMMCL_TUNE_VALUES(32, 64, 128, 256, 512)},
                {"TILE", FMMCL_TUNE_VALUES(8, 16, 32, 64, 128)}},
     .fits = bbfmm_fits,
     .constraints = "WGS <= max work-group size; 4*WGS REALs and TILE*(3*NORD+1) REALs of local memory",
     .class_prefix = "p",
     .class_min = FMMCL_BBFMM_MIN_ORDER,
     .class_max = FMMCL_BBFMM_MAX_ORDER,
     .tune_classes = "p4 p6",
     .plan_kernel = FMMCL_LAPLACE_3D,
     .plan_method = FMMCL_BBFMM,
     .phase = "p2p,p2m,l2p",
     .n_gpu = 1048576,
     .n_cpu = 20000},
    P2P_EXT_SPACE("p2p_laplace3d_ext", 12, FMMCL_LAPLACE_3D),
    P2P_EXT_SPACE("p2p_helmholtz3d", 16, FMMCL_HELMHOLTZ_3D),
    P2P_EXT_SPACE("p2p_stokes3d", 16, FMMCL_STOKES_3D),
};

size_t fmmcl_tuning_space_count(void) { return sizeof spaces / sizeof spaces[0]; }

const fmmcl_tuning_space *fmmcl_tuning_space_at(size_t i) {
  return i < fmmcl_tuning_space_count() ? &spaces[i] : NULL;
}

const fmmcl_tuning_space *fmmcl_tuning_space_find(const char *kernel) {
  for (size_t i = 0; kernel && i < fmmcl_tuning_space_count(); i++)
    if (strcmp(spaces[i].kernel, kernel) == 0) return &spaces[i];
  return NULL;
}

size_t fmmcl_tuning_param_count(const fmmcl_tuning_param *param) {
  size_t n = 0;
  while (n < FMMCL_TUNE_MAX_VALUES && param->values[n] != FMMCL_TUNE_END) n++;
  return n;
}

size_t fmmcl_tuning_space_nparams(const fmmcl_tuning_space *space) {
  size_t n = 0;
  while (n < FMMCL_TUNE_MAX_PARAMS && space->params[n].name) n++;
  return n;
}

int fmmcl_tuning_class_parse(const fmmcl_tuning_space *space, const char *name, fmmcl_tuning_class *cls) {
  const size_t plen = strlen(space->class_prefix);
  if (!name || strncmp(name, space->class_prefix, plen) != 0) return 0;
  char *end;
  long v = strtol(name + plen, &end, 10), order = 0;
  if (end == name + plen || v < space->class_min || v > space->class_max) return 0;
  if (space->order_max > 0) { /* "dim3p8" */
    const char *o = end;
    if (*o != 'p' || o[1] < '0' || o[1] > '9') return 0;
    order = strtol(o + 1, &end, 10);
    if (order < 0 || order > space->order_max) return 0;
  }
  if (*end) return 0;
  fmmcl_tuning_class c = {0, (int)order, (int)v};
  if (strcmp(space->class_prefix, "dim") == 0) c.dim = (int)v;
  else if (strcmp(space->class_prefix, "p") == 0) c.order = (int)v;
  if (cls) *cls = c;
  return 1;
}

static int is_candidate(const fmmcl_tuning_param *p, long v) {
  const size_t n = fmmcl_tuning_param_count(p);
  if ((p->flags & FMMCL_TUNE_RANGE) && n) return v >= p->values[0] && v <= p->values[n - 1];
  for (size_t i = 0; i < n; i++)
    if (p->values[i] == v) return 1;
  return 0;
}

/* One "NAME=value" token into pt; seen[] catches repeats. */
static int parse_token(const fmmcl_tuning_space *space, const char *tok, size_t toklen,
                       fmmcl_tuning_point *pt, int *seen, char *why, size_t len) {
  if (toklen > 2 && tok[0] == '-' && tok[1] == 'D') {
    tok += 2;
    toklen -= 2;
  }
  const char *eq = memchr(tok, '=', toklen);
  if (!eq) {
    snprintf(why, len, "\"%.*s\" is not NAME=value", (int)toklen, tok);
    return 0;
  }
  const size_t nlen = (size_t)(eq - tok);
  const size_t np = fmmcl_tuning_space_nparams(space);
  for (size_t i = 0; i < np; i++) {
    const fmmcl_tuning_param *p = &space->params[i];
    if (strlen(p->name) != nlen || strncmp(p->name, tok, nlen) != 0) continue;
    char num[32];
    snprintf(num, sizeof num, "%.*s", (int)(toklen - nlen - 1), eq + 1);
    char *end;
    long v = strtol(num, &end, 10);
    if (end == num || *end || !is_candidate(p, v)) {
      snprintf(why, len, "%s=%s is not one of %s's candidates", p->name, num, space->kernel);
      return 0;
    }
    if (seen[i]++) {
      snprintf(why, len, "%s given twice", p->name);
      return 0;
    }
    pt->v[i] = (int)v;
    return 1;
  }
  snprintf(why, len, "%.*s is not a parameter of %s", (int)nlen, tok, space->kernel);
  return 0;
}

int fmmcl_tuning_point_parse(const fmmcl_tuning_space *space, const char *text, fmmcl_tuning_point *pt,
                             char *why, size_t len) {
  int seen[FMMCL_TUNE_MAX_PARAMS] = {0};
  fmmcl_tuning_point p;
  memset(&p, 0, sizeof p);
  const char *s = text;
  while (*s) {
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) break;
    const char *e = s;
    while (*e && *e != ' ' && *e != '\t') e++;
    if (!parse_token(space, s, (size_t)(e - s), &p, seen, why, len)) return 0;
    s = e;
  }
  const size_t np = fmmcl_tuning_space_nparams(space);
  for (size_t i = 0; i < np; i++)
    if (!seen[i]) {
      snprintf(why, len, "%s missing", space->params[i].name);
      return 0;
    }
  *pt = p;
  return 1;
}

void fmmcl_tuning_point_format(const fmmcl_tuning_space *space, const fmmcl_tuning_point *pt, int dash_d,
                               char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  const size_t np = fmmcl_tuning_space_nparams(space);
  for (size_t i = 0; i < np && used < len; i++) {
    int n = snprintf(buf + used, len - used, "%s%s%s=%d", i ? " " : "", dash_d ? "-D" : "",
                     space->params[i].name, pt->v[i]);
    if (n < 0) break;
    used += (size_t)n;
  }
}

int fmmcl_tuning_point_fits(const fmmcl_tuning_space *space, const fmmcl_tuning_point *pt,
                            const fmmcl_tuning_class *cls, fmmcl_precision precision,
                            const fmmcl_device_info *dev, char *why, size_t len) {
  if (precision == FMMCL_DOUBLE && !dev->has_fp64) {
    snprintf(why, len, "the device has no double precision");
    return 0;
  }
  return space->fits ? space->fits(space, pt, cls, precision, dev, why, len) : 1;
}
