/* expansions3d.cl — 3D Laplace spherical-harmonic operators on the device:
 * P2M, M2M, M2L, L2L, L2P, M2P, P2L, same normalisation as lib/expansions3d.h
 * but stored scaled by each cell's side (see Scaling below).
 *
 * Mapping (Yokota & Barba, GPU Computing Gems): one cell per work-group; one
 * expansion coefficient per work-item (P2M, M2M, M2L, L2L) or one target per
 * work-item (L2P). Sources, shifts and expansions of the cells a group reads
 * are staged through local memory, so all global reads are contiguous. A
 * work-item past the last coefficient computes a clamped copy and only skips
 * the final store (padding, not branching), except that P2M, P2L and M2L
 * skip their long sums there (between barriers: on a CPU device the padding
 * would cost up to a third of the time; on a GPU those lanes idle anyway).
 * Loops over a cell's sources, targets and list entries run to bounds
 * uniform across the group.
 *
 * Buffers (the host packs them):
 *   expansions  REAL2 per coefficient (re, im), cell c at [c*NCOEF, (c+1)*NCOEF),
 *               coefficient (n, m >= 0) at n(n+1)/2 + m;
 *   centers     REAL4 per cell (x, y, z, 1/s), s the side of the cell's cube,
 *               in units of the root's half-side from the root's centre:
 *               dyadic, so exact in float and their differences too;
 *   cell_src, cell_tgt  int2 per cell: its [begin, end) in sources, targets;
 *   lists       rows[g] the cell of group g, its entries
 *               list[list_begin[g] .. list_begin[g+1]) (M2L, P2L, M2P).
 *   sources     REAL4 (x, y, z, q), targets REAL4 (x, y, z, -), each cell's
 *               points contiguous, each point relative to its leaf's centre
 *               (local coordinates, rounded only relative to the leaf's
 *               size); out REAL4 (d/dx, d/dy, d/dz, phi) as p2p.cl.
 * A point is used in another cell's frame by adding the exact difference
 * of the two centres: P2M and L2P expand about the leaf's own centre, so
 * they use the local coordinates as they are; M2P and P2L add it per
 * list entry.
 * Every kernel adds to its output (zero it first), like the C reference.
 *
 * Dipoles and Hessians (-DDIPOLES=1, -DHESSIAN=1; compiled in only when a
 * plan asks): dip REAL4 (dx, dy, dz, -) per sorted source, in the device
 * frame's units; a dipole's moments are d . grad_y of a charge's,
 *   d . grad R_n^m = (dx - i dy)/2 R_{n-1}^{m+1} - (dx + i dy)/2 R_{n-1}^{m-1} + dz R_{n-1}^m,
 *   d . grad I_n^m = (dx - i dy)/2 I_{n+1}^{m+1} - (dx + i dy)/2 I_{n+1}^{m-1} - dz I_{n+1}^m,
 * (d_z R_n^m = R_{n-1}^m, (d_x + i d_y) R_n^m = R_{n-1}^{m+1}, and
 * (d_x - i d_y) R_n^m = -R_{n-1}^{m-1}; I likewise with n + 1 and the
 * signs of d_z and d_x - i d_y flipped), so P2M and P2L add them and every
 * other operator is unchanged. hess REAL[6] (xx, yy, zz, xy, xz, yz) per
 * sorted target: L2P and M2P add the second derivatives (see
 * field_derivative), scaled by 1/s^3.
 *
 * Scaling: I_n^m grows like (2n-1)!! / r^(n+1) and M2L needs n up to 2P, so
 * in float unscaled coefficients overflow at deep levels. Every kernel works
 * in units of the cell's side s, and the buffers hold
 *     Mhat_n^m = M_n^m / s^n,      Lhat_n^m = L_n^m * s^(n+1),
 * which is what the operators give when fed coordinates divided by s.
 * Between levels (s_child = s_parent / 2) M2M multiplies output degree n by
 * 2^-n and L2L output degree k by 2^-(k+1); L2P and M2P multiply phi by 1/s
 * and the gradient by 1/s^2. Shifts in M2L are >= 2 cells, so I_{2P}
 * stays below (4P-1)!! / 2^(2P+1): finite in float for P <= 16.
 *
 * Needs fmmcl_common.h prepended (REAL, REAL4, the fp64 pragma under
 * FMMCL_DOUBLE). */

#ifndef P
#define P 4          /* expansion order */
#endif
#define NCOEF ((P + 1) * (P + 2) / 2)
#define NCOEF2 ((2 * P + 1) * (2 * P + 2) / 2) /* harmonics of order 2P, for M2L */
#ifndef WGS
#define WGS (((NCOEF + 31) / 32) * 32) /* work-group size: one coefficient each */
#endif
#if WGS < NCOEF
#error "expansions3d.cl: WGS must be at least (P+1)(P+2)/2"
#endif

#ifndef DIPOLES
#define DIPOLES 0
#endif
#ifndef HESSIAN
#define HESSIAN 0
#endif

#ifdef FMMCL_DOUBLE
typedef double2 REAL2;
#else
typedef float2 REAL2;
#endif

/* ---- complex arithmetic and coefficient indexing ----------------------- */

