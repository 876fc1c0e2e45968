#include "twin_blas.h"

#include <omp.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "twin_gemm.h"
#include "twin_memory.h"

extern "C" {
void scipy_cblas_sgemm(int order, int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc);
void scipy_openblas_set_num_threads(int n);
}

namespace ms_ops {
namespace twin {
namespace {
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

struct Unit {
  Pages scratch[CubeUnit::kSlots];
};

// The free units and their scratch; created on first use, two per OpenMP thread
// (OMP_NUM_THREADS, else the cores).
class Units {
 public:
  Units() : units_(2 * std::max(1, omp_get_max_threads())) {
    for (int i = static_cast<int>(units_.size()) - 1; i >= 0; --i) free_.push_back(i);
  }
  int Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty(); });
    const int u = free_.back();
    free_.pop_back();
    return u;
  }
  void Release(int u) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(u);
    }
    cv_.notify_one();
  }
  Unit &operator[](int u) { return units_[u]; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Unit> units_;
  std::vector<int> free_;
};

Units &AllUnits() {
  static Units *units = new Units();  // never destroyed: blocks may still run at exit
  return *units;
}

}  // namespace

void Sgemm(bool transA, bool transB, int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c,
           int ldc, float beta) {
  if ((m >= kGemmMinRows && m <= kGemmFewRows) || (m > kGemmFewRows && m <= kGemmRows && n >= kGemmMinCols) ||
      (k <= kShallowK && !transB))
    return Gemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc, beta != 0.0f);
  static std::once_flag once;
  std::call_once(once, [] { scipy_openblas_set_num_threads(1); });
  scipy_cblas_sgemm(kRowMajor, transA ? kTrans : kNoTrans, transB ? kTrans : kNoTrans, m, n, k, 1.0f, a, lda, b, ldb,
                    beta, c, ldc);
}

CubeUnit::CubeUnit() : unit_(AllUnits().Acquire()) {}

CubeUnit::~CubeUnit() { AllUnits().Release(unit_); }

float *CubeUnit::Scratch(int slot, size_t floats) {
  Pages &p = AllUnits()[unit_].scratch[slot];
  p.Reserve(floats * sizeof(float));
  return p.as<float>();
}

}  // namespace twin
}  // namespace ms_ops
