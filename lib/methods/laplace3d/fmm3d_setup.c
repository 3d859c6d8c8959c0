/* fmm3d_setup.c — plan creation shared by the 3D FMM and treecode: the
 * tree (Morton keys and sort on the device for large N, refinement on the
 * host), the lists, then kernels and the device tables execute reuses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/fmm3d.h"

/* Leaf size q when the caller gives none: a leaf's P2P should outweigh the
 * launch overhead of its expansion work; wider devices like larger leaves
 * (the leaf-size runs behind 256 are in benchmarks/README.md, bench-fmm3d).
 * The treecode's near field, every leaf within about (b + r) / theta,
 * holds several times the FMM's 27 neighbours' points, so on a GPU it
 * takes half the FMM's leaves (bench-precision runs there).
 * The FMM on a GPU splits a cell of n points where its eight children cost
 * less: per target 27 n P2P pairs and 189 M2Ls over n, against 27 n / 8
 * and 8 x 189 / n, so where n^2 > 56 m2l / pair, m2l the time of one M2L
 * at order p ~ (p + 1)^4 and pair that of one P2P pair. On the H100 that
 * threshold is ~140 points at order 5, ~320 at order 8, ~980 at order 17
 * in double; it is the leaf size (a cell of more points splits). */
static double gpu_split_threshold(int order, size_t real_size) {
  const double p4 = pow(order + 1, 4);
  /* seconds per M2L / (p + 1)^4 and per P2P pair, H100 (batched M2L) */
  const double m2l = real_size == 8 ? 2.6e-13 : 1.9e-13, pair = real_size == 8 ? 1.59e-12 : 0.69e-12;
  return sqrt(56 * m2l * p4 / pair);
}

size_t fmmcl_fmm3d_fixed_leaf_size(const fmmcl_device_info *d) { return d->is_gpu ? 512 : 256; }

size_t fmmcl_fmm3d_default_leaf_size(const fmmcl_device_info *d, int treecode, int order, size_t real_size) {
  if (!d->is_gpu || treecode) return 256;
  const double q = round(gpu_split_threshold(order, real_size));
  return q < 32 ? 32 : q > 4096 ? 4096 : (size_t)q;
}

/* How much the FMM grows its root cube (fmmcl_tree3d_build_grown) when it
 * chose the leaf size q by the order: points spread evenly hold n / 8^l a
 * cell at level l, so with the cube as it is the leaves' occupancy is
 * quantised in steps of 8 and may fall anywhere in (q / 8, q], up to 2.4
 * times off the best (a cell's cost 27 n pair + 189 m2l / n is least at
 * q / sqrt 8). Grown from its lower corner by 2^l / k, the points' extent
 * spans k cells of level l, whole ones: the k nearest n / k^3 = q / sqrt 8,
 * halfway (in ratio) between the split threshold and its eighth, so that
 * neither leaves nor their parents sit near it. (Grown about the centre,
 * the faces cut cells at every level: thin ones stay leaves beside their
 * split neighbours and bring W and X lists.) Points not spread evenly see
 * the cells fall elsewhere on them, and the leaves are still the cells of
 * at most q points. Measured: benchmarks/README.md, "The 3D FMM's leaves
 * at the cost optimum". */
double fmmcl_fmm3d_cube_growth(size_t n, size_t q) {
  if (n == 0 || q == 0) return 1;
  const double k = cbrt((double)n / ((double)q / sqrt(8.0)));
  /* whole cells, compared in ratio: of floor and ceil, the nearer in log */
  double kk = floor(k);
  if (kk < 1 || (kk + 1) * kk < k * k) kk += 1;
  double cells = 1; /* 2^l, the first at least kk */
  while (cells < kk) cells *= 2;
  return cells / kk;
}

/* FMMCL_FMM3D_GROW=F forces the cube's growth F (1 to 2) on any device and
 * method (tests, comparisons); 0 where unset. */
