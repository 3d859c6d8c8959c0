/* plan_counts.c — fmmcl_plan_counts: how much work each phase of a plan does,
 * so that benchmarks can turn phase times into rates (GFLOP/s). */
#include <string.h>

#include "core/internal.h"
#include "plan/registry.h"

/* Every phase name any method records for its operators; counts are only
 * defined for these, so a misspelt name fails instead of reading as 0. */
static const char *const known_phases[] = {"p2p", "p2m", "m2m", "m2l", "p2l", "l2l", "l2p", "m2p"};

static int phase_known(const char *phase) {
  for (size_t i = 0; i < sizeof known_phases / sizeof known_phases[0]; i++)
    if (strcmp(phase, known_phases[i]) == 0) return 1;
  return 0;
}

/* DIRECT runs one phase, all pairs: the plan's sizes are all it needs. */
fmmcl_status fmmcl_direct_counts(fmmcl_plan plan, const char *phase, double *work) {
  *work = strcmp(phase, "p2p") == 0 ? (double)plan->n_targets * (double)plan->n_sources : 0.0;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_plan_counts(fmmcl_plan plan, const char *phase, double *work) {
  if (!plan) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_counts: plan is NULL");
  fmmcl_clear_error(plan->ctx);
  if (!phase || !work)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_counts: %s is NULL",
                      phase ? "work" : "phase");
  if (!phase_known(phase))
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "fmmcl_plan_counts: no phase named \"%s\" (p2p, p2m, m2m, m2l, p2l, l2l, l2p, m2p)",
                      phase);
  if (!plan->ops->counts)
    return fmmcl_fail(plan->ctx, FMMCL_ERROR_UNSUPPORTED,
                      "fmmcl_plan_counts: this plan's method does not report work counts");
  return plan->ops->counts(plan, phase, work);
}
