/* registry.h — the method registry (which ops run a kernel with a method)
 * and the kernel descriptor table (what each fmmcl_kernel is). */
#ifndef FMMCL_REGISTRY_H
#define FMMCL_REGISTRY_H

#include "core/internal.h"
#include "tuning/tuning.h"

/* ---- method operations ---------------------------------------------------- */

/* What a method implements; plan.c validates arguments before calling.
 * Optional hooks are NULL where the method has nothing to say, and the
 * public call then answers for it (see each hook). */
struct fmmcl_method_ops {
  const char *name; /* unique among ops tables: messages, and fmmcl_plan_runs */
  fmmcl_status (*create)(fmmcl_plan plan, const double *sources, const double *targets);
  fmmcl_status (*execute)(fmmcl_plan plan, const double *charges, double *potential, double *gradient);
  void (*destroy)(fmmcl_plan plan);
  /* Optional (NULL: the phases the plan recorded, see fmmcl_plan_timings). */
  fmmcl_status (*timings)(fmmcl_plan plan, fmmcl_phase_time *out, size_t capacity, size_t *count);
  /* Optional (NULL: no counts): the work of phase, see fmmcl_plan_counts;
   * called with a phase name fmmcl_plan_counts has already validated. */
  fmmcl_status (*counts)(fmmcl_plan plan, const char *phase, double *work);
  /* Optional (NULL: FMMCL_ERROR_UNSUPPORTED): see fmmcl_plan_error_bound. */
  fmmcl_status (*error_bound)(fmmcl_plan plan, double *bound);
  /* Optional (NULL: 0, a direct sum): the order fmmcl_plan_describe reports. */
  int (*order)(fmmcl_plan plan);
  /* Optional (NULL: coordinates relative to one centre for the whole set):
   * the largest distance from the centre that the device coordinates of
   * point index (the caller's numbering; a target when target is nonzero,
   * else a source) are relative to, to any point of that frame. */
  double (*frame_size)(fmmcl_plan plan, int target, size_t index);
  /* Optional (NULL: the precision's unit roundoff): how much, relative to
   * its frame's size, a point's offset rounds where the kernels meet a
   * close pair (less where they add the offsets' low parts). */
  double (*offset_rounding)(fmmcl_plan plan);
  /* Nonzero when execute, called with plan->io set and NULL host arrays,
   * reads the charges from and writes the results to those buffers
   * (through fmmcl_upload_permuted and fmmcl_download_real4); other
   * methods' fmmcl_plan_execute_buffers goes through the host. */
  int resident;
  /* Optional (NULL: the method sums charges only, through execute): the
   * general evaluation of fmmcl_plan_evaluate, arguments already checked.
   * Only methods with it run plans that need more than charges (dipoles,
   * Hessians, complex or vector kernels). */
  fmmcl_status (*evaluate)(fmmcl_plan plan, const fmmcl_sources_data *in, fmmcl_targets_data *out);
  /* Optional (NULL: fmmcl_plan_update_positions rebuilds through create):
   * new positions in place of the old where the method can keep its state;
   * *done 0 (the plan untouched) asks for the rebuild. The points come
   * unchecked (the hook reads them once): it declines those that
   * fmmcl_points_check or fmmcl_ranges_check would refuse. */
  fmmcl_status (*update)(fmmcl_plan plan, const double *sources, const double *targets, int *done);
  /* Optional (NULL: fmmcl_plan_update_positions_buffers reads the points
   * to the host and updates from there): update from positions in device
   * buffers (3 doubles a point, context and size checked), as update does;
   * *done 0 leaves the rebuild to the caller, which then skips update. */
  fmmcl_status (*update_buffers)(fmmcl_plan plan, cl_mem sources, cl_mem targets, int *done);
};

/* buf must belong to the plan's context and hold at least count values of
 * real_size bytes; fn names the public call in the error (plan_resident.c). */
fmmcl_status fmmcl_device_buffer_check(fmmcl_plan plan, const char *fn, cl_mem buf, const char *what,
                                       size_t count, size_t real_size);

/* The ops tables, one per implementation; only the registry (registry.c)
 * and hybrid plans, which build 3D FMM sub-plans, name them. */
