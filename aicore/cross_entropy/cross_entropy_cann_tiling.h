// The Matmul tilings of the cross-entropy gradient kernels from the AscendC tiling API, shared by
// their CANN TilingFuncs (CANN-only: never compiled by the CPU build).
#ifndef MS_OPS_CROSS_ENTROPY_CROSS_ENTROPY_CANN_TILING_H_
#define MS_OPS_CROSS_ENTROPY_CROSS_ENTROPY_CANN_TILING_H_

#include "cross_entropy_common.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"

namespace ms_ops {

inline matmul_tiling::DataType ToCubeType(CeFloat t) {
  return t == CeFloat::kF32 ? matmul_tiling::DataType::DT_FLOAT
         : t == CeFloat::kF16 ? matmul_tiling::DataType::DT_FLOAT16
                              : matmul_tiling::DataType::DT_BF16;
}

// The library's tiling of the product whose shape `shape` gives (in `in` operands, A transposed
// when transA, B when transB, fp32 GM result); false when the API finds none. `shape` is a copy:
// callers pass the tiling that `out` overwrites.
inline bool CubeTiling(const platform_ascendc::PlatformAscendC &ascendc, const AscendC::tiling::TCubeTiling shape,
                       matmul_tiling::DataType in, bool transA, bool transB, AscendC::tiling::TCubeTiling &out) {
  matmul_tiling::MatmulApiTiling api(ascendc);
  api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, in, transA);
  api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, in, transB);
  api.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
  api.SetShape(shape.M, shape.N, shape.Ka);
  api.SetOrgShape(shape.M, shape.N, shape.Ka);
  api.EnableBias(false);
  api.SetBufferSpace(-1, -1, -1);
  if (api.GetTiling(out) == -1) return false;
  out.usedCoreNum = shape.usedCoreNum;
  return true;
}

}  // namespace ms_ops

#endif  // MS_OPS_CROSS_ENTROPY_CROSS_ENTROPY_CANN_TILING_H_
