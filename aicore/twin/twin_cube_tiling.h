// TCubeTiling: the Matmul tiling as a plain struct of int32 fields (CANN's kernel-side layout of
// the same name). A host tiling function fills it; the kernel hands it to Matmul::Init.
#ifndef MS_OPS_TWIN_CUBE_TILING_H_
#define MS_OPS_TWIN_CUBE_TILING_H_

#include <cstdint>

struct TCubeTiling {
  int32_t usedCoreNum;
  int32_t M, N, Ka, Kb;                          // whole matrices
  int32_t singleCoreM, singleCoreN, singleCoreK;  // one core's part
  int32_t baseM, baseN, baseK;                    // one Iterate tile (L0 sizes)
  int32_t depthA1, depthB1, stepM, stepN, isBias, transLength, iterateOrder;  // 0: M moves first
  int32_t shareMode, shareL1Size, shareL0CSize, shareUbSize;
  int32_t batchM, batchN, singleBatchM, singleBatchN, stepKa, stepKb, depthAL1CacheUB, depthBL1CacheUB;
  int32_t dbL0A, dbL0B, dbL0C, reserved;
};

#endif  // MS_OPS_TWIN_CUBE_TILING_H_
