/* m2l2d_bench.c — the standalone M2L of Cruz, Layton & Barba's benchmark
 * (CPC 2011, section 4.1, Tables 2 and 3): synthetic full interaction lists
 * on a quadtree, timed transfers, row-traversal kernel and reduction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace2d/expansions2d.h"
#include "methods/laplace2d/fmm2d.h"

typedef struct {
  fmmcl_context ctx;
  size_t rs, nrow, n_cells, n_trans, n_rows;
  cl_program prog;
  cl_kernel k_m2l, k_red;
  cl_mem M, L, coef, src, w, rows, begin, Lpart;
  fmmcl_pinned hM, hL, hsrc, hw, hrows, hbegin; /* every transfer from pinned memory */
  /* shared w: per translation its offset, per row level and position */
  int *dxy, *level, *position;
  cl_mem b_src, b_w, b_aux;
  cl_mem tiles; /* m2l2d_tile: every tile of every level */
  size_t n_tiles;
  fmmcl_pinned hb_src, hb_w, hb_aux;
  size_t b_src_bytes, b_w_bytes, b_aux_bytes;
} bench;

static void release(bench *b) {
  if (b->k_m2l) clReleaseKernel(b->k_m2l);
  if (b->k_red) clReleaseKernel(b->k_red);
  if (b->prog) clReleaseProgram(b->prog);
  cl_mem m[] = {b->M,     b->L,     b->coef,  b->src, b->w,     b->rows,
                b->begin, b->Lpart, b->b_src, b->b_w, b->b_aux, b->tiles};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    if (m[i]) clReleaseMemObject(m[i]);
  free(b->dxy), free(b->level), free(b->position);
  fmmcl_pinned *p[] = {&b->hM,     &b->hL,     &b->hsrc, &b->hw,    &b->hrows,
                       &b->hbegin, &b->hb_src, &b->hb_w, &b->hb_aux};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) fmmcl_pinned_free(p[i]);
}

/* Source cell index and offset of translation j (0..26) of the cell at
 * (ix, iy) of a level of side d: the interior V list of its position in
 * its parent, wrapped periodically at the edges. */
static void list_entry(long ix, long iy, long d, int j, long *sx, long *sy, int *dx, int *dy) {
  int n = 0;
  *sx = *sy = ix, *dx = *dy = 0; /* j < 27 always matches below */
  const long x0 = (ix & 1) ? -3 : -2, y0 = (iy & 1) ? -3 : -2;
  for (long oy = y0; oy < y0 + 6; oy++)
    for (long ox = x0; ox < x0 + 6; ox++) {
      if (labs(ox) <= 1 && labs(oy) <= 1) continue;
      if (n++ == j) {
        *dx = (int)ox, *dy = (int)oy;
        *sx = ((ix + ox) % d + d) % d, *sy = ((iy + oy) % d + d) % d;
        return;
      }
    }
}

static size_t morton(long x, long y) {
  size_t r = 0;
  for (int b = 0; b < 31; b++)
    r |= (((size_t)x >> b) & 1u) << (2 * b) | (((size_t)y >> b) & 1u) << (2 * b + 1);
  return r;
}