extern const fmmcl_method_ops fmmcl_direct_ops;         /* direct.c */
extern const fmmcl_method_ops fmmcl_fmm3d_ops;          /* fmm3d_method.c */
extern const fmmcl_method_ops fmmcl_treecode3d_ops;     /* fmm3d_method.c */
extern const fmmcl_method_ops fmmcl_fmm3d_ext_ops;      /* fmm3d_method.c: with dipoles or Hessians */
extern const fmmcl_method_ops fmmcl_treecode3d_ext_ops; /* fmm3d_method.c: with dipoles or Hessians */
extern const fmmcl_method_ops fmmcl_fmm2d_ops;          /* fmm2d_method.c */
extern const fmmcl_method_ops fmmcl_fgt_ops;            /* fgt_method.c */
extern const fmmcl_method_ops fmmcl_cutoff_ops;         /* fgt_method.c */
extern const fmmcl_method_ops fmmcl_bbfmm_ops;          /* bbfmm_plan.c */
extern const fmmcl_method_ops fmmcl_bbfmm_direct_ops;   /* bbfmm_direct.c: DIRECT with opt.bbfmm_kernel set */
extern const fmmcl_method_ops fmmcl_direct_ext_ops;   /* direct_ext.c: dipoles, Hessians, Helmholtz, Stokes */
extern const fmmcl_method_ops fmmcl_stokes3d_fmm_ops; /* stokes3d_fmm.c: Stokeslets by four Laplace FMMs */
extern const fmmcl_method_ops fmmcl_helmholtz3d_fmm_ops; /* hfmm_method.c: spherical-wave expansions */

/* The checks fmmcl_plan_execute and fmmcl_plan_execute_buffers share
 * (plan.c): the charges' sum of |q| against the precision's range, and
 * the phase list emptied but for "build" before an execution. */
fmmcl_status fmmcl_charges_total_check(fmmcl_plan plan, double total);
void fmmcl_plan_restart_phases(fmmcl_plan plan);

/* Hooks the direct sums share: every target against every source
 * (plan_counts.c), and an error bound of 0 (plan.c). */
fmmcl_status fmmcl_direct_counts(fmmcl_plan plan, const char *phase, double *work);
fmmcl_status fmmcl_direct_error_bound(fmmcl_plan plan, double *bound);

/* ---- method registry ------------------------------------------------------ */

/* A row's kernel when the method sums any kernel (or checks it itself). */
#define FMMCL_ANY_KERNEL ((fmmcl_kernel)-1)

/* One way to run a plan: ops runs (kernel, method) where applicable(opt)
 * holds (NULL: always). The first row that matches wins, so a row with a
 * narrower applicable goes before the general row of the same pair. */
typedef struct fmmcl_method_row {
  fmmcl_kernel kernel;
  fmmcl_method method;
  const fmmcl_method_ops *ops;
  int (*applicable)(const fmmcl_plan_options *opt);
} fmmcl_method_row;

/* The ops that run opt (its method already resolved from AUTO), or the
 * failure naming kernel and method: INVALID_ARGUMENT for a method that is
 * no fmmcl_method, UNSUPPORTED for a combination with no row. */
fmmcl_status fmmcl_method_lookup(fmmcl_context ctx, const fmmcl_plan_options *opt,
                                 const fmmcl_method_ops **ops);

/* The rows in lookup order (tests check each ops table is complete). */
const fmmcl_method_row *fmmcl_method_rows(size_t *count);

/* The last steps of a plan create, options and points checked and ops
 * chosen: the plan of ops for opt and these points (targets NULL: the
 * sources), its state made by create(plan, sources, targets, arg), or by
 * ops->create when create is NULL, and timed as "build"; on failure the
 * plan is destroyed and *out left NULL. */
typedef fmmcl_status (*fmmcl_plan_state_fn)(fmmcl_plan plan, const double *sources, const double *targets,
                                            const void *arg);
fmmcl_status fmmcl_plan_build(fmmcl_context ctx, const fmmcl_plan_options *opt, const fmmcl_method_ops *ops,
                              size_t n_sources, const double *sources, size_t n_targets,
                              const double *targets, fmmcl_plan_state_fn create, const void *arg,
                              fmmcl_plan *out);

/* Nonzero when plan runs the ops named ops_name: how a method's own hooks
 * (tests, the model) make sure plan->impl is its state before reading it. */
int fmmcl_plan_runs(fmmcl_plan plan, const char *ops_name);

/* ---- kernel descriptors --------------------------------------------------- */

/* How cl/direct/p2p.cl's pair kernel lays out points and which arguments it
 * takes (direct.c packs and launches by this). Every kernel also takes, at
 * the end, its local frames: tile_centre and block_centre (the centres
 * sources and targets are offsets from, direct_frames.h), and the REAL4
 * kernels then src_lo and tgt_lo (the offsets' low parts, float-float or double-double). */
typedef enum fmmcl_p2p_layout {
  FMMCL_P2P_REAL4, /* one REAL4 (x, y, z|0, q) per point; (src, ns, tgt, out, eps^2, same) */
  FMMCL_P2P_SOA,   /* rows x_1..x_dim, q of n_pad each; (src, ns, tgt, nt, out, 1/(2 sigma^2), 1/sigma^2) */
  FMMCL_P2P_REAL4_PARAM /* REAL4's points and arguments, then kernel_param */
} fmmcl_p2p_layout;

/* One target's sum over every source in double precision (the plain-C
 * reference): pot, and grad[0..dim) when grad is not NULL. */
