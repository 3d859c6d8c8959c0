/* fmmcl_ext.h — the fmmcl command's runs of fmmcl_plan_evaluate's kernels:
 * Laplace dipoles and Hessians, Helmholtz, Stokes. */
#ifndef FMMCL_EXT_H
#define FMMCL_EXT_H

#include <stddef.h>

#include "fmmcl.h"
#include "particles_io.h"

/* What fmmcl_main.c's command line gave for such a run. */
typedef struct fmmcl_ext_args {
  const char *input, *targets, *output, *dipoles_file; /* dipoles_file: NULL: in the input's columns */
  fmmcl_io_format input_format, targets_format, output_format, dipoles_format;
  int force, quiet, has_demo;
  size_t demo, repeat, check; /* check: targets compared with the reference (SIZE_MAX: all) */
  unsigned long long seed;
} fmmcl_ext_args;

/* Nonzero when opt's sum goes through fmmcl_plan_evaluate. */
int fmmcl_ext_wanted(const fmmcl_plan_options *opt);

/* The input's columns per row for opt (coordinates, then the strengths). */
int fmmcl_ext_input_columns(const fmmcl_plan_options *opt, int dipoles_in_file);

/* Reads (or makes) the particles, plans, evaluates --repeat times, reports,
 * checks against fmmcl_reference_evaluate and writes the results; returns
 * the exit code. */
int fmmcl_ext_run(const fmmcl_ext_args *a, fmmcl_context ctx, const fmmcl_plan_options *opt);

#endif /* FMMCL_EXT_H */