static double forced_growth(void) {
  const char *force = getenv("FMMCL_FMM3D_GROW");
  if (!force || !*force) return 0;
  const double f = atof(force);
  return f > 1 ? (f < 2 ? f : 2) : 1;
}

/* Depth limit: the key width (21 levels) in both precisions. Cell centres
 * in the device frame take at most 22 bits at level 21, exact in float, and
 * points are relative to their leaf's centre, so float leaves resolve too. */
static int max_level(fmmcl_precision precision) {
  (void)precision;
  return 0;
}

/* Below this many points the host sort beats the device sort's ~80 launches
 * and its two transfers. */
#define DEVICE_SORT_MIN_POINTS 65536

/* Device keys and sort on a GPU for large N; a CPU device shares the host's
 * cores, so there the host's own sort is as fast. FMMCL_TREE_SORT=device or
 * host forces either (tests, comparisons). */
static int use_device_sort(fmmcl_plan plan) {
  fmmcl_context ctx = plan->ctx;
  size_t n = plan->n_sources > plan->n_targets ? plan->n_sources : plan->n_targets;
  if (!fmmcl_tree3d_device_sort_available(ctx, n)) return 0;
  const char *force = getenv("FMMCL_TREE_SORT");
  if (force && strcmp(force, "device") == 0) return 1;
  if (force && strcmp(force, "host") == 0) return 0;
  return ctx->dev.info.is_gpu && n >= DEVICE_SORT_MIN_POINTS;
}

static fmmcl_status build_tree(fmmcl_plan plan, fmm3d_state *s, const double *sources,
                               const double *targets) {
  const fmmcl_plan_options *o = &plan->opt;
  const size_t q = (size_t)o->leaf_size; /* resolved by fmmcl_fmm3d_setup */
  const double *t = plan->targets_are_sources ? NULL : targets;
  double t0 = fmmcl_wall_seconds();
  s->sort_seconds = 0;
  /* an overfull leaf at the depth limit (coincident points) only means more
   * P2P work in that leaf, which is still exact: nothing to report */
  fmmcl_status st = FMMCL_ERROR_UNSUPPORTED;
  if (use_device_sort(plan)) {
    /* the points stay on the device, packed there once the leaves are
     * known (fmm3d_buffers.c) */
    st = fmmcl_tree3d_build_device_kept(plan->ctx, plan->n_sources, sources, plan->n_targets, t, q,
                                        max_level(o->precision), s->grow, &s->tree, &s->sort_seconds,
                                        &s->dev_src, &s->dev_tgt);
    /* the host build gives the same tree, so a device that cannot sort
     * (memory, a driver's build failure) costs time, not the plan */
    if (st) fmmcl_clear_error(plan->ctx), s->sort_seconds = 0, t0 = fmmcl_wall_seconds();
  }
  if (st) {
    st = fmmcl_tree3d_build_grown(plan->n_sources, sources, plan->n_targets, t, q, max_level(o->precision),
                                  s->grow, &s->tree);
    if (st) return fmmcl_fail(plan->ctx, st, "building the octree: %s", fmmcl_last_error(NULL));
  }
  /* "tree" is the host refinement; "sort" the device keys and sort before it */
  s->tree_seconds = fmmcl_wall_seconds() - t0 - s->sort_seconds;
  if (s->sort_seconds > 0) fmmcl_plan_record(plan, "sort", s->sort_seconds);
  fmmcl_plan_record(plan, "tree", s->tree_seconds);
  return FMMCL_SUCCESS;
}

/* Targets a treecode list serves (tree3d.h's groups): a group's sphere is
 * smaller than its leaf's, so it accepts cells nearer, fewer near leaves
 * above all (Plummer 1e6, theta 0.5: 20 % fewer P2P pairs, 8 % fewer far
 * entries), while an M2P work-group still fills its 32 targets (two an
 * item in float) and shares every staged multipole among them: 64 beat
 * 32 and 128 in float on the H100 (benchmarks/README.md). Double takes one
 * target an item (registers), so 32. FMMCL_TREECODE_GROUP=n forces n
 * (comparisons). */
