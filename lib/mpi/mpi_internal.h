/* mpi_internal.h — what the parts of libfmmcl_mpi share: the routes points
 * take to their owners, the host octree, equivalent charges, the plan. */
#ifndef FMMCL_MPI_INTERNAL_H
#define FMMCL_MPI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "fmmcl_cl.h"
#include "fmmcl_mpi.h"

#define FMMCL_MPI_KEY_BITS 21 /* per dimension: 63-bit Morton keys */

/* The global frame keys are taken in: a cube. */
typedef struct mpi_frame {
  double lo[3];
  double side;
} mpi_frame;

/* Where a rank's points go and how they come back. Points leave in send
 * order (grouped by owner), arrive grouped by sender, and are kept sorted by
 * key: owned point k is received slot sort_perm[k]. */
typedef struct mpi_route {
  int ranks;
  size_t n_in;                                                /* points this rank passed */
  size_t n_owned;                                             /* points this rank owns after the partition */
  size_t *send_perm;                                          /* [n_in] original index of each send slot */
  int *send_counts, *send_displs, *recv_counts, *recv_displs; /* [ranks], in points */
  size_t *sort_perm;                                          /* [n_owned] */
  double *coords;                                             /* [3 n_owned] owned points, key order */
  uint64_t *keys;                                             /* [n_owned] */
} mpi_route;

uint64_t mpi_morton_key(const mpi_frame *f, const double *x);
/* Splitters: ranks + 1 keys, owner of key k is r with split[r] <= k < split[r+1]. */
int mpi_partition_splitters(MPI_Comm comm, size_t ns, const uint64_t *skeys, const double *sweights,
                            size_t nt, const uint64_t *tkeys, const double *tweights, uint64_t *split);
/* Moves points to their owners by split; returns an MPI error code or 0. */
int mpi_route_build(MPI_Comm comm, const mpi_frame *f, const uint64_t *split, size_t n, const double *coords,
                    mpi_route *route, unsigned long long *bytes);
/* width values per point, original order -> owned key order, and back. */
int mpi_route_forward(MPI_Comm comm, const mpi_route *route, int width, const double *in, double *out,
                      unsigned long long *bytes);
int mpi_route_backward(MPI_Comm comm, const mpi_route *route, int width, const double *in, double *out,
                       unsigned long long *bytes);
void mpi_route_free(mpi_route *route);

/* Work per point for the partition: the sources' global histogram at the
 * level where a cell holds about a leaf. */
typedef struct mpi_work {
  int level;
  size_t leaf;
  double *hist;
} mpi_work;
int mpi_work_init(MPI_Comm comm, size_t ns, const uint64_t *sk, size_t leaf, mpi_work *w);
double mpi_work_of(const mpi_work *w, uint64_t key);
void mpi_work_free(mpi_work *w);

/* A cell of the host octree over key-sorted points: points [begin, end). */
typedef struct mpi_cell {
  size_t begin, end;
  int level;
  int child[8];           /* -1: none */
  double center[3], half; /* the key cell: a cube */
  double radius;          /* of the points about center */
  double lo[3], hi[3];    /* the points' bounding box */
} mpi_cell;

typedef struct mpi_tree {
  mpi_cell *cells; /* cells[0] is the root (when n > 0) */
  size_t n_cells, cap;
} mpi_tree;

/* Splits cells of more than leaf points; n == 0 gives no cells. */
int mpi_tree_build(const mpi_frame *f, size_t n, const uint64_t *keys, const double *coords, size_t leaf,
                   mpi_tree *tree);
void mpi_tree_free(mpi_tree *tree);

/* Equivalent charges of order p: (p+1)(2p+1) points on a sphere whose
 * multipole moments up to degree p equal the sources'. */
