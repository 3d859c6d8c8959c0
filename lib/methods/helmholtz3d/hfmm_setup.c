/* hfmm_setup.c — what a 3D Helmholtz FMM plan builds once: the octree and
 * its U, V, W, X lists (lib/tree/), the lists in launch order with their
 * translations' geometry, the rotation and coaxial operators (in double,
 * hfmm_math.c), the kernels and the device buffers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/launch.h"
#include "methods/helmholtz3d/hfmm.h"
#include "methods/helmholtz3d/hfmm_math.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* A list being built on the host: rows, their entries and, for
 * translations, each entry's geometry. */
typedef struct {
  size_t n_rows, n_entries, cap_rows, cap_entries;
  int *rows, *begin, *entries, *geo;
  double *phi;
} host_list;

static int hl_grow(host_list *h) {
  if (h->n_rows + 1 >= h->cap_rows) {
    h->cap_rows = h->cap_rows ? 2 * h->cap_rows : 64;
    int *r = realloc(h->rows, h->cap_rows * sizeof(int)), *b = realloc(h->begin, h->cap_rows * sizeof(int));
    if (r) h->rows = r;
    if (b) h->begin = b;
    if (!r || !b) return -1;
  }
  if (h->n_entries + 1 >= h->cap_entries) {
    h->cap_entries = h->cap_entries ? 2 * h->cap_entries : 256;
    int *e = realloc(h->entries, h->cap_entries * sizeof(int));
    int *g = realloc(h->geo, 2 * h->cap_entries * sizeof(int));
    double *p = realloc(h->phi, h->cap_entries * sizeof(double));
    if (e) h->entries = e;
    if (g) h->geo = g;
    if (p) h->phi = p;
    if (!e || !g || !p) return -1;
  }
  return 0;
}

static int hl_row(host_list *h, int row) {
  if (hl_grow(h)) return -1;
  h->rows[h->n_rows] = row;
  h->begin[h->n_rows++] = (int)h->n_entries;
  return 0;
}

static int hl_add(host_list *h, int entry, int theta, int coax, double phi) {
  if (hl_grow(h)) return -1;
  h->entries[h->n_entries] = entry;
  h->geo[2 * h->n_entries] = theta;
  h->geo[2 * h->n_entries + 1] = coax;
  h->phi[h->n_entries++] = phi;
  return 0;
}

static void hl_free(host_list *h) {
  free(h->rows), free(h->begin), free(h->entries), free(h->geo), free(h->phi);
  memset(h, 0, sizeof *h);
}

/* The distinct rotations and coaxial operators the translations use. */
#define MAX_THETAS 512
#define MAX_COAX 4096
typedef struct {
  double theta[MAX_THETAS];
  size_t n_theta;
  struct {
    int kind, level;
    long key;
    double d, s_in, s_out;
  } coax[MAX_COAX];
  size_t n_coax;
} geometry;

static int theta_id(geometry *g, double theta) {
  for (size_t i = 0; i < g->n_theta; i++)
    if (fabs(g->theta[i] - theta) < 1e-12) return (int)i;
  if (g->n_theta == MAX_THETAS) return -1;
  g->theta[g->n_theta] = theta;
  return (int)g->n_theta++;
}

static int coax_id(geometry *g, int kind, int level, double d, double w, double s_in, double s_out) {
  const long key = lround(d * d / (w * w) * 64);
  for (size_t i = 0; i < g->n_coax; i++)
    if (g->coax[i].kind == kind && g->coax[i].level == level && g->coax[i].key == key) return (int)i;
  if (g->n_coax == MAX_COAX) return -1;
  g->coax[g->n_coax].kind = kind;
  g->coax[g->n_coax].level = level;
  g->coax[g->n_coax].key = key;
  g->coax[g->n_coax].d = d;
  g->coax[g->n_coax].s_in = s_in;
  g->coax[g->n_coax].s_out = s_out;
  return (int)g->n_coax++;
}

/* A cell's side and centre in the device's units (exact). */
static double side(int level) { return 2 / (double)(1 << level); }
double hfmm_cell_centre(const fmmcl_tree3d_cell *c, int d) {
  return -1 + (2 * (double)c->anchor[d] + 1) / (double)(1 << c->level);
}

