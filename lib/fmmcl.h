/* fmmcl.h — public API of libfmmcl: fast N-body summation (direct, treecode,
 * FMM, FGT) on OpenCL devices, with a plain-C reference of every sum. */
#ifndef FMMCL_H
#define FMMCL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions libfmmcl.so exports; the library is built with
 * -fvisibility=hidden, so everything else stays internal. */
#if defined(__GNUC__) || defined(__clang__)
#define FMMCL_EXPORT __attribute__((visibility("default")))
#else
#define FMMCL_EXPORT
#endif

#define FMMCL_VERSION_MAJOR 0
#define FMMCL_VERSION_MINOR 1
#define FMMCL_VERSION_PATCH 0

/* Every public call returns a status; 0 is success. */
typedef enum fmmcl_status {
  FMMCL_SUCCESS = 0,
  FMMCL_ERROR_NULL_POINTER,     /* a required pointer argument is NULL */
  FMMCL_ERROR_INVALID_ARGUMENT, /* an option out of range or an unknown enum */
  FMMCL_ERROR_EMPTY_INPUT,      /* N = 0 sources or targets */
  FMMCL_ERROR_NONFINITE_INPUT,  /* a NaN or infinite coordinate or charge */
  FMMCL_ERROR_UNSUPPORTED,      /* valid, but not available (method, fp64 on device) */
  FMMCL_ERROR_OUT_OF_MEMORY,    /* host or device allocation failed */
  FMMCL_ERROR_NO_DEVICE,        /* no OpenCL platform or device at all */
  FMMCL_ERROR_DEVICE_NOT_FOUND, /* the device selector matched nothing */
  FMMCL_ERROR_KERNEL_NOT_FOUND, /* a .cl source file is in none of the search places */
  FMMCL_ERROR_BUILD_FAILED,     /* the OpenCL compiler rejected a kernel (log in last error) */
  FMMCL_ERROR_OPENCL,           /* any other OpenCL runtime error */
  FMMCL_ERROR_IO,               /* a file could not be read or written */
  FMMCL_ERROR_CORRUPT_FILE,     /* a file exists but its content is malformed */
  FMMCL_ERROR_INTERNAL,         /* a bug in libfmmcl: please report it */
  FMMCL_ERROR_NONFINITE_OUTPUT, /* the result overflowed the plan's precision (NaN or infinite) */
  FMMCL_STATUS_COUNT
} fmmcl_status;

/* A one-line description of a status ("invalid argument", ...). Never NULL. */
FMMCL_EXPORT const char *fmmcl_strerror(fmmcl_status status);

/* The message of the last failure: for a context, that context's last failed
 * call (naming the call and, for build failures, carrying the build log);
 * for ctx == NULL, the calling thread's last failure in a call that has no
 * context (fmmcl_context_create, fmmcl_devices_list, the reference sums).
 * Never NULL; "" when nothing failed. Valid until the next call on ctx. */
typedef struct fmmcl_context_s *fmmcl_context;
FMMCL_EXPORT const char *fmmcl_last_error(fmmcl_context ctx);

/* ---- devices -------------------------------------------------------- */

typedef enum fmmcl_vendor {
  FMMCL_VENDOR_NVIDIA,
  FMMCL_VENDOR_AMD,
  FMMCL_VENDOR_INTEL,
  FMMCL_VENDOR_POCL,
  FMMCL_VENDOR_OTHER
} fmmcl_vendor;

FMMCL_EXPORT const char *fmmcl_vendor_name(fmmcl_vendor vendor);

typedef struct fmmcl_device_info {
  int platform_index; /* position in clGetPlatformIDs order */
  int device_index;   /* position within its platform */
  char platform_name[128];
  char platform_vendor[128];
  char device_name[128];
  char driver_version[128];
  char device_version[128]; /* "OpenCL 3.0 CUDA" */
  fmmcl_vendor vendor;      /* vendor class that picks build options and defaults */
  int is_gpu;
  int is_cpu;
  unsigned compute_units;
  unsigned long long global_mem_bytes;
  unsigned long long local_mem_bytes;
  size_t max_work_group_size;
  int has_fp64;
} fmmcl_device_info;

