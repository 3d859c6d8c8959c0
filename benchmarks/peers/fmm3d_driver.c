/* fmm3d_driver.c — times FMM3D (Flatiron Institute) on a point file and writes
 * its results for comparison with libfmmcl. Built by build-fmm3d.sh.
 *
 *   fmm3d_driver POINTS.pts [--kernel laplace|helmholtz|stokes] [--eps E]
 *                [--zk RE[,IM]] [--dipoles] [--hessian] [--stresslets]
 *                [--repeat R] [--out FILE] [--check M] [--raw]
 *
 * POINTS.pts: int64 n, n*3 float64 coordinates, n float64 charges (README.md).
 * Targets are the sources (self-interaction omitted). Per kernel:
 *   laplace    lfmm3d_s_c_g: charges q; potential and gradient
 *   helmholtz  hfmm3d_s_c_g: complex charges (q, 0), wavenumber zk; complex
 *              potential and gradient
 *   stokes     stfmm3d: Stokeslet forces f_j = (q_j, q_{j+1}, q_{j+2}) (indices
 *              mod n); velocity and pressure
 * Densities beyond the charge come from the charges shifted by index (mod
 * n), as make_points --fmmcl-columns writes them for libfmmcl:
 *   --dipoles    laplace d_j = (q_{j+1}, q_{j+2}, q_{j+3}) (lfmm3d_s_cd_*);
 *                helmholtz d_j = (q_{j+1} + i q_{j+2}, q_{j+3} + i q_{j+4},
 *                q_{j+5} + i q_{j+6}) (hfmm3d_s_cd_g); a dipole d adds
 *                -d . grad_x G, as in both codes
 *   --hessian    laplace: also the Hessian (lfmm3d_s_c_h / _s_cd_h)
 *   --stresslets stokes: stresslet strengths s_j = (q_{j+3}, q_{j+4}, q_{j+5})
 *                and orientations n_j = (q_{j+6}, q_{j+7}, q_{j+8}); FMM3D's
 *                stresslet is +3/(4 pi) r (r.s)(r.n)/r^5, libfmmcl's -6 r (r.s)(r.n)
 *                /r^5, so FMM3D is given -s
 * --out writes one row of float64 per target, little-endian, no header:
 *   laplace    pot gx gy gz [hxx hyy hzz hxy hxz hyz]
 *   helmholtz  pot_re pot_im gx_re gx_im gy_re gy_im gz_re gz_im
 *   stokes     u1 u2 u3 p
 * By default in libfmmcl's units: 1/r and exp(ikr)/r (FMM3D's values times
 * 4 pi), the unnormalised Stokeslet f/r + r (r.f)/r^3 and pressure 2 r.f/r^3
 * (FMM3D's times 8 pi); --raw writes FMM3D's own values (kernels with 1/(4 pi),
 * Stokeslet with 1/(8 pi)).
 * --check M compares M targets (evenly spaced indices) against a direct sum
 * over all sources in double, in libfmmcl's units, and prints relative 2-norm
 * and max errors (the largest at one target over the reference's rms): this is what verifies the normalisation above.
 * Time: omp_get_wtime around each FMM3D call (tree build included), best and
 * median of R repeats (default 3); cpu_s is the process CPU time of the best
 * run (all threads), which shows when cores were shared with other work. */
#include <complex.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* FMM3D's Fortran entry points (gfortran: lower case, trailing underscore). */
void lfmm3d_s_c_g_(double *eps, int64_t *nsource, double *source, double *charge, double *pot,
                   double *grad, int64_t *ier);
void hfmm3d_s_c_g_(double *eps, double _Complex *zk, int64_t *nsource, double *source,
                   double _Complex *charge, double _Complex *pot, double _Complex *grad, int64_t *ier);
void lfmm3d_s_cd_g_(double *eps, int64_t *nsource, double *source, double *charge, double *dipvec,
                    double *pot, double *grad, int64_t *ier);
