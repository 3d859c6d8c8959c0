/* mpi_plan.c — the distributed plan: partition, local essential trees, one
 * local fmmcl plan per rank; execute moves charges to their owners and to
 * the ranks that need them, runs the local plan, and sends results home. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

/* Every rank learns whether any rank failed, so all return the same status. */
static fmmcl_status agree(MPI_Comm comm, fmmcl_status st) {
  int s = (int)st;
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_INT, MPI_MAX, comm);
  return (fmmcl_status)s;
}

static int agree_int(MPI_Comm comm, int err) {
  MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_INT, MPI_MAX, comm);
  return err;
}

static int all_finite(size_t n, const double *x) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}

/* Scalar charges and potentials in 3D: Laplace (softened too), Yukawa, the
 * Gaussian in 3D and every BBFMM function; not 2D, complex, vector or
 * dipole sources, nor the Hessian (their charges and results are not one
 * number a point). */
static fmmcl_status check_options(const fmmcl_plan_options *opt) {
  int k = opt->kernel;
  if (k != FMMCL_LAPLACE_3D && k != FMMCL_YUKAWA_3D && k != FMMCL_GAUSSIAN) return FMMCL_ERROR_UNSUPPORTED;
  if (opt->dim != 3 || opt->dipoles || opt->hessian) return FMMCL_ERROR_UNSUPPORTED;
  return FMMCL_SUCCESS;
}

/* What the local plans sum, for the LET: *equivalent when it is 1/r (far
 * cells then travel as equivalent charges), *cutoff the distance beyond
 * which a source adds less than eps / 100 of its charge (the Gaussian's;
 * INFINITY for the functions that decay slowly or not at all). */
static void let_mode(const fmmcl_plan_options *opt, double eps, int *equivalent, double *cutoff) {
  fmmcl_bbfmm_kernel b = opt->method == FMMCL_BBFMM || opt->method == FMMCL_DIRECT ? opt->bbfmm_kernel
                                                                                  : FMMCL_BBFMM_PLAN_KERNEL;
  int laplace, gaussian;
  if (b == FMMCL_BBFMM_PLAN_KERNEL)
    laplace = opt->kernel == FMMCL_LAPLACE_3D && opt->softening == 0, gaussian = opt->kernel == FMMCL_GAUSSIAN;
  else laplace = b == FMMCL_BBFMM_LAPLACE, gaussian = b == FMMCL_BBFMM_GAUSSIAN;
  *equivalent = laplace;
  *cutoff = gaussian ? opt->sigma * sqrt(2 * log(100 / eps)) : INFINITY;
}

/* The cube every rank takes keys in: the bounding box of all points. */
static void global_frame(MPI_Comm comm, size_t ns, const double *s, size_t nt, const double *t,
                         mpi_frame *f) {
  double b[6] = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY}; /* lo, -hi */
  for (int pass = 0; pass < 2; pass++) {
    size_t n = pass ? nt : ns;
    const double *x = pass ? t : s;
    for (size_t i = 0; i < n; i++)
      for (int d = 0; d < 3; d++) {
        if (x[3 * i + d] < b[d]) b[d] = x[3 * i + d];
        if (-x[3 * i + d] < b[3 + d]) b[3 + d] = -x[3 * i + d];
      }
  }
  MPI_Allreduce(MPI_IN_PLACE, b, 6, MPI_DOUBLE, MPI_MIN, comm);
  double side = 0;
  for (int d = 0; d < 3; d++) side = fmax(side, -b[3 + d] - b[d]);
  if (!(side > 0)) side = 1;
  side *= 1 + 1e-9;
  for (int d = 0; d < 3; d++) f->lo[d] = b[d] - (side - (-b[3 + d] - b[d])) / 2;
  f->side = side;
}

static double tolerance_of(const fmmcl_plan_options *opt) {
  if (opt->tolerance > 0) return opt->tolerance;
  if (opt->order > 0) return pow(0.5, opt->order + 1); /* the FMM's own ratio */
  return 1e-6;
}

/* Leaves of a tree over this rank's targets, as boxes lo[3], hi[3]; every
 * rank gets every rank's boxes. */
