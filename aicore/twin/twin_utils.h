// Small pieces of AscendC's kernel utilities that public CANN kernels use: the core-type constants,
// a few size constants, the unsigned ceiling helpers, Trap, the SuperKernel ordering calls, the
// AscendCUtils mask and size helpers, the kernel assertions assert(...) / ascendc_assert(...), and
// the device variables block_idx, block_num and g_coreType.
#ifndef MS_OPS_TWIN_UTILS_H_
#define MS_OPS_TWIN_UTILS_H_

#include <cstdint>
#include <cstdio>

#include "twin_mask.h"
#include "twin_types.h"

namespace AscendC {

// The values g_coreType takes (MIX: a kernel built for both core types).
constexpr int32_t MIX = 0;
constexpr int32_t AIC = 1;
constexpr int32_t AIV = 2;

constexpr int32_t ONE_BYTE_BIT_SIZE = 8;
constexpr int32_t DEFAULT_C0_SIZE = 32;  // bytes of a C0 group (one data block)
constexpr uint32_t ONE_BLK_FLOAT_NUM = 8;  // floats of one data block
// Atlas A2's memory sizes as CANN's kernel constants give them (L1 less what the Matmul messaging
// keeps, UB's vector-local part below its temporary area).
#ifndef KFC_L1_RESERVER_SIZE
#define KFC_L1_RESERVER_SIZE 128
#endif
constexpr uint32_t TOTAL_UB_SIZE = 192 * 1024;
constexpr int32_t TOTAL_VEC_LOCAL_SIZE = 184 * 1024;
constexpr uint32_t TMP_UB_OFFSET = 184 * 1024;
constexpr uint32_t TMP_UB_SIZE = 8 * 1024;
constexpr uint32_t TOTAL_L1_SIZE = 512 * 1024 - KFC_L1_RESERVER_SIZE;
constexpr uint32_t TOTAL_L0A_SIZE = 64 * 1024;
constexpr uint32_t TOTAL_L0B_SIZE = 64 * 1024;
constexpr uint32_t TOTAL_L0C_SIZE = 128 * 1024;
constexpr uint32_t BRCB_BROADCAST_NUMBER = 8;  // source elements of one Brcb repeat

constexpr uint32_t DivCeil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
constexpr uint32_t AlignUp(uint32_t a, uint32_t b) { return DivCeil(a, b) * b; }
constexpr uint32_t ConstCeil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
inline uint32_t Ceil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

#define ASCEND_IS_NOT_AIC (!ASCEND_IS_AIC)
#define ASCEND_IS_NOT_AIV (!ASCEND_IS_AIV)

constexpr int16_t GetDataBlockSizeInBytes() { return ONE_BLK_SIZE; }

// A kernel's deliberate stop (the NPU raises an exception): the launch fails, the process lives on.
[[noreturn]] inline void Trap() { twin_detail::Fail("Trap", "the kernel trapped"); }

// SuperKernel fusion's ordering between fused operators; a twin launch runs one kernel alone.
template <pipe_t AIV_PIPE = PIPE_MTE3, pipe_t AIC_PIPE = PIPE_FIX, bool FORCE = false>
inline void SetNextTaskStart() {}
template <bool FORCE = false>
inline void WaitPreTaskEnd() {}

class AscendCUtils {
 public:
  static int32_t GetBitSize(int32_t byteSize) { return byteSize * ONE_BYTE_BIT_SIZE; }
  static int32_t GetC0Size() { return DEFAULT_C0_SIZE; }
  static int32_t GetC0Count(const int32_t dtypeSize) {
    if (dtypeSize == 0) twin_detail::Fail("AscendCUtils::GetC0Count", "dtypeSize is 0");
    return GetC0Size() / dtypeSize;
  }
  static int32_t GetDefaultBlockNum() { return DEFAULT_BLK_NUM; }

