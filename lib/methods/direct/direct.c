/* direct.c — the DIRECT method on the device: packs points, relative to the
 * centres of their tiles and work-groups, into the padded layouts p2p.cl
 * reads, launches the tiled P2P kernel, unpacks results. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "methods/direct/direct_frames.h"
#include "plan/registry.h"
#include "tuning/tuning.h"

typedef struct {
  cl_program program;
  cl_kernel kernel;
  cl_mem src, tgt, out;
  cl_mem src_lo, tgt_lo;       /* the low parts of the offsets (NULL for the SoA layout) */
  cl_mem tile_c, block_c;      /* centres (and radii) of source tiles and target blocks */
  size_t real_size;            /* 4 or 8 */
  size_t wgs, tpw;             /* from the build's -D values */
  int all_select;              /* double: distinct points coincide (the guard widens) */
  int compensate;              /* the near tiles add the low parts (where the data need them) */
  size_t ns_pad, nt_pad;       /* padded counts: whole tiles and whole work-groups */
  const fmmcl_kernel_desc *kd; /* the plan's kernel: pair kernel, layout, singularity */
  size_t *perm_s, *perm_t;     /* sorted i is the caller's perm[i]; perm_t may be perm_s */
  double *tile_r, *block_r;    /* radii of the frames (frame_size) */
  void *src_host;              /* packed sources, coordinates fixed, charges per execute */
  void *out_host;              /* src_host and out_host live in pinned staging memory */
  fmmcl_pinned src_pin, out_pin;
} direct_state;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* Element index of coordinate c (c = dim: the charge) of point i in a packed
 * array of n_pad points: the REAL4 layouts interleave (x, y, z, q) in 3D,
 * (x, y, q, 0) in 2D; the Gaussian is
 * structure-of-arrays. */
static size_t packed_index(const fmmcl_kernel_desc *kd, size_t n_pad, size_t i, int c) {
  return kd->p2p_layout != FMMCL_P2P_SOA ? 4 * i + (size_t)c : (size_t)c * n_pad + i;
}

/* The kernel's parameters (wgs, tpw) and build options; the program is
 * built by build_program once the frames say whether the near tiles compensate. */
static fmmcl_status kernel_params(fmmcl_plan plan, direct_state *s, int all_select) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  const fmmcl_tuned_kernel tk = s->kd->p2p_tuned;
  char cls[16], defines[512];
  snprintf(cls, sizeof cls, "dim%d", o->dim);
  fmmcl_params par;
  fmmcl_status st = fmmcl_tuned_params(ctx, tk, o->precision, cls, &par);
  if (st) return st;
  fmmcl_params_defines(&par, defines, sizeof defines);
  /* unset (a partial override): p2p.cl's own defaults */
  s->wgs = (size_t)fmmcl_params_get(&par, "WGS", 128);
  s->tpw = (size_t)fmmcl_params_get(&par, "TPW", 1);
  if (s->wgs == 0 || s->tpw == 0 || s->wgs > ctx->dev.info.max_work_group_size)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "kernel parameters \"%s\" do not fit device %s (max work-group %zu)", defines,
                      ctx->dev.info.device_name, ctx->dev.info.max_work_group_size);
  snprintf(plan->build_options, sizeof plan->build_options,
           "%s %s -DDIM=%d -DHAS_SOFTENING=%d -DALL_SELECT=%d",
           o->precision == FMMCL_DOUBLE ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", defines, o->dim,
           s->kd->uses_softening && o->softening > 0, all_select);
  return FMMCL_SUCCESS;
}

static fmmcl_status build_program(fmmcl_plan plan, direct_state *s) {
  fmmcl_context ctx = plan->ctx;
  const size_t len = strlen(plan->build_options);
  snprintf(plan->build_options + len, sizeof plan->build_options - len, " -DCOMPENSATE=%d", s->compensate);
  fmmcl_status st = fmmcl_program_build(ctx, "direct/p2p.cl", plan->build_options, &s->program, NULL);
  return st ? st : fmmcl_create_kernel(ctx, s->program, "direct/p2p.cl", s->kd->p2p_kernel, &s->kernel);
}

/* Points in sorted order as offsets from their group's centre: x - centre
 * exactly, as a double-double (both are doubles), rounded to the device
 * precision (hi); lo holds what that rounding lost, so near pairs keep
 * their digits wherever the points lie, however far the centre, and in w
 * the point's share of the near pairs' guard (p2p.cl): the resolution of
 * its offset, squared. Padding
 * points (sorted n .. n_pad) repeat the last point, inside the last group's
 * frame, with zero charge. */
