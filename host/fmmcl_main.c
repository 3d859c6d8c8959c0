/* fmmcl_main.c — the fmmcl program: reads particles (or makes random ones),
 * evaluates potentials and gradients through a plan, reports times and
 * accuracy, and writes the results. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "fmmcl.h"
#include "fmmcl_ext.h"
#include "particles_io.h"
#include "check_targets.h"

#define MAX_PHASES 64
#define ERR_LEN 1024

static const char *const schedule_names[] = {"auto", "gpu", "cpu", "hybrid1", "hybrid2"};
static const char *const precision_names[] = {"single", "double"};
static const fmmcl_precision precision_values[] = {FMMCL_SINGLE, FMMCL_DOUBLE};
static const char *const format_names[] = {"csv", "bin", "raw", "npy"};

/* What the command line asked for; has_* marks plan options given, which
 * override the kernel's defaults from fmmcl_plan_options_init. */
typedef struct config {
  const char *input, *targets, *output, *device, *device2;
  int schedule, has_schedule; /* --schedule: a hybrid plan over --device and --device2 */
  const char *format, *output_format;
  fmmcl_kernel kernel;      /* --kernel: a plan kernel, */
  fmmcl_bbfmm_kernel bbfmm; /* or one of the bbFMM's own functions (PLAN_KERNEL: none) */
  fmmcl_method method;
  int precision, dim, order, leaf;
  double sigma, softening, tol, theta, kernel_param;
  const char *expr; /* --expr: a user kernel for the bbFMM */
  int has_kernel_param;
  double wavenumber_re, wavenumber_im;        /* --wavenumber RE[,IM] */
  int dipoles, hessian, stresslets, pressure; /* --dipoles[=FILE], --hessian, --stresslets, --pressure */
  const char *dipoles_file;
  int has_method, has_precision, has_dim, has_order, has_leaf;
  int has_sigma, has_softening, has_tol, has_theta;
  int no_gradient, quiet, force, has_demo;
  size_t demo, repeat, check;
  unsigned long long seed;
} config;

/* The particles and results of one run. */
typedef struct job {
  fmmcl_plan_options opt;
  size_t n, m;               /* sources, targets */
  double *sources, *charges; /* n*dim coordinates, n charges */
  double *targets;           /* m*dim, or NULL: the targets are the sources */
  double *potential;         /* m */
  double *gradient;          /* m*dim, or NULL without --no-gradient */
} job;

/* The best of --repeat executions. */
typedef struct timing {
  double execute_s;
  fmmcl_phase_time phases[MAX_PHASES];
  size_t n_phases;
} timing;

static void print_usage(FILE *out) {
  fputs(
      "Usage: fmmcl [OPTION]... [--input] FILE\n"
      "       fmmcl [OPTION]... --demo N\n"
      "Evaluate f(x_i) = sum_j K(x_i, y_j) q_j and its gradient on an OpenCL device.\n"
      "\n"
      "Input and output:\n"
      "  -i, --input FILE        sources: rows of dim coordinates then the charge\n"
      "      --targets FILE      targets: rows of dim coordinates (default: the sources)\n"
      "      --format FMT        csv, bin (or raw) or npy for the input files\n"
      "                          (default: from each file's extension)\n"
      "  -o, --output FILE       write per target the potential then the gradient\n"
      "                          (CSV header potential,gx,gy,gz; g1..gD above 3 dims)\n"
      "      --output-format FMT csv, bin or npy (default: from the extension)\n"
      "      --force             replace an existing output file\n"
      "      --demo N            no input file: N random points, uniform in [0,1)^dim,\n"
      "                          charges uniform in [-1,1) (laplace) or [0,1) (gaussian)\n"
      "      --seed S            seed of --demo and --check (default 1)\n"
      "\n"
      "  CSV: a header line (names not checked), then one row per line.\n"
      "  bin: little-endian float64 rows, no header; N = size / ((dim+1)*8).\n"
      "  npy: NumPy 1.0/2.0, '<f8' or '<f4', C order, shape (N, dim+1).\n"
      "\n"
      "Sum:\n"
      "      --kernel K          laplace3d (default), gaussian, laplace2d, yukawa3d\n"
      "                          exp(-kappa r)/r (direct, bbfmm, auto), helmholtz3d\n"
      "                          exp(ikr)/r and stokes3d (Stokeslet; both direct,\n"
      "                          auto); for bbfmm\n"
      "                          (and direct) also inv_r2 (1/r^2), multiquadric\n"
      "                          sqrt(r^2+c^2), inverse_multiquadric 1/sqrt(r^2+c^2),\n"
      "                          yukawa exp(-c r)/r (these imply --method bbfmm)\n"
      "      --expr E            bbfmm (or direct) user kernel: an OpenCL C expression\n"
      "                          in r, r2, dx, dy, dz, e.g. 'exp(-r)/r' (implies\n"
      "                          --method bbfmm; a compile error prints the build log)\n"
      "      --kernel-param C    c of the multiquadrics and of yukawa, kappa of\n"
      "                          yukawa3d (default 0; the bbfmm gaussian's width is\n"
      "                          --sigma)\n"
      "      --method M          auto (default: direct for small problems, else fmm,\n"
      "                          bbfmm; laplace3d: the performance model's pick;\n"
      "                          gaussian with --no-gradient: the cheapest of direct,\n"
      "                          cutoff, fgt, bbfmm by their work models; yukawa3d:\n"
      "                          bbfmm with --no-gradient), direct, treecode, fmm,\n"
      "                          fgt, bbfmm, cutoff (gaussian: the direct sum within\n"
      "                          the fgt's cut-off, potential only)\n"
      "      --precision P       single (default) or double (needs fp64)\n"
      "      --dim D             coordinates per point (gaussian: 1..8)\n"
      "      --sigma S           gaussian bandwidth (default 1)\n"
      "      --softening E       laplace and yukawa3d softening eps (default 0)\n"
      "      --dipoles[=FILE]    laplace3d, helmholtz3d: dipole sources, as input\n"
      "                          columns after the charge (laplace3d dx dy dz;\n"
      "                          helmholtz3d dx_re dx_im dy_re dy_im dz_re dz_im), or\n"
      "                          rows of those in FILE; a dipole d adds d.r/r^3\n"
      "      --hessian           laplace3d: also the Hessian (hxx hyy hzz hxy hxz hyz)\n"
      "      --wavenumber RE[,IM] helmholtz3d exp(ikr)/r: k = RE + i IM, IM >= 0\n"
      "                          (input: x y z q_re q_im; output: potential and\n"
      "                          gradient, real and imaginary parts)\n"
      "      --stresslets        stokes3d: input columns sx sy sz nx ny nz after the\n"
      "                          force (stresslet -6 r (r.s)(r.n)/r^5)\n"
      "      --pressure          stokes3d: also the pressure (output ux uy uz p)\n"
      "                          stokes3d input: x y z fx fy fz; velocity\n"
      "                          f/r + r (r.f)/r^3 (times 1/(8 pi mu) for viscosity mu)\n"
      "      --no-gradient       potential only\n"
      "      --order P           expansion order (tree methods; bbfmm: Chebyshev nodes\n"
      "                          per dimension n, 2..10; 0: from --tol)\n"
      "      --tol T             requested relative error (tree methods; fgt, cutoff:\n"
      "                          absolute error per unit of sum |q|, potential only)\n"
      "      --leaf Q            points per leaf (tree methods; 0: device default)\n"
      "      --theta T           treecode acceptance criterion in (0, 1] (default: the largest\n"
      "                          of 0.6, 0.5, 0.4, 0.3 whose order meets --tol)\n"
      "\n"
      "Device and report:\n"
      "      --device SEL        gpu, cpu, P:D or a name substring (default:\n"
      "                          $FMMCL_DEVICE, else the first GPU, else a CPU)\n"
      "      --schedule S        laplace3d fmm over two devices: auto, gpu (all on\n"
      "                          --device), cpu (all on --device2), hybrid1 (near\n"
      "                          field on --device, far field on --device2), hybrid2\n"
      "      --device2 SEL       the second device of --schedule (default cpu)\n"
      "      --repeat R          execute R times and report the best (default 1)\n"
      "      --check K           compare K targets with a double-precision reference:\n"
      "                          half of them those whose nearest source is closest\n"
      "                          (where rounding hurts most), the rest random; the\n"
      "                          reference is the host's direct sum (the bbfmm\n"
      "                          kernels and --expr: the direct sum of the same\n"
      "                          kernel on the device, in double where it has fp64);\n"
      "                          print relative L2 and max-norm errors\n"
      "      --check all         compare every target: against the host's direct\n"
      "                          sum where that is at most 2e9 pairs, else on the\n"
      "                          device in double (fp64 needed): an FMM at a\n"
      "                          tolerance 1000 times tighter, or the direct sum\n"
      "  -q, --quiet             print only --check results and errors\n"
      "  -h, --help              this text\n"
      "  -V, --version           the version\n"
      "\n"
      "Exit status: 0 success, 1 a file, device or library error, 2 a bad command line.\n",
      out);
}

