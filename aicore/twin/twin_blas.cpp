#include "twin_blas.h"

#include <mutex>
#include <vector>

extern "C" {
void scipy_cblas_sgemm(int order, int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc);
void scipy_openblas_set_num_threads(int n);
}

namespace ms_ops {
namespace twin {
namespace {
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
}

void Sgemm(bool transA, bool transB, int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c,
           int ldc, float beta) {
  static std::once_flag once;
  std::call_once(once, [] { scipy_openblas_set_num_threads(1); });
  scipy_cblas_sgemm(kRowMajor, transA ? kTrans : kNoTrans, transB ? kTrans : kNoTrans, m, n, k, 1.0f, a, lda, b, ldb,
                    beta, c, ldc);
}

float *Scratch(int slot, size_t floats) {
  static thread_local std::vector<float> buffers[4];
  std::vector<float> &v = buffers[slot];
  if (v.size() < floats) v.resize(floats);
  return v.data();
}

}  // namespace twin
}  // namespace ms_ops
