/* bench_model.c — bench-model (issue 8, after Choi et al. GPGPU-7 2014):
 * the performance model's predicted against measured time per phase and per
 * schedule (GPU-only, CPU-only, hybrid1, hybrid2) over N, tolerance and
 * input shape; median prediction error, how often the model's schedule is
 * the fastest measured, and the best hybrid's speed-up over GPU-only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "methods/laplace3d/fmm3d.h"
#include "model/model.h"

#define MAX_LIST 32
#define N_SCHED 4 /* FMMCL_SCHEDULE_GPU .. HYBRID2 */

typedef struct options {
  const char *dev_a, *dev_b, *csv, *samples;
  size_t n[MAX_LIST], n_n;
  double tol[MAX_LIST];
  size_t n_tol;
  int uniform, ellipsoid, fit, repeats;
} options;

static void usage(void) {
  printf(
      "usage: bench-model [options]\n"
      "  --device SEL      device a, the GPU (default gpu)\n"
      "  --device2 SEL     device b, the CPU device (default cpu)\n"
      "  --n LIST          comma-separated N (default 100000,200000,400000,1000000,2000000,4000000)\n"
      "  --tol LIST        requested tolerances, single precision (default 1e-3,1e-4,1e-5)\n"
      "  --dist D          uniform, ellipsoid (1:1:4) or both (default both)\n"
      "  --fit             measure peaks and fit both devices' models first (fmmtune --fit),\n"
      "                    storing them in their model files; else the files must hold them\n"
      "  --repeats R       timed executions per schedule after one warm-up (default 3; median)\n"
      "  --csv FILE        per-phase rows: dist,n,tol,order,leaf,schedule,device,phase,\n"
      "                    predicted_s,measured_s (default stdout); schedule \"hybrid1+w\":\n"
      "                    the model put W (and a second Up) on the near-field device,\n"
      "                    \"+x\": X (and a second Down), \"+wx\": both\n"
      "  --samples-csv F   also the gpu-only and cpu-only runs as model samples (work,\n"
      "                    granules, measured seconds per phase), for model-refit --test\n");
}

static size_t parse_list(const char *s, double *out) {
  size_t n = 0;
  for (char *end; *s && n < MAX_LIST; s = *end ? end + 1 : end) {
    out[n++] = strtod(s, &end);
    if (end == s) break;
  }
  return n;
}

static void parse(int argc, char **argv, options *o) {
  *o = (options){.dev_a = "gpu", .dev_b = "cpu", .uniform = 1, .ellipsoid = 1, .repeats = 3};
  double tmp[MAX_LIST];
  static const size_t dn[] = {100000, 200000, 400000, 1000000, 2000000, 4000000};
  o->n_n = 6;
  memcpy(o->n, dn, sizeof dn);
  o->n_tol = 3, o->tol[0] = 1e-3, o->tol[1] = 1e-4, o->tol[2] = 1e-5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--fit")) {
      o->fit = 1;
      continue;
    }
    if (!strcmp(a, "--help")) {
      usage();
      exit(0);
    }
    if (!v) {
      fprintf(stderr, "bench-model: %s needs a value (see --help)\n", a);
      exit(2);
    }
    i++;
    if (!strcmp(a, "--device")) o->dev_a = v;
    else if (!strcmp(a, "--device2")) o->dev_b = v;
    else if (!strcmp(a, "--csv")) o->csv = v;
    else if (!strcmp(a, "--samples-csv")) o->samples = v;
    else if (!strcmp(a, "--repeats")) o->repeats = atoi(v) > 0 ? atoi(v) : 1;
    else if (!strcmp(a, "--n")) {
      o->n_n = parse_list(v, tmp);
      for (size_t k = 0; k < o->n_n; k++) o->n[k] = (size_t)tmp[k];
    } else if (!strcmp(a, "--tol")) o->n_tol = parse_list(v, o->tol);
    else if (!strcmp(a, "--dist")) {
      o->uniform = !strcmp(v, "uniform") || !strcmp(v, "both");
      o->ellipsoid = !strcmp(v, "ellipsoid") || !strcmp(v, "both");
    } else {
      fprintf(stderr, "bench-model: unknown option %s (see --help)\n", a);
      exit(2);
    }
  }
}

