/* check_tree3d.c — tests of the host octree, Morton sort, FMM lists U/V/W/X
 * and treecode lists: structural invariants, exact once-only coverage of every
 * source for every target leaf, and well-separation, on many point clouds. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tree/tree3d.h"

/* ---- deterministic point clouds ------------------------------------------ */

#define PI 3.14159265358979323846

/* Check's ck_assert reports every passing check to the parent process
 * through a pipe; millions of them in the loops below cost minutes, so the
 * helpers only call into Check when something fails. */
#define REQUIRE(expr, ...)                  \
  do {                                      \
    if (!(expr)) ck_abort_msg(__VA_ARGS__); \
  } while (0)

static uint64_t rng_state;

static uint64_t splitmix64(void) {
  uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* uniform in the open interval (0, 1) */
static double uniform01(void) { return ((double)(splitmix64() >> 11) + 0.5) * 0x1.0p-53; }

static void random_direction(double *p) {
  double z = 2.0 * uniform01() - 1.0, phi = 2.0 * PI * uniform01(), s = sqrt(1.0 - z * z);
  p[0] = s * cos(phi), p[1] = s * sin(phi), p[2] = z;
}

static double *points_alloc(size_t n) {
  double *p = malloc(3 * n * sizeof(double));
  ck_assert_ptr_nonnull(p);
  return p;
}

static double *uniform_cube(size_t n, uint64_t seed) {
  rng_state = seed;
  double *p = points_alloc(n);
  for (size_t i = 0; i < 3 * n; i++) p[i] = uniform01();
  return p;
}

/* Plummer sphere, scale radius 1, radius capped at 100 (a long tail, deep tree) */
static double *plummer_sphere(size_t n, uint64_t seed) {
  rng_state = seed;
  double *p = points_alloc(n);
  for (size_t i = 0; i < n; i++) {
    double r;
    do r = 1.0 / sqrt(pow(uniform01(), -2.0 / 3.0) - 1.0);
    while (r > 100.0);
    random_direction(p + 3 * i);
    for (int d = 0; d < 3; d++) p[3 * i + d] *= r;
  }
  return p;
}

/* uniform in a ball scaled to semi-axes a, a, c */
static double *ellipsoid(size_t n, double a, double c, uint64_t seed) {
  rng_state = seed;
  double *p = points_alloc(n);
  for (size_t i = 0; i < n; i++) {
    double r = cbrt(uniform01());
    random_direction(p + 3 * i);
    p[3 * i] *= a * r, p[3 * i + 1] *= a * r, p[3 * i + 2] *= c * r;
  }
  return p;
}

static double *sphere_surface(size_t n, uint64_t seed) {
  rng_state = seed;
  double *p = points_alloc(n);
  for (size_t i = 0; i < n; i++) random_direction(p + 3 * i);
  return p;
}

/* two unit balls 1e4 apart */
static double *two_clusters(size_t n, uint64_t seed) {
  double *p = ellipsoid(n, 1.0, 1.0, seed);
  for (size_t i = n / 2; i < n; i++) p[3 * i] += 1e4, p[3 * i + 1] -= 3e3;
  return p;
}

static double *identical_points(size_t n, double x, double y, double z) {
  double *p = points_alloc(n);
  for (size_t i = 0; i < n; i++) p[3 * i] = x, p[3 * i + 1] = y, p[3 * i + 2] = z;
  return p;
}

/* ---- geometry, independent of the library's integer arithmetic ---------- */

/* Largest gap between the two cubes along an axis (negative: they overlap). */
static double cube_gap(const fmmcl_tree3d_cell *a, const fmmcl_tree3d_cell *b) {
  double g = -INFINITY;
  for (int d = 0; d < 3; d++)
    g = fmax(g, fabs(a->center[d] - b->center[d]) - (a->half_width + b->half_width));
  return g;
}

/* Disjoint cubes of a dyadic tree are at least the smaller side apart, so
 * half the smaller half-width separates "touch" from "apart" robustly. */
static int touching(const fmmcl_tree3d_cell *a, const fmmcl_tree3d_cell *b) {
  return cube_gap(a, b) < 0.5 * fmin(a->half_width, b->half_width);
}

static int in_cell(const fmmcl_tree3d_cell *c, const double *x) {
  double tol = 1e-12 * c->half_width;
  for (int d = 0; d < 3; d++)
    if (x[d] < c->center[d] - c->half_width - tol || x[d] > c->center[d] + c->half_width + tol) return 0;
  return 1;
}

/* ---- tree invariants ------------------------------------------------------ */

static void check_sorted_set(const fmmcl_tree3d *t, const double *caller, size_t n, const uint64_t *keys,
                             const size_t *perm, const double *xyz) {
  char *seen = calloc(n, 1);
  ck_assert_ptr_nonnull(seen);
  size_t bad_perm = 0, bad_order = 0, bad_key = 0, bad_coord = 0, outside = 0;
  for (size_t i = 0; i < n; i++) {
    if (perm[i] >= n || seen[perm[i]]) {
      bad_perm++;
      continue;
    }
    seen[perm[i]] = 1;
    if (memcmp(xyz + 3 * i, caller + 3 * perm[i], 3 * sizeof(double))) bad_coord++;
    if (i && keys[i] < keys[i - 1]) bad_order++;
    if (keys[i] != fmmcl_morton3d_point_key(&t->cube, xyz + 3 * i)) bad_key++;
    for (int d = 0; d < 3; d++) {
      double u = xyz[3 * i + d] - t->cube.origin[d];
      if (!(u >= 0.0 && u < t->cube.width)) outside++;
    }
  }
  free(seen);
  REQUIRE(bad_perm == 0, "%zu entries break the permutation", bad_perm);
  REQUIRE(bad_coord == 0, "%zu sorted points differ from caller[perm[i]]", bad_coord);
  REQUIRE(bad_order == 0, "%zu keys decrease", bad_order);
  REQUIRE(bad_key == 0, "%zu keys differ from the key of their point", bad_key);
  REQUIRE(outside == 0, "%zu coordinates outside [origin, origin + width)", outside);
}

static void check_children(const fmmcl_tree3d *t, int32_t i) {
  const fmmcl_tree3d_cell *c = &t->cells[i];
  if (fmmcl_tree3d_is_leaf(c)) return;
  size_t s = c->src_begin, g = c->tgt_begin;
  for (int32_t k = c->child_begin; k < c->child_begin + c->n_children; k++) {
    const fmmcl_tree3d_cell *ch = &t->cells[k];
    REQUIRE((ch->parent) == (i), "ch->parent == i");
    REQUIRE((ch->level) == (c->level + 1), "ch->level == c->level + 1");
    REQUIRE((ch->key >> 3) == c->key, "child key does not extend its parent's");
    REQUIRE(ch->src_begin == s && ch->tgt_begin == g, "children do not tile the parent");
    REQUIRE(fmmcl_tree3d_n_src(ch) + fmmcl_tree3d_n_tgt(ch) > 0, "empty child kept");
    REQUIRE(fabs(ch->half_width - 0.5 * c->half_width) <= 1e-15 * c->half_width,
            "child not half its parent's size");
    s = ch->src_end, g = ch->tgt_end;
  }
  REQUIRE(s == c->src_end && g == c->tgt_end, "children do not tile the parent");
}

static void check_leaf_points(const fmmcl_tree3d *t, const fmmcl_tree3d_cell *c) {
  int shift = 3 * (FMMCL_MORTON_LEVELS - c->level);
  for (size_t i = c->src_begin; i < c->src_end; i++) {
    REQUIRE((t->source_keys[i] >> shift) == c->key, "(t->source_keys[i] >> shift) == c->key");
    REQUIRE(in_cell(c, t->source_xyz + 3 * i), "source %zu outside its leaf", i);
  }
  for (size_t i = c->tgt_begin; i < c->tgt_end; i++) {
    REQUIRE((t->target_keys[i] >> shift) == c->key, "(t->target_keys[i] >> shift) == c->key");
    REQUIRE(in_cell(c, t->target_xyz + 3 * i), "target %zu outside its leaf", i);
  }
}

static void check_leaves(const fmmcl_tree3d *t) {
  size_t s = 0, g = 0, overfull = 0, q = t->leaf_size;
  for (size_t k = 0; k < t->n_leaves; k++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[k]];
    REQUIRE(fmmcl_tree3d_is_leaf(c), "fmmcl_tree3d_is_leaf(c)");
    REQUIRE(c->src_begin == s && c->tgt_begin == g, "leaves out of Morton order");
    s = c->src_end, g = c->tgt_end;
    if (fmmcl_tree3d_n_src(c) > q || fmmcl_tree3d_n_tgt(c) > q) {
      REQUIRE(c->level == t->max_level, "leaf above the depth limit holds more than q = %zu", q);
      overfull++;
    }
    check_leaf_points(t, c);
  }
  REQUIRE(s == t->n_sources && g == t->n_targets, "s == t->n_sources && g == t->n_targets");
  REQUIRE((overfull) == (t->n_overfull_leaves), "overfull == t->n_overfull_leaves");
  REQUIRE((t->depth_limit_reached) == (overfull > 0), "t->depth_limit_reached == overfull > 0");
}

