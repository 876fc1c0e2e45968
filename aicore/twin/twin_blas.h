// The BLAS behind the twin's Matmul: sgemm from scipy-openblas32, resolved at load time (Python
// loads that library with RTLD_GLOBAL before ours).
#ifndef MS_OPS_TWIN_BLAS_H_
#define MS_OPS_TWIN_BLAS_H_

#include <cstddef>

namespace ms_ops {
namespace twin {

// C[m x n] = op(A) * op(B) + beta * C, row-major. OpenBLAS runs single-threaded: the blocks of a
// launch are the parallelism (it is called from several threads at once).
void Sgemm(bool transA, bool transB, int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c,
           int ldc, float beta = 0.0f);

// Per-thread fp32 scratch for operand conversion; slot i keeps its own storage until the thread ends.
float *Scratch(int slot, size_t floats);

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_BLAS_H_