/* Fills up to capacity entries of out (out may be NULL when capacity is 0)
 * and sets *count to the number of devices present on all platforms. */
FMMCL_EXPORT fmmcl_status fmmcl_devices_list(fmmcl_device_info *out, size_t capacity, size_t *count);

/* Which device a selector picks, as an index into fmmcl_devices_list's order.
 * selector: "gpu", "cpu", "P:D" (platform and device indices), or a
 * case-insensitive substring of the device or platform name. NULL or "" means
 * the FMMCL_DEVICE environment variable, and when that is unset the first GPU,
 * else the first CPU. A selector that matches nothing is
 * FMMCL_ERROR_DEVICE_NOT_FOUND with a message listing every device. */
FMMCL_EXPORT fmmcl_status fmmcl_device_select(const char *selector, size_t *index);

/* ---- contexts ------------------------------------------------------- */

/* Opens the selected device (see fmmcl_device_select) with a profiling queue. */
FMMCL_EXPORT fmmcl_status fmmcl_context_create(fmmcl_context *ctx, const char *selector);
FMMCL_EXPORT fmmcl_status fmmcl_context_destroy(fmmcl_context ctx);
FMMCL_EXPORT fmmcl_status fmmcl_context_device(fmmcl_context ctx, fmmcl_device_info *info);

/* Directory of the program-binary cache ($XDG_CACHE_HOME/fmmcl, else
 * ~/.cache/fmmcl), whether it is enabled (FMMCL_NO_CACHE=1 disables it),
 * and the bytes it holds now. Any output pointer may be NULL. */
FMMCL_EXPORT fmmcl_status fmmcl_cache_info(char *dir, size_t dir_len, int *enabled,
                                           unsigned long long *bytes);

/* ---- plans ---------------------------------------------------------- */

typedef enum fmmcl_kernel {
  FMMCL_LAPLACE_3D,   /* 1/sqrt(r^2 + eps^2): potential and gradient */
  FMMCL_GAUSSIAN,     /* exp(-r^2 / (2 sigma^2)) in dim = 1..8 dimensions */
  FMMCL_LAPLACE_2D,   /* -log r in the plane (FMM issue) */
  FMMCL_YUKAWA_3D,    /* exp(-kappa rho) / rho, rho = sqrt(r^2 + eps^2), kappa = kernel_param:
                         potential and gradient (kappa = 0: LAPLACE_3D) */
  FMMCL_HELMHOLTZ_3D, /* exp(i k r) / r, complex k = wavenumber_re + i wavenumber_im with
                         Im k >= 0 (k = i kappa: YUKAWA_3D); complex charges and dipoles,
                         complex potential and gradient through fmmcl_plan_evaluate */
  FMMCL_STOKES_3D     /* the Stokeslet, unnormalised: velocity u_i(x) = sum (f_i / r +
                         r_i (r . f) / r^3) (multiply by 1/(8 pi mu) for a viscosity mu),
                         r = x - y; optional stresslet sources and pressure (see
                         fmmcl_sources_data); through fmmcl_plan_evaluate */
} fmmcl_kernel;

typedef enum fmmcl_method {
  FMMCL_DIRECT,   /* all pairs, O(N M) */
  FMMCL_TREECODE, /* Barnes-Hut with multipole acceptance theta */
  FMMCL_FMM,      /* fast multipole method */
  FMMCL_FGT,      /* fast Gauss transform */
  FMMCL_BBFMM,    /* black-box Chebyshev FMM */
  FMMCL_AUTO,     /* LAPLACE_3D: the performance model picks DIRECT or FMM and,
                         when leaf_size is 0, the FMM's leaf size, from the device's
                         model file (fmmtune --fit); GAUSSIAN without gradient: the
                         cheapest of DIRECT, CUTOFF, FGT and BBFMM (dim 3) by their
                         work models and the device class's measured rates, each
                         method's plan creation counted over opt.executions; without a
                         fitted model, and for the other kernels, DIRECT below 2^26
                         source-target pairs and above it the kernel's fast method:
                         FMM (LAPLACE_3D without softening, with dipoles and Hessians
                         too; LAPLACE_2D), BBFMM (a bbfmm_kernel; YUKAWA_3D without
                         gradient or softening), FMM for STOKES_3D (Stokeslets and
                         stresslets) in double (in single the FMM's rounding at close
                         pairs is magnified by its decomposition); DIRECT where none
                         applies (GAUSSIAN with gradient). HELMHOLTZ_3D: DIRECT below
                         5e8 pairs (where the FMM overtook it on an H100), FMM above
                         where its order rule accepts the points' bounding cube (low
                         to moderate frequency: up to about 5.5 wavelengths across it
                         in double, 2.5 in single, less for damped k) and k is not 0,
                         else DIRECT */
  FMMCL_CUTOFF    /* GAUSSIAN (potential only): the direct sum over the source points
                         within the FGT's cut-off of each target (binned in boxes), so
                         the dropped pairs add at most tolerance * sum |q_i| (see
                         fmmcl_plan_error_bound) */
} fmmcl_method;

