/* fmm3d_update.c — new positions for a 3D FMM plan without rebuilding it:
 * the points are sorted again on the device in their new root cube, and
 * when the octree comes out the same (every split decided as before, the
 * same cells holding sources and targets: the usual time step) the lists,
 * level groups, M2L tables, kernels and expansion buffers stay; only the
 * cells' ranges, the leaves' first points, the P2P chunks and the packed
 * points are redone, on the device but for O(cells) host work. The device
 * frame is in units of the root cube, so the cell table does not change
 * either. The points come from the host or, already on the device, from
 * the caller's buffers (fmmcl_cl.h). Everything new is made beside the old state and swapped in at
 * the end: a failure or a changed tree leaves the plan as it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/fmm3d.h"

/* One point set's new state. */
typedef struct moved_set {
  size_t n;
  fmmcl_tree3d_device_points dev; /* caller's coordinates and the new permutation */
  cl_mem keys;                    /* sorted by the tree's levels, then within each leaf */
  uint32_t *ranges;               /* per cell */
  cl_mem begin;                   /* uint per leaf + 1: the leaves' first points */
  cl_mem leaf;                    /* int per sorted point: its leaf */
} moved_set;

typedef struct moved {
  fmmcl_tree3d_device_kit *kit; /* the device steps' kernels: the plan's, kept between updates */
  moved_set src, tgt;           /* tgt unused when the targets are the sources */
  fmmcl_morton3d_cube cube;
  fmmcl_tree3d_cell *cells;
  size_t n_overfull;
  cl_mem cell_src, cell_tgt;
  cl_mem p2p_chunks;
  size_t n_p2p_chunks;
} moved;

static void set_release(moved_set *m) {
  cl_mem *b[] = {&m->dev.xyz, &m->dev.perm, &m->dev.packed, &m->dev.packed_lo, &m->keys, &m->begin, &m->leaf};
  for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) fmmcl_release(b[i]);
  free(m->ranges);
  m->ranges = NULL;
}

static void moved_release(moved *m) {
  set_release(&m->src), set_release(&m->tgt);
  free(m->cells);
  fmmcl_release(&m->cell_src), fmmcl_release(&m->cell_tgt);
  fmmcl_release(&m->p2p_chunks);
}

/* Keys, sort and the cells' ranges of one set (its coordinates uploaded
 * in xyz, taken over). The ranges need the keys sorted by the bits of the
 * tree's levels only, and so does the refit: the order within the leaves
 * waits until the tree is known to be the same (leaves_of_set). */
static fmmcl_status sort_set(fmmcl_plan plan, const fmm3d_state *s, cl_mem *xyz, moved *m, moved_set *set) {
  const fmmcl_tree3d *t = s->tree;
  set->ranges = malloc(2 * t->n_cells * sizeof *set->ranges);
  if (!set->ranges) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  int levels = 1;
  for (size_t c = 0; c < t->n_cells; c++) levels = t->cells[c].level > levels ? t->cells[c].level : levels;
  fmmcl_status st =
      fmmcl_tree3d_device_sort_kept(m->kit, &m->cube, *xyz, set->n, levels, &set->dev, &set->keys);
  *xyz = NULL;
  if (!st) st = fmmcl_tree3d_device_cell_ranges(m->kit, plan->ctx, t, set->keys, set->n, set->ranges);
  return st;
}

/* The leaves' first points (uint, the last n), the points within each
 * leaf in a fresh sort's order, and each point's leaf. */
static fmmcl_status leaves_of_set(fmmcl_plan plan, const fmm3d_state *s, const moved *m, int target,
                                  moved_set *set) {
  const fmmcl_tree3d *t = s->tree;
  cl_uint *begin = malloc((t->n_leaves + 1) * sizeof *begin);
  if (!begin) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  size_t most = 0;
  for (size_t g = 0; g < t->n_leaves; g++) {
    const fmmcl_tree3d_cell *c = &m->cells[t->leaves[g]];
    begin[g] = (cl_uint)(target ? c->tgt_begin : c->src_begin);
    const size_t count = target ? c->tgt_end - c->tgt_begin : c->src_end - c->src_begin;
    most = count > most ? count : most;
  }
  begin[t->n_leaves] = (cl_uint)set->n;
  fmmcl_status st =
      fmmcl_buffer_new(plan->ctx, CL_MEM_READ_ONLY, (t->n_leaves + 1) * sizeof *begin, begin, &set->begin);
  free(begin);
  if (!st)
    st = fmmcl_tree3d_device_leaf_sort(m->kit, plan->ctx, &set->keys, &set->dev.perm, set->begin, t->n_leaves,
                                       set->n, most);
  fmmcl_release(&set->keys);
  if (!st)
    st = fmmcl_tree3d_device_point_leaves(m->kit, plan->ctx, set->begin, s->leaves, t->n_leaves, set->n,
                                          &set->leaf);
  return st;
}

