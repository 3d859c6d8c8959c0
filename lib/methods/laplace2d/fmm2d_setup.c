/* fmm2d_setup.c — plan creation of the 2D Laplace FMM: the order, the host
 * quadtree and lists, and the device copies of everything that stays fixed
 * between executions (sorted points, cell centres, lists, M2L translations,
 * coefficient tables). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace2d/expansions2d.h"
#include "methods/laplace2d/fmm2d.h"

/* Error model: the relative L2 error of potential and gradient, measured
 * in double (N = 4000; uniform square and five Gaussian clusters; leaves of
 * 16 and 64; charges of both signs in [-1, 1]) fall by about 0.39 per order
 * (worst: pot 7.3e-3 / grad 2.0e-2 at p = 2, 4.8e-6 / 2.8e-5 at 8, 2.3e-9 /
 * 2.0e-8 at 16, 1.6e-12 / 2.2e-11 at 24), faster than the worst V-list
 * pair's ratio sqrt 2 / (4 - sqrt 2) = 0.55 since few pairs are that bad.
 * The model keeps above every measurement with a margin of 1.5 to 20:
 *   err(p) = 0.5 * 0.4^(p+1)
 * In float, rounding sets a floor near 1e-6 (potential) that the tolerance
 * limit below respects; tests/check_fmm2d.c checks the rule. */
double fmmcl_fmm2d_predicted_error(int p) { return 0.5 * pow(0.4, p + 1); }

static double error_of(int p, const void *arg) {
  (void)arg;
  return fmmcl_fmm2d_predicted_error(p);
}

fmmcl_status fmmcl_fmm2d_choose_order(fmmcl_context ctx, const fmmcl_plan_options *opt, int *order) {
  const int max =
      opt->precision == FMMCL_SINGLE ? FMMCL_FMM2D_MAX_ORDER_SINGLE : FMMCL_FMM2D_MAX_ORDER_DOUBLE;
  return fmmcl_order_from_tolerance(ctx, opt, max, error_of, NULL, NULL, order);
}

/* uint copy of a size_t array (the device indexes with 32 bits). */
static cl_uint *to_uint(const size_t *a, size_t n) {
  cl_uint *u = malloc((n ? n : 1) * sizeof *u);
  if (u)
    for (size_t i = 0; i < n; i++) u[i] = (cl_uint)a[i];
  return u;
}

/* Tables: binom[n][k] = C(n, k) for n, k <= 2p (stride 2p + 1), and the M2L
 * row table (fmmcl_exp2d_m2l_row_table; lemma 2.4). */
static fmmcl_status upload_tables(fmmcl_context ctx, fmm2d_state *s) {
  const int p = s->order, bs = 2 * p + 1;
  const size_t nb = (size_t)bs * (size_t)bs, nc = s->nrow * s->nrow;
  void *b = calloc(nb + nc, s->real_size);
  if (!b) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (int n = 0; n < bs; n++)
    for (int k = 0; k <= n; k++)
      fmmcl_put_real(b, s->real_size, (size_t)n * bs + k, fmmcl_exp2d_binomial(n, k));
  char *c = (char *)b + nb * s->real_size;
  double t[(FMMCL_EXP2D_MAX_ORDER + 1) * (FMMCL_EXP2D_MAX_ORDER + 1)];
  fmmcl_exp2d_m2l_row_table(p, t);
  for (size_t i = 0; i < nc; i++) fmmcl_put_real(c, s->real_size, i, t[i]);
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, nb * s->real_size, b, &s->binom);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, nc * s->real_size, c, &s->coef);
  free(b);
  return st;
}

/* Cell centres (REAL2, all levels), leaf offsets of sources and targets,
 * U lists. */
