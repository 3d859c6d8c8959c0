/* fmm3d_buffers.c — packs the host tree into the device layouts of
 * cl/expansions3d.cl and cl/fmm3d_p2p.cl (sorted points, per-cell tables,
 * per-level launch groups, lists) and releases them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/fmm3d.h"

/* Contents larger than this go up through the pinned stage when it fits. */
#define STAGE_MIN_BYTES 65536

fmmcl_status fmmcl_fmm3d_buffer(fmmcl_plan plan, fmm3d_state *s, cl_mem_flags flags, size_t bytes,
                                const void *host, cl_mem *buf) {
  fmmcl_context ctx = plan->ctx;
  cl_int err;
  if (bytes == 0) bytes = 16, host = NULL; /* OpenCL refuses empty buffers; never read */
  const int staged = host && bytes >= STAGE_MIN_BYTES && s->stage.ptr && bytes <= s->stage.bytes;
  const int copy = host && !staged;
  *buf = clCreateBuffer(ctx->cl, flags | (copy ? CL_MEM_COPY_HOST_PTR : 0), bytes, copy ? (void *)host : NULL,
                        &err);
  if (err == CL_SUCCESS && staged) {
    /* the stage is reused by the next table: the write must finish first */
    if (host != s->stage.ptr) memcpy(s->stage.ptr, host, bytes);
    err = clEnqueueWriteBuffer(ctx->queue, *buf, CL_TRUE, 0, bytes, s->stage.ptr, 0, NULL, NULL);
  }
  if (err != CL_SUCCESS)
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "cannot allocate %zu bytes on %s: %s", bytes,
                      ctx->dev.info.device_name, fmmcl_cl_error_name(err));
  return FMMCL_SUCCESS;
}

double fmmcl_fmm3d_cell_center(const fmmcl_tree3d_cell *c, int d) {
  /* root side 2 in units of its half-side: -1 + (anchor + 1/2) 2^(1-level),
   * at most 22 significant bits at level 21, so exact in float too */
  return ldexp(2.0 * c->anchor[d] + 1.0, -c->level) - 1.0;
}

/* (x - o) * inv - c as a double-double (hi, *lo): TwoSum, TwoProd, TwoSum,
 * exact but for the last product's 2^-106; cl/tree/tree.cl's frame_offset
 * does the same, bit for bit. */
static double frame_offset(double x, double o, double inv, double c, double *lo) {
  const double a = x - o, ab = a - x, ae = (x - (a - ab)) + (-o - ab);
  const double h = a * inv, he = fma(a, inv, -h) + ae * inv;
  const double d = h - c, db = d - h, de = ((h - (d - db)) + (-c - db)) + he;
  const double hi = d + de;
  *lo = de - (hi - d);
  return hi;
}

/* One leaf's points [lo, hi) of xyz (sorted) in the device frame, relative
 * to the leaf's centre cc, into buf as REAL4, and what rounding them to
 * REAL lost into low (REAL4): the offset is exact as a double-double, so a
 * leaf's close pairs keep their digits however far the root's centre (the
 * P2P adds the low parts). Returns whether every value is finite. */
static int pack_leaf(const fmm3d_state *s, const double *xyz, size_t lo, size_t hi, const double cc[3],
                     void *buf, void *low) {
  const double inv = 1.0 / s->unit;
  int ok = 1;
  for (size_t i = lo; i < hi; i++) {
    for (int d = 0; d < 3; d++) {
      double l = 0;
      const double v = frame_offset(xyz[3 * i + d], s->origin[d], inv, cc[d], &l);
      const double r = s->real_size == 4 ? (double)(float)v : v;
      fmmcl_put_real(buf, s->real_size, 4 * i + d, r);
      if (low) fmmcl_put_real(low, s->real_size, 4 * i + d, (v - r) + l);
      ok = ok && isfinite(r);
    }
    fmmcl_put_real(buf, s->real_size, 4 * i + 3, 0.0);
    if (low) fmmcl_put_real(low, s->real_size, 4 * i + 3, 0.0);
  }
  return ok;
}