/* Whether one set needs the compensated offsets, as fmm3d_setup.c decides
 * it (needs_low_parts), counted on the device. */
static fmmcl_status set_compensates(fmmcl_plan plan, const fmm3d_state *s, const moved *m,
                                    const moved_set *set, int *compensate) {
  const fmmcl_tree3d *t = s->tree;
  double u, ratio;
  fmmcl_fmm3d_compensate_rule(plan, s, &u, &ratio);
  double *centers = malloc(3 * (t->n_leaves ? t->n_leaves : 1) * sizeof *centers);
  if (!centers) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t g = 0; g < t->n_leaves; g++)
    memcpy(centers + 3 * g, m->cells[t->leaves[g]].center, 3 * sizeof *centers);
  size_t close = 0;
  fmmcl_status st = fmmcl_tree3d_device_close_pairs(m->kit, plan->ctx, &set->dev, set->begin, centers,
                                                    t->n_leaves, u, ratio, &close);
  free(centers);
  *compensate = close > 0;
  return st;
}

/* The cells' point ranges as cl_int2 (cell_src, cell_tgt of fmm3d_buffers.c). */
static fmmcl_status upload_cell_ranges(fmmcl_plan plan, const fmm3d_state *s, moved *m) {
  const size_t n = s->tree->n_cells;
  cl_int *src = malloc(2 * n * sizeof *src), *tgt = malloc(2 * n * sizeof *tgt);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!src || !tgt) st = fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t i = 0; !st && i < n; i++) {
    src[2 * i] = (cl_int)m->cells[i].src_begin, src[2 * i + 1] = (cl_int)m->cells[i].src_end;
    tgt[2 * i] = (cl_int)m->cells[i].tgt_begin, tgt[2 * i + 1] = (cl_int)m->cells[i].tgt_end;
  }
  if (!st) st = fmmcl_buffer_new(plan->ctx, CL_MEM_READ_ONLY, 2 * n * sizeof *src, src, &m->cell_src);
  if (!st) st = fmmcl_buffer_new(plan->ctx, CL_MEM_READ_ONLY, 2 * n * sizeof *tgt, tgt, &m->cell_tgt);
  free(src), free(tgt);
  return st;
}

/* One set's points packed in the leaves' frames of the new cube. */
static fmmcl_status pack_set(fmmcl_plan plan, const fmm3d_state *s, const moved *m, const double origin[3],
                             double unit, moved_set *set) {
  fmmcl_status st = fmmcl_tree3d_device_pack(plan->ctx, m->kit, &set->dev, set->n, set->leaf, s->center,
                                             s->real_size, origin, 1.0 / unit);
  if (!st && !set->dev.finite)
    st = fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                    "coordinate differences exceed the range of single precision; use FMMCL_DOUBLE");
  if (!st && !s->compensate) fmmcl_release(&set->dev.packed_lo); /* the P2P reads no low parts */
  return st;
}

static void swap_mem(cl_mem *dst, cl_mem *src) {
  fmmcl_release(dst);
  *dst = *src, *src = NULL;
}

/* The new state in place of the old; nothing here can fail. */
static void commit(fmm3d_state *s, moved *m, const double origin[3], double unit) {
  fmmcl_tree3d *t = s->tree;
  fmmcl_release(&s->tgt), fmmcl_release(&s->tgt_lo), fmmcl_release(&s->tgt_perm);
  swap_mem(&s->src, &m->src.dev.packed), swap_mem(&s->src_lo, &m->src.dev.packed_lo);
  swap_mem(&s->src_perm, &m->src.dev.perm);
  swap_mem(&s->leaf_src_begin, &m->src.begin);
  if (t->targets_are_sources) {
    s->tgt = s->src, s->tgt_perm = s->src_perm, s->tgt_lo = s->src_lo;
    clRetainMemObject(s->tgt), clRetainMemObject(s->tgt_perm);
    if (s->tgt_lo) clRetainMemObject(s->tgt_lo);
    fmmcl_release(&s->leaf_tgt_begin);
    s->leaf_tgt_begin = s->leaf_src_begin;
    clRetainMemObject(s->leaf_tgt_begin);
  } else {
    s->tgt = m->tgt.dev.packed, s->tgt_lo = m->tgt.dev.packed_lo, s->tgt_perm = m->tgt.dev.perm;
    m->tgt.dev.packed = m->tgt.dev.packed_lo = m->tgt.dev.perm = NULL;
    swap_mem(&s->leaf_tgt_begin, &m->tgt.begin);
  }
  swap_mem(&s->cell_src, &m->cell_src), swap_mem(&s->cell_tgt, &m->cell_tgt);
  swap_mem(&s->p2p_chunks, &m->p2p_chunks);
  s->n_p2p_chunks = m->n_p2p_chunks;
  /* the host tree: new ranges and geometry; its sorted keys, permutations
   * and points are those of the old positions, and the new ones stay on
   * the device (src_perm, tgt_perm) */
  free(t->cells);
  t->cells = m->cells, m->cells = NULL;
  t->cube = m->cube;
  t->n_overfull_leaves = m->n_overfull, t->depth_limit_reached = m->n_overfull > 0;
  if (!t->targets_are_sources) free(t->target_keys), free(t->target_perm), free(t->target_xyz);
  free(t->source_keys), free(t->source_perm), free(t->source_xyz);
  t->source_keys = t->target_keys = NULL, t->source_perm = t->target_perm = NULL;
  t->source_xyz = t->target_xyz = NULL;
  memcpy(s->origin, origin, sizeof s->origin);
  s->unit = unit;
}

