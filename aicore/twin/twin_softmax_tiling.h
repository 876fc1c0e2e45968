// The kernel-side tilings of the softmax family, as CANN's kernel_tiling/kernel_tiling.h declares
// them: global structs (also AscendC::SoftMaxTiling and AscendC::tiling::...), so that a tiling-data
// definition can hold one (TILING_DATA_FIELD_DEF_STRUCT(SoftMaxTiling, ...)). The twin reads srcM
// and srcK (host: SoftMaxTilingFunc, LogSoftMaxTilingFunc).
#ifndef MS_OPS_TWIN_SOFTMAX_TILING_H_
#define MS_OPS_TWIN_SOFTMAX_TILING_H_

#include <cstdint>

struct SoftMaxTiling {
  uint32_t srcM, srcK, srcSize, outMaxM, outMaxK, outMaxSize, splitM, splitK, splitSize, reduceM, reduceK, reduceSize,
      rangeM, tailM, tailSplitSize, tailReduceSize;
};

// The fields of SoftMaxTiling.
struct LogSoftMaxTiling {
  uint32_t srcM, srcK, srcSize, outMaxM, outMaxK, outMaxSize, splitM, splitK, splitSize, reduceM, reduceK, reduceSize,
      rangeM, tailM, tailSplitSize, tailReduceSize;
};

namespace AscendC {
using ::LogSoftMaxTiling;
using ::SoftMaxTiling;
namespace tiling {
using ::LogSoftMaxTiling;
using ::SoftMaxTiling;
}  // namespace tiling
}  // namespace AscendC

#endif  // MS_OPS_TWIN_SOFTMAX_TILING_H_