static fmmcl_status upload_cells(fmmcl_context ctx, fmm2d_state *s) {
  const fmmcl_quadtree2d *t = s->tree;
  const size_t nl = (size_t)1 << (2 * t->levels);
  void *centre = malloc(2 * t->n_cells * s->real_size);
  cl_uint *leaf_src = to_uint(t->leaf_src, nl + 1), *u_begin = to_uint(t->u_begin, nl + 1);
  cl_uint *leaf_tgt = to_uint(t->leaf_tgt, nl + 1);
  cl_uint *u_leaf = to_uint(t->u_leaf, t->u_begin[nl]);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!centre || !leaf_src || !leaf_tgt || !u_begin || !u_leaf)
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (int l = 0; !st && l <= t->levels; l++) {
    const size_t off = fmmcl_quadtree2d_level_offset(l), n = (size_t)1 << (2 * l);
    for (size_t m = 0; m < n; m++) {
      double c[2];
      fmmcl_quadtree2d_cell_centre(t, l, m, c);
      fmmcl_put_real(centre, s->real_size, 2 * (off + m), c[0]);
      fmmcl_put_real(centre, s->real_size, 2 * (off + m) + 1, c[1]);
    }
  }
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, 2 * t->n_cells * s->real_size, centre, &s->centre);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, (nl + 1) * sizeof(cl_uint), leaf_src, &s->leaf_src);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, (nl + 1) * sizeof(cl_uint), leaf_tgt, &s->leaf_tgt);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, (nl + 1) * sizeof(cl_uint), u_begin, &s->u_begin);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, t->u_begin[nl] * sizeof(cl_uint), u_leaf, &s->u_leaf);
  free(centre), free(leaf_src), free(leaf_tgt), free(u_begin), free(u_leaf);
  return st;
}

/* M2L translations in V-list order (grouped by target cell; the tree
 * already left out pairs of empty cells): source cell, 1/w and log(|w|
 * side) of the offset w = (c_src - c_tgt) / side (whole numbers); rows =
 * target cells with translations and their begin offsets, for the
 * reduction. Cells without targets keep L = 0, which no target reads.
 * With -DM2L_SHARE_W=1 the device gets the bundles of fmmcl_m2l2d_bundle
 * instead of the per-translation source and w; m2l2d_tile needs no list. */
