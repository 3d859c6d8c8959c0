/* bench_m2l2d.c — reproduces Tables 2 and 3 of Cruz, Layton & Barba (CPC
 * 2011, section 4.1): the 2D row-traversal M2L kernel and its reduction
 * over p in {8, 12, 16} and 2,160 .. 2,359,152 translations; CSV out. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "methods/laplace2d/fmm2d.h"

static void usage(void) {
  printf(
      "usage: bench-m2l2d [options]\n"
      "Times the standalone 2D M2L of the paper's benchmark: every cell of quadtree levels\n"
      "2..L with a full interaction list of 27 cells, so L = 3..8 gives the paper's\n"
      "2160, 9072, 36720, 147312, 589680, 2359152 translations. Per (p, L): the M2L kernel\n"
      "(one local coefficient per work-item), the per-cell reduction, host-to-device\n"
      "(multipoles + lists) and device-to-host (locals) transfers, each the best of\n"
      "--repeat runs timed by OpenCL events.\n"
      "Operation counts (real ops; complex mul = 6, complex add = 2, real x complex\n"
      "multiply-add = 4; an FMA counts 2, as in the peak), per translation:\n"
      "  useful:   (p+1)(7p+16): for row l, w^-l by l complex muls, M_l w^-l (6),\n"
      "            the p+1 terms T[l][k] s_k (4 each), the final product (6); 1/w and\n"
      "            log|w| come with the translation's list entry.\n"
      "  executed: (p+1)(10p+16): every row runs all p trips of the guarded power loop\n"
      "            (the point of it: no divergence).\n"
      "  dense:    8(p+1)^2: the same translation as a dense complex matrix-vector\n"
      "            product (one complex multiply-add per matrix entry a_lk), the unit in\n"
      "            which a matrix-free kernel's work compares with a matrix formulation.\n"
      "  The paper's Table 3 implies 548e9 / 163e6 = 3362 ops per translation at p = 8\n"
      "  (its counting convention is not reproduced here); translations/s is the\n"
      "  convention-free comparison.\n"
      "  reduction: 2 per (translation, coefficient), not in the M2L rates.\n"
      "  useful and executed are per translation whatever the kernel (so they compare\n"
      "  runs as translations/s does). With --share-w 1 the power w^-l is formed once\n"
      "  per bundle of TPW translations of one offset (fused: once per offset for TPW\n"
      "  cells), which the amort_* columns count:\n"
      "  amort:      n_trans (p+1)(4p+16) + n_powers 3p(p+1): row l per translation\n"
      "              M_l w^-l (6), p+1 terms (4), final product (6); w^-l by l complex\n"
      "              muls once per power (n_powers: n_trans unshared, bundles shared,\n"
      "              27 per bundle fused).\n"
      "  amort_exec: the same with all p trips of the guarded loop per power, 6p(p+1),\n"
      "              and the padding translations of partial bundles computed too.\n"
      "  Without sharing amort = useful and amort_exec = executed.\n"
      "  min:        (p+1)(4p+16) + 6p: the amortised count with the powers w^-1..w^-p\n"
      "              formed by recurrence (p complex muls), the least arithmetic of a\n"
      "              matrix-free translation that forms its own powers; m2l2d_tile\n"
      "              (--tile) executes this (amort = amort_exec = min there).\n"
      "Rates divide by the M2L kernel time alone; m2l_GBs counts the kernel's\n"
      "compulsory bytes (list entry, offset, multipole gathered, partial local\n"
      "written); eff_GBs adds the reduction's and divides by both kernels' time.\n"
      "  --orders LIST      p values (default 8,12,16)\n"
      "  --levels A-B       leaf levels (default 3-8)\n"
      "  --precision single|double (default single)\n"
      "  --wgs LIST         work-group sizes to sweep (default: the tuned/default value)\n"
      "  --fused LIST       0: the paper's kernel and separate reduction (default);\n"
      "                     1: m2l2d_fused, each target row's translations summed in\n"
      "                     registers, one write per row (reduce_ms 0)\n"
      "  --tpw LIST         translations per work-item to sweep (default, or 0: the\n"
      "                     plan's: 4 on CPUs; on GPUs 8, with --share-w 1 --fused 1\n"
      "                     sized to the count as the FMM plans do); with --share-w 1\n"
      "                     the bundle size (translations of one offset; fused:\n"
      "                     target cells of one level and position)\n"
      "  --share-w LIST     0: each translation forms its own powers (default); 1: the\n"
      "                     -DM2L_SHARE_W=1 kernels, translations of one offset share\n"
      "                     w^-l and one barrier pair\n"
      "  --tile LIST        0: off (default); TB (a power of two): m2l2d_tile, a group\n"
      "                     per TB x TB tile of a level stages the multipoles its lists\n"
      "                     reach once, then one work-item per target cell computes its\n"
      "                     27 translations, all rows (no lists; --fused, --share-w,\n"
      "                     --wgs, --tpw do not apply)\n"
      "  --tile-split LIST  work-items per cell of --tile, each a share of the 27\n"
      "                     offsets, sums added in local memory (default 1)\n"
      "  --unroll LIST      k-loop unroll factors to sweep (default: p+1)\n"
      "  --coef LIST        M2L_COEF: 0 row table in local memory, 1 recurrence in\n"
      "                     registers (default: the plan's, 1 on GPUs, 0 on CPUs)\n"
      "  --repeat R         runs per point, best kept (default 5)\n"
      "  --peak-gflops G    FP32 (or FP64) peak for the %%-of-peak columns (default:\n"
      "                     from the device name for H100/H200, else 0 = not reported)\n"
      "  --device SEL       gpu, cpu, P:D or a name substring\n"
      "  --csv FILE         CSV output (default stdout)\n");
}

/* Peak by device name (boost clock, FP32 non-tensor / FP64 non-tensor). */
static double default_peak(const char *name, int dbl) {
  if (strstr(name, "H100") && strstr(name, "PCIe")) return dbl ? 25600 : 51200;
  if (strstr(name, "H100") && strstr(name, "NVL")) return dbl ? 30000 : 60000;
  if (strstr(name, "H100") || strstr(name, "H200")) return dbl ? 33500 : 66900;
  return 0;
}

