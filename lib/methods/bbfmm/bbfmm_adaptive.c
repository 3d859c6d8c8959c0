/* bbfmm_adaptive.c — the black-box FMM on tree3d.h's adaptive octree:
 * U list = P2P (cl/bbfmm.cl's indirection-array kernel, leaves as its
 * "leaves"), V list = M2L (compressed operators per level: V^T and U as
 * CLBlast GEMMs over a level's cells, C_t per target cell in a kernel),
 * W list = M2P (the kernel from a cell's Chebyshev nodes, weighted by its
 * multipole, at the targets), X list = P2L (the kernel from the sources at
 * a cell's nodes, into its locals). Clustered input leaves most of a
 * uniform tree empty; this tree refines only where the points are. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"
#include "tree/tree3d.h"

/* A CSR list as uint offsets and indices on the device. */
static fmmcl_status csr_upload(fmmcl_context ctx, const fmmcl_tree3d_csr *c, cl_mem *start, cl_mem *idx) {
  uint32_t *o = malloc((c->n_rows + 1) * sizeof *o);
  if (!o) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t r = 0; r <= c->n_rows; r++) o[r] = (uint32_t)c->offsets[r];
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (c->n_rows + 1) * sizeof *o, o, start);
  if (!st)
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, c->offsets[c->n_rows] * sizeof(int32_t), c->indices, idx);
  free(o);
  return st;
}

/* The P2P kernel's arrays: tree leaves numbered in Morton order (their
 * point ranges tile the sorted arrays, so start[k]..start[k+1] is leaf k),
 * clusters = leaves holding targets, neighbours = their U lists. */
static fmmcl_status p2p_arrays(fmmcl_context ctx, fmmcl_bbfmm_state *s, fmmcl_bbfmm_adaptive *a) {
  const fmmcl_tree3d *t = a->tree;
  const fmmcl_tree3d_csr *u = &a->lists.u;
  size_t nl = t->n_leaves;
  uint32_t *ord = malloc(t->n_cells * sizeof *ord), *ss = malloc((nl + 1) * sizeof *ss),
           *ts = malloc((nl + 1) * sizeof *ts), *cl = malloc(nl * sizeof *cl),
           *ns = malloc((nl + 1) * sizeof *ns), *ni = malloc((u->offsets[u->n_rows] + 1) * sizeof *ni);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!ord || !ss || !ts || !cl || !ns || !ni)
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  size_t nc = 0, nn = 0;
  s->work_p2p = 0;
  for (size_t k = 0; k < nl && !st; k++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[k]];
    ord[t->leaves[k]] = (uint32_t)k;
    ss[k] = (uint32_t)c->src_begin, ts[k] = (uint32_t)c->tgt_begin;
  }
  if (!st) ss[nl] = (uint32_t)t->n_sources, ts[nl] = (uint32_t)t->n_targets;
  for (size_t k = 0; k < nl && !st; k++) {
    int32_t b = t->leaves[k];
    size_t ntg = fmmcl_tree3d_n_tgt(&t->cells[b]);
    if (!ntg) continue;
    cl[nc] = (uint32_t)k, ns[nc++] = (uint32_t)nn;
    for (size_t e = u->offsets[b]; e < u->offsets[b + 1]; e++) {
      ni[nn++] = ord[u->indices[e]];
      s->work_p2p += (double)ntg * (double)fmmcl_tree3d_n_src(&t->cells[u->indices[e]]);
    }
  }
  if (!st) ns[nc] = (uint32_t)nn;
  s->n_clusters = nc;
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nc * sizeof *cl, cl, &s->cluster);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (nc + 1) * sizeof *ns, ns, &s->nbr_start);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nn * sizeof *ni, ni, &s->nbr_index);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (nl + 1) * sizeof *ss, ss, &s->src_start);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, (nl + 1) * sizeof *ts, ts, &s->tgt_start);
  free(ord), free(ss), free(ts), free(cl), free(ns), free(ni);
  return st;
}

/* Per cell: point ranges, geometry, children, octant; the cell lists of
 * P2M (leaves with sources), L2P (leaves with targets) and the parents
 * (levels >= 2, grouped by level for M2M and L2L); V list transfer indices. */
