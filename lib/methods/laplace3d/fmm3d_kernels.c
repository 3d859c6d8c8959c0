/* fmm3d_kernels.c — builds the two programs of the 3D FMM and treecode
 * (expansions3d.cl with -DP=<order>, fmm3d_p2p.cl: P2P and the charge and
 * result permutations) and creates their kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/fmm3d.h"
#include "tuning/tuning.h"

/* M2L stages, per entry of a batch, harmonics of order 2p and one
 * expansion; the harmonics with both signs of m (branch-free contraction)
 * when that leaves half the local memory free, else m >= 0 only. Shared
 * with the tuning space (tuning_spaces.c), which must judge alike. */
size_t fmmcl_fmm3d_m2l_entry_bytes(int order, size_t real_size, unsigned long long local_mem_bytes,
                                   int *m2l_signed) {
  const size_t p = (size_t)order, ncoef = (p + 1) * (p + 2) / 2;
  const size_t ncoef2 = (2 * p + 1) * (2 * p + 2) / 2, nshift = (2 * p + 1) * (2 * p + 1);
  const size_t signed_bytes = (nshift + ncoef) * 2 * real_size;
  *m2l_signed = signed_bytes <= local_mem_bytes / 2;
  return *m2l_signed ? signed_bytes : (ncoef2 + ncoef) * 2 * real_size;
}

/* The Stokes FMM's joint M2L's entries staged per round: as many as fit
 * in half the local memory (room for a second group per compute unit), at
 * most 8 (past that the two barriers per round are already cheap), at
 * least 1. */
size_t fmmcl_fmm3d_m2l_default_batch(unsigned long long local_mem_bytes, size_t entry_bytes) {
  size_t batch = (size_t)(local_mem_bytes / 2) / entry_bytes;
  return batch < 1 ? 1 : batch > 8 ? 8 : batch;
}

/* m2l_batched's local memory: one shift's harmonics (both signs of m when
 * m2l_signed) and the multipoles of its b targets' sources. */
size_t fmmcl_fmm3d_m2l_batched_bytes(int order, size_t real_size, int m2l_signed, int b) {
  const size_t p = (size_t)order, ncoef = (p + 1) * (p + 2) / 2;
  const size_t stage = m2l_signed ? (2 * p + 1) * (2 * p + 1) : (2 * p + 1) * (2 * p + 2) / 2;
  return (stage + (size_t)b * ncoef) * 2 * real_size;
}

/* Targets a batched M2L group takes by default: the most of 8, 4, 2, 1
 * that fit the local memory (8: the children of one parent, one per
 * octant, is how many a group's directions are shared by). */
int fmmcl_fmm3d_m2l_default_targets(int order, size_t real_size, unsigned long long local_mem_bytes) {
  int is_signed;
  fmmcl_fmm3d_m2l_entry_bytes(order, real_size, local_mem_bytes, &is_signed);
  int b = 8;
  while (b > 1 && fmmcl_fmm3d_m2l_batched_bytes(order, real_size, is_signed, b) > local_mem_bytes) b /= 2;
  return b;
}

/* An M2P group takes M2P_TARGETS x (targets an item) targets of a leaf:
 * each work-item that many targets (a coefficient read from local memory
 * serves them all; in double, registers allow one), M2P_LANES work-items
 * each target (its list split among them). Few targets a group keep small
 * leaves' work-items busy, and all of them share each staged multipole.
 * On an H100, 32 targets by 4 lanes beat 64 by 2, 128 by 1 and 32 by 8,
 * and in float 3 targets an item beat 1 and 2 (benchmarks/README.md). */
#define M2P_TARGETS 32
#define M2P_LANES 4
#define M2P_PER_ITEM(real_size) ((real_size) == 8 ? 1 : 3)

/* The P2M's slices of sources where it maps a work-item per column of the
 * expansion (expansions3d.cl P2M_COLUMNS): as many as the group has
 * columns for, their partial expansions (and the recurrence's divisors,
 * and a margin) within the device's local memory. */
static size_t p2m_slices(fmmcl_context ctx, const fmm3d_state *s) {
  const size_t cols = (size_t)s->order + 1, stride = s->ncoef | 1;
  const size_t fixed = cols * cols * s->real_size + 1024, local = (size_t)ctx->dev.info.local_mem_bytes;
  const size_t fit = local > fixed ? (local - fixed) / (stride * 2 * s->real_size) : 0;
  size_t slices = s->exp_wgs / cols;
  if (fit < slices) slices = fit;
  return slices ? slices : 1;
}

/* How the FMM's M2L runs: on GPUs in batches of target cells that share
 * their directions (m2l_batched: a shift's harmonics staged once a group,
 * not once an entry); on CPU devices per cell (m2l), which PoCL ran faster:
 * its work-items loop over the group, and the batched form's accumulators
 * cost more there than the table reads they save. FMMCL_M2L=batched or
 * cell forces either (tests, comparisons). */