typedef enum fmmcl_precision {
  FMMCL_SINGLE, /* device computes in float */
  FMMCL_DOUBLE  /* device computes in double (needs fp64) */
} fmmcl_precision;

#define FMMCL_MAX_DIM 8

/* The function a BBFMM plan sums, r = |target - source|. A pair at r = 0 is
 * skipped for the kernels singular there (1/r, 1/r^2, Yukawa); a USER
 * kernel's r = 0 pair counts only where its value is finite. */
typedef enum fmmcl_bbfmm_kernel {
  FMMCL_BBFMM_PLAN_KERNEL = 0,  /* from opt.kernel: LAPLACE_3D -> 1/sqrt(r^2 + eps^2),
                                   GAUSSIAN (dim 3) -> exp(-r^2 / (2 sigma^2)),
                                   YUKAWA_3D (eps = 0) -> YUKAWA */
  FMMCL_BBFMM_LAPLACE,          /* 1/r */
  FMMCL_BBFMM_INV_R2,           /* 1/r^2 */
  FMMCL_BBFMM_GAUSSIAN,         /* exp(-r^2 / (2 sigma^2)), sigma = opt.sigma */
  FMMCL_BBFMM_MULTIQUADRIC,     /* sqrt(r^2 + c^2), c = opt.kernel_param */
  FMMCL_BBFMM_INV_MULTIQUADRIC, /* 1/sqrt(r^2 + c^2), c = opt.kernel_param */
  FMMCL_BBFMM_YUKAWA,           /* exp(-k r)/r, k = opt.kernel_param */
  FMMCL_BBFMM_USER              /* opt.kernel_expression */
} fmmcl_bbfmm_kernel;

typedef struct fmmcl_plan_options {
  fmmcl_kernel kernel;
  fmmcl_method method;
  fmmcl_precision precision;
  int dim; /* coordinates per point: 3 for LAPLACE_3D and YUKAWA_3D, 2 for LAPLACE_2D, 1..8 for GAUSSIAN */
  int gradient;     /* nonzero: also compute the gradient of the potential */
  double softening; /* LAPLACE_3D, YUKAWA_3D: eps >= 0 in rho = sqrt(r^2 + eps^2) */
  double sigma;     /* GAUSSIAN: bandwidth > 0 */
  /* tree methods (used by later methods; ignored by DIRECT) */
  int order;        /* expansion order p; 0: chosen from tolerance */
  double tolerance; /* requested relative error; 0: use order. FGT: the bound
                         on |error| / sum |q_i| at every target (see
                         fmmcl_plan_error_bound); 0 with order 0: 1e-6 */
  double theta;     /* treecode multipole acceptance criterion, in (0, 1]; 0: the
                       largest of 0.6, 0.5, 0.4, 0.3 whose expansion order meets
                       the tolerance (fmmcl_plan_describe says which) */
  int leaf_size;    /* points per leaf q; 0: device default */
  /* BBFMM (black-box FMM, potential only: gradient must be 0) */
  fmmcl_bbfmm_kernel bbfmm_kernel; /* which function; 0: from kernel. Set with
                                      DIRECT: that function summed directly (dim 3,
                                      potential only), e.g. to check a BBFMM plan */
  double kernel_param;             /* c of the multiquadrics, k of Yukawa, kappa of
                                      YUKAWA_3D (finite, >= 0) */
  /* USER: an OpenCL C expression of type REAL in r, r2 (= r^2) and the
   * difference vector dx, dy, dz (target - source), e.g. "exp(-r) / r";
   * compiled into the plan's kernels: one that fails to compile makes
   * fmmcl_plan_create return FMMCL_ERROR_BUILD_FAILED with the build log in
   * fmmcl_last_error. The plan copies the string. */
  const char *kernel_expression;
  /* Appended last, so that the layout above stays what earlier callers
   * compiled against. Each is refused (INVALID_ARGUMENT) by a kernel that
   * does not read it. */
  int dipoles;          /* LAPLACE_3D, HELMHOLTZ_3D (no softening): sources carry dipole
                           vectors, see fmmcl_sources_data */
  int hessian;          /* LAPLACE_3D (no softening): also the Hessian of the potential */
  double wavenumber_re; /* HELMHOLTZ_3D: k = wavenumber_re + i wavenumber_im, both finite, */
  double wavenumber_im; /* wavenumber_im >= 0 (a decaying or oscillating wave) */
  int stresslets;       /* STOKES_3D: sources also carry stresslets (strength, orientation) */
  int pressure;         /* STOKES_3D: also the pressure */
  /* GAUSSIAN (read by method AUTO and the cut-off sum's box side): the
   * executions the plan is expected to serve (>= 0; 0: 100). AUTO
   * compares each method's predicted execution time plus its predicted
   * creation (the host's binning and interaction lists,
   * seconds at a million points in 6 dimensions) divided by this count:
   * a plan is created once and executed many times, but a method whose
   * creation outweighs many executions is not the fastest for a plan that
   * serves few. Kernel builds are not counted (cached after the first). */
  int executions;
} fmmcl_plan_options;