static fmmcl_status cell_arrays(fmmcl_context ctx, fmmcl_bbfmm_state *s, fmmcl_bbfmm_adaptive *a) {
  const fmmcl_tree3d *t = a->tree;
  size_t nc = t->n_cells, rs = s->real_size;
  uint32_t *sr = malloc(2 * nc * sizeof *sr), *tr = malloc(2 * nc * sizeof *tr),
           *ch = malloc(2 * nc * sizeof *ch);
  uint32_t *p2m = malloc(nc * sizeof *p2m), *l2p = malloc(nc * sizeof *l2p), *par = malloc(nc * sizeof *par);
  unsigned char *oct = malloc(nc), *geo = malloc(4 * nc * rs), *cf = malloc(4 * nc * rs);
  const fmmcl_tree3d_csr *v = &a->lists.v;
  size_t nv = v->offsets[v->n_rows];
  uint32_t *eb = malloc((nv + 1) * sizeof *eb), *ea = malloc((nv + 1) * sizeof *ea);
  a->t_first = calloc((size_t)(FMMCL_BBFMM_MAX_DEPTH + 1) * (FMMCL_BBFMM_N_TRANSFER + 1), sizeof *a->t_first);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!sr || !tr || !ch || !p2m || !l2p || !par || !oct || !geo || !cf || !eb || !ea || !a->t_first)
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  a->n_p2m = a->n_l2p = 0;
  size_t np = 0;
  s->work_m2m = 0;
  for (int l = 0; l <= FMMCL_BBFMM_MAX_DEPTH + 1; l++) a->parent_begin[l] = 0;
  for (size_t c = 0; c < nc && !st; c++) {
    const fmmcl_tree3d_cell *cell = &t->cells[c];
    sr[2 * c] = (uint32_t)cell->src_begin, sr[2 * c + 1] = (uint32_t)cell->src_end;
    tr[2 * c] = (uint32_t)cell->tgt_begin, tr[2 * c + 1] = (uint32_t)cell->tgt_end;
    ch[2 * c] = (uint32_t)cell->child_begin, ch[2 * c + 1] = (uint32_t)cell->n_children;
    oct[c] =
        (unsigned char)(((cell->anchor[0] & 1) << 2) | ((cell->anchor[1] & 1) << 1) | (cell->anchor[2] & 1));
    /* the centre within the cell's own frame: a fraction of unit */
    const double *f = a->frame + 3 * c;
    double g[4] = {(cell->center[0] - a->center[0]) - f[0], (cell->center[1] - a->center[1]) - f[1],
                   (cell->center[2] - a->center[2]) - f[2], cell->half_width};
    for (int d = 0; d < 4; d++) {
      fmmcl_put_real(geo, rs, 4 * c + d, g[d]);
      fmmcl_put_real(cf, rs, 4 * c + d, d < 3 ? f[d] : 0);
    }
    if (fmmcl_tree3d_is_leaf(cell)) {
      if (fmmcl_tree3d_n_src(cell)) p2m[a->n_p2m++] = (uint32_t)c;
      if (fmmcl_tree3d_n_tgt(cell)) l2p[a->n_l2p++] = (uint32_t)c;
    }
  }
  /* parents level by level (cells are stored level by level) */
  for (int l = 2; l < t->n_levels && !st; l++) {
    a->parent_begin[l] = np;
    for (size_t c = t->level_begin[l]; c < t->level_begin[l + 1]; c++)
      if (!fmmcl_tree3d_is_leaf(&t->cells[c])) par[np++] = (uint32_t)c, s->work_m2m += t->cells[c].n_children;
  }
  for (int l = t->n_levels > 2 ? t->n_levels : 2; l <= FMMCL_BBFMM_MAX_DEPTH + 1; l++)
    a->parent_begin[l] = np;
  /* V pairs bucketed by level (the CSR rows are cells, stored level by
   * level) and within a level by transfer vector: counted, then placed */
  for (int l = 0; l < t->n_levels && !st; l++) {
    size_t *tf = a->t_first + (size_t)l * (FMMCL_BBFMM_N_TRANSFER + 1), fill[FMMCL_BBFMM_N_TRANSFER];
    for (int k = 0; k <= FMMCL_BBFMM_N_TRANSFER; k++) tf[k] = 0;
    for (int pass = 0; pass < 2; pass++) {
      for (size_t b = t->level_begin[l]; b < t->level_begin[l + 1]; b++)
        for (size_t e = v->offsets[b]; e < v->offsets[b + 1]; e++) {
          const fmmcl_tree3d_cell *cb = &t->cells[b], *ca = &t->cells[v->indices[e]];
          int ti = fmmcl_bbfmm_transfer_index((int)ca->anchor[0] - (int)cb->anchor[0],
                                              (int)ca->anchor[1] - (int)cb->anchor[1],
                                              (int)ca->anchor[2] - (int)cb->anchor[2]);
          if (pass == 0) {
            tf[ti + 1]++;
          } else {
            size_t pos = fill[ti]++;
            eb[pos] = (uint32_t)b, ea[pos] = (uint32_t)v->indices[e];
          }
        }
      if (pass == 0) {
        tf[0] = v->offsets[t->level_begin[l]];
        for (int k = 0; k < FMMCL_BBFMM_N_TRANSFER; k++) tf[k + 1] += tf[k], fill[k] = tf[k];
      }
    }
  }
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 2 * nc * sizeof *sr, sr, &a->src_range);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 2 * nc * sizeof *tr, tr, &a->tgt_range);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 2 * nc * sizeof *ch, ch, &a->child);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nc, oct, &a->oct);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * nc * rs, geo, &a->geo);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * nc * rs, cf, &a->cframe);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, a->n_p2m * sizeof *p2m, p2m, &a->p2m_cells);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, a->n_l2p * sizeof *l2p, l2p, &a->l2p_cells);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, np * sizeof *par, par, &a->parents);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nv * sizeof *eb, eb, &a->eb);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nv * sizeof *ea, ea, &a->ea);
  free(sr), free(tr), free(ch), free(p2m), free(l2p), free(par), free(oct), free(geo), free(cf), free(eb),
      free(ea);
  return st;
}

