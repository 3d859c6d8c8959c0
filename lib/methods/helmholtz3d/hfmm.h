/* hfmm.h — private to the 3D Helmholtz FMM: its state (host tree and
 * lists, device tables and expansions), the order rule, and the setup. */
#ifndef FMMCL_HFMM_H
#define FMMCL_HFMM_H

#include "core/internal.h"
#include "core/launch.h"
#include "tree/tree3d.h"

/* Largest order: in double, the translation kernel's two staged expansions
 * ((p+1)^2 complex each) stay within 31 KiB of local memory; in float the
 * coaxial operators' largest entries (scaled outgoing functions of degree
 * 2p, about (4p-1)!! / 2^(2p+1)) stay inside float's range. */
#define HFMM_MAX_ORDER_DOUBLE 30
#define HFMM_MAX_ORDER_SINGLE 16

/* One list on the device: group g works on cell rows[g] with entries
 * entries[begin[g] .. begin[g+1]); translations carry per entry the
 * rotation and coaxial ids (geo) and the shift's azimuth (phi). */
typedef struct hfmm_list {
  size_t n_rows;
  cl_mem rows, begin, entries, geo, phi;
} hfmm_list;


/* The batched M2L on the device: groups of m2l_b target cells, work-groups
 * of m2l_wgs, the forward rotation split m2l_split ways. */
typedef struct hfmm_m2l_device {
  size_t n_groups;
  int b, wgs, split;
  cl_mem targets, begin, sources, geo, eim;
} hfmm_m2l_device;

typedef struct hfmm_state {
  int order;
  size_t real_size, wgs, p2p_wgs; /* work-group sizes: most kernels', the near field's */
  /* Device coordinates are in units of the root's half-side (unit),
   * relative to the root's centre (origin) for cell centres, exact dyadic
   * numbers, and to their leaf's centre for points; k_re, k_im are the
   * wavenumber in those units, dipoles go up divided by unit, and results
   * come back divided by unit (potential) and unit^2 (gradient). */
  double origin[3], unit;
  double k_re, k_im;
  double *src_local; /* sorted sources relative to their leaf's centre, 3 each */
  fmmcl_tree3d *tree;
  fmmcl_tree3d_fmm_lists lists;
  cl_program program;
  cl_kernel k_p2e, k_e2p, k_translate, k_p2p, k_m2l;
  cl_mem src, tgt, out, centre, scale, cell_src, cell_tgt, M, L, dmat, coax;
  hfmm_list p2m, p2l, l2p, m2p, p2p;
  hfmm_m2l_device m2l;
  hfmm_list m2m[FMMCL_MORTON_LEVELS + 1], l2l[FMMCL_MORTON_LEVELS + 1]; /* by level of the rows */
  int n_levels;
  size_t n_thetas, n_coax; /* rotations and coaxial operators uploaded */
  fmmcl_pinned src_pin, out_pin;
} hfmm_state;

/* The order for a plan whose coarsest expanded cells are d across (0: no
 * far field): opt->order when set, else the tolerance's order for the
 * static part plus the box size in wavelengths; the failure when it is
 * over the precision's limit (the plan's frequency is too high). */
fmmcl_status hfmm_choose_order(fmmcl_context ctx, const fmmcl_plan_options *opt, double d, int *order);
/* What FMMCL_AUTO runs for a Helmholtz sum (targets NULL: the sources):
 * the FMM above a number of pairs where its order rule accepts the
 * points' bounding cube, else the direct sum. */
fmmcl_method hfmm_auto_method(const fmmcl_plan_options *opt, size_t n_sources, const double *sources,
                              size_t n_targets, const double *targets);
/* A cell's centre in the device's units (exact), and the scale of its
 * level's expansions: min(1, |k| side), so that small cells and low
 * frequencies neither underflow nor overflow (hfmm_math.h). */
double hfmm_cell_centre(const fmmcl_tree3d_cell *c, int d);
double hfmm_level_scale(const hfmm_state *s, int level);
/* The M2L of every V pair, M to L, in batches (hfmm_method.c). */
fmmcl_status hfmm_run_m2l(fmmcl_plan plan, hfmm_state *s, fmmcl_event_log *log);
/* Test hook (lib/testing/hfmm_debug.c): the plan's multipoles set to seeded
 * values, its M2L run alone, and *err the largest difference of the
 * device's locals from the plain-C translations of every V pair, relative
 * to their largest coefficient. */
fmmcl_status fmmcl_hfmm_debug_m2l(fmmcl_plan plan, unsigned seed, double *err);
/* Tree, lists, operators, kernels and buffers (hfmm_setup.c). */
fmmcl_status hfmm_setup(fmmcl_plan plan, hfmm_state *s, const double *sources, const double *targets);
void hfmm_release(hfmm_state *s);

#endif /* FMMCL_HFMM_H */