static size_t treecode_group_size(fmmcl_plan plan) {
  const char *force = getenv("FMMCL_TREECODE_GROUP");
  if (force && atoi(force) > 0) return (size_t)atoi(force);
  return plan->opt.precision == FMMCL_DOUBLE ? 32 : 64;
}

static fmmcl_status build_lists(fmmcl_plan plan, fmm3d_state *s, const double *sources,
                                const double *targets) {
  double t0 = fmmcl_wall_seconds();
  fmmcl_status st = s->treecode ? fmmcl_tree3d_treecode_lists_build(
                                      s->tree, sources, plan->targets_are_sources ? NULL : targets,
                                      plan->opt.theta, treecode_group_size(plan), &s->tc)
                                : fmmcl_tree3d_fmm_lists_build(s->tree, &s->fmm);
  if (st) return fmmcl_fail(plan->ctx, st, "building interaction lists: %s", fmmcl_last_error(NULL));
  s->lists_seconds = fmmcl_wall_seconds() - t0;
  fmmcl_plan_record(plan, "lists", s->lists_seconds);
  return FMMCL_SUCCESS;
}

static fmmcl_status check_options(fmmcl_plan plan, fmm3d_state *s) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  /* the expansions are those of 1/r; a softened kernel is not harmonic */
  if (o->softening != 0)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "softening is not available with the FMM or treecode yet (use DIRECT)");
  if (o->leaf_size < 0)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "leaf_size must be >= 0, got %d", o->leaf_size);
  if (s->treecode && o->theta == 0) return fmmcl_fmm3d_choose_theta(plan, &s->order);
  /* theta > 1 would accept cells whose expansions diverge at the targets */
  if (s->treecode && !(o->theta > 0 && o->theta <= 1))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "treecode theta must be in (0, 1], got %g",
                      o->theta);
  return fmmcl_fmm3d_choose_order(ctx, o, s->treecode, &s->order);
}

/* Whether the P2P needs the offsets' low parts (-DCOMPENSATE=1), decided
 * per leaf (fmmcl_frame_rounding_needs_low_parts: each offset's rounding
 * bounded by 2 u |off|, as in the device frame up to its power-of-two
 * unit). Double compensates for any one pair whose E / d exceeds 2e-12,
 * which keeps every pair's difference within 7e-12 relative of the plain
 * arithmetic: a leaf is that much wider than its points' separation only
 * where the depth limit stops the tree at tight groups or a few points lie
 * very close (the geometry cases of tests/check_hostile.c).
 * Float's P2P compensates only its close pairs (fmm3d_p2p.cl: a second
 * pass over the sources of a target that met one), and its promise is the
 * relative L2 error over all targets: a pair counts as close when E / d
 * exceeds a tenth of the tolerance (u = 2^-24), and one such pair is
 * enough. The closest pairs' terms lead the gradient's norm (its sum of
 * 1 / d^4 is dominated by the least d), so a uniform set's few closest
 * pairs alone set its error, more so as n grows (benchmarks/README.md).
 * Without compensation the rounding estimate (fmm3d_offset_rounding) is
 * float's plain resolution. */
#define COMPENSATE_RATIO 2e-12
#define COMPENSATE_RATIO_SINGLE(tol) (0.1 * (tol))

typedef struct {
  const fmmcl_tree3d *t;
  int target;
} leaf_frames;

static void leaf_group(const void *arg, size_t g, size_t *begin, size_t *end, double *centre) {
  const leaf_frames *lf = arg;
  const fmmcl_tree3d_cell *c = &lf->t->cells[lf->t->leaves[g]];
  *begin = lf->target ? c->tgt_begin : c->src_begin;
  *end = lf->target ? c->tgt_end : c->src_end;
  for (int k = 0; k < 3; k++) centre[k] = c->center[k];
}

