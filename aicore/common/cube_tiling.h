// TCubeTiling, the Matmul API's tiling struct, for the tiling-data headers that embed it (read by
// both the host tiling functions and the kernels).
//
// A CANN build takes it from kernel_tiling/kernel_tiling.h, which the toolkit generates from its
// high-level API tiling definitions (AscendC::tiling::TCubeTiling, also exported to the global
// namespace). Only the twin build has aicore/twin, and so twin_cube_tiling.h, on its include path:
// its presence selects the twin, and a CANN build missing kernel_tiling.h fails here rather than
// quietly taking the twin's struct.
#ifndef MS_OPS_COMMON_CUBE_TILING_H_
#define MS_OPS_COMMON_CUBE_TILING_H_

#if __has_include("twin_cube_tiling.h")
#include "twin_cube_tiling.h"
#else
#include "kernel_tiling/kernel_tiling.h"
#endif

#include <cstdint>

// The Matmul tiling of one m x n x k product per core (single shape = whole shape; tails set smaller
// single shapes at run time) with base tiles baseM x baseN x baseK, which must fit L0A/L0B (64 KiB)
// and L0C (128 KiB), L1 depth `depth` for A and B, and double-buffered L0A/L0B. The twin runs with
// it; the CANN TilingFuncs may replace it with the tiling API's for the same shapes.
inline TCubeTiling SingleShapeCubeTiling(uint32_t blockDim, int64_t m, int64_t n, int64_t k, int32_t baseM,
                                         int32_t baseN, int32_t baseK, int32_t depth) {
  TCubeTiling mm{};
  mm.usedCoreNum = static_cast<int32_t>(blockDim);
  mm.M = mm.singleCoreM = static_cast<int32_t>(m);
  mm.N = mm.singleCoreN = static_cast<int32_t>(n);
  mm.Ka = mm.Kb = mm.singleCoreK = static_cast<int32_t>(k);
  mm.baseM = baseM;
  mm.baseN = baseN;
  mm.baseK = baseK;
  mm.depthA1 = mm.depthB1 = depth;
  mm.stepM = mm.stepN = mm.stepKa = mm.stepKb = 1;
  mm.dbL0A = mm.dbL0B = 2;
  mm.dbL0C = 1;
  return mm;
}

#endif  // MS_OPS_COMMON_CUBE_TILING_H_