static void check_tree(const fmmcl_tree3d *t, const double *src, const double *tgt) {
  check_sorted_set(t, src, t->n_sources, t->source_keys, t->source_perm, t->source_xyz);
  if (tgt) check_sorted_set(t, tgt, t->n_targets, t->target_keys, t->target_perm, t->target_xyz);
  const fmmcl_tree3d_cell *root = &t->cells[0];
  REQUIRE(root->parent == -1 && root->level == 0 && root->src_begin == 0 && root->tgt_begin == 0,
          "root malformed");
  REQUIRE(root->src_end == t->n_sources && root->tgt_end == t->n_targets, "root does not hold every point");
  REQUIRE(t->n_levels >= 1 && t->n_levels <= t->max_level + 1, "%d levels", t->n_levels);
  size_t leaves = 0;
  for (int l = 0; l < t->n_levels; l++) {
    REQUIRE(t->level_begin[l + 1] > t->level_begin[l], "level %d empty", l);
    for (size_t i = t->level_begin[l]; i < t->level_begin[l + 1]; i++) {
      REQUIRE((t->cells[i].level) == (l), "t->cells[i].level == l");
      check_children(t, (int32_t)i);
      leaves += fmmcl_tree3d_is_leaf(&t->cells[i]);
    }
  }
  REQUIRE((t->level_begin[t->n_levels]) == (t->n_cells), "t->level_begin[t->n_levels] == t->n_cells");
  REQUIRE((leaves) == (t->n_leaves), "leaves == t->n_leaves");
  check_leaves(t);
}