static void pack_points(const direct_state *s, size_t n, size_t n_pad, const double *xs, size_t group,
                        const double *centre, int dim, void *hi, void *lo) {
#pragma omp parallel for schedule(static) if (n_pad > 65536)
  for (size_t i = 0; i < n_pad; i++) {
    const size_t from = i < n ? i : n - 1, g = from / group;
    double off2 = 0;
    for (int c = 0; c < dim; c++) {
      const double a = xs[from * dim + c], b = -centre[g * dim + c];
      const double sum = a + b, bb = sum - a, err = (a - (sum - bb)) + (b - bb); /* TwoSum */
      const double h = s->real_size == 4 ? (double)(float)sum : sum;
      fmmcl_put_real(hi, s->real_size, packed_index(s->kd, n_pad, i, c), h);
      if (lo) fmmcl_put_real(lo, s->real_size, 4 * i + (size_t)c, (sum - h) + err);
      off2 += sum * sum;
    }
    const double guard = s->real_size == 4 ? fmax(off2 * 0x1p-92, FLT_MIN)
                         : s->all_select   ? off2 * 0x1p-100
                                           : 0;
    if (lo) fmmcl_put_real(lo, s->real_size, 4 * i + 3, guard);
  }
}

/* Whether the near tiles need the offsets' low parts (-DCOMPENSATE=1),
 * decided per group of this set (sorted points xs, centre[g]; lo, in
 * double, the packed low parts, REAL4 per point) by
 * fmmcl_frame_rounding_needs_low_parts. Double compensates for any group
 * whose largest offset rounding E is more than 2e-12 of the distance d
 * between two of its consecutive points: below that every pair's
 * difference changes by less than sqrt3 (2 * 2e-12 + u) < 7e-12 relative,
 * the plain double arithmetic. Measured (N = 2e4 of testing/distributions.c,
 * shift 0 and 1000): uniform and Plummer E/d ~ 1e-13, the Gaussian clusters
 * 1.1e-12 (groups spanning two clusters), tests/check_hostile.c
 * "geometry": 4.4e-12 (an outlier at 1e3) to 0.8 (at 1e15). Float, whose
 * promise is the relative L2 error over all targets, compensates as the 3D
 * FMM's P2P does (fmm3d_setup.c), when more than a share of the points has
 * E / d above a tenth of the tolerance (E bounded by 2^-23 |offset|), but
 * the share is two in a hundred: Morton blocks of 512 targets, unlike the
 * FMM's cubic leaves, often straddle a jump of the curve, so the ordinary
 * sets have 1.1 to 1.6 % such points, and measured on them uncompensated
 * (benchmarks/README.md) the gradient stays within 1.8e-4 of 3e-4 asked;
 * the sets that need it have 8 % (2D clusters) to 64 % (a circle; a
 * sphere's surface 10 %). */
#define COMPENSATE_RATIO 2e-12
#define COMPENSATE_RATIO_SINGLE(tol) (0.1 * (tol))
#define COMPENSATE_SHARE_SINGLE 0.02

typedef struct {
  const double *centre;
  size_t n, group;
  int dim;
} direct_groups;

static void direct_group(const void *arg, size_t g, size_t *begin, size_t *end, double *centre) {
  const direct_groups *dg = arg;
  *begin = g * dg->group;
  *end = *begin + dg->group < dg->n ? *begin + dg->group : dg->n;
  for (int c = 0; c < dg->dim; c++) centre[c] = dg->centre[g * (size_t)dg->dim + (size_t)c];
}

static int needs_low_parts(const fmmcl_plan plan, size_t n, const double *xs, size_t group, const void *lo,
                           const double *centre) {
  const int dim = plan->opt.dim, dbl = plan->opt.precision == FMMCL_DOUBLE;
  const direct_groups dg = {centre, n, group, dim};
  const fmmcl_frame_groups fg = {.n_groups = (n + group - 1) / group, .dim = dim, .xyz = xs,
                                 .lo = dbl ? lo : NULL, .group = direct_group, .arg = &dg};
  const double tol = plan->opt.tolerance > 0 ? plan->opt.tolerance : 1e-4;
  return dbl ? fmmcl_frame_rounding_needs_low_parts(&fg, 0x1p-53, COMPENSATE_RATIO, 0)
             : fmmcl_frame_rounding_needs_low_parts(&fg, 0x1p-24, COMPENSATE_RATIO_SINGLE(tol),
                                                    COMPENSATE_SHARE_SINGLE);
}