static int gather_target_boxes(fmmcl_mpi_plan pl, double **boxes, int **counts, int **displs,
                               unsigned long long *bytes) {
  size_t n = pl->tgt.n_owned, leaf = n / 1024 > 32 ? n / 1024 : 32;
  mpi_tree t;
  if (mpi_tree_build(&pl->frame, n, pl->tgt.keys, pl->tgt.coords, leaf, &t)) return -1;
  size_t nb = 0;
  double *mine = malloc((t.n_cells ? 6 * t.n_cells : 1) * sizeof *mine);
  *counts = calloc(pl->ranks, sizeof(int));
  *displs = calloc(pl->ranks, sizeof(int));
  if (!mine || !*counts || !*displs) {
    mpi_tree_free(&t), free(mine);
    return -1;
  }
  for (size_t c = 0; c < t.n_cells; c++) {
    int leafy = 1;
    for (int q = 0; q < 8; q++) leafy &= t.cells[c].child[q] < 0;
    if (!leafy) continue;
    memcpy(mine + 6 * nb, t.cells[c].lo, 3 * sizeof(double));
    memcpy(mine + 6 * nb + 3, t.cells[c].hi, 3 * sizeof(double));
    nb++;
  }
  mpi_tree_free(&t);
  int mycount = (int)(6 * nb);
  MPI_Allgather(&mycount, 1, MPI_INT, *counts, 1, MPI_INT, pl->comm);
  size_t total = 0;
  for (int r = 0; r < pl->ranks; r++) (*displs)[r] = (int)total, total += (size_t)(*counts)[r];
  *boxes = malloc((total ? total : 1) * sizeof(double));
  if (!*boxes) {
    free(mine);
    return -1;
  }
  MPI_Allgatherv(mine, mycount, MPI_DOUBLE, *boxes, *counts, *displs, MPI_DOUBLE, pl->comm);
  *bytes += (unsigned long long)mycount * sizeof(double) * (pl->ranks - 1);
  free(mine);
  return 0;
}

static void let_counts(fmmcl_mpi_plan pl) {
  for (int r = 0; r < pl->ranks; r++) pl->let_send_counts[r] = (int)pl->let[r].n_values;
  MPI_Alltoall(pl->let_send_counts, 1, MPI_INT, pl->let_recv_counts, 1, MPI_INT, pl->comm);
  size_t s = 0, q = 0;
  for (int r = 0; r < pl->ranks; r++) {
    pl->let_send_displs[r] = (int)s, s += (size_t)pl->let_send_counts[r];
    pl->let_recv_displs[r] = (int)q, q += (size_t)pl->let_recv_counts[r];
  }
  pl->n_let = q;
}

/* Positions of what each rank receives: particles, then each far cell's
 * equivalent points; into the local source array after the owned ones. */
static int exchange_let_positions(fmmcl_mpi_plan pl, double *local_sources, unsigned long long *bytes) {
  size_t total = (size_t)pl->let_send_displs[pl->ranks - 1] + (size_t)pl->let_send_counts[pl->ranks - 1];
  double *out = malloc((total ? 3 * total : 1) * sizeof *out);
  int *sc = malloc(4 * pl->ranks * sizeof(int));
  if (!out || !sc) {
    free(out), free(sc);
    return -1;
  }
  for (int r = 0; r < pl->ranks; r++) {
    const mpi_let_send *s = &pl->let[r];
    double *x = out + 3 * (size_t)pl->let_send_displs[r];
    for (size_t i = 0; i < s->n_particles; i++, x += 3)
      memcpy(x, pl->src.coords + 3 * s->particles[i], 3 * sizeof(double));
    for (size_t c = 0; c < s->n_cells; c++) {
      const mpi_cell *cell = &pl->tree.cells[s->cells[c]];
      mpi_equivalent_points(s->orders[c], cell->center, cell->radius, x);
      x += 3 * mpi_equivalent_count(s->orders[c]);
    }
    sc[r] = 3 * pl->let_send_counts[r], sc[pl->ranks + r] = 3 * pl->let_send_displs[r];
    sc[2 * pl->ranks + r] = 3 * pl->let_recv_counts[r], sc[3 * pl->ranks + r] = 3 * pl->let_recv_displs[r];
    if (r != pl->rank) *bytes += (unsigned long long)sc[r] * sizeof(double);
  }
  int err = MPI_Alltoallv(out, sc, sc + pl->ranks, MPI_DOUBLE, local_sources + 3 * pl->src.n_owned,
                          sc + 2 * pl->ranks, sc + 3 * pl->ranks, MPI_DOUBLE, pl->comm);
  free(out), free(sc);
  return err;
}