/* ---- FMM lists ------------------------------------------------------------ */

#define FOR_EACH_ENTRY(csr, row, a) \
  for (size_t e_ = (csr)->offsets[row]; e_ < (csr)->offsets[(row) + 1] && ((a) = (csr)->indices[e_], 1); e_++)

static void check_csr_shape(const fmmcl_tree3d *t, const fmmcl_tree3d_csr *csr, int leaves_only) {
  REQUIRE((csr->n_rows) == (t->n_cells), "csr->n_rows == t->n_cells");
  REQUIRE((csr->offsets[0]) == (0), "csr->offsets[0] == 0");
  for (size_t r = 0; r < t->n_cells; r++) {
    size_t len = csr->offsets[r + 1] - csr->offsets[r];
    REQUIRE(csr->offsets[r + 1] >= csr->offsets[r], "csr->offsets[r + 1] >= csr->offsets[r]");
    const fmmcl_tree3d_cell *b = &t->cells[r];
    if (!fmmcl_tree3d_n_tgt(b) || (leaves_only && !fmmcl_tree3d_is_leaf(b)))
      REQUIRE(len == 0, "row %zu must be empty", r);
    int32_t a;
    FOR_EACH_ENTRY(csr, r, a) {
      REQUIRE(a >= 0 && (size_t)a < t->n_cells, "a >= 0 && (size_t)a < t->n_cells");
      REQUIRE(fmmcl_tree3d_n_src(&t->cells[a]) > 0, "a listed cell holds no source");
    }
  }
}

/* Each list entry against its definition, with independent geometry. */
static void check_fmm_definitions(const fmmcl_tree3d *t, const fmmcl_tree3d_fmm_lists *L) {
  check_csr_shape(t, &L->u, 1);
  check_csr_shape(t, &L->v, 0);
  check_csr_shape(t, &L->w, 1);
  check_csr_shape(t, &L->x, 0);
  for (size_t r = 0; r < t->n_cells; r++) {
    const fmmcl_tree3d_cell *b = &t->cells[r], *cells = t->cells;
    int32_t a;
    FOR_EACH_ENTRY(&L->u, r, a) {
      REQUIRE(fmmcl_tree3d_is_leaf(&cells[a]), "fmmcl_tree3d_is_leaf(&cells[a])");
      REQUIRE(touching(&cells[a], b), "U entry not adjacent");
    }
    FOR_EACH_ENTRY(&L->v, r, a) {
      const fmmcl_tree3d_cell *c = &cells[a];
      REQUIRE((c->level) == (b->level), "c->level == b->level");
      REQUIRE(!touching(c, b), "V entry adjacent");
      REQUIRE(touching(&cells[c->parent], &cells[b->parent]), "V entry's parent not adjacent");
      /* well separated: centres at least two sides apart along some axis */
      REQUIRE(cube_gap(c, b) >= 2.0 * b->half_width * (1.0 - 1e-9), "too close");
    }
    FOR_EACH_ENTRY(&L->w, r, a) {
      const fmmcl_tree3d_cell *c = &cells[a];
      REQUIRE(c->level > b->level, "W entry not finer than its leaf");
      REQUIRE(!touching(c, b), "W entry adjacent");
      REQUIRE(touching(&cells[c->parent], b), "W entry's parent not adjacent");
      REQUIRE(cube_gap(c, b) >= 2.0 * c->half_width * (1.0 - 1e-9), "too close");
    }
    FOR_EACH_ENTRY(&L->x, r, a) {
      const fmmcl_tree3d_cell *c = &cells[a];
      REQUIRE(fmmcl_tree3d_is_leaf(c), "fmmcl_tree3d_is_leaf(c)");
      REQUIRE(c->level < b->level, "X entry not coarser than its cell");
      REQUIRE(!touching(c, b), "X entry adjacent");
      REQUIRE(touching(c, &cells[b->parent]), "X entry not adjacent to the parent");
      REQUIRE(cube_gap(c, b) >= 2.0 * b->half_width * (1.0 - 1e-9), "too close");
    }
  }
}