/* Group centres relative to the grid's origin (exact in float) for the
 * kernel: REAL4 (x, y, z|0, radius) per group, or dim REALs (SoA). */
static void *pack_centres(const direct_state *s, const direct_grid *grid, size_t groups, const double *centre,
                          const double *radius, int dim, size_t *bytes) {
  const int soa = s->kd->p2p_layout == FMMCL_P2P_SOA;
  const size_t per = soa ? (size_t)dim : 4;
  *bytes = groups * per * s->real_size;
  void *out = calloc(groups * per, s->real_size);
  if (!out) return NULL;
  for (size_t g = 0; g < groups; g++) {
    for (int c = 0; c < dim; c++)
      fmmcl_put_real(out, s->real_size, g * per + (size_t)c, centre[g * dim + c] - grid->origin[c]);
    if (!soa) fmmcl_put_real(out, s->real_size, g * per + 3, radius[g]);
  }
  return out;
}

static fmmcl_status upload(fmmcl_context ctx, cl_mem *buf, size_t bytes, const void *host) {
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, bytes, NULL, buf);
  if (st) return st;
  cl_int err = clEnqueueWriteBuffer(ctx->queue, *buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
  return err == CL_SUCCESS
             ? FMMCL_SUCCESS
             : fmmcl_fail(ctx, fmmcl_status_from_cl(err), "uploading points: %s", fmmcl_cl_error_name(err));
}

/* One point set (sources: tiles of wgs; targets: blocks of wgs * tpw) in
 * Morton order (xs, from fmmcl_direct_gather), its groups' frames, packed
 * and uploaded but for the low parts (REAL4 layouts: *lo_host, 4 REALs a
 * point, for the caller to upload once both sets have said whether the
 * near tiles read them; s->compensate set where this set needs them);
 * hi_host is where the packed coordinates go (the sources' pinned stage),
 * or NULL for a buffer of its own. */
static fmmcl_status frame_set(fmmcl_plan plan, direct_state *s, const direct_grid *grid, size_t n,
                              size_t n_pad, const double *xs, size_t group, size_t parent, void *hi_host,
                              cl_mem *hi_buf, void **lo_host, cl_mem *centre_buf, double **radius) {
  fmmcl_context ctx = plan->ctx;
  const int dim = plan->opt.dim, soa = s->kd->p2p_layout == FMMCL_P2P_SOA;
  const size_t groups = n_pad / group, rows = soa ? (size_t)dim + 1 : 4;
  const size_t hi_bytes = rows * n_pad * s->real_size;
  double *centre = malloc(groups * (size_t)dim * sizeof *centre);
  *radius = malloc(groups * sizeof **radius);
  void *hi = hi_host ? hi_host : calloc(1, hi_bytes);
  void *lo = !soa ? calloc(4 * n_pad, s->real_size) : NULL;
  void *cen = NULL;
  size_t cen_bytes = 0;
  fmmcl_status st = FMMCL_SUCCESS;
  if (!centre || !*radius || !hi || (!soa && !lo))
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu points", n);
  if (!st) {
    fmmcl_direct_groups(grid, n, xs, dim, group, parent, centre, *radius);
    pack_points(s, n, n_pad, xs, group, centre, dim, hi, lo);
    if (lo && !s->compensate) s->compensate = needs_low_parts(plan, n, xs, group, lo, centre);
    cen = pack_centres(s, grid, groups, centre, *radius, dim, &cen_bytes);
    if (!cen) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu groups", groups);
  }
  if (!st) st = upload(ctx, hi_buf, hi_bytes, hi);
  if (!st) st = upload(ctx, centre_buf, cen_bytes, cen);
  free(cen);
  if (!st) *lo_host = lo, lo = NULL;
  free(lo);
  if (!hi_host) free(hi);
  free(centre);
  return st;
}

/* Whether a target coincides with a source; the offsets are exact, so
 * only points that are equal do. */
static int coincident(size_t ns, const double *src, size_t nt, const double *tgt, int dim) {
  return fmmcl_has_coincident(ns, src, nt, tgt, dim, 0);
}