/* min(1, |k| side): a cell's expansions are scaled so that small cells
 * and low frequencies neither underflow nor overflow (hfmm_math.h). */
double hfmm_level_scale(const hfmm_state *s, int level) {
  return fmin(1, hypot(s->k_re, s->k_im) * s->unit * side(level));
}

/* The geometry of the translation of cell from to cell to (the shift
 * to - from): its rotation (th), coaxial operator (co) and azimuth; -1
 * when the tables are full. */
static int translation_geometry(geometry *g, const fmmcl_tree3d *t, const hfmm_state *s, int kind, int from,
                                int to, int *th, int *co, double *phi) {
  const fmmcl_tree3d_cell *a = &t->cells[from], *b = &t->cells[to];
  double v[3];
  for (int i = 0; i < 3; i++) v[i] = hfmm_cell_centre(b, i) - hfmm_cell_centre(a, i);
  const double d = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  /* polar angles past pi/2 use the rotation of pi - theta (the kernel's
   * mirror), which halves the rotations the host makes */
  const double theta = acos(fmax(-1, fmin(1, v[2] / d)));
  const int id = theta_id(g, theta <= M_PI / 2 ? theta : M_PI - theta);
  *th = id < 0 ? -1 : theta <= M_PI / 2 ? id : -id - 1;
  *co = coax_id(g, kind, a->level, d, side(a->level), hfmm_level_scale(s, a->level),
                hfmm_level_scale(s, b->level));
  *phi = atan2(v[1], v[0]);
  return id < 0 || *co < 0 ? -1 : 0;
}

/* Adds the translation of cell from to cell to. */
static int add_translation(host_list *h, geometry *g, const fmmcl_tree3d *t, const hfmm_state *s, int kind,
                           int from, int to) {
  int th, co;
  double phi;
  if (translation_geometry(g, t, s, kind, from, to, &th, &co, &phi)) return -1;
  return hl_add(h, from, th, co, phi);
}

static fmmcl_status upload_list(fmmcl_plan plan, const host_list *h, int translation, hfmm_list *d) {
  fmmcl_context ctx = plan->ctx;
  const hfmm_state *s = plan->impl;
  d->n_rows = h->n_rows;
  if (h->n_rows == 0) return FMMCL_SUCCESS;
  h->begin[h->n_rows] = (int)h->n_entries; /* hl_grow kept room */
  fmmcl_status st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, h->n_rows * sizeof(int),
                                     h->rows, &d->rows);
  if (!st)
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (h->n_rows + 1) * sizeof(int),
                          h->begin, &d->begin);
  if (!st)
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, h->n_entries * sizeof(int),
                          h->entries, &d->entries);
  if (!st && translation) {
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 2 * h->n_entries * sizeof(int),
                          h->geo, &d->geo);
    void *phi = malloc(h->n_entries * s->real_size);
    if (!st && !phi) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; !st && i < h->n_entries; i++) fmmcl_put_real(phi, s->real_size, i, h->phi[i]);
    if (!st)
      st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, h->n_entries * s->real_size, phi,
                            &d->phi);
    free(phi);
  }
  return st;
}

static void release_list(hfmm_list *d) {
  fmmcl_release(&d->rows);
  fmmcl_release(&d->begin);
  fmmcl_release(&d->entries);
  fmmcl_release(&d->geo);
  fmmcl_release(&d->phi);
}