static void add_sources(int *diff, const fmmcl_tree3d_cell *a) {
  diff[a->src_begin]++;
  diff[a->src_end]--;
}

/* For target leaf B, how many times each source is reached through U(B),
 * W(B), and V and X of B and of each of its ancestors; must be once each. */
static void check_fmm_coverage_of_leaf(const fmmcl_tree3d *t, const fmmcl_tree3d_fmm_lists *L, int32_t b,
                                       int *diff) {
  const fmmcl_tree3d_cell *cells = t->cells;
  memset(diff, 0, (t->n_sources + 1) * sizeof(int));
  int32_t a;
  FOR_EACH_ENTRY(&L->u, (size_t)b, a) add_sources(diff, &cells[a]);
  FOR_EACH_ENTRY(&L->w, (size_t)b, a) add_sources(diff, &cells[a]);
  for (int32_t p = b; p >= 0; p = cells[p].parent) {
    FOR_EACH_ENTRY(&L->v, (size_t)p, a) add_sources(diff, &cells[a]);
    FOR_EACH_ENTRY(&L->x, (size_t)p, a) add_sources(diff, &cells[a]);
  }
  int count = 0;
  for (size_t i = 0; i < t->n_sources; i++) {
    count += diff[i];
    if (count != 1)
      ck_abort_msg("target leaf %d (level %d) reaches source %zu %d times", b, cells[b].level, i, count);
  }
}

static void check_fmm_lists(const fmmcl_tree3d *t) {
  fmmcl_tree3d_fmm_lists L;
  REQUIRE(fmmcl_tree3d_fmm_lists_build(t, &L) == FMMCL_SUCCESS, "%s", fmmcl_last_error(NULL));
  check_fmm_definitions(t, &L);
  int *diff = malloc((t->n_sources + 1) * sizeof(int));
  ck_assert_ptr_nonnull(diff);
  for (size_t k = 0; k < t->n_leaves; k++)
    if (fmmcl_tree3d_n_tgt(&t->cells[t->leaves[k]])) check_fmm_coverage_of_leaf(t, &L, t->leaves[k], diff);
  free(diff);
  fmmcl_tree3d_stats st;
  REQUIRE(fmmcl_tree3d_stats_compute(t, &L, NULL, &st) == FMMCL_SUCCESS, "%s", fmmcl_last_error(NULL));
  REQUIRE((st.u.entries) == (L.u.offsets[t->n_cells]), "st.u.entries == L.u.offsets[t->n_cells]");
  REQUIRE((st.v.entries) == (L.v.offsets[t->n_cells]), "st.v.entries == L.v.offsets[t->n_cells]");
  REQUIRE(st.v.interactions == (double)st.v.entries, "st.v.interactions == (double)st.v.entries");
  fmmcl_tree3d_fmm_lists_free(&L);
}

/* ---- treecode lists ------------------------------------------------------- */

static double distance(const double *x, const double *y) {
  return sqrt((x[0] - y[0]) * (x[0] - y[0]) + (x[1] - y[1]) * (x[1] - y[1]) + (x[2] - y[2]) * (x[2] - y[2]));
}

/* The acceptance test of tree3d.h, from the sphere the lists carry (which
 * check_spheres holds to the sources by brute force). */
static int mac_by_hand(const double *sphere, const double *group, double theta) {
  return sphere[3] + group[3] < theta * distance(sphere, group);
}

/* Every cell's sphere: the centre of the box of its sources, found here by
 * brute force, and a radius that holds them all but is no larger than the
 * box's half-diagonal. */
static void check_spheres(const fmmcl_tree3d *t, const double *sphere) {
  for (size_t c = 0; c < t->n_cells; c++) {
    const fmmcl_tree3d_cell *a = &t->cells[c];
    if (!fmmcl_tree3d_n_src(a)) continue;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, diag = 0,
           ulp = 0;
    for (size_t i = a->src_begin; i < a->src_end; i++)
      for (int d = 0; d < 3; d++)
        lo[d] = fmin(lo[d], t->source_xyz[3 * i + d]), hi[d] = fmax(hi[d], t->source_xyz[3 * i + d]);
    for (int d = 0; d < 3; d++) {
      REQUIRE(fabs(sphere[4 * c + d] - 0.5 * (lo[d] + hi[d])) <= 1e-15 * (fabs(lo[d]) + fabs(hi[d])),
              "cell %zu: sphere centre off its sources' box", c);
      diag += (hi[d] - lo[d]) * (hi[d] - lo[d]);
      ulp = fmax(ulp, 1e-15 * (fabs(lo[d]) + fabs(hi[d])));
    }
    /* the rounded midpoint may sit an ulp of the coordinates off centre */
    REQUIRE(sphere[4 * c + 3] <= 0.5 * sqrt(diag) * (1 + 1e-14) + 2 * ulp, "cell %zu: radius beyond the box",
            c);
    for (size_t i = a->src_begin; i < a->src_end; i++)
      REQUIRE(distance(t->source_xyz + 3 * i, sphere + 4 * c) <= sphere[4 * c + 3] * (1 + 1e-14),
              "cell %zu: a source outside its sphere", c);
  }
}

