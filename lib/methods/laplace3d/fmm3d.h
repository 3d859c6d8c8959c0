/* fmm3d.h — private to the 3D Laplace FMM and treecode drivers: their shared
 * state (host tree and lists, packed device buffers, kernels), the phases
 * they launch, and test hooks that run single phases. */
#ifndef FMMCL_FMM3D_H
#define FMMCL_FMM3D_H

#include "core/internal.h"
#include "tree/tree3d.h"
#include "tree/tree3d_device_sort.h"

/* Largest expansion order per precision: in float the scaled I_{2P} of M2L
 * stays finite up to P = 16 (cl/expansions3d.cl), and past P ~ 10 single
 * precision rounding, not truncation, dominates anyway. In double, P = 32
 * is where M2L's staged harmonics (NCOEF2 + NCOEF complex) reach 42 KiB of
 * local memory, under the 48 KiB of most GPUs; it reaches about 1e-11. */
#define FMMCL_FMM3D_MAX_ORDER_DOUBLE 32
#define FMMCL_FMM3D_MAX_ORDER_SINGLE 16

/* The phases of the FMM (FMMCL_PHASE_* bits, also the launch order of
 * execute): all eight; of the treecode: those without local expansions. */
#define FMMCL_FMM3D_FMM_PHASES 0xffu
#define FMMCL_FMM3D_TREECODE_PHASES (FMMCL_PHASE_P2M | FMMCL_PHASE_M2M | FMMCL_PHASE_M2P | FMMCL_PHASE_P2P)

/* A list on the device: group g works on cell rows[g] with entries
 * entries[begin[g] .. begin[g+1]) (cell indices); only rows with entries
 * are kept. */
typedef struct fmm3d_device_list {
  size_t n_rows;
  cl_mem rows, begin, entries;
} fmm3d_device_list;

/* Per-level launches in the order they run: launch k covers groups
 * [begin[k], begin[k+1]) of the packed arrays. */
typedef struct fmm3d_level_groups {
  size_t n_launches;
  size_t begin[FMMCL_MORTON_LEVELS + 2];
} fmm3d_level_groups;