/* Defaults for a kernel: method DIRECT, precision SINGLE, gradient on
 * (off for STOKES_3D, which has none),
 * dim 3 (2 for LAPLACE_2D), softening 0, sigma 1, theta 0 (chosen); bbfmm_kernel
 * PLAN_KERNEL, kernel_param 0, kernel_expression NULL. A kernel that is no
 * fmmcl_kernel: FMMCL_ERROR_INVALID_ARGUMENT (the defaults filled anyway). */
FMMCL_EXPORT fmmcl_status fmmcl_plan_options_init(fmmcl_plan_options *opt, fmmcl_kernel kernel);

typedef struct fmmcl_plan_s *fmmcl_plan;

/* Points are interleaved doubles: point i is coords[i*dim .. i*dim+dim-1].
 * targets == NULL means the targets are the sources (n_targets is then
 * ignored). The plan copies what it needs; the caller's arrays may be freed
 * afterwards. Kernels are built (or loaded from the binary cache) here.
 * In LAPLACE_3D and YUKAWA_3D a pair at distance 0 with eps = 0 contributes nothing, so a
 * point never sees itself; the Gaussian counts every pair, itself included. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_create(fmmcl_context ctx, const fmmcl_plan_options *opt,
                                            size_t n_sources, const double *sources, size_t n_targets,
                                            const double *targets, fmmcl_plan *plan);

/* Evaluates with charges q[n_sources]. potential[n_targets] receives the sum;
 * gradient[n_targets*dim] (may be NULL; needs opt.gradient) its gradient with
 * respect to the target position. On failure the outputs are untouched, but
 * for FMMCL_ERROR_NONFINITE_OUTPUT: a potential or gradient value came out NaN
 * or infinite (an overflow in the plan's precision), the outputs hold that
 * result and fmmcl_last_error says which value and what to change. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_execute(fmmcl_plan plan, const double *charges, double *potential,
                                             double *gradient);

/* New positions for the same numbers of sources and targets (a time step):
 * the plan is rebuilt for them with its options and method (AUTO stays
 * what it chose; kernels come from the binary cache, as for a second plan);
 * targets is NULL exactly when the plan's targets are its sources. The checks of fmmcl_plan_create
 * apply; on any failure the plan is left as it was, still usable with its
 * old positions. Its "update" phase (fmmcl_plan_timings) is the time taken.
 * Plans of fmmcl_plan_create_hybrid return FMMCL_ERROR_UNSUPPORTED. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_update_positions(fmmcl_plan plan, const double *sources,
                                                      const double *targets);

FMMCL_EXPORT fmmcl_status fmmcl_plan_destroy(fmmcl_plan plan);

/* What the sources carry, for fmmcl_plan_evaluate; arrays in the sources'
 * order, NULL where the plan does not read them. With r = x - y (target
 * minus source) and G the kernel:
 *   charges[n]             real charges q (LAPLACE_3D, YUKAWA_3D, GAUSSIAN,
 *                          LAPLACE_2D): q G
 *   dipoles[3n]            real dipole vectors d (LAPLACE_3D with opt.dipoles):
 *                          -d . grad_x G = d . r / r^3
 *   complex_charges[2n]    (re, im) interleaved (HELMHOLTZ_3D): q G
 *   complex_dipoles[6n]    (re x, im x, re y, im y, re z, im z) (HELMHOLTZ_3D
 *                          with opt.dipoles): -d . grad_x G
 *   forces[3n]             Stokeslet strengths f (STOKES_3D)
 *   stresslet_strengths[3n], stresslet_orientations[3n]  s and n (STOKES_3D
 *                          with opt.stresslets): u_i = -6 r_i (r . s)(r . n) / r^5,
 *                          p = 4 (s . n) / r^3 - 12 (r . s)(r . n) / r^5
 * In LAPLACE_3D either charges or dipoles may be NULL (not both) when the
 * plan has dipoles; in HELMHOLTZ_3D likewise complex charges and dipoles;
 * in STOKES_3D forces may be NULL when the plan has stresslets. */