static int parse_list(const char *s, long *out, int max) {
  int n = 0;
  while (s && *s && n < max) {
    char *end;
    out[n++] = strtol(s, &end, 10);
    s = *end == ',' ? end + 1 : NULL;
  }
  return n;
}

int main(int argc, char **argv) {
  long orders[8] = {8, 12, 16}, wgs[16] = {0}, unroll[16] = {0}, coefs[2] = {-1}, tpws[16] = {0},
       fuseds[2] = {0}, shares[2] = {0}, tiles[8] = {0}, splits[8] = {1};
  int n_orders = 3, n_wgs = 1, n_unroll = 1, n_coef = 1, n_tpw = 1, n_fused = 1, n_share = 1, n_tile = 1,
      n_split = 1, lmin = 3, lmax = 8, repeat = 5;
  fmmcl_precision prec = FMMCL_SINGLE;
  double peak = -1;
  const char *device = NULL, *csv_path = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help")) {
      usage();
      return 0;
    }
    if (!v) {
      fprintf(stderr, "%s needs a value (--help)\n", a);
      return 2;
    }
    if (!strcmp(a, "--orders")) n_orders = parse_list(v, orders, 8);
    else if (!strcmp(a, "--levels")) {
      if (sscanf(v, "%d-%d", &lmin, &lmax) == 1) lmax = lmin;
    } else if (!strcmp(a, "--precision")) prec = !strcmp(v, "double") ? FMMCL_DOUBLE : FMMCL_SINGLE;
    else if (!strcmp(a, "--wgs")) n_wgs = parse_list(v, wgs, 16);
    else if (!strcmp(a, "--unroll")) n_unroll = parse_list(v, unroll, 16);
    else if (!strcmp(a, "--coef")) n_coef = parse_list(v, coefs, 2);
    else if (!strcmp(a, "--tpw")) n_tpw = parse_list(v, tpws, 16);
    else if (!strcmp(a, "--fused")) n_fused = parse_list(v, fuseds, 2);
    else if (!strcmp(a, "--share-w")) n_share = parse_list(v, shares, 2);
    else if (!strcmp(a, "--tile")) n_tile = parse_list(v, tiles, 8);
    else if (!strcmp(a, "--tile-split")) n_split = parse_list(v, splits, 8);
    else if (!strcmp(a, "--repeat")) repeat = atoi(v);
    else if (!strcmp(a, "--peak-gflops")) peak = atof(v);
    else if (!strcmp(a, "--device")) device = v;
    else if (!strcmp(a, "--csv")) csv_path = v;
    else {
      fprintf(stderr, "unknown option %s (--help)\n", a);
      return 2;
    }
    i++;
  }
  fmmcl_context ctx;
  bench_check(NULL, fmmcl_context_create(&ctx, device), "fmmcl_context_create");
  bench_print_device(ctx);
  fmmcl_device_info dev;
  fmmcl_context_device(ctx, &dev);
  if (peak < 0) peak = default_peak(dev.device_name, prec == FMMCL_DOUBLE);
  FILE *csv = bench_open_csv(csv_path);
  fprintf(csv,
          "device,precision,p,levels,n_trans,n_cells,wgs,tpw,unroll,coef,m2l_ms,reduce_ms,h2d_ms,d2h_ms,"
          "useful_gops,exec_gflops,dense_gops,peak_gflops,pct_peak_useful,pct_peak_exec,m2l_GBs,eff_GBs,"
          "h2d_GBs,d2h_GBs,mtrans_per_s,max_rel_err,fused,share,n_bundles,amort_gops,amort_exec_gflops,"
          "pct_peak_amort,pct_peak_amort_exec,min_gops,pct_peak_min,tile,tile_split\n");
  for (int io = 0; io < n_orders; io++)
    for (int L = lmin; L <= lmax; L++)
      for (int iw = 0; iw < n_wgs; iw++)
        for (int it = 0; it < n_tpw; it++)
          for (int iu = 0; iu < n_unroll; iu++)
            for (int ic = 0; ic < n_coef; ic++)
              for (int ifu = 0; ifu < n_fused; ifu++)
                for (int ish = 0; ish < n_share; ish++)
                  for (int iti = 0; iti < n_tile; iti++)
                    for (int isp = 0; isp < n_split; isp++) {
                      const double p = (double)orders[io], rs = prec == FMMCL_DOUBLE ? 8 : 4;
                      fmmcl_m2l2d_times t;
                      fmmcl_status st = fmmcl_m2l2d_bench(
                          ctx, prec, (int)orders[io], L, (size_t)wgs[iw], (size_t)tpws[it],
                          (size_t)unroll[iu], (int)coefs[ic], (int)fuseds[ifu], (int)shares[ish],
                          (size_t)tiles[iti], (size_t)splits[isp], repeat, &t);
                      if (st) {
                        fprintf(
                            stderr,
                            "p = %ld L = %d WGS = %ld TPW = %ld UNROLL = %ld share %ld tile %ld: %s: %s\n",
                            orders[io], L, wgs[iw], tpws[it], unroll[iu], shares[ish], tiles[iti],
                            fmmcl_strerror(st), fmmcl_last_error(ctx));
                        continue;
                      }
                      const double nt = (double)t.n_trans, nrow = p + 1;
                      const double useful = nt * (p + 1) * (7 * p + 16),
                                   executed = nt * (p + 1) * (10 * p + 16);
                      const double dense = nt * 8 * (p + 1) * (p + 1);
                      /* power evaluations and translations computed (padding included) */
                      const double nb = (double)t.n_bundles, tw = (double)t.tpw;
                      const double n_pow = t.share ? (t.fused ? 27 * nb : nb) : nt,
                                   n_comp = t.share ? n_pow * tw : nt;
                      /* least arithmetic of a matrix-free translation that forms its own
           * powers: the amortised count with w^-1..w^-p by recurrence (6p) */
                      const double min_ops = nt * (nrow * (4 * p + 16) + 6 * p);
                      double amort = nt * nrow * (4 * p + 16) + n_pow * 3 * p * nrow;
                      double amort_exec = n_comp * nrow * (4 * p + 16) + n_pow * 6 * p * nrow;
                      if (t.tile) /* m2l2d_tile: every work-item its own powers, by recurrence, nothing padded */
                        amort = amort_exec = min_ops;
                      /* fused: no partial locals; each target row's L read and written once.
           * shared: a source index per slot (padding too), w per power */
                      double m2l_bytes = t.fused ? nt * (4 + 4 * rs + 2 * rs * nrow) +
                                                       (double)t.n_rows * (8 + 2 * 2 * rs * nrow)
                                                 : nt * (4 + 4 * rs + 2 * 2 * rs * nrow);
                      double red_bytes =
                          t.fused ? 0 : nt * 2 * rs * nrow + (double)t.n_rows * (8 + 2 * 2 * rs * nrow);
                      if (t.share && t.fused)
                        m2l_bytes = n_comp * 4 + n_pow * 4 * rs + nt * 2 * rs * nrow +
                                    (double)t.n_rows * (4 + 2 * 2 * rs * nrow);
                      if (t.tile) /* the window of each tile once, each cell's L read and written */
                        m2l_bytes = (double)fmmcl_m2l2d_tile_groups(L, t.tile) *
                                        (double)((t.tile + 4) * (t.tile + 4)) * 2 * rs * nrow +
                                    (double)t.n_rows * 2 * 2 * rs * nrow;
                      if (t.share && !t.fused)
                        m2l_bytes = n_comp * 4 + n_pow * 4 * rs + nt * 2 * 2 * rs * nrow, red_bytes += nt * 4;
                      const double ug = useful / t.m2l_s * 1e-9, eg = executed / t.m2l_s * 1e-9;
                      fprintf(
                          csv,
                          "\"%s\",%s,%ld,%d,%zu,%zu,%zu,%zu,%zu,%d,%.4f,%.4f,%.4f,%.4f,%.1f,%.1f,%.1f,%.0f,%.1f,%.1f,%.1f,%.1f,%.2f,%.2f,%.2f,%.2e,%d,%d,%zu,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%zu,%zu\n",
                          dev.device_name, prec == FMMCL_DOUBLE ? "double" : "single", orders[io], L,
                          t.n_trans, t.n_rows, t.wgs, t.tpw, t.unroll, t.coef, 1e3 * t.m2l_s,
                          1e3 * t.reduce_s, 1e3 * t.h2d_s, 1e3 * t.d2h_s, ug, eg, dense / t.m2l_s * 1e-9,
                          peak, peak > 0 ? 100 * ug / peak : 0, peak > 0 ? 100 * eg / peak : 0,
                          m2l_bytes / t.m2l_s * 1e-9, (m2l_bytes + red_bytes) / (t.m2l_s + t.reduce_s) * 1e-9,
                          t.h2d_bytes / t.h2d_s * 1e-9, t.d2h_bytes / t.d2h_s * 1e-9, nt / t.m2l_s * 1e-6,
                          t.max_rel_err, t.fused, t.share, t.n_bundles, amort / t.m2l_s * 1e-9,
                          amort_exec / t.m2l_s * 1e-9, peak > 0 ? 100 * amort / t.m2l_s * 1e-9 / peak : 0,
                          peak > 0 ? 100 * amort_exec / t.m2l_s * 1e-9 / peak : 0, min_ops / t.m2l_s * 1e-9,
                          peak > 0 ? 100 * min_ops / t.m2l_s * 1e-9 / peak : 0, t.tile, t.tile_split);
                      fflush(csv);
                    }
  if (csv != stdout) fclose(csv);
  fmmcl_context_destroy(ctx);
  return 0;
}
