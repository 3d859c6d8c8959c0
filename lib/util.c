/* util.c — small shared helpers: clocks, event timing, finiteness checks,
 * phase-time bookkeeping on plans. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "internal.h"

double fmmcl_wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double fmmcl_event_seconds(cl_event ev) {
  cl_ulong t0 = 0, t1 = 0;
  if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) != CL_SUCCESS ||
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
    return 0.0;
  return 1e-9 * (double)(t1 - t0);
}

int fmmcl_all_finite(const double *v, size_t n) {
  int ok = 1;
  /* no early exit: a reduction vectorises and the array is read anyway */
#pragma omp parallel for reduction(&& : ok) if (n > 100000)
  for (size_t i = 0; i < n; i++) ok = ok && isfinite(v[i]);
  return ok;
}

void fmmcl_plan_record(fmmcl_plan plan, const char *name, double seconds) {
  for (size_t i = 0; i < plan->n_phases; i++)
    if (strcmp(plan->phases[i].name, name) == 0) {
      plan->phases[i].seconds += seconds;
      return;
    }
  if (plan->n_phases < FMMCL_MAX_PHASES)
    plan->phases[plan->n_phases++] = (fmmcl_phase_time){name, seconds};
}