/* Every cell's frame: its centre (relative to the root's) rounded to a
 * multiple of unit, a power of two at most half the deepest cells' half
 * side. Frames are then integers below 2^(levels + 1) times unit, exact in
 * float, and so are the differences of two frames that the kernels add to
 * offsets within a cell: the tree's centres are not dyadic themselves (the
 * root cube's side is the points' extent). */
static fmmcl_status cell_frames(fmmcl_context ctx, fmmcl_bbfmm_adaptive *a) {
  const fmmcl_tree3d *t = a->tree;
  a->frame = malloc(3 * t->n_cells * sizeof *a->frame);
  if (!a->frame) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  a->unit = ldexp(1.0, ilogb(0.5 * t->cube.width) - t->n_levels);
  for (size_t c = 0; c < t->n_cells; c++)
    for (int d = 0; d < 3; d++)
      a->frame[3 * c + d] = a->unit * nearbyint((t->cells[c].center[d] - a->center[d]) / a->unit);
  return FMMCL_SUCCESS;
}

/* The sorted points relative to their leaf's frame (the P2P kernel's leaf
 * numbering: leaves in Morton order, whose ranges tile the sorted arrays). */
static fmmcl_status leaf_points(fmmcl_context ctx, fmmcl_bbfmm_state *s, fmmcl_bbfmm_adaptive *a) {
  const fmmcl_tree3d *t = a->tree;
  size_t nl = t->n_leaves;
  double *lf = malloc(3 * nl * sizeof *lf + 8);
  uint32_t *ss = malloc((nl + 1) * sizeof *ss), *ts = malloc((nl + 1) * sizeof *ts);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!lf || !ss || !ts) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t k = 0; k < nl && !st; k++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[k]];
    ss[k] = (uint32_t)c->src_begin, ts[k] = (uint32_t)c->tgt_begin;
    memcpy(lf + 3 * k, a->frame + 3 * (size_t)t->leaves[k], 3 * sizeof *lf);
  }
  if (!st) {
    ss[nl] = (uint32_t)t->n_sources, ts[nl] = (uint32_t)t->n_targets;
    st = fmmcl_bbfmm_point_buffers(ctx, s, a->center, nl, lf, ss, ts, t->source_xyz, t->n_sources,
                                   t->target_xyz, t->n_targets);
  }
  free(lf), free(ss), free(ts);
  return st;
}

