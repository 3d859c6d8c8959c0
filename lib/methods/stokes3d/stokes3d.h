/* stokes3d.h — private to the Stokes FMM: its near field, summed with the
 * Stokes pair over the U list of its internal Laplace FMM plan
 * (stokes3d_near.c, cl/stokes3d/stokes_p2p.cl), and the four Laplace
 * densities' expansions with their joint M2L (stokes3d_far.c,
 * cl/stokes3d/stokes_far.cl). */
#ifndef FMMCL_STOKES3D_H
#define FMMCL_STOKES3D_H

#include "core/internal.h"

/* The points' side: the Stokes pair over the U list, the densities put
 * into the Laplace plan's sources, the combination of the far fields. */
typedef struct stokes_near {
  cl_program program;
  cl_kernel k_p2p, k_put, k_unsort, k_densities, k_combine;
  cl_mem f, ss, sn;      /* REAL4 per sorted source (ss, sn: stresslet plans) */
  cl_mem y, xs;          /* sorted sources (world units), targets (units of U), both centred */
  cl_mem user;           /* 3 REALs per point in the caller's order, on their way in */
  cl_mem out, out_user;  /* REAL4 (u, p) per sorted target; in the caller's order */
  fmmcl_pinned stage;    /* host side of user and out_user */
  size_t wgs;
} stokes_near;

/* Builds the kernels (with the laplace plan's compensation, and plan's
 * stresslets and pressure) and the buffers for laplace's points, and
 * uploads those points (centred, 3 per point in the caller's order;
 * targets NULL: the sources). */
fmmcl_status fmmcl_stokes3d_near_create(fmmcl_plan plan, fmmcl_plan laplace, stokes_near *nr,
                                        const double *sources, const double *targets);
/* Forces f and stresslets (ss, sn), 3 per source in the caller's order
 * (NULL: zeros), onto the device; then the near field into out. */
fmmcl_status fmmcl_stokes3d_near_run(fmmcl_plan plan, fmmcl_plan laplace, stokes_near *nr, const double *f,
                                     const double *ss, const double *sn);
/* Density k (0..3) of the far field into the Laplace plan's sources. */
fmmcl_status fmmcl_stokes3d_densities(fmmcl_plan plan, fmmcl_plan laplace, stokes_near *nr, int k);
/* The far fields far[0..3] (as fmmcl_fmm3d_far_down leaves them) added
 * to the near field; the sum into u (3 per target, may be NULL) and p (1
 * per target), in the caller's order. */
fmmcl_status fmmcl_stokes3d_results(fmmcl_plan plan, fmmcl_plan laplace, stokes_near *nr, cl_mem const *far,
                                    double *u, double *p);
void fmmcl_stokes3d_near_release(stokes_near *nr);

/* The four densities' expansions and far fields on the Laplace plan's
 * cells and targets, and the operators that treat the four together (the
 * M2L only where the device's local memory stages four multipoles beside
 * a shift: else one M2L each, the Laplace plan's). */
typedef struct stokes_far {
  cl_program program;
  cl_kernel k_p2m, k_m2l;
  int joint_m2l;
  cl_mem M[4], L[4];
  cl_mem out[4]; /* each density's far field, REAL4 per sorted target */
  size_t wgs;
} stokes_far;

fmmcl_status fmmcl_stokes3d_far_create(fmmcl_plan plan, fmmcl_plan laplace, stokes_far *fr);
/* The four far fields of the strengths in nr (fmmcl_stokes3d_near_run put
 * them there) into out[0..3]; the phases recorded as plan's. */
fmmcl_status fmmcl_stokes3d_far_run(fmmcl_plan plan, fmmcl_plan laplace, stokes_near *nr, stokes_far *fr);
void fmmcl_stokes3d_far_release(stokes_far *fr);

#endif /* FMMCL_STOKES3D_H */