/* Lists, tables and random multipoles on the host, in the kernels' layouts. */
static fmmcl_status make_inputs(bench *b, int p, int levels, cl_uint **src, void **w, cl_uint **rows,
                                cl_uint **begin, void **coef) {
  fmmcl_status st = fmmcl_pinned_alloc(b->ctx, b->n_trans * sizeof **src, 0, &b->hsrc);
  if (!st) st = fmmcl_pinned_alloc(b->ctx, 4 * b->n_trans * b->rs, 0, &b->hw);
  if (!st) st = fmmcl_pinned_alloc(b->ctx, b->n_rows * sizeof **rows, 0, &b->hrows);
  if (!st) st = fmmcl_pinned_alloc(b->ctx, (b->n_rows + 1) * sizeof **begin, 0, &b->hbegin);
  if (st) return st;
  *src = b->hsrc.ptr, *w = b->hw.ptr, *rows = b->hrows.ptr, *begin = b->hbegin.ptr;
  *coef = malloc(b->nrow * b->nrow * b->rs);
  b->dxy = malloc(2 * b->n_trans * sizeof *b->dxy), b->level = malloc(b->n_rows * sizeof *b->level);
  b->position = malloc(b->n_rows * sizeof *b->position);
  if (!*coef || !b->dxy || !b->level || !b->position)
    return fmmcl_fail(b->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  size_t t = 0, r = 0;
  for (int l = 2; l <= levels; l++) {
    const long d = 1L << l;
    const size_t off = fmmcl_quadtree2d_level_offset(l);
    for (size_t m = 0; m < (size_t)(d * d); m++) {
      long ix = 0, iy = 0;
      for (int bit = 0; bit < l; bit++)
        ix |= (long)((m >> (2 * bit)) & 1) << bit, iy |= (long)((m >> (2 * bit + 1)) & 1) << bit;
      b->level[r] = l, b->position[r] = (int)(m & 3);
      (*rows)[r] = (cl_uint)(off + m), (*begin)[r++] = (cl_uint)t;
      for (int j = 0; j < 27; j++, t++) {
        long sx, sy;
        int dx, dy;
        list_entry(ix, iy, d, j, &sx, &sy, &dx, &dy);
        (*src)[t] = (cl_uint)(off + morton(sx, sy));
        b->dxy[2 * t] = dx, b->dxy[2 * t + 1] = dy;
        /* as m2l2d.cl takes it: 1/w, log(|w| side); .w keeps the side's level
         * and the offset for the check (dx + 8 dy + 36, exact in float) */
        const double w2 = (double)dx * dx + (double)dy * dy;
        fmmcl_put_real(*w, b->rs, 4 * t, dx / w2), fmmcl_put_real(*w, b->rs, 4 * t + 1, -dy / w2);
        fmmcl_put_real(*w, b->rs, 4 * t + 2, 0.5 * log(w2) - (double)l * log(2.0));
        fmmcl_put_real(*w, b->rs, 4 * t + 3, 100.0 * l + (dx + 8 * dy + 36));
      }
    }
  }
  (*begin)[r] = (cl_uint)t;
  double tab[(FMMCL_EXP2D_MAX_ORDER + 1) * (FMMCL_EXP2D_MAX_ORDER + 1)];
  fmmcl_exp2d_m2l_row_table(p, tab);
  for (size_t i = 0; i < b->nrow * b->nrow; i++) fmmcl_put_real(*coef, b->rs, i, tab[i]);
  unsigned long long s = 0x2545F4914F6CDD1DULL;
  for (size_t i = 0; i < 2 * b->n_cells * b->nrow; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    fmmcl_put_real(b->hM.ptr, b->rs, i, (double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
  /* M_0 is the cell's total charge: real (the kernel's log term uses its real part) */
  for (size_t c = 0; c < b->n_cells; c++) fmmcl_put_real(b->hM.ptr, b->rs, 2 * c * b->nrow + 1, 0.0);
  return FMMCL_SUCCESS;
}

static fmmcl_status write_timed(bench *b, cl_mem m, size_t bytes, const void *host, double *sec) {
  cl_event ev;
  FMMCL_CL_TRY(b->ctx, clEnqueueWriteBuffer(b->ctx->queue, m, CL_FALSE, 0, bytes, host, 0, NULL, &ev));
  cl_int err = clWaitForEvents(1, &ev);
  *sec += fmmcl_event_seconds(ev);
  clReleaseEvent(ev);
  FMMCL_CL_TRY(b->ctx, err);
  return FMMCL_SUCCESS;
}

static fmmcl_status run_kernel(bench *b, cl_kernel k, size_t n, size_t local, double *sec) {
  size_t global = (n + local - 1) / local * local;
  cl_event ev;
  FMMCL_CL_TRY(b->ctx, clEnqueueNDRangeKernel(b->ctx->queue, k, 1, NULL, &global, &local, 0, NULL, &ev));
  cl_int err = clWaitForEvents(1, &ev);
  *sec = fmmcl_event_seconds(ev);
  clReleaseEvent(ev);
  FMMCL_CL_TRY(b->ctx, err);
  return FMMCL_SUCCESS;
}

/* Worst relative error of the device's L over a sample of target cells,
 * against the plain-C M2L on the same (rounded) inputs. */
static double check_sample(const bench *b, int p, const cl_uint *src, const void *w, const cl_uint *rows,
                           const cl_uint *begin) {
  double worst = 0;
  const size_t step = b->n_rows / 64 + 1;
  for (size_t r = 0; r < b->n_rows; r += step) {
    double complex L[FMMCL_EXP2D_MAX_ORDER + 1] = {0}, M[FMMCL_EXP2D_MAX_ORDER + 1];
    for (cl_uint t = begin[r]; t < begin[r + 1]; t++) {
      for (size_t k = 0; k < b->nrow; k++)
        M[k] = fmmcl_get_real(b->hM.ptr, b->rs, 2 * (src[t] * b->nrow + k)) +
               I * fmmcl_get_real(b->hM.ptr, b->rs, 2 * (src[t] * b->nrow + k) + 1);
      const int code = (int)fmmcl_get_real(w, b->rs, 4 * t + 3), lev = code / 100, dxy = code % 100 - 36;
      const int dy = (dxy + 36) / 8 - 4, dx = dxy - 8 * dy; /* dx, dy in -3..3 */
      const double h = ldexp(1.0, -lev), cs[2] = {dx * h, dy * h}, ct[2] = {0, 0};
      fmmcl_exp2d_m2l(p, M, cs, ct, h, L);
    }
    double num = 0, den = 0;
    for (size_t k = 0; k < b->nrow; k++) {
      const size_t i = 2 * (rows[r] * b->nrow + k);
      double complex d = fmmcl_get_real(b->hL.ptr, b->rs, i) + I * fmmcl_get_real(b->hL.ptr, b->rs, i + 1);
      num += cabs(d - L[k]) * cabs(d - L[k]), den += cabs(L[k]) * cabs(L[k]);
    }
    double e = sqrt(num / den);
    worst = e > worst ? e : worst;
  }
  return worst;
}

/* The shared-w kernels' lists (fmmcl_m2l2d_bundle) in pinned staging and
 * device buffers; the bytes each transfer moves. */
static fmmcl_status make_bundles(bench *b, int fused, size_t tpw, const cl_uint *src, const cl_uint *rows,
                                 const cl_uint *begin, size_t *n_bundles) {
  double log_side[FMMCL_QUADTREE2D_MAX_LEVELS + 1];
  for (int l = 0; l <= FMMCL_QUADTREE2D_MAX_LEVELS; l++) log_side[l] = -l * log(2.0); /* root side 1 */
  const fmmcl_m2l2d_list in = {b->n_rows, rows, begin, b->level, b->position, src, b->dxy, log_side};
  fmmcl_m2l2d_bundles bu;
  fmmcl_status st = fmmcl_m2l2d_bundle(&in, fused, tpw, b->rs, &bu);
  if (st) return fmmcl_fail(b->ctx, st, "m2l2d bench: bundling the translations failed");
  const size_t nb = bu.n_bundles, noff = fused ? 27 : 1;
  *n_bundles = nb;
  b->b_src_bytes = nb * noff * tpw * sizeof(cl_uint), b->b_w_bytes = nb * noff * 4 * b->rs;
  b->b_aux_bytes = fused ? nb * tpw * sizeof(cl_uint) : b->n_trans * sizeof(cl_uint);
  const void *from[3] = {bu.src, bu.w, fused ? (const void *)bu.rows : (const void *)bu.idx};
  const size_t bytes[3] = {b->b_src_bytes, b->b_w_bytes, b->b_aux_bytes};
  fmmcl_pinned *pin[3] = {&b->hb_src, &b->hb_w, &b->hb_aux};
  cl_mem *dev[3] = {&b->b_src, &b->b_w, &b->b_aux};
  for (int i = 0; !st && i < 3; i++) {
    st = fmmcl_pinned_alloc(b->ctx, bytes[i] ? bytes[i] : 16, 0, pin[i]);
    if (!st)
      memcpy(pin[i]->ptr, from[i], bytes[i]),
          st = fmmcl_buffer_new(b->ctx, CL_MEM_READ_WRITE, bytes[i], NULL, dev[i]);
  }
  fmmcl_m2l2d_bundles_free(&bu);
  return st;
}

static fmmcl_status bench_run(bench *b, fmmcl_precision precision, int p, int levels, size_t wgs, size_t tpw,
                              size_t unroll, int coef, int fused, int share, size_t tile, size_t split,
                              int repeats, fmmcl_m2l2d_times *out) {
  fmmcl_context ctx = b->ctx;
  char opt[400];
  if (tile) fused = 1, share = 0; /* m2l2d_tile: dense, no lists */
  if (!split) split = 1;
  fmmcl_params par;
  fmmcl_status st = fmmcl_fmm2d_m2l_params(ctx, precision, p, &par);
  if (st) return st;
  if (!wgs) wgs = (size_t)fmmcl_params_get(&par, "WGS", 128);
  /* no TPW in the parameters (the GPUs' default): the fused shared-w kernel's
   * as the driver sizes it, else the separate kernel's M2L_SEPARATE_TPW */
  if (!tpw)
    tpw = fmmcl_params_has(&par, "TPW") ? (size_t)fmmcl_params_get(&par, "TPW", 1)
          : share && fused ? fmmcl_m2l2d_fused_share_tpw(b->n_rows, fmmcl_m2l2d_group(wgs, b->nrow), b->nrow,
                                                         ctx->dev.info.compute_units)
                           : (size_t)fmmcl_params_get(&par, "M2L_SEPARATE_TPW", 1);
  if (!unroll) unroll = (size_t)fmmcl_params_get(&par, "UNROLL", p + 1);
  if (coef < 0) coef = fmmcl_params_get(&par, "M2L_COEF", 1);
  const size_t group = fmmcl_m2l2d_group(wgs, b->nrow);
  if (wgs < 1 || group > ctx->dev.info.max_work_group_size || unroll < 1 ||
      split * tile * tile > ctx->dev.info.max_work_group_size)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "WGS=%zu UNROLL=%zu TILE=%zu do not fit %s", wgs,
                      unroll, tile, ctx->dev.info.device_name);
  if (tile && !fmmcl_m2l2d_tile_fits(tile, split, b->nrow, b->rs, ctx->dev.info.local_mem_bytes))
    return fmmcl_fail(
        ctx, FMMCL_ERROR_UNSUPPORTED,
        "TILE=%zu SPLIT=%zu at p = %d: not a power of two, a split the window cannot hold, %zu bytes of local memory (%s has %llu), or double above p = 16",
        tile, split, p, fmmcl_m2l2d_tile_local_bytes(tile, b->nrow, b->rs), ctx->dev.info.device_name,
        ctx->dev.info.local_mem_bytes);
  const size_t lbytes = tile    ? 0
                        : share ? fmmcl_m2l2d_share_local_bytes(wgs, tpw, b->nrow, b->rs, fused)
                                : fmmcl_m2l2d_local_bytes(wgs, b->nrow, b->rs);
  if (tpw < 1 || lbytes > ctx->dev.info.local_mem_bytes)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "WGS=%zu TPW=%zu at p = %d needs %zu bytes of local memory; %s has %llu", wgs, tpw, p,
                      lbytes, ctx->dev.info.device_name, ctx->dev.info.local_mem_bytes);
  out->tile = tile, out->tile_split = split;
  out->wgs = wgs, out->tpw = tpw, out->unroll = unroll, out->coef = coef, out->fused = fused,
  out->share = share;
  snprintf(
      opt, sizeof opt,
      "%s -DP=%d -DWGS=%zu -DTPW=%zu -DUNROLL=%zu -DM2L_COEF=%d -DM2L_SHARE_W=%d -DM2L_TILE=%zu -DM2L_TILE_SPLIT=%zu -DM2L_PERIODIC=1",
      precision == FMMCL_DOUBLE ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", p, wgs, tpw, unroll, coef, share,
      tile, split);
  if ((st = fmmcl_program_build(ctx, "laplace2d/m2l2d.cl", opt, &b->prog, NULL))) return st;
  cl_int err;
  b->k_m2l = clCreateKernel(b->prog,
                            tile    ? "m2l2d_tile"
                            : share ? (fused ? "m2l2d_fused_share" : "m2l2d_share")
                            : fused ? "m2l2d_fused"
                                    : "m2l2d",
                            &err);
  FMMCL_CL_TRY(ctx, err);
  b->k_red = clCreateKernel(b->prog, share ? "m2l2d_reduce_idx" : "m2l2d_reduce", &err);
  FMMCL_CL_TRY(ctx, err);
  const size_t ebytes = 2 * b->n_cells * b->nrow * b->rs;
  if ((st = fmmcl_pinned_alloc(ctx, ebytes, 0, &b->hM)) || (st = fmmcl_pinned_alloc(ctx, ebytes, 0, &b->hL)))
    return st;
  cl_uint *src = NULL, *rows = NULL, *begin = NULL;
  void *w = NULL, *table = NULL;
  st = make_inputs(b, p, levels, &src, &w, &rows, &begin, &table);
  size_t nb = 0;
  if (!st && share) st = make_bundles(b, fused, tpw, src, rows, begin, &nb);
  if (!st && tile) { /* every tile (the lists are full): built once, not a per-run transfer */
    cl_uint *list;
    st = fmmcl_m2l2d_tile_list(levels, tile, NULL, &list, &b->n_tiles);
    if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, b->n_tiles * sizeof *list, list, &b->tiles);
    free(list);
  }
  out->n_bundles = nb;
  if (!st) st = fmmcl_buffer_new(b->ctx, CL_MEM_READ_WRITE, ebytes, NULL, &b->M);
  if (!st) st = fmmcl_buffer_new(b->ctx, CL_MEM_READ_WRITE, ebytes, NULL, &b->L);
  if (!st) st = fmmcl_buffer_new(b->ctx, CL_MEM_READ_WRITE, b->nrow * b->nrow * b->rs, NULL, &b->coef);
  if (!st) st = fmmcl_buffer_new(b->ctx, CL_MEM_READ_WRITE, b->n_trans * sizeof *src, NULL, &b->src);
  if (!st) st = fmmcl_buffer_new(b->ctx, CL_MEM_READ_WRITE, 4 * b->n_trans * b->rs, NULL, &b->w);
  if (!st) st = fmmcl_buffer_new(b->ctx, CL_MEM_READ_WRITE, b->n_rows * sizeof *rows, NULL, &b->rows);
  if (!st) st = fmmcl_buffer_new(b->ctx, CL_MEM_READ_WRITE, (b->n_rows + 1) * sizeof *begin, NULL, &b->begin);
  if (!st)
    st =
        fmmcl_buffer_new(b->ctx, CL_MEM_READ_WRITE,
                         fused ? 16 : 2 * (share ? nb * tpw : b->n_trans) * b->nrow * b->rs, NULL, &b->Lpart);
  const cl_uint nt = (cl_uint)b->n_trans, nr = (cl_uint)b->n_rows;
  out->m2l_s = out->reduce_s = out->h2d_s = out->d2h_s = INFINITY;
  /* the lists the kernels read: shared w, the bundles (and for the separate
   * reduction rows and begin as before); else per translation source and w */
  out->h2d_bytes = tile    ? (double)ebytes
                   : share ? (double)ebytes + b->b_src_bytes + b->b_w_bytes + b->b_aux_bytes +
                                 (fused ? 0 : b->n_rows * sizeof *rows + (b->n_rows + 1) * sizeof *begin)
                           : (double)ebytes + b->n_trans * (sizeof *src + 4 * b->rs) +
                                 b->n_rows * sizeof *rows + (b->n_rows + 1) * sizeof *begin;
  out->d2h_bytes = (double)ebytes;
  for (int rep = 0; !st && rep < repeats; rep++) {
    /* transfers: the multipoles and lists in, as a solver would each step */
    double h2d = 0, d2h = 0, km = 0, kr = 0;
    st = write_timed(b, b->M, ebytes, b->hM.ptr, &h2d);
    if (!st && share) st = write_timed(b, b->b_src, b->b_src_bytes, b->hb_src.ptr, &h2d);
    if (!st && share) st = write_timed(b, b->b_w, b->b_w_bytes, b->hb_w.ptr, &h2d);
    if (!st && share) st = write_timed(b, b->b_aux, b->b_aux_bytes, b->hb_aux.ptr, &h2d);
    if (!st && !share && !tile) st = write_timed(b, b->src, b->n_trans * sizeof *src, src, &h2d);
    if (!st && !share && !tile) st = write_timed(b, b->w, 4 * b->n_trans * b->rs, w, &h2d);
    /* rows and begin: for a reduction, the paper's or the fused one (m2l2d_fused_share has its own) */
    if (!st && !(share && fused) && !tile) st = write_timed(b, b->rows, b->n_rows * sizeof *rows, rows, &h2d);
    if (!st && !(share && fused) && !tile)
      st = write_timed(b, b->begin, (b->n_rows + 1) * sizeof *begin, begin, &h2d);
    double unused = 0;
    if (!st) st = write_timed(b, b->coef, b->nrow * b->nrow * b->rs, table, &unused);
    const cl_uint z = 0;
    if (!st && clEnqueueFillBuffer(ctx->queue, b->L, &z, sizeof z, 0, ebytes, 0, NULL, NULL) != CL_SUCCESS)
      st = fmmcl_fail(ctx, FMMCL_ERROR_OPENCL, "clEnqueueFillBuffer failed");
    const cl_uint max_len = 27, nbu = (cl_uint)nb;
    if (!st && tile) {
      /* the lists are the tile's own (periodic); root side 1: log_root 0 */
      const double zero = 0;
      const float zerof = 0;
      err = clSetKernelArg(b->k_m2l, 0, sizeof(cl_mem), &b->tiles);
      err |= b->rs == 8 ? clSetKernelArg(b->k_m2l, 1, sizeof zero, &zero)
                        : clSetKernelArg(b->k_m2l, 1, sizeof zerof, &zerof);
      err |= clSetKernelArg(b->k_m2l, 2, sizeof(cl_mem), &b->M);
      err |= clSetKernelArg(b->k_m2l, 3, sizeof(cl_mem), &b->L);
      if (err != CL_SUCCESS) st = fmmcl_fail(ctx, FMMCL_ERROR_OPENCL, "clSetKernelArg failed");
    } else if (!st && share) {
      cl_uint a = 0;
      err = clSetKernelArg(b->k_m2l, a++, sizeof nbu, &nbu);
      if (fused) err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->b_aux);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->b_src);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->b_w);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->M);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->coef);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), fused ? &b->L : &b->Lpart);
      a = 0;
      err |= clSetKernelArg(b->k_red, a++, sizeof nr, &nr);
      err |= clSetKernelArg(b->k_red, a++, sizeof(cl_mem), &b->rows);
      err |= clSetKernelArg(b->k_red, a++, sizeof(cl_mem), &b->begin);
      err |= clSetKernelArg(b->k_red, a++, sizeof(cl_mem), &b->b_aux);
      err |= clSetKernelArg(b->k_red, a++, sizeof(cl_mem), &b->Lpart);
      err |= clSetKernelArg(b->k_red, a++, sizeof(cl_mem), &b->L);
      if (err != CL_SUCCESS) st = fmmcl_fail(ctx, FMMCL_ERROR_OPENCL, "clSetKernelArg failed");
    } else if (!st && fused) {
      cl_uint a = 0;
      err = clSetKernelArg(b->k_m2l, a++, sizeof nr, &nr);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->rows);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->begin);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof max_len, &max_len);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->src);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->w);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->M);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->coef);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->L);
      if (err != CL_SUCCESS) st = fmmcl_fail(ctx, FMMCL_ERROR_OPENCL, "clSetKernelArg failed");
    } else if (!st) {
      cl_uint a = 0;
      err = clSetKernelArg(b->k_m2l, a++, sizeof nt, &nt);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->src);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->w);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->M);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->coef);
      err |= clSetKernelArg(b->k_m2l, a++, sizeof(cl_mem), &b->Lpart);
      a = 0;
      err |= clSetKernelArg(b->k_red, a++, sizeof nr, &nr);
      err |= clSetKernelArg(b->k_red, a++, sizeof(cl_mem), &b->rows);
      err |= clSetKernelArg(b->k_red, a++, sizeof(cl_mem), &b->begin);
      err |= clSetKernelArg(b->k_red, a++, sizeof(cl_mem), &b->Lpart);
      err |= clSetKernelArg(b->k_red, a++, sizeof(cl_mem), &b->L);
      if (err != CL_SUCCESS) st = fmmcl_fail(ctx, FMMCL_ERROR_OPENCL, "clSetKernelArg failed");
    }
    if (!st && tile) st = run_kernel(b, b->k_m2l, b->n_tiles * split * tile * tile, split * tile * tile, &km);
    else if (!st && share)
      st = run_kernel(b, b->k_m2l, fmmcl_m2l2d_share_global(wgs, b->nrow, nb), group, &km);
    if (!st && share && !fused) st = run_kernel(b, b->k_red, b->n_rows * b->nrow, 64, &kr);
    if (!st && !tile && !share && fused)
      st = run_kernel(b, b->k_m2l, (b->n_rows + group / b->nrow - 1) / (group / b->nrow) * group, group, &km);
    if (!st && !share && !fused)
      st = run_kernel(b, b->k_m2l, fmmcl_m2l2d_global(wgs, tpw, b->nrow, b->n_trans), group, &km);
    if (!st && !share && !fused) st = run_kernel(b, b->k_red, b->n_rows * b->nrow, 64, &kr);
    if (!st) {
      cl_event ev;
      err = clEnqueueReadBuffer(ctx->queue, b->L, CL_FALSE, 0, ebytes, b->hL.ptr, 0, NULL, &ev);
      if (err == CL_SUCCESS) err = clWaitForEvents(1, &ev), d2h = fmmcl_event_seconds(ev), clReleaseEvent(ev);
      if (err != CL_SUCCESS)
        st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "reading L: %s", fmmcl_cl_error_name(err));
    }
    if (st) break;
    out->h2d_s = fmin(out->h2d_s, h2d), out->d2h_s = fmin(out->d2h_s, d2h);
    out->m2l_s = fmin(out->m2l_s, km), out->reduce_s = fmin(out->reduce_s, kr);
  }
  if (!st) out->max_rel_err = check_sample(b, p, src, w, rows, begin);
  free(table); /* the rest is pinned staging, freed with the bench */
  return st;
}