/* The pointwise Barnes-Hut ratio max|y - s_A| / min|x - s_A| over the actual
 * sources y of A and targets x of group g, s_A the centre A's multipole is
 * expanded about. */
static double convergence_ratio(const fmmcl_tree3d *t, const fmmcl_tree3d_cell *a, const double *s,
                                const fmmcl_tree3d_treecode_lists *L, size_t g) {
  double rmax = 0.0, dmin = INFINITY;
  for (size_t i = a->src_begin; i < a->src_end; i++) rmax = fmax(rmax, distance(t->source_xyz + 3 * i, s));
  for (size_t i = L->group_begin[g]; i < L->group_begin[g + 1]; i++)
    dmin = fmin(dmin, distance(t->target_xyz + 3 * i, s));
  return rmax / dmin;
}

static void check_treecode_group(const fmmcl_tree3d *t, const fmmcl_tree3d_treecode_lists *L, size_t g,
                                 double theta, int *diff) {
  const fmmcl_tree3d_cell *cells = t->cells;
  const double *gs = L->group_sphere + 4 * g;
  memset(diff, 0, (t->n_sources + 1) * sizeof(int));
  int32_t a;
  FOR_EACH_ENTRY(&L->far, g, a) {
    REQUIRE(mac_by_hand(L->sphere + 4 * a, gs, theta), "far cell fails the MAC");
    for (int32_t p = cells[a].parent; p >= 0; p = cells[p].parent)
      REQUIRE(!mac_by_hand(L->sphere + 4 * p, gs, theta), "far cell whose ancestor was acceptable");
    if (theta <= 1.0)
      REQUIRE(convergence_ratio(t, &cells[a], L->sphere + 4 * a, L, g) < theta, "pointwise ratio >= theta");
    add_sources(diff, &cells[a]);
  }
  FOR_EACH_ENTRY(&L->near, g, a) {
    REQUIRE(fmmcl_tree3d_is_leaf(&cells[a]), "fmmcl_tree3d_is_leaf(&cells[a])");
    for (int32_t p = a; p >= 0; p = cells[p].parent)
      REQUIRE(!mac_by_hand(L->sphere + 4 * p, gs, theta), "near leaf under an acceptable cell");
    add_sources(diff, &cells[a]);
  }
  int count = 0;
  for (size_t i = 0; i < t->n_sources; i++) {
    count += diff[i];
    if (count != 1) ck_abort_msg("treecode: target group %zu reaches source %zu %d times", g, i, count);
  }
}

/* Groups tile each leaf's targets in order, at most group_size each and
 * within one of each other, each inside its sphere. */
static void check_groups(const fmmcl_tree3d *t, const fmmcl_tree3d_treecode_lists *L) {
  size_t g = 0;
  for (size_t k = 0; k < t->n_leaves; k++) {
    const fmmcl_tree3d_cell *c = &t->cells[t->leaves[k]];
    size_t at = c->tgt_begin, least = SIZE_MAX, most = 0;
    for (; at < c->tgt_end; g++) {
      REQUIRE(g < L->n_groups && L->group_begin[g] == at && L->group_leaf[g] == t->leaves[k],
              "group %zu does not continue leaf %zu", g, k);
      const size_t n = L->group_begin[g + 1] - at;
      REQUIRE(n >= 1 && n <= L->group_size, "group %zu holds %zu targets (at most %zu)", g, n, L->group_size);
      least = n < least ? n : least, most = n > most ? n : most;
      for (size_t i = at; i < at + n; i++)
        REQUIRE(distance(t->target_xyz + 3 * i, L->group_sphere + 4 * g) <=
                    L->group_sphere[4 * g + 3] * (1 + 1e-14),
                "group %zu: a target outside its sphere", g);
      at += n;
    }
    REQUIRE(at == c->tgt_end, "leaf %zu's groups overrun it", k);
    if (most) REQUIRE(most - least <= 1, "leaf %zu's groups hold %zu to %zu targets", k, least, most);
  }
  REQUIRE(g == L->n_groups && L->group_begin[g] == t->n_targets, "groups do not tile the targets");
}

static void check_treecode_lists(const fmmcl_tree3d *t, double theta, size_t group_size) {
  fmmcl_tree3d_treecode_lists L;
  REQUIRE(fmmcl_tree3d_treecode_lists_build(t, NULL, NULL, theta, group_size, &L) == FMMCL_SUCCESS, "%s",
          fmmcl_last_error(NULL));
  REQUIRE(L.far.n_rows == L.n_groups && L.near.n_rows == L.n_groups, "one row per group");
  check_groups(t, &L);
  check_spheres(t, L.sphere);
  int *diff = malloc((t->n_sources + 1) * sizeof(int));
  ck_assert_ptr_nonnull(diff);
  for (size_t g = 0; g < L.n_groups; g++) check_treecode_group(t, &L, g, theta, diff);
  free(diff);
  fmmcl_tree3d_treecode_lists_free(&L);
}