static void imbalance(MPI_Comm comm, int ranks, double mine, double *ratio) {
  double v[2] = {mine, mine};
  MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, v + 1, 1, MPI_DOUBLE, MPI_SUM, comm);
  *ratio = v[1] > 0 ? v[0] / (v[1] / ranks) : 1;
}

/* The far cells any rank asked for, each once, at the highest order asked. */
static int collect_far_cells(fmmcl_mpi_plan pl) {
  size_t nc = pl->tree.n_cells;
  pl->far_index = malloc((nc ? nc : 1) * sizeof(int));
  pl->far_cells = malloc((nc ? nc : 1) * sizeof(int));
  pl->far_orders = malloc((nc ? nc : 1) * sizeof(int));
  pl->far_offset = malloc((nc + 1) * sizeof(size_t));
  if (!pl->far_index || !pl->far_cells || !pl->far_orders || !pl->far_offset) return -1;
  for (size_t c = 0; c < nc; c++) pl->far_index[c] = -1;
  for (int r = 0; r < pl->ranks; r++)
    for (size_t k = 0; k < pl->let[r].n_cells; k++) {
      int c = pl->let[r].cells[k], o = pl->let[r].orders[k];
      if (pl->far_index[c] < 0) {
        pl->far_index[c] = (int)pl->n_far;
        pl->far_cells[pl->n_far] = c, pl->far_orders[pl->n_far++] = o;
      } else if (o > pl->far_orders[pl->far_index[c]]) pl->far_orders[pl->far_index[c]] = o;
    }
  pl->far_offset[0] = 0;
  for (size_t f = 0; f < pl->n_far; f++)
    pl->far_offset[f + 1] = pl->far_offset[f] + mpi_equivalent_terms(pl->far_orders[f]);
  return 0;
}

/* What arrives as particles, as charges and in how many cells, for the report. */
static int let_received(fmmcl_mpi_plan pl) {
  int *out = malloc(6 * pl->ranks * sizeof(int));
  if (!out) return -1;
  int *in = out + 3 * pl->ranks;
  for (int r = 0; r < pl->ranks; r++) {
    out[3 * r] = (int)pl->let[r].n_particles;
    out[3 * r + 1] = (int)(pl->let[r].n_values - pl->let[r].n_particles);
    out[3 * r + 2] = (int)pl->let[r].n_cells;
  }
  MPI_Alltoall(out, 3, MPI_INT, in, 3, MPI_INT, pl->comm);
  for (int r = 0; r < pl->ranks; r++) {
    pl->stats.let_particles += (size_t)in[3 * r];
    pl->stats.let_equivalent += (size_t)in[3 * r + 1];
    pl->stats.let_cells += (size_t)in[3 * r + 2];
  }
  free(out);
  return 0;
}