/* One point set (target: the targets; caller: the caller's coordinates,
 * read through the permutation where the sorted ones stayed on the device). */
static int needs_low_parts(const fmmcl_tree3d *t, int target, const double *caller, double u, double ratio) {
  const double *xyz = target ? t->target_xyz : t->source_xyz;
  const size_t *perm = target ? t->target_perm : t->source_perm;
  if (!xyz && (!caller || !perm)) return 1;
  const leaf_frames lf = {t, target};
  const fmmcl_frame_groups fg = {.n_groups = t->n_leaves,
                                 .dim = 3,
                                 .xyz = xyz,
                                 .caller = caller,
                                 .perm = perm,
                                 .group = leaf_group,
                                 .arg = &lf};
  return fmmcl_frame_rounding_needs_low_parts(&fg, u, ratio, 0);
}

void fmmcl_fmm3d_compensate_rule(fmmcl_plan plan, const fmm3d_state *s, double *u, double *ratio) {
  const int dbl = s->real_size == 8;
  const double tol = plan->opt.tolerance > 0 ? plan->opt.tolerance : 1e-4;
  *u = dbl ? 0x1p-53 : 0x1p-24, *ratio = dbl ? COMPENSATE_RATIO : COMPENSATE_RATIO_SINGLE(tol);
}

fmmcl_status fmmcl_fmm3d_setup(fmmcl_plan plan, fmm3d_state *s, const double *sources,
                               const double *targets) {
  s->real_size = plan->opt.precision == FMMCL_DOUBLE ? 8 : 4;
  s->dipoles = plan->opt.dipoles != 0, s->hessian = plan->opt.hessian != 0;
  fmmcl_status st = check_options(plan, s);
  if (st) return st;
  s->ncoef = (size_t)(s->order + 1) * (size_t)(s->order + 2) / 2;
  /* the leaf size chosen is the plan's from here on (fmmcl_plan_describe,
   * and the same leaves when new positions rebuild the tree) */
  s->grow = 1;
  if (plan->opt.leaf_size == 0 || plan->leaf_size_chosen) {
    plan->opt.leaf_size =
        (int)fmmcl_fmm3d_default_leaf_size(&plan->ctx->dev.info, s->treecode, s->order, s->real_size);
    plan->leaf_size_chosen = 1;
    /* the cube grown where the order chose the leaves */
    if (plan->ctx->dev.info.is_gpu && !s->treecode)
      s->grow = fmmcl_fmm3d_cube_growth(plan->n_sources > plan->n_targets ? plan->n_sources : plan->n_targets,
                                        (size_t)plan->opt.leaf_size);
  }
  const double forced = forced_growth();
  if (forced > 0) s->grow = forced;
  if (!s->tree_borrowed) { /* else the hybrid plan's other sub-plan built them */
    if ((st = build_tree(plan, s, sources, targets))) return st;
    if ((st = build_lists(plan, s, sources, targets))) return st;
  }
  {
    const fmmcl_tree3d *t = s->tree;
    double u, ratio;
    fmmcl_fmm3d_compensate_rule(plan, s, &u, &ratio);
    s->compensate = needs_low_parts(t, 0, sources, u, ratio) ||
                    (!t->targets_are_sources && needs_low_parts(t, 1, targets ? targets : sources, u, ratio));
  }
  if ((st = fmmcl_fmm3d_build_kernels(plan, s))) return st;
  double t0 = fmmcl_wall_seconds();
  if ((st = fmmcl_fmm3d_upload_tables(plan, s))) return st;
  s->tables_seconds = fmmcl_wall_seconds() - t0;
  fmmcl_plan_record(plan, "tables", s->tables_seconds);
  return FMMCL_SUCCESS;
}