/* ---- colleagues against a brute-force search ----------------------------- */

/* Every same-level cell at offset (dx,dy,dz) in {-1,0,1}^3 is in its slot and
 * no other slot is filled; levels over 512 cells check a sample of rows. */
static void check_colleagues(const fmmcl_tree3d *t) {
  int32_t *coll = NULL;
  REQUIRE(fmmcl_tree3d_colleagues(t, &coll) == FMMCL_SUCCESS, "%s", fmmcl_last_error(NULL));
  for (int l = 0; l < t->n_levels; l++) {
    size_t b = t->level_begin[l], e = t->level_begin[l + 1], stride = (e - b + 2047) / 512;
    for (size_t i = b; i < e; i += stride) {
      int32_t want[FMMCL_TREE3D_COLLEAGUES];
      for (int k = 0; k < FMMCL_TREE3D_COLLEAGUES; k++) want[k] = -1;
      const fmmcl_tree3d_cell *a = &t->cells[i];
      for (size_t j = b; j < e; j++) {
        int slot = 0, near = 1;
        for (int d = 0; d < 3; d++) {
          int64_t off = (int64_t)t->cells[j].anchor[d] - (int64_t)a->anchor[d];
          near = near && off >= -1 && off <= 1;
          slot = slot * 3 + (int)(off + 1);
        }
        if (near) want[slot] = (int32_t)j;
      }
      for (int k = 0; k < FMMCL_TREE3D_COLLEAGUES; k++)
        REQUIRE(coll[FMMCL_TREE3D_COLLEAGUES * i + (size_t)k] == want[k], "cell %zu slot %d: %d, want %d", i,
                k, coll[FMMCL_TREE3D_COLLEAGUES * i + (size_t)k], want[k]);
    }
  }
  free(coll);
}

/* ---- one case: build, check everything ------------------------------------ */

static fmmcl_tree3d *check_case(size_t ns, const double *src, size_t nt, const double *tgt, size_t q,
                                int max_level) {
  fmmcl_tree3d *t = NULL;
  fmmcl_status st = fmmcl_tree3d_build(ns, src, nt, tgt, q, max_level, &t);
  REQUIRE(st == FMMCL_SUCCESS, "build: %s", fmmcl_last_error(NULL));
  check_tree(t, src, tgt);
  check_colleagues(t);
  check_fmm_lists(t);
  check_treecode_lists(t, 0.5, q);
  check_treecode_lists(t, 0.8, q > 2 ? q / 3 : 1);
  fmmcl_tree3d_stats s;
  REQUIRE(fmmcl_tree3d_stats_compute(t, NULL, NULL, &s) == FMMCL_SUCCESS, "%s", fmmcl_last_error(NULL));
  size_t cells = 0;
  for (int l = 0; l <= FMMCL_MORTON_LEVELS; l++) cells += s.cells_per_level[l];
  REQUIRE((cells) == (t->n_cells), "cells == t->n_cells");
  REQUIRE((s.n_leaves) == (t->n_leaves), "s.n_leaves == t->n_leaves");
  return t;
}

static void check_case_and_free(size_t ns, double *src, size_t nt, double *tgt, size_t q) {
  fmmcl_tree3d_destroy(check_case(ns, src, nt, tgt, q, 0));
  free(src);
  free(tgt);
}

/* ---- tests ---------------------------------------------------------------- */

START_TEST(test_morton_roundtrip) {
  rng_state = 7;
  for (int i = 0; i < 10000; i++) {
    uint32_t x = (uint32_t)splitmix64() & 0x1fffff, y = (uint32_t)splitmix64() & 0x1fffff,
             z = (uint32_t)splitmix64() & 0x1fffff, a, b, c;
    uint64_t k = fmmcl_morton3d_encode(x, y, z);
    REQUIRE(k >> 63 == 0, "key uses bit 63");
    fmmcl_morton3d_decode(k, &a, &b, &c);
    REQUIRE(a == x && b == y && c == z, "decode(encode(%u, %u, %u)) differs", x, y, z);
  }
  ck_assert(fmmcl_morton3d_encode(1, 0, 0) == 4 && fmmcl_morton3d_encode(0, 1, 0) == 2 &&
            fmmcl_morton3d_encode(0, 0, 1) == 1 && fmmcl_morton3d_encode(2, 0, 0) == 32);
}
END_TEST