void lfmm3d_s_c_h_(double *eps, int64_t *nsource, double *source, double *charge, double *pot,
                   double *grad, double *hess, int64_t *ier);
void lfmm3d_s_cd_h_(double *eps, int64_t *nsource, double *source, double *charge, double *dipvec,
                    double *pot, double *grad, double *hess, int64_t *ier);
void hfmm3d_s_cd_g_(double *eps, double _Complex *zk, int64_t *nsource, double *source,
                    double _Complex *charge, double _Complex *dipvec, double _Complex *pot,
                    double _Complex *grad, int64_t *ier);
/* ifrotlet and ifdoublet are default (4-byte) integers in stfmm3d.f. */
void stfmm3d_(int64_t *nd, double *eps, int64_t *nsource, double *source, int64_t *ifstoklet,
              double *stoklet, int64_t *ifstrslet, double *strslet, double *strsvec, int32_t *ifrotlet,
              double *rotlet, double *rotvec, int32_t *ifdoublet, double *doublet, double *doubvec,
              int64_t *ifppreg, double *pot, double *pre, double *grad, int64_t *ntarg, double *targ,
              int64_t *ifppregtarg, double *pottarg, double *pretarg, double *gradtarg, int64_t *ier);

enum { LAPLACE, HELMHOLTZ, STOKES };