double fmmcl_bbfmm_adaptive_frame_size(const fmmcl_bbfmm_adaptive *a, int target, size_t index) {
  const fmmcl_tree3d *t = a->tree;
  const size_t *perm = target ? t->target_perm : t->source_perm, n = target ? t->n_targets : t->n_sources;
  size_t j = 0;
  while (j < n && perm[j] != index) j++;
  for (size_t k = 0; k < t->n_leaves; k++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[k]];
    if (target ? j >= c->tgt_begin && j < c->tgt_end : j >= c->src_begin && j < c->src_end)
      return sqrt(3.0) * (c->half_width + 0.5 * a->unit); /* the frame sits within unit / 2 of the centre */
  }
  return sqrt(3.0) * t->cube.width; /* not a point of the plan: the root's */
}

static fmmcl_status create_kernels(fmmcl_context ctx, fmmcl_bbfmm_state *s, fmmcl_bbfmm_adaptive *a) {
  const char *names[7] = {"bbfmm_a_p2m", "bbfmm_a_m2m", "bbfmm_a_l2l", "bbfmm_a_m2l",
                          "bbfmm_a_p2l", "bbfmm_a_m2p", "bbfmm_a_l2p"};
  cl_kernel *dst[7] = {&a->k_p2m, &a->k_m2m, &a->k_l2l, &a->k_m2l, &a->k_p2l, &a->k_m2p, &a->k_l2p};
  return fmmcl_create_kernels(ctx, s->program, "bbfmm/bbfmm.cl", 7, names, dst);
}

fmmcl_status fmmcl_bbfmm_adaptive_create(fmmcl_plan plan, fmmcl_bbfmm_state *s, const double *sources,
                                         const double *targets) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_bbfmm_adaptive *a = calloc(1, sizeof *a);
  if (!a) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  s->ad = a;
  size_t q = (size_t)(plan->opt.leaf_size > 0 ? plan->opt.leaf_size : fmmcl_bbfmm_default_leaf(s->n3));
  fmmcl_status st =
      fmmcl_tree3d_build(plan->n_sources, sources, plan->n_targets,
                         plan->targets_are_sources ? NULL : targets, q, FMMCL_BBFMM_MAX_DEPTH, &a->tree);
  if (st) return fmmcl_fail(ctx, st, "adaptive bbFMM tree: %s", fmmcl_last_error(NULL));
  st = fmmcl_tree3d_fmm_lists_build(a->tree, &a->lists);
  if (st) return fmmcl_fail(ctx, st, "adaptive bbFMM lists: %s", fmmcl_last_error(NULL));
  const fmmcl_tree3d *t = a->tree;
  double half = 0.5 * t->cube.width;
  for (int d = 0; d < 3; d++) a->center[d] = t->cube.origin[d] + half;
  /* the operators of levels 2 .. deepest (fmmcl_bbfmm_operators reads these) */
  fmmcl_bbfmm_tree_free(&s->tree);
  s->tree.depth = t->n_levels - 1;
  s->tree.half = half;
  memcpy(s->tree.center, a->center, sizeof a->center);
  const fmmcl_tree3d_csr *c[4] = {&a->lists.u, &a->lists.v, &a->lists.w, &a->lists.x};
  for (int i = 0; i < 4; i++) a->entries[i] = c[i]->offsets[c[i]->n_rows];
  s->work_m2l = (double)a->entries[1];
  size_t rs = s->real_size, n3 = s->n3, nc = t->n_cells;
  st = cell_frames(ctx, a);
  if (!st) st = leaf_points(ctx, s, a);
  if (!st) st = p2p_arrays(ctx, s, a);
  if (!st) st = cell_arrays(ctx, s, a);
  if (!st) st = csr_upload(ctx, &a->lists.w, &a->wstart, &a->wsrc);
  if (!st) st = csr_upload(ctx, &a->lists.x, &a->xstart, &a->xsrc);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nc * n3 * rs, NULL, &a->w);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, nc * n3 * rs, NULL, &a->l);
  if (!st) { /* cells without sources keep zero multipoles */
    unsigned char zero = 0;
    FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, a->w, &zero, 1, 0, nc * n3 * rs, 0, NULL, NULL));
  }
  if (!st) st = create_kernels(ctx, s, a);
  return st;
}

/* After fmmcl_bbfmm_operators: the compressed M2L work space. */
fmmcl_status fmmcl_bbfmm_adaptive_finish(fmmcl_plan plan, fmmcl_bbfmm_state *s) {
  fmmcl_bbfmm_adaptive *a = s->ad;
  size_t r = 1;
  for (int l = 2; l <= s->tree.depth; l++)
    if ((size_t)s->lv[l].rank > r) r = (size_t)s->lv[l].rank;
  fmmcl_status st =
      fmmcl_buffer_new(plan->ctx, CL_MEM_READ_WRITE, r * a->tree->n_cells * s->real_size, NULL, &a->wc);
  if (!st)
    st = fmmcl_buffer_new(plan->ctx, CL_MEM_READ_WRITE, r * a->tree->n_cells * s->real_size, NULL, &a->lc);
  return st;
}

