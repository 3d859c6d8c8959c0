/* m2l2d.cl — the 2D FMM's M2L as in Cruz, Layton & Barba (CPC 2011, 4.1):
 * row traversal of the matrix-free translation, then a separate reduction
 * of each target cell's interaction-list results.
 *
 * Translation t takes the multipole M (NROW = P + 1 coefficients, REAL2) of
 * cell trans_src[t] to a local expansion about a cell at offset w (in units
 * of the cell side); the host gives trans_w[t] = (Re 1/w, Im 1/w,
 * log(|w| side), -), which is all the translation needs of w:
 *   L_l = w^-l sum_{k=0..P} T[l][k] s_k + [l = 0] M_0 log|w side|,
 *   s_k = (-1)^k M_k w^-k,  T[l][0] = -1/l (0 for l = 0),
 *   T[l][k] = C(l+k-1, k-1): the paper's a_lk = (-1)^k C(l+k-1, k-1)
 *   w^-(k+l) (indices shifted by one: its multipole series starts at 1/z,
 *   ours at log z), never formed.
 *
 * One work-item per row l (one local coefficient) of a translation, the
 * NROW rows of a translation adjacent, TPG = WGS / NROW whole translations
 * side by side in a work-group (the group is TPG * NROW work-items; WGS is
 * the tunable upper bound), and TPW such rounds per work-item. The power
 * w^-(k+l) comes in two steps:
 *   1. every work-item runs the same fixed-trip loop of P complex products,
 *      guarded by its own l, to get w^-l: no divergence, the loop unrolls;
 *   2. the k common factors: work-item l also forms s_l (its own power is
 *      the k = l factor of every row) and leaves it in local memory, so
 *      after one barrier each row's sum over k is NROW real x complex
 *      multiply-adds on shared values, read two at a time (REAL4).
 * The row's coefficients T[l][.] sit in registers, set once for the TPW
 * translations. The multipoles are read coalesced (a translation's NROW
 * coefficients by adjacent work-items) and staged, transformed, in local
 * memory; each result is written coalesced to Lpart[t * NROW + l].
 * Tunable: WGS; TPW (translations per work-item: more reuse of the
 * coefficient registers, fewer groups); UNROLL of the k loop (full by
 * default, which keeps T in registers); M2L_COEF, where T comes from:
 *   0  the host's table (global memory, read once per work-item);
 *   1  the recurrence C(l+k, k) = C(l+k-1, k-1) (l+k) / k, 1/k folded at
 *      compile time.
 * M2L_SHARE_W=1 builds m2l2d_share / m2l2d_fused_share / m2l2d_reduce_idx
 * instead of m2l2d / m2l2d_fused: translations of one offset w share the
 * power w^-l (see there). M2L_TILE=TB builds m2l2d_tile: one work-item per
 * target cell of a TBxTB tile of a uniform level, all its rows in
 * registers (see there). */
#ifndef M2L_SHARE_W
#define M2L_SHARE_W 0
#endif
#ifndef P
#define P 8
#endif
#ifndef WGS
#define WGS 128
#endif
#ifndef TPW
#define TPW 1
#endif
#ifndef UNROLL
#define UNROLL (P + 1)
#endif
#ifndef M2L_COEF
#define M2L_COEF 1
#endif
#define NROW (P + 1)
#define NPAD (NROW + (NROW & 1))                  /* even: REAL4 pairs aligned */
#define TPG (WGS / NROW > 0 ? WGS / NROW : 1)     /* whole translations per round */
#define LSZ (TPG * NROW)                          /* work-items per group */

#ifdef FMMCL_DOUBLE
typedef double2 REAL2;
#else
typedef float2 REAL2;
#endif

