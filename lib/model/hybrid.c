/* hybrid.c — a 3D FMM plan over two OpenCL devices (Choi et al. 2014):
 * one sub-plan per device on the same tree, each running its share of the
 * phase DAG (near field P2P, or far field Up -> V -> Down with W and X) on
 * its own host thread and queue; the two results are summed on the host. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/fmm3d.h"
#include "model/model.h"
#include "plan/registry.h"

#define NEAR_PHASES FMMCL_PHASE_P2P
#define FAR_PHASES (FMMCL_FMM3D_FMM_PHASES & ~(unsigned)FMMCL_PHASE_P2P)

typedef struct hybrid_state {
  fmmcl_schedule schedule;
  int w_near;                          /* W with the near field (its device then also runs Up) */
  int x_near;                          /* X with the near field (its device then also runs Down) */
  fmmcl_plan sub[2];                   /* [0] on the first context, [1] on the second; NULL: unused */
  int borrower;                        /* the sub-plan that borrows the other's tree and lists; -1: none */
  unsigned mask[2];                    /* phases each runs */
  double *pot[2], *grad[2];            /* each sub-plan's share, caller's order */
  char names[2][FMMCL_MAX_PHASES][24]; /* "a:p2p": the hybrid plan's timing names */
} hybrid_state;

/* One execution of a sub-plan restricted to mask: what fmmcl_plan_execute
 * does for a 3D FMM plan, with only some of the phases. */
static fmmcl_status run_masked(fmmcl_plan p, const double *charges, unsigned mask, double *pot,
                               double *grad) {
  fmmcl_clear_error(p->ctx);
  size_t keep = 0;
  for (size_t i = 0; i < p->n_phases; i++)
    if (strcmp(p->phases[i].name, "build") == 0) p->phases[keep++] = p->phases[i];
  p->n_phases = keep;
  fmm3d_state *s = p->impl;
  fmmcl_status st = fmmcl_fmm3d_upload_charges(p, s, charges);
  if (!st) st = fmmcl_fmm3d_run_phases(p, s, mask);
  if (!st) st = fmmcl_fmm3d_download(p, s, pot, grad);
  return st;
}

typedef struct job {
  fmmcl_plan plan;
  const double *charges;
  unsigned mask;
  double *pot, *grad;
  double seconds;
  fmmcl_status st;
} job;

static void *run_job(void *arg) {
  job *j = arg;
  const double t0 = fmmcl_wall_seconds();
  j->st = run_masked(j->plan, j->charges, j->mask, j->pot, j->grad);
  j->seconds = fmmcl_wall_seconds() - t0;
  return NULL;
}

static void hybrid_destroy(fmmcl_plan plan) {
  hybrid_state *h = plan->impl;
  if (!h) return;
  if (h->borrower >= 0) { /* before the plan whose tree it borrows */
    fmmcl_plan_destroy(h->sub[h->borrower]);
    h->sub[h->borrower] = NULL;
  }
  for (int k = 0; k < 2; k++) {
    fmmcl_plan_destroy(h->sub[k]);
    free(h->pot[k]);
    free(h->grad[k]);
  }
  free(h);
  plan->impl = NULL;
}

/* Records sub-plan k's phases on the hybrid plan as "a:NAME" / "b:NAME". */
static void record_sub(fmmcl_plan plan, hybrid_state *h, int k) {
  const fmmcl_plan p = h->sub[k];
  for (size_t i = 0; i < p->n_phases && i < FMMCL_MAX_PHASES; i++) {
    if (strcmp(p->phases[i].name, "build") == 0) continue;
    snprintf(h->names[k][i], sizeof h->names[k][i], "%c:%s", 'a' + k, p->phases[i].name);
    fmmcl_plan_record(plan, h->names[k][i], p->phases[i].seconds);
  }
}

void fmmcl_hybrid_accumulate(size_t n, size_t dim, double *pot, double *grad, const double *add_pot,
                             const double *add_grad) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++) {
    pot[i] += add_pot[i];
    for (size_t c = 0; grad && c < dim; c++) grad[dim * i + c] += add_grad[dim * i + c];
  }
}

