// The twin's own fp32 GEMM for products with few rows of C (twin_blas.h says when Sgemm takes it
// and what it guarantees).
#ifndef MS_OPS_TWIN_GEMM_H_
#define MS_OPS_TWIN_GEMM_H_

namespace ms_ops {
namespace twin {

// Rows of C for which Sgemm takes Gemm rather than OpenBLAS. OpenBLAS packs op(B) on every call,
// which costs as much as the product when C has a few rows (16 x 128 x 576: 24 GFLOP/s of its
// 71); Gemm reads op(B) in place: with B transposed it packs op(A), the small one, into 16-lane
// panels; otherwise it builds C's rows straight from B's rows. With 8 rows or fewer, half a
// panel or more is padding, and OpenBLAS was the faster (8 x 1024 x 128: 0.67x; measured before
// the row path, which has no panels).
constexpr int kGemmMinRows = 9, kGemmRows = 32;
// Depths k up to which Sgemm takes Gemm for any number of rows when B is not transposed: C's rows
// come straight from B's (a rank-k update), where OpenBLAS first clears C and then packs.
constexpr int kShallowK = 32;

// C[m x n] (row-major, row stride ldc) = op(A) op(B), plus C when `accumulate`; any m, fastest
// for kGemmMinRows <= m <= kGemmRows, or k <= kShallowK with B not transposed.
void Gemm(bool transA, bool transB, int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c,
          int ldc, bool accumulate);

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_GEMM_H_
