// The twin's own fp32 GEMM, the arithmetic behind Sgemm (twin_blas.h states what it guarantees).
#ifndef MS_OPS_TWIN_GEMM_H_
#define MS_OPS_TWIN_GEMM_H_

namespace ms_ops {
namespace twin {

// Which operand is packed into register-width panels; the other is read in place. kPackB suits
// many rows of C (op(B) packed once per block, reused by every row), kPackA few rows (op(A) is
// tiny, op(B) is streamed once). Both give the same bits; kAuto picks by m.
enum class GemmPlan { kAuto, kPackB, kPackA };

// C[m x n] (row-major, row stride ldc) = op(A) op(B), plus C when `accumulate`.
void Gemm(bool transA, bool transB, int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c,
          int ldc, bool accumulate, GemmPlan plan = GemmPlan::kAuto);

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_GEMM_H_
