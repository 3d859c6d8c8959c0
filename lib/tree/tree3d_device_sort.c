/* tree3d_device_sort.c — launches cl/tree.cl: Morton keys of the points in
 * the root cube, then a stable LSD radix sort of (key, index) pairs, read
 * back so the host refinement can skip its own keys and sort. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tree/tree3d_device_sort.h"
#include "tuning/tuning.h"

#define KEY_BITS (3 * FMMCL_MORTON_LEVELS)
#define MAX_SCAN_LEVELS 8

typedef struct sorter {
  fmmcl_context ctx;
  cl_program program;
  cl_kernel keys, hist, scan, add, scatter, pack_float, pack_double;
  size_t wgs, tiles, radix_bits;
  char defines[160]; /* what tree.cl is built with */
} sorter;

/* What sort_with leaves on the device when asked (fmm3d's points, packed
 * once the tree is built). */
typedef struct keep_request {
  fmmcl_tree3d_device_points *out;
  cl_mem *keys;      /* non-NULL: the sorted keys stay too, and nothing is read back */
  cl_mem xyz;        /* non-NULL: the coordinates are there already (and become out's) */
  cl_uint first_bit; /* the keys sorted by their bits from this one up only */
} keep_request;

/* Device buffers of one sort; scan[k] holds level k's block sums. */
typedef struct sort_buffers {
  cl_mem xyz, keys[2], perm[2], hist, scan[MAX_SCAN_LEVELS];
} sort_buffers;

int fmmcl_tree3d_device_sort_available(fmmcl_context ctx, size_t n) {
  return ctx && ctx->dev.info.has_fp64 && n < (size_t)UINT32_MAX;
}

/* Work-group size, tiles and digit width from the tuning cache (kernel
 * "tree_sort", class "keys63"), else the built-in defaults; WGS is lowered
 * to what the device allows. */
static fmmcl_status choose_parameters(sorter *s) {
  char cls[16];
  snprintf(cls, sizeof cls, "keys%d", KEY_BITS);
  fmmcl_params par;
  fmmcl_status st = fmmcl_tuned_params(s->ctx, FMMCL_TUNED_TREE_SORT, FMMCL_DOUBLE, cls, &par);
  if (st) return st;
  /* unset (a partial override): tree.cl's own defaults */
  s->wgs = (size_t)fmmcl_params_get(&par, "WGS", 256);
  s->tiles = (size_t)fmmcl_params_get(&par, "TILES", 8);
  s->radix_bits = (size_t)fmmcl_params_get(&par, "RADIX_BITS", 4);
  while (s->wgs > s->ctx->dev.info.max_work_group_size) s->wgs /= 2;
  if (s->radix_bits < 1 || s->radix_bits > 8 || s->tiles < 1 || (s->wgs & (s->wgs - 1)) ||
      s->wgs < ((size_t)1 << s->radix_bits))
    return fmmcl_fail(s->ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                      "tree.cl: WGS=%zu TILES=%zu RADIX_BITS=%zu is not a valid radix sort on %s "
                      "(WGS a power of two >= 2^RADIX_BITS, RADIX_BITS 1..8)",
                      s->wgs, s->tiles, s->radix_bits, s->ctx->dev.info.device_name);
  fmmcl_params_set(&par, "WGS", (int)s->wgs);
  fmmcl_params_defines(&par, s->defines, sizeof s->defines);
  return FMMCL_SUCCESS;
}

static void sorter_release(sorter *s) {
  cl_kernel *k[] = {&s->keys, &s->hist, &s->scan, &s->add, &s->scatter, &s->pack_float, &s->pack_double};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) fmmcl_release(k[i]);
  fmmcl_release(&s->program);
}

