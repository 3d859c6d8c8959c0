/* linalg.h — dense linear algebra libfmmcl needs: GEMMs on the device
 * through CLBlast (gemm.c) and a symmetric eigensolver on the host (eigen.c). */
#ifndef FMMCL_LINALG_H
#define FMMCL_LINALG_H

#include "core/internal.h"

/* A CLBlast status as a libfmmcl status, with a message naming the call. */
fmmcl_status fmmcl_clblast_status(fmmcl_context ctx, int code, const char *what);
/* C = alpha op(A) B + beta C, column-major, in single or double by real_size. */
fmmcl_status fmmcl_gemm(fmmcl_context ctx, size_t real_size, int trans_a, size_t m, size_t n, size_t k,
                        cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, double beta,
                        cl_mem c, size_t c_off, size_t ldc, cl_event *ev);
fmmcl_status fmmcl_gemm_batched(fmmcl_context ctx, size_t real_size, size_t m, size_t n, size_t k, cl_mem a,
                                const size_t *a_off, size_t lda, cl_mem b, const size_t *b_off, size_t ldb,
                                cl_mem c, const size_t *c_off, size_t ldc, size_t count, cl_event *ev);
/* Eigen-decomposition of a symmetric d x d matrix a (row-major): eigenvalues
 * in w descending, orthonormal eigenvectors as columns of v (row-major d x d);
 * -1 when out of memory, else 0. */
int fmmcl_symmetric_eigen(int d, const double *a, double *w, double *v);

#endif /* FMMCL_LINALG_H */