static fmmcl_status build(fmmcl_mpi_plan pl, fmmcl_context ctx, const fmmcl_plan_options *opt, size_t ns,
                          const double *s, size_t nt, const double *t) {
  fmmcl_mpi_stats *st = &pl->stats;
  double t0 = MPI_Wtime();
  global_frame(pl->comm, ns, s, nt, t, &pl->frame);
  uint64_t *sk = malloc((ns ? ns : 1) * sizeof *sk), *tk = malloc((nt ? nt : 1) * sizeof *tk);
  uint64_t *split = malloc((pl->ranks + 1) * sizeof *split);
  if (!sk || !tk || !split) {
    free(sk), free(tk), free(split);
    return FMMCL_ERROR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < ns; i++) sk[i] = mpi_morton_key(&pl->frame, s + 3 * i);
  for (size_t i = 0; i < nt; i++) tk[i] = mpi_morton_key(&pl->frame, t + 3 * i);
  mpi_work work = {0};
  double *sw = malloc((ns ? ns : 1) * sizeof *sw), *tw = malloc((nt ? nt : 1) * sizeof *tw);
  int err = !sw || !tw;
  err = agree_int(pl->comm, err);
  if (!err) err = mpi_work_init(pl->comm, ns, sk, opt->leaf_size > 0 ? (size_t)opt->leaf_size : 64, &work);
  if (!err) {
    for (size_t i = 0; i < ns; i++) sw[i] = mpi_work_of(&work, sk[i]);
    for (size_t i = 0; i < nt; i++) tw[i] = mpi_work_of(&work, tk[i]);
    err = mpi_partition_splitters(pl->comm, ns, sk, sw, nt, tk, tw, split);
  }
  free(sk), free(tk), free(sw), free(tw);
  if (!err) err = mpi_route_build(pl->comm, &pl->frame, split, ns, s, &pl->src, &st->create_bytes);
  if (!err) err = mpi_route_build(pl->comm, &pl->frame, split, nt, t, &pl->tgt, &st->create_bytes);
  free(split);
  if (err) {
    mpi_work_free(&work);
    return FMMCL_ERROR_OUT_OF_MEMORY;
  }
  st->owned_sources = pl->src.n_owned, st->owned_targets = pl->tgt.n_owned;
  st->work = 0;
  for (size_t i = 0; i < pl->src.n_owned; i++) st->work += mpi_work_of(&work, pl->src.keys[i]);
  for (size_t i = 0; i < pl->tgt.n_owned; i++) st->work += mpi_work_of(&work, pl->tgt.keys[i]);
  mpi_work_free(&work);
  imbalance(pl->comm, pl->ranks, st->work, &st->work_imbalance);
  double t1 = MPI_Wtime();
  st->partition_s = t1 - t0;

  double *boxes = NULL;
  int *bc = NULL, *bd = NULL;
  if (mpi_tree_build(&pl->frame, pl->src.n_owned, pl->src.keys, pl->src.coords, 64, &pl->tree) ||
      gather_target_boxes(pl, &boxes, &bc, &bd, &st->create_bytes)) {
    free(boxes), free(bc), free(bd);
    return FMMCL_ERROR_OUT_OF_MEMORY;
  }
  double eps = tolerance_of(opt), cutoff;
  int equivalent;
  let_mode(opt, eps, &equivalent, &cutoff);
  for (int r = 0; r < pl->ranks && !err; r++)
    if (r != pl->rank)
      err = mpi_let_select(&pl->tree, boxes + bd[r], (size_t)bc[r] / 6, eps, equivalent, cutoff, &pl->let[r]);
  free(boxes), free(bc), free(bd);
  if (err) return FMMCL_ERROR_OUT_OF_MEMORY;
  if (collect_far_cells(pl)) return FMMCL_ERROR_OUT_OF_MEMORY;
  mpi_device_cells cells = {&pl->tree,     pl->src.coords, pl->src.n_owned, pl->n_far,
                            pl->far_cells, pl->far_orders, pl->far_offset};
  fmmcl_status dst = mpi_device_init(&pl->device, ctx, &cells);
  if (dst) return dst;
  let_counts(pl);
  pl->n_local_sources = pl->src.n_owned + pl->n_let;
  double *local = malloc((pl->n_local_sources ? 3 * pl->n_local_sources : 1) * sizeof *local);
  if (!local) return FMMCL_ERROR_OUT_OF_MEMORY;
  memcpy(local, pl->src.coords, 3 * pl->src.n_owned * sizeof(double));
  if (exchange_let_positions(pl, local, &st->create_bytes)) {
    free(local);
    return FMMCL_ERROR_OUT_OF_MEMORY;
  }
  if (let_received(pl)) {
    free(local);
    return FMMCL_ERROR_OUT_OF_MEMORY;
  }
  double t2 = MPI_Wtime();
  st->let_build_s = t2 - t1;

  fmmcl_status status = FMMCL_SUCCESS;
  if (pl->tgt.n_owned > 0 && pl->n_local_sources > 0)
    status =
        fmmcl_plan_create(ctx, opt, pl->n_local_sources, local, pl->tgt.n_owned, pl->tgt.coords, &pl->local);
  /* Near sources reach the rank that owns the targets as particles, so the
   * local plan sees every close pair; double resolves them (see fmmcl.h). */
  pl->rounding_estimate = 0, pl->rounding_distance = NAN;
  if (!status && pl->local && opt->precision == FMMCL_SINGLE)
    status = fmmcl_plan_rounding_estimate(pl->local, local, pl->tgt.coords, &pl->rounding_estimate,
                                          &pl->rounding_distance);
  free(local);
  st->local_create_s = MPI_Wtime() - t2;
  return status;
}