static fmmcl_status sorter_init(sorter *s, fmmcl_context ctx) {
  memset(s, 0, sizeof *s);
  s->ctx = ctx;
  fmmcl_status st = choose_parameters(s);
  if (st) return st;
  /* keys in double so they round exactly as the host's do */
  char opt[256];
  snprintf(opt, sizeof opt, "-DFMMCL_DOUBLE=1 -DLEAF_SORT_CAP=%d %s", FMMCL_TREE3D_LEAF_SORT_CAP, s->defines);
  if (ctx->sort_program && strcmp(ctx->sort_options, opt) == 0) {
    s->program = ctx->sort_program;
    clRetainProgram(s->program);
  } else {
    if ((st = fmmcl_program_build(ctx, "tree/tree.cl", opt, &s->program, NULL))) return st;
    fmmcl_release(&ctx->sort_program);
    ctx->sort_program = s->program;
    clRetainProgram(ctx->sort_program);
    snprintf(ctx->sort_options, sizeof ctx->sort_options, "%s", opt);
  }
  const char *names[] = {"morton_keys",
                         "radix_histogram",
                         "scan_exclusive_blocks",
                         "scan_add_block_offsets",
                         "radix_scatter",
                         "fmmcl_tree3d_device_pack_float",
                         "fmmcl_tree3d_device_pack_double"};
  cl_kernel *ks[] = {&s->keys, &s->hist, &s->scan, &s->add, &s->scatter, &s->pack_float, &s->pack_double};
  return fmmcl_create_kernels(ctx, s->program, "tree/tree.cl", 7, names, ks);
}

static void buffers_release(sort_buffers *b) {
  cl_mem *m[] = {&b->xyz, &b->keys[0], &b->keys[1], &b->perm[0], &b->perm[1], &b->hist};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) fmmcl_release(m[i]);
  for (int k = 0; k < MAX_SCAN_LEVELS; k++) fmmcl_release(&b->scan[k]);
}

static fmmcl_status launch(sorter *s, cl_kernel k, size_t global) {
  return fmmcl_launch(s->ctx, k, global, s->wgs, NULL, NULL);
}

#define M_ FMMCL_ARG_MEM
#define U_ FMMCL_ARG_UINT
#define D_ FMMCL_ARG_DOUBLE

/* Exclusive scan of data[m] in place, level by level: block scans, the
 * block sums scanned the same way, then the sums added back. */
static fmmcl_status scan_exclusive(sorter *s, sort_buffers *b, cl_mem data, cl_uint m, int level) {
  if (level >= MAX_SCAN_LEVELS)
    return fmmcl_fail(s->ctx, FMMCL_ERROR_INTERNAL, "tree sort: scan deeper than %d levels", MAX_SCAN_LEVELS);
  size_t blocks = (m + s->wgs - 1) / s->wgs;
  fmmcl_status st = FMMCL_KERNEL_ARGS(s->ctx, s->scan, 0, M_(data), U_(m), M_(b->scan[level]));
  if (!st) st = launch(s, s->scan, blocks * s->wgs);
  if (st || blocks == 1) return st;
  if ((st = scan_exclusive(s, b, b->scan[level], (cl_uint)blocks, level + 1))) return st;
  st = FMMCL_KERNEL_ARGS(s->ctx, s->add, 0, M_(data), U_(m), M_(b->scan[level]));
  return st ? st : launch(s, s->add, blocks * s->wgs);
}

/* The coordinates go up through pinned staging (pageable memory crawls
 * through the driver's bounce buffer, pinned_host.c). */
static fmmcl_status allocate(sorter *s, sort_buffers *b, const double *xyz, size_t n, size_t groups,
                             fmmcl_pinned *stage) {
  fmmcl_context ctx = s->ctx;
  fmmcl_status st = FMMCL_SUCCESS;
  if (!b->xyz) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, 3 * n * sizeof(double), NULL, &b->xyz);
  else xyz = NULL; /* uploaded by fmmcl_tree3d_device_upload */
  if (!st && xyz) {
    /* in chunks, so that the copy of one overlaps the transfer of the last */
    double *dst = stage->ptr;
    const size_t total = 3 * n, chunk = total / 4 + 1;
    for (size_t lo = 0; lo < total; lo += chunk) {
      const size_t hi = lo + chunk < total ? lo + chunk : total;
#pragma omp parallel for schedule(static) if (hi - lo > 65536)
      for (size_t i = lo; i < hi; i++) dst[i] = xyz[i];
      FMMCL_CL_TRY(ctx, clEnqueueWriteBuffer(ctx->queue, b->xyz, CL_FALSE, lo * sizeof(double),
                                             (hi - lo) * sizeof(double), dst + lo, 0, NULL, NULL));
    }
  }
  for (int i = 0; i < 2 && !st; i++) {
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * sizeof(cl_ulong), NULL, &b->keys[i]);
    if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, n * sizeof(cl_uint), NULL, &b->perm[i]);
  }
  size_t m = groups << s->radix_bits;
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, m * sizeof(cl_uint), NULL, &b->hist);
  for (int k = 0; !st && k < MAX_SCAN_LEVELS; k++) {
    m = (m + s->wgs - 1) / s->wgs;
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, m * sizeof(cl_uint), NULL, &b->scan[k]);
    if (m == 1) break;
  }
  return st;
}

