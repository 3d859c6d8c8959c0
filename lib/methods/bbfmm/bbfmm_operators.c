/* bbfmm_operators.c — the black-box FMM plan's kernel function as OpenCL C
 * (the prelude), and its M2L operators: the 316 kernel matrices evaluated on
 * the device, compressed by SVD on the host, kept in the disk cache beside
 * the program binaries (atomic write, magic + length + checksum). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/bbfmm/bbfmm.h"

/* A constant as a literal of the plan's type ("%.17e" always has a dot or
 * exponent, so the 'f' suffix is legal). */
static void literal(char *buf, size_t len, double v, int single) {
  snprintf(buf, len, "%.17e%s", v, single ? "f" : "");
}

char *fmmcl_bbfmm_prelude(const fmmcl_bbfmm_kfun *k, int single) {
  char c[64], expr[128];
  double p = k->param;
  switch (k->kind) {
    case FMMCL_BBFMM_LAPLACE: snprintf(expr, sizeof expr, "(REAL)1 / r"); break;
    case FMMCL_BBFMM_INV_R2: snprintf(expr, sizeof expr, "(REAL)1 / r2"); break;
    case FMMCL_BBFMM_GAUSSIAN:
      literal(c, sizeof c, 1 / (2 * p * p), single);
      snprintf(expr, sizeof expr, "exp(-r2 * %s)", c);
      break;
    case FMMCL_BBFMM_MULTIQUADRIC:
      literal(c, sizeof c, p * p, single);
      snprintf(expr, sizeof expr, "sqrt(r2 + %s)", c);
      break;
    case FMMCL_BBFMM_INV_MULTIQUADRIC:
      literal(c, sizeof c, p * p, single);
      snprintf(expr, sizeof expr, "(REAL)1 / sqrt(r2 + %s)", c);
      break;
    case FMMCL_BBFMM_YUKAWA:
      literal(c, sizeof c, p, single);
      snprintf(expr, sizeof expr, "exp(-%s * r) / r", c);
      break;
    default: expr[0] = '\0';
  }
  const char *e = k->kind == FMMCL_BBFMM_USER ? k->expression : expr;
  size_t len = strlen(e) + 512;
  char *out = malloc(len);
  if (!out) return NULL;
  snprintf(out, len,
           "#define BBFMM_SKIP_ZERO %d\n#define BBFMM_USER %d\n"
           "REAL bbfmm_kernel(REAL dx, REAL dy, REAL dz) {\n"
           "  REAL r2 = dx * dx + dy * dy + dz * dz;\n  REAL r = sqrt(r2);\n"
           "#line 1 \"kernel_expression\"\n  return (REAL)(%s\n);\n}\n",
           fmmcl_bbfmm_kfun_singular(k), k->kind == FMMCL_BBFMM_USER, e);
  return out;
}

uint64_t fmmcl_bbfmm_m2l_cache_key(const fmmcl_bbfmm_state *s, double h, double eps) {
  char *pre = fmmcl_bbfmm_prelude(&s->k, s->real_size == sizeof(float));
  uint64_t key = fmmcl_hash64(FMMCL_HASH64_INIT, "fmmcl bbfmm m2l v1", 19);
  if (pre) key = fmmcl_hash64(key, pre, strlen(pre));
  free(pre);
  int64_t ints[2] = {s->n, (int64_t)s->real_size};
  key = fmmcl_hash64(key, ints, sizeof ints);
  key = fmmcl_hash64(key, &h, sizeof h);
  return fmmcl_hash64(key, &eps, sizeof eps);
}

/* The disk cache payload: int32 n, rank; double h; u, v, c. */
static size_t payload_size(int n3, int r) {
  return 8 + 8 + sizeof(double) * ((size_t)2 * n3 * r + (size_t)FMMCL_BBFMM_N_TRANSFER * r * r);
}

static int cache_read(uint64_t key, int n, double h, fmmcl_bbfmm_m2l *m) {
  unsigned char *data = NULL;
  size_t len = 0;
  if (!fmmcl_cache_enabled() || fmmcl_cache_load(key, &data, &len)) return -1;
  int32_t hdr[2];
  double hh;
  int n3 = n * n * n, ok = len >= 16;
  if (ok) {
    memcpy(hdr, data, 8), memcpy(&hh, data + 8, 8);
    ok = hdr[0] == n && hdr[1] >= 1 && hdr[1] <= n3 && hh == h && len == payload_size(n3, hdr[1]);
  }
  if (ok) {
    int r = hdr[1];
    memset(m, 0, sizeof *m);
    m->n = n, m->rank = r, m->h = h;
    m->u = malloc(sizeof(double) * n3 * r);
    m->v = malloc(sizeof(double) * n3 * r);
    m->c = malloc(sizeof(double) * FMMCL_BBFMM_N_TRANSFER * r * r);
    if (!m->u || !m->v || !m->c) {
      fmmcl_bbfmm_m2l_free(m);
      ok = 0;
    } else {
      const unsigned char *p = data + 16;
      memcpy(m->u, p, sizeof(double) * n3 * r), p += sizeof(double) * n3 * r;
      memcpy(m->v, p, sizeof(double) * n3 * r), p += sizeof(double) * n3 * r;
      memcpy(m->c, p, sizeof(double) * FMMCL_BBFMM_N_TRANSFER * r * r);
    }
  }
  free(data);
  return ok ? 0 : -1;
}

