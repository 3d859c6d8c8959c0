/* bbfmm_kernel.c — the black-box FMM's kernel functions on the host, and
 * which function a plan's options name. */
#include <math.h>

#include "methods/bbfmm/bbfmm.h"
#include "core/internal.h"

fmmcl_status fmmcl_bbfmm_kfun_from_options(fmmcl_context ctx, const fmmcl_plan_options *o,
                                           fmmcl_bbfmm_kfun *k) {
  k->kind = o->bbfmm_kernel;
  k->param = o->kernel_param;
  k->expression = NULL;
  switch (o->bbfmm_kernel) {
    case FMMCL_BBFMM_PLAN_KERNEL:
      if (o->kernel == FMMCL_LAPLACE_3D) {
        k->kind = o->softening > 0 ? FMMCL_BBFMM_INV_MULTIQUADRIC : FMMCL_BBFMM_LAPLACE;
        k->param = o->softening;
      } else if (o->kernel == FMMCL_GAUSSIAN && o->dim == 3) {
        k->kind = FMMCL_BBFMM_GAUSSIAN;
        k->param = o->sigma;
      } else if (o->kernel == FMMCL_YUKAWA_3D) {
        /* the bbFMM's Yukawa has no softened form */
        if (o->softening > 0)
          return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "BBFMM sums YUKAWA_3D without softening, got %g",
                            o->softening);
        k->kind = FMMCL_BBFMM_YUKAWA; /* kernel_param checked with the options */
      } else {
        return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                          "BBFMM needs a 3D kernel (LAPLACE_3D, YUKAWA_3D or GAUSSIAN with dim 3)");
      }
      return FMMCL_SUCCESS;
    case FMMCL_BBFMM_GAUSSIAN: k->param = o->sigma; return FMMCL_SUCCESS;
    case FMMCL_BBFMM_LAPLACE:
    case FMMCL_BBFMM_INV_R2: return FMMCL_SUCCESS;
    case FMMCL_BBFMM_MULTIQUADRIC:
    case FMMCL_BBFMM_INV_MULTIQUADRIC:
    case FMMCL_BBFMM_YUKAWA:
      if (!(o->kernel_param >= 0) || !isfinite(o->kernel_param))
        return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "kernel_param must be finite and >= 0, got %g",
                          o->kernel_param);
      return FMMCL_SUCCESS;
    case FMMCL_BBFMM_USER:
      if (!o->kernel_expression || !*o->kernel_expression)
        return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "a USER bbFMM kernel needs kernel_expression");
      k->expression = o->kernel_expression;
      return FMMCL_SUCCESS;
    default:
      return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "unknown bbfmm_kernel %d", (int)o->bbfmm_kernel);
  }
}

int fmmcl_bbfmm_kfun_singular(const fmmcl_bbfmm_kfun *k) {
  return k->kind == FMMCL_BBFMM_LAPLACE || k->kind == FMMCL_BBFMM_INV_R2 || k->kind == FMMCL_BBFMM_YUKAWA ||
         (k->kind == FMMCL_BBFMM_INV_MULTIQUADRIC && k->param == 0);
}

double fmmcl_bbfmm_kfun_eval(const fmmcl_bbfmm_kfun *k, double dx, double dy, double dz) {
  double r2 = dx * dx + dy * dy + dz * dz, r = sqrt(r2), c = k->param;
  if (r2 == 0 && fmmcl_bbfmm_kfun_singular(k)) return 0;
  switch (k->kind) {
    case FMMCL_BBFMM_LAPLACE: return 1 / r;
    case FMMCL_BBFMM_INV_R2: return 1 / r2;
    case FMMCL_BBFMM_GAUSSIAN: return exp(-r2 / (2 * c * c));
    case FMMCL_BBFMM_MULTIQUADRIC: return sqrt(r2 + c * c);
    case FMMCL_BBFMM_INV_MULTIQUADRIC: return 1 / sqrt(r2 + c * c);
    case FMMCL_BBFMM_YUKAWA: return exp(-c * r) / r;
    default: return NAN;
  }
}

int fmmcl_bbfmm_kfun_homogeneity(const fmmcl_bbfmm_kfun *k) {
  if (k->kind == FMMCL_BBFMM_LAPLACE || (k->kind == FMMCL_BBFMM_INV_MULTIQUADRIC && k->param == 0)) return 1;
  if (k->kind == FMMCL_BBFMM_INV_R2) return 2;
  return 0;
}