/* ---- command line ---------------------------------------------------------- */

enum {
  OPT_TARGETS = 256,
  OPT_FORMAT,
  OPT_OUTPUT_FORMAT,
  OPT_FORCE,
  OPT_DEMO,
  OPT_SEED,
  OPT_KERNEL,
  OPT_METHOD,
  OPT_PRECISION,
  OPT_DIM,
  OPT_SIGMA,
  OPT_SOFTENING,
  OPT_NO_GRADIENT,
  OPT_ORDER,
  OPT_TOL,
  OPT_LEAF,
  OPT_THETA,
  OPT_DEVICE,
  OPT_REPEAT,
  OPT_CHECK,
  OPT_SCHEDULE,
  OPT_DEVICE2,
  OPT_EXPR,
  OPT_KERNEL_PARAM,
  OPT_WAVENUMBER,
  OPT_DIPOLES,
  OPT_HESSIAN,
  OPT_STRESSLETS,
  OPT_PRESSURE
};

static const struct option long_options[] = {{"input", required_argument, NULL, 'i'},
                                             {"targets", required_argument, NULL, OPT_TARGETS},
                                             {"format", required_argument, NULL, OPT_FORMAT},
                                             {"output", required_argument, NULL, 'o'},
                                             {"output-format", required_argument, NULL, OPT_OUTPUT_FORMAT},
                                             {"force", no_argument, NULL, OPT_FORCE},
                                             {"demo", required_argument, NULL, OPT_DEMO},
                                             {"seed", required_argument, NULL, OPT_SEED},
                                             {"kernel", required_argument, NULL, OPT_KERNEL},
                                             {"method", required_argument, NULL, OPT_METHOD},
                                             {"precision", required_argument, NULL, OPT_PRECISION},
                                             {"dim", required_argument, NULL, OPT_DIM},
                                             {"sigma", required_argument, NULL, OPT_SIGMA},
                                             {"softening", required_argument, NULL, OPT_SOFTENING},
                                             {"no-gradient", no_argument, NULL, OPT_NO_GRADIENT},
                                             {"order", required_argument, NULL, OPT_ORDER},
                                             {"tol", required_argument, NULL, OPT_TOL},
                                             {"leaf", required_argument, NULL, OPT_LEAF},
                                             {"theta", required_argument, NULL, OPT_THETA},
                                             {"device", required_argument, NULL, OPT_DEVICE},
                                             {"repeat", required_argument, NULL, OPT_REPEAT},
                                             {"check", required_argument, NULL, OPT_CHECK},
                                             {"schedule", required_argument, NULL, OPT_SCHEDULE},
                                             {"device2", required_argument, NULL, OPT_DEVICE2},
                                             {"expr", required_argument, NULL, OPT_EXPR},
                                             {"kernel-param", required_argument, NULL, OPT_KERNEL_PARAM},
                                             {"wavenumber", required_argument, NULL, OPT_WAVENUMBER},
                                             {"dipoles", optional_argument, NULL, OPT_DIPOLES},
                                             {"hessian", no_argument, NULL, OPT_HESSIAN},
                                             {"stresslets", no_argument, NULL, OPT_STRESSLETS},
                                             {"pressure", no_argument, NULL, OPT_PRESSURE},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"version", no_argument, NULL, 'V'},
                                             {NULL, 0, NULL, 0}};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

#define CHOICE(names, out) fmmcl_cli_parse_choice(name, arg, names, N_OF(names), out)