/* Sorted points as REAL4 (x, y, z, 0) in their leaves' frames into buf
 * (targets when target, else sources), their low parts into low (may be
 * NULL); returns whether every packed value is finite (float overflows
 * where the doubles did not). */
static int pack_points(const fmm3d_state *s, int target, const double *xyz, void *buf, void *low) {
  const fmmcl_tree3d *t = s->tree;
  int ok = 1;
#pragma omp parallel for schedule(dynamic, 64) reduction(&& : ok)
  for (size_t g = 0; g < t->n_leaves; g++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[g]];
    const double cc[3] = {fmmcl_fmm3d_cell_center(c, 0), fmmcl_fmm3d_cell_center(c, 1),
                          fmmcl_fmm3d_cell_center(c, 2)};
    const int leaf_ok = target ? pack_leaf(s, xyz, c->tgt_begin, c->tgt_end, cc, buf, low)
                               : pack_leaf(s, xyz, c->src_begin, c->src_end, cc, buf, low);
    ok = ok && leaf_ok;
  }
  return ok;
}

/* One point set packed in the stage and uploaded, and its low parts
 * (lo_buf) where the P2P reads them (compensate; else lo_buf stays NULL). */
static fmmcl_status upload_point_set(fmmcl_plan plan, fmm3d_state *s, int target, size_t n, const double *xyz,
                                     cl_mem *buf, cl_mem *lo_buf) {
  void *low = malloc(4 * (n ? n : 1) * s->real_size);
  if (!low) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (!pack_points(s, target, xyz, s->stage.ptr, low)) {
    free(low);
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "coordinate differences exceed the range of single precision; use FMMCL_DOUBLE");
  }
  fmmcl_status st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_WRITE, 4 * n * s->real_size, s->stage.ptr, buf);
  if (!st && s->compensate)
    st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 4 * n * s->real_size, low, lo_buf);
  free(low);
  return st;
}

/* The leaf cell of every sorted point (targets when target, else sources)
 * as cl_int into buf, for the device packing. */
static fmmcl_status upload_point_leaves(fmmcl_plan plan, fmm3d_state *s, int target, cl_mem *buf) {
  const fmmcl_tree3d *t = s->tree;
  const size_t n = target ? t->n_targets : t->n_sources;
  cl_int *leaf = malloc((n ? n : 1) * sizeof *leaf);
  if (!leaf) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
#pragma omp parallel for schedule(dynamic, 64)
  for (size_t g = 0; g < t->n_leaves; g++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[g]];
    const size_t lo = target ? c->tgt_begin : c->src_begin, hi = target ? c->tgt_end : c->src_end;
    for (size_t i = lo; i < hi; i++) leaf[i] = t->leaves[g];
  }
  fmmcl_status st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, n * sizeof *leaf, leaf, buf);
  free(leaf);
  return st;
}

/* A permutation (sorted index -> caller's index) as cl_int in the stage. */
static fmmcl_status upload_perm(fmmcl_plan plan, fmm3d_state *s, size_t n, const size_t *perm, cl_mem *buf) {
  cl_int *p = s->stage.ptr;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++) p[i] = (cl_int)perm[i];
  return fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, n * sizeof(cl_int), p, buf);
}

/* A point set the device sort left there, packed there in the leaves'
 * frames (leaf: each sorted point's leaf) and adopted. */
static fmmcl_status adopt_point_set(fmmcl_plan plan, fmm3d_state *s, fmmcl_tree3d_device_points *p, size_t n,
                                    cl_mem leaf, cl_mem *buf, cl_mem *lo_buf, cl_mem *perm) {
  fmmcl_status st = fmmcl_tree3d_device_pack(plan->ctx, NULL, p, n, leaf, s->center, s->real_size, s->origin,
                                             1.0 / s->unit);
  if (st) return st;
  if (!p->finite)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "coordinate differences exceed the range of single precision; use FMMCL_DOUBLE");
  *buf = p->packed, *lo_buf = p->packed_lo, *perm = p->perm;
  p->packed = p->packed_lo = p->perm = NULL;
  if (!s->compensate) fmmcl_release(lo_buf); /* the P2P reads no low parts */
  return FMMCL_SUCCESS;
}

