/* fmm3d_method.c — the FMM and treecode methods of FMMCL_LAPLACE_3D: plan
 * create (host tree and lists, device tables), execute (operator phases on
 * the device), destroy. The two differ only in their lists and phases. */
#include <math.h>
#include <stdlib.h>

#include "methods/laplace3d/fmm3d.h"
#include "plan/registry.h"

static fmmcl_status create_with(fmmcl_plan plan, const double *sources, const double *targets, int treecode) {
  fmm3d_state *s = calloc(1, sizeof *s);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->impl = s;
  s->treecode = treecode;
  return fmmcl_fmm3d_setup(plan, s, sources, targets);
}

fmmcl_status fmmcl_fmm3d_create_borrowing(fmmcl_plan plan, const double *sources, const double *targets,
                                          const fmm3d_state *donor) {
  fmm3d_state *s = calloc(1, sizeof *s);
  if (!s) return fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->impl = s;
  if (donor->treecode || !donor->tree || !donor->tree->source_xyz ||
      (!donor->tree->targets_are_sources && !donor->tree->target_xyz))
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "a borrowed tree needs the donor's host points");
  s->tree = donor->tree;
  s->fmm = donor->fmm;
  s->tree_borrowed = 1;
  return fmmcl_fmm3d_setup(plan, s, sources, targets);
}

static fmmcl_status fmm_create(fmmcl_plan plan, const double *sources, const double *targets) {
  return create_with(plan, sources, targets, 0);
}

static fmmcl_status treecode_create(fmmcl_plan plan, const double *sources, const double *targets) {
  return create_with(plan, sources, targets, 1);
}

/* Both methods: the tree and lists of create are reused; only the charges
 * travel. Upward pass, then (FMM) far field through local expansions or
 * (treecode) multipoles straight to the targets, then the near field. */
static fmmcl_status fmm3d_run(fmmcl_plan plan, const double *charges, const double *dipoles,
                              double *potential, double *gradient) {
  fmm3d_state *s = plan->impl;
  /* create-time phases, reported again since execute restarts the timings */
  if (s->sort_seconds > 0) fmmcl_plan_record(plan, "sort", s->sort_seconds);
  fmmcl_plan_record(plan, "tree", s->tree_seconds);
  fmmcl_plan_record(plan, "lists", s->lists_seconds);
  fmmcl_plan_record(plan, "tables", s->tables_seconds);
  fmmcl_status st = fmmcl_fmm3d_upload_charges(plan, s, charges);
  if (!st && (s->dipoles || s->hessian)) st = fmmcl_fmm3d_upload_dipoles(plan, s, dipoles);
  if (!st)
    st = fmmcl_fmm3d_run_phases(plan, s, s->treecode ? FMMCL_FMM3D_TREECODE_PHASES : FMMCL_FMM3D_FMM_PHASES);
  if (!st) st = fmmcl_fmm3d_download(plan, s, potential, gradient);
  return st;
}

static fmmcl_status fmm3d_execute(fmmcl_plan plan, const double *charges, double *potential,
                                  double *gradient) {
  return fmm3d_run(plan, charges, NULL, potential, gradient);
}

/* fmmcl_plan_evaluate of a plan with dipoles or a Hessian: the same
 * phases, the kernels built with them (fmm3d_kernels.c); absent charges
 * are zeros, an absent potential is computed and dropped. */
