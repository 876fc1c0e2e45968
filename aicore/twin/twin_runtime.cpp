#include "twin_runtime.h"

#include <omp.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "platform.h"

namespace ms_ops {
namespace twin {

thread_local Block *tlsBlock = nullptr;

Block &Current() {
  if (tlsBlock == nullptr) throw Violation("twin", "AscendC API called outside ms_ops::twin::Launch");
  return *tlsBlock;
}

void Fail(const char *call, const std::string &what) { throw Violation(call, what); }

void Tolerated(const char *call, const std::string &what) {
  Block &b = Current();
  if (b.strict) Fail(call, what + " (strict mode)");
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(std::string(b.kernel) + '\0' + call).second) return;
  std::fprintf(stderr,
               "ms_ops %s: block %lld: %s: warning: %s; the NPU rounds down silently "
               "(MS_OPS_TWIN_STRICT=1 makes this an error)\n",
               b.kernel, static_cast<long long>(b.idx), call, what.c_str());
  std::fflush(stderr);
}

bool Strict() {
  const char *v = std::getenv("MS_OPS_TWIN_STRICT");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

namespace {

struct FreeDeleter {
  void operator()(uint8_t *p) const { std::free(p); }
};

// One UB arena per OpenMP thread, reused by every block that thread runs.
uint8_t *ThreadArena() {
  static thread_local std::unique_ptr<uint8_t, FreeDeleter> arena;
  if (!arena) {
    void *p = std::aligned_alloc(64, AlignUp(kAtlasA2.ubSize, 64));
    if (p == nullptr) throw std::bad_alloc();
    arena.reset(static_cast<uint8_t *>(p));
  }
  return arena.get();
}

void Report(const char *kernel, int64_t block, const char *call, const char *what) {
  std::fprintf(stderr, "ms_ops %s: block %lld: %s: %s\n", kernel, static_cast<long long>(block), call, what);
  std::fflush(stderr);
}

}  // namespace

int Launch(const char *kernel, uint32_t blockDim, uint64_t tilingKey, const std::function<void()> &body) {
  if (blockDim == 0) {
    std::fprintf(stderr, "ms_ops %s: Launch: blockDim is 0\n", kernel);
    std::fflush(stderr);
    return 1;
  }
  const bool strict = Strict();
  std::atomic<bool> failed{false};
  const int threads = static_cast<int>(std::min<int64_t>(blockDim, omp_get_max_threads()));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t b = 0; b < static_cast<int64_t>(blockDim); ++b) {
    if (failed.load(std::memory_order_relaxed)) continue;
    Block *outer = tlsBlock;
    Block blk{kernel, b, blockDim, tilingKey, strict, nullptr, 0, nullptr};
    try {
      blk.ub = ThreadArena();
      // Stale UB contents on the NPU: 0xFF bytes read as NaN / -1, so a kernel that reads UB
      // it never wrote gets visibly wrong results instead of lucky zeros.
      std::memset(blk.ub, 0xFF, kAtlasA2.ubSize);
      tlsBlock = &blk;
      body();
    } catch (const Violation &v) {
      if (!failed.exchange(true)) Report(kernel, b, v.call.c_str(), v.what());
    } catch (const std::exception &e) {
      if (!failed.exchange(true)) Report(kernel, b, "exception", e.what());
    } catch (...) {
      if (!failed.exchange(true)) Report(kernel, b, "exception", "unknown exception");
    }
    tlsBlock = outer;
#if defined(__SSE2__)
    // Streaming stores of DataCopy to GM (twin_copy.h) become visible to other threads here.
    _mm_sfence();
#endif
  }
  return failed.load() ? 1 : 0;
}

}  // namespace twin
}  // namespace ms_ops