/* Needs the cell table (upload_cells) first: the device packing reads it. */
static fmmcl_status upload_points(fmmcl_plan plan, fmm3d_state *s) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_tree3d *t = s->tree;
  /* the sources' charge column is filled on the device per execute */
  fmmcl_status st = FMMCL_SUCCESS;
  if (s->dev_src.xyz) {
    cl_mem src_leaf = NULL;
    st = upload_point_leaves(plan, s, 0, &src_leaf);
    if (!st)
      st = adopt_point_set(plan, s, &s->dev_src, t->n_sources, src_leaf, &s->src, &s->src_lo, &s->src_perm);
    fmmcl_release(&src_leaf);
  } else if (!(st = upload_point_set(plan, s, 0, t->n_sources, t->source_xyz, &s->src, &s->src_lo)))
    st = upload_perm(plan, s, t->n_sources, t->source_perm, &s->src_perm);
  if (!st && t->targets_are_sources) {
    /* one buffer, the charge column ignored */
    s->tgt = s->src, s->tgt_perm = s->src_perm, s->tgt_lo = s->src_lo;
    clRetainMemObject(s->tgt), clRetainMemObject(s->tgt_perm);
    if (s->tgt_lo) clRetainMemObject(s->tgt_lo);
  } else if (!st && s->dev_tgt.xyz) {
    cl_mem tgt_leaf = NULL;
    st = upload_point_leaves(plan, s, 1, &tgt_leaf);
    if (!st)
      st = adopt_point_set(plan, s, &s->dev_tgt, t->n_targets, tgt_leaf, &s->tgt, &s->tgt_lo, &s->tgt_perm);
    fmmcl_release(&tgt_leaf);
  } else if (!st) {
    st = upload_point_set(plan, s, 1, t->n_targets, t->target_xyz, &s->tgt, &s->tgt_lo);
    if (!st) st = upload_perm(plan, s, t->n_targets, t->target_perm, &s->tgt_perm);
  }
  const size_t bytes_q = t->n_sources * s->real_size, bytes_out = 4 * t->n_targets * s->real_size;
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, bytes_q, NULL, &s->charges);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_WRITE, bytes_out, NULL, &s->out);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_WRITE_ONLY, bytes_out, NULL, &s->out_user);
  if (!st && s->dipoles) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_WRITE, 4 * bytes_q, NULL, &s->dip);
  if (!st && s->dipoles) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 3 * bytes_q, NULL, &s->dip_user);
  const size_t bytes_h = 6 * t->n_targets * s->real_size;
  if (!st && s->hessian) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_WRITE, bytes_h, NULL, &s->hess);
  if (!st && s->hessian) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_WRITE_ONLY, bytes_h, NULL, &s->hess_user);
  /* every byte of both is written before it is read: no zeroing */
  if (!st) st = fmmcl_pinned_alloc(ctx, bytes_q, 0, &s->q_pin);
  if (!st) st = fmmcl_pinned_alloc(ctx, bytes_out, 0, &s->out_pin);
  return st;
}

/* center REAL4 (x, y, z, 1/side) in the device frame, cell_src and
 * cell_tgt int2 per cell. */