static fmmcl_status direct_create(fmmcl_plan plan, const double *sources, const double *targets) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  direct_state *s = calloc(1, sizeof *s);
  if (!s) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->impl = s;
  s->kd = fmmcl_kernel_describe(o->kernel);
  s->real_size = o->precision == FMMCL_DOUBLE ? 8 : 4;
  const int dim = o->dim;
  const size_t ns = plan->n_sources, nt = plan->n_targets;
  if (plan->targets_are_sources) targets = sources;
  /* The sums depend only on differences, so each work-group sees its
   * targets and each source tile relative to centres near them: a float
   * then keeps the digits of close pairs wherever the points lie. */
  direct_grid grid;
  fmmcl_direct_grid(ns, sources, nt, targets, dim, &grid);
  if (!isfinite(grid.half) || (s->real_size == 4 && grid.half > 0x1p120))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "coordinate differences exceed the range of %s precision; use FMMCL_DOUBLE",
                      s->real_size == 4 ? "single" : "double");
  s->perm_s = malloc(ns * sizeof *s->perm_s);
  s->perm_t = plan->targets_are_sources ? s->perm_s : malloc(nt * sizeof *s->perm_t);
  double *xs = malloc(ns * (size_t)dim * sizeof *xs);
  double *xt = plan->targets_are_sources ? xs : malloc(nt * (size_t)dim * sizeof *xt);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!s->perm_s || !s->perm_t || !xs || !xt)
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for %zu points", ns + nt);
  uint64_t *keys = NULL; /* sorted, of sources that are the targets */
  if (!st)
    st = fmmcl_direct_order(ctx, ns, sources, dim, s->perm_s, plan->targets_are_sources ? &keys : NULL);
  if (!st && !plan->targets_are_sources) st = fmmcl_direct_order(ctx, nt, targets, dim, s->perm_t, NULL);
  if (!st) {
    fmmcl_direct_gather(ns, sources, s->perm_s, dim, xs);
    if (xt != xs) fmmcl_direct_gather(nt, targets, s->perm_t, dim, xt);
  }
  /* Both precisions guard every near tile; double's guard drops only exact
   * zeros unless two distinct points coincide (a wider guard then). */
  int all_select = 0;
  if (!st && s->kd->singular_at_zero && o->softening == 0)
    all_select = keys ? fmmcl_direct_repeats(ns, xs, keys, dim) : coincident(ns, sources, nt, targets, dim);
  free(keys);
  /* float's uncompensated guard is 0 (p2p.cl), too narrow where distinct
   * points coincide: those sets take the compensated tiles, whose guard is
   * the offsets' resolution per pair */
  s->compensate = s->real_size == 4 && all_select;
  if (s->real_size == 4) all_select = 0;
  s->all_select = all_select;
  if (!st) st = kernel_params(plan, s, all_select);
  if (!st) {
    s->ns_pad = round_up(ns, s->wgs);
    s->nt_pad = round_up(nt, s->wgs * s->tpw);
  }
  const size_t rows = s->kd->p2p_layout != FMMCL_P2P_SOA ? 4 : (size_t)dim + 1; /* REALs per point */
  const size_t src_bytes = rows * s->ns_pad * s->real_size, tgt_bytes = rows * s->nt_pad * s->real_size;
  if (!st) st = fmmcl_pinned_alloc(ctx, src_bytes, 1, &s->src_pin);
  if (!st) st = fmmcl_pinned_alloc(ctx, tgt_bytes, 0, &s->out_pin);
  if (!st) {
    s->src_host = s->src_pin.ptr;
    s->out_host = s->out_pin.ptr;
  }
  /* Where targets are the sources a tile takes the centre of the block it
   * lies in, so a point as source and as target has the same coordinates;
   * with blocks of one tile the targets are the sources' frames and
   * buffers (the kernel ignores a target's charge). */
  const int same = plan->targets_are_sources && s->tpw == 1;
  void *src_lo = NULL, *tgt_lo = NULL;
  if (!st)
    st = frame_set(plan, s, &grid, ns, s->ns_pad, xs, s->wgs, plan->targets_are_sources ? s->tpw : 1,
                   s->src_host, &s->src, &src_lo, &s->tile_c, &s->tile_r);
  if (!st && same) {
    s->tgt = s->src, s->block_c = s->tile_c, s->block_r = s->tile_r;
    clRetainMemObject(s->tgt);
    clRetainMemObject(s->block_c);
  } else if (!st) {
    st = frame_set(plan, s, &grid, nt, s->nt_pad, xt, s->wgs * s->tpw, 1, NULL, &s->tgt, &tgt_lo,
                   &s->block_c, &s->block_r);
  }
  if (xt != xs) free(xt);
  free(xs);
  /* the low parts go up only where the near tiles read them */
  const size_t lo_bytes = 4 * s->real_size;
  if (!st && s->compensate && src_lo) st = upload(ctx, &s->src_lo, lo_bytes * s->ns_pad, src_lo);
  if (!st && s->compensate && same && s->src_lo) {
    s->tgt_lo = s->src_lo;
    clRetainMemObject(s->tgt_lo);
  } else if (!st && s->compensate && tgt_lo) {
    st = upload(ctx, &s->tgt_lo, lo_bytes * s->nt_pad, tgt_lo);
  }
  free(src_lo);
  free(tgt_lo);
  if (!st) st = build_program(plan, s);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_WRITE_ONLY, tgt_bytes, NULL, &s->out);
  return st;
}

