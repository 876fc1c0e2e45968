// The product behind the twin's Matmul (OpenBLAS from scipy-openblas32, resolved at load time:
// Python loads it with RTLD_GLOBAL before ours; our own GEMM, twin_gemm.h, for up to 256 rows of C) and
// the cube units that run it.
#ifndef MS_OPS_TWIN_BLAS_H_
#define MS_OPS_TWIN_BLAS_H_

#include <cstddef>

namespace ms_ops {
namespace twin {

// C[m x n] = op(A) * op(B) + beta * C, row-major, beta 0 or 1. Single-threaded: the blocks of a
// launch are the parallelism (it is called from several threads at once; it keeps no shared state).
// With kGemmMinRows..kGemmFewRows rows of C (9..32), up to kGemmRows (256) with kGemmMinCols (16)
// columns or more, or k <= kShallowK (32) and B not transposed, twin_gemm's chain semantics: k is
// cut into blocks of 256 from the call's k = 0; for each block in order, one sequential chain of
// fused multiply-adds (one rounding each) from +0, then added to C (beta 1, or an earlier block) or
// stored (beta 0, first block; C is not read). An element's bits then depend only on its row of
// op(A), its column of op(B), K and beta, not on m, n, its position or the transposes, and a k
// split over calls with beta 1 keeps them when it falls on a block boundary (the per-block partial
// from +0, as OpenBLAS sums, keeps long k's error close to a blocked sum; one chain over all of k
// exceeded the kernels' fp32 bounds). Otherwise OpenBLAS, whose summation order may depend on the
// shape.
void Sgemm(bool transA, bool transB, int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c,
           int ldc, float beta = 0.0f);

// A cube unit, held while a Matmul computes (operand widening, sgemm, store), with fp32 scratch
// of its own that lives as long as the process. There are twice as many units as OpenMP threads
// (the cores): a mixed launch has three threads per group, more than the cores, and unbounded
// every one would run sgemm at once, each with its own packing buffer and scratch resident.
// Twice, not once: with one unit per core, every release hands the core to a sleeping waiter,
// and on this VM that wake-up left a core idle 14% of the cross-entropy gradient's time; with
// two, a released unit's successor is usually already runnable. A unit is never held across a
// SyncAll (a Matmul call does not wait on other blocks), so the bound cannot deadlock a launch.
class CubeUnit {
 public:
  CubeUnit();  // waits for a free unit
  ~CubeUnit();
  CubeUnit(const CubeUnit &) = delete;
  CubeUnit &operator=(const CubeUnit &) = delete;

  // At least `floats` of scratch, slot 0..kSlots-1 (contents not kept across calls).
  float *Scratch(int slot, size_t floats);
  static constexpr int kSlots = 3;

 private:
  int unit_;
};

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_BLAS_H_