static fmmcl_status fmm3d_evaluate(fmmcl_plan plan, const fmmcl_sources_data *in, fmmcl_targets_data *out) {
  fmm3d_state *s = plan->impl;
  const size_t ns = plan->n_sources, nt = plan->n_targets;
  double *zeros = in->charges ? NULL : calloc(ns ? ns : 1, sizeof *zeros);
  double *pot = out->potential ? out->potential : malloc((nt ? nt : 1) * sizeof *pot);
  fmmcl_status st = FMMCL_SUCCESS;
  if ((!in->charges && !zeros) || !pot)
    st = fmmcl_fail(plan->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (!st) st = fmm3d_run(plan, in->charges ? in->charges : zeros, in->dipoles, pot, out->gradient);
  if (!st && s->hessian && out->hessian) st = fmmcl_fmm3d_download_hessian(plan, s, out->hessian);
  free(zeros);
  if (pot != out->potential) free(pot);
  return st;
}

static void fmm3d_destroy(fmmcl_plan plan) {
  fmm3d_state *s = plan->impl;
  if (!s) return;
  fmmcl_fmm3d_release(s);
  free(s);
  plan->impl = NULL;
}

static int fmm3d_order(fmmcl_plan plan) { return ((const fmm3d_state *)plan->impl)->order; }

/* The P2P adds the offsets' low parts where the data need them
 * (compensate: double to every pair, float to its close pairs, which set
 * the estimate), else reads the rounded offsets. */
static double fmm3d_offset_rounding(fmmcl_plan plan) {
  const fmm3d_state *s = plan->impl;
  if (plan->opt.precision == FMMCL_DOUBLE) return s->compensate ? 0x1.0p-104 : 0x1.0p-53;
  return s->compensate ? 0x1.0p-48 : 0x1.0p-24;
}

double fmmcl_fmm3d_frame_size(fmmcl_plan plan, int target, size_t index) {
  const fmm3d_state *s = plan->impl;
  const fmmcl_tree3d *t = s->tree;
  size_t n = target ? t->n_targets : t->n_sources;
  const size_t *perm = target ? t->target_perm : t->source_perm;
  /* after an update in place the permutation lives on the device only */
  cl_int *dev_perm = perm ? NULL : malloc((n ? n : 1) * sizeof *dev_perm);
  if (!perm &&
      (!dev_perm || clEnqueueReadBuffer(plan->ctx->queue, target ? s->tgt_perm : s->src_perm, CL_TRUE, 0,
                                        n * sizeof *dev_perm, dev_perm, 0, NULL, NULL) != CL_SUCCESS))
    n = 0; /* the root's size below: an estimate errs large */
  /* the sorted position of the caller's point, then the leaf whose range
   * holds it: one search, for the one pair the estimate looks at */
  size_t at = n;
  for (size_t i = 0; i < n; i++)
    if (perm ? perm[i] == index : (size_t)dev_perm[i] == index) {
      at = i;
      break;
    }
  free(dev_perm);
  for (size_t g = 0; at < n && g < t->n_leaves; g++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[g]];
    const size_t lo = target ? c->tgt_begin : c->src_begin, hi = target ? c->tgt_end : c->src_end;
    if (at >= lo && at < hi) return sqrt(3.0) * c->half_width;
  }
  return sqrt(3.0) * t->cells[0].half_width; /* not reached for a valid index */
}

/* What the FMM and the treecode, with charges or with dipoles and
 * Hessians, share: one state, execution, counts and frames. */
#define FMM3D_OPS(name_, create_)                                                           \
  .name = name_, .create = create_, .execute = fmm3d_execute, .destroy = fmm3d_destroy,     \
  .counts = fmmcl_fmm3d_counts, .order = fmm3d_order, .frame_size = fmmcl_fmm3d_frame_size, \
  .offset_rounding = fmm3d_offset_rounding

const fmmcl_method_ops fmmcl_fmm3d_ops = {FMM3D_OPS("fmm3d", fmm_create), .resident = 1,
                                          .update = fmmcl_fmm3d_update,
                                          .update_buffers = fmmcl_fmm3d_update_buffers};
const fmmcl_method_ops fmmcl_treecode3d_ops = {FMM3D_OPS("treecode3d", treecode_create), .resident = 1};
/* The same methods for plans with dipoles or a Hessian: evaluate, and no
 * execution on device buffers (those carry charges only). */
const fmmcl_method_ops fmmcl_fmm3d_ext_ops = {FMM3D_OPS("fmm3d_ext", fmm_create), .evaluate = fmm3d_evaluate};
const fmmcl_method_ops fmmcl_treecode3d_ext_ops = {FMM3D_OPS("treecode3d_ext", treecode_create),
                                                   .evaluate = fmm3d_evaluate};
