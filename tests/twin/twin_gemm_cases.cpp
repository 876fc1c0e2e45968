// The twin's GEMMs called directly (tests/test_twin_gemm.py, benchmarks/bench_twin_gemm.py).
#include <cstdint>
#include <vector>

#include "twin_bgemm.h"
#include "twin_gemm.h"

#define TWIN_EXPORT extern "C" __attribute__((visibility("default")))

// `repeats` calls back to back, so that a benchmark times the product and not ctypes.
TWIN_EXPORT int twin_gemm(int transA, int transB, int m, int n, int k, const float *a, int lda, const float *b,
                          int ldb, float *c, int ldc, int accumulate, int repeats) {
  for (int i = 0; i < repeats; ++i)
    ms_ops::twin::Gemm(transA != 0, transB != 0, m, n, k, a, lda, b, ldb, c, ldc, accumulate != 0);
  return 0;
}

// 1 when this build has the twin's bf16 GEMM (twin_bgemm.h), else 0.
TWIN_EXPORT int twin_bgemm_available() { return ms_ops::twin::kBgemm ? 1 : 0; }

// The bf16 GEMM's instruction: `request` -1 asks, 0 chooses VDPBF16PS, 1 AMX where it can
// (twin_bgemm.h); returns the one in use.
TWIN_EXPORT int twin_bgemm_amx(int request) { return ms_ops::twin::BgemmAmx(request); }

// The bf16 GEMM on bf16 bit patterns, `repeats` times; -1 when the build has none.
TWIN_EXPORT int twin_bgemm(int transA, int transB, int m, int n, int k, const uint16_t *a, int lda, const uint16_t *b,
                           int ldb, float *c, int ldc, int accumulate, int repeats) {
  if constexpr (!ms_ops::twin::kBgemm) {
    return -1;
  } else {
    static thread_local std::vector<uint32_t> packA(ms_ops::twin::kBgemmPackAWords),
        packB(ms_ops::twin::kBgemmPackBWords);
    for (int i = 0; i < repeats; ++i)
      ms_ops::twin::Bgemm(transA != 0, transB != 0, m, n, k, a, lda, b, ldb, c, ldc, accumulate != 0, packA.data(),
                          packB.data());
    return 0;
  }
}
