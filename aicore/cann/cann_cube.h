// The Matmul tilings of the CANN TilingFuncs from the AscendC tiling API (CANN-only: never
// compiled by the CPU build, which uses the pure tilings' SingleShapeCubeTiling).
#ifndef MS_OPS_CANN_CANN_CUBE_H_
#define MS_OPS_CANN_CANN_CUBE_H_

#include <cstdint>

#include "register/op_impl_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"

namespace ms_ops {

// The cube's operand type of a float dtype (the OpDefs admit only fp32, fp16 and bf16).
inline matmul_tiling::DataType CubeType(ge::DataType d) {
  return d == ge::DT_FLOAT     ? matmul_tiling::DataType::DT_FLOAT
         : d == ge::DT_FLOAT16 ? matmul_tiling::DataType::DT_FLOAT16
                               : matmul_tiling::DataType::DT_BF16;
}

// The API's tiling of C[m, n] = op(A) op(B) with K = k: A of type `in` in GM, B of type `in` at
// bPos (GM, or VECOUT for B in UB), A transposed when transA, B when transB, and an fp32 C at cPos
// (GM, or VECIN for C into UB), all ND, no bias, in matrices of orgM x orgN x orgK (kernels that
// set the org shapes at run time pass m, n, k). False when the API finds none.
inline bool ApiCubeTiling(const platform_ascendc::PlatformAscendC &ascendc, matmul_tiling::DataType in, bool transA,
                          bool transB, int64_t m, int64_t n, int64_t k, int64_t orgM, int64_t orgN, int64_t orgK,
                          TCubeTiling &out, matmul_tiling::TPosition cPos = matmul_tiling::TPosition::GM,
                          matmul_tiling::TPosition bPos = matmul_tiling::TPosition::GM) {
  matmul_tiling::MatmulApiTiling api(ascendc);
  api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, in, transA);
  api.SetBType(bPos, matmul_tiling::CubeFormat::ND, in, transB);
  api.SetCType(cPos, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
  api.EnableBias(false);
  api.SetOrgShape(orgM, orgN, orgK);
  api.SetShape(m, n, k);
  api.SetBufferSpace(-1, -1, -1);
  return api.GetTiling(out) != -1;
}

inline bool ApiCubeTiling(const platform_ascendc::PlatformAscendC &ascendc, matmul_tiling::DataType in, bool transA,
                          bool transB, int64_t m, int64_t n, int64_t k, TCubeTiling &out,
                          matmul_tiling::TPosition cPos = matmul_tiling::TPosition::GM,
                          matmul_tiling::TPosition bPos = matmul_tiling::TPosition::GM) {
  return ApiCubeTiling(ascendc, in, transA, transB, m, n, k, m, n, k, out, cPos, bPos);
}

}  // namespace ms_ops

#endif  // MS_OPS_CANN_CANN_CUBE_H_
