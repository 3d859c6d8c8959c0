/* fmmcl_mpi_main.c — fmmcl-mpi: fmmcl under mpirun. Rank 0 reads the input
 * and scatters it in blocks (or every rank makes its block of --demo), the
 * distributed plan evaluates, rank 0 gathers the results in input order,
 * checks them against the direct sum and writes them. */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_targets.h"
#include "cli_common.h"
#include "fmmcl_mpi.h"
#include "particles_io.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#define ERR_LEN 1024

static const char *const precision_names[] = {"single", "double"};
static const char *const distribution_names[] = {"uniform", "clusters", "surface"};

typedef struct config {
  const char *input, *targets, *output, *device, *format, *output_format;
  fmmcl_method method;
  int precision, order, leaf, distribution;
  double tol, theta;
  int has_method, has_precision, has_order, has_leaf, has_tol, has_theta;
  int no_gradient, quiet, force, verbose, has_demo;
  size_t demo, check, repeat;
  unsigned long long seed;
} config;

/* This rank's block of the points and results. */
typedef struct block {
  size_t n, m, n_all, m_all; /* this rank's sources and targets; all of them */
  double *sources, *charges, *targets, *potential, *gradient;
} block;

static void print_usage(FILE *out) {
  fputs(
      "Usage: mpirun -n R fmmcl-mpi [OPTION]... [--input] FILE\n"
      "       mpirun -n R fmmcl-mpi [OPTION]... --demo N\n"
      "Evaluate the 3D Laplace sum f(x_i) = sum_j q_j / |x_i - y_j| and its gradient\n"
      "over R MPI ranks, one OpenCL device each (rank r takes its node's\n"
      "(r mod GPUs)-th GPU unless --device or FMMCL_DEVICE says otherwise).\n"
      "\n"
      "  -i, --input FILE        sources: rows x, y, z, q (rank 0 reads, then scatters)\n"
      "      --targets FILE      targets: rows x, y, z (default: the sources)\n"
      "      --format FMT        csv, bin (or raw) or npy (default: from the extension)\n"
      "  -o, --output FILE       potential and gradient per target, in input order\n"
      "      --output-format FMT csv, bin or npy (default: from the extension)\n"
      "      --force             replace an existing output file\n"
      "      --demo N            no input: N random points made on the ranks, charges\n"
      "                          uniform in [-1,1)\n"
      "      --distribution D    of --demo: uniform (in [0,1)^3, default), clusters\n"
      "                          (8 tight Gaussian clusters), surface (a sphere)\n"
      "      --seed S            seed of --demo and --check (default 1)\n"
      "      --method M          fmm (default), treecode, direct, bbfmm, auto\n"
      "      --precision P       single (default) or double\n"
      "      --tol T             requested relative error (default 1e-6)\n"
      "      --order P           expansion order (0: from --tol)\n"
      "      --leaf Q            points per leaf of the local plans\n"
      "      --theta T           treecode acceptance criterion\n"
      "      --no-gradient       potential only\n"
      "      --device SEL        every rank's device: gpu, cpu, P:D or a name substring\n"
      "      --repeat R          execute R times and report the best\n"
      "      --check K           compare K targets (half of them those whose nearest\n"
      "                          source is closest, the rest random) with the host's\n"
      "                          double-precision direct sum over all sources, on rank 0\n"
      "  -v, --verbose           per-rank phase times, LET sizes, bytes sent, imbalance\n"
      "  -q, --quiet             print only --check results and errors\n"
      "  -h, --help              this text\n"
      "  -V, --version           the version\n"
      "\n"
      "Exit status: 0 success, 1 a file, device or library error, 2 a bad command line.\n",
      out);
}