static fmmcl_status upload_cells(fmmcl_plan plan, fmm3d_state *s) {
  const fmmcl_tree3d *t = s->tree;
  const size_t n = t->n_cells;
  void *center = malloc(4 * n * s->real_size);
  cl_int *src = malloc(2 * n * sizeof *src), *tgt = malloc(2 * n * sizeof *tgt);
  if (!center || !src || !tgt) {
    free(center), free(src), free(tgt);
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  fmmcl_status st = FMMCL_SUCCESS;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) {
    const fmmcl_tree3d_cell *c = &t->cells[i];
    for (int d = 0; d < 3; d++)
      fmmcl_put_real(center, s->real_size, 4 * i + d, fmmcl_fmm3d_cell_center(c, d));
    fmmcl_put_real(center, s->real_size, 4 * i + 3, ldexp(1.0, c->level - 1)); /* side 2^(1-level) */
    src[2 * i] = (cl_int)c->src_begin, src[2 * i + 1] = (cl_int)c->src_end;
    tgt[2 * i] = (cl_int)c->tgt_begin, tgt[2 * i + 1] = (cl_int)c->tgt_end;
  }
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 4 * n * s->real_size, center, &s->center);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 2 * n * sizeof *src, src, &s->cell_src);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 2 * n * sizeof *tgt, tgt, &s->cell_tgt);
  const size_t exp_bytes = n * s->ncoef * 2 * s->real_size;
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_WRITE, exp_bytes, NULL, &s->M);
  if (!st && !s->treecode) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_WRITE, exp_bytes, NULL, &s->L);
  free(center);
  free(src);
  free(tgt);
  return st;
}

/* P2M and L2P run over all leaves: leaf g's points are [begin[g], begin[g+1])
 * because the leaves' ranges tile the sorted arrays in Morton order. */
static fmmcl_status upload_leaves(fmmcl_plan plan, fmm3d_state *s) {
  const fmmcl_tree3d *t = s->tree;
  const size_t n = t->n_leaves;
  cl_int *leaves = malloc(n * sizeof *leaves);
  cl_int *sb = malloc((n + 1) * sizeof *sb), *tb = malloc((n + 1) * sizeof *tb);
  fmmcl_status st = FMMCL_SUCCESS;
  if (!leaves || !sb || !tb) st = fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  size_t src_at = 0, tgt_at = 0;
  for (size_t g = 0; !st && g < n; g++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[g]];
    if (c->src_begin != src_at || c->tgt_begin != tgt_at)
      st = fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "octree leaves do not tile the sorted points");
    leaves[g] = t->leaves[g], sb[g] = (cl_int)src_at, tb[g] = (cl_int)tgt_at;
    src_at = c->src_end, tgt_at = c->tgt_end;
  }
  if (!st && (src_at != t->n_sources || tgt_at != t->n_targets))
    st = fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "octree leaves do not cover the sorted points");
  if (!st) sb[n] = (cl_int)src_at, tb[n] = (cl_int)tgt_at;
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, n * sizeof *leaves, leaves, &s->leaves);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, (n + 1) * sizeof *sb, sb, &s->leaf_src_begin);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, (n + 1) * sizeof *tb, tb, &s->leaf_tgt_begin);
  free(leaves);
  free(sb);
  free(tb);
  return st;
}

/* M2M groups: non-leaf cells holding sources, one launch per level from the
 * deepest parents up (a parent needs its children complete). L2L groups:
 * (child, parent) for children holding targets, one launch per level down,
 * from parents at level 2: V and X lists are empty above it, so L is 0. */
static fmmcl_status upload_levels(fmmcl_plan plan, fmm3d_state *s) {
  const fmmcl_tree3d *t = s->tree;
  const size_t n = t->n_cells;
  cl_int *parents = malloc((n ? n : 1) * sizeof *parents);
  cl_int *children = malloc(2 * (n ? n : 1) * sizeof *children);
  cl_int *pairs = malloc(2 * (n ? n : 1) * sizeof *pairs);
  if (!parents || !children || !pairs) {
    free(parents), free(children), free(pairs);
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  size_t k = 0;
  fmm3d_level_groups *up = &s->m2m_levels, *down = &s->l2l_levels;
  up->n_launches = 0;
  for (int l = t->n_levels - 2; l >= 0; l--) {
    up->begin[up->n_launches++] = k;
    for (size_t i = t->level_begin[l]; i < t->level_begin[l + 1]; i++) {
      const fmmcl_tree3d_cell *c = &t->cells[i];
      if (fmmcl_tree3d_is_leaf(c) || !fmmcl_tree3d_n_src(c)) continue;
      parents[k] = (cl_int)i, children[2 * k] = c->child_begin, children[2 * k + 1] = c->n_children;
      k++;
    }
  }
  up->begin[up->n_launches] = k;
  size_t j = 0;
  down->n_launches = 0;
  for (int l = 3; !s->treecode && l < t->n_levels; l++) {
    down->begin[down->n_launches++] = j;
    for (size_t i = t->level_begin[l]; i < t->level_begin[l + 1]; i++)
      if (fmmcl_tree3d_n_tgt(&t->cells[i]))
        pairs[2 * j] = (cl_int)i, pairs[2 * j + 1] = t->cells[i].parent, j++;
  }
  down->begin[down->n_launches] = j;
  fmmcl_status st =
      fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, k * sizeof *parents, parents, &s->m2m_parents);
  if (!st)
    st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 2 * k * sizeof *children, children, &s->m2m_children);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 2 * j * sizeof *pairs, pairs, &s->l2l_pairs);
  free(parents), free(children), free(pairs);
  return st;
}