static void plan_free(fmmcl_mpi_plan pl) {
  if (!pl) return;
  if (pl->local) fmmcl_plan_destroy(pl->local);
  mpi_device_free(&pl->device);
  mpi_route_free(&pl->src), mpi_route_free(&pl->tgt);
  mpi_tree_free(&pl->tree);
  free(pl->far_index), free(pl->far_cells), free(pl->far_orders), free(pl->far_offset);
  if (pl->let)
    for (int r = 0; r < pl->ranks; r++) mpi_let_send_free(&pl->let[r]);
  free(pl->let), free(pl->let_send_counts), free(pl->let_send_displs);
  free(pl->let_recv_counts), free(pl->let_recv_displs);
  if (pl->comm != MPI_COMM_NULL) MPI_Comm_free(&pl->comm);
  free(pl);
}

fmmcl_status fmmcl_mpi_plan_create(MPI_Comm comm, fmmcl_context ctx, const fmmcl_plan_options *opt, size_t ns,
                                   const double *s, size_t nt, const double *t, fmmcl_mpi_plan *plan) {
  fmmcl_status st = FMMCL_SUCCESS;
  if (!plan || !opt || !ctx || (ns && !s)) st = FMMCL_ERROR_NULL_POINTER;
  if (!t) t = s, nt = ns;
  if (!st && nt && !t) st = FMMCL_ERROR_NULL_POINTER;
  if (!st) st = check_options(opt);
  if (!st && (!all_finite(3 * ns, s) || !all_finite(3 * nt, t))) st = FMMCL_ERROR_NONFINITE_INPUT;
  unsigned long long n[2] = {ns, nt};
  MPI_Allreduce(MPI_IN_PLACE, n, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
  if (!st && (n[0] == 0 || n[1] == 0)) st = FMMCL_ERROR_EMPTY_INPUT;
  /* The plan's own communicator: its collectives never meet the caller's. */
  MPI_Comm own;
  MPI_Comm_dup(comm, &own);
  fmmcl_mpi_plan pl = NULL;
  if (!(pl = calloc(1, sizeof *pl))) st = FMMCL_ERROR_OUT_OF_MEMORY;
  if (pl) {
    pl->comm = own;
    MPI_Comm_rank(comm, &pl->rank);
    MPI_Comm_size(comm, &pl->ranks);
    pl->gradient = opt->gradient;
    pl->let = calloc(pl->ranks, sizeof *pl->let);
    pl->let_send_counts = calloc(pl->ranks, sizeof(int));
    pl->let_send_displs = calloc(pl->ranks, sizeof(int));
    pl->let_recv_counts = calloc(pl->ranks, sizeof(int));
    pl->let_recv_displs = calloc(pl->ranks, sizeof(int));
    if (!pl->let || !pl->let_send_counts || !pl->let_send_displs || !pl->let_recv_counts ||
        !pl->let_recv_displs)
      st = FMMCL_ERROR_OUT_OF_MEMORY;
  }
  st = agree(comm, st);
  if (!st) st = agree(comm, build(pl, ctx, opt, ns, s, nt, t));
  if (st) {
    if (pl) plan_free(pl); /* every rank frees its duplicate here, together */
    else MPI_Comm_free(&own);
    return st;
  }
  *plan = pl;
  return FMMCL_SUCCESS;
}

/* Charges of what each rank receives, in the order of its positions: the
 * far cells' moments once each (on the device, or on the host where it has
 * no double precision), then every rank's equivalent charges from
 * them, cells in parallel (the host is idle while the device works). */
static int let_charges(fmmcl_mpi_plan pl, const double *owned_q, double *local_q) {
  size_t total = (size_t)pl->let_send_displs[pl->ranks - 1] + (size_t)pl->let_send_counts[pl->ranks - 1];
  size_t terms = pl->far_offset[pl->n_far];
  double *out = malloc((total ? total : 1) * sizeof *out);
  double *re = malloc((terms ? terms : 1) * sizeof *re), *im = malloc((terms ? terms : 1) * sizeof *im);
  if (!out || !re || !im) {
    free(out), free(re), free(im);
    return -1;
  }
  double t0 = MPI_Wtime();
  long nf = pl->device.ready ? 0 : (long)pl->n_far;
  if (pl->device.ready && mpi_device_moments(&pl->device, owned_q, re, im)) {
    free(out), free(re), free(im);
    return -1;
  }
#pragma omp parallel for schedule(dynamic)
  for (long f = 0; f < nf; f++) {
    const mpi_cell *cell = &pl->tree.cells[pl->far_cells[f]];
    mpi_equivalent_moments(pl->far_orders[f], cell->center, cell->radius, cell->end - cell->begin,
                           pl->src.coords + 3 * cell->begin, owned_q + cell->begin, re + pl->far_offset[f],
                           im + pl->far_offset[f]);
  }
  for (int r = 0; r < pl->ranks; r++) {
    const mpi_let_send *s = &pl->let[r];
    double *q = out + pl->let_send_displs[r];
    for (size_t i = 0; i < s->n_particles; i++) *q++ = owned_q[s->particles[i]];
    long ncells = (long)s->n_cells;
    size_t *at = malloc((s->n_cells + 1) * sizeof *at);
    if (!at) {
      free(out), free(re), free(im);
      return -1;
    }
    at[0] = 0;
    for (size_t c = 0; c < s->n_cells; c++) at[c + 1] = at[c] + mpi_equivalent_count(s->orders[c]);
#pragma omp parallel for schedule(dynamic)
    for (long c = 0; c < ncells; c++) {
      size_t f = (size_t)pl->far_index[s->cells[c]];
      mpi_equivalent_from_moments(s->orders[c], re + pl->far_offset[f], im + pl->far_offset[f], q + at[c]);
    }
    free(at);
  }
  free(re), free(im);
  double t1 = MPI_Wtime();
  pl->stats.equivalent_s = t1 - t0;
  int err =
      MPI_Alltoallv(out, pl->let_send_counts, pl->let_send_displs, MPI_DOUBLE, local_q + pl->src.n_owned,
                    pl->let_recv_counts, pl->let_recv_displs, MPI_DOUBLE, pl->comm);
  for (int r = 0; r < pl->ranks; r++)
    if (r != pl->rank) pl->stats.execute_bytes += (unsigned long long)pl->let_send_counts[r] * sizeof(double);
  pl->stats.let_exchange_s = MPI_Wtime() - t1;
  free(out);
  return err;
}

static fmmcl_status run_local(fmmcl_mpi_plan pl, const double *local_q, double *res) {
  size_t m = pl->tgt.n_owned;
  int w = pl->gradient ? 4 : 1;
  double *pot = malloc((m ? m : 1) * sizeof *pot),
         *grad = pl->gradient ? malloc((m ? 3 * m : 1) * sizeof *grad) : NULL;
  if (!pot || (pl->gradient && !grad)) {
    free(pot), free(grad);
    return FMMCL_ERROR_OUT_OF_MEMORY;
  }
  fmmcl_status st = FMMCL_SUCCESS;
  if (pl->local) st = fmmcl_plan_execute(pl->local, local_q, pot, grad);
  else {
    memset(pot, 0, m * sizeof *pot);
    if (grad) memset(grad, 0, 3 * m * sizeof *grad);
  }
  long mm = (long)m;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < mm; i++) {
    res[w * i] = pot[i];
    if (grad) memcpy(res + w * i + 1, grad + 3 * i, 3 * sizeof(double));
  }
  free(pot), free(grad);
  return st;
}

