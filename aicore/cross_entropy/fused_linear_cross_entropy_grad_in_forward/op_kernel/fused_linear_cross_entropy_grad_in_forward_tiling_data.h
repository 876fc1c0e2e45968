// Tiling of fused_linear_cross_entropy_grad_in_forward, shared by the host tiling function and the
// kernel.
#ifndef MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD_TILING_DATA_H_
#define MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD_TILING_DATA_H_

#include <cstdint>

#include "../../../common/cube_tiling.h"

struct FusedLinearCrossEntropyGradInForwardTilingData {
  int64_t rows;              // N: tokens
  int64_t hidden;            // H
  int64_t vocab;             // V
  int64_t ignoreIndex;       // target value of tokens that count with weight 0
  int64_t chunkRows;         // mt: tokens per row chunk (a multiple of 16)
  int64_t tileCols;          // nt: vocabulary entries per V tile (a multiple of 16)
  int64_t tiles;             // ceil(V / nt)
  int64_t blockChunks;       // row chunks per token block
  int64_t blockRows;         // c = blockChunks * mt: tokens per token block (the last may have fewer)
  int64_t tokenBlocks;       // ceil(N / c)
  int64_t tileRows;          // min(c, N): the rows each V tile has room for in the logits workspace
  int64_t sliceCols;         // hs: input_grad columns of one product unit (a multiple of 16)
  int64_t slices;            // ceil(H / hs)
  uint64_t logitsOffset;     // workspace bytes: fp32 logits of a token block, overwritten by G (below)
  uint64_t statsOffset;      // fp32 per-(V tile, row) partials [tiles][4][tileRows]
  uint64_t rowStatsOffset;   // fp32 row max and exp-sum of the token block [2][tileRows]
  uint64_t inputAccOffset;   // fp32 [tileRows, H] input_grad rows of the token block (fp16/bf16 only)
  uint64_t weightAccOffset;  // fp16/bf16: fp32 [weightPartRows, H] product scratch per AscendC block
  uint64_t weightLoOffset;   // fp16/bf16 with several token blocks: the [V, H] remainders lo
  int64_t weightPartRows;    // fp16/bf16: weight_grad rows per (V tile, row part) unit (a multiple of 16)
  float targetWeight;        // 1 - label_smoothing
  float smoothPerClass;      // label_smoothing / V
  uint32_t ubChunkBytes;     // bytes of each of the four UB row buffers (two in, two out)
  uint32_t batchRows;        // logits rows per UB pass
  uint32_t pairElems;        // weight_grad elements per hi/lo UB pass (a multiple of 16)
  TCubeTiling mmLogits;  // logits [mt, nt] = X[chunk] W[tile]^T, K = H
  TCubeTiling mmWeight;  // weight_grad tile [nt, H] (fp16/bf16: part [weightPartRows, H]) (+)= G^T X[chunk], K = mt
  TCubeTiling mmInput;  // input_grad slice [mt, hs] (+)= G W[tile, slice], K = nt
};

#endif  // MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD_TILING_DATA_H_
