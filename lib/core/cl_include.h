/* cl_include.h — the one place that includes the OpenCL headers, pinned to
 * OpenCL 1.2 so the library runs on every vendor's runtime (NVIDIA: 1.2 C). */
#ifndef FMMCL_CL_INCLUDE_H
#define FMMCL_CL_INCLUDE_H
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#endif