static fmmcl_status hybrid_execute(fmmcl_plan plan, const double *charges, double *potential,
                                   double *gradient) {
  hybrid_state *h = plan->impl;
  const int want_grad = gradient != NULL;
  job jobs[2];
  int used[2] = {h->sub[0] != NULL, h->sub[1] != NULL};
  /* the first device used writes the caller's arrays; only a second share
   * needs its own (a single-device schedule has no host sum at all: summing
   * into zeroed copies cost a large part of a GPU run) */
  const int first = used[0] ? 0 : 1;
  for (int k = 0; k < 2; k++)
    jobs[k] = (job){h->sub[k],
                    charges,
                    h->mask[k],
                    k == first ? potential : h->pot[k],
                    want_grad ? (k == first ? gradient : h->grad[k]) : NULL,
                    0,
                    0};
  /* the second device's share on its own thread, the first's on this one */
  pthread_t thread;
  int threaded = 0;
  if (used[0] && used[1]) {
    threaded = pthread_create(&thread, NULL, run_job, &jobs[1]) == 0;
    if (!threaded) run_job(&jobs[1]);
  }
  run_job(&jobs[first]);
  if (threaded) pthread_join(thread, NULL);
  for (int k = 0; k < 2; k++)
    if (used[k] && jobs[k].st)
      return fmmcl_fail(plan->ctx, jobs[k].st, "device %c: %s", 'a' + k, fmmcl_last_error(h->sub[k]->ctx));
  const double t0 = fmmcl_wall_seconds();
  if (used[0] && used[1])
    fmmcl_hybrid_accumulate(plan->n_targets, (size_t)plan->opt.dim, potential, want_grad ? gradient : NULL,
                            h->pot[1], h->grad[1]);
  for (int k = 0; k < 2; k++)
    if (used[k]) {
      record_sub(plan, h, k);
      fmmcl_plan_record(plan, k ? "b:total" : "a:total", jobs[k].seconds);
    }
  fmmcl_plan_record(plan, "combine", fmmcl_wall_seconds() - t0);
  return FMMCL_SUCCESS;
}

/* A phase's work is the count of the sub-plan that runs it. */
static fmmcl_status hybrid_counts(fmmcl_plan plan, const char *phase, double *work) {
  hybrid_state *h = plan->impl;
  static const char *const names[] = {"p2m", "m2m", "m2l", "p2l", "l2l", "l2p", "m2p", "p2p"};
  unsigned bit = 0;
  for (unsigned i = 0; i < 8; i++)
    if (strcmp(phase, names[i]) == 0) bit = 1u << i; /* the order of the FMMCL_PHASE_ bits */
  for (int k = 0; k < 2; k++)
    if (h->sub[k] && (h->mask[k] & bit)) return fmmcl_plan_counts(h->sub[k], phase, work);
  *work = 0;
  return FMMCL_SUCCESS;
}

static fmmcl_status hybrid_create_unused(fmmcl_plan plan, const double *s, const double *t) {
  (void)s, (void)t;
  return fmmcl_fail(plan->ctx, FMMCL_ERROR_INTERNAL, "hybrid plans are made by fmmcl_plan_create_hybrid");
}

/* Both sub-plans run one FMM of one order. */
static int hybrid_order(fmmcl_plan plan) {
  const hybrid_state *h = plan->impl;
  fmmcl_plan_info info = {0};
  fmmcl_plan_describe(h->sub[0] ? h->sub[0] : h->sub[1], &info);
  return info.order;
}

static const fmmcl_method_ops hybrid_ops = {.name = "hybrid",
                                            .create = hybrid_create_unused,
                                            .execute = hybrid_execute,
                                            .destroy = hybrid_destroy,
                                            .counts = hybrid_counts,
                                            .order = hybrid_order};

/* The model's choices, where each device has a fitted model in the plan's
 * precision: for AUTO the schedule, and for every schedule the leaf size
 * (when opt gives none) and where W runs. Without both models nothing is
 * changed (AUTO then runs everything on a). */