typedef struct fmmcl_sources_data {
  const double *charges;
  const double *dipoles;
  const double *complex_charges;
  const double *complex_dipoles;
  const double *forces;
  const double *stresslet_strengths;
  const double *stresslet_orientations;
} fmmcl_sources_data;

/* What to compute at the targets; NULL where not wanted (at least one
 * output). Gradients are with respect to the target position.
 *   potential[m], gradient[m*dim]   real kernels (gradient needs opt.gradient)
 *   hessian[6m]                     LAPLACE_3D with opt.hessian: xx, yy, zz, xy, xz, yz
 *   complex_potential[2m]           HELMHOLTZ_3D, (re, im) interleaved
 *   complex_gradient[6m]            HELMHOLTZ_3D with opt.gradient: (re x, im x, ...)
 *   velocity[3m]                    STOKES_3D
 *   pressure[m]                     STOKES_3D with opt.pressure (the pressure of the
 *                                   unnormalised velocity above: 2 r . f / r^3 per
 *                                   Stokeslet) */
typedef struct fmmcl_targets_data {
  double *potential;
  double *gradient;
  double *hessian;
  double *complex_potential;
  double *complex_gradient;
  double *velocity;
  double *pressure;
} fmmcl_targets_data;

/* Evaluates the plan with the sources' data into the targets' arrays: the
 * general form of fmmcl_plan_execute (which equals evaluating with only
 * charges, potential and gradient). An input the plan needs that is NULL is
 * FMMCL_ERROR_NULL_POINTER; an array the plan's options do not provide for
 * (a Hessian without opt.hessian, dipoles without opt.dipoles, a field of
 * another kernel) is FMMCL_ERROR_INVALID_ARGUMENT. On failure the outputs
 * are untouched, but for FMMCL_ERROR_NONFINITE_OUTPUT as in
 * fmmcl_plan_execute. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_evaluate(fmmcl_plan plan, const fmmcl_sources_data *in,
                                              fmmcl_targets_data *out);

/* Time of each phase of the plan's last execution (and "build" for plan
 * creation), in seconds. Kernel phases are timed by OpenCL profiling events,
 * transfers and host work by the wall clock. Fills up to capacity entries and
 * sets *count to the number of phases. Names stay valid while the plan lives. */
typedef struct fmmcl_phase_time {
  const char *name;
  double seconds;
} fmmcl_phase_time;
FMMCL_EXPORT fmmcl_status fmmcl_plan_timings(fmmcl_plan plan, fmmcl_phase_time *out, size_t capacity,
                                             size_t *count);