enum {
  OPT_TARGETS = 256,
  OPT_FORMAT,
  OPT_OUTPUT_FORMAT,
  OPT_FORCE,
  OPT_DEMO,
  OPT_DISTRIBUTION,
  OPT_SEED,
  OPT_METHOD,
  OPT_PRECISION,
  OPT_TOL,
  OPT_ORDER,
  OPT_LEAF,
  OPT_THETA,
  OPT_NO_GRADIENT,
  OPT_DEVICE,
  OPT_REPEAT,
  OPT_CHECK
};

static const struct option long_options[] = {{"input", required_argument, NULL, 'i'},
                                             {"targets", required_argument, NULL, OPT_TARGETS},
                                             {"format", required_argument, NULL, OPT_FORMAT},
                                             {"output", required_argument, NULL, 'o'},
                                             {"output-format", required_argument, NULL, OPT_OUTPUT_FORMAT},
                                             {"force", no_argument, NULL, OPT_FORCE},
                                             {"demo", required_argument, NULL, OPT_DEMO},
                                             {"distribution", required_argument, NULL, OPT_DISTRIBUTION},
                                             {"seed", required_argument, NULL, OPT_SEED},
                                             {"method", required_argument, NULL, OPT_METHOD},
                                             {"precision", required_argument, NULL, OPT_PRECISION},
                                             {"tol", required_argument, NULL, OPT_TOL},
                                             {"order", required_argument, NULL, OPT_ORDER},
                                             {"leaf", required_argument, NULL, OPT_LEAF},
                                             {"theta", required_argument, NULL, OPT_THETA},
                                             {"no-gradient", no_argument, NULL, OPT_NO_GRADIENT},
                                             {"device", required_argument, NULL, OPT_DEVICE},
                                             {"repeat", required_argument, NULL, OPT_REPEAT},
                                             {"check", required_argument, NULL, OPT_CHECK},
                                             {"verbose", no_argument, NULL, 'v'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"version", no_argument, NULL, 'V'},
                                             {NULL, 0, NULL, 0}};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int parse_option(int id, const char *name, const char *arg, config *c) {
  int idx;
  switch (id) {
    case 'i': c->input = arg; return 0;
    case 'o': c->output = arg; return 0;
    case OPT_TARGETS: c->targets = arg; return 0;
    case OPT_FORMAT: c->format = arg; return 0;
    case OPT_OUTPUT_FORMAT: c->output_format = arg; return 0;
    case OPT_FORCE: c->force = 1; return 0;
    case OPT_DEMO: c->has_demo = 1; return fmmcl_cli_parse_count(name, arg, &c->demo);
    case OPT_DISTRIBUTION:
      return fmmcl_cli_parse_choice(name, arg, distribution_names, N_OF(distribution_names),
                                    &c->distribution);
    case OPT_SEED: {
      size_t s;
      if (fmmcl_cli_parse_count(name, arg, &s)) return -1;
      c->seed = s;
      return 0;
    }
    case OPT_METHOD:
      if (fmmcl_method_parse(arg, &c->method) != FMMCL_SUCCESS) {
        fmmcl_cli_usage_error("%s: unknown method '%s'", name, arg);
        return -1;
      }
      c->has_method = 1;
      return 0;
    case OPT_PRECISION:
      c->has_precision = 1;
      if (fmmcl_cli_parse_choice(name, arg, precision_names, 2, &idx)) return -1;
      c->precision = idx;
      return 0;
    case OPT_TOL: c->has_tol = 1; return fmmcl_cli_parse_double(name, arg, &c->tol);
    case OPT_ORDER: c->has_order = 1; return fmmcl_cli_parse_int(name, arg, 0, 64, &c->order);
    case OPT_LEAF: c->has_leaf = 1; return fmmcl_cli_parse_int(name, arg, 0, 1 << 20, &c->leaf);
    case OPT_THETA: c->has_theta = 1; return fmmcl_cli_parse_double(name, arg, &c->theta);
    case OPT_NO_GRADIENT: c->no_gradient = 1; return 0;
    case OPT_DEVICE: c->device = arg; return 0;
    case OPT_REPEAT: return fmmcl_cli_parse_count(name, arg, &c->repeat);
    case OPT_CHECK: return fmmcl_cli_parse_count(name, arg, &c->check);
    case 'v': c->verbose = 1; return 0;
    case 'q': c->quiet = 1; return 0;
  }
  return -1;
}