fmmcl_status fmmcl_mpi_plan_execute(fmmcl_mpi_plan pl, const double *charges, double *potential,
                                    double *gradient) {
  if (!pl) return FMMCL_ERROR_NULL_POINTER;
  fmmcl_status st = FMMCL_SUCCESS;
  if ((pl->src.n_in && !charges) || (pl->tgt.n_in && !potential)) st = FMMCL_ERROR_NULL_POINTER;
  else if (gradient && !pl->gradient) st = FMMCL_ERROR_INVALID_ARGUMENT;
  else if (!all_finite(pl->src.n_in, charges)) st = FMMCL_ERROR_NONFINITE_INPUT;
  if ((st = agree(pl->comm, st))) return st;
  fmmcl_mpi_stats *s = &pl->stats;
  s->execute_bytes = 0;
  int w = pl->gradient ? 4 : 1;
  size_t m = pl->tgt.n_owned;
  double *local_q = malloc((pl->n_local_sources ? pl->n_local_sources : 1) * sizeof *local_q);
  double *res = malloc((m ? w * m : 1) * sizeof *res),
         *back = malloc((pl->tgt.n_in ? w * pl->tgt.n_in : 1) * sizeof *back);
  if (!local_q || !res || !back) st = FMMCL_ERROR_OUT_OF_MEMORY;
  if ((st = agree(pl->comm, st))) {
    free(local_q), free(res), free(back);
    return st;
  }
  double t0 = MPI_Wtime();
  if (mpi_route_forward(pl->comm, &pl->src, 1, charges, local_q, &s->execute_bytes))
    st = FMMCL_ERROR_OUT_OF_MEMORY;
  s->charges_s = MPI_Wtime() - t0;
  if (!st && let_charges(pl, local_q, local_q)) st = FMMCL_ERROR_OUT_OF_MEMORY;
  double t1 = MPI_Wtime();
  if (!st) st = run_local(pl, local_q, res);
  double t2 = MPI_Wtime();
  s->local_execute_s = t2 - t1;
  st = agree(pl->comm, st);
  if (!st && mpi_route_backward(pl->comm, &pl->tgt, w, res, back, &s->execute_bytes))
    st = FMMCL_ERROR_OUT_OF_MEMORY;
  st = agree(pl->comm, st);
  long nin = st ? 0 : (long)pl->tgt.n_in;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < nin; i++) {
    potential[i] = back[w * i];
    if (gradient) memcpy(gradient + 3 * i, back + w * i + 1, 3 * sizeof(double));
  }
  s->results_s = MPI_Wtime() - t2;
  imbalance(pl->comm, pl->ranks, s->local_execute_s, &s->local_imbalance);
  free(local_q), free(res), free(back);
  return st;
}

