// Kernel-language basics of the twin: the CCE qualifiers, the scalar types half and bfloat16_t,
// the enums of the AscendC API, block index/count and tiling access.
#ifndef MS_OPS_TWIN_TYPES_H_
#define MS_OPS_TWIN_TYPES_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "platform.h"
#include "twin_runtime.h"

#define __aicore__
#define __global__
// The kernel kinds of CANN's newer entry qualifiers (__global__ __cube__ / __vector__ / __mix__(1, 2)):
// the launch, not the qualifier, says which cores a twin kernel runs on.
#define __cube__
#define __vector__
#define __mix__(...)
// Marks the workspace argument a Matmul kernel's AIC/AIV messaging uses (CANN's KFC): no meaning here.
#define __kfc_workspace__
#define __gm__
#define GM_ADDR __gm__ uint8_t *
// The other address-space qualifiers of the device compiler (UB, L1, L0A/B/C, fixpipe buffer).
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__

#define GET_TILING_DATA_WITH_STRUCT(Type, var, tiling) \
  Type var;                                            \
  std::memcpy(&var, reinterpret_cast<const void *>(tiling), sizeof(Type))
// A CANN build compiles a kernel once per tiling key with TILING_KEY_VAR defined as that key, so
// TILING_KEY_IS is a constant there (kernels test it with if constexpr). Built without it (our
// kernels), the twin compares with the key of the running launch.
#ifdef TILING_KEY_VAR
#define TILING_KEY_IS(k) (TILING_KEY_VAR == (k))
#else
#define TILING_KEY_IS(k) (::ms_ops::twin::Current().tilingKey == static_cast<uint64_t>(k))
#endif
// The kernel types a CANN build accepts; another token is a compile error here as it is there.
enum KernelMetaType : uint8_t {
  KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_0, KERNEL_TYPE_MIX_AIC_1_1,
  KERNEL_TYPE_MIX_AIC_1_2, KERNEL_TYPE_AICORE, KERNEL_TYPE_VECTORCORE, KERNEL_TYPE_MIX_AICORE,
  KERNEL_TYPE_MIX_VECTOR_CORE, KERNEL_TYPE_MAX
};
// As in CANN's CPU debug, an AIC-only kernel runs its blocks as cube cores (ASCEND_IS_AIC).
#define KERNEL_TASK_TYPE_DEFAULT(type)                                                                   \
  static_assert(std::is_same_v<decltype(type), KernelMetaType> && (type) != KERNEL_TYPE_MAX,             \
                "KERNEL_TASK_TYPE_DEFAULT takes one of the KERNEL_TYPE_* kernel types");                 \
  if ((type) == KERNEL_TYPE_AIC_ONLY) ::ms_ops::twin::RunAsAic()
// The kernel type of one tiling key: the same rule.
#define KERNEL_TASK_TYPE(key, type)                                                                      \
  static_assert(std::is_same_v<decltype(type), KernelMetaType> && (type) != KERNEL_TYPE_MAX,             \
                "KERNEL_TASK_TYPE takes one of the KERNEL_TYPE_* kernel types")

using half = _Float16;

// bfloat16 storage: float -> bf16 rounds to nearest even and keeps NaN a (quiet) NaN.
struct bfloat16_t {
  uint16_t bits;
  bfloat16_t() = default;
  bfloat16_t(float f) : bits(FromFloat(f)) {}
  operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static uint16_t FromFloat(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
  }
};

// The CCE pipes and event ids, global enums as in the device compiler.
enum pipe_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_FIX };
enum event_t : int32_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

namespace AscendC {

enum class TPosition : uint8_t {
  GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM,
  C2PIPE2GM, C2PIPE2LOCAL, MAX
};
using QuePosition = TPosition;

enum class HardEvent : uint8_t {
  MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1,
  MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S, S_MTE2,
  MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MTE1_FIX, FIX_MTE1, FIX_FIX, MAX
};
using TEventID = int8_t;

// The 4-bit integer type of quantising kernels (two to a byte). Declared so that such kernels
// compile, as their other dtypes' paths run; the twin does not model its half-byte addressing, so
// a tensor of it refuses to be made (twin_tensor.h) rather than run on wrong offsets.
struct int4b_t {
  uint8_t packed;
};

constexpr int32_t ONE_BLK_SIZE = 32;           // bytes of a UB data block
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;  // bytes one vector instruction repeat handles

enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

// The mask argument of a call made with isSetMask = false (the mask register is used instead).
constexpr uint64_t MASK_PLACEHOLDER = 0;
constexpr uint64_t MASK_PLACEHOLDER_LIST[2] = {0, 0};
constexpr uint8_t DEFAULT_BLK_NUM = 8;  // data blocks of one repeat
constexpr uint8_t DEFAULT_BLK_STRIDE = 1;
constexpr uint8_t DEFAULT_REPEAT_STRIDE = 8;
constexpr int32_t MAX_REPEAT_TIMES = 255;

enum class CacheMode : uint8_t { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL, CACHE_MODE_LAST, CACHE_MODE_PERSISTENT };

// The core type of the running block: always an AIV, except the AIC of a mixed launch.
#define ASCEND_IS_AIV (::ms_ops::twin::Current().coreType == ::ms_ops::twin::kAiv)
#define ASCEND_IS_AIC (::ms_ops::twin::Current().coreType == ::ms_ops::twin::kAic)

// The kernel-side assertion: a false condition stops the block with a violation naming it.
#define ASSERT(expr) \
  ((expr) ? static_cast<void>(0) : ::ms_ops::twin::Fail("ASSERT", "assertion failed: " #expr))

inline float ToFloat(const bfloat16_t &v) { return static_cast<float>(v); }
inline bfloat16_t ToBfloat16(const float &v) { return bfloat16_t(v); }

inline int64_t GetBlockIdx() { return ::ms_ops::twin::Current().idx; }
inline int64_t GetBlockNum() { return ::ms_ops::twin::Current().num; }
// The AIV's index in its AIC + 2 AIV group in a mixed launch (0 on the AIC and in other launches).
inline int64_t GetSubBlockIdx() { return ::ms_ops::twin::Current().subIdx; }
// AIVs per group: 2 in a mixed launch, 1 where every block is a core of its own.
inline int64_t GetTaskRation() { return ::ms_ops::twin::Current().ratio; }
// The twin reserves no system workspace: the user workspace is the whole workspace argument.
// SetSysWorkspace records the workspace a kernel hands it (CANN's CPU build has kernels do that
// at entry), which GetSysWorkSpacePtr then returns (null before).
inline void SetSysWorkspace(GM_ADDR workspace) { ::ms_ops::twin::Current().sysWorkspace = workspace; }
inline GM_ADDR GetSysWorkSpacePtr() { return static_cast<GM_ADDR>(::ms_ops::twin::Current().sysWorkspace); }
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) { return workspace; }

namespace twin_detail {

[[noreturn]] inline void Fail(const char *call, const std::string &what) { ::ms_ops::twin::Fail(call, what); }
inline std::string Str(uint64_t v) { return std::to_string(v); }

}  // namespace twin_detail
}  // namespace AscendC

// Kernel entries call the workspace accessors unqualified, as CANN's headers declare them.
using AscendC::GetSysWorkSpacePtr;
using AscendC::GetUserWorkspace;
using AscendC::SetSysWorkspace;

#endif  // MS_OPS_TWIN_TYPES_H_