static fmmcl_status upload_translations(fmmcl_context ctx, fmm2d_state *s) {
  const fmmcl_quadtree2d *t = s->tree;
  size_t n_trans = t->n_v, nrows = 0;
  s->v_max_len = 0;
  for (size_t c = 0; c < t->n_cells; c++) nrows += t->v_begin[c + 1] > t->v_begin[c];
  s->n_trans = n_trans, s->n_vrows = nrows;
  cl_uint *src = malloc((n_trans + 1) * sizeof *src), *rows = malloc((nrows + 1) * sizeof *rows);
  cl_uint *begin = malloc((nrows + 1) * sizeof *begin);
  void *w = malloc(4 * (n_trans + 1) * s->real_size);
  /* the shared-w kernels' bundler reads offsets, levels and positions */
  int *dxy = malloc(2 * (n_trans + 1) * sizeof *dxy), *level = malloc((nrows + 1) * sizeof *level);
  int *position = malloc((nrows + 1) * sizeof *position);
  double log_side[FMMCL_QUADTREE2D_MAX_LEVELS + 1] = {0};
  fmmcl_status st = FMMCL_SUCCESS;
  if (!src || !rows || !begin || !w || !dxy || !level || !position)
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  size_t r = 0, k = 0;
  for (int l = 2; !st && l <= t->levels; l++) {
    const size_t off = fmmcl_quadtree2d_level_offset(l), n = (size_t)1 << (2 * l);
    const double h = fmmcl_quadtree2d_cell_side(t, l);
    log_side[l] = log(h);
    for (size_t m = 0; m < n; m++) {
      const size_t first = k;
      double ct[2], cs[2];
      fmmcl_quadtree2d_cell_centre(t, l, m, ct);
      for (size_t e = t->v_begin[off + m]; e < t->v_begin[off + m + 1]; e++) {
        src[k] = (cl_uint)t->v_src[e];
        fmmcl_quadtree2d_cell_centre(t, l, t->v_src[e] - off, cs);
        /* what m2l2d.cl needs of w = (c_src - c_tgt) / side: 1/w and log(|w| side) */
        const double wx = round((cs[0] - ct[0]) / h), wy = round((cs[1] - ct[1]) / h), w2 = wx * wx + wy * wy;
        fmmcl_put_real(w, s->real_size, 4 * k, wx / w2);
        fmmcl_put_real(w, s->real_size, 4 * k + 1, -wy / w2);
        fmmcl_put_real(w, s->real_size, 4 * k + 2, 0.5 * log(w2) + log(h));
        fmmcl_put_real(w, s->real_size, 4 * k + 3, 0.0);
        dxy[2 * k] = (int)wx, dxy[2 * k + 1] = (int)wy;
        k++;
      }
      if (k > first)
        level[r] = l, position[r] = (int)(m & 3), rows[r] = (cl_uint)(off + m), begin[r++] = (cl_uint)first;
      if (k - first > s->v_max_len) s->v_max_len = k - first;
    }
  }
  if (!st) begin[nrows] = (cl_uint)n_trans;
  if (!st && s->m2l_share && !s->m2l_tile) {
    /* translations bundled by offset (separate) or cells by position (fused) */
    const fmmcl_m2l2d_list in = {nrows, rows, begin, level, position, src, dxy, log_side};
    fmmcl_m2l2d_bundles b;
    fmmcl_status bs = fmmcl_m2l2d_bundle(&in, s->m2l_fused, s->m2l_tpw, s->real_size, &b);
    if (bs) st = fmmcl_fail(ctx, bs, "m2l2d: bundling the translations by offset failed");
    const size_t nb = b.n_bundles, tpw = b.tpw, noff = s->m2l_fused ? 27 : 1;
    s->n_bundles = nb;
    if (!st)
      st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, nb * noff * tpw * sizeof(cl_uint), b.src, &s->b_src);
    if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, nb * noff * 4 * s->real_size, b.w, &s->b_w);
    if (!st && s->m2l_fused)
      st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, nb * tpw * sizeof(cl_uint), b.rows, &s->b_aux);
    if (!st && !s->m2l_fused) {
      st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, n_trans * sizeof(cl_uint), b.idx, &s->b_aux);
      /* partial locals at the bundles' padded positions */
      if (!st)
        st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 2 * nb * tpw * s->nrow * s->real_size, NULL, &s->Lpart);
    }
    if (!bs) fmmcl_m2l2d_bundles_free(&b);
  }
  /* the per-translation lists only for the unshared kernels; the rows for
   * every reduction (m2l2d_fused_share carries its own) */
  if (!st && !s->m2l_share && !s->m2l_tile)
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, n_trans * sizeof(cl_uint), src, &s->trans_src);
  if (!st && !s->m2l_share && !s->m2l_tile)
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, 4 * n_trans * s->real_size, w, &s->trans_w);
  if (!st && !(s->m2l_share && s->m2l_fused) && !s->m2l_tile)
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, nrows * sizeof(cl_uint), rows, &s->v_rows);
  if (!st && !(s->m2l_share && s->m2l_fused) && !s->m2l_tile)
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, (nrows + 1) * sizeof(cl_uint), begin, &s->v_begin);
  /* the fused kernel sums each row's translations in registers instead */
  if (!st && !s->m2l_fused && !s->m2l_share)
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 2 * n_trans * s->nrow * s->real_size, NULL, &s->Lpart);
  free(src), free(rows), free(begin), free(w), free(dxy), free(level), free(position);
  return st;
}

/* Point i's offset from the centre c of its leaf, computed in double and
 * stored at element e of hi, with its lo part (what float rounding left
 * out) at element e of lo (lo NULL: not kept). */
static void put_offset(const fmm2d_state *s, const double *x, const double *c, void *hi, size_t e, void *lo,
                       size_t el) {
  for (int k = 0; k < 2; k++) {
    const double o = x[k] - c[k];
    fmmcl_put_real(hi, s->real_size, e + k, o);
    if (lo) fmmcl_put_real(lo, s->real_size, el + k, s->real_size == 4 ? o - (double)(float)o : 0.0);
  }
}

