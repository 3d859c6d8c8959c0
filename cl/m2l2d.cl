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
 * power w^-l (see there). M2L_SHARE_W=2 adds m2l2d_cell: one work-item per
 * target cell, all its rows in registers (see there). */
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

/* Row l of one translation (w data wd, multipole coefficient a = M_l of its
 * source), the slot's NROW work-items together through slot / sp, their
 * NPAD REAL2 of local memory. Two barriers: every work-item of the group
 * calls it the same number of times. */
static inline REAL2 translate_row(const REAL *T, uint l, REAL4 wd, REAL2 a, __local REAL2 *slot,
                                  __local const REAL4 *sp) {
  const REAL2 winv = wd.xy;
  /* step 1: w^-l, every work-item running all P trips */
  REAL2 pl = (REAL2)(1, 0);
  FMMCL_UNROLL(P)
  for (uint j = 0; j < P; j++) pl = j < l ? cmul(pl, winv) : pl;
  /* step 2: the k common factors, shared through local memory */
  const REAL2 s = cmul(a, pl);
  slot[l] = (l & 1) ? -s : s;
  if (NPAD != NROW && l == P) slot[NROW] = (REAL2)(0, 0); /* the pad: times T = 0 */
  barrier(CLK_LOCAL_MEM_FENCE);
  REAL2 acc = (REAL2)(0, 0);
  FMMCL_UNROLL(UNROLL)
  for (uint k = 0; k < NPAD; k += 2) {
    const REAL4 pair = sp[k / 2];
    acc = fma((REAL2)(T[k]), pair.xy, acc);
    acc = fma((REAL2)(T[k + 1]), pair.zw, acc);
  }
  REAL2 out = cmul(acc, pl);
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

/* The same translations with the reduction fused in (-DM2L_FUSED=1 picks it
 * in the FMM; the paper keeps the two apart): slot lt of a group owns
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

/* Stores row l's shared factor (-1)^l M_l w^-l of a translation whose source
 * is src (NO_CELL: zero) into its slot (and the pad, which meets T = 0). */
static inline void stage_factor(uint l, uint src, REAL2 pl, __global const REAL2 *M, __local REAL2 *slot) {
  const REAL2 a = src != NO_CELL ? M[(size_t)src * NROW + l] : (REAL2)(0, 0);
  const REAL2 s = cmul(a, pl);
  slot[l] = (l & 1) ? -s : s;
  if (NPAD != NROW && l == P) slot[NROW] = (REAL2)(0, 0);
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

#if M2L_SHARE_W == 2
/* ---- one work-item per target cell (-DM2L_SHARE_W=2) ------------------------
 * The fused shared-w bundles (TPW = WGS cells of one level and position,
 * their 27 offsets alike), but work-item c of group b owns cell c of bundle
 * b and computes every row l of its translations itself:
 *   s_k = M_k w^-k (k = 1..P, the powers by recurrence),
 *   L_l += w^-l sum_k (-1)^k T[l][k] s_k,
 * with the rows and T[l][k] fully unrolled, so T is a constant of each FMA
 * (no register, no load, no guarded power loop, no barrier between rows):
 * per translation about 2(P+1)^2 FMAs and 12P other arithmetic
 * instructions. The row-per-work-item scheme above spends more than that on
 * the power loop, the barriers and the local-memory reads it needs to share
 * s_k across rows (see benchmarks/README.md). What a work-item must not do
 * is gather its source's multipole itself (32 sources per warp load: 32
 * cache lines per instruction), so the group stages the bundle's sources of
 * one offset in local memory first, NROW adjacent work-items per source
 * (reads coalesced), two buffers alternating so one barrier per offset
 * suffices. An offset no cell of the bundle has (bw[].w = 0, the count of
 * present sources) is skipped by the whole group. */
#define CSTR (NROW | 1)              /* odd REAL2 stride: 64-bit reads free of bank conflicts */
#define TEAMS (WGS / NROW)           /* staging: NROW work-items per source */
#define ROUNDS ((WGS + TEAMS - 1) / TEAMS)
/* float keeps the P powers w^-k for the rows; double recomputes them (the
 * factors and sums alone are 8 NROW registers there) */
#ifdef FMMCL_DOUBLE
#define CELL_NPOW 1
#else
#define CELL_NPOW P
#endif

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void m2l2d_cell(const uint n_bundles, __global const uint *brows, __global const uint *bsrc,
                __global const REAL4 *bw, __global const REAL2 *M, __global REAL2 *L) {
  __local REAL2 ms[2 * WGS * CSTR]; /* the bundle's source multipoles of one offset */
  const uint c = get_local_id(0), b = get_group_id(0), team = c / NROW, lane = c - team * NROW;
  REAL2 sum[NROW];
  FMMCL_UNROLL(NROW)
  for (uint l = 0; l < NROW; l++) sum[l] = (REAL2)(0, 0);
  uint done = 0; /* offsets computed: picks the buffer (skips are group-uniform) */
  for (uint j = 0; j < NOFF; j++) {
    const REAL4 wd = bw[(size_t)b * NOFF + j];
    if (wd.w == (REAL)0) continue;
    __local REAL2 *buf = ms + (done++ & 1) * (WGS * CSTR);
    __global const uint *src = bsrc + ((size_t)b * NOFF + j) * WGS;
    if (team < TEAMS) {
      FMMCL_UNROLL(ROUNDS)
      for (uint q = 0; q < ROUNDS; q++) {
        const uint cc = q * TEAMS + team;
        if (cc < WGS) {
          const uint sc = src[cc];
          buf[cc * CSTR + lane] = sc != NO_CELL ? M[(size_t)sc * NROW + lane] : (REAL2)(0, 0);
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __local const REAL2 *mine = buf + c * CSTR;
    const REAL2 u = wd.xy;
    REAL2 s[NROW], pw[CELL_NPOW];
    s[0] = mine[0], pw[0] = u;
    FMMCL_UNROLL(P)
    for (uint k = 1; k < NROW; k++) {
      const REAL2 pk = k == 1 ? u : cmul(pw[(k - 2) % CELL_NPOW], u); /* w^-k */
      pw[(k - 1) % CELL_NPOW] = pk;
      s[k] = cmul(mine[k], pk);
    }
    REAL2 pl = u;
    FMMCL_UNROLL(NROW)
    for (uint l = 0; l < NROW; l++) {
      /* T[l][0] = -1/l (0 for l = 0), T[l][k] = C(l+k-1, k-1): constants once unrolled */
      REAL2 acc = l ? ((REAL)-1 / (REAL)l) * s[0] : (REAL2)(0, 0);
      REAL t = 1;
      FMMCL_UNROLL(P)
      for (uint k = 1; k < NROW; k++) {
        if (k > 1) t = t * (REAL)(l + k - 1) / (REAL)(k - 1);
        acc = fma((REAL2)((k & 1) ? -t : t), s[k], acc);
      }
      if (l == 0) sum[0] += acc;
      else {
        if (CELL_NPOW == 1) pl = l == 1 ? u : cmul(pl, u); /* recomputed, saving registers */
        sum[l] += cmul(acc, CELL_NPOW == 1 ? pl : pw[(l - 1) % CELL_NPOW]);
      }
    }
    sum[0].x += s[0].x * wd.z; /* the log term: M_0 log(|w| side) */
  }
  const uint row = brows[(size_t)b * WGS + c];
  if (b < n_bundles && row != NO_CELL) {
    FMMCL_UNROLL(NROW)
    for (uint l = 0; l < NROW; l++) L[(size_t)row * NROW + l] += sum[l];
  }
}
#endif /* M2L_SHARE_W == 2 */
#endif /* M2L_SHARE_W */