static void model_choices(fmmcl_context a, fmmcl_context b, const fmmcl_plan_options *opt, size_t ns,
                          const double *src, size_t nt, const double *tgt, fmmcl_schedule *schedule,
                          int *leaf, int *w_near, int *x_near) {
  fmmcl_model m[2];
  fmmcl_context c[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    char path[4200];
    if (!c[k] || fmmcl_model_file_path(&c[k]->dev.info, path, sizeof path) ||
        fmmcl_model_load(path, &c[k]->dev.info, &m[k]) || !m[k].prec[opt->precision].fitted ||
        !m[k].prec[opt->precision].measured)
      return;
  }
  int order;
  if (fmmcl_fmm3d_choose_order(a, opt, 0, &order)) return;
  double best = -1;
  fmmcl_schedule chosen = *schedule;
  for (int i = 0; i < FMMCL_MODEL_N_LEAF; i++) {
    if (opt->leaf_size > 0 && i > 0) break; /* leaf given: one pass */
    const int q = opt->leaf_size > 0 ? opt->leaf_size : fmmcl_model_leaf_sizes[i];
    double work[FMMCL_MODEL_NWORK], t[5];
    int wn[5], xn[5];
    if (fmmcl_model_counts(ns, src, nt, tgt, (size_t)q, opt->precision, work)) return;
    fmmcl_model_schedule_times(&m[0].prec[opt->precision], &m[1].prec[opt->precision],
                               opt->precision == FMMCL_DOUBLE ? 8 : 4, order, work, ns, tgt ? nt : ns, t, wn,
                               xn);
    for (int s = FMMCL_SCHEDULE_GPU; s <= FMMCL_SCHEDULE_HYBRID2; s++) {
      if (*schedule != FMMCL_SCHEDULE_AUTO && s != (int)*schedule) continue;
      if (best < 0 || t[s] < best)
        best = t[s], chosen = (fmmcl_schedule)s, *leaf = q, *w_near = wn[s], *x_near = xn[s];
    }
  }
  *schedule = chosen;
}

/* The phases of each device under h's schedule and W and X placement:
 * W near brings Up along (it reads multipoles), X near brings Down (its
 * locals must reach the targets); the far device keeps Up and Down for V. */
static void set_masks(hybrid_state *h) {
  const unsigned all = FMMCL_FMM3D_FMM_PHASES, up = FMMCL_PHASE_P2M | FMMCL_PHASE_M2M;
  const unsigned down = FMMCL_PHASE_L2L | FMMCL_PHASE_L2P;
  unsigned near = NEAR_PHASES, far = FAR_PHASES;
  if (h->w_near) near |= up | FMMCL_PHASE_M2P, far &= ~(unsigned)FMMCL_PHASE_M2P;
  if (h->x_near) near |= down | FMMCL_PHASE_P2L, far &= ~(unsigned)FMMCL_PHASE_P2L;
  h->mask[0] = h->mask[1] = 0;
  switch (h->schedule) {
    case FMMCL_SCHEDULE_CPU: h->mask[1] = all; break;
    case FMMCL_SCHEDULE_HYBRID1: h->mask[0] = near, h->mask[1] = far; break;
    case FMMCL_SCHEDULE_HYBRID2: h->mask[0] = far, h->mask[1] = near; break;
    default: h->mask[0] = all; break;
  }
}

static int is_hybrid(fmmcl_plan plan);

/* fmmcl_plan_build's create for a sub-plan: the 3D FMM's state on the
 * donor's tree and lists. */
static fmmcl_status borrow_state(fmmcl_plan plan, const double *sources, const double *targets,
                                 const void *donor) {
  return fmmcl_fmm3d_create_borrowing(plan, sources, targets, donor);
}

/* What fmmcl_plan_create does for a 3D FMM plan (options and points are
 * checked by the caller), with donor's tree and lists borrowed. */
static fmmcl_status create_borrowing(fmmcl_context ctx, const fmmcl_plan_options *o, size_t ns,
                                     const double *sources, size_t nt, const double *targets,
                                     const fmm3d_state *donor, fmmcl_plan *out) {
  fmmcl_clear_error(ctx);
  *out = NULL;
  if (o->precision == FMMCL_DOUBLE && !ctx->dev.info.has_fp64)
    return fmmcl_fail(ctx, FMMCL_ERROR_UNSUPPORTED, "device %s has no double precision (cl_khr_fp64)",
                      ctx->dev.info.device_name);
  /* o is a LAPLACE_3D FMM: the registry gives the 3D FMM's ops, whose state
   * fmmcl_fmm3d_create_borrowing fills */
  const fmmcl_method_ops *ops;
  fmmcl_status st = fmmcl_method_lookup(ctx, o, &ops);
  if (!st && strcmp(ops->name, "fmm3d") != 0)
    st = fmmcl_fail(ctx, FMMCL_ERROR_INTERNAL, "a hybrid share runs %s, not the 3D FMM", ops->name);
  return st ? st : fmmcl_plan_build(ctx, o, ops, ns, sources, nt, targets, borrow_state, donor, out);
}