/* Sorted points relative to their leaf's centre: sources REAL4 (x, y, q,
 * 0) on the device (q put there by fmm2d_put_charges each execute) and in
 * float their lo parts REAL2, targets REAL4 (x, y, xlo, ylo), the leaf of
 * each target, the permutations that take charges in and results out in
 * the caller's order, and pinned staging for those two transfers. */
static fmmcl_status upload_points(fmmcl_context ctx, fmm2d_state *s) {
  const fmmcl_quadtree2d *t = s->tree;
  const size_t ns = t->n_sources, nt = t->n_targets, nl = (size_t)1 << (2 * t->levels);
  fmmcl_status st = fmmcl_pinned_alloc(ctx, ns * s->real_size, 0, &s->q_pin);
  if (!st) st = fmmcl_pinned_alloc(ctx, 4 * nt * s->real_size, 0, &s->out_pin);
  if (st) return st;
  const int single = s->real_size == 4;
  void *src = calloc(4 * ns, s->real_size), *tgt = calloc(4 * nt, s->real_size);
  void *src_lo = single ? calloc(2 * ns, s->real_size) : NULL;
  cl_uint *leaf = malloc(nt * sizeof *leaf), *sperm = to_uint(t->source_perm, ns),
          *tperm = to_uint(t->target_perm, nt);
  if (!src || !tgt || (single && !src_lo) || !leaf || !sperm || !tperm)
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t m = 0; !st && m < nl; m++) {
    double c[2];
    fmmcl_quadtree2d_cell_centre(t, t->levels, m, c);
    for (size_t i = t->leaf_src[m]; i < t->leaf_src[m + 1]; i++)
      put_offset(s, t->src + 2 * i, c, src, 4 * i, src_lo, 2 * i);
    for (size_t i = t->leaf_tgt[m]; i < t->leaf_tgt[m + 1]; i++) {
      leaf[i] = (cl_uint)m;
      put_offset(s, t->tgt + 2 * i, c, tgt, 4 * i, tgt, 4 * i + 2);
    }
  }
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * ns * s->real_size, src, &s->src);
  if (!st && single) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, 2 * ns * s->real_size, src_lo, &s->src_lo);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, 4 * nt * s->real_size, tgt, &s->tgt);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, nt * sizeof(cl_uint), leaf, &s->tgt_leaf);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * nt * s->real_size, NULL, &s->out);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, ns * s->real_size, NULL, &s->charges);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, ns * sizeof(cl_uint), sperm, &s->src_perm);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, nt * sizeof(cl_uint), tperm, &s->tgt_perm);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_WRITE_ONLY, 4 * nt * s->real_size, NULL, &s->out_user);
  free(src), free(src_lo), free(tgt), free(leaf), free(sperm), free(tperm);
  return st;
}