void fmmcl_bbfmm_adaptive_destroy(fmmcl_bbfmm_adaptive *a) {
  if (!a) return;
  cl_kernel *ks[7] = {&a->k_p2m, &a->k_m2m, &a->k_l2l, &a->k_m2l, &a->k_p2l, &a->k_m2p, &a->k_l2p};
  for (int i = 0; i < 7; i++) fmmcl_release(ks[i]);
  cl_mem *ms[] = {&a->src_range, &a->tgt_range, &a->geo, &a->cframe, &a->child,  &a->oct,  &a->p2m_cells,
                  &a->l2p_cells, &a->parents,   &a->eb,  &a->ea,     &a->wstart, &a->wsrc, &a->xstart,
                  &a->xsrc,      &a->w,         &a->l,   &a->wc,     &a->lc};
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) fmmcl_release(ms[i]);
  fmmcl_tree3d_fmm_lists_free(&a->lists);
  if (a->tree) fmmcl_tree3d_destroy(a->tree);
  free(a->t_first), free(a->frame);
  free(a);
}

/* ---- execution --------------------------------------------------------------- */

/* groups work-groups of local work-items, timed under phase. */
static fmmcl_status launch(fmmcl_context ctx, cl_kernel k, size_t groups, size_t local, fmmcl_event_log *log,
                           const char *phase) {
  return fmmcl_launch(ctx, k, groups * local, local, log, phase);
}

#define MEM FMMCL_ARG_MEM

static fmmcl_status upward(fmmcl_plan plan, fmmcl_bbfmm_state *s, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_bbfmm_adaptive *a = s->ad;
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, a->k_p2m, 0, MEM(s->src), MEM(a->p2m_cells), MEM(a->src_range),
                                      MEM(a->geo), MEM(s->tk), MEM(a->w));
  /* argument 2 of M2M is the level's first parent, set per launch */
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, a->k_m2m, 0, MEM(a->w), MEM(a->parents));
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, a->k_m2m, 3, MEM(a->child), MEM(a->oct), MEM(s->schild));
  if (!st) st = launch(ctx, a->k_p2m, a->n_p2m, s->n3, log, "p2m");
  /* deepest parents first: a parent needs its children's multipoles */
  for (int l = a->tree->n_levels - 1; l >= 2 && !st; l--) {
    size_t b = a->parent_begin[l], e = a->parent_begin[l + 1];
    if (b == e) continue;
    st = FMMCL_KERNEL_ARGS(ctx, a->k_m2m, 2, FMMCL_ARG_UINT(b));
    if (!st) st = launch(ctx, a->k_m2m, e - b, s->n3, log, "m2m");
  }
  return st;
}

/* M2L of level l: wc = V^T W over the level's cells, lc = 0, then per
 * transfer vector t with pairs one launch lc[B] += C_t wc[A], L += U lc. */
