// The CPU-debug entry points CANN's kernel tests use (tikicpulib.h of a CANN install), run on the
// twin: GmAlloc/GmFree for global memory, ICPU_SET_TILING_KEY and ICPU_RUN_KF to launch a kernel
// over blockDim blocks (groups in MIX_MODE). Every block runs at once, so kernels calling SyncAll
// work. A twin violation is printed as `ms_ops <kernel>: block <b>: <call>: <what>` on stderr and
// counted in IcpuFailures(), so a test harness can tell a failed launch from a passing one.
#ifndef MS_OPS_TWIN_TIKICPULIB_H_
#define MS_OPS_TWIN_TIKICPULIB_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernel_operator.h"
#include "twin_runtime.h"

// What AscendC::SetKernelMode selects: the core types a launch runs on.
enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE, MIX_AIC_1_1 };

namespace AscendC {

// Global memory: zero-initialised and 64-byte aligned, as the CPU-debug allocator gives it.
inline void *GmAlloc(size_t size) {
  void *p = std::aligned_alloc(64, (size + 63) / 64 * 64);
  if (p != nullptr) std::memset(p, 0, size);
  return p;
}
inline void GmFree(void *ptr) { std::free(ptr); }

inline KernelMode &IcpuKernelMode() {
  static KernelMode mode = KernelMode::AIV_MODE;
  return mode;
}
inline void SetKernelMode(KernelMode mode) { IcpuKernelMode() = mode; }

inline uint64_t &IcpuTilingKey() {
  static uint64_t key = 0;
  return key;
}
inline int &IcpuFailures() {
  static int failures = 0;
  return failures;
}

// MIX_MODE runs blockDim groups of one AIC and two AIVs (ms_ops::twin::LaunchMixed); the other
// modes blockDim vector cores.
template <class F>
inline void IcpuRun(const char *kernel, uint32_t blockDim, F body) {
  const int status = IcpuKernelMode() == KernelMode::MIX_MODE
                         ? ::ms_ops::twin::LaunchMixed(kernel, blockDim, IcpuTilingKey(), body)
                         : ::ms_ops::twin::LaunchCooperative(kernel, blockDim, IcpuTilingKey(), body);
  if (status != 0) {
    std::fprintf(stderr, "ms_ops %s\n", ::ms_ops::twin::LastFailure().c_str());
    ++IcpuFailures();
  }
}

}  // namespace AscendC

#define ICPU_SET_TILING_KEY(key) (::AscendC::IcpuTilingKey() = static_cast<uint64_t>(key))
#define ICPU_RUN_KF(func, blockDim, ...) ::AscendC::IcpuRun(#func, (blockDim), [&] { func(__VA_ARGS__); })

#endif  // MS_OPS_TWIN_TIKICPULIB_H_