static void die(const char *msg, const char *arg) {
  fprintf(stderr, "fmm3d_driver: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
  exit(1);
}

static void *xmalloc(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) die("out of memory", NULL);
  return p;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The densities beyond the charges: q shifted by index, mod n. */
static double shifted(const double *q, int64_t n, int64_t j, int k) { return q[(j + k) % n]; }

typedef struct {
  int kernel, dipoles, hessian, stresslets;
  double _Complex zk;
} job;

/* Direct sums in libfmmcl's units at target i; out has the row layout of --out. */
static void direct_row(const job *jb, int64_t n, const double *src, const double *q, int64_t i, double *out) {
  const double *x = src + 3 * i;
  const double _Complex zk = jb->zk;
  if (jb->kernel == LAPLACE) {
    double p = 0, g[3] = {0, 0, 0}, h[6] = {0, 0, 0, 0, 0, 0};
    static const int hj[6] = {0, 1, 2, 0, 0, 1}, hk[6] = {0, 1, 2, 1, 2, 2};
    for (int64_t j = 0; j < n; j++) {
      double d[3] = {x[0] - src[3 * j], x[1] - src[3 * j + 1], x[2] - src[3 * j + 2]};
      double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (r2 == 0) continue;
      double rinv = 1 / sqrt(r2), r3 = rinv * rinv * rinv, r5 = r3 * rinv * rinv;
      p += q[j] * rinv;
      for (int k = 0; k < 3; k++) g[k] -= q[j] * d[k] * r3;
      for (int m = 0; m < 6; m++)
        h[m] += q[j] * (3 * d[hj[m]] * d[hk[m]] - (hj[m] == hk[m]) * r2) * r5;
      if (jb->dipoles) {
        const double v[3] = {shifted(q, n, j, 1), shifted(q, n, j, 2), shifted(q, n, j, 3)};
        const double vr = v[0] * d[0] + v[1] * d[1] + v[2] * d[2], r7 = r5 * rinv * rinv;
        p += vr * r3;
        for (int k = 0; k < 3; k++) g[k] += v[k] * r3 - 3 * vr * d[k] * r5;
        for (int m = 0; m < 6; m++) {
          const int a = hj[m], b = hk[m];
          h[m] += -3 * (v[b] * d[a] + v[a] * d[b] + vr * (a == b)) * r5 + 15 * vr * d[a] * d[b] * r7;
        }
      }
    }
    out[0] = p, out[1] = g[0], out[2] = g[1], out[3] = g[2];
    if (jb->hessian)
      for (int m = 0; m < 6; m++) out[4 + m] = h[m];
  } else if (jb->kernel == HELMHOLTZ) {
    double _Complex p = 0, g[3] = {0, 0, 0};
    for (int64_t j = 0; j < n; j++) {
      double d[3] = {x[0] - src[3 * j], x[1] - src[3 * j + 1], x[2] - src[3 * j + 2]};
      double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (r2 == 0) continue;
      double r = sqrt(r2);
      double _Complex e = cexp(I * zk * r) / r;       /* exp(ikr)/r */
      double _Complex de = e * (I * zk * r - 1) / r2; /* d/dr (e) / r */
      p += q[j] * e;
      for (int k = 0; k < 3; k++) g[k] += q[j] * de * d[k];
      if (jb->dipoles) {
        /* -v . grad G = -(v . d) de; its gradient -(de v + (v . d) dde d),
         * dde = e (3 - 3ikr - k^2 r^2) / r^4 / r (d/dr of de, over r) */
        double _Complex v[3];
        for (int k = 0; k < 3; k++) v[k] = shifted(q, n, j, 1 + 2 * k) + I * shifted(q, n, j, 2 + 2 * k);
        const double _Complex vd = v[0] * d[0] + v[1] * d[1] + v[2] * d[2];
        const double _Complex dde = e * (3 - 3 * I * zk * r - zk * zk * r2) / (r2 * r2);
        p -= vd * de;
        for (int k = 0; k < 3; k++) g[k] -= de * v[k] + vd * dde * d[k];
      }
    }
    out[0] = creal(p), out[1] = cimag(p);
    for (int k = 0; k < 3; k++) out[2 + 2 * k] = creal(g[k]), out[3 + 2 * k] = cimag(g[k]);
  } else {
    double u[3] = {0, 0, 0}, p = 0;
    for (int64_t j = 0; j < n; j++) {
      double d[3] = {x[0] - src[3 * j], x[1] - src[3 * j + 1], x[2] - src[3 * j + 2]};
      double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (r2 == 0) continue;
      double f[3] = {q[j], shifted(q, n, j, 1), shifted(q, n, j, 2)};
      double rinv = 1 / sqrt(r2), r3 = rinv * rinv * rinv, r5 = r3 * rinv * rinv;
      double rf = d[0] * f[0] + d[1] * f[1] + d[2] * f[2];
      for (int k = 0; k < 3; k++) u[k] += f[k] * rinv + d[k] * rf * r3;
      p += 2 * rf * r3;
      if (jb->stresslets) {
        const double sv[3] = {shifted(q, n, j, 3), shifted(q, n, j, 4), shifted(q, n, j, 5)};
        const double nv[3] = {shifted(q, n, j, 6), shifted(q, n, j, 7), shifted(q, n, j, 8)};
        const double rs = d[0] * sv[0] + d[1] * sv[1] + d[2] * sv[2];
        const double rn = d[0] * nv[0] + d[1] * nv[1] + d[2] * nv[2];
        const double sn = sv[0] * nv[0] + sv[1] * nv[1] + sv[2] * nv[2];
        for (int k = 0; k < 3; k++) u[k] -= 6 * d[k] * rs * rn * r5;
        p += 4 * sn * r3 - 12 * rs * rn * r5;
      }
    }
    out[0] = u[0], out[1] = u[1], out[2] = u[2], out[3] = p;
  }
}

int main(int argc, char **argv) {
  const char *path = NULL, *out_path = NULL;
  int kernel = LAPLACE, repeat = 3, raw = 0, dipoles = 0, hessian = 0, stresslets = 0;
  double eps = 1e-6;
  double _Complex zk = 1.0;
  int64_t check = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--kernel") && v) {
      kernel = !strcmp(v, "laplace") ? LAPLACE : !strcmp(v, "helmholtz") ? HELMHOLTZ
                                     : !strcmp(v, "stokes")               ? STOKES
                                                                          : -1;
      if (kernel < 0) die("unknown --kernel", v);
      i++;
    } else if (!strcmp(a, "--eps") && v) eps = atof(argv[++i]);
    else if (!strcmp(a, "--zk") && v) {
      double re = 0, im = 0;
      if (sscanf(argv[++i], "%lf,%lf", &re, &im) < 1) die("bad --zk", v);
      zk = re + I * im;
    } else if (!strcmp(a, "--repeat") && v) repeat = atoi(argv[++i]);
    else if (!strcmp(a, "--out") && v) out_path = argv[++i];
    else if (!strcmp(a, "--check") && v) check = atoll(argv[++i]);
    else if (!strcmp(a, "--raw")) raw = 1;
    else if (!strcmp(a, "--dipoles")) dipoles = 1;
    else if (!strcmp(a, "--hessian")) hessian = 1;
    else if (!strcmp(a, "--stresslets")) stresslets = 1;
    else if (a[0] != '-' && !path) path = a;
    else die("unknown argument (usage in fmm3d_driver.c)", a);
  }
  if (!path) die("usage: fmm3d_driver POINTS.pts [--kernel laplace|helmholtz|stokes] [--eps E] [--zk RE[,IM]] [--dipoles] [--hessian] [--stresslets] [--repeat R] [--out FILE] [--check M] [--raw]", NULL);
  if (repeat < 1) repeat = 1;
  if ((dipoles && kernel == STOKES) || (hessian && kernel != LAPLACE) || (stresslets && kernel != STOKES))
    die("--dipoles: laplace or helmholtz; --hessian: laplace; --stresslets: stokes", NULL);
  const job jb = {kernel, dipoles, hessian, stresslets, zk};

  FILE *f = fopen(path, "rb");
  if (!f) die("cannot open", path);
  int64_t n;
  if (fread(&n, 8, 1, f) != 1 || n < 1) die("bad header in", path);
  double *src = xmalloc(sizeof(double) * 3 * (size_t)n), *q = xmalloc(sizeof(double) * (size_t)n);
  if (fread(src, 8, 3 * (size_t)n, f) != 3 * (size_t)n || fread(q, 8, (size_t)n, f) != (size_t)n)
    die("truncated", path);
  fclose(f);
  if (check > n) check = n;

  static const char *names[] = {"laplace", "helmholtz", "stokes"};
  int cols = kernel == HELMHOLTZ ? 8 : kernel == LAPLACE && hessian ? 10 : 4;
  double *rows = xmalloc(sizeof(double) * cols * (size_t)n);
  double *times = xmalloc(sizeof(double) * repeat), *cpus = xmalloc(sizeof(double) * repeat);
  int64_t ier = 0;
  /* kernel-specific buffers */
  double *pot = NULL, *grad = NULL, *hess = NULL, *dip = NULL, *stok = NULL, *pre = NULL, *strs = NULL,
         *strv = NULL;
  double _Complex *zq = NULL, *zpot = NULL, *zgrad = NULL, *zdip = NULL;
  if (kernel == LAPLACE) {
    pot = xmalloc(sizeof(double) * n), grad = xmalloc(sizeof(double) * 3 * n);
    if (hessian) hess = xmalloc(sizeof(double) * 6 * n);
    if (dipoles) {
      dip = xmalloc(sizeof(double) * 3 * n);
      for (int64_t j = 0; j < n; j++)
        for (int k = 0; k < 3; k++) dip[3 * j + k] = shifted(q, n, j, 1 + k);
    }
  } else if (kernel == HELMHOLTZ) {
    zq = xmalloc(sizeof(double _Complex) * n), zpot = xmalloc(sizeof(double _Complex) * n);
    zgrad = xmalloc(sizeof(double _Complex) * 3 * n);
    for (int64_t j = 0; j < n; j++) zq[j] = q[j];
    if (dipoles) {
      zdip = xmalloc(sizeof(double _Complex) * 3 * n);
      for (int64_t j = 0; j < n; j++)
        for (int k = 0; k < 3; k++) zdip[3 * j + k] = shifted(q, n, j, 1 + 2 * k) + I * shifted(q, n, j, 2 + 2 * k);
    }
  } else {
    stok = xmalloc(sizeof(double) * 3 * n), pot = xmalloc(sizeof(double) * 3 * n);
    pre = xmalloc(sizeof(double) * n), grad = xmalloc(sizeof(double) * 9 * n);
    for (int64_t j = 0; j < n; j++)
      for (int k = 0; k < 3; k++) stok[3 * j + k] = shifted(q, n, j, k);
    if (stresslets) {
      strs = xmalloc(sizeof(double) * 3 * n), strv = xmalloc(sizeof(double) * 3 * n);
      for (int64_t j = 0; j < n; j++)
        for (int k = 0; k < 3; k++) strs[3 * j + k] = -shifted(q, n, j, 3 + k), strv[3 * j + k] = shifted(q, n, j, 6 + k);
    }
  }
  for (int r = 0; r < repeat; r++) {
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    double t0 = omp_get_wtime();
    if (kernel == LAPLACE) {
      if (dipoles && hessian) lfmm3d_s_cd_h_(&eps, &n, src, q, dip, pot, grad, hess, &ier);
      else if (dipoles) lfmm3d_s_cd_g_(&eps, &n, src, q, dip, pot, grad, &ier);
      else if (hessian) lfmm3d_s_c_h_(&eps, &n, src, q, pot, grad, hess, &ier);
      else lfmm3d_s_c_g_(&eps, &n, src, q, pot, grad, &ier);
    } else if (kernel == HELMHOLTZ) {
      if (dipoles) hfmm3d_s_cd_g_(&eps, &zk, &n, src, zq, zdip, zpot, zgrad, &ier);
      else hfmm3d_s_c_g_(&eps, &zk, &n, src, zq, zpot, zgrad, &ier);
    } else {
      int64_t nd = 1, ifstoklet = 1, ifstrslet = stresslets, ifppreg = 2, ntarg = 0, ifppregtarg = 0;
      int32_t ifrotlet = 0, ifdoublet = 0;
      double dummy[9] = {0};
      stfmm3d_(&nd, &eps, &n, src, &ifstoklet, stok, &ifstrslet, stresslets ? strs : dummy,
               stresslets ? strv : dummy, &ifrotlet, dummy, dummy,
               &ifdoublet, dummy, dummy, &ifppreg, pot, pre, grad, &ntarg, dummy, &ifppregtarg, dummy, dummy,
               dummy, &ier);
    }
    times[r] = omp_get_wtime() - t0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    cpus[r] = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    if (ier) fprintf(stderr, "fmm3d_driver: FMM3D returned ier = %lld\n", (long long)ier);
  }
  double scale = raw ? 1 : kernel == STOKES ? 8 * M_PI : 4 * M_PI;
  for (int64_t i = 0; i < n; i++) {
    double *o = rows + (size_t)cols * i;
    if (kernel == LAPLACE) {
      o[0] = pot[i] * scale;
      for (int k = 0; k < 3; k++) o[1 + k] = grad[3 * i + k] * scale;
      if (hessian)
        for (int m = 0; m < 6; m++) o[4 + m] = hess[6 * i + m] * scale;
    } else if (kernel == HELMHOLTZ) {
      o[0] = creal(zpot[i]) * scale, o[1] = cimag(zpot[i]) * scale;
      for (int k = 0; k < 3; k++) o[2 + 2 * k] = creal(zgrad[3 * i + k]) * scale, o[3 + 2 * k] = cimag(zgrad[3 * i + k]) * scale;
    } else {
      for (int k = 0; k < 3; k++) o[k] = pot[3 * i + k] * scale;
      o[3] = pre[i] * scale;
    }
  }
  int ibest = 0;
  for (int r = 1; r < repeat; r++)
    if (times[r] < times[ibest]) ibest = r;
  double *sorted = xmalloc(sizeof(double) * repeat);
  memcpy(sorted, times, sizeof(double) * repeat);
  qsort(sorted, repeat, sizeof(double), cmp_double);
  printf("fmm3d kernel=%s%s%s%s n=%lld eps=%g threads=%d repeat=%d best_s=%.6f median_s=%.6f cpu_s=%.3f ier=%lld",
         names[kernel], dipoles ? "+dipoles" : "", hessian ? "+hessian" : "", stresslets ? "+stresslets" : "",
         (long long)n, eps, omp_get_max_threads(), repeat, sorted[0], sorted[repeat / 2], cpus[ibest],
         (long long)ier);
  if (kernel == HELMHOLTZ) printf(" zk=%g,%g", creal(zk), cimag(zk));
  printf("\n");

  if (check > 0) {
    /* columns compared as groups: potential (or velocity), gradient (or
     * pressure), Hessian */
    int ng = 0, first[4];
    const char *gname[3];
    if (kernel == LAPLACE) {
      first[ng] = 0, gname[ng++] = "pot", first[ng] = 1, gname[ng++] = "grad";
      if (hessian) first[ng] = 4, gname[ng++] = "hess";
    } else if (kernel == HELMHOLTZ) {
      first[ng] = 0, gname[ng++] = "pot", first[ng] = 2, gname[ng++] = "grad";
    } else {
      first[ng] = 0, gname[ng++] = "vel", first[ng] = 3, gname[ng++] = "pre";
    }
    first[ng] = cols;
    double *ref = xmalloc(sizeof(double) * cols * (size_t)check);
    double t0 = omp_get_wtime();
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t k = 0; k < check; k++) {
      int64_t i = (int64_t)((double)k * n / check);
      direct_row(&jb, n, src, q, i, ref + (size_t)cols * k);
    }
    double tdirect = omp_get_wtime() - t0;
    double num[3] = {0, 0, 0}, den[3] = {0, 0, 0}, maxrel[3] = {0, 0, 0};
    double unscale = raw ? (kernel == STOKES ? 8 * M_PI : 4 * M_PI) : 1; /* to libfmmcl units */
    for (int64_t k = 0; k < check; k++) {
      int64_t i = (int64_t)((double)k * n / check);
      for (int grp = 0; grp < ng; grp++) {
        double e2 = 0, r2 = 0;
        for (int c = first[grp]; c < first[grp + 1]; c++) {
          double a = rows[(size_t)cols * i + c] * unscale, b = ref[(size_t)cols * k + c];
          e2 += (a - b) * (a - b), r2 += b * b;
        }
        num[grp] += e2, den[grp] += r2;
        if (sqrt(e2) > maxrel[grp]) maxrel[grp] = sqrt(e2);
      }
    }
    printf("check targets=%lld direct_s=%.3f units=%s", (long long)check, tdirect,
           "libfmmcl(1/r, exp(ikr)/r, unnormalised Stokeslet)");
    /* rel_l2: ||e|| / ||ref|| over the checked targets; max: the largest
       error at one target over the reference's rms per target */
    for (int grp = 0; grp < ng; grp++)
      printf(" %s_rel_l2=%.3e %s_max=%.3e", gname[grp], sqrt(num[grp] / den[grp]), gname[grp],
             maxrel[grp] / sqrt(den[grp] / check));
    printf("\n");
    free(ref);
  }

  if (out_path) {
    FILE *o = fopen(out_path, "wb");
    if (!o || fwrite(rows, sizeof(double) * cols, (size_t)n, o) != (size_t)n || fclose(o))
      die("cannot write", out_path);
  }
  free(rows), free(times), free(cpus), free(sorted), free(src), free(q);
  free(pot), free(grad), free(hess), free(dip), free(stok), free(pre), free(strs), free(strv);
  free(zq), free(zpot), free(zgrad), free(zdip);
  return ier ? 3 : 0;
}
