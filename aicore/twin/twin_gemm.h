// The twin's own fp32 GEMM for the kernels' cube products, up to a few hundred rows of C
// (twin_blas.h says when Sgemm takes it and what it guarantees).
#ifndef MS_OPS_TWIN_GEMM_H_
#define MS_OPS_TWIN_GEMM_H_

namespace ms_ops {
namespace twin {

// Rows of C for which Sgemm takes Gemm rather than OpenBLAS. OpenBLAS packs op(B) on every call,
// which costs as much as the product when C has a few rows (16 x 128 x 576: 24 GFLOP/s of its
// 71); Gemm reads op(B) in place: with B transposed it packs op(A) into 16- or 32-lane panels;
// otherwise it builds C's rows from B's rows (copied first from 64 rows of C). With 8 rows or
// fewer, half a panel or more is padding, and OpenBLAS was the faster (8 x 1024 x 128: 0.67x;
// measured before the row path, which has no panels). Up to 256 rows (the attention kernels'
// tiles) Gemm is the faster, on one Sapphire Rapids-class core 1.05-1.16x OpenBLAS on flash
// attention's shapes whatever the operands' row strides; on square products of 1024 and more
// it is 0.75x (it blocks for the caches, but reads op(B)'s lines in place).
constexpr int kGemmMinRows = 9, kGemmFewRows = 32, kGemmRows = 256;
// Columns of C from which Sgemm takes Gemm for more than kGemmFewRows rows. OpenBLAS turns a
// product with one column into a matrix-vector one, whose sums over k run in vector lanes: a
// chain of FMAs over k (ours) has about twice that error, which the kernels' fp32 bounds (two
// naive errors) do not leave room for (the linear attention gradient's 65-row dq with d = 1).
constexpr int kGemmMinCols = 16;
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
