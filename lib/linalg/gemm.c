/* gemm.c — GEMMs on the device through CLBlast (single or double by the
 * element size) and CLBlast's statuses as libfmmcl's. */
#include <clblast_c.h>
#include <stdlib.h>

#include "linalg/linalg.h"

static const char *clblast_name(int code) {
  switch (code) {
    case CLBlastNotImplemented: return "CLBlastNotImplemented";
    case CLBlastInvalidMatrixA: return "CLBlastInvalidMatrixA";
    case CLBlastInvalidMatrixB: return "CLBlastInvalidMatrixB";
    case CLBlastInvalidMatrixC: return "CLBlastInvalidMatrixC";
    case CLBlastInvalidDimension: return "CLBlastInvalidDimension";
    case CLBlastInvalidLeadDimA: return "CLBlastInvalidLeadDimA";
    case CLBlastInvalidLeadDimB: return "CLBlastInvalidLeadDimB";
    case CLBlastInvalidLeadDimC: return "CLBlastInvalidLeadDimC";
    case CLBlastInsufficientMemoryA: return "CLBlastInsufficientMemoryA";
    case CLBlastInsufficientMemoryB: return "CLBlastInsufficientMemoryB";
    case CLBlastInsufficientMemoryC: return "CLBlastInsufficientMemoryC";
    case CLBlastInsufficientMemoryTemp: return "CLBlastInsufficientMemoryTemp";
    case CLBlastInvalidBatchCount: return "CLBlastInvalidBatchCount";
    case CLBlastInvalidLocalMemUsage: return "CLBlastInvalidLocalMemUsage";
    case CLBlastNoHalfPrecision: return "CLBlastNoHalfPrecision";
    case CLBlastNoDoublePrecision: return "CLBlastNoDoublePrecision";
    case CLBlastDatabaseError: return "CLBlastDatabaseError";
    case CLBlastUnknownError: return "CLBlastUnknownError";
    case CLBlastUnexpectedError: return "CLBlastUnexpectedError";
    case CLBlastOpenCLBuildProgramFailure: return "CLBlastOpenCLBuildProgramFailure";
    default: return code > -1000 ? fmmcl_cl_error_name(code) : "a CLBlast error";
  }
}

fmmcl_status fmmcl_clblast_status(fmmcl_context ctx, int code, const char *what) {
  fmmcl_status st;
  if (code == CLBlastSuccess) return FMMCL_SUCCESS;
  switch (code) {
    case CLBlastOpenCLBuildProgramFailure: st = FMMCL_ERROR_BUILD_FAILED; break;
    case CLBlastNotImplemented:
    case CLBlastNoHalfPrecision:
    case CLBlastNoDoublePrecision:
    case CLBlastInvalidLocalMemUsage:
    case CLBlastDatabaseError: st = FMMCL_ERROR_UNSUPPORTED; break;
    case CLBlastInsufficientMemoryTemp: st = FMMCL_ERROR_OUT_OF_MEMORY; break;
    case CLBlastUnknownError:
    case CLBlastUnexpectedError: st = FMMCL_ERROR_OPENCL; break;
    default:
      /* -1..-999 are OpenCL's own codes passed through; the rest (bad
       * dimensions, leading dimensions, buffers too small, ...) mean that
       * libfmmcl asked CLBlast for something wrong */
      st = code > -1000 ? fmmcl_status_from_cl(code) : FMMCL_ERROR_INTERNAL;
  }
  return fmmcl_fail(ctx, st, "%s failed: CLBlast status %s (%d)", what, clblast_name(code), code);
}

/* Through the batched routine with one item: CLBlast compiles each routine
 * it meets (~10 s under PoCL), and the batched one is needed anyway. */
fmmcl_status fmmcl_gemm(fmmcl_context ctx, size_t real_size, int trans_a, size_t m, size_t n, size_t k,
                        cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, double beta,
                        cl_mem c, size_t c_off, size_t ldc, cl_event *ev) {
  CLBlastTranspose ta = trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
  CLBlastStatusCode code;
  if (real_size == sizeof(double)) {
    double al = 1, be = beta;
    code = CLBlastDgemmBatched(CLBlastLayoutColMajor, ta, CLBlastTransposeNo, m, n, k, &al, a, &a_off, lda, b,
                               &b_off, ldb, &be, c, &c_off, ldc, 1, &ctx->queue, ev);
  } else {
    float al = 1, be = (float)beta;
    code = CLBlastSgemmBatched(CLBlastLayoutColMajor, ta, CLBlastTransposeNo, m, n, k, &al, a, &a_off, lda, b,
                               &b_off, ldb, &be, c, &c_off, ldc, 1, &ctx->queue, ev);
  }
  return fmmcl_clblast_status(ctx, code,
                              real_size == sizeof(double) ? "CLBlastDgemmBatched" : "CLBlastSgemmBatched");
}

fmmcl_status fmmcl_gemm_batched(fmmcl_context ctx, size_t real_size, size_t m, size_t n, size_t k, cl_mem a,
                                const size_t *a_off, size_t lda, cl_mem b, const size_t *b_off, size_t ldb,
                                cl_mem c, const size_t *c_off, size_t ldc, size_t count, cl_event *ev) {
  CLBlastStatusCode code;
  if (real_size == sizeof(double)) {
    double al[8] = {1, 1, 1, 1, 1, 1, 1, 1}, be[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    code = CLBlastDgemmBatched(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k, al, a,
                               a_off, lda, b, b_off, ldb, be, c, c_off, ldc, count, &ctx->queue, ev);
  } else {
    float al[8] = {1, 1, 1, 1, 1, 1, 1, 1}, be[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    code = CLBlastSgemmBatched(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k, al, a,
                               a_off, lda, b, b_off, ldb, be, c, c_off, ldc, count, &ctx->queue, ev);
  }
  return fmmcl_clblast_status(ctx, code,
                              real_size == sizeof(double) ? "CLBlastDgemmBatched" : "CLBlastSgemmBatched");
}