void hfmm_release(hfmm_state *s) {
  fmmcl_release(&s->k_p2e);
  fmmcl_release(&s->k_e2p);
  fmmcl_release(&s->k_translate);
  fmmcl_release(&s->k_p2p);
  fmmcl_release(&s->k_m2l);
  fmmcl_release(&s->program);
  cl_mem *m2l[] = {&s->m2l.targets, &s->m2l.begin, &s->m2l.sources, &s->m2l.geo, &s->m2l.eim};
  for (size_t i = 0; i < sizeof m2l / sizeof m2l[0]; i++) fmmcl_release(m2l[i]);
  cl_mem *mems[] = {&s->src,      &s->tgt, &s->out, &s->centre, &s->scale, &s->cell_src,
                    &s->cell_tgt, &s->M,   &s->L,   &s->dmat,   &s->coax};
  for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++) fmmcl_release(mems[i]);
  hfmm_list *lists[] = {&s->p2m, &s->p2l, &s->l2p, &s->m2p, &s->p2p};
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) release_list(lists[i]);
  for (int l = 0; l <= FMMCL_MORTON_LEVELS; l++) release_list(&s->m2m[l]), release_list(&s->l2l[l]);
  fmmcl_pinned_free(&s->src_pin);
  fmmcl_pinned_free(&s->out_pin);
  fmmcl_tree3d_fmm_lists_free(&s->lists);
  free(s->src_local);
  s->src_local = NULL;
  fmmcl_tree3d_destroy(s->tree);
  s->tree = NULL;
}

/* The host lists of every phase, with the translations' geometry. */
typedef struct {
  host_list p2m, p2l, l2p, m2p, p2p, m2m[FMMCL_MORTON_LEVELS + 1], l2l[FMMCL_MORTON_LEVELS + 1];
} all_lists;

static void free_all(all_lists *a) {
  hl_free(&a->p2m), hl_free(&a->p2l), hl_free(&a->l2p), hl_free(&a->m2p), hl_free(&a->p2p);
  for (int l = 0; l <= FMMCL_MORTON_LEVELS; l++) hl_free(&a->m2m[l]), hl_free(&a->l2l[l]);
}

/* Copies CSR row c of csr into h when it has entries. */
static int csr_rows(host_list *h, const fmmcl_tree3d_csr *csr, size_t c) {
  const size_t b = csr->offsets[c], e = csr->offsets[c + 1];
  if (b == e) return 0;
  if (hl_row(h, (int)c)) return -1;
  for (size_t i = b; i < e; i++)
    if (hl_add(h, csr->indices[i], 0, 0, 0)) return -1;
  return 0;
}

static int build_lists(hfmm_state *s, all_lists *a, geometry *g, double *coarsest) {
  const fmmcl_tree3d *t = s->tree;
  const fmmcl_tree3d_fmm_lists *fl = &s->lists;
  int lmin = 1 << 30;
  for (size_t c = 0; c < t->n_cells; c++) {
    const fmmcl_tree3d_cell *cell = &t->cells[c];
    const int leaf = fmmcl_tree3d_is_leaf(cell);
    if (leaf && fmmcl_tree3d_n_src(cell) > 0 && (hl_row(&a->p2m, (int)c) || hl_add(&a->p2m, (int)c, 0, 0, 0)))
      return -1;
    if (leaf && fmmcl_tree3d_n_tgt(cell) > 0 && (hl_row(&a->l2p, (int)c) || hl_add(&a->l2p, (int)c, 0, 0, 0)))
      return -1;
    if (csr_rows(&a->p2p, &fl->u, c) || csr_rows(&a->m2p, &fl->w, c) || csr_rows(&a->p2l, &fl->x, c))
      return -1;
    /* a parent gathers its children's multipoles; a child with targets
     * takes its parent's local */
    if (!leaf && fmmcl_tree3d_n_src(cell) > 0) {
      host_list *h = &a->m2m[cell->level];
      if (hl_row(h, (int)c)) return -1;
      for (int j = 0; j < cell->n_children; j++) {
        const int ch = cell->child_begin + j;
        if (fmmcl_tree3d_n_src(&t->cells[ch]) > 0 && add_translation(h, g, t, s, HFMM_M2M, ch, (int)c))
          return -1;
      }
    }
    if (cell->parent >= 0 && cell->level >= 2 && fmmcl_tree3d_n_tgt(cell) > 0) {
      host_list *h = &a->l2l[cell->level];
      if (hl_row(h, (int)c) || add_translation(h, g, t, s, HFMM_L2L, cell->parent, (int)c)) return -1;
    }
    /* the cells whose expansions carry far fields: V rows and entries (V
     * pairs share a level), W entries, X rows; the V list itself goes in
     * batches (m2l_batches) */
    const size_t vb = fl->v.offsets[c], ve = fl->v.offsets[c + 1];
    if (vb < ve || fl->x.offsets[c] < fl->x.offsets[c + 1]) lmin = cell->level < lmin ? cell->level : lmin;
    for (size_t i = fl->w.offsets[c]; i < fl->w.offsets[c + 1]; i++)
      lmin = t->cells[fl->w.indices[i]].level < lmin ? t->cells[fl->w.indices[i]].level : lmin;
  }
  *coarsest = lmin < (1 << 30) ? sqrt(3.0) * side(lmin) * s->unit : 0;
  return 0;
}

