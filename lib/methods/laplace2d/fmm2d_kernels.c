/* fmm2d_kernels.c — builds the two programs of the 2D FMM (fmm2d.cl and
 * m2l2d.cl, both with -DP=<order>) and creates their kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace2d/fmm2d.h"

fmmcl_status fmmcl_fmm2d_m2l_params(fmmcl_context ctx, fmmcl_precision precision, int order,
                                    fmmcl_params *out) {
  char cls[16];
  snprintf(cls, sizeof cls, "p%d", order);
  return fmmcl_tuned_params(ctx, FMMCL_TUNED_M2L2D, precision, cls, out);
}

/* Target cells with interaction lists (the fused kernels' rows). */
static size_t v_rows(const fmmcl_quadtree2d *t) {
  size_t rows = 0;
  for (size_t c = 0; c < t->n_cells; c++) rows += t->v_begin[c + 1] > t->v_begin[c];
  return rows;
}

fmmcl_status fmmcl_fmm2d_build_kernels(fmmcl_plan plan, fmm2d_state *s) {
  fmmcl_context ctx = plan->ctx;
  const char *real = plan->opt.precision == FMMCL_DOUBLE ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1";
  char m2l_def[256], exp_opt[320], m2l_opt[400];
  fmmcl_params par;
  fmmcl_status st = fmmcl_fmm2d_m2l_params(ctx, plan->opt.precision, s->order, &par);
  if (st) return st;
  /* unset (a partial override): m2l2d.cl's own defaults; M2L_FUSED is
   * the host's choice of kernel, which the compiler never sees */
  s->m2l_wgs = (size_t)fmmcl_params_get(&par, "WGS", 128);
  s->m2l_tpw = (size_t)fmmcl_params_get(&par, "TPW", 1);
  const int fused_rule = fmmcl_params_get(&par, "M2L_FUSED", 0);
  s->m2l_fused = fused_rule != 0;
  s->m2l_share = fmmcl_params_get(&par, "M2L_SHARE_W", 0) != 0;
  const int unroll = fmmcl_params_get(&par, "UNROLL", s->order + 1);
  const size_t group = fmmcl_m2l2d_group(s->m2l_wgs, s->nrow);
  const int by_fill = fused_rule == 2;
  /* M2L_TILE=TB: the dense tile kernel over the occupied tiles, where it
   * fits (registers, local memory) and, with M2L_FUSED=2, where it computes
   * at most FMMCL_M2L2D_TILE_WASTE times the lists' translations; else it
   * is built out (its local array could exceed the device's) */
  const int tile_param = fmmcl_params_get(&par, "M2L_TILE", 0),
            split_param = fmmcl_params_get(&par, "M2L_TILE_SPLIT", 1);
  const size_t tile = (size_t)tile_param, split = (size_t)split_param;
  s->m2l_tile_split = split;
  if (tile && (s->m2l_fused || by_fill) &&
      fmmcl_m2l2d_tile_fits(tile, split, s->nrow, s->real_size, ctx->dev.info.local_mem_bytes) &&
      split * tile * tile <= ctx->dev.info.max_work_group_size) {
    cl_uint *list;
    size_t n;
    if ((st = fmmcl_m2l2d_tile_list(s->tree->levels, tile, s->tree->v_begin, &list, &n)))
      return fmmcl_fail(ctx, st, "m2l2d: listing the tiles failed");
    if (!by_fill || 27 * tile * tile * (double)n <= FMMCL_M2L2D_TILE_WASTE * (double)s->tree->n_v) {
      s->m2l_tile = tile, s->n_tiles = n, s->m2l_fused = 1;
      st =
          fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, (n ? n : 1) * sizeof *list, n ? list : NULL, &s->tile_list);
    }
    free(list);
    if (st) return st;
  }
  if (!s->m2l_tile && s->m2l_share && by_fill) {
    /* M2L_FUSED=2, shared w: the fused kernel computes all 27 offsets of
     * every cell, present or not, at about half the separate kernel's cost
     * per translation (that one is bound by its partial locals' traffic;
     * see benchmarks/README.md): fused where the lists are at least half
     * full (uniform points), separate where most are short (clustered
     * points: empty neighbours) */
    const size_t rows = v_rows(s->tree);
    s->m2l_fused = 2 * s->tree->n_v >= 27 * rows;
  }
  if (by_fill) fmmcl_params_set(&par, "M2L_FUSED", s->m2l_fused);
  if (tile && !s->m2l_tile) fmmcl_params_set(&par, "M2L_TILE", 0);
  if (s->m2l_share && !s->m2l_tile && !fmmcl_params_has(&par, "TPW")) {
    /* fused: sized to the tree; separate: the tuned M2L_SEPARATE_TPW (unset: m2l2d.cl's TPW) */
    s->m2l_tpw = s->m2l_fused ? fmmcl_m2l2d_fused_share_tpw(v_rows(s->tree), group, s->nrow,
                                                            ctx->dev.info.compute_units)
                              : (size_t)fmmcl_params_get(&par, "M2L_SEPARATE_TPW", 1);
    fmmcl_params_set(&par, "TPW", (int)s->m2l_tpw);
  }
  fmmcl_params_defines(&par, m2l_def, sizeof m2l_def);
  if (s->m2l_wgs < 1 || s->m2l_tpw < 1 || group > ctx->dev.info.max_work_group_size || unroll < 1)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "m2l2d.cl: parameters \"%s\" do not fit %s (max work-group %zu)", m2l_def,
                      ctx->dev.info.device_name, ctx->dev.info.max_work_group_size);
  const size_t local_bytes = s->m2l_tile    ? 0
                             : s->m2l_share ? fmmcl_m2l2d_share_local_bytes(s->m2l_wgs, s->m2l_tpw, s->nrow,
                                                                            s->real_size, s->m2l_fused)
                                            : fmmcl_m2l2d_local_bytes(s->m2l_wgs, s->nrow, s->real_size);
  if (local_bytes > ctx->dev.info.local_mem_bytes)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "m2l2d.cl: WGS=%zu TPW=%zu at order %d needs %zu bytes of local memory; %s has %llu",
                      s->m2l_wgs, s->m2l_tpw, s->order, local_bytes, ctx->dev.info.device_name,
                      ctx->dev.info.local_mem_bytes);
  snprintf(exp_opt, sizeof exp_opt, "%s -DP=%d", real, s->order);
  snprintf(m2l_opt, sizeof m2l_opt, "%s -DP=%d %s", real, s->order, m2l_def);
  snprintf(plan->build_options, sizeof plan->build_options, "fmm2d.cl: %s; m2l2d.cl: %s", exp_opt, m2l_opt);
  const char *exp_file = "laplace2d/fmm2d.cl", *m2l_file = "laplace2d/m2l2d.cl";
  if ((st = fmmcl_program_build(ctx, exp_file, exp_opt, &s->exp_program, NULL))) return st;
  if ((st = fmmcl_program_build(ctx, m2l_file, m2l_opt, &s->m2l_program, NULL))) return st;
  static const char *const exp_names[] = {"p2m",         "m2m", "l2l", "l2p", "p2p", "fmm2d_put_charges",
                                          "fmm2d_unsort"};
  cl_kernel *const exp_kernels[] = {&s->k_p2m, &s->k_m2m,     &s->k_l2l,   &s->k_l2p,
                                    &s->k_p2p, &s->k_charges, &s->k_unsort};
  st = fmmcl_create_kernels(ctx, s->exp_program, exp_file, 7, exp_names, exp_kernels);
  if (!st && s->m2l_tile) return fmmcl_create_kernel(ctx, s->m2l_program, m2l_file, "m2l2d_tile", &s->k_m2l);
  if (!st && s->m2l_share && s->m2l_fused)
    return fmmcl_create_kernel(ctx, s->m2l_program, m2l_file, "m2l2d_fused_share", &s->k_m2l);
  if (!st && s->m2l_share) {
    st = fmmcl_create_kernel(ctx, s->m2l_program, m2l_file, "m2l2d_share", &s->k_m2l);
    return st ? st : fmmcl_create_kernel(ctx, s->m2l_program, m2l_file, "m2l2d_reduce_idx", &s->k_reduce);
  }
  if (!st && s->m2l_fused)
    return fmmcl_create_kernel(ctx, s->m2l_program, m2l_file, "m2l2d_fused", &s->k_m2l);
  if (!st) st = fmmcl_create_kernel(ctx, s->m2l_program, m2l_file, "m2l2d", &s->k_m2l);
  if (!st) st = fmmcl_create_kernel(ctx, s->m2l_program, m2l_file, "m2l2d_reduce", &s->k_reduce);
  return st;
}