static inline size_t mpi_equivalent_count(int p) { return (size_t)(p + 1) * (size_t)(2 * p + 1); }
/* The points, centre c, radius a, into x[3 * count]. */
void mpi_equivalent_points(int p, const double *c, double a, double *x);
/* Multipole moments up to degree p (scaled by a^-n), mpi_equivalent_terms(p)
 * real and imaginary parts; those of a lower degree are a prefix. */
size_t mpi_equivalent_terms(int p);
void mpi_equivalent_moments(int p, const double *c, double a, size_t n, const double *x, const double *q,
                            double *re, double *im);
/* The charges of order p from moments of degree p or more, into out[count]. */
void mpi_equivalent_from_moments(int p, const double *re, const double *im, double *out);
/* The smallest order whose truncation (a / d)^(p+1) is below eps. */
int mpi_equivalent_order(double a, double d, double eps);

/* What this rank sends one other rank: particles by owned index, far cells
 * as equivalent charges of an order. */
typedef struct mpi_let_send {
  size_t n_particles, cap_particles;
  size_t *particles;
  size_t n_cells, cap_cells;
  int *cells, *orders;
  size_t n_values; /* particles + equivalent charges */
} mpi_let_send;

/* Boxes that hold a rank's targets: lo[3], hi[3] each. equivalent: the
 * function is 1/r, far cells may go as equivalent charges; cutoff: sources
 * farther from every box than this are not sent (INFINITY: all are). */
int mpi_let_select(const mpi_tree *tree, const double *boxes, size_t n_boxes, double eps, int equivalent,
                   double cutoff, mpi_let_send *send);
void mpi_let_send_free(mpi_let_send *send);

/* The far cells' moments on the device (mpi_device.c): ready is 0 where the
 * device has no double precision, and the host computes them instead. */
typedef struct mpi_device {
  int ready, max_order;
  size_t n_pieces, n_terms, n_owned;
  cl_context context;
  cl_command_queue queue;
  cl_program program;
  cl_kernel partial, sum;
  cl_mem x, q, piece_far, piece_begin, piece_end, piece_out, far_geom, far_order, far_piece, far_offset,
      term_far, coef, partial_buf, re;
} mpi_device;
/* The cells whose moments are wanted: the plan's far cells over its owned
 * points (coords, key order). */
typedef struct mpi_device_cells {
  const mpi_tree *tree;
  const double *coords;
  size_t n_owned, n_far;
  const int *far_cells, *far_orders;
  const size_t *far_offset;
} mpi_device_cells;
fmmcl_status mpi_device_init(mpi_device *d, fmmcl_context ctx, const mpi_device_cells *cells);
/* Moments of every far cell from the owned charges q (key order): re and im
 * at far_offset, as mpi_equivalent_moments. Returns 0 or -1. */
int mpi_device_moments(mpi_device *d, const double *q, double *re, double *im);
void mpi_device_free(mpi_device *d);

struct fmmcl_mpi_plan_s {
  MPI_Comm comm;
  int rank, ranks;
  int gradient;
  mpi_frame frame;
  mpi_route src, tgt;
  mpi_tree tree;
  mpi_let_send *let;                                                          /* [ranks] */
  int *let_send_counts, *let_send_displs, *let_recv_counts, *let_recv_displs; /* values */
  size_t n_let;                                                               /* values received */
  size_t n_local_sources;                                                     /* owned + n_let */
  /* The far cells sent to any rank, each with the highest order asked:
   * their moments are computed once an execution. */
  size_t n_far;
  int *far_cells, *far_orders;
  size_t *far_offset; /* [n_far + 1] where each cell's moments start */
  int *far_index;     /* [n_cells] position in far_cells, -1 when not sent */
  mpi_device device;
  fmmcl_plan local;
  /* this rank's local plan's fmmcl_plan_rounding_estimate, taken at create
   * while its points are at hand (0 and NAN where not single precision) */
  double rounding_estimate, rounding_distance;
  fmmcl_mpi_stats stats;
};

#endif /* FMMCL_MPI_INTERNAL_H */
