// The twin's GEMM called directly (tests/test_twin_gemm.py, benchmarks/bench_twin_gemm.py).
#include "twin_gemm.h"

#define TWIN_EXPORT extern "C" __attribute__((visibility("default")))

// `repeats` calls back to back, so that a benchmark times the product and not ctypes.
TWIN_EXPORT int twin_gemm(int transA, int transB, int m, int n, int k, const float *a, int lda, const float *b,
                          int ldb, float *c, int ldc, int accumulate, int repeats) {
  for (int i = 0; i < repeats; ++i)
    ms_ops::twin::Gemm(transA != 0, transB != 0, m, n, k, a, lda, b, ldb, c, ldc, accumulate != 0);
  return 0;
}
