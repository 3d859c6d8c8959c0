/* m2l2d.cl — the 2D FMM's M2L as in Cruz, Layton & Barba (CPC 2011, 4.1):
 * row traversal of the matrix-free translation, then a separate reduction
 * of each target cell's interaction-list results.
 *
 * Translation t takes the multipole M (NROW = P + 1 coefficients, REAL2) of
 * cell trans_src[t] to a local expansion about a cell at offset
 * w = trans_w[t].xy (in units of the cell side; .z is log of that side):
 *   L_l = w^-l (coef[l][0] M_0 + sum_{k=1..P} coef[l][k] M_k w^-k)
 *         + [l = 0] M_0 log|w side|,
 * coef[l][k] = (-1)^k C(l+k-1, k-1), coef[l][0] = -1/l (0 for l = 0).
 * Work-item g computes row l = g % NROW of translation g / NROW: many
 * work-items per translation, one coefficient each. Its power w^-l comes in
 * two steps, a fixed-trip loop to P guarded by l (no work-item leaves the
 * loop early, and it unrolls), then the k common factors w^-k, the same in
 * every row. The group's multipoles are staged coalesced in local memory and
 * results written coalesced to Lpart[g]. WGS and UNROLL are tunable.
 *
 * This is the paper's a_lk = (-1)^k C(l+k-1, k-1) w^-(k+l) (its indices
 * shifted by one: its multipole terms start at 1/z, ours at log z), applied
 * without forming the matrix. */
#ifndef P
#define P 8
#endif
#ifndef WGS
#define WGS 128
#endif
#ifndef UNROLL
#define UNROLL P
#endif
#define NROW (P + 1)
/* translations a group of WGS rows can touch: it may start and end mid-translation */
#define TPG (WGS / NROW + 2)

#ifdef FMMCL_DOUBLE
typedef double2 REAL2;
#else
typedef float2 REAL2;
#endif

static inline REAL2 cmul(REAL2 a, REAL2 b) { return (REAL2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void m2l2d(const uint n_trans, __global const uint *trans_src, __global const REAL4 *trans_w,
           __global const REAL2 *M, __global const REAL *coef, __global REAL2 *Lpart) {
  __local REAL2 Ms[TPG * NROW];
  /* the row coefficients too: neighbouring work-items read different rows,
   * which __constant memory would serialise; a row stride of NROW words
   * (odd for even P) spreads them over the local memory banks */
  __local REAL cs[NROW * NROW];
  const uint lid = get_local_id(0), g0 = get_group_id(0) * WGS;
  for (uint i = lid; i < NROW * NROW; i += WGS) cs[i] = coef[i];
  const uint t0 = g0 / NROW, t_end = min((g0 + WGS - 1) / NROW + 1, n_trans);
  const uint n_load = t_end > t0 ? (t_end - t0) * NROW : 0;
  for (uint i = lid; i < n_load; i += WGS)
    Ms[i] = M[(size_t)trans_src[t0 + i / NROW] * NROW + i % NROW];
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint g = g0 + lid, t = g / NROW, l = g % NROW;
  if (t >= n_trans) return;
  const REAL4 wd = trans_w[t];
  const REAL w2 = wd.x * wd.x + wd.y * wd.y;
  const REAL2 winv = (REAL2)(wd.x, -wd.y) / w2;
  __local const REAL2 *a = Ms + (t - t0) * NROW;
  /* step 1: w^-l, every work-item running all P trips */
  REAL2 pl = (REAL2)(1, 0);
  FMMCL_UNROLL(P)
  for (uint j = 0; j < P; j++) pl = j < l ? cmul(pl, winv) : pl;
  /* step 2: the k common factors */
  __local const REAL *row = cs + l * NROW;
  REAL2 acc = row[0] * a[0], pk = winv;
  FMMCL_UNROLL(UNROLL)
  for (uint k = 1; k <= P; k++) {
    acc += row[k] * cmul(a[k], pk);
    pk = cmul(pk, winv);
  }
  REAL2 b = cmul(acc, pl);
  b.x += (l == 0) * a[0].x * ((REAL)0.5 * log(w2) + wd.z);
  Lpart[g] = b;
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
