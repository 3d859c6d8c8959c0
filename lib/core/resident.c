/* resident.c — the device side of fmmcl_plan_execute_buffers: a plan's
 * checking and result-splitting kernels (cl/common/resident.cl), built on
 * first use, and the reductions that check charges and results without
 * bringing them to the host. */
#include <stdlib.h>

#include "core/internal.h"
#include "core/launch.h"

#define SUM_GROUPS 64 /* partial sums read back per check: enough groups to fill a GPU's memory bus */

struct fmmcl_resident {
  cl_program program;
  cl_kernel sum, split;
  cl_mem partial, flag; /* SUM_GROUPS REALs; one int */
  size_t real_size, local;
};

static size_t real_size_of(fmmcl_plan plan) { return plan->opt.precision == FMMCL_DOUBLE ? 8 : 4; }

/* A power of two up to 256 (the kernel's scratch) and the device's limit. */
static size_t sum_local(fmmcl_context ctx) {
  size_t l = 256;
  while (l > ctx->dev.info.max_work_group_size) l /= 2;
  return l;
}

static fmmcl_status resident_kernels(fmmcl_plan plan, struct fmmcl_resident **out) {
  if (plan->resident) return *out = plan->resident, FMMCL_SUCCESS;
  fmmcl_context ctx = plan->ctx;
  struct fmmcl_resident *r = calloc(1, sizeof *r);
  if (!r) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  plan->resident = r;
  r->real_size = real_size_of(plan);
  r->local = sum_local(ctx);
  const char *file = "common/resident.cl";
  fmmcl_status st = fmmcl_program_build(
      ctx, file, r->real_size == 8 ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", &r->program, NULL);
  if (!st) st = fmmcl_create_kernel(ctx, r->program, file, "fmmcl_abs_sum_partial", &r->sum);
  if (!st) st = fmmcl_create_kernel(ctx, r->program, file, "fmmcl_split_real4", &r->split);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, SUM_GROUPS * r->real_size, NULL, &r->partial);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, sizeof(cl_int), NULL, &r->flag);
  if (!st) *out = r;
  return st;
}

/* Enqueues the partial sums of |v| and ORs bit into the flag where v has a
 * NaN or an infinity. */
static fmmcl_status enqueue_sum(fmmcl_context ctx, struct fmmcl_resident *r, cl_mem v, size_t n, int bit) {
  fmmcl_status st = FMMCL_KERNEL_ARGS(ctx, r->sum, 0, FMMCL_ARG_MEM(v), FMMCL_ARG_UINT(n),
                                      FMMCL_ARG_MEM(r->partial), FMMCL_ARG_MEM(r->flag), FMMCL_ARG_INT(bit));
  return st ? st : fmmcl_launch(ctx, r->sum, SUM_GROUPS * r->local, r->local, NULL, NULL);
}

static fmmcl_status clear_flag(fmmcl_context ctx, struct fmmcl_resident *r) {
  const cl_int zero = 0;
  FMMCL_CL_TRY(ctx,
               clEnqueueFillBuffer(ctx->queue, r->flag, &zero, sizeof zero, 0, sizeof zero, 0, NULL, NULL));
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_resident_nonfinite(fmmcl_plan plan, const cl_mem *v, const size_t *n, int count,
                                      int *bad) {
  fmmcl_context ctx = plan->ctx;
  struct fmmcl_resident *r;
  fmmcl_status st = resident_kernels(plan, &r);
  if (!st) st = clear_flag(ctx, r);
  for (int k = 0; !st && k < count; k++) st = enqueue_sum(ctx, r, v[k], n[k], 1 << k);
  if (st) return st;
  cl_int flag = 0;
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, r->flag, CL_TRUE, 0, sizeof flag, &flag, 0, NULL, NULL));
  *bad = flag;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_resident_abs_sum(fmmcl_plan plan, cl_mem v, size_t n, double *total, int *nonfinite) {
  fmmcl_context ctx = plan->ctx;
  struct fmmcl_resident *r;
  fmmcl_status st = resident_kernels(plan, &r);
  if (!st) st = clear_flag(ctx, r);
  if (!st) st = enqueue_sum(ctx, r, v, n, 1);
  if (st) return st;
  unsigned char partial[SUM_GROUPS * sizeof(double)];
  cl_int flag = 0;
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, r->partial, CL_FALSE, 0, SUM_GROUPS * r->real_size,
                                        partial, 0, NULL, NULL));
  FMMCL_CL_TRY(ctx, clEnqueueReadBuffer(ctx->queue, r->flag, CL_TRUE, 0, sizeof flag, &flag, 0, NULL, NULL));
  *total = 0;
  for (size_t g = 0; g < SUM_GROUPS; g++) *total += fmmcl_get_real(partial, r->real_size, g);
  *nonfinite = flag != 0;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_resident_split(fmmcl_plan plan, cl_mem res, size_t n, int pot_at, int grad_at, int dim,
                                  cl_mem pot, cl_mem grad) {
  fmmcl_context ctx = plan->ctx;
  struct fmmcl_resident *r;
  fmmcl_status st = resident_kernels(plan, &r);
  if (st) return st;
  /* a kernel argument may not be NULL on every runtime: the unused
   * gradient argument gets the potential's buffer, never written */
  st = FMMCL_KERNEL_ARGS(ctx, r->split, 0, FMMCL_ARG_MEM(res), FMMCL_ARG_UINT(n), FMMCL_ARG_INT(pot_at),
                         FMMCL_ARG_INT(grad_at), FMMCL_ARG_INT(dim), FMMCL_ARG_MEM(pot),
                         FMMCL_ARG_MEM(grad ? grad : pot), FMMCL_ARG_INT(grad != NULL));
  return st ? st : fmmcl_launch(ctx, r->split, fmmcl_round_up(n, r->local), r->local, NULL, NULL);
}

void fmmcl_resident_release(fmmcl_plan plan) {
  struct fmmcl_resident *r = plan->resident;
  if (!r) return;
  fmmcl_release(&r->sum);
  fmmcl_release(&r->split);
  fmmcl_release(&r->program);
  fmmcl_release(&r->partial);
  fmmcl_release(&r->flag);
  free(r);
  plan->resident = NULL;
}
