/* kernels.c — the kernel descriptor table: one row per fmmcl_kernel, and the
 * public names of kernels and of the bbFMM's functions. */
#include <stddef.h>

#include "plan/registry.h"

/* Rows in enum order, so that a kernel's row is kernels[kernel]. */
static const fmmcl_kernel_desc kernels[] = {
    {.kernel = FMMCL_LAPLACE_3D,
     .name = "laplace3d",
     .title = "LAPLACE_3D",
     .dim_min = 3,
     .dim_max = 3,
     .default_dim = 3,
     .gradient = 1,
     .singular_at_zero = 1,
     .uses_softening = 1,
     .uses_sigma = 0,
     .p2p_kernel = "p2p_laplace3d",
     .p2p_tuned = FMMCL_TUNED_P2P_LAPLACE3D,
     .p2p_layout = FMMCL_P2P_REAL4,
     .reference = fmmcl_reference_laplace3d_at},
    {.kernel = FMMCL_GAUSSIAN,
     .name = "gaussian",
     .title = "GAUSSIAN",
     .dim_min = 1,
     .dim_max = FMMCL_MAX_DIM,
     .default_dim = 3,
     .gradient = 1,
     .singular_at_zero = 0,
     .uses_softening = 0,
     .uses_sigma = 1,
     .p2p_kernel = "p2p_gaussian",
     .p2p_tuned = FMMCL_TUNED_P2P_GAUSSIAN,
     .p2p_layout = FMMCL_P2P_SOA,
     .reference = fmmcl_reference_gaussian_at},
    {.kernel = FMMCL_LAPLACE_2D,
     .name = "laplace2d",
     .title = "LAPLACE_2D",
     .dim_min = 2,
     .dim_max = 2,
     .default_dim = 2,
     .gradient = 1,
     .singular_at_zero = 1,
     .uses_softening = 1,
     .uses_sigma = 0,
     .p2p_kernel = "p2p_laplace2d",
     .p2p_tuned = FMMCL_TUNED_P2P_LAPLACE2D,
     .p2p_layout = FMMCL_P2P_REAL4,
     .reference = fmmcl_reference_laplace2d_at},
    {.kernel = FMMCL_YUKAWA_3D,
     .name = "yukawa3d",
     .title = "YUKAWA_3D",
     .dim_min = 3,
     .dim_max = 3,
     .default_dim = 3,
     .gradient = 1,
     .singular_at_zero = 1,
     .uses_softening = 1,
     .uses_sigma = 0,
     .uses_kernel_param = 1,
     .p2p_kernel = "p2p_yukawa3d",
     .p2p_tuned = FMMCL_TUNED_P2P_YUKAWA3D,
     .p2p_layout = FMMCL_P2P_REAL4_PARAM,
     .reference = fmmcl_reference_yukawa3d_at},
    {.kernel = FMMCL_HELMHOLTZ_3D,
     .name = "helmholtz3d",
     .title = "HELMHOLTZ_3D",
     .dim_min = 3,
     .dim_max = 3,
     .default_dim = 3,
     .gradient = 1,
     .singular_at_zero = 1,
     .p2p_kernel = "p2p_helmholtz3d",
     .p2p_tuned = FMMCL_TUNED_P2P_HELMHOLTZ3D,
     .ext = 1},
    {.kernel = FMMCL_STOKES_3D,
     .name = "stokes3d",
     .title = "STOKES_3D",
     .dim_min = 3,
     .dim_max = 3,
     .default_dim = 3,
     .gradient = 0,
     .singular_at_zero = 1,
     .p2p_kernel = "p2p_stokes3d",
     .p2p_tuned = FMMCL_TUNED_P2P_STOKES3D,
     .ext = 1},
};

#define N_KERNELS (sizeof kernels / sizeof kernels[0])

const fmmcl_kernel_desc *fmmcl_kernel_describe(fmmcl_kernel kernel) {
  return (unsigned)kernel < N_KERNELS ? &kernels[kernel] : NULL;
}

const char *fmmcl_kernel_name(fmmcl_kernel kernel) {
  const fmmcl_kernel_desc *k = fmmcl_kernel_describe(kernel);
  return k ? k->name : "unknown";
}

fmmcl_status fmmcl_kernel_parse(const char *name, fmmcl_kernel *out) {
  const char *names[N_KERNELS];
  for (size_t i = 0; i < N_KERNELS; i++) names[i] = kernels[i].name;
  int i;
  fmmcl_status st = fmmcl_name_parse("fmmcl_kernel_parse", "kernel", names, N_KERNELS, name, out ? &i : NULL);
  if (!st) *out = kernels[i].kernel;
  return st;
}

/* In fmmcl_bbfmm_kernel order; the command line's --kernel spells the
 * bbFMM's own functions this way. */
static const char *const bbfmm_kernel_names[] = {
    "plan_kernel", "laplace", "inv_r2", "gaussian", "multiquadric", "inverse_multiquadric", "yukawa", "user"};

#define N_BBFMM_KERNELS (sizeof bbfmm_kernel_names / sizeof bbfmm_kernel_names[0])

const char *fmmcl_bbfmm_kernel_name(fmmcl_bbfmm_kernel kernel) {
  return (unsigned)kernel < N_BBFMM_KERNELS ? bbfmm_kernel_names[kernel] : "unknown";
}

fmmcl_status fmmcl_bbfmm_kernel_parse(const char *name, fmmcl_bbfmm_kernel *out) {
  int i;
  fmmcl_status st = fmmcl_name_parse("fmmcl_bbfmm_kernel_parse", "bbFMM kernel", bbfmm_kernel_names,
                                     N_BBFMM_KERNELS, name, out ? &i : NULL);
  if (!st) *out = (fmmcl_bbfmm_kernel)i;
  return st;
}