/* The device's model (after --fit, freshly fitted and stored). */
static void get_model(fmmcl_context ctx, int fit, fmmcl_model_precision *mp) {
  fmmcl_device_info dev;
  bench_check(ctx, fmmcl_context_device(ctx, &dev), "fmmcl_context_device");
  char path[4200];
  bench_check(NULL, fmmcl_model_file_path(&dev, path, sizeof path), "model file path");
  fmmcl_model m;
  if (fmmcl_model_load(path, &dev, &m)) memset(&m, 0, sizeof m);
  if (fit) {
    fmmcl_model_precision *p = &m.prec[FMMCL_SINGLE];
    bench_check(ctx, fmmcl_model_measure(ctx, FMMCL_SINGLE, &p->pairs_per_s, &p->bytes_per_s), "peaks");
    p->measured = 1;
    fmmcl_model_sweep sw;
    fmmcl_model_default_sweep(&dev, &sw);
    fmmcl_model_sample *smp;
    size_t n;
    fprintf(stderr, "bench-model: fitting %s over %zu plans\n", dev.device_name, sw.n_n * sw.n_q * sw.n_p);
    bench_check(ctx, fmmcl_model_fit_sweep(ctx, FMMCL_SINGLE, &sw, p, &smp, &n), "fit");
    free(smp);
    bench_check(NULL, fmmcl_model_store(path, &dev, &m), "storing the model");
  }
  if (!m.prec[FMMCL_SINGLE].fitted) {
    fprintf(stderr, "bench-model: no fitted model for %s in %s (run with --fit)\n", dev.device_name, path);
    exit(1);
  }
  *mp = m.prec[FMMCL_SINGLE];
  fprintf(stderr, "bench-model: %s: %.4g pairs/s, %.4g GB/s, fitted on %zu plans\n", dev.device_name,
          mp->pairs_per_s, mp->bytes_per_s * 1e-9, mp->n_samples);
}

typedef struct stats {
  double *err[N_SCHED + 1]; /* total-time errors per schedule; [N_SCHED]: per phase, all */
  size_t n_err[N_SCHED + 1];
  size_t cases, picked_fastest;
  double best_speedup;
} stats;

static void push(stats *s, int k, double e) {
  s->err[k] = realloc(s->err[k], (s->n_err[k] + 1) * sizeof(double));
  s->err[k][s->n_err[k]++] = e;
}

/* --samples-csv: the file, and each device's name for its rows */
static FILE *samples_f;
static char dev_names[2][256];

/* A single-device schedule's medians as a model sample of that device. */
static void write_sample(int d, const fmmcl_model_precision *mp, int order, size_t n, const double *work,
                         const double *medians) {
  if (!samples_f) return;
  fmmcl_model_sample smp;
  memset(&smp, 0, sizeof smp);
  smp.order = order, smp.n_sources = smp.n_targets = n;
  memcpy(smp.work, work, sizeof smp.work);
  for (int ph = 0; ph < FMMCL_MODEL_COMBINE; ph++) smp.seconds[ph] = medians[ph];
  smp.work[FMMCL_MODEL_COMBINE] = 0; /* one device: no host sum */
  fmmcl_model_samples_write(samples_f, dev_names[d], FMMCL_SINGLE, mp, &smp, 1);
}