/* The batched M2L's shape for order p: as many targets per group as
 * their staged expansions fit in local memory (at most 8), a work-item per
 * (share of the degrees, m', target) in the forward rotation. */
static void m2l_shape(fmmcl_context ctx, hfmm_state *s) {
  const size_t nc = (size_t)(s->order + 1) * (size_t)(s->order + 1);
  size_t budget = (size_t)ctx->dev.info.local_mem_bytes;
  budget = budget > 4096 ? budget - 4096 : budget / 2;
  if (budget > 45056) budget = 45056;
  int b = (int)(budget / (nc * 2 * s->real_size));
  b = b < 1 ? 1 : b > 8 ? 8 : b;
  const int split = 2;
  size_t maxwg = ctx->dev.info.max_work_group_size;
  int wgs;
  for (;;) {
    wgs = (split * b * (2 * s->order + 1) + 31) / 32 * 32;
    if ((size_t)wgs <= maxwg || b == 1) break;
    b--;
  }
  s->m2l.b = b, s->m2l.split = split, s->m2l.wgs = wgs;
}

/* The V list in batches, each entry's geometry (rotation, coaxial
 * operator, direction's azimuth table row) added to g, uploaded with the
 * azimuth table e^(i m phi) of the 343 direction keys. */
static fmmcl_status m2l_batches(fmmcl_plan plan, hfmm_state *s, geometry *g) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_tree3d *t = s->tree;
  const size_t rs = s->real_size, np = (size_t)s->order + 1;
  m2l_shape(ctx, s);
  fmmcl_tree3d_v_batches h;
  const int rc = fmmcl_tree3d_v_batches_build(t, &s->lists.v, s->m2l.b, &h);
  if (rc)
    return fmmcl_fail(ctx, rc == -1 ? FMMCL_ERROR_OUT_OF_MEMORY : FMMCL_ERROR_INTERNAL,
                      rc == -1 ? "out of host memory for the Helmholtz FMM's M2L batches"
                               : "Helmholtz FMM: a V-list pair across levels");
  s->m2l.n_groups = h.n_groups;
  fmmcl_status st = FMMCL_SUCCESS;
  int *geo = malloc(4 * (h.n_entries ? h.n_entries : 1) * sizeof(int));
  double phi[343] = {0};
  void *eim = calloc(343 * np * 2, rs);
  if (!geo || !eim) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t e = 0; !st && e < h.n_entries; e++) {
    int th, co;
    if (translation_geometry(g, t, s, HFMM_M2L, h.pair[2 * e], h.pair[2 * e + 1], &th, &co, &phi[h.dir[e]]))
      st = fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "Helmholtz FMM: too many distinct translations");
    geo[4 * e] = th, geo[4 * e + 1] = co, geo[4 * e + 2] = h.dir[e], geo[4 * e + 3] = 0;
  }
  for (size_t k = 0; !st && k < 343; k++)
    for (size_t m = 0; m < np; m++) {
      fmmcl_put_real(eim, rs, 2 * (k * np + m), cos((double)m * phi[k]));
      fmmcl_put_real(eim, rs, 2 * (k * np + m) + 1, sin((double)m * phi[k]));
    }
  const cl_mem_flags ro = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
  const size_t b = (size_t)h.b, ne = h.n_entries ? h.n_entries : 1, ng = h.n_groups ? h.n_groups : 1;
  if (!st) st = fmmcl_buffer_new(ctx, ro, ng * b * sizeof(int), h.targets, &s->m2l.targets);
  if (!st) st = fmmcl_buffer_new(ctx, ro, (h.n_groups + 1) * sizeof(int), h.begin, &s->m2l.begin);
  if (!st) st = fmmcl_buffer_new(ctx, ro, ne * b * sizeof(int), h.sources, &s->m2l.sources);
  if (!st) st = fmmcl_buffer_new(ctx, ro, 4 * ne * sizeof(int), geo, &s->m2l.geo);
  if (!st) st = fmmcl_buffer_new(ctx, ro, 343 * np * 2 * rs, eim, &s->m2l.eim);
  free(geo), free(eim);
  fmmcl_tree3d_v_batches_free(&h);
  return st;
}