/* One pass per RADIX_BITS digit of the key bits [first, bits), low digit
 * first; returns which buffer holds the result in *src. */
static fmmcl_status radix_passes(sorter *s, sort_buffers *b, cl_uint n, size_t groups, int *src,
                                 cl_uint first, cl_uint bits) {
  const size_t global = groups * s->wgs;
  const cl_uint m = (cl_uint)(groups << s->radix_bits);
  fmmcl_status st = FMMCL_SUCCESS;
  *src = 0;
  for (cl_uint shift = first; !st && shift < bits; shift += (cl_uint)s->radix_bits) {
    st = FMMCL_KERNEL_ARGS(s->ctx, s->hist, 0, M_(b->keys[*src]), U_(n), U_(shift), M_(b->hist));
    if (!st) st = launch(s, s->hist, global);
    if (!st) st = scan_exclusive(s, b, b->hist, m, 0);
    if (!st)
      st = FMMCL_KERNEL_ARGS(s->ctx, s->scatter, 0, M_(b->keys[*src]), M_(b->perm[*src]),
                             M_(b->keys[1 - *src]), M_(b->perm[1 - *src]), U_(n), U_(shift), M_(b->hist));
    if (st) return st;
    st = launch(s, s->scatter, global);
    *src = 1 - *src;
  }
  return st;
}

static fmmcl_status compute_keys(sorter *s, sort_buffers *b, const fmmcl_morton3d_cube *cube, cl_uint n) {
  /* the scale the host uses, computed once in double here too */
  cl_double scale = (double)FMMCL_MORTON_CELLS_PER_AXIS / cube->width;
  fmmcl_status st =
      FMMCL_KERNEL_ARGS(s->ctx, s->keys, 0, M_(b->xyz), U_(n), D_(cube->origin[0]), D_(cube->origin[1]),
                        D_(cube->origin[2]), D_(scale), M_(b->keys[0]), M_(b->perm[0]));
  return st ? st : launch(s, s->keys, fmmcl_round_up(n, s->wgs));
}

/* Keys and permutation come back through the same pinned staging (the
 * in-order queue has finished reading it for the upload by then). */
static fmmcl_status read_back(sorter *s, sort_buffers *b, int src, size_t n, uint64_t *keys, size_t *perm,
                              fmmcl_pinned *stage) {
  uint64_t *k64 = stage->ptr;
  cl_uint *p32 = (cl_uint *)(k64 + n);
  cl_command_queue q = s->ctx->queue;
  cl_int err = clEnqueueReadBuffer(q, b->keys[src], CL_FALSE, 0, n * sizeof(cl_ulong), k64, 0, NULL, NULL);
  if (err == CL_SUCCESS)
    err = clEnqueueReadBuffer(q, b->perm[src], CL_TRUE, 0, n * sizeof(cl_uint), p32, 0, NULL, NULL);
  if (err == CL_SUCCESS) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) keys[i] = k64[i], perm[i] = p32[i];
  }
  if (err != CL_SUCCESS)
    return fmmcl_fail(s->ctx, fmmcl_status_from_cl(err), "tree sort: reading the sorted keys: %s",
                      fmmcl_cl_error_name(err));
  return FMMCL_SUCCESS;
}

/* Hands the coordinates and the permutation to the caller instead of
 * releasing them: the FMM packs them once it knows each point's leaf. */
static void keep_points(sort_buffers *b, int src, const keep_request *keep) {
  keep->out->xyz = b->xyz, keep->out->perm = b->perm[src];
  b->xyz = NULL, b->perm[src] = NULL;
  if (keep->keys) *keep->keys = b->keys[src], b->keys[src] = NULL;
}