/* 0: run; 1: done (help or version); FMMCL_CLI_EXIT_USAGE (+ message on rank 0). */
static int parse_args(int argc, char **argv, config *c, int rank) {
  memset(c, 0, sizeof *c);
  c->seed = 1, c->repeat = 1, c->method = FMMCL_FMM;
  opterr = 0;
  int id;
  FILE *err = stderr;
  if (rank) stderr = fopen("/dev/null", "w"); /* one rank reports usage errors */
  int rc = 0;
  while (!rc && (id = getopt_long(argc, argv, ":i:o:vqhV", long_options, NULL)) != -1) {
    if (id == 'h') {
      if (!rank) print_usage(stdout);
      rc = 1;
    } else if (id == 'V') {
      if (!rank)
        printf("fmmcl-mpi %d.%d.%d\n", FMMCL_VERSION_MAJOR, FMMCL_VERSION_MINOR, FMMCL_VERSION_PATCH);
      rc = 1;
    } else if (id == '?' || id == ':') rc = fmmcl_cli_bad_option(id, argv[optind - 1]);
    else if (parse_option(id, fmmcl_cli_option_name(long_options, id), optarg, c)) rc = FMMCL_CLI_EXIT_USAGE;
  }
  if (!rc && optind < argc) {
    if (c->input || optind + 1 < argc) rc = fmmcl_cli_usage_error("one input file only");
    else c->input = argv[optind];
  }
  if (!rc && !c->input && !c->has_demo)
    rc = fmmcl_cli_usage_error("no input: give an input FILE or --demo N");
  if (!rc && c->input && c->has_demo) rc = fmmcl_cli_usage_error("give an input file or --demo, not both");
  if (!rc && c->repeat < 1) rc = fmmcl_cli_usage_error("--repeat: at least 1");
  if (rank) {
    fclose(stderr);
    stderr = err;
  }
  return rc;
}

static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static double u01(uint64_t *s) { return (double)((*s = mix(*s)) >> 11) * 0x1.0p-53; }
static double gauss(uint64_t *s) { return sqrt(-2 * log(1 - u01(s))) * cos(2 * M_PI * u01(s)); }

/* Point i of the demo set depends only on the seed and i, not on the ranks. */
static void demo_point(const config *c, size_t i, double *x, double *q) {
  uint64_t s = mix(c->seed * 0x100000001b3ULL + i);
  if (c->distribution == 1) {
    uint64_t cs = mix(c->seed ^ 0xc1u) + (uint64_t)(mix(i ^ 0x77u) % 8);
    for (int d = 0; d < 3; d++) x[d] = 0.1 + 0.8 * u01(&cs) + 0.01 * gauss(&s);
  } else if (c->distribution == 2) {
    double g[3] = {gauss(&s), gauss(&s), gauss(&s)}, r = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    for (int d = 0; d < 3; d++) x[d] = 0.5 + 0.5 * g[d] / (r > 0 ? r : 1);
  } else
    for (int d = 0; d < 3; d++) x[d] = u01(&s);
  *q = 2 * u01(&s) - 1;
}

static void block_range(size_t n, int rank, int ranks, size_t *begin, size_t *count) {
  *begin = n * (size_t)rank / (size_t)ranks;
  *count = n * (size_t)(rank + 1) / (size_t)ranks - *begin;
}

