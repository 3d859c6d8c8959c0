/* launch.h — how every method puts kernels on the queue: kernel creation,
 * argument setting, the launch itself, the event log that turns launches
 * into plan phase times, and the release of OpenCL objects. */
#ifndef FMMCL_LAUNCH_H
#define FMMCL_LAUNCH_H

#include <stddef.h>

#include "core/cl_include.h"
#include "fmmcl.h"

/* ---- kernels ------------------------------------------------------------ */

/* clCreateKernel; a failure names the kernel and the program's file (the
 * program itself does not know it). *k is NULL on failure. */
fmmcl_status fmmcl_create_kernel(fmmcl_context ctx, cl_program program, const char *file, const char *name,
                                 cl_kernel *k);
/* n kernels of one program: *kernels[i] named names[i]; stops at the first
 * failure (the kernels created before it stay for the caller to release). */
fmmcl_status fmmcl_create_kernels(fmmcl_context ctx, cl_program program, const char *file, size_t n,
                                  const char *const *names, cl_kernel *const *kernels);

/* ---- arguments ---------------------------------------------------------- */

/* One kernel argument by value: the bytes live in the struct, so a list of
 * them can be written inline where the kernel is launched. */
typedef struct fmmcl_arg {
  size_t size;
  union {
    cl_mem mem;
    cl_uint u;
    cl_int i;
    cl_ulong ul;
    cl_float f;
    cl_double d;
  } value;
} fmmcl_arg;

#define FMMCL_ARG_MEM(m) ((fmmcl_arg){.size = sizeof(cl_mem), .value.mem = (m)})
#define FMMCL_ARG_UINT(v) ((fmmcl_arg){.size = sizeof(cl_uint), .value.u = (cl_uint)(v)})
#define FMMCL_ARG_INT(v) ((fmmcl_arg){.size = sizeof(cl_int), .value.i = (cl_int)(v)})
#define FMMCL_ARG_FLOAT(v) ((fmmcl_arg){.size = sizeof(cl_float), .value.f = (cl_float)(v)})
#define FMMCL_ARG_DOUBLE(v) ((fmmcl_arg){.size = sizeof(cl_double), .value.d = (cl_double)(v)})
/* A REAL of the plan's precision (real_size 4: float, else double). */
#define FMMCL_ARG_REAL(v, real_size) ((real_size) == 4 ? FMMCL_ARG_FLOAT(v) : FMMCL_ARG_DOUBLE(v))

/* Sets arguments first .. first + n - 1 of k; a failure names the kernel
 * and the index of the argument that failed. */
fmmcl_status fmmcl_kernel_args(fmmcl_context ctx, cl_kernel k, cl_uint first, size_t n,
                               const fmmcl_arg *args);
/* The same with the list written inline and counted by the compiler:
 *   FMMCL_KERNEL_ARGS(ctx, k, 0, FMMCL_ARG_MEM(src), FMMCL_ARG_UINT(n)) */
#define FMMCL_KERNEL_ARGS(ctx, k, first, ...)                                                    \
  fmmcl_kernel_args((ctx), (k), (first), sizeof((fmmcl_arg[]){__VA_ARGS__}) / sizeof(fmmcl_arg), \
                    (fmmcl_arg[]){__VA_ARGS__})

/* ---- the event log ------------------------------------------------------- */

/* Commands in queue order, each with the phase it is timed under. Launches
 * are enqueued back to back on the in-order queue without waiting; the
 * flush waits once and adds each event's time to its phase, so the device
 * never idles between kernels for the sake of timing. The log grows as
 * needed; zero-initialise it ({0}) before use. */
typedef struct fmmcl_event_log {
  size_t n, capacity;
  const char **phase; /* static strings: the plan keeps the pointers */
  cl_event *ev;
  int out_of_memory; /* a slot could not be had; the flush reports it */
} fmmcl_event_log;

/* Where the next command of phase puts its event (pass it as the command's
 * event argument). A slot left NULL records the phase with no time, which
 * keeps its place in the plan's order. NULL when the log cannot grow. */
cl_event *fmmcl_event_log_slot(fmmcl_event_log *log, const char *phase);
/* Waits for every logged command (when there is one), records each
 * entry's time under its phase with fmmcl_plan_record (0 where the wait
 * failed), releases the events and the log's memory: the log is empty
 * afterwards, even on failure. */
fmmcl_status fmmcl_event_log_flush(fmmcl_plan plan, fmmcl_event_log *log);
/* The same without a plan: *seconds receives the sum of every entry. */
fmmcl_status fmmcl_event_log_total(fmmcl_context ctx, fmmcl_event_log *log, double *seconds);

/* ---- launching ------------------------------------------------------------ */

/* Enqueues k over global work-items in groups of local (global a multiple
 * of local; local 0 lets the runtime choose) without waiting. Nothing is
 * enqueued when global is 0 (OpenCL refuses an empty range) and nothing is
 * logged then. With log non-NULL the launch is timed under phase. */
fmmcl_status fmmcl_launch(fmmcl_context ctx, cl_kernel k, size_t global, size_t local, fmmcl_event_log *log,
                          const char *phase);
/* The same in dims (1..3) dimensions; local NULL lets the runtime choose. */
fmmcl_status fmmcl_launch_nd(fmmcl_context ctx, cl_kernel k, cl_uint dims, const size_t *global,
                             const size_t *local, fmmcl_event_log *log, const char *phase);
/* n rounded up to whole groups of local. */
static inline size_t fmmcl_round_up(size_t n, size_t local) { return (n + local - 1) / local * local; }

/* ---- releasing -------------------------------------------------------------- */

/* Release *x when it is not NULL and set it NULL, so that a destroy may run
 * on a half-built state and twice. */
void fmmcl_release_mem(cl_mem *m);
void fmmcl_release_kernel(cl_kernel *k);
void fmmcl_release_program(cl_program *p);
void fmmcl_release_event(cl_event *e);
#define fmmcl_release(x)                        \
  _Generic((x), cl_mem *                        \
           : fmmcl_release_mem, cl_kernel *     \
           : fmmcl_release_kernel, cl_program * \
           : fmmcl_release_program, cl_event *  \
           : fmmcl_release_event)(x)

#endif /* FMMCL_LAUNCH_H */