static void cache_write(uint64_t key, const fmmcl_bbfmm_m2l *m) {
  int n3 = m->n * m->n * m->n, r = m->rank;
  size_t len = payload_size(n3, r);
  unsigned char *data = malloc(len);
  if (!data || !fmmcl_cache_enabled()) {
    free(data);
    return;
  }
  int32_t hdr[2] = {m->n, r};
  unsigned char *p = data;
  memcpy(p, hdr, 8), memcpy(p + 8, &m->h, 8), p += 16;
  memcpy(p, m->u, sizeof(double) * n3 * r), p += sizeof(double) * n3 * r;
  memcpy(p, m->v, sizeof(double) * n3 * r), p += sizeof(double) * n3 * r;
  memcpy(p, m->c, sizeof(double) * FMMCL_BBFMM_N_TRANSFER * r * r);
  fmmcl_cache_store(key, data, len); /* a cache that cannot be written only costs time */
  free(data);
}

static fmmcl_status upload(fmmcl_context ctx, size_t real_size, const double *v, size_t count, cl_mem *out) {
  void *tmp = malloc(count * real_size);
  if (!tmp) return fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  for (size_t i = 0; i < count; i++)
    if (real_size == sizeof(float)) ((float *)tmp)[i] = (float)v[i];
    else ((double *)tmp)[i] = v[i];
  cl_int err;
  *out = clCreateBuffer(ctx->cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, count * real_size, tmp, &err);
  free(tmp);
  if (err != CL_SUCCESS)
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "clCreateBuffer (bbFMM operators, %zu bytes): %s",
                      count * real_size, fmmcl_cl_error_name(err));
  return FMMCL_SUCCESS;
}

/* The 316 matrices of one level on the device, read back as doubles. */
static fmmcl_status device_matrices(fmmcl_plan plan, fmmcl_bbfmm_state *s, double h, cl_mem tv, double *kt) {
  fmmcl_context ctx = plan->ctx;
  size_t count = (size_t)FMMCL_BBFMM_N_TRANSFER * s->n3 * s->n3;
  fmmcl_status st = fmmcl_buffer_fits(ctx, count * s->real_size, "the M2L matrices of one level",
                                      "ask for a looser tolerance (fewer Chebyshev nodes)");
  if (st) return st;
  cl_int err;
  cl_mem buf = clCreateBuffer(ctx->cl, CL_MEM_WRITE_ONLY, count * s->real_size, NULL, &err);
  if (err != CL_SUCCESS)
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "clCreateBuffer (M2L matrices): %s",
                      fmmcl_cl_error_name(err));
  void *tmp = malloc(count * s->real_size);
  st = tmp ? FMMCL_SUCCESS : fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  if (!st) {
    size_t global[3] = {(size_t)s->n3, (size_t)s->n3, FMMCL_BBFMM_N_TRANSFER};
    st = FMMCL_KERNEL_ARGS(ctx, s->k_matrix, 0, FMMCL_ARG_REAL(h, s->real_size), FMMCL_ARG_MEM(s->nodes),
                           FMMCL_ARG_MEM(tv), FMMCL_ARG_MEM(buf));
    if (!st) st = fmmcl_launch_nd(ctx, s->k_matrix, 3, global, NULL, NULL, NULL);
    err = st ? CL_SUCCESS
             : clEnqueueReadBuffer(ctx->queue, buf, CL_TRUE, 0, count * s->real_size, tmp, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      st = fmmcl_fail(ctx, fmmcl_status_from_cl(err), "bbfmm_m2l_matrix: %s", fmmcl_cl_error_name(err));
  }
  if (!st)
    for (size_t i = 0; i < count; i++)
      kt[i] = s->real_size == sizeof(float) ? ((float *)tmp)[i] : ((double *)tmp)[i];
  free(tmp);
  fmmcl_release(&buf);
  return st;
}

/* The batched M2L's offsets: for a source class q and parent shift D, the
 * GEMM of each target class p with t = 2 D + q - p well separated. */
static void m2l_groups(fmmcl_bbfmm_level *lv, int l) {
  size_t gp = ((size_t)1 << (l - 1)) + 2, r = lv->rank;
  lv->n_groups = 0;
  for (int q = 0; q < 8; q++)
    for (int d = 0; d < 27; d++) {
      int D[3] = {d / 9 - 1, d / 3 % 3 - 1, d % 3 - 1}, Q[3] = {q >> 2, (q >> 1) & 1, q & 1};
      long shift = ((long)D[0] * (long)gp + D[1]) * (long)gp + D[2];
      int g = lv->n_groups, cnt = 0;
      for (int p = 0; p < 8; p++) {
        int P[3] = {p >> 2, (p >> 1) & 1, p & 1}, t[3];
        for (int c = 0; c < 3; c++) t[c] = 2 * D[c] + Q[c] - P[c];
        int ti = fmmcl_bbfmm_transfer_index(t[0], t[1], t[2]);
        if (ti < 0) continue;
        lv->a_off[g * 8 + cnt] = (size_t)ti * r * r;
        lv->b_off[g * 8 + cnt] = (size_t)((long)lv->guard + (long)q * (long)lv->pp + shift) * r;
        lv->c_off[g * 8 + cnt] = (size_t)p * lv->pp * r;
        cnt++;
      }
      if (cnt) lv->group_size[lv->n_groups++] = cnt;
    }
}