/* One (points, tolerance) case: the model's choice, then every schedule. */
static void run_case(FILE *csv, fmmcl_context ca, fmmcl_context cb, const fmmcl_model_precision *mp,
                     const char *dist, size_t n, const double *x, const double *q,
                     double (*works)[FMMCL_MODEL_NWORK], double tol, int repeats, stats *st) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM;
  o.precision = FMMCL_SINGLE;
  o.tolerance = tol;
  int order;
  bench_check(ca, fmmcl_fmm3d_choose_order(ca, &o, 0, &order), "order");
  /* the model's (schedule, leaf) over its candidate leaf sizes */
  double best_t = -1, best_work[FMMCL_MODEL_NWORK], pred[N_SCHED + 1];
  int best_s = FMMCL_SCHEDULE_GPU, best_q = 0;
  for (int k = 0; k < FMMCL_MODEL_N_LEAF; k++) {
    double *work = works[k], t[5];
    const int leaf = fmmcl_model_leaf_sizes[k];
    fmmcl_model_schedule_times(&mp[0], &mp[1], 4, order, work, n, n, t, NULL, NULL);
    for (int s = FMMCL_SCHEDULE_GPU; s <= FMMCL_SCHEDULE_HYBRID2; s++)
      if (best_t < 0 || t[s] < best_t) {
        best_t = t[s], best_s = s, best_q = leaf;
        memcpy(best_work, work, sizeof best_work);
        memcpy(pred, t, sizeof pred);
      }
  }
  fmmcl_model_schedule_times(&mp[0], &mp[1], 4, order, best_work, n, n, pred, NULL, NULL);
  double ph_pred[2][FMMCL_MODEL_NPHASES];
  for (int d = 0; d < 2; d++) fmmcl_model_predict(&mp[d], 4, order, best_work, n, n, ph_pred[d]);
  o.leaf_size = best_q;
  double meas[5] = {0};
  double *pot = malloc(n * sizeof *pot), *grad = malloc(3 * n * sizeof *grad);
  double *walls = malloc((size_t)repeats * sizeof *walls);
  for (int s = FMMCL_SCHEDULE_GPU; s <= FMMCL_SCHEDULE_HYBRID2; s++) {
    fmmcl_plan plan;
    bench_check(ca, fmmcl_plan_create_hybrid(ca, cb, &o, n, x, 0, NULL, (fmmcl_schedule)s, &plan), "plan");
    /* per-phase medians over the timed runs */
    double *phase_t = calloc((size_t)repeats * 2 * FMMCL_MODEL_NPHASES, sizeof *phase_t);
    int ran[2][FMMCL_MODEL_NPHASES] = {{0}}; /* which device reported which phase */
    int w_near = 0, x_near = 0;
    fmmcl_hybrid_w_near(plan, &w_near);
    fmmcl_hybrid_x_near(plan, &x_near);
    /* "+w", "+x", "+wx": what the model moved to the near-field device */
    const char *moved = w_near && x_near ? "+wx" : w_near ? "+w" : x_near ? "+x" : "";
    for (int r = -1; r < repeats; r++) {
      const double t0 = bench_now();
      bench_check(ca, fmmcl_plan_execute(plan, q, pot, grad), "execute");
      if (r < 0) continue;
      walls[r] = bench_now() - t0;
      fmmcl_phase_time t[64];
      size_t nt;
      fmmcl_plan_timings(plan, t, 64, &nt);
      /* overhead: a device's share wall time ("a:total") less its phases;
       * combine: the host sum, device a's row */
      double recorded[2] = {0, 0}, share[2] = {-1, -1};
      for (size_t i = 0; i < nt && i < 64; i++) {
        if (!strcmp(t[i].name, "combine") && s >= FMMCL_SCHEDULE_HYBRID1) {
          phase_t[(size_t)FMMCL_MODEL_COMBINE * repeats + r] = t[i].seconds;
          ran[0][FMMCL_MODEL_COMBINE] = 1;
        }
        if ((t[i].name[0] != 'a' && t[i].name[0] != 'b') || t[i].name[1] != ':') continue;
        const int d = t[i].name[0] - 'a';
        if (!strcmp(t[i].name + 2, "total")) share[d] = t[i].seconds;
        for (int ph = 0; ph < FMMCL_MODEL_OVERHEAD; ph++)
          if (!strcmp(t[i].name + 2, fmmcl_model_phase_names[ph])) {
            phase_t[((size_t)d * FMMCL_MODEL_NPHASES + ph) * repeats + r] = t[i].seconds;
            recorded[d] += t[i].seconds;
            ran[d][ph] = 1;
          }
      }
      for (int d = 0; d < 2; d++)
        if (share[d] >= 0) {
          const double o = share[d] - recorded[d];
          phase_t[((size_t)d * FMMCL_MODEL_NPHASES + FMMCL_MODEL_OVERHEAD) * repeats + r] = o > 0 ? o : 0;
          ran[d][FMMCL_MODEL_OVERHEAD] = 1;
        }
    }
    fmmcl_plan_destroy(plan);
    meas[s] = fmmcl_median(walls, (size_t)repeats);
    double medians[2][FMMCL_MODEL_NPHASES] = {{0}};
    for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) {
      for (int dd = 0; dd < 2; dd++) {
        if (!ran[dd][ph]) continue;
        const double m =
            fmmcl_median(phase_t + ((size_t)dd * FMMCL_MODEL_NPHASES + ph) * repeats, (size_t)repeats);
        medians[dd][ph] = m;
        fprintf(csv, "%s,%zu,%g,%d,%d,%s%s,%c,%s,%.6e,%.6e\n", dist, n, tol, order, best_q,
                fmmcl_schedule_name((fmmcl_schedule)s), moved, 'a' + dd, fmmcl_model_phase_names[ph],
                ph_pred[dd][ph], m);
        if (m > 1e-4) push(st, N_SCHED, fabs(ph_pred[dd][ph] - m) / m); /* phases above 0.1 ms */
      }
    }
    fprintf(csv, "%s,%zu,%g,%d,%d,%s%s,all,total,%.6e,%.6e\n", dist, n, tol, order, best_q,
            fmmcl_schedule_name((fmmcl_schedule)s), moved, pred[s], meas[s]);
    push(st, s - 1, fabs(pred[s] - meas[s]) / meas[s]);
    if (s == FMMCL_SCHEDULE_GPU || s == FMMCL_SCHEDULE_CPU) {
      const int d = s == FMMCL_SCHEDULE_CPU;
      write_sample(d, &mp[d], order, n, best_work, medians[d]);
    }
    free(phase_t);
  }
  int fastest = FMMCL_SCHEDULE_GPU;
  for (int s = FMMCL_SCHEDULE_GPU; s <= FMMCL_SCHEDULE_HYBRID2; s++)
    if (meas[s] < meas[fastest]) fastest = s;
  st->cases++;
  st->picked_fastest += fastest == best_s;
  const double hyb = meas[FMMCL_SCHEDULE_HYBRID1] < meas[FMMCL_SCHEDULE_HYBRID2]
                         ? meas[FMMCL_SCHEDULE_HYBRID1]
                         : meas[FMMCL_SCHEDULE_HYBRID2];
  const double speedup = meas[FMMCL_SCHEDULE_GPU] / hyb;
  if (speedup > st->best_speedup) st->best_speedup = speedup;
  fprintf(stderr,
          "%-9s N=%-8zu tol=%-6g p=%-2d q=%-4d model: %-7s measured fastest: %-7s  "
          "gpu %.4f cpu %.4f h1 %.4f h2 %.4f s (pred %.4f %.4f %.4f %.4f)  best hybrid x%.2f\n",
          dist, n, tol, order, best_q, fmmcl_schedule_name((fmmcl_schedule)best_s),
          fmmcl_schedule_name((fmmcl_schedule)fastest), meas[1], meas[2], meas[3], meas[4], pred[1], pred[2],
          pred[3], pred[4], speedup);
  free(pot), free(grad), free(walls);
}