static fmmcl_status sort_with(sorter *s, const fmmcl_morton3d_cube *cube, const double *xyz, size_t n,
                              uint64_t *keys, size_t *perm, const keep_request *keep) {
  if (n == 0) return FMMCL_SUCCESS;
  const size_t groups = (n + s->wgs * s->tiles - 1) / (s->wgs * s->tiles);
  sort_buffers b;
  memset(&b, 0, sizeof b);
  int src = 0;
  fmmcl_pinned stage = {0};
  const int given = keep && keep->xyz;
  if (given) b.xyz = keep->xyz;
  /* the stage carries the coordinates up and the keys back */
  fmmcl_status st =
      given && keep->keys ? FMMCL_SUCCESS : fmmcl_pinned_alloc(s->ctx, 3 * n * sizeof(double), 0, &stage);
  if (st) {
    fmmcl_release(&b.xyz);
    return st;
  }
  st = allocate(s, &b, xyz, n, groups, &stage);
  if (!st) st = compute_keys(s, &b, cube, (cl_uint)n);
  if (!st) st = radix_passes(s, &b, (cl_uint)n, groups, &src, keep ? keep->first_bit : 0, KEY_BITS);
  if (!st && !(keep && keep->keys)) st = read_back(s, &b, src, n, keys, perm, &stage);
  if (!st && keep) keep_points(&b, src, keep);
  if (stage.ptr) clFinish(s->ctx->queue); /* nothing may still read the staging block */
  fmmcl_pinned_free(&stage);
  buffers_release(&b);
  return st;
}

fmmcl_status fmmcl_tree3d_device_sort(fmmcl_context ctx, const fmmcl_morton3d_cube *cube, const double *xyz,
                                      size_t n, uint64_t *keys, size_t *perm) {
  if (!ctx || !cube || (n && (!xyz || !keys || !perm)))
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_device_sort: NULL argument");
  if (!fmmcl_tree3d_device_sort_available(ctx, n))
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED,
                      "fmmcl_tree3d_device_sort: %s lacks fp64 or %zu keys exceed 2^32",
                      ctx->dev.info.device_name, n);
  sorter s;
  fmmcl_status st = sorter_init(&s, ctx);
  if (!st) st = sort_with(&s, cube, xyz, n, keys, perm, NULL);
  sorter_release(&s);
  return st;
}

/* The tree code reports into the thread's error slot; the caller reads ctx's. */
static fmmcl_status forward_error(fmmcl_context ctx, fmmcl_status st) {
  return st ? fmmcl_fail(ctx, st, "%s", fmmcl_last_error(NULL)) : st;
}

/* Keys and permutation of one set, malloc'ed for the tree to own. */
static fmmcl_status sort_set(sorter *s, const fmmcl_morton3d_cube *cube, const double *xyz, size_t n,
                             uint64_t **keys, size_t **perm, const keep_request *keep) {
  *keys = malloc((n ? n : 1) * sizeof **keys);
  *perm = malloc((n ? n : 1) * sizeof **perm);
  if (!*keys || !*perm) return fmmcl_fail(s->ctx, FMMCL_ERROR_OUT_OF_MEMORY, "tree sort: out of host memory");
  return sort_with(s, cube, xyz, n, *keys, *perm, keep);
}

static void release_points(fmmcl_tree3d_device_points *p) {
  if (!p) return;
  fmmcl_release(&p->xyz);
  fmmcl_release(&p->packed);
  fmmcl_release(&p->packed_lo);
  fmmcl_release(&p->perm);
  memset(p, 0, sizeof *p);
}

/* Both builds: src_keep / tgt_keep NULL gathers the sorted points on the
 * host, else they stay on the device as the requests say. */