  // The vector mask register (lanes 64..127 in maskHigh); a cube core has none, so it is left.
  template <typename T, bool isSetMask = true>
  static void SetMask(const uint64_t &maskHigh, const uint64_t &maskLow) {
    if (isSetMask && !ASCEND_IS_AIC) SetVectorMask<T>(maskHigh, maskLow);
  }
  // The first len lanes (all of them from 128 on, whatever T's lanes per repeat).
  template <typename T, bool isSetMask = true>
  static void SetMask(int32_t len) {
    if (!isSetMask || ASCEND_IS_AIC) return;
    if (len < 0) twin_detail::Fail("AscendCUtils::SetMask", "negative len " + std::to_string(len));
    uint64_t bits[2];
    twin_detail::FirstLanes(static_cast<uint32_t>(len), bits);
    SetMask<T>(bits[1], bits[0]);
  }
  template <typename T>
  static void SetMaskCount() {
    ::AscendC::SetMaskCount();
  }
  template <typename T>
  static void SetMaskNorm() {
    ::AscendC::SetMaskNorm();
  }
  template <bool isSetMask = true>
  static void ResetMask() {
    if (isSetMask && !ASCEND_IS_AIC) ::AscendC::ResetMask();
  }
};

}  // namespace AscendC

// CANN's kernel assertions, assert(expr) or assert(expr, fmt, args...) and ascendc_assert the
// same: a false expr stops the block with a violation (the launch fails, the process lives on),
// where the NPU would trap. Compiled out under NDEBUG, as CANN's are.
#undef assert
#undef ascendc_assert
#ifdef NDEBUG
#define assert(...) static_cast<void>(0)
#define ascendc_assert(...) static_cast<void>(0)
#else
#define MS_OPS_TWIN_ASSERT_FIRST(expr, ...)                                                              \
  (static_cast<bool>(expr) ? static_cast<void>(0)                                                        \
                           : ::ms_ops::twin::Fail("assert", "assertion failed: " #expr " (" __FILE__ \
                                                            ":" MS_OPS_TWIN_ASSERT_LINE(__LINE__) ")"))
#define MS_OPS_TWIN_ASSERT_LINE(n) MS_OPS_TWIN_ASSERT_STR(n)
#define MS_OPS_TWIN_ASSERT_STR(n) #n
#define assert(...) MS_OPS_TWIN_ASSERT_FIRST(__VA_ARGS__, 0)
#define ascendc_assert(...) MS_OPS_TWIN_ASSERT_FIRST(__VA_ARGS__, 0)
#endif

// CANN's internal checks as its kernels and samples use them: KERNEL_LOG(level, fmt, ...) prints on
// stderr; ASCENDC_ASSERT(cond, behavior) runs behavior (a log, usually) and stops the block with a
// violation when cond is false, as CANN's CPU build aborts there.
enum TwinKernelLogLevel { KERNEL_DEBUG = 0, KERNEL_INFO, KERNEL_WARN, KERNEL_ERROR };
inline const char *TwinLogLevelName(int level) {
  static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  return level >= KERNEL_DEBUG && level <= KERNEL_ERROR ? names[level] : "LOG";
}
#define KERNEL_LOG(level, fmt, ...) std::fprintf(stderr, "[%s] " fmt "\n", TwinLogLevelName(level), ##__VA_ARGS__)
#define ASCENDC_ASSERT(cond, behavior)                                                       \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      behavior;                                                                              \
      ::ms_ops::twin::Fail("ASCENDC_ASSERT", "assertion failed: " #cond);                   \
    }                                                                                        \
  } while (0)

// The device compiler's block_idx, block_num and g_coreType (the running core's AIC / AIV; a
// device build compiles each kernel once per core type), kept per block by CANN's CPU build too:
// objects that read the running block, so that a kernel's own variable of one of these names
// still hides them.
struct TwinBlockIdx {
  operator int64_t() const { return ::AscendC::GetBlockIdx(); }
};
struct TwinBlockNum {
  operator int64_t() const { return ::AscendC::GetBlockNum(); }
};
struct TwinCoreType {
  operator int32_t() const { return ASCEND_IS_AIC ? ::AscendC::AIC : ::AscendC::AIV; }
};
inline constexpr TwinBlockIdx block_idx{};
inline constexpr TwinBlockNum block_num{};
inline constexpr TwinCoreType g_coreType{};

#endif  // MS_OPS_TWIN_UTILS_H_