typedef struct fmm3d_state {
  int treecode;      /* 0: FMM lists; 1: treecode near/far lists */
  int tree_borrowed; /* tree and fmm lists belong to another plan's state
                                 * (a hybrid plan's other sub-plan): never freed here */
  int order;         /* expansion order p */
  size_t real_size;  /* 4 or 8 */
  size_t ncoef;      /* (p+1)(p+2)/2 complex coefficients per cell */
  /* Device frame: coordinates in units of the root cube's half-side
   * (unit), relative to its centre (origin), so that every cell centre is
   * an exact dyadic number even in float; each point is sent relative to
   * its leaf's centre, computed in double before rounding (local
   * coordinates), and kernels add exact centre differences between frames.
   * Results come back scaled by unit (potential) and unit^2 (gradient). */
  double origin[3], unit;
  double tree_seconds, lists_seconds;
  double sort_seconds;   /* device keys and sort of the tree build; 0 on the host path */
  double tables_seconds; /* packing and uploading what execute reuses */

  fmmcl_tree3d *tree;
  /* from the device sort: the caller's points and their permutations left
   * on the device (the tree's xyz arrays are then NULL); upload_tables packs
   * them there in the leaves' frames (fmmcl_tree3d_device_pack, which needs
   * fp64 as the sort does: without it the host builds the tree and packs)
   * and adopts them */
  fmmcl_tree3d_device_points dev_src, dev_tgt;
  fmmcl_tree3d_fmm_lists fmm;
  fmmcl_tree3d_treecode_lists tc;

  cl_program exp_program, p2p_program;
  cl_kernel k_p2m, k_m2m, k_m2l, k_p2l, k_l2l, k_l2p, k_m2p, k_p2p;
  size_t exp_wgs, p2p_wgs;
  size_t p2p_tpw; /* targets per P2P work-item: a P2P chunk holds p2p_wgs * p2p_tpw */

  /* points (sorted), results, per-cell tables, expansions */
  cl_mem src, tgt, out, center, cell_src, cell_tgt, M, L;
  cl_mem src_lo, tgt_lo; /* what rounding the exact offsets lost (P2P adds them where compensate) */
  int compensate;        /* the P2P adds the low parts (-DCOMPENSATE=1; fmm3d_setup.c) */
  cl_mem leaves, leaf_src_begin, leaf_tgt_begin; /* P2M and L2P over all leaves */
  cl_mem m2m_parents, m2m_children;              /* non-leaf cells, deepest level first */
  fmm3d_level_groups m2m_levels;
  cl_mem l2l_pairs; /* (child, parent), level 1 first */
  fmm3d_level_groups l2l_levels;
  fmm3d_device_list m2l, p2l, m2p, p2p; /* V, X, W (or far), U (or near) */
  /* the P2P's work-groups (fmm3d_p2p.cl): int4 (p2p row, first target,
   * end target, 0), each row's target leaf cut into chunks of at most
   * p2p_wgs * p2p_tpw targets; remade when the points move */
  cl_mem p2p_chunks;
  size_t n_p2p_chunks;
  /* the kernels of an in-place update (fmm3d_update.c), made at the first
   * and kept for the next ones */
  fmmcl_tree3d_device_kit *update_kit;
  /* M2P (cl/expansions3d.cl m2p): m2p_wgs work-items a group, m2p_split
   * groups a list row (a target leaf; the treecode: a target group);
   * exp_center REAL4 (x, y, z, b) per cell, the centre its multipole is
   * expanded about for M2P and the radius of its sources about it
   * (treecode: the sources' box, tree3d.h; the FMM passes center);
   * m2p_bound the error per term the entries' degrees aim at (0: all P) */
  size_t m2p_wgs, m2p_span, m2p_split; /* span: targets a group takes a pass */
  int m2p_tpt;                         /* targets a work-item (span / 32) */
  double m2p_bound;
  cl_mem exp_center;
  /* treecode: its multipoles are expanded about exp_frame (x, y, z,
   * 1/side) per cell, the centre of exp_center with the cell's scale:
   * p2m_about for leaves, the FMM's m2m given exp_frame for parents */
  cl_kernel k_p2m_about;
  cl_mem exp_frame;
  /* treecode: its lists' target groups (tree3d.h), the rows of its M2P:
   * int2 targets, REAL4 their leaf's centre (the targets' frame) and REAL4
   * their sphere (centre, radius) in the device frame */
  cl_mem group_tgt, group_frame, group_sphere;

  /* execute moves charges and results in the caller's order, through
   * pinned staging, and permutes them on the device (fmm3d_p2p.cl) */
  cl_kernel k_charges, k_unsort;
  cl_mem src_perm, tgt_perm; /* int: sorted index -> caller's index */
  cl_mem charges, out_user;  /* REAL[n_sources], REAL4[n_targets], caller's order */
  fmmcl_pinned q_pin, out_pin;
  /* during fmmcl_fmm3d_upload_tables only: one pinned block through which
   * each large table goes up in turn (pageable uploads crawl, see
   * pinned_host.c) */
  fmmcl_pinned stage;

  /* M2L shift table (fmm3d_m2l_table.c): I_n^m of the 7^3 same-level shifts,
   * (2p+1)^2 REAL2 each (both signs of m when m2l_signed), and the shift id
   * of every V entry (parallel to m2l.entries, for m2l per cell and the
   * Stokes FMM's joint M2L); the V list in batches for m2l_batched (lib/tree/tree3d.h
   * fmmcl_tree3d_v_batches: m2l_b target cells a group, m2l_groups groups,
   * work-groups of m2l_wgs) */
  cl_mem m2l_table, m2l_shift;
  int m2l_signed;
  cl_mem m2l_targets, m2l_begin, m2l_sources, m2l_dir;
  size_t m2l_groups, m2l_wgs;
  int m2l_b;
  int m2l_batched;  /* m2l_batched, else m2l per cell (fmm3d_kernels.c) */
  double grow;      /* the root cube's growth (fmmcl_fmm3d_cube_growth), kept for updates */
  size_t m2l_batch; /* m2l per cell: V entries staged a round */

  /* Dipole sources and Hessian output (fmmcl_plan_evaluate; the kernels
   * are built with -DDIPOLES=1 / -DHESSIAN=1 only for such plans): dip
   * REAL4 per sorted source in the device frame's units, dip_user the
   * caller's 3 REALs per source; hess REAL[6] per sorted target, hess_user
   * in the caller's order. Unused buffers stay NULL (kernels get src/out). */
  int dipoles, hessian;
  cl_kernel k_dipoles, k_unsort_hessian;
  cl_mem dip, dip_user, hess, hess_user;
} fmm3d_state;

