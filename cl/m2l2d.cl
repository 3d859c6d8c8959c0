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
 *      compile time. */
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