fmmcl_status fmmcl_hybrid_tree_shared(fmmcl_plan plan, int *shared) {
  if (!is_hybrid(plan) || !shared)
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_INVALID_ARGUMENT, "not a hybrid plan");
  *shared = ((const hybrid_state *)plan->impl)->borrower >= 0;
  return FMMCL_SUCCESS;
}

/* Where the W (x_list 0) or X (x_list 1) list runs: near (1) or far (0). */
static fmmcl_status list_near(fmmcl_plan plan, int x_list, int *near) {
  if (!is_hybrid(plan) || !near)
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_INVALID_ARGUMENT, "not a hybrid plan");
  const hybrid_state *h = plan->impl;
  *near = x_list ? h->x_near : h->w_near;
  return FMMCL_SUCCESS;
}

/* Moves the W or X list; only the hybrid schedules split them. */
static fmmcl_status place_list(fmmcl_plan plan, int x_list, int near) {
  if (!is_hybrid(plan))
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_INVALID_ARGUMENT, "not a hybrid plan");
  hybrid_state *h = plan->impl;
  if (h->schedule != FMMCL_SCHEDULE_HYBRID1 && h->schedule != FMMCL_SCHEDULE_HYBRID2) return FMMCL_SUCCESS;
  *(x_list ? &h->x_near : &h->w_near) = near != 0;
  set_masks(h);
  return FMMCL_SUCCESS;
}

fmmcl_status fmmcl_hybrid_w_near(fmmcl_plan plan, int *near) { return list_near(plan, 0, near); }
fmmcl_status fmmcl_hybrid_place_w(fmmcl_plan plan, int near) { return place_list(plan, 0, near); }
fmmcl_status fmmcl_hybrid_x_near(fmmcl_plan plan, int *near) { return list_near(plan, 1, near); }
fmmcl_status fmmcl_hybrid_place_x(fmmcl_plan plan, int near) { return place_list(plan, 1, near); }

