/* fmmcl_cl.h — libfmmcl alongside the caller's own OpenCL code: the
 * context's OpenCL handles, and plans executed on device buffers so that
 * charges, results and positions stay on the device from one time step to
 * the next. */
#ifndef FMMCL_CL_H
#define FMMCL_CL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifdef __APPLE__
#include <OpenCL/cl.h>
#else
#include <CL/cl.h>
#endif

#include "fmmcl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The OpenCL context, in-order command queue and device ctx runs on (any
 * output pointer may be NULL). They stay owned by ctx: retain them to keep
 * them beyond fmmcl_context_destroy. Work the caller enqueues on this queue
 * is ordered with the plans' own, which is how a simulation's kernels and
 * fmmcl_plan_execute_buffers share buffers without waiting on the host. */
FMMCL_EXPORT fmmcl_status fmmcl_context_cl_handles(fmmcl_context ctx, cl_context *context,
                                                   cl_command_queue *queue, cl_device_id *device);

/* fmmcl_plan_execute on device buffers of the plan's context: charges holds
 * n_sources REALs, potential n_targets REALs and gradient (NULL, or with
 * opt.gradient) n_targets * dim REALs, REAL being float for FMMCL_SINGLE
 * plans and double for FMMCL_DOUBLE, all in the caller's order, as in
 * fmmcl_plan_execute. The call returns when the results are in the
 * buffers. Charges and results are checked on the device (non-finite
 * values, the charge sum's range) and only a few numbers cross to the host;
 * the 3D FMM and treecode and the 2D FMM run entirely on the device, other
 * methods read the charges and write the results through the host (their
 * phases then include "upload" and "download"). A buffer that is too small
 * or belongs to another context is refused (FMMCL_ERROR_INVALID_ARGUMENT). */
FMMCL_EXPORT fmmcl_status fmmcl_plan_execute_buffers(fmmcl_plan plan, cl_mem charges, cl_mem potential,
                                                     cl_mem gradient);

/* fmmcl_plan_update_positions from device buffers of the plan's context:
 * sources holds dim * n_sources doubles (the coordinates of each point in
 * turn, the caller's order, whatever the plan's precision), targets
 * dim * n_targets, or is NULL
 * exactly when the plan's targets are its sources. The 3D FMM whose octree
 * the new positions leave the same is updated without reading the points
 * to the host (their box and finiteness are reduced on the device); every
 * other case reads them to the host and updates as fmmcl_plan_update_positions
 * does, with its checks and errors. The plan only reads the buffers during
 * the call. A buffer that is too small or belongs to another context is
 * refused (FMMCL_ERROR_INVALID_ARGUMENT); on any failure the plan is left
 * as it was, and its results always equal those of a plan created for the
 * new positions. */
FMMCL_EXPORT fmmcl_status fmmcl_plan_update_positions_buffers(fmmcl_plan plan, cl_mem sources,
                                                              cl_mem targets);

#ifdef __cplusplus
}
#endif
#endif