/* The work one execution of the plan does in a phase, in that phase's unit,
 * so that a benchmark can turn fmmcl_plan_timings into rates (a flop model
 * per operator times this count):
 *   "p2p"  source-target point pairs evaluated (self pairs included)
 *   "p2m"  sources expanded          "l2p"  targets evaluated
 *   "m2m"  child-to-parent shifts    "l2l"  parent-to-child shifts
 *   "m2l"  cell-to-cell translations
 *   "m2p"  (target point, source cell) multipole evaluations
 *   "p2l"  (source point, target cell) local-expansion contributions
 * A phase the plan's method does not run is 0. Another name is
 * FMMCL_ERROR_INVALID_ARGUMENT. For FGT plans: "p2p" direct point pairs,
 * "p2m" sources in Hermite expansions, "m2p" (target, source box) Hermite
 * evaluations, "p2l" (source, target box) Taylor contributions, "m2l"
 * Hermite-to-Taylor translations, "l2p" targets evaluated from Taylor
 * expansions. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_counts(fmmcl_plan plan, const char *phase, double *work);

/* The bound on the error the plan's method promises: for every target y,
 * |computed(y) - exact(y)| <= *bound * sum_i |q_i| (exact arithmetic; the
 * device's rounding comes on top). FGT: the larger of the expansions'
 * truncation bound and the neighbour cut-off's exp(-cutoff^2) (each source
 * meets a target through one of them), as chosen from opt.tolerance (or
 * opt.order); CUTOFF: exp(-cutoff^2), the dropped pairs' share; DIRECT:
 * 0. Other methods: FMMCL_ERROR_UNSUPPORTED. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_error_bound(fmmcl_plan plan, double *bound);

/* What a plan is: the method that runs (FMMCL_AUTO resolved), its
 * precision and its expansion order (0 for direct sums; the FGT's Hermite
 * order; the bbFMM's Chebyshev nodes per dimension), and the treecode's
 * theta (opt.theta 0 resolved; 0 for other methods). */
typedef struct fmmcl_plan_info {
  fmmcl_kernel kernel;
  fmmcl_method method;
  fmmcl_precision precision;
  int order;
  double theta;
  int leaf_size; /* the 3D FMM's and treecode's points per leaf (0 chosen); 0 for other methods */
} fmmcl_plan_info;
FMMCL_EXPORT fmmcl_status fmmcl_plan_describe(fmmcl_plan plan, fmmcl_plan_info *info);

/* How well the plan's precision resolves its closest source-target pair.
 * The device kernels see each point's coordinates relative to a nearby
 * centre (its leaf's, or its bucket's), rounded to the plan's precision;
 * the rounding error then grows with that frame's size, and the pair's
 * term loses the digits its distance cannot carry. Pass the sources and
 * targets the plan was created with (targets NULL: the targets are the
 * sources; the plan keeps no copy). Finds the closest pair of distinct
 * points (in linear time, on a grid) and sets *distance to it (NAN when
 * the set has none) and *estimate to the typical relative error of that
 * pair's gradient term from the rounding (its bound is about three times
 * that; the potential term's error about a third). An estimate above the
 * tolerance means the plan's precision cannot deliver the tolerance at
 * that target: use FMMCL_DOUBLE. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_rounding_estimate(fmmcl_plan plan, const double *sources,
                                                       const double *targets, double *estimate,
                                                       double *distance);

/* The (at most k) targets whose nearest distinct source is closest, closest
 * first: their indices into out[k] and (when not NULL) the distances into
 * dist[k]; *found says how many. targets NULL: the targets are the sources,
 * and a point is not its own neighbour. A source on a target (distance 0)
 * is no neighbour: it contributes nothing to a singular kernel. Linear time
 * (a grid of about two sources per cell); a target with no source in its
 * cell's neighbourhood is not close and is left out. dim 1..3. */
FMMCL_EXPORT fmmcl_status fmmcl_closest_targets(int dim, size_t n_sources, const double *sources,
                                                size_t n_targets, const double *targets, size_t k,
                                                size_t *out, double *dist, size_t *found);

/* The OpenCL build options the plan's kernels were built with (tuned -D
 * values included), for inspection and tests. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_build_options(fmmcl_plan plan, char *buf, size_t len);

/* ---- names of kernels and methods ------------------------------------ */