static fmmcl_status build_device(fmmcl_context ctx, size_t n_sources, const double *sources, size_t n_targets,
                                 const double *targets, size_t leaf_size, int max_level, double grow,
                                 fmmcl_tree3d **tree, double *sort_seconds, keep_request *src_keep,
                                 keep_request *tgt_keep) {
  if (!ctx || !tree || !sources)
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_tree3d_build_device: NULL argument");
  double t0 = fmmcl_wall_seconds();
  fmmcl_morton3d_cube cube;
  /* argument errors come from the host build's own checks below */
  fmmcl_status st = fmmcl_morton3d_bounding_cube(sources, n_sources, targets, targets ? n_targets : 0, &cube);
  if (st || (targets && n_targets == 0) || leaf_size < 1)
    return forward_error(ctx, fmmcl_tree3d_build_grown(n_sources, sources, n_targets, targets, leaf_size,
                                                       max_level, grow, tree));
  fmmcl_morton3d_cube_grow(&cube, grow);
  if (!fmmcl_tree3d_device_sort_available(ctx, n_sources) ||
      (targets && !fmmcl_tree3d_device_sort_available(ctx, n_targets)))
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "fmmcl_tree3d_build_device: not available on %s",
                      ctx->dev.info.device_name);
  uint64_t *sk = NULL, *tk = NULL;
  size_t *sp = NULL, *tp = NULL;
  sorter s;
  st = sorter_init(&s, ctx);
  if (!st) st = sort_set(&s, &cube, sources, n_sources, &sk, &sp, src_keep);
  if (!st && targets) st = sort_set(&s, &cube, targets, n_targets, &tk, &tp, tgt_keep);
  sorter_release(&s);
  if (!st && sort_seconds) *sort_seconds = fmmcl_wall_seconds() - t0;
  if (!st)
    st = forward_error(ctx, fmmcl_tree3d_build_sorted(n_sources, sources, n_targets, targets, &cube, sk, sp,
                                                      tk, tp, leaf_size, max_level, src_keep == NULL, tree));
  else free(sk), free(sp), free(tk), free(tp);
  if (st) release_points(src_keep ? src_keep->out : NULL), release_points(tgt_keep ? tgt_keep->out : NULL);
  return st;
}

fmmcl_status fmmcl_tree3d_build_device(fmmcl_context ctx, size_t n_sources, const double *sources,
                                       size_t n_targets, const double *targets, size_t leaf_size,
                                       int max_level, fmmcl_tree3d **tree, double *sort_seconds) {
  return build_device(ctx, n_sources, sources, n_targets, targets, leaf_size, max_level, 1.0, tree,
                      sort_seconds, NULL, NULL);
}

fmmcl_status fmmcl_tree3d_build_device_kept(fmmcl_context ctx, size_t n_sources, const double *sources,
                                            size_t n_targets, const double *targets, size_t leaf_size,
                                            int max_level, double grow, fmmcl_tree3d **tree,
                                            double *sort_seconds, fmmcl_tree3d_device_points *src,
                                            fmmcl_tree3d_device_points *tgt) {
  if (!src || (targets && !tgt))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "fmmcl_tree3d_build_device_kept: bad argument");
  memset(src, 0, sizeof *src);
  if (tgt) memset(tgt, 0, sizeof *tgt);
  keep_request sk = {.out = src}, tk = {.out = tgt};
  return build_device(ctx, n_sources, sources, n_targets, targets, leaf_size, max_level, grow, tree,
                      sort_seconds, &sk, targets ? &tk : NULL);
}

struct fmmcl_tree3d_device_kit {
  sorter s;
  cl_kernel steps[FMMCL_TREE3D_DEVICE_STEPS];
};

fmmcl_status fmmcl_tree3d_device_kit_open(fmmcl_context ctx, fmmcl_tree3d_device_kit **kit) {
  *kit = calloc(1, sizeof **kit);
  if (!*kit) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "tree sort: out of host memory");
  const char *const names[] = {"tree_cell_ranges", "tree_point_leaf", "tree_close_pairs", "tree_box",
                               "tree_leaf_sort"};
  cl_kernel *const ks[] = {&(*kit)->steps[0], &(*kit)->steps[1], &(*kit)->steps[2], &(*kit)->steps[3],
                           &(*kit)->steps[4]};
  fmmcl_status st = sorter_init(&(*kit)->s, ctx);
  if (!st)
    st = fmmcl_create_kernels(ctx, (*kit)->s.program, "tree/tree.cl", FMMCL_TREE3D_DEVICE_STEPS, names, ks);
  if (st) fmmcl_tree3d_device_kit_close(*kit), *kit = NULL;
  return st;
}