/* The bbFMM functions --kernel names besides the plan kernels (3D,
 * potential only; summed by --method bbfmm, their default, or direct): not
 * the 1/r and Gaussian that laplace3d and gaussian already give, and not
 * the user's, which --expr gives. */
static int kernel_option_bbfmm(fmmcl_bbfmm_kernel b) {
  return b != FMMCL_BBFMM_PLAN_KERNEL && b != FMMCL_BBFMM_LAPLACE && b != FMMCL_BBFMM_GAUSSIAN &&
         b != FMMCL_BBFMM_USER;
}

/* Appends ", name" (no comma first) to list. */
static void list_add(char *list, size_t len, const char *name) {
  size_t used = strlen(list);
  snprintf(list + used, len - used, "%s%s", used ? ", " : "", name);
}

/* --kernel K: the library's kernel names, then its names of the bbFMM
 * functions kernel_option_bbfmm takes. */
static int parse_kernel(const char *name, const char *arg, config *c) {
  fmmcl_kernel k;
  fmmcl_bbfmm_kernel b;
  if (fmmcl_kernel_parse(arg, &k) == FMMCL_SUCCESS) {
    c->kernel = k, c->bbfmm = FMMCL_BBFMM_PLAN_KERNEL;
    return 0;
  }
  if (fmmcl_bbfmm_kernel_parse(arg, &b) == FMMCL_SUCCESS && kernel_option_bbfmm(b)) {
    c->kernel = FMMCL_LAPLACE_3D, c->bbfmm = b;
    return 0;
  }
  char list[256] = "";
  for (int i = 0; strcmp(fmmcl_kernel_name((fmmcl_kernel)i), "unknown"); i++)
    list_add(list, sizeof list, fmmcl_kernel_name((fmmcl_kernel)i));
  for (int i = 0; strcmp(fmmcl_bbfmm_kernel_name((fmmcl_bbfmm_kernel)i), "unknown"); i++)
    if (kernel_option_bbfmm((fmmcl_bbfmm_kernel)i))
      list_add(list, sizeof list, fmmcl_bbfmm_kernel_name((fmmcl_bbfmm_kernel)i));
  fmmcl_cli_usage_error("%s: '%s' is not one of %s", name, arg, list);
  return -1;
}

/* --method M: the library's method names. */
static int parse_method(const char *name, const char *arg, config *c) {
  if (fmmcl_method_parse(arg, &c->method) == FMMCL_SUCCESS) return 0;
  char list[256] = "";
  for (int i = 0; strcmp(fmmcl_method_name((fmmcl_method)i), "unknown"); i++)
    list_add(list, sizeof list, fmmcl_method_name((fmmcl_method)i));
  fmmcl_cli_usage_error("%s: '%s' is not one of %s", name, arg, list);
  return -1;
}

/* The --kernel name in messages and the report. */
static const char *kernel_label(const config *c) {
  return c->bbfmm != FMMCL_BBFMM_PLAN_KERNEL ? fmmcl_bbfmm_kernel_name(c->bbfmm)
                                             : fmmcl_kernel_name(c->kernel);
}

/* Options whose value names a file, a device or one of a list. */
static int parse_word(int id, const char *name, const char *arg, config *c) {
  int format;
  switch (id) {
    case 'i': c->input = arg; return 0;
    case 'o': c->output = arg; return 0;
    case OPT_TARGETS: c->targets = arg; return 0;
    case OPT_DEVICE: c->device = arg; return 0;
    case OPT_DEVICE2: c->device2 = arg; return 0;
    case OPT_EXPR: c->expr = arg; return 0;
    case OPT_SCHEDULE: c->has_schedule = 1; return CHOICE(schedule_names, &c->schedule);
    case OPT_FORMAT: c->format = arg; return CHOICE(format_names, &format);
    case OPT_OUTPUT_FORMAT: c->output_format = arg; return CHOICE(format_names, &format);
    case OPT_KERNEL: return parse_kernel(name, arg, c);
    case OPT_METHOD: c->has_method = 1; return parse_method(name, arg, c);
    case OPT_PRECISION: c->has_precision = 1; return CHOICE(precision_names, &c->precision);
    default: return 1; /* not a word option */
  }
}

/* Options whose value is a number. Only the command line's own limits are
 * checked: the library judges sigma, order and the rest itself. */
static int parse_number(int id, const char *name, const char *arg, config *c) {
  size_t seed;
  switch (id) {
    /* The dimension sizes the file reader, so it is checked here. */
    case OPT_DIM: c->has_dim = 1; return fmmcl_cli_parse_int(name, arg, 1, FMMCL_MAX_DIM, &c->dim);
    case OPT_ORDER: c->has_order = 1; return fmmcl_cli_parse_int(name, arg, INT_MIN, INT_MAX, &c->order);
    case OPT_LEAF: c->has_leaf = 1; return fmmcl_cli_parse_int(name, arg, INT_MIN, INT_MAX, &c->leaf);
    case OPT_SIGMA: c->has_sigma = 1; return fmmcl_cli_parse_double(name, arg, &c->sigma);
    case OPT_SOFTENING: c->has_softening = 1; return fmmcl_cli_parse_double(name, arg, &c->softening);
    case OPT_TOL: c->has_tol = 1; return fmmcl_cli_parse_double(name, arg, &c->tol);
    case OPT_THETA: c->has_theta = 1; return fmmcl_cli_parse_double(name, arg, &c->theta);
    case OPT_KERNEL_PARAM:
      c->has_kernel_param = 1;
      return fmmcl_cli_parse_double(name, arg, &c->kernel_param);
    case OPT_DEMO: c->has_demo = 1; return fmmcl_cli_parse_count(name, arg, &c->demo);
    case OPT_CHECK:
      if (strcmp(arg, "all") == 0) {
        c->check = SIZE_MAX;
        return 0;
      }
      return fmmcl_cli_parse_count(name, arg, &c->check);
    case OPT_SEED:
      if (fmmcl_cli_parse_count(name, arg, &seed)) return -1;
      c->seed = seed;
      return 0;
    case OPT_REPEAT:
      if (fmmcl_cli_parse_count(name, arg, &c->repeat)) return -1;
      if (c->repeat == 0) {
        fmmcl_cli_usage_error("%s: must be at least 1", name);
        return -1;
      }
      return 0;
    default: return 1; /* not a number option */
  }
}