/* The points' new coordinates on the device (xyz[1] NULL when the targets
 * are the sources), taken over, with their box and finiteness. */
typedef struct new_points {
  cl_mem xyz[2];
  double lo[2][3], hi[2][3];
  int finite[2];
} new_points;

/* Whether the plan can be updated in place at all. */
static int in_place_possible(fmmcl_plan plan) {
  const fmm3d_state *s = plan->impl;
  if (!s || s->treecode || s->tree_borrowed || !s->tree) return 0;
  const fmmcl_tree3d *t = s->tree;
  const size_t n_max = t->n_sources > t->n_targets ? t->n_sources : t->n_targets;
  return fmmcl_tree3d_device_sort_available(plan->ctx, n_max);
}

/* What both updates start from: nothing done nor made yet, and the plan's
 * device kit, made at its first update and kept (its kernels are not made
 * again each step). *go: whether the in-place update may be tried (else
 * the plan is rebuilt). */
static fmmcl_status update_begin(fmmcl_plan plan, moved *m, new_points *p, int *done, int *go) {
  memset(m, 0, sizeof *m);
  memset(p, 0, sizeof *p);
  p->finite[1] = 1;
  *done = *go = 0;
  if (!in_place_possible(plan)) return FMMCL_SUCCESS;
  fmm3d_state *s = plan->impl;
  fmmcl_status st = s->update_kit ? FMMCL_SUCCESS : fmmcl_tree3d_device_kit_open(plan->ctx, &s->update_kit);
  m->kit = s->update_kit;
  *go = !st;
  return st;
}

/* The update from the points on the device (p's buffers taken over; m->kit
 * the plan's); t0 when it began, for its phases. */
