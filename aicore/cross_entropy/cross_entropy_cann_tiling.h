// The Matmul tilings of the cross-entropy gradient kernels from the AscendC tiling API, shared by
// their CANN TilingFuncs (CANN-only: never compiled by the CPU build).
#ifndef MS_OPS_CROSS_ENTROPY_CROSS_ENTROPY_CANN_TILING_H_
#define MS_OPS_CROSS_ENTROPY_CROSS_ENTROPY_CANN_TILING_H_

#include "cann_cube.h"

namespace ms_ops {

// The library's tiling of the product whose shape `shape` gives (in `in` operands, A transposed
// when transA, B when transB, fp32 GM result); false when the API finds none. `shape` is a copy:
// callers pass the tiling that `out` overwrites.
inline bool CubeTiling(const platform_ascendc::PlatformAscendC &ascendc, const AscendC::tiling::TCubeTiling shape,
                       matmul_tiling::DataType in, bool transA, bool transB, AscendC::tiling::TCubeTiling &out) {
  if (!ApiCubeTiling(ascendc, in, transA, transB, shape.M, shape.N, shape.Ka, out)) return false;
  out.usedCoreNum = shape.usedCoreNum;
  return true;
}

}  // namespace ms_ops

#endif  // MS_OPS_CROSS_ENTROPY_CROSS_ENTROPY_CANN_TILING_H_