/* --wavenumber RE or RE,IM: a complex k (the library checks IM >= 0). */
static int parse_wavenumber(const char *name, const char *arg, config *c) {
  char re[64];
  const char *comma = strchr(arg, ',');
  if (!comma) {
    c->wavenumber_im = 0;
    return fmmcl_cli_parse_double(name, arg, &c->wavenumber_re);
  }
  if ((size_t)(comma - arg) >= sizeof re)
    return fmmcl_cli_usage_error("%s: '%s' is not RE,IM", name, arg), -1;
  memcpy(re, arg, (size_t)(comma - arg));
  re[comma - arg] = '\0';
  if (fmmcl_cli_parse_double(name, re, &c->wavenumber_re)) return -1;
  return fmmcl_cli_parse_double(name, comma + 1, &c->wavenumber_im);
}

/* Parses one option into c; 0, or -1 after a usage message. */
static int parse_value(int id, const char *name, const char *arg, config *c) {
  int rc = parse_word(id, name, arg, c);
  if (rc <= 0) return rc;
  rc = parse_number(id, name, arg, c);
  if (rc <= 0) return rc;
  switch (id) {
    case OPT_FORCE: c->force = 1; return 0;
    case OPT_NO_GRADIENT: c->no_gradient = 1; return 0;
    case OPT_WAVENUMBER: return parse_wavenumber(name, arg, c);
    case OPT_DIPOLES: c->dipoles = 1, c->dipoles_file = arg; return 0;
    case OPT_HESSIAN: c->hessian = 1; return 0;
    case OPT_STRESSLETS: c->stresslets = 1; return 0;
    case OPT_PRESSURE: c->pressure = 1; return 0;
    case 'q': c->quiet = 1; return 0;
    default: return -1;
  }
}

/* Nonzero when the command line names a black-box FMM function. */
static int bbfmm_kernel_named(const config *c) { return c->expr || c->bbfmm != FMMCL_BBFMM_PLAN_KERNEL; }

/* The bbFMM's own functions: --method bbfmm unless direct is asked for;
 * -1 to go on, else the exit code. */
static int check_bbfmm_kernel(config *c) {
  if (c->expr && c->bbfmm != FMMCL_BBFMM_PLAN_KERNEL)
    return fmmcl_cli_usage_error("give --expr or --kernel %s, not both", kernel_label(c));
  if (!bbfmm_kernel_named(c)) return -1;
  if (!c->has_method) {
    c->has_method = 1;
    c->method = FMMCL_BBFMM;
  }
  if (c->method != FMMCL_BBFMM && c->method != FMMCL_DIRECT)
    return fmmcl_cli_usage_error("%s needs --method bbfmm or direct", c->expr ? "--expr" : kernel_label(c));
  return -1;
}

/* Returns -1 to go on with the run, else the exit code (--help, errors). */
static int parse_args(int argc, char **argv, config *c) {
  memset(c, 0, sizeof *c);
  c->repeat = 1;
  c->seed = 1;
  int id;
  opterr = 0; /* messages below name the option and end with the --help hint */
  while ((id = getopt_long(argc, argv, ":i:o:qhV", long_options, NULL)) != -1) {
    if (id == 'h') {
      print_usage(stdout);
      return FMMCL_CLI_EXIT_OK;
    }
    if (id == 'V') {
      printf("fmmcl (libfmmcl) %d.%d.%d\n", FMMCL_VERSION_MAJOR, FMMCL_VERSION_MINOR, FMMCL_VERSION_PATCH);
      return FMMCL_CLI_EXIT_OK;
    }
    if (id == '?' || id == ':') return fmmcl_cli_bad_option(id, argv[optind - 1]);
    if (parse_value(id, fmmcl_cli_option_name(long_options, id), optarg, c) != 0) return FMMCL_CLI_EXIT_USAGE;
  }
  if (optind < argc) {
    if (c->input || optind + 1 < argc)
      return fmmcl_cli_usage_error("unexpected argument '%s'", argv[c->input ? optind : optind + 1]);
    c->input = argv[optind];
  }
  if (!c->input && !c->has_demo) return fmmcl_cli_usage_error("no input: give an input FILE or --demo N");
  if (c->input && c->has_demo) return fmmcl_cli_usage_error("give an input file or --demo, not both");
  return check_bbfmm_kernel(c);
}

/* The format named by --format, else the file's extension. */
static int resolve_format(const char *path, const char *named, const char *what, fmmcl_io_format *format) {
  *format = named ? fmmcl_io_format_parse(named) : fmmcl_io_format_from_path(path);
  if (*format != FMMCL_IO_UNKNOWN) return 0;
  return fmmcl_cli_usage_error(
      "cannot tell the format of %s '%s' from its extension: "
      "use %s csv|bin|npy",
      what, path, strcmp(what, "output") ? "--format" : "--output-format");
}

static int plan_options(const config *c, fmmcl_plan_options *opt) {
  fmmcl_status st = fmmcl_plan_options_init(opt, c->kernel);
  if (st != FMMCL_SUCCESS) return fmmcl_cli_status_error(NULL, st, "fmmcl_plan_options_init");
  /* auto by default: the direct sum for small problems, else the kernel's fast method */
  opt->method = c->has_method ? c->method : FMMCL_AUTO;
  if (c->has_precision) opt->precision = precision_values[c->precision];
  if (c->has_dim) opt->dim = c->dim;
  if (c->has_sigma) opt->sigma = c->sigma;
  if (c->has_softening) opt->softening = c->softening;
  if (c->has_order) opt->order = c->order;
  if (c->has_tol) opt->tolerance = c->tol;
  if (c->has_theta) opt->theta = c->theta;
  if (c->has_leaf) opt->leaf_size = c->leaf;
  if (c->no_gradient) opt->gradient = 0;
  opt->bbfmm_kernel = c->expr ? FMMCL_BBFMM_USER : c->bbfmm;
  opt->kernel_expression = c->expr;
  if (c->has_kernel_param) opt->kernel_param = c->kernel_param;
  opt->wavenumber_re = c->wavenumber_re, opt->wavenumber_im = c->wavenumber_im;
  opt->dipoles = c->dipoles, opt->hessian = c->hessian;
  opt->stresslets = c->stresslets, opt->pressure = c->pressure;
  /* the bbFMM and its functions give the potential only */
  if (opt->method == FMMCL_BBFMM || opt->bbfmm_kernel != FMMCL_BBFMM_PLAN_KERNEL) opt->gradient = 0;
  /* the FGT and the cut-off direct sum compute the potential only */
  if (opt->method == FMMCL_FGT || opt->method == FMMCL_CUTOFF) opt->gradient = 0;
  if (opt->dim < 1 || opt->dim > FMMCL_MAX_DIM) /* would size buffers below */
    return fmmcl_cli_error("dimension %d out of range 1..%d", opt->dim, FMMCL_MAX_DIM);
  return FMMCL_CLI_EXIT_OK;
}

