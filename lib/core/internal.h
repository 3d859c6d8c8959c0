/* internal.h — what the pieces of libfmmcl share and callers never see: the
 * context and plan structs, error recording, the OpenCL runtime layer. */
#ifndef FMMCL_INTERNAL_H
#define FMMCL_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cl_include.h"
#include "core/launch.h"
#include "fmmcl.h"

/* ---- errors ----------------------------------------------------------- */

/* Records a formatted message as the last error of ctx (or of the calling
 * thread when ctx is NULL) and returns status, so that a failure reads
 *   return fmmcl_fail(ctx, FMMCL_ERROR_IO, "cannot open %s", path);        */
fmmcl_status fmmcl_fail(fmmcl_context ctx, fmmcl_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends a long text (a build log) to the last error already recorded. */
void fmmcl_fail_append(fmmcl_context ctx, const char *text);
/* Clears the last error at the start of a public call. */
void fmmcl_clear_error(fmmcl_context ctx);

/* OpenCL error code -> status, and its symbolic name ("CL_OUT_OF_RESOURCES"). */
fmmcl_status fmmcl_status_from_cl(cl_int err);
const char *fmmcl_cl_error_name(cl_int err);

/* Checks an OpenCL call inside a function returning fmmcl_status. */
#define FMMCL_CL_TRY(ctx, expr)                                                                        \
  do {                                                                                                 \
    cl_int fmmcl_err_ = (expr);                                                                        \
    if (fmmcl_err_ != CL_SUCCESS)                                                                      \
      return fmmcl_fail((ctx), fmmcl_status_from_cl(fmmcl_err_), "%s failed: %s (%d) at %s:%d", #expr, \
                        fmmcl_cl_error_name(fmmcl_err_), (int)fmmcl_err_, __FILE__, __LINE__);         \
  } while (0)

/* ---- devices and contexts ---------------------------------------------- */

typedef struct fmmcl_device_handle {
  cl_platform_id platform;
  cl_device_id device;
  fmmcl_device_info info;
} fmmcl_device_handle;

/* All devices on all platforms, in fmmcl_devices_list order. *list is
 * malloc'ed (free it); ctx only receives the error message. */
fmmcl_status fmmcl_devices_enumerate(fmmcl_context ctx, fmmcl_device_handle **list, size_t *count);

/* The device a selector picks (see fmmcl_device_select), its handle and index. */
fmmcl_status fmmcl_device_choose(fmmcl_context ctx, const char *selector, fmmcl_device_handle *chosen,
                                 size_t *index);

#define FMMCL_MAX_OVERRIDES 16
#define FMMCL_PINNED_POOL 8

struct fmmcl_context_s {
  fmmcl_device_handle dev;
  cl_context cl;
  cl_command_queue queue; /* in order, profiling enabled */
  char *last_error;       /* malloc'ed, never NULL after create */
  struct {
    char kernel[64];
    char defines[256];
  } overrides[FMMCL_MAX_OVERRIDES];
  size_t n_overrides;
  /* pinned staging blocks freed by plans, kept for the next (pinned_host.c) */
  struct {
    cl_mem buf;
    void *ptr;
    size_t bytes;
  } pinned_pool[FMMCL_PINNED_POOL];
  size_t n_pinned_pool;
  /* the tree sort's program, kept for the next plan (tree3d_device_sort.c):
   * loading it again, and its first launch, would cost milliseconds a plan */
  cl_program sort_program;
  char sort_options[256];
  /* the FMM's M2L shift table of the last order and precision, kept for the
   * next plan (fmm3d_m2l_table.c): it depends on nothing else */
  cl_mem m2l_table;
  int m2l_table_order;
  size_t m2l_table_real_size;
};

/* ---- kernel sources, programs, binary cache ---------------------------- */

/* Finds a .cl file: each directory of FMMCL_KERNEL_PATH (':'-separated),
 * then the build tree's cl/, then the installed $(pkgdatadir)/cl. Sets
 * *path (malloc'ed) or fails with FMMCL_ERROR_KERNEL_NOT_FOUND naming every
 * place looked at. */
fmmcl_status fmmcl_kernel_find(fmmcl_context ctx, const char *file, char **path);
/* Reads a whole file into a NUL-terminated malloc'ed buffer. */
fmmcl_status fmmcl_read_file(fmmcl_context ctx, const char *path, char **text, size_t *len);

/* Options every build on this device gets (vendor class, precision). */
const char *fmmcl_vendor_build_options(fmmcl_vendor vendor);

/* Builds file (found by fmmcl_kernel_find) with the given -D options plus
 * the vendor options, through the binary cache. On a build failure the
 * status is FMMCL_ERROR_BUILD_FAILED and the log is in ctx's last error.
 * *from_cache tells whether the binary came from the cache (may be NULL). */
fmmcl_status fmmcl_program_build(fmmcl_context ctx, const char *file, const char *options,
                                 cl_program *program, int *from_cache);
/* The same with generated code (prelude) between the shared header and the
 * file: how a user's kernel expression reaches the compiler without the
 * quoting troubles of a -D option. The prelude enters the cache key. */
fmmcl_status fmmcl_program_build_prelude(fmmcl_context ctx, const char *file, const char *prelude,
                                         const char *options, cl_program *program, int *from_cache);

/* Binary cache primitives (lib/binary_cache.c). The key is a 64-bit FNV-1a
 * hash of everything that changes the binary; the tag a second hash of what
 * the payload was made from (0 for the untagged calls); load validates
 * magic, key, tag, length and a checksum keyed by the cache's secret, and
 * returns FMMCL_ERROR_CORRUPT_FILE or FMMCL_ERROR_IO (absent) without
 * touching *data on any mismatch. */
uint64_t fmmcl_hash64(uint64_t h, const void *data, size_t len);
#define FMMCL_HASH64_INIT 14695981039346656037ULL /* FNV-1a 64-bit offset basis */
int fmmcl_cache_enabled(void);
fmmcl_status fmmcl_cache_dir_path(char *buf, size_t len);
fmmcl_status fmmcl_cache_load(uint64_t key, unsigned char **data, size_t *len);
fmmcl_status fmmcl_cache_store(uint64_t key, const unsigned char *data, size_t len);
fmmcl_status fmmcl_cache_load_tagged(uint64_t key, uint64_t tag, unsigned char **data, size_t *len);
fmmcl_status fmmcl_cache_store_tagged(uint64_t key, uint64_t tag, const unsigned char *data, size_t len);
/* Deletes key's file: a payload the driver refused is never offered twice. */
void fmmcl_cache_discard(uint64_t key);
/* Around handing a cached binary to the driver: begin marks it (0: a mark
 * was already there, from a process that died in the driver, so the file
 * is discarded and must not be used), end removes the mark. */
int fmmcl_cache_try_begin(uint64_t key);
void fmmcl_cache_try_end(uint64_t key);
/* The tag fmmcl_program_build stores with a binary: source and options. */
uint64_t fmmcl_program_source_tag(const char *source, const char *options);
/* The file a key is stored in (for tests that corrupt it). */
fmmcl_status fmmcl_cache_file_path(uint64_t key, char *buf, size_t len);
/* The key fmmcl_program_build uses for (ctx's device, source, options). */
uint64_t fmmcl_program_cache_key(fmmcl_context ctx, const char *source, const char *options);

/* ---- tuned parameters -------------------------------------------------- */

/* The lookup of a kernel's parameters is fmmcl_tuned_params (tuning/tuning.h). */

/* Makes every later build of kernel on ctx use defines instead of the tuned
 * or default ones (fmmtune, benchmark sweeps); defines NULL removes it. */
fmmcl_status fmmcl_context_override_defines(fmmcl_context ctx, const char *kernel, const char *defines);

/* ---- plans -------------------------------------------------------------- */

/* 48: a hybrid plan (hybrid.c) reports both sub-plans' phases */
#define FMMCL_MAX_PHASES 48

/* The operators of the tree methods (3D and 2D FMM, treecode), as bits in
 * launch order, for the test hooks and hybrid schedules that run some of
 * them; a method ignores the bits of operators it does not have. */
enum {
  FMMCL_PHASE_P2M = 1 << 0,
  FMMCL_PHASE_M2M = 1 << 1,
  FMMCL_PHASE_M2L = 1 << 2,
  FMMCL_PHASE_P2L = 1 << 3,
  FMMCL_PHASE_L2L = 1 << 4,
  FMMCL_PHASE_L2P = 1 << 5,
  FMMCL_PHASE_M2P = 1 << 6,
  FMMCL_PHASE_P2P = 1 << 7
};

/* What a method implements: lib/plan/registry.h. */
typedef struct fmmcl_method_ops fmmcl_method_ops;

/* The caller's device buffers of one fmmcl_plan_execute_buffers (potential
 * and gradient are NULL when not asked for). */
typedef struct fmmcl_device_io {
  cl_mem charges, potential, gradient;
} fmmcl_device_io;

struct fmmcl_plan_s {
  fmmcl_context ctx;
  fmmcl_plan_options opt;
  size_t n_sources, n_targets;
  int targets_are_sources;
  const fmmcl_method_ops *ops;
  void *impl; /* the method's own state */
  char build_options[1024];
  fmmcl_phase_time phases[FMMCL_MAX_PHASES];
  size_t n_phases;
  /* During fmmcl_plan_execute_buffers of a method whose ops are resident:
   * the caller's buffers, which fmmcl_upload_permuted and
   * fmmcl_download_real4 then use instead of host arrays; NULL otherwise. */
  const fmmcl_device_io *io;
  struct fmmcl_resident *resident; /* its checking kernels, made on first use (resident.c) */
  int borrowed; /* its state comes from elsewhere (hybrid schedules): no fmmcl_plan_update_positions */
  /* the method chose opt.leaf_size (the caller gave 0): a rebuild for new
   * positions chooses what goes with that choice again (the 3D FMM's cube) */
  int leaf_size_chosen;
};

/* The expansion order of a tree method (3D and 2D FMM, treecode):
 * opt->order when set (1..max), else the smallest p <= max whose
 * predicted_error(p, arg) meets opt->tolerance (0: 1e-4 single, 1e-6
 * double; single refuses below 1e-6). hint (may be NULL) ends the message
 * when no p is enough. */
fmmcl_status fmmcl_order_from_tolerance(fmmcl_context ctx, const fmmcl_plan_options *opt, int max,
                                        double (*predicted_error)(int p, const void *arg), const void *arg,
                                        const char *hint, int *order);

/* A device buffer of bytes (16 when bytes is 0: OpenCL refuses empty
 * buffers, and such a buffer is never read), filled from host when host is
 * not NULL; the failure names the size and the device. */
fmmcl_status fmmcl_buffer_new(fmmcl_context ctx, cl_mem_flags flags, size_t bytes, const void *host,
                              cl_mem *buf);
/* FMMCL_ERROR_OUT_OF_MEMORY, with a message naming what ("the M2L
 * matrices"), the size, the device's one-allocation limit and the hint,
 * when bytes exceed that limit (drivers answer CL_INVALID_BUFFER_SIZE,
 * which tells a user nothing). */
fmmcl_status fmmcl_buffer_fits(fmmcl_context ctx, size_t bytes, const char *what, const char *hint);

/* Element i of a buffer of the plan's REAL (float or double by real_size). */
static inline void fmmcl_put_real(void *buf, size_t real_size, size_t i, double v) {
  if (real_size == 4) ((float *)buf)[i] = (float)v;
  else ((double *)buf)[i] = v;
}
static inline double fmmcl_get_real(const void *buf, size_t real_size, size_t i) {
  return real_size == 4 ? (double)((const float *)buf)[i] : ((const double *)buf)[i];
}

/* Enqueues (without waiting) the write of n doubles into buf as REALs of
 * real_size, converted into the pinned host stage (n REALs at least, reused
 * only after the queue has passed the write). */
fmmcl_status fmmcl_upload_reals(fmmcl_context ctx, size_t real_size, const double *v, size_t n, void *stage,
                                cl_mem buf);
/* A permutation on the device: k(in, perm, n, out), one work-item per
 * element in groups of local (the tree methods sort and unsort with it). */
typedef struct fmmcl_permutation {
  cl_kernel k;
  size_t local;
  cl_mem in, perm, out;
} fmmcl_permutation;
/* Enqueues p over n elements (without waiting). */
fmmcl_status fmmcl_permute(fmmcl_context ctx, const fmmcl_permutation *p, size_t n);
/* fmmcl_upload_reals of v into p->in, then p enqueued over the n values;
 * with plan->io set, p enqueued straight from the caller's charges. */
fmmcl_status fmmcl_upload_permuted(fmmcl_plan plan, size_t real_size, const double *v, size_t n,
                                   void *stage, const fmmcl_permutation *p);
/* A tree method's REAL4 results on the device and what brings them back:
 * the unsort permutation (sorted results in, caller's order out), the
 * pinned host stage, and where each REAL4 holds the potential (component
 * pot) and the gradient (components grad .. grad + dim - 1). */
typedef struct fmmcl_real4_results {
  fmmcl_permutation unsort;
  void *stage;
  int pot, grad, dim;
} fmmcl_real4_results;
/* Puts n results of r into the caller's order on the device, reads them
 * (waiting) and splits them into potential[i] and, when gradient is not
 * NULL, gradient[dim * i + c]; timed as the plan's "download". With
 * plan->io set, split on the device into the caller's buffers instead. */
fmmcl_status fmmcl_download_real4(fmmcl_plan plan, const fmmcl_real4_results *r, size_t n, size_t real_size,
                                  double *potential, double *gradient);

/* ---- device-resident execution (resident.c) ---- */

/* The sum of |v[i]| over n REALs of buffer v, and whether any was NaN or
 * infinite, computed on the device (a few numbers come back). */
fmmcl_status fmmcl_resident_abs_sum(fmmcl_plan plan, cl_mem v, size_t n, double *total, int *nonfinite);
/* Whether buffers v[0 .. count) of n[k] REALs hold a NaN or an infinity:
 * bit k of *bad for v[k]; one read back for all of them. */
fmmcl_status fmmcl_resident_nonfinite(fmmcl_plan plan, const cl_mem *v, const size_t *n, int count, int *bad);
/* pot[i] = r[4i + pot_at], grad[dim i + c] = r[4i + grad_at + c] for
 * i < n on the device (grad may be NULL), without waiting. */
fmmcl_status fmmcl_resident_split(fmmcl_plan plan, cl_mem r, size_t n, int pot_at, int grad_at, int dim,
                                  cl_mem pot, cl_mem grad);
/* Releases plan->resident (plan destruction). */
void fmmcl_resident_release(fmmcl_plan plan);

/* mkdir -p of path (of its directory part only when parent_only, path
 * then naming a file): 0, or -1 with errno set. */
int fmmcl_make_dirs(const char *path, int parent_only);

/* Median of v[0..n) (v is reordered; NAN when n is 0): benchmarks and the
 * tuner report medians of repeated timings. */
double fmmcl_median(double *v, size_t n);

/* Validation shared by plans and the reference sums. */
fmmcl_status fmmcl_options_check(fmmcl_context ctx, const fmmcl_plan_options *opt);
fmmcl_status fmmcl_points_check(fmmcl_context ctx, const char *what, size_t n, const double *x, int dim);
/* Refuses points and options whose r^2, 1/r^k or 1/(2 sigma^2) cannot be
 * represented in opt->precision (plan.c says how each limit is derived). */
fmmcl_status fmmcl_ranges_check(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n_sources,
                                const double *sources, size_t n_targets, const double *targets);
/* The same from what it reads of the points: mag the largest |coordinate|
 * of both sets, extent the longest side of the sources' box (of either
 * set's, the larger, when has_targets: then it is not read). */
fmmcl_status fmmcl_ranges_check_bounds(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n_sources,
                                       int has_targets, double mag, double extent);
/* Largest |coordinate| whose pairs' r^2 is finite in precision p and dimension dim. */
double fmmcl_coordinate_limit(fmmcl_precision p, int dim);

/* Records a phase time (seconds) on the plan; phases of the same name add. */
void fmmcl_plan_record(fmmcl_plan plan, const char *name, double seconds);
/* Host staging memory the device reaches by DMA (pinned_host.c): ptr is
 * zeroed when zero is set (else uninitialised), valid until fmmcl_pinned_free,
 * which hands the block back to its context's pool for the next plan
 * (pinning is slow); falls back to malloc memory (buf NULL) where the
 * driver cannot pin. */
typedef struct fmmcl_pinned {
  fmmcl_context ctx;
  cl_mem buf;
  void *ptr;
  size_t bytes;
} fmmcl_pinned;
fmmcl_status fmmcl_pinned_alloc(fmmcl_context ctx, size_t bytes, int zero, fmmcl_pinned *p);
void fmmcl_pinned_free(fmmcl_pinned *p);
/* Releases the context's pooled blocks (context destroy). */
void fmmcl_pinned_pool_release(fmmcl_context ctx);

/* Seconds between an event's start and end (profiling queue). */
double fmmcl_event_seconds(cl_event ev);
/* Monotonic wall clock in seconds. */
double fmmcl_wall_seconds(void);

/* Nonzero when two distinct points coincide exactly: a source repeated
 * (targets_are_sources) or a target on a source. Also nonzero when memory
 * for the check is lacking, so callers fall back to the safe path. */
int fmmcl_has_coincident(size_t ns, const double *src, size_t nt, const double *tgt, int dim,
                         int targets_are_sources);

/* Nonzero when every one of n values is finite. */
int fmmcl_all_finite(const double *v, size_t n);

/* A point set in local frames, in sorted order: group g holds sorted
 * points [begin, end) around centre (from group(arg, g, ...)); a point's
 * coordinates are xyz[dim * i], or caller[dim * perm[i]] where the sorted
 * copy is not on the host; lo, where given, its offset's low parts as
 * double, 4 per point (the REAL4 layouts' packing). */
#define FMMCL_FRAME_MAX_DIM 8
typedef struct {
  size_t n_groups;
  int dim;
  const double *xyz, *caller;
  const size_t *perm;
  const double *lo;
  void (*group)(const void *arg, size_t g, size_t *begin, size_t *end, double *centre);
  const void *arg;
} fmmcl_frame_groups;
/* Whether more than share of the points (share 0: any one) have a
 * neighbour in their group closer than E / ratio, E the group's largest
 * offset rounding at unit roundoff u (frame_rounding.c says why that bounds
 * what dropping the low parts changes), so the near field must add the
 * offsets' low parts. */
int fmmcl_frame_rounding_needs_low_parts(const fmmcl_frame_groups *fg, double u, double ratio, double share);

#endif /* FMMCL_INTERNAL_H */