static fmmcl_status set_args(fmmcl_plan plan, direct_state *s) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  cl_uint ns = (cl_uint)s->ns_pad, nt = (cl_uint)s->nt_pad;
  const int soa = s->kd->p2p_layout == FMMCL_P2P_SOA; /* the argument lists of fmmcl_p2p_layout */
  double a = o->softening * o->softening, b = 0;
  if (soa) {
    a = 1.0 / (2.0 * o->sigma * o->sigma);
    b = 1.0 / (o->sigma * o->sigma);
  }
  const size_t rs = s->real_size;
  /* the layout's arguments, then the frames: tile and block centres, and
   * (REAL4 layouts) the low parts, which an uncompensated kernel never reads */
  cl_mem src_lo = s->src_lo ? s->src_lo : s->src, tgt_lo = s->tgt_lo ? s->tgt_lo : s->tgt;
  if (soa)
    return FMMCL_KERNEL_ARGS(ctx, s->kernel, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_UINT(ns),
                             FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_UINT(nt), FMMCL_ARG_MEM(s->out),
                             FMMCL_ARG_REAL(a, rs), FMMCL_ARG_REAL(b, rs), FMMCL_ARG_MEM(s->tile_c),
                             FMMCL_ARG_MEM(s->block_c));
  if (s->kd->p2p_layout == FMMCL_P2P_REAL4_PARAM)
    return FMMCL_KERNEL_ARGS(ctx, s->kernel, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_UINT(ns),
                             FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(s->out), FMMCL_ARG_REAL(a, rs),
                             FMMCL_ARG_UINT(plan->targets_are_sources), FMMCL_ARG_REAL(o->kernel_param, rs),
                             FMMCL_ARG_MEM(s->tile_c), FMMCL_ARG_MEM(s->block_c), FMMCL_ARG_MEM(src_lo),
                             FMMCL_ARG_MEM(tgt_lo));
  return FMMCL_KERNEL_ARGS(ctx, s->kernel, 0, FMMCL_ARG_MEM(s->src), FMMCL_ARG_UINT(ns),
                           FMMCL_ARG_MEM(s->tgt), FMMCL_ARG_MEM(s->out), FMMCL_ARG_REAL(a, rs),
                           FMMCL_ARG_UINT(plan->targets_are_sources), FMMCL_ARG_MEM(s->tile_c),
                           FMMCL_ARG_MEM(s->block_c), FMMCL_ARG_MEM(src_lo), FMMCL_ARG_MEM(tgt_lo));
}