/* The formats of the files named, from --format, --output-format or the
 * extensions: all known before any work starts. */
typedef struct formats {
  fmmcl_io_format input, targets, output;
} formats;

static int resolve_formats(const config *c, formats *f) {
  int rc = FMMCL_CLI_EXIT_OK;
  if (c->input) rc = resolve_format(c->input, c->format, "input", &f->input);
  if (!rc && c->targets) rc = resolve_format(c->targets, c->format, "targets", &f->targets);
  if (!rc && c->output) rc = resolve_format(c->output, c->output_format, "output", &f->output);
  return rc;
}

/* ---- particles ----------------------------------------------------------------- */

/* splitmix64: small, and the same numbers on every platform for a seed. */
static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t *state) { return (double)(next_random(state) >> 11) * 0x1.0p-53; }

/* rows*cols doubles, NULL on overflow or no memory; +1 byte so that N = 0
 * still allocates and is left for the library to refuse. */
static double *alloc_values(size_t rows, int cols) {
  if (rows > (SIZE_MAX - 1) / sizeof(double) / (size_t)cols) return NULL;
  return malloc(rows * (size_t)cols * sizeof(double) + 1);
}

/* Positive charges for the Gaussian (a density), signed ones for Laplace. */
static int make_demo(const config *c, job *j) {
  int dim = j->opt.dim;
  j->n = c->demo;
  j->sources = alloc_values(j->n, dim);
  j->charges = alloc_values(j->n, 1);
  if (!j->sources || !j->charges) return fmmcl_cli_error("out of memory for %zu demo points", j->n);
  uint64_t state = c->seed;
  double low = j->opt.kernel == FMMCL_GAUSSIAN ? 0.0 : -1.0;
  for (size_t i = 0; i < j->n; i++) {
    for (int d = 0; d < dim; d++) j->sources[i * (size_t)dim + d] = uniform01(&state);
    j->charges[i] = low + (1.0 - low) * uniform01(&state);
  }
  return FMMCL_CLI_EXIT_OK;
}

static int read_table(const config *c, const char *path, fmmcl_io_format format, int cols, double **data,
                      size_t *rows) {
  char err[ERR_LEN], label[256];
  fmmcl_cli_progress progress;
  snprintf(label, sizeof label, "reading %s", path);
  fmmcl_cli_progress_begin(&progress, label, !c->quiet);
  int rc =
      fmmcl_io_read(path, format, cols, fmmcl_cli_progress_bytes, &progress, data, rows, err, sizeof err);
  fmmcl_cli_progress_end(&progress);
  return rc ? fmmcl_cli_error("%s", err) : FMMCL_CLI_EXIT_OK;
}

/* Rows of (coordinates, charge) split in place into coordinates and charges. */
static int load_sources(const config *c, fmmcl_io_format format, job *j) {
  int dim = j->opt.dim;
  double *rows;
  int rc = read_table(c, c->input, format, dim + 1, &rows, &j->n);
  if (rc) return rc;
  j->charges = alloc_values(j->n, 1);
  if (!j->charges) {
    free(rows);
    return fmmcl_cli_error("out of memory for %zu charges", j->n);
  }
  for (size_t i = 0; i < j->n; i++) {
    j->charges[i] = rows[i * (size_t)(dim + 1) + (size_t)dim];
    /* Row i moves to a lower or equal offset, so nothing unread is overwritten. */
    memmove(rows + i * (size_t)dim, rows + i * (size_t)(dim + 1), (size_t)dim * sizeof(double));
  }
  j->sources = rows;
  return FMMCL_CLI_EXIT_OK;
}

static int load_particles(const config *c, const formats *f, job *j) {
  int rc = c->has_demo ? make_demo(c, j) : load_sources(c, f->input, j);
  if (rc) return rc;
  j->m = j->n;
  if (c->targets && (rc = read_table(c, c->targets, f->targets, j->opt.dim, &j->targets, &j->m))) return rc;
  j->potential = alloc_values(j->m, 1);
  j->gradient = j->opt.gradient ? alloc_values(j->m, j->opt.dim) : NULL;
  if (!j->potential || (j->opt.gradient && !j->gradient))
    return fmmcl_cli_error("out of memory for %zu results", j->m);
  return FMMCL_CLI_EXIT_OK;
}

static void job_free(job *j) {
  free(j->sources);
  free(j->charges);
  free(j->targets);
  free(j->potential);
  free(j->gradient);
}

/* ---- evaluation ------------------------------------------------------------------ */

/* Executes repeat times, keeping the fastest run's wall time and phases. */
static int execute(const config *c, fmmcl_context ctx, fmmcl_plan plan, job *j, timing *best) {
  fmmcl_cli_progress progress;
  fmmcl_cli_progress_begin(&progress, "executing", !c->quiet);
  best->execute_s = INFINITY;
  fmmcl_status st = FMMCL_SUCCESS;
  for (size_t r = 0; r < c->repeat && st == FMMCL_SUCCESS; r++) {
    double t0 = fmmcl_cli_now();
    st = fmmcl_plan_execute(plan, j->charges, j->potential, j->gradient);
    double t = fmmcl_cli_now() - t0;
    if (st == FMMCL_SUCCESS && t < best->execute_s) {
      best->execute_s = t;
      st = fmmcl_plan_timings(plan, best->phases, MAX_PHASES, &best->n_phases);
      if (best->n_phases > MAX_PHASES) best->n_phases = MAX_PHASES;
    }
    fmmcl_cli_progress_update(&progress, (double)(r + 1), (double)c->repeat);
  }
  fmmcl_cli_progress_end(&progress);
  return st == FMMCL_SUCCESS ? FMMCL_CLI_EXIT_OK : fmmcl_cli_status_error(ctx, st, "executing the plan");
}

