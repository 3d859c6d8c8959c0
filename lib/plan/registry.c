/* registry.c — the method registry: which ops table runs a plan's (kernel,
 * method), and the public names of the methods. */
#include <stdio.h>
#include <string.h>

#include "plan/registry.h"

/* DIRECT with a bbFMM function named sums that function (bbfmm_direct.c). */
static int bbfmm_kernel_set(const fmmcl_plan_options *o) {
  return o->bbfmm_kernel != FMMCL_BBFMM_PLAN_KERNEL;
}

/* LAPLACE_3D with what only fmmcl_plan_evaluate carries. */
static int laplace_ext(const fmmcl_plan_options *o) { return o->dipoles || o->hessian; }

static const fmmcl_method_row rows[] = {
    {FMMCL_HELMHOLTZ_3D, FMMCL_DIRECT, &fmmcl_direct_ext_ops, NULL},
    {FMMCL_HELMHOLTZ_3D, FMMCL_FMM, &fmmcl_helmholtz3d_fmm_ops, NULL},
    {FMMCL_STOKES_3D, FMMCL_DIRECT, &fmmcl_direct_ext_ops, NULL},
    {FMMCL_STOKES_3D, FMMCL_FMM, &fmmcl_stokes3d_fmm_ops, NULL},
    {FMMCL_LAPLACE_3D, FMMCL_DIRECT, &fmmcl_direct_ext_ops, laplace_ext},
    {FMMCL_ANY_KERNEL, FMMCL_DIRECT, &fmmcl_bbfmm_direct_ops, bbfmm_kernel_set},
    {FMMCL_ANY_KERNEL, FMMCL_DIRECT, &fmmcl_direct_ops, NULL},
    {FMMCL_ANY_KERNEL, FMMCL_BBFMM, &fmmcl_bbfmm_ops, NULL}, /* checks its kernel itself */
    {FMMCL_LAPLACE_3D, FMMCL_FMM, &fmmcl_fmm3d_ext_ops, laplace_ext},
    {FMMCL_LAPLACE_3D, FMMCL_TREECODE, &fmmcl_treecode3d_ext_ops, laplace_ext},
    {FMMCL_LAPLACE_3D, FMMCL_FMM, &fmmcl_fmm3d_ops, NULL},
    {FMMCL_LAPLACE_3D, FMMCL_TREECODE, &fmmcl_treecode3d_ops, NULL},
    {FMMCL_LAPLACE_2D, FMMCL_FMM, &fmmcl_fmm2d_ops, NULL},
    {FMMCL_GAUSSIAN, FMMCL_FGT, &fmmcl_fgt_ops, NULL},
    {FMMCL_GAUSSIAN, FMMCL_CUTOFF, &fmmcl_cutoff_ops, NULL},
};

#define N_ROWS (sizeof rows / sizeof rows[0])

const fmmcl_method_row *fmmcl_method_rows(size_t *count) {
  *count = N_ROWS;
  return rows;
}

/* In fmmcl_method order. */
static const char *const method_names[] = {"direct", "treecode", "fmm", "fgt", "bbfmm", "auto", "cutoff"};

#define N_METHODS (sizeof method_names / sizeof method_names[0])

const char *fmmcl_method_name(fmmcl_method method) {
  return (unsigned)method < N_METHODS ? method_names[method] : "unknown";
}

fmmcl_status fmmcl_method_parse(const char *name, fmmcl_method *out) {
  int i;
  fmmcl_status st =
      fmmcl_name_parse("fmmcl_method_parse", "method", method_names, N_METHODS, name, out ? &i : NULL);
  if (!st) *out = (fmmcl_method)i;
  return st;
}

/* A kernel as messages spell it ("LAPLACE_3D", as the options' checks do). */
static const char *kernel_title(fmmcl_kernel kernel) {
  const fmmcl_kernel_desc *k = fmmcl_kernel_describe(kernel);
  return k ? k->title : "unknown";
}

/* The failure for a method no row runs with o's kernel: the kernels it does
 * run, so the caller knows what would work. */
static fmmcl_status no_row(fmmcl_context ctx, const fmmcl_plan_options *o) {
  const char *names[N_ROWS];
  size_t n = 0;
  for (size_t i = 0; i < N_ROWS; i++)
    if (rows[i].method == o->method && rows[i].kernel != FMMCL_ANY_KERNEL)
      names[n++] = kernel_title(rows[i].kernel);
  const char *method = fmmcl_method_name(o->method), *kernel = kernel_title(o->kernel);
  if (n == 0)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "method %s is not available for the %s kernel", method,
                      kernel);
  char list[256];
  return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "method %s is not available for the %s kernel (it sums %s)",
                    method, kernel, fmmcl_name_list(names, n, list, sizeof list));
}

fmmcl_status fmmcl_method_lookup(fmmcl_context ctx, const fmmcl_plan_options *o,
                                 const fmmcl_method_ops **ops) {
  *ops = NULL;
  if ((unsigned)o->method >= N_METHODS)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "unknown method %d", (int)o->method);
  /* a plan of dipoles, Hessians or a complex or vector kernel runs only
   * where the ops can evaluate it */
  const int need = fmmcl_options_need_evaluate(o);
  int charges_only = 0;
  for (size_t i = 0; i < N_ROWS; i++) {
    const fmmcl_method_row *r = &rows[i];
    if (r->method != o->method || (r->kernel != FMMCL_ANY_KERNEL && r->kernel != o->kernel)) continue;
    if (r->applicable && !r->applicable(o)) continue;
    if (need && !r->ops->evaluate) {
      charges_only = 1;
      continue;
    }
    *ops = r->ops;
    return FMMCL_SUCCESS;
  }
  if (charges_only) {
    const char *k = kernel_title(o->kernel);
    if (o->dipoles || o->hessian)
      return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                        "method %s does not sum %s %s yet; methods direct, fmm and treecode do",
                        fmmcl_method_name(o->method), k, o->dipoles ? "dipoles" : "Hessians");
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "method %s does not sum the %s kernel yet; method direct does",
                      fmmcl_method_name(o->method), k);
  }
  return no_row(ctx, o);
}

int fmmcl_plan_runs(fmmcl_plan plan, const char *ops_name) {
  return plan && plan->ops && strcmp(plan->ops->name, ops_name) == 0;
}

int fmmcl_name_index(const char *const *names, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return (int)i;
  return -1;
}

const char *fmmcl_name_list(const char *const *names, size_t n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && used < len; i++) {
    int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
  return buf;
}

fmmcl_status fmmcl_name_parse(const char *fn, const char *what, const char *const *names, size_t n,
                              const char *name, int *index) {
  fmmcl_clear_error(NULL);
  if (!name || !index) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "%s: NULL argument", fn);
  int i = fmmcl_name_index(names, n, name);
  if (i < 0) {
    char list[256];
    return fmmcl_fail(NULL, FMMCL_ERROR_INVALID_ARGUMENT, "%s: no %s named \"%s\" (%s)", fn, what, name,
                      fmmcl_name_list(names, n, list, sizeof list));
  }
  *index = i;
  return FMMCL_SUCCESS;
}