static fmmcl_status direct_execute(fmmcl_plan plan, const double *charges, double *potential,
                                   double *gradient) {
  fmmcl_context ctx = plan->ctx;
  direct_state *s = plan->impl;
  const fmmcl_plan_options *o = &plan->opt;
  const int dim = o->dim;
  const size_t rows = s->kd->p2p_layout != FMMCL_P2P_SOA ? 4 : (size_t)dim + 1;
  const size_t *perm_s = s->perm_s, *perm_t = s->perm_t;
  double t0 = fmmcl_wall_seconds();
#pragma omp parallel for schedule(static) if (plan->n_sources > 65536)
  for (size_t i = 0; i < plan->n_sources; i++)
    fmmcl_put_real(s->src_host, s->real_size, packed_index(s->kd, s->ns_pad, i, dim), charges[perm_s[i]]);
  FMMCL_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, s->src, CL_TRUE, 0, rows * s->ns_pad * s->real_size,
                                         s->src_host, 0, NULL, NULL));
  double t1 = fmmcl_wall_seconds();
  fmmcl_plan_record(plan, "upload", t1 - t0);
  fmmcl_event_log log = {0};
  fmmcl_status st = set_args(plan, s);
  if (!st) st = fmmcl_launch(ctx, s->kernel, s->nt_pad / s->tpw, s->wgs, &log, "p2p");
  fmmcl_status fl = fmmcl_event_log_flush(plan, &log);
  if (st || fl) return st ? st : fl;
  double t2 = fmmcl_wall_seconds();
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, s->out, CL_TRUE, 0, rows * s->nt_pad * s->real_size,
                                        s->out_host, 0, NULL, NULL));
  /* Laplace out[i] = (gx, gy, gz, pot) ((gx, gy, 0, pot) in 2D); Gaussian
   * SoA rows (pot, g_1..g_dim); sorted target i is the caller's perm_t[i] */
  const int lap = s->kd->p2p_layout != FMMCL_P2P_SOA;
#pragma omp parallel for schedule(static) if (plan->n_targets > 65536)
  for (size_t i = 0; i < plan->n_targets; i++) {
    const size_t to = perm_t[i];
    potential[to] = fmmcl_get_real(s->out_host, s->real_size, lap ? 4 * i + 3 : i);
    if (gradient)
      for (int c = 0; c < dim; c++)
        gradient[to * dim + c] =
            fmmcl_get_real(s->out_host, s->real_size, lap ? 4 * i + c : (size_t)(1 + c) * s->nt_pad + i);
  }
  fmmcl_plan_record(plan, "download", fmmcl_wall_seconds() - t2);
  return FMMCL_SUCCESS;
}

/* The radius of the tile (a source) or block (a target) whose centre the
 * point's device coordinates are relative to. Rarely asked (once per
 * rounding estimate), so the sorted position is looked up, not stored. */
static double direct_frame_size(fmmcl_plan plan, int target, size_t index) {
  const direct_state *s = plan->impl;
  const size_t *perm = target ? s->perm_t : s->perm_s;
  const size_t n = target ? plan->n_targets : plan->n_sources, group = target ? s->wgs * s->tpw : s->wgs;
  for (size_t i = 0; i < n; i++)
    if (perm[i] == index) return (target ? s->block_r : s->tile_r)[i / group];
  return 0;
}

/* Compensated near tiles add the offsets' low parts: double-double
 * resolves more than the pair's own double arithmetic. Float's estimate
 * keeps float's unit: uncompensated, that is what its offsets resolve;
 * compensated, its pairs' own arithmetic (native rsqrt) rounds more than
 * float-float's offsets do, and the estimate's term in the frames covers
 * that. */
static double direct_offset_rounding(fmmcl_plan plan) {
  const direct_state *s = plan->impl;
  if (plan->opt.precision == FMMCL_DOUBLE) return s->compensate ? 0x1.0p-104 : 0x1.0p-53;
  return 0x1.0p-24;
}

static void direct_destroy(fmmcl_plan plan) {
  direct_state *s = plan->impl;
  if (!s) return;
  fmmcl_release(&s->kernel);
  fmmcl_release(&s->program);
  fmmcl_release(&s->src);
  fmmcl_release(&s->tgt);
  fmmcl_release(&s->out);
  fmmcl_release(&s->src_lo);
  fmmcl_release(&s->tgt_lo);
  fmmcl_release(&s->tile_c);
  fmmcl_release(&s->block_c);
  fmmcl_pinned_free(&s->src_pin);
  fmmcl_pinned_free(&s->out_pin);
  if (s->perm_t != s->perm_s) free(s->perm_t);
  free(s->perm_s);
  if (s->block_r != s->tile_r) free(s->block_r);
  free(s->tile_r);
  free(s);
  plan->impl = NULL;
}

const fmmcl_method_ops fmmcl_direct_ops = {.name = "direct",
                                           .create = direct_create,
                                           .execute = direct_execute,
                                           .destroy = direct_destroy,
                                           .counts = fmmcl_direct_counts,
                                           .error_bound = fmmcl_direct_error_bound,
                                           .frame_size = direct_frame_size,
                                           .offset_rounding = direct_offset_rounding};