fmmcl_status fmmcl_bbfmm_operators(fmmcl_plan plan, fmmcl_bbfmm_state *s) {
  fmmcl_context ctx = plan->ctx;
  int n3 = s->n3;
  double eps = fmmcl_bbfmm_svd_eps(s->n, plan->opt.precision);
  int tvs[3 * FMMCL_BBFMM_N_TRANSFER];
  for (int i = 0; i < FMMCL_BBFMM_N_TRANSFER; i++) fmmcl_bbfmm_transfer_vector(i, tvs + 3 * i);
  cl_int err;
  cl_mem tv = clCreateBuffer(ctx->cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof tvs, tvs, &err);
  if (err != CL_SUCCESS)
    return fmmcl_fail(ctx, fmmcl_status_from_cl(err), "clCreateBuffer: %s", fmmcl_cl_error_name(err));
  double *kt = NULL;
  fmmcl_status st = FMMCL_SUCCESS;
  int alpha = fmmcl_bbfmm_kfun_homogeneity(&s->k), symmetric = s->k.kind != FMMCL_BBFMM_USER;
  fmmcl_bbfmm_m2l base = {0};
  for (int l = 2; l <= s->tree.depth && !st; l++) {
    double h = s->tree.half / (double)(1 << l);
    fmmcl_bbfmm_level *lv = &s->lv[l];
    fmmcl_bbfmm_m2l m = {0};
    if (alpha && l > 2) { /* a homogeneous kernel: level 2's operators, C scaled */
      size_t nc = (size_t)FMMCL_BBFMM_N_TRANSFER * base.rank * base.rank, nu = (size_t)n3 * base.rank;
      m = base;
      m.u = malloc(nu * sizeof(double)), m.v = malloc(nu * sizeof(double)), m.c = malloc(nc * sizeof(double));
      if (!m.u || !m.v || !m.c) {
        fmmcl_bbfmm_m2l_free(&m);
        st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
        break;
      }
      memcpy(m.u, base.u, nu * sizeof(double)), memcpy(m.v, base.v, nu * sizeof(double));
      double scale = ldexp(1.0, alpha * (l - 2));
      for (size_t i = 0; i < nc; i++) m.c[i] = scale * base.c[i];
      m.h = h;
      s->m2l_from_cache[l] = s->m2l_from_cache[2];
    } else {
      uint64_t key = fmmcl_bbfmm_m2l_cache_key(s, h, eps);
      s->m2l_from_cache[l] = cache_read(key, s->n, h, &m) == 0;
      if (!s->m2l_from_cache[l]) {
        if (!kt) kt = malloc(sizeof(double) * FMMCL_BBFMM_N_TRANSFER * n3 * n3);
        if (!kt) {
          st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for the M2L matrices");
          break;
        }
        st = device_matrices(plan, s, h, tv, kt);
        if (st) break;
        for (size_t i = 0; i < (size_t)FMMCL_BBFMM_N_TRANSFER * n3 * n3; i++)
          if (!isfinite(kt[i])) {
            st = fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT,
                            "the bbFMM kernel is not finite between well-separated cells (level %d)", l);
            break;
          }
        if (!st && fmmcl_bbfmm_m2l_compress(s->n, h, kt, eps, symmetric, &m))
          st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory for the M2L SVD");
        if (st) break;
        cache_write(key, &m);
      }
    }
    lv->rank = m.rank;
    st = upload(ctx, s->real_size, m.u, (size_t)n3 * m.rank, &lv->u);
    if (!st) st = upload(ctx, s->real_size, m.v, (size_t)n3 * m.rank, &lv->v);
    if (!st) st = upload(ctx, s->real_size, m.c, (size_t)FMMCL_BBFMM_N_TRANSFER * m.rank * m.rank, &lv->c);
    if (alpha && l == 2) base = m; /* kept for the deeper levels */
    else fmmcl_bbfmm_m2l_free(&m);
    if (!st) {
      lv->a_off = malloc(216 * 8 * sizeof(size_t));
      lv->b_off = malloc(216 * 8 * sizeof(size_t));
      lv->c_off = malloc(216 * 8 * sizeof(size_t));
      if (!lv->a_off || !lv->b_off || !lv->c_off)
        st = fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
      else m2l_groups(lv, l);
    }
  }
  fmmcl_bbfmm_m2l_free(&base);
  free(kt);
  fmmcl_release(&tv);
  return st;
}