fmmcl_status fmmcl_m2l2d_bench(fmmcl_context ctx, fmmcl_precision precision, int p, int levels, size_t wgs,
                               size_t tpw, size_t unroll, int coef, int fused, int share, size_t tile,
                               size_t tile_split, int repeats, fmmcl_m2l2d_times *out) {
  if (!ctx || !out) return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_m2l2d_bench: NULL argument");
  const int max = precision == FMMCL_DOUBLE ? FMMCL_FMM2D_MAX_ORDER_DOUBLE : FMMCL_FMM2D_MAX_ORDER_SINGLE;
  if (p < 1 || p > max || levels < 2 || levels > 11 || repeats < 1)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "m2l2d bench: p = %d (1..%d), levels = %d (2..11), repeats = %d", p, max, levels,
                      repeats);
  if (precision == FMMCL_DOUBLE && !ctx->dev.info.has_fp64)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "device %s has no double precision",
                      ctx->dev.info.device_name);
  memset(out, 0, sizeof *out);
  bench b = {.ctx = ctx, .rs = precision == FMMCL_DOUBLE ? 8 : 4, .nrow = (size_t)p + 1};
  b.n_cells = fmmcl_quadtree2d_level_offset(levels + 1);
  b.n_rows = b.n_cells - fmmcl_quadtree2d_level_offset(2);
  b.n_trans = 27 * b.n_rows;
  out->n_trans = b.n_trans, out->n_rows = b.n_rows;
  fmmcl_status st = bench_run(&b, precision, p, levels, wgs, tpw, unroll, coef, fused, share, tile,
                              tile_split, repeats, out);
  release(&b);
  return st;
}