static void print_setup(const config *c, const fmmcl_device_info *dev, const job *j) {
  printf("device: %s (%s, %s, %d:%d, %s)\n", dev->device_name, fmmcl_cli_device_type(dev),
         fmmcl_vendor_name(dev->vendor), dev->platform_index, dev->device_index, dev->platform_name);
  if (c->has_demo) printf("sources: %zu (demo, seed %llu)\n", j->n, c->seed);
  else printf("sources: %zu (%s)\n", j->n, c->input);
  if (c->targets) printf("targets: %zu (%s)\n", j->m, c->targets);
  else printf("targets: %zu (the sources)\n", j->m);
  printf("kernel: %s, method: %s, precision: %s, dim: %d, gradient: %s\n",
         c->expr ? c->expr : kernel_label(c), fmmcl_method_name(j->opt.method),
         j->opt.precision == FMMCL_DOUBLE ? "double" : "single", j->opt.dim, j->opt.gradient ? "yes" : "no");
  fflush(stdout);
}

static void print_timing(const config *c, const job *j, const timing *t) {
  printf("phases (ms%s):\n", c->repeat > 1 ? ", fastest run" : "");
  for (size_t i = 0; i < t->n_phases; i++)
    printf("  %-20s %12.3f\n", t->phases[i].name ? t->phases[i].name : "?", 1e3 * t->phases[i].seconds);
  printf("execute: %.3f ms", 1e3 * t->execute_s);
  if (c->repeat > 1) printf(" (best of %zu)", c->repeat);
  printf("\n");
  if (j->opt.method == FMMCL_DIRECT && t->execute_s > 0)
    printf("interactions/s: %.3e\n", (double)j->n * (double)j->m / t->execute_s);
}

/* Errors of a against b over n points of width w values each (1: the
 * potential, dim: the gradient as a vector): the relative L2 error
 * sqrt(sum |a-b|^2 / sum |b|^2) and the max-norm one max |a-b| / max |b|;
 * *relative is 0 when b is all zeros and absolute norms are given. */
static void errors(const double *a, const double *b, size_t n, int w, double *l2, double *maxnorm,
                   int *relative) {
  double diff = 0, norm = 0, worst = 0, largest = 0;
  for (size_t i = 0; i < n; i++) {
    double d2 = 0, b2 = 0;
    for (int c = 0; c < w; c++) {
      double d = a[i * (size_t)w + (size_t)c] - b[i * (size_t)w + (size_t)c];
      d2 += d * d;
      b2 += b[i * (size_t)w + (size_t)c] * b[i * (size_t)w + (size_t)c];
    }
    diff += d2, norm += b2;
    worst = fmax(worst, sqrt(d2)), largest = fmax(largest, sqrt(b2));
  }
  *relative = norm > 0;
  *l2 = sqrt(norm > 0 ? diff / norm : diff);
  *maxnorm = largest > 0 ? worst / largest : worst;
}

/* Prints the errors; nonzero (and nothing printed) when they are not finite. */
static int print_error(const char *what, const double *a, const double *b, size_t n, int w) {
  double l2, maxnorm;
  int relative;
  errors(a, b, n, w, &l2, &maxnorm, &relative);
  if (!isfinite(l2) || !isfinite(maxnorm)) return -1;
  printf("%s L2 error (%s): %.3e\n", relative ? "relative" : "absolute", what, l2);
  printf("%s max-norm error (%s): %.3e\n", relative ? "relative" : "absolute", what, maxnorm);
  return 0;
}

/* Knuth's selection sampling: k distinct indices of 0..m-1, ascending, with
 * no index array of size m. */
static void sample_indices(uint64_t seed, size_t m, size_t k, size_t *out) {
  uint64_t state = seed ^ 0x5eed5eed5eed5eedULL;
  size_t chosen = 0;
  for (size_t i = 0; i < m && chosen < k; i++)
    if ((double)(m - i) * uniform01(&state) < (double)(k - chosen)) out[chosen++] = i;
}

/* The reference at the k points pts on the device, in double where it has
 * fp64: method (DIRECT, or FMM at tol) of the run's kernel. */
static fmmcl_status device_reference(fmmcl_context ctx, const job *j, fmmcl_method method, double tol,
                                     size_t k, const double *pts, double *pot, double *grad) {
  fmmcl_device_info dev;
  fmmcl_plan_options o = j->opt;
  o.method = method;
  o.tolerance = tol;
  o.order = 0;
  o.leaf_size = 0;
  o.gradient = grad != NULL;
  if (fmmcl_context_device(ctx, &dev) == FMMCL_SUCCESS && dev.has_fp64) o.precision = FMMCL_DOUBLE;
  fmmcl_plan plan;
  fmmcl_status st = fmmcl_plan_create(ctx, &o, j->n, j->sources, k, pts, &plan);
  if (st != FMMCL_SUCCESS) return st;
  st = fmmcl_plan_execute(plan, j->charges, pot, grad);
  fmmcl_plan_destroy(plan);
  return st;
}

/* The host's direct sum up to this many pairs; --check all goes to the
 * device above it (about ten seconds of a few cores). */
#define HOST_REFERENCE_PAIRS 2e9

/* Which targets to check: all of them, or k of which half have the closest
 * neighbours and half are random. *idx is malloc'ed; says how they were
 * chosen into how (NULL on failure). */
static size_t choose_targets(const config *c, const job *j, size_t **idx, char *how, size_t how_len) {
  size_t m = j->m, k = c->check < m ? c->check : m;
  *idx = malloc((k + 1) * sizeof **idx);
  size_t *random = malloc((k + 1) * sizeof *random);
  if (!*idx || !random) {
    free(*idx);
    free(random);
    *idx = NULL;
    return 0;
  }
  if (k == m) {
    for (size_t i = 0; i < m; i++) (*idx)[i] = i;
    snprintf(how, how_len, "every target");
    free(random);
    return m;
  }
  sample_indices(c->seed, m, k, random);
  const double *tgt = j->targets ? j->targets : j->sources;
  size_t n_close = 0;
  double closest = NAN;
  size_t chosen = fmmcl_cli_check_targets(j->sources, j->n, tgt, m, j->opt.dim, j->targets == NULL, k, random,
                                          k, *idx, &n_close, &closest);
  free(random);
  if (n_close)
    snprintf(how, how_len,
             "%zu targets: %zu whose nearest source is closest (the closest %.3g away), %zu random", chosen,
             n_close, closest, chosen - n_close);
  else snprintf(how, how_len, "%zu random targets", chosen);
  return chosen;
}