/* A host CSR list as a device list of its non-empty rows; row r's value is
 * row_value[r] (NULL: r itself, a cell). */
static fmmcl_status upload_list_rows(fmmcl_plan plan, fmm3d_state *s, const fmmcl_tree3d_csr *csr,
                                     const int32_t *row_value, fmm3d_device_list *dl) {
  size_t rows = 0;
  for (size_t r = 0; r < csr->n_rows; r++) rows += csr->offsets[r + 1] > csr->offsets[r];
  const size_t entries = csr->offsets[csr->n_rows];
  if (entries > (size_t)INT32_MAX)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "interaction list of %zu entries", entries);
  cl_int *row = malloc((rows ? rows : 1) * sizeof *row), *begin = malloc((rows + 1) * sizeof *begin);
  if (!row || !begin) {
    free(row), free(begin);
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  size_t g = 0;
  for (size_t r = 0; r < csr->n_rows; r++)
    if (csr->offsets[r + 1] > csr->offsets[r])
      row[g] = (cl_int)(row_value ? row_value[r] : (int32_t)r), begin[g++] = (cl_int)csr->offsets[r];
  begin[rows] = (cl_int)entries;
  dl->n_rows = rows;
  fmmcl_status st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, rows * sizeof *row, row, &dl->rows);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, (rows + 1) * sizeof *begin, begin, &dl->begin);
  /* int32_t entries are cl_int: no repacking */
  if (!st)
    st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, entries * sizeof(cl_int), csr->indices, &dl->entries);
  free(row), free(begin);
  return st;
}

static fmmcl_status upload_list(fmmcl_plan plan, fmm3d_state *s, const fmmcl_tree3d_csr *csr,
                                fmm3d_device_list *dl) {
  return upload_list_rows(plan, s, csr, NULL, dl);
}

/* Chunks rather than a group per leaf: a group's size no longer has to
 * match the leaves' (fmm3d_p2p.cl), only one chunk per row runs part
 * empty, and new positions change nothing here but the targets' ranges,
 * O(leaves) on the host. range: (first target, end) of each csr row. */
static fmmcl_status upload_chunks(fmmcl_plan plan, fmm3d_state *s, const size_t *range,
                                  const fmmcl_tree3d_csr *csr, cl_mem *chunks, size_t *n) {
  const size_t per = s->p2p_wgs * s->p2p_tpw;
  size_t count = 0;
  for (size_t r = 0; r < csr->n_rows; r++)
    if (csr->offsets[r + 1] > csr->offsets[r]) count += (range[2 * r + 1] - range[2 * r] + per - 1) / per;
  cl_int *chunk = malloc(4 * (count ? count : 1) * sizeof *chunk);
  if (!chunk) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  size_t k = 0, g = 0;
  for (size_t r = 0; r < csr->n_rows; r++) {
    if (csr->offsets[r + 1] == csr->offsets[r]) continue;
    for (size_t i = range[2 * r]; i < range[2 * r + 1]; i += per, k++) {
      const size_t end = i + per < range[2 * r + 1] ? i + per : range[2 * r + 1];
      chunk[4 * k] = (cl_int)g, chunk[4 * k + 1] = (cl_int)i, chunk[4 * k + 2] = (cl_int)end,
                chunk[4 * k + 3] = 0;
    }
    g++;
  }
  *n = count;
  fmmcl_status st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 4 * count * sizeof *chunk, chunk, chunks);
  free(chunk);
  return st;
}