static inline REAL2 cmul(REAL2 a, REAL2 b) { return (REAL2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

/* The row's coefficients T[l][0..NPAD), kept in registers by the caller. */
static inline void row_coefficients(uint l, __global const REAL *coef, REAL *T) {
#if M2L_COEF == 0
  FMMCL_UNROLL(NROW)
  for (uint k = 0; k < NROW; k++) T[k] = coef[l * NROW + k];
#else
  const REAL lr = (REAL)l;
  T[0] = l ? (REAL)-1 / lr : (REAL)0;
  T[1] = 1;
  FMMCL_UNROLL(NROW)
  for (uint k = 2; k < NROW; k++) T[k] = T[k - 1] * (lr + (REAL)(k - 1)) * ((REAL)1 / (REAL)(k - 1));
#endif
  if (NPAD != NROW) T[NPAD - 1] = 0;
}

/* w^-l: every work-item runs all P trips (no divergence, unrolled). */
static inline REAL2 power_row(uint l, REAL2 winv) {
  REAL2 pl = (REAL2)(1, 0);
  FMMCL_UNROLL(P)
  for (uint j = 0; j < P; j++) pl = j < l ? cmul(pl, winv) : pl;
  return pl;
}

/* Row l of sum_k T[l][k] s_k over the NPAD shared factors at sp, two at a time. */
static inline REAL2 row_sum(const REAL *T, __local const REAL4 *sp) {
  REAL2 acc = (REAL2)(0, 0);
  FMMCL_UNROLL(UNROLL)
  for (uint k = 0; k < NPAD; k += 2) {
    const REAL4 pair = sp[k / 2];
    acc = fma((REAL2)(T[k]), pair.xy, acc);
    acc = fma((REAL2)(T[k + 1]), pair.zw, acc);
  }
  return acc;
}

/* Stores row l's shared factor (-1)^l a w^-l (a = M_l) into its slot (and
 * the pad, which meets T = 0). */
static inline void put_factor(uint l, REAL2 a, REAL2 pl, __local REAL2 *slot) {
  const REAL2 s = cmul(a, pl);
  slot[l] = (l & 1) ? -s : s;
  if (NPAD != NROW && l == P) slot[NROW] = (REAL2)(0, 0);
}

/* Row l of one translation (w data wd, multipole coefficient a = M_l of its
 * source), the slot's NROW work-items together through slot / sp, their
 * NPAD REAL2 of local memory. Two barriers: every work-item of the group
 * calls it the same number of times. */
static inline REAL2 translate_row(const REAL *T, uint l, REAL4 wd, REAL2 a, __local REAL2 *slot,
                                  __local const REAL4 *sp) {
  /* step 1: w^-l, every work-item running all P trips */
  const REAL2 pl = power_row(l, wd.xy);
  /* step 2: the k common factors, shared through local memory */
  put_factor(l, a, pl, slot);
  barrier(CLK_LOCAL_MEM_FENCE);
  REAL2 out = cmul(row_sum(T, sp), pl);
  if (l == 0) out.x += a.x * wd.z;
  barrier(CLK_LOCAL_MEM_FENCE); /* the next translation overwrites the slot */
  return out;
}

#if !M2L_SHARE_W
__kernel __attribute__((reqd_work_group_size(LSZ, 1, 1)))
void m2l2d(const uint n_trans, __global const uint *trans_src, __global const REAL4 *trans_w,
           __global const REAL2 *M, __global const REAL *coef, __global REAL2 *Lpart) {
  __local REAL4 sv[TPG * NPAD / 2];   /* s_k of a round's translations, in pairs */
  const uint lid = get_local_id(0), lt = lid / NROW, l = lid % NROW;
  REAL T[NPAD]; /* the row's coefficients, for all TPW rounds */
  row_coefficients(l, coef, T);
  __local REAL2 *slot = (__local REAL2 *)sv + lt * NPAD;
  __local const REAL4 *sp = sv + lt * (NPAD / 2);
  const uint first = get_group_id(0) * (TPG * TPW) + lt;
  for (uint r = 0; r < TPW; r++) {
    const uint t_raw = first + r * TPG;
    const uint t = min(t_raw, n_trans - 1); /* the tail computes a copy, writes nothing */
    const REAL2 out = translate_row(T, l, trans_w[t], M[(size_t)trans_src[t] * NROW + l], slot, sp);
    if (t_raw < n_trans) Lpart[(size_t)t_raw * NROW + l] = out;
  }
}

/* The same translations with the reduction fused in (the host's M2L_FUSED=1
 * picks it in the FMM; the paper keeps the two apart): slot lt of a group owns
 * target row r = group * TPG + lt, runs its list's translations
 * begin[r] .. begin[r+1] one after the other, sums them in registers and
 * adds the sum to L once, so the partial locals never go through memory.
 * Every slot runs max_len (the longest list) rounds; shorter lists repeat
 * their last translation without adding it. */
__kernel __attribute__((reqd_work_group_size(LSZ, 1, 1)))
void m2l2d_fused(const uint n_rows, __global const uint *rows, __global const uint *begin, const uint max_len,
                 __global const uint *trans_src, __global const REAL4 *trans_w, __global const REAL2 *M,
                 __global const REAL *coef, __global REAL2 *L) {
  __local REAL4 sv[TPG * NPAD / 2];
  const uint lid = get_local_id(0), lt = lid / NROW, l = lid % NROW;
  REAL T[NPAD];
  row_coefficients(l, coef, T);
  __local REAL2 *slot = (__local REAL2 *)sv + lt * NPAD;
  __local const REAL4 *sp = sv + lt * (NPAD / 2);
  const uint r_raw = get_group_id(0) * TPG + lt, r = min(r_raw, n_rows - 1);
  const uint t0 = begin[r], t1 = begin[r + 1];
  REAL2 sum = (REAL2)(0, 0);
  for (uint j = 0; j < max_len; j++) {
    const uint t = min(t0 + j, t1 - 1);
    const REAL2 out = translate_row(T, l, trans_w[t], M[(size_t)trans_src[t] * NROW + l], slot, sp);
    if (t0 + j < t1) sum += out;
  }
  if (r_raw < n_rows) L[(size_t)rows[r] * NROW + l] += sum;
}
#endif /* !M2L_SHARE_W */

/* L[rows[r]] += sum of Lpart over the row's translations begin[r] ..
 * begin[r+1]: work-item per (row, coefficient), reads coalesced. */
__kernel void m2l2d_reduce(const uint n_rows, __global const uint *rows, __global const uint *begin,
                           __global const REAL2 *Lpart, __global REAL2 *L) {
  const uint g = get_global_id(0), r = g / NROW, l = g % NROW;
  if (r >= n_rows) return;
  REAL2 s = (REAL2)(0, 0);
  for (uint t = begin[r]; t < begin[r + 1]; t++) s += Lpart[(size_t)t * NROW + l];
  L[(size_t)rows[r] * NROW + l] += s;
}

#if M2L_SHARE_W
/* ---- translations that share w ----------------------------------------------
 * In a quadtree the offset w (in cell units) of a translation takes one of
 * 40 values (7x7 minus 3x3), so the host groups the translations by (level,
 * offset) into bundles of TPW (padded with NO_CELL: zero multipole, nothing
 * written). Slot lt of a group (NROW work-items, row l each) takes bundle b:
 * w^-l by the guarded fixed-trip loop ONCE for the TPW translations, then
 * their TPW sets of shared factors s_k in local memory behind ONE barrier,
 * then TPW row sums, each times w^-l. The power loop and the barriers are
 * amortised over TPW translations; what remains per translation and row is
 * the gather of M_l, one complex product, the NROW real x complex FMAs and
 * the final product. */
#define NO_CELL 0xffffffffu

/* put_factor for a translation whose source is src (NO_CELL: zero). */
static inline void stage_factor(uint l, uint src, REAL2 pl, __global const REAL2 *M, __local REAL2 *slot) {
  put_factor(l, src != NO_CELL ? M[(size_t)src * NROW + l] : (REAL2)(0, 0), pl, slot);
}

/* Bundle b: translations b*TPW .. b*TPW+TPW-1 of the padded list, sources
 * bsrc[.], one offset bw[b] = (Re 1/w, Im 1/w, log(|w| side), -); results
 * to Lpart[(b*TPW + j) * NROW + l] (coalesced: the bundle's TPW*NROW values
 * are adjacent). */
__kernel __attribute__((reqd_work_group_size(LSZ, 1, 1)))
void m2l2d_share(const uint n_bundles, __global const uint *bsrc, __global const REAL4 *bw,
                 __global const REAL2 *M, __global const REAL *coef, __global REAL2 *Lpart) {
  __local REAL4 sv[TPG * TPW * NPAD / 2];
  const uint lid = get_local_id(0), lt = lid / NROW, l = lid % NROW;
  REAL T[NPAD];
  row_coefficients(l, coef, T);
  const uint b_raw = get_group_id(0) * TPG + lt, b = min(b_raw, n_bundles - 1);
  const REAL4 wd = bw[b];
  const REAL2 pl = power_row(l, wd.xy);
  __local REAL2 *slots = (__local REAL2 *)sv + lt * (TPW * NPAD);
  __local const REAL4 *sp = sv + lt * (TPW * NPAD / 2);
  uint src[TPW];
  FMMCL_UNROLL(TPW)
  for (uint j = 0; j < TPW; j++) {
    src[j] = bsrc[(size_t)b * TPW + j];
    stage_factor(l, src[j], pl, M, slots + j * NPAD);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  FMMCL_UNROLL(TPW)
  for (uint j = 0; j < TPW; j++) {
    REAL2 out = cmul(row_sum(T, sp + j * (NPAD / 2)), pl);
    if (l == 0) out.x += sp[j * (NPAD / 2)].x * wd.z; /* s_0 = M_0 */
    if (b_raw < n_bundles && src[j] != NO_CELL) Lpart[((size_t)b * TPW + j) * NROW + l] = out;
  }
}

/* The reduction with the bundles' padding: target row r sums the results at
 * positions idx[begin[r] .. begin[r+1]) of Lpart. */
__kernel void m2l2d_reduce_idx(const uint n_rows, __global const uint *rows, __global const uint *begin,
                               __global const uint *idx, __global const REAL2 *Lpart, __global REAL2 *L) {
  const uint g = get_global_id(0), r = g / NROW, l = g % NROW;
  if (r >= n_rows) return;
  REAL2 s = (REAL2)(0, 0);
  for (uint t = begin[r]; t < begin[r + 1]; t++) s += Lpart[(size_t)idx[t] * NROW + l];
  L[(size_t)rows[r] * NROW + l] += s;
}

/* Fused, shared w: target cells of one level and one position in their
 * parent have the same 27 interaction offsets, so the host bundles TPW such
 * cells (brows[b*TPW + c], NO_CELL pads) with their sources per offset,
 * bsrc[(b*27 + j)*TPW + c] (NO_CELL where the cell has no translation at
 * offset j: a domain edge or an empty cell), and the 27 offsets bw[b*27 + j].
 * Slot lt takes bundle b: per offset one power, the TPW cells' factors
 * behind ONE barrier (two sets of slots, offsets alternating: offset j+2
 * overwrites j's set only after every work-item passed offset j+1's
 * barrier, i.e. finished reading j), each cell's local summed in
 * registers, L read and written once per cell. */
#define NOFF 27
__kernel __attribute__((reqd_work_group_size(LSZ, 1, 1)))
void m2l2d_fused_share(const uint n_bundles, __global const uint *brows, __global const uint *bsrc,
                       __global const REAL4 *bw, __global const REAL2 *M, __global const REAL *coef,
                       __global REAL2 *L) {
  __local REAL4 sv[2 * TPG * TPW * NPAD / 2];
  const uint lid = get_local_id(0), lt = lid / NROW, l = lid % NROW;
  REAL T[NPAD];
  row_coefficients(l, coef, T);
  const uint b_raw = get_group_id(0) * TPG + lt, b = min(b_raw, n_bundles - 1);
  REAL2 sum[TPW];
  FMMCL_UNROLL(TPW)
  for (uint c = 0; c < TPW; c++) sum[c] = (REAL2)(0, 0);
  for (uint j = 0; j < NOFF; j++) {
    const REAL4 wd = bw[(size_t)b * NOFF + j];
    const REAL2 pl = power_row(l, wd.xy);
    __global const uint *src = bsrc + ((size_t)b * NOFF + j) * TPW;
    const uint set = (j & 1) * TPG + lt;
    __local REAL2 *slots = (__local REAL2 *)sv + set * (TPW * NPAD);
    __local const REAL4 *sp = sv + set * (TPW * NPAD / 2);
    FMMCL_UNROLL(TPW)
    for (uint c = 0; c < TPW; c++) stage_factor(l, src[c], pl, M, slots + c * NPAD);
    barrier(CLK_LOCAL_MEM_FENCE);
    FMMCL_UNROLL(TPW)
    for (uint c = 0; c < TPW; c++) {
      REAL2 out = cmul(row_sum(T, sp + c * (NPAD / 2)), pl);
      if (l == 0) out.x += sp[c * (NPAD / 2)].x * wd.z;
      sum[c] += out; /* a missing source staged zeros: adds 0 */
    }
  }
  FMMCL_UNROLL(TPW)
  for (uint c = 0; c < TPW; c++) {
    const uint row = brows[(size_t)b * TPW + c];
    if (b_raw < n_bundles && row != NO_CELL) L[(size_t)row * NROW + l] += sum[c];
  }
}

#endif /* M2L_SHARE_W */

#if M2L_TILE
/* ---- a tile of one level, one work-item per target cell (-DM2L_TILE=TB) ------
 * Every level of the uniform quadtree keeps M of all its cells (zero where
 * a cell has no sources), so the M2L can run densely over tiles: group g
 * takes the g-th TB x TB tile of the host's list (the tiles of every level
 * that hold a cell with an interaction list), stages the multipoles of the (TB+4)^2 cells its lists can reach
 * into local memory ONCE (coalesced; outside the domain zero, so edges need
 * no test; -DM2L_PERIODIC=1 wraps instead, as bench-m2l2d's lists do), and
 * work-item (tx, ty) then computes the 27 translations of its cell alone,
 * every row l:
 *   s_k = M_k w^-k (k = 1..P, the powers by recurrence),
 *   L_l += w^-l sum_k (-1)^k T[l][k] s_k,
 * rows and k fully unrolled, so each T[l][k] is a constant of its FMA: per
 * translation about 2(P+1)^2 FMAs and 12P other arithmetic instructions,
 * no barrier, no guarded power loop, multipoles read from local memory
 * 27 times each after one global read. Sources of the cells with zero M add
 * zero, as the tree's lists leave them out; cells without targets get an L
 * that nothing reads. The offsets of a cell at odd x are those of an even
 * one mirrored in x (likewise y), so one table of the 27 offsets of the
 * (even, even) position serves all four and no work-item diverges. */
#ifndef M2L_PERIODIC
#define M2L_PERIODIC 0
#endif
#ifndef M2L_TILE_SPLIT
#define M2L_TILE_SPLIT 1
#endif
/* TILE_SPLIT work-items per cell, each a share of the 27 offsets, their sums
 * added through local memory at the end: more warps and a shorter chain of
 * dependent work per warp (the window holds the partial sums afterwards) */
#define TILE_SPLIT M2L_TILE_SPLIT
#ifndef TILE_JUNROLL
#define TILE_JUNROLL 1 /* unroll of the 27 offsets (overlaps one's powers with the last's rows) */
#endif
#define TB M2L_TILE
#define TILE_LEVEL_SHIFT 27
#define WW (TB + 4)                  /* window side: the tile and 2 cells around (3 on the far side) */
#define CSTR (NROW | 1)              /* odd REAL2 stride: 64-bit reads mostly free of bank conflicts */
/* float keeps the P powers w^-k for the rows; double recomputes them (the
 * factors and sums alone are 8 NROW registers there) */
#ifdef FMMCL_DOUBLE
#define TILE_NPOW 1
#else
#define TILE_NPOW P
#endif

/* The (even, even) position's 27 offsets (ox, oy) in cell sides, row by row
 * as fmmcl_m2l2d_offset, with 0.5 log(ox^2 + oy^2); per offset the kernel
 * reads (ox, oy) and (Re 1/w, Im 1/w, 0.5 log |w|^2, 0) = ((ox, -oy) / r2, ..) */
#define TILE_OFFSETS(X) \
  X(-2, -2, 1.0397207708399179) X(-1, -2, 0.80471895621705014) X(0, -2, 0.69314718055994529) \
  X(1, -2, 0.80471895621705014) X(2, -2, 1.0397207708399179) X(3, -2, 1.2824746787307684) \
  X(-2, -1, 0.80471895621705014) X(2, -1, 0.80471895621705014) X(3, -1, 1.151292546497023) \
  X(-2, 0, 0.69314718055994529) X(2, 0, 0.69314718055994529) X(3, 0, 1.0986122886681098) \
  X(-2, 1, 0.80471895621705014) X(2, 1, 0.80471895621705014) X(3, 1, 1.151292546497023) \
  X(-2, 2, 1.0397207708399179) X(-1, 2, 0.80471895621705014) X(0, 2, 0.69314718055994529) \
  X(1, 2, 0.80471895621705014) X(2, 2, 1.0397207708399179) X(3, 2, 1.2824746787307684) \
  X(-2, 3, 1.2824746787307684) X(-1, 3, 1.151292546497023) X(0, 3, 1.0986122886681098) \
  X(1, 3, 1.151292546497023) X(2, 3, 1.2824746787307684) X(3, 3, 1.4451858789480823)
#ifdef FMMCL_DOUBLE
#define TILE_LIT(x) x
#else
#define TILE_LIT(x) x##f
#endif
#define TILE_OXY(x, y, h) (int2)(x, y),
#define TILE_W(x, y, h) (REAL4)((REAL)(x) / (REAL)((x) * (x) + (y) * (y)), (REAL)-(y) / (REAL)((x) * (x) + (y) * (y)), TILE_LIT(h), 0),
__constant int2 tile_oxy[27] = {TILE_OFFSETS(TILE_OXY)};
__constant REAL4 tile_w[27] = {TILE_OFFSETS(TILE_W)};

static inline uint spread_bits2(uint v) {
  v &= 0xffffu;
  v = (v | (v << 8)) & 0x00ff00ffu;
  v = (v | (v << 4)) & 0x0f0f0f0fu;
  v = (v | (v << 2)) & 0x33333333u;
  return (v | (v << 1)) & 0x55555555u;
}

__kernel __attribute__((reqd_work_group_size(TILE_SPLIT * TB * TB, 1, 1)))
void m2l2d_tile(__global const uint *tiles, const REAL log_root, __global const REAL2 *M, __global REAL2 *L) {
  __local REAL2 win[WW * WW * CSTR];
  /* group -> (level, tile) from the host's list of the tiles to compute
   * (TILE_LEVEL_SHIFT as FMMCL_M2L2D_TILE_LEVEL_SHIFT); a level narrower
   * than TB is one partial tile */
  const uint entry = tiles[get_group_id(0)], lev = entry >> TILE_LEVEL_SHIFT;
  const uint g = entry & ((1u << TILE_LEVEL_SHIFT) - 1), d = 1u << lev, per_side = d > TB ? d / TB : 1;
  const uint off = ((1u << (2 * lev)) - 1) / 3, X0 = (g % per_side) * TB, Y0 = (g / per_side) * TB;
  const uint t = get_local_id(0) % (TB * TB), part = get_local_id(0) / (TB * TB);
  for (uint e = get_local_id(0); e < WW * WW * NROW; e += TILE_SPLIT * TB * TB) {
    const uint cell = e / NROW, k = e - cell * NROW, wy = cell / WW, wx = cell - wy * WW;
    int gx = (int)(X0 + wx) - 2, gy = (int)(Y0 + wy) - 2;
#if M2L_PERIODIC
    gx = (gx % (int)d + (int)d) % (int)d, gy = (gy % (int)d + (int)d) % (int)d;
    const bool inside = true;
#else
    const bool inside = gx >= 0 && gy >= 0 && gx < (int)d && gy < (int)d;
#endif
    win[cell * CSTR + k] = inside ? M[(size_t)(off + (spread_bits2((uint)gx) | spread_bits2((uint)gy) << 1)) * NROW + k]
                                  : (REAL2)(0, 0);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint tx = t % TB, ty = t / TB, x = X0 + tx, y = Y0 + ty;
  const bool active = x < d && y < d; /* not in a partial tile's empty part (levels narrower than TB) */
  const int sx = (x & 1) ? -1 : 1, sy = (y & 1) ? -1 : 1; /* the mirror of the position */
  const REAL log_side = log_root - (REAL)lev * (REAL)0.69314718055994530942;
  __local const REAL2 *home = win + ((ty + 2) * WW + tx + 2) * CSTR;
  REAL2 sum[NROW];
  FMMCL_UNROLL(NROW)
  for (uint l = 0; l < NROW; l++) sum[l] = (REAL2)(0, 0);
  const uint j0 = active ? part * 27 / TILE_SPLIT : 0, j1 = active ? (part + 1) * 27 / TILE_SPLIT : 0;
  FMMCL_UNROLL(TILE_JUNROLL)
  for (uint j = j0; j < j1; j++) {
    const int2 oxy = tile_oxy[j];
    const REAL4 o = tile_w[j];
    const int ox = sx * oxy.x, oy = sy * oxy.y;
    __local const REAL2 *mine = home + (oy * WW + ox) * CSTR;
    const REAL2 u = (REAL2)((REAL)sx * o.x, (REAL)sy * o.y); /* 1/w */
    REAL2 s[NROW], pw[TILE_NPOW];
    s[0] = mine[0], pw[0] = u;
    FMMCL_UNROLL(P)
    for (uint k = 1; k < NROW; k++) {
      const REAL2 pk = k == 1 ? u : cmul(pw[(k - 2) % TILE_NPOW], u); /* w^-k */
      pw[(k - 1) % TILE_NPOW] = pk;
      s[k] = cmul(mine[k], pk);
    }
    REAL2 pl = u;
    FMMCL_UNROLL(NROW)
    for (uint l = 0; l < NROW; l++) {
      /* T[l][0] = -1/l (0 for l = 0), T[l][k] = C(l+k-1, k-1): constants once unrolled */
      REAL2 acc = l ? ((REAL)-1 / (REAL)l) * s[0] : (REAL2)(0, 0);
      REAL c = 1;
      FMMCL_UNROLL(P)
      for (uint k = 1; k < NROW; k++) {
        if (k > 1) c = c * (REAL)(l + k - 1) / (REAL)(k - 1);
        acc = fma((REAL2)((k & 1) ? -c : c), s[k], acc);
      }
      if (l == 0) sum[0] += acc;
      else {
        if (TILE_NPOW == 1) pl = l == 1 ? u : cmul(pl, u); /* recomputed, saving registers */
        sum[l] += cmul(acc, TILE_NPOW == 1 ? pl : pw[(l - 1) % TILE_NPOW]);
      }
    }
    sum[0].x += s[0].x * (o.z + log_side); /* the log term: M_0 log(|w| side) */
  }
#if TILE_SPLIT > 1
  barrier(CLK_LOCAL_MEM_FENCE); /* the window is read: it takes the parts' sums */
  if (part > 0) {
    FMMCL_UNROLL(NROW)
    for (uint l = 0; l < NROW; l++) win[((part - 1) * NROW + l) * (TB * TB) + t] = sum[l];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (part > 0) return;
  for (uint q = 1; q < TILE_SPLIT; q++) {
    FMMCL_UNROLL(NROW)
    for (uint l = 0; l < NROW; l++) sum[l] += win[((q - 1) * NROW + l) * (TB * TB) + t];
  }
#endif
  if (!active) return;
  __global REAL2 *Lc = L + (size_t)(off + (spread_bits2(x) | spread_bits2(y) << 1)) * NROW;
  FMMCL_UNROLL(NROW)
  for (uint l = 0; l < NROW; l++) Lc[l] += sum[l];
}
#endif /* M2L_TILE */
