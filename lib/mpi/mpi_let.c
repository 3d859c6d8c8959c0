/* mpi_let.c — which of this rank's sources another rank needs, and in what
 * form: the local essential tree against that rank's target boxes. A cell
 * far from every box (radius / distance below the separation) goes as
 * equivalent charges of the order its distance needs, when those are fewer
 * than its particles; a cell near some box is opened; a near leaf goes as
 * particles. Testing against the rank's boxes, not its bounding box, lets
 * cells near the rank but far from its targets travel as charges. For a
 * function other than 1/r there are no equivalent charges: cells go as
 * particles, except those beyond the function's cut-off from every box,
 * which go not at all. */
#include <math.h>
#include <stdlib.h>

#include "mpi_internal.h"

static double box_distance(const double *c, const double *box) {
  double s = 0;
  for (int d = 0; d < 3; d++) {
    double t = c[d] < box[d] ? box[d] - c[d] : c[d] > box[3 + d] ? c[d] - box[3 + d] : 0;
    s += t * t;
  }
  return sqrt(s);
}

static int push_particles(mpi_let_send *s, size_t begin, size_t end) {
  size_t need = s->n_particles + (end - begin);
  if (need > s->cap_particles) {
    size_t cap = s->cap_particles ? s->cap_particles : 256;
    while (cap < need) cap *= 2;
    size_t *p = realloc(s->particles, cap * sizeof *p);
    if (!p) return -1;
    s->particles = p, s->cap_particles = cap;
  }
  for (size_t i = begin; i < end; i++) s->particles[s->n_particles++] = i;
  s->n_values += end - begin;
  return 0;
}

static int push_cell(mpi_let_send *s, int cell, int order) {
  if (s->n_cells == s->cap_cells) {
    size_t cap = s->cap_cells ? 2 * s->cap_cells : 64;
    int *c = realloc(s->cells, cap * sizeof *c), *o;
    if (!c) return -1;
    s->cells = c;
    if (!(o = realloc(s->orders, cap * sizeof *o))) return -1;
    s->orders = o, s->cap_cells = cap;
  }
  s->cells[s->n_cells] = cell, s->orders[s->n_cells++] = order;
  s->n_values += mpi_equivalent_count(order);
  return 0;
}

typedef struct let_walk {
  const mpi_tree *tree;
  const double *boxes;
  double eps, separation;
  int equivalent; /* 1/r: far cells as equivalent charges */
  double cutoff;  /* beyond it the function is negligible (INFINITY: none) */
  mpi_let_send *send;
} let_walk;

/* list: the boxes still near enough to matter; rest: a lower bound on the
 * distance from the cell's centre to every other box. */
static int visit(const let_walk *w, int ci, const size_t *list, size_t n, double rest) {
  const mpi_cell *c = &w->tree->cells[ci];
  double *dist = malloc((n ? n : 1) * sizeof *dist);
  if (!dist) return -1;
  double dmin = rest;
  for (size_t i = 0; i < n; i++) {
    dist[i] = box_distance(c->center, w->boxes + 6 * list[i]);
    if (dist[i] < dmin) dmin = dist[i];
  }
  size_t count = c->end - c->begin;
  if (dmin - c->radius > w->cutoff) {
    free(dist);
    return 0;
  }
  if (!w->equivalent && w->cutoff == INFINITY) {
    free(dist);
    return push_particles(w->send, c->begin, c->end);
  }
  if (w->equivalent && c->radius < w->separation * dmin) {
    int p = mpi_equivalent_order(c->radius, dmin, w->eps);
    free(dist);
    if (mpi_equivalent_count(p) < count) return push_cell(w->send, ci, p);
    return push_particles(w->send, c->begin, c->end);
  }
  int leaf = 1;
  for (int q = 0; q < 8; q++) leaf &= c->child[q] < 0;
  if (leaf) {
    free(dist);
    return push_particles(w->send, c->begin, c->end);
  }
  /* Boxes this far cannot stop any descendant from being separated. */
  double keep = 2 * sqrt(3.0) * c->half * (1 + 1 / w->separation);
  size_t *near = malloc((n ? n : 1) * sizeof *near), m = 0;
  if (!near) {
    free(dist);
    return -1;
  }
  double dropped = rest;
  for (size_t i = 0; i < n; i++) {
    if (dist[i] < keep) near[m++] = list[i];
    else if (dist[i] < dropped) dropped = dist[i];
  }
  free(dist);
  int err = 0;
  for (int q = 0; q < 8 && !err; q++) {
    int k = c->child[q];
    if (k < 0) continue;
    const mpi_cell *ch = &w->tree->cells[k];
    double shift = 0;
    for (int d = 0; d < 3; d++) shift += (ch->center[d] - c->center[d]) * (ch->center[d] - c->center[d]);
    err = visit(w, k, near, m, dropped - sqrt(shift));
  }
  free(near);
  return err;
}

int mpi_let_select(const mpi_tree *tree, const double *boxes, size_t n_boxes, double eps, int equivalent,
                   double cutoff, mpi_let_send *send) {
  if (tree->n_cells == 0 || n_boxes == 0) return 0;
  size_t *list = malloc(n_boxes * sizeof *list);
  if (!list) return -1;
  for (size_t i = 0; i < n_boxes; i++) list[i] = i;
  /* The order is capped at 40: the separation must let that meet eps. */
  double sep = pow(eps, 1.0 / 41) / 0.8;
  let_walk w = {tree, boxes, eps, sep < 0.7 ? sep : 0.7, equivalent, cutoff, send};
  int err = visit(&w, 0, list, n_boxes, INFINITY);
  free(list);
  return err;
}

void mpi_let_send_free(mpi_let_send *s) { free(s->particles), free(s->cells), free(s->orders); }