void fmmcl_tree3d_device_kit_close(fmmcl_tree3d_device_kit *kit) {
  if (!kit) return;
  for (int i = 0; i < FMMCL_TREE3D_DEVICE_STEPS; i++) fmmcl_release(&kit->steps[i]);
  sorter_release(&kit->s);
  free(kit);
}

cl_kernel fmmcl_tree3d_device_kit_kernel(const fmmcl_tree3d_device_kit *kit, int step, size_t *wgs) {
  *wgs = kit->s.wgs;
  return kit->steps[step];
}

fmmcl_status fmmcl_tree3d_device_pack(fmmcl_context ctx, const fmmcl_tree3d_device_kit *kit,
                                      fmmcl_tree3d_device_points *p, size_t n, cl_mem leaf, cl_mem center,
                                      size_t real_size, const double origin[3], double inv_unit) {
  if (!p || !p->xyz || !p->perm || (real_size != 4 && real_size != 8))
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "fmmcl_tree3d_device_pack: bad argument");
  sorter s;
  fmmcl_status st = kit ? FMMCL_SUCCESS : sorter_init(&s, ctx);
  if (kit) s = kit->s; /* borrowed: not released here */
  cl_kernel k = real_size == 4 ? s.pack_float : s.pack_double;
  cl_int bad = 0;
  cl_mem flag = NULL;
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * (n ? n : 1) * real_size, NULL, &p->packed);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, 4 * (n ? n : 1) * real_size, NULL, &p->packed_lo);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, sizeof bad, &bad, &flag);
  if (!st)
    st = FMMCL_KERNEL_ARGS(ctx, k, 0, M_(p->xyz), M_(p->perm), U_(n), M_(leaf), M_(center), D_(origin[0]),
                           D_(origin[1]), D_(origin[2]), D_(inv_unit), M_(p->packed), M_(p->packed_lo),
                           M_(flag));
  if (!st && n) st = launch(&s, k, fmmcl_round_up(n, s.wgs));
  if (!st) {
    cl_int err = clEnqueueReadBuffer(ctx->queue, flag, CL_TRUE, 0, sizeof bad, &bad, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "tree sort: packing the points: %s",
                      fmmcl_cl_error_name(err));
  }
  fmmcl_release(&flag);
  if (!kit) sorter_release(&s);
  if (st) return st;
  p->finite = !bad;
  fmmcl_release(&p->xyz);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_tree3d_device_upload(fmmcl_context ctx, const double *xyz, size_t n, cl_mem *buf,
                                        double lo[3], double hi[3], int *finite) {
  *buf = NULL;
  fmmcl_pinned stage;
  fmmcl_status st = fmmcl_pinned_alloc(ctx, 3 * (n ? n : 1) * sizeof(double), 0, &stage);
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_ONLY, 3 * n * sizeof(double), NULL, buf);
  double x0 = INFINITY, y0 = INFINITY, z0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY, z1 = -INFINITY;
  int ok = 1;
  /* in chunks, each read once: copied into the stage, its box and
   * finiteness taken on the way (min and max are exact, so the threads'
   * order cannot change them), and sent while the next is copied */
  const size_t chunk = (n + 7) / 8;
  for (size_t lo_i = 0; !st && lo_i < n; lo_i += chunk) {
    const size_t hi_i = lo_i + chunk < n ? lo_i + chunk : n;
    double *dst = stage.ptr;
#pragma omp parallel for schedule(static) if (hi_i - lo_i > 16384) reduction(min : x0, y0, z0) \
    reduction(max : x1, y1, z1) reduction(&& : ok)
    for (size_t i = lo_i; i < hi_i; i++) {
      const double x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
      dst[3 * i] = x, dst[3 * i + 1] = y, dst[3 * i + 2] = z;
      ok = ok && isfinite(x) && isfinite(y) && isfinite(z);
      x0 = x < x0 ? x : x0, y0 = y < y0 ? y : y0, z0 = z < z0 ? z : z0;
      x1 = x > x1 ? x : x1, y1 = y > y1 ? y : y1, z1 = z > z1 ? z : z1;
    }
    cl_int err = clEnqueueWriteBuffer(ctx->queue, *buf, CL_FALSE, 3 * lo_i * sizeof(double),
                                      3 * (hi_i - lo_i) * sizeof(double), dst + 3 * lo_i, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "tree update: sending the points: %s",
                      fmmcl_cl_error_name(err));
  }
  clFinish(ctx->queue); /* the stage goes back to the pool */
  fmmcl_pinned_free(&stage);
  lo[0] = x0, lo[1] = y0, lo[2] = z0, hi[0] = x1, hi[1] = y1, hi[2] = z1;
  *finite = ok;
  if (st) fmmcl_release(buf);
  return st;
}