/* Device results at the chosen targets against a double-precision
 * reference: fmmcl_reference_direct; the bbFMM's own functions (which the
 * host cannot evaluate): the direct sum on the device; --check all beyond
 * the host's reach: the device in double. */
static int check_accuracy(const config *c, fmmcl_context ctx, const job *j) {
  int dim = j->opt.dim, grad = j->opt.gradient;
  char how[256];
  size_t *idx = NULL, k = choose_targets(c, j, &idx, how, sizeof how);
  double *pts = alloc_values(k, dim), *pot = alloc_values(k, 1);
  double *g = alloc_values(k, dim), *dev_pot = alloc_values(k, 1);
  double *dev_g = alloc_values(k, dim);
  int rc = FMMCL_CLI_EXIT_OK;
  if (!idx || !pts || !pot || !g || !dev_pot || !dev_g) {
    rc = fmmcl_cli_error("out of memory for --check");
    goto done;
  }
  const double *all = j->targets ? j->targets : j->sources;
  for (size_t i = 0; i < k; i++) {
    memcpy(pts + i * (size_t)dim, all + idx[i] * (size_t)dim, (size_t)dim * sizeof(double));
    dev_pot[i] = j->potential[idx[i]];
    if (grad)
      memcpy(dev_g + i * (size_t)dim, j->gradient + idx[i] * (size_t)dim, (size_t)dim * sizeof(double));
  }
  double t0 = fmmcl_cli_now();
  const char *against = "double-precision host reference";
  fmmcl_status st;
  if (j->opt.bbfmm_kernel != FMMCL_BBFMM_PLAN_KERNEL) {
    against = "direct sum on the device";
    st = device_reference(ctx, j, FMMCL_DIRECT, 0, k, pts, pot, NULL);
  } else if ((double)j->n * (double)k <= HOST_REFERENCE_PAIRS) {
    st = fmmcl_reference_direct(&j->opt, j->n, j->sources, j->charges, k, pts, pot, grad ? g : NULL);
  } else {
    /* the FMM of the same kernel where there is one, 1000 times tighter */
    double tol = j->opt.tolerance > 0 ? j->opt.tolerance : j->opt.precision == FMMCL_DOUBLE ? 1e-6 : 1e-4;
    against = "device's double-precision FMM at a 1000 times tighter tolerance";
    st = j->opt.kernel == FMMCL_GAUSSIAN
             ? FMMCL_ERROR_UNSUPPORTED
             : device_reference(ctx, j, FMMCL_FMM, tol / 1000, k, pts, pot, grad ? g : NULL);
    if (st != FMMCL_SUCCESS) {
      against = "direct sum on the device in double";
      st = device_reference(ctx, j, FMMCL_DIRECT, 0, k, pts, pot, grad ? g : NULL);
    }
  }
  if (st != FMMCL_SUCCESS) {
    rc = fmmcl_cli_status_error(ctx, st, "the reference of --check");
    goto done;
  }
  if (!c->quiet) printf("check: %s, against the %s (%.1f ms)\n", how, against, 1e3 * (fmmcl_cli_now() - t0));
  if (print_error("potential", dev_pot, pot, k, 1)) { /* a NaN never passes for an error figure */
    rc = fmmcl_cli_error("--check: the reference potential is not finite at a checked target");
    goto done;
  }
  if (j->opt.method == FMMCL_FGT || j->opt.method == FMMCL_CUTOFF) { /* what their tolerance bounds */
    double worst = 0, q = 0;
    for (size_t i = 0; i < k; i++) worst = fmax(worst, fabs(dev_pot[i] - pot[i]));
    for (size_t i = 0; i < j->n; i++) q += fabs(j->charges[i]);
    printf("max error / sum |q| (potential): %.3e\n", q > 0 ? worst / q : worst);
  }
  if (grad && print_error("gradient", dev_g, g, k, dim)) {
    rc = fmmcl_cli_error("--check: the reference gradient is not finite at a checked target");
    goto done;
  }
done:
  free(idx);
  free(pts);
  free(pot);
  free(g);
  free(dev_pot);
  free(dev_g);
  return rc;
}

/* ---- output ---------------------------------------------------------------------- */

static int write_results(const config *c, fmmcl_io_format format, const job *j) {
  int dim = j->opt.dim, cols = 1 + (j->opt.gradient ? dim : 0);
  char names[1 + FMMCL_MAX_DIM][16];
  const char *name_ptrs[1 + FMMCL_MAX_DIM];
  snprintf(names[0], sizeof names[0], "potential");
  for (int d = 0; d < cols - 1; d++) {
    if (dim <= 3) snprintf(names[d + 1], sizeof names[d + 1], "g%c", "xyz"[d]);
    else snprintf(names[d + 1], sizeof names[d + 1], "g%d", d + 1);
  }
  for (int i = 0; i < cols; i++) name_ptrs[i] = names[i];
  double *table = alloc_values(j->m, cols);
  if (!table) return fmmcl_cli_error("out of memory for the output table");
  for (size_t i = 0; i < j->m; i++) {
    table[i * (size_t)cols] = j->potential[i];
    for (int d = 0; d < cols - 1; d++)
      table[i * (size_t)cols + 1 + (size_t)d] = j->gradient[i * (size_t)dim + (size_t)d];
  }
  char err[ERR_LEN];
  int rc = fmmcl_io_write(c->output, format, table, j->m, cols, name_ptrs, c->force, err, sizeof err);
  free(table);
  if (rc) return fmmcl_cli_error("%s", err);
  if (!c->quiet) printf("wrote %zu rows to %s\n", j->m, c->output);
  return FMMCL_CLI_EXIT_OK;
}

/* ---- main ------------------------------------------------------------------------- */

/* What runs (the method auto chose, the order the tolerance chose), and a
 * warning, whatever --quiet says, when the plan's precision cannot resolve
 * the closest pair to the tolerance: a silent miss is worse than noise. */
