/* resident.cl — the device side of plans executed on the caller's own
 * buffers: checking charges and results without bringing them to the host,
 * and splitting a method's REAL4 results into the caller's arrays. */

/* Per work-group: the sum of |v[i]| over a grid-stride share of v, and
 * whether any v[i] was NaN or infinite (the host adds the partial sums, so
 * only a few numbers cross the bus whatever n is). */
__kernel void fmmcl_abs_sum_partial(__global const REAL *restrict v, const uint n,
                                    __global REAL *restrict partial, __global int *restrict nonfinite,
                                    const int bit)
{
  /* groups of a power of two up to 256 work-items */
  __local REAL scratch[256];
  const uint lid = get_local_id(0), wgs = get_local_size(0);
  REAL sum = 0;
  int bad = 0;
  for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
    const REAL x = v[i];
    bad |= !isfinite(x);
    sum += fabs(x);
  }
  if (bad) atomic_or(nonfinite, bit);
  scratch[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = wgs / 2; s > 0; s /= 2) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = scratch[0];
}

/* pot[i] = r[i].s[pot_at], grad[dim*i + c] = r[i].s[grad_at + c]: a
 * method's results, already in the caller's order, in the caller's layout. */
__kernel void fmmcl_split_real4(__global const REAL *restrict r, const uint n, const int pot_at,
                                const int grad_at, const int dim, __global REAL *restrict pot,
                                __global REAL *restrict grad, const int with_grad)
{
  const uint i = get_global_id(0);
  if (i >= n) return;
  pot[i] = r[4 * i + pot_at];
  if (with_grad)
    for (int c = 0; c < dim; c++) grad[dim * i + c] = r[4 * i + grad_at + c];
}