static int compare_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* large enough to take the multithreaded path; duplicates test stability */
START_TEST(test_radix_sort) {
  size_t n = 300000;
  uint64_t *keys = malloc(n * sizeof *keys), *orig = malloc(n * sizeof *orig);
  size_t *perm = malloc(n * sizeof *perm);
  ck_assert(keys && orig && perm);
  rng_state = 11;
  for (size_t i = 0; i < n; i++) orig[i] = keys[i] = (splitmix64() >> 1) & (i % 3 ? ~UINT64_C(0) : 0xffff);
  ck_assert_int_eq(fmmcl_morton3d_sort(keys, perm, n), FMMCL_SUCCESS);
  for (size_t i = 0; i < n; i++) {
    REQUIRE(keys[i] == orig[perm[i]], "keys[%zu] != orig[perm[%zu]]", i, i);
    REQUIRE(!(i && keys[i] == keys[i - 1]) || perm[i] > perm[i - 1], "sort not stable");
  }
  qsort(orig, n, sizeof *orig, compare_u64);
  ck_assert(memcmp(orig, keys, n * sizeof *keys) == 0);
  free(keys), free(orig), free(perm);
}
END_TEST

START_TEST(test_uniform_cube) { check_case_and_free(20000, uniform_cube(20000, 1), 0, NULL, 32); }
END_TEST
START_TEST(test_plummer) { check_case_and_free(20000, plummer_sphere(20000, 2), 0, NULL, 64); }
END_TEST
START_TEST(test_ellipsoid) { check_case_and_free(10000, ellipsoid(10000, 1.0, 4.0, 3), 0, NULL, 16); }
END_TEST
START_TEST(test_sphere_surface) { check_case_and_free(10000, sphere_surface(10000, 4), 0, NULL, 24); }
END_TEST
START_TEST(test_two_clusters) { check_case_and_free(8000, two_clusters(8000, 5), 0, NULL, 20); }
END_TEST
START_TEST(test_q_equals_one) { check_case_and_free(2000, uniform_cube(2000, 6), 0, NULL, 1); }
END_TEST

START_TEST(test_separate_targets) {
  /* targets reach beyond the sources: target-only and source-only leaves */
  check_case_and_free(12000, uniform_cube(12000, 7), 8000, plummer_sphere(8000, 8), 40);
}
END_TEST

START_TEST(test_disjoint_targets) {
  double *tgt = ellipsoid(3000, 0.5, 0.5, 10);
  for (size_t i = 0; i < 3000; i++) tgt[3 * i] += 3.0;
  check_case_and_free(5000, ellipsoid(5000, 1.0, 1.0, 9), 3000, tgt, 30);
}
END_TEST

START_TEST(test_all_identical) {
  double *p = identical_points(500, 0.25, -3.0, 7.0);
  fmmcl_tree3d *t = check_case(500, p, 0, NULL, 16, 0);
  /* one point position: the root is split to the key width and stops there */
  ck_assert_int_eq(t->depth_limit_reached, 1);
  ck_assert_uint_eq(t->n_overfull_leaves, 1);
  ck_assert_uint_eq(t->n_leaves, 1);
  ck_assert_int_eq(t->n_levels, FMMCL_MORTON_LEVELS + 1);
  fmmcl_tree3d_destroy(t);
  free(p);
}
END_TEST

START_TEST(test_coincident_clump_in_uniform) {
  /* 100 copies of one point among uniform points: one overfull leaf only */
  double *p = uniform_cube(3000, 12);
  for (size_t i = 0; i < 100; i++) p[3 * i] = 0.5, p[3 * i + 1] = 0.25, p[3 * i + 2] = 0.125;
  fmmcl_tree3d *t = check_case(3000, p, 0, NULL, 20, 0);
  ck_assert_int_eq(t->depth_limit_reached, 1);
  ck_assert_uint_eq(t->n_overfull_leaves, 1);
  fmmcl_tree3d_destroy(t);
  free(p);
}
END_TEST

START_TEST(test_max_level_cap) {
  double *p = uniform_cube(20000, 13);
  fmmcl_tree3d *t = check_case(20000, p, 0, NULL, 4, 3);
  ck_assert_int_eq(t->n_levels, 4);
  ck_assert_int_eq(t->depth_limit_reached, 1);
  ck_assert_uint_eq(t->n_leaves, 512);
  fmmcl_tree3d_destroy(t);
  free(p);
}
END_TEST

START_TEST(test_fewer_than_q) {
  double *p = uniform_cube(10, 14);
  fmmcl_tree3d *t = check_case(10, p, 0, NULL, 64, 0);
  ck_assert_uint_eq(t->n_cells, 1);
  ck_assert_int_eq(t->depth_limit_reached, 0);
  fmmcl_tree3d_destroy(t);
  free(p);
}
END_TEST

START_TEST(test_single_point) {
  double p[3] = {1.0, 2.0, 3.0}, x[3] = {-1.0, 2.0, 5.0};
  fmmcl_tree3d *t = check_case(1, p, 0, NULL, 1, 0);
  ck_assert_uint_eq(t->n_cells, 1);
  fmmcl_tree3d_destroy(t);
  /* one source and one distinct target fit one leaf of q = 1 */
  t = check_case(1, p, 1, x, 1, 0);
  ck_assert_uint_eq(t->n_leaves, 1);
  fmmcl_tree3d_destroy(t);
}
END_TEST