static fmmcl_status update_from(fmmcl_plan plan, moved *m, new_points *p, double t0, int *done) {
  fmmcl_context ctx = plan->ctx;
  fmm3d_state *s = plan->impl;
  const fmmcl_tree3d *t = s->tree;
  const int separate = !t->targets_are_sources;
  m->src.n = t->n_sources, m->tgt.n = t->n_targets;
  /* points that fail the rebuild's checks are left to it (its errors,
   * the plan untouched) */
  int usable = p->finite[0] && (!separate || p->finite[1]);
  double mag = 0, extent = 0, box_lo[3], box_hi[3];
  for (int d = 0; usable && d < 3; d++) {
    box_lo[d] = p->lo[0][d], box_hi[d] = p->hi[0][d];
    if (separate) box_lo[d] = fmin(box_lo[d], p->lo[1][d]), box_hi[d] = fmax(box_hi[d], p->hi[1][d]);
    for (int k = 0; k < 1 + separate; k++)
      mag = fmax(mag, fmax(fabs(p->lo[k][d]), fabs(p->hi[k][d]))),
      extent = fmax(extent, p->hi[k][d] - p->lo[k][d]);
  }
  if (usable && fmmcl_ranges_check_bounds(ctx, &plan->opt, t->n_sources, separate, mag, extent))
    fmmcl_clear_error(ctx), usable = 0;
  if (usable && fmmcl_morton3d_cube_of_box(box_lo, box_hi, &m->cube)) fmmcl_clear_error(NULL), usable = 0;
  if (usable) fmmcl_morton3d_cube_grow(&m->cube, s->grow); /* as the plan's tree was built */
  const double t_points = fmmcl_wall_seconds();
  fmmcl_status st = FMMCL_SUCCESS;
  if (!st && usable) st = sort_set(plan, s, &p->xyz[0], m, &m->src);
  if (!st && usable && separate) st = sort_set(plan, s, &p->xyz[1], m, &m->tgt);
  fmmcl_release(&p->xyz[0]), fmmcl_release(&p->xyz[1]);
  if (!st && !usable) return FMMCL_SUCCESS;
  const double t1 = fmmcl_wall_seconds();
  int same = 0;
  if (!st) m->cells = malloc(t->n_cells * sizeof *m->cells);
  if (!st && !m->cells) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (!st)
    same = fmmcl_tree3d_refit(t, &m->cube, m->src.ranges, separate ? m->tgt.ranges : m->src.ranges, m->cells,
                              &m->n_overfull);
  const double t2 = fmmcl_wall_seconds();
  int compensate = 0;
  if (!st && same) st = leaves_of_set(plan, s, m, 0, &m->src);
  if (!st && same && separate) st = leaves_of_set(plan, s, m, 1, &m->tgt);
  if (!st && same) st = set_compensates(plan, s, m, &m->src, &compensate);
  if (!st && same && separate && !compensate) st = set_compensates(plan, s, m, &m->tgt, &compensate);
  /* the other compensation needs other kernels: the rebuild makes them */
  same = same && compensate == s->compensate;
  const double t_leaves = fmmcl_wall_seconds();
  double origin[3], unit = 0.5 * m->cube.width;
  for (int d = 0; d < 3; d++) origin[d] = m->cube.origin[d] + unit;
  if (!st && same) st = pack_set(plan, s, m, origin, unit, &m->src);
  if (!st && same && separate) st = pack_set(plan, s, m, origin, unit, &m->tgt);
  const double t_pack = fmmcl_wall_seconds();
  if (!st && same) st = upload_cell_ranges(plan, s, m);
  if (!st && same)
    st = fmmcl_fmm3d_upload_p2p_chunks(plan, s, m->cells, &s->fmm.u, &m->p2p_chunks, &m->n_p2p_chunks);
  if (!st && same) {
    commit(s, m, origin, unit);
    s->sort_seconds = t1 - t0, s->tree_seconds = t2 - t1, s->lists_seconds = 0;
    const double t_end = fmmcl_wall_seconds();
    s->tables_seconds = t_end - t2;
    /* where an update's time goes, until the next execute (each step ends
     * in a blocking read or finish, so the device's share is in it) */
    fmmcl_plan_record(plan, "update points", t_points - t0);
    fmmcl_plan_record(plan, "update sort", t1 - t_points);
    fmmcl_plan_record(plan, "update tree", t2 - t1);
    fmmcl_plan_record(plan, "update leaves", t_leaves - t2);
    fmmcl_plan_record(plan, "update pack", t_pack - t_leaves);
    fmmcl_plan_record(plan, "update ranges", t_end - t_pack);
    *done = 1;
  }
  return st;
}

fmmcl_status fmmcl_fmm3d_update(fmmcl_plan plan, const double *sources, const double *targets, int *done) {
  moved m;
  new_points p;
  const double t0 = fmmcl_wall_seconds();
  int go;
  fmmcl_status st = update_begin(plan, &m, &p, done, &go);
  if (st || !go) return st;
  const fmmcl_tree3d *t = ((const fmm3d_state *)plan->impl)->tree;
  /* the caller's points read once: sent up, their box and finiteness
   * taken on the way */
  st =
      fmmcl_tree3d_device_upload(plan->ctx, sources, t->n_sources, &p.xyz[0], p.lo[0], p.hi[0], &p.finite[0]);
  if (!st && !t->targets_are_sources)
    st = fmmcl_tree3d_device_upload(plan->ctx, targets, t->n_targets, &p.xyz[1], p.lo[1], p.hi[1],
                                    &p.finite[1]);
  if (!st) st = update_from(plan, &m, &p, t0, done);
  fmmcl_release(&p.xyz[0]), fmmcl_release(&p.xyz[1]);
  moved_release(&m);
  return st;
}

fmmcl_status fmmcl_fmm3d_update_buffers(fmmcl_plan plan, cl_mem sources, cl_mem targets, int *done) {
  moved m;
  new_points p;
  const double t0 = fmmcl_wall_seconds();
  int go;
  fmmcl_status st = update_begin(plan, &m, &p, done, &go);
  if (st || !go) return st;
  const fmmcl_tree3d *t = ((const fmm3d_state *)plan->impl)->tree;
  /* the caller's buffers, only read (the sort keeps them until the
   * packing): retained, never copied */
  p.xyz[0] = sources, clRetainMemObject(sources);
  if (!t->targets_are_sources) p.xyz[1] = targets, clRetainMemObject(targets);
  st = fmmcl_tree3d_device_box(m.kit, plan->ctx, sources, t->n_sources, p.lo[0], p.hi[0], &p.finite[0]);
  if (!st && p.xyz[1])
    st = fmmcl_tree3d_device_box(m.kit, plan->ctx, targets, t->n_targets, p.lo[1], p.hi[1], &p.finite[1]);
  if (!st) st = update_from(plan, &m, &p, t0, done);
  fmmcl_release(&p.xyz[0]), fmmcl_release(&p.xyz[1]);
  moved_release(&m);
  return st;
}