fmmcl_status fmmcl_plan_create_hybrid(fmmcl_context a, fmmcl_context b, const fmmcl_plan_options *opt,
                                      size_t n_sources, const double *sources, size_t n_targets,
                                      const double *targets, fmmcl_schedule schedule, fmmcl_plan *out) {
  if (!a)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_create_hybrid: first context is NULL");
  fmmcl_clear_error(a);
  if (!opt || !out) return fmmcl_fail(a, FMMCL_ERROR_NULL_POINTER, "fmmcl_plan_create_hybrid: NULL argument");
  *out = NULL;
  if ((unsigned)schedule > FMMCL_SCHEDULE_HYBRID2)
    return fmmcl_fail(a, FMMCL_ERROR_INVALID_ARGUMENT, "unknown schedule %d", (int)schedule);
  if (!b && schedule != FMMCL_SCHEDULE_GPU && schedule != FMMCL_SCHEDULE_AUTO)
    return fmmcl_fail(a, FMMCL_ERROR_NULL_POINTER, "schedule %s needs a second context",
                      fmmcl_schedule_name(schedule));
  if (opt->kernel != FMMCL_LAPLACE_3D || (opt->method != FMMCL_FMM && opt->method != FMMCL_AUTO))
    return fmmcl_fail(a, FMMCL_ERROR_UNSUPPORTED, "hybrid plans are LAPLACE_3D FMM plans");
  fmmcl_status st = fmmcl_options_check(a, opt);
  if (!st) st = fmmcl_points_check(a, "sources", n_sources, sources, opt->dim);
  if (!st && targets) st = fmmcl_points_check(a, "targets", n_targets, targets, opt->dim);
  if (!st) st = fmmcl_ranges_check(a, opt, n_sources, sources, n_targets, targets);
  if (st) return st;
  fmmcl_plan_options o = *opt;
  o.method = FMMCL_FMM;
  int leaf = 0, w_near = 0, x_near = 0;
  model_choices(a, b, opt, n_sources, sources, n_targets, targets, &schedule, &leaf, &w_near, &x_near);
  if (schedule == FMMCL_SCHEDULE_AUTO) schedule = FMMCL_SCHEDULE_GPU;
  /* the two shares run on two threads, each needing its own queue */
  if (a == b && (schedule == FMMCL_SCHEDULE_HYBRID1 || schedule == FMMCL_SCHEDULE_HYBRID2))
    return fmmcl_fail(a, FMMCL_ERROR_INVALID_ARGUMENT, "hybrid schedules need two distinct contexts");
  /* both sub-plans must build the same tree, so that near and far field
   * split the pairs exactly: one leaf size for both devices */
  if (o.leaf_size == 0)
    o.leaf_size = leaf ? leaf : a->dev.info.is_gpu || (b && b->dev.info.is_gpu) ? 512 : 256;
  fmmcl_plan plan = calloc(1, sizeof *plan);
  hybrid_state *h = calloc(1, sizeof *h);
  if (!plan || !h) {
    free(plan), free(h);
    return fmmcl_fail(a, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  plan->ctx = a;
  plan->opt = o;
  plan->n_sources = n_sources;
  plan->targets_are_sources = targets == NULL;
  plan->n_targets = targets ? n_targets : n_sources;
  plan->ops = &hybrid_ops;
  plan->borrowed = 1; /* rebuilt only by fmmcl_plan_create_hybrid */
  plan->impl = h;
  h->schedule = schedule;
  h->borrower = -1;
  h->w_near = w_near;
  h->x_near = x_near;
  set_masks(h);
  const double t0 = fmmcl_wall_seconds();
  fmmcl_context c[2] = {a, b};
  const size_t nt = plan->n_targets, dim = (size_t)o.dim;
  /* with both devices, the one that builds its tree on the host (a CPU
   * device: see fmm3d_setup.c) goes first, and the other borrows that tree
   * and its lists rather than building the same ones again */
  const int both = h->mask[0] && h->mask[1];
  const int first = both && a->dev.info.is_gpu && !b->dev.info.is_gpu ? 1 : 0;
  for (int i = 0; !st && i < 2; i++) {
    const int k = i ? 1 - first : first;
    if (!h->mask[k]) continue;
    const fmm3d_state *donor = i && both ? h->sub[first]->impl : NULL;
    if (donor && donor->tree->source_xyz && (donor->tree->targets_are_sources || donor->tree->target_xyz)) {
      st = create_borrowing(c[k], &o, n_sources, sources, n_targets, targets, donor, &h->sub[k]);
      if (!st) h->borrower = k;
    } else {
      st = fmmcl_plan_create(c[k], &o, n_sources, sources, n_targets, targets, &h->sub[k]);
    }
    if (st) {
      st = fmmcl_fail(a, st, "device %c: %s", 'a' + k, fmmcl_last_error(c[k]));
      break;
    }
    if (k == 0 || !h->mask[0]) continue; /* the first share writes the caller's arrays */
    h->pot[k] = malloc(nt * sizeof(double));
    h->grad[k] = o.gradient ? malloc(nt * dim * sizeof(double)) : NULL;
    if (!h->pot[k] || (o.gradient && !h->grad[k]))
      st = fmmcl_fail(a, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  if (st) {
    hybrid_destroy(plan);
    free(plan);
    return st;
  }
  fmmcl_plan_record(plan, "build", fmmcl_wall_seconds() - t0);
  *out = plan;
  return FMMCL_SUCCESS;
}

static int is_hybrid(fmmcl_plan plan) { return fmmcl_plan_runs(plan, hybrid_ops.name); }

fmmcl_status fmmcl_plan_schedule(fmmcl_plan plan, fmmcl_schedule *schedule) {
  if (!plan || !schedule)
    return fmmcl_fail(plan ? plan->ctx : NULL, FMMCL_ERROR_NULL_POINTER,
                      "fmmcl_plan_schedule: NULL argument");
  if (!is_hybrid(plan)) return fmmcl_fail(plan->ctx, FMMCL_ERROR_INVALID_ARGUMENT, "not a hybrid plan");
  *schedule = ((const hybrid_state *)plan->impl)->schedule;
  return FMMCL_SUCCESS;
}

const char *fmmcl_schedule_name(fmmcl_schedule schedule) {
  static const char *const names[] = {"auto", "gpu", "cpu", "hybrid1", "hybrid2"};
  return (unsigned)schedule <= FMMCL_SCHEDULE_HYBRID2 ? names[schedule] : "unknown";
}