START_TEST(test_stats) {
  double *p = uniform_cube(4096, 15);
  fmmcl_tree3d *t = check_case(4096, p, 0, NULL, 16, 0);
  fmmcl_tree3d_fmm_lists f;
  fmmcl_tree3d_treecode_lists tc;
  ck_assert_int_eq(fmmcl_tree3d_fmm_lists_build(t, &f), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_tree3d_treecode_lists_build(t, NULL, NULL, 0.5, 8, &tc), FMMCL_SUCCESS);
  fmmcl_tree3d_stats s;
  ck_assert_int_eq(fmmcl_tree3d_stats_compute(t, &f, &tc, &s), FMMCL_SUCCESS);
  ck_assert_uint_eq(s.n_source_leaves, t->n_leaves);
  ck_assert_uint_eq(s.n_target_leaves, t->n_leaves);
  ck_assert(s.max_leaf_sources <= 16 && s.max_leaf_targets <= 16);
  /* in a uniform tree V lists hold at most 6^3 - 3^3 = 189 cells */
  ck_assert(s.v.max_row <= 189 && s.v.entries > 0);
  /* P2P pairs of U and near both include every leaf with itself */
  double self = 0.0;
  for (size_t k = 0; k < t->n_leaves; k++) {
    double n = (double)fmmcl_tree3d_n_src(&t->cells[t->leaves[k]]);
    self += n * n;
  }
  ck_assert(s.u.interactions >= self && s.near.interactions >= self);
  ck_assert(s.far.entries > 0);
  fmmcl_tree3d_fmm_lists_free(&f);
  fmmcl_tree3d_treecode_lists_free(&tc);
  fmmcl_tree3d_destroy(t);
  free(p);
}
END_TEST

START_TEST(test_errors) {
  double p[6] = {0, 0, 0, 1, 1, 1};
  fmmcl_tree3d *t = NULL;
  ck_assert_int_eq(fmmcl_tree3d_build(2, p, 0, NULL, 8, 0, NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_tree3d_build(2, NULL, 0, NULL, 8, 0, &t), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_tree3d_build(0, p, 0, NULL, 8, 0, &t), FMMCL_ERROR_EMPTY_INPUT);
  ck_assert_int_eq(fmmcl_tree3d_build(2, p, 0, p, 8, 0, &t), FMMCL_ERROR_EMPTY_INPUT);
  ck_assert_int_eq(fmmcl_tree3d_build(2, p, 0, NULL, 0, 0, &t), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_tree3d_build(2, p, 0, NULL, 8, 22, &t), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_tree3d_build(2, p, 0, NULL, 8, -1, &t), FMMCL_ERROR_INVALID_ARGUMENT);
  p[4] = NAN;
  ck_assert_int_eq(fmmcl_tree3d_build(2, p, 0, NULL, 8, 0, &t), FMMCL_ERROR_NONFINITE_INPUT);
  ck_assert(strlen(fmmcl_last_error(NULL)) > 0);
  p[4] = 1.0;
  ck_assert_int_eq(fmmcl_tree3d_build(2, p, 0, NULL, 8, 0, &t), FMMCL_SUCCESS);
  fmmcl_tree3d_treecode_lists tc;
  ck_assert_int_eq(fmmcl_tree3d_treecode_lists_build(t, NULL, NULL, 0.0, 8, &tc),
                   FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_tree3d_treecode_lists_build(t, NULL, NULL, NAN, 8, &tc),
                   FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_tree3d_destroy(t);
  fmmcl_tree3d_destroy(NULL);
}
END_TEST

static Suite *tree3d_suite(void) {
  Suite *s = suite_create("tree3d");
  TCase *basics = tcase_create("basics");
  tcase_add_test(basics, test_morton_roundtrip);
  tcase_add_test(basics, test_radix_sort);
  tcase_add_test(basics, test_errors);
  tcase_add_test(basics, test_stats);
  suite_add_tcase(s, basics);
  TCase *clouds = tcase_create("clouds");
  tcase_set_timeout(clouds, 120);
  tcase_add_test(clouds, test_uniform_cube);
  tcase_add_test(clouds, test_plummer);
  tcase_add_test(clouds, test_ellipsoid);
  tcase_add_test(clouds, test_sphere_surface);
  tcase_add_test(clouds, test_two_clusters);
  tcase_add_test(clouds, test_q_equals_one);
  tcase_add_test(clouds, test_separate_targets);
  tcase_add_test(clouds, test_disjoint_targets);
  suite_add_tcase(s, clouds);
  TCase *edges = tcase_create("edges");
  tcase_add_test(edges, test_all_identical);
  tcase_add_test(edges, test_coincident_clump_in_uniform);
  tcase_add_test(edges, test_max_level_cap);
  tcase_add_test(edges, test_fewer_than_q);
  tcase_add_test(edges, test_single_point);
  suite_add_tcase(s, edges);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(tree3d_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
