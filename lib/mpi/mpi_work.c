/* mpi_work.c — the partition's work per point, from the global occupancy of
 * its cell at the level where cells hold about a leaf's worth of sources:
 * the near-field sum a point takes part in grows with the sources around
 * it up to a full leaf, on top of a far-field share every point pays. */
#include <math.h>
#include <stdlib.h>

#include "mpi_internal.h"

#define MAX_LEVEL 6 /* 8^6 cells: a 2 MB histogram */

int mpi_work_init(MPI_Comm comm, size_t ns, const uint64_t *sk, size_t leaf, mpi_work *w) {
  double total = (double)ns;
  MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
  w->leaf = leaf < 1 ? 1 : leaf;
  int level = (int)ceil(log(fmax(total / (double)w->leaf, 1.0)) / log(8.0));
  w->level = level < 1 ? 1 : level > MAX_LEVEL ? MAX_LEVEL : level;
  size_t cells = (size_t)1 << (3 * w->level);
  w->hist = calloc(cells, sizeof *w->hist);
  if (!w->hist) return -1;
  for (size_t i = 0; i < ns; i++) w->hist[sk[i] >> (3 * (FMMCL_MPI_KEY_BITS - w->level))] += 1;
  return MPI_Allreduce(MPI_IN_PLACE, w->hist, (int)cells, MPI_DOUBLE, MPI_SUM, comm);
}

double mpi_work_of(const mpi_work *w, uint64_t key) {
  double occupancy = w->hist[key >> (3 * (FMMCL_MPI_KEY_BITS - w->level))];
  double near = occupancy < (double)w->leaf ? occupancy : (double)w->leaf;
  return (double)w->leaf / 4 + near;
}

void mpi_work_free(mpi_work *w) {
  free(w->hist);
  w->hist = NULL;
}