/* ---- choosing the order (fmm3d_order.c) ---------------------------------- */

/* The order a plan uses: opt->order when set (checked against the precision's
 * maximum), else the smallest p whose predicted error meets opt->tolerance
 * (default 1e-6 double, 1e-4 single when both are 0). */
fmmcl_status fmmcl_fmm3d_choose_order(fmmcl_context ctx, const fmmcl_plan_options *opt, int treecode,
                                      int *order);
/* A treecode plan whose opt.theta is 0: the largest theta of 0.6, 0.5, 0.4,
 * 0.3 whose order meets the tolerance (the last one's error otherwise),
 * kept in plan->opt.theta, and its order. */
fmmcl_status fmmcl_fmm3d_choose_theta(fmmcl_plan plan, int *order);
/* Predicted relative L2 error of the potential at order p (the rule above). */
double fmmcl_fmm3d_predicted_error(int treecode, double theta, int p);

/* The treecode's M2P error per term, theta^(p+1), what the worst entry the
 * MAC accepts reaches at degree p: an entry whose geometry bounds the
 * ratio lower needs only the degrees that reach it (cl/expansions3d.cl
 * m2p_degree), so every entry's truncation meets one bound. */
double fmmcl_fmm3d_m2p_term_bound(double theta, int p);
/* The degree q <= p an M2P entry uses: the smallest with ratio^(q+1) <=
 * bound (the kernel's m2p_degree, for the tests' reference). */
int fmmcl_fmm3d_m2p_degree(double ratio, double bound, int p);

/* ---- create and destroy (fmm3d_setup.c, fmm3d_buffers.c) ------------------ */

/* Tree, lists, kernels, device buffers: everything execute reuses. */
fmmcl_status fmmcl_fmm3d_setup(fmmcl_plan plan, fmm3d_state *s, const double *sources, const double *targets);
/* A 3D FMM plan's create that borrows donor's host tree and FMM lists
 * (built on the host, so with their sorted points) instead of building
 * them: the hybrid plan's second sub-plan. donor must outlive the plan. */
fmmcl_status fmmcl_fmm3d_create_borrowing(fmmcl_plan plan, const double *sources, const double *targets,
                                          const fmm3d_state *donor);
fmmcl_status fmmcl_fmm3d_build_kernels(fmmcl_plan plan, fmm3d_state *s);
fmmcl_status fmmcl_fmm3d_upload_tables(fmmcl_plan plan, fmm3d_state *s);
/* A device buffer of bytes holding host's bytes (host NULL: uninitialised);
 * large contents go up through s->stage when it is big enough. */
fmmcl_status fmmcl_fmm3d_buffer(fmmcl_plan plan, fmm3d_state *s, cl_mem_flags flags, size_t bytes,
                                const void *host, cl_mem *buf);