/* The names the fmmcl command line takes: kernels "laplace3d", "gaussian",
 * "laplace2d", "yukawa3d", "helmholtz3d", "stokes3d"; methods "direct",
 * "treecode", "fmm", "fgt", "bbfmm", "auto", "cutoff";
 * bbFMM functions "plan_kernel", "laplace", "inv_r2", "gaussian",
 * "multiquadric", "inverse_multiquadric", "yukawa", "user". A value that is
 * no member of its enum is named "unknown". */
FMMCL_EXPORT const char *fmmcl_kernel_name(fmmcl_kernel kernel);
FMMCL_EXPORT const char *fmmcl_method_name(fmmcl_method method);
FMMCL_EXPORT const char *fmmcl_bbfmm_kernel_name(fmmcl_bbfmm_kernel kernel);

/* The value a name stands for (exact, case-sensitive: the inverse of the
 * *_name calls). A name that is none of them is
 * FMMCL_ERROR_INVALID_ARGUMENT with the valid names in fmmcl_last_error(NULL),
 * and *out is untouched. */
FMMCL_EXPORT fmmcl_status fmmcl_kernel_parse(const char *name, fmmcl_kernel *out);
FMMCL_EXPORT fmmcl_status fmmcl_method_parse(const char *name, fmmcl_method *out);
FMMCL_EXPORT fmmcl_status fmmcl_bbfmm_kernel_parse(const char *name, fmmcl_bbfmm_kernel *out);

/* ---- two devices at once (hybrid CPU + GPU FMM) ----------------------- */

/* How a hybrid plan splits the 3D FMM's phases over its two contexts
 * ("a", usually the GPU, and "b", usually a CPU device such as PoCL). The
 * near field is the U list (P2P); the far field is Up (P2M, M2M) -> V
 * (M2L) -> Down (L2L, L2P) with the W (M2P) and X (P2L) lists. W reads
 * multipoles and X feeds locals, so where the model (both devices' model
 * files) predicts it faster, W runs on the near-field device together with
 * its own Up pass, and X together with its own Down pass; otherwise both
 * stay with the far field. */
typedef enum fmmcl_schedule {
  FMMCL_SCHEDULE_AUTO,    /* the model's fastest (and its leaf size when
                             leaf_size is 0), from both devices' model files
                             (fmmtune --fit); without both: GPU */
  FMMCL_SCHEDULE_GPU,     /* everything on a */
  FMMCL_SCHEDULE_CPU,     /* everything on b */
  FMMCL_SCHEDULE_HYBRID1, /* near field on a, far field on b, concurrently */
  FMMCL_SCHEDULE_HYBRID2  /* far field on a, near field on b, concurrently */
} fmmcl_schedule;

/* "auto", "gpu", "cpu", "hybrid1", "hybrid2"; "unknown" otherwise. */
FMMCL_EXPORT const char *fmmcl_schedule_name(fmmcl_schedule schedule);

/* A LAPLACE_3D FMM plan (opt->method FMM or AUTO) over contexts a and b
 * (b may be NULL for GPU and AUTO; the hybrids need b != a, though both may
 * open the same device). Each device used gets its own sub-plan
 * on the same tree (so both use one leaf size: opt->leaf_size, else the
 * model's, else 512 when either is a GPU and 256 otherwise); execute runs
 * each share on its own host thread and queue and, for the hybrids, adds
 * the second share to the first on the host (a single-device schedule
 * writes the caller's arrays directly). fmmcl_plan_timings reports each device's phases as "a:p2p",
 * "b:m2l", ..., its wall time as "a:total" / "b:total", and "combine".
 * Use the plan with fmmcl_plan_execute / timings / counts / destroy. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_create_hybrid(fmmcl_context a, fmmcl_context b,
                                                   const fmmcl_plan_options *opt, size_t n_sources,
                                                   const double *sources, size_t n_targets,
                                                   const double *targets, fmmcl_schedule schedule,
                                                   fmmcl_plan *plan);
/* The schedule a hybrid plan runs (AUTO resolved); INVALID_ARGUMENT for
 * other plans. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_schedule(fmmcl_plan plan, fmmcl_schedule *schedule);

/* ---- tuned parameters (fmmtune's cache) ------------------------------ */

