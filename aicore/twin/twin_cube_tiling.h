// TCubeTiling: the Matmul tiling as a plain struct of CANN's 50 int32 fields, in CANN's order (its
// kernel-side layout of the same name). A host tiling function fills it; the kernel hands it to
// Matmul::Init.
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
  int32_t dbL0A, dbL0B, dbL0C;
  // Batch layouts (B, S, N, G, D of A and B; B, S1, N, G, S2 of C), batch count, MX type.
  int32_t ALayoutInfoB, ALayoutInfoS, ALayoutInfoN, ALayoutInfoG, ALayoutInfoD;
  int32_t BLayoutInfoB, BLayoutInfoS, BLayoutInfoN, BLayoutInfoG, BLayoutInfoD;
  int32_t CLayoutInfoB, CLayoutInfoS1, CLayoutInfoN, CLayoutInfoG, CLayoutInfoS2;
  int32_t BatchNum, mxTypePara;
};
static_assert(sizeof(TCubeTiling) == 50 * sizeof(int32_t), "TCubeTiling: CANN's 50 int32 fields, in CANN's order");

#endif  // MS_OPS_TWIN_CUBE_TILING_H_