REAL2 cmul(REAL2 a, REAL2 b) { return (REAL2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
/* conj(a) * b */
REAL2 cmulc(REAL2 a, REAL2 b) { return (REAL2)(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x); }
REAL2 conj2(REAL2 a) { return (REAL2)(a.x, -a.y); }

int coef_index(int n, int m) { return n * (n + 1) / 2 + m; }

/* (n, m) of coefficient k, closed form: n = floor((sqrt(8k+1) - 1) / 2),
 * corrected by one either way for the rounding of sqrt. No loop: PoCL 3.1
 * mis-replicates values computed in a loop before a barrier. */
int2 coef_degree_order(int k)
{
  int d = (int)((sqrt((float)(8 * k + 1)) - 1.0f) * 0.5f);
  d += ((d + 1) * (d + 2) / 2 <= k) ? 1 : 0;
  d -= (d * (d + 1) / 2 > k) ? 1 : 0;
  return (int2)(d, k - d * (d + 1) / 2);
}

/* X_n^m for any |m| <= n from m >= 0 storage: X_n^-m = (-1)^m conj(X_n^m). */
REAL2 load_any(__local const REAL2 *X, int n, int m)
{
  const REAL2 z = X[coef_index(n, abs(m))];
  const REAL s = (m < 0 && (m & 1)) ? -1 : 1;
  return (m < 0) ? (REAL2)(s * z.x, -s * z.y) : z;
}

/* ---- single solid harmonics, O(n) each ---------------------------------- */

/* The divisors of the regular recurrence, 1 / ((k+1-m)(k+1+m)) at
 * k (P+1) + m and 1 / (2j) at (P+1)^2 + j, staged once per work-group: a
 * double division costs tens of instructions on GPUs, and P2M in double
 * spent most of its time dividing by these integers. */
#define NRECUR ((P + 1) * (P + 1) + P + 1)

void stage_recurrence(__local REAL *T)
{
  for (int i = get_local_id(0); i < NRECUR; i += WGS) {
    const int k = i / (P + 1), m = i % (P + 1);
    T[i] = (i < (P + 1) * (P + 1)) ? (REAL)1 / ((REAL)(k + 1 - m) * (REAL)(k + 1 + m))
                                   : (REAL)1 / (REAL)(2 * max(i - (P + 1) * (P + 1), 1));
  }
}

/* R_n^m(x) = r^n P_n^m e^{im phi} / (n+m)!, by the recurrences of
 * lib/expansions3d_harmonics.c, T from stage_recurrence. */
REAL2 solid_regular(int n, int m, REAL x, REAL y, REAL z, __local const REAL *T)
{
  const REAL r2 = x * x + y * y + z * z;
  REAL2 here = (REAL2)(1, 0);
  for (int j = 1; j <= m; j++)
    here = cmul(here, (REAL2)(-x, -y) * T[(P + 1) * (P + 1) + j]);
  REAL2 below = (REAL2)(0, 0);
  for (int k = m; k < n; k++) {
    const REAL2 next = ((REAL)(2 * k + 1) * z * here - r2 * below) * T[k * (P + 1) + m];
    below = here;
    here = next;
  }
  return here;
}

/* I_n^m(x) = (n-m)! P_n^m e^{im phi} / r^{n+1}. */
REAL2 solid_irregular(int n, int m, REAL x, REAL y, REAL z)
{
  const REAL inv_r2 = 1 / (x * x + y * y + z * z);
  REAL2 here = (REAL2)(sqrt(inv_r2), 0);
  for (int j = 1; j <= m; j++)
    here = cmul(here, (REAL2)(-x, -y) * ((REAL)(2 * j - 1) * inv_r2));
  REAL2 below = (REAL2)(0, 0);
  for (int k = m; k < n; k++) {
    const REAL2 next = ((REAL)(2 * k + 1) * z * here - (REAL)((k + m) * (k - m)) * below) * inv_r2;
    below = here;
    here = next;
  }
  return here;
}

#if DIPOLES
/* R_n^m and I_n^m for any m (X_n^-m = (-1)^m conj(X_n^m)), 0 where
 * |m| > n or n < 0. */
REAL2 regular_any(int n, int m, REAL x, REAL y, REAL z, __local const REAL *T)
{
  if (n < 0 || abs(m) > n) return (REAL2)(0, 0);
  const REAL2 r = solid_regular(n, abs(m), x, y, z, T);
  return (m < 0) ? ((m & 1) ? -1 : 1) * conj2(r) : r;
}

REAL2 irregular_any(int n, int m, REAL x, REAL y, REAL z)
{
  if (abs(m) > n) return (REAL2)(0, 0);
  const REAL2 r = solid_irregular(n, abs(m), x, y, z);
  return (m < 0) ? ((m & 1) ? -1 : 1) * conj2(r) : r;
}

/* d . grad_y R_n^m(y) and d . grad_y I_n^m(y) (see the top of the file). */
REAL2 dipole_regular(int n, int m, REAL4 y, REAL4 d, __local const REAL *T)
{
  const REAL2 a = (REAL2)(d.x, -d.y) * (REAL)0.5, b = (REAL2)(d.x, d.y) * (REAL)0.5;
  return cmul(a, regular_any(n - 1, m + 1, y.x, y.y, y.z, T)) - cmul(b, regular_any(n - 1, m - 1, y.x, y.y, y.z, T)) +
         d.z * regular_any(n - 1, m, y.x, y.y, y.z, T);
}

REAL2 dipole_irregular(int n, int m, REAL4 y, REAL4 d)
{
  const REAL2 a = (REAL2)(d.x, -d.y) * (REAL)0.5, b = (REAL2)(d.x, d.y) * (REAL)0.5;
  return cmul(a, irregular_any(n + 1, m + 1, y.x, y.y, y.z)) - cmul(b, irregular_any(n + 1, m - 1, y.x, y.y, y.z)) -
         d.z * irregular_any(n + 1, m, y.x, y.y, y.z);
}
#endif

/* Cooperative loads of one expansion and of the regular harmonics of one shift. */
void stage_expansion(__local REAL2 *dst, __global const REAL2 *src)
{
  for (int k = get_local_id(0); k < NCOEF; k += WGS)
    dst[k] = src[k];
}

void stage_regular(__local REAL2 *dst, REAL4 d, __local const REAL *T)
{
  for (int k = get_local_id(0); k < NCOEF; k += WGS) {
    const int2 nm = coef_degree_order(k);
    const int n = nm.x, m = nm.y;
    dst[k] = solid_regular(n, m, d.x, d.y, d.z, T);
  }
}

/* ---- P2M: M_n^m += sum_j q_j R_n^m(y_j - c) ------------------------------ */

/* Three mappings. Per source (P2M_PER_SOURCE=1): each work-item takes every
 * WGS-th source of the leaf and adds q R_n^m for all (n, m) to private
 * accumulators, generating them by the recurrence in one O(NCOEF) sweep;
 * the group then sums its WGS partial expansions through local memory.
 * Per coefficient (0): each work-item one (n, m), O(n) per source, so a
 * warp's lanes wait on the longest recurrence for every source (on an H100,
 * float, p = 8, 1e6 points: 0.03 ms against 0.82). The per-source
 * form keeps 2 NCOEF reals in registers: the default takes it where that
 * is at most 96 words, without dipoles (their moments need degree n - 1
 * of each source's harmonics as well). Per column (P2M_COLUMNS=1, the
 * default at higher orders without dipoles): work-item (m, slice) takes
 * order m for every (WGS / (P + 1))-th source, R_m^m by m products and
 * R_m^m .. R_P^m by the recurrence, O(P) a source where the per-
 * coefficient form spends O(n) on each of the column's P + 1 - m terms;
 * the slices' partial columns are summed through local memory. */
#ifdef FMMCL_DOUBLE
#define REAL2_WORDS 4
#else
#define REAL2_WORDS 2
#endif
#ifndef P2M_PER_SOURCE
#if !DIPOLES && NCOEF * REAL2_WORDS <= 96
#define P2M_PER_SOURCE 1
#else
#define P2M_PER_SOURCE 0
#endif
#endif

#ifndef P2M_COLUMNS
#if !DIPOLES && !P2M_PER_SOURCE
#define P2M_COLUMNS 1
#else
#define P2M_COLUMNS 0
#endif
#endif
#if (P2M_PER_SOURCE || P2M_COLUMNS) && DIPOLES
#error "expansions3d.cl: P2M_PER_SOURCE and P2M_COLUMNS do not take dipoles"
#endif
/* slices: the host's (fmm3d_kernels.c: as many as the group has columns
 * for and the device's local memory holds), else what 16 KB holds */
#ifndef P2M_SLICES
#define P2M_SLICES_FIT (16384 / (int)(P2M_STRIDE * sizeof(REAL2)))
#define P2M_SLICES_ALL (WGS / (P + 1))
#define P2M_SLICES (P2M_SLICES_ALL < P2M_SLICES_FIT ? P2M_SLICES_ALL : P2M_SLICES_FIT > 0 ? P2M_SLICES_FIT : 1)
#endif
/* odd, so that a lane reading one coefficient of every partial sum meets
 * no bank twice */
#define P2M_STRIDE (NCOEF | 1)
/* local memory of either mapping, in REAL4s: the partial sums, or the
 * source tiles and the recurrence's divisors */
#if P2M_PER_SOURCE
#define P2M_SCRATCH ((WGS * P2M_STRIDE + 1) / 2)
#elif P2M_COLUMNS
/* the slices' partial expansions (2 REALs a coefficient), then
 * 1 / ((k + 1 - m)(k + 1 + m)) (one REAL each), in REAL4s */
#define P2M_SCRATCH ((2 * P2M_SLICES * P2M_STRIDE + (P + 1) * (P + 1) + 3) / 4)
#else
#define P2M_SCRATCH (2 * WGS + (NRECUR + 3) / 4)
#endif

/* Adds the group's count partial expansions part[i * P2M_STRIDE ..] to
 * Mc (after the barrier that publishes them). */
void p2m_add_partials(__local const REAL2 *part, int count, __global REAL2 *restrict Mc)
{
  for (int k = get_local_id(0); k < NCOEF; k += WGS) {
    REAL2 sum = (REAL2)(0, 0);
    for (int i = 0; i < count; i++)
      sum += part[i * P2M_STRIDE + k];
    Mc[k] += sum;
  }
}

/* Adds sum_j q_j R_n^m(y_j) to the expansion Mc, y_j = (x_j + d) w over
 * the sources x_j = src[begin .. end) (a leaf's frame: d moves them to the
 * expansion's centre, w is its 1/side); dipoles likewise. */
void p2m_sum(__global const REAL4 *restrict src, int begin, int end, REAL4 d, REAL w,
             __global const REAL4 *restrict dip, __local REAL4 *scratch, __global REAL2 *restrict Mc)
{
  const int lid = get_local_id(0);
#if P2M_PER_SOURCE
  __local REAL2 *part = (__local REAL2 *)scratch;
  REAL2 acc[NCOEF];
#pragma unroll
  for (int k = 0; k < NCOEF; k++)
    acc[k] = (REAL2)(0, 0);
  for (int j = begin + lid; j < end; j += WGS) {
    const REAL4 y = src[j];
    const REAL x = (y.x + d.x) * w, yy = (y.y + d.y) * w, z = (y.z + d.z) * w, r2 = x * x + yy * yy + z * z;
    /* R_m^m = R_{m-1}^{m-1} (-x - iy) / (2m), then up in n as solid_regular
     * (the divisors are constants once the loops unroll) */
    REAL2 diag = (REAL2)(y.w, 0);
#pragma unroll
    for (int m = 0; m <= P; m++) {
      if (m > 0)
        diag = cmul(diag, (REAL2)(-x, -yy) * ((REAL)1 / (REAL)(2 * m)));
      REAL2 below = (REAL2)(0, 0), R = diag;
#pragma unroll
      for (int k = m; k <= P; k++) {
        acc[coef_index(k, m)] += R;
        const REAL2 next = ((REAL)(2 * k + 1) * z * R - r2 * below) * ((REAL)1 / (REAL)((k + 1 - m) * (k + 1 + m)));
        below = R;
        R = next;
      }
    }
  }
#pragma unroll
  for (int k = 0; k < NCOEF; k++)
    part[lid * P2M_STRIDE + k] = acc[k];
  barrier(CLK_LOCAL_MEM_FENCE);
  p2m_add_partials(part, WGS, Mc);
#elif P2M_COLUMNS
  __local REAL2 *part = (__local REAL2 *)scratch;
  __local REAL *inv = (__local REAL *)(part + P2M_SLICES * P2M_STRIDE);
  for (int i = lid; i < (P + 1) * (P + 1); i += WGS) {
    const int k = i / (P + 1), mm = i - k * (P + 1);
    inv[i] = mm <= k ? (REAL)1 / (REAL)((k + 1 - mm) * (k + 1 + mm)) : 0;
  }
  /* part needs no clearing: every (slice, k, m) is written below, by the
   * work-item of column m (WGS >= P2M_SLICES (P + 1)) */
  barrier(CLK_LOCAL_MEM_FENCE);
  const int m = lid % (P + 1), slice = lid / (P + 1);
  if (slice < P2M_SLICES) {
    REAL2 acc[P + 1];
#pragma unroll
    for (int k = 0; k <= P; k++)
      acc[k] = (REAL2)(0, 0);
    for (int j = begin + slice; j < end; j += P2M_SLICES) {
      const REAL4 y = src[j];
      const REAL x = (y.x + d.x) * w, yy = (y.y + d.y) * w, z = (y.z + d.z) * w, r2 = x * x + yy * yy + z * z;
      /* R_m^m = q (-x - iy)^m / (2^m m!) */
      REAL2 R = (REAL2)(y.w, 0), below = (REAL2)(0, 0);
#pragma unroll
      for (int i = 1; i <= P; i++)
        if (i <= m)
          R = cmul(R, (REAL2)(-x, -yy) * ((REAL)1 / (REAL)(2 * i)));
#pragma unroll
      for (int k = 0; k <= P; k++)
        if (k >= m) {
          acc[k] += R;
          const REAL2 next = ((REAL)(2 * k + 1) * z * R - r2 * below) * inv[k * (P + 1) + m];
          below = R;
          R = next;
        }
    }
#pragma unroll
    for (int k = 0; k <= P; k++)
      if (k >= m)
        part[slice * P2M_STRIDE + coef_index(k, m)] = acc[k];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  p2m_add_partials(part, P2M_SLICES, Mc);
#else
  __local REAL4 *tile = scratch;
#if DIPOLES
  __local REAL4 *dtile = scratch + WGS;
#endif
  __local REAL *T = (__local REAL *)(scratch + 2 * WGS);
  const int2 nm = coef_degree_order(min(lid, NCOEF - 1));
  const int n = nm.x, m = nm.y;
  REAL2 acc = (REAL2)(0, 0);
  stage_recurrence(T); /* the tile's barrier below publishes it */
  for (int base = begin; base < end; base += WGS) {
    tile[lid] = src[min(base + lid, end - 1)];
#if DIPOLES
    dtile[lid] = dip[min(base + lid, end - 1)];
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    const int count = min(WGS, end - base);
    for (int j = 0; j < count && lid < NCOEF; j++) {
      const REAL4 y = (REAL4)((tile[j].xyz + d.xyz) * w, tile[j].w);
      acc += y.w * solid_regular(n, m, y.x, y.y, y.z, T);
#if DIPOLES
      acc += dipole_regular(n, m, y, dtile[j] * w, T);
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid < NCOEF)
    Mc[lid] += acc;
#endif
}

/* Group g: cell cells[g], sources src[src_begin[g] .. src_begin[g+1]),
 * expanded about the cell's centre (their frame). */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2m(__global const REAL4 *restrict src, __global const int *restrict src_begin,
         __global const int *restrict cells, __global const REAL4 *restrict center,
         __global REAL2 *restrict M, __global const REAL4 *restrict dip)
{
  __local REAL4 scratch[P2M_SCRATCH];
  const int g = get_group_id(0), cell = cells[g];
  p2m_sum(src, src_begin[g], src_begin[g + 1], (REAL4)(0, 0, 0, 0), center[cell].w, dip, scratch,
          M + cell * NCOEF);
}

/* ---- M2M: M'_n^m += sum_{k,u} R_k^u(c_child - c_parent) M_{n-k}^{m-u} --- */

/* Coefficient (n, m) of an expansion shifted by R (regular harmonics of
 * the shift) from Mc: sum_{k,u} R_k^u Mc_{n-k}^{m-u}, both staged. */
REAL2 m2m_shift_sum(__local const REAL2 *R, __local const REAL2 *Mc, int n, int m)
{
  REAL2 acc = (REAL2)(0, 0);
  for (int k = 0; k <= n; k++)
    for (int u = max(-k, m - (n - k)); u <= min(k, m + (n - k)); u++)
      acc += cmul(load_any(R, k, u), load_any(Mc, n - k, m - u));
  return acc;
}

/* Group g: parent cell parents[first + g], children cells children[first + g].x
 * .. .x + .y - 1 (contiguous, as the octree stores them); one launch per
 * level, first = where that level's parents begin. The shift is in units of
 * the child's side, so the result is 2^n times the parent's scaled Mhat_n. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void m2m(__global const int *restrict parents, __global const int2 *restrict children,
         __global const REAL4 *restrict center, __global REAL2 *M, const int first)
{
  __local REAL2 R[NCOEF], Mc[NCOEF];
  __local REAL T[NRECUR];
  const int g = first + get_group_id(0), lid = get_local_id(0), parent = parents[g];
  const int2 kids = children[g];
  const int2 nm = coef_degree_order(min(lid, NCOEF - 1));
  const int n = nm.x, m = nm.y;
  REAL2 acc = (REAL2)(0, 0);
  stage_recurrence(T);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int child = kids.x; child < kids.x + kids.y; child++) {
    const REAL4 cc = center[child], cp = center[parent];
    stage_regular(R, (REAL4)((cc.xyz - cp.xyz) * cc.w, 0), T);
    stage_expansion(Mc, M + child * NCOEF);
    barrier(CLK_LOCAL_MEM_FENCE);
    acc += m2m_shift_sum(R, Mc, n, m);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid < NCOEF)
    M[parent * NCOEF + lid] += acc * pown((REAL)0.5, n);
}

/* The treecode's P2M: each leaf's multipole about the centre of its
 * sources' box, exp_frame[leaf] (x, y, z, 1/side), not about the leaf's
 * centre (the frame its points are in), so that M2P converges however the
 * sources sit in their cells. Its parents' come from the same M2M kernel
 * given exp_frame for center: every shift is then between the centres of
 * a child's and its parent's source boxes, at most the parent's radius b,
 * so a degree-n term rounds relative to b^n. Moving the cube's expansion
 * to the box's centre afterwards (an M2M by up to the cube's half-
 * diagonal) rounds relative to that instead: at high orders, for sources
 * tight in a corner of their cell, the rounding outgrew the terms. Apart
 * from p2m, whose expansion centre is the points' frame. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2m_about(__global const REAL4 *restrict src, __global const int *restrict src_begin,
               __global const int *restrict cells, __global const REAL4 *restrict center,
               __global const REAL4 *restrict exp_frame, __global REAL2 *restrict M,
               __global const REAL4 *restrict dip)
{
  __local REAL4 scratch[P2M_SCRATCH];
  const int g = get_group_id(0), cell = cells[g];
  const REAL4 e = exp_frame[cell];
  /* from the leaf's frame to the expansion centre */
  const REAL4 d = (REAL4)(center[cell].xyz - e.xyz, 0);
  p2m_sum(src, src_begin[g], src_begin[g + 1], d, e.w, dip, scratch, M + cell * NCOEF);
}

/* ---- M2L: L_j^k += (-1)^j sum_{n,m} conj(M_n^m) I_{n+j}^{m+k}(c_L - c_M) - */

/* V-list pairs are same-level cells, so the shift in units of the side is
 * one of 7^3 integer vectors: the host tabulates their I_n^m (n <= 2P, all
 * |m| <= n, row n at NSHIFT_ROW(n), in double rounded to REAL) once per
 * plan, and each entry carries its shift id. The m sum is split by the sign
 * of m, with conj(M_n^-u) = (-1)^u M_n^u, so M is read from m >= 0 storage
 * and each sign is a compile-time constant once the loops unroll on P:
 *   sum_{m=0..n} conj(M_n^m) I_{n+j}^{k+m} + sum_{u=1..n} (-1)^u M_n^u I_{n+j}^{k-u}.
 * Every work-item runs the same loops, unrolled on P, with no branch and no
 * select. The harmonics are staged with both signs of m (M2L_SIGNED, when
 * local memory allows); otherwise only m >= 0 is staged and I_{n+j}^{k-u},
 * u > k, comes from (-1)^(u-k) conj(I_{n+j}^{u-k}) by selects. Padding
 * work-items skip the sums (the branch holds no barrier). */
#define NSHIFT ((2 * P + 1) * (2 * P + 1))  /* harmonics per shift, both signs */
#define NSHIFT_ROW(n) ((n) * (n) + (n))     /* I_n^0 in a shift's row */
#ifdef M2L_SIGNED
#define NSTAGE NSHIFT
#else
#define NSTAGE NCOEF2
#endif
/* The batched M2L: M2L_B targets a group, M2L_TPI of them a work-item. */
#ifndef M2L_B
#define M2L_B 8
#endif
#ifndef M2L_TPI
#define M2L_TPI M2L_B
#endif
#define M2L_SLOTS (M2L_B / M2L_TPI)
#ifndef M2L_WGS
#define M2L_WGS ((NCOEF * M2L_SLOTS + 31) / 32 * 32)
#endif

/* Adds one shift's contribution to target coefficient (j, k) of count
 * expansions: Ms holds their multipoles one after another (NCOEF apart), S
 * the shift's staged harmonics, acc[0 .. count) the sums. count is a
 * compile-time constant at every call (the kernels inline this), so the
 * loops unroll and each harmonic, read once, serves every multipole from
 * a register: 4 mul-adds per (n, m) and multipole. */
void m2l_sums(__local const REAL2 *Ms, __local const REAL2 *S, int j, int k, REAL2 *acc, const int count)
{
#ifndef M2L_SIGNED
  const REAL sk = (k & 1) ? -1 : 1;
#endif
#pragma unroll
  for (int n = 0; n <= P; n++) {
    const int row = n * (n + 1) / 2;
#ifdef M2L_SIGNED
    __local const REAL2 *In = S + NSHIFT_ROW(n + j) + k; /* I_{n+j}^k */
    const REAL2 i0 = In[0];
#pragma unroll
    for (int d = 0; d < count; d++) acc[d] += cmulc(Ms[d * NCOEF + row], i0);
#pragma unroll
    for (int m = 1; m <= n; m++) {
      /* conj(x + iy) a + x b + iy b, b = (-1)^m I_{n+j}^{k-m} */
      const REAL2 a = In[m], b = ((m & 1) ? -1 : 1) * In[-m];
      const REAL2 sum = a + b, rot = (REAL2)(a.y - b.y, b.x - a.x);
#pragma unroll
      for (int d = 0; d < count; d++) {
        const REAL2 mm = Ms[d * NCOEF + row + m];
        acc[d] += mm.x * sum + mm.y * rot;
      }
    }
#else
    __local const REAL2 *In = S + (n + j) * (n + j + 1) / 2; /* I_{n+j}^0 */
#pragma unroll
    for (int m = 0; m <= n; m++) {
      const REAL2 z = In[m + k];
#pragma unroll
      for (int d = 0; d < count; d++) acc[d] += cmulc(Ms[d * NCOEF + row + m], z);
    }
#pragma unroll
    for (int u = 1; u <= n; u++) {
      const int t = k - u;
      const REAL2 z = In[abs(t)];
      const REAL s = (t < 0) ? sk : ((u & 1) ? -1 : 1);
      const REAL2 w = s * (REAL2)(z.x, (t < 0) ? -z.y : z.y);
#pragma unroll
      for (int d = 0; d < count; d++) acc[d] += cmul(Ms[d * NCOEF + row + u], w);
    }
#endif
  }
}

/* Staged coefficient i of a shift: the whole row block (M2L_SIGNED) or its
 * m >= 0 part in expansion order. */
int m2l_stage_source(int i)
{
#ifdef M2L_SIGNED
  return i;
#else
  const int2 nm = coef_degree_order(i);
  return NSHIFT_ROW(nm.x) + nm.y;
#endif
}

/* Per cell (CPU devices, fmm3d_kernels.c): group g is target cell
 * cells[g], its V list list[list_begin[g] .. list_begin[g+1]) of source
 * cells, shift[e] the table row of entry e; M2L_BATCH entries staged a
 * round (two barriers per M2L_BATCH entries, not per entry). */
#ifndef M2L_BATCH
#define M2L_BATCH 4
#endif
#ifndef NO_M2L /* the treecode's build: no M2L kernels */
#define NO_M2L 0
#endif
#if !NO_M2L
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void m2l(__global const int *restrict cells, __global const int *restrict list_begin,
         __global const int *restrict list, __global const int *restrict shift,
         __global const REAL2 *restrict table, __global const REAL2 *restrict M,
         __global REAL2 *restrict L)
{
  __local REAL2 S[M2L_BATCH * NSTAGE], Ms[M2L_BATCH * NCOEF];
  const int g = get_group_id(0), lid = get_local_id(0), cell = cells[g];
  const int2 nm = coef_degree_order(min(lid, NCOEF - 1));
  const int j = nm.x, k = nm.y;
  const int e0 = list_begin[g], e1 = list_begin[g + 1];
  REAL2 acc = (REAL2)(0, 0);
  for (int e = e0; e < e1; e += M2L_BATCH) {
    const int count = min(M2L_BATCH, e1 - e);
    for (int i = lid; i < count * NSTAGE; i += WGS) {
      const int b = i / NSTAGE;
      S[i] = table[shift[e + b] * NSHIFT + m2l_stage_source(i - b * NSTAGE)];
    }
    for (int i = lid; i < count * NCOEF; i += WGS) {
      const int b = i / NCOEF;
      Ms[i] = M[list[e + b] * NCOEF + (i - b * NCOEF)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < NCOEF)
      for (int b = 0; b < count; b++)
        m2l_sums(Ms + b * NCOEF, S + b * NSTAGE, j, k, &acc, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid < NCOEF)
    L[cell * NCOEF + lid] += (j & 1) ? -acc : acc;
}

/* Batched (GPUs): group g: up to M2L_B target cells of one level and one position in
 * their parents (lib/tree/tree3d_v_batches.c), targets[g * M2L_B ..] (-1:
 * none), whose V lists share their directions: entry e of the group's
 * begin[g] .. begin[g+1] is direction dir[e] (its table row), with each
 * target's source cell sources[e * M2L_B ..] (-1: none). Per entry the group
 * stages the shift's harmonics once for all its targets (the table is
 * read once a group, not once a V entry) and their sources' multipoles;
 * work-item (slot, c) sums coefficient c for the slot's M2L_TPI targets.
 * A target belongs to one group: its L has one writer. */
__kernel __attribute__((reqd_work_group_size(M2L_WGS, 1, 1)))
void m2l_batched(__global const int *restrict targets, __global const int *restrict begin,
                 __global const int *restrict sources, __global const int *restrict dir,
                 __global const REAL2 *restrict table, __global const REAL2 *restrict M,
                 __global REAL2 *restrict L)
{
  __local REAL2 S[NSTAGE], Ms[M2L_B * NCOEF];
  const int g = get_group_id(0), lid = get_local_id(0);
  const int slot = lid / NCOEF, c = lid - slot * NCOEF, active = slot < M2L_SLOTS;
  const int2 nm = coef_degree_order(active ? c : 0);
  const int j = nm.x, k = nm.y;
  REAL2 acc[M2L_TPI];
  for (int b = 0; b < M2L_TPI; b++) acc[b] = (REAL2)(0, 0);
  const int e0 = begin[g], e1 = begin[g + 1];
  for (int e = e0; e < e1; e++) {
    const int d = dir[e];
    for (int i = lid; i < NSTAGE; i += M2L_WGS) S[i] = table[d * NSHIFT + m2l_stage_source(i)];
    for (int i = lid; i < M2L_B * NCOEF; i += M2L_WGS) {
      const int b = i / NCOEF, src = sources[e * M2L_B + b];
      Ms[i] = src >= 0 ? M[src * NCOEF + (i - b * NCOEF)] : (REAL2)(0, 0);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (active) m2l_sums(Ms + slot * M2L_TPI * NCOEF, S, j, k, acc, M2L_TPI);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (active)
    for (int b = 0; b < M2L_TPI; b++) {
      const int t = targets[g * M2L_B + slot * M2L_TPI + b];
      if (t >= 0) L[t * NCOEF + c] += (j & 1) ? -acc[b] : acc[b];
    }
}
#endif /* !NO_M2L */

/* ---- L2L: L'_k^u += sum_{j,v} L_{k+j}^{u+v} conj(R_j^v(c_child - c_parent)) */

/* Group g: child cell pairs[first + g].x of parent pairs[first + g].y; one
 * launch per level. Parent and child are on different levels, so reading one
 * while adding to the other is safe. The shift is in the parent's units, so
 * the result is 2^(k+1) times the child's scaled Lhat_k. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void l2l(__global const int2 *restrict pairs, __global const REAL4 *restrict center,
         __global REAL2 *L, const int first)
{
  __local REAL2 R[NCOEF], Lp[NCOEF];
  __local REAL T[NRECUR];
  const int g = first + get_group_id(0), lid = get_local_id(0);
  const int child = pairs[g].x, parent = pairs[g].y;
  const int2 nm = coef_degree_order(min(lid, NCOEF - 1));
  const int k = nm.x, u = nm.y;
  const REAL4 cc = center[child], cp = center[parent];
  stage_recurrence(T);
  barrier(CLK_LOCAL_MEM_FENCE);
  stage_regular(R, (REAL4)((cc.xyz - cp.xyz) * cp.w, 0), T);
  stage_expansion(Lp, L + parent * NCOEF);
  barrier(CLK_LOCAL_MEM_FENCE);
  REAL2 acc = (REAL2)(0, 0);
  for (int j = 0; j <= P - k; j++)
    for (int v = max(-j, -(k + j) - u); v <= min(j, (k + j) - u); v++)
      acc += cmulc(load_any(R, j, v), load_any(Lp, k + j, u + v));
  if (lid < NCOEF)
    L[child * NCOEF + lid] += acc * pown((REAL)0.5, k + 1);
}

/* ---- L2P: phi and grad phi of sum conj(L_n^m) R_n^m(x - c) --------------- */

/* Each R_k^u(x - c) is generated in turn (m outer, n inner: the recurrence
 * needs only two previous values, so nothing is stored per target) and feeds
 *   phi   += w Re(conj(L_k^u) R),
 *   phi_z += w Re(conj(L_{k+1}^u) R),
 *   g      = phi_x + i phi_y += R conj(L_{k+1}^{u-1}) - conj(R) L_{k+1}^{u+1},
 * w = 1 for u = 0 and 2 otherwise (the u < 0 half by symmetry). */
REAL4 local_field(__local const REAL2 *Ls, REAL x, REAL y, REAL z, __local const REAL *T)
{
  const REAL r2 = x * x + y * y + z * z;
  REAL phi = 0, dz = 0;
  REAL2 g = (REAL2)(0, 0), diag = (REAL2)(1, 0);
  for (int u = 0; u <= P; u++) {
    if (u > 0)
      diag = cmul(diag, (REAL2)(-x, -y) * T[(P + 1) * (P + 1) + u]);
    const REAL w = (u == 0) ? 1 : 2;
    REAL2 below = (REAL2)(0, 0), R = diag;
    for (int k = u; k <= P; k++) {
      const REAL2 lk = Ls[coef_index(k, u)];
      phi += w * (lk.x * R.x + lk.y * R.y);
      if (k < P) {
        const REAL2 up = Ls[coef_index(k + 1, u)];
        dz += w * (up.x * R.x + up.y * R.y);
        g -= cmul(conj2(R), Ls[coef_index(k + 1, u + 1)]);
        if (u > 0)
          g += cmul(R, conj2(Ls[coef_index(k + 1, u - 1)]));
      }
      /* T[P (P+1) + u] (k = P) is never used: R is not needed past P */
      const REAL2 next = ((REAL)(2 * k + 1) * z * R - r2 * below) * T[k * (P + 1) + u];
      below = R;
      R = next;
    }
  }
  return (REAL4)(g.x, g.y, dz, phi);
}

#if HESSIAN
/* X_n^m for any m, 0 outside 0 <= n <= P, |m| <= n. */
REAL2 coef_any(__local const REAL2 *X, int n, int m)
{
  return (n < 0 || n > P || abs(m) > n) ? (REAL2)(0, 0) : load_any(X, n, m);
}

/* One harmonic H = H_k^u (u >= 0, and H_k^-u by symmetry) of
 *   S(dn, dm) = sum_{k, all m} conj(X_{k+dn}^{m-dm}) H_k^m,
 * with conj(X_n^-v) = (-1)^v X_n^v. The derivatives of a field
 * sum conj(X_n^m) H_n^m are such sums: for a local expansion (H = R)
 * d_z -> S(1, 0), d_x + i d_y -> S(1, 1); for a multipole (H = I)
 * d_z -> -S(-1, 0), d_x + i d_y -> S(-1, 1); second derivatives compose. */
REAL2 field_derivative(__local const REAL2 *X, int k, int u, int dn, int dm, REAL2 H)
{
  REAL2 t = cmulc(coef_any(X, k + dn, u - dm), H);
  if (u >= 1) t += ((dm & 1) ? -1 : 1) * cmul(coef_any(X, k + dn, u + dm), conj2(H));
  return t;
}

/* The Hessian (xx, yy, zz, xy, xz, yz) from S_zz = d_z^2 phi,
 * S_pz = (d_x + i d_y) d_z phi and S_pp = (d_x + i d_y)^2 phi =
 * xx - yy + 2i xy, with xx + yy = -zz (phi is harmonic). */
void hessian_store(__global REAL *h, REAL2 zz, REAL2 pz, REAL2 pp, REAL scale)
{
  h[0] += (pp.x - zz.x) * (REAL)0.5 * scale;
  h[1] += (-pp.x - zz.x) * (REAL)0.5 * scale;
  h[2] += zz.x * scale;
  h[3] += pp.y * (REAL)0.5 * scale;
  h[4] += pz.x * scale;
  h[5] += pz.y * scale;
}

/* S(2, 0), S(2, 1), S(2, 2) of a local expansion at x, generating R_k^u in
 * turn as local_field does (k <= P - 2: higher ones meet no coefficient). */
void local_hessian(__local const REAL2 *Ls, REAL x, REAL y, REAL z, __local const REAL *T, REAL2 *s)
{
  const REAL r2 = x * x + y * y + z * z;
  REAL2 diag = (REAL2)(1, 0);
  s[0] = s[1] = s[2] = (REAL2)(0, 0);
  for (int u = 0; u <= P - 2; u++) {
    if (u > 0)
      diag = cmul(diag, (REAL2)(-x, -y) * T[(P + 1) * (P + 1) + u]);
    REAL2 below = (REAL2)(0, 0), R = diag;
    for (int k = u; k <= P - 2; k++) {
      s[0] += field_derivative(Ls, k, u, 2, 0, R);
      s[1] += field_derivative(Ls, k, u, 2, 1, R);
      s[2] += field_derivative(Ls, k, u, 2, 2, R);
      const REAL2 next = ((REAL)(2 * k + 1) * z * R - r2 * below) * T[k * (P + 1) + u];
      below = R;
      R = next;
    }
  }
}

/* S(-2, 0), -S(-2, 1), S(-2, 2) of a multipole at x (I_k^u, k <= P + 2). */
void multipole_hessian(__local const REAL2 *Ms, REAL x, REAL y, REAL z, REAL2 *s)
{
  const REAL inv_r2 = 1 / (x * x + y * y + z * z);
  REAL2 diag = (REAL2)(sqrt(inv_r2), 0);
  s[0] = s[1] = s[2] = (REAL2)(0, 0);
  for (int u = 0; u <= P + 2; u++) {
    if (u > 0)
      diag = cmul(diag, (REAL2)(-x, -y) * ((REAL)(2 * u - 1) * inv_r2));
    REAL2 below = (REAL2)(0, 0), I = diag;
    for (int k = u; k <= P + 2; k++) {
      s[0] += field_derivative(Ms, k, u, -2, 0, I);
      s[1] -= field_derivative(Ms, k, u, -2, 1, I);
      s[2] += field_derivative(Ms, k, u, -2, 2, I);
      const REAL2 next = ((REAL)(2 * k + 1) * z * I - (REAL)((k + u) * (k - u)) * below) * inv_r2;
      below = I;
      I = next;
    }
  }
}
#endif

/* Group g: leaf cells[g], targets tgt[tgt_begin[g] .. tgt_begin[g+1]), one
 * per work-item, WGS at a time; out has the same layout as tgt. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void l2p(__global const int *restrict cells, __global const int *restrict tgt_begin,
         __global const REAL4 *restrict tgt, __global const REAL4 *restrict center,
         __global const REAL2 *restrict L, __global REAL4 *restrict out, __global REAL *restrict hess)
{
  __local REAL2 Ls[NCOEF];
  __local REAL T[NRECUR];
  const int g = get_group_id(0), lid = get_local_id(0), cell = cells[g];
  const REAL4 c = center[cell];
  stage_expansion(Ls, L + cell * NCOEF);
  stage_recurrence(T);
  barrier(CLK_LOCAL_MEM_FENCE);
  const int end = tgt_begin[g + 1];
  for (int base = tgt_begin[g]; base < end; base += WGS) {
    const int i = min(base + lid, end - 1);
    const REAL4 x = tgt[i];
    const REAL4 f = local_field(Ls, x.x * c.w, x.y * c.w, x.z * c.w, T);
    if (base + lid < end)
      out[i] += (REAL4)(f.xyz * (c.w * c.w), f.w * c.w);
#if HESSIAN
    REAL2 h[3];
    local_hessian(Ls, x.x * c.w, x.y * c.w, x.z * c.w, T, h);
    if (base + lid < end)
      hessian_store(hess + 6 * i, h[0], h[1], h[2], c.w * c.w * c.w);
#endif
  }
}

/* ---- M2P: phi and grad phi of sum conj(M_n^m) I_n^m(x - c) --------------- */

/* Fully unrolled on P where the compilers take it quickly (a CPU compiler
 * spends minutes on long unrolled expansions). */
#ifndef M2P_UNROLL_MAX
#define M2P_UNROLL_MAX 12
#endif
#if P <= M2P_UNROLL_MAX
#define M2P_UNROLL FMMCL_PRAGMA(unroll)
#else
#define M2P_UNROLL
#endif

/* Targets per work-item of M2P: each coefficient read from local memory
 * serves that many targets' recurrences in registers. */
#ifndef M2P_TPT
#define M2P_TPT 3
#endif

/* Each I_k^u(x - c), k <= q + 1, is generated in turn (m outer, n inner, as
 * in local_field) and feeds, from lib/expansions3d_evaluate.c,
 *   phi   += w Re(conj(M_k^u) I)                      k <= q,
 *   phi_z -= w Re(conj(M_{k-1}^u) I)                  u <= k - 1,
 *   g      = phi_x + i phi_y += conj(M_{k-1}^{u-1}) I  u >= 1,
 *                            -= M_{k-1}^{u+1} conj(I)   u <= k - 2,
 * w = 1 for u = 0 and 2 otherwise: the field of the expansion truncated at
 * degree q <= P, at the M2P_TPT points x[t] (in the cell's units), into
 * f[t] = (d/dx, d/dy, d/dz, phi). The loops unroll on P and skip past q,
 * which is the same for a warp's work-items (no divergence). x - c is
 * never 0: the lists keep targets out of the source cell. */
void multipole_fields(__local const REAL2 *Ms, const REAL4 *x, int q, REAL4 *f)
{
  REAL inv_r2[M2P_TPT], phi[M2P_TPT], dz[M2P_TPT];
  REAL2 g[M2P_TPT], diag[M2P_TPT], below[M2P_TPT], I[M2P_TPT];
  FMMCL_PRAGMA(unroll)
  for (int t = 0; t < M2P_TPT; t++) {
    const REAL inv_r = RSQRT(x[t].x * x[t].x + x[t].y * x[t].y + x[t].z * x[t].z);
    inv_r2[t] = inv_r * inv_r, phi[t] = 0, dz[t] = 0, g[t] = (REAL2)(0, 0), diag[t] = (REAL2)(inv_r, 0);
  }
  /* guards rather than breaks, so that the compilers unroll */
  M2P_UNROLL
  for (int u = 0; u <= P + 1; u++) {
    if (u > q + 1)
      continue;
    const REAL w = (u == 0) ? 1 : 2;
    FMMCL_PRAGMA(unroll)
    for (int t = 0; t < M2P_TPT; t++) {
      if (u > 0)
        diag[t] = cmul(diag[t], (REAL2)(-x[t].x, -x[t].y) * ((REAL)(2 * u - 1) * inv_r2[t]));
      below[t] = (REAL2)(0, 0), I[t] = diag[t];
    }
    M2P_UNROLL
    for (int k = u; k <= P + 1; k++) {
      if (k > q + 1)
        continue;
      if (k <= q) {
        const REAL2 mk = Ms[coef_index(k, u)];
        FMMCL_PRAGMA(unroll)
        for (int t = 0; t < M2P_TPT; t++)
          phi[t] += w * (mk.x * I[t].x + mk.y * I[t].y);
      }
      if (k >= 1 && u <= k - 1) {
        const REAL2 mb = Ms[coef_index(k - 1, u)];
        FMMCL_PRAGMA(unroll)
        for (int t = 0; t < M2P_TPT; t++)
          dz[t] -= w * (mb.x * I[t].x + mb.y * I[t].y);
      }
      if (u >= 1) {
        const REAL2 ml = Ms[coef_index(k - 1, u - 1)];
        FMMCL_PRAGMA(unroll)
        for (int t = 0; t < M2P_TPT; t++)
          g[t] += cmulc(ml, I[t]);
      }
      if (u <= k - 2) {
        const REAL2 mh = Ms[coef_index(k - 1, u + 1)];
        FMMCL_PRAGMA(unroll)
        for (int t = 0; t < M2P_TPT; t++)
          g[t] -= cmul(mh, conj2(I[t]));
      }
      FMMCL_PRAGMA(unroll)
      for (int t = 0; t < M2P_TPT; t++) {
        const REAL2 next = ((REAL)(2 * k + 1) * x[t].z * I[t] - (REAL)((k + u) * (k - u)) * below[t]) * inv_r2[t];
        below[t] = I[t];
        I[t] = next;
      }
    }
  }
  FMMCL_PRAGMA(unroll)
  for (int t = 0; t < M2P_TPT; t++)
    f[t] = (REAL4)(g[t].x, g[t].y, dz[t], phi[t]);
}

/* The M2P groups (Bonsai-like): a group of M2P_WGS work-items takes
 * M2P_SPAN x M2P_TPT targets of one list row (FMM: a target leaf;
 * treecode: a group of targets of one leaf), M2P_TPT a work-item and
 * M2P_LANES = M2P_WGS / M2P_SPAN work-items a target, and walks the row's
 * list, M2P_BATCH source multipoles staged in local memory per round; lane
 * j of a target takes entries j, j + M2P_LANES, ... of the round (a warp's
 * work-items share one lane, so one entry and degree), and the lanes' sums
 * meet in local memory at the end. A multipole is read from global memory
 * once per group, then by every target in registers; few targets a group
 * keep the work-items of small leaves busy. `split` groups share a row,
 * each taking every split-th run of targets (leaves over-full at the
 * depth limit still get all their targets). */
#ifndef M2P_WGS
#define M2P_WGS 128
#endif
#ifndef M2P_SPAN
#define M2P_SPAN 32
#endif
#define M2P_LANES (M2P_WGS / M2P_SPAN)
#if M2P_LANES * M2P_SPAN != M2P_WGS
#error "expansions3d.cl: M2P_WGS must be a multiple of M2P_SPAN"
#endif
#ifndef M2P_BATCH
#ifdef FMMCL_DOUBLE
#define M2P_BATCH_FIT (12288 / (NCOEF * 16))
#else
#define M2P_BATCH_FIT (12288 / (NCOEF * 8))
#endif
#define M2P_BATCH (M2P_BATCH_FIT < 1 ? 1 : M2P_BATCH_FIT > 32 ? 32 : M2P_BATCH_FIT)
#endif

/* The degree an entry needs: ratio is the largest |y - s| / |x - s| the
 * entry's geometry allows; the smallest q with ratio^(q+1) <= bound gives
 * each term the error the order rule allows the typical pair, and the
 * pairs with a larger ratio keep P. bound = 0: always P (the FMM's W list).
 * fmmcl_fmm3d_m2p_degree is the host's copy. */
int m2p_degree(REAL ratio, REAL bound)
{
  int q = 0;
  REAL t = ratio;
  while (q < P && t > bound) {
    t *= ratio;
    q++;
  }
  return q;
}

/* Group g / split: list row rows[g / split] (r), its targets row_tgt[r]
 * in the frame centred at row_frame[r].xyz, all within row_sphere[r].w of
 * row_sphere[r].xyz; its list of source cells (FMM: W list, rows are
 * target leaves, frame and sphere their centres; treecode: far list, rows
 * are target groups). exp_center (x, y, z, b) the centre each cell's
 * multipole is expanded about and the radius about it that holds the
 * cell's sources (the FMM: the cell centres, bound 0); center[cell].w its
 * 1/side, the scale its multipole is kept in. */
__kernel __attribute__((reqd_work_group_size(M2P_WGS, 1, 1)))
void m2p(__global const int *restrict rows, __global const int *restrict list_begin,
         __global const int *restrict list, __global const int2 *restrict row_tgt,
         __global const REAL4 *restrict tgt, __global const REAL4 *restrict row_frame,
         __global const REAL4 *restrict row_sphere, __global const REAL4 *restrict center,
         __global const REAL2 *restrict M, __global REAL4 *restrict out, __global REAL *restrict hess,
         __global const REAL4 *restrict exp_center, const REAL bound, const int split)
{
  __local REAL2 Ms[M2P_BATCH * NCOEF];
  __local REAL4 shift[M2P_BATCH]; /* frame centre - expansion centre, and 1/s */
  __local int degree[M2P_BATCH];
#if M2P_LANES > 1
  __local REAL4 lanes[M2P_WGS];
#if HESSIAN
  __local REAL2 hlanes[3 * M2P_WGS];
#endif
#endif
  const int g = get_group_id(0) / split, part = get_group_id(0) % split, lid = get_local_id(0);
  const int t = lid % M2P_SPAN, lane = lid / M2P_SPAN;
  const int row = rows[g];
  const int2 tr = row_tgt[row];
  const REAL4 ct = row_frame[row], sphere = row_sphere[row];
  const int e0 = list_begin[g], e1 = list_begin[g + 1];
  for (int base = tr.x + part * M2P_SPAN * M2P_TPT; base < tr.y; base += split * M2P_SPAN * M2P_TPT) {
    REAL4 x[M2P_TPT], acc[M2P_TPT];
#if HESSIAN
    REAL2 hz[M2P_TPT], hp[M2P_TPT], hq[M2P_TPT];
#endif
    FMMCL_PRAGMA(unroll)
    for (int j = 0; j < M2P_TPT; j++) {
      x[j] = tgt[min(base + t + j * M2P_SPAN, tr.y - 1)];
      acc[j] = (REAL4)(0, 0, 0, 0);
#if HESSIAN
      hz[j] = hp[j] = hq[j] = (REAL2)(0, 0);
#endif
    }
    for (int eb = e0; eb < e1; eb += M2P_BATCH) {
      const int count = min(M2P_BATCH, e1 - eb);
      for (int k = lid; k < count * NCOEF; k += M2P_WGS) {
        const int b = k / NCOEF;
        Ms[k] = M[list[eb + b] * NCOEF + (k - b * NCOEF)];
      }
      if (lid < count) {
        const int src = list[eb + lid];
        const REAL4 e = exp_center[src];
        /* from the targets' frame: its centre minus e (exact for the
         * FMM's dyadic centres) */
        const REAL4 d = (REAL4)(ct.xyz - e.xyz, center[src].w);
        shift[lid] = d;
#if HESSIAN
        degree[lid] = P;
#else
        const REAL gap = length(sphere.xyz - e.xyz) - sphere.w;
        degree[lid] = (bound > 0 && gap > 0) ? m2p_degree(e.w / gap, bound) : P;
#endif
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int b = lane; b < count; b += M2P_LANES) {
        const REAL4 d = shift[b];
        REAL4 y[M2P_TPT], f[M2P_TPT];
        FMMCL_PRAGMA(unroll)
        for (int j = 0; j < M2P_TPT; j++)
          y[j] = (REAL4)((x[j].xyz + d.xyz) * d.w, 0);
        multipole_fields(Ms + b * NCOEF, y, degree[b], f);
        FMMCL_PRAGMA(unroll)
        for (int j = 0; j < M2P_TPT; j++) {
          acc[j] += (REAL4)(f[j].xyz * (d.w * d.w), f[j].w * d.w);
#if HESSIAN
          REAL2 h[3];
          const REAL c3 = d.w * d.w * d.w;
          multipole_hessian(Ms + b * NCOEF, y[j].x, y[j].y, y[j].z, h);
          hz[j] += h[0] * c3, hp[j] += h[1] * c3, hq[j] += h[2] * c3;
#endif
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int j = 0; j < M2P_TPT; j++) {
#if M2P_LANES > 1
      /* the lanes' partial sums, added by lane 0 */
      lanes[lid] = acc[j];
#if HESSIAN
      hlanes[3 * lid] = hz[j], hlanes[3 * lid + 1] = hp[j], hlanes[3 * lid + 2] = hq[j];
#endif
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lane == 0)
        for (int l = 1; l < M2P_LANES; l++) {
          acc[j] += lanes[t + l * M2P_SPAN];
#if HESSIAN
          hz[j] += hlanes[3 * (t + l * M2P_SPAN)], hp[j] += hlanes[3 * (t + l * M2P_SPAN) + 1];
          hq[j] += hlanes[3 * (t + l * M2P_SPAN) + 2];
#endif
        }
      barrier(CLK_LOCAL_MEM_FENCE);
#endif
      const int i = base + t + j * M2P_SPAN;
      if (lane == 0 && i < tr.y)
        out[i] += acc[j];
#if HESSIAN
      if (lane == 0 && i < tr.y)
        hessian_store(hess + 6 * i, hz[j], hp[j], hq[j], 1);
#endif
    }
  }
}

/* ---- P2L: L_n^m += sum_j q_j I_n^m(y_j - c) ------------------------------ */

/* q I_n^m(x) for all n <= P, m >= 0 of one point into H (coefficient
 * order), by the recurrences of solid_irregular: O(p^2) for the whole set
 * where solid_irregular per coefficient is O(p) each. */
void irregular_all(__local REAL2 *H, REAL q, REAL x, REAL y, REAL z)
{
  const REAL inv_r2 = 1 / (x * x + y * y + z * z);
  REAL2 diag = (REAL2)(q * sqrt(inv_r2), 0);
  for (int m = 0; m <= P; m++) {
    if (m > 0)
      diag = cmul(diag, (REAL2)(-x, -y) * ((REAL)(2 * m - 1) * inv_r2));
    REAL2 below = (REAL2)(0, 0), here = diag;
    for (int k = m; k <= P; k++) {
      H[coef_index(k, m)] = here;
      const REAL2 next = ((REAL)(2 * k + 1) * z * here - (REAL)((k + m) * (k - m)) * below) * inv_r2;
      below = here;
      here = next;
    }
  }
}

/* Sources per staging round of P2L: work-item j < P2L_TILE writes all
 * harmonics of source j into local memory, then each coefficient's
 * work-item sums the round. X lists of adaptive trees carry tens of
 * millions of (source, cell) pairs, where the per-coefficient recurrence
 * made P2L far slower per pair than M2P. The tile fits in 16 KiB;
 * below 4 sources a round (high p in double) the per-coefficient form is
 * kept, as its work-items stay busy. */
#ifdef FMMCL_DOUBLE
#define P2L_COEF_BYTES 16
#else
#define P2L_COEF_BYTES 8
#endif
#ifndef P2L_TILE
#define P2L_TILE_FIT (16384 / (NCOEF * P2L_COEF_BYTES))
#define P2L_TILE (P2L_TILE_FIT > WGS ? WGS : P2L_TILE_FIT)
#endif

/* Group g: cell rows[g], its X list of source leaves. The sources lie
 * outside the cell's neighbourhood, so y - c is never 0. */
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void p2l(__global const int *restrict rows, __global const int *restrict list_begin,
         __global const int *restrict list, __global const int2 *restrict cell_src,
         __global const REAL4 *restrict src, __global const REAL4 *restrict center,
         __global REAL2 *restrict L, __global const REAL4 *restrict dip)
{
  const int g = get_group_id(0), lid = get_local_id(0), cell = rows[g];
  const REAL4 c = center[cell];
  REAL2 acc = (REAL2)(0, 0);
#if P2L_TILE >= 4 && !DIPOLES
  __local REAL2 H[P2L_TILE * NCOEF];
  for (int e = list_begin[g]; e < list_begin[g + 1]; e++) {
    const int2 sr = cell_src[list[e]];
    /* the entry is a leaf: its sources move into the cell's frame by the
     * exact difference of the centres */
    const REAL4 d = (REAL4)(center[list[e]].xyz - c.xyz, 0);
    for (int base = sr.x; base < sr.y; base += P2L_TILE) {
      const int count = min(P2L_TILE, sr.y - base);
      if (lid < count) {
        const REAL4 y = src[base + lid];
        irregular_all(H + lid * NCOEF, y.w, (y.x + d.x) * c.w, (y.y + d.y) * c.w, (y.z + d.z) * c.w);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int j = 0; j < count && lid < NCOEF; j++)
        acc += H[j * NCOEF + lid];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
#else
  /* streamed through local memory as in P2M, one coefficient a work-item
   * (dipoles too: their moments need degree P + 1) */
  __local REAL4 tile[WGS];
#if DIPOLES
  __local REAL4 dtile[WGS];
#endif
  const int2 nm = coef_degree_order(min(lid, NCOEF - 1));
  const int n = nm.x, m = nm.y;
  for (int e = list_begin[g]; e < list_begin[g + 1]; e++) {
    const int2 sr = cell_src[list[e]];
    const REAL4 d = (REAL4)(center[list[e]].xyz - c.xyz, 0);
    for (int base = sr.x; base < sr.y; base += WGS) {
      tile[lid] = src[min(base + lid, sr.y - 1)];
#if DIPOLES
      dtile[lid] = dip[min(base + lid, sr.y - 1)];
#endif
      barrier(CLK_LOCAL_MEM_FENCE);
      const int count = min(WGS, sr.y - base);
      for (int j = 0; j < count && lid < NCOEF; j++) {
        const REAL4 y = tile[j];
        acc += y.w * solid_irregular(n, m, (y.x + d.x) * c.w, (y.y + d.y) * c.w, (y.z + d.z) * c.w);
#if DIPOLES
        acc += dipole_irregular(n, m, (y + d) * c.w, dtile[j] * c.w);
#endif
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
#endif
  if (lid < NCOEF)
    L[cell * NCOEF + lid] += acc;
}