/* The tuning cache file of a device: FMMCL_TUNING_FILE when set, else
 * <binary cache dir>/tuning/<platform vendor>__<device>__<driver>.txt
 * (names reduced to [A-Za-z0-9._-]). The file need not exist. */
FMMCL_EXPORT fmmcl_status fmmcl_tuning_file_path(const fmmcl_device_info *device, char *buf, size_t len);

/* One tuned kernel: the parameters fmmtune chose for (kernel, precision,
 * problem class) on a device, and what it measured. */
typedef struct fmmcl_tuning_entry {
  char kernel[64]; /* "p2p_laplace3d" */
  fmmcl_precision precision;
  char problem_class[32]; /* "dim3" (dimension), "p8" (expansion order) */
  char defines[256];      /* "-DWGS=128 -DTPW=4 -DUNROLL=4" */
  double time_ms;         /* tuned kernel time on the tuning problem; 0: unknown */
  double default_ms;      /* the built-in default's time there; 0: unknown */
  unsigned long long n;   /* points of the tuning problem; 0: unknown */
  char date[32];          /* when it was measured, ISO 8601 UTC */
  int usable;             /* nonzero: plans on this device build with it */
  char note[160];         /* why it is not usable; "" when it is */
} fmmcl_tuning_entry;

/* The entries of device in its tuning file (see fmmcl_tuning_file_path),
 * usable or not: fills up to capacity of out (NULL when capacity is 0) and
 * sets *count to the number there are. No file is success with *count 0;
 * a corrupt or foreign file is success with the entries that parse (none
 * for a foreign file) and the reason in fmmcl_tuning_notes. */
FMMCL_EXPORT fmmcl_status fmmcl_tuning_entries(const fmmcl_device_info *device, fmmcl_tuning_entry *out,
                                               size_t capacity, size_t *count);

/* Why the calling thread's latest tuned-parameter lookup for device (made
 * when a plan builds a kernel, or by fmmcl_tuning_entries) did not use the
 * cache as it stands: "entry p2p_laplace3d single dim3 ignored: WGS=48 is
 * not a candidate", "file ... names another device", "FMMCL_NO_TUNING is
 * set". Lines separated by '\n'; "" when nothing was amiss. */
FMMCL_EXPORT fmmcl_status fmmcl_tuning_notes(const fmmcl_device_info *device, char *buf, size_t len);

/* ---- overriding tuned parameters -------------------------------------- */

/* Makes every plan created on ctx after this call build kernel (a name
 * fmmtune --list shows: "p2p_laplace3d", "m2l2d", ...) with parameters,
 * "WGS=128 TPW=4 UNROLL=4" (each of the kernel's parameters once, each
 * value one of its candidates), instead of the tuned or built-in ones;
 * parameters NULL removes the override. FMMCL_ERROR_INVALID_ARGUMENT, with
 * the bad name or value in fmmcl_last_error, when kernel has no tuning
 * space or parameters is not a point of it; whether the point fits the
 * device is checked when a plan builds with it. */
FMMCL_EXPORT fmmcl_status fmmcl_tuning_override(fmmcl_context ctx, const char *kernel,
                                                const char *parameters);

/* ---- plain-C reference ---------------------------------------------- */

/* The same sum as a DIRECT plan, computed on the host in double precision
 * with OpenMP: the reference every device result is checked against.
 * Same argument conventions as fmmcl_plan_create/execute; opt->method and
 * opt->precision are ignored. */
FMMCL_EXPORT fmmcl_status fmmcl_reference_direct(const fmmcl_plan_options *opt, size_t n_sources,
                                                 const double *sources, const double *charges,
                                                 size_t n_targets, const double *targets, double *potential,
                                                 double *gradient);

/* fmmcl_plan_evaluate's sum on the host in double precision with OpenMP,
 * for every kernel and option fmmcl_plan_evaluate takes; arguments as for
 * fmmcl_reference_direct and fmmcl_plan_evaluate. */
FMMCL_EXPORT fmmcl_status fmmcl_reference_evaluate(const fmmcl_plan_options *opt, size_t n_sources,
                                                   const double *sources, const fmmcl_sources_data *in,
                                                   size_t n_targets, const double *targets,
                                                   fmmcl_targets_data *out);

#ifdef __cplusplus
}
#endif
#endif /* FMMCL_H */