fmmcl_status fmmcl_fmm3d_upload_p2p_chunks(fmmcl_plan plan, fmm3d_state *s, const fmmcl_tree3d_cell *cells,
                                           const fmmcl_tree3d_csr *csr, cl_mem *chunks, size_t *n) {
  size_t *range = malloc(2 * (csr->n_rows ? csr->n_rows : 1) * sizeof *range);
  if (!range) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t r = 0; r < csr->n_rows; r++)
    range[2 * r] = cells[r].tgt_begin, range[2 * r + 1] = cells[r].tgt_end;
  fmmcl_status st = upload_chunks(plan, s, range, csr, chunks, n);
  free(range);
  return st;
}

/* The P2P list as a device list of source leaves and its chunks. */
static fmmcl_status upload_p2p(fmmcl_plan plan, fmm3d_state *s, const fmmcl_tree3d_csr *csr) {
  fmmcl_status st = upload_list(plan, s, csr, &s->p2p);
  if (!st) st = fmmcl_fmm3d_upload_p2p_chunks(plan, s, s->tree->cells, csr, &s->p2p_chunks, &s->n_p2p_chunks);
  return st;
}

/* M2P's work-groups per list row: enough for the fullest row (a
 * work-group takes m2p_span targets a pass), at most 16 (the rest loop).
 * group_begin: the rows' target ranges (the treecode's groups); NULL: the
 * rows are cells. */
static void m2p_split(fmm3d_state *s, const fmmcl_tree3d_csr *csr, const size_t *group_begin) {
  size_t most = 1;
  for (size_t r = 0; r < csr->n_rows; r++)
    if (csr->offsets[r + 1] > csr->offsets[r]) {
      const size_t n =
          group_begin ? group_begin[r + 1] - group_begin[r] : fmmcl_tree3d_n_tgt(&s->tree->cells[r]);
      most = n > most ? n : most;
    }
  s->m2p_split = (most + s->m2p_span - 1) / s->m2p_span;
  if (s->m2p_split > 16) s->m2p_split = 16;
}

/* The treecode's target groups for M2P and P2P: M2P's rows are groups,
 * with their targets (int2 per group), their leaf's centre (the frame the
 * targets are in) and their sphere (for each entry's degree) in the device
 * frame; P2P's rows are each group's leaf (its frame and own-leaf guard)
 * and its chunks cut within the group. */
static fmmcl_status upload_treecode_groups(fmmcl_plan plan, fmm3d_state *s) {
  const fmmcl_tree3d_treecode_lists *L = &s->tc;
  const size_t n = L->n_groups;
  cl_int *tgt = malloc(2 * (n ? n : 1) * sizeof *tgt);
  void *frame = malloc(4 * (n ? n : 1) * s->real_size), *sphere = malloc(4 * (n ? n : 1) * s->real_size);
  size_t *range = malloc(2 * (n ? n : 1) * sizeof *range);
  if (!tgt || !frame || !sphere || !range) {
    free(tgt), free(frame), free(sphere), free(range);
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  const double inv = 1.0 / s->unit;
  for (size_t g = 0; g < n; g++) {
    const fmmcl_tree3d_cell *c = &s->tree->cells[L->group_leaf[g]];
    tgt[2 * g] = (cl_int)L->group_begin[g], tgt[2 * g + 1] = (cl_int)L->group_begin[g + 1];
    range[2 * g] = L->group_begin[g], range[2 * g + 1] = L->group_begin[g + 1];
    const double *sp = L->group_sphere + 4 * g;
    for (int d = 0; d < 3; d++) {
      fmmcl_put_real(frame, s->real_size, 4 * g + d, fmmcl_fmm3d_cell_center(c, d));
      fmmcl_put_real(sphere, s->real_size, 4 * g + d, (sp[d] - s->origin[d]) * inv);
    }
    fmmcl_put_real(frame, s->real_size, 4 * g + 3, ldexp(1.0, c->level - 1));
    fmmcl_put_real(sphere, s->real_size, 4 * g + 3, sp[3] * inv);
  }
  fmmcl_status st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 2 * n * sizeof *tgt, tgt, &s->group_tgt);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 4 * n * s->real_size, frame, &s->group_frame);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 4 * n * s->real_size, sphere, &s->group_sphere);
  if (!st) st = upload_list(plan, s, &L->far, &s->m2p);
  if (!st) st = upload_list_rows(plan, s, &L->near, L->group_leaf, &s->p2p);
  if (!st) st = upload_chunks(plan, s, range, &L->near, &s->p2p_chunks, &s->n_p2p_chunks);
  free(tgt), free(frame), free(sphere), free(range);
  m2p_split(s, &L->far, L->group_begin);
  return st;
}