int main(int argc, char **argv) {
  options o;
  parse(argc, argv, &o);
  fmmcl_context ca, cb;
  bench_check(NULL, fmmcl_context_create(&ca, o.dev_a), "opening device a");
  bench_check(NULL, fmmcl_context_create(&cb, o.dev_b), "opening device b");
  bench_print_device(ca);
  bench_print_device(cb);
  fmmcl_model_precision mp[2];
  get_model(ca, o.fit, &mp[0]);
  get_model(cb, o.fit, &mp[1]);
  for (int d = 0; d < 2; d++) {
    fmmcl_device_info dev;
    bench_check(d ? cb : ca, fmmcl_context_device(d ? cb : ca, &dev), "fmmcl_context_device");
    snprintf(dev_names[d], sizeof dev_names[d], "%s", dev.device_name);
  }
  if (o.samples && !(samples_f = fopen(o.samples, "w"))) {
    fprintf(stderr, "bench-model: cannot write %s\n", o.samples);
    return 1;
  }
  FILE *csv = bench_open_csv(o.csv);
  fprintf(csv, "dist,n,tol,order,leaf,schedule,device,phase,predicted_s,measured_s\n");
  stats st;
  memset(&st, 0, sizeof st);
  size_t n_max = 0;
  for (size_t i = 0; i < o.n_n; i++) n_max = o.n[i] > n_max ? o.n[i] : n_max;
  double *x = malloc(3 * n_max * sizeof *x), *q = malloc(n_max * sizeof *q);
  bench_random_charges(19, n_max, q);
  for (int dist = 0; dist < 2; dist++) {
    if (!(dist ? o.ellipsoid : o.uniform)) continue;
    for (size_t i = 0; i < o.n_n; i++) {
      bench_model_points(dist, o.n[i], x);
      /* the work of each candidate leaf size, counted on host trees once
       * per input (it does not depend on the tolerance) */
      double works[FMMCL_MODEL_N_LEAF][FMMCL_MODEL_NWORK];
      for (int k = 0; k < FMMCL_MODEL_N_LEAF; k++)
        bench_check(
            NULL,
            fmmcl_model_counts(o.n[i], x, 0, NULL, (size_t)fmmcl_model_leaf_sizes[k], FMMCL_SINGLE, works[k]),
            "counts");
      for (size_t t = 0; t < o.n_tol; t++)
        run_case(csv, ca, cb, mp, dist ? "ellipsoid" : "uniform", o.n[i], x, q, works, o.tol[t], o.repeats,
                 &st);
    }
  }
  if (csv != stdout) fclose(csv);
  if (samples_f) fclose(samples_f);
  static const char *const names[] = {"gpu-only", "cpu-only", "hybrid1", "hybrid2"};
  printf("# summary over %zu cases\n", st.cases);
  for (int s = 0; s < N_SCHED; s++)
    printf("# median prediction error, %s total: %.1f%%\n", names[s],
           100 * fmmcl_median(st.err[s], st.n_err[s]));
  printf("# median prediction error, per phase (phases > 0.1 ms): %.1f%%\n",
         100 * fmmcl_median(st.err[N_SCHED], st.n_err[N_SCHED]));
  printf("# model picked the measured fastest schedule: %zu of %zu\n", st.picked_fastest, st.cases);
  printf("# best hybrid speed-up over gpu-only: %.2fx\n", st.best_speedup);
  for (int s = 0; s <= N_SCHED; s++) free(st.err[s]);
  free(x), free(q);
  fmmcl_context_destroy(ca);
  fmmcl_context_destroy(cb);
  return 0;
}