fmmcl_status fmmcl_tree3d_device_sort_kept(const fmmcl_tree3d_device_kit *kit,
                                           const fmmcl_morton3d_cube *cube, cl_mem xyz, size_t n, int levels,
                                           fmmcl_tree3d_device_points *p, cl_mem *keys) {
  fmmcl_context ctx = kit ? kit->s.ctx : NULL;
  if (!kit || !cube || !xyz || !p || !keys || n == 0 || !fmmcl_tree3d_device_sort_available(ctx, n)) {
    if (xyz) clReleaseMemObject(xyz);
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "fmmcl_tree3d_device_sort_kept: bad argument");
  }
  memset(p, 0, sizeof *p);
  *keys = NULL;
  keep_request keep = {.out = p, .keys = keys, .xyz = xyz};
  if (levels > 0 && 3 * levels < KEY_BITS) keep.first_bit = (cl_uint)(KEY_BITS - 3 * levels);
  sorter s = kit->s; /* borrowed: sort_with only launches its kernels */
  /* sort_with takes the coordinates over */
  fmmcl_status st = sort_with(&s, cube, NULL, n, NULL, NULL, &keep);
  if (st) release_points(p), fmmcl_release(keys);
  return st;
}

/* ---- the sort and scan for other callers (the FGT's box binning) -------- */

fmmcl_status fmmcl_device_radix_sort(fmmcl_context ctx, cl_mem keys[2], cl_mem perm[2], size_t n, int bits,
                                     int *which) {
  *which = 0;
  if (n == 0 || bits <= 0) return FMMCL_SUCCESS;
  if (bits > 64 || n >= (size_t)UINT32_MAX)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "device radix sort: %d bits, %zu keys", bits, n);
  sorter s;
  fmmcl_status st = sorter_init(&s, ctx);
  sort_buffers b;
  memset(&b, 0, sizeof b);
  const size_t groups = (n + s.wgs * s.tiles - 1) / (s.wgs * s.tiles);
  size_t m = groups << s.radix_bits;
  if (!st) st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, m * sizeof(cl_uint), NULL, &b.hist);
  for (int k = 0; !st && k < MAX_SCAN_LEVELS; k++) {
    m = (m + s.wgs - 1) / s.wgs;
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, m * sizeof(cl_uint), NULL, &b.scan[k]);
    if (m == 1) break;
  }
  /* the caller's buffers, borrowed: not released with b */
  b.keys[0] = keys[0], b.keys[1] = keys[1], b.perm[0] = perm[0], b.perm[1] = perm[1];
  if (!st) st = radix_passes(&s, &b, (cl_uint)n, groups, which, 0, (cl_uint)bits);
  b.keys[0] = b.keys[1] = b.perm[0] = b.perm[1] = NULL;
  clFinish(ctx->queue);
  buffers_release(&b);
  sorter_release(&s);
  return st;
}

fmmcl_status fmmcl_device_scan_exclusive(fmmcl_context ctx, cl_mem data, size_t m) {
  if (m == 0) return FMMCL_SUCCESS;
  if (m >= (size_t)UINT32_MAX)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "device scan: %zu entries", m);
  sorter s;
  fmmcl_status st = sorter_init(&s, ctx);
  sort_buffers b;
  memset(&b, 0, sizeof b);
  size_t len = m;
  for (int k = 0; !st && k < MAX_SCAN_LEVELS; k++) {
    len = (len + s.wgs - 1) / s.wgs;
    st = fmmcl_buffer_new(ctx, CL_MEM_READ_WRITE, len * sizeof(cl_uint), NULL, &b.scan[k]);
    if (len == 1) break;
  }
  if (!st) st = scan_exclusive(&s, &b, data, (cl_uint)m, 0);
  clFinish(ctx->queue);
  buffers_release(&b);
  sorter_release(&s);
  return st;
}