/* The treecode's expansion centres in the device frame: exp_center with
 * the radius of its sources about it (M2P), exp_frame with the cell's
 * 1/side (P2M and M2M about it). */
static fmmcl_status upload_treecode_centres(fmmcl_plan plan, fmm3d_state *s) {
  const fmmcl_tree3d *t = s->tree;
  const size_t n = t->n_cells;
  void *centre = malloc(4 * (n ? n : 1) * s->real_size), *frame = malloc(4 * (n ? n : 1) * s->real_size);
  if (!centre || !frame) {
    free(centre), free(frame);
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  const double inv = 1.0 / s->unit;
  for (size_t i = 0; i < n; i++) {
    const double *sp = s->tc.sphere + 4 * i;
    for (int d = 0; d < 3; d++) {
      const double v = (sp[d] - s->origin[d]) * inv;
      fmmcl_put_real(centre, s->real_size, 4 * i + d, v), fmmcl_put_real(frame, s->real_size, 4 * i + d, v);
    }
    fmmcl_put_real(centre, s->real_size, 4 * i + 3, sp[3] * inv);
    fmmcl_put_real(frame, s->real_size, 4 * i + 3, ldexp(1.0, t->cells[i].level - 1)); /* as upload_cells */
  }
  fmmcl_status st =
      fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 4 * n * s->real_size, centre, &s->exp_center);
  if (!st) st = fmmcl_fmm3d_buffer(plan, s, CL_MEM_READ_ONLY, 4 * n * s->real_size, frame, &s->exp_frame);
  free(centre), free(frame);
  return st;
}

static size_t list_entries(const fmmcl_tree3d_csr *csr) { return csr->offsets[csr->n_rows]; }

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* The largest table that goes up through the stage, in bytes. */
static size_t stage_bytes(const fmm3d_state *s) {
  const fmmcl_tree3d *t = s->tree;
  /* points packed here (not left on the device by its sort) */
  size_t b = s->dev_src.xyz ? 0 : 4 * max_size(t->n_sources, t->n_targets) * s->real_size;
  /* each point's leaf, for the device packing */
  b = max_size(b, max_size(t->n_sources, t->n_targets) * sizeof(cl_int));
  const fmmcl_tree3d_csr *lists[] = {&s->tc.far, &s->tc.near, &s->fmm.v, &s->fmm.x, &s->fmm.w, &s->fmm.u};
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
    if (lists[i]->offsets) b = max_size(b, list_entries(lists[i]) * sizeof(cl_int));
  return s->treecode ? b : max_size(b, fmmcl_fmm3d_m2l_table_bytes(s));
}

static fmmcl_status upload_all(fmmcl_plan plan, fmm3d_state *s) {
  fmmcl_status st = upload_cells(plan, s);
  if (!st) st = upload_points(plan, s);
  if (!st) st = upload_leaves(plan, s);
  if (!st) st = upload_levels(plan, s);
  if (st) return st;
  if (s->treecode) {
    if (!st) st = upload_treecode_groups(plan, s);
    if (!st) st = upload_treecode_centres(plan, s);
    s->m2p_bound = fmmcl_fmm3d_m2p_term_bound(plan->opt.theta, s->order);
    return st;
  }
  if (!st) st = upload_list(plan, s, &s->fmm.v, &s->m2l);
  if (!st) st = fmmcl_fmm3d_upload_m2l_table(plan, s);
  if (!st) st = upload_list(plan, s, &s->fmm.x, &s->p2l);
  if (!st) st = upload_list(plan, s, &s->fmm.w, &s->m2p);
  m2p_split(s, &s->fmm.w, NULL);
  s->m2p_bound = 0;
  if (!st) st = upload_p2p(plan, s, &s->fmm.u);
  return st;
}

