/* fmmcl_common.h — what every libfmmcl kernel shares: the REAL type chosen by
 * -DFMMCL_DOUBLE, fast math helpers per precision, and the unroll pragma.
 * The host prepends this text to each .cl file before building it. */
#ifdef FMMCL_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double REAL;
typedef double4 REAL4;
/* double has no fast hardware rsqrt/exp; the accurate ones are the fast path */
#define RSQRT(x) rsqrt(x)
#define EXP(x) exp(x)
#else
typedef float REAL;
typedef float4 REAL4;
/* native_ variants map to the special-function units (about 1e-7 relative
 * error), well inside single precision's tolerance */
#define RSQRT(x) native_rsqrt(x)
#define EXP(x) native_exp(x)
#endif

#define FMMCL_PRAGMA(x) _Pragma(#x)
/* FMMCL_UNROLL(UNROLL) expands the macro before it becomes a pragma */
#define FMMCL_UNROLL(n) FMMCL_PRAGMA(unroll n)