void fmmcl_fmm3d_release(fmm3d_state *s);
/* The P2P chunks of the list csr (U, or the treecode's near list; its
 * rows numbered as in the device list) for the cells' target ranges
 * (s->tree's, or those of new positions) into *chunks, *n of them. */
fmmcl_status fmmcl_fmm3d_upload_p2p_chunks(fmmcl_plan plan, fmm3d_state *s, const fmmcl_tree3d_cell *cells,
                                           const fmmcl_tree3d_csr *csr, cl_mem *chunks, size_t *n);
void fmmcl_fmm3d_release_list(fmm3d_device_list *dl);
/* The threshold of compensated offsets (fmm3d_setup.c): a point set needs
 * them when one of its points has a close neighbour, with unit roundoff u
 * and close meaning e > ratio r. */
void fmmcl_fmm3d_compensate_rule(fmmcl_plan plan, const fmm3d_state *s, double *u, double *ratio);
/* New positions for an FMM plan (fmm3d_update.c) when its octree stays
 * the same: *done 1 then, else 0 and the plan untouched (a new tree, a
 * treecode or borrowed tree, no device sort, another compensation, points
 * the plan's checks refuse: the caller checks and rebuilds). */
fmmcl_status fmmcl_fmm3d_update(fmmcl_plan plan, const double *sources, const double *targets, int *done);
/* The same from positions in the caller's device buffers (3 doubles a
 * point, checked by the caller for context and size; targets NULL when
 * they are the sources): nothing is read to the host but the box. */
fmmcl_status fmmcl_fmm3d_update_buffers(fmmcl_plan plan, cl_mem sources, cl_mem targets, int *done);
/* The points per leaf a plan takes when its options say 0 (fmm3d_setup.c):
 * on a GPU the FMM's by its order (the M2L's cost against the P2P's). */
size_t fmmcl_fmm3d_default_leaf_size(const fmmcl_device_info *d, int treecode, int order, size_t real_size);
/* The factor the FMM grows its root cube by for n points in leaves of at
 * most q (fmm3d_setup.c): 1 to 2. */
double fmmcl_fmm3d_cube_growth(size_t n, size_t q);
/* The FMM's leaf size whatever its order: 512 on a GPU, 256 elsewhere
 * (the larger leaves default_leaf_size picks; the Stokes FMM's). */
size_t fmmcl_fmm3d_fixed_leaf_size(const fmmcl_device_info *d);

/* The M2L shift table and per-entry shift ids (fmm3d_m2l_table.c); fails
 * with FMMCL_ERROR_INTERNAL if a V entry is not a same-level pair. */
fmmcl_status fmmcl_fmm3d_upload_m2l_table(fmmcl_plan plan, fmm3d_state *s);
size_t fmmcl_fmm3d_m2l_table_bytes(const fmm3d_state *s);
void fmmcl_fmm3d_release_m2l_table(fmm3d_state *s);

/* The centre of cell c in the device frame (exact in double and float). */
double fmmcl_fmm3d_cell_center(const fmmcl_tree3d_cell *c, int d);

/* The frame_size hook of both methods' ops: the half-diagonal, in world
 * units, of the leaf holding the caller's point index. */
double fmmcl_fmm3d_frame_size(fmmcl_plan plan, int target, size_t index);

/* ---- execution (fmm3d_phases.c) ------------------------------------------- */

/* Uploads charges (caller's order), sets them into the sorted source buffer
 * and zeros M, L and out; records "upload". */
fmmcl_status fmmcl_fmm3d_upload_charges(fmmcl_plan plan, fmm3d_state *s, const double *charges);
/* Runs the phases in mask, in the order of the enum, recording each. */
fmmcl_status fmmcl_fmm3d_run_phases(fmmcl_plan plan, fmm3d_state *s, unsigned mask);
/* Uploads dipoles (caller's order, 3 per source; NULL: none) into dip in
 * the device frame's units and zeros hess (dipole and Hessian plans). */