/* Rank 0's rows in blocks to every rank: cols values a row. */
static int scatter_rows(const double *all, size_t n, int cols, double **mine, size_t *count) {
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  unsigned long long nn = n;
  MPI_Bcast(&nn, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  int *counts = malloc(2 * ranks * sizeof(int)), *displs = counts + ranks;
  if (!counts) return -1;
  for (int r = 0; r < ranks; r++) {
    size_t b, k;
    block_range(nn, r, ranks, &b, &k);
    counts[r] = (int)(k * cols), displs[r] = (int)(b * cols);
  }
  *count = (size_t)counts[rank] / cols;
  *mine = malloc((*count * cols + 1) * sizeof(double));
  int err = !*mine ||
            MPI_Scatterv(all, counts, displs, MPI_DOUBLE, *mine, counts[rank], MPI_DOUBLE, 0, MPI_COMM_WORLD);
  free(counts);
  return err ? -1 : 0;
}

/* Every rank's block of cols values a row, in rank order, onto rank 0. */
static double *gather_rows(const double *mine, size_t count, int cols, size_t total) {
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int *counts = malloc(2 * ranks * sizeof(int)), *displs = counts + ranks;
  double *all = rank == 0 ? malloc((total * cols + 1) * sizeof(double)) : NULL;
  int c = (int)(count * cols);
  MPI_Gather(&c, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int r = 0, d = 0; r < ranks; r++) displs[r] = d, d += counts[r];
  MPI_Gatherv(mine, c, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  free(counts);
  return all;
}

static fmmcl_io_format format_of(const char *path, const char *named) {
  return named ? fmmcl_io_format_parse(named) : fmmcl_io_format_from_path(path);
}

/* Reads (rank 0) and scatters, or makes this rank's block of the demo. */
static int load(const config *c, block *b) {
  int rank, ranks, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (c->has_demo) {
    size_t begin;
    block_range(c->demo, rank, ranks, &begin, &b->n);
    b->n_all = c->demo;
    b->sources = malloc((3 * b->n + 1) * sizeof(double)), b->charges = malloc((b->n + 1) * sizeof(double));
    if (!b->sources || !b->charges) bad = 1;
    for (size_t i = 0; !bad && i < b->n; i++) demo_point(c, begin + i, b->sources + 3 * i, b->charges + i);
  } else {
    double *rows = NULL, *trows = NULL;
    size_t n = 0, m = 0;
    char err[ERR_LEN];
    if (rank == 0) {
      fmmcl_io_format f = format_of(c->input, c->format);
      if (fmmcl_io_read(c->input, f, 4, NULL, NULL, &rows, &n, err, sizeof err))
        bad = fmmcl_cli_error("%s", err);
      if (!bad && c->targets &&
          fmmcl_io_read(c->targets, format_of(c->targets, c->format), 3, NULL, NULL, &trows, &m, err,
                        sizeof err))
        bad = fmmcl_cli_error("%s", err);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (bad) return FMMCL_CLI_EXIT_FAILURE;
    double *mine;
    if (scatter_rows(rows, n, 4, &mine, &b->n)) bad = 1;
    unsigned long long nn = n;
    MPI_Bcast(&nn, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    b->n_all = nn;
    b->sources = malloc((3 * b->n + 1) * sizeof(double)), b->charges = malloc((b->n + 1) * sizeof(double));
    for (size_t i = 0; !bad && i < b->n; i++)
      memcpy(b->sources + 3 * i, mine + 4 * i, 3 * sizeof(double)), b->charges[i] = mine[4 * i + 3];
    free(mine), free(rows);
    int has_targets = c->targets != NULL;
    if (has_targets) {
      if (scatter_rows(trows, m, 3, &b->targets, &b->m)) bad = 1;
      unsigned long long mm = m;
      MPI_Bcast(&mm, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
      b->m_all = mm;
    }
    free(trows);
  }
  if (!b->targets) b->m = b->n, b->m_all = b->n_all;
  b->potential = malloc((b->m + 1) * sizeof(double));
  b->gradient = malloc((3 * b->m + 1) * sizeof(double));
  if (!b->potential || !b->gradient) bad = 1;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return bad ? fmmcl_cli_error("out of memory for the points") : 0;
}

static void print_error(const char *what, const double *a, const double *b, size_t n, int w) {
  double d = 0, r = 0, worst = 0, largest = 0;
  for (size_t i = 0; i < n; i++) {
    double d2 = 0, b2 = 0;
    for (int k = 0; k < w; k++)
      d2 += (a[w * i + k] - b[w * i + k]) * (a[w * i + k] - b[w * i + k]), b2 += b[w * i + k] * b[w * i + k];
    d += d2, r += b2, worst = fmax(worst, sqrt(d2)), largest = fmax(largest, sqrt(b2));
  }
  printf("relative L2 error (%s): %.3e\n", what, sqrt(d / r));
  printf("relative max-norm error (%s): %.3e\n", what, worst / largest);
}

/* Rank 0: K targets (the closest ones and random ones) against the host's
 * direct sum over every source. */
static int check_accuracy(const config *c, const fmmcl_plan_options *opt, const block *b) {
  double *src = gather_rows(b->sources, b->n, 3, b->n_all), *q = gather_rows(b->charges, b->n, 1, b->n_all);
  double *tgt = b->targets ? gather_rows(b->targets, b->m, 3, b->m_all) : NULL;
  double *pot = gather_rows(b->potential, b->m, 1, b->m_all);
  double *grad = opt->gradient ? gather_rows(b->gradient, b->m, 3, b->m_all) : NULL;
  int rank, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    size_t m = b->m_all, k = c->check < m ? c->check : m, n_close = 0, chosen;
    size_t *random = malloc((k + 1) * sizeof *random), *idx = malloc((k + 1) * sizeof *idx);
    uint64_t s = c->seed ^ 0x5eed5eed5eed5eedULL;
    size_t got = 0;
    for (size_t i = 0; i < m && got < k; i++)
      if ((double)(m - i) * u01(&s) < (double)(k - got)) random[got++] = i;
    double closest = NAN;
    chosen = fmmcl_cli_check_targets(src, b->n_all, tgt ? tgt : src, m, 3, tgt == NULL, k, random, got, idx,
                                     &n_close, &closest);
    double *pts = malloc((3 * chosen + 1) * sizeof *pts), *rp = malloc((chosen + 1) * sizeof *rp);
    double *rg = malloc((3 * chosen + 1) * sizeof *rg), *dp = malloc((chosen + 1) * sizeof *dp);
    double *dg = malloc((3 * chosen + 1) * sizeof *dg);
    for (size_t i = 0; i < chosen; i++) {
      memcpy(pts + 3 * i, (tgt ? tgt : src) + 3 * idx[i], 3 * sizeof *pts);
      dp[i] = pot[idx[i]];
      if (grad) memcpy(dg + 3 * i, grad + 3 * idx[i], 3 * sizeof *dg);
    }
    fmmcl_status st = fmmcl_reference_direct(opt, b->n_all, src, q, chosen, pts, rp, grad ? rg : NULL);
    if (st) rc = fmmcl_cli_status_error(NULL, st, "the reference of --check");
    else {
      if (!c->quiet)
        printf(
            "check: %zu targets: %zu whose nearest source is closest (the closest %.3g away), %zu random, "
            "against the double-precision host reference\n",
            chosen, n_close, closest, chosen - n_close);
      print_error("potential", dp, rp, chosen, 1);
      if (grad) print_error("gradient", dg, rg, chosen, 3);
    }
    free(random), free(idx), free(pts), free(rp), free(rg), free(dp), free(dg);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(src), free(q), free(tgt), free(pot), free(grad);
  return rc;
}

static int write_output(const config *c, const fmmcl_plan_options *opt, const block *b) {
  int cols = opt->gradient ? 4 : 1, rank, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double *rows = malloc((b->m * cols + 1) * sizeof *rows);
  for (size_t i = 0; i < b->m; i++) {
    rows[cols * i] = b->potential[i];
    if (cols == 4) memcpy(rows + 4 * i + 1, b->gradient + 3 * i, 3 * sizeof *rows);
  }
  double *all = gather_rows(rows, b->m, cols, b->m_all);
  if (rank == 0) {
    static const char *const names[] = {"potential", "gx", "gy", "gz"};
    char err[ERR_LEN];
    if (fmmcl_io_write(c->output, format_of(c->output, c->output_format), all, b->m_all, cols, names,
                       c->force, err, sizeof err))
      rc = fmmcl_cli_error("%s", err);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(rows), free(all);
  return rc;
}

/* Per-rank phases on rank 0, and the share of the time outside the local plan. */
static void report(const config *c, const fmmcl_mpi_stats *s, double create_s, double execute_s) {
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  fmmcl_mpi_stats *all = rank == 0 ? malloc(ranks * sizeof *all) : NULL;
  MPI_Gather(s, (int)sizeof *s, MPI_BYTE, all, (int)sizeof *s, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rank) return;
  double out_sum = 0, tot_sum = 0, out_exec = 0, tot_exec = 0;
  unsigned long long bytes = 0;
  if (c->verbose)
    printf(
        "rank  sources  targets  LET particles  LET charges (cells)  partition  LET build  local create  "
        "charges  equivalent  LET exchange  local execute  results  bytes create / execute\n");
  for (int r = 0; r < ranks; r++) {
    const fmmcl_mpi_stats *p = all + r;
    double outside_create = p->partition_s + p->let_build_s;
    double outside_exec = p->charges_s + p->equivalent_s + p->let_exchange_s + p->results_s;
    out_sum += outside_create + outside_exec;
    tot_sum += outside_create + outside_exec + p->local_create_s + p->local_execute_s;
    out_exec += outside_exec, tot_exec += outside_exec + p->local_execute_s;
    bytes += p->create_bytes + p->execute_bytes;
    if (c->verbose)
      printf(
          "%4d %8zu %8zu %14zu %12zu (%5zu) %10.3f %10.3f %13.3f %8.3f %11.3f %13.3f %14.3f %8.3f  %llu / %llu\n",
          r, p->owned_sources, p->owned_targets, p->let_particles, p->let_equivalent, p->let_cells,
          p->partition_s, p->let_build_s, p->local_create_s, p->charges_s, p->equivalent_s, p->let_exchange_s,
          p->local_execute_s, p->results_s, p->create_bytes, p->execute_bytes);
  }
  if (!c->quiet) {
    printf("plan: %.3f s, execute: %.3f s (%d ranks)\n", create_s, execute_s, ranks);
    printf("outside the local plans: %.1f %% of plan + execute, %.1f %% of execute (sums over ranks)\n",
           100 * out_sum / tot_sum, 100 * out_exec / tot_exec);
    printf("imbalance (max/mean): work estimate %.3f, local execute %.3f; bytes sent %llu\n",
           s->work_imbalance, s->local_imbalance, bytes);
  }
  free(all);
}

/* A warning from rank 0, whatever --quiet says, when single precision cannot
 * resolve the closest pair to the tolerance (as fmmcl's): a silent miss is
 * worse than noise. Collective. */
static void warn_rounding(const fmmcl_plan_options *opt, fmmcl_mpi_plan plan, int rank) {
  double estimate, distance;
  if (opt->precision != FMMCL_SINGLE || opt->kernel == FMMCL_GAUSSIAN) return;
  if (fmmcl_mpi_plan_rounding_estimate(plan, &estimate, &distance) != FMMCL_SUCCESS) return;
  const double tol = opt->tolerance > 0 ? opt->tolerance : 1e-4;
  if (rank == 0 && estimate > tol)
    fprintf(stderr,
            "fmmcl-mpi: warning: the closest pair (%.3g apart) is resolved in single precision only to about "
            "%.1e relative error (gradient), above the tolerance %.0e; targets that close will miss it: use "
            "--precision double\n",
            distance, estimate, tol);
}

static int run(const config *c) {
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  fmmcl_plan_options opt;
  fmmcl_plan_options_init(&opt, FMMCL_LAPLACE_3D);
  opt.method = c->method;
  opt.precision = c->precision ? FMMCL_DOUBLE : FMMCL_SINGLE;
  opt.tolerance = c->has_tol ? c->tol : c->has_order ? 0 : 1e-6;
  if (c->has_order) opt.order = c->order;
  if (c->has_leaf) opt.leaf_size = c->leaf;
  if (c->has_theta) opt.theta = c->theta;
  opt.gradient = !c->no_gradient;
  if (rank == 0 && c->output) {
    char err[ERR_LEN];
    if (fmmcl_io_check_output(c->output, c->force, err, sizeof err)) return fmmcl_cli_error("%s", err);
  }
  block b = {0};
  int rc = load(c, &b);
  fmmcl_context ctx = NULL;
  fmmcl_status st = rc ? FMMCL_SUCCESS : fmmcl_mpi_context_create(MPI_COMM_WORLD, c->device, &ctx);
  int bad = st != FMMCL_SUCCESS;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!rc && bad) rc = st ? fmmcl_cli_status_error(NULL, st, "opening the device") : FMMCL_CLI_EXIT_FAILURE;
  if (!rc && !c->quiet && rank == 0) {
    fmmcl_device_info dev;
    fmmcl_context_device(ctx, &dev);
    printf("ranks: %d, rank 0's device: %s (%s)\n", ranks, dev.device_name, dev.platform_name);
    printf("sources: %zu%s, targets: %zu; %s, %s, tol %.0e\n", b.n_all, c->has_demo ? " (demo)" : "", b.m_all,
           fmmcl_method_name(opt.method), precision_names[c->precision], opt.tolerance);
  }
  fmmcl_mpi_plan plan = NULL;
  double t0 = MPI_Wtime(), create_s = 0, best = INFINITY;
  if (!rc) {
    st = fmmcl_mpi_plan_create(MPI_COMM_WORLD, ctx, &opt, b.n, b.sources, b.targets ? b.m : 0, b.targets,
                               &plan);
    create_s = MPI_Wtime() - t0;
    if (st) rc = fmmcl_cli_status_error(ctx, st, "fmmcl_mpi_plan_create");
    if (!rc) warn_rounding(&opt, plan, rank);
  }
  fmmcl_mpi_stats stats, best_stats = {0};
  for (size_t r = 0; !rc && r < c->repeat; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    st = fmmcl_mpi_plan_execute(plan, b.charges, b.potential, opt.gradient ? b.gradient : NULL);
    double e = MPI_Wtime() - t1;
    MPI_Allreduce(MPI_IN_PLACE, &e, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (st) rc = fmmcl_cli_status_error(ctx, st, "fmmcl_mpi_plan_execute");
    fmmcl_mpi_plan_stats(plan, &stats);
    if (!rc && e < best) best = e, best_stats = stats;
  }
  if (!rc) report(c, &best_stats, create_s, best);
  if (!rc && c->check) rc = check_accuracy(c, &opt, &b);
  if (!rc && c->output) rc = write_output(c, &opt, &b);
  if (plan) fmmcl_mpi_plan_destroy(plan);
  if (ctx) fmmcl_context_destroy(ctx);
  free(b.sources), free(b.charges), free(b.targets), free(b.potential), free(b.gradient);
  return rc;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fmmcl_cli_set_program("fmmcl-mpi");
  config c;
  int rc = parse_args(argc, argv, &c, rank);
  if (rc == 1) rc = 0;
  else if (!rc) rc = run(&c);
  MPI_Finalize();
  return rc;
}