static int m2l_batched_on(fmmcl_context ctx) {
  const char *force = getenv("FMMCL_M2L");
  if (force && strcmp(force, "batched") == 0) return 1;
  if (force && strcmp(force, "cell") == 0) return 0;
  return ctx->dev.info.is_gpu;
}

static fmmcl_status check_wgs(fmmcl_context ctx, const char *file, size_t wgs, size_t min) {
  if (wgs < min || wgs > ctx->dev.info.max_work_group_size)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "%s: work-group size %zu outside %zu..%zu on %s",
                      file, wgs, min, ctx->dev.info.max_work_group_size, ctx->dev.info.device_name);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_fmm3d_build_kernels(fmmcl_plan plan, fmm3d_state *s) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_precision prec = plan->opt.precision;
  const char *real = prec == FMMCL_DOUBLE ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1";
  char cls[16], exp_def[256], p2p_def[256], exp_opt[400], p2p_opt[400];
  snprintf(cls, sizeof cls, "p%d", s->order);
  fmmcl_params exp_par, p2p_par;
  fmmcl_status st = fmmcl_tuned_params(ctx, FMMCL_TUNED_FMM3D_EXPANSIONS, prec, cls, &exp_par);
  if (!st) st = fmmcl_tuned_params(ctx, FMMCL_TUNED_FMM3D_P2P, prec, "dim3", &p2p_par);
  if (st) return st;
  /* unset (a partial override): one coefficient per work-item, the group
   * NCOEF rounded up to a warp, and fmm3d_p2p.cl's own default */
  s->exp_wgs = (size_t)fmmcl_params_get(&exp_par, "WGS", (int)((s->ncoef + 31) / 32 * 32));
  s->p2p_wgs = (size_t)fmmcl_params_get(&p2p_par, "WGS", 64);
  /* fmm3d_p2p.cl takes one target per work-item with dipoles or Hessians */
  s->p2p_tpw = s->dipoles || s->hessian ? 1 : (size_t)fmmcl_params_get(&p2p_par, "TPW", 1);
  if ((st = check_wgs(ctx, "laplace3d/expansions3d.cl", s->exp_wgs, s->ncoef))) return st;
  /* the batched M2L: M2L_B target cells a group (unset: as many as fit,
   * at most 8), M2L_TPI of them a work-item (unset: all); per cell,
   * m2l_batch entries a round */
  const size_t entry_bytes =
      fmmcl_fmm3d_m2l_entry_bytes(s->order, s->real_size, ctx->dev.info.local_mem_bytes, &s->m2l_signed);
  s->m2l_batched = m2l_batched_on(ctx);
  s->m2l_batch = fmmcl_fmm3d_m2l_default_batch(ctx->dev.info.local_mem_bytes, entry_bytes);
  const int b_set = fmmcl_params_get(&exp_par, "M2L_B", 0),
            tpi_set = fmmcl_params_get(&exp_par, "M2L_TPI", 0);
  s->m2l_b = b_set > 0
                 ? b_set
                 : fmmcl_fmm3d_m2l_default_targets(s->order, s->real_size, ctx->dev.info.local_mem_bytes);
  const int tpi = tpi_set > 0 ? tpi_set : s->m2l_b;
  const size_t local_bytes =
      s->m2l_batched ? fmmcl_fmm3d_m2l_batched_bytes(s->order, s->real_size, s->m2l_signed, s->m2l_b)
                     : s->m2l_batch * entry_bytes;
  /* the treecode runs no M2L: its orders are not bound by the M2L's memory */
  if (!s->treecode &&
      (s->m2l_b < 1 || tpi < 1 || s->m2l_b % tpi || local_bytes > ctx->dev.info.local_mem_bytes))
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "order %d, M2L of %d targets a group, %d a work-item, needs %zu bytes of local memory "
                      "and M2L_B a multiple of M2L_TPI; %s has %llu",
                      s->order, s->m2l_b, tpi, local_bytes, ctx->dev.info.device_name,
                      ctx->dev.info.local_mem_bytes);
  s->m2l_wgs = (s->ncoef * (size_t)(s->m2l_b / tpi) + 31) / 32 * 32;
  if (!s->treecode && s->m2l_batched &&
      (st = check_wgs(ctx, "laplace3d/expansions3d.cl m2l_batched", s->m2l_wgs, s->ncoef)))
    return st;
  if ((st = check_wgs(ctx, "laplace3d/fmm3d_p2p.cl", s->p2p_wgs, 1))) return st;
  if (s->p2p_tpw < 1)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "laplace3d/fmm3d_p2p.cl: TPW %zu < 1", s->p2p_tpw);
  /* the treecode's work-group takes one target group: no more targets an
   * item than its groups fill */
  s->m2p_tpt = M2P_PER_ITEM(s->real_size);
  if (s->treecode) {
    const int fill = (int)((s->tc.group_size + M2P_TARGETS - 1) / M2P_TARGETS);
    s->m2p_tpt = fill < s->m2p_tpt ? fill : s->m2p_tpt;
  }
  s->m2p_span = M2P_TARGETS * (size_t)s->m2p_tpt;
  /* fewer lanes where the device's groups are narrower */
  s->m2p_wgs = M2P_TARGETS * M2P_LANES;
  while (s->m2p_wgs > ctx->dev.info.max_work_group_size && s->m2p_wgs > M2P_TARGETS) s->m2p_wgs /= 2;
  fmmcl_params_set(&exp_par, "M2L_B", s->m2l_b);
  fmmcl_params_set(&exp_par, "M2L_TPI", tpi);
  fmmcl_params_set(&exp_par, "M2L_WGS", (int)s->m2l_wgs);
  fmmcl_params_set(&exp_par, "M2L_BATCH", (int)s->m2l_batch);
  /* the treecode builds no M2L (its orders may exceed what one stages) */
  if (s->treecode) fmmcl_params_set(&exp_par, "NO_M2L", 1);
  if (s->m2l_signed) fmmcl_params_set(&exp_par, "M2L_SIGNED", 1);
  fmmcl_params_defines(&exp_par, exp_def, sizeof exp_def);
  fmmcl_params_defines(&p2p_par, p2p_def, sizeof p2p_def);
  /* dipoles and Hessians only where the plan asks: charge plans build
   * exactly the kernels they always did */
  char ext[64] = "";
  snprintf(ext, sizeof ext, "%s%s", s->dipoles ? " -DDIPOLES=1" : "", s->hessian ? " -DHESSIAN=1" : "");
  snprintf(exp_opt, sizeof exp_opt,
           "%s -DP=%d -DM2P_WGS=%zu -DM2P_SPAN=%d -DM2P_TPT=%d -DP2M_SLICES=%zu %s%s", real, s->order,
           s->m2p_wgs, M2P_TARGETS, s->m2p_tpt, p2m_slices(ctx, s), exp_def, ext);
  snprintf(p2p_opt, sizeof p2p_opt, "%s %s", real, p2p_def);
  {
    const size_t len = strlen(p2p_opt);
    snprintf(p2p_opt + len, sizeof p2p_opt - len, " -DCOMPENSATE=%d%s", s->compensate, ext);
  }
  snprintf(plan->build_options, sizeof plan->build_options, "expansions3d.cl: %s; fmm3d_p2p.cl: %s", exp_opt,
           p2p_opt);
  const char *exp_file = "laplace3d/expansions3d.cl", *p2p_file = "laplace3d/fmm3d_p2p.cl";
  if ((st = fmmcl_program_build(ctx, exp_file, exp_opt, &s->exp_program, NULL))) return st;
  if ((st = fmmcl_program_build(ctx, p2p_file, p2p_opt, &s->p2p_program, NULL))) return st;
  /* the treecode has no local expansions: only the first three */
  const char *const exp_names[] = {"p2m", "m2m", "m2p", s->m2l_batched ? "m2l_batched" : "m2l",
                                   "p2l", "l2l", "l2p"};
  cl_kernel *const exp_kernels[] = {&s->k_p2m, &s->k_m2m, &s->k_m2p, &s->k_m2l,
                                    &s->k_p2l, &s->k_l2l, &s->k_l2p};
  static const char *const p2p_names[] = {"fmm3d_p2p", "fmm3d_put_charges", "fmm3d_unsort"};
  cl_kernel *const p2p_kernels[] = {&s->k_p2p, &s->k_charges, &s->k_unsort};
  st = fmmcl_create_kernels(ctx, s->exp_program, exp_file, s->treecode ? 3 : 7, exp_names, exp_kernels);
  if (!st) st = fmmcl_create_kernels(ctx, s->p2p_program, p2p_file, 3, p2p_names, p2p_kernels);
  if (!st && s->treecode)
    st = fmmcl_create_kernel(ctx, s->exp_program, exp_file, "p2m_about", &s->k_p2m_about);
  if (!st && s->dipoles)
    st = fmmcl_create_kernel(ctx, s->p2p_program, p2p_file, "fmm3d_put_dipoles", &s->k_dipoles);
  if (!st && s->hessian)
    st = fmmcl_create_kernel(ctx, s->p2p_program, p2p_file, "fmm3d_unsort_hessian", &s->k_unsort_hessian);
  return st;
}