fmmcl_status fmmcl_mpi_plan_stats(fmmcl_mpi_plan pl, fmmcl_mpi_stats *stats) {
  if (!pl || !stats) return FMMCL_ERROR_NULL_POINTER;
  *stats = pl->stats;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_mpi_plan_rounding_estimate(fmmcl_mpi_plan pl, double *estimate, double *distance) {
  if (!pl || !estimate || !distance) return FMMCL_ERROR_NULL_POINTER;
  /* NAN (no pair on a rank) must not win the minimum: it compares false */
  double e = pl->rounding_estimate, d = isnan(pl->rounding_distance) ? INFINITY : pl->rounding_distance;
  if (MPI_Allreduce(&e, estimate, 1, MPI_DOUBLE, MPI_MAX, pl->comm) != MPI_SUCCESS ||
      MPI_Allreduce(&d, distance, 1, MPI_DOUBLE, MPI_MIN, pl->comm) != MPI_SUCCESS)
    return FMMCL_ERROR_INTERNAL;
  if (isinf(*distance)) *distance = NAN;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_mpi_plan_local(fmmcl_mpi_plan pl, fmmcl_plan *local) {
  if (!pl || !local) return FMMCL_ERROR_NULL_POINTER;
  *local = pl->local;
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_mpi_plan_destroy(fmmcl_mpi_plan pl) {
  if (!pl) return FMMCL_ERROR_NULL_POINTER;
  MPI_Barrier(pl->comm);
  plan_free(pl);
  return FMMCL_SUCCESS;
}