fmmcl_status fmmcl_fmm2d_setup(fmmcl_plan plan, fmm2d_state *s, const double *sources,
                               const double *targets) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  if (o->softening != 0)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "LAPLACE_2D FMM has no softening (got %g); use FMMCL_DIRECT", o->softening);
  if (o->leaf_size < 0)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "leaf size must be >= 0, got %d", o->leaf_size);
  fmmcl_status st = fmmcl_fmm2d_choose_order(ctx, o, &s->order);
  if (st) return st;
  s->nrow = (size_t)s->order + 1;
  s->real_size = o->precision == FMMCL_DOUBLE ? 8 : 4;
  size_t q = o->leaf_size > 0 ? (size_t)o->leaf_size : ctx->dev.info.is_gpu ? 128 : 64;
  const size_t n = plan->n_sources > plan->n_targets ? plan->n_sources : plan->n_targets;
  /* --leaf q given: the level with about q points per leaf on average.
   * Default: from there (q = 128 GPU, 64 CPU), deeper where crowded leaves
   * make the near field cost more than the translations a deeper level
   * adds (clustered sets): about 30 instructions per pair (a log, a
   * division) against (p+1)(10p+16) per translation (m2l2d.cl), at most 4
   * levels deeper and within a memory budget for M and L of every cell
   * (the uniform tree keeps them all). */
  const int lmin = fmmcl_quadtree2d_levels_for(n, q);
  const double budget = fmin(536870912.0, 0.125 * (double)ctx->dev.info.global_mem_bytes);
  int lmax = o->leaf_size > 0 ? lmin : lmin + 4 < 10 ? lmin + 4 : 10;
  while (lmax > lmin &&
         2.0 * (double)fmmcl_quadtree2d_level_offset(lmax + 1) * 2.0 * (double)(s->nrow * s->real_size) >
             budget)
    lmax--;
  const double p1 = (double)s->nrow;
  int levels = fmmcl_quadtree2d_levels_by_cost(plan->n_sources, sources, plan->n_targets,
                                               plan->targets_are_sources ? NULL : targets, lmin, lmax, 30.0,
                                               p1 * (10.0 * (p1 - 1) + 16.0));
  double t0 = fmmcl_wall_seconds();
  st = fmmcl_quadtree2d_build(plan->n_sources, sources, plan->n_targets,
                              plan->targets_are_sources ? NULL : targets, levels, &s->tree);
  if (st) return fmmcl_fail(ctx, st, "%s", fmmcl_last_error(NULL));
  fmmcl_plan_record(plan, "tree", fmmcl_wall_seconds() - t0);
  /* the device sees cell centres relative to the root's centre and points
   * relative to their leaf's centre */
  const fmmcl_precision prec = s->real_size == 4 ? FMMCL_SINGLE : FMMCL_DOUBLE;
  if (!(s->tree->side < 2 * fmmcl_coordinate_limit(prec, 2))) /* r^2 of two points on the root's corners */
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "coordinate differences (%g) exceed the range of %s precision%s", s->tree->side,
                      prec == FMMCL_SINGLE ? "single" : "double",
                      prec == FMMCL_SINGLE ? "; use FMMCL_DOUBLE" : "");
  if (s->tree->n_cells * s->nrow > (size_t)UINT32_MAX / 4 || s->tree->n_v * s->nrow > (size_t)UINT32_MAX / 4)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "quadtree of %d levels too large for the device",
                      levels);
  st = fmmcl_fmm2d_build_kernels(plan, s);
  if (!st) st = upload_tables(ctx, s);
  if (!st) st = upload_cells(ctx, s);
  if (!st) st = upload_translations(ctx, s);
  if (!st) st = upload_points(ctx, s);
  const size_t ne = 2 * s->tree->n_cells * s->nrow * s->real_size;
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, ne, NULL, &s->M);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, ne, NULL, &s->L);
  return st;
}

void fmmcl_fmm2d_release(fmm2d_state *s) {
  cl_kernel *k[] = {&s->k_p2m,    &s->k_m2m, &s->k_l2l,     &s->k_l2p,   &s->k_m2l,
                    &s->k_reduce, &s->k_p2p, &s->k_charges, &s->k_unsort};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) fmmcl_release(k[i]);
  fmmcl_release(&s->exp_program);
  fmmcl_release(&s->m2l_program);
  cl_mem *m[] = {&s->src,      &s->src_lo,   &s->tgt,       &s->tgt_leaf, &s->out,      &s->centre,
                 &s->M,        &s->L,        &s->binom,     &s->coef,     &s->leaf_src, &s->leaf_tgt,
                 &s->u_begin,  &s->u_leaf,   &s->trans_src, &s->trans_w,  &s->v_rows,   &s->v_begin,
                 &s->Lpart,    &s->b_src,    &s->b_w,       &s->b_aux,    &s->charges,  &s->src_perm,
                 &s->tgt_perm, &s->out_user, &s->tile_list};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) fmmcl_release(m[i]);
  fmmcl_pinned_free(&s->q_pin);
  fmmcl_pinned_free(&s->out_pin);
  fmmcl_quadtree2d_free(s->tree);
}