static void report_plan(const config *c, fmmcl_plan plan, const job *j) {
  fmmcl_plan_info info;
  if (fmmcl_plan_describe(plan, &info) != FMMCL_SUCCESS) return;
  if (!c->quiet) {
    printf("plan: %s%s", fmmcl_method_name(info.method),
           j->opt.method == FMMCL_AUTO ? " (chosen by auto)" : "");
    if (info.order > 0) printf(", order %d", info.order);
    if (info.theta > 0) printf(", theta %g", info.theta);
    if (info.leaf_size > 0) printf(", leaf size %d", info.leaf_size);
    printf("\n");
  }
  if (info.precision != FMMCL_SINGLE || j->opt.kernel == FMMCL_GAUSSIAN) return;
  double estimate, distance;
  if (fmmcl_plan_rounding_estimate(plan, j->sources, j->targets, &estimate, &distance) != FMMCL_SUCCESS)
    return;
  const double tol = j->opt.tolerance > 0 ? j->opt.tolerance : 1e-4;
  if (estimate > tol)
    fprintf(
        stderr,
        "fmmcl: warning: the closest pair (%.3g apart) is resolved in single precision only to about %.1e "
        "relative error (gradient), above the tolerance %.0e; targets that close will miss it: use "
        "--precision double\n",
        distance, estimate, tol);
}

/* Plan, execute, report, check: everything that needs the context. */
static int evaluate(const config *c, fmmcl_context ctx, fmmcl_context ctx2, job *j) {
  fmmcl_device_info dev;
  fmmcl_status st = fmmcl_context_device(ctx, &dev);
  if (st != FMMCL_SUCCESS) return fmmcl_cli_status_error(ctx, st, "fmmcl_context_device");
  if (c->has_schedule && !c->has_method) j->opt.method = FMMCL_FMM; /* schedules split the FMM's phases */
  if (!c->quiet) print_setup(c, &dev, j);
  fmmcl_plan plan;
  if (c->has_schedule)
    st = fmmcl_plan_create_hybrid(ctx, ctx2, &j->opt, j->n, j->sources, j->m, j->targets,
                                  (fmmcl_schedule)c->schedule, &plan);
  else st = fmmcl_plan_create(ctx, &j->opt, j->n, j->sources, j->m, j->targets, &plan);
  if (st != FMMCL_SUCCESS) return fmmcl_cli_status_error(ctx, st, "creating the plan");
  report_plan(c, plan, j);
  timing best;
  int rc = execute(c, ctx, plan, j, &best);
  if (!rc && !c->quiet) print_timing(c, j, &best);
  double bound;
  if (!rc && !c->quiet && (j->opt.method == FMMCL_FGT || j->opt.method == FMMCL_CUTOFF) &&
      fmmcl_plan_error_bound(plan, &bound) == FMMCL_SUCCESS)
    printf("error bound: |error| <= %.3e * sum |q|\n", bound);
  fmmcl_plan_destroy(plan);
  if (!rc && c->check > 0) rc = check_accuracy(c, ctx, j);
  return rc;
}

/* Dipoles, Hessians, Helmholtz and Stokes: fmmcl_plan_evaluate's sums
 * (fmmcl_ext.c), on one device. */
static int run_ext(const config *c, const formats *f, const fmmcl_plan_options *opt) {
  if (c->has_schedule) return fmmcl_cli_usage_error("--schedule splits the laplace3d FMM's charges only");
  fmmcl_ext_args a = {.input = c->input,
                      .targets = c->targets,
                      .output = c->output,
                      .dipoles_file = c->dipoles_file,
                      .input_format = f->input,
                      .targets_format = f->targets,
                      .output_format = f->output,
                      .force = c->force,
                      .quiet = c->quiet,
                      .has_demo = c->has_demo,
                      .demo = c->demo,
                      .repeat = c->repeat,
                      .check = c->check,
                      .seed = c->seed};
  if (c->dipoles_file) {
    int rc = resolve_format(c->dipoles_file, c->format, "dipoles", &a.dipoles_format);
    if (rc) return rc;
  }
  fmmcl_context ctx;
  fmmcl_status st = fmmcl_context_create(&ctx, c->device);
  if (st != FMMCL_SUCCESS) return fmmcl_cli_status_error(NULL, st, "opening the OpenCL device");
  int rc = fmmcl_ext_run(&a, ctx, opt);
  fmmcl_context_destroy(ctx);
  return rc;
}

static int run(const config *c) {
  job j;
  memset(&j, 0, sizeof j);
  formats f = {FMMCL_IO_UNKNOWN, FMMCL_IO_UNKNOWN, FMMCL_IO_UNKNOWN};
  char err[ERR_LEN];
  int rc = resolve_formats(c, &f);
  if (!rc) rc = plan_options(c, &j.opt);
  if (rc) return rc;
  /* Refuse an existing output now rather than after a long computation. */
  if (c->output && fmmcl_io_check_output(c->output, c->force, err, sizeof err))
    return fmmcl_cli_error("%s", err);
  if (fmmcl_ext_wanted(&j.opt)) return run_ext(c, &f, &j.opt);
  fmmcl_context ctx;
  fmmcl_status st = fmmcl_context_create(&ctx, c->device);
  if (st != FMMCL_SUCCESS) return fmmcl_cli_status_error(NULL, st, "opening the OpenCL device");
  /* the second device only where the schedule may use it */
  fmmcl_context ctx2 = NULL;
  if (c->has_schedule && c->schedule != FMMCL_SCHEDULE_GPU) {
    st = fmmcl_context_create(&ctx2, c->device2 ? c->device2 : "cpu");
    if (st != FMMCL_SUCCESS) {
      fmmcl_context_destroy(ctx);
      return fmmcl_cli_status_error(NULL, st, "opening the second OpenCL device");
    }
  }
  rc = load_particles(c, &f, &j);
  if (!rc) rc = evaluate(c, ctx, ctx2, &j);
  fmmcl_context_destroy(ctx2);
  if (!rc && c->output) rc = write_results(c, f.output, &j);
  fmmcl_context_destroy(ctx);
  job_free(&j);
  return rc;
}

int main(int argc, char **argv) {
  fmmcl_cli_set_program("fmmcl");
  config c;
  int rc = parse_args(argc, argv, &c);
  return rc >= 0 ? rc : run(&c);
}