static fmmcl_status m2l_level(fmmcl_plan plan, fmmcl_bbfmm_state *s, int l, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_bbfmm_adaptive *a = s->ad;
  const fmmcl_tree3d *t = a->tree;
  size_t lb = t->level_begin[l], le = t->level_begin[l + 1], n3 = s->n3, rs = s->real_size;
  const size_t *tf = a->t_first + (size_t)l * (FMMCL_BBFMM_N_TRANSFER + 1);
  if (tf[FMMCL_BBFMM_N_TRANSFER] == tf[0]) return FMMCL_SUCCESS; /* no V pairs here */
  fmmcl_bbfmm_level *lv = &s->lv[l];
  cl_uint r = (cl_uint)lv->rank;
  fmmcl_status st = fmmcl_gemm(ctx, rs, 1, r, le - lb, n3, lv->v, 0, n3, a->w, lb * n3, n3, 0.0, a->wc,
                               lb * r, r, fmmcl_event_log_slot(log, "m2l"));
  if (st) return st;
  unsigned char zero = 0;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, a->lc, &zero, 1, lb * r * rs, (le - lb) * r * rs, 0, NULL,
                                        fmmcl_event_log_slot(log, "m2l")));
  cl_kernel k = a->k_m2l;
  /* arguments 4, 7 and 8 (transfer vector, its first pair, their count) per launch */
  st = FMMCL_KERNEL_ARGS(ctx, k, 0, MEM(a->wc), MEM(a->lc), FMMCL_ARG_UINT(r), MEM(lv->c));
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, k, 5, MEM(a->eb), MEM(a->ea));
  size_t batch = n3 <= 512 ? 8 : 4; /* M2L_BATCH in cl/bbfmm.cl */
  for (cl_uint ti = 0; ti < FMMCL_BBFMM_N_TRANSFER && !st; ti++) {
    cl_uint first = (cl_uint)tf[ti], count = (cl_uint)(tf[ti + 1] - tf[ti]);
    if (!count) continue;
    st = FMMCL_KERNEL_ARGS(ctx, k, 4, FMMCL_ARG_UINT(ti));
    if (!st) st = FMMCL_KERNEL_ARGS(ctx, k, 7, FMMCL_ARG_UINT(first), FMMCL_ARG_UINT(count));
    if (!st) st = launch(ctx, k, (count + batch - 1) / batch, n3, log, "m2l");
  }
  if (!st)
    st = fmmcl_gemm(ctx, rs, 0, n3, le - lb, r, lv->u, 0, n3, a->lc, lb * r, r, 1.0, a->l, lb * n3, n3,
                    fmmcl_event_log_slot(log, "m2l"));
  return st;
}

static fmmcl_status downward(fmmcl_plan plan, fmmcl_bbfmm_state *s, fmmcl_event_log *log) {
  fmmcl_context ctx = plan->ctx;
  fmmcl_bbfmm_adaptive *a = s->ad;
  const fmmcl_tree3d *t = a->tree;
  size_t nc = t->n_cells, n3 = s->n3, rs = s->real_size;
  unsigned char zero = 0;
  FMMCL_CL_TRY(ctx, clEnqueueFillBuffer(ctx->queue, a->l, &zero, 1, 0, nc * n3 * rs, 0, NULL,
                                        fmmcl_event_log_slot(log, "l2l")));
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, a->k_p2l, 0, MEM(s->src), MEM(a->src_range), MEM(a->geo),
                                      MEM(a->cframe), MEM(s->nodes), MEM(a->xstart), MEM(a->xsrc), MEM(a->l));
  /* argument 2 of L2L is the level's first parent, set per launch */
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, a->k_l2l, 0, MEM(a->l), MEM(a->parents));
  if (!st) st = FMMCL_KERNEL_ARGS(ctx, a->k_l2l, 3, MEM(a->child), MEM(a->oct), MEM(s->schild));
  if (!st && a->entries[3]) st = launch(ctx, a->k_p2l, nc, n3, log, "p2l");
  for (int l = 2; l < t->n_levels && !st; l++) {
    st = m2l_level(plan, s, l, log);
    size_t b = a->parent_begin[l], e = a->parent_begin[l + 1];
    if (st || b == e) continue;
    st = FMMCL_KERNEL_ARGS(ctx, a->k_l2l, 2, FMMCL_ARG_UINT(b));
    if (!st) st = launch(ctx, a->k_l2l, e - b, n3, log, "l2l");
  }
  if (st) return st;
  st = FMMCL_KERNEL_ARGS(ctx, a->k_l2p, 0, MEM(s->tgt), MEM(a->l2p_cells), MEM(a->tgt_range), MEM(a->geo),
                         MEM(s->tk), MEM(a->l), MEM(s->pot));
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, a->k_m2p, 0, MEM(s->tgt), MEM(a->tgt_range), MEM(a->geo), MEM(a->cframe),
                           MEM(s->nodes), MEM(a->wstart), MEM(a->wsrc), MEM(a->w), MEM(s->pot));
  if (!st) st = launch(ctx, a->k_l2p, a->n_l2p, n3, log, "l2p");
  if (!st && a->entries[2]) st = launch(ctx, a->k_m2p, nc, s->p2p_wgs, log, "m2p");
  return st;
}

fmmcl_status fmmcl_bbfmm_adaptive_phases(fmmcl_plan plan, fmmcl_bbfmm_state *s, fmmcl_event_log *log) {
  fmmcl_status st = upward(plan, s, log);
  if (!st) st = downward(plan, s, log);
  return st;
}
