/* fmmcl_mpi.h — libfmmcl_mpi: one 3D Laplace sum spread over the ranks of an
 * MPI communicator, one device per rank (Morton partition, local essential
 * trees, one ordinary fmmcl plan per rank). Links libfmmcl and MPI. */
#ifndef FMMCL_MPI_H
#define FMMCL_MPI_H

#include <mpi.h>

#include "fmmcl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens this rank's device. With selector NULL or "" and FMMCL_DEVICE unset,
 * a rank takes the (node-local rank mod GPUs on the node)-th GPU, so one
 * rank per GPU works without configuration; with no GPU, the first CPU
 * device. Otherwise as fmmcl_context_create. Collective over comm. */
FMMCL_EXPORT fmmcl_status fmmcl_mpi_context_create(MPI_Comm comm, const char *selector, fmmcl_context *ctx);

typedef struct fmmcl_mpi_plan_s *fmmcl_mpi_plan;

/* Collective. Each rank passes its own points (any split across ranks, a
 * rank may pass none; targets NULL: the targets are the sources). The plan
 * repartitions sources and targets along the Morton curve of the global
 * bounding box into key ranges of about equal work, sends every other rank
 * the part of its sources that rank needs (far cells as equivalent charges
 * on a sphere, near ones as particles) and creates one fmmcl plan per rank
 * with opt (any method: FMM, treecode, BBFMM, ...). Kernels: scalar ones in
 * 3D (LAPLACE_3D, YUKAWA_3D, GAUSSIAN with dim 3, every bbfmm_kernel); no
 * dipoles or Hessian (FMMCL_ERROR_UNSUPPORTED otherwise). Only for 1/r do
 * far cells travel as equivalent charges; for any other function they
 * travel as particles, and those beyond the Gaussian's cut-off (where it
 * falls below tolerance / 100) not at all, so a slowly decaying function
 * brings every rank all the sources near or far from its targets. A
 * failure on any rank fails the call on every rank with the same status. */
FMMCL_EXPORT fmmcl_status fmmcl_mpi_plan_create(MPI_Comm comm, fmmcl_context ctx,
                                                const fmmcl_plan_options *opt, size_t n_sources,
                                                const double *sources, size_t n_targets,
                                                const double *targets, fmmcl_mpi_plan *plan);

/* Collective. charges[n_sources] of this rank's sources, in the order they
 * were passed; potential[n_targets] and gradient[3 * n_targets] (may be
 * NULL) receive this rank's targets' results in their order. */
FMMCL_EXPORT fmmcl_status fmmcl_mpi_plan_execute(fmmcl_mpi_plan plan, const double *charges,
                                                 double *potential, double *gradient);

/* This rank's share of the plan and its last execution. Times in seconds;
 * "outside" is everything but the local plan's execute. */
typedef struct fmmcl_mpi_stats {
  size_t owned_sources, owned_targets; /* after the partition */
  size_t let_particles;                /* sources received as particles */
  size_t let_equivalent;               /* equivalent charges received */
  size_t let_cells;                    /* far cells received as equivalent charges */
  double work;                         /* the partition's work estimate of this rank */
  double work_imbalance;               /* max / mean of work over the ranks */
  double partition_s;                  /* create: bounding box, keys, splitters, exchange */
  double let_build_s;                  /* create: trees, what each rank needs, its geometry */
  double local_create_s;               /* create: the local fmmcl plan */
  double charges_s;                    /* execute: charges to their owners */
  double equivalent_s;                 /* execute: far cells' multipoles and equivalent charges */
  double let_exchange_s;               /* execute: LET charges to the ranks that need them */
  double local_execute_s;              /* execute: the local fmmcl plan */
  double results_s;                    /* execute: results back to their ranks */
  double local_imbalance;              /* max / mean of local_execute_s over the ranks */
  unsigned long long create_bytes;     /* sent by this rank during create */
  unsigned long long execute_bytes;    /* sent by this rank during the last execute */
} fmmcl_mpi_stats;
FMMCL_EXPORT fmmcl_status fmmcl_mpi_plan_stats(fmmcl_mpi_plan plan, fmmcl_mpi_stats *stats);

/* Collective. How well single precision resolves the closest source-target
 * pair of the whole set (fmmcl_plan_rounding_estimate over every rank's
 * local plan, taken at create): *estimate the largest typical relative
 * error of a pair's gradient term on any rank, *distance the closest pair
 * of distinct points (NAN when there is none). An estimate above the
 * tolerance means targets that close miss it: use FMMCL_DOUBLE. Plans in
 * double precision give 0 (their rounding is far below any tolerance
 * they take). */
FMMCL_EXPORT fmmcl_status fmmcl_mpi_plan_rounding_estimate(fmmcl_mpi_plan plan, double *estimate,
                                                           double *distance);

/* The local plan (NULL on a rank that owns no targets), e.g. for
 * fmmcl_plan_timings. It belongs to the MPI plan. */
FMMCL_EXPORT fmmcl_status fmmcl_mpi_plan_local(fmmcl_mpi_plan plan, fmmcl_plan *local);

/* Collective. */
FMMCL_EXPORT fmmcl_status fmmcl_mpi_plan_destroy(fmmcl_mpi_plan plan);

#ifdef __cplusplus
}
#endif
#endif /* FMMCL_MPI_H */