/* The rotations and coaxial operators, computed in double and rounded to
 * the plan's precision. */
static fmmcl_status upload_operators(fmmcl_plan plan, hfmm_state *s, const geometry *g) {
  fmmcl_context ctx = plan->ctx;
  const int p = s->order;
  const size_t ds = (size_t)hfmm_dsize(p), cs = (size_t)hfmm_csize(p), rs = s->real_size;
  const size_t nt = g->n_theta ? g->n_theta : 1, nc = g->n_coax ? g->n_coax : 1;
  double *d = calloc(nt * ds, sizeof(double));
  double complex *c = calloc(nc * cs, sizeof(double complex));
  void *dr = malloc(nt * ds * rs), *cr = malloc(2 * nc * cs * rs);
  hfmm_gaunt gaunt = {0};
  fmmcl_status st = FMMCL_SUCCESS;
  if (!d || !c || !dr || !cr || hfmm_gaunt_init(&gaunt, p))
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for the Helmholtz FMM's operators");
  if (!st) {
#pragma omp parallel for schedule(dynamic)
    for (size_t i = 0; i < g->n_theta; i++) hfmm_wigner_d(g->theta[i], p, d + i * ds);
    const double complex k = (s->k_re + I * s->k_im) * s->unit;
#pragma omp parallel for schedule(dynamic)
    for (size_t i = 0; i < g->n_coax; i++)
      hfmm_coaxial(g->coax[i].kind, k, g->coax[i].d, g->coax[i].s_in, g->coax[i].s_out, &gaunt, c + i * cs);
    for (size_t i = 0; i < nt * ds; i++) fmmcl_put_real(dr, rs, i, d[i]);
    for (size_t i = 0; i < nc * cs; i++) {
      fmmcl_put_real(cr, rs, 2 * i, creal(c[i]));
      fmmcl_put_real(cr, rs, 2 * i + 1, cimag(c[i]));
    }
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, nt * ds * rs, dr, &s->dmat);
    if (!st)
      st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 2 * nc * cs * rs, cr, &s->coax);
  }
  s->n_thetas = g->n_theta;
  s->n_coax = g->n_coax;
  hfmm_gaunt_free(&gaunt);
  free(d), free(c), free(dr), free(cr);
  return st;
}