fmmcl_status fmmcl_fmm3d_upload_dipoles(fmmcl_plan plan, fmm3d_state *s, const double *dipoles);
/* Unpermutes hess into the caller's order and reads it into hessian (6 per
 * target, xx yy zz xy xz yz). */
fmmcl_status fmmcl_fmm3d_download_hessian(fmmcl_plan plan, fmm3d_state *s, double *hessian);
/* Unpermutes out into the caller's order on the device, reads it back and
 * widens it into potential and gradient; records "download". */
fmmcl_status fmmcl_fmm3d_download(fmmcl_plan plan, fmm3d_state *s, double *potential, double *gradient);

/* ---- phases on the caller's buffers (fmm3d_far.c) -------------------------- */

/* The state of a 3D Laplace FMM plan (charges, or dipoles and Hessians),
 * NULL for any other plan (a treecode, another method). */
fmm3d_state *fmmcl_fmm3d_state_of(fmmcl_plan plan);
/* Runs the phases in mask but the P2P (fmmcl_fmm3d_run_phases) on
 * expansion buffers M and L (n_cells * ncoef REAL2 each) and results out
 * (REAL4 per sorted target; NULL: the plan's) of the caller's, which
 * zeroes them first where it needs to: the far field of whatever charges
 * (src's w) and dipoles (dip) the caller put into the plan's sorted
 * sources, for a caller that sums the U list's pairs itself. */
fmmcl_status fmmcl_fmm3d_far_phases(fmmcl_plan plan, unsigned mask, cl_mem M, cl_mem L, cl_mem out);

/* ---- work counts (fmm3d_counts.c) ------------------------------------------ */

/* The counts hook of both methods' ops (see fmmcl_plan_counts). */
fmmcl_status fmmcl_fmm3d_counts(fmmcl_plan plan, const char *phase, double *work);
/* M2M and L2L shifts of a tree as the plan launches them; the performance
 * model (model_sample.c) counts with the same two. */
double fmmcl_fmm3d_m2m_shifts(const fmmcl_tree3d *t);
double fmmcl_fmm3d_l2l_shifts(const fmmcl_tree3d *t);

/* ---- test hooks (exported for tests/check_fmm3d.c only) --------------------- */

/* The plan's tree and order; the tree stays owned by the plan. */
fmmcl_status fmmcl_fmm3d_debug_tree(fmmcl_plan plan, const fmmcl_tree3d **tree, int *order);
/* A treecode plan's lists (its target groups); owned by the plan. */
fmmcl_status fmmcl_fmm3d_debug_treecode_lists(fmmcl_plan plan, const fmmcl_tree3d_treecode_lists **lists);
/* Runs only the phases in mask with the given charges. M_in / L_in (NULL:
 * zero) are unscaled expansions, 2 * ncoef doubles per cell as in
 * expansions3d.h, uploaded before the phases; M_out / L_out / out (may be
 * NULL) receive the expansions after them (about the tree's cell centres;
 * a treecode's multipoles about its cells' sources' centres, the lists'
 * spheres), and out 4 doubles per sorted
 * target (d/dx, d/dy, d/dz, phi). */
fmmcl_status fmmcl_fmm3d_debug_run(fmmcl_plan plan, const double *charges, unsigned mask, const double *M_in,
                                   const double *L_in, double *M_out, double *L_out, double *out);
/* The same for a plan with dipoles or a Hessian: dipoles (3 per source,
 * caller's order; NULL: none) join the charges, and hess (may be NULL)
 * receives 6 doubles per sorted target (xx, yy, zz, xy, xz, yz). */
fmmcl_status fmmcl_fmm3d_debug_run_ext(fmmcl_plan plan, const double *charges, const double *dipoles,
                                       unsigned mask, const double *M_in, const double *L_in, double *M_out,
                                       double *L_out, double *out, double *hess);

#endif /* FMMCL_FMM3D_H */