fmmcl_status fmmcl_fmm3d_upload_tables(fmmcl_plan plan, fmm3d_state *s) {
  const fmmcl_tree3d *t = s->tree;
  /* the device frame (fmm3d.h): the root cube's centre and half-side */
  for (int d = 0; d < 3; d++) s->origin[d] = t->cube.origin[d] + 0.5 * t->cube.width;
  s->unit = 0.5 * t->cube.width;
  /* the stage goes back to the context's pool at the end, where the next
   * plan of a similar size finds it already pinned */
  fmmcl_status st = fmmcl_pinned_alloc(plan->ctx, stage_bytes(s), 0, &s->stage);
  if (!st) st = upload_all(plan, s);
  fmmcl_pinned_free(&s->stage);
  return st;
}

void fmmcl_fmm3d_release_list(fmm3d_device_list *dl) {
  fmmcl_release(&dl->rows);
  fmmcl_release(&dl->begin);
  fmmcl_release(&dl->entries);
}

void fmmcl_fmm3d_release(fmm3d_state *s) {
  cl_kernel *k[] = {&s->k_p2m,      &s->k_m2m,    &s->k_m2l,     &s->k_p2l,
                    &s->k_l2l,      &s->k_l2p,    &s->k_m2p,     &s->k_p2p,
                    &s->k_charges,  &s->k_unsort, &s->k_dipoles, &s->k_unsort_hessian,
                    &s->k_p2m_about};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) fmmcl_release(k[i]);
  fmmcl_release(&s->exp_program);
  fmmcl_release(&s->p2p_program);
  cl_mem *m[] = {&s->src,
                 &s->tgt,
                 &s->out,
                 &s->src_perm,
                 &s->tgt_perm,
                 &s->charges,
                 &s->out_user,
                 &s->center,
                 &s->cell_src,
                 &s->cell_tgt,
                 &s->M,
                 &s->L,
                 &s->leaves,
                 &s->leaf_src_begin,
                 &s->leaf_tgt_begin,
                 &s->m2m_parents,
                 &s->m2m_children,
                 &s->l2l_pairs,
                 &s->p2p_chunks,
                 &s->dip,
                 &s->dip_user,
                 &s->hess,
                 &s->hess_user,
                 &s->exp_center,
                 &s->exp_frame,
                 &s->group_tgt,
                 &s->group_frame,
                 &s->group_sphere};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) fmmcl_release(m[i]);
  cl_mem *kept[] = {&s->dev_src.xyz, &s->dev_src.packed, &s->dev_src.packed_lo, &s->dev_src.perm,
                    &s->dev_tgt.xyz, &s->dev_tgt.packed, &s->dev_tgt.packed_lo, &s->dev_tgt.perm,
                    &s->src_lo,      &s->tgt_lo};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) fmmcl_release(kept[i]);
  fmmcl_tree3d_device_kit_close(s->update_kit);
  s->update_kit = NULL;
  fmmcl_fmm3d_release_list(&s->m2l);
  fmmcl_fmm3d_release_m2l_table(s);
  fmmcl_fmm3d_release_list(&s->p2l);
  fmmcl_fmm3d_release_list(&s->m2p);
  fmmcl_fmm3d_release_list(&s->p2p);
  fmmcl_tree3d_treecode_lists_free(&s->tc);
  if (!s->tree_borrowed) {
    fmmcl_tree3d_fmm_lists_free(&s->fmm);
    fmmcl_tree3d_destroy(s->tree);
  }
  fmmcl_pinned_free(&s->q_pin);
  fmmcl_pinned_free(&s->out_pin);
}