static fmmcl_status build_kernels(fmmcl_plan plan, hfmm_state *s) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  s->wgs = 64;
  if (s->wgs > ctx->dev.info.max_work_group_size) s->wgs = ctx->dev.info.max_work_group_size;
  /* the near field's leaves hold up to 20 p targets: wider groups take
   * them in fewer passes over the sources */
  s->p2p_wgs = 128;
  if (s->p2p_wgs > ctx->dev.info.max_work_group_size) s->p2p_wgs = ctx->dev.info.max_work_group_size;
  /* arrays for the plan's order (the batched M2L's unrolled loops and
   * registers need it at build time, and the other kernels' private arrays
   * are no larger than it needs), and the near field's pair body with only
   * the gradient and dipole terms the plan has */
  /* the P2M's chunk of source bases: 32 KiB, less where the device has
   * less local memory than that and the Legendre factors' table */
  const size_t nl = (size_t)(s->order + 2) * (size_t)(s->order + 3) / 2,
               local = ctx->dev.info.local_mem_bytes;
  const size_t spare = local > 2 * nl * s->real_size + 1024 ? local - 2 * nl * s->real_size - 1024 : 0;
  const size_t p2e_budget = spare < 32768 ? spare : 32768;
  snprintf(
      plan->build_options, sizeof plan->build_options,
      "%s -DPMAX=%d -DHFMM_GRADIENT=%d -DHFMM_DIPOLES=%d -DWGS=%zu -DP2P_WGS=%zu -DP2E_BUDGET=%zu -DM2L_B=%d "
      "-DM2L_SPLIT=%d -DM2L_WGS=%d",
      o->precision == FMMCL_DOUBLE ? "-DFMMCL_DOUBLE=1" : "-DFMMCL_SINGLE=1", s->order, o->gradient != 0,
      o->dipoles != 0, s->wgs, s->p2p_wgs, p2e_budget, s->m2l.b, s->m2l.split, s->m2l.wgs);
  const char *file = "helmholtz3d/hfmm.cl";
  fmmcl_status st = fmmcl_program_build(ctx, file, plan->build_options, &s->program, NULL);
  static const char *const names[] = {"hfmm_p2e", "hfmm_e2p", "hfmm_translate", "hfmm_p2p",
                                      "hfmm_m2l_batched"};
  cl_kernel *const ks[] = {&s->k_p2e, &s->k_e2p, &s->k_translate, &s->k_p2p, &s->k_m2l};
  return st ? st : fmmcl_create_kernels(ctx, s->program, file, 5, names, ks);
}

/* Per cell: centre (relative to the root's, REAL4), scale, source and
 * target ranges; points sorted, relative to the root's centre. */
static fmmcl_status upload_cells_and_points(fmmcl_plan plan, hfmm_state *s) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_tree3d *t = s->tree;
  const size_t rs = s->real_size, nc = t->n_cells, nt = plan->n_targets;
  void *centre = calloc(4 * nc, rs), *scale = malloc(nc * rs), *tgt = calloc(4 * (nt ? nt : 1), rs);
  int *cs = malloc(2 * nc * sizeof(int)), *ct = malloc(2 * nc * sizeof(int));
  fmmcl_status st = FMMCL_SUCCESS;
  if (!centre || !scale || !tgt || !cs || !ct)
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t c = 0; !st && c < nc; c++) {
    const fmmcl_tree3d_cell *cell = &t->cells[c];
    for (int d = 0; d < 3; d++) fmmcl_put_real(centre, rs, 4 * c + (size_t)d, hfmm_cell_centre(cell, d));
    fmmcl_put_real(scale, rs, c, hfmm_level_scale(s, cell->level));
    cs[2 * c] = (int)cell->src_begin, cs[2 * c + 1] = (int)cell->src_end;
    ct[2 * c] = (int)cell->tgt_begin, ct[2 * c + 1] = (int)cell->tgt_end;
  }
  s->src_local = malloc(3 * plan->n_sources * sizeof(double));
  if (!st && !s->src_local) st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t l = 0; !st && l < t->n_leaves; l++) {
    const fmmcl_tree3d_cell *leaf = &t->cells[t->leaves[l]];
    double c[3];
    for (int d = 0; d < 3; d++) c[d] = hfmm_cell_centre(leaf, d);
    for (size_t i = leaf->tgt_begin; i < leaf->tgt_end; i++)
      for (int d = 0; d < 3; d++)
        fmmcl_put_real(tgt, rs, 4 * i + (size_t)d,
                       (t->target_xyz[3 * i + d] - s->origin[d]) / s->unit - c[d]);
    for (size_t i = leaf->src_begin; i < leaf->src_end; i++)
      for (int d = 0; d < 3; d++)
        s->src_local[3 * i + d] = (t->source_xyz[3 * i + d] - s->origin[d]) / s->unit - c[d];
  }
  const cl_mem_flags ro = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
  const size_t ncoef = (size_t)(s->order + 1) * (size_t)(s->order + 1);
  if (!st) st = fmmcl_buffer_new(ctx, ro, 4 * nc * rs, centre, &s->centre);
  if (!st) st = fmmcl_buffer_new(ctx, ro, nc * rs, scale, &s->scale);
  if (!st) st = fmmcl_buffer_new(ctx, ro, 2 * nc * sizeof(int), cs, &s->cell_src);
  if (!st) st = fmmcl_buffer_new(ctx, ro, 2 * nc * sizeof(int), ct, &s->cell_tgt);
  if (!st) st = fmmcl_buffer_new(ctx, ro, 4 * nt * rs, tgt, &s->tgt);
  if (!st)
    st = fmmcl_buffer_fits(ctx, 2 * nc * ncoef * rs, "the Helmholtz FMM's expansions", "use fewer points");
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 2 * nc * ncoef * rs, NULL, &s->M);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 2 * nc * ncoef * rs, NULL, &s->L);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 8 * nt * rs, NULL, &s->out);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, 12 * plan->n_sources * rs, NULL, &s->src);
  if (!st) st = fmmcl_pinned_alloc(ctx, 12 * plan->n_sources * rs, 1, &s->src_pin);
  if (!st) st = fmmcl_pinned_alloc(ctx, 8 * nt * rs, 0, &s->out_pin);
  free(centre), free(scale), free(tgt), free(cs), free(ct);
  return st;
}