typedef void (*fmmcl_reference_at)(const fmmcl_plan_options *opt, const double *target, size_t n_sources,
                                   const double *sources, const double *charges, double *pot, double *grad);

typedef struct fmmcl_kernel_desc {
  fmmcl_kernel kernel;
  const char *name;             /* "laplace3d": fmmcl_kernel_name, the command line's --kernel */
  const char *title;            /* "LAPLACE_3D": messages, as the enum spells it */
  int dim_min, dim_max;         /* opt.dim allowed; equal for a fixed dimension */
  int default_dim;              /* what fmmcl_plan_options_init sets */
  int gradient;                 /* nonzero: the direct sum can give the gradient */
  int singular_at_zero;         /* a pair at r = 0 without softening is skipped */
  int uses_softening;           /* reads opt.softening (checked finite, >= 0) */
  int uses_sigma;               /* reads opt.sigma (checked finite, > 0) */
  int uses_kernel_param;        /* reads opt.kernel_param (checked finite, >= 0) */
  const char *p2p_kernel;       /* the OpenCL kernel in cl/direct/p2p.cl */
  fmmcl_tuned_kernel p2p_tuned; /* its tuning family (lib/tuning/) */
  fmmcl_p2p_layout p2p_layout;
  fmmcl_reference_at reference; /* NULL for a kernel fmmcl_reference_direct cannot sum (ext) */
  int ext; /* complex or vector values: only fmmcl_plan_evaluate, by ops with an evaluate hook */
} fmmcl_kernel_desc;

/* The descriptor of kernel; NULL for a value that is no fmmcl_kernel. */
const fmmcl_kernel_desc *fmmcl_kernel_describe(fmmcl_kernel kernel);

/* The reference sums of the descriptors (reference_direct.c). */
void fmmcl_reference_laplace3d_at(const fmmcl_plan_options *opt, const double *target, size_t n_sources,
                                  const double *sources, const double *charges, double *pot, double *grad);
void fmmcl_reference_laplace2d_at(const fmmcl_plan_options *opt, const double *target, size_t n_sources,
                                  const double *sources, const double *charges, double *pot, double *grad);
void fmmcl_reference_yukawa3d_at(const fmmcl_plan_options *opt, const double *target, size_t n_sources,
                                 const double *sources, const double *charges, double *pot, double *grad);
void fmmcl_reference_gaussian_at(const fmmcl_plan_options *opt, const double *target, size_t n_sources,
                                 const double *sources, const double *charges, double *pot, double *grad);

/* The options of dipoles, Hessians, Helmholtz and Stokes: each refused by
 * a kernel that does not read it (fmmcl_options_check ends with it). */
fmmcl_status fmmcl_ext_options_check(fmmcl_context ctx, const fmmcl_plan_options *opt);
/* Whether opt needs a method with an evaluate hook: an ext kernel, or
 * LAPLACE_3D with dipoles or a Hessian (evaluate.c). */
int fmmcl_options_need_evaluate(const fmmcl_plan_options *opt);
/* The checks fmmcl_plan_evaluate and fmmcl_reference_evaluate share: every
 * input opt reads present (NULL_POINTER) and finite (NONFINITE_INPUT), no
 * array opt does not provide for (INVALID_ARGUMENT), at least one output. */
/* Every output array of out (m targets; gradients of dim components) finite,
 * else FMMCL_ERROR_NONFINITE_OUTPUT naming the first value that is not and
 * method, the sum that overflowed. */
fmmcl_status fmmcl_evaluate_outputs_check(fmmcl_context ctx, const char *method, fmmcl_precision precision,
                                          size_t m, int dim, const fmmcl_targets_data *out);
fmmcl_status fmmcl_evaluate_check(fmmcl_context ctx, const fmmcl_plan_options *opt, size_t n_sources,
                                  const fmmcl_sources_data *in, const fmmcl_targets_data *out);
/* One target of fmmcl_reference_evaluate (reference_ext.c): out's arrays
 * already offset to target i. */
void fmmcl_reference_ext_at(const fmmcl_plan_options *opt, const double *target, size_t n_sources,
                            const double *sources, const fmmcl_sources_data *in, size_t i,
                            const fmmcl_targets_data *out);

/* The position of name in names[0..n), or -1 (exact match): the name
 * tables' parse functions share it. */
int fmmcl_name_index(const char *const *names, size_t n, const char *name);
/* "a, b, c" into buf (cut short when len is too small); returns buf. */
const char *fmmcl_name_list(const char *const *names, size_t n, char *buf, size_t len);
/* The parse functions' body: clears the last error, then *index = the
 * position of name in names[0..n); else fails as "fn: NULL argument" or
 * "fn: no what named "name" (the names)". */
fmmcl_status fmmcl_name_parse(const char *fn, const char *what, const char *const *names, size_t n,
                              const char *name, int *index);

#endif /* FMMCL_REGISTRY_H */