/* Leaves of up to 20 p points for the tolerance's order p: a leaf's near
 * field (27 leaves of sources) against its V list (up to 189 translations
 * of O(p^3)) balance about there on the H100 (benchmarks/README.md); a
 * failing order rule fails again later with its message. */
static size_t default_leaf_size(fmmcl_context ctx, const fmmcl_plan_options *o) {
  int p;
  return hfmm_choose_order(ctx, o, 0, &p) ? 64 : 20 * (size_t)p;
}

fmmcl_status hfmm_setup(fmmcl_plan plan, hfmm_state *s, const double *sources, const double *targets) {
  fmmcl_context ctx = plan->ctx;
  const fmmcl_plan_options *o = &plan->opt;
  s->real_size = o->precision == FMMCL_DOUBLE ? 8 : 4;
  s->k_re = o->wavenumber_re;
  s->k_im = o->wavenumber_im;
  const size_t q = o->leaf_size > 0 ? (size_t)o->leaf_size : default_leaf_size(ctx, o);
  fmmcl_status st = fmmcl_tree3d_build(plan->n_sources, sources, plan->n_targets,
                                       plan->targets_are_sources ? NULL : targets, q, 0, &s->tree);
  if (st) return fmmcl_fail(ctx, st, "%s", fmmcl_last_error(NULL));
  st = fmmcl_tree3d_fmm_lists_build(s->tree, &s->lists);
  if (st) return fmmcl_fail(ctx, st, "%s", fmmcl_last_error(NULL));
  for (int d = 0; d < 3; d++) s->origin[d] = s->tree->cells[0].center[d];
  s->unit = s->tree->cells[0].half_width;
  s->n_levels = s->tree->n_levels;
  all_lists a;
  memset(&a, 0, sizeof a);
  geometry *g = calloc(1, sizeof *g);
  double coarsest = 0;
  if (!g || build_lists(s, &a, g, &coarsest))
    st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for the Helmholtz FMM's lists");
  if (!st) st = hfmm_choose_order(ctx, o, coarsest, &s->order);
  if (!st) st = upload_list(plan, &a.p2m, 0, &s->p2m);
  if (!st) st = upload_list(plan, &a.p2l, 0, &s->p2l);
  if (!st) st = upload_list(plan, &a.l2p, 0, &s->l2p);
  if (!st) st = upload_list(plan, &a.m2p, 0, &s->m2p);
  if (!st) st = upload_list(plan, &a.p2p, 0, &s->p2p);
  for (int l = 0; !st && l <= FMMCL_MORTON_LEVELS; l++) {
    st = upload_list(plan, &a.m2m[l], 1, &s->m2m[l]);
    if (!st) st = upload_list(plan, &a.l2l[l], 1, &s->l2l[l]);
  }
  if (!st) st = m2l_batches(plan, s, g);
  if (!st) st = upload_operators(plan, s, g);
  if (!st) st = build_kernels(plan, s);
  if (!st) st = upload_cells_and_points(plan, s);
  free_all(&a);
  free(g);
  return st;
}
